//! `/authorize`: the browser part of the flow. A GET checks the request and shows the
//! sign-in form; the form posts (CSRF token, same-origin only) sign the person in under
//! the rules of `POST /v1/auth`, show the consent page with the entity choice, and on
//! approval redirect back to the client with a single-use code, `state` and `iss`.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, new_secret, sha256_hex};
use crate::domain::oauth::{
    CODE_TTL_MS, Code, base, code_key, constant_eq, find_client, forget_at, is_loopback,
    is_our_origin, is_our_resource, scope_ok,
};
use crate::domain::{accounts, auth};
use crate::handlers::agents::forms::{self, Choice};
use serde::{Deserialize, Serialize};

const COOKIE: &str = "esign_oauth";

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

fn request_key(hash: &str) -> Vec<u8> {
    util::key(&["oareq", hash])
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
        m => http::method_not_allowed(m, &["GET", "POST"]).into_response(),
    }
}

/// The GET: checks the client and redirect URI (errors stay here), then the rest of
/// the request (errors go back to the client), and shows the sign-in form.
#[expect(
    clippy::too_many_lines,
    reason = "older than the 70-line rule (issue 49)"
)]
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
        && !scope_ok(&scope)
    {
        return fail(cx, "invalid_scope", "the only scope is basic");
    }
    if let Some(target) = q("resource")
        && !is_our_resource(cx, &target)
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
#[expect(
    clippy::too_many_lines,
    reason = "older than the 70-line rule (issue 49)"
)]
fn submit(cx: &mut Cx, req: &Request) -> Response {
    // A browser tells where a form came from; another site's form is refused before
    // anything else is read (the CSRF token below is the second lock).
    let other_origin = req.header("origin").is_some_and(|o| !is_our_origin(cx, o));
    let cross_site = other_origin
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
            let checked = auth::check_password(cx, &email, &field("password"), &req.remote_addr)
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
            consent_page(&pending, &user.email, &choices, "")
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
                    .load::<accounts::User>(&accounts::user_key(&user_id))
                    .map(|u| u.email)
                    .unwrap_or_default();
                let choices = selectable(cx, &user_id);
                let mut resp = consent_page(&pending, &email, &choices, &e.description);
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

fn consent_page(pending: &AuthRequest, email: &str, choices: &[Choice], message: &str) -> Response {
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
    auth::profiles(cx, user_id)
        .into_iter()
        .map(|(_, entity)| Choice {
            id: entity.id,
            name: entity.name,
        })
        .collect()
}
