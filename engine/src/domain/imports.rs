//! A document's files come back imported (job `doc.import`, `doc.import-archive`): each
//! file kept becomes one of the document's files, with its pages, and the document
//! moves on from `importing`: to `draft` (`archived` for an archive import whose every
//! file imported), sent at once when it was created for automatic sending. A failure
//! keeps the pages of the files before it, none from it or later files, and emails the
//! owner.

use crate::base::cx::Cx;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::new_id;
use crate::base::work_orders::{ImportedFile, WorkFailure};
use crate::domain::blobs::{self, owner_of};
use crate::domain::document::{self, DocFile, Document, load_doc, store_doc};
use crate::domain::document_states::{self, Move};
use crate::domain::events::emit_and_log;
use crate::domain::trail::{self, log};
use crate::domain::{notify, previews, sending};
use serde_json::json;

/// Job `doc.import` (`archive`: `doc.import-archive`): the `results` of importing the
/// files of document `id`, in the order of its sources. A document no longer importing
/// (deleted or changed meanwhile) gets none of them: what the work made is dropped.
pub fn imported(
    cx: &mut Cx,
    id: &str,
    archive: bool,
    results: &[Result<ImportedFile, WorkFailure>],
) {
    let doc = load_doc(cx, id).filter(|d| d.status == document::Status::Importing);
    let Some(mut doc) = doc else {
        for r in results.iter().flatten() {
            forget_unheld(cx, r);
        }
        return;
    };
    let before = doc.clone();
    let failure = take_results(cx, &mut doc, results);
    let m = match (&failure, archive) {
        (Some(_), _) => Move::ImportFailed,
        (None, true) => Move::ImportedArchive,
        (None, false) => Move::Imported,
    };
    document_states::apply(&mut doc, m);
    match failure {
        None => finish(cx, &mut doc, archive),
        Some(f) => failed(cx, &mut doc, &f),
    }
    let sources: Vec<String> = doc.files.iter().map(|f| f.blob.clone()).collect();
    previews::request(cx, &owner_of(id), &doc.entity_id, sources);
    store_doc(cx, Some(&before), &mut doc);
}

/// Makes the files imported before the first failure `doc`'s files (their blobs held,
/// the rest dropped) and releases the inline sources that are not among them; the
/// first failure, if any.
fn take_results(
    cx: &mut Cx,
    doc: &mut Document,
    results: &[Result<ImportedFile, WorkFailure>],
) -> Option<WorkFailure> {
    let owner = owner_of(&doc.id);
    let sources = core::mem::take(&mut doc.sources);
    let mut failure = None;
    for (i, result) in results.iter().enumerate() {
        match (result, &failure) {
            (Ok(file), None) => {
                blobs::hold(cx, &file.blob, &owner);
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
            blobs::release(cx, b, &owner);
        }
    }
    failure
}

/// Every file imported: `document.imported` (archived for an archive import), and the
/// automatic send when the document asks for one (a refusal logged, the owner told).
fn finish(cx: &mut Cx, doc: &mut Document, archive: bool) {
    let actor = trail::Actor::system();
    let pages = doc.page_count();
    let detail = format!(
        "{} file(s), {pages} page(s){}",
        doc.files.len(),
        if archive { "; archived" } else { "" }
    );
    emit_and_log(
        cx,
        doc,
        &actor,
        "document.imported",
        "imported",
        detail,
        json!({"page_count": pages}),
    );
    if doc.flags.is_automatic_sending {
        let sender = doc.sender.clone();
        if let Err(e) = sending::start_send(cx, doc, &actor, sender) {
            log(
                cx,
                doc,
                &actor,
                "automatic_send_failed",
                e.description.clone(),
                None,
            );
            notify::owner_notice(
                cx,
                doc,
                format!("\"{}\" was not sent automatically", doc.name),
                format!(
                    "The document was imported but could not be sent: {}",
                    e.description
                ),
            );
        }
    }
}

/// A file failed: the document stays a draft with what came before it; logged, the
/// owner told.
fn failed(cx: &mut Cx, doc: &mut Document, f: &WorkFailure) {
    doc.import_error = Some(f.message.clone());
    log(
        cx,
        doc,
        &trail::Actor::system(),
        "import_failed",
        f.message.clone(),
        None,
    );
    notify::owner_notice(
        cx,
        doc,
        format!("\"{}\" could not be imported", doc.name),
        format!(
            "A file of your document could not be imported: {}\n\nThe document is a draft \
             without the pages of that file and of any file after it.",
            f.message
        ),
    );
}

/// Drops the blobs of an import result that is not kept, unless another record (an
/// upload, a template, another document) holds them: a PDF source is its own result.
fn forget_unheld(cx: &mut Cx, file: &ImportedFile) {
    blobs::drop_unused(cx, &file.blob);
    if let Some(d) = &file.downloaded {
        blobs::drop_unused(cx, &d.id);
    }
}
