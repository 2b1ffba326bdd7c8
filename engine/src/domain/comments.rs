//! A document's comment thread (`dcom/{doc}/…`, `document::comment_key`): what its
//! recipients see of it and how long it is. Comments are written by the sender's
//! handlers and by a recipient's act (`recipient_acts::comment`).

use crate::base::cx::Cx;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records;
use crate::domain::document::{Comment, comments_prefix};

/// The comment thread a recipient sees: every comment but the internal ones (at most
/// 1000).
pub fn visible(cx: &mut Cx, doc_id: &str) -> Vec<Comment> {
    let (start, end) = comments_prefix(doc_id);
    cx.p.scan(&start, &end, 1000, false)
        .into_iter()
        .map(|(_, v)| records::decode::<Comment>(&v))
        .filter(|c| !c.internal)
        .collect()
}

/// How many comments the document has, internal ones included.
pub fn count(cx: &mut Cx, doc_id: &str) -> usize {
    let (start, end) = comments_prefix(doc_id);
    cx.p.scan(&start, &end, u32::MAX, false).len()
}
