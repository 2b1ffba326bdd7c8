//! The OAuth error answer of RFC 6749 §5.2 / RFC 7591 §3.2.2 that `/register` and
//! `/token` give: `{"error", "error_description"}`, never cached.

use crate::base::api::Response;
use crate::base::http::json;
#[allow(unused_imports)]
use crate::base::prelude::*;
use serde_json::json;

/// An RFC 6749 §5.2 / RFC 7591 §3.2.2 error: `{"error", "error_description"}`.
pub fn oauth_error(status: u16, error: &str, description: impl Into<String>) -> Response {
    let mut resp = json(
        status,
        &json!({ "error": error, "error_description": description.into() }),
    );
    resp.headers
        .push(("cache-control".into(), "no-store".into()));
    resp
}
