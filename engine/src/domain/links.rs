//! Recipient links: the secret in a recipient's `document_url` names a document and a
//! recipient (`rlink/`); whether the document is available behind it; the per-link rate
//! limit (`rrate/`).
//!
//! The store never holds a link's secret: `rlink/` is keyed by its SHA-256, and the
//! recipient's record keeps a random nonce ([`LinkRef`]) from which the secret is
//! derived with the host's link key (`settings.link-key`, kept outside the store), so
//! the engine can show `document_url` again while a copy of the database hands out no
//! links. Records written before link keys keep the secret itself and go on working.

use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult};
use crate::base::keyspace::RRATE;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records;
use crate::base::util::{self, sha256_hex};
use crate::domain::document::{self, Document, LinkRef, Recipient, link_key, load_doc};
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// How a [`LinkRef`] written with a link key begins (a secret of old never holds `:`).
const NONCE: &str = "nonce:";

/// The secret of the link `HMAC-SHA256(key, "recipient-link/{doc}/{recipient}/{nonce}")`,
/// base64url without padding: 43 characters, the shape of [`util::new_secret`]'s. Made
/// with the RustCrypto `hmac` crate over `sha2`, not by hand.
///
/// Panics when the host gave no key: a link derived from an empty key would be one a
/// copy of the database could make.
pub fn derive(key: &str, doc_id: &str, rid: &str, nonce: &str) -> String {
    assert!(
        !key.is_empty(),
        "the host gave no link key (settings.link-key): recipient links cannot be made"
    );
    let mut mac =
        Hmac::<Sha256>::new_from_slice(key.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(format!("recipient-link/{doc_id}/{rid}/{nonce}").as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
}

/// The secret of `r`'s link in document `doc_id`, if they have one.
pub fn secret(cx: &mut Cx, doc_id: &str, r: &Recipient) -> Option<String> {
    let LinkRef(stored) = r.secret.as_ref()?;
    Some(match stored.strip_prefix(NONCE) {
        Some(nonce) => {
            let key = cx.settings().link_key.clone();
            derive(&key, doc_id, &r.id, nonce)
        }
        None => stored.clone(), // written before link keys
    })
}

/// A new link for recipient `rid` of `doc_id`: what their record keeps, and its secret.
/// The nonce is random, so a recipient given a new link gets another secret.
pub fn mint(cx: &mut Cx, doc_id: &str, rid: &str) -> (LinkRef, String) {
    let mut bytes = [0u8; 16];
    cx.p.fill_random(&mut bytes);
    let nonce = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let key = cx.settings().link_key.clone();
    let secret = derive(&key, doc_id, rid, &nonce);
    (LinkRef(format!("{NONCE}{nonce}")), secret)
}

/// The `rlink/` key of `r`'s link, if they have one (the SHA-256 of its secret).
pub fn key_of(cx: &mut Cx, doc_id: &str, r: &Recipient) -> Option<Vec<u8>> {
    secret(cx, doc_id, r).map(|s| link_key(&sha256_hex(s.as_bytes())))
}

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
        .position(|r| r.id == rid)
        .ok_or_else(link_not_found)?;
    // A recipient given a new link since: the old one names them no more.
    let current = self::secret(cx, &doc.id, &doc.recipients[i]);
    if current.as_deref() != Some(secret) {
        return Err(link_not_found());
    }
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
    per_minute(cx, &key, ACTS_PER_MINUTE, "actions on this link")
}

/// At most `limit` calls counted under `key` in a fixed one-minute window, then 429
/// `too_many_requests` ("too many {what}") with `Retry-After`: a link's acts, a public
/// link's visits from one address.
pub fn per_minute(cx: &mut Cx, key: &[u8], limit: u32, what: &str) -> ApiResult<()> {
    let now = cx.now();
    let window = now / 60_000;
    let (w, n): (u64, u32) = cx.load(key).unwrap_or((window, 0));
    let n = if w == window { n } else { 0 };
    if n >= limit {
        let wait = ((window + 1) * 60_000 - now).div_ceil(1000);
        return Err(http::ApiError::new(
            429,
            "too_many_requests",
            format!("too many {what}; try again in {wait} s"),
        )
        .with_header("retry-after", wait.to_string()));
    }
    cx.save(key, &(window, n + 1));
    Ok(())
}

fn rate_key(doc_id: &str, rid: &str) -> Vec<u8> {
    util::key(&[RRATE, doc_id, rid])
}

/// Forgets a deleted document's per-recipient counters.
pub fn erase(cx: &mut Cx, doc: &str) {
    let (start, end) = records::prefix_range(&format!("{RRATE}/{doc}/"));
    for (k, _) in cx.p.scan(&start, &end, 10_000, false) {
        cx.p.delete(&k);
    }
}
