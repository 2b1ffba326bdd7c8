//! The document jobs: recording an import, recording a render (which finishes a seal,
//! send, revision or refresh), scheduled sending, expiry, erasing deleted documents,
//! and reminders. Each runs in one transaction with its effects.

use crate::base::api::{self, Job, JobOutcome};
use crate::base::cx::Cx;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, iso8601, new_id};
use crate::base::{job_kinds, work};
use crate::domain::blobs::{self, owner_of};
use crate::domain::deletion::Erase;
use crate::domain::document::{
    self, DocFile, Document, FinalPdf, comments_prefix, load_doc, log_prefix, store_doc,
};
use crate::domain::events::emit_and_log;
use crate::domain::rendering::request_render;
use crate::domain::sending::{self, finish_send, remind, schedule_expiry, send_revision};
use crate::domain::trail::{self, log};
use crate::domain::{
    custom_data, evidence, fields, identity, links, notify, page_views, pages, previews,
    signatures, templates,
};
use serde_json::json;

/// Job `doc.import`: the files are imported (or one failed): `importing` → `draft`
/// (`archived` for `doc.import-archive` when every file imported).
/// A failure keeps the pages of the files before it, none from it or later files, and
/// emails the owner.
#[expect(
    clippy::too_many_lines,
    reason = "older than the 70-line rule (issue 49)"
)]
pub fn imported(cx: &mut Cx, job: &Job) -> JobOutcome {
    let id = String::from_utf8_lossy(&job.payload).into_owned();
    let Some(work::WorkOutcome::Import(results)) = &job.outcome else {
        return api::JobOutcome::Failed("import job without an import outcome".into());
    };
    let doc = load_doc(cx, &id).filter(|d| d.status == document::Status::Importing);
    let Some(mut doc) = doc else {
        // Deleted or changed meanwhile: drop what the work made.
        for r in results.iter().flatten() {
            forget_unheld(cx, r);
        }
        return api::JobOutcome::Done;
    };
    let before = doc.clone();
    let sources = core::mem::take(&mut doc.sources);
    let mut failure = None;
    for (i, result) in results.iter().enumerate() {
        match (result, &failure) {
            (Ok(file), None) => {
                blobs::hold(cx, &file.blob, &owner_of(&id));
                let name = sources
                    .get(i)
                    .map_or_else(|| "file".into(), |s| s.name.clone());
                doc.files.push(DocFile {
                    id: new_id(cx),
                    name,
                    blob: file.blob.clone(),
                    size: file.size,
                    sha256: file.sha256.clone(),
                    pages: file.pages.iter().map(|p| (p.width, p.height)).collect(),
                });
                if let Some(d) = &file.downloaded {
                    // A downloaded Word file, now converted (a PDF is held above).
                    blobs::drop_unused(cx, &d.id);
                }
            }
            (Ok(file), Some(_)) => forget_unheld(cx, file),
            (Err(f), None) => failure = Some(f.clone()),
            (Err(_), Some(_)) => {}
        }
    }
    // A file given inline (not an upload) is held by this document from its create
    // (`store_inline`) until here: released unless it is one of the files now.
    for s in &sources {
        if s.upload_id.is_none()
            && let Some(b) = &s.blob
            && !doc.files.iter().any(|f| &f.blob == b)
        {
            blobs::release(cx, b, &owner_of(&id));
        }
    }
    doc.status = document::Status::Draft;
    let actor = trail::Actor::system();
    match failure {
        None => {
            let archive = job.kind == job_kinds::DOC_IMPORT_ARCHIVE;
            if archive {
                doc.status = document::Status::Archived;
            }
            let pages = doc.page_count();
            let detail = format!(
                "{} file(s), {pages} page(s){}",
                doc.files.len(),
                if archive { "; archived" } else { "" }
            );
            emit_and_log(
                cx,
                &mut doc,
                &actor,
                "document.imported",
                "imported",
                detail,
                json!({"page_count": pages}),
            );
            if doc.flags.is_automatic_sending {
                let sender = doc.sender.clone();
                if let Err(e) = sending::start_send(cx, &mut doc, &actor, sender) {
                    log(
                        cx,
                        &mut doc,
                        &actor,
                        "automatic_send_failed",
                        e.description.clone(),
                        None,
                    );
                    notify::owner_notice(
                        cx,
                        &doc,
                        format!("\"{}\" was not sent automatically", doc.name),
                        format!(
                            "The document was imported but could not be sent: {}",
                            e.description
                        ),
                    );
                }
            }
        }
        Some(f) => {
            doc.import_error = Some(f.message.clone());
            log(
                cx,
                &mut doc,
                &actor,
                "import_failed",
                f.message.clone(),
                None,
            );
            notify::owner_notice(
                cx,
                &doc,
                format!("\"{}\" could not be imported", doc.name),
                format!(
                    "A file of your document could not be imported: {}\n\nThe document is a draft \
                     without the pages of that file and of any file after it.",
                    f.message
                ),
            );
        }
    }
    let sources: Vec<String> = doc.files.iter().map(|f| f.blob.clone()).collect();
    previews::request(cx, &owner_of(&id), &doc.entity_id, sources);
    store_doc(cx, Some(&before), &mut doc);
    api::JobOutcome::Done
}

/// Job [`job_kinds::PREVIEWS`] (payload: the owner, `doc:{id}` or `template:{id}`):
/// keeps the pictures of the owner's content pages; an owner gone meanwhile gets none,
/// and a file that cannot be pictured has none.
pub fn previews_made(cx: &mut Cx, job: &Job) -> JobOutcome {
    let owner = String::from_utf8_lossy(&job.payload).into_owned();
    let Some(work::WorkOutcome::Render(outcome)) = &job.outcome else {
        return api::JobOutcome::Failed("previews without a render outcome".into());
    };
    let Ok(file) = outcome else {
        return api::JobOutcome::Done;
    };
    let pages = if let Some(id) = owner.strip_prefix("doc:") {
        load_doc(cx, id).map(|d| d.page_count())
    } else if let Some(id) = owner.strip_prefix("template:") {
        templates::load(cx, id)
            .filter(|t| !t.trashed)
            .and_then(|t| t.file.map(|f| f.pages.len()))
    } else {
        None
    };
    previews::record(cx, &owner, file, pages);
    api::JobOutcome::Done
}

/// Drops the blobs of an import result that is not kept, unless another record (an
/// upload, a template, another document) holds them: a PDF source is its own result.
fn forget_unheld(cx: &mut Cx, file: &work::ImportedFile) {
    blobs::drop_unused(cx, &file.blob);
    if let Some(d) = &file.downloaded {
        blobs::drop_unused(cx, &d.id);
    }
}

/// Job `doc.render` (payload `{id}:{seq}`): records the final PDF and finishes what the
/// render was for.
#[expect(
    clippy::too_many_lines,
    reason = "older than the 70-line rule (issue 49)"
)]
pub fn rendered(cx: &mut Cx, job: &Job) -> JobOutcome {
    let payload = String::from_utf8_lossy(&job.payload).into_owned();
    let Some((id, seq)) = payload.split_once(':') else {
        return api::JobOutcome::Failed("bad render payload".into());
    };
    let Some(work::WorkOutcome::Render(result)) = &job.outcome else {
        return api::JobOutcome::Failed("render job without a render outcome".into());
    };
    let seq: u32 = seq.parse().unwrap_or(0);
    let current = load_doc(cx, id).filter(|d| d.pending.as_ref().is_some_and(|p| p.seq == seq));
    let Some(mut doc) = current else {
        // Superseded, cancelled or deleted: the PDF and its images are not needed.
        if let Ok(file) = result {
            drop_rendered(cx, file);
        }
        return api::JobOutcome::Done;
    };
    let before = doc.clone();
    let pending = doc.pending.take().expect("checked above");
    let actor = trail::Actor::system();
    if pending.purpose == document::RenderPurpose::Complete {
        return sealed(cx, before, doc, pending, job, result);
    }
    let file = match result {
        Ok(file) => file,
        Err(f) => {
            if matches!(
                doc.status,
                document::Status::Processing | document::Status::Scheduled
            ) {
                doc.status = document::Status::Draft;
            }
            log(
                cx,
                &mut doc,
                &actor,
                "render_failed",
                f.message.clone(),
                None,
            );
            notify::owner_notice(
                cx,
                &doc,
                format!("\"{}\" could not be prepared", doc.name),
                format!("Its PDF could not be generated: {}", f.message),
            );
            store_doc(cx, Some(&before), &mut doc);
            return api::JobOutcome::Done;
        }
    };
    let now = cx.now();
    keep_final(cx, &mut doc, file);
    let hash = file.content_sha256.clone();
    match pending.purpose {
        document::RenderPurpose::Seal => {
            doc.status = document::Status::Sealed;
            schedule_expiry(cx, &doc); // a sealed document is out: it expires too
            emit_and_log(
                cx,
                &mut doc,
                &actor,
                "document.sealed",
                "sealed",
                format!("sealed; content SHA-256 {hash}"),
                json!({}),
            );
        }
        document::RenderPurpose::Send => finish_send(cx, &mut doc, &actor, &hash),
        document::RenderPurpose::Revision { send } => {
            if let Some(r) = doc.revisions.last_mut() {
                r.sealed_ms = Some(now);
                r.content_sha256 = Some(hash.clone());
            }
            let n = doc.revisions.len();
            log(
                cx,
                &mut doc,
                &actor,
                "revision_sealed",
                format!("revision {n}; content SHA-256 {hash}"),
                None,
            );
            if send {
                let message = pending.message.clone();
                send_revision(cx, &mut doc, &actor, &message);
            }
        }
        document::RenderPurpose::Complete => unreachable!("handled by sealed()"),
        document::RenderPurpose::Refresh => {
            log(
                cx,
                &mut doc,
                &actor,
                "rendered",
                format!("PDF rendered again; content SHA-256 {hash}"),
                None,
            );
        }
    }
    store_doc(cx, Some(&before), &mut doc);
    api::JobOutcome::Done
}

/// Deletes the blobs of a rendered file that is not kept: the PDF and its page images.
fn drop_rendered(cx: &mut Cx, file: &work::RenderedFile) {
    cx.p.delete_blob(&file.blob);
    for img in &file.page_images {
        cx.p.delete_blob(&img.blob);
    }
}

/// Makes `file` the document's final PDF (with its page images), releasing the one
/// it replaces.
fn keep_final(cx: &mut Cx, doc: &mut Document, file: &work::RenderedFile) {
    let owner = owner_of(&doc.id);
    blobs::hold(cx, &file.blob, &owner);
    if let Some(old) = doc.final_pdf.take() {
        blobs::release(cx, &old.blob, &owner);
    }
    pages::replace(cx, &doc.id, &file.blob, &file.page_images);
    doc.final_pdf = Some(FinalPdf {
        blob: file.blob.clone(),
        size: file.size,
        sha256: file.sha256.clone(),
        content_sha256: file.content_sha256.clone(),
        page_count: file.page_count,
        rendered_ms: cx.now(),
    });
}

/// Longest wait between two of the first attempts at sealing a completed document.
const SEAL_RETRY_MAX_MS: u64 = 30_000;

/// The sealing render of a completed document is back. A failed seal (the time stamping
/// authority did not answer, the key could not sign) leaves the document sealing and
/// tries again with backoff: it never falls back to an unsealed file. The first such
/// failure is written to the audit trail, every one to the host's log. A render that
/// cannot be made at all ends the sealing: logged, the owner told.
#[expect(
    clippy::too_many_lines,
    reason = "older than the 70-line rule (issue 49)"
)]
fn sealed(
    cx: &mut Cx,
    before: Document,
    mut doc: Document,
    pending: document::Pending,
    job: &Job,
    result: &Result<work::RenderedFile, work::WorkFailure>,
) -> JobOutcome {
    let actor = trail::Actor::system();
    let id = doc.id.clone();
    let file = match result {
        Ok(file) if file.seal.is_some() => file,
        other => {
            let why = match other {
                Err(f) => format!("{}: {}", f.code, f.message),
                Ok(_) => "the render came back without a seal".into(),
            };
            if let Ok(file) = other {
                drop_rendered(cx, file);
            }
            let transient = matches!(
                other,
                Err(f) if f.code == "timestamp-unavailable" || f.code == "seal-failed"
            );
            if !transient {
                // The content cannot be rendered (a manually signed file that is not a
                // readable PDF, a file gone): no sealed file can come of retrying. The
                // document keeps the PDF it had, unsealed, and the owner is told.
                log(
                    cx,
                    &mut doc,
                    &actor,
                    "seal_failed",
                    format!("the final PDF could not be made, so it is not sealed: {why}"),
                    None,
                );
                notify::owner_notice(
                    cx,
                    &doc,
                    format!("\"{}\" could not be sealed", doc.name),
                    format!("Its final PDF could not be made: {why}"),
                );
                store_doc(cx, Some(&before), &mut doc);
                return api::JobOutcome::Done;
            }
            if job.attempt == 1 {
                doc.pending = Some(pending);
                log(
                    cx,
                    &mut doc,
                    &actor,
                    "seal_delayed",
                    format!("sealing the final PDF failed, retrying: {why}"),
                    None,
                );
                store_doc(cx, Some(&before), &mut doc);
            }
            // Quick retries for the first ten minutes, then every five minutes (the host
            // gives up after 1000 attempts: about three and a half days).
            let cap = if job.attempt < 20 {
                SEAL_RETRY_MAX_MS
            } else {
                10 * SEAL_RETRY_MAX_MS
            };
            let wait = (1000u64 << job.attempt.min(15)).min(cap);
            return api::JobOutcome::RetryAt(cx.now() + wait);
        }
    };
    let info = file.seal.clone().expect("checked above");
    if evidence::load(cx, &id).is_some() {
        // Sealed already (a repeated outcome): the sealed file is never replaced.
        drop_rendered(cx, file);
        store_doc(cx, Some(&before), &mut doc);
        return api::JobOutcome::Done;
    }
    keep_final(cx, &mut doc, file);
    evidence::record(cx, &id, &file.blob, &file.sha256, &info, &pending.message);
    let stamp = match info.timestamp_ms {
        Some(t) => format!(", timestamped {}", util::iso8601(t)),
        None => String::new(),
    };
    log(
        cx,
        &mut doc,
        &actor,
        "sealed_final",
        format!(
            "final PDF sealed by {}{stamp}; SHA-256 {}; content SHA-256 {}",
            info.signer, file.sha256, file.content_sha256
        ),
        None,
    );
    store_doc(cx, Some(&before), &mut doc);
    api::JobOutcome::Done
}

/// Job `doc.scheduled-send`: a scheduled document's time has come.
pub fn scheduled_send(cx: &mut Cx, job: &Job) -> JobOutcome {
    let id = String::from_utf8_lossy(&job.payload).into_owned();
    let Some(mut doc) = load_doc(cx, &id).filter(|d| d.status == document::Status::Scheduled)
    else {
        return api::JobOutcome::Done;
    };
    if let Some(at) = doc.scheduled_sending_ms
        && at > cx.now()
    {
        return api::JobOutcome::RetryAt(at);
    }
    let before = doc.clone();
    request_render(cx, &mut doc, document::RenderPurpose::Send, String::new());
    log(
        cx,
        &mut doc,
        &trail::Actor::system(),
        "scheduled_send",
        "the scheduled time has come",
        None,
    );
    store_doc(cx, Some(&before), &mut doc);
    api::JobOutcome::Done
}

/// Job `doc.expire`: an active document past its expiration date becomes `expired`.
pub fn expire(cx: &mut Cx, job: &Job) -> JobOutcome {
    let id = String::from_utf8_lossy(&job.payload).into_owned();
    let Some(mut doc) = load_doc(cx, &id).filter(|d| d.status.is_active()) else {
        return api::JobOutcome::Done;
    };
    if doc.expiration_ms > cx.now() {
        // The date moved; a job for the new date exists, this one is done.
        return api::JobOutcome::Done;
    }
    let before = doc.clone();
    doc.status_before_expiry = Some(doc.status);
    doc.status = document::Status::Expired;
    let detail = format!("expired at {}", iso8601(doc.expiration_ms));
    emit_and_log(
        cx,
        &mut doc,
        &trail::Actor::system(),
        "document.expired",
        "expired",
        detail,
        json!({}),
    );
    notify::owner_notice(
        cx,
        &doc,
        format!("\"{}\" has expired", doc.name),
        format!(
            "It expired on {} before everyone had finished with it. A new expiration date brings it back.",
            iso8601(doc.expiration_ms)
        ),
    );
    store_doc(cx, Some(&before), &mut doc);
    api::JobOutcome::Done
}

/// Job `doc.erase`: a permanently deleted document's log, comments and files.
pub fn erase(cx: &mut Cx, job: &Job) -> JobOutcome {
    let Ok(e) = serde_json::from_slice::<Erase>(&job.payload) else {
        return api::JobOutcome::Failed("bad erase payload".into());
    };
    fields::erase(cx, &e.doc_id);
    previews::erase(cx, &owner_of(&e.doc_id));
    signatures::erase(cx, &e.doc_id);
    pages::erase(cx, &e.doc_id);
    page_views::erase(cx, &e.doc_id);
    evidence::remove(cx, &e.doc_id);
    links::erase(cx, &e.doc_id);
    identity::erase(cx, &e.doc_id);
    for (start, end) in [
        log_prefix(&e.doc_id),
        comments_prefix(&e.doc_id),
        custom_data::values_prefix(&e.doc_id),
    ] {
        loop {
            let batch = cx.p.scan(&start, &end, 500, false);
            if batch.is_empty() {
                break;
            }
            for (k, _) in batch {
                cx.p.delete(&k);
            }
        }
    }
    for b in &e.blobs {
        blobs::release(cx, b, &owner_of(&e.doc_id));
    }
    api::JobOutcome::Done
}

/// Job `doc.remind`: scheduled (`ids`, `message`) or automatic (`auto`) reminders.
pub fn remind_job(cx: &mut Cx, job: &Job) -> JobOutcome {
    let Ok(p) = serde_json::from_slice::<serde_json::Value>(&job.payload) else {
        return api::JobOutcome::Failed("bad reminder payload".into());
    };
    let id = p["doc"].as_str().unwrap_or("");
    let Some(mut doc) = load_doc(cx, id).filter(|d| d.status.is_active()) else {
        return api::JobOutcome::Done;
    };
    let auto = p["auto"].as_bool().unwrap_or(false);
    let ids: Vec<String> = p["ids"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let mut who = sending::waiting(&doc);
    who.retain(|r| auto || ids.contains(&r.id));
    if who.is_empty() {
        return api::JobOutcome::Done;
    }
    let before = doc.clone();
    let message = p["message"].as_str().unwrap_or("").to_string();
    let sms = p["sms"].as_bool().unwrap_or(false);
    remind(cx, &mut doc, &who, &message, sms, &trail::Actor::system());
    store_doc(cx, Some(&before), &mut doc);
    if auto && doc.reminders_sent < sending::AUTO_REMINDER_MAX * who.len() as u32 {
        return api::JobOutcome::RetryAt(cx.now() + sending::AUTO_REMINDER_DAYS * 24 * 3600 * 1000);
    }
    api::JobOutcome::Done
}

/// Job `mail.bounced` (payload `{tag}\n{reason}`): a recipient's address was rejected
/// for good. The recipient becomes hard-bounced, and so does a document that is out
/// with recipients; `document.hardbounced` is recorded and the owner told. Correct the
/// address (`PUT .../recipients/{id}`) and send to the recipient again.
pub fn bounced(cx: &mut Cx, job: &Job) -> JobOutcome {
    let text = String::from_utf8_lossy(&job.payload).into_owned();
    let (tag, reason) = text.split_once('\n').unwrap_or((text.as_str(), ""));
    let Some((doc_id, rid)) = tag
        .strip_prefix("recipient:")
        .and_then(|rest| rest.split_once(':'))
    else {
        return api::JobOutcome::Done;
    };
    let Some(mut doc) = load_doc(cx, doc_id) else {
        return api::JobOutcome::Done;
    };
    let Some(i) = doc.recipients.iter().position(|r| r.id == rid) else {
        return api::JobOutcome::Done;
    };
    if !matches!(
        doc.recipients[i].status,
        document::RecipientStatus::Sent
            | document::RecipientStatus::Added
            | document::RecipientStatus::Hardbounced
    ) {
        return api::JobOutcome::Done; // they got it after all
    }
    let before = doc.clone();
    doc.recipients[i].status = document::RecipientStatus::Hardbounced;
    if matches!(
        doc.status,
        document::Status::Sent | document::Status::Viewed | document::Status::Reviewed
    ) {
        doc.status = document::Status::Hardbounced;
    }
    let r = doc.recipients[i].clone();
    let extra = json!({
        "recipient": {"id": r.id, "fullname": r.fullname(), "email": r.email,
                      "role": r.role.as_str(), "order_num": r.order_num.to_string()},
        "reason": reason,
    });
    let detail = format!("mail to {} bounced: {reason}", r.email);
    emit_and_log(
        cx,
        &mut doc,
        &trail::Actor::system(),
        "document.hardbounced",
        "hardbounced",
        detail,
        extra,
    );
    notify::owner_notice(
        cx,
        &doc,
        format!("\"{}\" could not be delivered to {}", doc.name, r.email),
        format!(
            "The mail to {} was rejected: {reason}\n\nCorrect the address and send the document to this recipient again.",
            r.email
        ),
    );
    store_doc(cx, Some(&before), &mut doc);
    api::JobOutcome::Done
}
