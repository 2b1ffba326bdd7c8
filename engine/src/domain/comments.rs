//! A document's comment thread (`dcom/{doc}/…`, `document::comment_key`): what its
//! recipients see of it and how long it is. Comments are written by the sender's side
//! ([`add_by_user`], [`resolve`]) and by a recipient's act (`recipient_acts::comment`).

use crate::base::cx::Cx;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records;
use crate::base::util::{iso8601, new_id};
use crate::domain::accounts::user_name;
use crate::domain::auth::Principal;
use crate::domain::document::{Comment, Document, comment_key, comments_prefix};
use crate::domain::events::emit_and_log;
use crate::domain::trail::Actor;
use serde_json::json;

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

/// Every comment of the document, internal ones included, oldest first.
pub fn all(cx: &mut Cx, doc_id: &str) -> Vec<Comment> {
    let (start, end) = comments_prefix(doc_id);
    cx.p.scan(&start, &end, u32::MAX, false)
        .into_iter()
        .map(|(_, v)| records::decode::<Comment>(&v))
        .collect()
}

/// A user's comment on `doc` (`POST .../comments`; a suggestion is internal, and
/// blocks sending until resolved): stored, with `comment.created`.
pub fn add_by_user(
    cx: &mut Cx,
    doc: &mut Document,
    pr: &Principal,
    (text, internal, suggestion): (String, bool, bool),
    actor: &Actor,
) -> Comment {
    let c = Comment {
        id: new_id(cx),
        text,
        author_type: "user".into(),
        author_id: pr.user.id.clone(),
        author_name: user_name(&pr.user),
        author_email: pr.user.email.clone(),
        created_ms: cx.now(),
        internal: suggestion || internal,
        suggestion,
        resolved: false,
    };
    cx.save(&comment_key(&doc.id, c.created_ms, &c.id), &c);
    let extra = json!({"event_meta": {
        "comment_id": c.id, "created_by": c.author_name, "created_at": iso8601(c.created_ms),
        "text": c.text,
    }});
    emit_and_log(
        cx,
        doc,
        actor,
        "comment.created",
        "commented",
        "comment added",
        extra,
    );
    c
}

/// Marks comment `cid` of the document resolved; whether there is one.
pub fn resolve(cx: &mut Cx, doc_id: &str, cid: &str) -> bool {
    let (start, end) = comments_prefix(doc_id);
    for (k, v) in cx.p.scan(&start, &end, u32::MAX, false) {
        let mut c: Comment = records::decode(&v);
        if c.id == cid {
            c.resolved = true;
            cx.save(&k, &c);
            return true;
        }
    }
    false
}
