//! `POST /v1/documents/{id}/manually-sign`: a document signed outside esign, with or
//! without the signed file.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::parse_time;
use crate::domain::access::{access, readable};
use crate::domain::auth::Principal;
use crate::domain::document::store_doc;
use crate::domain::document_states::{Move, may};
use crate::domain::manual_signing::{self, ManualSignature};
use crate::domain::trail;

/// `POST /v1/documents/{id}/manually-sign` (body `file_id`?, `recipient_id`?,
/// `signed_at`?): with `file_id` → `signed`, without → `signedwithoutverification`.
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
        Some(fid) => Some(manual_signing::signed_file(cx, pr, &fid)?),
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
    let sig = ManualSignature {
        file,
        recipient,
        signed_at,
    };
    let before = doc.clone();
    let actor = trail::Actor::user(pr, req.client());
    manual_signing::manually_sign(cx, &mut doc, &actor, &sig);
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
