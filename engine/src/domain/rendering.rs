//! Rendering requests: what a document's PDF is made of (its files, stamped fields and
//! signatures, pricing tables, the summary page), sent to the host as a work order. The
//! words the engine adds (the summary page, a cover page) are the document's language's
//! (`cert.*` in the catalogues), and so are the rows the audit certificate shares.

use crate::base::api::JobSpec;
use crate::base::cx::Cx;
use crate::base::job_kinds;
use crate::base::messages::Words;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::work_orders::{self, Block, RenderOrder};
use crate::domain::document::{Document, Pending, Recipient, RenderPurpose, Role};
use crate::domain::{fields, pricing, signatures};

/// The summary page, in the document's language: the document, its recipients, and
/// (added by the host) the content's SHA-256.
fn summary_blocks(doc: &Document, w: &Words, now: u64) -> Vec<Block> {
    let mut b = document_rows(doc, w, "cert.summary");
    b.push(work_orders::Block::Row(vec![
        w.get("cert.rendered"),
        w.time(now),
    ]));
    if !doc.revisions.is_empty() {
        b.push(work_orders::Block::Row(vec![
            w.get("cert.revision"),
            doc.revisions.len().to_string(),
        ]));
    }
    b.push(work_orders::Block::Rule);
    b.push(work_orders::Block::HeaderRow(vec![
        w.get("cert.recipient"),
        w.get("cert.role"),
        w.get("cert.status"),
    ]));
    for r in &doc.recipients {
        b.push(work_orders::Block::Row(recipient_cells(r, w)));
    }
    b
}

/// A heading (the catalogue's `heading`), then the document's name, id, sender and
/// creation time as rows, in `w`'s language (the start of the summary page and of the
/// audit certificate).
pub fn document_rows(doc: &Document, w: &Words, heading: &str) -> Vec<Block> {
    vec![
        work_orders::Block::Heading(w.get(heading)),
        work_orders::Block::Row(vec![w.get("cert.document"), doc.name.clone()]),
        work_orders::Block::Row(vec![w.get("cert.document_id"), doc.id.clone()]),
        work_orders::Block::Row(vec![
            w.get("cert.sender"),
            format!("{} <{}>", doc.sender.name, doc.sender.email),
        ]),
        work_orders::Block::Row(vec![w.get("cert.created"), w.time(doc.created_ms)]),
    ]
}

/// A recipient's cells on the summary page and the certificate: who they are (name and
/// address), their role and their status, in `w`'s language.
pub fn recipient_cells(r: &Recipient, w: &Words) -> Vec<String> {
    vec![
        format!("{} ({})", r.fullname(), r.contact()),
        role_name(w, r.role),
        w.get(&format!("status.{}", r.status.as_str())),
    ]
}

/// A role's name in `w`'s language (`cert.role_*`).
fn role_name(w: &Words, role: Role) -> String {
    let key = match role {
        Role::Signer => "cert.role_signer",
        Role::Approver => "cert.role_approver",
        Role::ExternalApprover => "cert.role_externalapprover",
        Role::Cc => "cert.role_cc",
    };
    w.get(key)
}

/// What a rendered document shows after its own pages: its pricing tables, or, when it
/// has neither pages nor tables, a cover page that says so in `w`'s language.
pub fn appendix(doc: &Document, w: &Words) -> Vec<Block> {
    let appendix = pricing::blocks(&doc.pricing_tables, w);
    if doc.files.is_empty() && appendix.is_empty() {
        // Nothing of its own to show: a cover page is the content.
        return vec![
            work_orders::Block::Heading(doc.name.clone()),
            work_orders::Block::Text(w.get("cert.no_pages")),
        ];
    }
    appendix
}

/// Starts a render of `doc` for `purpose`: the job renders the pages, the pricing
/// tables and the summary. A newer render supersedes an older one (by `seq`).
pub fn request_render(cx: &mut Cx, doc: &mut Document, purpose: RenderPurpose, message: String) {
    let now = cx.now();
    doc.render_seq += 1;
    doc.pending = Some(Pending {
        purpose,
        seq: doc.render_seq,
        message,
    });
    let words = cx.words(doc.language());
    let appendix = appendix(doc, &words);
    let fields = fields::load(cx, &doc.id);
    let sigs = signatures::load_all(cx, &doc.id);
    let stamps = fields::stamps(&fields, |rid, kind| {
        signatures::stamp_content(&sigs, rid, kind)
    });
    let mut summary = summary_blocks(doc, &words, now);
    summary.extend(signatures::summary_blocks(doc, &words, &fields, &sigs));
    let order = RenderOrder {
        sources: doc.files.iter().map(|f| f.blob.clone()).collect(),
        stamps,
        appendix,
        summary,
        seal: None,
    };
    cx.p.schedule_job(JobSpec {
        kind: job_kinds::DOC_RENDER.into(),
        payload: format!("{}:{}", doc.id, doc.render_seq).into_bytes(),
        run_at_ms: now,
        work: Some(work_orders::WorkOrder::Render(order)),
        scope: doc.entity_id.clone(),
    });
}
