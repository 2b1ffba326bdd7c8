//! `GET /v1/documents/{id}/download` (GetAccept's shape): by default a JSON answer with
//! a link that serves the PDF without a token for ten minutes (`document_url`), the
//! file name, and with `with_file_content=true` the file itself in base64; with
//! `direct=true` the PDF bytes. The link is `GET /v1/download/{secret}`.
//!
//! | key | value |
//! |---|---|
//! | `ddl/{sha256 hex of secret}` | [`downloads::Link`] |

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult, FileBody, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::access::{readable, writable};
use crate::domain::auth::Principal;
use crate::domain::downloads::{self, LINK_TTL_MS, current_pdf, new_link, pdf_bytes};
use crate::domain::{evidence, pages};
use base64::Engine as _;
use serde_json::json;

/// `true`/`1` or `false`/`0`/empty; anything else is a 400.
fn bool_param(req: &Request, name: &str) -> ApiResult<bool> {
    match req.query_param(name).as_deref() {
        None | Some("" | "false" | "0") => Ok(false),
        Some("true" | "1") => Ok(true),
        Some(other) => Err(http::ApiError::bad_request(
            "invalid_parameter",
            format!("the query parameter `{name}` must be true or false, not {other:?}"),
        )),
    }
}

/// The file name a download is offered under: the document's name, made safe.
fn file_name(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{}.pdf", safe.trim())
}

fn pdf(body: FileBody, name: &str) -> Response {
    body.response(
        200,
        vec![
            ("content-type".into(), "application/pdf".into()),
            (
                "content-disposition".into(),
                format!("attachment; filename=\"{name}\""),
            ),
            ("cache-control".into(), "no-store".into()),
        ],
    )
}

fn not_ready() -> ApiError {
    http::ApiError::not_found(
        "pdf_not_ready",
        "the document has no PDF yet: import a file, or seal or send it",
    )
}

/// `GET /v1/documents/{id}/download` (`direct`, `with_file_content`): the current PDF
/// (the rendered one once sealed or sent; before that, a draft's single imported file).
pub fn download(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let direct = bool_param(req, "direct")?;
    let with_content = bool_param(req, "with_file_content")?;
    let doc = readable(cx, pr, id)?;
    if evidence::sealing(&doc) {
        return Err(evidence::sealing_error());
    }
    let (blob, _) = current_pdf(&doc).ok_or_else(not_ready)?;
    let name = file_name(&doc.name);
    if direct {
        return Ok(pdf(downloads::pdf_body(cx, &blob)?, &name));
    }
    let mut out = json!({"file": name});
    if with_content {
        let bytes = pdf_bytes(cx, &blob)?;
        out["file_content"] = json!(base64::engine::general_purpose::STANDARD.encode(bytes));
    }
    let document_url = new_link(cx, &doc.id, blob, name, "");
    out["document_url"] = json!(document_url);
    out["expires_in"] = json!(LINK_TTL_MS / 1000);
    Ok(json(200, &out))
}

/// `POST /v1/documents/{id}/preview` (GetAccept's): a ten-minute link to a picture of
/// the document's first page once it has page images (sealed or sent), else to its
/// current PDF.
pub fn preview(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let f = req.body_fields()?;
    f.only(&[
        "custom_fields",
        "external_id",
        "name",
        "recipients",
        "template_id",
        "type",
        "value",
    ])?;
    // GetAccept's members change nothing here, but must be what they say they are.
    for name in ["external_id", "name", "template_id", "type"] {
        f.optional_str(name)?;
    }
    f.optional_number("value")?;
    f.optional_array("custom_fields")?;
    f.optional_array("recipients")?;
    // A POST, so under the rule of every POST on a document: its writers.
    let doc = writable(cx, pr, id)?;
    let first_page = pages::load(cx, &doc.id).pages.into_iter().next();
    let url = match first_page {
        Some((blob, ..)) => {
            let name = file_name(&doc.name).replace(".pdf", "-page-1.png");
            new_link(cx, &doc.id, blob, name, "image/png")
        }
        None => {
            if evidence::sealing(&doc) {
                return Err(evidence::sealing_error());
            }
            let (blob, _) = current_pdf(&doc).ok_or_else(not_ready)?;
            new_link(cx, &doc.id, blob, file_name(&doc.name), "")
        }
    };
    Ok(json(200, &json!({ "preview_url": url })))
}

/// `GET /v1/download/{secret}`: the PDF behind a download link, while it lasts. No
/// token: the link is the credential, so it is short-lived and unguessable.
pub fn by_link(cx: &mut Cx, req: &Request, secret: &str) -> ApiResult<Response> {
    let (link, ext, bytes) = downloads::by_link(cx, secret, req.client())?;
    let mut resp = pdf(bytes, &link.file_name);
    if !ext.content_type.is_empty() {
        resp.headers[0].1 = ext.content_type;
        resp.headers[1].1 = format!("inline; filename=\"{}\"", link.file_name);
    }
    Ok(resp)
}
