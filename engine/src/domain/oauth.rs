//! OAuth 2.1 for agents (spec §5.2): the clients (registered, or Client ID Metadata
//! Documents), consented grants and their tokens, authorization codes, the audience and
//! scope rules, the refusals of RFC 6749 §5.2 / RFC 7591 (answered by
//! `handlers::agents::errors`), and the scheduling of expired records' removal. The
//! routes are `handlers::agents` (`clients`, `authorize`, `tokens`, `mcp`).
//!
//! Records (all values `base::records`-encoded):
//!
//! | key | value |
//! |---|---|
//! | `oac/{sha256(client_id)}` | [`Client`] (registered, or a cached metadata document) |
//! | `oareq/{sha256(cookie)}` | [`AuthRequest`]: one browser's pending authorization (`/authorize`) |
//! | `oacode/{sha256(code)}` | [`Code`] |
//! | `oaf/{family}`, `oafu/{user}/{family}` | [`Family`] and its index |
//! | `oat/{sha256}`, `oart/{sha256}` | [`Grant`]: access and refresh tokens |

use crate::base::cx::Cx;
use crate::base::http::ApiResult;
use crate::base::keyspace::{OAC, OACODE, OAF, OAFU, OAREQ, OART, OAT};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::prefix_range;
use crate::base::{job_kinds, util};
use crate::domain::{accounts, auth};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// How long a pending authorization and an unused code live: 10 minutes.
pub const CODE_TTL_MS: u64 = 10 * 60 * 1000;

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

pub fn code_key(hash: &str) -> Vec<u8> {
    util::key(&[OACODE, hash])
}

pub fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub fn forget_at(cx: &mut Cx, key: Vec<u8>, at_ms: u64) {
    cx.schedule_at(job_kinds::OAUTH_FORGET, key, at_ms);
}

/// The only scope: everything the person may do in the chosen entity.
pub const SCOPE: &str = "basic";

/// The public base URL without a trailing slash: the issuer.
pub fn base(cx: &mut Cx) -> String {
    cx.settings().base_url.trim_end_matches('/').to_string()
}

/// The protected resource: `<base>/mcp`.
pub fn resource(cx: &mut Cx) -> String {
    format!("{}/mcp", base(cx))
}

/// Where the protected resource's metadata is (the `WWW-Authenticate` parameter).
pub fn resource_metadata_url(cx: &mut Cx) -> String {
    format!("{}/.well-known/oauth-protected-resource/mcp", base(cx))
}

/// Whether a space-separated `scope` asks only for [`SCOPE`] (or nothing).
pub fn scope_ok(scope: &str) -> bool {
    scope.split(' ').all(|s| s.is_empty() || s == SCOPE)
}

/// Whether an RFC 8707 `resource` names this server's `/mcp`.
pub fn is_our_resource(cx: &mut Cx, target: &str) -> bool {
    target.trim_end_matches('/') == resource(cx)
}

/// Whether an `Origin` header names this server's origin (the base URL).
pub fn is_our_origin(cx: &mut Cx, origin: &str) -> bool {
    origin.trim_end_matches('/') == base(cx)
}

/// A registered public client (`oac/{client_id}`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Client {
    pub id: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
    pub created_ms: u64,
}

/// One consented grant: the tokens issued from one authorization code, rotated
/// together (`oaf/{family}`, indexed by `oafu/{user}/{family}`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Family {
    pub id: String,
    pub client_id: String,
    pub client_name: String,
    pub user_id: String,
    pub entity_id: String,
    pub scope: String,
    pub created_ms: u64,
    pub revoked: bool,
}

/// A bearer token of a family (`oat/{sha256}` access, `oart/{sha256}` refresh).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Grant {
    pub family: String,
    pub expires_ms: u64,
    /// Refresh tokens: already exchanged (a second use revokes the family).
    pub used: bool,
}

pub fn client_key(id: &str) -> Vec<u8> {
    format!("{OAC}/{}", util::sha256_hex(id.as_bytes())).into_bytes()
}

pub fn family_key(id: &str) -> Vec<u8> {
    util::key(&[OAF, id])
}

pub fn user_family_key(user: &str, family: &str) -> Vec<u8> {
    util::key(&[OAFU, user, family])
}

pub fn access_key(hash: &str) -> Vec<u8> {
    util::key(&[OAT, hash])
}

pub fn refresh_key(hash: &str) -> Vec<u8> {
    util::key(&[OART, hash])
}

/// Most redirect URIs a client may name, and the longest one.
pub const MAX_REDIRECT_URIS: usize = 10;
pub const MAX_URI_LEN: usize = 2000;

/// Whether `uri` may be a redirect URI: absolute `https`, or `http` to a loopback host
/// (RFC 8252 §7.3), without a fragment.
pub fn redirect_uri_ok(uri: &str) -> Result<url::Url, String> {
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

pub fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// How long a fetched Client ID Metadata Document is used before it is fetched again.
pub const METADATA_CACHE_MS: u64 = 3600 * 1000;

/// The client `client_id` names: a registered one, or, for an `https` URL, the Client
/// ID Metadata Document at that URL (fetched by the host, validated here, cached for an
/// hour). The error is a sentence for the person at the browser.
pub fn find_client(cx: &mut Cx, client_id: &str) -> Result<Client, String> {
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
pub fn client_from_metadata(url: &str, text: &str, now: u64) -> Result<Client, String> {
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

/// How long a refresh token lives unused: 30 days.
const REFRESH_TTL_MS: u64 = 30 * 24 * 3600 * 1000;

/// A refusal of `/token`, answered in RFC 6749's shape (`handlers::agents::errors`).
#[derive(Debug)]
pub struct Refusal {
    pub status: u16,
    pub error: &'static str,
    pub description: String,
}

/// `invalid_grant` (400) with `description`.
fn invalid_grant(description: impl Into<String>) -> Refusal {
    Refusal {
        status: 400,
        error: "invalid_grant",
        description: description.into(),
    }
}

/// A new access and refresh token pair; the access token lives `expires_in` seconds.
pub struct Issued {
    pub access: String,
    pub refresh: String,
    pub expires_in: u64,
}

/// The `authorization_code` grant: redeems `code` (with PKCE's `verifier`) for the
/// first token pair of a new grant (family). A replayed code revokes what its first
/// use issued (RFC 9700 §4.5.3).
pub fn exchange_code(
    cx: &mut Cx,
    client_id: &str,
    code: &str,
    redirect_uri: Option<&str>,
    verifier: &str,
) -> Result<Issued, Refusal> {
    if !(43..=128).contains(&verifier.len())
        || !verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
    {
        return Err(Refusal {
            status: 400,
            error: "invalid_request",
            description: "code_verifier must be 43 to 128 unreserved characters".into(),
        });
    }
    let Ok(client) = find_client(cx, client_id) else {
        return Err(Refusal {
            status: 401,
            error: "invalid_client",
            description: "unknown client_id".into(),
        });
    };
    let key = code_key(&util::sha256_hex(code.as_bytes()));
    let now = cx.now();
    let mut record = redeemable(cx, &key, client_id, redirect_uri, verifier, now)?;
    if let Err(e) = auth::principal(cx, &record.user_id, &record.entity_id, String::new()) {
        return Err(invalid_grant(e.description));
    }
    let family = util::new_id(cx);
    record.family = family.clone();
    cx.save(&key, &record);
    let fam = Family {
        id: family.clone(),
        client_id: client.id,
        client_name: client.name,
        user_id: record.user_id.clone(),
        entity_id: record.entity_id.clone(),
        scope: SCOPE.into(),
        created_ms: now,
        revoked: false,
    };
    cx.save(&family_key(&family), &fam);
    cx.p.put(&user_family_key(&fam.user_id, &family), b"");
    Ok(issue(cx, &family))
}

/// The code stored at `key`, if `client_id` may redeem it now with `verifier`.
fn redeemable(
    cx: &mut Cx,
    key: &[u8],
    client_id: &str,
    redirect_uri: Option<&str>,
    verifier: &str,
    now: u64,
) -> Result<Code, Refusal> {
    let Some(record) = cx.load::<Code>(key) else {
        return Err(invalid_grant("the code is unknown or expired"));
    };
    if !record.family.is_empty() {
        revoke_family(cx, &record.family.clone());
        return Err(invalid_grant(
            "the code was already used; the tokens it gave are revoked",
        ));
    }
    if record.expires_ms <= now {
        return Err(invalid_grant(
            "the code has expired (codes live 10 minutes)",
        ));
    }
    if record.client_id != client_id {
        return Err(invalid_grant("the code was issued to another client"));
    }
    if redirect_uri.is_some_and(|r| r != record.redirect_uri) {
        return Err(invalid_grant(
            "redirect_uri differs from the authorization request's",
        ));
    }
    let digest = Sha256::digest(verifier.as_bytes());
    let expected = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
    if !constant_eq(expected.as_bytes(), record.challenge.as_bytes()) {
        return Err(invalid_grant(
            "code_verifier does not match the code_challenge",
        ));
    }
    Ok(record)
}

/// The `refresh_token` grant: a used-once refresh token for a new pair of its grant.
/// A second use revokes the whole grant.
pub fn rotate(cx: &mut Cx, client_id: &str, refresh: &str) -> Result<Issued, Refusal> {
    let key = refresh_key(&util::sha256_hex(refresh.as_bytes()));
    let now = cx.now();
    let unknown = || invalid_grant("the refresh token is unknown or expired");
    let mut grant = cx.load::<Grant>(&key).ok_or_else(unknown)?;
    let family = cx
        .load::<Family>(&family_key(&grant.family))
        .ok_or_else(unknown)?;
    if family.client_id != client_id {
        return Err(invalid_grant(
            "the refresh token was issued to another client",
        ));
    }
    if family.revoked {
        return Err(invalid_grant("access was revoked; authorize again"));
    }
    if grant.used {
        // A refresh token is good once: a second use means it leaked.
        mark_revoked(cx, family);
        return Err(invalid_grant(
            "the refresh token was already used; every token of this grant is revoked",
        ));
    }
    if grant.expires_ms <= now {
        return Err(invalid_grant(
            "the refresh token has expired; authorize again",
        ));
    }
    if let Err(e) = auth::principal(cx, &family.user_id, &family.entity_id, String::new()) {
        return Err(invalid_grant(e.description));
    }
    grant.used = true;
    cx.save(&key, &grant);
    Ok(issue(cx, &family.id))
}

/// A new access + refresh token pair of `family`.
fn issue(cx: &mut Cx, family: &str) -> Issued {
    let now = cx.now();
    let ttl = cx.settings().oauth_access_ttl_secs;
    let access = util::new_secret(cx);
    let refresh = util::new_secret(cx);
    let akey = access_key(&util::sha256_hex(access.as_bytes()));
    let rkey = refresh_key(&util::sha256_hex(refresh.as_bytes()));
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
    Issued {
        access,
        refresh,
        expires_in: ttl,
    }
}

fn revoke_family(cx: &mut Cx, id: &str) {
    if let Some(family) = cx.load::<Family>(&family_key(id)) {
        mark_revoked(cx, family);
    }
}

/// Revokes a loaded family: every token of it stops working.
fn mark_revoked(cx: &mut Cx, mut family: Family) {
    if !family.revoked {
        family.revoked = true;
        cx.save(&family_key(&family.id), &family);
    }
}

/// Revokes the grant of `token` (an access or a refresh token; unknown ones are let be).
pub fn revoke_token(cx: &mut Cx, token: &str) {
    let hash = util::sha256_hex(token.as_bytes());
    for key in [access_key(&hash), refresh_key(&hash)] {
        if let Some(grant) = cx.load::<Grant>(&key) {
            revoke_family(cx, &grant.family);
        }
    }
}

/// The live grants of `user_id`, newest last.
pub fn live_families(cx: &mut Cx, user_id: &str) -> Vec<Family> {
    let (start, end) = prefix_range(&format!("{OAFU}/{user_id}/"));
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

/// Revokes every grant of `user_id` to `client_id`; false when there was none.
pub fn disconnect(cx: &mut Cx, user_id: &str, client_id: &str) -> bool {
    let mut found = false;
    for f in live_families(cx, user_id) {
        if f.client_id == client_id {
            mark_revoked(cx, f);
            found = true;
        }
    }
    found
}

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

fn request_key(cookie: &str) -> Vec<u8> {
    util::key(&[OAREQ, &util::sha256_hex(cookie.as_bytes())])
}

/// What a checked `/authorize` request asks for.
pub struct Asked {
    pub redirect_uri: String,
    pub state: Option<String>,
    pub challenge: String,
}

/// Opens the pending authorization of `client` for `asked`, kept [`CODE_TTL_MS`]:
/// the secret of its cookie and its CSRF token.
pub fn open_request(cx: &mut Cx, client: &Client, asked: Asked) -> (String, String) {
    let cookie = util::new_secret(cx);
    let csrf = util::new_secret(cx);
    let expires_ms = cx.now() + CODE_TTL_MS;
    let key = request_key(&cookie);
    cx.save(
        &key,
        &AuthRequest {
            client_id: client.id.clone(),
            client_name: client.name.clone(),
            redirect_uri: asked.redirect_uri,
            state: asked.state,
            challenge: asked.challenge,
            csrf: csrf.clone(),
            user_id: None,
            expires_ms,
        },
    );
    forget_at(cx, key, expires_ms);
    (cookie, csrf)
}

/// The pending authorization of the cookie `cookie`, unless it expired or was used.
pub fn pending_request(cx: &mut Cx, cookie: &str) -> Option<AuthRequest> {
    let now = cx.now();
    cx.load::<AuthRequest>(&request_key(cookie))
        .filter(|p| p.expires_ms > now)
}

/// `user_id` signed in to the pending authorization `pending` of `cookie`.
pub fn sign_in_request(cx: &mut Cx, cookie: &str, pending: &mut AuthRequest, user_id: &str) {
    pending.user_id = Some(user_id.to_string());
    cx.save(&request_key(cookie), pending);
}

/// The person declined: the pending authorization of `cookie` ends.
pub fn deny_request(cx: &mut Cx, cookie: &str) {
    cx.p.delete(&request_key(cookie));
}

/// The person approved access to `entity_id`: refused (the error of
/// `auth::principal` or `auth::check_selectable`) unless the signed-in user may act
/// there; else the pending authorization of `cookie` ends and a single-use code is
/// issued for it, kept [`CODE_TTL_MS`].
pub fn approve_request(
    cx: &mut Cx,
    cookie: &str,
    pending: &AuthRequest,
    entity_id: String,
) -> ApiResult<String> {
    let user_id = pending.user_id.clone().unwrap_or_default();
    auth::principal(cx, &user_id, &entity_id, String::new())
        .and_then(|pr| auth::check_selectable(&pr.entity))?;
    cx.p.delete(&request_key(cookie));
    let code = util::new_secret(cx);
    let ckey = code_key(&util::sha256_hex(code.as_bytes()));
    let expires_ms = cx.now() + CODE_TTL_MS;
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
    Ok(code)
}

/// Registers a public client (`POST /register`) named `name` (empty: "An unnamed
/// agent") with its checked `redirect_uris`.
pub fn register_client(cx: &mut Cx, name: String, redirect_uris: Vec<String>) -> Client {
    let id = util::new_id(cx);
    let client = Client {
        id: id.clone(),
        name: if name.is_empty() {
            "An unnamed agent".into()
        } else {
            name
        },
        redirect_uris,
        created_ms: cx.now(),
    };
    cx.save(&client_key(&id), &client);
    client
}

/// The unexpired, unrevoked grant of the access token `secret`; else why not, a
/// sentence for `WWW-Authenticate`'s `error_description`.
pub fn access_grant(cx: &mut Cx, secret: &str) -> Result<Family, &'static str> {
    let now = cx.now();
    let Some(token) = cx.load::<Grant>(&access_key(&util::sha256_hex(secret.as_bytes()))) else {
        return Err("the access token is unknown or revoked (REST tokens are not valid here)");
    };
    if token.expires_ms <= now {
        return Err("the access token has expired");
    }
    cx.load::<Family>(&family_key(&token.family))
        .filter(|f| !f.revoked)
        .ok_or("access was revoked")
}

/// The grant a test server (`mcp_test_user`, the user with email `email`) gives MCP
/// requests without a token: the user in their default entity.
pub fn test_grant(cx: &mut Cx, email: &str) -> Option<Family> {
    let id = accounts::user_id_by_email(cx, email)?;
    let user = accounts::user(cx, &id).ok()?;
    Some(Family {
        id: "test".into(),
        client_id: "test".into(),
        client_name: "test".into(),
        entity_id: user.default_entity_id.clone()?,
        user_id: user.id,
        scope: SCOPE.into(),
        created_ms: 0,
        revoked: false,
    })
}
