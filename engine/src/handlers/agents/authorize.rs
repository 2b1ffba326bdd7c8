//! `/authorize`: the browser part of the flow. A GET checks the request and shows the
//! sign-in form; the form posts (CSRF token, same-origin only) sign the person in under
//! the rules of `POST /v1/auth`, show the consent page with the entity choice, and on
//! approval redirect back to the client with a single-use code, `state` and `iss`.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::oauth::{
    self, Asked, AuthRequest, CODE_TTL_MS, Client, base, constant_eq, find_client, is_loopback,
    is_our_origin, is_our_resource, scope_ok,
};
use crate::domain::{accounts, auth};
use crate::handlers::agents::forms::{self, Choice};

const COOKIE: &str = "esign_oauth";

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
fn start(cx: &mut Cx, req: &Request) -> Response {
    let (client, redirect_uri) = match client_and_return(cx, req) {
        Ok(found) => found,
        Err(page) => return page,
    };
    let state = req.query_param("state").filter(|v| !v.is_empty());
    let challenge = match checked_challenge(cx, req) {
        Ok(c) => c,
        Err((error, text)) => {
            return back_to_client(
                cx,
                &redirect_uri,
                state.as_deref(),
                &[("error", error), ("error_description", text)],
            );
        }
    };
    let asked = Asked {
        redirect_uri,
        state,
        challenge,
    };
    let (cookie, csrf) = oauth::open_request(cx, &client, asked);
    let set = set_cookie(cx, &cookie, CODE_TTL_MS / 1000);
    forms::sign_in(200, &client.name, &csrf, "", "", Some(set))
}

/// The client of the request and the redirect URI to return to; else the error page.
fn client_and_return(cx: &mut Cx, req: &Request) -> Result<(Client, String), Response> {
    let q = |name: &str| req.query_param(name).filter(|v| !v.is_empty());
    let Some(client_id) = q("client_id") else {
        return Err(forms::error(
            400,
            "Missing client",
            "The link has no client_id. Start again from your app.",
        ));
    };
    let client = match find_client(cx, &client_id) {
        Ok(c) => c,
        Err(why) => return Err(forms::error(400, "Unknown app", &why)),
    };
    let redirect_uri = match q("redirect_uri") {
        Some(uri) if client.redirect_uris.contains(&uri) => uri,
        Some(_) => {
            return Err(forms::error(
                400,
                "Wrong return address",
                "The redirect_uri is not one this app registered (it must match exactly).",
            ));
        }
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => {
            return Err(forms::error(
                400,
                "Missing return address",
                "The link has no redirect_uri.",
            ));
        }
    };
    Ok((client, redirect_uri))
}

/// The PKCE challenge of a request whose response type, scope and resource are ours;
/// else the error and its description for the client.
fn checked_challenge(cx: &mut Cx, req: &Request) -> Result<String, (&'static str, &'static str)> {
    let q = |name: &str| req.query_param(name).filter(|v| !v.is_empty());
    if q("response_type").as_deref() != Some("code") {
        return Err(("unsupported_response_type", "response_type must be code"));
    }
    let Some(challenge) = q("code_challenge") else {
        return Err((
            "invalid_request",
            "PKCE is required: send code_challenge with code_challenge_method=S256",
        ));
    };
    if q("code_challenge_method").as_deref() != Some("S256") {
        return Err((
            "invalid_request",
            "code_challenge_method must be S256 (plain is not accepted)",
        ));
    }
    if challenge.len() != 43
        || !challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err((
            "invalid_request",
            "code_challenge must be the base64url SHA-256 of the verifier (43 characters)",
        ));
    }
    if let Some(scope) = q("scope")
        && !scope_ok(&scope)
    {
        return Err(("invalid_scope", "the only scope is basic"));
    }
    if let Some(target) = q("resource")
        && !is_our_resource(cx, &target)
    {
        return Err((
            "invalid_target",
            "resource must be this server's /mcp endpoint",
        ));
    }
    Ok(challenge)
}

/// The POSTs of the two forms: `action=signin` (email, password) and
/// `action=approve|deny` (entity_id).
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
    let Some(mut pending) = oauth::pending_request(cx, &cookie) else {
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
        "signin" => sign_in(
            cx,
            req,
            &cookie,
            &mut pending,
            &field("email"),
            &field("password"),
        ),
        "approve" | "deny" if pending.user_id.is_none() => forms::error(
            400,
            "Not signed in",
            "Sign in first. Start again from your app.",
        ),
        "deny" => {
            oauth::deny_request(cx, &cookie);
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
        "approve" => approve(cx, &cookie, &pending, field("entity_id")),
        _ => forms::error(400, "Bad form", "Unknown action."),
    }
}

/// `action=signin`: the password checked under the rules of `POST /v1/auth`, then the
/// consent page.
fn sign_in(
    cx: &mut Cx,
    req: &Request,
    cookie: &str,
    pending: &mut AuthRequest,
    email: &str,
    password: &str,
) -> Response {
    let checked = auth::check_password(cx, email, password, &req.remote_addr)
        .and_then(|mut user| auth::check_spacing(cx, &mut user).map(|_| user));
    let user = match checked {
        Ok(u) => u,
        Err(e) => {
            return forms::sign_in(
                e.status,
                &pending.client_name,
                &pending.csrf,
                email,
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
            email,
            "Your account has no active profile in an entity with API access.",
            None,
        );
    }
    oauth::sign_in_request(cx, cookie, pending, &user.id);
    consent_page(pending, &user.email, &choices, "")
}

/// `action=approve`: back to the client with a code, or the consent page again with
/// the reason the entity cannot be chosen.
fn approve(cx: &mut Cx, cookie: &str, pending: &AuthRequest, entity_id: String) -> Response {
    match oauth::approve_request(cx, cookie, pending, entity_id) {
        Ok(code) => back_to_client(
            cx,
            &pending.redirect_uri,
            pending.state.as_deref(),
            &[("code", &code)],
        ),
        Err(e) => {
            let user_id = pending.user_id.clone().unwrap_or_default();
            let email = accounts::user(cx, &user_id)
                .map(|u| u.email)
                .unwrap_or_default();
            let choices = selectable(cx, &user_id);
            let mut resp = consent_page(pending, &email, &choices, &e.description);
            resp.status = 403;
            resp
        }
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
