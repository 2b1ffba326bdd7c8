//! The document state machine (spec §3.3, `docs/interface.md`): every move a document
//! makes, the statuses it may start from, the condition it also needs, where it leads
//! and the event it emits, in one table, [`MOVES`]. Handlers ask it — [`may`] (the
//! 400/403/409 a refused move answers), [`allowed`], [`next`], [`apply`] — and never
//! match on a document's status themselves (issue 49). Recipient statuses (spec §3.2)
//! are not in this table: their moves are `domain::recipient_states`' table.
//!
//! The sets of statuses a move starts from:
//!
//! | set | statuses |
//! |---|---|
//! | `DRAFT` | draft |
//! | `UNSENT` | draft, importing |
//! | `ACTIVE` | sealed, sent, viewed, reviewed, hardbounced ([`Status::is_active`]) |
//! | `OUT` | `ACTIVE`, signed, signedwithoutverification |
//! | `OPEN` | all but signed, signedwithoutverification, recalled, lost, rejected, archived |
//! | `PRICED` | `OPEN`, archived |
//! | `BEGUN` | all but draft, importing, signed, signedwithoutverification |
//! | `NOT_RECALLED` | all but recalled |
//! | `ANY` | every status |

use crate::base::cx::Cx;
use crate::base::http::{ApiError, ApiResult};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::document::{Document, RecipientStatus, Status};
use crate::domain::trail;

/// What can happen to a document, named after the interface's verbs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    /// `POST .../send`.
    Send,
    /// `POST .../seal`.
    Seal,
    /// `POST .../recipients/send`: a batch of a sealed or sent document's recipients.
    SendToRecipients,
    /// `POST .../forward` (as CC).
    Forward,
    /// `POST .../forward` with `transfer`: a recipient's signing rights handed on.
    TransferRights,
    /// `POST .../revisions`.
    Revise,
    /// `POST .../reminders`.
    Remind,
    /// `DELETE` of a document sent (see [`on_delete`]).
    Recall,
    /// `DELETE` of a recalled document or a draft never sent: removed permanently.
    Erase,
    /// `POST .../lost`; already lost: no effect, no new event.
    MarkLost,
    /// `POST .../manually-sign` with the signed file.
    SignManually,
    /// `POST .../manually-sign` without a file.
    SignManuallyWithoutFile,
    /// `POST .../expiration`.
    ChangeExpiration,
    /// An expired document given a new expiration date is open again.
    Reopen,
    /// Job `doc.expire`: an active document past its expiration date.
    Expire,
    /// `PUT .../pricing-tables`.
    ChangePricing,
    /// `PUT` of what only a draft may change (external ids, an attachment's file).
    EditDraft,
    /// `PUT`/`POST .../fields`: a draft's fields, placed on its pages (not while its
    /// seal or send renders: they are drawn already).
    EditFields,
}

/// Where a move leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum To {
    /// There at once.
    Now(Status),
    /// Unchanged until the render it asks for finishes, then there.
    AfterRender(Status),
    /// Sent, from sealed; unchanged from any other status.
    SentIfSealed,
    /// The status it had before it expired (sent if not known).
    BeforeExpiry,
    /// Unchanged.
    Same,
    /// Removed permanently.
    Gone,
}

/// What a move needs beyond its starting status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Always,
    /// No render under way (400 `document_processing`).
    NoRender,
}

/// The answer to a move refused for its status: HTTP status, error code, text (`{}`
/// is the document's status).
pub type Refusal = (u16, &'static str, &'static str);

/// One move of the machine.
pub struct Row {
    pub verb: Move,
    pub from: &'static [Status],
    pub when: When,
    pub to: To,
    pub event: Option<&'static str>,
    pub refused: Refusal,
}

use Status::{Expired, Importing, Lost, Recalled, Sealed, Sent};
use sets::{ACTIVE, ANY, BEGUN, DRAFT, NOT_RECALLED, OPEN, OUT, PRICED, UNSENT};

/// The sets of statuses a move starts from (see the module's table).
#[rustfmt::skip]
mod sets {
    use super::Status::{self, *};
    pub const DRAFT: &[Status] = &[Draft];
    pub const UNSENT: &[Status] = &[Draft, Importing];
    pub const ACTIVE: &[Status] = &[Sealed, Sent, Viewed, Reviewed, Hardbounced];
    pub const OUT: &[Status] = &[Sealed, Sent, Viewed, Reviewed, Hardbounced, Signed, SignedWithoutVerification];
    pub const OPEN: &[Status] = &[Draft, Importing, Processing, Scheduled, Sealed, Sent, Viewed, Reviewed, Hardbounced, Expired];
    pub const PRICED: &[Status] = &[Draft, Importing, Processing, Scheduled, Sealed, Sent, Viewed, Reviewed, Hardbounced, Expired, Archived];
    pub const BEGUN: &[Status] = &[Processing, Scheduled, Sealed, Sent, Viewed, Reviewed, Hardbounced, Expired, Recalled, Lost, Rejected, Archived];
    pub const NOT_RECALLED: &[Status] = &[Draft, Importing, Processing, Scheduled, Sealed, Sent, Viewed, Reviewed, Hardbounced, Expired, Lost, Rejected, Archived, Signed, SignedWithoutVerification];
    pub const ANY: &[Status] = &Status::ALL;
}

const fn row(
    verb: Move,
    from: &'static [Status],
    when: When,
    to: To,
    event: Option<&'static str>,
    refused: Refusal,
) -> Row {
    Row {
        verb,
        from,
        when,
        to,
        event,
        refused,
    }
}

/// The machine. Read across: move, from, condition, to, event, answer when refused (the
/// texts are those the handlers have always answered, `sended` included).
#[rustfmt::skip]
pub const MOVES: &[Row] = &[
    row(Move::Send,             DRAFT,        When::NoRender, To::AfterRender(Sent),   Some("document.sent"),      (400, "document_not_draft", "only a draft can be sended; this document is {}")),
    row(Move::Seal,             DRAFT,        When::NoRender, To::AfterRender(Sealed), None,                       (400, "document_not_draft", "only a draft can be sealed; this document is {}")),
    row(Move::SendToRecipients, ACTIVE,       When::Always,   To::SentIfSealed,        None,                       (400, "invalid_status", "recipients can be sent a sealed, sent, reviewed, viewed or hardbounced document; this one is {}")),
    row(Move::Forward,          OUT,          When::Always,   To::Same,                Some("document.forwarded"), (400, "invalid_status", "only a sealed or sent document can be forwarded; this one is {}")),
    row(Move::TransferRights,   ACTIVE,       When::Always,   To::Same,                Some("document.forwarded"), (400, "already_signed", "signing rights cannot be transferred on a signed document")),
    row(Move::Revise,           ACTIVE,       When::Always,   To::Same,                None,                       (403, "not_revisable", "only a sealed or sent document can be revised; this one is {}")),
    row(Move::Remind,           ACTIVE,       When::Always,   To::Same,                None,                       (400, "invalid_status", "reminders are for sealed or sent documents; this one is {}")),
    row(Move::Recall,           NOT_RECALLED, When::Always,   To::Now(Recalled),       Some("document.recalled"),  (409, "invalid_status", "a {} document cannot be recalled")),
    row(Move::Erase,            ANY,          When::Always,   To::Gone,                None,                       (409, "invalid_status", "a {} document cannot be deleted")),
    row(Move::MarkLost,         ANY,          When::Always,   To::Now(Lost),           Some("document.lost"),      (409, "invalid_status", "a {} document cannot be marked lost")),
    row(Move::SignManually,     BEGUN,        When::Always,   To::Now(Status::Signed),         Some("document.signed"),    (400, "invalid_status", "a {} document cannot be marked as signed")),
    row(Move::SignManuallyWithoutFile, BEGUN, When::Always,   To::Now(Status::SignedWithoutVerification),      Some("document.signed"),    (400, "invalid_status", "a {} document cannot be marked as signed")),
    row(Move::ChangeExpiration, OPEN,         When::Always,   To::Same,                None,                       (400, "invalid_status", "a {} document has no expiration to change")),
    row(Move::Reopen,           &[Expired],   When::Always,   To::BeforeExpiry,        None,                       (409, "invalid_status", "a {} document has not expired")),
    row(Move::Expire,           ACTIVE,       When::Always,   To::Now(Expired),        Some("document.expired"),   (409, "invalid_status", "a {} document does not expire")),
    row(Move::ChangePricing,    PRICED,       When::Always,   To::Same,                None,                       (400, "invalid_status", "the pricing of a {} document cannot change")),
    row(Move::EditDraft,        UNSENT,       When::Always,   To::Same,                None,                       (409, "invalid_status", "a {} document's attachments are what its recipients were given; only a draft's change")),
    row(Move::EditFields,       DRAFT,        When::NoRender, To::Same,                None,                       (400, "invalid_status", "fields can only be changed while the document is a draft; it is {}")),
];

/// The row of `m`.
pub fn row_of(m: Move) -> &'static Row {
    MOVES
        .iter()
        .find(|r| r.verb == m)
        .expect("every move has a row")
}

/// Whether `doc`'s status is one `m` starts from (its condition not asked).
pub fn allowed(doc: &Document, m: Move) -> bool {
    row_of(m).from.contains(&doc.status)
}

/// Whether `m` may happen to `doc` now: its status is one `m` starts from and the
/// condition holds (no render under way for [`When::NoRender`]). [`may`] says why not.
pub fn possible(doc: &Document, m: Move) -> bool {
    let row = row_of(m);
    row.from.contains(&doc.status) && (row.when != When::NoRender || doc.pending.is_none())
}

/// `Ok` when `m` may happen to `doc` now; else the answer the handler gives. A move
/// that starts from a draft, asked of a document still importing, answers 400
/// `document_importing`.
pub fn may(doc: &Document, m: Move) -> ApiResult<()> {
    let row = row_of(m);
    if !row.from.contains(&doc.status) {
        if doc.status == Importing && row.from == DRAFT {
            let verb = if m == Move::Seal { "seal" } else { "send" };
            return Err(ApiError::bad_request(
                "document_importing",
                format!(
                    "the document is still importing its files; poll its status until draft, then {verb}"
                ),
            ));
        }
        let (status, code, text) = row.refused;
        return Err(ApiError::new(
            status,
            code,
            text.replace("{}", doc.status.as_str()),
        ));
    }
    match row.when {
        When::NoRender if doc.pending.is_some() => Err(ApiError::bad_request(
            "document_processing",
            "the document is already being sealed or sent",
        )),
        _ => Ok(()),
    }
}

/// Where `m` leads.
pub fn next(m: Move) -> To {
    row_of(m).to
}

/// The event `m` emits, if any.
pub fn event(m: Move) -> Option<&'static str> {
    row_of(m).event
}

/// Whether `doc` is already where `m` leads (a lost document marked lost again).
pub fn already(doc: &Document, m: Move) -> bool {
    next(m) == To::Now(doc.status)
}

/// Sets `doc`'s status where `m` leads now (moves that lead on later, or stay, leave it).
pub fn apply(doc: &mut Document, m: Move) {
    match next(m) {
        To::Now(s) => doc.status = s,
        To::SentIfSealed if doc.status == Sealed => doc.status = Sent,
        To::BeforeExpiry => doc.status = doc.status_before_expiry.take().unwrap_or(Sent),
        _ => {}
    }
}

/// Sealed and not yet sent: its recipients have their links from the sender, and no
/// invitation is mailed to them.
pub fn sealed_only(doc: &Document) -> bool {
    doc.status == Sealed
}

/// What a `DELETE` of `doc` does (spec §3.3): [`Move::Erase`] for a draft never sent
/// (not sent, not sealed — sealing hands out links —, no recipient has done anything;
/// a send still rendering or scheduled counts as not sent) and for a recalled
/// document, also one recalled and then marked lost; else [`Move::Recall`].
pub fn on_delete(cx: &mut Cx, doc: &Document) -> Move {
    let never_sent = doc.send_ms.is_none()
        && doc.status != Sealed
        && doc
            .recipients
            .iter()
            .all(|r| r.status == RecipientStatus::Added);
    let recalled = doc.status == Recalled
        || (doc.status == Lost
            && trail::entries(cx, &doc.id)
                .iter()
                .any(|c| c.entry.action == "recalled"));
    if recalled || never_sent {
        Move::Erase
    } else {
        Move::Recall
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_move_has_one_row() {
        for r in MOVES {
            assert_eq!(MOVES.iter().filter(|o| o.verb == r.verb).count(), 1);
        }
    }

    #[test]
    fn fields_change_on_a_draft_not_rendering() {
        use crate::domain::document::{Pending, RenderPurpose};
        let mut d = Document::default();
        assert!(possible(&d, Move::EditFields));
        d.pending = Some(Pending {
            purpose: RenderPurpose::Seal,
            seq: 1,
            message: String::new(),
        });
        assert!(!possible(&d, Move::EditFields), "its seal is rendering");
        d.pending = None;
        for s in [
            Status::Importing,
            Status::Sealed,
            Status::Sent,
            Status::Signed,
        ] {
            d.status = s;
            assert!(!possible(&d, Move::EditFields), "{s:?}");
        }
        d.status = Status::Sealed;
        assert!(possible(&d, Move::Remind));
    }

    #[test]
    fn the_sets_say_what_the_statuses_say() {
        for s in Status::ALL {
            assert_eq!(ACTIVE.contains(&s), s.is_active(), "{s:?}");
            use Status::{Archived, Draft, Rejected};
            let ended = s.is_signed() || matches!(s, Recalled | Lost | Rejected);
            assert_eq!(PRICED.contains(&s), !ended, "{s:?}");
            assert_eq!(OPEN.contains(&s), !ended && s != Archived, "{s:?}");
            assert_eq!(OUT.contains(&s), s.is_active() || s.is_signed(), "{s:?}");
            let unsigned_begun = !s.is_signed() && !matches!(s, Draft | Importing);
            assert_eq!(BEGUN.contains(&s), unsigned_begun, "{s:?}");
            assert_eq!(NOT_RECALLED.contains(&s), s != Recalled, "{s:?}");
        }
    }
}
