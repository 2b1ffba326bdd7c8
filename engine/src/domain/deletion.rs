//! Permanent deletion: the record and its links go at once, the rest (trail, comments,
//! fields, signatures, files) in an erase job.

use crate::base::cx::Cx;
use crate::base::job_kinds;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::sha256_hex;
use crate::domain::blobs::{self, owner_of};
use crate::domain::document::{Document, comments_prefix, link_key, log_prefix, remove_doc};
use crate::domain::{
    custom_data, evidence, fields, identity, links, page_views, pages, previews, signatures,
};

/// What a permanent delete leaves for the erase job.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Erase {
    pub doc_id: String,
    pub blobs: Vec<String>,
    pub links: Vec<String>,
}

pub fn permanently_delete(cx: &mut Cx, doc: &Document) {
    remove_doc(cx, doc);
    let mut blob_ids: Vec<String> = doc.files.iter().map(|f| f.blob.clone()).collect();
    blob_ids.extend(doc.attachments.iter().map(|a| a.blob.clone()));
    blob_ids.extend(doc.final_pdf.iter().map(|p| p.blob.clone()));
    blob_ids.extend(signatures::blobs(cx, &doc.id));
    blob_ids.extend(pages::blobs(cx, &doc.id));
    blob_ids.extend(
        doc.sources
            .iter()
            .filter(|s| s.upload_id.is_none())
            .filter_map(|s| s.blob.clone()),
    );
    blob_ids.sort();
    blob_ids.dedup();
    let erase = Erase {
        doc_id: doc.id.clone(),
        blobs: blob_ids,
        links: doc
            .recipients
            .iter()
            .filter_map(|r| links::secret(cx, &doc.id, r).map(|s| sha256_hex(s.as_bytes())))
            .collect(),
    };
    for l in &erase.links {
        cx.p.delete(&link_key(l)); // the links stop working at once
    }
    let now = cx.now();
    cx.schedule_at(
        job_kinds::DOC_ERASE,
        serde_json::to_vec(&erase).unwrap_or_default(),
        now,
    );
}

/// Job `doc.erase`: what a permanent delete left goes: the document's fields, pictures,
/// signatures, pages, page views, seal, links, identity checks, trail, comments and
/// custom data values, and its hold on its files.
pub fn erase(cx: &mut Cx, e: &Erase) {
    fields::erase(cx, &e.doc_id);
    previews::erase(cx, &owner_of(&e.doc_id));
    signatures::erase(cx, &e.doc_id);
    pages::erase(cx, &e.doc_id);
    page_views::erase(cx, &e.doc_id);
    evidence::remove(cx, &e.doc_id);
    links::erase(cx, &e.doc_id);
    identity::erase(cx, &e.doc_id);
    crate::domain::reminder_schedules::erase(cx, &e.doc_id);
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
}
