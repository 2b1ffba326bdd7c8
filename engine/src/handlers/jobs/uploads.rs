//! Jobs of uploads: an unused upload expires; a `file_url` download is back.

use crate::base::api::{self, Job, JobOutcome};
use crate::base::cx::Cx;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::work_orders;
use crate::domain::uploads;

/// Job [`job_kinds::UPLOAD_EXPIRE`].
pub fn expire(cx: &mut Cx, job: &Job) -> JobOutcome {
    let id = String::from_utf8_lossy(&job.payload).into_owned();
    match uploads::expire(cx, &id) {
        Some(at) => api::JobOutcome::RetryAt(at),
        None => api::JobOutcome::Done,
    }
}

/// Job [`job_kinds::UPLOAD_FETCH`]: records the downloaded file (or why it failed).
pub fn fetched(cx: &mut Cx, job: &Job) -> JobOutcome {
    let id = String::from_utf8_lossy(&job.payload).into_owned();
    let Some(work_orders::WorkOutcome::Fetch(result)) = job.outcome.clone() else {
        return api::JobOutcome::Failed("fetch job without a fetch outcome".into());
    };
    uploads::fetched(cx, &id, result);
    api::JobOutcome::Done
}
