//! `esign admin migrate --from DATA_DIR --to postgres://...`: copies a stopped sled
//! store whole (engine data, blobs, events, jobs, mail, webhook deliveries and every
//! other host table) and the signing key generated into the data directory into an
//! empty PostgreSQL database, then compares the number of rows per table on both sides.

use crate::store::postgres::{PgBackend, Table};
use crate::store::sled::SledBackend;
use crate::store::{Backend, Entry};
use std::collections::BTreeMap;
use std::path::Path;

/// Rows per insert transaction at most.
const BATCH_ROWS: usize = 1000;
/// Bytes per insert transaction at most (blobs are large).
const BATCH_BYTES: usize = 16 << 20;

/// Copies `from` into `to`; fails when the database is not empty or the counts differ.
pub fn sled_to_postgres(from: &Path, to: &str) -> anyhow::Result<()> {
    if !from.join("db").exists() {
        anyhow::bail!("{} holds no esign database", from.display());
    }
    let sled = SledBackend::open(from)?;
    let pg = PgBackend::connect(to)?;
    if !pg.is_empty()? {
        anyhow::bail!(
            "{} already holds esign data: migrate into an empty database",
            pg.describe
        );
    }
    let mut expected: BTreeMap<Table, i64> = BTreeMap::new();
    let mut batch: Vec<Entry> = Vec::new();
    let mut bytes = 0;
    let mut copied = 0u64;
    sled.for_each(&mut |k: &[u8], v: &[u8]| {
        *expected.entry(Table::of(k)).or_default() += 1;
        bytes += k.len() + v.len();
        batch.push((k.to_vec(), v.to_vec()));
        if batch.len() >= BATCH_ROWS || bytes >= BATCH_BYTES {
            pg.insert_batch(&batch)?;
            copied += batch.len() as u64;
            batch.clear();
            bytes = 0;
            eprintln!("copied {copied} rows");
        }
        Ok(())
    })?;
    // The signing identity generated into the data directory: the hosts keep sealing
    // with it (a shared store keeps it in the database).
    if let Some((k, v)) = crate::evidence::keys::stored_from_data_dir(from)? {
        *expected.entry(Table::of(&k)).or_default() += 1;
        batch.push((k, v));
        println!("the signing key of {}/signing goes along", from.display());
    }
    // The recipient link key: the links already sent keep opening (the database then
    // holds the key; `--link-key-file` on the hosts keeps it out, see docs/operating.md).
    if let Some((k, v)) = crate::runtime::link_key::stored_from_data_dir(from)? {
        *expected.entry(Table::of(&k)).or_default() += 1;
        batch.push((k, v));
        println!(
            "the recipient link key of {}/signing goes along",
            from.display()
        );
    }
    if !batch.is_empty() {
        pg.insert_batch(&batch)?;
        copied += batch.len() as u64;
    }
    let mut wrong = Vec::new();
    for table in Table::all() {
        let want = expected.get(&table).copied().unwrap_or(0);
        let got = pg.count(table)?;
        println!(
            "{:<18} {want:>10} rows in sled, {got:>10} in PostgreSQL",
            table.name()
        );
        if want != got {
            wrong.push(table.name());
        }
    }
    if !wrong.is_empty() {
        anyhow::bail!("the counts differ in {}", wrong.join(", "));
    }
    sled.flush()?;
    println!(
        "copied {copied} rows from {} to {}; start esign with --store on it",
        from.display(),
        pg.describe
    );
    Ok(())
}
