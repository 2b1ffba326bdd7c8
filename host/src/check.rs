//! `esign admin check`: verifies a store and says what is wrong. The engine judges its
//! own records a page at a time (`/admin/check/...`, `engine/src/domain/check.rs`:
//! trails, index keys, seals, blob references); the host looks up the blobs those
//! references name, offers every blob it holds for the engine to say whether anything
//! uses it, and decodes every queue row. Runs in the server (through the admin channel)
//! or on a store the CLI opened; each engine page is one short transaction, so a
//! running server keeps serving.

use crate::host_tables::jobs::StoredJob;
use crate::host_tables::keys;
use crate::host_tables::mail::StoredMail;
use crate::host_tables::webhooks::StoredDelivery;
use crate::queues::range_end;
use crate::store::Store;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// One engine request of the admin origin: `POST path` with a JSON body, its answer.
pub type EngineCall<'a> = dyn FnMut(&str, Value) -> anyhow::Result<Value> + 'a;

/// Documents per engine page: each may read its sealed file and verify it.
const DOCUMENT_PAGE: usize = 25;
/// Index keys or blob references per engine page.
const KEY_PAGE: usize = 1000;
/// Blobs offered to the engine per page.
const BLOB_PAGE: usize = 256;
/// Problems listed before the rest are only counted.
const MAX_LISTED: usize = 1000;

/// What a check looked at and found.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Report {
    pub documents: u64,
    pub index_keys: u64,
    pub blob_references: u64,
    pub blobs: u64,
    pub queue_rows: u64,
    /// What is wrong (at most [`MAX_LISTED`]; `more_problems` counts the rest).
    pub problems: Vec<String>,
    pub more_problems: u64,
    /// What `--repair` fixed.
    pub repaired: Vec<String>,
    pub seconds: f64,
}

impl Report {
    fn problem(&mut self, what: String) {
        if self.problems.len() < MAX_LISTED {
            self.problems.push(what);
        } else {
            self.more_problems += 1;
        }
    }

    fn take_page(&mut self, page: &Value) {
        for p in strings(&page["problems"]) {
            self.problem(p);
        }
        self.repaired.extend(strings(&page["repaired"]));
    }

    /// Whether nothing is wrong (after repairs).
    pub fn clean(&self) -> bool {
        self.problems.is_empty()
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Checks the store; `repair` fixes index keys and removes blobs nothing uses.
pub fn run(store: &Store, call: &mut EngineCall, repair: bool) -> anyhow::Result<Report> {
    let started = std::time::Instant::now();
    let mut report = Report::default();
    report.documents = paged(call, "documents", DOCUMENT_PAGE, repair, &mut report)?;
    report.index_keys = paged(call, "index", KEY_PAGE, repair, &mut report)?;
    references(store, call, &mut report)?;
    blobs(store, call, repair, &mut report)?;
    queues(store, &mut report)?;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Runs one engine phase page by page; how many items it checked.
fn paged(
    call: &mut EngineCall,
    phase: &str,
    limit: usize,
    repair: bool,
    report: &mut Report,
) -> anyhow::Result<u64> {
    let mut after = String::new();
    let mut checked = 0;
    loop {
        let body = json!({"after": after, "limit": limit, "repair": repair});
        let page = call(&format!("/admin/check/{phase}"), body)?;
        checked += page["checked"].as_u64().unwrap_or(0);
        report.take_page(&page);
        match page["next"].as_str() {
            Some(next) => after = next.to_string(),
            None => return Ok(checked),
        }
    }
}

/// Every blob reference must name a stored blob. A reference whose blob is missing is
/// looked at again at the end (reference and blob), so a document deleted meanwhile on
/// a running server is not reported.
fn references(store: &Store, call: &mut EngineCall, report: &mut Report) -> anyhow::Result<()> {
    let mut after = String::new();
    let mut missing: Vec<(String, String, String)> = Vec::new();
    loop {
        let page = call(
            "/admin/check/references",
            json!({"after": after, "limit": KEY_PAGE}),
        )?;
        let refs = page["refs"].as_array().cloned().unwrap_or_default();
        report.blob_references += refs.len() as u64;
        let mut present = BTreeSet::new();
        for r in &refs {
            let blob = r["blob"].as_str().unwrap_or_default();
            if present.contains(blob) {
                continue;
            }
            if store.contains_committed(&keys::blob(blob))? {
                present.insert(blob.to_string());
            } else {
                let text = |k: &str| r[k].as_str().unwrap_or_default().to_string();
                missing.push((text("key"), text("blob"), text("owner")));
            }
        }
        match page["next"].as_str() {
            Some(next) => after = next.to_string(),
            None => break,
        }
    }
    for chunk in missing.chunks(KEY_PAGE) {
        let keys: Vec<&str> = chunk.iter().map(|(k, _, _)| k.as_str()).collect();
        let live = call("/admin/check/references", json!({ "refs": keys }))?;
        let live: BTreeSet<String> = strings(&live["refs"]).into_iter().collect();
        for (key, blob, owner) in chunk {
            if live.contains(key) && !store.contains_committed(&keys::blob(blob))? {
                report.problem(format!(
                    "{}: the file {blob} it uses is gone",
                    owner_name(owner)
                ));
            }
        }
    }
    Ok(())
}

/// `doc:ID` → `document ID`, `upload:ID` → `upload ID`.
fn owner_name(owner: &str) -> String {
    match owner.split_once(':') {
        Some(("doc", id)) => format!("document {id}"),
        Some((kind, id)) => format!("{kind} {id}"),
        None => owner.to_string(),
    }
}

/// Every stored blob must be used by some record; the engine says which are not.
fn blobs(
    store: &Store,
    call: &mut EngineCall,
    repair: bool,
    report: &mut Report,
) -> anyhow::Result<()> {
    let mut start = keys::BLOBS.to_vec();
    let end = range_end(keys::BLOBS);
    loop {
        let page = store.scan_keys_committed(&start, &end, BLOB_PAGE)?;
        let Some(last) = page.last() else { break };
        start = after(last);
        let ids: Vec<String> = page
            .iter()
            .map(|k| String::from_utf8_lossy(&k[keys::BLOBS.len()..]).into_owned())
            .collect();
        report.blobs += ids.len() as u64;
        let answer = call(
            "/admin/check/blobs",
            json!({"blobs": ids, "repair": repair}),
        )?;
        report.take_page(&answer);
        if page.len() < BLOB_PAGE {
            break;
        }
    }
    Ok(())
}

/// The first key after `key`.
fn after(key: &[u8]) -> Vec<u8> {
    let mut next = key.to_vec();
    next.push(0);
    next
}

type Decoder = fn(&[u8]) -> Result<(), serde_json::Error>;

fn decodes<T: serde::de::DeserializeOwned>(value: &[u8]) -> Result<(), serde_json::Error> {
    serde_json::from_slice::<T>(value).map(|_| ())
}

/// The queue tables and the row each holds.
const QUEUES: [(&[u8], Decoder); 9] = [
    (keys::JOBS, decodes::<StoredJob>),
    (keys::WORK_JOBS, decodes::<StoredJob>),
    (keys::DEAD_JOBS, decodes::<StoredJob>),
    (keys::MAIL, decodes::<StoredMail>),
    (keys::DEAD_MAIL, decodes::<StoredMail>),
    (keys::SMS, decodes::<StoredMail>),
    (keys::DEAD_SMS, decodes::<StoredMail>),
    (keys::DELIVERIES, decodes::<StoredDelivery>),
    (keys::WEBHOOKS, decodes::<StoredDelivery>),
];

/// Every queue row must decode (a row that does not would stall or be lost).
fn queues(store: &Store, report: &mut Report) -> anyhow::Result<()> {
    for (prefix, decode) in QUEUES {
        let mut start = prefix.to_vec();
        let end = range_end(prefix);
        loop {
            let rows = store.scan_committed(&start, &end, KEY_PAGE)?;
            for (key, value) in &rows {
                if let Err(e) = decode(value) {
                    let key = key.escape_ascii().to_string();
                    report.problem(format!("queue row {key} does not decode: {e}"));
                }
            }
            report.queue_rows += rows.len() as u64;
            match rows.last() {
                Some((last, _)) if rows.len() == KEY_PAGE => start = after(last),
                _ => break,
            }
        }
    }
    Ok(())
}
