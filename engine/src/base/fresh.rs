//! Reads that cannot find anything are not made: a key named by an id this call minted
//! ([`crate::base::util::new_id`]) cannot be in the store unless this call wrote it.
//!
//! A create reads several keys of its brand-new document (`dsig/`, `dfld/`, `rver/`,
//! `prev/`, `dseal/` of the new id) through code it shares with later calls. Each such
//! read was a round trip to the store and, on PostgreSQL, a predicate lock on an index
//! page other writers insert into. [`FreshKeys`] answers them itself: a `get` of a key
//! with a minted id as one of its segments (between `/` or `:`) is `None`, and so is a `scan`
//! whose range lies inside such a prefix, unless this call wrote a key there (then the
//! read goes to the store, which sees the call's writes).
//!
//! Why this keeps every call serializable: another call can only write a key named by
//! this id after learning the id, which it cannot do before this call commits. The host
//! writes only its own key families (`q/`, `j/`, `d/`, …), which the engine never reads.

use crate::base::api::{
    Delivery, EidIdentity, Event, JobSpec, Mail, PendingDelivery, Platform, Settings, Sms,
};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::work_orders::{BlobInfo, PdfCheck};
use alloc::collections::BTreeSet;

/// What separates the segments of a key: `/`, and `:` as in `prev/doc:{id}`.
fn is_separator(b: &u8) -> bool {
    *b == b'/' || *b == b':'
}

/// A [`Platform`] that answers reads of keys named by a freshly minted id itself; every
/// other method goes to the platform it wraps.
pub struct FreshKeys<'a> {
    inner: &'a mut dyn Platform,
    minted: Vec<String>,
    written: BTreeSet<Vec<u8>>,
}

impl<'a> FreshKeys<'a> {
    pub fn new(inner: &'a mut dyn Platform) -> Self {
        FreshKeys {
            inner,
            minted: Vec::new(),
            written: BTreeSet::new(),
        }
    }

    /// Whether a segment of `key` is a minted id.
    fn names_minted(&self, key: &[u8]) -> bool {
        !self.minted.is_empty()
            && key
                .split(is_separator)
                .any(|seg| self.minted.iter().any(|id| id.as_bytes() == seg))
    }

    /// Whether `get(key)` must be `None` without asking the store.
    fn surely_absent(&self, key: &[u8]) -> bool {
        self.names_minted(key) && !self.written.contains(key)
    }

    /// Whether every key in `start..end` lies under a prefix naming a minted id and
    /// this call wrote none of them.
    fn surely_empty(&self, start: &[u8], end: &[u8]) -> bool {
        if self.minted.is_empty() || start >= end {
            return false;
        }
        let common = start.iter().zip(end).take_while(|(a, b)| a == b).count();
        // Only whole segments of the shared prefix count.
        let Some(cut) = start[..common].iter().rposition(is_separator) else {
            return false;
        };
        self.names_minted(&start[..cut])
            && self
                .written
                .range(start.to_vec()..end.to_vec())
                .next()
                .is_none()
    }
}

impl Platform for FreshKeys<'_> {
    fn get(&mut self, key: &[u8]) -> Option<Vec<u8>> {
        if self.surely_absent(key) {
            return None;
        }
        self.inner.get(key)
    }
    fn put(&mut self, key: &[u8], value: &[u8]) {
        self.written.insert(key.to_vec());
        self.inner.put(key, value)
    }
    fn delete(&mut self, key: &[u8]) {
        self.written.insert(key.to_vec());
        self.inner.delete(key)
    }
    fn scan(
        &mut self,
        start: &[u8],
        end: &[u8],
        limit: u32,
        reverse: bool,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        if self.surely_empty(start, end) {
            return Vec::new();
        }
        self.inner.scan(start, end, limit, reverse)
    }
    fn minted(&mut self, id: &str) {
        self.minted.push(id.to_string());
    }
    fn put_blob(&mut self, data: &[u8]) -> Result<BlobInfo, String> {
        self.inner.put_blob(data)
    }
    fn keep_staged(&mut self, id: &str) -> Result<BlobInfo, String> {
        self.inner.keep_staged(id)
    }
    fn get_blob(&mut self, id: &str) -> Option<Vec<u8>> {
        self.inner.get_blob(id)
    }
    fn delete_blob(&mut self, id: &str) {
        self.inner.delete_blob(id)
    }
    fn emit_event(&mut self, event: Event, deliveries: Vec<Delivery>) {
        self.inner.emit_event(event, deliveries)
    }
    fn cancel_deliveries(&mut self, subscription_id: &str) {
        self.inner.cancel_deliveries(subscription_id)
    }
    fn pending_deliveries(
        &mut self,
        subscription_id: &str,
        target_url: &str,
        limit: u32,
    ) -> Vec<PendingDelivery> {
        self.inner
            .pending_deliveries(subscription_id, target_url, limit)
    }
    fn schedule_job(&mut self, job: JobSpec) -> String {
        self.inner.schedule_job(job)
    }
    fn send_mail(&mut self, mail: Mail) {
        self.inner.send_mail(mail)
    }
    fn send_sms(&mut self, sms: Sms) {
        self.inner.send_sms(sms)
    }
    fn settings(&mut self) -> Settings {
        self.inner.settings()
    }
    fn eid_start(&mut self, session: &str, return_url: &str) -> Result<String, String> {
        self.inner.eid_start(session, return_url)
    }
    fn eid_finish(&mut self, session: &str, query: &str) -> Result<EidIdentity, String> {
        self.inner.eid_finish(session, query)
    }
    fn verify_pdf(&mut self, data: &[u8]) -> PdfCheck {
        self.inner.verify_pdf(data)
    }
    fn fetch_client_metadata(&mut self, url: &str) -> Result<String, String> {
        self.inner.fetch_client_metadata(url)
    }
    fn hash_password(&mut self, password: &str) -> String {
        self.inner.hash_password(password)
    }
    fn verify_password(&mut self, password: &str, hash: &str) -> bool {
        self.inner.verify_password(password, hash)
    }
    fn now_ms(&mut self) -> u64 {
        self.inner.now_ms()
    }
    fn fill_random(&mut self, buf: &mut [u8]) {
        self.inner.fill_random(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryPlatform;

    const NEW: &str = "aaaaaaaaaaaaaaaa";

    #[test]
    fn a_minted_id_reads_nothing_until_the_call_writes_it() {
        let mut mem = MemoryPlatform::new();
        // A stored key that merely resembles one: not a whole segment.
        mem.data
            .insert(b"doc/xaaaaaaaaaaaaaaaa".to_vec(), b"old".to_vec());
        let mut f = FreshKeys::new(&mut mem);
        f.minted(NEW);
        let key = format!("dsig/{NEW}/r1").into_bytes();
        assert_eq!(f.get(&key), None);
        let (start, end) = (
            format!("dfld/{NEW}/").into_bytes(),
            format!("dfld/{NEW}0").into_bytes(),
        );
        assert!(f.scan(&start, &end, 10, false).is_empty());
        assert_eq!(f.get(b"doc/xaaaaaaaaaaaaaaaa"), Some(b"old".to_vec()));
        drop(f);
        assert_eq!(
            mem.reads, 1,
            "only the key that names no minted id was read"
        );

        let mut f = FreshKeys::new(&mut mem);
        f.minted(NEW);
        f.put(&key, b"v");
        assert_eq!(f.get(&key), Some(b"v".to_vec()));
        f.put(&format!("dfld/{NEW}/f1").into_bytes(), b"f");
        assert_eq!(f.scan(&start, &end, 10, false).len(), 1);
        // A range wider than the minted prefix goes to the store.
        assert_eq!(f.scan(b"dfld/", b"dfld0", 10, false).len(), 1);
        f.delete(&key);
        assert_eq!(f.get(&key), None);
        drop(f);
        assert_eq!(
            mem.reads,
            1 + 4,
            "reads after the call's own writes reach the store"
        );
    }
}
