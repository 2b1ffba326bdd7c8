//! Sending (spec §3.3, §4.2): the checks a send makes, links for recipients, the first
//! wave of invitations, scheduled sending, expiry and reminders.

use crate::base::cx::Cx;
use crate::base::http::{ApiError, ApiResult};
use crate::base::job_kinds;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::decode;
use crate::base::util::{self, iso8601, normalize_email, sha256_hex};
use crate::domain::accounts::{self, Membership, User, membership_key, user_key};
use crate::domain::auth::Principal;
use crate::domain::document::{
    self, Comment, Document, Recipient, Sender, comments_prefix, link_key,
};
use crate::domain::document_states::{self, Move as DocMove};
use crate::domain::events::emit_and_log;
use crate::domain::links;
use crate::domain::notify;
use crate::domain::recipient_states::{self, Move as RMove};
use crate::domain::reminder_schedules;
use crate::domain::rendering::request_render;
use crate::domain::trail::{Actor, log};
use serde_json::json;

/// The signing settings rule (spec §7): signing needs a signer; an approver needs
/// signers; a signing order needs signing.
pub fn signing_problem(doc: &Document) -> Option<String> {
    let approver = doc.recipients.iter().any(|r| r.role.approves());
    if doc.flags.is_signing && !doc.has_signer() {
        Some("signing is enabled but no recipient is a signer".into())
    } else if approver && !doc.has_signer() {
        Some("a document with an approver needs at least one signer".into())
    } else if doc.flags.is_signing_order && !doc.flags.is_signing {
        Some("a signing order needs signing enabled".into())
    } else {
        None
    }
}

/// With a signing order, the positions of signers and approvers must run 1, 2, ...
/// without gaps (several recipients may share a position: a signing group).
pub fn signing_group_problem(doc: &Document) -> Option<String> {
    if !doc.flags.is_signing_order {
        return None;
    }
    let mut order: Vec<u32> = doc
        .recipients
        .iter()
        .filter(|r| r.role != document::Role::Cc)
        .map(|r| r.order_num)
        .collect();
    order.sort_unstable();
    order.dedup();
    for (i, n) in order.iter().enumerate() {
        if *n != i as u32 + 1 {
            return Some(format!(
                "signing groups must be numbered 1, 2, 3, ... without gaps; found order_num {n} where {} was expected",
                i + 1
            ));
        }
    }
    None
}

fn unresolved_suggestion(cx: &mut Cx, doc: &Document) -> bool {
    let (start, end) = comments_prefix(&doc.id);
    cx.p.scan(&start, &end, u32::MAX, false)
        .into_iter()
        .map(|(_, v)| decode::<Comment>(&v))
        .any(|c| c.internal && c.suggestion && !c.resolved)
}

pub fn restricted_attachment_problem(doc: &Document) -> Option<String> {
    doc.attachments.iter().find_map(|a| {
        let to = a.restricted_to.as_ref()?;
        let connected = doc
            .recipients
            .iter()
            .any(|r| &normalize_email(&r.email) == to);
        (!connected).then(|| {
            format!(
                "the attachment {:?} is restricted to {to}, who is not a recipient",
                a.name
            )
        })
    })
}

/// Gives every recipient without one a personal link: `rlink/{sha256 of its secret}`,
/// and in their record only the nonce the secret is derived from (`links::mint`).
pub fn assign_links(cx: &mut Cx, doc: &mut Document) {
    for i in 0..doc.recipients.len() {
        if doc.recipients[i].secret.is_none() {
            let rid = doc.recipients[i].id.clone();
            let (stored, secret) = links::mint(cx, &doc.id, &rid);
            let value = format!("{}/{rid}", doc.id);
            cx.p.put(&link_key(&sha256_hex(secret.as_bytes())), value.as_bytes());
            doc.recipients[i].secret = Some(stored);
        }
    }
}

/// The checks every send makes (spec §4.2 send's 400s), in the spec's order.
fn check_sendable(cx: &mut Cx, doc: &Document) -> ApiResult<()> {
    if unresolved_suggestion(cx, doc) {
        return Err(bad(
            "unresolved_suggestions",
            "the document has unresolved internal suggestions; resolve them first",
        ));
    }
    if let Some(why) = signing_group_problem(doc) {
        return Err(bad("invalid_signing_groups", why));
    }
    if doc.recipients.is_empty() {
        return Err(bad(
            "recipients_not_fitting",
            "the document has no recipients to send it to",
        ));
    }
    if let Some(why) = signing_problem(doc) {
        return Err(bad("recipients_not_fitting", why));
    }
    if let Some(why) = restricted_attachment_problem(doc) {
        return Err(bad("restricted_attachment", why));
    }
    Ok(())
}

/// Sends a draft: links for everyone; then either `scheduled` until its time, or a
/// render (`processing` meanwhile when someone other than the owner sends it).
pub fn start_send(cx: &mut Cx, doc: &mut Document, actor: &Actor, sender: Sender) -> ApiResult<()> {
    check_sendable(cx, doc)?;
    let other_sender = sender.user_id != doc.user_id;
    doc.sender = sender;
    assign_links(cx, doc);
    let now = cx.now();
    match doc.scheduled_sending_ms {
        Some(at) if doc.flags.is_scheduled_sending && at > now => {
            document_states::apply(doc, DocMove::Schedule);
            cx.schedule_at(
                job_kinds::DOC_SCHEDULED_SEND,
                doc.id.clone().into_bytes(),
                at,
            );
            log(
                cx,
                doc,
                actor,
                "scheduled",
                format!("to be sent at {}", iso8601(at)),
                None,
            );
        }
        _ => {
            if other_sender {
                document_states::apply(doc, DocMove::Process);
            }
            request_render(cx, doc, document::RenderPurpose::Send, String::new());
            let detail = format!("sender {}", doc.sender.email);
            log(cx, doc, actor, "send_requested", detail, None);
        }
    }
    Ok(())
}

/// Sends `ids` their invitations; `sealed` documents become `sent` on the first batch.
/// No `document.sent` event (spec §3.3).
pub fn send_batch(cx: &mut Cx, doc: &mut Document, ids: &[String], actor: &Actor, what: &str) {
    let now = cx.now();
    for i in 0..doc.recipients.len() {
        if ids.contains(&doc.recipients[i].id) {
            recipient_states::apply(doc, i, RMove::Invite);
            doc.recipients[i].sent_ms = Some(now);
            let r = doc.recipients[i].clone();
            notify::invitation(cx, doc, &r);
        }
    }
    if document_states::allowed(doc, DocMove::MarkSent) {
        document_states::apply(doc, DocMove::MarkSent);
        doc.send_ms = Some(now);
        schedule_expiry(cx, doc);
    }
    if document_states::possible(doc, DocMove::Resend) {
        document_states::apply(doc, DocMove::Resend); // every bounced recipient reached again
    }
    log(
        cx,
        doc,
        actor,
        what,
        format!("sent to {} recipient(s)", ids.len()),
        None,
    );
}

/// Schedules the expiry check of a sent document.
pub fn schedule_expiry(cx: &mut Cx, doc: &Document) {
    cx.schedule_at(
        job_kinds::DOC_EXPIRE,
        doc.id.clone().into_bytes(),
        doc.expiration_ms,
    );
}

/// The signers and approvers the document is waiting on (sent, viewed or reviewed).
pub fn waiting(doc: &Document) -> Vec<Recipient> {
    doc.recipients
        .iter()
        .filter(|r| r.role != document::Role::Cc)
        .filter(|r| {
            matches!(
                r.status,
                document::RecipientStatus::Sent
                    | document::RecipientStatus::Viewed
                    | document::RecipientStatus::Reviewed
            )
        })
        .cloned()
        .collect()
}

/// Sends reminders to `who` (by SMS when `sms`); returns how many went out.
pub fn remind(
    cx: &mut Cx,
    doc: &mut Document,
    who: &[Recipient],
    message: &str,
    sms: bool,
    actor: &Actor,
) -> usize {
    for r in who {
        notify::reminder(cx, doc, r, message, sms);
    }
    doc.reminders_sent += who.len() as u32;
    log(
        cx,
        doc,
        actor,
        "reminded",
        format!("reminder sent to {} recipient(s)", who.len()),
        None,
    );
    who.len()
}

/// The recipients a send reaches now: everyone still to act, or with a signing order
/// the current signing group and every CC.
pub fn first_wave(doc: &Document) -> Vec<String> {
    let first = doc
        .recipients
        .iter()
        .filter(|r| r.role != document::Role::Cc && !r.status.has_signed_or_approved())
        .map(|r| r.order_num)
        .min();
    doc.recipients
        .iter()
        .filter(|r| !r.status.has_signed_or_approved())
        .filter(|r| {
            !doc.flags.is_signing_order
                || r.role == document::Role::Cc
                || Some(r.order_num) == first
        })
        .map(|r| r.id.clone())
        .collect()
}

/// A send's render is done: `sent`, invitations, `document.sent`, expiry.
pub fn finish_send(cx: &mut Cx, doc: &mut Document, actor: &Actor, hash: &str) {
    let now = cx.now();
    document_states::apply(doc, DocMove::SendRendered);
    doc.send_ms = Some(now);
    for rid in first_wave(doc) {
        let Some(i) = doc.recipients.iter().position(|r| r.id == rid) else {
            continue;
        };
        recipient_states::apply(doc, i, RMove::Invite);
        doc.recipients[i].sent_ms = Some(now);
        let r = doc.recipients[i].clone();
        notify::invitation(cx, doc, &r);
    }
    schedule_expiry(cx, doc);
    if doc.flags.is_reminder_sending
        && let Some(at) = reminder_schedules::first_at(cx, doc, now)
    {
        cx.schedule_at(
            job_kinds::DOC_REMIND,
            serde_json::to_vec(&json!({"doc": doc.id, "auto": true})).unwrap_or_default(),
            at,
        );
    }
    let extra = json!({"document": {
        "id": doc.id, "name": doc.name, "status": doc.status.as_str(), "value": util::money(doc.value),
        "send_date": iso8601(now),
        "external_id": doc.external_id,
    }});
    let detail = format!("sent by {}; content SHA-256 {hash}", doc.sender.email);
    emit_and_log(cx, doc, actor, "document.sent", "sent", detail, extra);
}

/// After a revision with `send_document`: its recipients get the new revision (a sealed
/// document goes out: `sent`).
pub fn send_revision(cx: &mut Cx, doc: &mut Document, actor: &Actor, message: &str) {
    let now = cx.now();
    let mut count = 0;
    let wave = first_wave(doc);
    for i in 0..doc.recipients.len() {
        let r = &doc.recipients[i];
        if !wave.contains(&r.id)
            || matches!(
                r.status,
                document::RecipientStatus::NotRequired
                    | document::RecipientStatus::Rejected
                    | document::RecipientStatus::Skipped
            )
        {
            continue; // done, out of the running, or (signing order) not their turn yet
        }
        // Added → sent; a recipient further on keeps their status and send time.
        let before = r.status;
        recipient_states::apply(doc, i, RMove::SendRevision);
        if doc.recipients[i].status != before {
            doc.recipients[i].sent_ms = Some(now);
        }
        let r = doc.recipients[i].clone();
        notify::revision(cx, doc, &r, message);
        count += 1;
    }
    if document_states::allowed(doc, DocMove::MarkSent) {
        document_states::apply(doc, DocMove::MarkSent);
        doc.send_ms = Some(now);
        schedule_expiry(cx, doc);
    }
    log(
        cx,
        doc,
        actor,
        "revision_sent",
        format!("revision sent to {count} recipient(s)"),
        None,
    );
}

fn bad(code: &'static str, text: impl Into<String>) -> ApiError {
    ApiError::bad_request(code, text)
}

/// Whether the caller may send on another member's behalf (a `sender_id` or
/// `sender_email` of a send or seal naming someone else): admins only; 403
/// `access_denied` otherwise. Anyone may name themselves.
pub fn may_send_as(pr: &Principal) -> ApiResult<()> {
    if pr.membership.role == accounts::Role::Admin {
        return Ok(());
    }
    Err(ApiError::forbidden(
        "access_denied",
        "only an admin sends on another member's behalf; leave out `sender_id` and `sender_email` to send as the document's owner",
    ))
}

/// The sender a send or seal names by `by_id` or `by_email` (an active member of the
/// document's entity; naming anyone but oneself is for admins, [`may_send_as`]), or
/// the document's owner; with the device and the address the request came from.
pub fn sender(
    cx: &mut Cx,
    pr: &Principal,
    doc: &Document,
    (by_id, by_email): (Option<String>, Option<String>),
    (user_agent, ip): (String, String),
) -> ApiResult<Sender> {
    // Naming anyone but oneself is refused before anything is looked up, so the
    // refusal tells nothing about which emails have accounts.
    let me = match (&by_id, &by_email) {
        (Some(id), _) => *id == pr.user.id,
        (None, Some(email)) => normalize_email(email) == normalize_email(&pr.user.email),
        (None, None) => true,
    };
    if !me {
        may_send_as(pr)?;
    }
    // One answer for an unknown sender and another entity's account, so it tells an
    // admin nothing about other entities' accounts.
    let named = by_id.clone().or(by_email.clone()).unwrap_or_default();
    let not_member = || {
        bad(
            "invalid_sender",
            format!("{named} is not an active member of the document's entity"),
        )
    };
    let user_id = match (by_id, by_email) {
        (Some(id), _) => id,
        (None, Some(email)) => accounts::user_id_by_email(cx, &email).ok_or_else(not_member)?,
        (None, None) => doc.user_id.clone(),
    };
    let user = cx
        .load::<User>(&user_key(&user_id))
        .filter(|u| u.active)
        .ok_or_else(not_member)?;
    cx.load::<Membership>(&membership_key(&user.id, &doc.entity_id))
        .filter(|m| m.profile == accounts::Profile::Active)
        .ok_or_else(not_member)?;
    Ok(Sender {
        user_id: user.id.clone(),
        name: accounts::user_name(&user),
        email: user.email.clone(),
        user_agent,
        ip,
    })
}

/// Seals a draft (`POST .../seal`): the checks a seal makes, links for everyone, the
/// sender's own signature on a self-sign document ([`RMove::SelfSign`]), and the
/// render.
pub fn seal(cx: &mut Cx, doc: &mut Document, actor: &Actor, sender: Sender) -> ApiResult<()> {
    if let Some(why) = signing_group_problem(doc) {
        return Err(bad("invalid_signing_groups", why));
    }
    if let Some(why) = signing_problem(doc) {
        return Err(bad("recipients_not_fitting", why));
    }
    if let Some(why) = restricted_attachment_problem(doc) {
        return Err(bad("restricted_attachment", why));
    }
    doc.sender = sender;
    assign_links(cx, doc);
    let now = cx.now();
    if doc.flags.is_selfsign {
        // The sender signs their own copy first.
        for i in 0..doc.recipients.len() {
            if recipient_states::takes(doc, i, RMove::SelfSign) {
                recipient_states::apply(doc, i, RMove::SelfSign);
                doc.recipients[i].signed_ms = Some(now);
            }
        }
    }
    request_render(cx, doc, document::RenderPurpose::Seal, String::new());
    let detail = format!("sender {}", doc.sender.email);
    log(cx, doc, actor, "seal_requested", detail, None);
    Ok(())
}

/// Whether recipients `ids` of `doc` may be sent it now (`POST .../recipients/send`):
/// each is a recipient ([`RMove::Invite`] refuses one already reached).
pub fn check_batch(doc: &Document, ids: &[String]) -> ApiResult<()> {
    for rid in ids {
        let i = doc
            .recipients
            .iter()
            .position(|r| &r.id == rid)
            .ok_or_else(|| {
                bad(
                    "invalid_recipient",
                    format!("{rid} is not a recipient of this document"),
                )
            })?;
        recipient_states::may(doc, i, RMove::Invite)?;
    }
    Ok(())
}

/// Whom a forward reaches: an email, a mobile, or both (at least one).
pub struct ForwardTo {
    pub email: Option<String>,
    pub mobile: Option<String>,
}

impl ForwardTo {
    /// The `email` and `mobile` given for whom a sender forwards to or a signer hands
    /// over to (`whom`, for the refusal): trimmed, blank ones left out, at least one,
    /// each valid; 400 otherwise.
    pub fn checked(
        email: Option<String>,
        mobile: Option<String>,
        whom: &str,
    ) -> ApiResult<ForwardTo> {
        let given = |v: Option<String>| v.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
        let (email, mobile) = (given(email), given(mobile));
        if email.is_none() && mobile.is_none() {
            return Err(bad(
                "missing_field",
                format!("give the `email` or `mobile` of {whom}"),
            ));
        }
        if let Some(e) = email.as_ref().filter(|e| !util::is_email(e)) {
            return Err(bad(
                "invalid_field",
                format!("{e:?} is not a valid email address"),
            ));
        }
        if let Some(m) = mobile.as_ref().filter(|m| !util::is_mobile(m)) {
            return Err(bad(
                "invalid_field",
                format!("{m:?} is not a valid mobile number"),
            ));
        }
        Ok(ForwardTo { email, mobile })
    }
}

impl ForwardTo {
    /// Whether `r` is that person already.
    fn is(&self, r: &Recipient) -> bool {
        self.email
            .as_ref()
            .is_some_and(|e| normalize_email(&r.email) == normalize_email(e))
            || self
                .mobile
                .as_ref()
                .is_some_and(|m| !r.mobile.is_empty() && &r.mobile == m)
    }
}

/// Whether `doc` may be forwarded `to` (the document's moves asked by the caller):
/// nobody already a recipient, room for one more; with `transfer`, the recipient whose
/// signing rights are handed on ([`RMove::Transfer`]: not a CC, not done, and not to
/// one who has signed), which it answers.
pub fn check_forward(
    doc: &Document,
    to: &ForwardTo,
    transfer: Option<&str>,
) -> ApiResult<Option<Recipient>> {
    let existing = doc.recipients.iter().find(|r| to.is(r));
    let mut from = None;
    if let Some(rid) = transfer {
        let i = doc
            .recipients
            .iter()
            .position(|r| r.id == rid)
            .ok_or_else(|| {
                bad(
                    "invalid_recipient",
                    format!("{rid} is not a recipient of this document"),
                )
            })?;
        let r = &doc.recipients[i];
        if r.role == document::Role::Cc {
            return Err(bad(
                "invalid_recipient",
                "a CC recipient has no signing rights to transfer",
            ));
        }
        if r.status.has_signed_or_approved() {
            return Err(bad(
                "already_signed",
                "this recipient has already signed; nothing to transfer",
            ));
        }
        recipient_states::may(doc, i, RMove::Transfer)?;
        if existing.is_some_and(|e| e.status.has_signed_or_approved()) {
            return Err(bad(
                "already_signed",
                "rights cannot be transferred to a recipient who has already signed",
            ));
        }
        from = Some(r.clone());
    }
    if existing.is_some() {
        return Err(bad(
            "already_recipient",
            "that person is already a recipient of this document",
        ));
    }
    if doc.recipients.len() >= document::MAX_RECIPIENTS {
        return Err(bad(
            "invalid_field",
            format!(
                "a document has at most {} recipients",
                document::MAX_RECIPIENTS
            ),
        ));
    }
    Ok(from)
}

/// A forward's new recipient, as the request names them.
pub struct Forwarded {
    pub to: ForwardTo,
    pub first_name: String,
    pub last_name: String,
    pub message: String,
}

/// Forwards `doc` (`POST .../forward`, checked by [`check_forward`]): a new recipient,
/// a CC, or with `from` the one their signing rights go to ([`RMove::Transfer`]); once
/// the document is out and it is their turn, they get it now ([`RMove::Invite`]).
/// `document.forwarded`.
pub fn forward(
    cx: &mut Cx,
    doc: &mut Document,
    actor: &Actor,
    new: Forwarded,
    from: Option<Recipient>,
) {
    let now = cx.now();
    let next = doc
        .recipients
        .iter()
        .map(|r| r.order_num)
        .max()
        .unwrap_or(0)
        + 1;
    let role = from.as_ref().map_or(document::Role::Cc, |r| r.role);
    let order_num = from.as_ref().map_or(next, |r| r.order_num);
    let r = Recipient {
        first_name: new.first_name,
        last_name: new.last_name,
        email: new.to.email.unwrap_or_default(),
        mobile: new.to.mobile.unwrap_or_default(),
        role_name: from.as_ref().map_or(String::new(), |r| r.role_name.clone()),
        note: new.message,
        ..recipient_states::created(util::new_id(cx), role, order_num)
    };
    if let Some(i) = from
        .as_ref()
        .and_then(|old| doc.recipients.iter().position(|r| r.id == old.id))
    {
        recipient_states::apply(doc, i, RMove::Transfer);
    }
    doc.recipients.push(r);
    assign_links(cx, doc);
    let idx = doc.recipients.len() - 1;
    let turn = first_wave(doc).contains(&doc.recipients[idx].id);
    if !document_states::sealed_only(doc) && turn {
        // The document is out and it is their turn: the new recipient gets it now.
        recipient_states::apply(doc, idx, RMove::Invite);
        doc.recipients[idx].sent_ms = Some(now);
        let r = doc.recipients[idx].clone();
        notify::invitation(cx, doc, &r);
    }
    forwarded(cx, doc, actor, from.as_ref());
}

/// `document.forwarded`, for the recipient just added (the last).
fn forwarded(cx: &mut Cx, doc: &mut Document, actor: &Actor, from: Option<&Recipient>) {
    let r = doc.recipients.last().cloned().expect("just added");
    let extra = json!({
        "recipient": {"id": r.id, "fullname": r.fullname(), "email": r.email, "mobile": r.mobile,
                      "role": r.role.as_str(), "order_num": r.order_num.to_string()},
        "transfer": from.is_some(),
        "forwarded_from": from.map(|o| json!({"id": o.id, "fullname": o.fullname(), "email": o.email})),
    });
    let detail = match from {
        Some(o) => format!("signing rights of {} transferred to {}", o.email, r.email),
        None => format!(
            "forwarded to {} as CC",
            if r.email.is_empty() {
                &r.mobile
            } else {
                &r.email
            }
        ),
    };
    emit_and_log(
        cx,
        doc,
        actor,
        "document.forwarded",
        "forwarded",
        detail,
        extra,
    );
}

/// Whom a reminder (`POST .../reminders`) reaches: the signers and approvers the
/// document waits on ([`waiting`]), only those who have not opened it yet when
/// `only_unopened`, only those with a mobile number by SMS, only `ids` when given
/// (each a recipient); 400 `nobody_to_remind` for nobody.
pub fn to_remind(
    doc: &Document,
    sms: bool,
    only_unopened: bool,
    ids: Option<&[String]>,
) -> ApiResult<Vec<Recipient>> {
    let mut who = waiting(doc);
    if only_unopened {
        who.retain(|r| r.status == document::RecipientStatus::Sent);
    }
    if sms {
        who.retain(|r| !r.mobile.is_empty());
    }
    if let Some(ids) = ids {
        for rid in ids {
            if doc.recipient(rid).is_none() {
                return Err(bad(
                    "invalid_recipient",
                    format!("{rid} is not a recipient of this document"),
                ));
            }
        }
        who.retain(|r| ids.contains(&r.id));
    }
    if who.is_empty() {
        return Err(bad(
            "nobody_to_remind",
            if sms {
                "no recipient with a mobile number is waiting to sign, approve or review"
            } else {
                "no recipient is waiting to sign, approve or review"
            },
        ));
    }
    Ok(who)
}

/// A reminder to `ids` sent at `at` (job `doc.remind`), and its trail entry.
pub fn schedule_reminder(
    cx: &mut Cx,
    doc: &mut Document,
    actor: &Actor,
    ids: &[String],
    at: u64,
    (message, sms): (&str, bool),
) {
    cx.schedule_at(
        job_kinds::DOC_REMIND,
        serde_json::to_vec(&json!({"doc": doc.id, "ids": ids, "message": message, "sms": sms}))
            .unwrap_or_default(),
        at,
    );
    log(
        cx,
        doc,
        actor,
        "reminder_scheduled",
        format!("reminder at {}", iso8601(at)),
        None,
    );
}

/// A new expiration date `at` (`POST .../expiration`, asked of the machine by the
/// caller): an expired document is open again ([`DocMove::Reopen`]), an active one gets
/// its expiry check, and with `notify_them` the recipients it is out to (sent, viewed,
/// reviewed) are told.
pub fn change_expiration(
    cx: &mut Cx,
    doc: &mut Document,
    actor: &Actor,
    at: u64,
    notify_them: bool,
) {
    doc.expiration_ms = at;
    if document_states::allowed(doc, DocMove::Reopen) {
        document_states::apply(doc, DocMove::Reopen);
    }
    if document_states::allowed(doc, DocMove::Expire) {
        schedule_expiry(cx, doc);
    }
    if notify_them {
        for r in doc.recipients.clone() {
            if matches!(
                r.status,
                document::RecipientStatus::Sent
                    | document::RecipientStatus::Viewed
                    | document::RecipientStatus::Reviewed
            ) {
                notify::expiration_changed(cx, doc, &r);
            }
        }
    }
    log(
        cx,
        doc,
        actor,
        "expiration_changed",
        format!("expires {}", iso8601(at)),
        None,
    );
}

/// A new revision of `doc` (`POST .../revisions`, asked of the machine by the caller):
/// 403 `signing_requirements` when the signing settings do not hold, 400 while another
/// revision renders or once anyone has signed or approved; else it is rendered, and with
/// `send` goes out to the recipients when done ([`send_revision`]).
pub fn revise(
    cx: &mut Cx,
    doc: &mut Document,
    actor: &Actor,
    message: String,
    send: bool,
) -> ApiResult<()> {
    if let Some(why) = signing_problem(doc) {
        return Err(ApiError::forbidden("signing_requirements", why));
    }
    if matches!(
        doc.pending,
        Some(document::Pending {
            purpose: document::RenderPurpose::Revision { .. },
            ..
        })
    ) {
        return Err(bad(
            "revision_processing",
            "another revision of this document is still processing",
        ));
    }
    if doc
        .recipients
        .iter()
        .any(|r| r.status.has_signed_or_approved())
    {
        return Err(bad(
            "already_signed",
            "a recipient has already signed or approved this document; it cannot be revised",
        ));
    }
    let number = doc.revisions.len() as u32 + 1;
    doc.revisions.push(document::Revision {
        number,
        message: message.clone(),
        created_ms: cx.now(),
        sealed_ms: None,
        content_sha256: None,
    });
    request_render(cx, doc, document::RenderPurpose::Revision { send }, message);
    let detail = format!("revision {number}");
    log(cx, doc, actor, "revision_created", detail, None);
    Ok(())
}
