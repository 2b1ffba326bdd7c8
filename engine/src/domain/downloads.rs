//! Download links (`/v1/download/{secret}`): ten minutes to fetch a document's PDF
//! without a token; and which PDF a download hands out.

use crate::base::keyspace::DDL;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util;
use crate::domain::document::Document;
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
