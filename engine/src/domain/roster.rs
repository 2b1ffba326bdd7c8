//! A document's recipients after create (`PUT`/`DELETE .../recipients/{rid}`): what a
//! removal takes with it. Whether a recipient may be corrected or removed is the
//! recipient state machine's (`recipient_states`: `Correct`, `Remove`).

use crate::base::cx::Cx;
use crate::base::http::{ApiError, ApiResult};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::document::Document;
use crate::domain::trail::{Actor, log};
use crate::domain::{fields, links};

/// The index of recipient `rid` of `doc`; 404 `recipient_not_found` when there is none.
pub fn position(doc: &Document, rid: &str) -> ApiResult<usize> {
    doc.recipients
        .iter()
        .position(|r| r.id == rid)
        .ok_or_else(|| ApiError::not_found("recipient_not_found", format!("no recipient {rid}")))
}

/// Removes recipient `i` of `doc` (asked of the machine by the caller) with the fields
/// assigned to them — nobody else may fill them, and a required one would stand
/// unfilled on the final PDF — and their link, which stops working at once; trail
/// `recipient_removed`.
pub fn remove(cx: &mut Cx, doc: &mut Document, i: usize, actor: &Actor) {
    let r = doc.recipients.remove(i);
    let mut fields = fields::load(cx, &doc.id);
    let count = fields.len();
    fields.retain(|f| f.recipient_id != r.id);
    if fields.len() != count {
        fields::save(cx, &doc.id, &fields);
    }
    if let Some(key) = links::key_of(cx, &doc.id, &r) {
        cx.p.delete(&key);
    }
    log(
        cx,
        doc,
        actor,
        "recipient_removed",
        format!("recipient {} ({})", r.id, r.fullname()),
        None,
    );
}
