//! What a recipient does on their link (spec §3.2, §6), once the recipient state
//! machine let it (`recipient_states::may`): the statuses it moves there
//! (`recipient_states::apply`), the events and trail entries of its row, the owner's
//! notices, the final render of a completed document and, with a signing order, the
//! next group's invitations.

use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, FileBody};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{iso8601, new_id};
use crate::domain::document::{Comment, Document, comment_key, store_doc};
use crate::domain::downloads::{self, current_pdf};
use crate::domain::events::{emit_and_log, event_recipient, recipients_summary};
use crate::domain::recipient_states::{self as states, COMPLETED, Emits, Move};
use crate::domain::trail::Actor;
use crate::domain::{evidence, notify, signatures};
use serde_json::{Value, json};

/// What an act carries beyond its move: a signer's signature (read from their request
/// and checked, `signatures::given`), a rejection's reason.
#[derive(Default)]
pub struct Given {
    pub signature: Option<signatures::Given>,
    pub reason: Option<String>,
}

/// Emits what `e` says, with `extra`.
fn emit(cx: &mut Cx, doc: &mut Document, actor: &Actor, e: Emits, extra: Value) {
    if let Emits::Event(kind, action, detail) = e {
        emit_and_log(cx, doc, actor, kind, action, detail, extra);
    }
}

/// Recipient `i` of `doc` makes move `m` (a link's act: view, review, sign, approve,
/// reject, print), which [`states::may`] allowed. A view is counted each time; a move
/// without effect ([`states::allowed`] not: a later view, a review once reviewed) does
/// nothing more.
pub fn act(cx: &mut Cx, doc: &mut Document, i: usize, actor: &Actor, m: Move, given: Given) {
    let now = cx.now();
    if m == Move::View {
        doc.views += 1;
    }
    if !states::allowed(doc, i, m) {
        return;
    }
    let mut extra = json!({"recipient": event_recipient(&doc.recipients[i])});
    match m {
        Move::View | Move::Review => {
            states::apply(doc, i, m);
            doc.recipients[i].viewed_ms.get_or_insert(now);
            extra = json!({"recipient": event_recipient(&doc.recipients[i])});
        }
        Move::Sign | Move::Approve => {
            if let Some(g) = &given.signature {
                signatures::store(cx, doc, g);
            }
            states::apply(doc, i, m);
            let rr = &mut doc.recipients[i];
            rr.signed_ms = Some(now);
            rr.ip_address = actor.ip.clone();
            rr.viewed_ms.get_or_insert(now);
            let signature = given.signature.map(|g| g.signature);
            return finish_signature(cx, doc, i, actor, m, signature.as_ref());
        }
        Move::Reject => return reject(cx, doc, i, actor, given.reason),
        _ => {}
    }
    emit(cx, doc, actor, states::emits(m), extra);
}

/// A rejection: the recipient and the document rejected, `document.rejected`, the
/// owner told.
fn reject(cx: &mut Cx, doc: &mut Document, i: usize, actor: &Actor, reason: Option<String>) {
    states::apply(doc, i, Move::Reject);
    doc.recipients[i].ip_address = actor.ip.clone();
    doc.rejection_reason = reason.clone();
    let r = doc.recipients[i].clone();
    let extra = json!({"recipient": event_recipient(&r), "rejection_reason": reason});
    emit(cx, doc, actor, states::emits(Move::Reject), extra);
    notify::owner_notice(
        cx,
        doc,
        format!("\"{}\" was rejected", doc.name),
        format!(
            "{} rejected the document. Reason: {}",
            r.fullname(),
            reason.as_deref().unwrap_or("none given")
        ),
    );
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
    m: Move,
    signature: Option<&signatures::Signature>,
) {
    let now = cx.now();
    let r = doc.recipients[i].clone();
    let mut rj = event_recipient(&r);
    rj["ip_address"] = r.ip_address.clone().into();
    rj["signing_methods"] = signature
        .map(signatures::methods)
        .unwrap_or_default()
        .into();
    if m == Move::Approve {
        emit(
            cx,
            doc,
            actor,
            states::emits(m),
            json!({"recipient": rj.clone()}),
        );
    }
    if states::complete_document(doc) {
        doc.sign_ms = Some(now);
        let extra = json!({
            "document": {"id": doc.id, "name": doc.name, "status": doc.status.as_str(), "sign_date": iso8601(now)},
            "recipient": rj,
            "recipients": recipients_summary(doc),
        });
        emit(cx, doc, actor, COMPLETED, extra);
        evidence::request_seal(cx, doc, None);
        notify::owner_notice(
            cx,
            doc,
            format!("\"{}\" is signed", doc.name),
            "Every signer has signed the document.".into(),
        );
        return;
    }
    if m == Move::Sign {
        let extra = json!({"recipient": rj, "recipients": recipients_summary(doc)});
        emit(cx, doc, actor, states::emits(m), extra);
    }
    if doc.flags.is_signing_order {
        invite_next_group(cx, doc);
    }
}

/// With a signing order: invites the next group whose turn has come.
fn invite_next_group(cx: &mut Cx, doc: &mut Document) {
    let Some(next) = doc
        .recipients
        .iter()
        .filter(|r| states::pending(r))
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
        if states::pending(r) && r.order_num == next && r.sent_ms.is_none() {
            states::apply(doc, j, Move::InviteInTurn);
            doc.recipients[j].sent_ms = Some(now);
            let r = doc.recipients[j].clone();
            notify::invitation(cx, doc, &r);
        }
    }
}

/// Recipient `i` of `doc` comments `text` (a checked body member): the comment is kept,
/// `comment.created` and `document.commented` are emitted, and `doc` is stored.
pub fn comment(cx: &mut Cx, doc: &mut Document, i: usize, actor: &Actor, text: String) -> Comment {
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
    let meta = json!({"comment_id": c.id, "created_by": c.author_name, "created_at": iso8601(c.created_ms), "text": c.text});
    let extra = json!({"event_meta": meta, "recipient": event_recipient(&r)});
    for kind in ["comment.created", "document.commented"] {
        emit_and_log(
            cx,
            doc,
            actor,
            kind,
            "commented",
            "comment by the recipient",
            extra.clone(),
        );
    }
    store_doc(cx, Some(&before), doc);
    c
}

/// Recipient `i` of `doc` downloads its current PDF: 409 while it is being sealed, 404
/// when there is none (or it is gone); else `document.downloaded` is emitted, `doc`
/// stored, and the PDF's bytes returned.
pub fn download(cx: &mut Cx, doc: &mut Document, i: usize, actor: &Actor) -> ApiResult<FileBody> {
    if evidence::sealing(doc) {
        return Err(evidence::sealing_error());
    }
    let (blob, _) = current_pdf(doc)
        .ok_or_else(|| http::ApiError::not_found("pdf_not_ready", "the document has no PDF yet"))?;
    let body = downloads::pdf_body(cx, &blob)?;
    let before = doc.clone();
    let base = cx.settings().base_url.trim_end_matches('/').to_string();
    let r = &doc.recipients[i];
    let extra = json!({
        "document": {"id": doc.id, "name": doc.name, "status": doc.status.as_str(),
                     "download_url": format!("{base}/v1/documents/{}/download", doc.id)},
        "recipient": {"fullname": r.fullname(), "email": r.email, "role": r.role.as_str()},
    });
    emit_and_log(
        cx,
        doc,
        actor,
        "document.downloaded",
        "downloaded",
        "PDF downloaded by the recipient",
        extra,
    );
    store_doc(cx, Some(&before), doc);
    Ok(body)
}
