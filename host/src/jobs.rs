//! The job runner: runs committed jobs whose time has come, oldest first, each through
//! the engine's `run-job` in its own transaction. Jobs live in the store, so they survive
//! a restart; a job is removed in the same transaction that records its effects.

use crate::calls::{Dispatcher, now_ms};
use crate::runtime::keys;
use std::time::Duration;
use tokio::sync::watch;

/// Longest sleep between looks at the job table.
const IDLE: Duration = Duration::from_secs(30);
/// Jobs taken per look.
const BATCH: usize = 64;

/// Runs until `shutdown` turns true.
pub async fn run(dispatcher: Dispatcher, mut shutdown: watch::Receiver<bool>) {
    loop {
        let wait = match run_due(&dispatcher).await {
            Ok(wait) => wait,
            Err(e) => {
                tracing::error!("job runner: {e:#}");
                Duration::from_secs(1)
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = dispatcher.jobs_changed() => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// Runs every due job; returns how long until the next one.
async fn run_due(dispatcher: &Dispatcher) -> anyhow::Result<Duration> {
    loop {
        let now = now_ms();
        let end = keys::timed(keys::JOBS, now + 1, "");
        let due = dispatcher.store().scan_committed(keys::JOBS, &end, BATCH)?;
        if due.is_empty() {
            break;
        }
        for (key, _) in due {
            let d = dispatcher.clone();
            tokio::task::spawn_blocking(move || d.run_job_blocking(&key)).await??;
        }
    }
    keys::until_next_due(dispatcher.store(), keys::JOBS, IDLE)
}
