//! The job runner: runs committed jobs whose time has come, in two lanes, so that slow
//! host work never holds up the engine's own jobs:
//!
//! - **engine jobs** (`j/`: sending, expiry, reminders, erasure, ...), oldest first, a
//!   few at a time; each is one engine call;
//! - **host work** (`jw/`: downloads, imports, Word conversions, renders), one queue per
//!   scope (the tenant), visited in a ring (see [`crate::queues`]): a few at a time in
//!   all and fewer per scope, and a scope with work running never takes the last free
//!   slot, which is kept for a scope with none: so one tenant's long renders or stalled
//!   `file_url` downloads cannot delay another tenant's imports, and nobody's sending.
//!   Each work order runs in the sandbox ([`crate::sandbox`]) with a memory cap and a
//!   deadline; at shutdown running work is stopped and its rows stay for the next start.
//!
//! A job with a work order has its work done first ([`crate::file_work::perform`], outside
//! any transaction); then the engine's `run-job` records the outcome in one transaction
//! that also removes the job. Jobs live in the store, so they survive a restart, and a
//! job's effects commit together with its removal, so they happen once. Passes run on a
//! blocking thread.

use crate::calls::Dispatcher;
use crate::clock::now_ms;
use crate::file_work::{Performed, WorkContext, perform};
use crate::host_tables::jobs::StoredJob;
use crate::host_tables::keys;
use crate::queues::{self, Visit};
use crate::store::Lease;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};

/// Longest sleep between looks at the job tables.
const IDLE: Duration = Duration::from_secs(30);
/// Engine-job rows looked at per pass.
const BATCH: usize = 64;
/// Engine jobs running at once (beside requests: the instance pool has room for both).
pub const ENGINE_CONCURRENCY: usize = 4;
/// Jobs with host work running at once, and at once per scope.
const WORK_CONCURRENCY: usize = 4;
const WORK_PER_SCOPE: usize = 2;
/// Rows read per scope queue per pass (rows in flight are read past).
const WORK_PAGE: usize = 16;
/// Scope queues visited per pass at most.
const SCOPES_PER_PASS: usize = 10_000;

struct Shared {
    dispatcher: Dispatcher,
    work: WorkContext,
    in_flight: Mutex<HashSet<Vec<u8>>>,
    engine: Arc<Semaphore>,
    work_slots: Arc<Semaphore>,
    /// Each scope's share of the work slots, by queue name.
    scopes: Mutex<HashMap<Vec<u8>, Arc<Semaphore>>>,
    /// The scope queue the next pass starts at.
    cursor: Mutex<Vec<u8>>,
    finished: Notify,
}

/// A job to start, with the permits it holds while it runs.
struct Launch {
    key: Vec<u8>,
    lease: Lease,
    job: StoredJob,
    permits: Vec<OwnedSemaphorePermit>,
}

/// Runs until `shutdown` turns true. Jobs still running then are cut off; their rows
/// stay and run again at the next start.
pub async fn run(dispatcher: Dispatcher, work: WorkContext, mut shutdown: watch::Receiver<bool>) {
    let shared = Arc::new(Shared {
        dispatcher,
        work,
        in_flight: Mutex::default(),
        engine: Arc::new(Semaphore::new(ENGINE_CONCURRENCY)),
        work_slots: Arc::new(Semaphore::new(WORK_CONCURRENCY)),
        scopes: Mutex::default(),
        cursor: Mutex::default(),
        finished: Notify::new(),
    });
    loop {
        let s = shared.clone();
        let wait = match tokio::task::spawn_blocking(move || plan(&s)).await {
            Ok(Ok((launches, wait))) => {
                for launch in launches {
                    start(&shared, launch);
                }
                wait
            }
            Ok(Err(e)) => {
                tracing::error!("job runner: {e:#}");
                Duration::from_secs(1)
            }
            Err(e) => {
                tracing::error!("job runner: {e}");
                Duration::from_secs(1)
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shared.dispatcher.jobs_changed() => {}
            _ = shared.finished.notified() => {}
            _ = shutdown.changed() => {
                // Running work stops at its next epoch check; its rows stay.
                shared.work.sandbox.stop();
                return;
            }
        }
    }
}

/// One pass over both lanes: the due jobs not running whose lane (and scope) has room;
/// and how long until the next look is needed.
fn plan(shared: &Shared) -> anyhow::Result<(Vec<Launch>, Duration)> {
    let mut launches = Vec::new();
    match plan_into(shared, &mut launches) {
        Ok(wait) => Ok((launches, wait)),
        // The jobs claimed before the error still start: they are marked in flight.
        Err(e) => {
            tracing::error!("job runner: {e:#}");
            Ok((launches, Duration::from_secs(1)))
        }
    }
}

/// [`plan`]'s pass, adding to `launches`; the wait until the next.
fn plan_into(shared: &Shared, launches: &mut Vec<Launch>) -> anyhow::Result<Duration> {
    let store = shared.dispatcher.store();
    let now = now_ms();
    let mut wait = IDLE;
    let running = |key: &[u8]| shared.in_flight.lock().unwrap().contains(key);
    let claim = |key: &[u8]| shared.in_flight.lock().unwrap().insert(key.to_vec());

    // Engine jobs, oldest first.
    let rows = store.scan_committed(keys::JOBS, &queues::range_end(keys::JOBS), BATCH)?;
    for (key, value) in rows {
        if running(&key) {
            continue;
        }
        let at = queues::due_of(keys::JOBS, &key)?;
        if at > now {
            wait = wait.min(Duration::from_millis(at - now));
            break;
        }
        let Ok(permit) = shared.engine.clone().try_acquire_owned() else {
            break; // woken when a running job finishes
        };
        let Some(lease) = store.lease(&key)? else {
            continue; // another host runs it
        };
        claim(&key);
        launches.push(Launch {
            key,
            lease,
            job: serde_json::from_slice(&value)?,
            permits: vec![permit],
        });
    }

    // Host work, scope by scope.
    let mut cursor = std::mem::take(&mut *shared.cursor.lock().unwrap());
    let more = queues::visit_ring(
        store,
        keys::WORK_JOBS,
        &mut cursor,
        SCOPES_PER_PASS,
        |scope| {
            if shared.work_slots.available_permits() == 0 {
                return Ok(Visit::Stop);
            }
            let share = shared
                .scopes
                .lock()
                .unwrap()
                .entry(scope.to_vec())
                .or_insert_with(|| Arc::new(Semaphore::new(WORK_PER_SCOPE)))
                .clone();
            if share.available_permits() == 0 {
                return Ok(Visit::Next); // this scope has its share running
            }
            let queue = queues::queue(keys::WORK_JOBS, scope);
            for (key, value) in
                store.scan_committed(&queue, &queues::range_end(&queue), WORK_PAGE)?
            {
                if running(&key) {
                    continue;
                }
                let at = queues::due_of(&queue, &key)?;
                if at > now {
                    wait = wait.min(Duration::from_millis(at - now));
                    break;
                }
                // A scope with work running leaves the last free slot to one with
                // none, so that two tenants' long renders never hold every slot.
                let running_here = share.available_permits() < WORK_PER_SCOPE;
                if running_here && shared.work_slots.available_permits() <= 1 {
                    return Ok(Visit::Next);
                }
                let Ok(mine) = share.clone().try_acquire_owned() else {
                    break;
                };
                let Ok(slot) = shared.work_slots.clone().try_acquire_owned() else {
                    return Ok(Visit::Stop); // the next pass starts at this scope
                };
                let Some(lease) = store.lease(&key)? else {
                    continue; // another host works on it
                };
                claim(&key);
                launches.push(Launch {
                    key,
                    lease,
                    job: serde_json::from_slice(&value)?,
                    permits: vec![slot, mine],
                });
            }
            Ok(Visit::Next)
        },
    )?;
    *shared.cursor.lock().unwrap() = cursor;
    if more {
        wait = Duration::ZERO;
    }
    Ok(store.poll_cap(wait))
}

/// Runs one job as a task: its work, then its engine call on a blocking thread.
fn start(shared: &Arc<Shared>, launch: Launch) {
    let s = shared.clone();
    tokio::spawn(async move {
        let Launch {
            key,
            lease,
            job,
            permits,
        } = launch;
        let prepared = match &job.work {
            Some(order) => {
                match queues::renewing(s.dispatcher.store(), &key, &lease, perform(&s.work, order))
                    .await
                {
                    Performed::Done(prepared) => Some(*prepared),
                    // Shutting down: the row stays (its lease lapses) and runs again at
                    // the next start.
                    Performed::Stopped => {
                        tracing::info!(job = job.kind, id = job.id, "work stopped for shutdown");
                        s.in_flight.lock().unwrap().remove(&key);
                        drop(permits);
                        return;
                    }
                }
            }
            None => None,
        };
        let (d, k, l) = (s.dispatcher.clone(), key.clone(), lease.clone());
        let result =
            tokio::task::spawn_blocking(move || d.run_job_blocking(&k, &l, prepared.as_ref()))
                .await;
        let failed = !matches!(result, Ok(Ok(_)));
        match result {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::error!(job = job.kind, id = job.id, "job run failed: {e:#}"),
            Err(e) => tracing::error!(job = job.kind, id = job.id, "job run panicked: {e}"),
        }
        if failed {
            // Leave the row for a later pass, without spinning on it.
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        s.in_flight.lock().unwrap().remove(&key);
        drop(permits);
        s.finished.notify_one();
    });
}
