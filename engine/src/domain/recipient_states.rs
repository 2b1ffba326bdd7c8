//! The recipient state machine (spec §3.2, `docs/interface.md`, which lists the statuses
//! but shows no moves: these are the moves the code makes): every move a recipient
//! makes, who may make it, the statuses it starts from, the condition it also needs,
//! where it leads (the recipient, and the document with it) and what it emits, in one
//! table, [`MOVES`]. Handlers ask it — [`may`] (the 400/403/409 a refused move
//! answers), [`allowed`], [`apply`], [`in_turn`], [`done`] — and never match on a
//! recipient's status themselves (issue 49). The document's own moves are
//! `domain::document_states`; the link's acts are carried out by
//! `domain::recipient_acts`.
//!
//! The moves, and who makes them:
//!
//! | move | by | what happens |
//! |---|---|---|
//! | `Invite` | a send's first wave (`sending::finish_send`), `POST .../recipients/send` (`sending::send_batch`), the recipient a transfer adds when it is their turn (`POST .../forward`) | their invitation is mailed; no event of its own (the document's send) |
//! | `InviteInTurn` | with a signing order, the next group once the one before is done ([`pending`], never invited yet) | their invitation is mailed |
//! | `SendRevision` | `POST .../revisions` with `send_document` (`sending::send_revision`) | the new revision is mailed |
//! | `View` | `POST .../view` | counted each time; the first time `document.viewed` |
//! | `Review` | `POST .../review` (every page read) | `document.reviewed` |
//! | `Sign`, `Approve` | `POST .../sign`, `POST .../approve` | `document.partially_signed` / `document.approved`; `document.signed` when it completes the document |
//! | `Reject` | `POST .../reject` | the document is rejected too: `document.rejected` |
//! | `Print` | `POST .../print` | `document.printed`; no status moves |
//! | `Bounce` | job `mail.bounced` | `document.hardbounced` |
//! | `Correct` | `PUT .../recipients/{rid}` | trail `recipient_updated` |
//! | `Remove` | `DELETE .../recipients/{rid}` | trail `recipient_removed` |
//! | `Transfer` | `POST .../forward` with `transfer` | the document's `TransferRights` (`document.forwarded`) |
//! | `SignManually`, `SignManuallyWithoutFile` | `POST .../manually-sign` (every chosen signer not done yet) | the document's moves of those names (`document.signed`) |
//! | `SelfSign` | `POST .../seal` of a self-sign document: the sender's own signer row | none of its own |
//!
//! A recipient is created `added`. Nothing moves a recipient to `skipped` today.
//!
//! The sets of statuses a move starts from:
//!
//! | set | statuses |
//! |---|---|
//! | `UNREACHED` | added, hardbounced |
//! | `UNREAD` | added, sent, viewed |
//! | `MAILED` | added, sent, hardbounced |
//! | `NOT_ACTED` | added, sent, viewed, hardbounced |
//! | `UNFINISHED` | added, sent, viewed, reviewed, skipped, hardbounced ([`RecipientStatus::is_finished`] not) |
//! | `REVISED` | added, sent, viewed, reviewed, hardbounced |
//! | `PENDING` | `UNFINISHED`, rejected ([`pending`]: neither signed, approved nor not required) |
//! | `UNSIGNED` | all but signed, signedwithoutverification, approved |
//! | `ANY` | every status |
//!
//! `To::Ahead(s)` moves a recipient on along added → sent → viewed → reviewed and never
//! back: from a status before `s` there, from any other unchanged.

use crate::base::http::{ApiError, ApiResult};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::normalize_email;
use crate::domain::document::{Document, Recipient, RecipientStatus, Role, Status};
use crate::domain::links::check_open;

/// What can happen to a recipient, named after the interface's verbs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    /// Sent their invitation (first wave, a batch, a transferred recipient in turn).
    Invite,
    /// With a signing order: invited once their group's turn comes.
    InviteInTurn,
    /// Sent a revision.
    SendRevision,
    /// `POST .../view`.
    View,
    /// `POST .../review`.
    Review,
    /// `POST .../sign`.
    Sign,
    /// `POST .../approve`.
    Approve,
    /// `POST .../reject`.
    Reject,
    /// `POST .../print`.
    Print,
    /// A mail to them bounced.
    Bounce,
    /// `PUT .../recipients/{rid}`: names, email, mobile corrected.
    Correct,
    /// `DELETE .../recipients/{rid}`.
    Remove,
    /// `POST .../forward` with `transfer`: their signing rights handed on (one who has
    /// signed or approved is answered 400 `already_signed` before the row's refusal).
    Transfer,
    /// `POST .../manually-sign` with the signed file.
    SignManually,
    /// `POST .../manually-sign` without a file.
    SignManuallyWithoutFile,
    /// A self-sign document sealed: the sender signs their own copy first.
    SelfSign,
}

/// Who may make a move (a recipient of another role is refused, 403, or left out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    Anyone,
    /// A signer.
    Signer,
    /// An approver, internal or external.
    Approver,
    /// A signer or an approver.
    NotCc,
}

/// What a move needs beyond its starting status and the recipient's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Always,
    /// Their first view (no `viewed_ms` yet); a later one is only counted.
    FirstView,
    /// The document is active (400 `invalid_status`: `links::check_open`).
    Open,
    /// That, and with a signing order every signer and approver before them is done
    /// (403 `not_allowed`, [`in_turn`]).
    OpenInTurn,
    /// Never invited yet (no `sent_ms`) and their group is next.
    NotInvited,
    /// The sender of a self-sign document.
    Sender,
    /// The document is not rendering (409 `document_processing`) nor ended (409
    /// `invalid_status`: a draft, an importing, scheduled, sealed or active one); once
    /// out, with a signing order not the recipient whose turn it is (409
    /// `signing_order`), and not the last one it waits on (409 `last_recipient`).
    Removable,
}

/// Where a move leads the recipient.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum To {
    /// There at once.
    Now(RecipientStatus),
    /// There from a status before it in added → sent → viewed → reviewed; unchanged
    /// from any other.
    Ahead(RecipientStatus),
    /// Unchanged.
    Same,
    /// Removed from the document.
    Gone,
}

/// Where a move leads the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocTo {
    /// Unchanged (or moved by the document's own move: see the module's table).
    Same,
    /// There at once.
    Now(Status),
    /// There from the statuses listed, unchanged from the others.
    From(&'static [Status], Status),
    /// Signed once every signer and approver is done ([`complete`]).
    SignedIfComplete,
}

/// What a move emits: an event (its kind, its trail entry's action and detail), a trail
/// entry alone, or nothing of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Emits {
    Nothing,
    Event(&'static str, &'static str, &'static str),
    Trail(&'static str),
}

/// The event of a signature or an approval that completes the document.
pub const COMPLETED: Emits = Emits::Event("document.signed", "signed", "signed by every signer");

/// The answer to a move refused for the recipient's status: HTTP status, error code,
/// text (`{}` is the recipient's status, `{rid}` their id). `None`: the move is ignored
/// (no effect, no event).
pub type Refusal = Option<(u16, &'static str, &'static str)>;

/// One move of the machine.
pub struct Row {
    pub verb: Move,
    pub who: Who,
    pub from: &'static [RecipientStatus],
    pub when: When,
    pub to: To,
    pub doc: DocTo,
    pub emits: Emits,
    pub refused: Refusal,
}

use RecipientStatus::{
    Approved, Hardbounced, NotRequired, Rejected, Reviewed, Sent, Signed,
    SignedWithoutVerification, Viewed,
};
use sets::{ANY, MAILED, NOT_ACTED, PENDING, REVISED, UNFINISHED, UNREACHED, UNREAD, UNSIGNED};

/// The sets of statuses a move starts from (see the module's table), and the
/// document's statuses a recipient's move takes the document from.
#[rustfmt::skip]
mod sets {
    use super::RecipientStatus::{self, *};
    use super::Status;
    pub const UNREACHED: &[RecipientStatus] = &[Added, Hardbounced];
    pub const UNREAD: &[RecipientStatus] = &[Added, Sent, Viewed];
    pub const MAILED: &[RecipientStatus] = &[Added, Sent, Hardbounced];
    pub const NOT_ACTED: &[RecipientStatus] = &[Added, Sent, Viewed, Hardbounced];
    pub const UNFINISHED: &[RecipientStatus] = &[Added, Sent, Viewed, Reviewed, Skipped, Hardbounced];
    pub const REVISED: &[RecipientStatus] = &[Added, Sent, Viewed, Reviewed, Hardbounced];
    pub const PENDING: &[RecipientStatus] = &[Added, Sent, Viewed, Reviewed, Rejected, Skipped, Hardbounced];
    pub const UNSIGNED: &[RecipientStatus] = &[Added, Sent, Viewed, Reviewed, Rejected, Skipped, NotRequired, Hardbounced];
    pub const ANY: &[RecipientStatus] = &[Added, Sent, Viewed, Reviewed, Approved, Signed, SignedWithoutVerification, Rejected, Skipped, NotRequired, Hardbounced];
    /// The document's statuses a first view, a review, a bounce move it on from.
    pub const DOC_UNOPENED: &[Status] = &[Status::Sealed, Status::Sent];
    pub const DOC_UNREAD: &[Status] = &[Status::Sealed, Status::Sent, Status::Viewed];
    pub const DOC_REACHED: &[Status] = &[Status::Sent, Status::Viewed, Status::Reviewed];
    /// A recipient may be removed from these: not out yet, or out.
    pub const DOC_NOT_OUT: &[Status] = &[Status::Draft, Status::Importing];
    pub const DOC_OUT: &[Status] = &[Status::Scheduled, Status::Sealed, Status::Sent, Status::Viewed, Status::Reviewed, Status::Hardbounced];
}

#[allow(clippy::too_many_arguments)]
const fn row(
    verb: Move,
    who: Who,
    from: &'static [RecipientStatus],
    when: When,
    to: To,
    doc: DocTo,
    emits: Emits,
    refused: Refusal,
) -> Row {
    Row {
        verb,
        who,
        from,
        when,
        to,
        doc,
        emits,
        refused,
    }
}

const fn ev(kind: &'static str, action: &'static str, detail: &'static str) -> Emits {
    Emits::Event(kind, action, detail)
}

const NONE: Emits = Emits::Nothing;

/// The machine. Read across: move, who, from, condition, to, the document, what it
/// emits, the answer when refused for the status (`None`: ignored). The bounce's detail
/// is the address and the reason.
#[rustfmt::skip]
pub const MOVES: &[Row] = &[
    row(Move::Invite,       Who::Anyone,   UNREACHED,  When::Always,     To::Now(Sent),        DocTo::Same, NONE, Some((400, "invalid_recipient", "the recipient {rid} is already {}"))),
    row(Move::InviteInTurn, Who::NotCc,    PENDING,    When::NotInvited, To::Ahead(Sent),      DocTo::Same, NONE, None),
    row(Move::SendRevision, Who::Anyone,   REVISED,    When::Always,     To::Ahead(Sent),      DocTo::Same, NONE, None),
    row(Move::View,         Who::Anyone,   ANY,        When::FirstView,  To::Ahead(Viewed),    DocTo::From(sets::DOC_UNOPENED, Status::Viewed),  ev("document.viewed", "viewed", "opened by the recipient"), None),
    row(Move::Review,       Who::Anyone,   UNREAD,     When::Open,       To::Now(Reviewed),    DocTo::From(sets::DOC_UNREAD, Status::Reviewed),  ev("document.reviewed", "reviewed", "every page read"), None),
    row(Move::Sign,         Who::Signer,   UNFINISHED, When::OpenInTurn, To::Now(Signed),      DocTo::SignedIfComplete, ev("document.partially_signed", "partially_signed", "signed by a recipient; others are still to sign"), Some((400, "invalid_status", "you are already {}"))),
    row(Move::Approve,      Who::Approver, UNFINISHED, When::OpenInTurn, To::Now(Approved),    DocTo::SignedIfComplete, ev("document.approved", "approved", "approved by the recipient"), Some((400, "invalid_status", "you are already {}"))),
    row(Move::Reject,       Who::NotCc,    UNFINISHED, When::Open,       To::Now(Rejected),    DocTo::Now(Status::Rejected), ev("document.rejected", "rejected", "rejected by the recipient"), Some((400, "invalid_status", "you are {}; there is nothing left to reject"))),
    row(Move::Print,        Who::Anyone,   ANY,        When::Always,     To::Same,             DocTo::Same, ev("document.printed", "printed", "printed by the recipient"), None),
    row(Move::Bounce,       Who::Anyone,   MAILED,     When::Always,     To::Now(Hardbounced), DocTo::From(sets::DOC_REACHED, Status::Hardbounced), ev("document.hardbounced", "hardbounced", "mail to {} bounced: {}"), None),
    row(Move::Correct,      Who::Anyone,   UNREACHED,  When::Always,     To::Same,             DocTo::Same, Emits::Trail("recipient_updated"), Some((400, "invalid_recipient", "the recipient is already {}; only added or hard-bounced recipients can be corrected"))),
    row(Move::Remove,       Who::Anyone,   NOT_ACTED,  When::Removable,  To::Gone,             DocTo::Same, Emits::Trail("recipient_removed"), Some((409, "recipient_acted", "the recipient is already {}; only a recipient who has not acted can be removed"))),
    row(Move::Transfer,     Who::NotCc,    UNFINISHED, When::Always,     To::Now(NotRequired), DocTo::Same, NONE, Some((400, "invalid_recipient", "this recipient is {}; they have no rights to transfer"))),
    row(Move::SignManually, Who::Signer,   UNSIGNED,   When::Always,     To::Now(Signed),      DocTo::Same, NONE, None),
    row(Move::SignManuallyWithoutFile, Who::Signer, UNSIGNED, When::Always, To::Now(SignedWithoutVerification), DocTo::Same, NONE, None),
    row(Move::SelfSign,     Who::Signer,   ANY,        When::Sender,     To::Now(Signed),      DocTo::Same, NONE, None),
];

/// The row of `m`.
pub fn row_of(m: Move) -> &'static Row {
    MOVES
        .iter()
        .find(|r| r.verb == m)
        .expect("every move has a row")
}

/// Whether a recipient of `role` makes moves `who` names.
pub fn fits(who: Who, role: Role) -> bool {
    match who {
        Who::Anyone => true,
        Who::Signer => role == Role::Signer,
        Who::Approver => role.approves(),
        Who::NotCc => role != Role::Cc,
    }
}

/// Whether recipient `i` of `doc` is where `m` starts from and meets the condition that
/// would otherwise leave the move without effect (a view that is not the first): the
/// move changes something. Refusals are [`may`]'s.
pub fn allowed(doc: &Document, i: usize, m: Move) -> bool {
    let row = row_of(m);
    let r = &doc.recipients[i];
    row.from.contains(&r.status) && (row.when != When::FirstView || r.viewed_ms.is_none())
}

/// Whether `m` takes recipient `i` of `doc` along when it is made of several at once (a
/// seal's self-sign, a manual signature): their role fits, their status is one it
/// starts from, and [`When::Sender`]'s condition holds. Refuses nothing.
pub fn takes(doc: &Document, i: usize, m: Move) -> bool {
    let row = row_of(m);
    let r = &doc.recipients[i];
    fits(row.who, r.role)
        && row.from.contains(&r.status)
        && (row.when != When::Sender
            || normalize_email(&r.email) == normalize_email(&doc.sender.email))
}

fn forbidden(why: impl Into<String>) -> ApiError {
    ApiError::forbidden("not_allowed", why.into())
}

fn conflict(code: &'static str, text: impl Into<String>) -> ApiError {
    ApiError::new(409, code, text)
}

/// `Ok` when `m` may be asked of recipient `i` of `doc` now (it may still be without
/// effect: [`allowed`]); else the answer the handler gives. In this order: the
/// document's condition, the recipient's role (the 403s are the link's acts'), their
/// status, their turn.
pub fn may(doc: &Document, i: usize, m: Move) -> ApiResult<()> {
    let row = row_of(m);
    let r = &doc.recipients[i];
    let out = match row.when {
        When::Open | When::OpenInTurn => {
            check_open(doc)?;
            false
        }
        When::Removable => removable_document(doc)?,
        _ => false,
    };
    if !fits(row.who, r.role) {
        return Err(forbidden(match row.who {
            Who::Signer => "only a recipient with the role signer can sign",
            Who::Approver => "only a recipient with the role approver can approve",
            _ => "a CC recipient cannot reject the document",
        }));
    }
    if !row.from.contains(&r.status) {
        if let Some((status, code, text)) = row.refused {
            return Err(ApiError::new(
                status,
                code,
                text.replace("{rid}", &r.id)
                    .replace("{}", r.status.as_str()),
            ));
        }
        return Ok(());
    }
    if row.when == When::OpenInTurn && !in_turn(doc, i) {
        return Err(forbidden(
            "it is not your turn yet: earlier recipients in the signing order have not finished",
        ));
    }
    if out {
        removable_out(doc, i)?;
    }
    Ok(())
}

/// [`When::Removable`]'s document status: whether the document is out (`Ok(true)`), not
/// out yet (`Ok(false)`), or refuses.
fn removable_document(doc: &Document) -> ApiResult<bool> {
    if sets::DOC_NOT_OUT.contains(&doc.status) {
        Ok(false)
    } else if sets::DOC_OUT.contains(&doc.status) {
        Ok(true)
    } else if doc.status == Status::Processing {
        Err(conflict(
            "document_processing",
            "the document is being rendered; retry in a moment",
        ))
    } else {
        Err(conflict(
            "invalid_status",
            format!(
                "recipients of a {} document cannot be removed",
                doc.status.as_str()
            ),
        ))
    }
}

/// [`When::Removable`] once the document is out: not the one whose turn it is, not the
/// last one waited on.
fn removable_out(doc: &Document, i: usize) -> ApiResult<()> {
    let r = &doc.recipients[i];
    if doc.flags.is_signing_order && r.status != RecipientStatus::Added && r.role != Role::Cc {
        return Err(conflict(
            "signing_order",
            "it is this recipient's turn in the signing order; recall the document to change its order",
        ));
    }
    let others_wait = doc
        .recipients
        .iter()
        .filter(|o| o.id != r.id)
        .any(|o| !done(o));
    if !done(r) && !others_wait {
        return Err(conflict(
            "last_recipient",
            "every other signer and approver has acted, so removing this one would finish the document; recall it instead",
        ));
    }
    Ok(())
}

/// Where `m` leads the recipient.
pub fn next(m: Move) -> To {
    row_of(m).to
}

/// What `m` emits.
pub fn emits(m: Move) -> Emits {
    row_of(m).emits
}

/// Progress along added → sent → viewed → reviewed; `None` off it.
fn rank(s: RecipientStatus) -> Option<u8> {
    match s {
        RecipientStatus::Added => Some(0),
        Sent => Some(1),
        Viewed => Some(2),
        Reviewed => Some(3),
        _ => None,
    }
}

/// Where recipient status `s` goes by `m` (a removal leaves it).
pub fn after(s: RecipientStatus, m: Move) -> RecipientStatus {
    match next(m) {
        To::Now(t) => t,
        To::Ahead(t) if rank(s).is_some_and(|r| Some(r) < rank(t)) => t,
        _ => s,
    }
}

/// Sets the status of recipient `i` of `doc` where `m` leads, and the document's
/// ([`DocTo::SignedIfComplete`] is [`complete_document`]'s, after the move's own event).
/// Asks neither [`may`] nor [`allowed`].
pub fn apply(doc: &mut Document, i: usize, m: Move) {
    let r = &mut doc.recipients[i];
    r.status = after(r.status, m);
    match row_of(m).doc {
        DocTo::Now(s) => doc.status = s,
        DocTo::From(from, s) if from.contains(&doc.status) => doc.status = s,
        _ => {}
    }
}

/// Whether `r`'s part is done: a signer signed (in either form) or not required any
/// more, an approver approved or not required; a CC has none.
pub fn done(r: &Recipient) -> bool {
    match r.role {
        Role::Signer => matches!(r.status, Signed | SignedWithoutVerification | NotRequired),
        Role::Approver | Role::ExternalApprover => matches!(r.status, Approved | NotRequired),
        Role::Cc => true,
    }
}

/// Whether every signer and approver of `doc` is [`done`].
pub fn complete(doc: &Document) -> bool {
    doc.recipients.iter().all(done)
}

/// [`DocTo::SignedIfComplete`]: the document signed when [`complete`]; whether it is.
pub fn complete_document(doc: &mut Document) -> bool {
    let complete = complete(doc);
    if complete {
        doc.status = Status::Signed;
    }
    complete
}

/// Whether `r` is still to act in a signing order: a signer or approver who has neither
/// signed, approved, nor been released (not required).
pub fn pending(r: &Recipient) -> bool {
    r.role != Role::Cc && PENDING.contains(&r.status)
}

/// Whether it is recipient `i`'s turn: no signing order, or every one [`pending`] comes
/// at or after them in the order.
pub fn in_turn(doc: &Document, i: usize) -> bool {
    if !doc.flags.is_signing_order {
        return true;
    }
    let mine = doc.recipients[i].order_num;
    !doc.recipients
        .iter()
        .any(|r| pending(r) && r.order_num < mine)
}

/// A new recipient of `role` at `order_num`: `added` (a recipient is created so), with
/// no name, address or link yet.
pub fn created(id: String, role: Role, order_num: u32) -> Recipient {
    Recipient {
        id,
        first_name: String::new(),
        last_name: String::new(),
        email: String::new(),
        mobile: String::new(),
        phone: String::new(),
        role,
        role_name: String::new(),
        status: RecipientStatus::Added,
        company_name: String::new(),
        company_number: String::new(),
        title: String::new(),
        note: String::new(),
        order_num,
        contact_id: String::new(),
        secret: None,
        sent_ms: None,
        signed_ms: None,
        signing_method: None,
        ip_address: String::new(),
        viewed_ms: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::document::{DocExt, DocExt2, Flags, Sender};
    use RecipientStatus::{Added, Skipped};

    fn recipient(n: u32, role: Role, status: RecipientStatus) -> Recipient {
        Recipient {
            id: format!("r{n}"),
            first_name: String::new(),
            last_name: String::new(),
            email: format!("r{n}@x.se"),
            mobile: String::new(),
            phone: String::new(),
            role,
            role_name: String::new(),
            status,
            company_name: String::new(),
            company_number: String::new(),
            title: String::new(),
            note: String::new(),
            order_num: n,
            contact_id: String::new(),
            secret: None,
            sent_ms: None,
            signed_ms: None,
            signing_method: None,
            ip_address: String::new(),
            viewed_ms: None,
        }
    }

    /// A document of `status` with recipients of these roles and statuses, in order.
    fn doc(status: Status, rs: &[(Role, RecipientStatus)]) -> Document {
        let text = String::new;
        Document {
            id: "d".into(),
            entity_id: text(),
            user_id: text(),
            name: text(),
            external_id: text(),
            external_client_id: text(),
            value: 0.0,
            doc_type: text(),
            tags: text(),
            tags_raw: text(),
            company_name: text(),
            company_id: text(),
            company_logo_url: text(),
            company_number: text(),
            flags: Flags::default(),
            scheduled_sending_ms: None,
            auto_comment_text: text(),
            auto_comment_email: text(),
            status,
            status_before_expiry: None,
            rejection_reason: None,
            send_ms: None,
            sign_ms: None,
            created_ms: 0,
            updated_ms: 0,
            expiration_ms: u64::MAX,
            contract_start_ms: None,
            contract_end_ms: None,
            sender: Sender::default(),
            email_send_template_id: text(),
            email_send_subject: text(),
            email_send_message: text(),
            video_id: None,
            unique_id: 0,
            parent_id: text(),
            external_editor_type: text(),
            external_editor_id: text(),
            expiration_days: 0,
            block_recipient_invite: false,
            comment_settings: text(),
            sign_redirect: text(),
            sign_copy_emails: Vec::new(),
            recipients: (1..)
                .zip(rs)
                .map(|(n, &(role, s))| recipient(n, role, s))
                .collect(),
            files: Vec::new(),
            sources: Vec::new(),
            import_error: None,
            attachments: Vec::new(),
            custom_fields: Vec::new(),
            template_id: None,
            pricing_tables: Vec::new(),
            pending: None,
            render_seq: 0,
            final_pdf: None,
            revisions: Vec::new(),
            reminders_sent: 0,
            views: 0,
            log_seq: 0,
            ext: DocExt::default(),
            ext2: DocExt2::default(),
        }
    }

    /// The error code `may` answers, or `"ok"`.
    fn answer(d: &Document, i: usize, m: Move) -> (u16, String) {
        match may(d, i, m) {
            Ok(()) => (200, "ok".into()),
            Err(e) => (e.status, e.code.to_string()),
        }
    }

    #[test]
    fn every_move_has_one_row() {
        for r in MOVES {
            assert_eq!(MOVES.iter().filter(|o| o.verb == r.verb).count(), 1);
        }
    }

    #[test]
    fn the_sets_say_what_the_statuses_say() {
        assert_eq!(ANY.len(), 11);
        for &s in ANY {
            assert_eq!(UNFINISHED.contains(&s), !s.is_finished(), "{s:?}");
            let pending = !s.has_signed_or_approved() && s != NotRequired;
            assert_eq!(PENDING.contains(&s), pending, "{s:?}");
            assert_eq!(UNSIGNED.contains(&s), !s.has_signed_or_approved(), "{s:?}");
            let revised = pending && !matches!(s, Rejected | Skipped);
            assert_eq!(REVISED.contains(&s), revised, "{s:?}");
            assert_eq!(UNREACHED.contains(&s), matches!(s, Added | Hardbounced));
            assert_eq!(MAILED.contains(&s), matches!(s, Added | Sent | Hardbounced));
            let not_acted = matches!(s, Added | Sent | Viewed | Hardbounced);
            assert_eq!(NOT_ACTED.contains(&s), not_acted, "{s:?}");
        }
    }

    #[test]
    fn views_reviews_and_invitations_only_move_a_recipient_on() {
        for &s in ANY {
            let viewed = if matches!(s, Added | Sent) { Viewed } else { s };
            assert_eq!(after(s, Move::View), viewed, "{s:?}");
            let invited = if s == Added { Sent } else { s };
            assert_eq!(after(s, Move::InviteInTurn), invited, "{s:?}");
            assert_eq!(after(s, Move::SendRevision), invited, "{s:?}");
            assert_eq!(after(s, Move::Print), s);
            assert_eq!(after(s, Move::Correct), s);
        }
        // A signed recipient who views (first time on this link) stays signed; so does
        // the document, which a view only takes on from sealed or sent.
        let mut d = doc(Status::Reviewed, &[(Role::Signer, Signed)]);
        assert!(allowed(&d, 0, Move::View));
        apply(&mut d, 0, Move::View);
        assert_eq!(
            (d.status, d.recipients[0].status),
            (Status::Reviewed, Signed)
        );
        // A second view changes nothing.
        d.recipients[0].viewed_ms = Some(1);
        assert!(!allowed(&d, 0, Move::View));
        // A review is ignored once reviewed, signed or rejected.
        for s in [Reviewed, Signed, Rejected, Approved] {
            let d = doc(Status::Sent, &[(Role::Signer, s)]);
            assert_eq!(answer(&d, 0, Move::Review).1, "ok");
            assert!(!allowed(&d, 0, Move::Review), "{s:?}");
        }
        let mut d = doc(Status::Sealed, &[(Role::Signer, Viewed)]);
        apply(&mut d, 0, Move::Review);
        assert_eq!(
            (d.status, d.recipients[0].status),
            (Status::Reviewed, Reviewed)
        );
    }

    #[test]
    fn a_finished_recipient_neither_signs_approves_nor_rejects() {
        for s in [
            Signed,
            SignedWithoutVerification,
            Approved,
            Rejected,
            NotRequired,
        ] {
            let d = doc(Status::Sent, &[(Role::Signer, s), (Role::Approver, s)]);
            assert_eq!(answer(&d, 0, Move::Sign), (400, "invalid_status".into()));
            assert_eq!(answer(&d, 1, Move::Approve), (400, "invalid_status".into()));
            assert_eq!(answer(&d, 0, Move::Reject), (400, "invalid_status".into()));
        }
        for s in [Added, Sent, Viewed, Reviewed, Skipped, Hardbounced] {
            let d = doc(
                Status::Sent,
                &[(Role::Signer, s), (Role::ExternalApprover, s)],
            );
            assert_eq!(answer(&d, 0, Move::Sign).1, "ok", "{s:?}");
            assert_eq!(answer(&d, 1, Move::Approve).1, "ok", "{s:?}");
            assert_eq!(answer(&d, 0, Move::Reject).1, "ok", "{s:?}");
        }
    }

    #[test]
    fn the_document_and_the_role_come_before_the_status_and_the_turn_after() {
        // A closed document answers for itself, whatever the recipient.
        let d = doc(Status::Rejected, &[(Role::Cc, Rejected)]);
        let closed = "the document is rejected; it can no longer be signed or changed";
        for m in [Move::Review, Move::Sign, Move::Approve, Move::Reject] {
            assert_eq!(may(&d, 0, m).unwrap_err().description, closed);
        }
        assert_eq!(answer(&d, 0, Move::View).1, "ok");
        // The role before the status.
        let d = doc(Status::Sent, &[(Role::Cc, Signed), (Role::Approver, Added)]);
        assert_eq!(answer(&d, 0, Move::Reject), (403, "not_allowed".into()));
        assert_eq!(answer(&d, 1, Move::Sign), (403, "not_allowed".into()));
        assert_eq!(answer(&d, 0, Move::Approve), (403, "not_allowed".into()));
        let e = may(&d, 0, Move::Sign).unwrap_err();
        assert_eq!(
            e.description,
            "only a recipient with the role signer can sign"
        );
        // The turn last: the second in a signing order waits for the first.
        let mut d = doc(
            Status::Sent,
            &[(Role::Signer, Sent), (Role::Approver, Viewed)],
        );
        d.flags.is_signing_order = true;
        assert!(!in_turn(&d, 1));
        assert_eq!(answer(&d, 1, Move::Approve), (403, "not_allowed".into()));
        assert_eq!(answer(&d, 1, Move::Reject).1, "ok");
        d.recipients[0].status = NotRequired;
        assert!(in_turn(&d, 1));
        assert_eq!(answer(&d, 1, Move::Approve).1, "ok");
    }

    #[test]
    fn a_signature_completes_the_document_once_everyone_is_done() {
        let mut d = doc(
            Status::Viewed,
            &[
                (Role::Signer, Viewed),
                (Role::Approver, Sent),
                (Role::Cc, Sent),
            ],
        );
        apply(&mut d, 0, Move::Sign);
        assert_eq!(d.recipients[0].status, Signed);
        assert!(!complete_document(&mut d));
        assert_eq!(d.status, Status::Viewed);
        apply(&mut d, 1, Move::Approve);
        assert!(complete_document(&mut d));
        assert_eq!(d.status, Status::Signed);
        let mut d = doc(Status::Sent, &[(Role::Signer, Sent)]);
        apply(&mut d, 0, Move::Reject);
        assert_eq!(
            (d.status, d.recipients[0].status),
            (Status::Rejected, Rejected)
        );
    }

    #[test]
    fn a_bounce_reaches_only_those_mailed_and_a_sent_document() {
        for &s in ANY {
            let mut d = doc(Status::Sealed, &[(Role::Signer, s)]);
            if allowed(&d, 0, Move::Bounce) {
                apply(&mut d, 0, Move::Bounce);
                assert_eq!(d.recipients[0].status, Hardbounced);
            }
            assert_eq!(d.status, Status::Sealed, "a sealed document is not mailed");
        }
        let mut d = doc(Status::Viewed, &[(Role::Signer, Sent)]);
        apply(&mut d, 0, Move::Bounce);
        assert_eq!(d.status, Status::Hardbounced);
        assert!(!allowed(
            &doc(Status::Sent, &[(Role::Signer, Viewed)]),
            0,
            Move::Bounce
        ));
    }

    #[test]
    fn only_the_unreached_are_corrected_and_only_the_unacted_removed() {
        let d = doc(
            Status::Sent,
            &[
                (Role::Signer, Sent),
                (Role::Signer, Hardbounced),
                (Role::Signer, Reviewed),
            ],
        );
        let e = may(&d, 0, Move::Correct).unwrap_err();
        assert_eq!((e.status, e.code), (400, "invalid_recipient"));
        assert!(
            e.description.starts_with("the recipient is already sent;"),
            "{}",
            e.description
        );
        assert_eq!(answer(&d, 1, Move::Correct).1, "ok");
        assert_eq!(answer(&d, 2, Move::Remove), (409, "recipient_acted".into()));
        assert_eq!(answer(&d, 0, Move::Remove).1, "ok");
        // The last one waited on stays; so does the one whose turn it is.
        let d = doc(
            Status::Sent,
            &[(Role::Signer, Signed), (Role::Signer, Sent)],
        );
        assert_eq!(answer(&d, 1, Move::Remove), (409, "last_recipient".into()));
        let mut d = doc(Status::Sent, &[(Role::Signer, Sent), (Role::Signer, Added)]);
        d.flags.is_signing_order = true;
        assert_eq!(answer(&d, 0, Move::Remove), (409, "signing_order".into()));
        assert_eq!(answer(&d, 1, Move::Remove).1, "ok");
        // Before the document is out, neither holds; once it ended, nothing is removed.
        let d = doc(Status::Draft, &[(Role::Signer, Added)]);
        assert_eq!(answer(&d, 0, Move::Remove).1, "ok");
        let d = doc(Status::Processing, &[(Role::Signer, Added)]);
        assert_eq!(
            answer(&d, 0, Move::Remove),
            (409, "document_processing".into())
        );
        for s in [
            Status::Signed,
            Status::Recalled,
            Status::Expired,
            Status::Rejected,
        ] {
            let d = doc(s, &[(Role::Signer, Added)]);
            assert_eq!(answer(&d, 0, Move::Remove), (409, "invalid_status".into()));
        }
    }

    #[test]
    fn a_recipient_is_created_added() {
        let r = created("r9".into(), Role::Approver, 4);
        assert_eq!(
            (r.status, r.role, r.order_num, r.id.as_str()),
            (Added, Role::Approver, 4, "r9")
        );
        assert!(r.secret.is_none() && r.sent_ms.is_none());
    }

    #[test]
    fn takes_asks_the_role_the_status_and_the_sender() {
        let mut d = doc(
            Status::Draft,
            &[
                (Role::Signer, Added),
                (Role::Cc, Added),
                (Role::Signer, Added),
            ],
        );
        d.sender.email = "R1@x.se".into();
        assert!(takes(&d, 0, Move::SelfSign));
        assert!(!takes(&d, 1, Move::SelfSign), "a CC signs nothing");
        assert!(!takes(&d, 2, Move::SelfSign), "not the sender");
        assert!(takes(&d, 2, Move::SignManually));
        d.recipients[2].status = SignedWithoutVerification;
        assert!(!takes(&d, 2, Move::SignManually), "signed already");
        assert!(!takes(&d, 1, Move::SignManuallyWithoutFile));
    }

    #[test]
    fn refusals_name_the_recipient_and_their_status() {
        let d = doc(Status::Sent, &[(Role::Signer, Viewed)]);
        let e = may(&d, 0, Move::Invite).unwrap_err();
        assert_eq!(e.description, "the recipient r1 is already viewed");
        let d = doc(Status::Sent, &[(Role::Signer, Rejected)]);
        let e = may(&d, 0, Move::Transfer).unwrap_err();
        assert_eq!(
            e.description,
            "this recipient is rejected; they have no rights to transfer"
        );
    }
}
