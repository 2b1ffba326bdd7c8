//! What a recipient does: view, review, comment, sign, approve, reject, download,
//! print; the statuses they move and the events they emit (spec §3, §6).

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{iso8601, new_id};
use crate::domain::document::{self, Comment, Document, comment_key, store_doc};
use crate::domain::downloads::current_pdf;
use crate::domain::events::{emit_and_log, event_recipient, recipients_summary};
use crate::domain::links::check_open;
use crate::domain::trail::{Actor, client_of};
use crate::domain::{evidence, identity, notify, signatures};
use crate::handlers::shapes::comment_json;
use serde_json::json;

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Act {
    View,
    Review,
    Sign,
    Approve,
    Reject,
    Print,
}

fn forbidden(why: &str) -> ApiError {
    http::ApiError::forbidden("not_allowed", why.to_string())
}

/// The actor behind a link.
/// The recorded address is the peer's; a recipient's `CLIENT_IP` is not recorded at
/// all (a member's is, beside the peer's: `trail::asserted_ip`).
fn recipient_actor(doc: &Document, i: usize, req: &Request) -> Actor {
    let r = &doc.recipients[i];
    let (user_agent, ip) = client_of(req);
    Actor {
        kind: "recipient",
        id: r.id.clone(),
        name: r.fullname(),
        ip,
        client_asserted_ip: String::new(),
        user_agent,
    }
}

/// Whether every signer has signed and every approver approved.
fn complete(doc: &Document) -> bool {
    doc.recipients.iter().all(|r| match r.role {
        document::Role::Signer => matches!(
            r.status,
            document::RecipientStatus::Signed
                | document::RecipientStatus::SignedWithoutVerification
                | document::RecipientStatus::NotRequired
        ),
        document::Role::Approver | document::Role::ExternalApprover => matches!(
            r.status,
            document::RecipientStatus::Approved | document::RecipientStatus::NotRequired
        ),
        document::Role::Cc => true,
    })
}

/// With a signing order: 403 unless every signer and approver before `i` is done.
pub(super) fn check_turn(doc: &Document, i: usize) -> ApiResult<()> {
    if !doc.flags.is_signing_order {
        return Ok(());
    }
    let mine = doc.recipients[i].order_num;
    let waiting = doc.recipients.iter().any(|r| {
        r.role != document::Role::Cc
            && r.order_num < mine
            && !r.status.has_signed_or_approved()
            && r.status != document::RecipientStatus::NotRequired
    });
    if waiting {
        return Err(forbidden(
            "it is not your turn yet: earlier recipients in the signing order have not finished",
        ));
    }
    Ok(())
}

pub(super) fn act(
    cx: &mut Cx,
    req: &Request,
    doc: Document,
    i: usize,
    what: Act,
) -> ApiResult<Response> {
    act_verified(cx, req, doc, i, what, &[])
}

/// An act, with the identity checks the request passed (recorded with a signature).
#[expect(
    clippy::too_many_lines,
    reason = "older than the 70-line rule (issue 49)"
)]
pub(super) fn act_verified(
    cx: &mut Cx,
    req: &Request,
    mut doc: Document,
    i: usize,
    what: Act,
    passes: &[identity::Pass],
) -> ApiResult<Response> {
    let f = req.body_fields()?;
    if f.has("signing_method") || f.has("verified_name") {
        return Err(http::ApiError::bad_request(
            "unknown_field",
            "`signing_method` and `verified_name` are not given by the signer: they come from the identity checks passed",
        ));
    }
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
                if matches!(
                    r.status,
                    document::RecipientStatus::Added | document::RecipientStatus::Sent
                ) {
                    doc.recipients[i].status = document::RecipientStatus::Viewed;
                }
                if matches!(
                    doc.status,
                    document::Status::Sealed | document::Status::Sent
                ) {
                    doc.status = document::Status::Viewed;
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
                document::RecipientStatus::Added
                    | document::RecipientStatus::Sent
                    | document::RecipientStatus::Viewed
            ) {
                doc.recipients[i].status = document::RecipientStatus::Reviewed;
                doc.recipients[i].viewed_ms.get_or_insert(now);
                if matches!(
                    doc.status,
                    document::Status::Sealed | document::Status::Sent | document::Status::Viewed
                ) {
                    doc.status = document::Status::Reviewed;
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
                (
                    document::Role::Signer,
                    document::RecipientStatus::Signed,
                    "sign",
                )
            } else {
                (
                    document::Role::Approver,
                    document::RecipientStatus::Approved,
                    "approve",
                )
            };
            if r.role != role && !(role.approves() && r.role.approves()) {
                return Err(forbidden(&format!(
                    "only a recipient with the role {} can {word}",
                    role.as_str()
                )));
            }
            if r.status.is_finished() {
                return Err(http::ApiError::bad_request(
                    "invalid_status",
                    format!("you are already {}", r.status.as_str()),
                ));
            }
            check_turn(&doc, i)?;
            let given = if what == Act::Sign {
                let given = signatures::read_sign_body(cx, &doc, &r, &f, passes)?;
                signatures::store(cx, &doc, &given);
                Some(given.signature)
            } else {
                None
            };
            let rr = &mut doc.recipients[i];
            rr.status = done;
            rr.signed_ms = Some(now);
            rr.ip_address = actor.ip.clone();
            rr.viewed_ms.get_or_insert(now);
            finish_signature(cx, &mut doc, i, &actor, given.as_ref());
        }
        Act::Reject => {
            check_open(&doc)?;
            if r.role == document::Role::Cc {
                return Err(forbidden("a CC recipient cannot reject the document"));
            }
            if r.status.is_finished() {
                return Err(http::ApiError::bad_request(
                    "invalid_status",
                    format!(
                        "you are {}; there is nothing left to reject",
                        r.status.as_str()
                    ),
                ));
            }
            let reason = f.optional_str("reason")?.filter(|s| !s.trim().is_empty());
            doc.recipients[i].status = document::RecipientStatus::Rejected;
            doc.recipients[i].ip_address = actor.ip.clone();
            doc.status = document::Status::Rejected;
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

/// After a signature (`signature`, just stored) or an approval (`None`):
/// `document.signed` when the document is complete (and the final PDF is rendered with
/// the signatures and the audit certificate, then sealed), else `document.partially_signed` /
/// `document.approved`, and with a signing order the next group is invited.
fn finish_signature(
    cx: &mut Cx,
    doc: &mut Document,
    i: usize,
    actor: &Actor,
    signature: Option<&signatures::Signature>,
) {
    let now = cx.now();
    let signed = signature.is_some();
    let r = doc.recipients[i].clone();
    let mut rj = event_recipient(&r);
    rj["ip_address"] = r.ip_address.clone().into();
    rj["signing_methods"] = signature
        .map(signatures::methods)
        .unwrap_or_default()
        .into();
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
        doc.status = document::Status::Signed;
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
        evidence::request_seal(cx, doc, None);
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

/// With a signing order: invites the next group whose turn has come.
fn invite_next_group(cx: &mut Cx, doc: &mut Document) {
    let pending = |r: &document::Recipient| {
        r.role != document::Role::Cc
            && !r.status.has_signed_or_approved()
            && r.status != document::RecipientStatus::NotRequired
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
        // Never invited yet (one who opened the link early is `viewed` but still waits
        // for the mail that says it is their turn).
        if pending(r) && r.order_num == next && r.sent_ms.is_none() {
            if r.status == document::RecipientStatus::Added {
                doc.recipients[j].status = document::RecipientStatus::Sent;
            }
            doc.recipients[j].sent_ms = Some(now);
            let r = doc.recipients[j].clone();
            notify::invitation(cx, doc, &r);
        }
    }
}

pub(super) fn comment(
    cx: &mut Cx,
    req: &Request,
    mut doc: Document,
    i: usize,
) -> ApiResult<Response> {
    // `text` is at most 4000 characters (`base::limits`): 400 `invalid_field` beyond.
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

pub(super) fn download(
    cx: &mut Cx,
    req: &Request,
    mut doc: Document,
    i: usize,
) -> ApiResult<Response> {
    if evidence::sealing(&doc) {
        return Err(evidence::sealing_error());
    }
    let (blob, _) = current_pdf(&doc)
        .ok_or_else(|| http::ApiError::not_found("pdf_not_ready", "the document has no PDF yet"))?;
    let bytes = cx.p.get_blob(&blob).ok_or_else(|| {
        http::ApiError::not_found("pdf_not_ready", "the document's PDF is not stored any more")
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
