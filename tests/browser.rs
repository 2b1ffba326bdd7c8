//! The signing page in a real browser (Debian's Chromium, headless, through
//! chromedriver): what a recipient sees and does behind their link, checked afterwards
//! through the REST API, the webhook deliveries and the final PDF's text. axe-core
//! checks every screen for serious or critical accessibility problems.
//!
//! Skipped (with a message) where Chromium is not installed, unless
//! `ESIGN_REQUIRE_BROWSER=1` (CI). One browser at a time: the tests share a lock.

#[path = "common/browser.rs"]
mod browser;
mod common;

use browser::{Browser, Pointer};
use common::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Mutex;

/// One browser at a time: two would compete for the two cores and slow each other.
static ONE_BROWSER: Mutex<()> = Mutex::new(());

fn one_browser() -> std::sync::MutexGuard<'static, ()> {
    ONE_BROWSER.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sends the draft; returns its detail with the recipients' links once it is `sent`.
fn send(s: &Server, t: &str, id: &str) -> Value {
    let (status, b) = s.post_json(t, &format!("/v1/documents/{id}/send"), &json!({}));
    assert_eq!(status, 200, "send: {b}");
    s.wait_status(t, id, "sent");
    let (status, d) = s.get_as(t, &format!("/v1/documents/{id}"));
    assert_eq!(status, 200);
    d
}

fn link(d: &Value, i: usize) -> String {
    d["recipients"][i]["document_url"]
        .as_str()
        .unwrap()
        .to_string()
}

fn add_field(s: &Server, t: &str, id: &str, f: Value) -> String {
    let (status, b) = s.post_json(t, &format!("/v1/documents/{id}/fields"), &f);
    assert_eq!(status, 200, "field {f}: {b}");
    b["field_id"].as_str().unwrap().to_string()
}

/// Where screenshots go: the target dir, and `docs/` when `ESIGN_UPDATE_SCREENSHOTS=1`.
fn screenshot(b: &Browser, name: &str) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    b.screenshot(&dir.join(name));
    if std::env::var("ESIGN_UPDATE_SCREENSHOTS").is_ok_and(|v| v == "1") {
        let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::copy(dir.join(name), docs.join(name)).unwrap();
    }
}

/// The JSON body of every delivery of `event` so far.
fn deliveries(rx: &HttpsServer, event: &str) -> Vec<Value> {
    rx.received("/hook")
        .iter()
        .map(Incoming::json)
        .filter(|b| b["event"] == event)
        .collect()
}

#[test]
fn a_signer_on_a_phone_fills_fields_comments_types_a_signature_and_downloads_the_result() {
    let _one = one_browser();
    let Some(b) = Browser::start() else { return };
    let rx = HttpsServer::start(|_| Canned::ok(Vec::new()));
    let s = server_for(&rx, "1s");
    let t = s.admin_token();
    for event in ["document.signed", "comment.created", "document.reviewed"] {
        subscribe(&s, &t, event, &rx.url("/hook"), json!({}));
    }
    let id = pdf_draft(
        &s,
        &t,
        "Service agreement",
        json!([person("Ann", "Tester", "ann@example.com")]),
        json!({"value": 1200}),
    );
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    let ann = d["recipients"][0]["id"].as_str().unwrap().to_string();
    add_field(
        &s,
        &t,
        &id,
        json!({"field_type": "text", "page_num": 1, "field_left": 72, "field_top": 300,
               "field_width": 220, "field_height": 28, "recipient_id": ann,
               "field_label": "Company", "is_required": true}),
    );
    add_field(
        &s,
        &t,
        &id,
        json!({"field_type": "check", "page_num": 1, "field_left": 72, "field_top": 360,
               "field_width": 20, "field_height": 20, "recipient_id": ann,
               "field_label": "I accept the terms"}),
    );
    add_field(
        &s,
        &t,
        &id,
        json!({"field_type": "signature", "page_num": 2, "field_left": 72, "field_top": 600,
               "field_width": 220, "field_height": 60, "recipient_id": ann}),
    );
    let d = send(&s, &t, &id);

    b.phone(375, 800);
    b.goto(&link(&d, 0));
    b.wait_for_text("Service agreement");
    b.wait_for_text("fill in your fields");
    // Every page image is there and has loaded (the first ones at once).
    let pages = b.wait_js(
        20,
        "the page images",
        "const imgs = [...document.querySelectorAll('.page img')];\
         return imgs.length && imgs[0].complete && imgs[0].naturalWidth > 0 ? imgs.length : 0;",
    );
    assert_eq!(pages, 3, "two pages and the summary");
    let width = b.js("return document.documentElement.scrollWidth", vec![]);
    assert!(
        width.as_u64().unwrap() <= 375,
        "nothing wider than the phone: {width}"
    );
    s.wait_until_event(&t, &id, "document.viewed");
    screenshot(&b, "signing-page.png");
    b.assert_accessible("document");

    // Signing before the required field is filled is refused with a clear message.
    b.fill("Full name", "Ann Tester");
    b.click("Sign");
    b.wait_for_text("Fill in every required field first: Company");

    // Page to the end (reviewed), comment, fill the fields, sign with a typed name.
    b.js(
        "document.querySelector('.page:last-of-type').scrollIntoView()",
        vec![],
    );
    s.wait_until_event(&t, &id, "document.reviewed");
    b.fill("Comment", "Looks good to me");
    b.click("Send comment");
    b.wait_for_text("Looks good to me");
    b.fill("Company (required)", "Acme Ltd");
    b.js(
        "document.querySelector('input[type=checkbox]').click()",
        vec![],
    );
    b.click("Sign");
    b.wait_for_text("You signed the document");
    b.wait_for_text("The signed PDF is ready");
    assert!(b.has_control("Download the signed PDF"));
    screenshot(&b, "signing-page-done.png");
    b.assert_accessible("done");

    // What the sender sees.
    let (_, st) = s.get_as(&t, &format!("/v1/documents/{id}/status"));
    assert_eq!(st["status"], "signed", "{st}");
    let events = s.events(&t, &id);
    for e in [
        "document.viewed",
        "document.reviewed",
        "comment.created",
        "document.commented",
        "document.signed",
    ] {
        assert!(events.iter().any(|x| x == e), "{e} in {events:?}");
    }
    let (_, fields) = s.get_as(&t, &format!("/v1/documents/{id}/fields"));
    assert_eq!(fields["fields"][0]["field_value"], "Acme Ltd");
    assert_eq!(fields["fields"][1]["field_value"], "1");
    // The webhook payloads.
    let signed = wait_until(20, "document.signed delivered", || {
        deliveries(&rx, "document.signed").pop()
    });
    assert_eq!(signed["document"]["id"], id.as_str());
    assert_eq!(signed["recipient"]["email"], "ann@example.com");
    let methods: Vec<&str> = signed["recipient"]["signing_methods"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["type"].as_str())
        .collect();
    assert!(methods.contains(&"signature"), "{signed}");
    let comment = wait_until(20, "comment.created delivered", || {
        deliveries(&rx, "comment.created").pop()
    });
    assert_eq!(comment["event_meta"]["text"], "Looks good to me");
    // The final PDF carries the filled field (its signature is an image at its field).
    let text = pdf_text(&s, &t, &id);
    assert!(text.contains("Acme Ltd"), "{text}");
    // The recipient's download is the signed PDF.
    let pdf = s
        .get(&format!(
            "/v1/recipient/{}/download",
            link(&d, 0).rsplit('/').next().unwrap()
        ))
        .send()
        .unwrap();
    assert_eq!(pdf.status(), 200);
    let bytes = pdf.bytes().unwrap();
    let text = esign_host::pdf::extract_text(&bytes).unwrap();
    assert!(text.contains("Acme Ltd"));
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots/signed.pdf");
    std::fs::write(out, &bytes).unwrap();
}

#[test]
fn signing_order_a_drawn_signature_by_touch_then_by_pen_and_both_on_the_certificate() {
    let _one = one_browser();
    let Some(b) = Browser::start() else { return };
    let s = Server::start(&[]);
    let t = s.admin_token();
    let mut first = person("Ann", "Tester", "ann@example.com");
    first["order_num"] = 1.into();
    let mut second = person("Bo", "Tester", "bo@example.com");
    second["order_num"] = 2.into();
    let id = pdf_draft(
        &s,
        &t,
        "In order",
        json!([first, second]),
        json!({"is_signing_order": true}),
    );
    let d = send(&s, &t, &id);
    // Only the first signer is mailed now.
    s.wait_mails(1, |m| m.contains("To: ann@example.com"));

    // Bo opens his link early: he is told whom he waits for, and cannot sign.
    b.phone(375, 800);
    b.goto(&link(&d, 1));
    b.wait_for_text("It is not your turn yet: waiting for Ann Tester");
    assert!(!b.has_control("Sign"));
    b.assert_accessible("waiting");

    // Ann draws her signature with a finger.
    b.goto(&link(&d, 0));
    b.wait_for_text("sign at the bottom");
    b.click("Draw my signature");
    b.draw("canvas.pad", Pointer::Touch);
    b.click("Sign");
    b.wait_for_text("You have signed. The others are still to sign");
    // Now Bo is mailed his link, and signs with a pen.
    let bo_mail = s.wait_mails(1, |m| m.contains("To: bo@example.com"));
    assert!(bo_mail[0].contains(&link(&d, 1)), "{}", bo_mail[0]);
    b.goto(&link(&d, 1));
    b.wait_for_text("sign at the bottom");
    b.click("Draw my signature");
    // Signing with an empty pad is refused in the page.
    b.click("Sign");
    b.wait_for_text("Draw your signature in the box first");
    b.draw("canvas.pad", Pointer::Pen);
    b.click("Sign");
    b.wait_for_text("You signed the document");
    s.wait_status(&t, &id, "signed");
    wait_until(30, "the signed PDF", || {
        let v = s.get(&format!(
            "/v1/recipient/{}",
            link(&d, 1).rsplit('/').next().unwrap()
        ));
        let (_, v) = call(v);
        (v["document"]["final_ready"] == true).then_some(())
    });
    // Neither had a signature field: both signatures are on the audit certificate.
    let text = pdf_text(&s, &t, &id);
    assert!(text.contains("Audit certificate"), "{text}");
    assert!(text.contains("Ann Tester (ann@example.com)"), "{text}");
    assert!(text.contains("Ann Tester, signed"), "{text}");
    assert!(text.contains("Bo Tester, signed"), "{text}");
}

#[test]
fn an_approver_approves_and_a_signer_rejects_with_a_reason() {
    let _one = one_browser();
    let Some(b) = Browser::start() else { return };
    let s = Server::start(&[]);
    let t = s.admin_token();
    let id = pdf_draft(
        &s,
        &t,
        "Approve me",
        json!([
            {"first_name": "Al", "last_name": "Approver", "email": "al@example.com", "role": "approver"},
            person("Sue", "Tester", "sue@example.com"),
        ]),
        json!({}),
    );
    let d = send(&s, &t, &id);
    b.goto(&link(&d, 0));
    b.wait_for_text("approve or reject it");
    b.assert_accessible("approver");
    // From the keyboard alone: Tab to the button, Enter.
    b.keyboard_activate("Approve", 60);
    b.wait_for_text("You approved the document");
    let (_, r) = s.get_as(&t, &format!("/v1/documents/{id}/recipients"));
    assert_eq!(r["recipients"][0]["status"], "approved", "{r}");
    assert!(s.events(&t, &id).iter().any(|e| e == "document.approved"));
    // Print and download from the page.
    b.click("Print");
    s.wait_until_event(&t, &id, "document.printed");
    b.click("Download");
    s.wait_until_event(&t, &id, "document.downloaded");
    // Leaving the page reports the time its first page was on screen (all of the time
    // above): the sender reads it as that page's page_time.
    b.goto(&link(&d, 1));
    let seen = wait_until(20, "page 1's view time", || {
        let (_, pages) = s.get_as(&t, &format!("/v1/documents/{id}/pages"));
        let seconds = pages["pages"][0]["page_time"].as_f64().unwrap_or(0.0);
        (seconds > 0.0).then_some(pages)
    });
    assert_eq!(
        seen["pages"][0]["view_duration_seconds"], seen["pages"][0]["page_time"],
        "{seen}"
    );

    b.wait_for_text("sign at the bottom");
    b.click("I do not agree");
    b.fill("Reason", "The price is too high");
    b.click("Reject");
    b.wait_for_text("You rejected the document");
    let (_, st) = s.get_as(&t, &format!("/v1/documents/{id}/status"));
    assert_eq!(st["status"], "rejected");
    assert_eq!(st["rejection_reason"], "The price is too high");
    // Opening the link again: a page saying so, with the reason.
    b.goto(&link(&d, 1));
    b.wait_for_text("This document was rejected");
    b.wait_for_text("The price is too high");
    b.assert_accessible("rejected");
}

#[test]
fn recalled_expired_and_unknown_links_show_a_page_saying_so() {
    let _one = one_browser();
    let Some(b) = Browser::start() else { return };
    let s = Server::start(&[]);
    let t = s.admin_token();
    let id = pdf_draft(
        &s,
        &t,
        "Recall me",
        json!([person("Ann", "Tester", "ann@example.com")]),
        json!({}),
    );
    let d = send(&s, &t, &id);
    let (status, _) = s.delete_as(&t, &format!("/v1/documents/{id}"));
    assert_eq!(status, 204);
    b.goto(&link(&d, 0));
    b.wait_for_text("This document was withdrawn");
    b.assert_accessible("withdrawn");
    let resp = s
        .get(&link(&d, 0).replace(&s.base, ""))
        .header("accept", "text/html")
        .send()
        .unwrap();
    assert_eq!(resp.status(), 410);

    // Expired: its date moved to just ahead, then past.
    let id = pdf_draft(
        &s,
        &t,
        "Expire me",
        json!([person("Ann", "Tester", "ann@example.com")]),
        json!({}),
    );
    let d = send(&s, &t, &id);
    // Wide enough that a busy machine still sends it before that time.
    let soon = chrono::Utc::now() + chrono::Duration::seconds(6);
    let (status, body) = s.post_json(
        &t,
        &format!("/v1/documents/{id}/expiration"),
        &json!({"expiration_date": soon.to_rfc3339()}),
    );
    assert_eq!(status, 200, "{body}");
    s.wait_status(&t, &id, "expired");
    b.goto(&link(&d, 0));
    b.wait_for_text("This document has expired");

    b.goto(&s.url("/s/this-is-not-a-link"));
    b.wait_for_text("This link does not work");
    b.assert_accessible("unknown link");
}

#[test]
fn an_sms_code_before_opening_and_a_lockout_after_five_wrong_codes() {
    let _one = one_browser();
    let Some(b) = Browser::start() else { return };
    let s = Server::start(&[]);
    let t = s.admin_token();
    let mut ann = person("Ann", "Tester", "ann@example.com");
    ann["mobile"] = "+46701234567".into();
    ann["verify_sms_open"] = true.into();
    let mut bo = person("Bo", "Tester", "bo@example.com");
    bo["mobile"] = "+46709876543".into();
    bo["verify_sms_open"] = true.into();
    let id = pdf_draft(&s, &t, "Guarded", json!([ann, bo]), json!({}));
    let d = send(&s, &t, &id);

    b.goto(&link(&d, 0));
    b.wait_for_text("verify who you are before you open the document");
    assert!(
        !b.text("body").contains("Page 1"),
        "no content before the check"
    );
    b.assert_accessible("verification");
    b.click("Send code");
    let code = s.wait_sms_code("+46701234567", 1);
    b.fill("Verification code", &code);
    b.click("Verify");
    b.wait_for_text("sign at the bottom");
    b.js("window.scrollTo(0, document.body.scrollHeight)", vec![]);
    b.fill("Full name", "Ann Tester");
    b.click("Sign");
    b.wait_for_text("You have signed");
    let (_, r) = s.get_as(&t, &format!("/v1/documents/{id}/recipients"));
    assert_eq!(r["recipients"][0]["status"], "signed");

    // Bo types five wrong codes: the link locks and the sender is mailed.
    b.goto(&link(&d, 1));
    b.click("Send code");
    let right = s.wait_sms_code("+46709876543", 1);
    let wrong = if right == "000000" {
        "111111"
    } else {
        "000000"
    };
    for i in 1..=4 {
        b.fill("Verification code", wrong);
        b.click("Verify");
        b.wait_for_text(&format!("Tries left: {}.", 5 - i));
    }
    b.fill("Verification code", wrong);
    b.click("Verify");
    b.wait_for_text("This link is locked after too many wrong attempts");
    b.assert_accessible("locked");
    s.wait_mails(1, |m| {
        m.contains("To: admin@example.com") && m.contains("was locked out of")
    });
    // The right code does not help any more.
    let code_status = call(
        s.post(&format!(
            "/v1/recipient/{}/verify",
            link(&d, 1).rsplit('/').next().unwrap()
        ))
        .json(&json!({"method": "sms", "code": right})),
    );
    assert_eq!(code_status.0, 403);
}

#[test]
fn a_question_before_signing_and_an_eid_check_with_the_test_provider() {
    let _one = one_browser();
    let Some(b) = Browser::start() else { return };
    let rx = HttpsServer::start(|_| Canned::ok(Vec::new()));
    let ca = rx.ca_file.display().to_string();
    let s = Server::start(&[
        "--eid-provider",
        "test",
        "--outbound-ca-file",
        &ca,
        "--outbound-allow-private",
        "--webhook-retry-schedule",
        "1s",
    ]);
    let t = s.admin_token();
    subscribe(&s, &t, "document.signed", &rx.url("/hook"), json!({}));
    let mut ann = person("Ann", "Tester", "ann@example.com");
    for (k, v) in [
        ("verify_qna_sign", json!(true)),
        ("verify_qna_question", json!("The project's code name?")),
        ("verify_qna_answer", json!("Blue Falcon")),
        ("verify_eid", json!(true)),
        ("verify_eid_type", json!("test")),
    ] {
        ann[k] = v;
    }
    let id = pdf_draft(&s, &t, "Checked", json!([ann]), json!({}));
    let d = send(&s, &t, &id);
    b.goto(&link(&d, 0));
    b.wait_for_text("Verify your identity to sign");
    b.wait_for_text("The project's code name?");
    b.fill("Answer", "red fox");
    b.click("Verify");
    b.wait_for_text("That is not right. Tries left: 4.");
    b.fill("Answer", "  blue falcon ");
    b.click("Verify");
    // Then eID: off to the provider's page and back.
    b.click("Verify with eID");
    b.wait_for_text("Test eID provider");
    b.fill("Name to verify", "Ann Verified");
    b.click("Identify");
    b.wait_for_text("sign at the bottom");
    b.fill("Full name", "Ann Tester");
    b.click("Sign");
    b.wait_for_text("You signed the document");
    let signed = wait_until(20, "document.signed delivered", || {
        deliveries(&rx, "document.signed").pop()
    });
    let methods = signed["recipient"]["signing_methods"].as_array().unwrap();
    let kinds: Vec<&str> = methods
        .iter()
        .map(|m| m["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["qna", "eid", "signature"], "{signed}");
    assert_eq!(methods[1]["verified_name"], "Ann Verified");
    let (_, doc) = s.get_as(&t, &format!("/v1/documents/{id}"));
    assert_eq!(
        doc["recipients"][0]["signing_methods"][1]["verified_name"],
        "Ann Verified"
    );
}

/// A loopback listener standing in for an agent's redirect URI: answers every request
/// with a small page and sends its request line.
fn callback_listener() -> (String, std::sync::mpsc::Receiver<String>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/callback", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(10)));
            let mut line = String::new();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let body = "<!doctype html><title>Connected</title><p>Connected";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (url, rx)
}

#[test]
fn a_person_connects_an_agent_on_a_phone_signing_in_and_approving_in_the_browser() {
    use base64::Engine as _;
    use sha2::Digest as _;
    let _one = one_browser();
    let Some(b) = Browser::start() else { return };
    let s = Server::start(&[]);
    let (redirect, requests) = callback_listener();
    let (status, reg) = call(s.post("/register").json(&json!({
        "redirect_uris": [redirect], "client_name": "Phone agent"
    })));
    assert_eq!(status, 201, "{reg}");
    let client = reg["client_id"].as_str().unwrap();
    let verifier = "a-browser-verifier-of-at-least-forty-three-characters-01";
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()));
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs([
            ("response_type", "code"),
            ("client_id", client),
            ("redirect_uri", &redirect),
            ("state", "phone-state"),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("scope", "basic"),
        ])
        .finish();
    b.phone(390, 844);
    b.goto(&s.url(&format!("/authorize?{query}")));
    b.wait_for_text("Phone agent wants to work with your esign documents");
    b.assert_accessible("agent sign-in");
    screenshot(&b, "agent-sign-in.png");
    b.fill("Email", ADMIN_EMAIL);
    b.fill("Password", "not the password");
    b.click("Sign in");
    b.wait_for_text("wrong email or password");
    b.fill("Password", ADMIN_PASSWORD);
    b.click("Sign in");
    b.wait_for_text("Allow Phone agent?");
    b.assert_accessible("agent consent");
    screenshot(&b, "agent-consent.png");
    b.click("Allow");
    // The browser follows the redirect to the agent (the page's form-action allows it).
    let line = requests
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the browser reached the agent's redirect URI");
    let path = line.split(' ').nth(1).unwrap();
    let q: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(path.split_once('?').unwrap().1.as_bytes())
            .into_owned()
            .collect();
    assert_eq!(q["state"], "phone-state");
    assert_eq!(q["iss"], s.base);
    let resp = s
        .post("/token")
        .form(&[
            ("grant_type", "authorization_code"),
            ("code", &q["code"]),
            ("redirect_uri", &redirect),
            ("client_id", client),
            ("code_verifier", verifier),
        ])
        .send()
        .unwrap();
    assert_eq!(resp.status(), 200);
    let tokens: Value = resp.json().unwrap();
    assert_eq!(tokens["token_type"], "Bearer");
}

/// The signing page in the document's language (Swedish): every word from the
/// catalogue, the page's language said, axe-core content; the recipient switches to
/// English, a reload keeps it, and they sign in Swedish again.
#[test]
fn the_signing_page_speaks_the_document_s_language_and_the_recipient_can_switch() {
    let _one = one_browser();
    let Some(b) = Browser::start() else { return };
    let s = Server::start(&[]);
    let t = s.admin_token();
    let id = pdf_draft(
        &s,
        &t,
        "Avtal",
        json!([person("Åsa", "Ek", "asa@example.com")]),
        json!({"language": "sv"}),
    );
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    add_field(
        &s,
        &t,
        &id,
        json!({"field_type": "text", "page_num": 1, "field_left": 72, "field_top": 300,
               "field_width": 220, "field_height": 28, "recipient_id": d["recipients"][0]["id"],
               "field_label": "Org.nr", "is_required": true}),
    );
    let d = send(&s, &t, &id);
    let (sv, en) = (words("sv"), words("en"));
    let text = |w: &Value, key: &str| said(w, key, &[]);
    let showing = |w: &Value, key: &str, lang: &str| {
        let want = serde_json::to_string(&text(w, key)).unwrap();
        b.wait_js(
            20,
            key,
            &format!("return document.documentElement.lang === '{lang}' && document.getElementById('next').innerText === {want}"),
        );
    };
    b.goto(&link(&d, 0));
    showing(&sv, "sign.todo_signer", "sv");
    assert_eq!(b.js("return window.esignMissingWords", vec![]), json!([]));
    // Nothing absent is drawn as text (a document without a video once showed "null").
    assert!(!b.text("#app").contains("null"), "{}", b.text("#app"));
    b.assert_no_violations("the signing page in Swedish");
    screenshot(&b, "signing-page-swedish.png");
    b.select(&text(&sv, "sign.language"), "en");
    showing(&en, "sign.todo_signer", "en");
    b.goto(&link(&d, 0));
    showing(&en, "sign.todo_signer", "en");
    b.select("Language", "sv");
    showing(&sv, "sign.todo_signer", "sv");
    // A required field left empty: the page says so in Swedish.
    b.click(&text(&sv, "sign.sign"));
    b.wait_for_text(&said(&sv, "sign.missing_fields", &[("fields", "Org.nr")]));
    b.js("const i = document.querySelector('.field input'); i.value = 'Ja'; i.dispatchEvent(new Event('input'))", vec![]);
    b.click(&text(&sv, "sign.sign"));
    b.wait_for_text(&text(&sv, "sign.done_signed"));
    assert_eq!(b.js("return window.esignMissingWords", vec![]), json!([]));
    s.wait_status(&t, &id, "signed");
}

/// Issue 50 item 4: a signer signs with a picture of their signature. A file too large
/// is refused in the page with a clear message; a JPEG is shown before signing, and the
/// sealed PDF carries it byte for byte (drawn as it is, `DCTDecode`). axe-core finds
/// nothing on the upload screen at 375 px, nor on the wider one.
#[test]
fn a_signer_signs_with_an_uploaded_picture_of_their_signature() {
    let _one = one_browser();
    let Some(b) = Browser::start() else { return };
    let s = Server::start(&[]);
    let t = s.admin_token();
    let id = pdf_draft(
        &s,
        &t,
        "Picture signature",
        json!([person("Ann", "Tester", "ann@example.com")]),
        json!({}),
    );
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    let ann = d["recipients"][0]["id"].as_str().unwrap().to_string();
    add_field(
        &s,
        &t,
        &id,
        json!({"field_type": "signature", "page_num": 1, "field_left": 72, "field_top": 600,
               "field_width": 220, "field_height": 60, "recipient_id": ann}),
    );
    let d = send(&s, &t, &id);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("signature-pictures");
    std::fs::create_dir_all(&dir).unwrap();
    let jpeg: &[u8] = include_bytes!("../formats/src/testdata/signature-16x8.jpg");
    let picture = dir.join("signature.jpg");
    std::fs::write(&picture, jpeg).unwrap();
    let too_large = dir.join("too-large.png");
    std::fs::write(&too_large, vec![0u8; 300 * 1024]).unwrap();

    b.phone(375, 800);
    b.goto(&link(&d, 0));
    b.wait_for_text("sign at the bottom");
    b.keyboard_activate("Upload a picture", 60);
    b.choose_file("Picture of your signature (PNG or JPEG)", &too_large);
    b.wait_for_text("The picture is too large: at most 256 KiB and 4 million pixels.");
    b.choose_file("Picture of your signature (PNG or JPEG)", &picture);
    b.wait_js(
        10,
        "the picture's preview",
        "const i = document.querySelector('img.picture');\
         return !!i && !i.hidden && i.complete && i.naturalWidth === 16;",
    );
    assert!(!b.text("main").contains("too large"), "the error is gone");
    let width = b.js("return document.documentElement.scrollWidth", vec![]);
    assert!(
        width.as_u64().unwrap() <= 375,
        "nothing wider than the phone: {width}"
    );
    b.assert_no_violations("upload a picture (375 px)");
    b.phone(1024, 800);
    b.assert_no_violations("upload a picture");
    b.click("Sign");
    b.wait_for_text("You signed the document");
    s.wait_status(&t, &id, "signed");
    let secret = link(&d, 0).rsplit('/').next().unwrap().to_string();
    wait_until(30, "the signed PDF", || {
        let (_, v) = call(s.get(&format!("/v1/recipient/{secret}")));
        (v["document"]["final_ready"] == true).then_some(())
    });
    let (_, v) = call(s.get(&format!("/v1/recipient/{secret}")));
    assert_eq!(v["signature"]["type"], "uploaded", "{v}");
    let pdf = s
        .get(&format!("/v1/recipient/{secret}/download"))
        .send()
        .unwrap();
    assert_eq!(pdf.status(), 200);
    let bytes = pdf.bytes().unwrap();
    assert!(
        bytes.windows(jpeg.len()).any(|w| w == jpeg),
        "the sealed PDF carries the JPEG as it was given"
    );
    assert!(bytes.windows(10).any(|w| w == b"/DCTDecode"));
}

/// A page of another site that frames `url` through esign's `/embed.js` and keeps the
/// events it hears (`window.got`: their details; `window.raw`: every message's origin
/// and type).
fn shop_page(esign: &str, url: &str) -> Vec<u8> {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Shop</title></head>\
         <body><main><h1>Shop</h1><div id=\"signing\"></div><button id=\"after\">After</button></main>\
         <script>window.got = []; window.raw = [];\
         window.addEventListener('message', (e) => window.raw.push([e.origin, e.data && e.data.type]));</script>\
         <script src=\"{esign}/embed.js\"></script>\
         <script>const el = document.getElementById('signing');\
         for (const t of esign.events) el.addEventListener(t, (e) => window.got.push(e.detail));\
         esign.mount(el, {}, {{ hideHeader: true }});</script></body></html>",
        json!(url)
    )
    .into_bytes()
}

/// Presses Shift+Tab `n` times (focus moves backwards, into the frame and within it).
fn shift_tab(b: &Browser, n: usize) {
    for _ in 0..n {
        b.press("\u{E008}\u{E004}\u{E000}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// The types of the events the shop heard so far.
fn heard(b: &Browser) -> Vec<String> {
    b.js("return window.got.map((g) => g.type)", vec![])
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect()
}

/// Opens `url`, a page on a loopback HTTPS server whose certificate (self-signed, made
/// by the test) the session accepts (`acceptInsecureCerts`, tests/common/browser.rs).
fn goto_self_signed(b: &Browser, url: &str) {
    b.goto(url);
    b.wait_js(20, "the shop's page", "return document.title === 'Shop'");
}

/// Embedded signing (issue 51 item 1): a site among the entity's `embed_origins`
/// frames the signing page through `/embed.js` and hears its events, from esign's
/// origin only, in order; a site not on the list gets no page in its frame.
///
/// `embed_origins` are `https://` only, so the embedding pages are served over TLS by
/// the test (`HttpsServer`, a certificate made for 127.0.0.1) while esign itself is
/// plain HTTP on 127.0.0.1, which browsers treat as potentially trustworthy (no mixed
/// content).
#[test]
fn a_site_on_the_list_frames_the_signing_page_and_hears_its_events() {
    let _one = one_browser();
    let Some(b) = Browser::start() else { return };
    let s = Server::start(&[]);
    let t = s.admin_token();
    let id = pdf_draft(
        &s,
        &t,
        "Embedded",
        json!([person("Ann", "Tester", "ann@example.com")]),
        json!({}),
    );
    let d = send(&s, &t, &id);
    let ann = d["recipients"][0]["id"].as_str().unwrap().to_string();
    let esign = s.url("");
    let esign = esign.trim_end_matches('/');
    let page = shop_page(esign, &link(&d, 0));
    let allowed = FileServer::start(vec![("/shop", Canned::ok(page.clone()))]);
    let refused = FileServer::start(vec![("/shop", Canned::ok(page))]);
    let origin = allowed.url("");
    let (status, e) = s.put_json(&t, "/v1/entity", &json!({"embed_origins": [origin]}));
    assert_eq!(status, 200, "{e}");

    goto_self_signed(&b, &allowed.url("/shop"));
    let got = b.wait_js(
        30,
        "esign:loaded and esign:viewed",
        "return window.got.length >= 2 && window.got",
    );
    let types: Vec<&str> = got
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["type"].as_str().unwrap())
        .collect();
    assert_eq!(types[..2], ["esign:loaded", "esign:viewed"], "{got}");
    for g in got.as_array().unwrap() {
        assert_eq!(g["document_id"], json!(id), "{g}");
        assert_eq!(g["recipient_id"], json!(ann), "{g}");
    }
    let raw = b.js("return window.raw", vec![]);
    assert!(
        raw.as_array().unwrap().iter().all(|m| m[0] == json!(esign)),
        "every message from esign's origin: {raw}"
    );
    let (_, r) = s.get_as(&t, &format!("/v1/documents/{id}/recipients"));
    assert_eq!(r["recipients"][0]["status"], "viewed", "{r}");

    // The recipient signs in the frame, from the keyboard (the frame is another
    // origin's: the test reaches into it only as a person does). From the shop's
    // button after the frame, backwards: Print, Download, the comment's Send (Enter
    // with no text: the page's error, esign:error), the comment, "I do not agree",
    // Sign.
    b.js("document.getElementById('after').focus()", vec![]);
    shift_tab(&b, 3);
    b.press("\u{E007}");
    wait_until(10, "esign:error", || {
        heard(&b).contains(&"esign:error".to_string()).then_some(())
    });
    shift_tab(&b, 3);
    b.press("\u{E007}");
    s.wait_status(&t, &id, "signed");
    wait_until(20, "esign:completed", || {
        heard(&b)
            .contains(&"esign:completed".to_string())
            .then_some(())
    });
    assert_eq!(
        heard(&b),
        [
            "esign:loaded",
            "esign:viewed",
            "esign:error",
            "esign:signed",
            "esign:completed"
        ]
    );
    let got = b.js("return window.got", vec![]);
    for g in got.as_array().unwrap() {
        assert_eq!(
            (&g["document_id"], &g["recipient_id"]),
            (&json!(id), &json!(ann)),
            "{g}"
        );
    }
    assert_eq!(got[2]["error"], "", "{got}");
    let raw = b.js("return window.raw", vec![]);
    assert!(
        raw.as_array().unwrap().iter().all(|m| m[0] == json!(esign)),
        "every message from esign's origin: {raw}"
    );

    // Another site: the browser refuses to show the page in its frame, no event.
    goto_self_signed(&b, &refused.url("/shop"));
    std::thread::sleep(std::time::Duration::from_secs(5));
    assert_eq!(b.js("return window.got", vec![]), json!([]));
    assert_eq!(b.js("return window.raw", vec![]), json!([]));
    assert_eq!(
        b.js("return document.querySelectorAll('iframe').length", vec![]),
        json!(1)
    );
}

#[test]
fn a_signer_hands_their_part_to_a_colleague_on_the_signing_page() {
    let _one = one_browser();
    let Some(b) = Browser::start() else { return };
    let s = Server::start(&[]);
    let t = s.admin_token();
    let id = pdf_draft(
        &s,
        &t,
        "Hand me over",
        json!([person("Sue", "Tester", "sue@example.com")]),
        json!({"is_signing_forward": true}),
    );
    let d = send(&s, &t, &id);
    b.goto(&link(&d, 0));
    b.wait_for_text("sign at the bottom");
    b.click("Someone else should sign this");
    b.assert_accessible("the hand-over form");
    b.fill("Their first name", "Cleo");
    b.fill("Their last name", "Colleague");
    b.fill("Their email", "cleo@example.com");
    b.click("Hand over");
    b.wait_for_text("You handed your part to someone else");
    b.assert_accessible("handed over");
    let (_, r) = s.get_as(&t, &format!("/v1/documents/{id}/recipients"));
    let people = r["recipients"].as_array().unwrap();
    assert_eq!(people[0]["status"], "notrequired", "{r}");
    assert_eq!(people[1]["email"], "cleo@example.com", "{r}");
    assert_eq!(people[1]["status"], "sent", "{r}");
    assert!(s.events(&t, &id).iter().any(|e| e == "document.forwarded"));
    // Cleo signs on her own link.
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    b.goto(&link(&d, 1));
    b.wait_for_text("sign at the bottom");
    b.fill("Full name", "Cleo Colleague");
    b.click("Sign");
    b.wait_for_text("You signed the document");
}
