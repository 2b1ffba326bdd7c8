//! Blob references: a blob may be used by several records (an upload and the documents
//! imported from it); `bref/{blob}/{owner}` keys say who uses it, and the last owner to
//! let go deletes it. A blob is held in the transaction that stores it (a file sent
//! inline with a new document by that document, until its import), so a blob that
//! nothing holds is one nothing will use: `esign admin check --repair` deletes it.

use crate::base::cx::Cx;
use crate::base::keyspace::BREF;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::prefix_range;
use crate::base::util;

fn ref_key(blob: &str, owner: &str) -> Vec<u8> {
    util::key(&[BREF, blob, owner])
}

/// Records that `owner` (e.g. `doc:ID`, `upload:ID`) uses `blob`.
pub fn hold(cx: &mut Cx, blob: &str, owner: &str) {
    cx.p.put(&ref_key(blob, owner), b"");
}

/// Drops `owner`'s use of `blob`; deletes the blob when nobody uses it any more.
pub fn release(cx: &mut Cx, blob: &str, owner: &str) {
    cx.p.delete(&ref_key(blob, owner));
    drop_unused(cx, blob);
}

/// Deletes `blob` if no record uses it (e.g. a file given inline whose import failed).
pub fn drop_unused(cx: &mut Cx, blob: &str) {
    let (start, end) = prefix_range(&format!("{BREF}/{blob}/"));
    if cx.p.scan(&start, &end, 1, false).is_empty() {
        cx.p.delete_blob(blob);
    }
}

/// The owner name of a document's blob references.
pub fn owner_of(doc_id: &str) -> String {
    format!("doc:{doc_id}")
}
