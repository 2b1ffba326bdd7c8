//! The formats component (`components/formats`) run in wasmtime for tests and
//! benchmarks, through the server's own sandbox, its imports answered by a [`WorkIo`]
//! (the same one the native code is given, so both see the same blobs, key and time),
//! and [`MemIo`], a deterministic [`WorkIo`] over memory for both.

use ::esign_host::bindings::{PdfCheck, WorkOrder, WorkOutcome};
use ::esign_host::sandbox::{Limits, Sandbox};
use esign_formats::digest::sha256_hex;
use esign_formats::pdf;
use esign_formats::seal::SealHost;
use esign_formats::seal::cms::DigestSigner;
use esign_formats::seal::keys::{LocalKey, generate};
use esign_formats::work::{self as shared, WorkIo};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

pub use ::esign_host::sandbox::KeyPems;

/// The formats component in the server's own sandbox (`esign_host::sandbox`), without its
/// deadline and memory cap unless a call names one: tests and benchmarks call the very
/// code the server runs its work orders with.
pub struct FormatsComponent<I: WorkIo + Send + 'static>(Sandbox<I>);

impl<I: WorkIo + Send + 'static> FormatsComponent<I> {
    pub fn new(wasm: &[u8]) -> anyhow::Result<FormatsComponent<I>> {
        let unlimited = Limits {
            memory_bytes: usize::MAX,
            deadline: std::time::Duration::from_secs(3600),
        };
        Ok(FormatsComponent(Sandbox::new(wasm, None, unlimited)?))
    }

    /// Runs `order` in a fresh instance with `io`: the outcome (or the trap), `io` back,
    /// and the peak linear memory in bytes.
    pub fn perform(
        &self,
        order: &WorkOrder,
        now_ms: u64,
        io: I,
    ) -> (anyhow::Result<WorkOutcome>, I, usize) {
        self.perform_within(order, now_ms, io, usize::MAX)
    }

    /// [`perform`](Self::perform) with at most `max_memory` bytes of linear memory.
    pub fn perform_within(
        &self,
        order: &WorkOrder,
        now_ms: u64,
        io: I,
        max_memory: usize,
    ) -> (anyhow::Result<WorkOutcome>, I, usize) {
        let (result, io, peak) = self.0.perform_within(order, now_ms, io, max_memory);
        (result.map_err(anyhow::Error::from), io, peak)
    }

    /// Checks a PDF in a fresh instance.
    pub fn check_pdf(&self, pdf: &[u8], own: &str, io: I) -> (anyhow::Result<PdfCheck>, I, usize) {
        let (result, io) = self.0.check_pdf(pdf, own, io);
        (result.map_err(anyhow::Error::from), io, 0)
    }

    /// `generate-signing-key` in a fresh instance.
    pub fn generate_signing_key(
        &self,
        secret: &[u8],
        now_ms: u64,
        io: I,
    ) -> (anyhow::Result<KeyPems>, I, usize) {
        let (result, io) = self.0.generate_signing_key(secret, now_ms, io);
        (result.map_err(anyhow::Error::from), io, 0)
    }
}

/// The time seals state: 2026-11-25T12:00:00Z.
pub const NOW_MS: u64 = 1_795_608_000_000;

/// What the time stamping authority does in a test.
#[derive(Clone, Copy, PartialEq)]
pub enum Tsa {
    None,
    Down,
}

/// The work's I/O over memory: the same for both builds, and deterministic (new blob
/// ids count up).
#[derive(Clone)]
pub struct MemIo {
    pub blobs: BTreeMap<String, Vec<u8>>,
    /// What the work put, in order.
    pub new: Vec<(String, Vec<u8>)>,
    pub downloads: BTreeMap<String, Vec<u8>>,
    pub warnings: Vec<String>,
    pub key: Arc<LocalKey>,
    pub tsa: Tsa,
    /// The signing key fails.
    pub key_down: bool,
}

pub fn test_key() -> Arc<LocalKey> {
    static KEY: OnceLock<Arc<LocalKey>> = OnceLock::new();
    KEY.get_or_init(|| {
        let (key, cert) = generate(&[5; 32], NOW_MS).unwrap();
        Arc::new(LocalKey::from_pem(&key, &cert).unwrap())
    })
    .clone()
}

impl MemIo {
    pub fn new(blobs: &[(&str, Vec<u8>)]) -> MemIo {
        MemIo {
            blobs: blobs
                .iter()
                .map(|(id, b)| (id.to_string(), b.clone()))
                .collect(),
            new: Vec::new(),
            downloads: BTreeMap::new(),
            warnings: Vec::new(),
            key: test_key(),
            tsa: Tsa::None,
            key_down: false,
        }
    }
}

impl SealHost for MemIo {
    fn certificates(&self) -> Result<Vec<Vec<u8>>, String> {
        self.key.chain_der().map_err(|e| e.to_string())
    }

    fn sign(&self, digest: &[u8; 32]) -> Result<Vec<u8>, String> {
        if self.key_down {
            return Err("the key store does not answer".into());
        }
        self.key.sign_digest(digest).map_err(|e| e.to_string())
    }

    fn timestamp(&self, _request: &[u8]) -> Result<Option<Vec<u8>>, String> {
        match self.tsa {
            Tsa::None => Ok(None),
            Tsa::Down => Err("no answer from the authority".into()),
        }
    }
}

impl WorkIo for MemIo {
    fn blob(&mut self, id: &str) -> Result<Option<Vec<u8>>, String> {
        Ok(self.blobs.get(id).cloned())
    }

    fn put(&mut self, data: Vec<u8>) -> shared::BlobInfo {
        let info = shared::BlobInfo {
            id: format!("new{:04}", self.new.len() + 1),
            size: data.len() as u64,
            sha256: sha256_hex(&data),
        };
        self.new.push((info.id.clone(), data));
        info
    }

    fn download(&mut self, url: &str) -> Result<Vec<u8>, String> {
        self.downloads
            .get(url)
            .cloned()
            .ok_or_else(|| format!("{url} is not served in this test"))
    }

    /// A stand-in converter: a one-page PDF whose size says how large the Word file was.
    fn convert_docx(&mut self, docx: Vec<u8>) -> Result<Vec<u8>, shared::WorkFailure> {
        if docx.len().is_multiple_of(7) {
            return Err(shared::WorkFailure {
                code: "conversion-failed".into(),
                message: "the stand-in converter refuses sizes divisible by 7".into(),
            });
        }
        Ok(pdf::sample_pdf(1 + docx.len() % 3))
    }

    fn warn(&mut self, message: &str) {
        self.warnings.push(message.to_string());
    }
}
