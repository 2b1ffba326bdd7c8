//! The job table: every kind of job the engine schedules and its handler, as
//! [`crate::router::ROUTES`] is the table of routes. A kind missing here would fail
//! every time it came due; the test below keeps this table and
//! [`crate::base::job_kinds::ALL`] equal.

use crate::base::api::{Job, JobOutcome};
use crate::base::cx::Cx;
use crate::base::job_kinds::*;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::handlers::documents::bulk_sends;
use crate::handlers::jobs::{accounts, documents, templates, uploads, webhooks};

/// What runs a due job of one kind, in the job's transaction.
pub type JobHandler = fn(&mut Cx, &Job) -> JobOutcome;

/// Every job kind and its handler.
pub const JOBS: &[(&str, JobHandler)] = &[
    (TOKEN_PURGE, accounts::purge_token),
    (OAUTH_FORGET, accounts::forget),
    (DOWNLOAD_LINK_FORGET, accounts::forget_link),
    (DOC_IMPORT, documents::imported),
    (DOC_IMPORT_ARCHIVE, documents::imported),
    (DOC_RENDER, documents::rendered),
    (DOC_SCHEDULED_SEND, documents::scheduled_send),
    (DOC_EXPIRE, documents::expire),
    (DOC_REMIND, documents::remind_job),
    (DOC_ERASE, documents::erase),
    (UPLOAD_EXPIRE, uploads::expire),
    (UPLOAD_FETCH, uploads::fetched),
    (TEMPLATE_IMPORT, templates::imported),
    (PREVIEWS, documents::previews_made),
    (MAIL_BOUNCED, documents::bounced),
    (WEBHOOK_DEAD, webhooks::dead),
    (WEBHOOK_GONE, webhooks::gone),
    (BULK_SEND, bulk_sends::send_job),
];

/// Runs `job` with the handler of its kind; an unknown kind fails the job.
pub(crate) fn run(cx: &mut Cx, job: &Job) -> JobOutcome {
    match JOBS.iter().find(|(kind, _)| *kind == job.kind) {
        Some((_, handler)) => handler(cx, job),
        None => JobOutcome::Failed(format!("unknown job kind {:?}", job.kind)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_one_handler() {
        let mut table: Vec<&str> = JOBS.iter().map(|(k, _)| *k).collect();
        table.sort_unstable();
        let len = table.len();
        table.dedup();
        assert_eq!(table.len(), len, "a kind is in the job table twice");
        let mut kinds: Vec<&str> = ALL.to_vec();
        kinds.sort_unstable();
        assert_eq!(table, kinds, "the job table and job_kinds::ALL differ");
    }
}
