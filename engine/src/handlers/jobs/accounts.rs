//! Jobs about accounts and their credentials: expired tokens, OAuth records and
//! download links are forgotten (`domain::forgetting`).

use crate::base::api::{self, Job, JobOutcome};
use crate::base::cx::Cx;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::forgetting;

/// Job [`job_kinds::TOKEN_PURGE`]: forgets a token record once its grace period is over.
pub fn purge_token(cx: &mut Cx, job: &Job) -> JobOutcome {
    let Ok(hash) = core::str::from_utf8(&job.payload) else {
        return api::JobOutcome::Failed("token hash is not UTF-8".into());
    };
    match forgetting::purge_token(cx, hash) {
        Some(at) => api::JobOutcome::RetryAt(at),
        None => api::JobOutcome::Done,
    }
}

/// Job [`job_kinds::DOWNLOAD_LINK_FORGET`]: deletes an expired link.
pub fn forget_link(cx: &mut Cx, job: &Job) -> JobOutcome {
    if let Ok(hash) = core::str::from_utf8(&job.payload) {
        forgetting::forget_link(cx, hash);
    }
    api::JobOutcome::Done
}

/// Job [`job_kinds::OAUTH_FORGET`]: deletes an expired OAuth record.
pub fn forget(cx: &mut Cx, job: &Job) -> JobOutcome {
    if forgetting::forget_oauth(cx, &job.payload) {
        api::JobOutcome::Done
    } else {
        api::JobOutcome::Failed("not an OAuth record key".into())
    }
}
