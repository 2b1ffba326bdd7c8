//! Download links (`/v1/download/{secret}`): ten minutes to fetch a document's PDF
//! without a token; and which PDF a download hands out.

use crate::base::cx::Cx;
use crate::base::http::{ApiError, ApiResult};
use crate::base::job_kinds;
use crate::base::keyspace::DDL;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records;
use crate::base::util::{self, new_secret, sha256_hex};
use crate::domain::document::{self, Document};
use crate::domain::document_states::{self, Move};
use crate::domain::evidence;
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
    cx.schedule_at(
        job_kinds::DOWNLOAD_LINK_FORGET,
        hash.into_bytes(),
        expires_ms,
    );
    let base = cx.settings().base_url.trim_end_matches('/').to_string();
    format!("{base}/v1/download/{secret}")
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
pub fn by_link(cx: &mut Cx, secret: &str) -> ApiResult<(Link, LinkExt, Vec<u8>)> {
    let gone = || {
        ApiError::not_found(
            "link_not_found",
            "this download link is not valid (any more); ask for a new one",
        )
    };
    let stored =
        cx.p.get(&link_key(&sha256_hex(secret.as_bytes())))
            .ok_or_else(gone)?;
    let (link, ext): (Link, LinkExt) = records::decode_ext(&stored);
    let doc = document::load_doc(cx, &link.doc_id);
    let live = doc.is_some_and(|d| !document_states::already(&d, Move::Recall));
    if link.expires_ms <= cx.now() || !live {
        return Err(gone());
    }
    let bytes = cx.p.get_blob(&link.blob).ok_or_else(gone)?;
    Ok((link, ext, bytes))
}
