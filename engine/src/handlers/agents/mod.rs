//! The agent path (spec §5.2): an OAuth 2.1 authorization server for public clients
//! and the MCP endpoint it protects.
//!
//! - `GET /.well-known/oauth-protected-resource[/mcp]` (RFC 9728) and
//!   `GET /.well-known/oauth-authorization-server` (RFC 8414): where to go.
//! - `POST /register` (RFC 7591): public clients, [`clients::register`].
//! - `GET|POST /authorize`: the sign-in and consent pages, [`authorize::authorize`].
//! - `POST /token`, `POST /revoke` (RFC 6749, 7009): [`tokens::token`], [`tokens::revoke`].
//! - `GET|DELETE /v1/users/me/connections[/{client}]`: a person's connected agents, and
//!   disconnecting one.
//! - `POST|GET|DELETE /mcp`: MCP over streamable HTTP, [`mcp::handle`].
//!
//! Every token of this path is audience-bound to `<base>/mcp`: it is stored under its
//! own prefix, so REST bearer tokens are unknown here and these are unknown on `/v1`.

mod authorize;
mod clients;
mod errors;
mod forms;
mod mcp;
mod tokens;
mod tools;

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::Router;
use crate::base::http::{ApiResult, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::oauth::SCOPE;
use crate::domain::oauth::base;
use serde_json::json;

/// `GET /.well-known/oauth-protected-resource[/mcp]`.
pub fn resource_metadata(cx: &mut Cx) -> ApiResult<Response> {
    Ok(cors(json(200, &resource_metadata_json(cx))))
}

/// `GET /.well-known/oauth-authorization-server[/mcp]` and
/// `/.well-known/openid-configuration`.
pub fn server_metadata(cx: &mut Cx) -> ApiResult<Response> {
    Ok(cors(json(200, &server_metadata_json(cx))))
}

/// `POST /register`: dynamic client registration.
pub fn register(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    clients::register(cx, req).map(cors)
}

/// `GET` and `POST /authorize`.
pub fn authorize(cx: &mut Cx, req: &Request) -> Response {
    authorize::authorize(cx, req)
}

/// `POST /token`.
pub fn token(cx: &mut Cx, req: &Request) -> Response {
    cors(tokens::token(cx, req))
}

/// `POST /revoke`.
pub fn revoke(cx: &mut Cx, req: &Request) -> Response {
    cors(tokens::revoke(cx, req))
}

/// `/mcp`: the MCP endpoint, which hands its tools' REST requests to `router`.
pub fn mcp(cx: &mut Cx, req: &Request, router: Router) -> Response {
    mcp::handle(cx, req, router)
}

/// `GET /v1/users/me/connections`.
pub fn connections(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    tokens::connections(cx, req)
}

/// `DELETE /v1/users/me/connections/{client_id}`.
pub fn disconnect(cx: &mut Cx, req: &Request, client: &str) -> ApiResult<Response> {
    tokens::disconnect(cx, req, client)
}

/// Browser-based agents read the metadata and call the token endpoint from another
/// origin; these answers carry no cookies and no user data, so any origin may read them.
fn cors(mut resp: Response) -> Response {
    resp.headers
        .push(("access-control-allow-origin".into(), "*".into()));
    resp
}

/// RFC 9728 protected resource metadata.
fn resource_metadata_json(cx: &mut Cx) -> serde_json::Value {
    let base = base(cx);
    json!({
        "resource": format!("{base}/mcp"),
        "authorization_servers": [base],
        "scopes_supported": [SCOPE],
        "bearer_methods_supported": ["header"],
        "resource_name": "esign",
        "resource_documentation": format!("{base}/.well-known/oauth-authorization-server"),
    })
}

/// RFC 8414 authorization server metadata, with the spec's `agent_auth` member.
fn server_metadata_json(cx: &mut Cx) -> serde_json::Value {
    let base = base(cx);
    json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "revocation_endpoint": format!("{base}/revoke"),
        "scopes_supported": [SCOPE],
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "authorization_response_iss_parameter_supported": true,
        "client_id_metadata_document_supported": true,
        "agent_auth": {
            "register_uri": format!("{base}/register"),
            "skill": format!("{base}/mcp"),
            "identity_types_supported": ["anonymous"],
        },
    })
}
