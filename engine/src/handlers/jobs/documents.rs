//! The document jobs: recording an import, recording a render (which finishes a seal,
//! send, revision or refresh), scheduled sending, expiry, erasing deleted documents,
//! and reminders. Each runs in one transaction with its effects; each reads its payload
//! and asks one domain verb.

use crate::base::api::{self, Job, JobOutcome};
use crate::base::cx::Cx;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::{job_kinds, work_orders};
use crate::domain::dates::{self, Reminder};
use crate::domain::deletion::{self, Erase};
use crate::domain::{bounces, completion, imports, rendered as renders};

/// The outcome of a job that runs again at `at`, if any; else done.
fn done_or_retry(at: Option<u64>) -> JobOutcome {
    match at {
        Some(at) => api::JobOutcome::RetryAt(at),
        None => api::JobOutcome::Done,
    }
}

/// Job `doc.import`: the files are imported (or one failed): `importing` → `draft`
/// (`archived` for `doc.import-archive` when every file imported).
/// A failure keeps the pages of the files before it, none from it or later files, and
/// emails the owner.
pub fn imported(cx: &mut Cx, job: &Job) -> JobOutcome {
    let id = String::from_utf8_lossy(&job.payload).into_owned();
    let Some(work_orders::WorkOutcome::Import(results)) = &job.outcome else {
        return api::JobOutcome::Failed("import job without an import outcome".into());
    };
    let archive = job.kind == job_kinds::DOC_IMPORT_ARCHIVE;
    imports::imported(cx, &id, archive, results);
    api::JobOutcome::Done
}

/// Job [`job_kinds::PREVIEWS`] (payload: the owner, `doc:{id}` or `template:{id}`):
/// keeps the pictures of the owner's content pages; an owner gone meanwhile gets none,
/// and a file that cannot be pictured has none.
pub fn previews_made(cx: &mut Cx, job: &Job) -> JobOutcome {
    let owner = String::from_utf8_lossy(&job.payload).into_owned();
    let Some(work_orders::WorkOutcome::Render(outcome)) = &job.outcome else {
        return api::JobOutcome::Failed("previews without a render outcome".into());
    };
    let Ok(file) = outcome else {
        return api::JobOutcome::Done;
    };
    renders::previews_back(cx, &owner, file);
    api::JobOutcome::Done
}

/// Job `doc.render` (payload `{id}:{seq}`): records the final PDF and finishes what the
/// render was for.
pub fn rendered(cx: &mut Cx, job: &Job) -> JobOutcome {
    let payload = String::from_utf8_lossy(&job.payload).into_owned();
    let Some((id, seq)) = payload.split_once(':') else {
        return api::JobOutcome::Failed("bad render payload".into());
    };
    let Some(work_orders::WorkOutcome::Render(result)) = &job.outcome else {
        return api::JobOutcome::Failed("render job without a render outcome".into());
    };
    let seq: u32 = seq.parse().unwrap_or(0);
    done_or_retry(renders::rendered(cx, id, seq, result, job.attempt))
}

/// Job `doc.scheduled-send`: a scheduled document's time has come.
pub fn scheduled_send(cx: &mut Cx, job: &Job) -> JobOutcome {
    let id = String::from_utf8_lossy(&job.payload).into_owned();
    done_or_retry(dates::scheduled_send(cx, &id))
}

/// Job `doc.expire`: an active document past its expiration date becomes `expired`.
pub fn expire(cx: &mut Cx, job: &Job) -> JobOutcome {
    let id = String::from_utf8_lossy(&job.payload).into_owned();
    dates::expire(cx, &id);
    api::JobOutcome::Done
}

/// Job `doc.erase`: a permanently deleted document's log, comments and files.
pub fn erase(cx: &mut Cx, job: &Job) -> JobOutcome {
    let Ok(e) = serde_json::from_slice::<Erase>(&job.payload) else {
        return api::JobOutcome::Failed("bad erase payload".into());
    };
    deletion::erase(cx, &e);
    api::JobOutcome::Done
}

/// Job `doc.remind`: scheduled (`ids`, `message`) or automatic (`auto`) reminders.
pub fn remind_job(cx: &mut Cx, job: &Job) -> JobOutcome {
    let Ok(p) = serde_json::from_slice::<serde_json::Value>(&job.payload) else {
        return api::JobOutcome::Failed("bad reminder payload".into());
    };
    let ids: Vec<String> = p["ids"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let reminder = Reminder {
        doc: p["doc"].as_str().unwrap_or("").to_string(),
        auto: p["auto"].as_bool().unwrap_or(false),
        ids,
        message: p["message"].as_str().unwrap_or("").to_string(),
        sms: p["sms"].as_bool().unwrap_or(false),
    };
    done_or_retry(dates::remind(cx, reminder))
}

/// Job `mail.bounced` (payload `{tag}\n{reason}`): a recipient's address was rejected
/// for good. The recipient becomes hard-bounced, and so does a document that is out
/// with recipients; `document.hardbounced` is recorded and the owner told. Correct the
/// address (`PUT .../recipients/{id}`) and send to the recipient again.
pub fn bounced(cx: &mut Cx, job: &Job) -> JobOutcome {
    let text = String::from_utf8_lossy(&job.payload).into_owned();
    let (tag, reason) = text.split_once('\n').unwrap_or((text.as_str(), ""));
    if let Some((doc_id, rid)) = tag
        .strip_prefix("recipient:")
        .and_then(|rest| rest.split_once(':'))
    {
        bounces::bounced(cx, doc_id, rid, reason);
    } else if let Some((doc_id, to)) = tag
        .strip_prefix("completion:")
        .and_then(|rest| rest.split_once(':'))
    {
        completion::bounced(cx, doc_id, to, reason);
    }
    api::JobOutcome::Done
}
