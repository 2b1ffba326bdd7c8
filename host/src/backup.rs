//! Online backups and restores of the embedded store (`esign admin backup|restore`).
//!
//! A backup is a directory: `db/` (a sled database holding every entry of the store at
//! one point in time: records, events, jobs, mail, text messages and webhook
//! deliveries), `blobs/` (the files, one each, laid out as in a data directory:
//! `store::blob_files`; format 1 kept them in `db/`, and is still restored), `signing/`
//! (the sealing key and the recipient link key generated into the data directory, when
//! there are: without the link key the links already sent would not open after a
//! restore) and `manifest.json` (counts and SHA-256 per table, the esign version and the
//! backup format). It is written under `<to>.partial-<random>` and renamed to `<to>`
//! only once complete, manifest last: an interrupted backup leaves nothing named `<to>`.
//! A `<to>` ending in `.tar` gets the same directory packed into one tar file (the
//! `tar` crate), written as `<to>.partial-<random>` and renamed the same way; restore
//! unpacks it next to the target first.
//!
//! One point in time: the rows are read under the store's commit lock, so writes wait
//! (reads go on) and every write acknowledged before the backup began is in it, none
//! half. The pause is the time to read the rows and copy the files (figures in
//! docs/operating.md).
//! PostgreSQL keeps its data in the database: its own tools back it up.

use crate::store::blob_files::{self, BlobFiles};
use crate::store::postgres::Table;
use crate::store::{Entry, Store};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layout of a backup directory this esign writes and reads.
pub const FORMAT: u32 = 2;

/// Entries applied to the copy at once.
const BATCH: usize = 1000;

/// What a backup holds, written last.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
pub struct Manifest {
    pub format: u32,
    /// The esign that wrote it (a newer one's backup is refused).
    pub esign_version: String,
    pub created_at: String,
    /// Per table: entries and the SHA-256 of their keys and values in key order.
    pub tables: BTreeMap<String, TableSum>,
    pub signing_key: bool,
    /// How long writes waited, in milliseconds.
    pub write_pause_ms: u64,
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Default, Clone)]
pub struct TableSum {
    pub entries: u64,
    pub bytes: u64,
    pub sha256: String,
}

/// Running sums per table.
#[derive(Default)]
struct Sums(BTreeMap<&'static str, (u64, u64, Sha256)>);

impl Sums {
    fn add(&mut self, key: &[u8], value: &[u8]) {
        let e = self.0.entry(Table::of(key).manifest_name()).or_default();
        e.0 += 1;
        e.1 += (key.len() + value.len()) as u64;
        e.2.update((key.len() as u64).to_be_bytes());
        e.2.update(key);
        e.2.update((value.len() as u64).to_be_bytes());
        e.2.update(value);
    }

    fn finish(self) -> BTreeMap<String, TableSum> {
        self.0
            .into_iter()
            .map(|(name, (entries, bytes, h))| {
                let sha256 = crate::ids::hex(&h.finalize());
                (
                    name.to_string(),
                    TableSum {
                        entries,
                        bytes,
                        sha256,
                    },
                )
            })
            .collect()
    }
}

/// Writes a backup of `store` (whose data directory is `data_dir`) to `to`, which must
/// not exist yet.
pub fn write(store: &Store, data_dir: &Path, to: &Path) -> anyhow::Result<Manifest> {
    if to.exists() {
        anyhow::bail!(
            "{} exists already: back up into a new directory",
            to.display()
        );
    }
    let parent = to
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    if is_tar(to) {
        let dir = partial_path(to);
        let packed = write_into(store, data_dir, &dir).and_then(|m| pack(&dir, to).map(|()| m));
        let _ = std::fs::remove_dir_all(&dir);
        return packed;
    }
    let partial = partial_path(to);
    let result = write_into(store, data_dir, &partial);
    let manifest = match result {
        Ok(m) => m,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&partial);
            return Err(e);
        }
    };
    std::fs::rename(&partial, to)
        .with_context(|| format!("renaming {} to {}", partial.display(), to.display()))?;
    Ok(manifest)
}

/// Whether `path` names a tar file rather than a directory.
fn is_tar(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "tar")
}

/// Packs the backup directory `dir` into the tar file `to` (written aside, then renamed).
fn pack(dir: &Path, to: &Path) -> anyhow::Result<()> {
    let partial = partial_path(to);
    let written = (|| -> anyhow::Result<()> {
        let file = std::fs::File::create(&partial)
            .with_context(|| format!("creating {}", partial.display()))?;
        let mut tar = tar::Builder::new(std::io::BufWriter::new(file));
        tar.follow_symlinks(false);
        tar.append_dir_all(".", dir)?;
        let file = tar.into_inner()?.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(())
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&partial);
        return Err(e);
    }
    std::fs::rename(&partial, to)
        .with_context(|| format!("renaming {} to {}", partial.display(), to.display()))
}

fn partial_path(to: &Path) -> PathBuf {
    let name = to
        .file_name()
        .map_or("backup".into(), |n| n.to_string_lossy().into_owned());
    to.with_file_name(format!("{name}.partial-{}", crate::ids::random_id()))
}

fn write_into(store: &Store, data_dir: &Path, dir: &Path) -> anyhow::Result<Manifest> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let copy = sled::Config::new()
        .path(dir.join("db"))
        .open()
        .context("creating the backup's database")?;
    let blobs = BlobFiles::open(dir)?;
    let mut sums = Sums::default();
    let mut batch = sled::Batch::default();
    let mut pending = 0;
    let mut add = |key: &[u8], value: &[u8]| -> anyhow::Result<()> {
        if blob_files::is_blob(key) {
            sums.add(key, value);
            return blobs.put_unsynced(key, value);
        }
        sums.add(key, value);
        batch.insert(key, value);
        pending += 1;
        if pending >= BATCH {
            copy.apply_batch(std::mem::take(&mut batch))?;
            pending = 0;
        }
        Ok(())
    };
    // While writes wait, files (few rows, most of the bytes) go into the copy, and the
    // records and queues (many small rows) only into memory: they are written after.
    // Each table's rows still go in key order (the manifest hashes them in that order).
    let mut records: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let pause = store.snapshot(&mut |key: &[u8], value: &[u8]| {
        if key.starts_with(crate::host_tables::keys::BLOBS) {
            add(key, value)
        } else {
            records.push((key.to_vec(), value.to_vec()));
            Ok(())
        }
    })?;
    for (key, value) in records {
        add(&key, &value)?;
    }
    copy.apply_batch(batch)?;
    copy.flush()?;
    drop(copy);
    blobs.sync_all()?;
    test_pause();
    let signing = data_dir.join("signing");
    // The generated sealing key, the recipient link key (`runtime::link_key`), or both:
    // without the link key, the links already sent would not open after a restore.
    let has_key = signing.join("key.pem").exists()
        || crate::runtime::link_key::data_dir_file(data_dir).exists();
    if has_key {
        copy_dir(&signing, &dir.join("signing"))?;
    }
    let manifest = Manifest {
        format: FORMAT,
        esign_version: env!("CARGO_PKG_VERSION").into(),
        created_at: chrono::Utc::now().to_rfc3339(),
        tables: sums.finish(),
        signing_key: has_key,
        write_pause_ms: pause.as_millis() as u64,
    };
    crate::fs::write_whole(
        &dir.join("manifest.json"),
        &serde_json::to_vec_pretty(&manifest)?,
    )?;
    Ok(manifest)
}

/// Tests only: `ESIGN_TEST_BACKUP_PAUSE_MS` holds a backup after its data is copied and
/// before its manifest, so a test can kill it half-way at a known point.
fn test_pause() {
    if let Some(ms) = std::env::var("ESIGN_TEST_BACKUP_PAUSE_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        eprintln!("backup paused for a test");
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name()))
                .with_context(|| format!("copying {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// Whether `a` (a version `x.y.z`) is newer than `b`.
fn newer(a: &str, b: &str) -> bool {
    let parts = |v: &str| -> Vec<u64> { v.split('.').map(|p| p.parse().unwrap_or(0)).collect() };
    parts(a) > parts(b)
}

/// Restores the backup in `from` into the data directory `to` (missing or empty): the
/// manifest checked against the copy, then every entry and the signing key.
pub fn restore(from: &Path, to: &Path) -> anyhow::Result<Manifest> {
    let name = from.file_name().unwrap_or_default().to_string_lossy();
    if name.contains(".partial-") {
        anyhow::bail!(
            "{} is what an interrupted backup left, not a complete esign backup",
            from.display()
        );
    }
    if !is_tar(from) {
        return restore_dir(from, from, to);
    }
    // Unpacked beside the target (same disk), then restored from there.
    let target = std::path::absolute(to)?;
    let dir = target.with_file_name(format!(
        "{}.unpacked-{}",
        target.file_name().unwrap_or_default().to_string_lossy(),
        crate::ids::random_id()
    ));
    let unpacked = std::fs::File::open(from)
        .with_context(|| format!("opening {}", from.display()))
        .and_then(|file| unpack(file, from, &dir));
    let restored = unpacked.and_then(|()| restore_dir(&dir, from, to));
    let _ = std::fs::remove_dir_all(&dir);
    restored
}

/// Unpacks the tar file `file` (`shown` in messages) into `dir`: only directories and
/// regular files, each inside `dir`. A backup holds nothing else (`pack`), so a link, a
/// device or a pipe means the file was made by something else: refused.
fn unpack(file: std::fs::File, shown: &Path, dir: &Path) -> anyhow::Result<()> {
    let unreadable = || format!("{} is not a readable tar file", shown.display());
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = &dir.canonicalize()?;
    let mut archive = tar::Archive::new(std::io::BufReader::new(file));
    for entry in archive.entries().with_context(unreadable)? {
        let mut entry = entry.with_context(unreadable)?;
        let kind = entry.header().entry_type();
        let name = entry
            .path()
            .map_or_else(|_| "an entry".to_string(), |p| p.display().to_string());
        if kind.is_pax_global_extensions() {
            continue; // metadata other tar tools write, no file
        }
        if !(kind.is_file() || kind.is_dir()) {
            anyhow::bail!(
                "{} holds {name}, which is {}: a backup holds only files and directories",
                shown.display(),
                describe(kind)
            );
        }
        if !entry.unpack_in(dir).with_context(unreadable)? {
            anyhow::bail!(
                "{} holds {name}, a path outside the backup",
                shown.display()
            );
        }
    }
    Ok(())
}

/// What a tar entry that is not a file or directory is, for a person.
fn describe(kind: tar::EntryType) -> &'static str {
    match kind {
        tar::EntryType::Symlink => "a symbolic link",
        tar::EntryType::Link => "a hard link",
        tar::EntryType::Char | tar::EntryType::Block => "a device",
        tar::EntryType::Fifo => "a pipe",
        _ => "not a regular file",
    }
}

/// Refuses a backup directory (`root`, `shown` in messages) holding anything but
/// directories and regular files under `dir`: a symbolic link would make the restore
/// read, or sled open, something outside it.
fn only_files_and_directories(root: &Path, dir: &Path, shown: &Path) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let path = entry.path();
        if kind.is_dir() {
            only_files_and_directories(root, &path, shown)?;
        } else if !kind.is_file() {
            let what = if kind.is_symlink() {
                "a symbolic link"
            } else {
                "not a regular file"
            };
            anyhow::bail!(
                "{} holds {}, which is {what}: a backup holds only files and directories",
                shown.display(),
                path.strip_prefix(root).unwrap_or(&path).display()
            );
        }
    }
    Ok(())
}

/// Restores the backup directory `from` (`shown` in messages) into `to`.
fn restore_dir(from: &Path, shown: &Path, to: &Path) -> anyhow::Result<Manifest> {
    if from.is_dir() {
        only_files_and_directories(from, from, shown)?;
    }
    let text = std::fs::read(from.join("manifest.json")).with_context(|| {
        format!(
            "{} is not a complete esign backup (no manifest.json)",
            shown.display()
        )
    })?;
    let manifest: Manifest = serde_json::from_slice(&text).context("reading manifest.json")?;
    if manifest.format > FORMAT || newer(&manifest.esign_version, env!("CARGO_PKG_VERSION")) {
        anyhow::bail!(
            "the backup was written by esign {} (format {}); this esign {} cannot read it: restore with that version or newer",
            manifest.esign_version,
            manifest.format,
            env!("CARGO_PKG_VERSION")
        );
    }
    let non_empty = std::fs::read_dir(to).is_ok_and(|mut d| d.next().is_some());
    if non_empty {
        anyhow::bail!(
            "{} is not empty: restore into a new data directory",
            to.display()
        );
    }
    let copy = sled::Config::new()
        .path(from.join("db"))
        .open()
        .context("opening the backup's database")?;
    let entries = || {
        let records = copy.iter().map(|entry| {
            let (k, v) = entry?;
            Ok((k.to_vec(), v.to_vec()))
        });
        let files = from
            .join(blob_files::DIR)
            .is_dir()
            .then(|| BlobFiles::open(from));
        let files: Box<dyn Iterator<Item = anyhow::Result<Entry>>> = match files {
            None => Box::new(std::iter::empty()),
            Some(Err(e)) => Box::new(std::iter::once(Err(e))),
            Some(Ok(files)) => Box::new(files.into_entries()),
        };
        records.chain(files)
    };
    let mut sums = Sums::default();
    for entry in entries() {
        let (k, v) = entry?;
        sums.add(&k, &v);
    }
    let found = sums.finish();
    if found != manifest.tables {
        let wrong: Vec<&String> = manifest
            .tables
            .keys()
            .chain(found.keys())
            .filter(|t| manifest.tables.get(*t) != found.get(*t))
            .collect();
        anyhow::bail!("the backup does not match its manifest (tables {wrong:?}): it is damaged");
    }
    // Until the last entry is in, the directory says so: no server starts on half a
    // restore (see `unfinished_restore`).
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    let marker = to.join(RESTORING);
    crate::fs::write_whole(&marker, b"esign admin restore has not finished\n")?;
    let target = crate::store::sled::SledBackend::open(to)?;
    target.load(entries())?;
    if manifest.signing_key {
        copy_dir(&from.join("signing"), &to.join("signing"))?;
    }
    drop(target);
    std::fs::remove_file(&marker)?;
    Ok(manifest)
}

/// The file a restore keeps in the data directory until it is done.
const RESTORING: &str = "restore-unfinished";

/// Refuses a data directory a restore did not finish.
pub fn unfinished_restore(data_dir: &Path) -> anyhow::Result<()> {
    if data_dir.join(RESTORING).exists() {
        anyhow::bail!(
            "a restore into {} did not finish: remove the directory and restore again",
            data_dir.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sled::SledBackend;
    use crate::store::tests::tempdir::TempDir;

    fn store_with_a_file(dir: &Path) -> std::sync::Arc<Store> {
        let store = Store::new(SledBackend::open(dir).unwrap());
        let mut t = store.begin();
        t.put(b"b/0a0b0c", b"the file");
        t.put(b"d/doc/1", b"the record");
        t.commit().unwrap();
        store
    }

    #[test]
    fn a_backup_keeps_files_as_files_and_an_older_format_still_restores() {
        let root = TempDir::new();
        let data = root.0.join("data");
        let store = store_with_a_file(&data);
        let backup = root.0.join("backup");
        write(&store, &data, &backup).unwrap();
        let in_db = sled::Config::new().path(backup.join("db")).open().unwrap();
        assert!(!in_db.contains_key(b"b/0a0b0c").unwrap());
        assert_eq!(
            std::fs::read(backup.join("blobs/0a/0a0b0c")).unwrap(),
            b"the file"
        );
        // Format 1: the file inside the backup's database.
        in_db.insert(b"b/0a0b0c", &b"the file"[..]).unwrap();
        in_db.flush().unwrap();
        drop(in_db);
        std::fs::remove_dir_all(backup.join("blobs")).unwrap();
        let text = std::fs::read_to_string(backup.join("manifest.json")).unwrap();
        let older = text.replace("\"format\": 2", "\"format\": 1");
        assert_ne!(text, older);
        std::fs::write(backup.join("manifest.json"), older).unwrap();
        let to = root.0.join("restored");
        restore(&backup, &to).unwrap();
        let back = SledBackend::open(&to).unwrap();
        use crate::store::Backend;
        assert_eq!(
            back.get_committed(b"b/0a0b0c").unwrap(),
            Some(b"the file".to_vec())
        );
        assert!(to.join("blobs/0a/0a0b0c").is_file());
    }

    #[test]
    fn a_backup_whose_file_was_changed_is_refused() {
        let root = TempDir::new();
        let data = root.0.join("data");
        let store = store_with_a_file(&data);
        let backup = root.0.join("backup");
        write(&store, &data, &backup).unwrap();
        std::fs::write(backup.join("blobs/0a/0a0b0c"), b"other bytes").unwrap();
        let refused = restore(&backup, &root.0.join("restored")).unwrap_err();
        assert!(
            format!("{refused:#}").contains("does not match its manifest"),
            "{refused:#}"
        );
    }
}
