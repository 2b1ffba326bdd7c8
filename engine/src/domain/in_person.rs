//! In-person signing (issue 51 item 4): the document's owner or an entity admin hands
//! their own device to a signer or approver, who signs there on their own link. The
//! hand-over is in the audit trail (`in_person_signing`, by the host, naming the
//! recipient) and the audit certificate shows it among the recipient's acts: signed in
//! person, hosted by whom.

use crate::base::cx::Cx;
use crate::base::http::{ApiError, ApiResult, Client};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::access;
use crate::domain::auth::Principal;
use crate::domain::document::{Recipient, Role, store_doc};
use crate::domain::recipient_states::{self, Move};
use crate::domain::{links, roster, trail};

/// The trail's action for a hand-over.
pub const ACTION: &str = "in_person_signing";

/// The start of a hand-over's trail detail, which names its recipient.
fn detail_start(rid: &str) -> String {
    format!("recipient {rid} ")
}

/// Whether trail entry `e` is a hand-over to recipient `rid`.
pub fn hands_over_to(e: &crate::domain::document::LogEntry, rid: &str) -> bool {
    e.action == ACTION && e.actor_type == "user" && e.detail.starts_with(&detail_start(rid))
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
    let mut doc = access::readable(cx, pr, id)?;
    if !access::access(cx, pr, &doc).owner_or_admin {
        return Err(ApiError::forbidden(
            "access_denied",
            "only the document's owner or an admin may host signing in person",
        ));
    }
    let i = roster::position(&doc, rid)?;
    let act = match doc.recipients[i].role {
        Role::Signer => Move::Sign,
        Role::Approver | Role::ExternalApprover => Move::Approve,
        Role::Cc => {
            return Err(ApiError::bad_request(
                "invalid_recipient",
                format!("recipient {rid} is a CC recipient: they neither sign nor approve"),
            ));
        }
    };
    recipient_states::may(&doc, i, act)?;
    if links::secret(cx, &doc.id, &doc.recipients[i]).is_none() {
        return Err(ApiError::new(
            409,
            "not_sent",
            format!("recipient {rid} has no link yet"),
        ));
    }
    let before = doc.clone();
    let actor = trail::Actor::user(pr, client);
    let detail = format!(
        "{}({}) signs in person on the device of {}",
        detail_start(rid),
        doc.recipients[i].fullname(),
        actor.name
    );
    trail::log(cx, &mut doc, &actor, ACTION, detail, None);
    store_doc(cx, Some(&before), &mut doc);
    Ok(doc.recipients.swap_remove(i))
}
