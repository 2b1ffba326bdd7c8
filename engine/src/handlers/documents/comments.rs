//! Comments of users on a document (recipients comment through their link).

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, json, no_content};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::access::{access, readable, writable};
use crate::domain::auth::Principal;
use crate::domain::comments;
use crate::domain::document::store_doc;
use crate::domain::trail;
use crate::handlers::shapes::comment_json;
use serde_json::json;

/// `POST /v1/documents/{id}/comments` (body `text`, `internal`?, `suggestion`?).
pub fn comment(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let mut doc = readable(cx, pr, id)?;
    let f = req.body_fields()?;
    let text = f.required_str("text")?;
    let suggestion = f.optional_bool("suggestion")?.unwrap_or(false);
    // Checked even when a suggestion makes it moot: a bad member is a 400 either way.
    let internal = f.optional_bool("internal")?.unwrap_or(false);
    if suggestion && !access(cx, pr, &doc).write {
        return Err(http::ApiError::forbidden(
            "access_denied",
            "only those who may change the document can make a suggestion (it blocks sending)",
        ));
    }
    let before = doc.clone();
    let actor = trail::Actor::user(pr, req.client());
    let c = comments::add_by_user(cx, &mut doc, pr, (text, internal, suggestion), &actor);
    store_doc(cx, Some(&before), &mut doc);
    // GetAccept answers `{comment_id}`; the comment itself comes with it.
    let mut out = comment_json(&c);
    out["comment_id"] = json!(c.id);
    Ok(json(200, &out))
}

/// `POST /v1/documents/{id}/comments/{comment}/resolve`.
pub fn resolve_comment(cx: &mut Cx, pr: &Principal, id: &str, cid: &str) -> ApiResult<Response> {
    let doc = writable(cx, pr, id)?;
    if comments::resolve(cx, &doc.id, cid) {
        return Ok(no_content());
    }
    Err(http::ApiError::not_found(
        "comment_not_found",
        format!("no comment {cid}"),
    ))
}
