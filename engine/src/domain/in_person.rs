//! Signing on the sender's own device (issue 51 items 4 and 5).
//!
//! - In person: the document's owner or an entity admin hands their device to a signer
//!   or approver, who signs there on their own link. The hand-over is in the audit trail
//!   (`in_person_signing`, by the host, naming the recipient).
//! - Self-signing: the owner or an admin who is themselves a signer or approver of the
//!   document (first, or the only one) signs in the app, without waiting for the
//!   invitation mail (`self_signing`, by the sender, naming their recipient).
//!
//! The audit certificate shows either among the recipient's acts.

use crate::base::cx::Cx;
use crate::base::http::{ApiError, ApiResult, Client};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::access;
use crate::domain::auth::Principal;
use crate::domain::document::{Document, LogEntry, Recipient, Role, store_doc};
use crate::domain::recipient_states::{self, Move};
use crate::domain::{links, roster, trail};

/// The trail's action for a hand-over.
pub const ACTION: &str = "in_person_signing";

/// The trail's action for the sender opening their own signing page in the app.
pub const SELF_ACTION: &str = "self_signing";

/// The start of a hand-over's trail detail, which names its recipient.
fn detail_start(rid: &str) -> String {
    format!("recipient {rid} ")
}

/// Whether trail entry `e` is a hand-over to recipient `rid`.
pub fn hands_over_to(e: &LogEntry, rid: &str) -> bool {
    e.action == ACTION && e.actor_type == "user" && e.detail.starts_with(&detail_start(rid))
}

/// Whether trail entry `e` is recipient `rid`'s sender opening their own signing page.
pub fn self_signs(e: &LogEntry, rid: &str) -> bool {
    e.action == SELF_ACTION && e.actor_type == "user" && e.detail.starts_with(&detail_start(rid))
}

/// The caller may open a signing page on their device: the owner or an admin.
fn owner_or_admin(cx: &mut Cx, pr: &Principal, doc: &Document, what: &str) -> ApiResult<()> {
    if access::access(cx, pr, doc).owner_or_admin {
        return Ok(());
    }
    Err(ApiError::forbidden(
        "access_denied",
        format!("only the document's owner or an admin may {what}"),
    ))
}

/// What recipient `i` does on their page: sign or approve (a CC recipient neither).
fn act_of(doc: &Document, i: usize) -> ApiResult<Move> {
    match doc.recipients[i].role {
        Role::Signer => Ok(Move::Sign),
        Role::Approver | Role::ExternalApprover => Ok(Move::Approve),
        Role::Cc => Err(ApiError::bad_request(
            "invalid_recipient",
            format!(
                "recipient {} is a CC recipient: they neither sign nor approve",
                doc.recipients[i].id
            ),
        )),
    }
}

/// Recipient `i` may act now and has a link to act on.
fn ready(cx: &mut Cx, doc: &Document, i: usize) -> ApiResult<()> {
    recipient_states::may(doc, i, act_of(doc, i)?)?;
    if links::secret(cx, &doc.id, &doc.recipients[i]).is_none() {
        return Err(ApiError::new(
            409,
            "not_sent",
            format!("recipient {} has no link yet", doc.recipients[i].id),
        ));
    }
    Ok(())
}

/// Writes `action` in the trail with `detail`, stores the document and answers
/// recipient `i`.
fn opened(
    cx: &mut Cx,
    mut doc: Document,
    actor: &trail::Actor,
    action: &str,
    detail: String,
    i: usize,
) -> Recipient {
    let before = doc.clone();
    trail::log(cx, &mut doc, actor, action, detail, None);
    store_doc(cx, Some(&before), &mut doc);
    doc.recipients.swap_remove(i)
}

/// Hands document `id`'s recipient `rid` the host's device: checks that the caller is
/// the owner or an admin and that the recipient may sign or approve now, writes the
/// hand-over in the trail, and answers the recipient (whose link the handler shows).
pub fn host(
    cx: &mut Cx,
    pr: &Principal,
    client: Client,
    id: &str,
    rid: &str,
) -> ApiResult<Recipient> {
    let doc = access::readable(cx, pr, id)?;
    owner_or_admin(cx, pr, &doc, "host signing in person")?;
    let i = roster::position(&doc, rid)?;
    ready(cx, &doc, i)?;
    let actor = trail::Actor::user(pr, client);
    let detail = format!(
        "{}({}) signs in person on the device of {}",
        detail_start(rid),
        doc.recipients[i].fullname(),
        actor.name
    );
    Ok(opened(cx, doc, &actor, ACTION, detail, i))
}

/// The caller's own place among document `id`'s signers and approvers: the recipient
/// with their email who may act now (the first of them), or else the first with it.
fn own_place(doc: &Document, email: &str) -> ApiResult<usize> {
    let mine: Vec<usize> = (0..doc.recipients.len())
        .filter(|&i| {
            let r = &doc.recipients[i];
            r.role != Role::Cc && !email.is_empty() && r.email.eq_ignore_ascii_case(email)
        })
        .collect();
    let now = mine
        .iter()
        .copied()
        .find(|&i| act_of(doc, i).is_ok_and(|m| recipient_states::may(doc, i, m).is_ok()));
    now.or(mine.first().copied()).ok_or_else(|| {
        ApiError::forbidden(
            "not_a_recipient",
            format!("{email} is not a signer or approver of this document"),
        )
    })
}

/// Opens the caller's own signing page on document `id`: the caller is its owner or an
/// admin and one of its signers or approvers (by their email), whose turn it is. The
/// trail says the sender signs in the app; answers their recipient.
pub fn self_sign(cx: &mut Cx, pr: &Principal, client: Client, id: &str) -> ApiResult<Recipient> {
    let doc = access::readable(cx, pr, id)?;
    owner_or_admin(cx, pr, &doc, "sign it in the app")?;
    let i = own_place(&doc, &pr.user.email)?;
    ready(cx, &doc, i)?;
    let actor = trail::Actor::user(pr, client);
    let detail = format!(
        "{}({}) is the sender, signing in the app",
        detail_start(&doc.recipients[i].id),
        doc.recipients[i].fullname(),
    );
    Ok(opened(cx, doc, &actor, SELF_ACTION, detail, i))
}
