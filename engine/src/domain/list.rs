//! `GET /v1/documents`: filters, sorting, scopes and paging, served from index keys.
//!
//! A list reads index ranges `dx/{entity}/{scope}/{tag}/{sort}/` (one per scope and
//! status tag), merges them in sort order and loads only the documents it returns (plus
//! any it must skip for visibility), so its cost grows with `offset + limit`, not with
//! the number of documents. Lookups by external id, external client id or recipient
//! email read their own small indexes and sort the few matches in memory.

use crate::base::cx::Cx;
use crate::base::keyspace::{DCLI, DEXP, DEXT, DRCP, TEAM};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::query::DEFAULT_LIMIT;
use crate::base::records::prefix_range;
use crate::base::util::{self, key_text};
use crate::domain::access::access;
use crate::domain::auth::Principal;
use crate::domain::document::{
    self, Document, SortKey, Status, hex, id_of_index_key, index_prefix, load_doc, scope_user,
};
use core::cmp::Ordering;

/// How far ahead the `expiring` filter looks.
const EXPIRING_WITHIN_MS: u64 = 7 * 24 * 3600 * 1000;

/// A list query.
pub struct Query {
    /// Index scopes to read: `a` (whole entity) or `u{user}` per user.
    pub scopes: Vec<String>,
    /// Status tags to read; `None` is every status.
    pub tags: Option<Vec<String>>,
    pub sort: SortKey,
    /// Sort by status (tags in order, each by creation, newest first).
    pub by_status: bool,
    pub descending: bool,
    pub offset: usize,
    pub limit: usize,
    /// Only active documents expiring within the next seven days (`filter=expiring`).
    pub expiring: bool,
    /// `filter=archive`: items without recipients, with `thumb_url`.
    pub archive: bool,
    /// The filter matched nothing: the answer is `[]`.
    pub nothing: bool,
    pub external_ids: Vec<String>,
    pub emails: Vec<String>,
    pub external_client_id: Option<String>,
    /// Whether the entity-wide scope was asked for (private documents of others are
    /// then filtered per caller).
    pub entity_wide: bool,
    /// Only documents filed in this folder (`folder_id`): its index range is read, and
    /// the status tags filter what it holds.
    pub folder: Option<String>,
}

impl Query {
    /// The caller's own documents, newest first, every status.
    pub fn own(pr: &Principal) -> Query {
        Query {
            scopes: vec![scope_user(&pr.user.id)],
            tags: None,
            sort: document::SortKey::Created,
            by_status: false,
            descending: true,
            offset: 0,
            limit: DEFAULT_LIMIT,
            expiring: false,
            archive: false,
            nothing: false,
            external_ids: Vec::new(),
            emails: Vec::new(),
            external_client_id: None,
            entity_wide: false,
            folder: None,
        }
    }

    /// Applies a `filter` value: a named filter or comma-separated statuses.
    pub fn set_filter(&mut self, filter: &str) {
        let tags = |s: &[Status]| Some(s.iter().map(|x| x.as_str().to_string()).collect());
        let active = [
            document::Status::Sealed,
            document::Status::Sent,
            document::Status::Viewed,
            document::Status::Reviewed,
            document::Status::Hardbounced,
        ];
        self.tags = match filter.trim() {
            "" => None,
            "archive" => {
                self.archive = true;
                tags(&[document::Status::Archived])
            }
            "won" | "signed" => tags(&[
                document::Status::Signed,
                document::Status::SignedWithoutVerification,
            ]),
            "active" => tags(&active),
            "expired" => tags(&[document::Status::Expired]),
            "expiring" => {
                self.expiring = true;
                tags(&active)
            }
            "hot" => tags(&[document::Status::Viewed, document::Status::Reviewed]),
            "vod" => Some(vec!["vod".into()]),
            "lost" => tags(&[document::Status::Lost]),
            "recalled" => tags(&[document::Status::Recalled]),
            other => {
                let mut found: Vec<String> = other
                    .split(',')
                    .filter_map(|s| document::Status::parse(s.trim()))
                    .map(|s| s.as_str().to_string())
                    .collect();
                found.sort();
                found.dedup();
                if found.is_empty() {
                    self.nothing = true;
                }
                Some(found)
            }
        };
    }
}

/// Document ids under `{table}/{entity}/{value}/`, newest first.
pub fn lookup(cx: &mut Cx, entity: &str, table: &str, value: &str, limit: u32) -> Vec<String> {
    let (start, end) = prefix_range(&format!("{table}/{entity}/{}/", key_text(value, 128)));
    cx.p.scan(&start, &end, limit, true)
        .into_iter()
        .map(|(k, _)| id_of_index_key(&k))
        .collect()
}

/// The ids of `entity`'s documents indexed under the external id `ext` (`GET
/// /v1/documents/external/{externalId}`): the first 100 entries of the index.
pub fn by_external_id(cx: &mut Cx, entity: &str, ext: &str) -> Vec<String> {
    lookup(cx, entity, DEXT, ext, 100)
}

pub fn team_scopes(cx: &mut Cx, pr: &Principal) -> Vec<String> {
    let mut scopes = vec![scope_user(&pr.user.id)];
    if let Some(team) = &pr.membership.team_id {
        let (start, end) = prefix_range(&format!("{TEAM}/{}/{team}/", pr.entity.id));
        for (k, _) in cx.p.scan(&start, &end, 10_000, false) {
            let user = id_of_index_key(&k);
            if user != pr.user.id {
                scopes.push(scope_user(&user));
            }
        }
    }
    scopes
}

/// Runs a query; the documents of the page, in order.
pub fn run(cx: &mut Cx, pr: &Principal, q: &Query) -> Vec<Document> {
    if q.nothing {
        return Vec::new();
    }
    let lookups = !q.external_ids.is_empty()
        || !q.emails.is_empty()
        || q.external_client_id.is_some()
        || q.expiring;
    if lookups {
        run_lookup(cx, pr, q)
    } else {
        run_index(cx, pr, q)
    }
}

/// Whether the caller sees `doc` in this list.
fn visible(cx: &mut Cx, pr: &Principal, doc: &Document) -> bool {
    access(cx, pr, doc).read
}

/// One index range, read lazily in chunks, in the query's direction.
struct Cursor {
    start: Vec<u8>,
    end: Vec<u8>,
    prefix_len: usize,
    reverse: bool,
    buf: Vec<Vec<u8>>,
    pos: usize,
    done: bool,
    chunk: u32,
}

impl Cursor {
    fn new(prefix: String, reverse: bool, chunk: u32) -> Cursor {
        let (start, end) = prefix_range(&prefix);
        Cursor {
            prefix_len: prefix.len(),
            start,
            end,
            reverse,
            buf: Vec::new(),
            pos: 0,
            done: false,
            chunk,
        }
    }

    /// The next key without consuming it.
    fn peek(&mut self, cx: &mut Cx) -> Option<&[u8]> {
        if self.pos >= self.buf.len() && !self.done {
            let got = cx.p.scan(&self.start, &self.end, self.chunk, self.reverse);
            self.done = got.len() < self.chunk as usize;
            self.buf = got.into_iter().map(|(k, _)| k).collect();
            self.pos = 0;
            if let Some(last) = self.buf.last() {
                // Continue after the last key read.
                if self.reverse {
                    self.end = last.clone();
                } else {
                    self.start = last.clone();
                    self.start.push(0);
                }
            }
        }
        self.buf.get(self.pos).map(Vec::as_slice)
    }
}

/// The tag groups an index read merges in turn: all tags at once, or one tag after
/// another when sorting by status (in the query's direction).
fn tag_groups(q: &Query) -> Vec<Vec<String>> {
    let tags: Vec<String> = match &q.tags {
        Some(t) => t.clone(),
        None => document::Status::ALL
            .iter()
            .map(|s| s.as_str().to_string())
            .collect(),
    };
    if !q.by_status {
        return vec![tags];
    }
    let mut t = tags;
    t.sort();
    if q.descending {
        t.reverse();
    }
    t.into_iter().map(|x| vec![x]).collect()
}

/// The next key of the merge: the cursor whose next key comes first in the order
/// (`reverse`: largest first) gives it up.
fn next_key(cx: &mut Cx, cursors: &mut [Cursor], reverse: bool) -> Option<Vec<u8>> {
    let mut best: Option<(usize, Vec<u8>)> = None;
    for (i, c) in cursors.iter_mut().enumerate() {
        let plen = c.prefix_len;
        let Some(k) = c.peek(cx) else { continue };
        let part = k[plen..].to_vec();
        let better = best.as_ref().is_none_or(|(_, b)| {
            let ord = part.cmp(b);
            if reverse {
                ord == Ordering::Greater
            } else {
                ord == Ordering::Less
            }
        });
        if better {
            best = Some((i, part));
        }
    }
    let (i, _) = best?;
    let key = cursors[i].buf[cursors[i].pos].clone();
    cursors[i].pos += 1;
    Some(key)
}

/// Where an index read stands: the documents of the page so far and how many of the
/// offset were passed over.
struct Page {
    out: Vec<Document>,
    skipped: usize,
}

/// Reads one tag group's ranges (in every scope, or the folder's range filtered by the
/// group's tags) in merged order into `page`; whether the page is full.
fn read_group(cx: &mut Cx, pr: &Principal, q: &Query, group: &[String], page: &mut Page) -> bool {
    let (sort, reverse) = if q.by_status {
        (document::SortKey::Created, true)
    } else {
        (q.sort, q.descending)
    };
    let chunk = ((q.offset + q.limit) as u32).clamp(16, 256);
    let ranges = match &q.folder {
        Some(f) => vec![document::folder_tag(f)],
        None => group.to_vec(),
    };
    let mut cursors: Vec<Cursor> = Vec::new();
    for scope in &q.scopes {
        for tag in &ranges {
            let prefix = index_prefix(&pr.entity.id, scope, tag, sort);
            cursors.push(Cursor::new(prefix, reverse, chunk));
        }
    }
    while let Some(key) = next_key(cx, &mut cursors, reverse) {
        let Some(doc) = load_doc(cx, &id_of_index_key(&key)) else {
            continue;
        };
        if q.folder.is_some() {
            let tags = document::index_tags(&doc);
            if !group.iter().any(|t| tags.contains(t)) {
                continue;
            }
        }
        if !visible(cx, pr, &doc) {
            continue;
        }
        if page.skipped < q.offset {
            page.skipped += 1;
            continue;
        }
        page.out.push(doc);
        if page.out.len() >= q.limit {
            return true;
        }
    }
    false
}

fn run_index(cx: &mut Cx, pr: &Principal, q: &Query) -> Vec<Document> {
    let mut page = Page {
        out: Vec::new(),
        skipped: 0,
    };
    for group in tag_groups(q) {
        if read_group(cx, pr, q, &group, &mut page) {
            break;
        }
    }
    page.out
}

/// The ids the lookups of `q` find (external ids, recipient emails, then narrowed by
/// the external client id and by expiring soon), sorted, once each.
fn lookup_ids(cx: &mut Cx, entity: &str, q: &Query) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for ext in &q.external_ids {
        ids.extend(lookup(cx, entity, DEXT, ext, 10_000));
    }
    for email in &q.emails {
        ids.extend(lookup(cx, entity, DRCP, email, 10_000));
    }
    if let Some(ecid) = &q.external_client_id {
        let found = lookup(cx, entity, DCLI, ecid, 10_000);
        if q.external_ids.is_empty() && q.emails.is_empty() {
            ids = found;
        } else {
            ids.retain(|i| found.contains(i));
        }
    }
    if q.expiring {
        let now = cx.now();
        let start = format!("{DEXP}/{entity}/{}", hex(now)).into_bytes();
        let end = format!("{DEXP}/{entity}/{}", hex(now + EXPIRING_WITHIN_MS)).into_bytes();
        let found: Vec<String> =
            cx.p.scan(&start, &end, 10_000, false)
                .into_iter()
                .map(|(k, _)| id_of_index_key(&k))
                .collect();
        if q.external_ids.is_empty() && q.emails.is_empty() && q.external_client_id.is_none() {
            ids = found;
        } else {
            ids.retain(|i| found.contains(i));
        }
    }
    ids.sort();
    ids.dedup();
    ids
}

/// Whether a document a lookup found fits the rest of `q`: its scopes, status tags, the
/// exact external id or email, the external client id and the folder.
fn fits(q: &Query, doc: &Document) -> bool {
    let in_scope =
        q.scopes.iter().any(|s| s == "a") || q.scopes.contains(&scope_user(&doc.user_id));
    let tag_ok = q.tags.as_ref().is_none_or(|t| {
        t.iter()
            .any(|x| x == doc.status.as_str() || (x == "vod" && doc.flags.is_video))
    });
    let exact = (q.external_ids.is_empty() && q.emails.is_empty())
        || q.external_ids.contains(&doc.external_id)
        || doc
            .recipients
            .iter()
            .any(|r| q.emails.contains(&util::normalize_email(&r.email)));
    let client_ok = q
        .external_client_id
        .as_ref()
        .is_none_or(|c| &doc.external_client_id == c);
    let folder_ok = q.folder.as_ref().is_none_or(|f| &doc.ext.folder_id == f);
    in_scope && tag_ok && exact && client_ok && folder_ok
}

/// Sorts the documents a lookup found by the query's key, then by creation.
fn sort_found(q: &Query, docs: &mut [Document]) {
    let key = |d: &Document| -> (String, String) {
        let k = match (q.by_status, q.sort) {
            (true, _) => d.status.as_str().to_string(),
            (_, document::SortKey::Created) => hex(d.created_ms),
            (_, document::SortKey::Name) => key_text(&d.name, 48),
            (_, document::SortKey::Value) => util::sortable_f64(d.value),
            (_, document::SortKey::Owner) => key_text(&d.sender.name, 48),
            (_, document::SortKey::SignDate) => hex(d.sign_ms.unwrap_or(0)),
        };
        (k, hex(d.created_ms))
    };
    docs.sort_by(|a, b| {
        let ord = key(a).cmp(&key(b));
        if q.descending { ord.reverse() } else { ord }
    });
}

fn run_lookup(cx: &mut Cx, pr: &Principal, q: &Query) -> Vec<Document> {
    let mut docs: Vec<Document> = Vec::new();
    for id in lookup_ids(cx, &pr.entity.id.clone(), q) {
        let Some(doc) = load_doc(cx, &id) else {
            continue;
        };
        if fits(q, &doc) && visible(cx, pr, &doc) {
            docs.push(doc);
        }
    }
    sort_found(q, &mut docs);
    docs.into_iter().skip(q.offset).take(q.limit).collect()
}

/// How many documents `user_id` of `entity_id` made from `start` to `end` (ms,
/// inclusive), by their status now: each status with its count, at most `cap` each,
/// read from the list index without loading a document.
pub fn created_by_status(
    cx: &mut Cx,
    entity_id: &str,
    user_id: &str,
    (start, end): (u64, u64),
    cap: u32,
) -> Vec<(&'static str, u64)> {
    Status::ALL
        .iter()
        .map(|status| {
            let prefix = index_prefix(
                entity_id,
                &scope_user(user_id),
                status.as_str(),
                SortKey::Created,
            );
            let from = format!("{prefix}{}", hex(start)).into_bytes();
            let to = format!("{prefix}{}", hex(end.saturating_add(1))).into_bytes();
            let n = cx.p.scan(&from, &to, cap, false).len() as u64;
            (status.as_str(), n)
        })
        .collect()
}
