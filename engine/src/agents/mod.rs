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
mod forms;
mod mcp;
mod oauth;
mod tokens;
mod tools;

pub use oauth::{FORGET_JOB, forget};

use crate::http::{ApiResult, json};
#[allow(unused_imports)]
use crate::prelude::*;
use crate::router::only;
use crate::{Cx, Request, Response};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The only scope: everything the person may do in the chosen entity.
pub const SCOPE: &str = "basic";

/// Dispatches the agent path's routes; `None` when `segments` is not one of them.
pub fn route(cx: &mut Cx, req: &Request, segments: &[&str]) -> Option<ApiResult<Response>> {
    let m = req.method.as_str();
    Some(match segments {
        [".well-known", "oauth-protected-resource"]
        | [".well-known", "oauth-protected-resource", "mcp"] => {
            only(m, "GET", || Ok(cors(json(200, &resource_metadata(cx)))))
        }
        [".well-known", "oauth-authorization-server"]
        | [".well-known", "oauth-authorization-server", "mcp"]
        | [".well-known", "openid-configuration"] => {
            only(m, "GET", || Ok(cors(json(200, &server_metadata(cx)))))
        }
        ["register"] => only(m, "POST", || clients::register(cx, req).map(cors)),
        ["authorize"] => Ok(authorize::authorize(cx, req)),
        ["token"] => only(m, "POST", || Ok(cors(tokens::token(cx, req)))),
        ["revoke"] => only(m, "POST", || Ok(cors(tokens::revoke(cx, req)))),
        ["mcp"] => Ok(mcp::handle(cx, req)),
        ["v1", "users", "me", "connections"] => only(m, "GET", || tokens::connections(cx, req)),
        ["v1", "users", "me", "connections", client] => {
            only(m, "DELETE", || tokens::disconnect(cx, req, client))
        }
        _ => return None,
    })
}

/// Browser-based agents read the metadata and call the token endpoint from another
/// origin; these answers carry no cookies and no user data, so any origin may read them.
fn cors(mut resp: Response) -> Response {
    resp.headers
        .push(("access-control-allow-origin".into(), "*".into()));
    resp
}

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

/// RFC 9728 protected resource metadata.
fn resource_metadata(cx: &mut Cx) -> serde_json::Value {
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
fn server_metadata(cx: &mut Cx) -> serde_json::Value {
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
    format!("oac/{}", crate::util::sha256_hex(id.as_bytes())).into_bytes()
}
pub fn family_key(id: &str) -> Vec<u8> {
    crate::util::key(&["oaf", id])
}
pub fn user_family_key(user: &str, family: &str) -> Vec<u8> {
    crate::util::key(&["oafu", user, family])
}
pub fn access_key(hash: &str) -> Vec<u8> {
    crate::util::key(&["oat", hash])
}
pub fn refresh_key(hash: &str) -> Vec<u8> {
    crate::util::key(&["oart", hash])
}
