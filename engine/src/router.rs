//! Maps (origin, method, path) to a handler. Unknown paths answer 404; a known path
//! with another method answers 405 with `Allow`.

use crate::http::{ApiError, ApiResult};
#[allow(unused_imports)]
use crate::prelude::*;
use crate::{Cx, Origin, Request, Response, admin, agents, auth, docs, hooks, recipients};

/// Dispatches one request.
pub fn route(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let path = req.path.strip_suffix('/').unwrap_or(&req.path);
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let method = req.method.as_str();
    if let Some(answer) = agents::route(cx, req, &segments) {
        return answer;
    }
    match (req.origin, segments.as_slice()) {
        (_, ["v1", "auth"]) => only(method, "POST", || auth::login(cx, req)),
        (_, ["v1", "refresh"]) => only(method, "GET", || auth::refresh(cx, req)),
        (_, ["v1", "refresh", entity]) => {
            only(method, "GET", || auth::refresh_entity(cx, req, entity))
        }
        (_, ["v1", "test"]) => only(method, "GET", || auth::test(cx, req)),
        (_, ["v1", "signing-certificate"]) => {
            only(method, "GET", || docs::evidence::signing_certificate(cx))
        }
        (_, ["v1", "verify"]) => only(method, "POST", || docs::evidence::verify(cx, req)),
        (_, ["v1", "users", "me"]) => only(method, "GET", || auth::me(cx, req)),
        (_, ["v1", "revoke"]) => only(method, "GET", || auth::revoke(cx, req)),
        (_, ["v1", "documents", rest @ ..]) => docs::route(cx, req, rest),
        (_, ["v1", "upload"]) => only(method, "POST", || docs::uploads::create(cx, req)),
        (_, ["v1", "upload", id]) => only(method, "GET", || docs::uploads::get(cx, req, id)),
        (_, ["v1", "templates", rest @ ..]) => docs::templates::route(cx, req, rest),
        (_, ["v1", "products"]) => docs::products::route(cx, req),
        (_, ["v1", "subscriptions", rest @ ..]) => hooks::route(cx, req, rest),
        // The signing page's assets, and the page behind each recipient's mailed link.
        (_, ["s", "_", name]) => only(method, "GET", || {
            recipients::page::asset(name)
                .ok_or_else(|| ApiError::not_found("not_found", "no such asset"))
        }),
        (_, ["s", secret]) => Ok(recipients::page_route(cx, req, secret)),
        (_, ["v1", "recipient", secret, rest @ ..]) => {
            let mut resp = match recipients::route(cx, req, secret, rest) {
                Ok(r) => r,
                Err(e) => e.into_response(),
            };
            recipients::page::safety_headers(&mut resp.headers);
            Ok(resp)
        }
        (_, ["v1", "eid", "return", session]) => only(method, "GET", || {
            let (location, cookie) = recipients::verify::eid_return(cx, req, session)?;
            let mut resp = Response {
                status: 303,
                headers: vec![("location".into(), location), ("set-cookie".into(), cookie)],
                body: Vec::new(),
            };
            recipients::page::safety_headers(&mut resp.headers);
            Ok(resp)
        }),
        (Origin::Admin, ["admin", rest @ ..]) => admin::route(cx, req, rest),
        _ => Err(ApiError::not_found(
            "not_found",
            format!("no such endpoint: {} {}", req.method, req.path),
        )),
    }
}

/// Runs `f` when `method` is `allowed`; otherwise 405 naming the allowed method.
pub fn only(
    method: &str,
    allowed: &str,
    f: impl FnOnce() -> ApiResult<Response>,
) -> ApiResult<Response> {
    if method == allowed {
        f()
    } else {
        Err(method_not_allowed(method, &[allowed]))
    }
}

pub fn method_not_allowed(method: &str, allowed: &[&str]) -> ApiError {
    ApiError::new(
        405,
        "method_not_allowed",
        format!("{method} is not allowed here; use {}", allowed.join(" or ")),
    )
    .with_header("allow", allowed.join(", "))
}
