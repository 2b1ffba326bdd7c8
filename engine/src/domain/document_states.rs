//! The document state machine (spec §3.3, `docs/interface.md`): every move a document
//! makes, the statuses it may start from, the condition it also needs, where it leads
//! and the event it emits, in one table, [`MOVES`]. Handlers ask it — [`may`] (the
//! 400/403/409 a refused move answers), [`allowed`], [`next`], [`apply`] — and never
//! match on a document's status themselves (issue 49). Recipient statuses (spec §3.2)
//! are not in this table: their moves are `domain::recipient_states`' table.
//!
//! The table also holds the moves the engine makes itself, which no handler asks (their
//! answer when refused is never given): an import back (`Imported`, `ImportedArchive`,
//! `ImportFailed`), a send started (`Schedule`, `Process`), a render back
//! (`SendRendered`, `SealRendered`, `RenderFailed`) and invitations that reach a sealed
//! or bounced document's recipients (`MarkSent`, `Resend`). A new document's first
//! status is not a move: [`created`].
//!
//! The sets of statuses a move starts from:
//!
//! | set | statuses |
//! |---|---|
//! | `DRAFT` | draft |
//! | `UNSENT` | draft, importing |
//! | `IMPORTING` | importing |
//! | `RENDERING_SEND` | draft, processing, scheduled (a send's render under way) |
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
    /// Job `doc.import`: every file imported; the document is a draft (and is sent on
    /// when it asks for automatic sending).
    Imported,
    /// Job `doc.import-archive`: every file of an archive upload imported.
    ImportedArchive,
    /// Job `doc.import` or `doc.import-archive`: a file failed; the document is a draft
    /// with the files before it (the owner is told).
    ImportFailed,
    /// A send whose time is still to come (`is_scheduled_sending`): the job
    /// `doc.scheduled-send` asks for its render then.
    Schedule,
    /// A send by someone other than the document's owner: `processing` while its
    /// render is made (an owner's draft stays a draft meanwhile).
    Process,
    /// A send's render is back ([`Move::Send`]'s second half): out with its recipients.
    SendRendered,
    /// A seal's render is back ([`Move::Seal`]'s second half).
    SealRendered,
    /// A send's or a scheduled send's render failed: a draft again (the owner is told).
    RenderFailed,
    /// A sealed document's recipients are sent it for the first time (a batch of
    /// recipients, or a revision sent); no `document.sent` event (spec §3.3).
    MarkSent,
    /// A bounced document whose every bounced recipient was sent it again.
    Resend,
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
    /// No recipient's invitation bounced.
    NoneBounced,
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

use Status::{
    Archived, Draft, Expired, Hardbounced, Importing, Lost, Processing, Recalled, Scheduled,
    Sealed, Sent,
};
use sets::{
    ACTIVE, ANY, BEGUN, DRAFT, IMPORTING, NOT_RECALLED, OPEN, OUT, PRICED, RENDERING_SEND, UNSENT,
};

/// The sets of statuses a move starts from (see the module's table).
#[rustfmt::skip]
mod sets {
    use super::Status::{self, *};
    pub const DRAFT: &[Status] = &[Draft];
    pub const UNSENT: &[Status] = &[Draft, Importing];
    pub const IMPORTING: &[Status] = &[Importing];
    pub const RENDERING_SEND: &[Status] = &[Draft, Processing, Scheduled];
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

/// The answer of a move the engine makes itself (a job, a render back): no handler asks
/// it, so it is never given.
const NOT_ASKED: Refusal = (409, "invalid_status", "a {} document cannot make this move");

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
    row(Move::Imported,         IMPORTING,    When::Always,   To::Now(Draft),          Some("document.imported"),  NOT_ASKED),
    row(Move::ImportedArchive,  IMPORTING,    When::Always,   To::Now(Archived),       Some("document.imported"),  NOT_ASKED),
    row(Move::ImportFailed,     IMPORTING,    When::Always,   To::Now(Draft),          None,                       NOT_ASKED),
    row(Move::Schedule,         DRAFT,        When::Always,   To::Now(Scheduled),      None,                       NOT_ASKED),
    row(Move::Process,          DRAFT,        When::Always,   To::Now(Processing),     None,                       NOT_ASKED),
    row(Move::SendRendered,     RENDERING_SEND, When::Always, To::Now(Sent),           Some("document.sent"),      NOT_ASKED),
    row(Move::SealRendered,     DRAFT,        When::Always,   To::Now(Sealed),         Some("document.sealed"),    NOT_ASKED),
    row(Move::RenderFailed,     &[Processing, Scheduled], When::Always, To::Now(Draft), None,                      NOT_ASKED),
    row(Move::MarkSent,         &[Sealed],    When::Always,   To::Now(Sent),           None,                       NOT_ASKED),
    row(Move::Resend,           &[Hardbounced], When::NoneBounced, To::Now(Sent),      None,                       NOT_ASKED),
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
    row.from.contains(&doc.status) && holds(doc, row.when)
}

/// Whether `doc` meets the condition `when`.
fn holds(doc: &Document, when: When) -> bool {
    match when {
        When::Always => true,
        When::NoRender => doc.pending.is_none(),
        When::NoneBounced => !doc
            .recipients
            .iter()
            .any(|r| r.status == RecipientStatus::Hardbounced),
    }
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
        When::NoneBounced if !holds(doc, row.when) => {
            let (status, code, text) = row.refused;
            Err(ApiError::new(
                status,
                code,
                text.replace("{}", doc.status.as_str()),
            ))
        }
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

/// Sets `doc`'s status where `m` leads now (moves that lead on later, or stay, leave it),
/// whatever its status is: the caller has asked [`may`], [`allowed`] or [`possible`]
/// first where the move depends on it.
pub fn apply(doc: &mut Document, m: Move) {
    match next(m) {
        To::Now(s) => doc.status = s,
        To::SentIfSealed if doc.status == Sealed => doc.status = Sent,
        To::BeforeExpiry => doc.status = doc.status_before_expiry.take().unwrap_or(Sent),
        _ => {}
    }
}

/// A new document's first status: `importing` when it is created with files to import
/// (job `doc.import` or `doc.import-archive` brings them), else `draft`. Not a move: the
/// document did not exist before.
pub fn created(doc: &mut Document, importing: bool) {
    doc.status = if importing { Importing } else { Draft };
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

    fn doc_in(s: Status) -> Document {
        Document {
            status: s,
            ..Document::default()
        }
    }

    /// `m` is allowed from exactly `from`, and leads from each of them to `to`.
    fn moves_from(m: Move, from: &[Status], to: Status) {
        for s in Status::ALL {
            assert_eq!(
                allowed(&doc_in(s), m),
                from.contains(&s),
                "{m:?} from {s:?}"
            );
        }
        for &s in from {
            let mut d = doc_in(s);
            apply(&mut d, m);
            assert_eq!(d.status, to, "{m:?} from {s:?}");
        }
    }

    #[test]
    fn a_new_document_is_a_draft_or_importing() {
        let mut d = doc_in(Status::Sent);
        created(&mut d, false);
        assert_eq!(d.status, Draft);
        created(&mut d, true);
        assert_eq!(d.status, Importing);
    }

    #[test]
    fn imported_files_make_a_draft() {
        moves_from(Move::Imported, &[Importing], Draft);
        assert_eq!(event(Move::Imported), Some("document.imported"));
    }

    #[test]
    fn an_imported_archive_upload_is_archived() {
        moves_from(Move::ImportedArchive, &[Importing], Archived);
        assert_eq!(event(Move::ImportedArchive), Some("document.imported"));
    }

    #[test]
    fn a_failed_import_leaves_a_draft_and_no_event() {
        moves_from(Move::ImportFailed, &[Importing], Draft);
        assert_eq!(event(Move::ImportFailed), None);
    }

    #[test]
    fn a_send_to_come_is_scheduled() {
        moves_from(Move::Schedule, &[Draft], Scheduled);
        assert_eq!(event(Move::Schedule), None);
    }

    #[test]
    fn a_send_by_another_is_processing() {
        moves_from(Move::Process, &[Draft], Processing);
        assert_eq!(event(Move::Process), None);
    }

    #[test]
    fn a_send_rendered_is_sent() {
        moves_from(Move::SendRendered, &[Draft, Processing, Scheduled], Sent);
        assert_eq!(event(Move::SendRendered), Some("document.sent"));
    }

    #[test]
    fn a_seal_rendered_is_sealed() {
        moves_from(Move::SealRendered, &[Draft], Sealed);
        assert_eq!(event(Move::SealRendered), Some("document.sealed"));
    }

    #[test]
    fn a_failed_render_makes_a_send_a_draft_again() {
        moves_from(Move::RenderFailed, &[Processing, Scheduled], Draft);
        assert_eq!(event(Move::RenderFailed), None);
        assert!(
            !allowed(&doc_in(Draft), Move::RenderFailed),
            "a seal's draft stays"
        );
    }

    #[test]
    fn a_sealed_document_sent_its_recipients_is_sent() {
        moves_from(Move::MarkSent, &[Sealed], Sent);
        assert_eq!(event(Move::MarkSent), None, "no document.sent (spec §3.3)");
    }

    #[test]
    fn a_bounced_document_reaching_everyone_again_is_sent() {
        use crate::domain::document::Role;
        use crate::domain::recipient_states::created as recipient;
        moves_from(Move::Resend, &[Hardbounced], Sent);
        assert_eq!(event(Move::Resend), None);
        let mut d = doc_in(Hardbounced);
        d.recipients = vec![
            recipient("a".into(), Role::Signer, 1),
            recipient("b".into(), Role::Signer, 1),
        ];
        d.recipients[0].status = RecipientStatus::Sent;
        d.recipients[1].status = RecipientStatus::Hardbounced;
        assert!(!possible(&d, Move::Resend), "one still bounced");
        assert!(may(&d, Move::Resend).is_err());
        d.recipients[1].status = RecipientStatus::Sent;
        assert!(possible(&d, Move::Resend));
        assert!(may(&d, Move::Resend).is_ok());
    }
}
