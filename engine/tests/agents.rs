//! The agent path's time rules, on the in-memory platform where the clock can move:
//! codes live 10 minutes, access tokens their configured lifetime, and the forget job
//! removes what expired.

mod common;

use base64::Engine as _;
use common::*;
use esign_engine::memory::MemoryPlatform;
use esign_engine::{Origin, Request, Response, handle};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const REDIRECT: &str = "http://127.0.0.1:9/cb";
const VERIFIER: &str = "a-verifier-of-at-least-forty-three-characters-0123456789";

fn form(path: &str, fields: &[(&str, &str)], cookie: Option<&str>) -> Request {
    let mut req = request(Origin::Http, "POST", path, None);
    req.headers.push((
        "content-type".into(),
        "application/x-www-form-urlencoded".into(),
    ));
    if let Some(c) = cookie {
        req.headers.push(("cookie".into(), c.into()));
    }
    req.body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish()
        .into_bytes();
    req
}

fn header<'a>(resp: &'a Response, name: &str) -> &'a str {
    resp.headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or("")
}

fn field(html: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let at = html.find(&marker).expect(name) + marker.len();
    html[at..].split('"').next().unwrap().to_string()
}

/// Registers a client and walks the browser part; the code.
fn authorize(p: &mut MemoryPlatform) -> (String, String) {
    let reg = handle(
        p,
        &request(
            Origin::Http,
            "POST",
            "/register",
            Some(json!({"redirect_uris": [REDIRECT]})),
        ),
    );
    assert_eq!(reg.status, 201);
    let client = body(&reg)["client_id"].as_str().unwrap().to_string();
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(VERIFIER.as_bytes()));
    let mut get = request(Origin::Http, "GET", "/authorize", None);
    get.query = form_urlencoded::Serializer::new(String::new())
        .extend_pairs([
            ("response_type", "code"),
            ("client_id", &client),
            ("redirect_uri", REDIRECT),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
        ])
        .finish();
    let page = handle(p, &get);
    assert_eq!(page.status, 200);
    let cookie = header(&page, "set-cookie")
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let csrf = field(&String::from_utf8_lossy(&page.body), "csrf");
    let consent = handle(
        p,
        &form(
            "/authorize",
            &[
                ("csrf", &csrf),
                ("action", "signin"),
                ("email", "a@x.se"),
                ("password", "password1"),
            ],
            Some(&cookie),
        ),
    );
    assert_eq!(consent.status, 200);
    let entity = field(&String::from_utf8_lossy(&consent.body), "entity_id");
    let done = handle(
        p,
        &form(
            "/authorize",
            &[
                ("csrf", &csrf),
                ("action", "approve"),
                ("entity_id", &entity),
            ],
            Some(&cookie),
        ),
    );
    assert_eq!(done.status, 303);
    let location = header(&done, "location");
    let code = location
        .split(['?', '&'])
        .find_map(|kv| kv.strip_prefix("code="))
        .unwrap()
        .to_string();
    (client, code)
}

fn exchange(p: &mut MemoryPlatform, client: &str, code: &str) -> Response {
    handle(
        p,
        &form(
            "/token",
            &[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", REDIRECT),
                ("client_id", client),
                ("code_verifier", VERIFIER),
            ],
            None,
        ),
    )
}

fn tools_list(p: &mut MemoryPlatform, access: &str) -> u16 {
    let mut req = request(
        Origin::Http,
        "POST",
        "/mcp",
        Some(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}}),
        ),
    );
    req.headers
        .push(("authorization".into(), format!("Bearer {access}")));
    req.headers.push(("mcp-method".into(), "tools/list".into()));
    handle(p, &req).status
}

#[test]
fn a_code_expires_after_ten_minutes() {
    let mut p = bootstrapped();
    let (client, code) = authorize(&mut p);
    p.now_ms += 10 * 60 * 1000;
    let resp = exchange(&mut p, &client, &code);
    assert_eq!(resp.status, 400);
    assert_eq!(body(&resp)["error"], "invalid_grant");
    assert!(
        body(&resp)["error_description"]
            .as_str()
            .unwrap()
            .contains("expired")
    );

    // One millisecond earlier it works.
    let (client, code) = authorize(&mut p);
    p.now_ms += 10 * 60 * 1000 - 1;
    let resp = exchange(&mut p, &client, &code);
    assert_eq!(resp.status, 200, "{:?}", body(&resp));
}

#[test]
fn an_access_token_lives_its_configured_lifetime_and_expired_records_are_forgotten() {
    let mut p = bootstrapped();
    p.settings.oauth_access_ttl_secs = 60;
    let (client, code) = authorize(&mut p);
    let resp = exchange(&mut p, &client, &code);
    let tokens: Value = body(&resp);
    assert_eq!(tokens["expires_in"], 60);
    let access = tokens["access_token"].as_str().unwrap().to_string();
    assert_eq!(tools_list(&mut p, &access), 200);
    p.now_ms += 59_999;
    assert_eq!(tools_list(&mut p, &access), 200);
    p.now_ms += 1;
    assert_eq!(tools_list(&mut p, &access), 401);

    // The forget jobs remove the pending request, the code and the tokens once due.
    let jobs = take_jobs(&mut p, "oauth.forget");
    assert!(jobs.len() >= 4, "{jobs:?}");
    let before = keys_containing(&p, &["oacode/", "oat/"]).len();
    assert!(before >= 2);
    for job in &jobs {
        assert_eq!(run(&mut p, job, None), esign_engine::JobOutcome::Done);
    }
    assert!(keys_containing(&p, &["oacode/", "oat/", "oareq/"]).is_empty());
}

#[test]
fn a_client_metadata_document_is_cached_for_an_hour() {
    let mut p = bootstrapped();
    let url = "https://agent.example/client.json";
    p.client_metadata.insert(
        url.into(),
        json!({"client_id": url, "client_name": "Agent", "redirect_uris": [REDIRECT]}).to_string(),
    );
    let open = |p: &mut MemoryPlatform| {
        let mut get = request(Origin::Http, "GET", "/authorize", None);
        get.query = form_urlencoded::Serializer::new(String::new())
            .extend_pairs([
                ("response_type", "code"),
                ("client_id", url),
                ("redirect_uri", REDIRECT),
                (
                    "code_challenge",
                    "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
                ),
                ("code_challenge_method", "S256"),
            ])
            .finish();
        handle(p, &get)
    };
    let page = open(&mut p);
    assert_eq!(page.status, 200);
    assert!(String::from_utf8_lossy(&page.body).contains("Agent (agent.example)"));
    p.now_ms += 3600 * 1000 - 1;
    assert_eq!(open(&mut p).status, 200);
    assert_eq!(p.metadata_fetches.len(), 1, "cached within the hour");
    p.now_ms += 1;
    assert_eq!(open(&mut p).status, 200);
    assert_eq!(p.metadata_fetches.len(), 2, "fetched again after it");
    // A root URL is not a client id document.
    p.client_metadata.clear();
    let mut get = request(Origin::Http, "GET", "/authorize", None);
    get.query = "client_id=https%3A%2F%2Fagent.example%2F&response_type=code".into();
    assert_eq!(handle(&mut p, &get).status, 400);
    assert_eq!(p.metadata_fetches.len(), 2);
}

#[test]
fn a_session_ends_after_a_day() {
    let mut p = bootstrapped();
    p.settings.oauth_access_ttl_secs = 7 * 24 * 3600;
    let (client, code) = authorize(&mut p);
    let access = body(&exchange(&mut p, &client, &code))["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let post = |p: &mut MemoryPlatform, msg: Value, session: Option<&str>| {
        let mut req = request(Origin::Http, "POST", "/mcp", Some(msg));
        req.headers
            .push(("authorization".into(), format!("Bearer {access}")));
        if let Some(s) = session {
            req.headers.push(("mcp-session-id".into(), s.into()));
        }
        handle(p, &req)
    };
    let init = post(
        &mut p,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        None,
    );
    let sid = header(&init, "mcp-session-id").to_string();
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    p.now_ms += 24 * 3600 * 1000 - 1;
    assert_eq!(post(&mut p, ping.clone(), Some(&sid)).status, 200);
    p.now_ms += 1;
    assert_eq!(post(&mut p, ping, Some(&sid)).status, 404);
    assert!(
        take_jobs(&mut p, "oauth.forget")
            .iter()
            .any(|j| j.payload.starts_with(b"mcps/")),
        "the session record is forgotten by a job"
    );
}
