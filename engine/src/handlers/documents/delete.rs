//! How a document ends early: recalled or permanently deleted (`DELETE`), or marked
//! lost.

use crate::base::api::Response;
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, no_content};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::access::{self, access, readable, writable};
use crate::domain::auth::Principal;
use crate::domain::deletion::permanently_delete;
use crate::domain::document::{self, Document, Status, store_doc};
use crate::domain::events::emit_and_log;
use crate::domain::{accounts, trail};
use serde_json::json;

/// `POST /v1/documents/{id}/lost`: idempotent; one `document.lost` event.
pub fn lost(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let doc = writable(cx, pr, id)?;
    if doc.status == document::Status::Lost {
        return Ok(no_content());
    }
    end_with(
        cx,
        pr,
        doc,
        document::Status::Lost,
        "lost",
        "marked as lost",
    )
}

/// `DELETE /v1/documents/{id}`: recall a sent document, permanently delete a recalled
/// one or a draft never sent (spec §3.3, §4.2).
pub fn delete(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    if pr.entity.delete_admin_only && pr.membership.role != accounts::Role::Admin {
        return Err(http::ApiError::forbidden(
            "deletion_restricted",
            "this account lets only admins delete documents",
        ));
    }
    let doc = readable(cx, pr, id)?;
    let a = access(cx, pr, &doc);
    // Never sent: not sent, not sealed (sealing hands out links), and no recipient has
    // done anything with it; a send still rendering or scheduled counts as not sent.
    let never_sent = doc.send_ms.is_none()
        && doc.status != document::Status::Sealed
        && doc
            .recipients
            .iter()
            .all(|r| r.status == document::RecipientStatus::Added);
    // A document recalled and then marked lost has been recalled: a delete removes it,
    // as it removes a recalled one, rather than recall it twice (spec §3.3).
    let recalled = doc.status == document::Status::Recalled
        || (doc.status == document::Status::Lost
            && trail::entries(cx, &doc.id)
                .iter()
                .any(|c| c.entry.action == "recalled"));
    if recalled || never_sent {
        if !a.owner_or_admin {
            return Err(access::doc_not_found(id));
        }
        permanently_delete(cx, &doc);
        return Ok(no_content());
    }
    if !a.write {
        return Err(access::doc_not_found(id));
    }
    end_with(
        cx,
        pr,
        doc,
        document::Status::Recalled,
        "recalled",
        "recalled by delete",
    )
}

/// Moves `doc` to `status` (lost, recalled), cancels any render, records
/// `document.{action}`; 204.
fn end_with(
    cx: &mut Cx,
    pr: &Principal,
    mut doc: Document,
    status: Status,
    action: &str,
    detail: &str,
) -> ApiResult<Response> {
    let before = doc.clone();
    doc.status = status;
    doc.pending = None;
    let kind = format!("document.{action}");
    emit_and_log(
        cx,
        &mut doc,
        &trail::Actor::user(pr, None),
        &kind,
        action,
        detail,
        json!({}),
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(no_content())
}
