//! `GET /v1/documents/{id}/download` (GetAccept's shape): by default a JSON answer with
//! a link that serves the PDF without a token for ten minutes (`document_url`), the
//! file name, and with `with_file_content=true` the file itself in base64; with
//! `direct=true` the PDF bytes. The link is `GET /v1/download/{secret}`.
//!
//! | key | value |
//! |---|---|
//! | `ddl/{sha256 hex of secret}` | [`Link`] |

use crate::base::api::{JobSpec, Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult, json};
use crate::base::job_kinds;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records;
use crate::base::util::{new_secret, sha256_hex};
use crate::domain::access::{readable, writable};
use crate::domain::auth::Principal;
use crate::domain::downloads::{LINK_TTL_MS, Link, LinkExt, current_pdf, link_key};
use crate::domain::{document, evidence, pages};
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

fn pdf(bytes: Vec<u8>, name: &str) -> Response {
    Response {
        status: 200,
        headers: vec![
            ("content-type".into(), "application/pdf".into()),
            (
                "content-disposition".into(),
                format!("attachment; filename=\"{name}\""),
            ),
            ("cache-control".into(), "no-store".into()),
        ],
        body: bytes,
    }
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
        let bytes = cx.p.get_blob(&blob).ok_or_else(|| {
            http::ApiError::not_found("pdf_not_ready", "the document's PDF is not stored any more")
        })?;
        return Ok(pdf(bytes, &name));
    }
    let mut out = json!({"file": name});
    if with_content {
        let bytes = cx.p.get_blob(&blob).ok_or_else(|| {
            http::ApiError::not_found("pdf_not_ready", "the document's PDF is not stored any more")
        })?;
        out["file_content"] = json!(base64::engine::general_purpose::STANDARD.encode(bytes));
    }
    let document_url = new_link(cx, &doc.id, blob, name, "");
    out["document_url"] = json!(document_url);
    out["expires_in"] = json!(LINK_TTL_MS / 1000);
    Ok(json(200, &out))
}

/// A ten-minute link (`GET /v1/download/{secret}`) to `blob` of document `doc_id`,
/// served as `content_type` (empty: a PDF); its URL.
fn new_link(
    cx: &mut Cx,
    doc_id: &str,
    blob: String,
    file_name: String,
    content_type: &str,
) -> String {
    let secret = new_secret(cx);
    let hash = sha256_hex(secret.as_bytes());
    let expires_ms = cx.now() + LINK_TTL_MS;
    let link = Link {
        doc_id: doc_id.to_string(),
        blob,
        file_name,
        expires_ms,
    };
    let ext = LinkExt {
        content_type: content_type.to_string(),
    };
    cx.p.put(&link_key(&hash), &records::encode_ext(&link, &ext));
    cx.p.schedule_job(JobSpec {
        kind: job_kinds::DOWNLOAD_LINK_FORGET.into(),
        payload: hash.into_bytes(),
        run_at_ms: expires_ms,
        work: None,
        scope: String::new(),
    });
    let base = cx.settings().base_url.trim_end_matches('/').to_string();
    format!("{base}/v1/download/{secret}")
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
pub fn by_link(cx: &mut Cx, secret: &str) -> ApiResult<Response> {
    let gone = || {
        http::ApiError::not_found(
            "link_not_found",
            "this download link is not valid (any more); ask for a new one",
        )
    };
    let stored =
        cx.p.get(&link_key(&sha256_hex(secret.as_bytes())))
            .ok_or_else(gone)?;
    let (link, ext): (Link, LinkExt) = records::decode_ext(&stored);
    // A recalled document is no longer shared: its links stop with the recall.
    let doc = document::load_doc(cx, &link.doc_id);
    let live = doc.is_some_and(|d| d.status != document::Status::Recalled);
    if link.expires_ms <= cx.now() || !live {
        return Err(gone());
    }
    let bytes = cx.p.get_blob(&link.blob).ok_or_else(gone)?;
    let mut resp = pdf(bytes, &link.file_name);
    if !ext.content_type.is_empty() {
        resp.headers[0].1 = ext.content_type;
        resp.headers[1].1 = format!("inline; filename=\"{}\"", link.file_name);
    }
    Ok(resp)
}
