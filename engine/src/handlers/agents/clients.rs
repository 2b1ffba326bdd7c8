//! Who may ask for access: clients registered with `POST /register` (RFC 7591, public
//! clients only) and clients whose `client_id` is the `https` URL of a Client ID Metadata
//! Document (fetched by the host, validated here, cached for an hour).

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{ApiResult, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::oauth::{self, MAX_REDIRECT_URIS, SCOPE, redirect_uri_ok, scope_ok};
use crate::handlers::agents::errors::oauth_error;
use serde_json::{Map, Value, json};

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
    let redirect_uris = match redirect_uris(&meta) {
        Ok(uris) => uris,
        Err(refusal) => return Ok(refusal),
    };
    let name = match checked_name(&meta) {
        Ok(name) => name,
        Err(refusal) => return Ok(refusal),
    };
    let client = oauth::register_client(cx, name, redirect_uris);
    let mut resp = json(
        201,
        &json!({
            "client_id": client.id,
            "client_id_issued_at": client.created_ms / 1000,
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

/// The redirect URIs of the metadata `meta`, each one this server accepts.
fn redirect_uris(meta: &Map<String, Value>) -> Result<Vec<String>, Response> {
    let uris = match meta.get("redirect_uris") {
        Some(Value::Array(a)) if !a.is_empty() && a.len() <= MAX_REDIRECT_URIS => a,
        Some(Value::Array(a)) if a.len() > MAX_REDIRECT_URIS => {
            return Err(oauth_error(
                400,
                "invalid_redirect_uri",
                format!("at most {MAX_REDIRECT_URIS} redirect_uris"),
            ));
        }
        _ => {
            return Err(oauth_error(
                400,
                "invalid_redirect_uri",
                "redirect_uris must be a non-empty array of URLs",
            ));
        }
    };
    let mut redirect_uris = Vec::new();
    for uri in uris {
        let Some(uri) = uri.as_str() else {
            return Err(oauth_error(
                400,
                "invalid_redirect_uri",
                "each redirect URI must be a string",
            ));
        };
        if let Err(why) = redirect_uri_ok(uri) {
            return Err(oauth_error(
                400,
                "invalid_redirect_uri",
                format!("redirect URI {uri:?} {why}"),
            ));
        }
        redirect_uris.push(uri.to_string());
    }
    Ok(redirect_uris)
}

/// The client's name, once the rest of the metadata `meta` is one this server serves: a
/// public client of the code flow with the one scope.
fn checked_name(meta: &Map<String, Value>) -> Result<String, Response> {
    match meta.get("token_endpoint_auth_method") {
        None | Some(Value::Null) => {}
        Some(Value::String(m)) if m == "none" => {}
        Some(other) => {
            return Err(oauth_error(
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
                return Err(oauth_error(
                    400,
                    "invalid_client_metadata",
                    format!("{member} may only contain {}", allowed.join(", ")),
                ));
            }
        }
    }
    if let Some(scope) = meta.get("scope").and_then(Value::as_str)
        && !scope_ok(scope)
    {
        return Err(oauth_error(
            400,
            "invalid_client_metadata",
            format!("the only scope is {SCOPE:?}"),
        ));
    }
    match meta.get("client_name") {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) if s.chars().count() <= 200 => Ok(s.trim().to_string()),
        Some(_) => Err(oauth_error(
            400,
            "invalid_client_metadata",
            "client_name must be a string of at most 200 characters",
        )),
    }
}
