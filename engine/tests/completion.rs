//! A copy of the completed document for every party (issue 50 item 3): once the sealed
//! PDF is stored, every recipient, the owner and every `sign_copy_emails` address get
//! one mail in the document's language, with the PDF attached or a link to it, as the
//! entity chose; a recipient without an email gets the link by SMS.

mod common;

use common::*;
use esign_engine::memory::MemoryPlatform;
use esign_engine::{Mail, Origin, handle};
use serde_json::{Value, json};

/// A document with a signer, a CC and an SMS-only approver, sent to them; the signer's
/// and approver's secrets.
fn sent(p: &mut MemoryPlatform, t: &str, extra: Value) -> (String, String, String) {
    let (id, sent) = sent_doc(
        p,
        t,
        json!([
            {"email": "s@y.se", "first_name": "Sam", "role": "signer"},
            {"email": "cc@y.se", "first_name": "Cy", "role": "cc"},
            {"mobile": "+46701234567", "first_name": "Ann", "role": "externalApprover"},
        ]),
        extra,
    );
    let secret = |i: usize| secret_of(&sent, i);
    (id, secret(0), secret(2))
}

/// Signs as the signer and approves as the approver, then seals: the document is
/// complete.
fn complete(p: &mut MemoryPlatform, signer: &str, approver: &str) {
    for (secret, act, body) in [
        (
            signer,
            "sign",
            json!({"signature": {"type": "typed", "name": "Sam Svensson"}}),
        ),
        (approver, "approve", json!({})),
    ] {
        let (s, r) = recipient(
            p,
            "POST",
            &format!("/v1/recipient/{secret}/view"),
            Some(json!({})),
        );
        assert_eq!(s, 200, "{r}");
        let (s, r) = recipient(
            p,
            "POST",
            &format!("/v1/recipient/{secret}/{act}"),
            Some(body),
        );
        assert_eq!(s, 200, "{r}");
    }
    p.mails.clear();
    p.sms.clear();
    finish_render(p, 3);
}

/// The path of the `/v1/download/{secret}` link in mail `m`.
fn download_path(m: &Mail) -> Option<String> {
    let line = m.body.lines().find(|l| l.contains("/v1/download/"))?;
    Some(line[line.find("/v1/download/")?..].to_string())
}

fn copies(p: &MemoryPlatform) -> Vec<&Mail> {
    p.mails
        .iter()
        .filter(|m| m.tag.starts_with("completion:"))
        .collect()
}

#[test]
fn every_party_gets_one_copy_with_the_sealed_pdf_attached() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (id, signer, approver) = sent(&mut p, &t, json!({"language": "sv"}));
    let copy_to = json!({"sign_copy_emails": "legal@y.se, S@Y.SE"});
    let (s, e) = api(
        &mut p,
        &t,
        "PUT",
        &format!("/v1/documents/{id}"),
        Some(copy_to),
    );
    assert_eq!(s, 204, "{e}");
    complete(&mut p, &signer, &approver);
    let (s, doc) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}"), None);
    assert_eq!((s, doc["status"].as_str()), (200, Some("signed")), "{doc}");
    let mut to: Vec<&str> = copies(&p).iter().map(|m| m.to.as_str()).collect();
    to.sort();
    // The signer once (S@Y.SE is the same address), the CC, the owner, legal@.
    assert_eq!(to, ["a@x.se", "cc@y.se", "legal@y.se", "s@y.se"]);
    let sealed = p
        .blobs
        .iter()
        .find(|(_, b)| b.starts_with(b"%PDF-sealed"))
        .unwrap()
        .0
        .clone();
    for m in copies(&p) {
        assert!(m.subject.starts_with("Signerat: "), "{}", m.subject);
        assert!(m.body.contains("bifogat"), "{}", m.body);
        assert_eq!(m.attachments.len(), 1, "{m:?}");
        assert_eq!(m.attachments[0].blob, sealed);
        assert_eq!(m.attachments[0].content_type, "application/pdf");
        assert_eq!(m.attachments[0].name, "Contract.pdf");
    }
    // The approver has no email: an SMS with a link that downloads the sealed PDF.
    let sms: Vec<_> = p
        .sms
        .iter()
        .filter(|s| s.tag.starts_with("completion:"))
        .cloned()
        .collect();
    assert_eq!(sms.len(), 1, "{:?}", p.sms);
    let url = sms[0].text.rsplit(' ').next().unwrap();
    let secret = url.rsplit('/').next().unwrap();
    let resp = handle(
        &mut p,
        &request(Origin::Http, "GET", &format!("/v1/download/{secret}"), None),
    );
    assert_eq!(resp.status, 200);
    assert!(resp.body.starts_with(b"%PDF-sealed"));
    // Each use of the link is in the trail, with whom it was sent to.
    let (_, log) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}/log"), None);
    let actions: Vec<&str> = log
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["action"].as_str())
        .collect();
    assert!(actions.contains(&"completion_copies_sent"), "{actions:?}");
    assert!(
        actions.contains(&"completion_copy_downloaded"),
        "{actions:?}"
    );
}

/// `PUT /v1/entity` with `completion_copies: choice`: its status and what the entity
/// answers (or the error).
fn choose(p: &mut MemoryPlatform, t: &str, choice: &str) -> (u16, Value) {
    let body = json!({"completion_copies": choice});
    let (s, e) = api(p, t, "PUT", "/v1/entity", Some(body));
    let shown = match s {
        200 => e["entity"]["completion_copies"].clone(),
        _ => e["error"].clone(),
    };
    (s, shown)
}

#[test]
fn the_entity_chooses_links_or_nothing() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (s, e) = api(&mut p, &t, "GET", "/v1/entity", None);
    assert_eq!(
        (s, &e["entity"]["completion_copies"]),
        (200, &json!("attachment"))
    );
    assert_eq!(choose(&mut p, &t, "mail"), (400, json!("invalid_field")));

    assert_eq!(choose(&mut p, &t, "link"), (200, json!("link")));
    let (_, signer, approver) = sent(&mut p, &t, json!({}));
    complete(&mut p, &signer, &approver);
    let mails = copies(&p);
    assert_eq!(mails.len(), 3, "{mails:?}");
    for m in mails {
        assert!(m.attachments.is_empty());
        assert!(m.body.contains("/v1/download/"), "{}", m.body);
        assert!(m.body.contains("UTC"), "the link's end: {}", m.body);
    }

    assert_eq!(choose(&mut p, &t, "none"), (200, json!("none")));
    let (_, signer, approver) = sent(&mut p, &t, json!({}));
    complete(&mut p, &signer, &approver);
    assert!(copies(&p).is_empty());
    assert!(p.sms.iter().all(|s| !s.tag.starts_with("completion:")));
}

#[test]
fn a_bounced_copy_shows_in_the_trail() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (id, signer, approver) = sent(&mut p, &t, json!({}));
    complete(&mut p, &signer, &approver);
    let tag = copies(&p)
        .iter()
        .find(|m| m.to == "cc@y.se")
        .unwrap()
        .tag
        .clone();
    let job = esign_engine::Job {
        id: "b".into(),
        kind: "mail.bounced".into(),
        payload: format!("{tag}\n550 no such user").into_bytes(),
        attempt: 1,
        outcome: None,
    };
    assert_eq!(
        esign_engine::run_job(&mut p, &job),
        esign_engine::JobOutcome::Done
    );
    let (_, log) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}/log"), None);
    let bounced = log
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "completion_copy_bounced")
        .unwrap_or_else(|| panic!("{log:#}"))
        .clone();
    assert!(
        bounced["detail"].as_str().unwrap().contains("cc@y.se"),
        "{bounced}"
    );
    // The recipient who got their invitation stays as they are.
    let (_, doc) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}"), None);
    assert_eq!(doc["status"], "signed", "{doc}");
}

#[test]
fn a_sealed_pdf_above_the_operators_limit_goes_as_a_link_that_works_as_long_as_set() {
    let mut p = bootstrapped();
    // The fake sealed PDF is 9 bytes; the operator allows 8, and links of 2 days.
    p.settings.completion_attachment_max_bytes = 8;
    p.settings.completion_link_days = 2;
    let t = token(&mut p);
    let (_, signer, approver) = sent(&mut p, &t, json!({}));
    complete(&mut p, &signer, &approver);
    let mails: Vec<Mail> = copies(&p).into_iter().cloned().collect();
    assert_eq!(mails.len(), 3);
    assert!(mails.iter().all(|m| m.attachments.is_empty()));
    let path = download_path(&mails[0]).expect("a download link");
    let get = |p: &mut MemoryPlatform| handle(p, &request(Origin::Http, "GET", &path, None)).status;
    p.now_ms += 2 * 24 * 3600 * 1000 - 1000;
    assert_eq!(get(&mut p), 200);
    p.now_ms += 2000;
    assert_eq!(get(&mut p), 404, "the link ends after the days set");
}

#[test]
fn an_operators_huge_link_lifetime_does_not_overflow() {
    let mut p = bootstrapped();
    p.settings.completion_link_days = u64::MAX;
    let t = token(&mut p);
    assert_eq!(choose(&mut p, &t, "link"), (200, json!("link")));
    let (_, signer, approver) = sent(&mut p, &t, json!({}));
    complete(&mut p, &signer, &approver);
    let mails: Vec<Mail> = copies(&p).into_iter().cloned().collect();
    assert_eq!(mails.len(), 3);
    let path = download_path(&mails[0]).expect("a download link");
    let resp = handle(&mut p, &request(Origin::Http, "GET", &path, None));
    assert_eq!(resp.status, 200, "a link that never ends works");
}

#[test]
fn each_kind_of_party_gets_what_the_entity_chose_for_it() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let body = json!({"completion_copies": "attachment",
                      "completion_copies_by_party": {"cc": "none", "owner": "link"}});
    let (s, e) = api(&mut p, &t, "PUT", "/v1/entity", Some(body));
    assert_eq!(s, 200, "{e}");
    let (_, e) = api(&mut p, &t, "GET", "/v1/entity", None);
    assert_eq!(
        e["entity"]["completion_copies_by_party"],
        json!({"signers": "attachment", "approvers": "attachment", "cc": "none",
               "owner": "link", "copy_emails": "attachment"})
    );
    // An unknown kind or value is refused.
    for bad in [json!({"ccs": "none"}), json!({"cc": "fax"}), json!(["cc"])] {
        let body = json!({"completion_copies_by_party": bad});
        let (s, r) = api(&mut p, &t, "PUT", "/v1/entity", Some(body));
        assert_eq!(
            (s, r["error"].as_str()),
            (400, Some("invalid_field")),
            "{r}"
        );
    }
    let (id, signer, approver) = sent(&mut p, &t, json!({}));
    let _ = id;
    complete(&mut p, &signer, &approver);
    let mails = copies(&p);
    let to = |who: &str| mails.iter().find(|m| m.to == who);
    // The signer: attached; the CC: nothing; the owner: a link.
    assert_eq!(to("s@y.se").map(|m| m.attachments.len()), Some(1));
    assert!(to("cc@y.se").is_none(), "{mails:?}");
    let owner = to("a@x.se").expect("the owner's copy");
    assert!(
        owner.attachments.is_empty() && download_path(owner).is_some(),
        "{owner:?}"
    );
}
