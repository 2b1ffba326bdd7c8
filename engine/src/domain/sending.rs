//! Sending (spec §3.3, §4.2): the checks a send makes, links for recipients, the first
//! wave of invitations, scheduled sending, expiry and reminders.

use crate::base::api::JobSpec;
use crate::base::cx::Cx;
use crate::base::http::{ApiError, ApiResult};
use crate::base::job_kinds;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::decode;
use crate::base::util::{self, iso8601, normalize_email, sha256_hex};
use crate::domain::accounts;
use crate::domain::auth::Principal;
use crate::domain::document::{
    self, Comment, Document, Recipient, Sender, comments_prefix, link_key,
};
use crate::domain::events::emit_and_log;
use crate::domain::links;
use crate::domain::notify;
use crate::domain::rendering::request_render;
use crate::domain::trail::{Actor, log};
use serde_json::json;

/// Days between automatic reminders (`is_reminder_sending`), and how many at most.
pub const AUTO_REMINDER_DAYS: u64 = 3;
pub const AUTO_REMINDER_MAX: u32 = 5;

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
            doc.status = document::Status::Scheduled;
            cx.p.schedule_job(JobSpec {
                kind: job_kinds::DOC_SCHEDULED_SEND.into(),
                payload: doc.id.clone().into_bytes(),
                run_at_ms: at,
                work: None,
                scope: String::new(),
            });
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
                doc.status = document::Status::Processing;
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
            doc.recipients[i].status = document::RecipientStatus::Sent;
            doc.recipients[i].sent_ms = Some(now);
            let r = doc.recipients[i].clone();
            notify::invitation(cx, doc, &r);
        }
    }
    if doc.status == document::Status::Sealed {
        doc.status = document::Status::Sent;
        doc.send_ms = Some(now);
        schedule_expiry(cx, doc);
    }
    let bounced = |r: &Recipient| r.status == document::RecipientStatus::Hardbounced;
    if doc.status == document::Status::Hardbounced && !doc.recipients.iter().any(bounced) {
        doc.status = document::Status::Sent; // every bounced recipient was reached again
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
    cx.p.schedule_job(JobSpec {
        kind: job_kinds::DOC_EXPIRE.into(),
        payload: doc.id.clone().into_bytes(),
        run_at_ms: doc.expiration_ms,
        work: None,
        scope: String::new(),
    });
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
    doc.status = document::Status::Sent;
    doc.send_ms = Some(now);
    for rid in first_wave(doc) {
        let Some(i) = doc.recipients.iter().position(|r| r.id == rid) else {
            continue;
        };
        doc.recipients[i].status = document::RecipientStatus::Sent;
        doc.recipients[i].sent_ms = Some(now);
        let r = doc.recipients[i].clone();
        notify::invitation(cx, doc, &r);
    }
    schedule_expiry(cx, doc);
    if doc.flags.is_reminder_sending {
        cx.p.schedule_job(JobSpec {
            kind: job_kinds::DOC_REMIND.into(),
            payload: serde_json::to_vec(&json!({"doc": doc.id, "auto": true})).unwrap_or_default(),
            run_at_ms: now + AUTO_REMINDER_DAYS * 24 * 3600 * 1000,
            work: None,
            scope: String::new(),
        });
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
        if r.status == document::RecipientStatus::Added {
            doc.recipients[i].status = document::RecipientStatus::Sent;
            doc.recipients[i].sent_ms = Some(now);
        }
        let r = doc.recipients[i].clone();
        notify::revision(cx, doc, &r, message);
        count += 1;
    }
    if doc.status == document::Status::Sealed {
        doc.status = document::Status::Sent;
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
