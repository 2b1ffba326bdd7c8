//! Backups and restores of the embedded store, black-box: a backup taken while
//! clients keep writing holds every document acknowledged before it began, restores
//! into a new data directory that a server answers from as the original did (details,
//! tokens, sealed files byte for byte, the signing certificate), and a damaged,
//! partial or newer backup is refused. `esign admin check` passes on a running server
//! and on the restored store, names the document whose file or trail was damaged, and
//! `--repair` fixes what the records determine.

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
    // Mail cannot leave this server (nothing listens on port 1): it stays queued, and
    // the restored server delivers it.
    let s = Server::start(&["--smtp-url", "smtp://127.0.0.1:1"]);
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
                let (mut i, began) = (0, std::time::Instant::now());
                while !stop.load(Ordering::SeqCst) && began.elapsed().as_secs() < 120 {
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
    // An invitation queued just before the backup.
    let queued = pdf_draft(
        &s,
        &t,
        "Queued",
        json!([signer("queued@example.com")]),
        json!({}),
    );
    s.act_ok(&t, &queued, "send");
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
    // The store check runs online while the clients write (for a few seconds: under
    // this load on a small machine it would chase new documents for long).
    let checking = {
        let dir = s.data_dir.to_path_buf();
        std::thread::spawn(move || admin_ok(&dir, &["check"]))
    };
    let check_began = std::time::Instant::now();
    wait_until(60, "writes while the check runs", || {
        let late = acknowledged
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, at)| *at > check_began)
            .count();
        (late >= 8 || checking.is_finished()).then_some(())
    });
    stop.store(true, Ordering::SeqCst);
    let checked = checking.join().unwrap();
    assert!(checked.contains("no problems"), "{checked}");
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
    // The mail queued when the backup was taken is delivered by the restored server.
    r.wait_mails(1, |m| m.contains("queued@example.com"));
    // And it works on: a new document is created and listed.
    let doc = r.create_doc(&t, &json!({"name": "after the restore"}));
    assert_eq!(doc["status"], "draft");
    let checked = admin_ok(&r.data_dir, &["check"]);
    assert!(checked.contains("no problems"), "{checked}");
    // The same as one tar file, through the running server; restored and checked.
    let tar = backups.join("online.tar");
    admin_ok(&r.data_dir, &["backup", "--to", tar.to_str().unwrap()]);
    assert!(tar.is_file());
    let from_tar = backups.join("from-tar");
    admin_ok(&from_tar, &["restore", "--from", tar.to_str().unwrap()]);
    let checked_tar = admin_ok(&from_tar, &["check"]);
    let documents = |out: &str| {
        out.split("checked ")
            .nth(1)
            .map(|s| s.split(' ').next().unwrap().to_string())
    };
    assert_eq!(
        documents(&checked_tar),
        documents(&checked),
        "{checked_tar}"
    );
    assert!(checked_tar.contains("no problems"), "{checked_tar}");
    r.stop();
    let (ok, _, err) = run_admin(&backups.join("nothing-here"), &["check"]);
    assert!(!ok && err.contains("no esign store"), "{err}");
    damaged_stores_fail_the_check(&to, &backups, &sealed_id);
    an_interrupted_backup_is_never_restored(&r.data_dir, &backups);
}

/// An online `check --repair` never removes a file in use: files sent inline with new
/// documents (JSON `file_content` and multipart `file`) while repairs run back to back
/// all import, and no report calls one unused.
#[test]
fn an_online_repair_keeps_the_files_of_documents_being_created() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let stop = Arc::new(AtomicBool::new(false));
    let checker = {
        let (dir, env, stop) = (s.data_dir.to_path_buf(), s.env.clone(), stop.clone());
        std::thread::spawn(move || {
            let (mut reports, began) = (Vec::new(), std::time::Instant::now());
            while !stop.load(Ordering::SeqCst) && began.elapsed().as_secs() < 180 {
                let (_, out, err) = run_admin_env(&dir, &env, &["check", "--repair"]);
                reports.push(format!("{out}{err}"));
            }
            reports
        })
    };
    let pdf = esign_host::pdf::sample_pdf(2);
    let creators: Vec<_> = (0..4)
        .map(|n| {
            let (base, token, pdf) = (s.url(""), t.clone(), pdf.clone());
            std::thread::spawn(move || {
                let c = client();
                (0..8)
                    .map(|i| {
                        let name = format!("inline {n}-{i}");
                        let req = c.post(format!("{base}/v1/documents")).bearer_auth(&token);
                        let req = if i % 2 == 0 {
                            req.json(&json!({"name": name, "file_content": b64(&pdf),
                                "file_name": "inline.pdf"}))
                        } else {
                            let part = reqwest::blocking::multipart::Part::bytes(pdf.clone())
                                .file_name("inline.pdf");
                            req.multipart(
                                reqwest::blocking::multipart::Form::new()
                                    .text("name", name)
                                    .part("file", part),
                            )
                        };
                        let (status, body) = call(req);
                        assert_eq!(status, 200, "{body}");
                        assert_eq!(body["status"], "importing", "{body}");
                        body["id"].as_str().unwrap().to_string()
                    })
                    .collect::<Vec<String>>()
            })
        })
        .collect();
    let ids: Vec<String> = creators
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    assert_eq!(ids.len(), 32);
    // Repairs keep running until every import is over.
    let mut details = Vec::new();
    for id in &ids {
        details.push(wait_until(120, "the import", || {
            let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
            (d["status"] != "importing").then_some(d)
        }));
    }
    stop.store(true, Ordering::SeqCst);
    let reports = checker.join().unwrap();
    assert!(!reports.is_empty());
    for d in &details {
        assert_eq!(d["status"], "draft", "{d}");
        assert_eq!(d["page_count"], 2, "{d}");
        assert!(d["import_error"].is_null(), "{d}");
    }
    for r in &reports {
        assert!(!r.contains("used by no record"), "{r}");
    }
    let (ok, out, err) = s.admin_raw(&["check"]);
    assert!(ok && out.contains("no problems"), "{out}{err}");
}

/// `esign admin` with `args` (and no `ESIGN_DATA_DIR`); (exit code, stdout, stderr).
fn esign_admin(args: &[&str]) -> (i32, String, String) {
    let out = output_within(
        std::process::Command::new(esign_bin())
            .arg("admin")
            .args(args)
            .env_remove("ESIGN_DATA_DIR")
            .env_remove("ESIGN_STORE")
            .env("ESIGN_LOG", "warn"),
        120,
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A backup holding a symbolic link, a hard link or anything else but directories and
/// regular files is refused, as a directory and as a tar file; the store's options are
/// taken after the subcommand (`restore --from B --data-dir NEW`); `esign admin
/// --help` says how commands reach a running server.
#[test]
fn restore_refuses_links_and_takes_its_options_after_the_subcommand() {
    let (code, help, err) = esign_admin(&["--help"]);
    assert_eq!(code, 0, "{err}");
    assert!(!help.contains("with the server stopped"), "{help}");
    assert!(help.contains("running server's admin socket"), "{help}");
    if on_postgres() {
        return; // PostgreSQL's own tools back it up
    }
    let s = Server::start(&[]);
    let backups = fresh_dir("crafted-backups");
    let good = backups.join("good");
    let (ok, _, err) = s.admin_raw(&["backup", "--to", good.to_str().unwrap()]);
    assert!(ok, "{err}");
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let cache = path(&compile_cache());

    // A directory whose database is a link to another backup's.
    let linked = backups.join("linked-db");
    std::fs::create_dir_all(&linked).unwrap();
    std::fs::copy(good.join("manifest.json"), linked.join("manifest.json")).unwrap();
    std::os::unix::fs::symlink(good.join("db"), linked.join("db")).unwrap();
    if good.join("signing").exists() {
        copy_tree(&good.join("signing"), &linked.join("signing"));
    }
    // A tar file of the good backup plus a symbolic link, and one plus a hard link.
    let tar_with = |name: &str, kind: tar::EntryType, entry: &str, target: &str| {
        let file = backups.join(name);
        let mut tar = tar::Builder::new(std::fs::File::create(&file).unwrap());
        tar.append_dir_all(".", &good).unwrap();
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(kind);
        header.set_size(0);
        header.set_mode(0o644);
        tar.append_link(&mut header, entry, target).unwrap();
        tar.finish().unwrap();
        file
    };
    let symlinked = tar_with(
        "symlink.tar",
        tar::EntryType::Symlink,
        "signing/cert.pem",
        "/etc/passwd",
    );
    let hardlinked = tar_with(
        "hardlink.tar",
        tar::EntryType::Link,
        "copy.json",
        "manifest.json",
    );
    for (from, what) in [
        (&linked, "db, which is a symbolic link"),
        (&symlinked, "signing/cert.pem, which is a symbolic link"),
        (&hardlinked, "copy.json, which is a hard link"),
    ] {
        let into = backups.join("refused");
        let (code, _, err) =
            esign_admin(&["restore", "--from", &path(from), "--data-dir", &path(&into)]);
        assert_eq!(code, 1, "{}: {err}", from.display());
        assert!(err.contains(what), "{}: {err}", from.display());
        assert!(
            err.contains("a backup holds only files and directories"),
            "{err}"
        );
        assert!(
            !into.join("db").exists(),
            "nothing restored: {}",
            from.display()
        );
    }

    // The good backup, with every option after the subcommand; read back the same way.
    let into = backups.join("restored");
    let (code, _, err) = esign_admin(&[
        "restore",
        "--from",
        &path(&good),
        "--data-dir",
        &path(&into),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, users, err) = esign_admin(&[
        "user",
        "list",
        "--data-dir",
        &path(&into),
        "--compile-cache",
        &cache,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(users.contains(ADMIN_EMAIL), "{users}");
    // Before the subcommand as ever.
    let (code, users, err) = esign_admin(&[
        "--data-dir",
        &path(&into),
        "--compile-cache",
        &cache,
        "user",
        "list",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(users.contains(ADMIN_EMAIL), "{users}");
}

/// A backup killed half-way (its data copied, its manifest not yet written) leaves
/// nothing a restore accepts; a restore killed half-way leaves a directory no server
/// starts on.
fn an_interrupted_backup_is_never_restored(data_dir: &Path, backups: &Path) {
    for name in ["killed", "killed.tar"] {
        killed_backup_is_never_restored(data_dir, backups, name);
    }
    // A restore that did not finish (its marker left) is refused by the server and
    // by every admin command.
    let half = backups.join("half-restored");
    std::fs::create_dir_all(&half).unwrap();
    std::fs::write(half.join("restore-unfinished"), "").unwrap();
    let (ok, _, err) = run_admin(&half, &["user", "list"]);
    assert!(!ok && err.contains("did not finish"), "{err}");
}

fn killed_backup_is_never_restored(data_dir: &Path, backups: &Path, name: &str) {
    use std::io::BufRead;
    let to = backups.join(name);
    let mut child = std::process::Command::new(esign_bin())
        .arg("admin")
        .arg("--data-dir")
        .arg(data_dir)
        .args(["backup", "--to", to.to_str().unwrap()])
        .env("ESIGN_TEST_BACKUP_PAUSE_MS", "60000")
        .env("ESIGN_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains("backup paused for a test") {
                let _ = tx.send(());
            }
        }
    });
    let paused = rx.recv_timeout(std::time::Duration::from_secs(120));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    paused.expect("the backup reached its pause");
    assert!(!to.exists(), "a killed backup leaves no finished directory");
    let partials: Vec<_> = std::fs::read_dir(backups)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(&format!("{name}.partial-")))
        .collect();
    assert_eq!(partials.len(), 1, "{partials:?}");
    assert!(partials[0].join("db").exists(), "the data was copied");
    for from in [&to, &partials[0]] {
        let into = backups.join(format!("from-{name}"));
        let (ok, _, err) = run_admin(&into, &["restore", "--from", from.to_str().unwrap()]);
        let refused = err.contains("not a complete esign backup") || err.contains("opening");
        assert!(!ok && refused, "{err}");
    }
}

/// A copy of the restored store with a file removed and an audit trail entry edited
/// fails the check naming the document; stray index keys and an unused file are
/// repaired.
fn damaged_stores_fail_the_check(backup: &Path, backups: &Path, sealed_id: &str) {
    let dir = backups.join("damaged-store");
    admin_ok(&dir, &["restore", "--from", backup.to_str().unwrap()]);
    {
        let store = esign_host::store::Store::new(
            esign_host::store::sled::SledBackend::open(&dir).unwrap(),
        );
        let mut txn = store.begin();
        let refs = txn.scan(b"d/bref/", b"d/bref0", usize::MAX, false).unwrap();
        let owner = format!("/doc:{sealed_id}");
        let (key, _) = refs
            .iter()
            .find(|(k, _)| String::from_utf8_lossy(k).ends_with(&owner))
            .expect("the sealed document uses files");
        let key = String::from_utf8_lossy(key).into_owned();
        let blob = key["d/bref/".len()..]
            .split('/')
            .next()
            .unwrap()
            .to_string();
        txn.delete(format!("b/{blob}").as_bytes());
        let log = format!("d/dlog/{sealed_id}/");
        let (key, mut value) = txn
            .scan(
                log.as_bytes(),
                format!("d/dlog/{sealed_id}0").as_bytes(),
                1,
                false,
            )
            .unwrap()
            .remove(0);
        let at = value.iter().rposition(|b| b.is_ascii_lowercase()).unwrap();
        value[at] = value[at].to_ascii_uppercase();
        txn.put(&key, &value);
        txn.put(b"d/dx/stray-entity/a/draft/c/0000-nobody", b"");
        txn.put(b"b/unused-file", b"%PDF-1.4 nobody's");
        txn.commit().map_err(|e| e.into_error()).unwrap();
        store.flush().unwrap();
    }
    let (ok, out, err) = run_admin(&dir, &["check"]);
    assert!(!ok, "a damaged store fails the check: {out} {err}");
    eprintln!("{out}");
    for expected in [
        format!("document {sealed_id}: audit trail entry 1"),
        format!("document {sealed_id}: the file"),
        "index key without its document: dx/stray-entity".to_string(),
        "blob unused-file is used by no record".to_string(),
    ] {
        assert!(out.contains(&expected), "{expected}: {out}");
    }
    // --repair removes the stray key and the unused file, never the evidence.
    let (ok, out, _) = run_admin(&dir, &["check", "--repair"]);
    assert!(!ok, "evidence is not repaired: {out}");
    assert!(out.contains("repaired: blob unused-file"), "{out}");
    assert!(
        out.contains("repaired: index key without its document"),
        "{out}"
    );
    let (_, out, _) = run_admin(&dir, &["check"]);
    assert!(
        !out.contains("stray-entity") && !out.contains("unused-file"),
        "{out}"
    );
    assert!(
        out.contains(&format!("document {sealed_id}: audit trail entry 1")),
        "{out}"
    );
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
