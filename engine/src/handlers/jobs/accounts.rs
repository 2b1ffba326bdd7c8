//! Jobs about accounts and their credentials: expired tokens, OAuth records and
//! download links are forgotten.

use crate::base::api::{self, Job, JobOutcome};
use crate::base::cx::Cx;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::accounts::{Token, token_key};
use crate::domain::auth::PURGE_GRACE_MS;
use crate::domain::downloads::link_key;

/// Job [`job_kinds::TOKEN_PURGE`]: forgets a token record once its grace period is over.
pub fn purge_token(cx: &mut Cx, job: &Job) -> JobOutcome {
    let payload = job.payload.as_slice();
    let Ok(hash) = core::str::from_utf8(payload) else {
        return api::JobOutcome::Failed("token hash is not UTF-8".into());
    };
    let key = token_key(hash);
    match cx.load::<Token>(&key) {
        Some(token) if token.expires_ms + PURGE_GRACE_MS > cx.now() => {
            api::JobOutcome::RetryAt(token.expires_ms + PURGE_GRACE_MS)
        }
        Some(_) => {
            cx.p.delete(&key);
            api::JobOutcome::Done
        }
        None => api::JobOutcome::Done,
    }
}

/// Job [`job_kinds::DOWNLOAD_LINK_FORGET`]: deletes an expired link.
pub fn forget_link(cx: &mut Cx, job: &Job) -> JobOutcome {
    let payload = job.payload.as_slice();
    if let Ok(hash) = core::str::from_utf8(payload) {
        cx.p.delete(&link_key(hash));
    }
    api::JobOutcome::Done
}

/// Job [`job_kinds::OAUTH_FORGET`]: deletes an expired OAuth record.
pub fn forget(cx: &mut Cx, job: &Job) -> JobOutcome {
    let payload = job.payload.as_slice();
    let allowed = [&b"oareq/"[..], b"oacode/", b"oat/", b"oart/", b"mcps/"];
    if allowed.iter().any(|p| payload.starts_with(p)) {
        cx.p.delete(payload);
        api::JobOutcome::Done
    } else {
        api::JobOutcome::Failed("not an OAuth record key".into())
    }
}
