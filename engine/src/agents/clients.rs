//! Who may ask for access: clients registered with `POST /register` (RFC 7591, public
//! clients only) and clients whose `client_id` is the `https` URL of a Client ID Metadata
//! Document (fetched by the host, validated here, cached for an hour).

use super::oauth::oauth_error;
use super::{Client, SCOPE, client_key, scope_ok};
use crate::http::{ApiResult, json};
#[allow(unused_imports)]
use crate::prelude::*;
use crate::util::new_id;
use crate::{Cx, Request, Response};
use serde_json::{Value, json};

const MAX_REDIRECT_URIS: usize = 10;

const MAX_URI_LEN: usize = 2000;

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

pub(super) fn is_loopback(url: &url::Url) -> bool {
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
pub(super) fn find_client(cx: &mut Cx, client_id: &str) -> Result<Client, String> {
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
        && !scope_ok(scope)
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
