//! Native tests of the document engine on the in-memory platform: what a list reads,
//! and how render and expiry jobs treat outcomes that arrive late.

mod common;

use common::*;
use esign_engine::memory::MemoryPlatform;
use esign_engine::{
    Job, JobOutcome, JobSpec, Origin, RenderedFile, WorkOrder, WorkOutcome, handle, run_job,
};
use serde_json::{Value, json};

fn token(p: &mut MemoryPlatform) -> String {
    let resp = handle(
        p,
        &request(
            Origin::Http,
            "POST",
            "/v1/auth",
            Some(json!({"email": "a@x.se", "password": "password1"})),
        ),
    );
    body(&resp)["access_token"].as_str().unwrap().to_string()
}

fn api(
    p: &mut MemoryPlatform,
    t: &str,
    method: &str,
    path: &str,
    b: Option<Value>,
) -> (u16, Value) {
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    let mut req = request(Origin::Http, method, path, b);
    req.query = query.to_string();
    req.headers
        .push(("authorization".into(), format!("Bearer {t}")));
    let resp = handle(p, &req);
    (resp.status, body(&resp))
}

/// Takes the scheduled jobs of `kind`.
fn take_jobs(p: &mut MemoryPlatform, kind: &str) -> Vec<JobSpec> {
    let (mine, rest): (Vec<_>, Vec<_>) = p.jobs.drain(..).partition(|j| j.kind == kind);
    p.jobs = rest;
    mine
}

fn run(p: &mut MemoryPlatform, spec: &JobSpec, outcome: Option<WorkOutcome>) -> JobOutcome {
    run_job(
        p,
        &Job {
            id: "j".into(),
            kind: spec.kind.clone(),
            payload: spec.payload.clone(),
            attempt: 1,
            outcome,
        },
    )
}

/// A render outcome naming a blob that exists.
fn rendered(p: &mut MemoryPlatform, tag: &str) -> WorkOutcome {
    p.blobs.insert(format!("pdf-{tag}"), b"%PDF-fake".to_vec());
    WorkOutcome::Render(Ok(RenderedFile {
        blob: format!("pdf-{tag}"),
        size: 9,
        sha256: "00".repeat(32),
        content_sha256: tag.repeat(64 / tag.len()),
        page_count: 2,
    }))
}

fn status(p: &mut MemoryPlatform, t: &str, id: &str) -> String {
    api(p, t, "GET", &format!("/v1/documents/{id}/status"), None).1["status"]
        .as_str()
        .unwrap()
        .to_string()
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
    let (_, doc) = api(
        &mut p,
        &t,
        "POST",
        "/v1/documents",
        Some(json!({"name": "r", "recipients": [{"email": "s@x.se"}]})),
    );
    let id = doc["id"].as_str().unwrap().to_string();
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
    assert_eq!(s, 200);
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
    let (_, doc) = api(
        &mut p,
        &t,
        "POST",
        "/v1/documents",
        Some(json!({"name": "e", "recipients": [{"email": "s@x.se"}]})),
    );
    let id = doc["id"].as_str().unwrap().to_string();
    api(
        &mut p,
        &t,
        "POST",
        &format!("/v1/documents/{id}/send"),
        None,
    );
    let render = take_jobs(&mut p, "doc.render").remove(0);
    let out = rendered(&mut p, "c");
    run(&mut p, &render, Some(out));
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
    use esign_engine::ImportedFile;
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (s, doc) = api(
        &mut p,
        &t,
        "POST",
        "/v1/documents",
        Some(json!({"name": "gone", "file_content": "JVBERi0xLjQKZmFrZQ==", "file_name": "a.pdf"})),
    );
    assert_eq!(s, 200, "{doc}");
    let id = doc["id"].as_str().unwrap().to_string();
    let blob = p.blobs.keys().next().unwrap().clone();
    let import = take_jobs(&mut p, "doc.import").remove(0);
    let outcome = WorkOutcome::Import(vec![Ok(ImportedFile {
        blob: blob.clone(),
        size: 13,
        sha256: "00".repeat(32),
        pages: vec![esign_engine::PageSize {
            width: 595.0,
            height: 842.0,
        }],
        placeholders: vec![],
        downloaded: None,
    })]);
    assert_eq!(run(&mut p, &import, Some(outcome)), JobOutcome::Done);
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
    let left: Vec<String> = p
        .data
        .keys()
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .filter(|k| k.contains(&id) || k.contains(&blob))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(p.blobs.is_empty(), "the file's bytes are gone");
}
