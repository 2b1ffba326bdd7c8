//! The wasmtime embedding: one `Engine` with the pooling allocator, the component
//! compiled once (and cached on disk, precompiled, keyed by the wasm's hash), an
//! `InstancePre` built once, and a fresh `Store` per call whose data ([`CallState`])
//! implements the world's imports over one store transaction, including the two WASI
//! interfaces the engine uses (wall clock, random): no WASI context is built per call.

mod effects;
mod files;
mod host;
pub mod link_key;
mod store;
mod wasi;

use crate::bindings::{Esign, Job, JobOutcome, Request, Response, Settings};
use crate::compile_cache::load_component;
use crate::passwords::Passwords;
use crate::store::Txn;
use anyhow::Context;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;
use wasmtime::component::{
    ComponentExportIndex, Func, HasSelf, Instance, InstancePre, Linker, TypedFunc,
};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store};

/// The engine component this binary was built with.
pub const EMBEDDED_ENGINE: &[u8] = include_bytes!(env!("ESIGN_ENGINE_WASM"));
/// The embedded engine composed with `hosts/wasi-http` (host/build.rs `compose`): one
/// component exporting `wasi:http/incoming-handler`, for standard runtimes.
pub const EMBEDDED_WASI_HTTP: &[u8] = include_bytes!(env!("ESIGN_WASI_HTTP_WASM"));
/// The formats component (`components/formats`, world `esign:formats/formats`): the file
/// work, which this host runs too, in its sandbox (`crate::sandbox`).
pub const EMBEDDED_FORMATS: &[u8] = include_bytes!(env!("ESIGN_FORMATS_WASM"));

/// The defaults of `esign serve`: the engine's policy (`esign_engine::policy`, each
/// member `None`) and no other operator settings.
pub fn default_settings() -> Settings {
    Settings {
        token_ttl_secs: None,
        login_max_failures: None,
        login_lock_secs: None,
        token_min_interval_ms: None,
        base_url: "http://127.0.0.1:8080".into(),
        can_convert_word: false,
        // Only the server sends downloads from storage (`esign serve`, server.rs).
        blob_responses: false,
        upload_ttl_secs: None,
        eid_provider: String::new(),
        signing_certificate: String::new(),
        oauth_access_ttl_secs: None,
        completion_attachment_max_bytes: None,
        completion_link_days: None,
        mcp_test_user: String::new(),
        // No default: every host loads one (`link_key::load`).
        link_key: String::new(),
    }
}

/// What one process shares with every call.
pub struct Shared {
    pub settings: Settings,
    pub passwords: Passwords,
    /// The eID provider, when one is configured.
    pub eid: Option<Arc<dyn crate::eid::Provider>>,
    /// SHA-256 of the certificate final PDFs are sealed with (`verify-pdf` tells files
    /// sealed here from others); empty when there is none.
    pub seal_certificate_sha256: String,
    /// The outbound client that fetches OAuth Client ID Metadata Documents; `None`
    /// where the host makes no outbound requests (admin commands, benchmarks).
    pub outbound: Option<crate::outbound::Outbound>,
}

/// Test hooks a call may carry (only honoured when the server runs with test faults on).
#[derive(Debug, Default, Clone, Copy)]
pub struct Faults {
    /// Trap on the n-th `store.put` of the call (1-based).
    pub trap_on_put: Option<u32>,
    /// `files.put` reports the blob storage as unavailable.
    pub blobs_unavailable: bool,
}

/// The data of one call's wasmtime `Store`.
pub struct CallState {
    shared: Arc<Shared>,
    pub txn: Txn,
    faults: Faults,
    puts: u32,
    /// Password checks already done by an earlier attempt of the same request, so a
    /// re-run after a conflict does not pay for argon2 again.
    pub verified: HashMap<(String, String), bool>,
    /// Whether the call scheduled a job (the job runner is woken after commit).
    pub scheduled_jobs: bool,
    /// Whether the call queued mail (the mail worker is woken after commit).
    pub queued_mail: bool,
    /// Whether the call queued text messages (the SMS worker is woken after commit).
    pub queued_sms: bool,
    /// Whether the call queued webhook deliveries (the delivery worker is woken).
    pub queued_deliveries: bool,
    /// What the engine said before it trapped (`host.log-error`).
    pub engine_error: Option<String>,
    /// The call runs inline on a tokio worker, where a blob read (up to megabytes,
    /// copied in and out of the instance) must not happen.
    on_worker: bool,
    /// The call stopped at a blob read because it runs on a tokio worker: the caller
    /// re-runs it off the worker.
    pub needs_blocking_thread: bool,
    /// The call, begun read-only (`Store::begin_read_only`), stopped at its first write
    /// or outside effect, before doing it: the caller re-runs it read-write.
    pub needs_read_write: bool,
}

/// The trap a read-only call stops with at its first write or outside effect.
const MOVE_TO_READ_WRITE: &str = "the call writes: re-run it read-write";

impl CallState {
    /// Called before every write and every effect outside the store (an eID provider,
    /// a fetch): a call begun read-only stops here, before doing it, so that its re-run
    /// read-write does it once.
    pub(crate) fn may_write(&mut self) -> wasmtime::Result<()> {
        if self.txn.began_read_only() {
            self.needs_read_write = true;
            return Err(wasmtime::Error::msg(MOVE_TO_READ_WRITE));
        }
        Ok(())
    }
}

/// Runs slow, blocking work (argon2: tens of milliseconds; a large blob read; a commit's
/// lock wait and fsync) from inside an engine call.
/// On a multi-thread tokio worker it uses `block_in_place`, so the worker's other tasks
/// move to another thread meanwhile; elsewhere (admin CLI, blocking threads) it just runs.
pub(crate) fn offload<R>(f: impl FnOnce() -> R) -> R {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// The compiled engine, ready to instantiate.
pub struct Runtime {
    engine: Engine,
    pre: InstancePre<Slot>,
    /// Where the engine's two exports are, looked up once.
    handle: ComponentExportIndex,
    run_job: ComponentExportIndex,
    pub shared: Arc<Shared>,
    /// Instances whose teardown is queued on the tokio runtime (see [`Runtime::retire`]).
    retiring: Arc<AtomicU32>,
    /// How many may be: the pool holds this many instances beyond the calls'.
    max_retiring: u32,
}

/// The engine's exports in one instance. Their types were checked once, in
/// [`Runtime::new`]: bindgen's `Esign` would check them at every instantiation, walking
/// every record and variant of the request and the job (about a tenth of a call's
/// instantiation), and would look up both exports where a call uses one.
pub struct Exports {
    instance: Instance,
    handle: ComponentExportIndex,
    run_job: ComponentExportIndex,
}

impl Exports {
    fn func(&self, store: &mut Store<Slot>, index: ComponentExportIndex) -> Func {
        self.instance
            .get_func(store, index)
            .expect("found in Runtime::new")
    }

    /// Calls the engine's `handle` export.
    pub fn call_handle(
        &self,
        store: &mut Store<Slot>,
        req: &Request,
    ) -> wasmtime::Result<Response> {
        let func = self.func(store, self.handle);
        // SAFETY: `Runtime::new` checked that `handle` has exactly this type.
        let f = unsafe { TypedFunc::<(&Request,), (Response,)>::new_unchecked(func) };
        Ok(f.call(store, (req,))?.0)
    }

    /// Calls the engine's `run-job` export.
    pub fn call_run_job(&self, store: &mut Store<Slot>, job: &Job) -> wasmtime::Result<JobOutcome> {
        let func = self.func(store, self.run_job);
        // SAFETY: `Runtime::new` checked that `run-job` has exactly this type.
        let f = unsafe { TypedFunc::<(&Job,), (JobOutcome,)>::new_unchecked(func) };
        Ok(f.call(store, (job,))?.0)
    }
}

/// The data of a call's wasmtime `Store`: the call's state until the call ends, then
/// nothing, while the instance waits for its teardown.
pub struct Slot(Option<CallState>);

impl Slot {
    fn state(&mut self) -> &mut CallState {
        self.0
            .as_mut()
            .expect("an instance is only called during its call")
    }
}

impl Runtime {
    /// Compiles (or loads from `cache_dir`) the component `wasm` and links it.
    /// `max_instances` is how many calls (requests and jobs together) the caller lets
    /// run at once; the pool holds twice as many instances, the other half for ended
    /// calls waiting for their teardown ([`Runtime::retire`]).
    pub fn new(
        wasm: &[u8],
        cache_dir: Option<&Path>,
        max_instances: u32,
        shared: Shared,
    ) -> anyhow::Result<Runtime> {
        let max_retiring = max_instances;
        let pool_size = max_instances + max_retiring;
        let engine = match make_engine(pool_size, true) {
            Ok(engine) => engine,
            Err(e) => {
                tracing::info!(
                    "PAGEMAP_SCAN unavailable ({e}); linear memories reset with madvise"
                );
                make_engine(pool_size, false)?
            }
        };

        let component = load_component(&engine, wasm, cache_dir, "engine")?;
        let mut linker = Linker::<Slot>::new(&engine);
        Esign::add_to_linker::<Slot, HasSelf<CallState>>(&mut linker, Slot::state)?;
        let pre = linker.instantiate_pre(&component)?;
        let export = |name: &str| {
            component
                .get_export_index(None, name)
                .with_context(|| format!("the engine component exports no `{name}`"))
        };
        let (handle, run_job) = (export("handle")?, export("run-job")?);
        // The exports' types, checked once here so that calls need not check them again
        // (see `Exports`). Instantiating calls no import, so the slot stays empty.
        {
            let mut store = Store::new(&engine, Slot(None));
            store.set_epoch_deadline(CALL_DEADLINE_TICKS);
            let instance = pre.instantiate(&mut store)?;
            instance.get_typed_func::<(&Request,), (Response,)>(&mut store, handle)?;
            instance.get_typed_func::<(&Job,), (JobOutcome,)>(&mut store, run_job)?;
        }
        Ok(Runtime {
            engine,
            pre,
            handle,
            run_job,
            shared: Arc::new(shared),
            retiring: Arc::new(AtomicU32::new(0)),
            max_retiring,
        })
    }

    /// Instantiates the engine over `txn` and runs `f`; returns its result and the
    /// call's state (with the transaction, to commit or drop). With `on_worker` (an
    /// inline call on a tokio worker) a blob read stops the call with
    /// `needs_blocking_thread` set.
    pub fn call<R>(
        &self,
        txn: Txn,
        faults: Faults,
        on_worker: bool,
        verified: HashMap<(String, String), bool>,
        f: impl FnOnce(&Exports, &mut Store<Slot>) -> wasmtime::Result<R>,
    ) -> (wasmtime::Result<R>, CallState) {
        let state = CallState {
            shared: self.shared.clone(),
            txn,
            faults,
            puts: 0,
            verified,
            scheduled_jobs: false,
            queued_mail: false,
            queued_sms: false,
            queued_deliveries: false,
            engine_error: None,
            on_worker,
            needs_blocking_thread: false,
            needs_read_write: false,
        };
        let mut store = Store::new(&self.engine, Slot(Some(state)));
        store.set_epoch_deadline(CALL_DEADLINE_TICKS);
        let metrics = crate::metrics::get();
        let started = Instant::now();
        let result = self.pre.instantiate(&mut store).and_then(|instance| {
            metrics
                .instantiate_seconds
                .observe(started.elapsed().as_secs_f64());
            let exports = Exports {
                instance,
                handle: self.handle,
                run_job: self.run_job,
            };
            f(&exports, &mut store)
        });
        metrics
            .engine_call_seconds
            .observe(started.elapsed().as_secs_f64());
        let state = store.data_mut().0.take().expect("taken once");
        if on_worker {
            self.retire(store);
        } else {
            teardown(store);
        }
        (result, state)
    }

    /// Ends the instance of a call that ran inline on a tokio worker. Tearing it down
    /// (resetting the pages the call wrote, about 5 µs for a small call) is work no
    /// answer waits for: it runs as a task of its own, which the worker takes up after
    /// the answer is written (a task spawned on a worker runs next on that worker, once
    /// the current one yields). The instance keeps its pool slot until then, so at most
    /// `max_retiring` wait; past that the caller tears it down itself. Calls on blocking
    /// threads (large bodies, blob reads, jobs) tear down where they ran: their
    /// instances can hold megabytes to reset, which must not land on a worker.
    fn retire(&self, store: Store<Slot>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return teardown(store);
        };
        if self.retiring.fetch_add(1, Ordering::AcqRel) >= self.max_retiring {
            self.retiring.fetch_sub(1, Ordering::AcqRel);
            return teardown(store);
        }
        let retiring = self.retiring.clone();
        runtime.spawn(async move {
            teardown(store);
            retiring.fetch_sub(1, Ordering::AcqRel);
        });
    }
}

/// Ends a call's instance (its pool slot's memory is reset), timed.
fn teardown(store: Store<Slot>) {
    let started = Instant::now();
    drop(store);
    crate::metrics::get()
        .teardown_seconds
        .observe(started.elapsed().as_secs_f64());
}

/// An engine with the pooling allocator sized for `max_instances` concurrent calls.
///
/// With `resident_reset` (needs Linux's PAGEMAP_SCAN, kernel 6.7+), a slot's dirty pages
/// are reset in place when an instance ends and stay mapped: no `madvise`, so no TLB
/// shootdowns across cores, and no page faults when the slot is reused. Measured on the
/// engine-call micro-benchmark: about half the per-call time, zero page faults.
fn make_engine(max_instances: u32, resident_reset: bool) -> anyhow::Result<Engine> {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(max_instances)
        .total_core_instances(max_instances * 8)
        .total_memories(max_instances * 2)
        .total_tables(max_instances * 4)
        .max_memories_per_component(4)
        .max_tables_per_component(8)
        .max_core_instances_per_component(16)
        .max_memory_size(256 << 20);
    if resident_reset {
        pool.pagemap_scan(wasmtime::Enabled::Yes)
            .linear_memory_keep_resident(8 << 20)
            .table_keep_resident(1 << 20);
    }
    let mut config = Config::new();
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    config.epoch_interruption(true);
    // The engine's calls are synchronous: no per-store task and thread records for the
    // component model's async ABI (on by default whenever the `component-model-async`
    // feature is compiled in, as the test and bench builds do through wasmtime-cli).
    config.concurrency_support(false);
    // `ESIGN_PERFMAP=1`: name the engine's compiled functions for `perf` (a
    // /tmp/perf-PID.map file); for profiling only.
    if std::env::var_os("ESIGN_PERFMAP").is_some_and(|v| v == "1") {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    let engine = Engine::new(&config).map_err(anyhow::Error::from)?;
    let ticker = engine.weak();
    std::thread::Builder::new()
        .name("esign-epoch".into())
        .spawn(move || {
            // Ends once the engine is dropped.
            loop {
                std::thread::sleep(EPOCH_TICK);
                match ticker.upgrade() {
                    Some(engine) => engine.increment_epoch(),
                    None => break,
                }
            }
        })?;
    Ok(engine)
}

/// How often the engine's epoch advances.
const EPOCH_TICK: std::time::Duration = std::time::Duration::from_millis(100);
/// Epoch ticks an engine call may run before it traps (10 s): a runaway call is rolled
/// back and answered 500 instead of holding a thread forever.
const CALL_DEADLINE_TICKS: u64 = 100;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::Origin;

    fn request(path: &str) -> Request {
        Request {
            method: "GET".into(),
            path: path.into(),
            query: String::new(),
            headers: Vec::new(),
            body: Vec::new(),
            parts: Vec::new(),
            origin: Origin::Http,
            remote_addr: "127.0.0.1".into(),
        }
    }

    /// Ended calls wait for their teardown in the pool's second half. A task that never
    /// yields keeps every teardown waiting: past that half, the caller must tear its
    /// instance down itself, or the next instantiation finds the pool full and fails.
    #[test]
    fn calls_never_wait_for_a_pool_slot_that_teardowns_hold() {
        let (store, _dir) = crate::store::tests::store();
        let shared = Shared {
            settings: default_settings(),
            passwords: Passwords::new(),
            eid: None,
            seal_certificate_sha256: String::new(),
            outbound: None,
        };
        const INSTANCES: u32 = 2;
        let runtime = Runtime::new(EMBEDDED_ENGINE, None, INSTANCES, shared).unwrap();
        let tokio = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let not_found = |on_worker| {
            let (resp, _) = runtime.call(
                store.begin(),
                Faults::default(),
                on_worker,
                HashMap::new(),
                |b, s| b.call_handle(s, &request("/v1/nope")),
            );
            resp.map(|r| r.status)
        };
        tokio.block_on(async {
            for i in 0..INSTANCES * 4 {
                let status = not_found(true).unwrap_or_else(|e| panic!("call {i}: {e:#}"));
                assert_eq!(status, 404, "call {i}");
            }
            assert_eq!(
                runtime.retiring.load(Ordering::Acquire),
                INSTANCES,
                "the teardowns queued while the task ran"
            );
        });
        drop(tokio);
        // Dropping the runtime ran (or dropped) every queued teardown.
        assert_eq!(not_found(false).unwrap(), 404);
    }
}
