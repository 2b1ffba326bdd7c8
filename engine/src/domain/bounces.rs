//! A mail to a recipient bounced for good (job `mail.bounced`): the recipient state
//! machine's [`Move::Bounce`] — the recipient becomes hard-bounced, and so does a
//! document that is out with recipients; `document.hardbounced` is recorded and the
//! owner told. Correcting the address (`PUT .../recipients/{id}`) and sending to the
//! recipient again undoes it.

use crate::base::cx::Cx;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::document::{load_doc, store_doc};
use crate::domain::events::emit_and_log;
use crate::domain::recipient_states::{self, Move};
use crate::domain::{notify, trail};
use serde_json::json;

/// The mail to recipient `rid` of document `doc_id` was rejected for `reason`. A
/// recipient who got the document after all (or is gone) is left as they are.
pub fn bounced(cx: &mut Cx, doc_id: &str, rid: &str, reason: &str) {
    let Some(mut doc) = load_doc(cx, doc_id) else {
        return;
    };
    let Some(i) = doc.recipients.iter().position(|r| r.id == rid) else {
        return;
    };
    if !recipient_states::allowed(&doc, i, Move::Bounce) {
        return; // they got it after all
    }
    let before = doc.clone();
    recipient_states::apply(&mut doc, i, Move::Bounce);
    let r = doc.recipients[i].clone();
    let extra = json!({
        "recipient": {"id": r.id, "fullname": r.fullname(), "email": r.email,
                      "role": r.role.as_str(), "order_num": r.order_num.to_string()},
        "reason": reason,
    });
    let detail = format!("mail to {} bounced: {reason}", r.email);
    emit_and_log(
        cx,
        &mut doc,
        &trail::Actor::system(),
        "document.hardbounced",
        "hardbounced",
        detail,
        extra,
    );
    notify::owner_notice(
        cx,
        &doc,
        format!("\"{}\" could not be delivered to {}", doc.name, r.email),
        format!(
            "The mail to {} was rejected: {reason}\n\nCorrect the address and send the document to this recipient again.",
            r.email
        ),
    );
    store_doc(cx, Some(&before), &mut doc);
}
