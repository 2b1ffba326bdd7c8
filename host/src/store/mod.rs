//! Transactional key-value storage: one [`Txn`] per engine call.
//!
//! A backend ([`Backend`]) begins transactions ([`BackendTxn`]) that read, scan and
//! commit a batch of writes atomically; how a transaction is isolated is the backend's
//! business:
//!
//! - [`sled::SledBackend`] (the embedded default, one process) validates optimistically:
//!   every read and scan is remembered; the commit takes the process's commit lock,
//!   checks that everything read is still what it was, and only then applies the
//!   writes as one atomic batch and makes them durable. A transaction that wrote nothing
//!   never takes the lock (a seqlock tells whether its reads held at one moment).
//! - [`postgres::PgBackend`] (several hosts on one database) runs one database
//!   transaction at `SERIALIZABLE` per engine call; the database detects conflicts.
//!
//! On top of either, [`Txn`] buffers the call's writes (seen by its own reads and
//! scans) and hands them to the backend at commit. A transaction that conflicted fails
//! with [`CommitError::Conflict`], or, when a read already failed that way mid-call,
//! reports [`Txn::conflicted`]; the caller re-runs it. Dropping a transaction without
//! committing rolls it back. Blobs are immutable, so a blob read through
//! [`Txn::get_blob`] may be validated by the blob's existence, not its bytes.
//!
//! Queue rows (jobs, mail, webhook deliveries) are worked on by one process at a time:
//! a worker takes a [`Lease`] on a row ([`Store::lease`]) before working on it and
//! checks it ([`Txn::holds`]) in the transaction that records the outcome. On sled the
//! lease is the process's own (its workers keep rows in flight in memory); on
//! PostgreSQL it is a row lock with an expiry, so a crashed host's rows are taken over.

pub mod blob_files;
pub mod postgres;
pub mod sled;

use bytes::Bytes;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;

/// A key/value pair.
pub type Entry = (Vec<u8>, Vec<u8>);

/// A transaction's writes, in key order (`None` deletes).
pub type Writes = BTreeMap<Vec<u8>, Option<Bytes>>;

/// A storage backend: [`sled::SledBackend`] (the embedded default) or
/// [`postgres::PgBackend`].
/// What [`Backend::snapshot`] hands each entry (key, value) to.
pub type Visitor<'a> = dyn FnMut(&[u8], &[u8]) -> anyhow::Result<()> + 'a;

pub trait Backend: Send + Sync + 'static {
    /// Starts a transaction.
    fn begin(&self) -> anyhow::Result<Box<dyn BackendTxn>>;
    /// Starts a transaction that will only read (its commit must write nothing), where
    /// a backend can make that cheaper (PostgreSQL: `READ ONLY`, whose serializable
    /// reads need fewer locks).
    fn begin_read_only(&self) -> anyhow::Result<Box<dyn BackendTxn>> {
        self.begin()
    }
    /// At most `limit` committed entries in `[start, end)`, ascending, outside any
    /// transaction (for host workers that only look).
    fn scan_committed(&self, start: &[u8], end: &[u8], limit: usize) -> anyhow::Result<Vec<Entry>>;
    /// A committed value, outside any transaction.
    fn get_committed(&self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>>;
    /// The keys of [`Backend::scan_committed`], where a backend can skip the values.
    fn scan_keys_committed(
        &self,
        start: &[u8],
        end: &[u8],
        limit: usize,
    ) -> anyhow::Result<Vec<Vec<u8>>> {
        let rows = self.scan_committed(start, end, limit)?;
        Ok(rows.into_iter().map(|(k, _)| k).collect())
    }
    /// Whether a committed key exists, where a backend can tell without its value.
    fn contains_committed(&self, key: &[u8]) -> anyhow::Result<bool> {
        Ok(self.get_committed(key)?.is_some())
    }
    /// Makes every committed write durable (a no-op where commits are durable).
    fn flush(&self) -> anyhow::Result<()>;
    /// Whether other processes may use the same data: reads wait on the network (calls
    /// run off the tokio workers), queue rows are leased, and workers poll for work
    /// that other hosts queued.
    fn shared(&self) -> bool {
        false
    }
    /// How many transactions may be open at once (a connection pool's size); `None`
    /// when there is no such bound.
    fn connections(&self) -> Option<usize> {
        None
    }
    /// Visits every entry of one point in time, in key order, with writes paused
    /// (reads go on); returns how long writes waited. A backend whose data another
    /// system keeps (PostgreSQL) refuses: that system's tools back it up.
    fn snapshot(&self, _visit: &mut Visitor<'_>) -> anyhow::Result<Duration> {
        anyhow::bail!(
            "this store lives in PostgreSQL: back it up with PostgreSQL's own tools (pg_dump, or base backups with WAL archiving); everything esign needs is in the database (records, files, queues and the generated signing key), so nothing outside it needs a backup"
        )
    }
    /// Connections in use and the pool's size, for a backend with a pool.
    fn pool_use(&self) -> Option<(usize, usize)> {
        None
    }
    /// Takes the lease on the queue row at `key` for `lease`, unless another worker
    /// holds an unexpired one or the row is gone.
    fn lease(&self, _key: &[u8], _lease: Duration) -> anyhow::Result<Option<Lease>> {
        Ok(Some(Lease::LOCAL))
    }
    /// Extends a lease this worker holds; false when it was lost.
    fn renew(&self, _key: &[u8], _lease: &Lease, _for: Duration) -> anyhow::Result<bool> {
        Ok(true)
    }
    /// Calls `wake` whenever another process sharing the store commits new queue rows,
    /// until the process ends. A backend without such notices does nothing: its
    /// workers poll.
    fn listen(&self, _wake: Wake) {}
    /// How long to wait before re-running a transaction after its `attempt`-th
    /// conflict (sled: not at all).
    fn retry_delay(&self, _attempt: u32) -> Duration {
        Duration::ZERO
    }
}

/// One backend transaction. Dropping it rolls it back.
pub trait BackendTxn: Send {
    fn get(&mut self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>>;
    /// Reads an immutable value (a blob).
    fn get_blob(&mut self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        self.get(key)
    }
    /// At most `limit` committed entries in `[start, end)`; fewer only when the range
    /// has no more.
    fn scan(
        &mut self,
        start: &[u8],
        end: &[u8],
        limit: usize,
        reverse: bool,
    ) -> anyhow::Result<Vec<Entry>>;
    /// Whether the queue row at `key` is still there and `lease` still holds it.
    fn holds(&mut self, key: &[u8], lease: &Lease) -> anyhow::Result<bool>;
    /// Applies `writes` atomically, or nothing.
    fn commit(self: Box<Self>, writes: &Writes) -> Result<(), CommitError>;
    /// Round trips to the database so far; `None` for an embedded store.
    fn round_trips(&self) -> Option<u32> {
        None
    }
}

/// A worker's claim on a queue row (see [`Backend::lease`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// Random per claim; 0 for the process-local lease of an unshared backend.
    pub token: i64,
}

impl Lease {
    /// The lease of a backend that one process owns.
    pub const LOCAL: Lease = Lease { token: 0 };
}

/// A read failed because the transaction conflicted with another (it must be re-run).
/// Backends return it inside the `anyhow::Error` of a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conflict(pub Cause);

/// Why a transaction conflicted, as counted in `esign_store_conflicts_total{cause}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// A row it read or wrote was changed by a transaction that committed meanwhile
    /// (PostgreSQL's "concurrent update" or "concurrent delete"; sled: a value read
    /// changed): two calls wanted the same record.
    Row,
    /// A range it scanned, or a key it found absent, gained or lost a row (sled only;
    /// PostgreSQL counts these as [`Cause::Dependency`]).
    Phantom,
    /// PostgreSQL's serializable checks found a cycle of read/write dependencies. Its
    /// predicate locks cover index pages, not only keys, so unrelated keys on one page
    /// conflict too: the cause worth watching when writers do not scale.
    Dependency,
    /// A deadlock (`40P01`).
    Deadlock,
}

impl Cause {
    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            Cause::Row => "row",
            Cause::Phantom => "phantom",
            Cause::Dependency => "dependency",
            Cause::Deadlock => "deadlock",
        }
    }
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the transaction conflicted with a concurrent one ({})",
            self.0.label()
        )
    }
}

impl std::error::Error for Conflict {}

/// The store could not be reached (a lost connection, an exhausted pool); nothing was
/// applied. Answered with 503.
#[derive(Debug)]
pub struct Unavailable(pub String);

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the store is unavailable: {}", self.0)
    }
}

impl std::error::Error for Unavailable {}

/// A backend and what the host asks of it.
pub struct Store {
    backend: Box<dyn Backend>,
    /// How long a worker's lease on a queue row lasts, in milliseconds.
    lease_ms: std::sync::atomic::AtomicU64,
    /// How long workers on a shared store sleep at most, in milliseconds.
    shared_poll_ms: std::sync::atomic::AtomicU64,
}

/// What [`Backend::listen`] calls: the kinds of work another process queued (`jobs`,
/// `mail`, `sms`, `deliveries`), and when it committed them (Unix milliseconds by its
/// clock; `None` for a wake-up of everything, as after a reconnection).
pub type Wake = Arc<dyn Fn(&[&str], Option<u64>) + Send + Sync>;

/// How long a lease lasts unless [`Store::set_lease`] says otherwise: longer than any
/// single attempt of a worker (work renews its lease meanwhile), short enough that a
/// crashed host's rows are taken over within a minute.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(60);

/// How often workers on a shared store look for work that other hosts queued, unless
/// [`Store::set_shared_poll`] says otherwise: the fallback behind the database's wake-ups
/// ([`Backend::listen`]), for a lost notice or a database without them.
pub const SHARED_POLL: Duration = Duration::from_secs(1);

/// Why a commit did not happen.
#[derive(Debug)]
pub enum CommitError {
    /// Something this transaction read changed before it committed; re-run it.
    Conflict(Cause),
    /// The store could not be reached; nothing was applied (or, when the connection
    /// was lost during the commit itself, the outcome is unknown).
    Unavailable(anyhow::Error),
    /// The backend failed; nothing was applied.
    Backend(anyhow::Error),
}

impl CommitError {
    /// Sorts a backend error: a conflict, an unreachable store, or anything else.
    pub fn classify(e: anyhow::Error) -> CommitError {
        if let Some(Conflict(cause)) = e.downcast_ref::<Conflict>() {
            CommitError::Conflict(*cause)
        } else if e.is::<Unavailable>() {
            CommitError::Unavailable(e)
        } else {
            CommitError::Backend(e)
        }
    }

    /// As an error, for callers that do not re-run (a conflict becomes an error too).
    pub fn into_error(self) -> anyhow::Error {
        match self {
            CommitError::Conflict(cause) => Conflict(cause).into(),
            CommitError::Unavailable(e) | CommitError::Backend(e) => e,
        }
    }
}

impl Store {
    pub fn new(backend: impl Backend) -> Arc<Store> {
        Arc::new(Store {
            backend: Box::new(backend),
            lease_ms: (DEFAULT_LEASE.as_millis() as u64).into(),
            shared_poll_ms: (SHARED_POLL.as_millis() as u64).into(),
        })
    }

    /// Starts a transaction. The backend's transaction begins at the first read or at
    /// the commit, so a transaction that is dropped unused costs nothing.
    pub fn begin(self: &Arc<Self>) -> Txn {
        Txn {
            store: self.clone(),
            inner: None,
            writes: BTreeMap::new(),
            conflicted: None,
            unavailable: false,
            read_only: false,
        }
    }

    /// Starts a transaction meant only to read (see [`Backend::begin_read_only`]). An
    /// engine call on it stops before its first write (`CallState::may_write`) and the
    /// caller runs it again on [`Store::begin`]; a commit with writes is refused.
    pub fn begin_read_only(self: &Arc<Self>) -> Txn {
        Txn {
            read_only: true,
            ..self.begin()
        }
    }

    /// A committed-state scan outside any transaction (for host workers that only look).
    pub fn scan_committed(
        &self,
        start: &[u8],
        end: &[u8],
        limit: usize,
    ) -> anyhow::Result<Vec<Entry>> {
        self.backend.scan_committed(start, end, limit)
    }

    /// See [`Backend::scan_keys_committed`].
    pub fn scan_keys_committed(
        &self,
        start: &[u8],
        end: &[u8],
        limit: usize,
    ) -> anyhow::Result<Vec<Vec<u8>>> {
        self.backend.scan_keys_committed(start, end, limit)
    }

    /// See [`Backend::contains_committed`].
    pub fn contains_committed(&self, key: &[u8]) -> anyhow::Result<bool> {
        self.backend.contains_committed(key)
    }

    /// A committed-state read outside any transaction (for host workers).
    pub fn get_committed(&self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        self.backend.get_committed(key)
    }

    pub fn flush(&self) -> anyhow::Result<()> {
        self.backend.flush()
    }

    /// See [`Backend::shared`].
    pub fn shared(&self) -> bool {
        self.backend.shared()
    }

    /// See [`Backend::snapshot`].
    pub fn snapshot(&self, visit: &mut Visitor<'_>) -> anyhow::Result<Duration> {
        self.backend.snapshot(visit)
    }

    /// See [`Backend::pool_use`].
    pub fn pool_use(&self) -> Option<(usize, usize)> {
        self.backend.pool_use()
    }

    /// See [`Backend::connections`].
    pub fn connections(&self) -> Option<usize> {
        self.backend.connections()
    }

    /// Sets how long workers' leases last.
    pub fn set_lease(&self, lease: Duration) {
        self.lease_ms.store(
            lease.as_millis().max(1) as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// How long workers' leases last.
    pub fn lease_duration(&self) -> Duration {
        Duration::from_millis(self.lease_ms.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Takes the lease on the queue row at `key` (see [`Backend::lease`]); `None` when
    /// another worker holds it or the row is gone.
    pub fn lease(&self, key: &[u8]) -> anyhow::Result<Option<Lease>> {
        self.backend.lease(key, self.lease_duration())
    }

    /// Extends a lease (see [`Backend::renew`]); false when it was lost.
    pub fn renew(&self, key: &[u8], lease: &Lease) -> anyhow::Result<bool> {
        self.backend.renew(key, lease, self.lease_duration())
    }

    /// The longest a worker should sleep before looking again: other hosts of a shared
    /// store queue work without waking this one.
    pub fn poll_cap(&self, wait: Duration) -> Duration {
        if self.shared() {
            let poll = self
                .shared_poll_ms
                .load(std::sync::atomic::Ordering::Relaxed);
            wait.min(Duration::from_millis(poll))
        } else {
            wait
        }
    }

    /// Sets how long workers on a shared store sleep at most between looks.
    pub fn set_shared_poll(&self, poll: Duration) {
        let ms = poll.as_millis().max(1) as u64;
        self.shared_poll_ms
            .store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// See [`Backend::listen`].
    pub fn listen(&self, wake: Wake) {
        self.backend.listen(wake)
    }

    /// See [`Backend::retry_delay`]; sleeps it.
    pub fn pause_after_conflict(&self, attempt: u32) {
        let d = self.backend.retry_delay(attempt);
        if !d.is_zero() {
            std::thread::sleep(d);
        }
    }
}

/// One transaction. See the module documentation.
pub struct Txn {
    store: Arc<Store>,
    /// Begun at the first read (or the commit).
    inner: Option<Box<dyn BackendTxn>>,
    writes: Writes,
    /// A read failed with [`Conflict`]: the caller must re-run the transaction.
    conflicted: Option<Cause>,
    /// A read failed with [`Unavailable`].
    unavailable: bool,
    /// Begun by [`Store::begin_read_only`].
    read_only: bool,
}

impl Txn {
    fn inner(&mut self) -> anyhow::Result<&mut Box<dyn BackendTxn>> {
        if self.inner.is_none() {
            let txn = match self.read_only {
                true => self.store.backend.begin_read_only(),
                false => self.store.backend.begin(),
            };
            self.inner = Some(self.noted(txn)?);
        }
        Ok(self.inner.as_mut().expect("just begun"))
    }

    /// Remembers a conflict seen by a read.
    fn noted<T>(&mut self, r: anyhow::Result<T>) -> anyhow::Result<T> {
        if let Err(e) = &r {
            if let Some(Conflict(cause)) = e.downcast_ref::<Conflict>() {
                self.conflicted = Some(*cause);
            }
            self.unavailable |= e.is::<Unavailable>();
        }
        r
    }

    /// Whether a read failed because the store could not be reached.
    pub fn unavailable(&self) -> bool {
        self.unavailable
    }

    /// Whether a read failed because the transaction conflicted: the error it gave
    /// (and the trap that followed) means "re-run", not "failed".
    pub fn conflicted(&self) -> bool {
        self.conflicted.is_some()
    }

    /// Why a read found the transaction in conflict, if one did.
    pub fn conflict(&self) -> Option<Cause> {
        self.conflicted
    }

    pub fn get(&mut self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        if let Some(own) = self.writes.get(key) {
            return Ok(own.as_ref().map(|v| v.to_vec()));
        }
        let r = self.inner()?.get(key);
        self.noted(r)
    }

    /// Reads an immutable value (a blob): a backend may validate it by its existence,
    /// not its bytes, so a large file is read once per call.
    pub fn get_blob(&mut self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        if let Some(own) = self.writes.get(key) {
            return Ok(own.as_ref().map(|v| v.to_vec()));
        }
        let r = self.inner()?.get_blob(key);
        self.noted(r)
    }

    /// Whether the queue row at `key` is still there and still held by `lease`.
    pub fn holds(&mut self, key: &[u8], lease: &Lease) -> anyhow::Result<bool> {
        if self.writes.contains_key(key) {
            return Ok(self.writes[key].is_some());
        }
        let r = self.inner()?.holds(key, lease);
        self.noted(r)
    }

    /// Round trips to the database so far (the commit adds one); `None` for an
    /// embedded store.
    pub fn round_trips(&self) -> Option<u32> {
        match &self.inner {
            Some(t) => t.round_trips(),
            None => self.store.shared().then_some(0),
        }
    }

    /// Whether it was begun by [`Store::begin_read_only`].
    pub fn began_read_only(&self) -> bool {
        self.read_only
    }

    /// Whether the transaction wrote nothing.
    pub fn is_read_only(&self) -> bool {
        self.writes.is_empty()
    }

    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.writes
            .insert(key.to_vec(), Some(Bytes::copy_from_slice(value)));
    }

    /// [`Txn::put`] of a value the caller gives up or shares (a file: no second copy).
    pub fn put_owned(&mut self, key: &[u8], value: impl Into<Bytes>) {
        self.writes.insert(key.to_vec(), Some(value.into()));
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
        if start >= end || limit == 0 {
            return Ok(Vec::new());
        }
        let range = (
            Bound::Included(start.to_vec()),
            Bound::Excluded(end.to_vec()),
        );
        // Each own write in the range shadows at most one committed entry, so `limit`
        // plus their number committed entries always fill the page.
        let own_count = self.writes.range(range.clone()).count();
        let base = {
            let r = self
                .inner()?
                .scan(start, end, limit.saturating_add(own_count), reverse);
            self.noted(r)?
        };
        let own: Vec<(&Vec<u8>, &Option<Bytes>)> = if reverse {
            self.writes.range(range).rev().collect()
        } else {
            self.writes.range(range).collect()
        };
        let mut own = own.into_iter().peekable();
        let mut base = base.into_iter().peekable();
        // `before(a, b)`: a comes first in the scan's order.
        let before = |a: &[u8], b: &[u8]| if reverse { a > b } else { a < b };
        let mut out = Vec::new();
        while out.len() < limit {
            let take_own = match (own.peek(), base.peek()) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((ok, _)), Some((bk, _))) => !before(bk, ok),
            };
            if take_own {
                let (key, value) = own.next().unwrap();
                if base.peek().is_some_and(|(bk, _)| bk == key) {
                    base.next(); // our own write shadows the committed entry
                }
                if let Some(value) = value {
                    out.push((key.clone(), value.to_vec()));
                }
            } else {
                out.push(base.next().unwrap());
            }
        }
        Ok(out)
    }

    /// Applies the transaction's writes atomically, or fails and applies nothing.
    pub fn commit(mut self) -> Result<(), CommitError> {
        if let Some(cause) = self.conflicted {
            return Err(CommitError::Conflict(cause));
        }
        if self.inner.is_none() && self.writes.is_empty() {
            return Ok(());
        }
        if self.read_only && !self.writes.is_empty() {
            return Err(CommitError::Backend(anyhow::anyhow!(
                "a transaction begun read-only wrote; run it again with Store::begin"
            )));
        }
        self.inner().map_err(CommitError::classify)?;
        let inner = self.inner.take().expect("begun");
        inner.commit(&self.writes)
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

    /// A sled store whose backend the test can also reach.
    fn sled_store() -> (Arc<Store>, Arc<sled::SledBackend>, tempdir::TempDir) {
        let dir = tempdir::TempDir::new();
        let backend = Arc::new(sled::SledBackend::open(&dir.0).unwrap());
        (Store::new(SharedBackend(backend.clone())), backend, dir)
    }

    struct SharedBackend(Arc<sled::SledBackend>);
    impl Backend for SharedBackend {
        fn begin(&self) -> anyhow::Result<Box<dyn BackendTxn>> {
            self.0.begin()
        }
        fn scan_committed(&self, s: &[u8], e: &[u8], l: usize) -> anyhow::Result<Vec<Entry>> {
            self.0.scan_committed(s, e, l)
        }
        fn get_committed(&self, k: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
            self.0.get_committed(k)
        }
        fn flush(&self) -> anyhow::Result<()> {
            self.0.flush()
        }
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
        let mut t = s.begin();
        t.put(b"k", b"0");
        t.commit().unwrap();
        let mut t1 = s.begin();
        let mut t2 = s.begin();
        t1.get(b"k").unwrap();
        t2.get(b"k").unwrap();
        t1.put(b"k", b"1");
        t2.put(b"k", b"2");
        t2.put(b"other", b"x");
        t1.commit().unwrap();
        assert!(matches!(
            t2.commit(),
            Err(CommitError::Conflict(Cause::Row))
        ));
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
        assert!(matches!(
            t1.commit(),
            Err(CommitError::Conflict(Cause::Phantom))
        ));
        // So is a key found absent that another commit wrote.
        let mut t1 = s.begin();
        assert_eq!(t1.get(b"absent").unwrap(), None);
        t1.put(b"count", b"1");
        let mut t2 = s.begin();
        t2.put(b"absent", b"x");
        t2.commit().unwrap();
        assert!(matches!(
            t1.commit(),
            Err(CommitError::Conflict(Cause::Phantom))
        ));
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
    fn a_transaction_begun_read_only_commits_its_reads_and_refuses_its_writes() {
        let (s, _d) = store();
        let mut t = s.begin();
        t.put(b"k", b"1");
        t.commit().unwrap();
        let mut reader = s.begin_read_only();
        assert_eq!(reader.get(b"k").unwrap(), Some(b"1".to_vec()));
        reader.commit().unwrap();
        // One that wrote commits nothing: the caller runs it again read-write.
        let mut wrote = s.begin_read_only();
        wrote.put(b"k", b"2");
        wrote.put(b"new", b"x");
        assert!(!wrote.is_read_only());
        assert!(matches!(wrote.commit(), Err(CommitError::Backend(_))));
        let mut check = s.begin();
        assert_eq!(check.get(b"k").unwrap(), Some(b"1".to_vec()));
        assert_eq!(check.get(b"new").unwrap(), None);
    }

    #[test]
    fn a_read_only_transaction_commits_without_the_lock_and_still_sees_conflicts() {
        let (s, backend, _d) = sled_store();
        let mut t = s.begin();
        t.put(b"k", b"1");
        t.commit().unwrap();
        // Held by "another commit": a read-only commit must not wait for it.
        let guard = backend.hold_commit_lock();
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
        assert!(matches!(reader.commit(), Err(CommitError::Conflict(_))));
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
        assert!(matches!(second.commit(), Err(CommitError::Conflict(_))));
    }
}
