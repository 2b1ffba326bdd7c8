//! Backups and restores of the embedded store, black-box: a backup taken while
//! clients keep writing holds every document acknowledged before it began, restores
//! into a new data directory that a server answers from as the original did (details,
//! tokens, sealed files byte for byte, the signing certificate), and a damaged,
//! partial or newer backup is refused.

mod common;

use common::*;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A document's detail with the server's own address taken out.
fn detail(s: &Server, t: &str, id: &str) -> Value {
    let (status, d) = s.get_as(t, &format!("/v1/documents/{id}"));
    assert_eq!(status, 200, "{id}: {d}");
    let text = d.to_string().replace(&s.url(""), "BASE");
    serde_json::from_str(&text).unwrap()
}

/// A sent, signed and sealed document; its id and sealed bytes.
fn sealed(s: &Server, t: &str) -> (String, Vec<u8>) {
    let id = pdf_draft(
        s,
        t,
        "Sealed",
        json!([signer("sealed@example.com")]),
        json!({}),
    );
    s.act_ok(t, &id, "send");
    s.wait_status(t, &id, "sent");
    let (_, d) = s.get_as(t, &format!("/v1/documents/{id}"));
    let secret = link(&d, 0);
    for (act, body) in [
        ("view", json!({})),
        (
            "sign",
            json!({"signature": {"type": "typed", "name": "Sam Signer"}}),
        ),
    ] {
        let (status, b) = call(
            s.post(&format!("/v1/recipient/{secret}/{act}"))
                .header(
                    "user-agent",
                    "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0",
                )
                .json(&body),
        );
        assert_eq!(status, 200, "{act}: {b}");
    }
    wait_until(60, "the seal", || {
        let (_, d) = s.get_as(t, &format!("/v1/documents/{id}"));
        (d["evidence"]["status"] == "sealed").then_some(())
    });
    (id.clone(), download(s, t, &id))
}

fn download(s: &Server, t: &str, id: &str) -> Vec<u8> {
    let resp = s
        .get(&format!("/v1/documents/{id}/download?direct=true"))
        .bearer_auth(t)
        .send()
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.bytes().unwrap().to_vec()
}

fn admin_ok(data_dir: &Path, args: &[&str]) -> String {
    let (ok, out, err) = run_admin(data_dir, args);
    assert!(ok, "esign admin {args:?}: {err}");
    out
}

#[test]
fn a_backup_taken_under_load_restores_to_the_same_answers() {
    if on_postgres() {
        // PostgreSQL's own tools back it up; the command says so.
        let s = Server::start(&[]);
        let dir = fresh_dir("pg-backup");
        let (ok, _, err) = s.admin_raw(&["backup", "--to", dir.join("b").to_str().unwrap()]);
        assert!(!ok && err.contains("pg_dump"), "{err}");
        return;
    }
    let s = Server::start(&[]);
    let t = s.admin_token();
    let (sealed_id, sealed_pdf) = sealed(&s, &t);
    let certificate = s
        .get("/v1/signing-certificate")
        .send()
        .unwrap()
        .text()
        .unwrap();

    // Eight clients keep creating documents while the backup runs.
    let stop = Arc::new(AtomicBool::new(false));
    let acknowledged: Arc<Mutex<Vec<(String, std::time::Instant)>>> = Arc::default();
    let writers: Vec<_> = (0..8)
        .map(|n| {
            let (stop, acked) = (stop.clone(), acknowledged.clone());
            let (base, token) = (s.url(""), t.clone());
            std::thread::spawn(move || {
                let c = client();
                let mut i = 0;
                while !stop.load(Ordering::SeqCst) && i < 2000 {
                    let resp = c
                        .post(format!("{base}/v1/documents"))
                        .bearer_auth(&token)
                        .json(&json!({"name": format!("load {n}-{i}")}))
                        .send();
                    if let Ok(r) = resp
                        && r.status() == 200
                    {
                        let id = r.json::<Value>().unwrap()["id"]
                            .as_str()
                            .unwrap()
                            .to_string();
                        acked.lock().unwrap().push((id, std::time::Instant::now()));
                    }
                    i += 1;
                }
            })
        })
        .collect();
    let acked = || acknowledged.lock().unwrap().len();
    wait_until(60, "writes before the backup", || {
        (acked() >= 8).then_some(())
    });
    let backups = fresh_dir("backups");
    let to = backups.join("b1");
    let began = std::time::Instant::now();
    let manifest: Value = serde_json::from_str(&admin_ok(
        &s.data_dir,
        &["backup", "--to", to.to_str().unwrap()],
    ))
    .unwrap();
    // The server kept serving writes: some are answered after the backup began.
    wait_until(60, "writes after the backup began", || {
        let late = acknowledged
            .lock()
            .unwrap()
            .iter()
            .any(|(_, at)| *at > began);
        late.then_some(())
    });
    stop.store(true, Ordering::SeqCst);
    for w in writers {
        w.join().unwrap();
    }
    assert!(
        manifest["tables"]["esign_kv"]["entries"].as_u64().unwrap() > 0,
        "{manifest}"
    );
    assert_eq!(manifest["signing_key"], true);
    let before: Vec<String> = acknowledged
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, at)| *at < began)
        .map(|(id, _)| id.clone())
        .collect();
    assert!(
        before.len() >= 8,
        "writes went on before the backup: {}",
        before.len()
    );
    // A damaged copy, a partial one and a newer esign's are refused.
    let restore_into =
        |from: &Path, into: &Path| run_admin(into, &["restore", "--from", from.to_str().unwrap()]);
    let (ok, _, err) = restore_into(&backups.join("missing"), &backups.join("r0"));
    assert!(!ok && err.contains("not a complete esign backup"), "{err}");
    // What an interrupted backup leaves: a `.partial-…` directory without a manifest.
    let partial = backups.join("b2.partial-x");
    copy_tree(&to, &partial);
    std::fs::remove_file(partial.join("manifest.json")).unwrap();
    let (ok, _, err) = restore_into(&partial, &backups.join("r3"));
    assert!(!ok && err.contains("not a complete esign backup"), "{err}");
    let damaged = backups.join("damaged");
    copy_tree(&to, &damaged);
    let mut m: Value =
        serde_json::from_slice(&std::fs::read(damaged.join("manifest.json")).unwrap()).unwrap();
    m["tables"]["esign_kv"]["entries"] = json!(1);
    std::fs::write(damaged.join("manifest.json"), m.to_string()).unwrap();
    let (ok, _, err) = restore_into(&damaged, &backups.join("r1"));
    assert!(!ok && err.contains("does not match its manifest"), "{err}");
    m = manifest.clone();
    m["esign_version"] = json!("99.0.0");
    std::fs::write(damaged.join("manifest.json"), m.to_string()).unwrap();
    let (ok, _, err) = restore_into(&damaged, &backups.join("r2"));
    assert!(!ok && err.contains("cannot read it"), "{err}");

    // Restored into a new data directory, a server answers as the original did.
    let mut r = Server::start(&[]);
    r.stop();
    let (ok, _, err) = restore_into(&to, &r.data_dir);
    assert!(
        !ok && err.contains("not empty"),
        "a used directory is refused: {err}"
    );
    for entry in std::fs::read_dir(&*r.data_dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            std::fs::remove_dir_all(p).unwrap();
        } else {
            std::fs::remove_file(p).unwrap();
        }
    }
    admin_ok(&r.data_dir, &["restore", "--from", to.to_str().unwrap()]);
    r.launch();
    // The old token works; every document acknowledged before the backup began is
    // there with the same detail; the sealed file is the same bytes, sealed with the
    // same certificate.
    for id in &before {
        assert_eq!(detail(&r, &t, id), detail(&s, &t, id), "{id}");
    }
    assert_eq!(detail(&r, &t, &sealed_id), detail(&s, &t, &sealed_id));
    assert_eq!(
        download(&r, &t, &sealed_id),
        sealed_pdf,
        "the sealed file, byte for byte"
    );
    let restored_cert = r
        .get("/v1/signing-certificate")
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert_eq!(restored_cert, certificate);
    // And it works on: a new document is created and listed.
    let doc = r.create_doc(&t, &json!({"name": "after the restore"}));
    assert_eq!(doc["status"], "draft");
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
