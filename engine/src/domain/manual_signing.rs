//! A document signed outside esign (`POST /v1/documents/{id}/manually-sign`): with the
//! signed file it is `signed` and the file is its content, sealed with the audit
//! certificate; without, `signedwithoutverification`. The moves are the state
//! machines' `SignManually` and `SignManuallyWithoutFile`.

use crate::base::cx::Cx;
use crate::base::http::{ApiError, ApiResult};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::iso8601;
use crate::domain::auth::Principal;
use crate::domain::document::{Document, FinalPdf, Recipient, Role};
use crate::domain::document_states::{self as states, Move};
use crate::domain::events::{self, emit_and_log};
use crate::domain::recipient_states::{self, Move as RMove};
use crate::domain::trail::Actor;
use crate::domain::uploads::{self, Upload, UploadStatus};
use crate::domain::{blobs, evidence};
use serde_json::json;

/// The caller's upload `file_id` as the signed file: 404 unless it is ready and stored.
pub fn signed_file(cx: &mut Cx, pr: &Principal, file_id: &str) -> ApiResult<Upload> {
    uploads::find(cx, pr, file_id)
        .filter(|u| u.status == UploadStatus::Ready && u.blob.is_some())
        .ok_or_else(|| ApiError::not_found("file_not_found", format!("no usable upload {file_id}")))
}

/// A manual signature, as the request gave it.
pub struct ManualSignature {
    /// The signed file ([`signed_file`]), if given.
    pub file: Option<Upload>,
    /// The recipient who signed (a recipient of the document), else every signer.
    pub recipient: Option<String>,
    pub signed_at: u64,
}

/// Marks `doc` signed (asked of the document's machine by the caller): every chosen
/// signer not done yet signs, the file (if any) becomes the final PDF and is sealed;
/// `document.signed`.
pub fn manually_sign(cx: &mut Cx, doc: &mut Document, actor: &Actor, sig: &ManualSignature) {
    let now = cx.now();
    let (m, rm) = if sig.file.is_some() {
        (Move::SignManually, RMove::SignManually)
    } else {
        (
            Move::SignManuallyWithoutFile,
            RMove::SignManuallyWithoutFile,
        )
    };
    for i in 0..doc.recipients.len() {
        let chosen = sig
            .recipient
            .as_ref()
            .is_none_or(|rid| &doc.recipients[i].id == rid);
        if chosen && recipient_states::takes(doc, i, rm) {
            recipient_states::apply(doc, i, rm);
            doc.recipients[i].signed_ms = Some(sig.signed_at);
        }
    }
    if let Some(u) = &sig.file {
        let blob = u.blob.clone().unwrap_or_default();
        let owner = blobs::owner_of(&doc.id);
        blobs::hold(cx, &blob, &owner);
        if let Some(old) = doc.final_pdf.take() {
            blobs::release(cx, &old.blob, &owner);
        }
        doc.final_pdf = Some(FinalPdf {
            blob,
            size: u.size,
            sha256: u.sha256.clone(),
            content_sha256: u.sha256.clone(),
            page_count: 0,
            rendered_ms: now,
        });
    }
    states::apply(doc, m);
    doc.sign_ms = Some(sig.signed_at);
    doc.pending = None;
    signed(cx, doc, actor, sig);
    if let Some(blob) = sig.file.as_ref().and_then(|u| u.blob.clone()) {
        // The uploaded file is the content; it gets the audit certificate and the seal.
        evidence::request_seal(cx, doc, Some(blob));
    }
}

/// `document.signed` of a manual signature, for the recipient of spec §6: the one
/// named, else the first signer.
fn signed(cx: &mut Cx, doc: &mut Document, actor: &Actor, sig: &ManualSignature) {
    let detail = match &sig.file {
        Some(u) => format!("marked as signed with the uploaded file {}", u.name),
        None => "marked as signed without verification".to_string(),
    };
    let named = |r: &&Recipient| {
        sig.recipient.as_ref().is_none_or(|rid| &r.id == rid) && r.role == Role::Signer
    };
    let signed_r = doc
        .recipients
        .iter()
        .find(named)
        .or(doc.recipients.first())
        .cloned();
    let signed_at = sig.signed_at;
    let extra = json!({
        "manual": true,
        "recipient": signed_r.map(|r| {
            let mut v = events::event_recipient(&r);
            v["ip_address"] = r.ip_address.clone().into();
            v["signing_methods"] = json!([{"type": "manual", "signed_at": iso8601(signed_at), "verified_name": ""}]);
            v
        }),
        "recipients": events::recipients_summary(doc),
    });
    emit_and_log(
        cx,
        doc,
        actor,
        "document.signed",
        "manually_signed",
        detail,
        extra,
    );
}
