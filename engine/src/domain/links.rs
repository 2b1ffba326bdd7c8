//! Recipient links: the secret in a recipient's `document_url` names a document and a
//! recipient (`rlink/`); whether the document is available behind it; the per-link rate
//! limit (`rrate/`).

use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records;
use crate::base::util::{self, sha256_hex};
use crate::domain::document::{self, Document, link_key, load_doc};

fn link_not_found() -> ApiError {
    http::ApiError::not_found("link_not_found", "this link is not valid (any more)")
}

/// The document and the recipient's index behind a link secret.
pub fn by_secret(cx: &mut Cx, secret: &str) -> ApiResult<(Document, usize)> {
    let target =
        cx.p.get(&link_key(&sha256_hex(secret.as_bytes())))
            .and_then(|v| String::from_utf8(v).ok())
            .ok_or_else(link_not_found)?;
    let (doc_id, rid) = target.split_once('/').ok_or_else(link_not_found)?;
    let doc = load_doc(cx, doc_id).ok_or_else(link_not_found)?;
    let i = doc
        .recipients
        .iter()
        .position(|r| r.id == rid && r.secret.as_deref() == Some(secret))
        .ok_or_else(link_not_found)?;
    Ok((doc, i))
}

/// 410 unless the document is out with its recipients (or finished).
pub fn check_available(doc: &Document) -> ApiResult<()> {
    match doc.status {
        document::Status::Draft
        | document::Status::Importing
        | document::Status::Processing
        | document::Status::Scheduled
        | document::Status::Recalled
        | document::Status::Lost => Err(http::ApiError::new(
            410,
            "document_unavailable",
            format!("the document is not available ({})", doc.status.as_str()),
        )),
        _ => Ok(()),
    }
}

/// 400 unless the document can still be acted on (not signed, rejected or expired).
pub fn check_open(doc: &Document) -> ApiResult<()> {
    if doc.status.is_active() {
        Ok(())
    } else {
        Err(http::ApiError::bad_request(
            "invalid_status",
            format!(
                "the document is {}; it can no longer be signed or changed",
                doc.status.as_str()
            ),
        ))
    }
}

/// Acts one recipient may take per minute.
pub const ACTS_PER_MINUTE: u32 = 30;

/// At most [`ACTS_PER_MINUTE`] acts per recipient in a fixed one-minute window
/// (`rrate/{document}/{recipient}`), then 429 with `Retry-After`.
pub fn rate_limit(cx: &mut Cx, doc: &Document, i: usize) -> ApiResult<()> {
    let key = rate_key(&doc.id, &doc.recipients[i].id);
    let now = cx.now();
    let window = now / 60_000;
    let (w, n): (u64, u32) = cx.load(&key).unwrap_or((window, 0));
    let n = if w == window { n } else { 0 };
    if n >= ACTS_PER_MINUTE {
        let wait = ((window + 1) * 60_000 - now).div_ceil(1000);
        return Err(http::ApiError::new(
            429,
            "too_many_requests",
            format!("too many actions on this link; try again in {wait} s"),
        )
        .with_header("retry-after", wait.to_string()));
    }
    cx.save(&key, &(window, n + 1));
    Ok(())
}

fn rate_key(doc_id: &str, rid: &str) -> Vec<u8> {
    util::key(&["rrate", doc_id, rid])
}

/// Forgets a deleted document's per-recipient counters.
pub fn erase(cx: &mut Cx, doc: &str) {
    let (start, end) = records::prefix_range(&format!("rrate/{doc}/"));
    for (k, _) in cx.p.scan(&start, &end, 10_000, false) {
        cx.p.delete(&k);
    }
}
