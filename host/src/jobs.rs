//! The job runner: runs committed jobs whose time has come, oldest first, a few at a
//! time. A job with a work order has its work done first ([`crate::work::perform`],
//! outside any transaction); then the engine's `run-job` records the outcome in one
//! transaction that also removes the job. Jobs live in the store, so they survive a
//! restart, and a job's effects commit together with its removal, so they happen once.

use crate::calls::{Dispatcher, now_ms};
use crate::runtime::{StoredJob, keys};
use crate::work::{WorkContext, perform};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, Semaphore, watch};

/// Longest sleep between looks at the job table.
const IDLE: Duration = Duration::from_secs(30);
/// Rows looked at per pass.
const BATCH: usize = 64;
/// Jobs running at once (work such as a Word conversion can take seconds).
const CONCURRENCY: usize = 4;

/// Runs until `shutdown` turns true. Jobs still running then are cut off; their rows
/// stay and run again at the next start.
pub async fn run(dispatcher: Dispatcher, work: WorkContext, mut shutdown: watch::Receiver<bool>) {
    let in_flight: Arc<Mutex<HashSet<Vec<u8>>>> = Default::default();
    let permits = Arc::new(Semaphore::new(CONCURRENCY));
    let finished = Arc::new(Notify::new());
    loop {
        let wait = match launch_due(&dispatcher, &work, &in_flight, &permits, &finished) {
            Ok(wait) => wait,
            Err(e) => {
                tracing::error!("job runner: {e:#}");
                Duration::from_secs(1)
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = dispatcher.jobs_changed() => {}
            _ = finished.notified() => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// Starts every due job that is not already running, while permits last; returns how
/// long until the next look is needed.
fn launch_due(
    dispatcher: &Dispatcher,
    work: &WorkContext,
    in_flight: &Arc<Mutex<HashSet<Vec<u8>>>>,
    permits: &Arc<Semaphore>,
    finished: &Arc<Notify>,
) -> anyhow::Result<Duration> {
    let mut end = keys::JOBS.to_vec();
    end.push(0xff);
    let rows = dispatcher.store().scan_committed(keys::JOBS, &end, BATCH)?;
    let now = now_ms();
    for (key, value) in rows {
        if in_flight.lock().unwrap().contains(&key) {
            continue;
        }
        let at = u64::from_be_bytes(key[keys::JOBS.len()..keys::JOBS.len() + 8].try_into()?);
        if at > now {
            return Ok(Duration::from_millis(at - now).min(IDLE));
        }
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            return Ok(IDLE); // woken when a running job finishes
        };
        let job: StoredJob = serde_json::from_slice(&value)?;
        in_flight.lock().unwrap().insert(key.clone());
        let (d, w, flight, done) = (
            dispatcher.clone(),
            work.clone(),
            in_flight.clone(),
            finished.clone(),
        );
        tokio::spawn(async move {
            let prepared = match &job.work {
                Some(order) => Some(perform(&w, order).await),
                None => None,
            };
            let k = key.clone();
            let result =
                tokio::task::spawn_blocking(move || d.run_job_blocking(&k, prepared.as_ref()))
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
            flight.lock().unwrap().remove(&key);
            drop(permit);
            done.notify_one();
        });
    }
    Ok(IDLE)
}
