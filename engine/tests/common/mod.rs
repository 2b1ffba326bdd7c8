//! Helpers shared by the engine's native test files.

#![allow(dead_code)]

use esign_engine::memory::MemoryPlatform;
use esign_engine::{
    Job, JobOutcome, JobSpec, Origin, PageImage, RenderedFile, Request, Response, WorkOrder,
    WorkOutcome, handle, run_job,
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
    login(p, "a@x.se", None)
}

/// `POST /v1/auth` with body `b`: its status and body.
pub fn auth(p: &mut MemoryPlatform, b: Value) -> (u16, Value) {
    let resp = handle(p, &request(Origin::Http, "POST", "/v1/auth", Some(b)));
    (resp.status, body(&resp))
}

/// The bootstrap admin's `POST /v1/auth` with `password`.
pub fn admin_auth(p: &mut MemoryPlatform, password: &str) -> (u16, Value) {
    auth(p, json!({"email": "a@x.se", "password": password}))
}

/// An access token for `email` (password `password1`), in `entity` when given.
pub fn login(p: &mut MemoryPlatform, email: &str, entity: Option<&str>) -> String {
    let mut b = json!({"email": email, "password": "password1"});
    if let Some(entity) = entity {
        b["entity_id"] = entity.into();
    }
    let (_, answer) = auth(p, b);
    answer["access_token"]
        .as_str()
        .unwrap_or_else(|| panic!("login {email}: {answer}"))
        .to_string()
}

/// The entity `t` is a token for (`GET /v1/test`).
pub fn entity_of(p: &mut MemoryPlatform, t: &str) -> String {
    api(p, t, "GET", "/v1/test", None).1["entity_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Adds an entity named `name` with the fields of `extra` (`saml`, `parent_id`, ...)
/// through the admin route; its id.
pub fn new_entity(p: &mut MemoryPlatform, name: &str, extra: Value) -> String {
    let mut b = json!({"name": name});
    for (k, v) in extra.as_object().unwrap() {
        b[k] = v.clone();
    }
    admin_post(p, "/admin/entities", b)["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `GET /v1/documents/{id}/status`: `status` and `rejection_reason`.
pub fn status_of(p: &mut MemoryPlatform, t: &str, id: &str) -> Value {
    let (s, body) = api(p, t, "GET", &format!("/v1/documents/{id}/status"), None);
    assert_eq!(s, 200, "status of {id}: {body}");
    body
}

/// A POST to an `/admin/...` route, as the local CLI sends it; asserts success and
/// returns the body.
pub fn admin_post(p: &mut MemoryPlatform, path: &str, b: Value) -> Value {
    let resp = handle(p, &request(Origin::Admin, "POST", path, Some(b)));
    assert!(resp.status < 300, "{path}: {:?}", body(&resp));
    body(&resp)
}

/// Adds a user `email` (password `password1`) to `entity` as `role`, in `team` when
/// given; returns the user's id.
pub fn add_member(
    p: &mut MemoryPlatform,
    email: &str,
    entity: &str,
    role: &str,
    team: Option<&str>,
) -> String {
    let user = admin_post(
        p,
        "/admin/users",
        json!({"email": email, "password": "password1"}),
    );
    admin_post(
        p,
        "/admin/memberships",
        json!({"user_id": user["id"], "entity_id": entity, "role": role, "team_id": team}),
    );
    user["id"].as_str().unwrap().to_string()
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
    run_attempt(p, spec, 1, outcome)
}

/// Runs a scheduled job as its `attempt`-th try.
pub fn run_attempt(
    p: &mut MemoryPlatform,
    spec: &JobSpec,
    attempt: u32,
    outcome: Option<WorkOutcome>,
) -> JobOutcome {
    run_job(
        p,
        &Job {
            id: "j".into(),
            kind: spec.kind.clone(),
            payload: spec.payload.clone(),
            attempt,
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

/// A successful render outcome: a fake PDF of `pages` pages with page images, whose
/// content hash is `content_sha256`, sealed when `order` asks for a seal. The blobs it
/// names exist.
pub fn render_outcome(
    p: &mut MemoryPlatform,
    order: Option<&esign_engine::RenderOrder>,
    pages: u32,
    content_sha256: &str,
) -> WorkOutcome {
    // Names are never reused, even after blobs are deleted: a reused name could hide a
    // reference that outlived its blob.
    // Per thread: simulations run side by side (one thread per core) keep to their own.
    thread_local!(static MADE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) });
    let n = MADE.with(|m| m.replace(m.get() + 1));
    let pdf = format!("pdf-{n}");
    // A sealed file reads as sealed to `MemoryPlatform::verify_pdf`.
    let seal = order.and_then(|o| o.seal.as_ref());
    let bytes = match seal {
        Some(s) => format!("%PDF-sealed:{}:{}", s.document_id, s.log_head).into_bytes(),
        None => b"%PDF-fake".to_vec(),
    };
    let sha256 = esign_engine::sha256_hex(&bytes);
    p.blobs.insert(pdf.clone(), bytes);
    let images: Vec<PageImage> = (1..=pages)
        .map(|i| {
            let id = format!("img-{n}-{i}");
            p.blobs.insert(id.clone(), b"\x89PNGfake".to_vec());
            PageImage {
                blob: id,
                size: 8,
                width: 1000,
                height: 1414,
            }
        })
        .collect();
    WorkOutcome::Render(Ok(RenderedFile {
        blob: pdf,
        size: 9,
        sha256,
        content_sha256: content_sha256.into(),
        page_count: pages,
        page_images: images,
        seal: seal.map(|_| esign_engine::SealInfo {
            signer: "CN=esign test".into(),
            certificate_sha256: String::new(),
            signed_at_ms: p.now_ms,
            timestamp_ms: None,
        }),
    }))
}

/// Runs the pending render with a fake PDF of `pages` pages and page images (sealed
/// when the order asks for a seal); returns its order.
pub fn finish_render(p: &mut MemoryPlatform, pages: u32) -> esign_engine::RenderOrder {
    let job = take_jobs(p, "doc.render").remove(0);
    let Some(WorkOrder::Render(order)) = job.work.clone() else {
        panic!("a render job carries a render order")
    };
    let outcome = render_outcome(p, Some(&order), pages, &"11".repeat(32));
    assert_eq!(run(p, &job, Some(outcome)), JobOutcome::Done);
    order
}

/// A draft with two 595 x 842 pages and `recipients`, imported; its id and detail.
pub fn draft(p: &mut MemoryPlatform, t: &str, recipients: Value, extra: Value) -> (String, Value) {
    let mut body = json!({"name": "Contract", "file_content": "JVBERi0xLjQKZmFrZQ==",
                          "file_name": "c.pdf", "recipients": recipients});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let (s, doc) = api(p, t, "POST", "/v1/documents", Some(body));
    assert_eq!(s, 200, "{doc}");
    let id = doc["id"].as_str().unwrap().to_string();
    let blob = p.blobs.keys().next().unwrap().clone();
    let import = take_jobs(p, "doc.import").remove(0);
    assert_eq!(
        run(p, &import, Some(imported_pages(&blob, 2))),
        JobOutcome::Done
    );
    let (s, doc) = api(p, t, "GET", &format!("/v1/documents/{id}"), None);
    assert_eq!(s, 200);
    assert_eq!(doc["status"], "draft");
    (id, doc)
}

/// A draft (see [`draft`]) sent and rendered (3 pages); its id and the send answer,
/// which has the recipients' links.
pub fn sent_doc(
    p: &mut MemoryPlatform,
    t: &str,
    recipients: Value,
    extra: Value,
) -> (String, Value) {
    let (id, _) = draft(p, t, recipients, extra);
    let (s, sent) = api(p, t, "POST", &format!("/v1/documents/{id}/send"), None);
    assert_eq!(s, 200, "{sent}");
    finish_render(p, 3);
    (id, sent)
}

pub fn secret_of(doc: &Value, i: usize) -> String {
    doc["recipients"][i]["document_url"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string()
}

/// A request to the recipient API (no token), as a browser on this origin sends it.
pub fn recipient(
    p: &mut MemoryPlatform,
    method: &str,
    path: &str,
    b: Option<Value>,
) -> (u16, Value) {
    let mut req = request(Origin::Http, method, path, b);
    if method == "POST" {
        req.headers
            .push(("origin".into(), "http://127.0.0.1:8080".into()));
    }
    let resp = handle(p, &req);
    (resp.status, body(&resp))
}

/// A template's path with each `{param}` filled by a value no record has.
pub fn sample(template: &str) -> String {
    template
        .split('/')
        .map(|s| {
            if s.starts_with('{') {
                "0000000000000000"
            } else {
                s
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The audit certificate's rows of the next render order (a seal's), each as its cells
/// joined by ` | `.
pub fn certificate_rows(p: &mut MemoryPlatform) -> Vec<String> {
    let job = take_jobs(p, "doc.render").remove(0);
    let Some(WorkOrder::Render(order)) = job.work else {
        panic!("a render order")
    };
    order
        .summary
        .iter()
        .filter_map(|b| match b {
            esign_engine::Block::Row(cells) => Some(cells.join(" | ")),
            _ => None,
        })
        .collect()
}
