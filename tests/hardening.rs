//! The defects an outside audit of the release binary found (issue "Run it in
//! production"), black-box: each test answers one of its reproductions as a client sees
//! it. Login throttling is in `auth.rs`, proxies and resolver answers in `files.rs`,
//! the seal's padding in `evidence.rs`, health, metrics and logs in `running.rs`.

mod common;

use common::*;
use serde_json::{Value, json};

/// A PNG of `w`×`h` grey pixels (1 bit each: a large picture in few bytes).
fn png(w: u32, h: u32) -> String {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Grayscale);
        enc.set_depth(png::BitDepth::One);
        let mut writer = enc.write_header().unwrap();
        let row = (w as usize).div_ceil(8);
        writer
            .write_image_data(&vec![0u8; row * h as usize])
            .unwrap();
    }
    format!("data:image/png;base64,{}", b64(&out))
}

/// A sent one-signer document: its id and the signer's link secret.
fn sent(s: &Server, t: &str, name: &str) -> (String, String) {
    let id = pdf_draft(s, t, name, json!([signer("r@example.com")]), json!({}));
    s.act_ok(t, &id, "send");
    s.wait_status(t, &id, "sent");
    let (_, d) = s.get_as(t, &format!("/v1/documents/{id}"));
    (id, link(&d, 0))
}

#[test]
fn every_text_member_has_a_limit_and_one_member_cannot_swell_the_list() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let long = |n: usize| "x".repeat(n);
    // Over the limit: 400 in the error shape, naming the member and its limit.
    let cases: Vec<(&str, Value)> = vec![
        ("/v1/documents", json!({"name": long(16 << 20)})),
        ("/v1/documents", json!({"name": long(256)})),
        (
            "/v1/documents",
            json!({"name": "n", "company_name": long(256)}),
        ),
        (
            "/v1/documents",
            json!({"name": "n", "external_id": long(256)}),
        ),
        (
            "/v1/documents",
            json!({"name": "n", "recipients": [{"email": format!("{}@example.com", long(100_000))}]}),
        ),
        (
            "/v1/documents",
            json!({"name": "n", "recipients": [{"email": "a@example.com", "first_name": long(101)}]}),
        ),
        ("/v1/products", json!({"name": long(256)})),
        (
            "/v1/subscriptions",
            json!({"event": "document.created", "target_url": "https://example.com/h", "payload": long(900_000)}),
        ),
    ];
    for (path, body) in &cases {
        let (status, answer) = s.post_json(&t, path, body);
        let code = assert_error(status, &answer, 400);
        assert_eq!(code, "invalid_field", "{path}: {answer}");
        assert!(
            answer["description"].as_str().unwrap().contains("at most"),
            "{answer}"
        );
    }
    // A hundred recipients at most.
    let many: Vec<Value> = (0..101)
        .map(|i| signer(&format!("r{i}@example.com")))
        .collect();
    let (status, answer) = s.post_json(
        &t,
        "/v1/documents",
        &json!({"name": "n", "recipients": many}),
    );
    assert_eq!(assert_error(status, &answer, 400), "invalid_field");

    // At the limits, the list stays small: a member storing as much as allowed in
    // three documents cannot make everyone's list large (or fail).
    let full = json!({
        "name": long(255), "company_name": long(255), "external_id": long(255),
        "tags": long(1000),
        "recipients": (0..100).map(|i| json!({
            "email": format!("{}{i}@example.com", long(200)),
            "first_name": long(100), "last_name": long(100),
        })).collect::<Vec<_>>(),
    });
    for _ in 0..3 {
        s.create_doc(&t, &full);
    }
    let resp = s
        .get("/v1/documents?showall=true")
        .bearer_auth(&t)
        .send()
        .unwrap();
    assert_eq!(resp.status(), 200);
    let size = resp.bytes().unwrap().len();
    assert!(
        size < 3 * 200_000,
        "three full documents list in {size} bytes"
    );
}

#[test]
fn a_reject_reason_and_a_subscriptions_mail_are_bounded_and_go_to_members_only() {
    let mut s = Server::start(&[]);
    s.stop();
    s.add_member("member@example.com", &[]);
    let other = s.add_entity_with_admin("Other Co", "stranger@example.com");
    let _ = other;
    s.launch();
    let t = s.admin_token();
    // notification_email: a member of the entity, or nobody.
    for email in ["someone@elsewhere.example", "stranger@example.com"] {
        let (status, body) = s.post_json(
            &t,
            "/v1/subscriptions",
            &json!({"event": "document.created", "target_url": "https://example.com/h", "notification_email": email}),
        );
        assert_eq!(assert_error(status, &body, 400), "invalid_field", "{email}");
    }
    let (status, body) = s.post_json(
        &t,
        "/v1/subscriptions",
        &json!({"event": "document.created", "target_url": "https://example.com/h", "notification_email": "Member@Example.com"}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["notification_email"], "member@example.com");

    // A reject reason over 4000 characters is refused.
    let (_, secret) = sent(&s, &t, "To reject");
    let (status, body) = call(
        s.post(&format!("/v1/recipient/{secret}/reject"))
            .json(&json!({"reason": "x".repeat(900_000)})),
    );
    assert_eq!(assert_error(status, &body, 400), "invalid_field");
}

#[test]
fn templates_are_deleted_by_their_owner_or_an_admin_and_their_files_go() {
    let mut s = Server::start(&[]);
    s.stop();
    s.add_member("plain@example.com", &[]);
    s.add_member("author@example.com", &[]);
    s.launch();
    let admin = s.admin_token();
    let plain = s.token("plain@example.com", USER_PASSWORD, None);
    let author = s.token("author@example.com", USER_PASSWORD, None);
    let template = |t: &str| {
        let file = s.upload(t, &esign_host::pdf::sample_pdf(1), "tpl.pdf");
        let (status, tpl) = s.post_json(t, "/v1/templates", &json!({"name": "T", "file_id": file}));
        assert_eq!(status, 200, "{tpl}");
        let id = tpl["id"].as_str().unwrap().to_string();
        wait_until(20, "the template", || {
            (s.get_as(t, &format!("/v1/templates/{id}")).1["status"] == "ready").then_some(())
        });
        id
    };
    let tid = template(&author);
    // Another plain member may not delete it (nor learn more than "not found").
    let (status, body) = s.delete_as(&plain, &format!("/v1/templates/{tid}"));
    assert_eq!(assert_error(status, &body, 404), "template_not_found");
    assert_eq!(s.get_as(&author, &format!("/v1/templates/{tid}")).0, 200);
    // Its author may; an admin may delete anyone's.
    assert_eq!(s.delete_as(&author, &format!("/v1/templates/{tid}")).0, 204);
    let tid2 = template(&author);
    assert_eq!(s.delete_as(&admin, &format!("/v1/templates/{tid2}")).0, 204);
    assert_eq!(s.get_as(&admin, &format!("/v1/templates/{tid2}")).0, 404);
    // The entity's delete-admin-only setting holds for templates too.
    let tid3 = template(&author);
    s.stop();
    let entity = s.first_entity();
    s.admin(&["entity", "set", &entity, "--delete-admin-only", "true"]);
    s.launch();
    let author = s.token("author@example.com", USER_PASSWORD, None);
    let (status, body) = s.delete_as(&author, &format!("/v1/templates/{tid3}"));
    assert_eq!(assert_error(status, &body, 403), "deletion_restricted");
    // (That its files are released is `engine/tests/docs.rs`'
    // `a_deleted_templates_files_are_released_unless_a_document_uses_them`.)
}

#[test]
fn sign_redirect_is_https_only_and_a_recall_stops_download_links() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    for bad in [
        "javascript:alert(1)",
        "data:text/html,<b>x</b>",
        "http://example.com/",
        "https://",
    ] {
        let (status, body) = s.post_json(
            &t,
            "/v1/documents",
            &json!({"name": "r", "sign_redirect": bad}),
        );
        assert_eq!(assert_error(status, &body, 400), "invalid_field", "{bad}");
        let doc = s.create_doc(&t, &json!({"name": "r"}));
        let id = doc["id"].as_str().unwrap();
        let (status, body) = s.put_json(
            &t,
            &format!("/v1/documents/{id}"),
            &json!({"sign_redirect": bad}),
        );
        assert_eq!(assert_error(status, &body, 400), "invalid_field", "{bad}");
    }
    let doc = s.create_doc(
        &t,
        &json!({"name": "r", "sign_redirect": "https://example.com/thanks"}),
    );
    assert_eq!(doc["status"], "draft", "{doc}");

    // A download link stops serving when its document is recalled.
    let (id, _) = sent(&s, &t, "Recalled");
    let (status, body) = s.get_as(&t, &format!("/v1/documents/{id}/download"));
    assert_eq!(status, 200, "{body}");
    let url = body["document_url"].as_str().unwrap().to_string();
    let before = client().get(&url).send().unwrap();
    assert_eq!(before.status(), 200);
    assert_eq!(s.delete_as(&t, &format!("/v1/documents/{id}")).0, 204);
    let (status, body) = call(client().get(&url));
    assert_eq!(assert_error(status, &body, 404), "link_not_found");
}

#[test]
fn a_signature_too_large_to_draw_is_refused_when_signing() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let (_, secret) = sent(&s, &t, "Drawn");
    let huge = png(4000, 4000);
    assert!(
        huge.len() < 200_000,
        "a large picture in few bytes: {}",
        huge.len()
    );
    let sign =
        |image: &str| {
            call(s.post(&format!("/v1/recipient/{secret}/sign")).json(
                &json!({"signature": {"type": "drawn", "name": "Sam Signer", "image": image}}),
            ))
        };
    let (status, body) = sign(&huge);
    assert_eq!(assert_error(status, &body, 400), "invalid_image");
    assert!(
        body["description"].as_str().unwrap().contains("4000×4000"),
        "{body}"
    );
    let (status, body) = sign(&png(600, 200));
    assert_eq!(status, 200, "{body}");
}

#[test]
fn every_answer_forbids_sniffing_and_tls_answers_carry_hsts() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    for (path, token) in [
        ("/v1/documents", Some(&t)),
        ("/v1/nothing-here", None),
        ("/s/not-a-secret", None),
        ("/healthz", None),
        ("/v1/openapi.json", None),
    ] {
        let mut req = s.get(path);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().unwrap();
        assert_eq!(
            resp.headers()["x-content-type-options"],
            "nosniff",
            "{path}"
        );
        assert!(
            resp.headers().get("strict-transport-security").is_none(),
            "{path}: no HSTS over plain HTTP"
        );
        assert!(
            resp.headers().get("x-esign-route").is_none(),
            "{path}: the route header stays inside"
        );
    }
    // Over TLS, every answer carries HSTS.
    let dir = fresh_dir("tls");
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    std::fs::write(dir.join("cert.pem"), cert.cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), cert.key_pair.serialize_pem()).unwrap();
    let (c, k) = (dir.join("cert.pem"), dir.join("key.pem"));
    let tls = Server::start(&[
        "--tls-cert",
        c.to_str().unwrap(),
        "--tls-key",
        k.to_str().unwrap(),
    ]);
    let https = reqwest::blocking::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(cert.cert.pem().as_bytes()).unwrap())
        .build()
        .unwrap();
    for path in ["/healthz", "/v1/nothing-here", "/v1/openapi.json"] {
        let resp = https.get(tls.url(path)).send().unwrap();
        assert_eq!(
            resp.headers()["strict-transport-security"],
            "max-age=31536000",
            "{path}"
        );
        assert_eq!(
            resp.headers()["x-content-type-options"],
            "nosniff",
            "{path}"
        );
    }
    // A too-large body is answered by the front, not the engine: nosniff too.
    // (Declared, not sent: the front answers from the headers.)
    let addr = s.url("").trim_start_matches("http://").to_string();
    let mut conn = std::net::TcpStream::connect(&addr).unwrap();
    conn.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let head = format!(
        "POST /v1/auth HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        30 << 20
    );
    std::io::Write::write_all(&mut conn, head.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = std::io::Read::read_to_string(&mut conn, &mut answer);
    let answer = answer.to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 413"), "{answer}");
    assert!(
        answer.contains("x-content-type-options: nosniff"),
        "{answer}"
    );
}

/// A public file's address (`/v1/files/{secret}`) is a credential: the debug log of its
/// requests names the route and never the secret.
#[test]
fn the_debug_log_never_names_a_public_files_secret() {
    use std::io::BufRead;
    let dir = fresh_dir("file-logs");
    let log = dir.join("stderr.log");
    let mut child = std::process::Command::new(esign_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.join("data"))
        .arg("--compile-cache")
        .arg(compile_cache())
        .env("ESIGN_LOG", "debug")
        .env("ESIGN_ADMIN_EMAIL", ADMIN_EMAIL)
        .env("ESIGN_ADMIN_PASSWORD", ADMIN_PASSWORD)
        .envs(store_env(test_store().as_deref()))
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("esign listening on ") {
                let _ = tx.send(url.to_string());
            }
        }
    });
    let base = rx.recv_timeout(std::time::Duration::from_secs(60));
    let requested = base.map(|base| {
        let secret = "PublicFileSecret0123456789abcdef";
        let resp = client()
            .get(format!("{base}/v1/files/{secret}"))
            .send()
            .unwrap();
        (secret, resp.status().as_u16())
    });
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let stopped = (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        matches!(child.try_wait(), Ok(Some(_)))
    });
    if !stopped {
        let _ = child.kill();
        let _ = child.wait();
    }
    let (secret, status) = requested.expect("the server starts");
    assert_eq!(status, 404, "an unknown file");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(secret), "a secret in the log:\n{text}");
    assert!(
        text.contains("/v1/files/***"),
        "the request is logged:\n{text}"
    );
}
