//! Helpers shared by the engine's native test files.

#![allow(dead_code)]

use esign_engine::memory::MemoryPlatform;
use esign_engine::{
    Job, JobOutcome, JobSpec, Origin, Request, Response, WorkOutcome, handle, run_job,
};
use serde_json::{Value, json};

pub fn request(origin: Origin, method: &str, path: &str, body: Option<Value>) -> Request {
    let mut headers = Vec::new();
    if body.is_some() {
        headers.push(("content-type".to_string(), "application/json".to_string()));
    }
    Request {
        method: method.into(),
        path: path.into(),
        query: String::new(),
        headers,
        body: body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
        parts: Vec::new(),
        origin,
        remote_addr: "127.0.0.1".into(),
    }
}

pub fn body(resp: &Response) -> Value {
    serde_json::from_slice(&resp.body).unwrap_or(Value::Null)
}

/// A platform with one entity and one admin `a@x.se` / `password1`.
pub fn bootstrapped() -> MemoryPlatform {
    let mut p = MemoryPlatform::new();
    p.settings.token_min_interval_ms = 0;
    let resp = handle(
        &mut p,
        &request(
            Origin::Admin,
            "POST",
            "/admin/bootstrap",
            Some(json!({"email": "a@x.se", "password": "password1"})),
        ),
    );
    assert_eq!(resp.status, 201, "{:?}", body(&resp));
    p
}

/// The admin's access token.
pub fn token(p: &mut MemoryPlatform) -> String {
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

pub fn api(
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
pub fn take_jobs(p: &mut MemoryPlatform, kind: &str) -> Vec<JobSpec> {
    let (mine, rest): (Vec<_>, Vec<_>) = p.jobs.drain(..).partition(|j| j.kind == kind);
    p.jobs = rest;
    mine
}

pub fn run(p: &mut MemoryPlatform, spec: &JobSpec, outcome: Option<WorkOutcome>) -> JobOutcome {
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

/// The outcome of an import job that made `blob` a PDF of `pages` A4 pages.
pub fn imported_pages(blob: &str, pages: usize) -> WorkOutcome {
    let a4 = esign_engine::PageSize {
        width: 595.0,
        height: 842.0,
    };
    WorkOutcome::Import(vec![Ok(esign_engine::ImportedFile {
        blob: blob.into(),
        size: 13,
        sha256: "00".repeat(32),
        pages: vec![a4; pages],
        placeholders: vec![],
        downloaded: None,
    })])
}

/// The stored keys that contain any of `needles` (what an erase left behind).
pub fn keys_containing(p: &MemoryPlatform, needles: &[&str]) -> Vec<String> {
    p.data
        .keys()
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .filter(|k| needles.iter().any(|n| k.contains(n)))
        .collect()
}
