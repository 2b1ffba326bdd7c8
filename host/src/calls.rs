//! Engine calls, each in one store transaction: commit when the call returns, re-run on
//! a conflict, roll back on a trap or store error and answer 500 with a `trace_id`.

use crate::bindings::{Job, JobOutcome, Request, Response};
use crate::clock::{backoff_ms, now_ms};
use crate::host_tables::jobs::{self, StoredJob};
use crate::host_tables::keys;
use crate::ids::random_id;
use crate::runtime::{Faults, Runtime, offload};
use crate::store::{CommitError, Lease, Store, Txn};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::{Notify, Semaphore};

/// How often a call is re-run after conflicts before the client gets a 503.
const MAX_ATTEMPTS: u32 = 32;

/// Request bodies up to this size are handled inline on the tokio worker; larger ones
/// (uploads) are copied and decoded on a blocking thread.
pub const INLINE_BODY: usize = 1 << 20;

/// Runs engine calls. Cheap to clone.
#[derive(Clone)]
pub struct Dispatcher {
    inner: Arc<Inner>,
}

struct Inner {
    runtime: Runtime,
    store: Arc<Store>,
    /// Bounds concurrent calls to the instance pool's size.
    permits: Semaphore,
    /// Bounds the calls that run off the tokio workers (uploads, blob reads) to the
    /// machine's cores: more would only share the CPU and slow every call down.
    heavy: Semaphore,
    /// Woken after a commit that scheduled a job.
    jobs_changed: Notify,
    /// Woken after a commit that queued mail.
    mail_queued: Notify,
    /// Woken after a commit that queued text messages.
    sms_queued: Notify,
    /// Woken after a commit that queued webhook deliveries.
    deliveries_queued: Notify,
}

/// An error body in the shape of DESIGN.md §4.
pub fn error_response(status: u16, code: &str, description: &str) -> Response {
    let body = serde_json::json!({ "error": code, "description": description, "status": status });
    Response {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: serde_json::to_vec(&body).unwrap(),
    }
}

/// The 503 of a store that could not be reached. `at_commit`: the connection was lost
/// while committing, so whether the change was applied is unknown.
fn unavailable(cause: &dyn std::fmt::Display, what: &str, at_commit: bool) -> Response {
    tracing::error!("{what}: {cause:#}");
    crate::metrics::get().store_unavailable.inc();
    let description = if at_commit {
        "the database connection was lost while committing: the change may or may not have been applied; look before you retry"
    } else {
        "the database could not be reached; nothing was changed, retry in a moment"
    };
    let mut resp = error_response(503, "unavailable", description);
    resp.headers.push(("retry-after".into(), "1".into()));
    resp
}

/// A 500 with a fresh `trace_id`, logged with its cause.
fn internal_error(cause: &dyn std::fmt::Display, what: &str) -> Response {
    let trace_id = random_id();
    tracing::error!(trace_id, "{what} failed: {cause:#}");
    let body = serde_json::json!({
        "error": "internal_error",
        "description": "an unexpected error occurred; nothing was changed. Quote the trace_id when you report it",
        "status": 500,
        "trace_id": trace_id,
    });
    Response {
        status: 500,
        headers: vec![("content-type".into(), "application/json".into())],
        body: serde_json::to_vec(&body).unwrap(),
    }
}

impl Dispatcher {
    pub fn new(runtime: Runtime, store: Arc<Store>, max_concurrent: usize) -> Dispatcher {
        Dispatcher {
            inner: Arc::new(Inner {
                runtime,
                store,
                permits: Semaphore::new(max_concurrent),
                heavy: Semaphore::new(std::thread::available_parallelism().map_or(2, |n| n.get())),
                jobs_changed: Notify::new(),
                mail_queued: Notify::new(),
                sms_queued: Notify::new(),
                deliveries_queued: Notify::new(),
            }),
        }
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.inner.store
    }

    /// Wakes this host's workers when another host sharing the store queues work
    /// (`Store::listen`), and counts the wake-ups and their delay.
    pub fn listen_for_wakeups(&self) {
        let inner = Arc::downgrade(&self.inner);
        self.inner
            .store
            .listen(Arc::new(move |kinds: &[&str], sent_ms: Option<u64>| {
                let Some(inner) = inner.upgrade() else { return };
                crate::metrics::woken(sent_ms);
                for kind in kinds {
                    match *kind {
                        "jobs" => inner.jobs_changed.notify_one(),
                        "mail" => inner.mail_queued.notify_one(),
                        "sms" => inner.sms_queued.notify_one(),
                        "deliveries" => inner.deliveries_queued.notify_one(),
                        _ => {}
                    }
                }
            }));
    }

    /// Resolves when a committed call scheduled a job.
    pub async fn jobs_changed(&self) {
        self.inner.jobs_changed.notified().await
    }

    /// Resolves when a committed call queued webhook deliveries.
    pub async fn deliveries_queued(&self) {
        self.inner.deliveries_queued.notified().await
    }

    /// Wakes the job runner (a host worker scheduled a job itself).
    pub fn notify_jobs(&self) {
        self.inner.jobs_changed.notify_one();
    }

    /// Resolves when a committed call queued mail.
    pub async fn mail_queued(&self) {
        self.inner.mail_queued.notified().await
    }

    /// Resolves when a committed call queued text messages.
    pub async fn sms_queued(&self) {
        self.inner.sms_queued.notified().await
    }

    /// Answers one request. The engine call runs inline on the current tokio worker: a
    /// call takes tens of microseconds, less than a hop to the blocking pool would cost.
    /// What can be slow leaves the worker through `block_in_place` (see
    /// `runtime::offload`), so accept loops, timers and other connections go on:
    /// a call with a body over [`INLINE_BODY`] runs off the worker from the start; a
    /// call that reads a blob stops at the read and is re-run off the worker; argon2
    /// and the commit of a call that wrote (the commit lock and the fsync) move off
    /// by themselves. A call that only read commits without the lock.
    ///
    /// On a shared store (PostgreSQL) every read waits on the network, so calls run off
    /// the workers from the start, bounded by the pool of instances; only the calls
    /// that read blobs or carry large bodies take a core-sized `heavy` slot, as on sled,
    /// so downloads never take every database connection.
    pub async fn handle(&self, req: Request, faults: Faults) -> Response {
        let permit = self.inner.permits.acquire().await.expect("never closed");
        let large = req.body.len() + req.parts.iter().map(|p| p.data.len()).sum::<usize>();
        if large <= INLINE_BODY {
            // Inline, or on a shared store off the worker at once, but either way
            // stopping at a blob read, which then waits for a heavy slot below.
            let shared = self.inner.store.shared();
            let resp = if shared {
                offload(|| self.handle_on(&req, faults, true))
            } else {
                self.handle_on(&req, faults, true)
            };
            if let Some(resp) = resp {
                return resp;
            }
        }
        // Waiting for a heavy slot holds no instance.
        drop(permit);
        let _heavy = self.inner.heavy.acquire().await.expect("never closed");
        let _permit = self.inner.permits.acquire().await.expect("never closed");
        offload(|| self.handle_blocking(&req, faults))
    }

    /// Answers one request on the current thread (used by `handle`, the admin CLI and
    /// benchmarks).
    pub fn handle_blocking(&self, req: &Request, faults: Faults) -> Response {
        self.handle_on(req, faults, false)
            .expect("only calls on a worker stop to move")
    }

    /// Answers one request; `None` when `on_worker` and the call must move off it.
    fn handle_on(&self, req: &Request, faults: Faults, on_worker: bool) -> Option<Response> {
        let mut verified = HashMap::new();
        // What the log says of the request: never a secret of its path.
        let what = || format!("{} {}", req.method, crate::logging::redact(&req.path));
        // A GET or HEAD runs read-only first (cheaper for a shared store); the few that
        // write or reach outside (a token refresh, an eID return, a client metadata
        // fetch) stop before their first write or effect and run again read-write,
        // without a pause and without using up an attempt. So does a POST to `/mcp`:
        // most of an agent's tool calls read, and one that writes runs again.
        let mut read_only = matches!(req.method.as_str(), "GET" | "HEAD")
            || (req.method == "POST" && req.path == "/mcp");
        let mut attempt = 0;
        while attempt < MAX_ATTEMPTS {
            if attempt > 0 {
                self.inner.store.pause_after_conflict(attempt);
            }
            attempt += 1;
            let txn = match read_only {
                true => self.inner.store.begin_read_only(),
                false => self.inner.store.begin(),
            };
            let (result, state) =
                self.inner
                    .runtime
                    .call(txn, faults, on_worker, verified, |b, s| {
                        b.call_handle(s, req)
                    });
            if state.needs_blocking_thread {
                return None;
            }
            verified = state.verified;
            // Begun read-only, it stopped before its first write or outside effect.
            if state.needs_read_write {
                crate::metrics::read_only_call(true);
                read_only = false;
                attempt -= 1;
                continue;
            }
            let resp = match result {
                // 503 means "nothing was done": the call's writes are dropped.
                Ok(resp) if resp.status == 503 => return Some(resp),
                Ok(resp) => resp,
                // A read found the transaction in conflict: re-run, like a failed commit.
                Err(_) if let Some(cause) = state.txn.conflict() => {
                    crate::metrics::conflict("read", cause);
                    continue;
                }
                Err(trap) if state.txn.unavailable() => {
                    return Some(unavailable(&trap, &what(), false));
                }
                Err(trap) => {
                    let what = match &state.engine_error {
                        Some(said) => format!("{} ({said})", what()),
                        None => what(),
                    };
                    return Some(internal_error(&trap, &what));
                }
            };
            let txn = state.txn;
            if read_only {
                crate::metrics::read_only_call(false);
            }
            let trips = txn.round_trips();
            let committed = if txn.is_read_only() {
                txn.commit()
            } else {
                offload(|| txn.commit())
            };
            match committed {
                Ok(_) => {
                    crate::metrics::committed(trips);
                    if state.scheduled_jobs {
                        self.inner.jobs_changed.notify_one();
                    }
                    if state.queued_mail {
                        self.inner.mail_queued.notify_one();
                    }
                    if state.queued_sms {
                        self.inner.sms_queued.notify_one();
                    }
                    if state.queued_deliveries {
                        self.inner.deliveries_queued.notify_one();
                    }
                    return Some(resp);
                }
                Err(CommitError::Conflict(cause)) => {
                    crate::metrics::conflict("commit", cause);
                    continue;
                }
                Err(CommitError::Unavailable(e)) => {
                    return Some(unavailable(&e, &format!("committing {}", what()), true));
                }
                Err(CommitError::Backend(e)) => {
                    return Some(internal_error(&e, &format!("committing {}", what())));
                }
            }
        }
        tracing::warn!("{} conflicted {MAX_ATTEMPTS} times", what());
        Some(error_response(
            503,
            "busy",
            "the request kept conflicting with concurrent changes; retry",
        ))
    }

    /// Runs the due job stored at `key` (if it is still there and `lease` still holds
    /// it) and records its outcome, all in one transaction. `prepared` is what the
    /// job's work order produced: its outcome goes to the engine and its blobs are
    /// written in the same transaction. Returns false when the job had already gone
    /// (or another host took it over).
    pub fn run_job_blocking(
        &self,
        key: &[u8],
        lease: &Lease,
        prepared: Option<&crate::file_work::Prepared>,
    ) -> anyhow::Result<bool> {
        let store = &self.inner.store;
        for attempt in 0..MAX_ATTEMPTS {
            if attempt > 0 {
                store.pause_after_conflict(attempt);
            }
            let mut txn = store.begin();
            let bytes = match read_leased(&mut txn, key, lease) {
                Ok(Some(bytes)) => bytes,
                Ok(None) => return Ok(false),
                Err(_) if let Some(cause) = txn.conflict() => {
                    crate::metrics::conflict("read", cause);
                    continue;
                }
                Err(e) => return Err(e),
            };
            if let Some(p) = prepared {
                for (id, data) in &p.blobs {
                    txn.put(&keys::blob(id), data);
                }
            }
            let stored: StoredJob = serde_json::from_slice(&bytes)?;
            let job = Job {
                id: stored.id.clone(),
                kind: stored.kind.clone(),
                payload: stored.payload.clone(),
                attempt: stored.attempt,
                outcome: prepared.map(|p| p.outcome.clone()),
            };
            let (result, state) =
                self.inner
                    .runtime
                    .call(txn, Faults::default(), false, HashMap::new(), |b, s| {
                        b.call_run_job(s, &job)
                    });
            let scheduled = result.is_ok() && state.scheduled_jobs;
            let mailed = result.is_ok() && state.queued_mail;
            let texted = result.is_ok() && state.queued_sms;
            let delivering = result.is_ok() && state.queued_deliveries;
            let txn = match result {
                Ok(outcome) => {
                    let mut txn = state.txn;
                    txn.delete(key);
                    self.record_outcome(&mut txn, stored, outcome)?;
                    txn
                }
                Err(_) if let Some(cause) = state.txn.conflict() => {
                    crate::metrics::conflict("read", cause);
                    continue;
                }
                Err(trap) => {
                    // Roll the run back; keep the job, retried later.
                    let trace_id = random_id();
                    tracing::error!(
                        trace_id,
                        job = stored.kind,
                        "job trapped: {trap:#} {}",
                        state.engine_error.as_deref().unwrap_or("")
                    );
                    // The run's transaction (and its connection) goes first.
                    drop(state);
                    let mut txn = store.begin();
                    match txn.holds(key, lease) {
                        Ok(true) => {}
                        Ok(false) => return Ok(false),
                        Err(_) if let Some(cause) = txn.conflict() => {
                            crate::metrics::conflict("read", cause);
                            continue;
                        }
                        Err(e) => return Err(e),
                    }
                    txn.delete(key);
                    let retry_at = now_ms() + backoff_ms(stored.attempt);
                    self.record_outcome(&mut txn, stored, JobOutcome::RetryAt(retry_at))?;
                    txn
                }
            };
            let trips = txn.round_trips();
            match txn.commit() {
                Ok(_) => {
                    crate::metrics::committed(trips);
                    if scheduled {
                        self.inner.jobs_changed.notify_one();
                    }
                    if mailed {
                        self.inner.mail_queued.notify_one();
                    }
                    if texted {
                        self.inner.sms_queued.notify_one();
                    }
                    if delivering {
                        self.inner.deliveries_queued.notify_one();
                    }
                    return Ok(true);
                }
                Err(CommitError::Conflict(cause)) => {
                    crate::metrics::conflict("commit", cause);
                    continue;
                }
                Err(e) => return Err(e.into_error()),
            }
        }
        anyhow::bail!("job kept conflicting")
    }

    fn record_outcome(
        &self,
        txn: &mut Txn,
        mut job: StoredJob,
        outcome: JobOutcome,
    ) -> anyhow::Result<()> {
        match outcome {
            JobOutcome::Done => {}
            JobOutcome::RetryAt(at) if job.attempt < 1000 => {
                job.attempt += 1;
                job.run_at_ms = at;
                txn.put(&jobs::key(&job), &serde_json::to_vec(&job)?);
            }
            JobOutcome::RetryAt(_) | JobOutcome::Failed(_) => {
                let why = match outcome {
                    JobOutcome::Failed(why) => why,
                    _ => "too many attempts".into(),
                };
                tracing::warn!(job = job.kind, id = job.id, "job failed for good: {why}");
                job.failure = Some(why);
                let mut key = keys::DEAD_JOBS.to_vec();
                key.extend_from_slice(job.id.as_bytes());
                txn.put(&key, &serde_json::to_vec(&job)?);
            }
        }
        Ok(())
    }
}

/// The job at `key` when `lease` still holds it.
fn read_leased(txn: &mut Txn, key: &[u8], lease: &Lease) -> anyhow::Result<Option<Vec<u8>>> {
    if !txn.holds(key, lease)? {
        return Ok(None);
    }
    txn.get(key)
}
