//! The recipient API: what the secret in a recipient's `document_url` allows. The
//! signing page calls it; it moves the recipient's and the document's statuses (spec §3)
//! and emits the recipient events (§6).
//!
//! | route | effect |
//! |---|---|
//! | `GET /v1/recipient/{secret}` | the document as this recipient sees it |
//! | `POST .../view` | first time: recipient and document `viewed`, `document.viewed` |
//! | `POST .../review` | read every page: `reviewed`, `document.reviewed` |
//! | `POST .../comment` (`text`) | `comment.created` and `document.commented` |
//! | `POST .../sign` (`signing_method`?, `verified_name`?) | a signer signs: `document.partially_signed`, or `document.signed` when it completes the document |
//! | `POST .../approve` | an approver approves: `document.approved` (and `document.signed` when it completes the document) |
//! | `POST .../reject` (`reason`?) | recipient and document `rejected`, `document.rejected` |
//! | `GET .../download` | the PDF, `document.downloaded` |
//! | `POST .../print` | `document.printed` |
//!
//! An unknown link is 404; a document not out with recipients (recalled, lost, not yet
//! sent) is 410; an act the recipient's role or turn does not allow is 403; one the
//! state does not allow is 400.

use super::model::{
    Comment, Document, RecipientStatus, RenderPurpose, Role, Status, comment_key, link_key,
};
use super::read::{comment_json, current_pdf};
use super::{Actor, client_of, emit_and_log, event_recipient, load_doc, notify, store_doc};
use crate::http::{ApiError, ApiResult, json};
#[allow(unused_imports)]
use crate::prelude::*;
use crate::router::method_not_allowed;
use crate::util::{iso8601, new_id, sha256_hex};
use crate::{Cx, Request, Response};
use serde_json::{Value, json};

fn link_not_found() -> ApiError {
    ApiError::not_found("link_not_found", "this link is not valid (any more)")
}

/// The document and the recipient's index behind a link secret.
fn by_secret(cx: &mut Cx, secret: &str) -> ApiResult<(Document, usize)> {
    let target =
        cx.p.get(&link_key(&sha256_hex(secret.as_bytes())))
            .and_then(|v| String::from_utf8(v).ok())
            .ok_or_else(link_not_found)?;
    let (doc_id, rid) = target.split_once('/').ok_or_else(link_not_found)?;
    let doc = load_doc(cx, doc_id).ok_or_else(link_not_found)?;
    let i = doc
        .recipients
        .iter()
        .position(|r| r.id == rid && r.secret.as_deref() == Some(secret))
        .ok_or_else(link_not_found)?;
    Ok((doc, i))
}

/// 410 unless the document is out with its recipients (or finished).
fn check_available(doc: &Document) -> ApiResult<()> {
    match doc.status {
        Status::Draft
        | Status::Importing
        | Status::Processing
        | Status::Scheduled
        | Status::Recalled
        | Status::Lost => Err(ApiError::new(
            410,
            "document_unavailable",
            format!("the document is not available ({})", doc.status.as_str()),
        )),
        _ => Ok(()),
    }
}

/// 400 unless the document can still be acted on (not signed, rejected or expired).
fn check_open(doc: &Document) -> ApiResult<()> {
    if doc.status.is_active() {
        Ok(())
    } else {
        Err(ApiError::bad_request(
            "invalid_status",
            format!(
                "the document is {}; it can no longer be signed or changed",
                doc.status.as_str()
            ),
        ))
    }
}

/// `/v1/recipient/{secret}/...`
pub fn route(cx: &mut Cx, req: &Request, secret: &str, rest: &[&str]) -> ApiResult<Response> {
    let m = req.method.as_str();
    let (doc, i) = by_secret(cx, secret)?;
    check_available(&doc)?;
    match (m, rest) {
        ("GET", []) => Ok(json(200, &recipient_view(cx, &doc, i))),
        ("POST", ["view"]) => act(cx, req, doc, i, Act::View),
        ("POST", ["review"]) => act(cx, req, doc, i, Act::Review),
        ("POST", ["comment"]) => comment(cx, req, doc, i),
        ("POST", ["sign"]) => act(cx, req, doc, i, Act::Sign),
        ("POST", ["approve"]) => act(cx, req, doc, i, Act::Approve),
        ("POST", ["reject"]) => act(cx, req, doc, i, Act::Reject),
        ("POST", ["print"]) => act(cx, req, doc, i, Act::Print),
        ("GET", ["download"]) => download(cx, req, doc, i),
        (_, []) | (_, ["download"]) => Err(method_not_allowed(m, &["GET"])),
        (_, ["view" | "review" | "comment" | "sign" | "approve" | "reject" | "print"]) => {
            Err(method_not_allowed(m, &["POST"]))
        }
        _ => Err(ApiError::not_found("not_found", "no such endpoint")),
    }
}

fn recipient_view(cx: &mut Cx, doc: &Document, i: usize) -> Value {
    let r = &doc.recipients[i];
    let me = crate::util::normalize_email(&r.email);
    json!({
        "document": {
            "id": doc.id, "name": doc.name, "status": doc.status.as_str(), "value": doc.value,
            "sender_name": doc.sender.name, "sender_email": doc.sender.email,
            "expiration_date": iso8601(doc.expiration_ms), "page_count": doc.page_count(),
            "is_signing": doc.flags.is_signing, "is_signing_order": doc.flags.is_signing_order,
            "pricing_tables": super::pricing::tables_json(&doc.pricing_tables),
            "attachments": doc.attachments.iter()
                .filter(|a| a.restricted_to.as_ref().is_none_or(|to| *to == me))
                .map(|a| json!({"id": a.id, "name": a.name, "size": a.size}))
                .collect::<Vec<_>>(),
            "has_pdf": current_pdf(doc).is_some(),
        },
        "recipient": super::read::recipient_json(cx, r, false),
        "recipients": doc.recipients.iter()
            .map(|o| json!({"fullname": o.fullname(), "role": o.role.as_str(), "status": o.status.as_str(), "order_num": o.order_num.to_string()}))
            .collect::<Vec<_>>(),
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Act {
    View,
    Review,
    Sign,
    Approve,
    Reject,
    Print,
}

fn forbidden(why: &str) -> ApiError {
    ApiError::forbidden("not_allowed", why.to_string())
}

/// The actor behind a link.
/// The recorded address is the peer's: a recipient cannot set it with `CLIENT_IP`,
/// which only the API's seal and send accept from the sender's own server.
fn recipient_actor(doc: &Document, i: usize, req: &Request) -> Actor {
    let r = &doc.recipients[i];
    let (user_agent, _) = client_of(req);
    let ip = req.remote_addr.clone();
    Actor {
        kind: "recipient",
        id: r.id.clone(),
        name: r.fullname(),
        ip,
        user_agent,
    }
}

/// Whether every signer has signed and every approver approved.
fn complete(doc: &Document) -> bool {
    doc.recipients.iter().all(|r| match r.role {
        Role::Signer => matches!(
            r.status,
            RecipientStatus::Signed
                | RecipientStatus::SignedWithoutVerification
                | RecipientStatus::NotRequired
        ),
        Role::Approver => matches!(
            r.status,
            RecipientStatus::Approved | RecipientStatus::NotRequired
        ),
        Role::Cc => true,
    })
}

/// With a signing order: 403 unless every signer and approver before `i` is done.
fn check_turn(doc: &Document, i: usize) -> ApiResult<()> {
    if !doc.flags.is_signing_order {
        return Ok(());
    }
    let mine = doc.recipients[i].order_num;
    let waiting = doc.recipients.iter().any(|r| {
        r.role != Role::Cc
            && r.order_num < mine
            && !r.status.has_signed_or_approved()
            && r.status != RecipientStatus::NotRequired
    });
    if waiting {
        return Err(forbidden(
            "it is not your turn yet: earlier recipients in the signing order have not finished",
        ));
    }
    Ok(())
}

fn act(cx: &mut Cx, req: &Request, mut doc: Document, i: usize, what: Act) -> ApiResult<Response> {
    let f = req.body_fields()?;
    let before = doc.clone();
    let actor = recipient_actor(&doc, i, req);
    let now = cx.now();
    let r = doc.recipients[i].clone();
    let ev_recipient = |d: &Document| event_recipient(&d.recipients[i]);
    match what {
        Act::View => {
            doc.views += 1;
            if doc.recipients[i].viewed_ms.is_none() {
                doc.recipients[i].viewed_ms = Some(now);
                if matches!(r.status, RecipientStatus::Added | RecipientStatus::Sent) {
                    doc.recipients[i].status = RecipientStatus::Viewed;
                }
                if matches!(doc.status, Status::Sealed | Status::Sent) {
                    doc.status = Status::Viewed;
                }
                let extra = json!({"recipient": ev_recipient(&doc)});
                emit_and_log(
                    cx,
                    &mut doc,
                    &actor,
                    "document.viewed",
                    "viewed",
                    "opened by the recipient",
                    extra,
                );
            }
        }
        Act::Review => {
            check_open(&doc)?;
            if matches!(
                r.status,
                RecipientStatus::Added | RecipientStatus::Sent | RecipientStatus::Viewed
            ) {
                doc.recipients[i].status = RecipientStatus::Reviewed;
                doc.recipients[i].viewed_ms.get_or_insert(now);
                if matches!(doc.status, Status::Sealed | Status::Sent | Status::Viewed) {
                    doc.status = Status::Reviewed;
                }
                let extra = json!({"recipient": ev_recipient(&doc)});
                emit_and_log(
                    cx,
                    &mut doc,
                    &actor,
                    "document.reviewed",
                    "reviewed",
                    "every page read",
                    extra,
                );
            }
        }
        Act::Sign | Act::Approve => {
            check_open(&doc)?;
            let (role, done, word) = if what == Act::Sign {
                (Role::Signer, RecipientStatus::Signed, "sign")
            } else {
                (Role::Approver, RecipientStatus::Approved, "approve")
            };
            if r.role != role {
                return Err(forbidden(&format!(
                    "only a recipient with the role {} can {word}",
                    role.as_str()
                )));
            }
            if r.status.is_finished() {
                return Err(ApiError::bad_request(
                    "invalid_status",
                    format!("you are already {}", r.status.as_str()),
                ));
            }
            check_turn(&doc, i)?;
            let method = f
                .optional_str("signing_method")?
                .unwrap_or_else(|| "link".into());
            let verified = f.optional_str("verified_name")?.unwrap_or_default();
            let rr = &mut doc.recipients[i];
            rr.status = done;
            rr.signed_ms = Some(now);
            rr.ip_address = actor.ip.clone();
            rr.viewed_ms.get_or_insert(now);
            if what == Act::Sign {
                rr.signing_method = Some((method, verified));
            }
            finish_signature(cx, &mut doc, i, &actor, what == Act::Sign);
        }
        Act::Reject => {
            check_open(&doc)?;
            if r.role == Role::Cc {
                return Err(forbidden("a CC recipient cannot reject the document"));
            }
            if r.status.is_finished() {
                return Err(ApiError::bad_request(
                    "invalid_status",
                    format!(
                        "you are {}; there is nothing left to reject",
                        r.status.as_str()
                    ),
                ));
            }
            let reason = f.optional_str("reason")?.filter(|s| !s.trim().is_empty());
            doc.recipients[i].status = RecipientStatus::Rejected;
            doc.recipients[i].ip_address = actor.ip.clone();
            doc.status = Status::Rejected;
            doc.rejection_reason = reason.clone();
            let extra = json!({"recipient": ev_recipient(&doc), "rejection_reason": reason});
            emit_and_log(
                cx,
                &mut doc,
                &actor,
                "document.rejected",
                "rejected",
                "rejected by the recipient",
                extra,
            );
            notify::owner_notice(
                cx,
                &doc,
                format!("\"{}\" was rejected", doc.name),
                format!(
                    "{} rejected the document. Reason: {}",
                    r.fullname(),
                    reason.as_deref().unwrap_or("none given")
                ),
            );
        }
        Act::Print => {
            let extra = json!({"recipient": ev_recipient(&doc)});
            emit_and_log(
                cx,
                &mut doc,
                &actor,
                "document.printed",
                "printed",
                "printed by the recipient",
                extra,
            );
        }
    }
    store_doc(cx, Some(&before), &mut doc);
    Ok(json(
        200,
        &json!({"status": doc.status.as_str(), "recipient_status": doc.recipients[i].status.as_str()}),
    ))
}

/// After a signature or approval: `document.signed` when the document is complete (and
/// the PDF is rendered again with the signatures), else `document.partially_signed` /
/// `document.approved`, and with a signing order the next group is invited.
fn finish_signature(cx: &mut Cx, doc: &mut Document, i: usize, actor: &Actor, signed: bool) {
    let now = cx.now();
    let r = doc.recipients[i].clone();
    let mut rj = event_recipient(&r);
    rj["ip_address"] = r.ip_address.clone().into();
    rj["signing_methods"] = match &r.signing_method {
        Some((kind, name)) => {
            json!([{"type": kind, "signed_at": iso8601(now), "verified_name": name}])
        }
        None => json!([]),
    };
    if !signed {
        let extra = json!({"recipient": rj.clone()});
        emit_and_log(
            cx,
            doc,
            actor,
            "document.approved",
            "approved",
            "approved by the recipient",
            extra,
        );
    }
    if complete(doc) {
        doc.status = Status::Signed;
        doc.sign_ms = Some(now);
        let extra = json!({
            "document": {"id": doc.id, "name": doc.name, "status": doc.status.as_str(), "sign_date": iso8601(now)},
            "recipient": rj,
            "recipients": recipients_summary(doc),
        });
        emit_and_log(
            cx,
            doc,
            actor,
            "document.signed",
            "signed",
            "signed by every signer",
            extra,
        );
        super::lifecycle::request_render(cx, doc, RenderPurpose::Refresh, String::new());
        notify::owner_notice(
            cx,
            doc,
            format!("\"{}\" is signed", doc.name),
            "Every signer has signed the document.".into(),
        );
        return;
    }
    if signed {
        let extra = json!({
            "recipient": rj,
            "recipients": recipients_summary(doc),
        });
        emit_and_log(
            cx,
            doc,
            actor,
            "document.partially_signed",
            "partially_signed",
            "signed by a recipient; others are still to sign",
            extra,
        );
    }
    if doc.flags.is_signing_order {
        invite_next_group(cx, doc);
    }
}

/// `recipients` of the signing events (spec §6): fullname, role, status of each.
pub fn recipients_summary(doc: &Document) -> Value {
    doc.recipients
        .iter()
        .map(|o| json!({"fullname": o.fullname(), "role": o.role.as_str(), "status": o.status.as_str()}))
        .collect()
}

/// With a signing order: invites the next group whose turn has come.
fn invite_next_group(cx: &mut Cx, doc: &mut Document) {
    let pending = |r: &super::model::Recipient| {
        r.role != Role::Cc
            && !r.status.has_signed_or_approved()
            && r.status != RecipientStatus::NotRequired
    };
    let Some(next) = doc
        .recipients
        .iter()
        .filter(|r| pending(r))
        .map(|r| r.order_num)
        .min()
    else {
        return;
    };
    let now = cx.now();
    for j in 0..doc.recipients.len() {
        let r = &doc.recipients[j];
        if pending(r) && r.order_num == next && r.status == RecipientStatus::Added {
            doc.recipients[j].status = RecipientStatus::Sent;
            doc.recipients[j].sent_ms = Some(now);
            let r = doc.recipients[j].clone();
            notify::invitation(cx, doc, &r);
        }
    }
}

fn comment(cx: &mut Cx, req: &Request, mut doc: Document, i: usize) -> ApiResult<Response> {
    let f = req.body_fields()?;
    let text = f.required_str("text")?;
    let r = doc.recipients[i].clone();
    let c = Comment {
        id: new_id(cx),
        text,
        author_type: "recipient".into(),
        author_id: r.id.clone(),
        author_name: r.fullname(),
        author_email: r.email.clone(),
        created_ms: cx.now(),
        internal: false,
        suggestion: false,
        resolved: false,
    };
    cx.save(&comment_key(&doc.id, c.created_ms, &c.id), &c);
    let before = doc.clone();
    let actor = recipient_actor(&doc, i, req);
    let meta = json!({"comment_id": c.id, "created_by": c.author_name, "created_at": iso8601(c.created_ms), "text": c.text});
    let extra = json!({"event_meta": meta, "recipient": event_recipient(&r)});
    emit_and_log(
        cx,
        &mut doc,
        &actor,
        "comment.created",
        "commented",
        "comment by the recipient",
        extra.clone(),
    );
    emit_and_log(
        cx,
        &mut doc,
        &actor,
        "document.commented",
        "commented",
        "comment by the recipient",
        extra,
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(json(200, &comment_json(&c)))
}

fn download(cx: &mut Cx, req: &Request, mut doc: Document, i: usize) -> ApiResult<Response> {
    let (blob, _) = current_pdf(&doc)
        .ok_or_else(|| ApiError::not_found("pdf_not_ready", "the document has no PDF yet"))?;
    let bytes = cx.p.get_blob(&blob).ok_or_else(|| {
        ApiError::not_found("pdf_not_ready", "the document's PDF is not stored any more")
    })?;
    let before = doc.clone();
    let actor = recipient_actor(&doc, i, req);
    let base = cx.settings().base_url.trim_end_matches('/').to_string();
    let r = &doc.recipients[i];
    let extra = json!({
        "document": {"id": doc.id, "name": doc.name, "status": doc.status.as_str(),
                     "download_url": format!("{base}/v1/documents/{}/download", doc.id)},
        "recipient": {"fullname": r.fullname(), "email": r.email, "role": r.role.as_str()},
    });
    emit_and_log(
        cx,
        &mut doc,
        &actor,
        "document.downloaded",
        "downloaded",
        "PDF downloaded by the recipient",
        extra,
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(Response {
        status: 200,
        headers: vec![("content-type".into(), "application/pdf".into())],
        body: bytes,
    })
}
