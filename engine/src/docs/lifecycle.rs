//! State changes after create (spec §3.3, §4.2): update, seal, send, send to
//! recipients, forward, expiration, manual signing, lost, revisions, reminders, delete
//! and recall, comments, pricing tables (recipient corrections are in `roster`).
//!
//! Sealing, sending and revisions answer at acceptance and finish in a render job
//! ([`request_render`], then `jobs::rendered`).

use super::model::{
    Comment, Document, Pending, Recipient, RecipientStatus, RenderPurpose, Role, Sender, Status,
    comment_key, comments_prefix, link_key,
};
use super::read::{DetailOptions, comment_json, detail_json, recipient_json, user_name};
use super::{
    Actor, access, blobs, emit_and_log, log, notify, readable, remove_doc, store_doc, writable,
};
use crate::auth::Principal;
use crate::http::{ApiError, ApiResult, Fields, json, no_content};
use crate::model::{Membership, Profile, User, decode, membership_key, user_email_key, user_key};
#[allow(unused_imports)]
use crate::prelude::*;
use crate::util::{is_email, iso8601, new_id, new_secret, normalize_email, parse_time, sha256_hex};
use crate::{Block, Cx, JobSpec, RenderOrder, Request, Response, WorkOrder};
use serde_json::{Value, json};

/// Job: record a rendered PDF.
pub const RENDER_JOB: &str = "doc.render";
/// Job: send a scheduled document.
pub const SCHEDULED_SEND_JOB: &str = "doc.scheduled-send";
/// Job: expire a document whose date has come.
pub const EXPIRE_JOB: &str = "doc.expire";
/// Job: erase a permanently deleted document's data.
pub const ERASE_JOB: &str = "doc.erase";
/// Job: send scheduled or automatic reminders.
pub const REMIND_JOB: &str = "doc.remind";

/// Days between automatic reminders (`is_reminder_sending`), and how many at most.
pub const AUTO_REMINDER_DAYS: u64 = 3;
pub const AUTO_REMINDER_MAX: u32 = 5;

fn bad(code: &'static str, text: impl Into<String>) -> ApiError {
    ApiError::bad_request(code, text)
}

/// 400 while importing, 400 for any other status than draft, 400 while a render runs.
fn require_draft(doc: &Document, action: &str) -> ApiResult<()> {
    match doc.status {
        Status::Importing => Err(bad(
            "document_importing",
            format!(
                "the document is still importing its files; poll its status until draft, then {action}"
            ),
        )),
        Status::Draft if doc.pending.is_some() => Err(bad(
            "document_processing",
            "the document is already being sealed or sent",
        )),
        Status::Draft => Ok(()),
        other => Err(bad(
            "document_not_draft",
            format!(
                "only a draft can be {action}ed; this document is {}",
                other.as_str()
            ),
        )),
    }
}

/// The signing settings rule (spec §7): signing needs a signer; an approver needs
/// signers; a signing order needs signing.
pub fn signing_problem(doc: &Document) -> Option<String> {
    let approver = doc.recipients.iter().any(|r| r.role == Role::Approver);
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
fn signing_group_problem(doc: &Document) -> Option<String> {
    if !doc.flags.is_signing_order {
        return None;
    }
    let mut order: Vec<u32> = doc
        .recipients
        .iter()
        .filter(|r| r.role != Role::Cc)
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

fn restricted_attachment_problem(doc: &Document) -> Option<String> {
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

/// The sender named by `sender_id` or `sender_email` (an active user of the document's
/// entity), or the document's owner; plus the device (`User-Agent`) and IP (`CLIENT_IP`).
fn resolve_sender(cx: &mut Cx, doc: &Document, req: &Request, f: &Fields) -> ApiResult<Sender> {
    let invalid = |why: String| bad("invalid_sender", why);
    let by_id = f.optional_str("sender_id")?.filter(|s| !s.is_empty());
    let by_email = f.optional_str("sender_email")?.filter(|s| !s.is_empty());
    let user_id = match (by_id, by_email) {
        (Some(id), _) => id,
        (None, Some(email)) => {
            cx.p.get(&user_email_key(&normalize_email(&email)))
                .and_then(|v| String::from_utf8(v).ok())
                .ok_or_else(|| invalid(format!("no user has the email {email}")))?
        }
        (None, None) => doc.user_id.clone(),
    };
    let user = cx
        .load::<User>(&user_key(&user_id))
        .filter(|u| u.active)
        .ok_or_else(|| invalid(format!("{user_id} is not an active user")))?;
    cx.load::<Membership>(&membership_key(&user.id, &doc.entity_id))
        .filter(|m| m.profile == Profile::Active)
        .ok_or_else(|| {
            invalid(format!(
                "{} is not an active member of the document's entity",
                user.email
            ))
        })?;
    let (user_agent, ip) = super::client_of(req);
    Ok(Sender {
        user_id: user.id.clone(),
        name: user_name(&user),
        email: user.email.clone(),
        user_agent,
        ip,
    })
}

/// Gives every recipient without one a personal link.
fn assign_links(cx: &mut Cx, doc: &mut Document) {
    for i in 0..doc.recipients.len() {
        if doc.recipients[i].secret.is_none() {
            let secret = new_secret(cx);
            let value = format!("{}/{}", doc.id, doc.recipients[i].id);
            cx.p.put(&link_key(&sha256_hex(secret.as_bytes())), value.as_bytes());
            doc.recipients[i].secret = Some(secret);
        }
    }
}

/// The summary page: the document, its recipients, and (added by the host) the
/// content's SHA-256.
fn summary_blocks(doc: &Document, now: u64) -> Vec<Block> {
    let mut b = document_rows(doc, "Document summary");
    b.push(Block::Row(vec!["Rendered".into(), iso8601(now)]));
    if !doc.revisions.is_empty() {
        b.push(Block::Row(vec![
            "Revision".into(),
            doc.revisions.len().to_string(),
        ]));
    }
    b.push(Block::Rule);
    b.push(Block::HeaderRow(vec![
        "Recipient".into(),
        "Role".into(),
        "Status".into(),
    ]));
    for r in &doc.recipients {
        let contact = if r.email.is_empty() {
            &r.mobile
        } else {
            &r.email
        };
        b.push(Block::Row(vec![
            format!("{} ({contact})", r.fullname()),
            r.role.as_str().into(),
            r.status.as_str().into(),
        ]));
    }
    b
}

/// A heading, then the document's name, id, sender and creation time as rows (the
/// start of the summary page and of the audit certificate).
pub fn document_rows(doc: &Document, heading: &str) -> Vec<Block> {
    vec![
        Block::Heading(heading.into()),
        Block::Row(vec!["Document".into(), doc.name.clone()]),
        Block::Row(vec!["Document id".into(), doc.id.clone()]),
        Block::Row(vec![
            "Sender".into(),
            format!("{} <{}>", doc.sender.name, doc.sender.email),
        ]),
        Block::Row(vec!["Created".into(), iso8601(doc.created_ms)]),
    ]
}

/// Starts a render of `doc` for `purpose`: the job renders the pages, the pricing
/// tables and the summary. A newer render supersedes an older one (by `seq`).
pub fn request_render(cx: &mut Cx, doc: &mut Document, purpose: RenderPurpose, message: String) {
    let now = cx.now();
    doc.render_seq += 1;
    doc.pending = Some(Pending {
        purpose,
        seq: doc.render_seq,
        message,
    });
    let mut appendix = super::pricing::blocks(&doc.pricing_tables);
    if doc.files.is_empty() && appendix.is_empty() {
        // Nothing of its own to show: a cover page is the content.
        appendix = vec![
            Block::Heading(doc.name.clone()),
            Block::Text("This document has no pages of its own.".into()),
        ];
    }
    let fields = super::fields::load(cx, &doc.id);
    let sigs = super::signatures::load_all(cx, &doc.id);
    let stamps = super::fields::stamps(&fields, |rid, kind| {
        super::signatures::stamp_content(&sigs, rid, kind)
    });
    let mut summary = summary_blocks(doc, now);
    summary.extend(super::signatures::summary_blocks(doc, &fields, &sigs));
    let order = RenderOrder {
        sources: doc.files.iter().map(|f| f.blob.clone()).collect(),
        stamps,
        appendix,
        summary,
        seal: None,
    };
    cx.p.schedule_job(JobSpec {
        kind: RENDER_JOB.into(),
        payload: format!("{}:{}", doc.id, doc.render_seq).into_bytes(),
        run_at_ms: now,
        work: Some(WorkOrder::Render(order)),
        scope: doc.entity_id.clone(),
    });
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
            doc.status = Status::Scheduled;
            cx.p.schedule_job(JobSpec {
                kind: SCHEDULED_SEND_JOB.into(),
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
                doc.status = Status::Processing;
            }
            request_render(cx, doc, RenderPurpose::Send, String::new());
            let detail = format!("sender {}", doc.sender.email);
            log(cx, doc, actor, "send_requested", detail, None);
        }
    }
    Ok(())
}

/// `POST /v1/documents/{id}/send`.
pub fn send(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    require_draft(&doc, "send")?;
    let f = req.body_fields()?;
    let sender = resolve_sender(cx, &doc, req, &f)?;
    let before = doc.clone();
    let actor = Actor::user(pr, Some(req));
    start_send(cx, &mut doc, &actor, sender)?;
    store_doc(cx, Some(&before), &mut doc);
    let o = DetailOptions {
        with_links: true,
        ..DetailOptions::default()
    };
    Ok(json(200, &detail_json(cx, &doc, o)))
}

/// `POST /v1/documents/{id}/seal`.
pub fn seal(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    require_draft(&doc, "seal")?;
    let f = req.body_fields()?;
    let sender = resolve_sender(cx, &doc, req, &f)?;
    if let Some(why) = signing_group_problem(&doc) {
        return Err(bad("invalid_signing_groups", why));
    }
    if let Some(why) = signing_problem(&doc) {
        return Err(bad("recipients_not_fitting", why));
    }
    if let Some(why) = restricted_attachment_problem(&doc) {
        return Err(bad("restricted_attachment", why));
    }
    let before = doc.clone();
    doc.sender = sender;
    assign_links(cx, &mut doc);
    let actor = Actor::user(pr, Some(req));
    let now = cx.now();
    if doc.flags.is_selfsign {
        // The sender signs their own copy first.
        let me = normalize_email(&doc.sender.email);
        for r in doc.recipients.iter_mut() {
            if r.role == Role::Signer && normalize_email(&r.email) == me {
                r.status = RecipientStatus::Signed;
                r.signed_ms = Some(now);
            }
        }
    }
    request_render(cx, &mut doc, RenderPurpose::Seal, String::new());
    let detail = format!("sender {}", doc.sender.email);
    log(cx, &mut doc, &actor, "seal_requested", detail, None);
    store_doc(cx, Some(&before), &mut doc);
    let recipients: Vec<Value> = doc
        .recipients
        .iter()
        .map(|r| recipient_json(cx, r, true))
        .collect();
    Ok(json(200, &json!({ "recipients": recipients })))
}

/// The ids of `recipient_ids` (an array of strings, or comma-separated text).
fn recipient_ids(f: &Fields) -> ApiResult<Vec<String>> {
    let ids: Vec<String> = match f.map.get("recipient_ids") {
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().map(|s| s.trim().to_string()))
            .collect::<Option<_>>()
            .ok_or_else(|| bad("invalid_field", "`recipient_ids` must be strings"))?,
        Some(Value::String(s)) => s
            .split(',')
            .map(|x| x.trim().to_string())
            .filter(|x| !x.is_empty())
            .collect(),
        None | Some(Value::Null) => Vec::new(),
        Some(_) => {
            return Err(bad(
                "invalid_field",
                "`recipient_ids` must be an array of ids",
            ));
        }
    };
    if ids.is_empty() {
        return Err(bad(
            "missing_field",
            "the field `recipient_ids` is required",
        ));
    }
    Ok(ids)
}

/// Sends `ids` their invitations; `sealed` documents become `sent` on the first batch.
/// No `document.sent` event (spec §3.3).
fn send_batch(cx: &mut Cx, doc: &mut Document, ids: &[String], actor: &Actor, what: &str) {
    let now = cx.now();
    for i in 0..doc.recipients.len() {
        if ids.contains(&doc.recipients[i].id) {
            doc.recipients[i].status = RecipientStatus::Sent;
            doc.recipients[i].sent_ms = Some(now);
            let r = doc.recipients[i].clone();
            notify::invitation(cx, doc, &r);
        }
    }
    if doc.status == Status::Sealed {
        doc.status = Status::Sent;
        doc.send_ms = Some(now);
        schedule_expiry(cx, doc);
    }
    let bounced = |r: &Recipient| r.status == RecipientStatus::Hardbounced;
    if doc.status == Status::Hardbounced && !doc.recipients.iter().any(bounced) {
        doc.status = Status::Sent; // every bounced recipient was reached again
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

/// `POST /v1/documents/{id}/recipients/send` (body `recipient_ids`).
pub fn send_to_recipients(
    cx: &mut Cx,
    pr: &Principal,
    req: &Request,
    id: &str,
) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    let f = req.body_fields()?;
    let ids = recipient_ids(&f)?;
    if !doc.status.is_active() {
        return Err(bad(
            "invalid_status",
            format!(
                "recipients can be sent a sealed, sent, reviewed, viewed or hardbounced document; this one is {}",
                doc.status.as_str()
            ),
        ));
    }
    if doc.flags.is_signing_order {
        return Err(bad(
            "signing_order",
            "with a signing order, recipients are sent the document in turn; they cannot be chosen",
        ));
    }
    for rid in &ids {
        let r = doc.recipient(rid).ok_or_else(|| {
            bad(
                "invalid_recipient",
                format!("{rid} is not a recipient of this document"),
            )
        })?;
        if !matches!(
            r.status,
            RecipientStatus::Added | RecipientStatus::Hardbounced
        ) {
            return Err(bad(
                "invalid_recipient",
                format!("the recipient {rid} is already {}", r.status.as_str()),
            ));
        }
    }
    let before = doc.clone();
    assign_links(cx, &mut doc);
    send_batch(
        cx,
        &mut doc,
        &ids,
        &Actor::user(pr, Some(req)),
        "recipients_sent",
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(no_content())
}

/// Schedules the expiry check of a sent document.
pub fn schedule_expiry(cx: &mut Cx, doc: &Document) {
    cx.p.schedule_job(JobSpec {
        kind: EXPIRE_JOB.into(),
        payload: doc.id.clone().into_bytes(),
        run_at_ms: doc.expiration_ms,
        work: None,
        scope: String::new(),
    });
}

/// `POST /v1/documents/{id}/forward`.
pub fn forward(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    let f = req.body_fields()?;
    let email = f
        .optional_str("email")?
        .map(|e| e.trim().to_string())
        .filter(|e| !e.is_empty());
    let mobile = f
        .optional_str("mobile")?
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty());
    if email.is_none() && mobile.is_none() {
        return Err(bad(
            "missing_field",
            "give the `email` or `mobile` of whom to forward to",
        ));
    }
    if let Some(e) = &email
        && !is_email(e)
    {
        return Err(bad(
            "invalid_field",
            format!("{e:?} is not a valid email address"),
        ));
    }
    if let Some(m) = &mobile
        && !super::create::is_mobile(m)
    {
        return Err(bad(
            "invalid_field",
            format!("{m:?} is not a valid mobile number"),
        ));
    }
    let transfer = f.optional_bool("transfer")?.unwrap_or(false);
    if !matches!(
        doc.status,
        Status::Sealed
            | Status::Sent
            | Status::Viewed
            | Status::Reviewed
            | Status::Hardbounced
            | Status::Signed
            | Status::SignedWithoutVerification
    ) {
        return Err(bad(
            "invalid_status",
            format!(
                "only a sealed or sent document can be forwarded; this one is {}",
                doc.status.as_str()
            ),
        ));
    }
    let same = |r: &Recipient| {
        email
            .as_ref()
            .is_some_and(|e| normalize_email(&r.email) == normalize_email(e))
            || mobile
                .as_ref()
                .is_some_and(|m| !r.mobile.is_empty() && &r.mobile == m)
    };
    let existing = doc.recipients.iter().find(|r| same(r)).cloned();
    let mut from: Option<Recipient> = None;
    if transfer {
        if doc.status.is_signed() {
            return Err(bad(
                "already_signed",
                "signing rights cannot be transferred on a signed document",
            ));
        }
        let rid = f.required_str("recipient_id")?;
        let r = doc
            .recipient(&rid)
            .ok_or_else(|| {
                bad(
                    "invalid_recipient",
                    format!("{rid} is not a recipient of this document"),
                )
            })?
            .clone();
        if r.role == Role::Cc {
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
        if matches!(
            r.status,
            RecipientStatus::NotRequired | RecipientStatus::Rejected
        ) {
            return Err(bad(
                "invalid_recipient",
                format!(
                    "this recipient is {}; they have no rights to transfer",
                    r.status.as_str()
                ),
            ));
        }
        if existing
            .as_ref()
            .is_some_and(|e| e.status.has_signed_or_approved())
        {
            return Err(bad(
                "already_signed",
                "rights cannot be transferred to a recipient who has already signed",
            ));
        }
        from = Some(r);
    }
    if existing.is_some() {
        return Err(bad(
            "already_recipient",
            "that person is already a recipient of this document",
        ));
    }
    let before = doc.clone();
    let now = cx.now();
    let new = Recipient {
        id: new_id(cx),
        first_name: f.optional_str("first_name")?.unwrap_or_default(),
        last_name: f.optional_str("last_name")?.unwrap_or_default(),
        email: email.clone().unwrap_or_default(),
        mobile: mobile.clone().unwrap_or_default(),
        phone: String::new(),
        role: from.as_ref().map_or(Role::Cc, |r| r.role),
        role_name: from.as_ref().map_or(String::new(), |r| r.role_name.clone()),
        status: RecipientStatus::Added,
        company_name: String::new(),
        company_number: String::new(),
        title: String::new(),
        note: f.optional_str("message")?.unwrap_or_default(),
        order_num: from.as_ref().map_or(
            doc.recipients
                .iter()
                .map(|r| r.order_num)
                .max()
                .unwrap_or(0)
                + 1,
            |r| r.order_num,
        ),
        contact_id: String::new(),
        secret: None,
        sent_ms: None,
        signed_ms: None,
        signing_method: None,
        ip_address: String::new(),
        viewed_ms: None,
    };
    if let Some(old) = &from {
        for r in doc.recipients.iter_mut() {
            if r.id == old.id {
                r.status = RecipientStatus::NotRequired;
            }
        }
    }
    doc.recipients.push(new);
    assign_links(cx, &mut doc);
    let idx = doc.recipients.len() - 1;
    let turn = super::jobs::first_wave(&doc).contains(&doc.recipients[idx].id);
    if doc.status != Status::Sealed && turn {
        // The document is out and it is their turn: the new recipient gets it now.
        doc.recipients[idx].status = RecipientStatus::Sent;
        doc.recipients[idx].sent_ms = Some(now);
        let r = doc.recipients[idx].clone();
        notify::invitation(cx, &doc, &r);
    }
    let r = doc.recipients.last().cloned().expect("just added");
    let extra = json!({
        "recipient": {"id": r.id, "fullname": r.fullname(), "email": r.email, "mobile": r.mobile,
                      "role": r.role.as_str(), "order_num": r.order_num.to_string()},
        "transfer": transfer,
        "forwarded_from": from.as_ref().map(|o| json!({"id": o.id, "fullname": o.fullname(), "email": o.email})),
    });
    let detail = match &from {
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
        &mut doc,
        &Actor::user(pr, Some(req)),
        "document.forwarded",
        "forwarded",
        detail,
        extra,
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(no_content())
}

/// `POST /v1/documents/{id}/expiration` (body `expiration_date`, `send_notification`).
pub fn expiration(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    let f = req.body_fields()?;
    let text = f.required_str("expiration_date")?;
    let at = parse_time(&text).ok_or_else(|| {
        bad(
            "invalid_field",
            "`expiration_date` must be an ISO 8601 timestamp, e.g. 2026-12-24T12:00:00Z",
        )
    })?;
    let now = cx.now();
    if at <= now {
        return Err(bad(
            "invalid_field",
            "`expiration_date` must be in the future",
        ));
    }
    if doc.status.is_signed()
        || matches!(
            doc.status,
            Status::Recalled | Status::Lost | Status::Rejected | Status::Archived
        )
    {
        return Err(bad(
            "invalid_status",
            format!(
                "a {} document has no expiration to change",
                doc.status.as_str()
            ),
        ));
    }
    let notify_them = f.optional_bool("send_notification")?.unwrap_or(false);
    let before = doc.clone();
    doc.expiration_ms = at;
    if doc.status == Status::Expired {
        doc.status = doc.status_before_expiry.take().unwrap_or(Status::Sent);
    }
    if doc.status.is_active() {
        schedule_expiry(cx, &doc);
    }
    if notify_them {
        for r in doc.recipients.clone() {
            if matches!(
                r.status,
                RecipientStatus::Sent | RecipientStatus::Viewed | RecipientStatus::Reviewed
            ) {
                notify::expiration_changed(cx, &doc, &r);
            }
        }
    }
    log(
        cx,
        &mut doc,
        &Actor::user(pr, Some(req)),
        "expiration_changed",
        format!("expires {}", iso8601(at)),
        None,
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(json(200, &json!({ "status": 1 })))
}

/// `POST /v1/documents/{id}/manually-sign` (body `file_id`?, `recipient_id`?,
/// `signed_at`?): with `file_id` → `signed`, without → `signedwithoutverification`.
pub fn manually_sign(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let mut doc = readable(cx, pr, id)?;
    if !access(cx, pr, &doc).owner_or_admin {
        return Err(ApiError::forbidden(
            "access_denied",
            "only the document's owner or an admin may mark it as signed",
        ));
    }
    let f = req.body_fields()?;
    if matches!(doc.status, Status::Draft | Status::Importing) || doc.status.is_signed() {
        return Err(bad(
            "invalid_status",
            format!(
                "a {} document cannot be marked as signed",
                doc.status.as_str()
            ),
        ));
    }
    let file = match f.optional_str("file_id")?.filter(|s| !s.is_empty()) {
        None => None,
        Some(fid) => Some(
            super::uploads::find(cx, pr, &fid)
                .filter(|u| u.status == super::uploads::UploadStatus::Ready && u.blob.is_some())
                .ok_or_else(|| {
                    ApiError::not_found("file_not_found", format!("no usable upload {fid}"))
                })?,
        ),
    };
    let recipient = f.optional_str("recipient_id")?.filter(|s| !s.is_empty());
    if let Some(rid) = &recipient
        && doc.recipient(rid).is_none()
    {
        return Err(ApiError::not_found(
            "recipient_not_found",
            format!("{rid} is not a recipient of this document"),
        ));
    }
    let now = cx.now();
    let signed_at = match f.optional_str("signed_at")?.filter(|s| !s.is_empty()) {
        None => now,
        Some(t) => parse_time(&t).filter(|t| *t <= now).ok_or_else(|| {
            bad(
                "invalid_field",
                "`signed_at` must be a past ISO 8601 timestamp",
            )
        })?,
    };
    let before = doc.clone();
    let (status, rstatus) = if file.is_some() {
        (Status::Signed, RecipientStatus::Signed)
    } else {
        (
            Status::SignedWithoutVerification,
            RecipientStatus::SignedWithoutVerification,
        )
    };
    for r in doc.recipients.iter_mut() {
        let chosen = recipient.as_ref().is_none_or(|rid| &r.id == rid);
        if chosen && r.role == Role::Signer && !r.status.has_signed_or_approved() {
            r.status = rstatus;
            r.signed_ms = Some(signed_at);
        }
    }
    if let Some(u) = &file {
        let blob = u.blob.clone().unwrap_or_default();
        blobs::hold(cx, &blob, &format!("doc:{}", doc.id));
        if let Some(old) = doc.final_pdf.take() {
            blobs::release(cx, &old.blob, &format!("doc:{}", doc.id));
        }
        doc.final_pdf = Some(super::model::FinalPdf {
            blob,
            size: u.size,
            sha256: u.sha256.clone(),
            content_sha256: u.sha256.clone(),
            page_count: 0,
            rendered_ms: now,
        });
    }
    doc.status = status;
    doc.sign_ms = Some(signed_at);
    doc.pending = None;
    let manual_blob = file.as_ref().and_then(|u| u.blob.clone());
    let detail = match &file {
        Some(u) => format!("marked as signed with the uploaded file {}", u.name),
        None => "marked as signed without verification".to_string(),
    };
    // The recipient of spec §6: the one named, else the first signer.
    let signed_r = doc
        .recipients
        .iter()
        .find(|r| recipient.as_ref().is_none_or(|rid| &r.id == rid) && r.role == Role::Signer)
        .or(doc.recipients.first())
        .cloned();
    let extra = json!({
        "manual": true,
        "recipient": signed_r.map(|r| {
            let mut v = super::event_recipient(&r);
            v["ip_address"] = r.ip_address.clone().into();
            v["signing_methods"] = json!([{"type": "manual", "signed_at": iso8601(signed_at), "verified_name": ""}]);
            v
        }),
        "recipients": crate::recipients::recipients_summary(&doc),
    });
    emit_and_log(
        cx,
        &mut doc,
        &Actor::user(pr, Some(req)),
        "document.signed",
        "manually_signed",
        detail,
        extra,
    );
    if let Some(blob) = manual_blob {
        // The uploaded file is the content; it gets the audit certificate and the seal.
        super::evidence::request_seal(cx, &mut doc, Some(blob));
    }
    store_doc(cx, Some(&before), &mut doc);
    Ok(Response {
        status: 200,
        headers: Vec::new(),
        body: Vec::new(),
    })
}

/// `POST /v1/documents/{id}/lost`: idempotent; one `document.lost` event.
pub fn lost(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let doc = writable(cx, pr, id)?;
    if doc.status == Status::Lost {
        return Ok(no_content());
    }
    end_with(cx, pr, doc, Status::Lost, "lost", "marked as lost")
}

/// `POST /v1/documents/{id}/revisions` (body `send_document`, `message`).
pub fn revise(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    let f = req.body_fields()?;
    let message = match f.map.get("message") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(bad("invalid_field", "`message` must be a string")),
    };
    let send = f.optional_bool("send_document")?.unwrap_or(false);
    let out = matches!(
        doc.status,
        Status::Sent | Status::Viewed | Status::Reviewed | Status::Hardbounced
    );
    if !(doc.status == Status::Sealed || out) {
        return Err(ApiError::forbidden(
            "not_revisable",
            format!(
                "only a sealed or sent document can be revised; this one is {}",
                doc.status.as_str()
            ),
        ));
    }
    if let Some(why) = signing_problem(&doc) {
        return Err(ApiError::forbidden("signing_requirements", why));
    }
    if matches!(
        doc.pending,
        Some(Pending {
            purpose: RenderPurpose::Revision { .. },
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
    let before = doc.clone();
    let now = cx.now();
    let number = doc.revisions.len() as u32 + 1;
    doc.revisions.push(super::model::Revision {
        number,
        message: message.clone(),
        created_ms: now,
        sealed_ms: None,
        content_sha256: None,
    });
    request_render(cx, &mut doc, RenderPurpose::Revision { send }, message);
    log(
        cx,
        &mut doc,
        &Actor::user(pr, Some(req)),
        "revision_created",
        format!("revision {number}"),
        None,
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(no_content())
}

/// The signers and approvers the document is waiting on (sent, viewed or reviewed).
pub fn waiting(doc: &Document) -> Vec<Recipient> {
    doc.recipients
        .iter()
        .filter(|r| r.role != Role::Cc)
        .filter(|r| {
            matches!(
                r.status,
                RecipientStatus::Sent | RecipientStatus::Viewed | RecipientStatus::Reviewed
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

/// `POST /v1/documents/{id}/reminders` → 200 `{recipient_ids, send_at}`: `message` (or
/// GetAccept's `text`),
/// `recipient_ids`, `send_at`, and GetAccept's `type` (`email` or `sms`), `not_opened`
/// (only those who have not opened it) and `not_signed` (everyone still waiting, the
/// default). All optional.
pub fn reminders(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    let f = req.body_fields()?;
    if !doc.status.is_active() {
        return Err(bad(
            "invalid_status",
            format!(
                "reminders are for sealed or sent documents; this one is {}",
                doc.status.as_str()
            ),
        ));
    }
    let sms = match f.optional_str("type")?.as_deref() {
        None | Some("" | "email") => false,
        Some("sms") => true,
        Some(other) => {
            return Err(bad(
                "invalid_field",
                format!(
                    "`type` must be email or sms, not {other:?} (video reminders are not offered)"
                ),
            ));
        }
    };
    let message = match f.optional_str("message")?.filter(|m| !m.is_empty()) {
        Some(m) => m,
        None => f.optional_str("text")?.unwrap_or_default(),
    };
    let only_unopened = f.optional_bool("not_opened")? == Some(true)
        && f.optional_bool("not_signed")? != Some(true);
    let mut who = waiting(&doc);
    if only_unopened {
        who.retain(|r| r.status == RecipientStatus::Sent);
    }
    if sms {
        who.retain(|r| !r.mobile.is_empty());
    }
    if f.has("recipient_ids") {
        let ids = recipient_ids(&f)?;
        for rid in &ids {
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
    let before = doc.clone();
    let actor = Actor::user(pr, Some(req));
    let ids: Vec<String> = who.iter().map(|r| r.id.clone()).collect();
    let mut send_at = None;
    match f.optional_str("send_at")?.filter(|s| !s.is_empty()) {
        Some(t) => {
            let at = parse_time(&t).filter(|at| *at > cx.now()).ok_or_else(|| {
                bad(
                    "invalid_field",
                    "`send_at` must be a future ISO 8601 timestamp",
                )
            })?;
            send_at = Some(iso8601(at));
            cx.p.schedule_job(JobSpec {
                kind: REMIND_JOB.into(),
                payload: serde_json::to_vec(
                    &json!({"doc": doc.id, "ids": ids, "message": message, "sms": sms}),
                )
                .unwrap_or_default(),
                run_at_ms: at,
                work: None,
                scope: String::new(),
            });
            log(
                cx,
                &mut doc,
                &actor,
                "reminder_scheduled",
                format!("reminder at {}", iso8601(at)),
                None,
            );
        }
        None => {
            remind(cx, &mut doc, &who, &message, sms, &actor);
        }
    }
    store_doc(cx, Some(&before), &mut doc);
    // 200, as GetAccept answers it, saying whom and when.
    Ok(json(
        200,
        &json!({"recipient_ids": ids, "send_at": send_at}),
    ))
}

/// What a permanent delete leaves for the erase job.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Erase {
    pub doc_id: String,
    pub blobs: Vec<String>,
    pub links: Vec<String>,
}

/// `DELETE /v1/documents/{id}`: recall a sent document, permanently delete a recalled
/// one or a draft never sent (spec §3.3, §4.2).
pub fn delete(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    if pr.entity.delete_admin_only && pr.membership.role != crate::model::Role::Admin {
        return Err(ApiError::forbidden(
            "deletion_restricted",
            "this account lets only admins delete documents",
        ));
    }
    let doc = readable(cx, pr, id)?;
    let a = access(cx, pr, &doc);
    // Never sent: not sent, not sealed (sealing hands out links), and no recipient has
    // done anything with it; a send still rendering or scheduled counts as not sent.
    let never_sent = doc.send_ms.is_none()
        && doc.status != Status::Sealed
        && doc
            .recipients
            .iter()
            .all(|r| r.status == RecipientStatus::Added);
    // A document recalled and then marked lost has been recalled: a delete removes it,
    // as it removes a recalled one, rather than recall it twice (spec §3.3).
    let recalled = doc.status == Status::Recalled
        || (doc.status == Status::Lost
            && super::trail::entries(cx, &doc.id)
                .iter()
                .any(|c| c.entry.action == "recalled"));
    if recalled || never_sent {
        if !a.owner_or_admin {
            return Err(super::doc_not_found(id));
        }
        permanently_delete(cx, &doc);
        return Ok(no_content());
    }
    if !a.write {
        return Err(super::doc_not_found(id));
    }
    end_with(
        cx,
        pr,
        doc,
        Status::Recalled,
        "recalled",
        "recalled by delete",
    )
}

/// Moves `doc` to `status` (lost, recalled), cancels any render, records
/// `document.{action}`; 204.
fn end_with(
    cx: &mut Cx,
    pr: &Principal,
    mut doc: Document,
    status: Status,
    action: &str,
    detail: &str,
) -> ApiResult<Response> {
    let before = doc.clone();
    doc.status = status;
    doc.pending = None;
    let kind = format!("document.{action}");
    emit_and_log(
        cx,
        &mut doc,
        &Actor::user(pr, None),
        &kind,
        action,
        detail,
        json!({}),
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(no_content())
}

fn permanently_delete(cx: &mut Cx, doc: &Document) {
    remove_doc(cx, doc);
    let mut blob_ids: Vec<String> = doc.files.iter().map(|f| f.blob.clone()).collect();
    blob_ids.extend(doc.attachments.iter().map(|a| a.blob.clone()));
    blob_ids.extend(doc.final_pdf.iter().map(|p| p.blob.clone()));
    blob_ids.extend(super::signatures::blobs(cx, &doc.id));
    blob_ids.extend(super::pages::blobs(cx, &doc.id));
    blob_ids.extend(
        doc.sources
            .iter()
            .filter(|s| s.upload_id.is_none())
            .filter_map(|s| s.blob.clone()),
    );
    blob_ids.sort();
    blob_ids.dedup();
    let erase = Erase {
        doc_id: doc.id.clone(),
        blobs: blob_ids,
        links: doc
            .recipients
            .iter()
            .filter_map(|r| r.secret.as_ref().map(|s| sha256_hex(s.as_bytes())))
            .collect(),
    };
    for l in &erase.links {
        cx.p.delete(&link_key(l)); // the links stop working at once
    }
    let now = cx.now();
    cx.p.schedule_job(JobSpec {
        kind: ERASE_JOB.into(),
        payload: serde_json::to_vec(&erase).unwrap_or_default(),
        run_at_ms: now,
        work: None,
        scope: String::new(),
    });
}

fn opt_time(f: &Fields, name: &str) -> ApiResult<Option<Option<u64>>> {
    if !f.map.contains_key(name) {
        return Ok(None);
    }
    match f.optional_str(name)?.filter(|s| !s.is_empty()) {
        None => Ok(Some(None)),
        Some(t) => parse_time(&t).map(|v| Some(Some(v))).ok_or_else(|| {
            bad(
                "invalid_field",
                format!("`{name}` must be an ISO 8601 timestamp"),
            )
        }),
    }
}

/// `PUT /v1/documents/{id}`: the properties allowed for the status; 400 for any other.
pub fn update(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    let f = req.body_fields()?;
    const DRAFT: &[&str] = &[
        "external_id",
        "external_client_id",
        "is_private",
        "value",
        "comment_settings",
        "sign_redirect",
        "block_recipient_invite",
        "sign_copy_emails",
    ];
    const LATER: &[&str] = &[
        "value",
        "contract_start_date",
        "contract_end_date",
        "tags",
        "is_private",
        "comment_settings",
        "sign_redirect",
        "block_recipient_invite",
        "sign_copy_emails",
    ];
    let draft = matches!(doc.status, Status::Draft | Status::Importing);
    let allowed = if draft { DRAFT } else { LATER };
    if let Some(k) = f.map.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(bad(
            "property_not_allowed",
            format!(
                "`{k}` cannot be updated while the document is {}; allowed: {}",
                doc.status.as_str(),
                allowed.join(", ")
            ),
        ));
    }
    let before = doc.clone();
    if let Some(v) = f.optional_str("external_id")? {
        doc.external_id = v;
    }
    if let Some(v) = f.optional_str("external_client_id")? {
        doc.external_client_id = v;
    }
    if let Some(v) = f.optional_bool("is_private")? {
        doc.flags.is_private = v;
    }
    if let Some(v) = f.optional_number("value")? {
        doc.value = v;
    }
    match f.map.get("comment_settings") {
        None => {}
        Some(Value::String(s)) => doc.comment_settings = s.clone(),
        Some(Value::Null) => doc.comment_settings.clear(),
        Some(v) => doc.comment_settings = v.to_string(),
    }
    if let Some(v) = f.optional_str("sign_redirect")? {
        if !v.is_empty() && !v.starts_with("https://") {
            return Err(bad(
                "invalid_field",
                "`sign_redirect` must be an https:// URL",
            ));
        }
        doc.sign_redirect = v;
    }
    if let Some(v) = f.optional_bool("block_recipient_invite")? {
        doc.block_recipient_invite = v;
    }
    if f.has("sign_copy_emails") {
        let emails: Vec<String> = match &f.map["sign_copy_emails"] {
            Value::Array(a) => a
                .iter()
                .map(|v| v.as_str().unwrap_or("").trim().to_string())
                .collect(),
            Value::String(s) => s
                .split(',')
                .map(|x| x.trim().to_string())
                .filter(|x| !x.is_empty())
                .collect(),
            _ => {
                return Err(bad(
                    "invalid_field",
                    "`sign_copy_emails` must be a list of emails",
                ));
            }
        };
        if let Some(e) = emails.iter().find(|e| !is_email(e)) {
            return Err(bad(
                "invalid_field",
                format!("`sign_copy_emails`: {e:?} is not an email address"),
            ));
        }
        doc.sign_copy_emails = emails;
    }
    if let Some(v) = opt_time(&f, "contract_start_date")? {
        doc.contract_start_ms = v;
    }
    if let Some(v) = opt_time(&f, "contract_end_date")? {
        doc.contract_end_ms = v;
    }
    if let Some(v) = super::create::tags_text(&f)? {
        doc.tags = super::create::normalize_tags(&v);
        doc.tags_raw = v;
    }
    let changed: Vec<&str> = f.map.keys().map(String::as_str).collect();
    log(
        cx,
        &mut doc,
        &Actor::user(pr, Some(req)),
        "updated",
        changed.join(", "),
        None,
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(no_content())
}

/// `PUT /v1/documents/{id}/pricing-tables`: replaces the tables; a sealed or sent
/// document is rendered again so its PDF shows them.
pub fn put_pricing_tables(
    cx: &mut Cx,
    pr: &Principal,
    req: &Request,
    id: &str,
) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    let f = req.body_fields()?;
    let raw = f
        .optional_json("pricing_tables")?
        .ok_or_else(|| bad("missing_field", "the field `pricing_tables` is required"))?;
    let tables = super::pricing::parse_tables(raw)?;
    if doc.status.is_signed()
        || matches!(
            doc.status,
            Status::Recalled | Status::Lost | Status::Rejected
        )
    {
        return Err(bad(
            "invalid_status",
            format!(
                "the pricing of a {} document cannot change",
                doc.status.as_str()
            ),
        ));
    }
    let before = doc.clone();
    doc.pricing_tables = tables;
    let actor = Actor::user(pr, Some(req));
    match doc.pending.clone() {
        // A render is under way: render again with the new tables, for the same purpose.
        Some(p) => request_render(cx, &mut doc, p.purpose, p.message),
        None if doc.final_pdf.is_some() => {
            request_render(cx, &mut doc, RenderPurpose::Refresh, String::new())
        }
        None => {}
    }
    let detail = format!("{} table(s)", doc.pricing_tables.len());
    log(cx, &mut doc, &actor, "pricing_updated", detail, None);
    store_doc(cx, Some(&before), &mut doc);
    // 204, as GetAccept answers it; `GET .../pricing-tables` reads them with totals.
    Ok(no_content())
}

/// `POST /v1/documents/{id}/comments` (body `text`, `internal`?, `suggestion`?).
pub fn comment(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let mut doc = readable(cx, pr, id)?;
    let f = req.body_fields()?;
    let text = f.required_str("text")?;
    let suggestion = f.optional_bool("suggestion")?.unwrap_or(false);
    // Checked even when a suggestion makes it moot: a bad member is a 400 either way.
    let internal = f.optional_bool("internal")?.unwrap_or(false);
    if suggestion && !access(cx, pr, &doc).write {
        return Err(ApiError::forbidden(
            "access_denied",
            "only those who may change the document can make a suggestion (it blocks sending)",
        ));
    }
    let c = Comment {
        id: new_id(cx),
        text,
        author_type: "user".into(),
        author_id: pr.user.id.clone(),
        author_name: user_name(&pr.user),
        author_email: pr.user.email.clone(),
        created_ms: cx.now(),
        internal: suggestion || internal,
        suggestion,
        resolved: false,
    };
    cx.save(&comment_key(&doc.id, c.created_ms, &c.id), &c);
    let before = doc.clone();
    let extra = json!({"event_meta": {
        "comment_id": c.id, "created_by": c.author_name, "created_at": iso8601(c.created_ms),
        "text": c.text,
    }});
    emit_and_log(
        cx,
        &mut doc,
        &Actor::user(pr, Some(req)),
        "comment.created",
        "commented",
        "comment added",
        extra,
    );
    store_doc(cx, Some(&before), &mut doc);
    // GetAccept answers `{comment_id}`; the comment itself comes with it.
    let mut out = comment_json(&c);
    out["comment_id"] = json!(c.id);
    Ok(json(200, &out))
}

/// `POST /v1/documents/{id}/comments/{comment}/resolve`.
pub fn resolve_comment(cx: &mut Cx, pr: &Principal, id: &str, cid: &str) -> ApiResult<Response> {
    let doc = writable(cx, pr, id)?;
    let (start, end) = comments_prefix(&doc.id);
    for (k, v) in cx.p.scan(&start, &end, u32::MAX, false) {
        let mut c: Comment = decode(&v);
        if c.id == cid {
            c.resolved = true;
            cx.save(&k, &c);
            return Ok(no_content());
        }
    }
    Err(ApiError::not_found(
        "comment_not_found",
        format!("no comment {cid}"),
    ))
}
