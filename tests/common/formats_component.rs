//! The formats component (`components/formats`) run in wasmtime for tests and
//! benchmarks, its imports answered by a [`WorkIo`] (the same one the native code is
//! given, so both see the same blobs, key and time).

use ::esign::bindings::{PdfCheck, WorkFailure, WorkOrder, WorkOutcome};
use esign_formats::seal::SealHost;
use esign_formats::work::{self as shared, WorkIo};
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

wasmtime::component::bindgen!({
    world: "esign:formats/formats",
    path: ["../wit", "../wit/formats"],
    with: { "esign:engine/types": ::esign::bindings::types },
});

use self::esign::formats::{blobs, convert, download, log, signing, timestamping};

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
        self.call(io, |f, store| {
            f.esign_formats_work().call_perform(store, order, now_ms)
        })
    }

    /// Checks a PDF in a fresh instance.
    pub fn check_pdf(&self, pdf: &[u8], own: &str, io: I) -> (anyhow::Result<PdfCheck>, I, usize) {
        self.call(io, |f, store| {
            f.esign_formats_work().call_check_pdf(store, pdf, own)
        })
    }

    fn call<R>(
        &self,
        io: I,
        f: impl FnOnce(&Formats, &mut Store<State<I>>) -> wasmtime::Result<R>,
    ) -> (anyhow::Result<R>, I, usize) {
        let state = State {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
            io,
            peak_memory: 0,
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
