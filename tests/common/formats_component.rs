//! The formats component (`components/formats`) run in wasmtime for tests and
//! benchmarks, its imports answered by a [`WorkIo`] (the same one the native code is
//! given, so both see the same blobs, key and time), and [`MemIo`], a deterministic
//! [`WorkIo`] over memory for both.

use ::esign::bindings::{PdfCheck, WorkFailure, WorkOrder, WorkOutcome};
use esign_formats::digest::sha256_hex;
use esign_formats::pdf;
use esign_formats::seal::SealHost;
use esign_formats::seal::cms::DigestSigner;
use esign_formats::seal::keys::{LocalKey, generate};
use esign_formats::work::{self as shared, WorkIo};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

wasmtime::component::bindgen!({
    world: "esign:formats/formats",
    path: ["../wit", "../wit/formats"],
    with: { "esign:engine/types": ::esign::bindings::types },
});

use self::esign::formats::{blobs, convert, download, log, signing, timestamping};

/// `generate-signing-key`'s answer: the key and certificate PEM, or why not.
pub type KeyPems = Result<(String, String), String>;

/// A compiled formats component, instantiated afresh for each call, whose imports a
/// `I` answers.
pub struct FormatsComponent<I: WorkIo + Send + 'static> {
    engine: Engine,
    linker: Linker<State<I>>,
    component: Component,
}

/// One call's store data: WASI (empty: no environment, no stdio) and the work's I/O.
pub struct State<I> {
    wasi: WasiCtx,
    table: ResourceTable,
    io: I,
    /// Bytes of linear memory at the most, seen by the limiter.
    peak_memory: usize,
    /// Bytes of linear memory allowed: growing beyond fails (as in a small runtime).
    max_memory: usize,
}

impl<I: Send> WasiView for State<I> {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl<I: Send> wasmtime::ResourceLimiter for State<I> {
    fn memory_growing(
        &mut self,
        _: usize,
        desired: usize,
        _: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_memory {
            return Ok(false);
        }
        self.peak_memory = self.peak_memory.max(desired);
        Ok(true)
    }

    fn table_growing(&mut self, _: usize, _: usize, _: Option<usize>) -> wasmtime::Result<bool> {
        Ok(true)
    }
}

impl<I: WorkIo + Send + 'static> FormatsComponent<I> {
    pub fn new(wasm: &[u8]) -> anyhow::Result<FormatsComponent<I>> {
        let engine = Engine::default();
        let component = Component::new(&engine, wasm)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        Formats::add_to_linker::<State<I>, HasSelf<State<I>>>(&mut linker, |s| s)?;
        Ok(FormatsComponent {
            engine,
            linker,
            component,
        })
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
        self.call(io, max_memory, |f, store| {
            f.esign_formats_work().call_perform(store, order, now_ms)
        })
    }

    /// Checks a PDF in a fresh instance.
    pub fn check_pdf(&self, pdf: &[u8], own: &str, io: I) -> (anyhow::Result<PdfCheck>, I, usize) {
        self.call(io, usize::MAX, |f, store| {
            f.esign_formats_work().call_check_pdf(store, pdf, own)
        })
    }

    /// `generate-signing-key` in a fresh instance.
    pub fn generate_signing_key(
        &self,
        secret: &[u8],
        now_ms: u64,
        io: I,
    ) -> (anyhow::Result<KeyPems>, I, usize) {
        self.call(io, usize::MAX, |f, store| {
            f.esign_formats_work()
                .call_generate_signing_key(store, secret, now_ms)
        })
    }

    fn call<R>(
        &self,
        io: I,
        max_memory: usize,
        f: impl FnOnce(&Formats, &mut Store<State<I>>) -> wasmtime::Result<R>,
    ) -> (anyhow::Result<R>, I, usize) {
        let state = State {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
            io,
            peak_memory: 0,
            max_memory,
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| s);
        let result = Formats::instantiate(&mut store, &self.component, &self.linker)
            .and_then(|formats| f(&formats, &mut store))
            .map_err(anyhow::Error::from);
        let state = store.into_data();
        (result, state.io, state.peak_memory)
    }
}

impl<I> ::esign::bindings::types::Host for State<I> {}

impl<I: WorkIo> blobs::Host for State<I> {
    fn get(&mut self, id: String) -> Result<Option<Vec<u8>>, String> {
        self.io.blob(&id)
    }

    fn put(&mut self, data: Vec<u8>) -> ::esign::bindings::BlobInfo {
        let b = self.io.put(data);
        ::esign::bindings::BlobInfo {
            id: b.id,
            size: b.size,
            sha256: b.sha256,
        }
    }
}

impl<I: WorkIo> download::Host for State<I> {
    fn fetch(&mut self, url: String) -> Result<Vec<u8>, String> {
        self.io.download(&url)
    }
}

impl<I: WorkIo> convert::Host for State<I> {
    fn docx_to_pdf(&mut self, docx: Vec<u8>) -> Result<Vec<u8>, WorkFailure> {
        self.io
            .convert_docx(docx)
            .map_err(|f: shared::WorkFailure| WorkFailure {
                code: f.code,
                message: f.message,
            })
    }
}

impl<I: WorkIo> signing::Host for State<I> {
    fn certificates(&mut self) -> Result<Vec<Vec<u8>>, String> {
        SealHost::certificates(&self.io)
    }

    fn sign(&mut self, digest: Vec<u8>) -> Result<Vec<u8>, String> {
        let digest: [u8; 32] = digest
            .try_into()
            .map_err(|_| "a digest is 32 bytes".to_string())?;
        SealHost::sign(&self.io, &digest)
    }
}

impl<I: WorkIo> timestamping::Host for State<I> {
    fn exchange(&mut self, request: Vec<u8>) -> Result<Option<Vec<u8>>, String> {
        SealHost::timestamp(&self.io, &request)
    }
}

impl<I: WorkIo> log::Host for State<I> {
    fn warn(&mut self, message: String) {
        self.io.warn(&message);
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
