//! The embedded default backend: one sled tree in `<data-dir>/db`, owned by one process
//! (sled holds a file lock), and the blobs as files in `<data-dir>/blobs`
//! ([`super::blob_files`]: sled would keep every file it was given in memory).
//!
//! Transactions are optimistic: a [`SledTxn`] reads the committed state directly and
//! remembers what it read; its commit takes the process's commit lock, checks that
//! everything read is still what it was, and only then applies the writes as one atomic
//! batch and flushes them. A transaction that wrote nothing never takes the lock: when
//! no commit was applied since it began, what it read was one committed state;
//! otherwise it checks its reads between two looks at the commit sequence (a seqlock),
//! and takes the lock only if commits kept landing meanwhile. A blob read is validated
//! by the blob's existence (blobs never change).
//!
//! A commit writes its new blobs' files (synced) before it takes the lock, under names
//! nothing reads, and renames them into place under the lock with the batch that
//! references them, so a blob never shows before its records (a store check running
//! meanwhile would call it unused); it removes dropped blobs' files only once the
//! tree's batch is durable, under the lock (between the two steps of the commit
//! sequence, so a read-only transaction that saw a blob sees the change). A database written before blobs moved out has them moved at open.

use super::blob_files::{self, AFTER, BlobFiles, PREFIX, is_blob};
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
    blobs: BlobFiles,
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
            Ok(db) => {
                let shared = Shared {
                    db,
                    blobs: BlobFiles::open(dir)?,
                    commit_lock: Mutex::new(()),
                    sequence: AtomicU64::new(0),
                };
                shared.blobs.remove_staged()?;
                shared.move_blobs_out_of_the_tree()?;
                Ok(SledBackend {
                    shared: Arc::new(shared),
                })
            }
            Err(sled::Error::Io(e))
                if e.kind() == std::io::ErrorKind::WouldBlock || e.to_string().contains("lock") =>
            {
                Err(Locked(dir.to_path_buf()).into())
            }
            Err(e) => Err(anyhow::Error::new(e)
                .context(format!("cannot open the database in {}", db_path.display()))),
        }
    }

    /// The sled tree: every entry but the blobs (for the benchmark's seeding, which
    /// copies records).
    pub fn tree(&self) -> &sled::Db {
        &self.shared.db
    }

    /// Visits every entry in key order, writes not paused (for a store no server uses:
    /// `esign admin migrate`).
    pub fn for_each(&self, visit: &mut super::Visitor<'_>) -> anyhow::Result<()> {
        for entry in self.shared.scan(b"", &[0xff; 64], false) {
            let (k, v) = entry?;
            visit(&k, &v)?;
        }
        Ok(())
    }

    /// Writes entries outside any transaction, blobs first (for `esign admin restore`
    /// into a new data directory), then makes them durable.
    pub fn load(
        &self,
        entries: impl IntoIterator<Item = anyhow::Result<Entry>>,
    ) -> anyhow::Result<()> {
        let mut batch = sled::Batch::default();
        let mut pending = 0;
        for entry in entries {
            let (k, v) = entry?;
            if is_blob(&k) {
                self.shared.blobs.put(&k, &v)?;
                continue;
            }
            batch.insert(k, v);
            pending += 1;
            if pending >= 1000 {
                self.shared.db.apply_batch(std::mem::take(&mut batch))?;
                pending = 0;
            }
        }
        self.shared.db.apply_batch(batch)?;
        self.shared.db.flush()?;
        Ok(())
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
        let shared = &*self.shared;
        let tree = |s: &[u8], e: &[u8]| -> Box<dyn Iterator<Item = anyhow::Result<Vec<u8>>>> {
            if s >= e {
                return Box::new(std::iter::empty());
            }
            Box::new(
                shared
                    .db
                    .range(s.to_vec()..e.to_vec())
                    .keys()
                    .map(|k| Ok(k?.to_vec())),
            )
        };
        tree(start, end.min(PREFIX))
            .chain(shared.blobs.keys(start, end, false)?)
            .chain(tree(start.max(AFTER), end))
            .take(limit)
            .collect()
    }

    fn contains_committed(&self, key: &[u8]) -> anyhow::Result<bool> {
        self.shared.contains(key)
    }

    fn snapshot(&self, visit: &mut super::Visitor<'_>) -> anyhow::Result<std::time::Duration> {
        // No commit applies while the lock is held: the tree is one committed state.
        let _writes_wait = self
            .shared
            .commit_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let started = std::time::Instant::now();
        for entry in self.shared.scan(b"", &[0xff; 64], false) {
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
        if is_blob(key) {
            return self.blobs.get(key);
        }
        Ok(self.db.get(key)?.map(|v| v.to_vec()))
    }

    fn contains(&self, key: &[u8]) -> anyhow::Result<bool> {
        if is_blob(key) {
            return self.blobs.contains(key);
        }
        Ok(self.db.contains_key(key)?)
    }

    /// The entries in `[start, end)`: the tree's before the blobs, the blobs' files, the
    /// tree's after them.
    fn scan<'a>(
        &'a self,
        start: &[u8],
        end: &[u8],
        reverse: bool,
    ) -> Box<dyn Iterator<Item = anyhow::Result<Entry>> + 'a> {
        let before = self.tree_scan(start, end.min(PREFIX), reverse);
        let after = self.tree_scan(start.max(AFTER), end, reverse);
        let blobs: Box<dyn Iterator<Item = anyhow::Result<Entry>> + 'a> =
            match self.blobs.keys(start, end, reverse) {
                Ok(keys) => Box::new(keys.filter_map(move |k| {
                    let read = |k: Vec<u8>| Ok(self.blobs.get(&k)?.map(|v| (k, v)));
                    k.and_then(read).transpose() // a file removed meanwhile is gone
                })),
                Err(e) => Box::new(std::iter::once(Err(e))),
            };
        if reverse {
            Box::new(after.chain(blobs).chain(before))
        } else {
            Box::new(before.chain(blobs).chain(after))
        }
    }

    fn tree_scan<'a>(
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

    /// Moves blobs a database written before blobs left it holds into their files:
    /// each file durable before its entry goes.
    fn move_blobs_out_of_the_tree(&self) -> anyhow::Result<()> {
        let mut moved = 0u64;
        loop {
            let mut batch = sled::Batch::default();
            let mut bytes = 0;
            let mut any = false;
            for entry in self.db.range(PREFIX.to_vec()..AFTER.to_vec()) {
                let (k, v) = entry?;
                self.blobs.put(&k, &v)?;
                batch.remove(k);
                moved += 1;
                any = true;
                bytes += v.len();
                if bytes >= 64 << 20 {
                    break;
                }
            }
            if !any {
                break;
            }
            self.db.apply_batch(batch)?;
            self.db.flush()?;
        }
        if moved > 0 {
            tracing::info!(
                moved,
                "files moved out of the database into {}",
                blob_files::DIR
            );
        }
        Ok(())
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
        let backend = |e: anyhow::Error| CommitError::Backend(e);
        // New blobs are written before the lock, out of sight, and put in place under
        // it with the records that use them.
        let mut staged = Vec::new();
        for (key, value) in writes {
            if let (true, Some(value)) = (is_blob(key), value) {
                match shared.blobs.stage(key, value) {
                    Ok(s) => staged.push(s),
                    Err(e) => {
                        staged.into_iter().for_each(blob_files::Staged::discard);
                        return Err(backend(e));
                    }
                }
            }
        }
        let guard = shared.commit_lock.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = self.validate() {
            drop(guard);
            staged.into_iter().for_each(blob_files::Staged::discard);
            return Err(e);
        }
        if writes.is_empty() {
            return Ok(());
        }
        shared.sequence.fetch_add(1, Ordering::SeqCst);
        std::sync::atomic::fence(Ordering::SeqCst);
        for blob in staged {
            if let Err(e) = blob.publish() {
                shared.sequence.fetch_add(1, Ordering::SeqCst);
                return Err(backend(e));
            }
        }
        let mut batch = sled::Batch::default();
        let mut dropped_blobs = Vec::new();
        for (key, value) in writes {
            match value {
                _ if is_blob(key) => {
                    if value.is_none() {
                        dropped_blobs.push(key);
                    }
                }
                Some(v) => batch.insert(key.as_slice(), &v[..]),
                None => batch.remove(key.as_slice()),
            }
        }
        let mut applied = shared.db.apply_batch(batch).map_err(|e| backend(e.into()));
        if applied.is_ok() && !dropped_blobs.is_empty() {
            // The records that used them are gone for good before their files go.
            applied = shared.db.flush().map(|_| ()).map_err(|e| backend(e.into()));
            for key in dropped_blobs {
                if applied.is_ok() {
                    applied = shared.blobs.remove(key).map_err(backend);
                }
            }
        }
        shared.sequence.fetch_add(1, Ordering::SeqCst);
        applied?;
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
                Seen::Exists(existed) => shared.contains(key).map_err(backend)? == *existed,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use crate::store::tests::tempdir::TempDir;

    fn files_in(dir: &Path) -> usize {
        let shards = std::fs::read_dir(dir.join(blob_files::DIR)).unwrap();
        shards
            .map(|s| s.unwrap().path())
            .filter(|p| p.is_dir())
            .map(|p| std::fs::read_dir(p).unwrap().count())
            .sum()
    }

    #[test]
    fn blobs_live_in_files_not_in_the_tree_and_survive_a_reopen() {
        let dir = TempDir::new();
        let store = Store::new(SledBackend::open(&dir.0).unwrap());
        let mut t = store.begin();
        t.put(b"b/0a1b", b"file bytes");
        t.put(b"d/doc/1", b"record");
        t.commit().unwrap();
        assert_eq!(files_in(&dir.0), 1);
        drop(store);
        let backend = SledBackend::open(&dir.0).unwrap();
        assert!(!backend.shared.db.contains_key(b"b/0a1b").unwrap());
        assert_eq!(
            backend.get_committed(b"b/0a1b").unwrap(),
            Some(b"file bytes".to_vec())
        );
        let all = backend.scan_committed(b"", b"\xff", 10).unwrap();
        let keys: Vec<&[u8]> = all.iter().map(|(k, _)| k.as_slice()).collect();
        assert_eq!(keys, vec![&b"b/0a1b"[..], b"d/doc/1"]);
        let store = Store::new(backend);
        let mut t = store.begin();
        t.delete(b"b/0a1b");
        t.commit().unwrap();
        assert_eq!(files_in(&dir.0), 0);
    }

    #[test]
    fn a_commit_that_conflicts_leaves_no_file_behind() {
        let dir = TempDir::new();
        let store = Store::new(SledBackend::open(&dir.0).unwrap());
        let mut loser = store.begin();
        assert_eq!(loser.get(b"d/x/1").unwrap(), None);
        let mut winner = store.begin();
        winner.put(b"d/x/1", b"first");
        winner.commit().unwrap();
        loser.put(b"b/0c0d", b"orphan");
        loser.put(b"d/x/1", b"second");
        assert!(loser.commit().is_err());
        assert_eq!(files_in(&dir.0), 0);
    }

    #[test]
    fn blobs_an_older_database_holds_move_out_at_open() {
        let dir = TempDir::new();
        {
            let db = sled::Config::new().path(dir.0.join(DB_DIR)).open().unwrap();
            db.insert(b"b/0e0f", &b"old file"[..]).unwrap();
            db.insert(b"d/doc/2", &b"record"[..]).unwrap();
            db.flush().unwrap();
        }
        let backend = SledBackend::open(&dir.0).unwrap();
        assert!(!backend.shared.db.contains_key(b"b/0e0f").unwrap());
        assert_eq!(files_in(&dir.0), 1);
        assert_eq!(
            backend.get_committed(b"b/0e0f").unwrap(),
            Some(b"old file".to_vec())
        );
        assert_eq!(
            backend.get_committed(b"d/doc/2").unwrap(),
            Some(b"record".to_vec())
        );
    }
}
