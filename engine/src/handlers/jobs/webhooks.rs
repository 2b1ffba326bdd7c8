//! Jobs the webhook delivery worker schedules: a dead letter, a target that is gone.

use crate::base::api::{self, Job, JobOutcome};
use crate::base::cx::Cx;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::webhooks::{self, DeadReport};

/// Job [`job_kinds::WEBHOOK_DEAD`]: records a dead letter (and the body its delivery
/// carried, when the host sent it), visible in `/v1/subscriptions/errors` and sent again
/// by `POST /v1/subscriptions/errors/{id}/retry`, and tells the owner.
pub fn dead(cx: &mut Cx, job: &Job) -> JobOutcome {
    let Ok(report) = serde_json::from_slice::<DeadReport>(&job.payload) else {
        return api::JobOutcome::Failed("bad dead-letter payload".into());
    };
    webhooks::record_dead(cx, report);
    api::JobOutcome::Done
}

/// Job [`job_kinds::WEBHOOK_GONE`]: the target answered 410 Gone: the subscription is disabled and its
/// queued deliveries dropped.
pub fn gone(cx: &mut Cx, job: &Job) -> JobOutcome {
    let id = String::from_utf8_lossy(&job.payload).into_owned();
    webhooks::target_gone(cx, &id);
    api::JobOutcome::Done
}
