//! The document lifecycle, black-box: seal, send (and each of its 400s), send to
//! recipients, forward, expiration, manual signing, lost, revisions, reminders, delete
//! and recall, scheduled sending across a restart, pricing tables and products, and the
//! language of the recipients' texts.

mod common;

use common::*;
use serde_json::{Value, json};
use std::time::Duration;

fn count(v: &[String], what: &str) -> usize {
    v.iter().filter(|e| *e == what).count()
}

#[test]
fn seal_returns_unique_links_and_seals_in_the_background() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let id = pdf_draft(
        &s,
        &t,
        "Seal me",
        json!([signer("a@example.com"), signer("b@example.com")]),
        json!({}),
    );
    let (status, body) = s.post_json(&t, &format!("/v1/documents/{id}/seal"), &json!({}));
    assert_eq!(status, 200, "{body}");
    let recipients = body["recipients"].as_array().unwrap();
    assert_eq!(recipients.len(), 2);
    let urls: Vec<&str> = recipients
        .iter()
        .map(|r| r["document_url"].as_str().unwrap())
        .collect();
    assert_ne!(urls[0], urls[1], "each recipient has an own link");
    assert!(
        urls.iter()
            .all(|u| u.starts_with(&s.base) && u.len() > s.base.len() + 40),
        "unguessable: {urls:?}"
    );
    assert!(recipients.iter().all(|r| r["id"].is_string()));
    s.wait_status(&t, &id, "sealed");
    assert_eq!(
        s.events(&t, &id),
        ["document.created", "document.imported", "document.sealed"]
    );
    // The final PDF: the document's pages, then the summary with the recipients and hash.
    let text = pdf_text(&s, &t, &id);
    assert!(text.contains("Page 1") && text.contains("Page 2"), "{text}");
    assert!(text.contains("a@example.com") && text.contains("b@example.com"));
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    let hash = d["content_sha256"].as_str().unwrap();
    assert_eq!(hash.len(), 64);
    assert!(text.contains(&format!("Content SHA-256: {hash}")));
    // Sealing again is refused; so is sending a sealed document.
    let (status, body) = s.post_json(&t, &format!("/v1/documents/{id}/seal"), &json!({}));
    assert_eq!(assert_error(status, &body, 400), "document_not_draft");
    let (status, body) = s.post_json(&t, &format!("/v1/documents/{id}/send"), &json!({}));
    assert_eq!(assert_error(status, &body, 400), "document_not_draft");
    // Sealing mails nobody: once a later mail on the same queue is out, anything
    // sealing had queued is out too, and the barrier is the only mail.
    let barrier = s.mail_barrier(&t);
    assert_eq!(s.mails(), [barrier], "sealing mailed nobody");
}

#[test]
fn send_moves_to_sent_mails_every_recipient_and_records_one_event() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let id = pdf_draft(
        &s,
        &t,
        "Send me",
        json!([signer("x@example.com"), {"email": "cc@example.com", "role": "cc"}]),
        json!({"email_send_message": "Please sign"}),
    );
    let (status, body) = call(
        s.post(&format!("/v1/documents/{id}/send"))
            .bearer_auth(&t)
            .header("user-agent", "TestAgent/1.0")
            .header("CLIENT_IP", "203.0.113.7")
            .json(&json!({})),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "draft", "at acceptance");
    assert_eq!(body["send_date"], Value::Null);
    s.wait_status(&t, &id, "sent");
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    assert!(d["send_date"].is_string());
    assert!(
        d["recipients"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"] == "sent")
    );
    let events = s.events(&t, &id);
    assert_eq!(count(&events, "document.sent"), 1, "{events:?}");
    // Every recipient is mailed their own link.
    for r in d["recipients"].as_array().unwrap() {
        let email = r["email"].as_str().unwrap();
        let url = r["document_url"].as_str().unwrap();
        let mails = s.wait_mails(1, |m| m.contains(&format!("To: {email}")));
        assert!(mails[0].contains(url), "{email}'s mail has their link");
        assert!(mails[0].contains("Please sign"));
    }
    // The device and IP are recorded.
    let (_, log) = s.get_as(&t, &format!("/v1/documents/{id}/log"));
    let entry = log
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "send_requested")
        .unwrap();
    assert_eq!(entry["user_agent"], "TestAgent/1.0");
    // The address the request came from; the client's own claim only beside it.
    assert_eq!(entry["ip"], "127.0.0.1");
    assert_eq!(entry["client_asserted_ip"], "203.0.113.7");
}

/// The HTML part of a mail (`.eml` text): what follows its `text/html` header.
fn html_part(mail: &str) -> &str {
    let at = mail
        .find("Content-Type: text/html; charset=utf-8")
        .unwrap_or_else(|| panic!("no HTML part: {mail}"));
    let body = &mail[at..];
    &body[body.find("\r\n\r\n").unwrap() + 4..]
}

#[test]
fn an_invitation_comes_as_text_and_as_html_in_the_entity_s_colour_with_every_text_escaped() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let (status, body) = s.put_json(&t, "/v1/entity", &json!({"brand_color": "#F5D90A"}));
    assert_eq!(status, 200, "{body}");
    let id = pdf_draft(
        &s,
        &t,
        "Deal <b>now</b> & \"more\"",
        json!([signer("x@example.com")]),
        json!({"email_send_message": "Line one\nLine <i>two</i>"}),
    );
    s.act_ok(&t, &id, "send");
    s.wait_status(&t, &id, "sent");
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    let url = d["recipients"][0]["document_url"].as_str().unwrap();
    let mail = &s.wait_mails(1, |m| m.contains("To: x@example.com"))[0];
    assert!(
        mail.contains("Content-Type: multipart/alternative; boundary="),
        "{mail}"
    );
    // The plain text first, as it was.
    let text_at = mail.find("Content-Type: text/plain").expect("a text part");
    assert!(text_at < mail.find("Content-Type: text/html").unwrap());
    assert!(mail[text_at..].contains("Line <i>two</i>"), "{mail}");
    let html = html_part(mail);
    assert!(html.starts_with("<!doctype html>"), "{html}");
    assert!(html.contains("<html lang=\"en\">"), "{html}");
    // The entity's colour on the rule and the button, black text on it (a light colour).
    assert!(html.contains("border-top:6px solid #f5d90a"), "{html}");
    assert!(
        html.contains(&format!("<a href=\"{url}\""))
            && html.contains("background:#f5d90a;color:#000000"),
        "the link is a button in the colour: {html}"
    );
    // Text is text: the name and the message escaped, the message's line kept.
    assert!(
        html.contains("Deal &lt;b&gt;now&lt;/b&gt; &amp; &quot;more&quot;"),
        "{html}"
    );
    assert!(
        html.contains("Line one<br>\r\nLine &lt;i&gt;two&lt;/i&gt;"),
        "{html}"
    );
    assert!(!html.contains("<b>") && !html.contains("<i>"), "{html}");
    // The button says what the text's line before the link says.
    assert!(
        html.contains(">Open it here to review and sign</a>"),
        "{html}"
    );
    // Without a logo, esign's name heads it.
    assert!(html.contains(">esign</strong>"), "{html}");
}

#[test]
fn send_by_another_sender_goes_through_processing() {
    let mut s = Server::start(&[]);
    let t = s.admin_token();
    s.stop();
    s.add_member("rep@example.com", &[]);
    s.admin(&[
        "user",
        "add",
        "--email",
        "out@example.com",
        "--password",
        USER_PASSWORD,
    ]);
    s.launch();
    let id = pdf_draft(
        &s,
        &t,
        "Delegated",
        json!([signer("d@example.com")]),
        json!({}),
    );
    let (status, body) = s.post_json(
        &t,
        &format!("/v1/documents/{id}/send"),
        &json!({"sender_email": "nobody@example.com"}),
    );
    assert_eq!(assert_error(status, &body, 400), "invalid_sender");
    let (status, body) = s.post_json(
        &t,
        &format!("/v1/documents/{id}/send"),
        &json!({"sender_email": "out@example.com"}),
    );
    assert_eq!(
        assert_error(status, &body, 400),
        "invalid_sender",
        "not a member of the entity"
    );
    let (status, body) = s.post_json(
        &t,
        &format!("/v1/documents/{id}/send"),
        &json!({"sender_email": "rep@example.com"}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "processing");
    assert_eq!(body["send_date"], Value::Null);
    s.wait_status(&t, &id, "sent");
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    assert_eq!(d["sender_email"], "rep@example.com");
}

#[test]
fn send_refuses_each_invalid_case_with_400() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    // The file is held until the importing checks are done (at most a minute), so the
    // document is still importing however slow the machine.
    let release = Arc::new(AtomicBool::new(false));
    let held = release.clone();
    let files = HttpsServer::start(move |_| {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !held.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        Canned::ok(esign_host::pdf::sample_pdf(1))
    });
    let ca = files.ca_file.display().to_string();
    let s = Server::start(&["--outbound-ca-file", &ca, "--outbound-allow-private"]);
    let t = s.admin_token();
    let send = |id: &str, body: Value| s.post_json(&t, &format!("/v1/documents/{id}/send"), &body);
    let expect = |id: &str, code: &str| {
        let (status, body) = send(id, json!({}));
        assert_eq!(assert_error(status, &body, 400), code, "{body}");
    };
    // Still importing (the file downloads slowly).
    let importing = s.create_doc(
        &t,
        &json!({"name": "slow", "file_url": files.url("/slow.pdf"),
                                             "recipients": [signer("s@example.com")]}),
    );
    assert_eq!(importing["status"], "importing");
    expect(importing["id"].as_str().unwrap(), "document_importing");
    let (status, body) = s.post_json(
        &t,
        &format!("/v1/documents/{}/seal", importing["id"].as_str().unwrap()),
        &json!({}),
    );
    assert_eq!(assert_error(status, &body, 400), "document_importing");
    release.store(true, Ordering::SeqCst);
    // Recipients not fitting the signing settings.
    let cc_only = s.create_doc(&t, &json!({"name": "cc", "is_signing": true,
                                           "recipients": [{"email": "c@example.com", "role": "cc"}]}));
    expect(cc_only["id"].as_str().unwrap(), "recipients_not_fitting");
    let approver = s.create_doc(&t, &json!({"name": "ap", "is_signing": false,
                                            "recipients": [{"email": "a@example.com", "role": "approver"}]}));
    expect(approver["id"].as_str().unwrap(), "recipients_not_fitting");
    let order = s.create_doc(
        &t,
        &json!({"name": "order", "is_signing": false, "is_signing_order": true,
                                         "recipients": [{"email": "c@example.com", "role": "cc"}]}),
    );
    expect(order["id"].as_str().unwrap(), "recipients_not_fitting");
    let nobody = s.create_doc(&t, &json!({"name": "nobody"}));
    expect(nobody["id"].as_str().unwrap(), "recipients_not_fitting");
    // Invalid signing groups: positions must run 1, 2, ...
    let groups = s.create_doc(
        &t,
        &json!({"name": "groups", "is_signing_order": true, "recipients": [
        {"email": "a@example.com", "order_num": 1}, {"email": "b@example.com", "order_num": 3}]}),
    );
    expect(groups["id"].as_str().unwrap(), "invalid_signing_groups");
    // An unresolved internal suggestion, until it is resolved.
    let sugg = s.create_doc(
        &t,
        &json!({"name": "sugg", "recipients": [signer("s@example.com")]}),
    );
    let sid = sugg["id"].as_str().unwrap();
    let (_, c) = s.post_json(
        &t,
        &format!("/v1/documents/{sid}/comments"),
        &json!({"text": "Change §2", "suggestion": true}),
    );
    expect(sid, "unresolved_suggestions");
    let cid = c["id"].as_str().unwrap();
    assert_eq!(
        call(
            s.post(&format!("/v1/documents/{sid}/comments/{cid}/resolve"))
                .bearer_auth(&t)
        )
        .0,
        204
    );
    assert_eq!(send(sid, json!({})).0, 200);
    // A restricted attachment not connected to a recipient.
    let up = s.upload(&t, &esign_host::pdf::sample_pdf(1), "terms.pdf");
    let att = s.create_doc(
        &t,
        &json!({"name": "att", "recipients": [signer("s@example.com")],
        "attachments": [{"file_id": up, "restricted_to": "someone-else@example.com"}]}),
    );
    expect(att["id"].as_str().unwrap(), "restricted_attachment");
    // Not a draft any more.
    s.wait_status(&t, sid, "sent");
    expect(sid, "document_not_draft");
    // An invalid sender id.
    let ok = s.create_doc(
        &t,
        &json!({"name": "ok", "recipients": [signer("s@example.com")]}),
    );
    let (status, body) = send(
        ok["id"].as_str().unwrap(),
        json!({"sender_id": "zzzzzzzzzzzzzzzz"}),
    );
    assert_eq!(assert_error(status, &body, 400), "invalid_sender");
}

#[test]
fn send_to_recipients_in_batches() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let id = pdf_draft(
        &s,
        &t,
        "Batches",
        json!([
            signer("one@example.com"),
            signer("two@example.com"),
            signer("three@example.com")
        ]),
        json!({}),
    );
    let path = format!("/v1/documents/{id}/recipients/send");
    let (status, body) = s.post_json(&t, &path, &json!({"recipient_ids": ["x"]}));
    assert_eq!(
        assert_error(status, &body, 400),
        "invalid_status",
        "a draft cannot take batches"
    );
    s.act_ok(&t, &id, "seal");
    s.wait_status(&t, &id, "sealed");
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    let rid = |i: usize| d["recipients"][i]["id"].as_str().unwrap().to_string();
    let (status, body) = s.post_json(&t, &path, &json!({}));
    assert_eq!(assert_error(status, &body, 400), "missing_field");
    // One invalid id rejects the whole request.
    let (status, body) = s.post_json(&t, &path, &json!({"recipient_ids": [rid(0), "nope"]}));
    assert_eq!(assert_error(status, &body, 400), "invalid_recipient");
    assert_eq!(
        s.status_of(&t, &id),
        "sealed",
        "the refused batch changed nothing"
    );
    // First batch: the sealed document becomes sent; only the listed recipient is mailed.
    let (status, body) = s.post_json(&t, &path, &json!({"recipient_ids": [rid(0)]}));
    assert_eq!(status, 204, "{body}");
    s.wait_status(&t, &id, "sent");
    s.wait_mails(1, |m| m.contains("To: one@example.com"));
    let (_, d2) = s.get_as(&t, &format!("/v1/documents/{id}"));
    let statuses: Vec<&str> = d2["recipients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["sent", "added", "added"],
        "recipients not listed are untouched"
    );
    // A recipient already sent is refused; a later batch leaves the status unchanged.
    let (status, body) = s.post_json(&t, &path, &json!({"recipient_ids": [rid(0), rid(1)]}));
    assert_eq!(assert_error(status, &body, 400), "invalid_recipient");
    let (status, _) = s.post_json(&t, &path, &json!({"recipient_ids": [rid(1), rid(2)]}));
    assert_eq!(status, 204);
    s.wait_mails(3, |m| m.contains("To: "));
    let barrier = s.mail_barrier(&t);
    let all: Vec<String> = s.mails().into_iter().filter(|m| *m != barrier).collect();
    assert_eq!(all.len(), 3, "one invitation each, nobody twice: {all:?}");
    assert!(all.iter().any(|m| m.contains("To: one@example.com")));
    assert!(all.iter().any(|m| m.contains("To: two@example.com")));
    assert!(all.iter().any(|m| m.contains("To: three@example.com")));
    assert_eq!(
        count(&s.events(&t, &id), "document.sent"),
        0,
        "no document.sent for batches"
    );
    // With a signing order, batches are refused.
    let ordered = pdf_draft(
        &s,
        &t,
        "Ordered",
        json!([signer("o@example.com")]),
        json!({"is_signing_order": true}),
    );
    s.act_ok(&t, &ordered, "seal");
    s.wait_status(&t, &ordered, "sealed");
    let (_, od) = s.get_as(&t, &format!("/v1/documents/{ordered}"));
    let (status, body) = s.post_json(
        &t,
        &format!("/v1/documents/{ordered}/recipients/send"),
        &json!({"recipient_ids": [od["recipients"][0]["id"]]}),
    );
    assert_eq!(assert_error(status, &body, 400), "signing_order");
}

#[test]
fn forward_adds_a_cc_or_transfers_signing_rights() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let id = pdf_draft(
        &s,
        &t,
        "Fwd",
        json!([signer("orig@example.com")]),
        json!({}),
    );
    let path = format!("/v1/documents/{id}/forward");
    let (status, body) = s.post_json(&t, &path, &json!({"email": "new@example.com"}));
    assert_eq!(
        assert_error(status, &body, 400),
        "invalid_status",
        "drafts are not forwarded"
    );
    s.act_ok(&t, &id, "send");
    s.wait_status(&t, &id, "sent");
    let (status, body) = s.post_json(&t, &path, &json!({}));
    assert_eq!(assert_error(status, &body, 400), "missing_field");
    let (status, body) = s.post_json(&t, &path, &json!({"email": "cc-new@example.com"}));
    assert_eq!(status, 204, "{body}");
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    let added = d["recipients"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(added["email"], "cc-new@example.com");
    assert_eq!(added["role"], "cc", "CC by default");
    s.wait_mails(1, |m| m.contains("To: cc-new@example.com"));
    // Transfer: the signer's rights move to the new recipient.
    let orig = d["recipients"][0]["id"].as_str().unwrap().to_string();
    let (status, body) = s.post_json(
        &t,
        &path,
        &json!({"email": "deputy@example.com", "transfer": true}),
    );
    assert_eq!(
        assert_error(status, &body, 400),
        "missing_field",
        "transfer needs recipient_id"
    );
    let (status, body) = s.post_json(
        &t,
        &path,
        &json!({"email": "deputy@example.com", "transfer": true, "recipient_id": orig}),
    );
    assert_eq!(status, 204, "{body}");
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    let deputy = d["recipients"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["email"] == "deputy@example.com")
        .unwrap();
    assert_eq!(deputy["role"], "signer");
    assert_eq!(d["recipients"][0]["status"], "notrequired");
    // Whoever handed their rights on can no longer reject the document.
    let old_link = d["recipients"][0]["document_url"].as_str().unwrap();
    let old_secret = old_link.rsplit('/').next().unwrap();
    let (status, body) = call(
        s.post(&format!("/v1/recipient/{old_secret}/reject"))
            .json(&json!({})),
    );
    assert_eq!(assert_error(status, &body, 400), "invalid_status");
    let (status, body) = s.post_json(
        &t,
        &path,
        &json!({"email": "again@example.com", "transfer": true, "recipient_id": orig}),
    );
    assert_eq!(
        assert_error(status, &body, 400),
        "invalid_recipient",
        "nothing left to transfer"
    );
    assert_eq!(count(&s.events(&t, &id), "document.forwarded"), 2);
    // Not on a signed document.
    assert_eq!(
        s.post_json(&t, &format!("/v1/documents/{id}/manually-sign"), &json!({}))
            .0,
        200
    );
    let (status, body) = s.post_json(
        &t,
        &path,
        &json!({"email": "late@example.com", "transfer": true,
        "recipient_id": deputy["id"]}),
    );
    assert_eq!(assert_error(status, &body, 400), "already_signed");
}

#[test]
fn expiration_date_changes_and_documents_expire() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let id = pdf_draft(&s, &t, "Exp", json!([signer("e@example.com")]), json!({}));
    let path = format!("/v1/documents/{id}/expiration");
    let (status, body) = s.post_json(&t, &path, &json!({"expiration_date": "yesterday"}));
    assert_eq!(assert_error(status, &body, 400), "invalid_field");
    let (status, body) = s.post_json(
        &t,
        &path,
        &json!({"expiration_date": "2001-01-01T00:00:00Z"}),
    );
    assert_eq!(assert_error(status, &body, 400), "invalid_field");
    s.act_ok(&t, &id, "send");
    s.wait_status(&t, &id, "sent");
    // Wide enough that a busy machine still sends it before that time.
    let soon = chrono::Utc::now() + chrono::Duration::seconds(6);
    let (status, body) = s.post_json(
        &t,
        &path,
        &json!({"expiration_date": soon.to_rfc3339(), "send_notification": true}),
    );
    assert_eq!((status, body), (200, json!({"status": 1})));
    s.wait_mails(1, |m| m.contains("New expiration date"));
    s.wait_status(&t, &id, "expired");
    assert_eq!(count(&s.events(&t, &id), "document.expired"), 1);
    // A later date brings it back.
    let later = chrono::Utc::now() + chrono::Duration::days(10);
    let (status, _) = s.post_json(&t, &path, &json!({"expiration_date": later.to_rfc3339()}));
    assert_eq!(status, 200);
    s.wait_status(&t, &id, "sent");
}

#[test]
fn manual_signing_rules() {
    let mut s = Server::start(&[]);
    let t = s.admin_token();
    s.stop();
    s.add_member("peer@example.com", &[]);
    s.launch();
    let peer = s.token("peer@example.com", USER_PASSWORD, None);
    let draft = pdf_draft(
        &s,
        &t,
        "Manual",
        json!([signer("m@example.com")]),
        json!({}),
    );
    let path = format!("/v1/documents/{draft}/manually-sign");
    let (status, body) = s.post_json(&t, &path, &json!({}));
    assert_eq!(
        assert_error(status, &body, 400),
        "invalid_status",
        "not for drafts"
    );
    s.act_ok(&t, &draft, "send");
    s.wait_status(&t, &draft, "sent");
    let (status, body) = s.post_json(&peer, &path, &json!({}));
    assert_eq!(
        assert_error(status, &body, 403),
        "access_denied",
        "owner or admin only"
    );
    let (status, body) = s.post_json(&t, &path, &json!({"file_id": "aaaaaaaaaaaaaaaa"}));
    assert_eq!(assert_error(status, &body, 404), "file_not_found");
    assert_eq!(s.status_of(&t, &draft), "sent", "unchanged");
    let (status, body) = s.post_json(&t, &path, &json!({}));
    assert_eq!((status, body), (200, Value::Null), "200 without body");
    s.wait_status(&t, &draft, "signedwithoutverification");
    let (status, body) = s.post_json(&t, &path, &json!({}));
    assert_eq!(
        assert_error(status, &body, 400),
        "invalid_status",
        "already signed"
    );
    // With an uploaded signed file: signed, and that file (with the audit certificate,
    // sealed) is the download.
    let other = pdf_draft(
        &s,
        &t,
        "Manual 2",
        json!([signer("m@example.com")]),
        json!({}),
    );
    s.act_ok(&t, &other, "send");
    s.wait_status(&t, &other, "sent");
    let signed_pdf = esign_host::pdf::sample_pdf(3);
    let up = s.upload(&t, &signed_pdf, "signed.pdf");
    let (status, _) = s.post_json(
        &t,
        &format!("/v1/documents/{other}/manually-sign"),
        &json!({"file_id": up}),
    );
    assert_eq!(status, 200);
    s.wait_status(&t, &other, "signed");
    let text = pdf_text(&s, &t, &other);
    let upload_text = esign_host::pdf::extract_text(&signed_pdf).unwrap();
    assert!(text.starts_with(&upload_text), "{text}");
    assert!(text.contains("Audit certificate"), "{text}");
    assert!(text.contains("Marked as signed by the sender"), "{text}");
    let (_, detail) = s.get_as(&t, &format!("/v1/documents/{other}"));
    assert_eq!(detail["evidence"]["status"], "sealed", "{detail}");
    let (_, latest) = s.get_as(&t, "/v1/documents/latest?filter=signed");
    assert_eq!(latest["id"], other);
    let (_, won) = s.get_as(
        &t,
        "/v1/documents?filter=signed&sort_by=created&sort_order=desc",
    );
    assert_eq!(won[0]["id"], other, "filter=signed sorts by sign date");
}

#[test]
fn lost_is_idempotent_with_one_event() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let doc = s.create_doc(&t, &json!({"name": "L"}));
    let id = doc["id"].as_str().unwrap();
    for _ in 0..3 {
        let (status, _) = call(s.post(&format!("/v1/documents/{id}/lost")).bearer_auth(&t));
        assert_eq!(status, 204);
    }
    s.wait_status(&t, id, "lost");
    assert_eq!(count(&s.events(&t, id), "document.lost"), 1);
}

#[test]
fn revisions_rules() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let id = pdf_draft(&s, &t, "Rev", json!([signer("r@example.com")]), json!({}));
    let path = format!("/v1/documents/{id}/revisions");
    let (status, body) = s.post_json(&t, &path, &json!({}));
    assert_eq!(
        assert_error(status, &body, 403),
        "not_revisable",
        "a draft is not sealed or sent"
    );
    s.act_ok(&t, &id, "seal");
    s.wait_status(&t, &id, "sealed");
    let (status, body) = s.post_json(&t, &path, &json!({"message": 5}));
    assert_eq!(assert_error(status, &body, 400), "invalid_field");
    let (status, body) = s.post_json(&t, &path, &json!({"message": "v2", "send_document": true}));
    assert_eq!(status, 204, "{body}");
    // (One revision at a time is tested in engine/tests/docs.rs, where the render job
    // runs when the test says so; here it could finish before a second request.)
    // Once sealed again it is sent to the recipients.
    s.wait_status(&t, &id, "sent");
    s.wait_mails(1, |m| {
        m.contains("To: r@example.com") && m.contains("new revision")
    });
    let (_, revs) = s.get_as(&t, &path);
    assert_eq!(revs["revisions"][0]["status"], "sealed");
    assert_eq!(revs["revisions"][0]["message"], "v2");
    // A signed document is no longer sealed or sent-without-signing.
    assert_eq!(
        s.post_json(&t, &format!("/v1/documents/{id}/manually-sign"), &json!({}))
            .0,
        200
    );
    let (status, _) = s.post_json(&t, &path, &json!({}));
    assert_eq!(status, 403);
    // No revision once a recipient has signed: a self-signed document is signed by its
    // sender at sealing.
    let own = pdf_draft(
        &s,
        &t,
        "Self",
        json!([signer(ADMIN_EMAIL), signer("other@example.com")]),
        json!({"is_selfsign": true}),
    );
    s.act_ok(&t, &own, "seal");
    s.wait_status(&t, &own, "sealed");
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{own}"));
    assert_eq!(d["recipients"][0]["status"], "signed", "self-signed first");
    let (status, body) = s.post_json(&t, &format!("/v1/documents/{own}/revisions"), &json!({}));
    assert_eq!(assert_error(status, &body, 400), "already_signed");
    // Signing requirements: a sealed document whose signing settings no longer hold.
    let cc = pdf_draft(
        &s,
        &t,
        "Cc",
        json!([{"email": "c@example.com", "role": "cc"}]),
        json!({}),
    );
    s.act_ok(&t, &cc, "seal");
    s.wait_status(&t, &cc, "sealed");
    let (status, body) = s.post_json(&t, &format!("/v1/documents/{cc}/revisions"), &json!({}));
    assert_eq!(status, 204, "no signing: no requirement: {body}");
}

#[test]
fn reminders_go_to_waiting_recipients() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let id = pdf_draft(
        &s,
        &t,
        "Remind",
        json!([signer("w@example.com")]),
        json!({}),
    );
    let path = format!("/v1/documents/{id}/reminders");
    let (status, body) = s.post_json(&t, &path, &json!({}));
    assert_eq!(assert_error(status, &body, 400), "invalid_status");
    s.act_ok(&t, &id, "send");
    s.wait_status(&t, &id, "sent");
    let (status, body) = s.post_json(&t, &path, &json!({"message": "Friendly nudge"}));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["send_at"], Value::Null);
    assert_eq!(
        body["recipient_ids"].as_array().map(Vec::len),
        Some(1),
        "{body}"
    );
    s.wait_mails(1, |m| {
        m.contains("Reminder") && m.contains("Friendly nudge")
    });
    let (status, body) = s.post_json(&t, &path, &json!({"send_at": "soon"}));
    assert_eq!(assert_error(status, &body, 400), "invalid_field");
}

#[test]
fn delete_recalls_then_removes_with_owner_and_admin_rules() {
    let mut s = Server::start(&[]);
    let t = s.admin_token();
    s.stop();
    s.add_member("mate@example.com", &[]);
    s.launch();
    let mate = s.token("mate@example.com", USER_PASSWORD, None);
    // A draft never sent is removed at once.
    let d = s.create_doc(&t, &json!({"name": "gone"}));
    let did = d["id"].as_str().unwrap();
    assert_eq!(
        s.delete_as(&mate, &format!("/v1/documents/{did}")).0,
        404,
        "others get 404"
    );
    assert_eq!(
        s.get_as(&t, &format!("/v1/documents/{did}")).0,
        200,
        "and it is kept"
    );
    assert_eq!(s.delete_as(&t, &format!("/v1/documents/{did}")).0, 204);
    assert_eq!(s.get_as(&t, &format!("/v1/documents/{did}")).0, 404);
    // A sent document: recall first (data kept), then delete.
    let id = pdf_draft(
        &s,
        &t,
        "Recall",
        json!([signer("r@example.com")]),
        json!({}),
    );
    s.act_ok(&t, &id, "send");
    s.wait_status(&t, &id, "sent");
    assert_eq!(s.delete_as(&t, &format!("/v1/documents/{id}")).0, 204);
    s.wait_status(&t, &id, "recalled");
    assert_eq!(count(&s.events(&t, &id), "document.recalled"), 1);
    let (_, recalled) = s.get_as(&t, "/v1/documents?filter=recalled");
    assert_eq!(recalled[0]["id"], id);
    assert_eq!(
        s.delete_as(&mate, &format!("/v1/documents/{id}")).0,
        404,
        "not the owner"
    );
    assert_eq!(s.delete_as(&t, &format!("/v1/documents/{id}")).0, 204);
    assert_eq!(s.get_as(&t, &format!("/v1/documents/{id}")).0, 404);
    assert_eq!(s.get_as(&t, "/v1/documents?filter=recalled").1, json!([]));
    // When the account restricts deletion to admins, others get 403 before either step.
    s.stop();
    s.admin(&[
        "entity",
        "set",
        &s.first_entity(),
        "--delete-admin-only",
        "true",
    ]);
    s.launch();
    let mate = s.token("mate@example.com", USER_PASSWORD, None);
    let mine = s.create_doc(&mate, &json!({"name": "mine"}));
    let (status, body) = s.delete_as(
        &mate,
        &format!("/v1/documents/{}", mine["id"].as_str().unwrap()),
    );
    assert_eq!(assert_error(status, &body, 403), "deletion_restricted");
}

#[test]
fn scheduled_sending_waits_survives_a_restart_and_runs_once() {
    let mut s = Server::start(&[]);
    let t = s.admin_token();
    // Wide enough for the import and a restart on a busy machine before it is due.
    let at = chrono::Utc::now() + chrono::Duration::seconds(12);
    let id = pdf_draft(
        &s,
        &t,
        "Later",
        json!([signer("later@example.com")]),
        json!({"is_scheduled_sending": true, "scheduled_sending_time": at.to_rfc3339()}),
    );
    let (status, body) = s.post_json(&t, &format!("/v1/documents/{id}/send"), &json!({}));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "scheduled");
    s.restart();
    let t = s.admin_token();
    assert_eq!(
        s.get_as(&t, &format!("/v1/documents/{id}/status")).1["status"],
        "scheduled"
    );
    s.wait_status(&t, &id, "sent");
    s.wait_mails(1, |m| m.contains("To: later@example.com"));
    s.restart();
    let t = s.admin_token();
    // A send job run again after the restart would have been due before the barrier's
    // import job, and its mail queued before the barrier's notice.
    let barrier = s.mail_barrier(&t);
    assert_eq!(count(&s.events(&t, &id), "document.sent"), 1);
    let mails: Vec<String> = s.mails().into_iter().filter(|m| *m != barrier).collect();
    assert_eq!(
        mails
            .iter()
            .filter(|m| m.contains("To: later@example.com"))
            .count(),
        1,
        "{mails:?}"
    );
}

#[test]
fn pricing_tables_and_products() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let id = pdf_draft(
        &s,
        &t,
        "Priced",
        json!([signer("p@example.com")]),
        json!({}),
    );
    let path = format!("/v1/documents/{id}/pricing-tables");
    let table = |price: f64| {
        json!({"pricing_tables": [{
            "currency_settings": {"currency": "SEK", "locale": "sv-SE"},
            "sections": [{"display_name": "Licences", "rows": [{"name": "Widget", "quantity": 2, "price": price}]}],
            "locked": false,
            "summary_values": {"discount": {"value": "10", "flat_fee": false, "enabled": true, "display_name": "Discount"}}
        }]})
    };
    let (status, body) = s.put_json(&t, &path, &table(10.0));
    assert_eq!(status, 204, "{body}");
    let (_, got) = s.get_as(&t, &path);
    let tbl = &got["pricing_tables"][0];
    assert_eq!(tbl["currency_settings"]["currency"], "SEK");
    assert_eq!(tbl["sections"][0]["rows"][0]["name"], "Widget");
    assert_eq!(
        tbl["summary_values"]["discount"]["display_name"],
        "Discount"
    );
    assert_eq!(tbl["total"], 18.0);
    let (status, body) = s.put_json(
        &t,
        &path,
        &json!({"pricing_tables": [{"sections": [{"rows": [{"price": "x"}]}]}]}),
    );
    assert_eq!(assert_error(status, &body, 400), "invalid_field");
    s.act_ok(&t, &id, "send");
    s.wait_status(&t, &id, "sent");
    assert!(pdf_text(&s, &t, &id).contains("Widget 2 x 10.00"));
    // A sent document's tables can change: visible at once, and in the PDF once rendered.
    assert_eq!(s.put_json(&t, &path, &table(12.5)).0, 204);
    assert_eq!(
        s.get_as(&t, &path).1["pricing_tables"][0]["sections"][0]["rows"][0]["price"],
        12.5
    );
    wait_until(20, "the PDF to be rendered again", || {
        pdf_text(&s, &t, &id)
            .contains("Widget 2 x 12.50")
            .then_some(())
    });
    // Products.
    let (status, p) = s.post_json(
        &t,
        "/v1/products",
        &json!({"name": "Widget", "price": 10, "currency": "SEK"}),
    );
    assert_eq!(status, 200, "{p}");
    for i in 0..3 {
        s.post_json(
            &t,
            "/v1/products",
            &json!({"name": format!("P{i}"), "price": i}),
        );
    }
    let (_, list) = s.get_as(&t, "/v1/products?limit=2");
    assert_eq!(list["products"].as_array().unwrap().len(), 2);
    let (_, list) = s.get_as(&t, "/v1/products?limit=0");
    assert_eq!(list["products"].as_array().unwrap().len(), 4);
    let (status, body) = s.post_json(&t, "/v1/products", &json!({"price": 1}));
    assert_eq!(assert_error(status, &body, 400), "missing_field");
}

#[test]
fn smtp_delivery_hard_bounces_and_sending_again() {
    let smtp = SmtpServer::start();
    let s = Server::start(&["--smtp-url", &smtp.url]);
    let t = s.admin_token();
    let id = pdf_draft(
        &s,
        &t,
        "Bouncy",
        json!([signer("ok@example.com"), signer("bounce@example.com")]),
        json!({}),
    );
    s.act_ok(&t, &id, "send");
    let mail = smtp.wait_for("ok@example.com");
    assert!(mail.contains("Bouncy"), "{mail}");
    // The rejected address makes the recipient and the document hard-bounced.
    s.wait_status(&t, &id, "hardbounced");
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    let bounced = d["recipients"][1].clone();
    assert_eq!(bounced["status"], "hardbounced");
    assert_eq!(d["recipients"][0]["status"], "sent");
    assert_eq!(count(&s.events(&t, &id), "document.hardbounced"), 1);
    let notice = smtp.wait_for(ADMIN_EMAIL);
    assert!(notice.contains("bounce@example.com"), "{notice}");
    let (_, hb) = s.get_as(&t, "/v1/documents?filter=hardbounced");
    assert_eq!(hb[0]["id"], id);
    // Correct the address and send to that recipient again.
    let rid = bounced["id"].as_str().unwrap();
    let (status, body) = s.put_json(
        &t,
        &format!("/v1/documents/{id}/recipients/{rid}"),
        &json!({"email": "fixed@example.com"}),
    );
    assert_eq!(status, 204, "{body}");
    let (status, body) = s.post_json(
        &t,
        &format!("/v1/documents/{id}/recipients/send"),
        &json!({"recipient_ids": [rid]}),
    );
    assert_eq!(status, 204, "{body}");
    smtp.wait_for("fixed@example.com");
    s.wait_status(&t, &id, "sent");
    assert!(s.mails().is_empty(), "nothing went to the mail folder");
}

#[test]
fn a_mobile_only_recipient_gets_the_link_through_the_sms_gateway_retried_until_it_takes_it() {
    use std::sync::atomic::{AtomicU32, Ordering};
    let calls = std::sync::Arc::new(AtomicU32::new(0));
    let seen = calls.clone();
    // The gateway fails once (503), then takes the message.
    let gw = HttpsServer::start(move |_| {
        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            Canned::status(503)
        } else {
            Canned::ok(b"{}".to_vec())
        }
    });
    let ca = gw.ca_file.display().to_string();
    let url = gw.url("/sms");
    let s = Server::start(&[
        "--sms-gateway-url",
        &url,
        "--sms-gateway-token",
        "gw-secret",
        "--outbound-ca-file",
        &ca,
    ]);
    let t = s.admin_token();
    let id = pdf_draft(
        &s,
        &t,
        "By text",
        json!([{"first_name": "Mo", "mobile": "+46700000001"}]),
        json!({}),
    );
    let (status, b) = s.post_json(&t, &format!("/v1/documents/{id}/send"), &json!({}));
    assert_eq!(status, 200, "{b}");
    s.wait_status(&t, &id, "sent");
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    let link = d["recipients"][0]["document_url"]
        .as_str()
        .unwrap()
        .to_string();
    let got = gw.wait_for("/sms", 2, 30);
    for r in &got {
        assert_eq!(r.method, "POST");
        assert_eq!(r.headers["authorization"], "Bearer gw-secret");
        let b = r.json();
        assert_eq!(b["to"], "+46700000001");
        assert!(b["text"].as_str().unwrap().contains(&link), "{b}");
    }
    assert!(s.sms().is_empty(), "the gateway, not the folder");
}

#[test]
fn mail_queued_across_a_crash_is_delivered_once() {
    // The SMTP server is down: nothing listens on its port yet.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("smtp://127.0.0.1:{port}");
    let mut s = Server::start(&["--smtp-url", &url]);
    let t = s.admin_token();
    let id = pdf_draft(
        &s,
        &t,
        "Queued",
        json!([signer("one@example.com"), signer("two@example.com")]),
        json!({}),
    );
    s.act_ok(&t, &id, "send");
    s.wait_status(&t, &id, "sent");
    s.kill();
    let smtp = SmtpServer::start_at(&format!("127.0.0.1:{port}"));
    s.launch();
    smtp.wait_for("one@example.com");
    smtp.wait_for("two@example.com");
    // Barrier: mail goes out one at a time, oldest first, so once a mail queued after
    // the restart has arrived, every earlier one has been sent (or sent again).
    let later = pdf_draft(
        &s,
        &t,
        "Later",
        json!([signer("three@example.com")]),
        json!({}),
    );
    s.act_ok(&t, &later, "send");
    smtp.wait_for("three@example.com");
    let received = smtp.received.lock().unwrap().clone();
    for to in ["one@example.com", "two@example.com", "three@example.com"] {
        let n = received
            .iter()
            .filter(|(rcpt, _)| rcpt.contains(to))
            .count();
        assert_eq!(n, 1, "{to} got {n} mails: {received:?}");
    }
}

/// A recipient act through the recipient API, as the signing page sends it.
fn act(s: &Server, secret: &str, what: &str) -> (u16, Value) {
    call(
        s.post(&format!("/v1/recipient/{secret}/{what}"))
            .json(&json!({})),
    )
}

/// How many mails so far are addressed to `to`, behind a barrier (so that every mail
/// queued before it has been written).
fn mails_to(s: &Server, t: &str, to: &str) -> usize {
    s.mail_barrier(t);
    s.mails()
        .iter()
        .filter(|m| m.contains(&format!("To: {to}")))
        .count()
}

#[test]
fn signing_order_groups_rejection_cc_and_a_transfer_that_keeps_its_place() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let role = |email: &str, role: &str, order: u32| json!({"email": email, "first_name": "R", "last_name": "S", "role": role, "order_num": order});
    let sent = |recipients: Value| {
        let id = pdf_draft(
            &s,
            &t,
            "Ordered",
            recipients,
            json!({"is_signing_order": true}),
        );
        s.act_ok(&t, &id, "send");
        s.wait_status(&t, &id, "sent");
        let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
        (id, d)
    };

    // A group of two shares order 1; the cc of order 3 is mailed with the first group.
    let (id, d) = sent(json!([
        role("a@example.com", "signer", 1),
        role("b@example.com", "signer", 1),
        role("c@example.com", "signer", 2),
        role("cc@example.com", "cc", 3),
    ]));
    let (a, b, c) = (link(&d, 0), link(&d, 1), link(&d, 2));
    for to in ["a@example.com", "b@example.com", "cc@example.com"] {
        assert_eq!(mails_to(&s, &t, to), 1, "{to} is invited at send");
    }
    assert_eq!(mails_to(&s, &t, "c@example.com"), 0, "c waits for group 1");
    let (status, body) = act(&s, &c, "sign");
    assert_eq!(assert_error(status, &body, 403), "not_allowed");
    assert_eq!(act(&s, &a, "sign").0, 200);
    // Half of group 1 is not enough.
    let (status, body) = act(&s, &c, "sign");
    assert_eq!(
        assert_error(status, &body, 403),
        "not_allowed",
        "b has not signed"
    );
    assert_eq!(mails_to(&s, &t, "c@example.com"), 0);
    assert_eq!(act(&s, &b, "sign").0, 200);
    assert_eq!(mails_to(&s, &t, "c@example.com"), 1, "group 2's turn");
    assert_eq!(s.status_of(&t, &id), "sent");
    assert_eq!(act(&s, &c, "sign").0, 200);
    s.wait_status(&t, &id, "signed");

    // A rejection part-way through: the document is rejected and the later group is
    // never invited nor able to act.
    let (id, d) = sent(json!([
        role("x@example.com", "signer", 1),
        role("y@example.com", "signer", 2),
    ]));
    let (status, body) = call(
        s.post(&format!("/v1/recipient/{}/reject", link(&d, 0)))
            .json(&json!({"reason": "No"})),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(s.status_of(&t, &id), "rejected");
    let (status, _) = act(&s, &link(&d, 1), "sign");
    assert!((400..500).contains(&status), "y cannot sign: {status}");
    assert_eq!(mails_to(&s, &t, "y@example.com"), 0, "y was never invited");

    // A transfer keeps the place in the order: the new signer acts now, the next group
    // after them.
    let (id, d) = sent(json!([
        role("p@example.com", "signer", 1),
        role("q@example.com", "signer", 2),
    ]));
    let (status, body) = s.post_json(
        &t,
        &format!("/v1/documents/{id}/forward"),
        &json!({"recipient_id": d["recipients"][0]["id"], "email": "p2@example.com",
                "first_name": "P", "last_name": "Two", "transfer": true}),
    );
    assert_eq!(status, 204, "{body}");
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    let p2 = d["recipients"]
        .as_array()
        .unwrap()
        .iter()
        .position(|r| r["email"] == "p2@example.com")
        .expect("the new recipient");
    assert_eq!(d["recipients"][p2]["order_num"], "1", "{d}");
    assert_eq!(mails_to(&s, &t, "p2@example.com"), 1);
    assert_eq!(mails_to(&s, &t, "q@example.com"), 0);
    let q = d["recipients"]
        .as_array()
        .unwrap()
        .iter()
        .position(|r| r["email"] == "q@example.com")
        .unwrap();
    let (status, body) = act(&s, &link(&d, q), "sign");
    assert_eq!(assert_error(status, &body, 403), "not_allowed");
    assert_eq!(act(&s, &link(&d, p2), "sign").0, 200);
    assert_eq!(mails_to(&s, &t, "q@example.com"), 1);
    assert_eq!(act(&s, &link(&d, q), "sign").0, 200);
    s.wait_status(&t, &id, "signed");
}

#[test]
fn the_recipients_texts_are_in_the_document_s_language() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let (status, body) = s.post_json(&t, "/v1/documents", &json!({"name": "x", "language": "xx"}));
    assert_eq!(assert_error(status, &body, 400), "invalid_field");
    let id = pdf_draft(
        &s,
        &t,
        "Avtal",
        json!([person("Åsa", "Ek", "asa@example.com")]),
        json!({"language": "sv-SE"}),
    );
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    assert_eq!(d["language"], "sv", "{d}");
    s.act_ok(&t, &id, "send");
    s.wait_status(&t, &id, "sent");
    let sv = words("sv");
    let mail = s
        .wait_mails(1, |m| m.contains("To: asa@example.com"))
        .remove(0);
    let sender = d["sender_name"].as_str().unwrap();
    for text in [
        said(
            &sv,
            "mail.invitation_subject",
            &[("sender", sender), ("document", "Avtal")],
        ),
        said(&sv, "mail.hello", &[("name", "Åsa Ek")]),
        said(&sv, "mail.open_sign", &[]),
        said(&sv, "mail.personal", &[]),
    ] {
        assert!(mail.contains(&text), "{text:?} is not in {mail}");
    }
    // The signing page: its header, its language and the words its script shows.
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    let page = client()
        .get(s.url(&format!("/s/{}", link(&d, 0))))
        .header("accept", "text/html")
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(page.contains("<html lang=\"sv\""), "{page}");
    for key in ["sign.from", "sign.expires", "sign.loading"] {
        let text = html_escaped(&said(&sv, key, &[]));
        assert!(page.contains(&text), "{key}: {text:?} is not on the page");
    }
    let consent = serde_json::to_string(&sv["sign.consent"]).unwrap();
    assert!(page.contains(&consent), "the script's words are embedded");
    // From now on, German: a reminder is in German.
    let (status, body) = s.put_json(
        &t,
        &format!("/v1/documents/{id}"),
        &json!({"language": "de"}),
    );
    assert_eq!(status, 204, "{body}");
    let (status, body) = s.put_json(
        &t,
        &format!("/v1/documents/{id}"),
        &json!({"language": "klingon"}),
    );
    assert_eq!(assert_error(status, &body, 400), "invalid_field");
    let (status, body) = s.post_json(&t, &format!("/v1/documents/{id}/reminders"), &json!({}));
    assert_eq!(status, 200, "{body}");
    let de = words("de");
    let subject = said(&de, "mail.reminder_subject", &[("document", "Avtal")]);
    s.wait_mails(1, |m| m.contains(&subject));
    // A link that does not work says so in the browser's language.
    let (status, notice) = {
        let r = client()
            .get(s.url("/s/nothing-here"))
            .header("accept", "text/html")
            .header("accept-language", "fi-FI, en;q=0.5")
            .send()
            .unwrap();
        (r.status().as_u16(), r.text().unwrap())
    };
    assert_eq!(status, 404);
    let fi = html_escaped(&said(&words("fi"), "sign.link_broken", &[]));
    assert!(
        notice.contains(&fi) && notice.contains("lang=\"fi\""),
        "{notice}"
    );
}
