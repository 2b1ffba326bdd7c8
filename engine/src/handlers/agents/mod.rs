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
mod tokens;
mod tools;

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::Router;
use crate::base::http::{ApiResult, json, only};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::oauth::SCOPE;
use crate::domain::oauth::base;
use serde_json::json;

/// Dispatches the agent path's routes; `None` when `segments` is not one of them.
pub fn route(
    cx: &mut Cx,
    req: &Request,
    segments: &[&str],
    router: Router,
) -> Option<ApiResult<Response>> {
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
        ["mcp"] => Ok(mcp::handle(cx, req, router)),
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
