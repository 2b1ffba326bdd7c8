//! The job of templates: a template's file is imported (`templates::imported`).

use crate::base::api::{self, Job, JobOutcome};
use crate::base::cx::Cx;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::templates;

/// Job [`job_kinds::TEMPLATE_IMPORT`].
pub fn imported(cx: &mut Cx, job: &Job) -> JobOutcome {
    let id = String::from_utf8_lossy(&job.payload).into_owned();
    match templates::imported(cx, &id, job.outcome.as_ref()) {
        Ok(()) => api::JobOutcome::Done,
        Err(why) => api::JobOutcome::Failed(why.into()),
    }
}
