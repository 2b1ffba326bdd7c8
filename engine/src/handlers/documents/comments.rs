//! Comments of users on a document (recipients comment through their link).

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, json, no_content};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::decode;
use crate::base::util::{iso8601, new_id};
use crate::domain::access::{access, readable, writable};
use crate::domain::accounts::user_name;
use crate::domain::auth::Principal;
use crate::domain::document::{Comment, comment_key, comments_prefix, store_doc};
use crate::domain::events::emit_and_log;
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
    let c = Comment {
        id: new_id(cx),
        text,
        author_type: "user".into(),
        author_id: pr.user.id.clone(),
        author_name: user_name(&pr.user),
        author_email: pr.user.email.clone(),
        created_ms: cx.now(),
        internal: suggestion || internal,
        suggestion,
        resolved: false,
    };
    cx.save(&comment_key(&doc.id, c.created_ms, &c.id), &c);
    let before = doc.clone();
    let extra = json!({"event_meta": {
        "comment_id": c.id, "created_by": c.author_name, "created_at": iso8601(c.created_ms),
        "text": c.text,
    }});
    emit_and_log(
        cx,
        &mut doc,
        &trail::Actor::user(pr, Some(req)),
        "comment.created",
        "commented",
        "comment added",
        extra,
    );
    store_doc(cx, Some(&before), &mut doc);
    // GetAccept answers `{comment_id}`; the comment itself comes with it.
    let mut out = comment_json(&c);
    out["comment_id"] = json!(c.id);
    Ok(json(200, &out))
}

/// `POST /v1/documents/{id}/comments/{comment}/resolve`.
pub fn resolve_comment(cx: &mut Cx, pr: &Principal, id: &str, cid: &str) -> ApiResult<Response> {
    let doc = writable(cx, pr, id)?;
    let (start, end) = comments_prefix(&doc.id);
    for (k, v) in cx.p.scan(&start, &end, u32::MAX, false) {
        let mut c: Comment = decode(&v);
        if c.id == cid {
            c.resolved = true;
            cx.save(&k, &c);
            return Ok(no_content());
        }
    }
    Err(http::ApiError::not_found(
        "comment_not_found",
        format!("no comment {cid}"),
    ))
}
