//! The wasmtime embedding: one `Engine` with the pooling allocator, the component
//! compiled once (and cached on disk, precompiled, keyed by the wasm's hash), an
//! `InstancePre` built once, and a fresh `Store` per call whose data ([`CallState`])
//! implements the world's imports over one store transaction, including the two WASI
//! interfaces the engine uses (wall clock, random): no WASI context is built per call.

use crate::calls::now_ms;
use crate::passwords::Passwords;
use crate::store::Txn;
use anyhow::Context;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;
use wasmtime::component::{
    Component, ComponentExportIndex, Func, HasSelf, Instance, InstancePre, Linker, TypedFunc,
};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store};

wasmtime::component::bindgen!({
    world: "esign",
    path: "../wit",
    imports: { default: trappable },
    additional_derives: [serde::Serialize, serde::Deserialize],
});

pub use self::esign::engine::types::{
    BlobInfo, Block, FormPart, ImportResult, ImportSource, ImportedFile, Origin, PageImage,
    PageSize, PdfCheck, RenderOrder, RenderedFile, SealInfo, SealOrder, Settings, StampContent,
    WorkFailure, WorkOrder, WorkOutcome,
};
use self::esign::engine::{effects, files, host, store, types};
use self::wasi::clocks::wall_clock;
use self::wasi::random::random;

/// The engine component this binary was built with.
pub const EMBEDDED_ENGINE: &[u8] = include_bytes!(env!("ESIGN_ENGINE_WASM"));
/// The embedded engine composed with `hosts/wasi-http` (host/build.rs `compose`): one
/// component exporting `wasi:http/incoming-handler`, for standard runtimes.
pub const EMBEDDED_WASI_HTTP: &[u8] = include_bytes!(env!("ESIGN_WASI_HTTP_WASM"));

/// Key prefixes of the one keyspace: engine data, and the host's outbox tables.
pub mod keys {
    /// Everything the engine stores, under its own keys.
    pub const DATA: &[u8] = b"d/";
    /// Webhook events: `e/<created ms, 8 bytes BE><id>`.
    pub const EVENTS: &[u8] = b"e/";
    /// Due jobs without host work: `j/<run-at ms, 8 bytes BE><id>`.
    pub const JOBS: &[u8] = b"j/";
    /// Due jobs with host work, one queue per scope (the tenant):
    /// `jw/<scope: 16 hex digits of its SHA-256><run-at ms, 8 bytes BE><id>` (see
    /// [`crate::queues`]).
    pub const WORK_JOBS: &[u8] = b"jw/";

    /// Where a job is queued: with a work order in its scope's queue, else in `j/`.
    pub fn job(job: &super::StoredJob) -> Vec<u8> {
        match job.work {
            Some(_) => crate::queues::key(
                WORK_JOBS,
                &crate::queues::name_of(&job.scope),
                job.run_at_ms,
                &job.id,
            ),
            None => timed(JOBS, job.run_at_ms, &job.id),
        }
    }
    /// Jobs that failed for good: `x/<id>`.
    pub const DEAD_JOBS: &[u8] = b"x/";
    /// Outgoing mail: `m/<due ms, 8 bytes BE><id>`.
    pub const MAIL: &[u8] = b"m/";
    /// Mail given up after repeated failures: `y/<id>`.
    pub const DEAD_MAIL: &[u8] = b"y/";
    /// Outgoing text messages: `sms/<due ms, 8 bytes BE><id>` (rows like mail's).
    pub const SMS: &[u8] = b"sms/";
    /// Text messages given up: `smsx/<id>`.
    pub const DEAD_SMS: &[u8] = b"smsx/";
    /// File contents: `b/<blob id>`.
    pub const BLOBS: &[u8] = b"b/";
    /// Webhook deliveries of stores written before per-target queues: `w/<due ms, 8
    /// bytes BE><delivery id>`; moved to [`DELIVERIES`] when the delivery worker starts.
    pub const WEBHOOKS: &[u8] = b"w/";
    /// Webhook deliveries, one queue per target (scheme, host and port):
    /// `wq/<target: 16 hex digits of its SHA-256><due ms, 8 bytes BE><delivery id>`
    /// (see [`crate::queues`]).
    pub const DELIVERIES: &[u8] = b"wq/";
    /// Subscriptions whose queued deliveries are dropped: `wc/<subscription id>`.
    pub const CANCELLED: &[u8] = b"wc/";

    /// The cancellation marker of a subscription.
    pub fn cancelled(subscription_id: &str) -> Vec<u8> {
        let mut k = CANCELLED.to_vec();
        k.extend_from_slice(subscription_id.as_bytes());
        k
    }

    /// The key of a blob.
    pub fn blob(id: &str) -> Vec<u8> {
        let mut k = BLOBS.to_vec();
        k.extend_from_slice(id.as_bytes());
        k
    }

    /// `prefix + ms (big-endian) + id`: ordered by time.
    pub fn timed(prefix: &[u8], ms: u64, id: &str) -> Vec<u8> {
        let mut k = prefix.to_vec();
        k.extend_from_slice(&ms.to_be_bytes());
        k.extend_from_slice(id.as_bytes());
        k
    }

    /// How long until the earliest row of the time-keyed table `prefix` is due (zero if
    /// overdue), capped at `idle`; `idle` when the table is empty.
    pub fn until_next_due(
        store: &crate::store::Store,
        prefix: &[u8],
        idle: std::time::Duration,
    ) -> anyhow::Result<std::time::Duration> {
        let mut end = prefix.to_vec();
        end.push(0xff);
        let Some((key, _)) = store.scan_committed(prefix, &end, 1)?.into_iter().next() else {
            return Ok(idle);
        };
        let at = u64::from_be_bytes(key[prefix.len()..prefix.len() + 8].try_into()?);
        let now = crate::calls::now_ms();
        Ok(std::time::Duration::from_millis(at.saturating_sub(now)).min(idle))
    }
}

/// A job as the host stores it under `j/`.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone)]
pub struct StoredJob {
    pub id: String,
    pub kind: String,
    pub payload: Vec<u8>,
    pub attempt: u32,
    pub run_at_ms: u64,
    /// Host work to do before the engine runs the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<WorkOrder>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// Whose work it is (an entity id; empty for jobs without work).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scope: String,
}

/// Default lifetime of access tokens: 60 days (DESIGN.md §4).
pub const DEFAULT_TOKEN_TTL_SECS: u64 = 5_184_000;
/// Default number of failed logins in a row that lock an account.
pub const DEFAULT_LOGIN_MAX_FAILURES: u32 = 5;
/// Default lock duration: 15 minutes.
pub const DEFAULT_LOGIN_LOCK_SECS: u64 = 900;
/// Default minimum spacing of token requests per user.
pub const DEFAULT_TOKEN_MIN_INTERVAL_MS: u64 = 1000;

/// Default lifetime of an OAuth access token for `/mcp`: one hour.
pub const DEFAULT_OAUTH_ACCESS_TTL_SECS: u64 = 3600;

/// The defaults of `esign serve` (the `DEFAULT_*` constants).
pub fn default_settings() -> Settings {
    Settings {
        token_ttl_secs: DEFAULT_TOKEN_TTL_SECS,
        login_max_failures: DEFAULT_LOGIN_MAX_FAILURES,
        login_lock_secs: DEFAULT_LOGIN_LOCK_SECS,
        token_min_interval_ms: DEFAULT_TOKEN_MIN_INTERVAL_MS,
        base_url: "http://127.0.0.1:8080".into(),
        can_convert_word: false,
        upload_ttl_secs: DEFAULT_UPLOAD_TTL_SECS,
        eid_provider: String::new(),
        signing_certificate: String::new(),
        oauth_access_ttl_secs: DEFAULT_OAUTH_ACCESS_TTL_SECS,
        mcp_test_user: String::new(),
    }
}

/// Default lifetime of an unused upload: 48 hours (DESIGN.md §4).
pub const DEFAULT_UPLOAD_TTL_SECS: u64 = 48 * 3600;

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

/// Longest a Client ID Metadata Document fetch may take.
const CLIENT_METADATA_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// Largest Client ID Metadata Document accepted.
const CLIENT_METADATA_MAX_BYTES: usize = 64 * 1024;

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
}

/// The trap a call stops with when it must move off the tokio worker.
const MOVE_OFF_WORKER: &str = "the call reads a blob: re-run off the tokio worker";

fn data_key(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(keys::DATA.len() + key.len());
    k.extend_from_slice(keys::DATA);
    k.extend_from_slice(key);
    k
}

/// Writes `bytes` to `path` whole or not at all: into a temporary file beside it, then
/// renamed over it; the temporary file is removed when either step fails.
pub fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", random_id()));
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A random identifier for host records (events, jobs, mail, trace ids).
pub fn random_id() -> String {
    let mut b = [0u8; 12];
    getrandom::fill(&mut b).expect("OS randomness");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl store::Host for CallState {
    fn get(&mut self, key: Vec<u8>) -> wasmtime::Result<Option<Vec<u8>>> {
        self.txn
            .get(&data_key(&key))
            .map_err(wasmtime::Error::from_anyhow)
    }

    fn put(&mut self, key: Vec<u8>, value: Vec<u8>) -> wasmtime::Result<()> {
        self.puts += 1;
        if self.faults.trap_on_put == Some(self.puts) {
            wasmtime::bail!("test fault: trap on store.put #{}", self.puts);
        }
        self.txn.put(&data_key(&key), &value);
        Ok(())
    }

    fn delete(&mut self, key: Vec<u8>) -> wasmtime::Result<()> {
        self.txn.delete(&data_key(&key));
        Ok(())
    }

    fn scan(
        &mut self,
        start: Vec<u8>,
        end: Vec<u8>,
        limit: u32,
        reverse: bool,
    ) -> wasmtime::Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let entries = self
            .txn
            .scan(&data_key(&start), &data_key(&end), limit as usize, reverse)
            .map_err(wasmtime::Error::from_anyhow)?;
        Ok(entries
            .into_iter()
            .map(|(k, v)| (k[keys::DATA.len()..].to_vec(), v))
            .collect())
    }
}

impl files::Host for CallState {
    fn put(&mut self, data: Vec<u8>) -> wasmtime::Result<Result<BlobInfo, String>> {
        if self.faults.blobs_unavailable {
            return Ok(Err("test fault: blob storage unavailable".into()));
        }
        Ok(Ok(self.put_blob(&data)))
    }

    /// A blob can be megabytes, copied into the instance and out again with the answer:
    /// a call on a tokio worker stops here (the caller re-runs it on a blocking thread),
    /// so a download never holds up other connections.
    fn get(&mut self, id: String) -> wasmtime::Result<Option<Vec<u8>>> {
        if self.on_worker {
            self.needs_blocking_thread = true;
            return Err(wasmtime::Error::msg(MOVE_OFF_WORKER));
        }
        self.txn
            .get_blob(&keys::blob(&id))
            .map_err(wasmtime::Error::from_anyhow)
    }

    fn delete(&mut self, id: String) -> wasmtime::Result<()> {
        self.txn.delete(&keys::blob(&id));
        Ok(())
    }
}

impl CallState {
    /// Writes `data` as a new blob in this call's transaction.
    pub fn put_blob(&mut self, data: &[u8]) -> BlobInfo {
        let id = random_id();
        self.txn.put(&keys::blob(&id), data);
        BlobInfo {
            id,
            size: data.len() as u64,
            sha256: sha256_hex(data),
        }
    }
}

/// Lower-case hex SHA-256.
pub fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl effects::Host for CallState {
    fn emit_event(
        &mut self,
        event: effects::Event,
        deliveries: Vec<effects::Delivery>,
    ) -> wasmtime::Result<()> {
        let created_ms = now_ms();
        let record = serde_json::json!({
            "id": event.id, "kind": event.kind, "entity_id": event.entity_id,
            "user_id": event.user_id, "payload": event.payload, "created_ms": created_ms,
        });
        self.txn.put(
            &keys::timed(keys::EVENTS, created_ms, &event.id),
            &serde_json::to_vec(&record)?,
        );
        for d in deliveries {
            let row = crate::webhooks::StoredDelivery {
                id: random_id(),
                event_id: event.id.clone(),
                event: event.kind.clone(),
                subscription_id: d.subscription_id,
                entity_id: d.entity_id,
                target_url: d.target_url,
                secret: d.secret,
                body: d.body,
                attempts: 0,
                created_ms,
                first_attempt_ms: 0,
                last_error: String::new(),
            };
            self.txn.put(
                &crate::webhooks::queue_key(&row.target_url, created_ms, &row.id),
                &serde_json::to_vec(&row)?,
            );
            self.queued_deliveries = true;
        }
        Ok(())
    }

    fn cancel_deliveries(&mut self, subscription_id: String) -> wasmtime::Result<()> {
        // A marker, not a scan of the queue: the delivery worker drops the
        // subscription's rows when it reaches them.
        self.txn.put(&keys::cancelled(&subscription_id), b"");
        Ok(())
    }

    fn schedule_job(&mut self, job: effects::JobSpec) -> wasmtime::Result<String> {
        let id = random_id();
        let record = StoredJob {
            id: id.clone(),
            kind: job.kind,
            payload: job.payload,
            attempt: 1,
            run_at_ms: job.run_at_ms,
            work: job.work,
            failure: None,
            scope: job.scope,
        };
        self.txn
            .put(&keys::job(&record), &serde_json::to_vec(&record)?);
        self.scheduled_jobs = true;
        Ok(id)
    }

    fn send_mail(&mut self, mail: effects::Mail) -> wasmtime::Result<()> {
        let record = crate::mail::StoredMail {
            id: random_id(),
            to: mail.to,
            subject: mail.subject,
            body: mail.body,
            created_ms: now_ms(),
            attempts: 0,
            tag: mail.tag,
        };
        self.txn.put(
            &keys::timed(keys::MAIL, record.created_ms, &record.id),
            &serde_json::to_vec(&record)?,
        );
        self.queued_mail = true;
        Ok(())
    }

    fn send_sms(&mut self, sms: effects::Sms) -> wasmtime::Result<()> {
        let record = crate::mail::StoredMail {
            id: random_id(),
            to: sms.to,
            subject: String::new(),
            body: sms.text,
            created_ms: now_ms(),
            attempts: 0,
            tag: sms.tag,
        };
        self.txn.put(
            &keys::timed(keys::SMS, record.created_ms, &record.id),
            &serde_json::to_vec(&record)?,
        );
        self.queued_sms = true;
        Ok(())
    }
}

impl host::Host for CallState {
    fn get_settings(&mut self) -> wasmtime::Result<Settings> {
        Ok(self.shared.settings.clone())
    }

    fn hash_password(&mut self, password: String) -> wasmtime::Result<String> {
        Ok(offload(|| self.shared.passwords.hash(&password)))
    }

    fn verify_password(&mut self, password: String, hash: String) -> wasmtime::Result<bool> {
        let key = (password, hash);
        if let Some(ok) = self.verified.get(&key) {
            return Ok(*ok);
        }
        let ok = offload(|| self.shared.passwords.verify(&key.0, &key.1));
        self.verified.insert(key, ok);
        Ok(ok)
    }

    fn log_error(&mut self, message: String) -> wasmtime::Result<()> {
        self.engine_error = Some(message);
        Ok(())
    }

    fn eid_start(
        &mut self,
        session: String,
        return_url: String,
    ) -> wasmtime::Result<Result<String, String>> {
        Ok(match &self.shared.eid {
            Some(p) => p.start(&session, &return_url),
            None => Err("no eID provider is configured".into()),
        })
    }

    fn eid_finish(
        &mut self,
        session: String,
        query: String,
    ) -> wasmtime::Result<Result<types::EidIdentity, String>> {
        Ok(match &self.shared.eid {
            Some(p) => p.finish(&session, &query).map(|i| types::EidIdentity {
                name: i.name,
                subject: i.subject,
            }),
            None => Err("no eID provider is configured".into()),
        })
    }

    fn fetch_client_metadata(&mut self, url: String) -> wasmtime::Result<Result<String, String>> {
        let Some(outbound) = self.shared.outbound.clone() else {
            return Ok(Err(
                "this server fetches no client metadata documents".into()
            ));
        };
        let fetch = async move {
            match tokio::time::timeout(
                CLIENT_METADATA_TIMEOUT,
                outbound.download(&url, CLIENT_METADATA_MAX_BYTES),
            )
            .await
            {
                Ok(Ok(bytes)) => {
                    String::from_utf8(bytes).map_err(|_| "the document is not UTF-8".to_string())
                }
                Ok(Err(e)) => Err(e),
                Err(_) => Err(format!(
                    "no answer within {} s",
                    CLIENT_METADATA_TIMEOUT.as_secs()
                )),
            }
        };
        // On a runtime worker, wait for the fetch off it; without a runtime (tests of
        // the host alone), run one for the fetch.
        Ok(offload(|| match tokio::runtime::Handle::try_current() {
            Ok(h) => h.block_on(fetch),
            Err(_) => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
                .and_then(|rt| rt.block_on(fetch)),
        }))
    }

    fn verify_pdf(&mut self, data: Vec<u8>) -> wasmtime::Result<types::PdfCheck> {
        let own = self.shared.seal_certificate_sha256.clone();
        Ok(offload(|| crate::evidence::check(&data, &own)))
    }
}

impl types::Host for CallState {}

impl wall_clock::Host for CallState {
    fn now(&mut self) -> wasmtime::Result<wall_clock::Datetime> {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Ok(wall_clock::Datetime {
            seconds: d.as_secs(),
            nanoseconds: d.subsec_nanos(),
        })
    }

    fn resolution(&mut self) -> wasmtime::Result<wall_clock::Datetime> {
        Ok(wall_clock::Datetime {
            seconds: 0,
            nanoseconds: 1,
        })
    }
}

impl random::Host for CallState {
    fn get_random_bytes(&mut self, len: u64) -> wasmtime::Result<Vec<u8>> {
        if len > 1 << 20 {
            wasmtime::bail!("random bytes requested: {len}, more than 1 MiB");
        }
        let mut buf = vec![0u8; len as usize];
        getrandom::fill(&mut buf).map_err(|e| wasmtime::format_err!("OS randomness: {e}"))?;
        Ok(buf)
    }

    fn get_random_u64(&mut self) -> wasmtime::Result<u64> {
        let mut buf = [0u8; 8];
        getrandom::fill(&mut buf).map_err(|e| wasmtime::format_err!("OS randomness: {e}"))?;
        Ok(u64::from_le_bytes(buf))
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

        let component = load_component(&engine, wasm, cache_dir)?;
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
        };
        let mut store = Store::new(&self.engine, Slot(Some(state)));
        store.set_epoch_deadline(CALL_DEADLINE_TICKS);
        let result = self.pre.instantiate(&mut store).and_then(|instance| {
            let exports = Exports {
                instance,
                handle: self.handle,
                run_job: self.run_job,
            };
            f(&exports, &mut store)
        });
        let state = store.data_mut().0.take().expect("taken once");
        if on_worker {
            self.retire(store);
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
            return drop(store);
        };
        if self.retiring.fetch_add(1, Ordering::AcqRel) >= self.max_retiring {
            self.retiring.fetch_sub(1, Ordering::AcqRel);
            return drop(store);
        }
        let retiring = self.retiring.clone();
        runtime.spawn(async move {
            drop(store);
            retiring.fetch_sub(1, Ordering::AcqRel);
        });
    }
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

/// Loads the precompiled component from the cache, or compiles and caches it.
fn load_component(
    engine: &Engine,
    wasm: &[u8],
    cache_dir: Option<&Path>,
) -> anyhow::Result<Component> {
    let started = Instant::now();
    let digest = Sha256::digest(wasm);
    let name: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    let cached: Option<PathBuf> = cache_dir.map(|d| d.join(format!("engine-{name}.cwasm")));
    if let Some(path) = &cached
        && path.exists()
    {
        // SAFETY: the file is one this function wrote with `precompile_component` for the
        // same wasm bytes; wasmtime checks that it matches this engine's configuration
        // and version, and we fall back to compiling when it does not.
        match unsafe { Component::deserialize_file(engine, path) } {
            Ok(c) => {
                tracing::info!(
                    "engine component loaded from {} in {:?}",
                    path.display(),
                    started.elapsed()
                );
                return Ok(c);
            }
            Err(e) => tracing::warn!("ignoring unusable compile cache {}: {e}", path.display()),
        }
    }
    let bytes = engine
        .precompile_component(wasm)
        .map_err(anyhow::Error::from)
        .context("compiling the engine component")?;
    if let Some(path) = &cached {
        let write = std::fs::create_dir_all(path.parent().unwrap())
            .and_then(|()| write_whole(path, &bytes));
        if let Err(e) = write {
            tracing::warn!("could not write the compile cache {}: {e}", path.display());
        }
    }
    // SAFETY: `bytes` was produced just now by `precompile_component` of this engine.
    let component = unsafe { Component::deserialize(engine, &bytes)? };
    tracing::info!("engine component compiled in {:?}", started.elapsed());
    Ok(component)
}

#[cfg(test)]
mod tests {
    use super::*;

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
