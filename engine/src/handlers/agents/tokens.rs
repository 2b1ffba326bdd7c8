//! `/token` (the `authorization_code` and `refresh_token` grants), `/revoke`, and a
//! person's connected agents. Every exchange creates or rotates the tokens of one
//! grant (a family); a replayed code or refresh token revokes the whole family.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, json, no_content};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records;
use crate::base::util::{self, new_id, new_secret, sha256_hex};
use crate::domain::auth;
use crate::domain::oauth::{
    Code, Family, Grant, SCOPE, access_key, code_key, constant_eq, family_key, find_client,
    forget_at, is_our_resource, oauth_error, refresh_key, scope_ok, user_family_key,
};
use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// How long a refresh token lives unused: 30 days.
const REFRESH_TTL_MS: u64 = 30 * 24 * 3600 * 1000;

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
        && !is_our_resource(cx, &target)
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
                && !scope_ok(&scope)
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

#[expect(
    clippy::too_many_lines,
    reason = "older than the 70-line rule (issue 49)"
)]
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
    let Ok(client) = find_client(cx, client_id) else {
        return oauth_error(401, "invalid_client", "unknown client_id");
    };
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
        mark_revoked(cx, family);
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
    // The form as every body is read (`Request::body_fields`: the members' limits of
    // `base::limits`, stated in openapi.json), its refusals in RFC 6749's shape; a
    // body too complex to read stays the API's 413.
    let form = match req.body_fields() {
        Ok(form) => form,
        Err(e) if e.status == 413 => return e.into_response(),
        Err(e) => return oauth_error(400, "invalid_request", e.description),
    };
    let Some(token) = form.optional_str("token").ok().flatten() else {
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
    let (start, end) = records::prefix_range(&format!("oafu/{user_id}/"));
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
            "connected_at": util::iso8601(f.created_ms),
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
            mark_revoked(cx, f);
            found = true;
        }
    }
    if !found {
        return Err(http::ApiError::not_found(
            "connection_not_found",
            "no connected agent with that client_id",
        ));
    }
    Ok(no_content())
}
