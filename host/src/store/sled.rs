//! The embedded default backend: one sled tree in `<data-dir>/db`, owned by one process
//! (sled holds a file lock).
//!
//! Transactions are optimistic: a [`SledTxn`] reads the committed state directly and
//! remembers what it read; its commit takes the process's commit lock, checks that
//! everything read is still what it was, and only then applies the writes as one atomic
//! batch and flushes them. A transaction that wrote nothing never takes the lock: when
//! no commit was applied since it began, what it read was one committed state;
//! otherwise it checks its reads between two looks at the commit sequence (a seqlock),
//! and takes the lock only if commits kept landing meanwhile. A blob read is validated
//! by the blob's existence (blobs never change).

use super::{Backend, BackendTxn, Cause, CommitError, Entry, Lease, Writes};
use anyhow::Context;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub struct SledBackend {
    shared: Arc<Shared>,
}

struct Shared {
    db: sled::Db,
    commit_lock: Mutex<()>,
    /// Odd while a commit applies its writes; grows by two per applied commit.
    sequence: AtomicU64,
}

/// The data directory is held by another process (normally a running server).
#[derive(Debug)]
pub struct Locked(pub std::path::PathBuf);

impl std::fmt::Display for Locked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the data directory {} is in use by another esign process (is the server running?); stop it first",
            self.0.display()
        )
    }
}

impl std::error::Error for Locked {}

/// The database's directory inside a data directory.
const DB_DIR: &str = "db";

/// The page cache of the database by default, in MiB (`--store-cache-mb`).
pub const DEFAULT_CACHE_MB: u64 = 64;

impl SledBackend {
    /// Whether the data directory `dir` holds a database.
    pub fn exists_in(dir: &Path) -> bool {
        dir.join(DB_DIR).exists()
    }

    /// Opens (or creates) the database in `dir` with the default cache
    /// ([`DEFAULT_CACHE_MB`]). Fails with [`Locked`] when another process has it open.
    pub fn open(dir: &Path) -> anyhow::Result<SledBackend> {
        SledBackend::open_with_cache(dir, DEFAULT_CACHE_MB)
    }

    /// [`open`](SledBackend::open) with a page cache of `cache_mb` MiB (sled's own
    /// default, 1 GiB, is more than a small server has to spare: its RSS grew with every
    /// upload up to it).
    pub fn open_with_cache(dir: &Path, cache_mb: u64) -> anyhow::Result<SledBackend> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the data directory {}", dir.display()))?;
        let db_path = dir.join(DB_DIR);
        let config = sled::Config::new()
            .path(&db_path)
            .cache_capacity(cache_mb.max(1) << 20);
        match config.open() {
            Ok(db) => Ok(SledBackend {
                shared: Arc::new(Shared {
                    db,
                    commit_lock: Mutex::new(()),
                    sequence: AtomicU64::new(0),
                }),
            }),
            Err(sled::Error::Io(e))
                if e.kind() == std::io::ErrorKind::WouldBlock || e.to_string().contains("lock") =>
            {
                Err(Locked(dir.to_path_buf()).into())
            }
            Err(e) => Err(anyhow::Error::new(e)
                .context(format!("cannot open the database in {}", db_path.display()))),
        }
    }

    /// The sled tree (for `esign admin migrate`, which copies it whole).
    pub fn db(&self) -> &sled::Db {
        &self.shared.db
    }

    #[cfg(test)]
    pub(crate) fn hold_commit_lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.shared.commit_lock.lock().unwrap()
    }
}

impl Backend for SledBackend {
    fn begin(&self) -> anyhow::Result<Box<dyn BackendTxn>> {
        Ok(Box::new(SledTxn {
            begun_at: self.shared.sequence.load(Ordering::Acquire),
            shared: self.shared.clone(),
            reads: Vec::new(),
            scans: Vec::new(),
        }))
    }

    fn scan_committed(&self, start: &[u8], end: &[u8], limit: usize) -> anyhow::Result<Vec<Entry>> {
        self.shared.scan(start, end, false).take(limit).collect()
    }

    fn get_committed(&self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        self.shared.get(key)
    }

    fn scan_keys_committed(
        &self,
        start: &[u8],
        end: &[u8],
        limit: usize,
    ) -> anyhow::Result<Vec<Vec<u8>>> {
        if start >= end {
            return Ok(Vec::new());
        }
        let range = self.shared.db.range(start.to_vec()..end.to_vec());
        range.keys().take(limit).map(|k| Ok(k?.to_vec())).collect()
    }

    fn contains_committed(&self, key: &[u8]) -> anyhow::Result<bool> {
        Ok(self.shared.db.contains_key(key)?)
    }

    fn snapshot(&self, visit: &mut super::Visitor<'_>) -> anyhow::Result<std::time::Duration> {
        // No commit applies while the lock is held: the tree is one committed state.
        let _writes_wait = self
            .shared
            .commit_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let started = std::time::Instant::now();
        for entry in self.shared.db.iter() {
            let (k, v) = entry?;
            visit(&k, &v)?;
        }
        Ok(started.elapsed())
    }

    fn flush(&self) -> anyhow::Result<()> {
        self.shared.db.flush()?;
        Ok(())
    }
}

impl Shared {
    fn get(&self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        Ok(self.db.get(key)?.map(|v| v.to_vec()))
    }

    fn scan<'a>(
        &'a self,
        start: &[u8],
        end: &[u8],
        reverse: bool,
    ) -> Box<dyn Iterator<Item = anyhow::Result<Entry>> + 'a> {
        if start >= end {
            return Box::new(std::iter::empty());
        }
        let range = self.db.range(start.to_vec()..end.to_vec());
        let convert = |r: sled::Result<(sled::IVec, sled::IVec)>| -> anyhow::Result<Entry> {
            let (k, v) = r?;
            Ok((k.to_vec(), v.to_vec()))
        };
        if reverse {
            Box::new(range.rev().map(convert))
        } else {
            Box::new(range.map(convert))
        }
    }
}

/// A scan as the transaction saw the committed state: the entries it returned, and
/// whether it reached the end of the range.
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

/// A sled transaction. See the module documentation.
pub struct SledTxn {
    shared: Arc<Shared>,
    /// The commit sequence when the transaction began.
    begun_at: u64,
    reads: Vec<(Vec<u8>, Seen)>,
    scans: Vec<ScanRead>,
}

impl BackendTxn for SledTxn {
    fn get(&mut self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        let value = self.shared.get(key)?;
        self.reads.push((key.to_vec(), Seen::Value(value.clone())));
        Ok(value)
    }

    fn get_blob(&mut self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        let value = self.shared.get(key)?;
        self.reads
            .push((key.to_vec(), Seen::Exists(value.is_some())));
        Ok(value)
    }

    fn scan(
        &mut self,
        start: &[u8],
        end: &[u8],
        limit: usize,
        reverse: bool,
    ) -> anyhow::Result<Vec<Entry>> {
        let seen: Vec<Entry> = self
            .shared
            .scan(start, end, reverse)
            .take(limit)
            .collect::<anyhow::Result<_>>()?;
        self.scans.push(ScanRead {
            start: start.to_vec(),
            end: end.to_vec(),
            reverse,
            exhausted: seen.len() < limit,
            seen: seen.clone(),
        });
        Ok(seen)
    }

    /// One process owns the store and its workers keep rows in flight in memory: the
    /// row's presence is the lease.
    fn holds(&mut self, key: &[u8], _lease: &Lease) -> anyhow::Result<bool> {
        Ok(self.get(key)?.is_some())
    }

    fn commit(self: Box<Self>, writes: &Writes) -> Result<(), CommitError> {
        let shared = &*self.shared;
        if writes.is_empty() {
            let sequence = &shared.sequence;
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
        let guard = shared.commit_lock.lock().unwrap_or_else(|p| p.into_inner());
        self.validate()?;
        if writes.is_empty() {
            return Ok(());
        }
        shared.sequence.fetch_add(1, Ordering::SeqCst);
        std::sync::atomic::fence(Ordering::SeqCst);
        let mut batch = sled::Batch::default();
        for (key, value) in writes {
            match value {
                Some(v) => batch.insert(key.as_slice(), v.as_slice()),
                None => batch.remove(key.as_slice()),
            }
        }
        let applied = shared.db.apply_batch(batch);
        shared.sequence.fetch_add(1, Ordering::SeqCst);
        applied.map_err(|e| CommitError::Backend(e.into()))?;
        drop(guard);
        shared
            .db
            .flush()
            .map(|_| ())
            .map_err(|e| CommitError::Backend(e.into()))
    }
}

impl SledTxn {
    /// Checks that everything read is still what it was.
    fn validate(&self) -> Result<(), CommitError> {
        let shared = &*self.shared;
        let backend = |e: anyhow::Error| CommitError::Backend(e);
        for (key, seen) in &self.reads {
            let same = match seen {
                Seen::Value(value) => shared.get(key).map_err(backend)? == *value,
                Seen::Exists(existed) => {
                    shared
                        .db
                        .contains_key(key)
                        .map_err(|e| CommitError::Backend(e.into()))?
                        == *existed
                }
            };
            if !same {
                // A key found absent that is there now is a phantom.
                return Err(CommitError::Conflict(match seen {
                    Seen::Value(None) | Seen::Exists(false) => Cause::Phantom,
                    Seen::Value(Some(_)) | Seen::Exists(true) => Cause::Row,
                }));
            }
        }
        for scan in &self.scans {
            let mut now = shared.scan(&scan.start, &scan.end, scan.reverse);
            for seen in &scan.seen {
                match now.next().transpose().map_err(backend)? {
                    Some(entry) if entry == *seen => {}
                    _ => return Err(CommitError::Conflict(Cause::Phantom)),
                }
            }
            if scan.exhausted && now.next().is_some() {
                return Err(CommitError::Conflict(Cause::Phantom));
            }
        }
        Ok(())
    }
}
