//! The jobs table: a job the engine scheduled (`effects.schedule-job`), queued until it is
//! due under `j/`, or (with host work) in its scope's queue under `jw/`.

use crate::bindings::{WorkOrder, effects};
use crate::host_tables::keys::{JOBS, WORK_JOBS, timed};
use crate::ids::random_id;
use crate::queues;
use crate::store::Txn;

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

/// Where a job is queued: with a work order in its scope's queue, else in `j/`.
pub fn key(job: &StoredJob) -> Vec<u8> {
    match job.work {
        Some(_) => queues::key(
            WORK_JOBS,
            &queues::name_of(&job.scope),
            job.run_at_ms,
            &job.id,
        ),
        None => timed(JOBS, job.run_at_ms, &job.id),
    }
}

/// Queues a job the engine scheduled, in the call's transaction; its id.
pub fn queue(txn: &mut Txn, job: effects::JobSpec) -> anyhow::Result<String> {
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
    txn.put(&key(&record), &serde_json::to_vec(&record)?);
    Ok(id)
}
