//! `esign engine work`: one work order done by the native build of the file work, with
//! blobs from a directory and the key from PEM files. Another host of the formats
//! component compares its bytes with these (hosts/js's test does), and an embedder sees
//! what a work order should give.

use crate::evidence::{Sealer, keys};
use anyhow::Context;
use clap::Args;
use esign_formats::seal::SealHost;
use esign_formats::work::{self, BlobInfo, WorkFailure, WorkIo, WorkOrder};
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct WorkArgs {
    /// The work order as JSON (esign_formats::work::WorkOrder in serde's shape).
    pub order: PathBuf,
    /// The blobs the order names: one file per blob, named by its id.
    #[arg(long)]
    pub blobs: PathBuf,
    /// Where `outcome.json` and the new blobs go (named `made-1`, `made-2`, ... in the
    /// order the work made them; created when missing).
    #[arg(long)]
    pub out: PathBuf,
    /// The time the work states (the seal's `/M`), in milliseconds since the Unix epoch
    /// [default: now].
    #[arg(long)]
    pub now_ms: Option<u64>,
    /// The sealing key (PEM), for a render that seals.
    #[arg(long, requires = "signing_cert")]
    pub signing_key: Option<PathBuf>,
    /// Its certificate chain (PEM), signer first.
    #[arg(long, requires = "signing_key")]
    pub signing_cert: Option<PathBuf>,
}

pub fn work(args: WorkArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.order)
        .with_context(|| format!("reading {}", args.order.display()))?;
    let order: WorkOrder = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a work order", args.order.display()))?;
    let sealer = match (&args.signing_key, &args.signing_cert) {
        (Some(key), Some(cert)) => Some(Sealer::new(
            keys::load_given(&args.out, keys::Given::Pem { key, cert })?,
            None,
        )?),
        _ => None,
    };
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let mut io = DirIo {
        blobs: &args.blobs,
        out: &args.out,
        sealer: sealer.as_ref(),
        made: 0,
        failed: None,
    };
    let now = args.now_ms.unwrap_or_else(crate::clock::now_ms);
    let outcome = work::perform(&order, now, &mut io);
    if let Some(e) = io.failed {
        return Err(e);
    }
    let file = args.out.join("outcome.json");
    crate::fs::write_whole(&file, serde_json::to_string_pretty(&outcome)?.as_bytes())
        .with_context(|| format!("writing {}", file.display()))?;
    println!("{}: {} new blobs", file.display(), io.made);
    Ok(())
}

/// Blobs in directories; the sealer, when keys were given; no downloads, no converter.
struct DirIo<'a> {
    blobs: &'a Path,
    out: &'a Path,
    sealer: Option<&'a Sealer>,
    made: usize,
    /// A new blob that could not be written: the command fails.
    failed: Option<anyhow::Error>,
}

impl SealHost for DirIo<'_> {
    fn certificates(&self) -> Result<Vec<Vec<u8>>, String> {
        self.sealer
            .ok_or("no sealing key was given (--signing-key, --signing-cert)")?
            .certificates()
    }

    fn sign(&self, digest: &[u8; 32]) -> Result<Vec<u8>, String> {
        self.sealer
            .ok_or("no sealing key was given (--signing-key, --signing-cert)")?
            .sign(digest)
    }

    fn timestamp(&self, _request: &[u8]) -> Result<Option<Vec<u8>>, String> {
        Ok(None)
    }
}

impl WorkIo for DirIo<'_> {
    fn blob(&mut self, id: &str) -> Result<Option<Vec<u8>>, String> {
        if id.is_empty() || id.contains(['/', '\\', '.']) {
            return Ok(None);
        }
        match std::fs::read(self.blobs.join(id)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("reading blob {id}: {e}")),
        }
    }

    fn put(&mut self, data: Vec<u8>) -> BlobInfo {
        self.made += 1;
        let id = format!("made-{}", self.made);
        if let Err(e) = crate::fs::write_whole(&self.out.join(&id), &data) {
            self.failed
                .get_or_insert(anyhow::Error::from(e).context(format!("writing {id}")));
        }
        BlobInfo {
            size: data.len() as u64,
            sha256: crate::ids::sha256_hex(&data),
            id,
        }
    }

    fn download(&mut self, _url: &str) -> Result<Vec<u8>, String> {
        Err("esign engine work makes no downloads".into())
    }

    fn convert_docx(&mut self, _docx: Vec<u8>) -> Result<Vec<u8>, WorkFailure> {
        Err(WorkFailure {
            code: "conversion-unavailable".into(),
            message: "esign engine work converts no Word files".into(),
        })
    }

    fn warn(&mut self, message: &str) {
        eprintln!("warning: {message}");
    }
}
