//! An in-memory [`Platform`] for native unit tests and benchmarks: a `BTreeMap` store
//! with no transactions (every write is immediately visible), recorded effects, a
//! settable clock and a cheap, clearly-not-secure password "hash".

use crate::base::api::{
    Delivery, EidIdentity, Event, JobSpec, Mail, PendingDelivery, Platform, Settings, Sms,
};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util;
use crate::base::work_orders::{self, BlobInfo, PdfCheck};
use alloc::collections::BTreeMap;

/// See the module documentation. Not for production: passwords are stored as
/// `plain$<password>`.
#[derive(Default)]
pub struct MemoryPlatform {
    pub data: BTreeMap<Vec<u8>, Vec<u8>>,
    pub blobs: BTreeMap<String, Vec<u8>>,
    /// File parts staged for the request (`FormPart::staged`), by blob id: what
    /// `keep_staged` stores.
    pub staged: BTreeMap<String, Vec<u8>>,
    /// When set, `put_blob` fails with this message (blob storage unavailable).
    pub blob_failure: Option<String>,
    /// Entries read so far: one per `get`, one per entry a `scan` returned.
    pub reads: u64,
    /// When set, the key of every `get` and the start of every `scan`, in order.
    pub read_log: Option<Vec<Vec<u8>>>,
    pub events: Vec<Event>,
    /// Queued webhook deliveries (cancelled ones are removed).
    pub deliveries: Vec<Delivery>,
    pub jobs: Vec<JobSpec>,
    pub mails: Vec<Mail>,
    pub sms: Vec<Sms>,
    /// Client ID Metadata Documents by URL (absent: the fetch fails).
    pub client_metadata: BTreeMap<String, String>,
    /// URLs fetched with `fetch_client_metadata`, in order.
    pub metadata_fetches: Vec<String>,
    /// eID sessions completed by a test: session → verified name.
    pub eid_names: BTreeMap<String, String>,
    pub settings: Settings,
    pub now_ms: u64,
    counter: u64,
}

/// The link key (`Settings::link_key`) of a [`MemoryPlatform::new`].
pub const MEMORY_LINK_KEY: &str = "memory-platform-link-key-for-tests-only";

impl MemoryPlatform {
    pub fn new() -> Self {
        let mut p = MemoryPlatform {
            now_ms: 1_700_000_000_000,
            ..Default::default()
        };
        // A fixed key: tests replay runs, so their links are the same every time.
        p.settings.link_key = MEMORY_LINK_KEY.into();
        p
    }
}

impl Platform for MemoryPlatform {
    fn get(&mut self, key: &[u8]) -> Option<Vec<u8>> {
        self.reads += 1;
        if let Some(log) = &mut self.read_log {
            log.push(key.to_vec());
        }
        self.data.get(key).cloned()
    }

    fn put(&mut self, key: &[u8], value: &[u8]) {
        self.data.insert(key.to_vec(), value.to_vec());
    }

    fn delete(&mut self, key: &[u8]) {
        self.data.remove(key);
    }

    fn scan(
        &mut self,
        start: &[u8],
        end: &[u8],
        limit: u32,
        reverse: bool,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        if let Some(log) = &mut self.read_log {
            log.push(start.to_vec());
        }
        if start >= end {
            return Vec::new();
        }
        let range = self.data.range(start.to_vec()..end.to_vec());
        let pick = |(k, v): (&Vec<u8>, &Vec<u8>)| (k.clone(), v.clone());
        let out: Vec<_> = if reverse {
            range.rev().take(limit as usize).map(pick).collect()
        } else {
            range.take(limit as usize).map(pick).collect()
        };
        self.reads += out.len() as u64;
        out
    }

    fn put_blob(&mut self, data: &[u8]) -> Result<BlobInfo, String> {
        if let Some(why) = &self.blob_failure {
            return Err(why.clone());
        }
        self.counter += 1;
        let id = format!("blob{}", self.counter);
        self.blobs.insert(id.clone(), data.to_vec());
        Ok(BlobInfo {
            id,
            size: data.len() as u64,
            sha256: util::sha256_hex(data),
        })
    }

    fn keep_staged(&mut self, id: &str) -> Result<BlobInfo, String> {
        if let Some(why) = &self.blob_failure {
            return Err(why.clone());
        }
        let data = self
            .staged
            .get(id)
            .ok_or_else(|| format!("the request staged no file part {id}"))?;
        let info = BlobInfo {
            id: id.to_string(),
            size: data.len() as u64,
            sha256: util::sha256_hex(data),
        };
        self.blobs.insert(id.to_string(), data.clone());
        Ok(info)
    }

    fn get_blob(&mut self, id: &str) -> Option<Vec<u8>> {
        self.blobs.get(id).or_else(|| self.staged.get(id)).cloned()
    }

    fn delete_blob(&mut self, id: &str) {
        self.blobs.remove(id);
    }

    fn emit_event(&mut self, event: Event, deliveries: Vec<Delivery>) {
        self.events.push(event);
        self.deliveries.extend(deliveries);
    }

    fn cancel_deliveries(&mut self, subscription_id: &str) {
        self.deliveries
            .retain(|d| d.subscription_id != subscription_id);
    }

    /// Every delivery recorded for the subscription (none is ever delivered here).
    fn pending_deliveries(
        &mut self,
        subscription_id: &str,
        _target_url: &str,
        limit: u32,
    ) -> Vec<PendingDelivery> {
        self.deliveries
            .iter()
            .filter(|d| d.subscription_id == subscription_id)
            .take(limit as usize)
            .map(|d| {
                let body: serde_json::Value = serde_json::from_str(&d.body).unwrap_or_default();
                let text = |k: &str| body[k].as_str().unwrap_or_default().to_string();
                PendingDelivery {
                    event_id: text("event_id"),
                    event: text("event"),
                    attempts: 0,
                    last_error: String::new(),
                    queued_at_ms: 0,
                    next_attempt_at_ms: 0,
                }
            })
            .collect()
    }

    fn schedule_job(&mut self, job: JobSpec) -> String {
        self.jobs.push(job);
        self.jobs.len().to_string()
    }

    fn send_mail(&mut self, mail: Mail) {
        self.mails.push(mail);
    }

    fn send_sms(&mut self, sms: Sms) {
        self.sms.push(sms);
    }

    /// A stand-in provider: `{return_url}?eid={session}`; finishing succeeds when
    /// `eid_names` holds a name for the session.
    fn eid_start(&mut self, session: &str, return_url: &str) -> Result<String, String> {
        if self.settings.eid_provider.is_empty() {
            return Err("no eID provider".into());
        }
        Ok(format!(
            "https://eid.test/start?session={session}&return={return_url}"
        ))
    }

    fn eid_finish(&mut self, session: &str, _query: &str) -> Result<EidIdentity, String> {
        self.eid_names
            .get(session)
            .map(|name| EidIdentity {
                name: name.clone(),
                subject: String::new(),
            })
            .ok_or_else(|| "the person was not identified".into())
    }

    fn settings(&mut self) -> Settings {
        self.settings.clone()
    }

    fn fetch_client_metadata(&mut self, url: &str) -> Result<String, String> {
        self.metadata_fetches.push(url.into());
        self.client_metadata
            .get(url)
            .cloned()
            .ok_or_else(|| format!("{url} could not be fetched"))
    }

    /// A stand-in check: a file that starts with `%PDF-sealed:{document}:{head}` is a
    /// valid seal of that document and head; anything else is unsigned.
    fn verify_pdf(&mut self, data: &[u8]) -> PdfCheck {
        let text = String::from_utf8_lossy(data);
        match text.strip_prefix("%PDF-sealed:") {
            Some(rest) => {
                let mut parts = rest.splitn(2, ':');
                PdfCheck {
                    signed: true,
                    valid: true,
                    whole_file: true,
                    signer: "CN=test".into(),
                    document_id: parts.next().unwrap_or_default().into(),
                    log_head: parts.next().unwrap_or_default().trim().into(),
                    ..work_orders::PdfCheck::default()
                }
            }
            None => work_orders::PdfCheck::default(),
        }
    }

    fn hash_password(&mut self, password: &str) -> String {
        format!("plain${password}")
    }

    fn verify_password(&mut self, password: &str, hash: &str) -> bool {
        !hash.is_empty() && hash == format!("plain${password}")
    }

    fn now_ms(&mut self) -> u64 {
        self.now_ms
    }

    fn fill_random(&mut self, buf: &mut [u8]) {
        // Deterministic and distinct per call: a counter through SHA-256.
        use sha2::{Digest, Sha256};
        for chunk in buf.chunks_mut(32) {
            self.counter += 1;
            let digest = Sha256::digest(self.counter.to_le_bytes());
            chunk.copy_from_slice(&digest[..chunk.len()]);
        }
    }
}
