//! `/token` (the `authorization_code` and `refresh_token` grants), `/revoke`, and a
//! person's connected agents. Every exchange creates or rotates the tokens of one
//! grant (a family); a replayed code or refresh token revokes the whole family.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, json, no_content};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util;
use crate::domain::auth;
use crate::domain::oauth::{self, Issued, Refusal, SCOPE, is_our_resource, scope_ok};
use crate::handlers::agents::errors::oauth_error;
use serde_json::{Value, json};

/// The parameters of a form body, each at most once.
fn form(req: &Request) -> Result<Vec<(String, String)>, Response> {
    let fields: Vec<(String, String)> = form_urlencoded::parse(&req.body).into_owned().collect();
    let mut seen = Vec::new();
    for (k, _) in &fields {
        if seen.contains(&k) {
            return Err(oauth_error(
                400,
                "invalid_request",
                format!("parameter {k} is repeated"),
            ));
        }
        seen.push(k);
    }
    Ok(fields)
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
    let fields = match form(req) {
        Ok(fields) => fields,
        Err(resp) => return resp,
    };
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
        Some("authorization_code") => {
            let (Some(code), Some(verifier)) = (get("code"), get("code_verifier")) else {
                return oauth_error(
                    400,
                    "invalid_request",
                    "code and code_verifier are required",
                );
            };
            let redirect_uri = get("redirect_uri");
            answer(oauth::exchange_code(
                cx,
                &client_id,
                &code,
                redirect_uri.as_deref(),
                &verifier,
            ))
        }
        Some("refresh_token") => {
            if let Some(scope) = get("scope")
                && !scope_ok(&scope)
            {
                return oauth_error(400, "invalid_scope", "the only scope is basic");
            }
            let Some(refresh) = get("refresh_token") else {
                return oauth_error(400, "invalid_request", "refresh_token is required");
            };
            answer(oauth::rotate(cx, &client_id, &refresh))
        }
        Some(other) => oauth_error(
            400,
            "unsupported_grant_type",
            format!("grant_type {other:?} is not supported"),
        ),
        None => oauth_error(400, "invalid_request", "grant_type is required"),
    }
}

/// The answer of `/token`: the new token pair, or the refusal in RFC 6749's shape.
fn answer(issued: Result<Issued, Refusal>) -> Response {
    let t = match issued {
        Ok(t) => t,
        Err(r) => return oauth_error(r.status, r.error, r.description),
    };
    let mut resp = json(
        200,
        &json!({
            "access_token": t.access,
            "token_type": "Bearer",
            "expires_in": t.expires_in,
            "refresh_token": t.refresh,
            "scope": SCOPE,
        }),
    );
    resp.headers
        .push(("cache-control".into(), "no-store".into()));
    resp.headers.push(("pragma".into(), "no-cache".into()));
    resp
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
    oauth::revoke_token(cx, &token);
    let mut resp = json(200, &json!({}));
    resp.headers
        .push(("cache-control".into(), "no-store".into()));
    resp
}

/// `GET /v1/users/me/connections`: the agents the caller has connected (REST token).
pub fn connections(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let pr = auth::authenticate(cx, req)?;
    let mut list: Vec<Value> = Vec::new();
    for f in oauth::live_families(cx, &pr.user.id) {
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
    if !oauth::disconnect(cx, &pr.user.id, client_id) {
        return Err(http::ApiError::not_found(
            "connection_not_found",
            "no connected agent with that client_id",
        ));
    }
    Ok(no_content())
}
