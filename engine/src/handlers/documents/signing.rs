//! `POST /v1/documents/{id}/manually-sign`: a document signed outside esign, with or
//! without the signed file.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{iso8601, parse_time};
use crate::domain::access::{access, readable};
use crate::domain::auth::Principal;
use crate::domain::document::{self, store_doc};
use crate::domain::document_states::{self as states, Move, may};
use crate::domain::events::{self, emit_and_log};
use crate::domain::{blobs, evidence, trail, uploads};
use serde_json::json;

/// `POST /v1/documents/{id}/manually-sign` (body `file_id`?, `recipient_id`?,
/// `signed_at`?): with `file_id` → `signed`, without → `signedwithoutverification`.
#[expect(
    clippy::too_many_lines,
    reason = "older than the 70-line rule (issue 49)"
)]
pub fn manually_sign(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let mut doc = readable(cx, pr, id)?;
    if !access(cx, pr, &doc).owner_or_admin {
        return Err(http::ApiError::forbidden(
            "access_denied",
            "only the document's owner or an admin may mark it as signed",
        ));
    }
    let f = req.body_fields()?;
    may(&doc, Move::SignManually)?;
    let file = match f.optional_str("file_id")?.filter(|s| !s.is_empty()) {
        None => None,
        Some(fid) => Some(
            uploads::find(cx, pr, &fid)
                .filter(|u| u.status == uploads::UploadStatus::Ready && u.blob.is_some())
                .ok_or_else(|| {
                    http::ApiError::not_found("file_not_found", format!("no usable upload {fid}"))
                })?,
        ),
    };
    let recipient = f.optional_str("recipient_id")?.filter(|s| !s.is_empty());
    if let Some(rid) = &recipient
        && doc.recipient(rid).is_none()
    {
        return Err(http::ApiError::not_found(
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
    let (m, rstatus) = if file.is_some() {
        (Move::SignManually, document::RecipientStatus::Signed)
    } else {
        (
            Move::SignManuallyWithoutFile,
            document::RecipientStatus::SignedWithoutVerification,
        )
    };
    for r in doc.recipients.iter_mut() {
        let chosen = recipient.as_ref().is_none_or(|rid| &r.id == rid);
        if chosen && r.role == document::Role::Signer && !r.status.has_signed_or_approved() {
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
        doc.final_pdf = Some(document::FinalPdf {
            blob,
            size: u.size,
            sha256: u.sha256.clone(),
            content_sha256: u.sha256.clone(),
            page_count: 0,
            rendered_ms: now,
        });
    }
    states::apply(&mut doc, m);
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
        .find(|r| {
            recipient.as_ref().is_none_or(|rid| &r.id == rid) && r.role == document::Role::Signer
        })
        .or(doc.recipients.first())
        .cloned();
    let extra = json!({
        "manual": true,
        "recipient": signed_r.map(|r| {
            let mut v = events::event_recipient(&r);
            v["ip_address"] = r.ip_address.clone().into();
            v["signing_methods"] = json!([{"type": "manual", "signed_at": iso8601(signed_at), "verified_name": ""}]);
            v
        }),
        "recipients": events::recipients_summary(&doc),
    });
    emit_and_log(
        cx,
        &mut doc,
        &trail::Actor::user(pr, Some(req)),
        "document.signed",
        "manually_signed",
        detail,
        extra,
    );
    if let Some(blob) = manual_blob {
        // The uploaded file is the content; it gets the audit certificate and the seal.
        evidence::request_seal(cx, &mut doc, Some(blob));
    }
    store_doc(cx, Some(&before), &mut doc);
    Ok(Response {
        status: 200,
        headers: Vec::new(),
        body: Vec::new(),
    })
}

fn bad(code: &'static str, text: impl Into<String>) -> ApiError {
    ApiError::bad_request(code, text)
}
