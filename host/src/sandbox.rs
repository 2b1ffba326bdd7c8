//! The file work's sandbox: every work order (import, Word filling, page images, the
//! seal) runs in the formats component (`components/formats`, the same code other hosts
//! run) under wasmtime, in a fresh instance with a cap on its memory and a deadline,
//! never in the server's own heap. A hostile file that asks the decoders for gigabytes
//! (an image of 20 000 × 20 000 pixels in a 1 MB PDF) or for minutes (thousands of
//! pages) makes its instance trap: the work order fails with a reason and the process,
//! and every other tenant, go on. A native allocation failure would abort the process,
//! which `catch_unwind` cannot stop; a trap in wasm is an error value.
//!
//! The component's imports are answered by a [`WorkIo`] (the store's blobs, downloads,
//! LibreOffice, the sealing key: `crate::file_work`), so only the decoding is inside.

use crate::bindings::{PdfCheck, WorkOrder, WorkOutcome};
use crate::compile_cache::load_component;
use esign_formats::seal::SealHost;
use esign_formats::work::WorkIo;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

wasmtime::component::bindgen!({
    world: "esign:formats/formats",
    path: ["../wit", "../wit/formats"],
    with: { "esign:engine/types": crate::bindings::types },
});

use self::esign::formats::{blobs, convert, download, log, signing, timestamping};

/// `generate-signing-key`'s answer: the key and certificate PEM, or why not.
pub type KeyPems = Result<(String, String), String>;

/// What one work order may use.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Linear memory of the instance, in bytes: a file needing more fails.
    pub memory_bytes: usize,
    /// Time in the component (waiting on an import, such as LibreOffice or a download,
    /// counts only once the call is back in the component).
    pub deadline: Duration,
}

/// How often the epoch advances: a deadline or a stop is noticed within this.
const TICK: Duration = Duration::from_millis(50);

/// Why a work order ended without an outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// It needed more memory than [`Limits::memory_bytes`].
    Memory(usize),
    /// It ran past [`Limits::deadline`].
    Deadline(Duration),
    /// The server is shutting down: the job is left to run again at the next start.
    Shutdown,
    /// The component trapped otherwise (a defect in the decoders).
    Trap(String),
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason())
    }
}

impl std::error::Error for Stopped {}

impl Stopped {
    /// A sentence for the document's trail.
    pub fn reason(&self) -> String {
        match self {
            Stopped::Memory(n) => format!(
                "the file needs more than {} MB of memory to process (the server's limit, \
                 --work-memory-mb); a PDF with smaller images or fewer pages will do",
                n >> 20
            ),
            Stopped::Deadline(d) => format!(
                "processing the file took longer than {} s (the server's limit, \
                 --work-deadline-secs); a PDF with fewer or simpler pages will do",
                d.as_secs()
            ),
            Stopped::Shutdown => "the server was shutting down".into(),
            Stopped::Trap(why) => format!("the file could not be processed: {why}"),
        }
    }
}

/// The compiled formats component and the limits each work order runs under.
pub struct Sandbox<I: WorkIo + Send + 'static> {
    engine: Engine,
    linker: Linker<State<I>>,
    component: Component,
    limits: Limits,
    /// Set at shutdown: running work stops at its next epoch check.
    stopping: Arc<AtomicBool>,
}

/// One instance's store data: an empty WASI context (no files, no environment, no
/// clocks beyond WASI's), the work's I/O, and what the limiter and the deadline saw.
struct State<I> {
    wasi: WasiCtx,
    table: ResourceTable,
    io: I,
    max_memory: usize,
    /// Bytes of linear memory at the most, as the limiter saw them grow.
    peak_memory: usize,
    /// A memory growth past `max_memory` was refused.
    refused_memory: bool,
    deadline: Instant,
    timed_out: bool,
    stopping: Arc<AtomicBool>,
    stopped: bool,
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
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_memory {
            self.refused_memory = true;
            return Ok(false);
        }
        self.peak_memory = self.peak_memory.max(desired);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _: usize,
        desired: usize,
        _: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1 << 20)
    }
}

impl<I: WorkIo + Send + 'static> Sandbox<I> {
    /// Compiles (or loads from `cache_dir`) the formats component `wasm`.
    pub fn new(
        wasm: &[u8],
        cache_dir: Option<&Path>,
        limits: Limits,
    ) -> anyhow::Result<Sandbox<I>> {
        let mut config = Config::new();
        // The default memory reservation (virtual address space only) keeps bounds
        // checks out of the compiled code; the limiter caps what is actually used.
        config.epoch_interruption(true);
        let engine = Engine::new(&config).map_err(anyhow::Error::from)?;
        let ticker = engine.weak();
        std::thread::Builder::new()
            .name("esign-work-epoch".into())
            .spawn(move || {
                // Ends once the engine is dropped.
                while let Some(engine) = ticker.upgrade() {
                    engine.increment_epoch();
                    drop(engine);
                    std::thread::sleep(TICK);
                }
            })?;
        let component = load_component(&engine, wasm, cache_dir, "formats")?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        Formats::add_to_linker::<State<I>, HasSelf<State<I>>>(&mut linker, |s| s)?;
        Ok(Sandbox {
            engine,
            linker,
            component,
            limits,
            stopping: Arc::new(AtomicBool::new(false)),
        })
    }

    /// Stops running work at its next epoch check, and any started later at once.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
    }

    /// Runs `order` in a fresh instance whose imports `io` answers; `io` comes back
    /// with whatever it gathered (the new blobs).
    pub fn perform(
        &self,
        order: &WorkOrder,
        now_ms: u64,
        io: I,
    ) -> (Result<WorkOutcome, Stopped>, I) {
        let (result, io, _) = self.perform_within(order, now_ms, io, self.limits.memory_bytes);
        (result, io)
    }

    /// [`perform`](Self::perform) with at most `max_memory` bytes of linear memory;
    /// also the peak it reached.
    pub fn perform_within(
        &self,
        order: &WorkOrder,
        now_ms: u64,
        io: I,
        max_memory: usize,
    ) -> (Result<WorkOutcome, Stopped>, I, usize) {
        self.call(io, max_memory, |f, store| {
            f.esign_formats_work().call_perform(store, order, now_ms)
        })
    }

    /// `generate-signing-key` (a key and self-signed certificate, PEM, from `secret`)
    /// in a fresh instance.
    pub fn generate_signing_key(
        &self,
        secret: &[u8],
        now_ms: u64,
        io: I,
    ) -> (Result<KeyPems, Stopped>, I) {
        let (result, io, _) = self.call(io, self.limits.memory_bytes, |f, store| {
            f.esign_formats_work()
                .call_generate_signing_key(store, secret, now_ms)
        });
        (result, io)
    }

    /// Checks a PDF (`esign verify`'s question) in a fresh instance.
    pub fn check_pdf(&self, pdf: &[u8], own: &str, io: I) -> (Result<PdfCheck, Stopped>, I) {
        let (result, io, _) = self.call(io, self.limits.memory_bytes, |f, store| {
            f.esign_formats_work().call_check_pdf(store, pdf, own)
        });
        (result, io)
    }

    fn call<R>(
        &self,
        io: I,
        max_memory: usize,
        f: impl FnOnce(&Formats, &mut Store<State<I>>) -> wasmtime::Result<R>,
    ) -> (Result<R, Stopped>, I, usize) {
        let state = State {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
            io,
            max_memory,
            peak_memory: 0,
            refused_memory: false,
            deadline: Instant::now() + self.limits.deadline,
            timed_out: false,
            stopping: self.stopping.clone(),
            stopped: false,
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| s);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|mut cx| {
            let s = cx.data_mut();
            if s.stopping.load(Ordering::Relaxed) {
                s.stopped = true;
                return Err(wasmtime::Error::msg("the server is shutting down"));
            }
            if Instant::now() >= s.deadline {
                s.timed_out = true;
                return Err(wasmtime::Error::msg("the work's deadline passed"));
            }
            Ok(UpdateDeadline::Continue(1))
        });
        let result = if self.stopping.load(Ordering::SeqCst) {
            Err(wasmtime::Error::msg("the server is shutting down"))
        } else {
            Formats::instantiate(&mut store, &self.component, &self.linker)
                .and_then(|formats| f(&formats, &mut store))
        };
        let state = store.into_data();
        let result = result.map_err(|e| {
            if state.stopped || self.stopping.load(Ordering::SeqCst) {
                Stopped::Shutdown
            } else if state.timed_out {
                Stopped::Deadline(self.limits.deadline)
            } else if state.refused_memory {
                Stopped::Memory(max_memory)
            } else {
                Stopped::Trap(format!("{e:#}"))
            }
        });
        (result, state.io, state.peak_memory)
    }
}

impl<I> crate::bindings::types::Host for State<I> {}

impl<I: WorkIo> blobs::Host for State<I> {
    fn get(&mut self, id: String) -> Result<Option<Vec<u8>>, String> {
        self.io.blob(&id)
    }

    fn put(&mut self, data: Vec<u8>) -> crate::bindings::BlobInfo {
        self.io.put(data).into()
    }
}

impl<I: WorkIo> download::Host for State<I> {
    fn fetch(&mut self, url: String) -> Result<Vec<u8>, String> {
        self.io.download(&url)
    }
}

impl<I: WorkIo> convert::Host for State<I> {
    fn docx_to_pdf(&mut self, docx: Vec<u8>) -> Result<Vec<u8>, crate::bindings::WorkFailure> {
        self.io.convert_docx(docx).map_err(Into::into)
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

/// Pages an imported file may have by default (`--max-pages`).
pub const DEFAULT_MAX_PAGES: usize = 500;
/// Memory of one work order by default, in MiB (`--work-memory-mb`): a 20-page
/// document's render with page images and seal peaks at about 10 MiB, and a 25 MiB
/// upload fits several times over. With 4 work slots, file work holds 1 GiB at most.
pub const DEFAULT_MEMORY_MB: usize = 256;
/// Time of one work order by default, in seconds (`--work-deadline-secs`).
pub const DEFAULT_DEADLINE_SECS: u64 = 300;
