//! Jobs the webhook delivery worker schedules: a dead letter, a target that is gone.

use crate::base::api::{self, Job, JobOutcome};
use crate::base::cx::Cx;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::new_id;
use crate::domain::webhooks::{
    DeadReport, Subscription, dead_body_key, dead_letter_key, disable, sub_key, tell_owner,
};

/// Job [`job_kinds::WEBHOOK_DEAD`]: records a dead letter (and the body its delivery
/// carried, when the host sent it), visible in `/v1/subscriptions/errors` and sent again
/// by `POST /v1/subscriptions/errors/{id}/retry`, and tells the owner.
pub fn dead(cx: &mut Cx, job: &Job) -> JobOutcome {
    let Ok(DeadReport {
        letter: mut d,
        body,
    }) = serde_json::from_slice(&job.payload)
    else {
        return api::JobOutcome::Failed("bad dead-letter payload".into());
    };
    d.failed_ms = cx.now();
    let error = format!("{:016x}{}", d.failed_ms, new_id(cx));
    cx.save(&dead_letter_key(&d.entity_id, &error), &d);
    if !body.is_empty() {
        cx.p.put(&dead_body_key(&d.entity_id, &error), body.as_bytes());
    }
    if let Some(mut s) = cx.load::<Subscription>(&sub_key(&d.subscription_id)) {
        s.dead_letters += 1;
        cx.save(&sub_key(&s.id), &s);
        let subject = format!("Webhook delivery to {} failed", s.target_url);
        let body = format!(
            "The {} event {} could not be delivered to {} after {} attempts.\n\nLast error: {}\n\nGET /v1/subscriptions/errors lists every failed delivery.\n",
            d.event, d.event_id, s.target_url, d.attempts, d.last_error
        );
        tell_owner(cx, &s, subject, body);
    }
    api::JobOutcome::Done
}

/// Job [`job_kinds::WEBHOOK_GONE`]: the target answered 410 Gone: the subscription is disabled and its
/// queued deliveries dropped.
pub fn gone(cx: &mut Cx, job: &Job) -> JobOutcome {
    let id = String::from_utf8_lossy(&job.payload).into_owned();
    let Some(s) = cx.load::<Subscription>(&sub_key(&id)) else {
        return api::JobOutcome::Done;
    };
    if s.active {
        disable(cx, s, "the target answered 410 Gone");
    }
    api::JobOutcome::Done
}
