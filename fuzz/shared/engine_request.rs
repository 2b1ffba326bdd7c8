//! The `engine_request` fuzz target's input and what it does with it: any request, to
//! any route, with or without a valid token, is answered with an HTTP status and never
//! panics. Shared by the fuzz target (`fuzz/fuzz_targets/engine_request.rs`) and the
//! replay of its corpus in `cargo test` (`engine/tests/fuzz_corpus.rs`), so both read
//! the corpus's bytes the same way.

use arbitrary::Arbitrary;
use esign_engine::memory::MemoryPlatform;
use esign_engine::router::templates;
use esign_engine::{FormPart, Origin, Request, handle};

#[derive(Arbitrary, Debug)]
pub struct Input {
    method: u8,
    /// Picks a route of the table (its `{params}` filled with `param`), or uses `path`.
    route: u16,
    path: String,
    param: String,
    query: String,
    content_type: u8,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    parts: Vec<(String, Option<String>, String, Vec<u8>)>,
    with_token: bool,
}

const METHODS: &[&str] = &["GET", "POST", "PUT", "DELETE", "HEAD", "PATCH"];
const TYPES: &[&str] = &[
    "application/json",
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    "text/plain",
    "",
];

fn request(method: &str, path: &str, headers: Vec<(String, String)>, body: &str) -> Request {
    Request {
        method: method.into(),
        path: path.into(),
        query: String::new(),
        headers,
        body: body.as_bytes().to_vec(),
        parts: Vec::new(),
        origin: Origin::Http,
        remote_addr: "127.0.0.1".into(),
    }
}

/// Answers `input` on a fresh platform with a bootstrapped admin; panics when the
/// engine does (or answers no HTTP status).
pub fn run(input: Input) {
    let mut p = MemoryPlatform::new();
    p.settings.token_min_interval_ms = 0;
    let mut boot = request(
        "POST",
        "/admin/bootstrap",
        vec![("content-type".into(), "application/json".into())],
        r#"{"email": "a@x.se", "password": "password1"}"#,
    );
    boot.origin = Origin::Admin;
    assert_eq!(handle(&mut p, &boot).status, 201);
    let login = handle(
        &mut p,
        &request(
            "POST",
            "/v1/auth",
            vec![("content-type".into(), "application/json".into())],
            r#"{"email": "a@x.se", "password": "password1"}"#,
        ),
    );
    let token = String::from_utf8_lossy(&login.body)
        .split('"')
        .skip_while(|s| *s != "access_token")
        .nth(2)
        .unwrap_or_default()
        .to_string();

    let method = METHODS[input.method as usize % METHODS.len()];
    let path = match templates().get(input.route as usize) {
        Some((pattern, _)) => pattern
            .split('/')
            .map(|s| {
                if s.starts_with('{') {
                    input.param.as_str()
                } else {
                    s
                }
            })
            .collect::<Vec<_>>()
            .join("/"),
        None => input.path.clone(),
    };
    let mut headers = input.headers;
    let ctype = TYPES[input.content_type as usize % TYPES.len()];
    if !ctype.is_empty() {
        headers.push(("content-type".into(), ctype.into()));
    }
    if input.with_token {
        headers.push(("authorization".into(), format!("Bearer {token}")));
    }
    let req = Request {
        method: method.into(),
        path,
        query: input.query,
        headers,
        body: input.body,
        parts: input
            .parts
            .into_iter()
            .map(|(name, filename, content_type, data)| FormPart {
                name,
                filename,
                content_type,
                data,
                staged: None,
            })
            .collect(),
        origin: Origin::Http,
        remote_addr: "127.0.0.1".into(),
    };
    let resp = handle(&mut p, &req);
    assert!((100..600).contains(&resp.status), "{}", resp.status);
}
