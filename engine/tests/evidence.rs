//! Native tests of the evidence rules: the audit trail's hash chain, the audit
//! certificate and seal a completed document's final render asks for, the sealing state
//! (nothing handed out, retried until sealed), and the routes around it.

mod common;

use common::*;
use esign_engine::memory::MemoryPlatform;
use esign_engine::trail;
use esign_engine::{Block, FormPart, JobOutcome, Origin, WorkFailure, WorkOutcome, handle};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Checks the chain of a served log the way a client would: each `prev_hash` is the
/// previous `hash`, and each `hash` is SHA-256(prev_hash, "\n", JCS(entry without hash)).
/// The index of the first entry that does not check out.
fn first_broken(log: &[Value]) -> Option<usize> {
    let mut prev = String::new();
    for (i, e) in log.iter().enumerate() {
        let mut without = e.clone();
        let hash = without["hash"].as_str().unwrap_or_default().to_string();
        without.as_object_mut().unwrap().remove("hash");
        let mut bytes = prev.clone().into_bytes();
        bytes.push(b'\n');
        trail::canonical(&without, &mut bytes);
        let want: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if e["prev_hash"] != prev.as_str() || hash != want {
            return Some(i);
        }
        prev = hash;
    }
    None
}

fn log_of(p: &mut MemoryPlatform, t: &str, id: &str) -> Vec<Value> {
    let (s, v) = api(p, t, "GET", &format!("/v1/documents/{id}/log"), None);
    assert_eq!(s, 200, "{v}");
    v.as_array().expect("the log is an array").clone()
}

/// A sent document with one signer, who has signed; its id and the signer's secret.
fn signed_doc(p: &mut MemoryPlatform, t: &str) -> (String, String) {
    let (id, sent) = sent_doc(
        p,
        t,
        json!([{"email": "s@y.se", "first_name": "Sam"}]),
        json!({}),
    );
    let secret = secret_of(&sent, 0);
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
        &format!("/v1/recipient/{secret}/sign"),
        Some(json!({"signature": {"type": "typed", "name": "Sam Svensson"}})),
    );
    assert_eq!(s, 200, "{r}");
    (id, secret)
}

#[test]
fn the_trail_is_a_hash_chain_and_an_altered_entry_breaks_it_there() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (id, _) = signed_doc(&mut p, &t);
    let log = log_of(&mut p, &t, &id);
    assert!(log.len() >= 5, "{log:?}");
    assert_eq!(log[0]["prev_hash"], "");
    assert_eq!(first_broken(&log), None, "{log:#?}");
    for e in &log {
        let h = e["hash"].as_str().unwrap();
        assert!(
            h.len() == 64
                && h.bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
    }

    // Someone with access to the store changes what the third entry says.
    let (key, value) = p
        .data
        .iter()
        .filter(|(k, _)| k.starts_with(format!("dlog/{id}/").as_bytes()))
        .nth(2)
        .map(|(k, v)| (k.clone(), v.clone()))
        .unwrap();
    let mut c = trail::decode(&value);
    c.entry.detail.push_str(" (edited)");
    p.data.insert(key.clone(), trail::encode(&c));
    assert_eq!(first_broken(&log_of(&mut p, &t, &id)), Some(2));

    // Removing it instead breaks the chain at the entry after it.
    p.data.remove(&key);
    assert_eq!(first_broken(&log_of(&mut p, &t, &id)), Some(2));
}

#[test]
fn an_entry_written_when_the_clock_went_back_still_follows_its_predecessor() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (id, _) = draft(&mut p, &t, json!([{"email": "s@y.se"}]), json!({}));
    p.now_ms -= 60_000;
    let (s, _) = api(
        &mut p,
        &t,
        "POST",
        &format!("/v1/documents/{id}/comments"),
        Some(json!({"text": "late"})),
    );
    assert_eq!(s, 200);
    let log = log_of(&mut p, &t, &id);
    assert_eq!(log.last().unwrap()["action"], "commented", "{log:#?}");
    assert_eq!(first_broken(&log), None);
}

/// The pending render job (the sealing one, once signed).
fn render_job(p: &mut MemoryPlatform) -> esign_engine::JobSpec {
    let mut jobs = take_jobs(p, "doc.render");
    assert_eq!(jobs.len(), 1);
    jobs.remove(0)
}

/// A render outcome that failed with `code`.
fn failed_render(code: &str, message: &str) -> WorkOutcome {
    WorkOutcome::Render(Err(WorkFailure {
        code: code.into(),
        message: message.into(),
    }))
}

fn texts(blocks: &[Block]) -> String {
    blocks
        .iter()
        .map(|b| match b {
            Block::Heading(t) | Block::Text(t) => t.clone(),
            Block::Row(c) | Block::HeaderRow(c) => c.join(" | "),
            Block::Signature(s) => format!("[{}] {}", s.text, s.caption),
            _ => String::new(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn completion_asks_for_an_audit_certificate_and_a_seal_and_hands_out_nothing_until_sealed() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (id, secret) = signed_doc(&mut p, &t);
    let (_, doc) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}"), None);
    assert_eq!(doc["status"], "signed");
    assert_eq!(doc["evidence"]["status"], "sealing");
    // Nothing is handed out while sealing: not the unsigned render, not by the link.
    let (s, e) = api(
        &mut p,
        &t,
        "GET",
        &format!("/v1/documents/{id}/download?direct=true"),
        None,
    );
    assert_eq!((s, e["error"].as_str()), (409, Some("sealing")));
    let (s, e) = recipient(
        &mut p,
        "GET",
        &format!("/v1/recipient/{secret}/download"),
        None,
    );
    assert_eq!((s, e["error"].as_str()), (409, Some("sealing")), "{e}");

    // The order: a seal pinning the trail's head, and the audit certificate.
    let job = render_job(&mut p);
    let Some(esign_engine::WorkOrder::Render(order)) = job.work.clone() else {
        panic!("a render order")
    };
    let log = log_of(&mut p, &t, &id);
    let head = log.last().unwrap()["hash"].as_str().unwrap().to_string();
    let seal = order.seal.clone().expect("sealed");
    assert_eq!(
        (seal.document_id.as_str(), seal.log_head.as_str()),
        (id.as_str(), head.as_str())
    );
    let cert = texts(&order.summary);
    for want in [
        "Audit certificate",
        &format!("Document id | {id}"),
        "Sam (s@y.se) | signer | signed",
        "| viewed | IP 127.0.0.1",
        "| signed | IP 127.0.0.1",
        "[Sam Svensson] Sam, signed",
        &format!("Audit trail head SHA-256: {head}"),
        &format!("Original content SHA-256: {}", "11".repeat(32)),
    ] {
        assert!(cert.contains(want), "missing {want:?} in:\n{cert}");
    }

    // The authority is down: the job retries with growing waits, the trail says so once,
    // and the document stays sealing.
    for attempt in 1..=3u32 {
        let out = run_attempt(
            &mut p,
            &job,
            attempt,
            Some(failed_render("timestamp-unavailable", "connection refused")),
        );
        let JobOutcome::RetryAt(at) = out else {
            panic!("{out:?}")
        };
        assert!(
            at > p.now_ms && at <= p.now_ms + 30_000,
            "attempt {attempt}: {at}"
        );
    }
    let (_, doc) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}"), None);
    assert_eq!(doc["evidence"]["status"], "sealing");
    let delayed = log_of(&mut p, &t, &id)
        .iter()
        .filter(|e| e["action"] == "seal_delayed")
        .count();
    assert_eq!(delayed, 1);

    // Much later the waits grow to five minutes.
    let out = run_attempt(
        &mut p,
        &job,
        25,
        Some(failed_render("timestamp-unavailable", "still down")),
    );
    assert_eq!(out, JobOutcome::RetryAt(p.now_ms + 300_000));

    // Then it seals: the sealed file is what is handed out from now on.
    p.jobs.push(job);
    finish_render(&mut p, 4);
    let (_, doc) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}"), None);
    assert_eq!(doc["evidence"]["status"], "sealed", "{doc}");
    assert_eq!(doc["evidence"]["log_head"], head.as_str());
    assert_eq!(doc["evidence"]["signer"], "CN=esign test");
    let (s, _) = api(
        &mut p,
        &t,
        "GET",
        &format!("/v1/documents/{id}/download?direct=true"),
        None,
    );
    assert_eq!(s, 200);
    let log = log_of(&mut p, &t, &id);
    // The seal, then every party's copy of the sealed file (`domain::completion`).
    let actions: Vec<&str> = log.iter().filter_map(|e| e["action"].as_str()).collect();
    assert_eq!(
        actions[actions.len() - 2..],
        ["sealed_final", "completion_copies_sent"]
    );
    assert_eq!(first_broken(&log), None);
}

#[test]
fn the_signing_certificate_is_public_and_verify_needs_a_token_and_a_pdf() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let get = |p: &mut MemoryPlatform| {
        handle(
            p,
            &request(Origin::Http, "GET", "/v1/signing-certificate", None),
        )
    };
    assert_eq!(get(&mut p).status, 404);
    p.settings.signing_certificate =
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".into();
    let resp = get(&mut p);
    assert_eq!(resp.status, 200);
    assert!(String::from_utf8_lossy(&resp.body).starts_with("-----BEGIN CERTIFICATE-----"));

    let verify = |p: &mut MemoryPlatform, token: Option<&str>, data: &[u8]| {
        let mut req = request(Origin::Http, "POST", "/v1/verify", None);
        if let Some(t) = token {
            req.headers
                .push(("authorization".into(), format!("Bearer {t}")));
        }
        req.parts.push(FormPart {
            name: "file".into(),
            filename: Some("f.pdf".into()),
            content_type: "application/pdf".into(),
            data: data.to_vec(),
            staged: None,
        });
        let resp = handle(p, &req);
        (resp.status, body(&resp))
    };
    assert_eq!(verify(&mut p, None, b"%PDF-1.7").0, 401);
    let (s, e) = verify(&mut p, Some(&t), b"hello");
    assert_eq!((s, e["error"].as_str()), (400, Some("invalid_file")));
    let (s, v) = verify(&mut p, Some(&t), b"%PDF-1.7 unsigned");
    assert_eq!(s, 200);
    assert_eq!(
        (v["valid"].as_bool(), v["signed"].as_bool()),
        (Some(false), Some(false))
    );
    let (s, v) = verify(&mut p, Some(&t), b"%PDF-sealed:doc1:abc");
    assert_eq!(s, 200);
    assert_eq!(v["valid"], true);
    assert_eq!(
        (v["document_id"].as_str(), v["log_head"].as_str()),
        (Some("doc1"), Some("abc"))
    );
}

#[test]
fn a_completion_render_that_cannot_be_made_ends_the_sealing_and_tells_the_owner() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (id, _) = signed_doc(&mut p, &t);
    let job = render_job(&mut p);
    let mails = p.mails.len();
    let out = run(
        &mut p,
        &job,
        Some(failed_render("invalid-pdf", "not a PDF")),
    );
    assert_eq!(out, JobOutcome::Done);
    let (_, doc) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}"), None);
    assert_eq!(
        (doc["status"].as_str(), doc["evidence"]["status"].as_str()),
        (Some("signed"), Some("none"))
    );
    assert_eq!(
        log_of(&mut p, &t, &id).last().unwrap()["action"],
        "seal_failed"
    );
    assert_eq!(p.mails.len(), mails + 1, "the owner is told");
    let (s, _) = api(
        &mut p,
        &t,
        "GET",
        &format!("/v1/documents/{id}/download?direct=true"),
        None,
    );
    assert_eq!(s, 200, "the PDF it had");
}
