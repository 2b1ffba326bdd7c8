//! Recipient links at rest, black-box: what a copy of the data holds. The engine keeps
//! only a nonce per link and the SHA-256 of its secret; the secret is derived with the
//! host's link key, which lives outside the store (`<data-dir>/signing/link.key` on
//! sled, `--link-key-file` or the database on PostgreSQL). So a backup holds no signing
//! link, while the links keep opening after a restart and after a restore, which
//! carries the key.

mod common;

use common::*;
use serde_json::json;
use std::path::{Path, PathBuf};

/// A document sent to one signer; its id and the signer's link secret.
fn sent(s: &Server, t: &str) -> (String, String) {
    let id = pdf_draft(
        s,
        t,
        "Links at rest",
        json!([signer("rest@example.com")]),
        json!({}),
    );
    s.act_ok(t, &id, "send");
    s.wait_status(t, &id, "sent");
    let (_, d) = s.get_as(t, &format!("/v1/documents/{id}"));
    (id, link(&d, 0))
}

/// Whether the signing page and the recipient API open behind `secret`.
fn opens(s: &Server, secret: &str) -> bool {
    let page = s.get(&format!("/s/{secret}")).send().unwrap().status();
    let (api, _) = call(s.get(&format!("/v1/recipient/{secret}")));
    match (page.as_u16(), api) {
        (200, 200) => true,
        (404, 404) => false,
        other => panic!("the page and the API disagree: {other:?}"),
    }
}

/// The secret shown to the owner in the document's detail.
fn shown(s: &Server, t: &str, id: &str) -> String {
    let (status, d) = s.get_as(t, &format!("/v1/documents/{id}"));
    assert_eq!(status, 200, "{d}");
    link(&d, 0)
}

/// Every file under `dir` whose bytes contain `needle`.
fn files_holding(dir: &Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                if bytes.windows(needle.len()).any(|w| w == needle) {
                    found.push(path);
                }
            }
        }
    }
    found
}

#[test]
fn a_backup_holds_no_signing_link_and_a_restore_keeps_them_working() {
    if on_postgres() {
        // PostgreSQL is backed up with its own tools; see the next test.
        return;
    }
    let mut s = Server::start(&[]);
    let t = s.admin_token();
    let (id, secret) = sent(&s, &t);
    assert_eq!(secret.len(), 43, "links keep their shape: {secret}");
    // The invitation went out (and left the outbox) with the link in it.
    s.wait_mails(1, |m| m.contains(&secret));
    assert!(opens(&s, &secret));

    // The key sits beside the generated sealing key, the owner's alone.
    let key_file = s.data_dir.join("signing").join("link.key");
    let key = std::fs::read_to_string(&key_file).expect("the generated link key");
    assert_eq!(key.trim().len(), 64, "{key}");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }

    // A backup: the database in it holds every document, but not the secret.
    let backups = fresh_dir("link-backups");
    let to = backups.join("b");
    let (ok, _, err) = s.admin_raw(&["backup", "--to", to.to_str().unwrap()]);
    assert!(ok, "{err}");
    let holding = files_holding(&to, secret.as_bytes());
    assert!(holding.is_empty(), "the link's secret is in {holding:?}");
    assert!(
        to.join("signing").join("link.key").exists(),
        "the backup carries the key"
    );

    // After a restart the same link opens, and the owner is shown the same one.
    s.restart();
    assert!(opens(&s, &secret));
    assert_eq!(shown(&s, &t, &id), secret);

    // Restored into a new data directory, the link opens there too.
    let mut r = Server::start(&[]);
    r.stop();
    std::fs::remove_dir_all(&*r.data_dir).unwrap();
    let (ok, _, err) = run_admin(&r.data_dir, &["restore", "--from", to.to_str().unwrap()]);
    assert!(ok, "{err}");
    r.launch();
    assert!(opens(&r, &secret));
    assert_eq!(shown(&r, &t, &id), secret);

    // The same database without the key (a copy of it alone) opens no link: the
    // server makes itself a new key, and the old links mean nothing under it.
    r.stop();
    std::fs::remove_file(r.data_dir.join("signing").join("link.key")).unwrap();
    r.launch();
    assert!(!opens(&r, &secret));
    assert_ne!(shown(&r, &t, &id), secret);
}

#[test]
fn the_key_can_come_from_a_file_and_links_follow_it() {
    let keys = fresh_dir("link-keys");
    let file = keys.join("link.key");
    std::fs::write(&file, format!("{}\n", "5a".repeat(32))).unwrap();
    let mut s = Server::start(&["--link-key-file", file.to_str().unwrap()]);
    let t = s.admin_token();
    let (id, secret) = sent(&s, &t);
    assert!(opens(&s, &secret));
    s.restart();
    assert!(opens(&s, &secret));
    assert_eq!(shown(&s, &t, &id), secret);
    // Without the file the server uses a key of its own (generated into the data
    // directory, or into the database on PostgreSQL): the link does not open.
    s.stop();
    s.args
        .retain(|a| a != "--link-key-file" && a != file.to_str().unwrap());
    s.launch();
    assert!(!opens(&s, &secret));
    // A key too short to be one is refused at start.
    std::fs::write(&file, "short\n").unwrap();
    s.stop();
    let out = output_within(
        std::process::Command::new(esign_bin())
            .arg("serve")
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--data-dir")
            .arg(&*s.data_dir)
            .arg("--compile-cache")
            .arg(compile_cache())
            .arg("--link-key-file")
            .arg(&file)
            .envs(s.env.iter().cloned())
            .env("ESIGN_LOG", "warn"),
        60,
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("shorter than 32"), "{err}");
}

/// A public link's visit, as a script sends it.
fn visit(url: &str, email: &str) -> (u16, serde_json::Value) {
    call(
        client()
            .post(url)
            .json(&json!({"first_name": "Vi", "last_name": "Sitor", "email": email})),
    )
}

#[test]
fn a_public_link_makes_no_document_too_many_when_visitors_arrive_at_once() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let tid = signer_template(&s, &t, "Waiver", "Guest");
    let (status, link) = s.post_json(
        &t,
        &format!("/v1/templates/{tid}/public-links"),
        &json!({"max_uses": 3}),
    );
    assert_eq!(status, 201, "{link}");
    // The server's own address (its links carry the configured public one).
    let slug = link["url"].as_str().unwrap().rsplit('/').next().unwrap();
    let url = s.url(&format!("/p/{slug}"));
    // The QR code is a PNG of the page's address.
    let qr = client().get(format!("{url}/qr.png")).send().unwrap();
    assert_eq!(qr.status(), 200);
    assert_eq!(&qr.bytes().unwrap()[..4], b"\x89PNG");
    // Four visitors at once, three uses: exactly three documents.
    let answers: Vec<(u16, serde_json::Value)> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let url = url.clone();
                sc.spawn(move || visit(&url, &format!("v{i}@example.com")))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let made: Vec<&serde_json::Value> = answers
        .iter()
        .filter(|(st, _)| *st == 200)
        .map(|(_, b)| b)
        .collect();
    assert_eq!(made.len(), 3, "{answers:?}");
    let refused: Vec<_> = answers.iter().filter(|(st, _)| *st != 200).collect();
    assert_eq!(refused[0].0, 410, "{answers:?}");
    assert_eq!(refused[0].1["error"], "link_unavailable", "{answers:?}");
    let (_, docs) = s.get_as(&t, "/v1/documents");
    assert_eq!(docs.as_array().map(Vec::len), Some(3), "{docs}");
    // Each visitor signs their own document on the link they were given.
    for b in made {
        let id = b["document_id"].as_str().unwrap();
        s.wait_status(&t, id, "sealed");
        let secret = b["signing_url"]
            .as_str()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap()
            .to_string();
        for act in ["view", "sign"] {
            let body = json!({"signature": {"type": "typed", "name": "Vi Sitor"}});
            let (st, r) = recipient_post(&s, &secret, act, body);
            assert_eq!(st, 200, "{act}: {r}");
        }
        s.wait_status(&t, id, "signed");
    }
    // Unpublished: the page is gone at once.
    let id = link["id"].as_str().unwrap();
    assert_eq!(s.delete_as(&t, &format!("/v1/public-links/{id}")).0, 204);
    let (st, b) = visit(&url, "late@example.com");
    assert_eq!(
        (st, b["error"].as_str()),
        (404, Some("link_not_found")),
        "{b}"
    );
}
