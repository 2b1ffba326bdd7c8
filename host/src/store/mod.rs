//! Transactional key-value storage: one [`Txn`] per engine call.
//!
//! A backend ([`Backend`]) supplies plain reads, range scans and an atomic batch write.
//! On top of it, [`Txn`] gives each call serializable isolation by optimistic
//! concurrency control: writes are buffered in the transaction (and seen by its own
//! reads); every read and scan is remembered; [`Txn::commit`] takes the store's commit
//! lock, checks that everything read is still what it was, and only then applies the
//! writes as one atomic batch and makes them durable. A transaction whose reads went
//! stale fails with [`CommitError::Conflict`] and is re-run by the caller. Dropping a
//! transaction without committing rolls it back.
//!
//! A transaction that wrote nothing never takes the commit lock: when no commit was
//! applied since it began, what it read was one committed state; otherwise it checks
//! its reads between two looks at the commit sequence (a seqlock), and takes the lock
//! only if commits kept landing meanwhile. Blobs are immutable, so a blob read through
//! [`Txn::get_blob`] is validated by the blob's existence, not its bytes.

pub mod sled;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A key/value pair.
pub type Entry = (Vec<u8>, Vec<u8>);

/// A storage backend. Implementations: [`sled::SledBackend`] (the embedded default).
pub trait Backend: Send + Sync + 'static {
    fn get(&self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>>;
    /// Entries with `start <= key < end`, ascending or, with `reverse`, descending.
    fn scan<'a>(
        &'a self,
        start: &[u8],
        end: &[u8],
        reverse: bool,
    ) -> Box<dyn Iterator<Item = anyhow::Result<Entry>> + 'a>;
    /// Applies all writes atomically (`None` deletes). Need not be durable yet.
    fn apply(&self, writes: &BTreeMap<Vec<u8>, Option<Vec<u8>>>) -> anyhow::Result<()>;
    /// Makes every applied write durable.
    fn flush(&self) -> anyhow::Result<()>;
    /// Whether `key` has a value (without reading it when the backend can).
    fn contains(&self, key: &[u8]) -> anyhow::Result<bool> {
        Ok(self.get(key)?.is_some())
    }
}

/// A backend plus the lock that serializes commits.
pub struct Store {
    backend: Box<dyn Backend>,
    commit_lock: Mutex<()>,
    /// Odd while a commit applies its writes; grows by two per applied commit.
    sequence: AtomicU64,
}

/// Why a commit did not happen.
#[derive(Debug)]
pub enum CommitError {
    /// Something this transaction read changed before it committed; re-run it.
    Conflict,
    /// The backend failed; nothing was applied.
    Backend(anyhow::Error),
}

impl Store {
    pub fn new(backend: impl Backend) -> Arc<Store> {
        Arc::new(Store {
            backend: Box::new(backend),
            commit_lock: Mutex::new(()),
            sequence: AtomicU64::new(0),
        })
    }

    /// Starts a transaction.
    pub fn begin(self: &Arc<Self>) -> Txn {
        Txn {
            begun_at: self.sequence.load(Ordering::Acquire),
            store: self.clone(),
            reads: Vec::new(),
            scans: Vec::new(),
            writes: BTreeMap::new(),
        }
    }

    /// A committed-state scan outside any transaction (for host workers that only look).
    pub fn scan_committed(
        &self,
        start: &[u8],
        end: &[u8],
        limit: usize,
    ) -> anyhow::Result<Vec<Entry>> {
        self.backend.scan(start, end, false).take(limit).collect()
    }

    /// A committed-state read outside any transaction (for host workers).
    pub fn get_committed(&self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        self.backend.get(key)
    }

    pub fn flush(&self) -> anyhow::Result<()> {
        self.backend.flush()
    }
}

/// A scan as the transaction saw the committed state: the base entries it consumed,
/// and whether it reached the end of the range.
struct ScanRead {
    start: Vec<u8>,
    end: Vec<u8>,
    reverse: bool,
    seen: Vec<Entry>,
    exhausted: bool,
}

/// What a transaction read at a key.
enum Seen {
    Value(Option<Vec<u8>>),
    /// A blob: only whether it existed matters (blobs never change).
    Exists(bool),
}

/// Rounds a read-only transaction checks its reads without the lock before taking it.
const LOCK_FREE_CHECKS: usize = 4;

/// One transaction. See the module documentation.
pub struct Txn {
    store: Arc<Store>,
    /// The commit sequence when the transaction began.
    begun_at: u64,
    reads: Vec<(Vec<u8>, Seen)>,
    scans: Vec<ScanRead>,
    writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
}

impl Txn {
    pub fn get(&mut self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        if let Some(own) = self.writes.get(key) {
            return Ok(own.clone());
        }
        let value = self.store.backend.get(key)?;
        self.reads.push((key.to_vec(), Seen::Value(value.clone())));
        Ok(value)
    }

    /// Reads an immutable value (a blob): the commit checks that it still exists, not
    /// that its bytes are unchanged, so a large file is read once per call.
    pub fn get_blob(&mut self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        if let Some(own) = self.writes.get(key) {
            return Ok(own.clone());
        }
        let value = self.store.backend.get(key)?;
        self.reads
            .push((key.to_vec(), Seen::Exists(value.is_some())));
        Ok(value)
    }

    /// Whether the transaction wrote nothing (its commit takes no lock).
    pub fn is_read_only(&self) -> bool {
        self.writes.is_empty()
    }

    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.writes.insert(key.to_vec(), Some(value.to_vec()));
    }

    pub fn delete(&mut self, key: &[u8]) {
        self.writes.insert(key.to_vec(), None);
    }

    /// At most `limit` entries in `[start, end)`, merging this transaction's own writes
    /// over the committed state.
    pub fn scan(
        &mut self,
        start: &[u8],
        end: &[u8],
        limit: usize,
        reverse: bool,
    ) -> anyhow::Result<Vec<Entry>> {
        let mut out = Vec::new();
        if start >= end || limit == 0 {
            return Ok(out);
        }
        let mut record = ScanRead {
            start: start.to_vec(),
            end: end.to_vec(),
            reverse,
            seen: Vec::new(),
            exhausted: false,
        };
        let range = (
            Bound::Included(start.to_vec()),
            Bound::Excluded(end.to_vec()),
        );
        let own: Vec<(&Vec<u8>, &Option<Vec<u8>>)> = if reverse {
            self.writes.range(range).rev().collect()
        } else {
            self.writes.range(range).collect()
        };
        let mut own = own.into_iter().peekable();
        let mut base = self.store.backend.scan(start, end, reverse);
        let mut pending: Option<Entry> = None;
        // `before(a, b)`: a comes first in the scan's order.
        let before = |a: &[u8], b: &[u8]| if reverse { a > b } else { a < b };
        while out.len() < limit {
            if pending.is_none() && !record.exhausted {
                match base.next() {
                    Some(entry) => {
                        let entry = entry?;
                        record.seen.push(entry.clone());
                        pending = Some(entry);
                    }
                    None => record.exhausted = true,
                }
            }
            let take_own = match (own.peek(), &pending) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((ok, _)), Some((bk, _))) => !before(bk, ok),
            };
            if take_own {
                let (key, value) = own.next().unwrap();
                if pending.as_ref().is_some_and(|(bk, _)| bk == key) {
                    pending = None; // our own write shadows the committed entry
                }
                if let Some(value) = value {
                    out.push((key.clone(), value.clone()));
                }
            } else {
                out.push(pending.take().unwrap());
            }
        }
        drop(base);
        self.scans.push(record);
        Ok(out)
    }

    /// Validates and applies the transaction. See the module documentation.
    pub fn commit(self) -> Result<(), CommitError> {
        let store = &*self.store;
        if self.writes.is_empty() {
            let sequence = &store.sequence;
            if sequence.load(Ordering::Acquire) == self.begun_at && self.begun_at.is_multiple_of(2)
            {
                return Ok(()); // nothing was applied while it read
            }
            for _ in 0..LOCK_FREE_CHECKS {
                let before = sequence.load(Ordering::Acquire);
                if !before.is_multiple_of(2) {
                    std::thread::yield_now();
                    continue;
                }
                self.validate()?;
                std::sync::atomic::fence(Ordering::SeqCst);
                if sequence.load(Ordering::Acquire) == before {
                    return Ok(()); // every read held at one moment
                }
            }
        }
        let guard = store.commit_lock.lock().unwrap_or_else(|p| p.into_inner());
        self.validate()?;
        if self.writes.is_empty() {
            return Ok(());
        }
        store.sequence.fetch_add(1, Ordering::SeqCst);
        std::sync::atomic::fence(Ordering::SeqCst);
        let applied = store.backend.apply(&self.writes);
        store.sequence.fetch_add(1, Ordering::SeqCst);
        applied.map_err(CommitError::Backend)?;
        drop(guard);
        store.backend.flush().map_err(CommitError::Backend)
    }

    /// Checks that everything read is still what it was.
    fn validate(&self) -> Result<(), CommitError> {
        let backend = &*self.store.backend;
        for (key, seen) in &self.reads {
            let same = match seen {
                Seen::Value(value) => backend.get(key).map_err(CommitError::Backend)? == *value,
                Seen::Exists(existed) => {
                    backend.contains(key).map_err(CommitError::Backend)? == *existed
                }
            };
            if !same {
                return Err(CommitError::Conflict);
            }
        }
        for scan in &self.scans {
            let mut now = backend.scan(&scan.start, &scan.end, scan.reverse);
            for seen in &scan.seen {
                match now.next().transpose().map_err(CommitError::Backend)? {
                    Some(entry) if entry == *seen => {}
                    _ => return Err(CommitError::Conflict),
                }
            }
            if scan.exhausted && now.next().is_some() {
                return Err(CommitError::Conflict);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A store in a fresh temporary directory, removed when the guard drops.
    pub(crate) fn store() -> (Arc<Store>, tempdir::TempDir) {
        let dir = tempdir::TempDir::new();
        (Store::new(sled::SledBackend::open(&dir.0).unwrap()), dir)
    }

    pub(crate) mod tempdir {
        pub struct TempDir(pub std::path::PathBuf);
        impl TempDir {
            pub fn new() -> Self {
                let mut bytes = [0u8; 8];
                getrandom::fill(&mut bytes).unwrap();
                let name = format!("esign-store-test-{:x}", u64::from_le_bytes(bytes));
                TempDir(std::env::temp_dir().join(name))
            }
        }
        impl Drop for TempDir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn own_writes_are_visible_and_shadow_committed_entries_in_scans() {
        let (s, _d) = store();
        let mut t = s.begin();
        for k in [b"a1", b"a2", b"a3"] {
            t.put(k, b"old");
        }
        t.commit().unwrap();
        let mut t = s.begin();
        t.put(b"a2", b"new");
        t.delete(b"a3");
        t.put(b"a0", b"own");
        assert_eq!(t.get(b"a2").unwrap(), Some(b"new".to_vec()));
        let keys = |v: Vec<Entry>| {
            v.into_iter()
                .map(|(k, v)| {
                    format!(
                        "{}={}",
                        String::from_utf8(k).unwrap(),
                        String::from_utf8(v).unwrap()
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            keys(t.scan(b"a", b"b", 10, false).unwrap()),
            ["a0=own", "a1=old", "a2=new"]
        );
        assert_eq!(
            keys(t.scan(b"a", b"b", 2, true).unwrap()),
            ["a2=new", "a1=old"]
        );
    }

    #[test]
    fn a_stale_read_conflicts_and_applies_nothing() {
        let (s, _d) = store();
        let mut t1 = s.begin();
        let mut t2 = s.begin();
        t1.get(b"k").unwrap();
        t2.get(b"k").unwrap();
        t1.put(b"k", b"1");
        t2.put(b"k", b"2");
        t2.put(b"other", b"x");
        t1.commit().unwrap();
        assert!(matches!(t2.commit(), Err(CommitError::Conflict)));
        let mut t = s.begin();
        assert_eq!(t.get(b"k").unwrap(), Some(b"1".to_vec()));
        assert_eq!(t.get(b"other").unwrap(), None);
    }

    #[test]
    fn a_phantom_in_a_scanned_range_conflicts() {
        let (s, _d) = store();
        let mut t1 = s.begin();
        assert!(t1.scan(b"p/", b"p/\xff", 10, false).unwrap().is_empty());
        t1.put(b"count", b"0");
        let mut t2 = s.begin();
        t2.put(b"p/1", b"x");
        t2.commit().unwrap();
        assert!(matches!(t1.commit(), Err(CommitError::Conflict)));
    }

    #[test]
    fn dropping_a_transaction_rolls_it_back() {
        let (s, _d) = store();
        let mut t = s.begin();
        t.put(b"k", b"v");
        drop(t);
        assert_eq!(s.begin().get(b"k").unwrap(), None);
    }

    #[test]
    fn a_read_only_transaction_commits_without_the_lock_and_still_sees_conflicts() {
        let (s, _d) = store();
        let mut t = s.begin();
        t.put(b"k", b"1");
        t.commit().unwrap();
        // Held by "another commit": a read-only commit must not wait for it.
        let guard = s.commit_lock.lock().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let s2 = s.clone();
        std::thread::spawn(move || {
            let mut t = s2.begin();
            t.get(b"k").unwrap();
            tx.send(t.commit().is_ok()).unwrap();
        });
        let done = rx.recv_timeout(std::time::Duration::from_secs(20));
        drop(guard);
        assert_eq!(done, Ok(true), "a read-only commit waited for the lock");
        // A value read, then changed by a commit: the read-only commit conflicts.
        let mut reader = s.begin();
        reader.get(b"k").unwrap();
        let mut writer = s.begin();
        writer.put(b"k", b"2");
        writer.commit().unwrap();
        assert!(matches!(reader.commit(), Err(CommitError::Conflict)));
        // A commit elsewhere does not disturb it.
        let mut reader = s.begin();
        reader.get(b"k").unwrap();
        let mut writer = s.begin();
        writer.put(b"other", b"x");
        writer.commit().unwrap();
        reader.commit().unwrap();
    }

    #[test]
    fn a_blob_read_is_validated_by_existence() {
        let (s, _d) = store();
        let mut t = s.begin();
        t.put(b"b/1", b"bytes");
        t.commit().unwrap();
        let mut reader = s.begin();
        assert_eq!(reader.get_blob(b"b/1").unwrap(), Some(b"bytes".to_vec()));
        reader.put(b"ref", b"1");
        // Rewritten with other bytes (never happens to a blob): still valid.
        let mut w = s.begin();
        w.put(b"b/1", b"other");
        w.commit().unwrap();
        let mut deleter = s.begin();
        deleter.delete(b"b/1");
        let mut second = s.begin();
        second.get_blob(b"b/1").unwrap();
        second.put(b"ref2", b"1");
        reader.commit().unwrap();
        // Deleted after it was read: conflict.
        deleter.commit().unwrap();
        assert!(matches!(second.commit(), Err(CommitError::Conflict)));
    }
}
