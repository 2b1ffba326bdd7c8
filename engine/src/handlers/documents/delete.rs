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
use crate::domain::document::{Document, store_doc};
use crate::domain::document_states::{self as states, Move};
use crate::domain::events::emit_and_log;
use crate::domain::{accounts, trail};
use serde_json::json;

/// `POST /v1/documents/{id}/lost`: idempotent; one `document.lost` event.
pub fn lost(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let doc = writable(cx, pr, id)?;
    if states::already(&doc, Move::MarkLost) {
        return Ok(no_content());
    }
    end_with(cx, pr, doc, Move::MarkLost, "marked as lost")
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
    if states::on_delete(cx, &doc) == Move::Erase {
        if !a.owner_or_admin {
            return Err(access::doc_not_found(id));
        }
        permanently_delete(cx, &doc);
        return Ok(no_content());
    }
    if !a.write {
        return Err(access::doc_not_found(id));
    }
    end_with(cx, pr, doc, Move::Recall, "recalled by delete")
}

/// Makes `m` (mark lost, recall): the status it leads to, any render cancelled, its
/// event; 204.
fn end_with(
    cx: &mut Cx,
    pr: &Principal,
    mut doc: Document,
    m: Move,
    detail: &str,
) -> ApiResult<Response> {
    let before = doc.clone();
    states::apply(&mut doc, m);
    doc.pending = None;
    let kind = states::event(m).expect("an ending move emits an event");
    let action = kind.trim_start_matches("document.");
    emit_and_log(
        cx,
        &mut doc,
        &trail::Actor::user(pr, http::Client::default()),
        kind,
        action,
        detail,
        json!({}),
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(no_content())
}
