//! Download links (`/v1/download/{secret}`): ten minutes to fetch a document's PDF
//! without a token; and which PDF a download hands out.

use crate::base::cx::Cx;
use crate::base::http::{ApiError, ApiResult};
use crate::base::http::{Client, FileBody};
use crate::base::job_kinds;
use crate::base::keyspace::DDL;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records;
use crate::base::util::{self, new_secret, sha256_hex};
use crate::domain::document::{self, Document};
use crate::domain::document_states::{self, Move};
use crate::domain::{evidence, trail};
use serde::{Deserialize, Serialize};

/// How long a download link works.
pub const LINK_TTL_MS: u64 = 10 * 60 * 1000;

/// A download link: the PDF it serves and until when.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Link {
    pub doc_id: String,
    pub blob: String,
    pub file_name: String,
    pub expires_ms: u64,
}

/// What was added to a link after its record's layout was fixed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct LinkExt {
    /// The media type it is served as; empty is a PDF.
    pub content_type: String,
}

/// What was added to a link after [`LinkExt`]'s layout was fixed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct LinkExt2 {
    /// Whom a completion copy's link was sent to (`domain::completion`); each download
    /// of such a link is logged in the document's trail. Empty for other links.
    pub sent_to: String,
}

pub fn link_key(hash: &str) -> Vec<u8> {
    util::key(&[DDL, hash])
}

/// Whether a PDF can be downloaded now: the rendered one, or a draft's single file.
/// Nothing while a completed document is being sealed: after completion only the sealed
/// file is handed out.
pub fn current_pdf(doc: &Document) -> Option<(String, u64)> {
    if evidence::sealing(doc) {
        return None;
    }
    match (&doc.final_pdf, doc.files.as_slice()) {
        (Some(f), _) => Some((f.blob.clone(), f.size)),
        (None, [only]) => Some((only.blob.clone(), only.size)),
        _ => None,
    }
}

/// A ten-minute link (`GET /v1/download/{secret}`) to `blob` of document `doc_id`,
/// served as `content_type` (empty: a PDF), forgotten when it ends; its URL.
pub fn new_link(
    cx: &mut Cx,
    doc_id: &str,
    blob: String,
    file_name: String,
    content_type: &str,
) -> String {
    let link = Link {
        doc_id: doc_id.to_string(),
        blob,
        file_name,
        expires_ms: cx.now() + LINK_TTL_MS,
    };
    let ext = LinkExt {
        content_type: content_type.to_string(),
    };
    store_link(cx, link, ext, LinkExt2::default())
}

/// A link to the sealed PDF `blob` of `doc` that works for `ttl_ms`, sent to `sent_to`
/// as their completion copy (its downloads are logged); its URL.
pub fn new_link_for(
    cx: &mut Cx,
    doc: &Document,
    blob: &str,
    file_name: String,
    ttl_ms: u64,
    sent_to: &str,
) -> String {
    let link = Link {
        doc_id: doc.id.clone(),
        blob: blob.to_string(),
        file_name,
        expires_ms: cx.now().saturating_add(ttl_ms),
    };
    let ext2 = LinkExt2 {
        sent_to: sent_to.to_string(),
    };
    store_link(cx, link, LinkExt::default(), ext2)
}

/// Stores a new link, forgotten when it ends; its URL.
fn store_link(cx: &mut Cx, link: Link, ext: LinkExt, ext2: LinkExt2) -> String {
    let secret = new_secret(cx);
    let hash = sha256_hex(secret.as_bytes());
    let expires_ms = link.expires_ms;
    cx.p.put(&link_key(&hash), &records::encode_ext2(&link, &ext, &ext2));
    cx.schedule_at(
        job_kinds::DOWNLOAD_LINK_FORGET,
        hash.into_bytes(),
        expires_ms,
    );
    let base = cx.settings().base_url.trim_end_matches('/').to_string();
    format!("{base}/v1/download/{secret}")
}

/// The body of a download of `blob`: the blob itself for a host that sends files
/// (never read into the engine; it answers 404 when the blob is gone), else its bytes,
/// or `missing` when it is not stored any more.
pub fn file_body(
    cx: &mut Cx,
    blob: &str,
    missing: impl FnOnce() -> ApiError,
) -> ApiResult<FileBody> {
    if cx.settings().blob_responses {
        return Ok(FileBody::Blob(blob.to_string()));
    }
    cx.p.get_blob(blob).map(FileBody::Bytes).ok_or_else(missing)
}

/// [`file_body`] of a document's PDF `blob`: 404 `pdf_not_ready` when it is gone.
pub fn pdf_body(cx: &mut Cx, blob: &str) -> ApiResult<FileBody> {
    file_body(cx, blob, || {
        ApiError::not_found("pdf_not_ready", "the document's PDF is not stored any more")
    })
}

/// The bytes of a document's PDF `blob`; 404 `pdf_not_ready` when it is not stored any
/// more.
pub fn pdf_bytes(cx: &mut Cx, blob: &str) -> ApiResult<Vec<u8>> {
    cx.p.get_blob(blob).ok_or_else(|| {
        ApiError::not_found("pdf_not_ready", "the document's PDF is not stored any more")
    })
}

/// The link behind `secret` and the bytes it serves, while it lasts: not expired, its
/// document not recalled (a recalled document is no longer shared: its links stop with
/// the recall) and its file stored. 404 `link_not_found` otherwise.
pub fn by_link(cx: &mut Cx, secret: &str, client: Client) -> ApiResult<(Link, LinkExt, FileBody)> {
    let gone = || {
        ApiError::not_found(
            "link_not_found",
            "this download link is not valid (any more); ask for a new one",
        )
    };
    let stored =
        cx.p.get(&link_key(&sha256_hex(secret.as_bytes())))
            .ok_or_else(gone)?;
    let (link, ext, ext2): (Link, LinkExt, LinkExt2) =
        records::try_decode_ext2(&stored).unwrap_or_else(|e| panic!("{e}"));
    let doc = document::load_doc(cx, &link.doc_id)
        .filter(|d| !document_states::already(d, Move::Recall))
        .filter(|_| link.expires_ms > cx.now())
        .ok_or_else(gone)?;
    let body = file_body(cx, &link.blob, gone)?;
    if !ext2.sent_to.is_empty() {
        log_copy_download(cx, doc, &ext2.sent_to, client);
    }
    Ok((link, ext, body))
}

/// A completion copy's link was used: the trail says whose, and from where.
fn log_copy_download(cx: &mut Cx, mut doc: Document, sent_to: &str, client: Client) {
    let before = doc.clone();
    let actor = trail::Actor {
        kind: "system",
        id: String::new(),
        name: sent_to.to_string(),
        ip: client.ip,
        client_asserted_ip: client.asserted_ip,
        user_agent: client.user_agent,
    };
    trail::log(
        cx,
        &mut doc,
        &actor,
        "completion_copy_downloaded",
        format!("the signed document downloaded by the link sent to {sent_to}"),
        None,
    );
    document::store_doc(cx, Some(&before), &mut doc);
}
