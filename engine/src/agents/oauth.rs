//! The OAuth 2.1 authorization server for agents: dynamic registration of public
//! clients, the authorization-code flow with PKCE S256, refresh-token rotation with
//! reuse detection, revocation, and a person's view of their connected agents.
//!
//! Records (all values [`crate::model`]-encoded):
//!
//! | key | value |
//! |---|---|
//! | `oac/{sha256(client_id)}` | [`Client`] |
//! | `oareq/{sha256(cookie)}` | [`AuthRequest`]: one browser's pending authorization |
//! | `oacode/{sha256(code)}` | [`Code`] |
//! | `oaf/{family}`, `oafu/{user}/{family}` | [`Family`] and its index |
//! | `oat/{sha256}`, `oart/{sha256}` | [`Grant`]: access and refresh tokens |

use super::forms::{self, Choice};
use super::{
    Client, Family, Grant, SCOPE, access_key, base, client_key, family_key, refresh_key, resource,
    user_family_key,
};
use crate::auth;
use crate::http::{ApiError, ApiResult, json, no_content};
use crate::model::{Entity, Membership, Profile, entity_key, memberships_of};
#[allow(unused_imports)]
use crate::prelude::*;
use crate::util::{new_id, new_secret, sha256_hex};
use crate::{Cx, JobOutcome, JobSpec, Request, Response};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Job that deletes an OAuth record (payload: its key) once it has expired.
pub const FORGET_JOB: &str = "oauth.forget";
/// How long a pending authorization and an unused code live: 10 minutes.
const CODE_TTL_MS: u64 = 10 * 60 * 1000;
/// How long a refresh token lives unused: 30 days.
const REFRESH_TTL_MS: u64 = 30 * 24 * 3600 * 1000;
const COOKIE: &str = "esign_oauth";
const MAX_REDIRECT_URIS: usize = 10;
const MAX_URI_LEN: usize = 2000;

/// One browser's authorization in progress, found by its cookie.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AuthRequest {
    pub client_id: String,
    pub client_name: String,
    pub redirect_uri: String,
    pub state: Option<String>,
    pub challenge: String,
    pub csrf: String,
    /// Set once the person signed in.
    pub user_id: Option<String>,
    pub expires_ms: u64,
}

/// An issued authorization code.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Code {
    pub client_id: String,
    pub redirect_uri: String,
    pub challenge: String,
    pub user_id: String,
    pub entity_id: String,
    pub expires_ms: u64,
    /// The family its exchange created; non-empty once used.
    pub family: String,
}

fn request_key(hash: &str) -> Vec<u8> {
    format!("oareq/{hash}").into_bytes()
}
fn code_key(hash: &str) -> Vec<u8> {
    format!("oacode/{hash}").into_bytes()
}

/// An RFC 6749 §5.2 / RFC 7591 §3.2.2 error: `{"error", "error_description"}`.
fn oauth_error(status: u16, error: &str, description: impl Into<String>) -> Response {
    let mut resp = json(
        status,
        &json!({ "error": error, "error_description": description.into() }),
    );
    resp.headers
        .push(("cache-control".into(), "no-store".into()));
    resp
}

/// Whether `uri` may be a redirect URI: absolute `https`, or `http` to a loopback host
/// (RFC 8252 §7.3), without a fragment.
fn redirect_uri_ok(uri: &str) -> Result<url::Url, String> {
    if uri.len() > MAX_URI_LEN {
        return Err(format!("longer than {MAX_URI_LEN} characters"));
    }
    let url = url::Url::parse(uri).map_err(|e| format!("not an absolute URL ({e})"))?;
    if url.fragment().is_some() {
        return Err("has a fragment".into());
    }
    match url.scheme() {
        "https" if url.host().is_some() => Ok(url),
        "http" if is_loopback(&url) => Ok(url),
        "http" => Err("uses http to a host that is not loopback; use https".into()),
        other => Err(format!(
            "has scheme {other:?}; use https or http on loopback"
        )),
    }
}

fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// How long a fetched Client ID Metadata Document is used before it is fetched again.
const METADATA_CACHE_MS: u64 = 3600 * 1000;

/// The client `client_id` names: a registered one, or, for an `https` URL, the Client
/// ID Metadata Document at that URL (fetched by the host, validated here, cached for an
/// hour). The error is a sentence for the person at the browser.
fn find_client(cx: &mut Cx, client_id: &str) -> Result<Client, String> {
    let cached = cx.load::<Client>(&client_key(client_id));
    if !client_id.starts_with("https://") {
        return cached.ok_or_else(|| {
            "This app is not registered here. Start again from your app.".to_string()
        });
    }
    let now = cx.now();
    if let Some(c) = cached
        && c.created_ms + METADATA_CACHE_MS > now
    {
        return Ok(c);
    }
    let url =
        url::Url::parse(client_id).map_err(|_| "The app's client_id is not a URL.".to_string())?;
    if url.path() == "/" || url.fragment().is_some() || !url.username().is_empty() {
        return Err("The app's client_id must be an https URL with a path and no fragment.".into());
    }
    let text =
        cx.p.fetch_client_metadata(client_id)
            .map_err(|e| format!("The app's metadata document could not be read: {e}."))?;
    let client = client_from_metadata(client_id, &text, now)
        .map_err(|e| format!("The app's metadata document is not valid: {e}."))?;
    cx.save(&client_key(client_id), &client);
    Ok(client)
}

/// Validates a Client ID Metadata Document: a JSON object whose `client_id` is its own
/// URL, with redirect URIs this server accepts, and no client secret (public clients).
fn client_from_metadata(url: &str, text: &str, now: u64) -> Result<Client, String> {
    let Ok(Value::Object(meta)) = serde_json::from_str::<Value>(text) else {
        return Err("it is not a JSON object".into());
    };
    if meta.get("client_id").and_then(Value::as_str) != Some(url) {
        return Err("its client_id is not its own URL".into());
    }
    if meta.contains_key("client_secret") || meta.contains_key("client_secret_expires_at") {
        return Err("it has a client secret; clients here are public".into());
    }
    match meta
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
    {
        None | Some("none") => {}
        Some(other) => return Err(format!("token_endpoint_auth_method {other} is not none")),
    }
    let uris: Vec<String> = match meta.get("redirect_uris") {
        Some(Value::Array(a)) if !a.is_empty() && a.len() <= MAX_REDIRECT_URIS => a
            .iter()
            .map(|u| {
                u.as_str()
                    .map(str::to_string)
                    .ok_or("a redirect URI is not a string".to_string())
            })
            .collect::<Result<_, _>>()?,
        _ => return Err("redirect_uris must be a non-empty array".into()),
    };
    for u in &uris {
        redirect_uri_ok(u).map_err(|why| format!("redirect URI {u:?} {why}"))?;
    }
    let host = url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_default();
    let name = meta
        .get("client_name")
        .and_then(Value::as_str)
        .map(|n| n.trim().chars().take(200).collect::<String>())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| host.clone());
    Ok(Client {
        id: url.to_string(),
        // The name is the document's claim; the host it came from is a fact.
        name: format!("{name} ({host})"),
        redirect_uris: uris,
        created_ms: now,
    })
}

/// `POST /register` (RFC 7591): registers a public client.
pub fn register(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    if req.content_type() != "application/json" {
        return Ok(oauth_error(
            400,
            "invalid_client_metadata",
            "send the client metadata as application/json",
        ));
    }
    let Ok(Value::Object(meta)) = serde_json::from_slice::<Value>(&req.body) else {
        return Ok(oauth_error(
            400,
            "invalid_client_metadata",
            "the body must be a JSON object of client metadata",
        ));
    };
    let uris = match meta.get("redirect_uris") {
        Some(Value::Array(a)) if !a.is_empty() && a.len() <= MAX_REDIRECT_URIS => a,
        Some(Value::Array(a)) if a.len() > MAX_REDIRECT_URIS => {
            return Ok(oauth_error(
                400,
                "invalid_redirect_uri",
                format!("at most {MAX_REDIRECT_URIS} redirect_uris"),
            ));
        }
        _ => {
            return Ok(oauth_error(
                400,
                "invalid_redirect_uri",
                "redirect_uris must be a non-empty array of URLs",
            ));
        }
    };
    let mut redirect_uris = Vec::new();
    for uri in uris {
        let Some(uri) = uri.as_str() else {
            return Ok(oauth_error(
                400,
                "invalid_redirect_uri",
                "each redirect URI must be a string",
            ));
        };
        if let Err(why) = redirect_uri_ok(uri) {
            return Ok(oauth_error(
                400,
                "invalid_redirect_uri",
                format!("redirect URI {uri:?} {why}"),
            ));
        }
        redirect_uris.push(uri.to_string());
    }
    match meta.get("token_endpoint_auth_method") {
        None | Some(Value::Null) => {}
        Some(Value::String(m)) if m == "none" => {}
        Some(other) => {
            return Ok(oauth_error(
                400,
                "invalid_client_metadata",
                format!(
                    "token_endpoint_auth_method {other} is not supported: clients are public (\"none\")"
                ),
            ));
        }
    }
    for (member, allowed) in [
        ("grant_types", &["authorization_code", "refresh_token"][..]),
        ("response_types", &["code"][..]),
    ] {
        match meta.get(member) {
            None | Some(Value::Null) => {}
            Some(Value::Array(a))
                if a.iter()
                    .all(|v| v.as_str().is_some_and(|s| allowed.contains(&s))) => {}
            Some(_) => {
                return Ok(oauth_error(
                    400,
                    "invalid_client_metadata",
                    format!("{member} may only contain {}", allowed.join(", ")),
                ));
            }
        }
    }
    if let Some(scope) = meta.get("scope").and_then(Value::as_str)
        && scope.split(' ').any(|s| !s.is_empty() && s != SCOPE)
    {
        return Ok(oauth_error(
            400,
            "invalid_client_metadata",
            format!("the only scope is {SCOPE:?}"),
        ));
    }
    let name = match meta.get("client_name") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) if s.chars().count() <= 200 => s.trim().to_string(),
        Some(_) => {
            return Ok(oauth_error(
                400,
                "invalid_client_metadata",
                "client_name must be a string of at most 200 characters",
            ));
        }
    };
    let id = new_id(cx);
    let now = cx.now();
    let client = Client {
        id: id.clone(),
        name: if name.is_empty() {
            "An unnamed agent".into()
        } else {
            name
        },
        redirect_uris,
        created_ms: now,
    };
    cx.save(&client_key(&id), &client);
    let mut resp = json(
        201,
        &json!({
            "client_id": client.id,
            "client_id_issued_at": now / 1000,
            "client_name": client.name,
            "redirect_uris": client.redirect_uris,
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "scope": SCOPE,
        }),
    );
    resp.headers
        .push(("cache-control".into(), "no-store".into()));
    Ok(resp)
}

/// The cookie that names a pending authorization.
fn cookie_value(req: &Request) -> Option<&str> {
    req.header("cookie")?
        .split(';')
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v)
}

fn set_cookie(cx: &mut Cx, value: &str, max_age_secs: u64) -> String {
    let secure = url::Url::parse(&base(cx))
        .map(|u| !(u.scheme() == "http" && is_loopback(&u)))
        .unwrap_or(true);
    format!(
        "{COOKIE}={value}; Path=/authorize; Max-Age={max_age_secs}; HttpOnly; SameSite=Lax{}",
        if secure { "; Secure" } else { "" }
    )
}

/// A redirect back to the client with `params`, `state` and `iss` (RFC 9207).
fn back_to_client(
    cx: &mut Cx,
    redirect_uri: &str,
    state: Option<&str>,
    params: &[(&str, &str)],
) -> Response {
    let mut url = match url::Url::parse(redirect_uri) {
        Ok(u) => u,
        Err(_) => {
            return forms::error(
                400,
                "Cannot return to the app",
                "its redirect URI is not a URL",
            );
        }
    };
    let issuer = base(cx);
    {
        let mut q = url.query_pairs_mut();
        for (k, v) in params {
            q.append_pair(k, v);
        }
        if let Some(s) = state {
            q.append_pair("state", s);
        }
        q.append_pair("iss", &issuer);
    }
    Response {
        status: 303,
        headers: vec![
            ("location".into(), url.into()),
            ("cache-control".into(), "no-store".into()),
            ("referrer-policy".into(), "no-referrer".into()),
        ],
        body: Vec::new(),
    }
}

/// `GET|POST /authorize`: the browser part of the flow.
pub fn authorize(cx: &mut Cx, req: &Request) -> Response {
    match req.method.as_str() {
        "GET" => start(cx, req),
        "POST" => submit(cx, req),
        m => crate::router::method_not_allowed(m, &["GET", "POST"]).into_response(),
    }
}

/// The GET: checks the client and redirect URI (errors stay here), then the rest of
/// the request (errors go back to the client), and shows the sign-in form.
fn start(cx: &mut Cx, req: &Request) -> Response {
    let q = |name: &str| req.query_param(name).filter(|v| !v.is_empty());
    let Some(client_id) = q("client_id") else {
        return forms::error(
            400,
            "Missing client",
            "The link has no client_id. Start again from your app.",
        );
    };
    let client = match find_client(cx, &client_id) {
        Ok(c) => c,
        Err(why) => return forms::error(400, "Unknown app", &why),
    };
    let redirect_uri = match q("redirect_uri") {
        Some(uri) if client.redirect_uris.contains(&uri) => uri,
        Some(_) => {
            return forms::error(
                400,
                "Wrong return address",
                "The redirect_uri is not one this app registered (it must match exactly).",
            );
        }
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => {
            return forms::error(
                400,
                "Missing return address",
                "The link has no redirect_uri.",
            );
        }
    };
    let state = q("state");
    let fail = |cx: &mut Cx, error: &str, text: &str| {
        back_to_client(
            cx,
            &redirect_uri,
            state.as_deref(),
            &[("error", error), ("error_description", text)],
        )
    };
    if q("response_type").as_deref() != Some("code") {
        return fail(
            cx,
            "unsupported_response_type",
            "response_type must be code",
        );
    }
    let Some(challenge) = q("code_challenge") else {
        return fail(
            cx,
            "invalid_request",
            "PKCE is required: send code_challenge with code_challenge_method=S256",
        );
    };
    if q("code_challenge_method").as_deref() != Some("S256") {
        return fail(
            cx,
            "invalid_request",
            "code_challenge_method must be S256 (plain is not accepted)",
        );
    }
    if challenge.len() != 43
        || !challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return fail(
            cx,
            "invalid_request",
            "code_challenge must be the base64url SHA-256 of the verifier (43 characters)",
        );
    }
    if let Some(scope) = q("scope")
        && scope.split(' ').any(|s| !s.is_empty() && s != SCOPE)
    {
        return fail(cx, "invalid_scope", "the only scope is basic");
    }
    if let Some(target) = q("resource")
        && target.trim_end_matches('/') != resource(cx)
    {
        return fail(
            cx,
            "invalid_target",
            "resource must be this server's /mcp endpoint",
        );
    }
    let cookie = new_secret(cx);
    let csrf = new_secret(cx);
    let expires_ms = cx.now() + CODE_TTL_MS;
    let key = request_key(&sha256_hex(cookie.as_bytes()));
    cx.save(
        &key,
        &AuthRequest {
            client_id: client.id.clone(),
            client_name: client.name.clone(),
            redirect_uri,
            state,
            challenge,
            csrf: csrf.clone(),
            user_id: None,
            expires_ms,
        },
    );
    forget_at(cx, key, expires_ms);
    let set = set_cookie(cx, &cookie, CODE_TTL_MS / 1000);
    forms::sign_in(200, &client.name, &csrf, "", "", Some(set))
}

/// The POSTs of the two forms: `action=signin` (email, password) and
/// `action=approve|deny` (entity_id).
fn submit(cx: &mut Cx, req: &Request) -> Response {
    // A browser tells where a form came from; another site's form is refused before
    // anything else is read (the CSRF token below is the second lock).
    let base_origin = base(cx);
    let cross_site = req
        .header("origin")
        .is_some_and(|o| o.trim_end_matches('/') != base_origin)
        || req
            .header("sec-fetch-site")
            .is_some_and(|s| s != "same-origin" && s != "none");
    if cross_site {
        return forms::error(403, "Refused", "This form was sent from another site.");
    }
    let Some(cookie) = cookie_value(req).map(str::to_string) else {
        return forms::error(
            400,
            "Sign-in expired",
            "Your browser did not keep this sign-in. Start again from your app.",
        );
    };
    let key = request_key(&sha256_hex(cookie.as_bytes()));
    let now = cx.now();
    let Some(mut pending) = cx.load::<AuthRequest>(&key).filter(|p| p.expires_ms > now) else {
        return forms::error(
            400,
            "Sign-in expired",
            "This sign-in took longer than 10 minutes or was already used. Start again from your app.",
        );
    };
    let fields = match req.body_fields() {
        Ok(f) => f,
        Err(e) => return forms::error(400, "Bad form", &e.description),
    };
    let field = |name: &str| fields.optional_str(name).ok().flatten().unwrap_or_default();
    if !constant_eq(field("csrf").as_bytes(), pending.csrf.as_bytes()) {
        return forms::error(
            403,
            "Refused",
            "This form is not the one we sent. Start again from your app.",
        );
    }
    match field("action").as_str() {
        "signin" => {
            let email = field("email");
            let checked = auth::check_password(cx, &email, &field("password"))
                .and_then(|mut user| auth::check_spacing(cx, &mut user).map(|_| user));
            let user = match checked {
                Ok(u) => u,
                Err(e) => {
                    return forms::sign_in(
                        e.status,
                        &pending.client_name,
                        &pending.csrf,
                        &email,
                        &e.description,
                        None,
                    );
                }
            };
            let choices = selectable(cx, &user.id);
            if choices.is_empty() {
                return forms::sign_in(
                    403,
                    &pending.client_name,
                    &pending.csrf,
                    &email,
                    "Your account has no active profile in an entity with API access.",
                    None,
                );
            }
            pending.user_id = Some(user.id.clone());
            cx.save(&key, &pending);
            consent_page(cx, &pending, &user.email, &choices, "")
        }
        "approve" | "deny" if pending.user_id.is_none() => forms::error(
            400,
            "Not signed in",
            "Sign in first. Start again from your app.",
        ),
        "deny" => {
            cx.p.delete(&key);
            back_to_client(
                cx,
                &pending.redirect_uri,
                pending.state.as_deref(),
                &[
                    ("error", "access_denied"),
                    ("error_description", "the person declined"),
                ],
            )
        }
        "approve" => {
            let user_id = pending.user_id.clone().unwrap_or_default();
            let entity_id = field("entity_id");
            if let Err(e) = auth::principal(cx, &user_id, &entity_id, String::new())
                .and_then(|pr| auth::check_selectable(&pr.entity).map(|_| pr))
            {
                let email = cx
                    .load::<crate::model::User>(&crate::model::user_key(&user_id))
                    .map(|u| u.email)
                    .unwrap_or_default();
                let choices = selectable(cx, &user_id);
                let mut resp = consent_page(cx, &pending, &email, &choices, &e.description);
                resp.status = 403;
                return resp;
            }
            cx.p.delete(&key);
            let code = new_secret(cx);
            let ckey = code_key(&sha256_hex(code.as_bytes()));
            let expires_ms = now + CODE_TTL_MS;
            cx.save(
                &ckey,
                &Code {
                    client_id: pending.client_id.clone(),
                    redirect_uri: pending.redirect_uri.clone(),
                    challenge: pending.challenge.clone(),
                    user_id,
                    entity_id,
                    expires_ms,
                    family: String::new(),
                },
            );
            forget_at(cx, ckey, expires_ms);
            back_to_client(
                cx,
                &pending.redirect_uri,
                pending.state.as_deref(),
                &[("code", &code)],
            )
        }
        _ => forms::error(400, "Bad form", "Unknown action."),
    }
}

fn consent_page(
    cx: &mut Cx,
    pending: &AuthRequest,
    email: &str,
    choices: &[Choice],
    message: &str,
) -> Response {
    let _ = cx;
    let (host, origin) = match url::Url::parse(&pending.redirect_uri) {
        Ok(u) => (
            u.host_str().unwrap_or("").to_string(),
            u.origin().ascii_serialization(),
        ),
        Err(_) => (String::new(), String::new()),
    };
    forms::consent(
        &pending.client_name,
        &host,
        &origin,
        &pending.csrf,
        email,
        choices,
        message,
    )
}

/// The entities a signed-in person may grant: an active or pending profile (a pending
/// one is refused with its reason when chosen), in an entity that exists.
fn selectable(cx: &mut Cx, user_id: &str) -> Vec<Choice> {
    let (start, end) = memberships_of(user_id);
    let mut out = Vec::new();
    for (_, value) in cx.p.scan(&start, &end, 1000, false) {
        let m: Membership = crate::model::decode(&value);
        if m.profile == Profile::None {
            continue;
        }
        if let Some(entity) = cx.load::<Entity>(&entity_key(&m.entity_id)) {
            out.push(Choice {
                id: entity.id,
                name: entity.name,
            });
        }
    }
    out
}

fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn forget_at(cx: &mut Cx, key: Vec<u8>, at_ms: u64) {
    cx.p.schedule_job(JobSpec {
        kind: FORGET_JOB.into(),
        payload: key,
        run_at_ms: at_ms,
        work: None,
    });
}

/// Job [`FORGET_JOB`]: deletes an expired OAuth record.
pub fn forget(cx: &mut Cx, payload: &[u8]) -> JobOutcome {
    let allowed = [&b"oareq/"[..], b"oacode/", b"oat/", b"oart/"];
    if allowed.iter().any(|p| payload.starts_with(p)) {
        cx.p.delete(payload);
        JobOutcome::Done
    } else {
        JobOutcome::Failed("not an OAuth record key".into())
    }
}

/// `POST /token`: the `authorization_code` and `refresh_token` grants.
pub fn token(cx: &mut Cx, req: &Request) -> Response {
    if req.content_type() != "application/x-www-form-urlencoded" {
        return oauth_error(
            400,
            "invalid_request",
            "send the token request as application/x-www-form-urlencoded",
        );
    }
    let fields: Vec<(String, String)> = form_urlencoded::parse(&req.body).into_owned().collect();
    let mut seen = Vec::new();
    for (k, _) in &fields {
        if seen.contains(&k) {
            return oauth_error(400, "invalid_request", format!("parameter {k} is repeated"));
        }
        seen.push(k);
    }
    let get = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty())
    };
    if let Some(target) = get("resource")
        && target.trim_end_matches('/') != resource(cx)
    {
        return oauth_error(
            400,
            "invalid_target",
            "resource must be this server's /mcp endpoint",
        );
    }
    let Some(client_id) = get("client_id") else {
        return oauth_error(
            401,
            "invalid_client",
            "client_id is required (public clients identify themselves with it)",
        );
    };
    match get("grant_type").as_deref() {
        Some("authorization_code") => exchange_code(
            cx,
            &client_id,
            get("code"),
            get("redirect_uri"),
            get("code_verifier"),
        ),
        Some("refresh_token") => {
            if let Some(scope) = get("scope")
                && scope.split(' ').any(|s| !s.is_empty() && s != SCOPE)
            {
                return oauth_error(400, "invalid_scope", "the only scope is basic");
            }
            rotate(cx, &client_id, get("refresh_token"))
        }
        Some(other) => oauth_error(
            400,
            "unsupported_grant_type",
            format!("grant_type {other:?} is not supported"),
        ),
        None => oauth_error(400, "invalid_request", "grant_type is required"),
    }
}

fn exchange_code(
    cx: &mut Cx,
    client_id: &str,
    code: Option<String>,
    redirect_uri: Option<String>,
    verifier: Option<String>,
) -> Response {
    let (Some(code), Some(verifier)) = (code, verifier) else {
        return oauth_error(
            400,
            "invalid_request",
            "code and code_verifier are required",
        );
    };
    if !(43..=128).contains(&verifier.len())
        || !verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
    {
        return oauth_error(
            400,
            "invalid_request",
            "code_verifier must be 43 to 128 unreserved characters",
        );
    }
    if find_client(cx, client_id).is_err() {
        return oauth_error(401, "invalid_client", "unknown client_id");
    }
    let key = code_key(&sha256_hex(code.as_bytes()));
    let now = cx.now();
    let Some(mut record) = cx.load::<Code>(&key) else {
        return oauth_error(400, "invalid_grant", "the code is unknown or expired");
    };
    if !record.family.is_empty() {
        // RFC 9700 §4.5.3: a replayed code revokes what its first use issued.
        revoke_family(cx, &record.family.clone());
        return oauth_error(
            400,
            "invalid_grant",
            "the code was already used; the tokens it gave are revoked",
        );
    }
    if record.expires_ms <= now {
        return oauth_error(
            400,
            "invalid_grant",
            "the code has expired (codes live 10 minutes)",
        );
    }
    if record.client_id != client_id {
        return oauth_error(
            400,
            "invalid_grant",
            "the code was issued to another client",
        );
    }
    if redirect_uri
        .as_deref()
        .is_some_and(|r| r != record.redirect_uri)
    {
        return oauth_error(
            400,
            "invalid_grant",
            "redirect_uri differs from the authorization request's",
        );
    }
    let digest = Sha256::digest(verifier.as_bytes());
    let expected = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
    if !constant_eq(expected.as_bytes(), record.challenge.as_bytes()) {
        return oauth_error(
            400,
            "invalid_grant",
            "code_verifier does not match the code_challenge",
        );
    }
    if let Err(e) = auth::principal(cx, &record.user_id, &record.entity_id, String::new()) {
        return oauth_error(400, "invalid_grant", e.description);
    }
    let family = new_id(cx);
    record.family = family.clone();
    cx.save(&key, &record);
    let client_name = cx
        .load::<Client>(&client_key(client_id))
        .map(|c| c.name)
        .unwrap_or_default();
    let fam = Family {
        id: family.clone(),
        client_id: client_id.to_string(),
        client_name,
        user_id: record.user_id.clone(),
        entity_id: record.entity_id.clone(),
        scope: SCOPE.into(),
        created_ms: now,
        revoked: false,
    };
    cx.save(&family_key(&family), &fam);
    cx.p.put(&user_family_key(&fam.user_id, &family), b"");
    issue(cx, &family)
}

fn rotate(cx: &mut Cx, client_id: &str, refresh: Option<String>) -> Response {
    let Some(refresh) = refresh else {
        return oauth_error(400, "invalid_request", "refresh_token is required");
    };
    let key = refresh_key(&sha256_hex(refresh.as_bytes()));
    let now = cx.now();
    let Some(mut grant) = cx.load::<Grant>(&key) else {
        return oauth_error(
            400,
            "invalid_grant",
            "the refresh token is unknown or expired",
        );
    };
    let Some(family) = cx.load::<Family>(&family_key(&grant.family)) else {
        return oauth_error(
            400,
            "invalid_grant",
            "the refresh token is unknown or expired",
        );
    };
    if family.client_id != client_id {
        return oauth_error(
            400,
            "invalid_grant",
            "the refresh token was issued to another client",
        );
    }
    if family.revoked {
        return oauth_error(400, "invalid_grant", "access was revoked; authorize again");
    }
    if grant.used {
        // A refresh token is good once: a second use means it leaked.
        revoke_family(cx, &family.id);
        return oauth_error(
            400,
            "invalid_grant",
            "the refresh token was already used; every token of this grant is revoked",
        );
    }
    if grant.expires_ms <= now {
        return oauth_error(
            400,
            "invalid_grant",
            "the refresh token has expired; authorize again",
        );
    }
    if let Err(e) = auth::principal(cx, &family.user_id, &family.entity_id, String::new()) {
        return oauth_error(400, "invalid_grant", e.description);
    }
    grant.used = true;
    cx.save(&key, &grant);
    issue(cx, &family.id)
}

/// A new access + refresh token pair of `family`.
fn issue(cx: &mut Cx, family: &str) -> Response {
    let now = cx.now();
    let ttl = cx.settings().oauth_access_ttl_secs;
    let access = new_secret(cx);
    let refresh = new_secret(cx);
    let akey = access_key(&sha256_hex(access.as_bytes()));
    let rkey = refresh_key(&sha256_hex(refresh.as_bytes()));
    let (a_exp, r_exp) = (now + ttl * 1000, now + REFRESH_TTL_MS);
    for (key, expires_ms) in [(akey, a_exp), (rkey, r_exp)] {
        cx.save(
            &key,
            &Grant {
                family: family.into(),
                expires_ms,
                used: false,
            },
        );
        forget_at(cx, key, expires_ms);
    }
    let mut resp = json(
        200,
        &json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": ttl,
            "refresh_token": refresh,
            "scope": SCOPE,
        }),
    );
    resp.headers
        .push(("cache-control".into(), "no-store".into()));
    resp.headers.push(("pragma".into(), "no-cache".into()));
    resp
}

fn revoke_family(cx: &mut Cx, id: &str) {
    if let Some(mut family) = cx.load::<Family>(&family_key(id))
        && !family.revoked
    {
        family.revoked = true;
        cx.save(&family_key(id), &family);
    }
}

/// `POST /revoke` (RFC 7009): the token's whole grant stops working. Unknown tokens
/// answer 200 too.
pub fn revoke(cx: &mut Cx, req: &Request) -> Response {
    if req.content_type() != "application/x-www-form-urlencoded" {
        return oauth_error(
            400,
            "invalid_request",
            "send the revocation request as application/x-www-form-urlencoded",
        );
    }
    let Some(token) = form_urlencoded::parse(&req.body)
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.into_owned())
    else {
        return oauth_error(400, "invalid_request", "token is required");
    };
    let hash = sha256_hex(token.as_bytes());
    for key in [access_key(&hash), refresh_key(&hash)] {
        if let Some(grant) = cx.load::<Grant>(&key) {
            revoke_family(cx, &grant.family);
        }
    }
    let mut resp = json(200, &json!({}));
    resp.headers
        .push(("cache-control".into(), "no-store".into()));
    resp
}

/// The live grants of the caller, newest last.
fn live_families(cx: &mut Cx, user_id: &str) -> Vec<Family> {
    let (start, end) = crate::model::prefix_range(&format!("oafu/{user_id}/"));
    let keys: Vec<Vec<u8>> =
        cx.p.scan(&start, &end, 10_000, false)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
    let mut out = Vec::new();
    for k in keys {
        let id = String::from_utf8_lossy(&k[start.len()..]).into_owned();
        if let Some(f) = cx.load::<Family>(&family_key(&id))
            && !f.revoked
        {
            out.push(f);
        }
    }
    out
}

/// `GET /v1/users/me/connections`: the agents the caller has connected (REST token).
pub fn connections(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let pr = auth::authenticate(cx, req)?;
    let mut list: Vec<Value> = Vec::new();
    for f in live_families(cx, &pr.user.id) {
        if let Some(existing) = list
            .iter_mut()
            .find(|v| v["client_id"] == f.client_id.as_str())
        {
            existing["grants"] = json!(existing["grants"].as_u64().unwrap_or(0) + 1);
            continue;
        }
        list.push(json!({
            "client_id": f.client_id,
            "client_name": f.client_name,
            "entity_id": f.entity_id,
            "scope": f.scope,
            "connected_at": crate::util::iso8601(f.created_ms),
            "grants": 1,
        }));
    }
    Ok(json(200, &json!({ "connections": list })))
}

/// `DELETE /v1/users/me/connections/{client_id}`: disconnects an agent: every token it
/// holds for the caller stops working at once.
pub fn disconnect(cx: &mut Cx, req: &Request, client_id: &str) -> ApiResult<Response> {
    let pr = auth::authenticate(cx, req)?;
    let mut found = false;
    for f in live_families(cx, &pr.user.id) {
        if f.client_id == client_id {
            revoke_family(cx, &f.id);
            found = true;
        }
    }
    if !found {
        return Err(ApiError::not_found(
            "not_found",
            "no connected agent with that client_id",
        ));
    }
    Ok(no_content())
}
