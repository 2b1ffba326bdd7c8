//! `GET /v1/signing-certificate` and `POST /v1/verify`: the certificate final PDFs are
//! sealed with, and the check of a PDF someone holds.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::iso8601;
use crate::domain::{auth, uploads};
use serde_json::json;

/// `GET /v1/signing-certificate`: the certificate final PDFs are signed with, as PEM.
pub fn signing_certificate(cx: &mut Cx) -> ApiResult<Response> {
    let pem = cx.settings().signing_certificate.clone();
    if pem.is_empty() {
        return Err(http::ApiError::not_found(
            "no_signing_certificate",
            "this server has no signing certificate",
        ));
    }
    Ok(Response {
        status: 200,
        headers: vec![
            (
                "content-type".into(),
                "application/x-pem-file; charset=utf-8".into(),
            ),
            ("cache-control".into(), "public, max-age=300".into()),
        ],
        body: pem.into_bytes(),
    })
}

/// `POST /v1/verify` (multipart `file`): what a check of the PDF's signature finds.
pub fn verify(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    auth::authenticate(cx, req)?;
    let part = req.parts.iter().find(|p| p.name == "file").ok_or_else(|| {
        http::ApiError::bad_request(
            "missing_field",
            "send the PDF as the multipart/form-data part `file`",
        )
    })?;
    if !part.data.starts_with(b"%PDF-") {
        return Err(http::ApiError::bad_request(
            "invalid_file",
            "the file is not a PDF",
        ));
    }
    let c = match &part.staged {
        Some(_) => {
            let bytes = uploads::part_bytes(cx, part);
            cx.p.verify_pdf(&bytes)
        }
        None => cx.p.verify_pdf(&part.data),
    };
    let ok = c.signed && c.valid && c.whole_file;
    Ok(json(
        200,
        &json!({
            "valid": ok,
            "signed": c.signed,
            "signature_valid": c.valid,
            "covers_whole_file": c.whole_file,
            "signer": c.signer,
            "certificate_sha256": c.certificate_sha256,
            "signed_by_this_service": c.by_this_service,
            "signed_at": c.signed_at_ms.map(iso8601),
            "timestamp": c.timestamp_ms.map(iso8601),
            "timestamp_valid": c.timestamp_valid,
            "document_id": c.document_id,
            "log_head": c.log_head,
            "problems": c.problems,
        }),
    ))
}
