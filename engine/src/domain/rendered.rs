//! A render is back (job `doc.render`, payload `{id}:{seq}`): the final PDF is kept
//! and what the render was for is finished — a seal (`sealed`), a send
//! (`sending::finish_send`), a revision (sealed, and sent when asked), a refresh, or
//! the sealing of a completed document ([`seal_back`]). A render superseded by a newer
//! one, cancelled or of a deleted document is dropped. The pictures of a document's
//! or a template's pages are a render too ([`previews_back`]).

use crate::base::cx::Cx;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util;
use crate::base::work_orders::{RenderedFile, WorkFailure};
use crate::domain::blobs::{self, owner_of};
use crate::domain::document::{Document, FinalPdf, Pending, RenderPurpose, load_doc, store_doc};
use crate::domain::document_states::{self, Move};
use crate::domain::events::emit_and_log;
use crate::domain::sending::{finish_send, schedule_expiry, send_revision};
use crate::domain::trail::{self, log};
use crate::domain::{completion, evidence, notify, pages, previews, templates};
use serde_json::json;

/// The render `seq` of document `id` is back with `result` (the job's `attempt`th
/// run); `Some(at)` when the job is to run again then (a seal that failed for now).
pub fn rendered(
    cx: &mut Cx,
    id: &str,
    seq: u32,
    result: &Result<RenderedFile, WorkFailure>,
    attempt: u32,
) -> Option<u64> {
    let current = load_doc(cx, id).filter(|d| d.pending.as_ref().is_some_and(|p| p.seq == seq));
    let Some(mut doc) = current else {
        // Superseded, cancelled or deleted: the PDF and its images are not needed.
        if let Ok(file) = result {
            drop_rendered(cx, file);
        }
        return None;
    };
    let before = doc.clone();
    let pending = doc.pending.take().expect("checked above");
    if pending.purpose == RenderPurpose::Complete {
        return seal_back(cx, &before, doc, pending, attempt, result);
    }
    match result {
        Ok(file) => finish(cx, &mut doc, &pending, file),
        Err(f) => render_failed(cx, &mut doc, f),
    }
    store_doc(cx, Some(&before), &mut doc);
    None
}

/// The render failed: a document that was being sent or was scheduled is a draft
/// again; logged, the owner told.
fn render_failed(cx: &mut Cx, doc: &mut Document, f: &WorkFailure) {
    if document_states::allowed(doc, Move::RenderFailed) {
        document_states::apply(doc, Move::RenderFailed);
    }
    log(
        cx,
        doc,
        &trail::Actor::system(),
        "render_failed",
        f.message.clone(),
        None,
    );
    notify::owner_notice(
        cx,
        doc,
        format!("\"{}\" could not be prepared", doc.name),
        format!("Its PDF could not be generated: {}", f.message),
    );
}

/// Keeps `file` as `doc`'s final PDF and finishes what it was rendered for.
fn finish(cx: &mut Cx, doc: &mut Document, pending: &Pending, file: &RenderedFile) {
    let actor = trail::Actor::system();
    let now = cx.now();
    keep_final(cx, doc, file);
    let hash = file.content_sha256.clone();
    match pending.purpose {
        RenderPurpose::Seal => {
            document_states::apply(doc, Move::SealRendered);
            schedule_expiry(cx, doc); // a sealed document is out: it expires too
            emit_and_log(
                cx,
                doc,
                &actor,
                "document.sealed",
                "sealed",
                format!("sealed; content SHA-256 {hash}"),
                json!({}),
            );
        }
        RenderPurpose::Send => finish_send(cx, doc, &actor, &hash),
        RenderPurpose::Revision { send } => {
            if let Some(r) = doc.revisions.last_mut() {
                r.sealed_ms = Some(now);
                r.content_sha256 = Some(hash.clone());
            }
            let n = doc.revisions.len();
            log(
                cx,
                doc,
                &actor,
                "revision_sealed",
                format!("revision {n}; content SHA-256 {hash}"),
                None,
            );
            if send {
                send_revision(cx, doc, &actor, &pending.message);
            }
        }
        RenderPurpose::Complete => unreachable!("handled by seal_back()"),
        RenderPurpose::Refresh => {
            log(
                cx,
                doc,
                &actor,
                "rendered",
                format!("PDF rendered again; content SHA-256 {hash}"),
                None,
            );
        }
    }
}

/// Deletes the blobs of a rendered file that is not kept: the PDF and its page images.
fn drop_rendered(cx: &mut Cx, file: &RenderedFile) {
    cx.p.delete_blob(&file.blob);
    for img in &file.page_images {
        cx.p.delete_blob(&img.blob);
    }
}

/// Makes `file` the document's final PDF (with its page images), releasing the one
/// it replaces.
fn keep_final(cx: &mut Cx, doc: &mut Document, file: &RenderedFile) {
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
fn seal_back(
    cx: &mut Cx,
    before: &Document,
    mut doc: Document,
    pending: Pending,
    attempt: u32,
    result: &Result<RenderedFile, WorkFailure>,
) -> Option<u64> {
    let file = match result {
        Ok(file) if file.seal.is_some() => file,
        other => return seal_failed(cx, before, doc, pending, attempt, other),
    };
    let info = file.seal.clone().expect("checked above");
    if evidence::load(cx, &doc.id).is_some() {
        // Sealed already (a repeated outcome): the sealed file is never replaced.
        drop_rendered(cx, file);
        store_doc(cx, Some(before), &mut doc);
        return None;
    }
    keep_final(cx, &mut doc, file);
    let id = doc.id.clone();
    evidence::record(cx, &id, &file.blob, &file.sha256, &info, &pending.message);
    let stamp = match info.timestamp_ms {
        Some(t) => format!(", timestamped {}", util::iso8601(t)),
        None => String::new(),
    };
    log(
        cx,
        &mut doc,
        &trail::Actor::system(),
        "sealed_final",
        format!(
            "final PDF sealed by {}{stamp}; SHA-256 {}; content SHA-256 {}",
            info.signer, file.sha256, file.content_sha256
        ),
        None,
    );
    if let Some(sealed) = doc.final_pdf.clone() {
        completion::send_copies(cx, &mut doc, &sealed);
    }
    store_doc(cx, Some(before), &mut doc);
    None
}

/// [`seal_back`] without a sealed file: a transient failure is retried (the first one
/// logged), any other ends the sealing with the PDF the document had, unsealed.
fn seal_failed(
    cx: &mut Cx,
    before: &Document,
    mut doc: Document,
    pending: Pending,
    attempt: u32,
    other: &Result<RenderedFile, WorkFailure>,
) -> Option<u64> {
    let actor = trail::Actor::system();
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
        store_doc(cx, Some(before), &mut doc);
        return None;
    }
    if attempt == 1 {
        doc.pending = Some(pending);
        log(
            cx,
            &mut doc,
            &actor,
            "seal_delayed",
            format!("sealing the final PDF failed, retrying: {why}"),
            None,
        );
        store_doc(cx, Some(before), &mut doc);
    }
    // Quick retries for the first ten minutes, then every five minutes (the host
    // gives up after 1000 attempts: about three and a half days).
    let cap = if attempt < 20 {
        SEAL_RETRY_MAX_MS
    } else {
        10 * SEAL_RETRY_MAX_MS
    };
    let wait = (1000u64 << attempt.min(15)).min(cap);
    Some(cx.now() + wait)
}

/// Job `previews` (`owner`: `doc:{id}` or `template:{id}`): keeps the pictures of the
/// owner's content pages; an owner gone meanwhile (a template in the trash) gets none.
pub fn previews_back(cx: &mut Cx, owner: &str, file: &RenderedFile) {
    let pages = if let Some(id) = owner.strip_prefix("doc:") {
        load_doc(cx, id).map(|d| d.page_count())
    } else if let Some(id) = owner.strip_prefix("template:") {
        templates::load(cx, id)
            .filter(|t| !t.trashed)
            .and_then(|t| t.file.map(|f| f.pages.len()))
    } else {
        None
    };
    previews::record(cx, owner, file, pages);
}
