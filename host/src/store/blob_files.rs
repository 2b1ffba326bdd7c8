//! The embedded store's blobs (keys under `b/`), one file each in `<data-dir>/blobs/`.
//!
//! sled keeps every value it has written in memory whatever its cache size (measured:
//! 100 values of 5 MB grew a process by 500 MB at a 1 MB cache), so the files a
//! server holds go beside the database, not into it: `blobs/{first two characters of
//! the id}/{id}`, created 0600 in directories of 0700. Listing the directories in name
//! order gives the keys in key order, so scans over `b/` work as over the tree.
//!
//! A file is written under a temporary name, synced and renamed before the transaction
//! that references it commits, and removed only after the transaction that dropped it
//! is durable: a crash leaves at worst a file nothing references, which
//! `esign admin check --repair` removes.

use anyhow::Context;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The keys this module keeps: `b/{id}`.
pub const PREFIX: &[u8] = b"b/";
/// The first key after them (`'0'` follows `'/'`).
pub const AFTER: &[u8] = b"b0";

/// The directory of blobs inside a data directory.
pub const DIR: &str = "blobs";

/// Pads a one-character id's directory name: below every character an id may hold, so
/// the directories still sort as their ids do.
const PAD: char = '!';

pub struct BlobFiles {
    dir: PathBuf,
}

/// Whether `key` is a blob's.
pub fn is_blob(key: &[u8]) -> bool {
    key.starts_with(PREFIX)
}

impl BlobFiles {
    /// Opens (or creates) `<data_dir>/blobs`.
    pub fn open(data_dir: &Path) -> anyhow::Result<BlobFiles> {
        let dir = data_dir.join(DIR);
        private_dir(&dir)?;
        Ok(BlobFiles { dir })
    }

    /// The file of the blob at `key`; an error for a key no esign writes (it could name
    /// a path outside the directory).
    fn path(&self, key: &[u8]) -> anyhow::Result<PathBuf> {
        let id = id_of(key)?;
        Ok(self.dir.join(shard(id)).join(id))
    }

    pub fn get(&self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        let path = self.path(key)?;
        match fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(anyhow::Error::new(e).context(format!("reading {}", path.display()))),
        }
    }

    pub fn contains(&self, key: &[u8]) -> anyhow::Result<bool> {
        Ok(self.path(key)?.is_file())
    }

    /// Writes the blob durably (synced, then renamed into place, then its directory
    /// synced).
    pub fn put(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        self.stage(key, value)?.publish()
    }

    /// Writes the blob's bytes, synced, under a name no read or listing sees:
    /// [`Staged::publish`] puts it in place (a rename), [`Staged::discard`] drops it.
    /// A commit stages its new blobs before it takes the lock and publishes them under
    /// it, so a blob appears together with the records that use it (a check running
    /// meanwhile never finds it unused).
    pub fn stage(&self, key: &[u8], value: &[u8]) -> anyhow::Result<Staged> {
        let path = self.path(key)?;
        let partial = self
            .dir
            .join(format!("{PARTIAL}{}", crate::ids::random_id()));
        let written = (|| {
            let mut file = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&partial)?;
            file.write_all(value)?;
            file.sync_all()
        })();
        if let Err(e) = written {
            let _ = fs::remove_file(&partial);
            return Err(anyhow::Error::new(e).context(format!("writing {}", path.display())));
        }
        Ok(Staged {
            partial,
            path,
            dir: self.dir.clone(),
        })
    }

    /// Removes what staged blobs a crash left (nothing names them).
    pub fn remove_staged(&self) -> anyhow::Result<()> {
        for name in sorted_names(&self.dir, |e| e.file_type().is_ok_and(|t| t.is_file()))? {
            if name.starts_with(PARTIAL) {
                let _ = fs::remove_file(self.dir.join(name));
            }
        }
        Ok(())
    }

    /// Writes the blob without syncing it (for a backup: [`BlobFiles::sync_all`] once
    /// all are written, and the backup's directory renamed into place only after).
    pub fn put_unsynced(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        let path = self.path(key)?;
        let parent = path.parent().expect("a blob's file is in a shard");
        if !parent.is_dir() {
            private_dir(parent)?;
        }
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        file.write_all(value)
            .with_context(|| format!("writing {}", path.display()))
    }

    /// Makes every file and directory durable.
    pub fn sync_all(&self) -> anyhow::Result<()> {
        for shard in sorted_names(&self.dir, |e| e.file_type().is_ok_and(|t| t.is_dir()))? {
            let shard = self.dir.join(shard);
            for name in sorted_names(&shard, |e| e.file_type().is_ok_and(|t| t.is_file()))? {
                let path = shard.join(name);
                fs::File::open(&path)
                    .and_then(|f| f.sync_all())
                    .with_context(|| format!("syncing {}", path.display()))?;
            }
            sync_dir(&shard)?;
        }
        sync_dir(&self.dir)
    }

    /// Every blob, in key order, each read when its turn comes.
    pub fn into_entries(self) -> impl Iterator<Item = anyhow::Result<(Vec<u8>, Vec<u8>)>> {
        let keys = match self.keys(PREFIX, AFTER, false) {
            Ok(keys) => keys,
            Err(e) => Box::new(std::iter::once(Err(e))),
        };
        keys.map(move |k| {
            let k = k?;
            let v = self.get(&k)?.context("a blob's file went away")?;
            Ok((k, v))
        })
    }

    /// Removes the blob (nothing when it is gone already).
    pub fn remove(&self, key: &[u8]) -> anyhow::Result<()> {
        let path = self.path(key)?;
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(anyhow::Error::new(e).context(format!("removing {}", path.display()))),
        }
    }

    /// The keys in `[start, end)` (clipped to the blobs' range), in key order or, with
    /// `reverse`, the opposite.
    pub fn keys(
        &self,
        start: &[u8],
        end: &[u8],
        reverse: bool,
    ) -> anyhow::Result<Box<dyn Iterator<Item = anyhow::Result<Vec<u8>>>>> {
        let start = start.max(PREFIX).to_vec();
        let end = end.min(AFTER).to_vec();
        if start >= end {
            return Ok(Box::new(std::iter::empty()));
        }
        let mut shards = sorted_names(&self.dir, |e| {
            e.file_type().is_ok_and(|t| t.is_dir()) && e.file_name().len() == 2
        })?;
        if reverse {
            shards.reverse();
        }
        let dir = self.dir.clone();
        let in_range = move |key: &Vec<u8>| *key >= start && *key < end;
        let keys = shards.into_iter().flat_map(move |shard| {
            let listed = sorted_names(&dir.join(&shard), |e| {
                e.file_type().is_ok_and(|t| t.is_file())
            });
            let mut names = match listed {
                Ok(names) => names,
                Err(e) => return vec![Err(e)],
            };
            if reverse {
                names.reverse();
            }
            names
                .into_iter()
                .map(|n| [PREFIX, n.as_bytes()].concat())
                .filter(&in_range)
                .map(Ok)
                .collect()
        });
        Ok(Box::new(keys))
    }
}

/// How a staged blob's file name begins (in the blobs directory itself, where listings
/// look only at the shard directories).
const PARTIAL: &str = ".partial-";

/// A blob written and synced, not yet in place.
pub struct Staged {
    partial: PathBuf,
    path: PathBuf,
    dir: PathBuf,
}

impl Staged {
    /// Puts the blob in place, durably (the rename and its directory synced).
    pub fn publish(self) -> anyhow::Result<()> {
        let parent = self.path.parent().expect("a blob's file is in a shard");
        if !parent.is_dir() {
            private_dir(parent)?;
            sync_dir(&self.dir)?;
        }
        if let Err(e) = fs::rename(&self.partial, &self.path) {
            let _ = fs::remove_file(&self.partial);
            return Err(anyhow::Error::new(e).context(format!("writing {}", self.path.display())));
        }
        sync_dir(parent)
    }

    /// Drops the blob (its commit did not happen).
    pub fn discard(self) {
        let _ = fs::remove_file(&self.partial);
    }
}

/// The id in a blob key, refused unless it is what esign's ids are made of.
fn id_of(key: &[u8]) -> anyhow::Result<&str> {
    let id = key.strip_prefix(PREFIX).unwrap_or_default();
    let fine = !id.is_empty()
        && id.len() <= 128
        && id
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_');
    if !fine {
        anyhow::bail!(
            "{:?} is not a blob key esign writes",
            String::from_utf8_lossy(key)
        );
    }
    Ok(std::str::from_utf8(id).expect("ASCII"))
}

/// The directory of an id: its first two characters.
fn shard(id: &str) -> String {
    let mut s: String = id.chars().take(2).collect();
    if s.len() < 2 {
        s.push(PAD);
    }
    s
}

/// The names in `dir` that `keep` keeps, sorted.
fn sorted_names(dir: &Path, keep: impl Fn(&fs::DirEntry) -> bool) -> anyhow::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let entry = entry?;
        if keep(&entry)
            && let Ok(name) = entry.file_name().into_string()
        {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

fn private_dir(dir: &Path) -> anyhow::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))
}

fn sync_dir(dir: &Path) -> anyhow::Result<()> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("syncing {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> (BlobFiles, crate::store::tests::tempdir::TempDir) {
        let dir = crate::store::tests::tempdir::TempDir::new();
        (BlobFiles::open(&dir.0).unwrap(), dir)
    }

    #[test]
    fn keys_come_in_key_order_across_directories() {
        let (b, _dir) = files();
        for id in ["b", "ab", "a", "a-", "abc", "b0", "Z9"] {
            b.put(&[PREFIX, id.as_bytes()].concat(), id.as_bytes())
                .unwrap();
        }
        let all: Vec<Vec<u8>> = b
            .keys(b"", b"\xff", false)
            .unwrap()
            .map(|k| k.unwrap())
            .collect();
        let mut sorted = all.clone();
        sorted.sort();
        assert_eq!(all, sorted);
        assert_eq!(all.len(), 7);
        let back: Vec<Vec<u8>> = b
            .keys(b"b/a", b"b/b", true)
            .unwrap()
            .map(|k| k.unwrap())
            .collect();
        assert_eq!(
            back,
            vec![
                b"b/abc".to_vec(),
                b"b/ab".to_vec(),
                b"b/a-".to_vec(),
                b"b/a".to_vec()
            ]
        );
        assert_eq!(b.get(b"b/ab").unwrap(), Some(b"ab".to_vec()));
        b.remove(b"b/ab").unwrap();
        b.remove(b"b/ab").unwrap();
        assert_eq!(b.get(b"b/ab").unwrap(), None);
    }

    #[test]
    fn a_staged_blob_is_seen_only_once_published() {
        let (b, dir) = files();
        let staged = b.stage(b"b/0a0b", b"bytes").unwrap();
        assert_eq!(b.get(b"b/0a0b").unwrap(), None);
        assert_eq!(b.keys(b"", b"\xff", false).unwrap().count(), 0);
        staged.publish().unwrap();
        assert_eq!(b.get(b"b/0a0b").unwrap(), Some(b"bytes".to_vec()));
        b.stage(b"b/0c0d", b"gone").unwrap().discard();
        let left = b.stage(b"b/0e0f", b"crash").unwrap();
        std::mem::forget(left); // as a crash would leave it
        b.remove_staged().unwrap();
        let names: Vec<_> = std::fs::read_dir(dir.0.join(DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("0a")]);
    }

    #[test]
    fn a_key_that_could_leave_the_directory_is_refused() {
        let (b, _dir) = files();
        for key in [&b"b/../x"[..], b"b/", b"b/a/b", b"b/\xff"] {
            assert!(b.put(key, b"x").is_err(), "{key:?}");
            assert!(b.get(key).is_err(), "{key:?}");
        }
    }
}
