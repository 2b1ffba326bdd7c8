//! Native tests of the document engine on the in-memory platform: what a list reads,
//! and how render and expiry jobs treat outcomes that arrive late.

mod common;

use common::*;
use esign_engine::memory::MemoryPlatform;
use esign_engine::{JobOutcome, Origin, WorkOrder, WorkOutcome};
use serde_json::{Value, json};

/// A render outcome naming blobs that exist, its content hash made of `tag`.
fn rendered(p: &mut MemoryPlatform, tag: &str) -> WorkOutcome {
    render_outcome(p, None, 2, &tag.repeat(64 / tag.len()))
}

/// Creates a document from `body`; its id.
fn create(p: &mut MemoryPlatform, t: &str, body: Value) -> String {
    let (s, doc) = api(p, t, "POST", "/v1/documents", Some(body));
    assert_eq!(s, 200, "{doc}");
    doc["id"].as_str().unwrap().to_string()
}

/// A document with one recipient, sealed or sent (`act`), its render job run; its id.
fn out_doc(p: &mut MemoryPlatform, t: &str, act: &str, tag: &str) -> String {
    let id = create(
        p,
        t,
        json!({"name": "x", "recipients": [{"email": "s@x.se"}]}),
    );
    let (s, _) = api(p, t, "POST", &format!("/v1/documents/{id}/{act}"), None);
    assert_eq!(s, 200);
    let render = take_jobs(p, "doc.render").remove(0);
    let out = rendered(p, tag);
    assert_eq!(run(p, &render, Some(out)), JobOutcome::Done);
    id
}

fn status(p: &mut MemoryPlatform, t: &str, id: &str) -> String {
    status_of(p, t, id)["status"].as_str().unwrap().to_string()
}

#[test]
fn a_create_and_a_send_read_no_key_of_a_document_id_they_mint() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    p.read_log = Some(Vec::new());
    let id = create(
        &mut p,
        &t,
        json!({"name": "x", "recipients": [{"email": "s@x.se"}]}),
    );
    let log = p.read_log.replace(Vec::new()).unwrap();
    let named: Vec<String> = log
        .iter()
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .filter(|k| k.contains(&id))
        .collect();
    assert!(named.is_empty(), "the create read {named:?}");
    // A later call knows nothing of what was minted: it reads the document's keys.
    let (s, _) = api(
        &mut p,
        &t,
        "POST",
        &format!("/v1/documents/{id}/send"),
        None,
    );
    assert_eq!(s, 200);
    let log = p.read_log.take().unwrap();
    assert!(
        log.iter().any(|k| k == format!("doc/{id}").as_bytes()),
        "the send reads the document"
    );
}

#[test]
fn a_list_reads_only_the_page_it_returns() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    for i in 0..400 {
        let (s, _) = api(
            &mut p,
            &t,
            "POST",
            "/v1/documents",
            Some(json!({"name": format!("d{i}")})),
        );
        assert_eq!(s, 200);
    }
    let before = p.reads;
    let (s, list) = api(
        &mut p,
        &t,
        "GET",
        "/v1/documents?filter=draft&limit=10",
        None,
    );
    assert_eq!(s, 200);
    assert_eq!(list.as_array().unwrap().len(), 10);
    let reads = p.reads - before;
    assert!(
        reads < 60,
        "a 10-item page of 400 documents read {reads} entries"
    );
    // Every status at once (17 ranges merged) stays bounded too.
    let before = p.reads;
    api(
        &mut p,
        &t,
        "GET",
        "/v1/documents?limit=10&sort_by=name",
        None,
    );
    let reads = p.reads - before;
    assert!(reads < 200, "read {reads} entries");
}

#[test]
fn a_superseded_render_is_dropped_and_the_latest_one_seals() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let id = create(
        &mut p,
        &t,
        json!({"name": "r", "recipients": [{"email": "s@x.se"}]}),
    );
    let (s, _) = api(
        &mut p,
        &t,
        "POST",
        &format!("/v1/documents/{id}/seal"),
        None,
    );
    assert_eq!(s, 200);
    let first = take_jobs(&mut p, "doc.render").remove(0);
    assert!(matches!(first.work, Some(WorkOrder::Render(_))));
    // The pricing changes while the seal renders: a new render for the same purpose.
    let (s, _) = api(
        &mut p,
        &t,
        "PUT",
        &format!("/v1/documents/{id}/pricing-tables"),
        Some(
            json!({"pricing_tables": [{"sections": [{"rows": [{"name": "x", "quantity": 1, "price": 5}]}]}]}),
        ),
    );
    assert_eq!(s, 204);
    let second = take_jobs(&mut p, "doc.render").remove(0);
    let old = rendered(&mut p, "a");
    assert_eq!(run(&mut p, &first, Some(old)), JobOutcome::Done);
    assert_eq!(
        status(&mut p, &t, &id),
        "draft",
        "the stale render changed nothing"
    );
    assert!(!p.blobs.contains_key("pdf-a"), "and its PDF was dropped");
    let new = rendered(&mut p, "b");
    assert_eq!(run(&mut p, &second, Some(new)), JobOutcome::Done);
    assert_eq!(status(&mut p, &t, &id), "sealed");
    let (_, d) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}"), None);
    assert_eq!(d["content_sha256"], "b".repeat(64));
    assert_eq!(
        p.events
            .iter()
            .filter(|e| e.kind == "document.sealed")
            .count(),
        1
    );
}

#[test]
fn an_expiry_job_for_a_moved_date_does_nothing() {
    let mut p = bootstrapped();
    p.settings.token_ttl_secs = 365 * 24 * 3600; // the clock moves two months
    let t = token(&mut p);
    let id = out_doc(&mut p, &t, "send", "c");
    assert_eq!(status(&mut p, &t, &id), "sent");
    let expiry = take_jobs(&mut p, "doc.expire").remove(0);
    // Move the date 60 days on, then run the old job at the old date.
    let later = p.now_ms + 60 * 24 * 3600 * 1000;
    let later_text = esign_engine::iso8601(later);
    let (s, _) = api(
        &mut p,
        &t,
        "POST",
        &format!("/v1/documents/{id}/expiration"),
        Some(json!({"expiration_date": later_text})),
    );
    assert_eq!(s, 200);
    p.now_ms = expiry.run_at_ms + 1;
    assert_eq!(run(&mut p, &expiry, None), JobOutcome::Done);
    assert_eq!(status(&mut p, &t, &id), "sent");
    // The new job, at the new date, expires it once.
    let new_job = take_jobs(&mut p, "doc.expire").remove(0);
    p.now_ms = new_job.run_at_ms + 1;
    assert_eq!(run(&mut p, &new_job, None), JobOutcome::Done);
    assert_eq!(status(&mut p, &t, &id), "expired");
    assert_eq!(run(&mut p, &new_job, None), JobOutcome::Done);
    assert_eq!(
        p.events
            .iter()
            .filter(|e| e.kind == "document.expired")
            .count(),
        1
    );
}

#[test]
fn a_deleted_draft_is_erased_in_the_background() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let id = create(
        &mut p,
        &t,
        json!({"name": "gone", "file_content": "JVBERi0xLjQKZmFrZQ==", "file_name": "a.pdf"}),
    );
    let blob = p.blobs.keys().next().unwrap().clone();
    let import = take_jobs(&mut p, "doc.import").remove(0);
    assert_eq!(
        run(&mut p, &import, Some(one_page(&blob))),
        JobOutcome::Done
    );
    assert_eq!(status(&mut p, &t, &id), "draft");
    api(
        &mut p,
        &t,
        "POST",
        &format!("/v1/documents/{id}/comments"),
        Some(json!({"text": "c"})),
    );
    let (s, _) = api(&mut p, &t, "DELETE", &format!("/v1/documents/{id}"), None);
    assert_eq!(s, 204);
    let erase = take_jobs(&mut p, "doc.erase").remove(0);
    assert_eq!(run(&mut p, &erase, None), JobOutcome::Done);
    let left = keys_containing(&p, &[&id, &blob]);
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(p.blobs.is_empty(), "the file's bytes are gone");
}

/// A platform, a token, and a ready PDF upload (its id and blob).
fn with_upload() -> (MemoryPlatform, String, String, String) {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (s, up) = api(
        &mut p,
        &t,
        "POST",
        "/v1/upload",
        Some(json!({"file_content": "JVBERi0xLjQKZmFrZQ==", "file_name": "u.pdf"})),
    );
    assert_eq!(s, 200, "{up}");
    let blob = p.blobs.keys().next().unwrap().clone();
    let id = up["file_id"].as_str().unwrap().to_string();
    (p, t, id, blob)
}

fn one_page(blob: &str) -> WorkOutcome {
    imported_pages(blob, 1)
}

#[test]
fn an_import_finishing_after_its_document_is_gone_keeps_the_uploads_file() {
    let (mut p, t, upload, blob) = with_upload();
    let id = create(&mut p, &t, json!({"name": "x", "file_ids": upload}));
    let import = take_jobs(&mut p, "doc.import").remove(0);
    let (s, _) = api(&mut p, &t, "DELETE", &format!("/v1/documents/{id}"), None);
    assert_eq!(s, 204);
    // The host imported the upload's PDF: its result is the upload's own blob.
    assert_eq!(
        run(&mut p, &import, Some(one_page(&blob))),
        JobOutcome::Done
    );
    assert!(p.blobs.contains_key(&blob), "the upload still has its file");
    // And a second document can still use it.
    let (s, _) = api(
        &mut p,
        &t,
        "POST",
        "/v1/documents",
        Some(json!({"name": "y", "file_ids": upload})),
    );
    assert_eq!(s, 200);
}

#[test]
fn a_refused_create_stores_no_file() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let pdf = "JVBERi0xLjQKZmFrZQ==";
    // A 400 found after the file was read.
    let (s, _) = api(
        &mut p,
        &t,
        "POST",
        "/v1/documents",
        Some(json!({"name": "x", "file_content": pdf, "file_name": "a.pdf", "video_id": 5})),
    );
    assert_eq!(s, 400);
    // A 404 for an unknown upload leaves a page-less draft, and no inline file.
    let (s, _) = api(
        &mut p,
        &t,
        "POST",
        "/v1/documents",
        Some(
            json!({"name": "x", "file_content": pdf, "file_name": "a.pdf", "file_ids": "aaaaaaaaaaaaaaaa"}),
        ),
    );
    assert_eq!(s, 404);
    // A template refused for its file type.
    let (s, _) = api(
        &mut p,
        &t,
        "POST",
        "/v1/templates",
        Some(json!({"name": "t", "file_content": "aGVsbG8=", "file_name": "a.txt"})),
    );
    assert_eq!(s, 400);
    assert!(
        p.blobs.is_empty(),
        "nothing stored: {:?}",
        p.blobs.keys().collect::<Vec<_>>()
    );
    assert!(!p.data.keys().any(|k| k.starts_with(b"bref/")));
}

#[test]
fn a_send_still_rendering_is_deleted_not_recalled() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let id = create(
        &mut p,
        &t,
        json!({"name": "x", "recipients": [{"email": "s@x.se"}]}),
    );
    api(
        &mut p,
        &t,
        "POST",
        &format!("/v1/documents/{id}/send"),
        None,
    );
    let (s, _) = api(&mut p, &t, "DELETE", &format!("/v1/documents/{id}"), None);
    assert_eq!(s, 204);
    let (s, _) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}"), None);
    assert_eq!(s, 404, "removed at once");
    assert!(!p.events.iter().any(|e| e.kind == "document.recalled"));
}

#[test]
fn a_sealed_document_expires_and_a_revision_respects_the_signing_order() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let id = create(
        &mut p,
        &t,
        json!({
        "name": "x", "is_signing_order": true,
        "recipients": [{"email": "first@x.se", "order_num": 1}, {"email": "second@x.se", "order_num": 2}]}),
    );
    api(
        &mut p,
        &t,
        "POST",
        &format!("/v1/documents/{id}/seal"),
        None,
    );
    let render = take_jobs(&mut p, "doc.render").remove(0);
    let out = rendered(&mut p, "d");
    run(&mut p, &render, Some(out));
    assert_eq!(status(&mut p, &t, &id), "sealed");
    let expire = take_jobs(&mut p, "doc.expire");
    assert_eq!(expire.len(), 1, "sealing schedules the expiry");
    let (s, _) = api(
        &mut p,
        &t,
        "POST",
        &format!("/v1/documents/{id}/revisions"),
        Some(json!({"send_document": true})),
    );
    assert_eq!(s, 204);
    let render = take_jobs(&mut p, "doc.render").remove(0);
    let out = rendered(&mut p, "e");
    run(&mut p, &render, Some(out));
    let to: Vec<&str> = p.mails.iter().map(|m| m.to.as_str()).collect();
    assert_eq!(to, ["first@x.se"], "only the first in the signing order");
    // At its time the expiry job expires it: status, event, and the owner is told.
    let (_, d) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}"), None);
    let at = esign_engine::parse_time(d["expiration_date"].as_str().unwrap()).unwrap();
    assert_eq!(expire[0].run_at_ms, at, "due at the expiration date");
    p.now_ms = at;
    let mails_before = p.mails.len();
    assert_eq!(run(&mut p, &expire[0], None), JobOutcome::Done);
    assert_eq!(status(&mut p, &t, &id), "expired");
    assert!(
        p.events.iter().any(|e| e.kind == "document.expired"),
        "the event"
    );
    let mailed: Vec<&str> = p.mails[mails_before..]
        .iter()
        .map(|m| m.subject.as_str())
        .collect();
    assert!(
        mailed.iter().any(|s| s.contains("expired")),
        "a mail says so: {mailed:?}"
    );
}

#[test]
fn a_blob_shared_by_two_documents_lives_until_the_last_one_lets_go() {
    let (mut p, t, upload, blob) = with_upload();
    let mut ids = Vec::new();
    for name in ["one", "two"] {
        let id = create(&mut p, &t, json!({"name": name, "file_ids": upload}));
        let import = take_jobs(&mut p, "doc.import").remove(0);
        assert_eq!(
            run(&mut p, &import, Some(one_page(&blob))),
            JobOutcome::Done
        );
        ids.push(id);
    }
    // The first document is deleted and erased; the upload expires.
    let (s, _) = api(
        &mut p,
        &t,
        "DELETE",
        &format!("/v1/documents/{}", ids[0]),
        None,
    );
    assert_eq!(s, 204);
    let erase = take_jobs(&mut p, "doc.erase").remove(0);
    assert_eq!(run(&mut p, &erase, None), JobOutcome::Done);
    let expire = take_jobs(&mut p, "upload.expire");
    assert!(!expire.is_empty(), "the upload's expiry is scheduled");
    p.now_ms += 49 * 3600 * 1000;
    for j in &expire {
        run(&mut p, j, None);
    }
    // The other document still has its file.
    let (s, _) = api(
        &mut p,
        &t,
        "GET",
        &format!("/v1/documents/{}/download?direct=true", ids[1]),
        None,
    );
    assert_eq!(s, 200, "the second document keeps the shared file");
    assert!(p.blobs.contains_key(&blob));
    // When it goes too, so does the file.
    api(
        &mut p,
        &t,
        "DELETE",
        &format!("/v1/documents/{}", ids[1]),
        None,
    );
    let erase = take_jobs(&mut p, "doc.erase").remove(0);
    assert_eq!(run(&mut p, &erase, None), JobOutcome::Done);
    assert!(!p.blobs.contains_key(&blob), "the last owner let go");
}

#[test]
fn one_revision_at_a_time() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let id = out_doc(&mut p, &t, "seal", "f");
    let path = format!("/v1/documents/{id}/revisions");
    assert_eq!(
        api(&mut p, &t, "POST", &path, Some(json!({"message": "v2"}))).0,
        204
    );
    let (s, body) = api(&mut p, &t, "POST", &path, Some(json!({"message": "v3"})));
    assert_eq!(
        (s, body["error"].as_str()),
        (400, Some("revision_processing"))
    );
    let render = take_jobs(&mut p, "doc.render").remove(0);
    let out = rendered(&mut p, "g");
    run(&mut p, &render, Some(out));
    assert_eq!(
        api(&mut p, &t, "POST", &path, Some(json!({"message": "v3"}))).0,
        204,
        "once sealed again"
    );
}

#[test]
fn a_recalled_document_marked_lost_is_removed_by_a_delete_not_recalled_again() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let id = out_doc(&mut p, &t, "send", "h");
    let path = format!("/v1/documents/{id}");
    assert_eq!(api(&mut p, &t, "DELETE", &path, None).0, 204);
    assert_eq!(status(&mut p, &t, &id), "recalled");
    let (s, _) = api(&mut p, &t, "POST", &format!("{path}/lost"), None);
    assert_eq!(s, 204);
    assert_eq!(status(&mut p, &t, &id), "lost");
    assert_eq!(api(&mut p, &t, "DELETE", &path, None).0, 204);
    assert_eq!(api(&mut p, &t, "GET", &path, None).0, 404);
    let recalls = p
        .events
        .iter()
        .filter(|e| e.kind == "document.recalled")
        .count();
    assert_eq!(recalls, 1, "recalled once");

    // A sent document marked lost (never recalled) is recalled by a delete.
    let id = out_doc(&mut p, &t, "send", "i");
    let path = format!("/v1/documents/{id}");
    assert_eq!(
        api(&mut p, &t, "POST", &format!("{path}/lost"), None).0,
        204
    );
    assert_eq!(api(&mut p, &t, "DELETE", &path, None).0, 204);
    assert_eq!(status(&mut p, &t, &id), "recalled");
}

#[test]
fn the_expiring_list_looks_exactly_seven_days_ahead() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let day = 24 * 3600 * 1000;
    let mut ids = Vec::new();
    for (tag, days) in [("a", 6), ("b", 8)] {
        let at = esign_engine::iso8601(p.now_ms + days * day);
        let id = create(
            &mut p,
            &t,
            json!({"name": tag, "expiration_date": at, "recipients": [{"email": "s@x.se"}]}),
        );
        assert_eq!(
            api(
                &mut p,
                &t,
                "POST",
                &format!("/v1/documents/{id}/send"),
                None
            )
            .0,
            200
        );
        let render = take_jobs(&mut p, "doc.render").remove(0);
        let out = rendered(&mut p, tag);
        run(&mut p, &render, Some(out));
        ids.push(id);
    }
    let (s, list) = api(&mut p, &t, "GET", "/v1/documents?filter=expiring", None);
    assert_eq!(s, 200, "{list}");
    let listed: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, [ids[0].as_str()], "six days ahead, not eight");
}

/// The trail's `ip` is the address the request came from as the host gives it; a
/// client's own `CLIENT_IP` (either spelling) is kept beside it, never instead.
#[test]
fn the_log_records_the_peers_address_the_clients_claim_beside_it_and_the_device() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let id = create(&mut p, &t, json!({"name": "x"}));
    let rename = |p: &mut MemoryPlatform, headers: &[(&str, &str)]| {
        let mut req = request(
            Origin::Http,
            "PUT",
            &format!("/v1/documents/{id}"),
            Some(json!({"value": 5})),
        );
        req.remote_addr = "192.0.2.10".into();
        req.headers
            .push(("authorization".into(), format!("Bearer {t}")));
        for (n, v) in headers {
            req.headers.push((n.to_string(), v.to_string()));
        }
        let resp = esign_engine::handle(p, &req);
        assert_eq!(resp.status, 204, "{:?}", body(&resp));
        let (_, log) = api(p, &t, "GET", &format!("/v1/documents/{id}/log"), None);
        let last = log.as_array().unwrap().last().unwrap().clone();
        (
            last["ip"].as_str().unwrap().to_string(),
            last["client_asserted_ip"].clone(),
            last["user_agent"].as_str().unwrap().to_string(),
        )
    };
    assert_eq!(
        rename(
            &mut p,
            &[("user-agent", "Phone/1.0"), ("client_ip", "203.0.113.7")]
        ),
        (
            "192.0.2.10".to_string(),
            json!("203.0.113.7"),
            "Phone/1.0".to_string()
        )
    );
    assert_eq!(
        rename(&mut p, &[("client-ip", "198.51.100.2")]),
        (
            "192.0.2.10".to_string(),
            json!("198.51.100.2"),
            String::new()
        )
    );
    assert_eq!(
        rename(&mut p, &[]),
        ("192.0.2.10".to_string(), Value::Null, String::new()),
        "no claim, no member"
    );
    // The chain holds over entries with and without the member.
    let (_, log) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}/log"), None);
    let mut prev = String::new();
    for e in log.as_array().unwrap() {
        assert_eq!(e["prev_hash"], prev.as_str());
        prev = e["hash"].as_str().unwrap().to_string();
    }
}

#[test]
fn event_payloads_carry_the_document_and_the_recipient() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let id = out_doc(&mut p, &t, "send", "j");
    let sent = p.events.iter().find(|e| e.kind == "document.sent").unwrap();
    let payload: Value = serde_json::from_str(&sent.payload).unwrap();
    assert_eq!(payload["document"]["id"], id.as_str());
    assert_eq!(payload["document"]["name"], "x");
    assert_eq!(payload["document"]["status"], "sent");
    assert_eq!(payload["entity"]["name"], "Default");
    let (_, d) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}"), None);
    let secret = d["recipients"][0]["document_url"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    let (s, _) = recipient(
        &mut p,
        "POST",
        &format!("/v1/recipient/{secret}/view"),
        Some(json!({})),
    );
    assert_eq!(s, 200);
    let viewed = p
        .events
        .iter()
        .find(|e| e.kind == "document.viewed")
        .unwrap();
    let payload: Value = serde_json::from_str(&viewed.payload).unwrap();
    assert_eq!(payload["recipient"]["email"], "s@x.se");
    assert_eq!(payload["recipient"]["status"], "viewed");
    assert_eq!(payload["recipient"]["role"], "signer");
    assert_eq!(payload["document"]["status"], "viewed");
}

#[test]
fn the_invariant_check_reports_what_breaks_it() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let id = out_doc(&mut p, &t, "send", "k");
    assert_eq!(esign_engine::check_invariants(&mut p), Vec::<String>::new());
    // A stray index key, a missing one, and a reference to a blob that is gone.
    let index: Vec<Vec<u8>> = p
        .data
        .keys()
        .filter(|k| k.starts_with(b"dx/") && k.ends_with(id.as_bytes()))
        .cloned()
        .collect();
    assert!(!index.is_empty());
    let mut broken = index[0].clone();
    p.data.remove(&index[0]);
    broken.extend_from_slice(b"-stray");
    p.data.insert(broken, Vec::new());
    let blob = p.blobs.keys().next().unwrap().clone();
    p.blobs.remove(&blob);
    let problems = esign_engine::check_invariants(&mut p).join("\n");
    assert!(problems.contains("index key missing"), "{problems}");
    assert!(
        problems.contains("index key without its document"),
        "{problems}"
    );
    assert!(
        problems.contains("a reference to a blob that is gone"),
        "{problems}"
    );
    // An audit trail entry edited in place breaks the chain, and the check names the
    // document.
    let entry = p
        .data
        .keys()
        .find(|k| k.starts_with(format!("dlog/{id}/").as_bytes()))
        .cloned()
        .unwrap();
    let value = p.data.get_mut(&entry).unwrap();
    let at = value.iter().position(|b| b.is_ascii_lowercase()).unwrap();
    value[at] = value[at].to_ascii_uppercase();
    let problems = esign_engine::check_invariants(&mut p).join("\n");
    assert!(
        problems.contains(&format!("document {id}: audit trail entry 1")),
        "{problems}"
    );
}

#[test]
fn an_external_id_is_found_by_its_percent_encoded_form_and_blank_paging_is_the_default() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let id = create(&mut p, &t, json!({"name": "x", "external_id": "crm 42/ä%"}));
    for path in [
        "/v1/documents/external/crm%2042%2F%C3%A4%25",
        "/v1/documents/external/crm%2042%2f%c3%a4%25",
    ] {
        let (s, found) = api(&mut p, &t, "GET", path, None);
        assert_eq!(s, 200, "{found}");
        assert_eq!(found["id"], id.as_str(), "{path}: {found}");
    }
    let (s, found) = api(&mut p, &t, "GET", "/v1/documents/external/crm%2042", None);
    assert_eq!((s, found), (200, json!([])), "a prefix is not a match");
    for query in ["limit=", "limit=%20", "offset=&limit="] {
        let (s, list) = api(&mut p, &t, "GET", &format!("/v1/documents?{query}"), None);
        assert_eq!(s, 200, "{query}: {list}");
        assert_eq!(list.as_array().unwrap().len(), 1, "{query}");
    }
}

#[test]
fn list_queries_at_their_edges() {
    let mut p = bootstrapped();
    let admin = token(&mut p);
    let entity = entity_of(&mut p, &admin);
    add_member(&mut p, "boss@x.se", &entity, "manager", Some("t1"));
    add_member(&mut p, "mate@x.se", &entity, "user", Some("t1"));
    add_member(&mut p, "zed@x.se", &entity, "user", None);
    let boss = login(&mut p, "boss@x.se", None);
    let mate = login(&mut p, "mate@x.se", None);
    let zed = login(&mut p, "zed@x.se", None);
    let ids = |p: &mut MemoryPlatform, t: &str, query: &str| -> Vec<String> {
        let (s, list) = api(p, t, "GET", &format!("/v1/documents?{query}"), None);
        assert_eq!(s, 200, "{query}: {list}");
        list.as_array()
            .unwrap()
            .iter()
            .map(|d| d["id"].as_str().unwrap().to_string())
            .collect()
    };
    let mine = create(&mut p, &boss, json!({"name": "boss's"}));
    p.now_ms += 1000;
    let mates = create(
        &mut p,
        &mate,
        json!({"name": "mate's", "external_id": "EXT-1", "external_client_id": "c1"}),
    );
    p.now_ms += 1000;
    let lower = create(
        &mut p,
        &zed,
        json!({"name": "zed's", "external_id": "ext-1", "external_client_id": "c2"}),
    );
    // Twenty private documents of one user, newest: more than a first read of an index.
    let mut private = Vec::new();
    for i in 0..20 {
        p.now_ms += 1000;
        private.push(create(
            &mut p,
            &zed,
            json!({"name": format!("private {i}"), "is_private": true}),
        ));
    }
    // showteam: the manager's own and the team's, nobody else's.
    let mut team = ids(&mut p, &boss, "showteam=true");
    team.sort();
    let mut want = vec![mine.clone(), mates.clone()];
    want.sort();
    assert_eq!(team, want);
    assert_eq!(
        ids(&mut p, &boss, ""),
        std::slice::from_ref(&mine),
        "without showteam: own"
    );
    assert_eq!(ids(&mut p, &zed, "showteam=true").len(), 21, "no team: own");
    // showall hides other users' private documents, also past a first read.
    let all = ids(&mut p, &mate, "showall=true&limit=3");
    assert_eq!(all, [lower.clone(), mates.clone(), mine.clone()]);
    // limit=0 is the default page; showall=false is no showall.
    assert_eq!(ids(&mut p, &admin, "showall=true&limit=0").len(), 23);
    assert_eq!(
        ids(&mut p, &mate, "showall=false"),
        std::slice::from_ref(&mates)
    );
    // Lookups: exact external ids (the index folds case), client ids, and both.
    assert_eq!(
        ids(&mut p, &admin, "showall=true&external_id=EXT-1"),
        std::slice::from_ref(&mates)
    );
    assert_eq!(
        ids(&mut p, &admin, "showall=true&external_id=ext-1"),
        std::slice::from_ref(&lower)
    );
    assert_eq!(
        ids(&mut p, &admin, "showall=true&external_client_id=c2"),
        std::slice::from_ref(&lower)
    );
    assert_eq!(
        ids(
            &mut p,
            &admin,
            "showall=true&external_id=ext-1&external_client_id=c1"
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        ids(
            &mut p,
            &admin,
            "showall=true&external_id=EXT-1&external_client_id=c1"
        ),
        std::slice::from_ref(&mates)
    );
    assert_eq!(
        ids(&mut p, &admin, "showall=true&external_id=EXT-1&filter=vod"),
        Vec::<String>::new(),
        "a lookup keeps the filter: no video documents"
    );
    let video = create(
        &mut p,
        &admin,
        json!({"name": "v", "external_id": "vid-1", "is_video": true}),
    );
    assert_eq!(
        ids(&mut p, &admin, "showall=true&external_id=vid-1&filter=vod"),
        std::slice::from_ref(&video)
    );
    assert_eq!(
        ids(&mut p, &admin, "showall=true&external_id=vid-1&filter=sent"),
        Vec::<String>::new(),
        "a video draft is not sent"
    );
    assert_eq!(
        ids(&mut p, &admin, "showall=true&external_client_id=").len(),
        24,
        "an empty client id is no filter"
    );
    // Sorted by owner (the sender's name).
    let by_owner = ids(
        &mut p,
        &admin,
        "showall=true&sort_by=owner&sort_order=asc&limit=1000",
    );
    let pos = |id: &str| by_owner.iter().position(|x| x == id).unwrap();
    assert!(pos(&mine) < pos(&mates), "boss@ before mate@: {by_owner:?}");
    assert!(pos(&mates) < pos(&lower), "mate@ before zed@: {by_owner:?}");
}

#[test]
fn a_deleted_templates_files_are_released_unless_a_document_uses_them() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let template = |p: &mut MemoryPlatform| {
        let (s, b) = api(
            p,
            &t,
            "POST",
            "/v1/templates",
            Some(
                json!({"name": "Tpl", "file_content": "JVBERi0xLjQKZmFrZQ==", "file_name": "t.pdf"}),
            ),
        );
        assert_eq!(s, 200, "{b}");
        let job = take_jobs(p, "template.import").remove(0);
        let blob = p.blobs.keys().last().unwrap().clone();
        assert_eq!(
            run(p, &job, Some(imported_pages(&blob, 1))),
            JobOutcome::Done
        );
        (b["id"].as_str().unwrap().to_string(), blob)
    };
    // Unused: its file goes with it.
    let (id, blob) = template(&mut p);
    let (s, _) = api(&mut p, &t, "DELETE", &format!("/v1/templates/{id}"), None);
    assert_eq!(s, 204);
    assert!(
        !p.blobs.contains_key(&blob),
        "the template's file is released"
    );
    // Used by a document: the document keeps the file.
    let (id, blob) = template(&mut p);
    let (s, doc) = api(
        &mut p,
        &t,
        "POST",
        "/v1/documents",
        Some(json!({"name": "from tpl", "template_id": id})),
    );
    assert_eq!(s, 200, "{doc}");
    let (s, _) = api(&mut p, &t, "DELETE", &format!("/v1/templates/{id}"), None);
    assert_eq!(s, 204);
    assert!(p.blobs.contains_key(&blob), "the document's copy stays");
    assert!(esign_engine::check_invariants(&mut p).is_empty());
}
