//! Rendering requests: what a document's PDF is made of (its files, stamped fields and
//! signatures, pricing tables, the summary page), sent to the host as a work order.

use crate::base::api::JobSpec;
use crate::base::cx::Cx;
use crate::base::job_kinds;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::iso8601;
use crate::base::work_orders::{self, Block, RenderOrder};
use crate::domain::document::{Document, Pending, RenderPurpose};
use crate::domain::{fields, pricing, signatures};

/// The summary page: the document, its recipients, and (added by the host) the
/// content's SHA-256.
fn summary_blocks(doc: &Document, now: u64) -> Vec<Block> {
    let mut b = document_rows(doc, "Document summary");
    b.push(work_orders::Block::Row(vec![
        "Rendered".into(),
        iso8601(now),
    ]));
    if !doc.revisions.is_empty() {
        b.push(work_orders::Block::Row(vec![
            "Revision".into(),
            doc.revisions.len().to_string(),
        ]));
    }
    b.push(work_orders::Block::Rule);
    b.push(work_orders::Block::HeaderRow(vec![
        "Recipient".into(),
        "Role".into(),
        "Status".into(),
    ]));
    for r in &doc.recipients {
        let contact = if r.email.is_empty() {
            &r.mobile
        } else {
            &r.email
        };
        b.push(work_orders::Block::Row(vec![
            format!("{} ({contact})", r.fullname()),
            r.role.as_str().into(),
            r.status.as_str().into(),
        ]));
    }
    b
}

/// A heading, then the document's name, id, sender and creation time as rows (the
/// start of the summary page and of the audit certificate).
pub fn document_rows(doc: &Document, heading: &str) -> Vec<Block> {
    vec![
        work_orders::Block::Heading(heading.into()),
        work_orders::Block::Row(vec!["Document".into(), doc.name.clone()]),
        work_orders::Block::Row(vec!["Document id".into(), doc.id.clone()]),
        work_orders::Block::Row(vec![
            "Sender".into(),
            format!("{} <{}>", doc.sender.name, doc.sender.email),
        ]),
        work_orders::Block::Row(vec!["Created".into(), iso8601(doc.created_ms)]),
    ]
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
    let mut appendix = pricing::blocks(&doc.pricing_tables);
    if doc.files.is_empty() && appendix.is_empty() {
        // Nothing of its own to show: a cover page is the content.
        appendix = vec![
            work_orders::Block::Heading(doc.name.clone()),
            work_orders::Block::Text("This document has no pages of its own.".into()),
        ];
    }
    let fields = fields::load(cx, &doc.id);
    let sigs = signatures::load_all(cx, &doc.id);
    let stamps = fields::stamps(&fields, |rid, kind| {
        signatures::stamp_content(&sigs, rid, kind)
    });
    let mut summary = summary_blocks(doc, now);
    summary.extend(signatures::summary_blocks(doc, &fields, &sigs));
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
