//! The embedded default backend: one sled tree in `<data-dir>/db`.

use super::{Backend, Entry};
use anyhow::Context;
use std::collections::BTreeMap;
use std::path::Path;

pub struct SledBackend {
    db: sled::Db,
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

impl SledBackend {
    /// Opens (or creates) the database in `dir`. Fails with [`Locked`] when another
    /// process has it open.
    pub fn open(dir: &Path) -> anyhow::Result<SledBackend> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the data directory {}", dir.display()))?;
        let db_path = dir.join("db");
        match sled::Config::new().path(&db_path).open() {
            Ok(db) => Ok(SledBackend { db }),
            Err(sled::Error::Io(e))
                if e.kind() == std::io::ErrorKind::WouldBlock || e.to_string().contains("lock") =>
            {
                Err(Locked(dir.to_path_buf()).into())
            }
            Err(e) => Err(anyhow::Error::new(e)
                .context(format!("cannot open the database in {}", db_path.display()))),
        }
    }
}

impl Backend for SledBackend {
    fn get(&self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        Ok(self.db.get(key)?.map(|v| v.to_vec()))
    }

    fn scan<'a>(
        &'a self,
        start: &[u8],
        end: &[u8],
        reverse: bool,
    ) -> Box<dyn Iterator<Item = anyhow::Result<Entry>> + 'a> {
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

    fn apply(&self, writes: &BTreeMap<Vec<u8>, Option<Vec<u8>>>) -> anyhow::Result<()> {
        let mut batch = sled::Batch::default();
        for (key, value) in writes {
            match value {
                Some(v) => batch.insert(key.as_slice(), v.as_slice()),
                None => batch.remove(key.as_slice()),
            }
        }
        Ok(self.db.apply_batch(batch)?)
    }

    fn flush(&self) -> anyhow::Result<()> {
        self.db.flush()?;
        Ok(())
    }

    fn contains(&self, key: &[u8]) -> anyhow::Result<bool> {
        Ok(self.db.contains_key(key)?)
    }
}
