//! The store check (`esign admin check`): what the records say must hold, checked a
//! page at a time so that a large store never makes one long call.
//!
//! - [`documents`]: each document's record decodes, its audit trail is an unbroken hash
//!   chain, its index keys are all there, and its sealed file (if any) has the stored
//!   bytes and a signature that verifies, by the certificate of its time, over the trail
//!   head it pins;
//! - [`index`]: every list index key belongs to a document that gives it;
//! - [`references`]: the blob references (`bref/`), for the host to look each blob up;
//! - [`unreferenced`]: which of the blobs the host holds nobody refers to.
//!
//! `repair` fixes only what the records determine: missing or stray index keys, and
//! blobs nobody refers to. Evidence (trails, seals, sealed files) is never touched.

use crate::base::cx::Cx;
use crate::base::keyspace::{BREF, DCLI, DEXP, DEXT, DOC, DRCP, DX};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::{self, prefix_range};
use crate::base::util::sha256_hex;
use crate::domain::document::{self, Document, index_keys};
use crate::domain::evidence::{self, Seal};
use crate::domain::trail;
use alloc::collections::BTreeSet;

/// The families of the list and lookup indexes, in key order: a page that ends in one
/// goes on from there, so a family before it would be skipped.
const INDEXES: [&str; 5] = [DCLI, DEXP, DEXT, DRCP, DX];

/// One page of a check: how many items it looked at, where the next page starts
/// (`None` at the end), what is wrong and what was repaired.
#[derive(Debug, Default)]
pub struct Page {
    pub checked: u32,
    pub next: Option<String>,
    pub problems: Vec<String>,
    pub repaired: Vec<String>,
}

/// The first key after `after` in `[start, end)`.
fn from(after: &str, start: Vec<u8>) -> Vec<u8> {
    let mut after = after.as_bytes().to_vec();
    after.push(0);
    start.max(after)
}

fn text(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

/// Checks up to `limit` documents after the document id `after` (empty: from the first).
pub fn documents(cx: &mut Cx, after: &str, limit: u32, repair: bool) -> Page {
    let (start, end) = prefix_range(&format!("{DOC}/"));
    let start = from(&format!("{DOC}/{after}"), start);
    let rows = cx.p.scan(&start, &end, limit, false);
    let mut page = Page {
        checked: rows.len() as u32,
        ..Page::default()
    };
    for (key, value) in &rows {
        let id = text(&key[DOC.len() + 1..]);
        let mut problems = Vec::new();
        match document::try_decode_doc(value) {
            Ok(doc) => {
                problems.extend(trail_problem(cx, &id));
                problems.extend(missing_index_keys(cx, &doc, repair, &mut page.repaired));
                problems.extend(seal_problem(cx, &id));
            }
            Err(e) => problems.push(e),
        }
        let named = problems.into_iter().map(|p| format!("document {id}: {p}"));
        page.problems.extend(named);
    }
    if rows.len() as u32 == limit {
        page.next = rows.last().map(|(k, _)| text(&k[DOC.len() + 1..]));
    }
    page
}

/// Where the document's hash chain breaks, if it does. Entries written before the chain
/// (no hash) may only come first.
fn trail_problem(cx: &mut Cx, id: &str) -> Option<String> {
    let (start, end) = document::log_prefix(id);
    let mut prev = String::new();
    for (n, (_, value)) in cx.p.scan(&start, &end, u32::MAX, false).iter().enumerate() {
        let n = n + 1;
        let c = match trail::try_decode(value) {
            Ok(c) => c,
            Err(e) => return Some(format!("audit trail entry {n}: {e}")),
        };
        if c.hash.is_empty() {
            if !prev.is_empty() {
                return Some(format!("audit trail entry {n} lost its hash"));
            }
            continue;
        }
        if c.prev_hash != prev {
            return Some(format!(
                "audit trail entry {n} does not follow the entry before it (the chain breaks)"
            ));
        }
        if trail::hash_of(&c.entry, &c.prev_hash) != c.hash {
            return Some(format!(
                "audit trail entry {n} was changed (its hash does not match)"
            ));
        }
        prev = c.hash;
    }
    None
}

fn missing_index_keys(
    cx: &mut Cx,
    doc: &Document,
    repair: bool,
    repaired: &mut Vec<String>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for key in index_keys(doc) {
        if cx.p.get(&key).is_some() {
            continue;
        }
        let what = format!("index key missing: {}", text(&key));
        if repair {
            cx.p.put(&key, b"");
            repaired.push(format!("document {}: {what}", doc.id));
        } else {
            problems.push(what);
        }
    }
    problems
}

/// What is wrong with the document's sealed file, if it has one.
fn seal_problem(cx: &mut Cx, id: &str) -> Option<String> {
    let raw = cx.p.get(&evidence::seal_key(id))?;
    let seal: Seal = match records::try_decode(&raw) {
        Ok(s) => s,
        Err(e) => return Some(format!("seal record: {e}")),
    };
    let Some(bytes) = cx.p.get_blob(&seal.blob) else {
        return Some(format!("the sealed file (blob {}) is gone", seal.blob));
    };
    if sha256_hex(&bytes) != seal.sha256 {
        return Some("the sealed file's bytes are not the ones sealed".into());
    }
    let c = cx.p.verify_pdf(&bytes);
    if !(c.signed && c.valid && c.whole_file) {
        return Some(format!(
            "the sealed file's signature does not verify: {}",
            c.problems.join("; ")
        ));
    }
    if !seal.certificate_sha256.is_empty() && c.certificate_sha256 != seal.certificate_sha256 {
        return Some(
            "the sealed file is signed by another certificate than the one it was sealed with"
                .into(),
        );
    }
    if c.log_head != seal.log_head {
        return Some("the sealed file pins another audit trail head than its seal record".into());
    }
    None
}

/// Checks up to `limit` index keys after the key `after` (empty: from the first): each
/// must be one its document gives.
pub fn index(cx: &mut Cx, after: &str, limit: u32, repair: bool) -> Page {
    let mut rows = Vec::new();
    for prefix in INDEXES {
        let want = limit - rows.len() as u32;
        if want == 0 {
            break;
        }
        let (start, end) = prefix_range(&format!("{prefix}/"));
        let start = from(after, start);
        if start < end {
            rows.extend(
                cx.p.scan(&start, &end, want, false)
                    .into_iter()
                    .map(|(k, _)| k),
            );
        }
    }
    let mut page = Page {
        checked: rows.len() as u32,
        ..Page::default()
    };
    for key in &rows {
        let id = document::id_of_index_key(key);
        let given = match cx.p.get(&document::doc_key(&id)) {
            Some(v) => document::try_decode_doc(&v)
                .map(|d| index_keys(&d).contains(key))
                .unwrap_or(true), // the document phase reports the record
            None => false,
        };
        if given {
            continue;
        }
        let what = format!("index key without its document: {}", text(key));
        if repair {
            cx.p.delete(key);
            page.repaired.push(what);
        } else {
            page.problems.push(what);
        }
    }
    if rows.len() as u32 == limit {
        page.next = rows.last().map(|k| text(k));
    }
    page
}

/// A blob reference: the blob, and who uses it (`doc:ID`, `upload:ID`, ...).
pub struct Reference {
    pub key: String,
    pub blob: String,
    pub owner: String,
}

fn reference(key: &[u8]) -> Reference {
    let key = text(key);
    let rest = &key[BREF.len() + 1..];
    let (blob, owner) = rest.split_once('/').unwrap_or((rest, ""));
    Reference {
        blob: blob.into(),
        owner: owner.into(),
        key,
    }
}

/// Up to `limit` blob references after the reference key `after`, and the key of the
/// last when there may be more.
pub fn references(cx: &mut Cx, after: &str, limit: u32) -> (Vec<Reference>, Option<String>) {
    let (start, end) = prefix_range(&format!("{BREF}/"));
    let rows = cx.p.scan(&from(after, start), &end, limit, false);
    let refs: Vec<Reference> = rows.iter().map(|(k, _)| reference(k)).collect();
    let next = (rows.len() as u32 == limit).then(|| refs.last().map(|r| r.key.clone()));
    (refs, next.flatten())
}

/// Which of the reference keys `keys` still exist (a second look before a reference to
/// a missing blob is reported, so a document deleted meanwhile is not).
pub fn still_referenced(cx: &mut Cx, keys: &[String]) -> Vec<String> {
    keys.iter()
        .filter(|k| k.strip_prefix(BREF).is_some_and(|r| r.starts_with('/')))
        .filter(|k| cx.p.get(k.as_bytes()).is_some())
        .cloned()
        .collect()
}

/// Which of `blobs` exist and no record refers to; `repair` deletes them. Each blob is
/// looked at, and deleted, in this one call's transaction: a reference committed
/// meanwhile makes the call run again (the store validates every range it read), so a
/// blob in use is never deleted (every writer holds a blob in the transaction that
/// stores it, see `blobs`).
pub fn unreferenced(cx: &mut Cx, blobs: &[String], repair: bool) -> Page {
    let mut page = Page {
        checked: blobs.len() as u32,
        ..Page::default()
    };
    for blob in blobs {
        let (start, end) = prefix_range(&format!("{BREF}/{blob}/"));
        if !cx.p.scan(&start, &end, 1, false).is_empty() || cx.p.get_blob(blob).is_none() {
            continue;
        }
        let what = format!("blob {blob} is used by no record");
        if repair {
            cx.p.delete_blob(blob);
            page.repaired.push(what);
        } else {
            page.problems.push(what);
        }
    }
    page
}

/// Every check over the whole store at once, for tests and simulations (see
/// [`crate::check_invariants`]); blobs are looked up by reading them.
pub fn invariants(cx: &mut Cx) -> Vec<String> {
    let mut problems = Vec::new();
    for phase in [documents, index] {
        let mut after = String::new();
        loop {
            let page = phase(cx, &after, 256, false);
            problems.extend(page.problems);
            match page.next {
                Some(next) => after = next,
                None => break,
            }
        }
    }
    let mut seen = BTreeSet::new();
    for r in references(cx, "", u32::MAX).0 {
        if seen.insert(r.blob.clone()) && cx.p.get_blob(&r.blob).is_none() {
            problems.push(format!("a reference to a blob that is gone: {}", r.key));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_indexes_are_read_in_key_order() {
        let prefixes = super::INDEXES.map(|f| format!("{f}/"));
        assert!(prefixes.windows(2).all(|w| w[0] < w[1]), "{prefixes:?}");
    }
}
