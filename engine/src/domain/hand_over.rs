//! A signer hands their part to someone else (issue 51 item 6; GetAccept's signature
//! transfer), when the sender allows it (`is_signing_forward`): on their own link,
//! after their identity checks. The new signer takes their place in the order and
//! their fields, and must pass the same checks of their own (an SMS or email code, an
//! eID); a question and answer meant for the first signer cannot be handed on (409).
//! The transfer is the sender's `forward` with `transfer` (`sending::forward`), made by
//! the recipient: `document.forwarded` in the trail, and in the audit certificate among
//! the first signer's acts.

use crate::base::cx::Cx;
use crate::base::http::{ApiError, ApiResult};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::document::Document;
use crate::domain::document_states::{self, Move as DocMove};
use crate::domain::identity::{self, Checks};
use crate::domain::sending::{self, ForwardTo, Forwarded};
use crate::domain::trail::Actor;

/// Whom a signer hands their part to, as they named them.
pub struct NewSigner {
    pub first_name: String,
    pub last_name: String,
    pub email: String,
    pub mobile: String,
    pub message: String,
}

fn bad(code: &'static str, text: impl Into<String>) -> ApiError {
    ApiError::bad_request(code, text)
}

/// Whom `n` reaches: a valid email, a valid mobile, or both (at least one).
fn reach(n: &NewSigner) -> ApiResult<ForwardTo> {
    let to = ForwardTo::checked(
        Some(n.email.clone()),
        Some(n.mobile.clone()),
        "whom to hand over to",
    )?;
    if n.first_name.trim().is_empty() && n.last_name.trim().is_empty() {
        return Err(bad(
            "missing_field",
            "give the `first_name` or `last_name` of whom to hand over to",
        ));
    }
    Ok(to)
}

/// The checks the new signer passes: the first signer's code and eID checks, with none
/// of their progress; `Err` when a question and answer was asked of the first signer.
fn carried(old: Option<Checks>) -> ApiResult<Option<Checks>> {
    let Some(old) = old else { return Ok(None) };
    if old.qna.is_some() {
        return Err(ApiError::new(
            409,
            "hand_over_not_possible",
            "the sender asked you a question only you can answer: ask them to transfer your part",
        ));
    }
    Ok(Some(Checks {
        code: old.code,
        eid: old.eid,
        ..Checks::default()
    }))
}

/// Recipient `i` of `doc` hands their part to `n` (`actor` is the recipient): refused
/// with 403 `hand_over_not_allowed` unless the sender allows it, and as the sender's
/// transfer is refused otherwise. The new signer gets their link (and their invitation
/// when it is their turn).
pub fn hand_over(
    cx: &mut Cx,
    doc: &mut Document,
    i: usize,
    actor: &Actor,
    n: NewSigner,
) -> ApiResult<()> {
    if !doc.flags.is_signing_forward {
        return Err(ApiError::forbidden(
            "hand_over_not_allowed",
            "the sender does not let signers hand their part to someone else",
        ));
    }
    let to = reach(&n)?;
    document_states::may(doc, DocMove::Forward)?;
    document_states::may(doc, DocMove::TransferRights)?;
    let old_id = doc.recipients[i].id.clone();
    let from = sending::check_forward(doc, &to, Some(&old_id))?;
    let checks = carried(identity::load(cx, &doc.id, &old_id))?;
    let new = Forwarded {
        to,
        first_name: n.first_name.trim().to_string(),
        last_name: n.last_name.trim().to_string(),
        message: n.message,
    };
    sending::forward(cx, doc, actor, new, from);
    if let (Some(c), Some(r)) = (checks, doc.recipients.last()) {
        identity::save(cx, &doc.id, &r.id, &c);
    }
    Ok(())
}
