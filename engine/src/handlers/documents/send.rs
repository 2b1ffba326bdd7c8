//! Sending a draft and what follows it out: send, seal, send to chosen recipients,
//! forward (or transfer signing rights), and revisions.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult, Fields, json, no_content};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, is_email, new_id, normalize_email};
use crate::domain::access::writable;
use crate::domain::accounts::{self, Membership, User, membership_key, user_key, user_name};
use crate::domain::auth::Principal;
use crate::domain::document::{self, Document, Pending, Recipient, Sender, store_doc};
use crate::domain::document_states::{self as states, Move, may};
use crate::domain::events::emit_and_log;
use crate::domain::notify;
use crate::domain::rendering::request_render;
use crate::domain::sending::{
    self, assign_links, restricted_attachment_problem, send_batch, signing_group_problem,
    signing_problem, start_send,
};
use crate::domain::trail::{self, log};
use crate::handlers::documents::input::recipient_ids;
use crate::handlers::shapes::{self, DetailOptions, detail_json, recipient_json};
use serde_json::{Value, json};

/// The sender named by `sender_id` or `sender_email` (an active user of the document's
/// entity; naming anyone but oneself is for admins, `sending::may_send_as`), or the
/// document's owner; plus the device (`User-Agent`) and the address the request came
/// from (never the client's own `CLIENT_IP`).
fn resolve_sender(
    cx: &mut Cx,
    pr: &Principal,
    doc: &Document,
    req: &Request,
    f: &Fields,
) -> ApiResult<Sender> {
    let invalid = |why: String| bad("invalid_sender", why);
    let by_id = f.optional_str("sender_id")?.filter(|s| !s.is_empty());
    let by_email = f.optional_str("sender_email")?.filter(|s| !s.is_empty());
    // Naming anyone but oneself is refused before anything is looked up, so the
    // refusal tells nothing about which emails have accounts.
    let me = match (&by_id, &by_email) {
        (Some(id), _) => *id == pr.user.id,
        (None, Some(email)) => normalize_email(email) == normalize_email(&pr.user.email),
        (None, None) => true,
    };
    if !me {
        sending::may_send_as(pr)?;
    }
    // One answer for an unknown sender and another entity's account, so it tells an
    // admin nothing about other entities' accounts.
    let named = by_id.clone().or(by_email.clone()).unwrap_or_default();
    let not_member = || {
        invalid(format!(
            "{named} is not an active member of the document's entity"
        ))
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
    let (user_agent, ip) = trail::client_of(req);
    Ok(Sender {
        user_id: user.id.clone(),
        name: user_name(&user),
        email: user.email.clone(),
        user_agent,
        ip,
    })
}

/// `POST /v1/documents/{id}/send`.
pub fn send(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    may(&doc, Move::Send)?;
    let f = req.body_fields()?;
    let sender = resolve_sender(cx, pr, &doc, req, &f)?;
    let before = doc.clone();
    let actor = trail::Actor::user(pr, Some(req));
    start_send(cx, &mut doc, &actor, sender)?;
    store_doc(cx, Some(&before), &mut doc);
    let o = DetailOptions {
        with_links: true,
        ..shapes::DetailOptions::default()
    };
    Ok(json(200, &detail_json(cx, &doc, o)))
}

/// `POST /v1/documents/{id}/seal`.
pub fn seal(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    may(&doc, Move::Seal)?;
    let f = req.body_fields()?;
    let sender = resolve_sender(cx, pr, &doc, req, &f)?;
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
    let actor = trail::Actor::user(pr, Some(req));
    let now = cx.now();
    if doc.flags.is_selfsign {
        // The sender signs their own copy first.
        let me = normalize_email(&doc.sender.email);
        for r in doc.recipients.iter_mut() {
            if r.role == document::Role::Signer && normalize_email(&r.email) == me {
                r.status = document::RecipientStatus::Signed;
                r.signed_ms = Some(now);
            }
        }
    }
    request_render(cx, &mut doc, document::RenderPurpose::Seal, String::new());
    let detail = format!("sender {}", doc.sender.email);
    log(cx, &mut doc, &actor, "seal_requested", detail, None);
    store_doc(cx, Some(&before), &mut doc);
    let recipients: Vec<Value> = doc
        .recipients
        .iter()
        .map(|r| recipient_json(cx, &doc.id, r, true))
        .collect();
    Ok(json(200, &json!({ "recipients": recipients })))
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
    may(&doc, Move::SendToRecipients)?;
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
            document::RecipientStatus::Added | document::RecipientStatus::Hardbounced
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
        &trail::Actor::user(pr, Some(req)),
        "recipients_sent",
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(no_content())
}

/// `POST /v1/documents/{id}/forward`.
#[expect(
    clippy::too_many_lines,
    reason = "older than the 70-line rule (issue 49)"
)]
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
        && !util::is_mobile(m)
    {
        return Err(bad(
            "invalid_field",
            format!("{m:?} is not a valid mobile number"),
        ));
    }
    let transfer = f.optional_bool("transfer")?.unwrap_or(false);
    may(&doc, Move::Forward)?;
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
        may(&doc, Move::TransferRights)?;
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
        if matches!(
            r.status,
            document::RecipientStatus::NotRequired | document::RecipientStatus::Rejected
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
    if doc.recipients.len() >= document::MAX_RECIPIENTS {
        return Err(bad(
            "invalid_field",
            format!(
                "a document has at most {} recipients",
                document::MAX_RECIPIENTS
            ),
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
        role: from.as_ref().map_or(document::Role::Cc, |r| r.role),
        role_name: from.as_ref().map_or(String::new(), |r| r.role_name.clone()),
        status: document::RecipientStatus::Added,
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
                r.status = document::RecipientStatus::NotRequired;
            }
        }
    }
    doc.recipients.push(new);
    assign_links(cx, &mut doc);
    let idx = doc.recipients.len() - 1;
    let turn = sending::first_wave(&doc).contains(&doc.recipients[idx].id);
    if !states::sealed_only(&doc) && turn {
        // The document is out and it is their turn: the new recipient gets it now.
        doc.recipients[idx].status = document::RecipientStatus::Sent;
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
        &trail::Actor::user(pr, Some(req)),
        "document.forwarded",
        "forwarded",
        detail,
        extra,
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(no_content())
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
    may(&doc, Move::Revise)?;
    if let Some(why) = signing_problem(&doc) {
        return Err(http::ApiError::forbidden("signing_requirements", why));
    }
    if matches!(
        doc.pending,
        Some(Pending {
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
    let before = doc.clone();
    let now = cx.now();
    let number = doc.revisions.len() as u32 + 1;
    doc.revisions.push(document::Revision {
        number,
        message: message.clone(),
        created_ms: now,
        sealed_ms: None,
        content_sha256: None,
    });
    request_render(
        cx,
        &mut doc,
        document::RenderPurpose::Revision { send },
        message,
    );
    log(
        cx,
        &mut doc,
        &trail::Actor::user(pr, Some(req)),
        "revision_created",
        format!("revision {number}"),
        None,
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(no_content())
}

fn bad(code: &'static str, text: impl Into<String>) -> ApiError {
    ApiError::bad_request(code, text)
}
