//! The bulk path of `just bench`'s list at a million documents: creating a million
//! through the API takes longer than the rest of the benchmarks together, so the
//! benchmark creates some through the API and this copies them in a stopped sled data
//! directory until it holds `TOTAL` documents.
//!
//! Each copy of a document gets a new random id: every engine key that names the
//! document (`doc/{id}`, its list index keys `dx/...`, its trail `dlog/{id}/...`, the
//! recipient index `drcp/...`, ...) is written again with the new id, and every value
//! that holds the id has it replaced (ids are 16 characters, so the records keep their
//! length and decode). Keys that do not name a document (accounts, files, link hashes,
//! queues) are not copied. The copies are list material, not documents a signer could
//! open: their links still lead to the originals. `esign admin check` would find their
//! trails' hashes wrong; nothing in the list benchmark reads them.
//!
//! Usage: `million_seed DATA_DIR TOTAL`.

use esign_host::store::sled::SledBackend;
use std::collections::HashSet;
use std::path::Path;
use std::time::Instant;

const ID_ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
const ID_LEN: usize = 16;
const DOC_PREFIX: &[u8] = b"d/doc/";

fn new_id() -> [u8; ID_LEN] {
    let mut bytes = [0u8; ID_LEN];
    getrandom::fill(&mut bytes).expect("OS randomness");
    bytes.map(|b| ID_ALPHABET[(b & 31) as usize])
}

/// The document id a key names, if any: a '/'-separated segment of the key (or of
/// `doc:{id}`) that is one of `ids`.
fn named_id<'a>(key: &'a [u8], ids: &HashSet<[u8; ID_LEN]>) -> Option<&'a [u8]> {
    key.split(|b| *b == b'/' || *b == b':')
        .find(|seg| seg.len() == ID_LEN && ids.contains(*seg))
}

/// `haystack` with every `from` replaced by `to` (same length).
fn replaced(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = haystack.to_vec();
    let mut i = 0;
    while i + from.len() <= out.len() {
        if &out[i..i + from.len()] == from {
            out[i..i + from.len()].copy_from_slice(to);
            i += from.len();
        } else {
            i += 1;
        }
    }
    out
}

/// Documents copied before the store is closed and opened again: sled keeps what was
/// written in memory until then (7 GB for 200 000 documents; a million in one go
/// exhausted 24 GB).
const PER_OPENING: usize = 100_000;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    anyhow::ensure!(args.len() == 2, "usage: million_seed DATA_DIR TOTAL");
    let total: usize = args[1].parse()?;
    let started = Instant::now();
    let dir = Path::new(&args[0]);
    let (ids, rows) = originals(dir)?;
    println!(
        "  {} documents ({} keys) to copy under new ids",
        ids.len(),
        rows.len()
    );
    let mut made = ids.len();
    while made < total {
        let backend = SledBackend::open(dir)?;
        let db = backend.tree();
        let mut copied = 0;
        while made < total && copied < PER_OPENING {
            let fresh: std::collections::HashMap<[u8; ID_LEN], [u8; ID_LEN]> =
                ids.iter().map(|id| (*id, new_id())).collect();
            let mut batch = sled::Batch::default();
            for (k, v, id) in &rows {
                let to = &fresh[id];
                batch.insert(replaced(k, id, to), replaced(v, id, to));
            }
            db.apply_batch(batch)?;
            made += ids.len();
            copied += ids.len();
        }
        db.flush()?;
        println!("  {made} documents");
    }
    println!(
        "  the store holds {made} documents after {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The documents' ids, and every key that names one (with its value and the id).
type Rows = Vec<(Vec<u8>, Vec<u8>, [u8; ID_LEN])>;

fn originals(dir: &Path) -> anyhow::Result<(HashSet<[u8; ID_LEN]>, Rows)> {
    let backend = SledBackend::open(dir)?;
    let db = backend.tree();
    let ids: HashSet<[u8; ID_LEN]> = db
        .scan_prefix(DOC_PREFIX)
        .keys()
        .filter_map(|k| k.ok())
        .filter_map(|k| k[DOC_PREFIX.len()..].try_into().ok())
        .collect();
    anyhow::ensure!(!ids.is_empty(), "{} holds no documents", dir.display());
    let mut rows = Vec::new();
    for entry in db.scan_prefix(b"d/") {
        let (k, v) = entry?;
        if k.starts_with(b"d/rlink/") || k.starts_with(b"d/bref/") {
            continue;
        }
        if let Some(id) = named_id(&k, &ids) {
            let id: [u8; ID_LEN] = id.try_into()?;
            rows.push((k.to_vec(), v.to_vec(), id));
        }
    }
    Ok((ids, rows))
}
