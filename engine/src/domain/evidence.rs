//! Evidence of a completed document: the audit certificate drawn into its final PDF,
//! the seal (the host's PAdES signature of that file, `dseal/`), the signing
//! certificate route and `POST /v1/verify`.
//!
//! A document is *sealing* from the moment its last signer signs (or it is marked signed
//! with a file) until the sealed file is stored; meanwhile no final PDF is handed out.
//! Once sealed, the file is never rendered again: nothing may change a signed document.

use crate::base::api::JobSpec;
use crate::base::cx::Cx;
use crate::base::http::{self, ApiError};
use crate::base::job_kinds;
use crate::base::keyspace::DSEAL;
use crate::base::messages::Words;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, iso8601};
use crate::base::work_orders::{self, Block, RenderOrder, SealInfo, SealOrder, SignatureBlock};
use crate::domain::document::{self, Document, Recipient};
use crate::domain::{fields, in_person, rendering, signatures, trail};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The seal of a document's final PDF.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Seal {
    pub blob: String,
    pub sha256: String,
    pub signer: String,
    pub certificate_sha256: String,
    pub signed_at_ms: u64,
    pub timestamp_ms: Option<u64>,
    /// The audit trail's head hash the file states.
    pub log_head: String,
}

pub fn seal_key(doc_id: &str) -> Vec<u8> {
    util::key(&[DSEAL, doc_id])
}

pub fn load(cx: &mut Cx, doc_id: &str) -> Option<Seal> {
    cx.load(&seal_key(doc_id))
}

pub fn remove(cx: &mut Cx, doc_id: &str) {
    cx.p.delete(&seal_key(doc_id));
}

/// Whether the document waits for its sealed final PDF.
pub fn sealing(doc: &Document) -> bool {
    doc.pending
        .as_ref()
        .is_some_and(|p| p.purpose == document::RenderPurpose::Complete)
}

/// The answer to a download while the document is sealing.
pub fn sealing_error() -> ApiError {
    http::ApiError::new(
        409,
        "sealing",
        "the document is signed and its final PDF is being sealed; try again shortly",
    )
}

/// Asks for the final, sealed PDF of a completed document: the content (the document's
/// files with every field, or `manual_file` for a document marked signed with a file),
/// then the audit certificate; the host signs the result. Call after logging the change
/// that completed the document, so the trail head the file pins includes it.
pub fn request_seal(cx: &mut Cx, doc: &mut Document, manual_file: Option<String>) {
    let now = cx.now();
    let entries = trail::entries(cx, &doc.id);
    let head = entries.last().map(|e| e.hash.clone()).unwrap_or_default();
    doc.render_seq += 1;
    doc.pending = Some(document::Pending {
        purpose: document::RenderPurpose::Complete,
        seq: doc.render_seq,
        message: head.clone(),
    });
    let fields = fields::load(cx, &doc.id);
    let sigs = signatures::load_all(cx, &doc.id);
    let original = doc
        .final_pdf
        .as_ref()
        .map(|f| f.content_sha256.clone())
        .or_else(|| doc.files.first().map(|f| f.sha256.clone()))
        .unwrap_or_default();
    let words = cx.words(doc.language());
    let (sources, stamps, appendix) = match manual_file {
        Some(blob) => (vec![blob], Vec::new(), Vec::new()),
        None => {
            let stamps = fields::stamps(&fields, |rid, kind| {
                signatures::stamp_content(&sigs, rid, kind)
            });
            (
                doc.files.iter().map(|f| f.blob.clone()).collect(),
                stamps,
                rendering::appendix(doc, &words),
            )
        }
    };
    let proof = Proof {
        entries: &entries,
        sigs: &sigs,
        original_sha256: &original,
        head: &head,
        now,
    };
    let summary = certificate(doc, &words, &proof);
    cx.p.schedule_job(JobSpec {
        kind: job_kinds::DOC_RENDER.into(),
        payload: format!("{}:{}", doc.id, doc.render_seq).into_bytes(),
        run_at_ms: now,
        work: Some(work_orders::WorkOrder::Render(RenderOrder {
            sources,
            stamps,
            appendix,
            summary,
            seal: Some(SealOrder {
                document_id: doc.id.clone(),
                log_head: head,
            }),
        })),
        scope: doc.entity_id.clone(),
    });
}

/// What the audit certificate states besides the document: its trail, its signatures,
/// the hashes of its original content and of its trail's head, and the time it is made.
struct Proof<'a> {
    entries: &'a [trail::Chained],
    sigs: &'a [signatures::Signature],
    original_sha256: &'a str,
    head: &'a str,
    now: u64,
}

/// The audit certificate, in the document's language (`w`; machine values such as ids,
/// hashes and addresses as they are): the document, each recipient's acts with the
/// address and browser they came from, the identity checks they passed, their
/// signature, and the hashes that tie the file to its content and to its audit trail.
/// The host ends it with the line `Content SHA-256: ...` (the content as signed).
fn certificate(doc: &Document, w: &Words, proof: &Proof) -> Vec<Block> {
    let mut b = rendering::document_rows(doc, w, "cert.title");
    b.extend([
        work_orders::Block::Row(vec![
            w.get("cert.sent"),
            doc.send_ms.map(|t| w.time(t)).unwrap_or_else(|| "-".into()),
        ]),
        work_orders::Block::Row(vec![
            w.get("cert.completed"),
            w.time(doc.sign_ms.unwrap_or(proof.now)),
        ]),
        work_orders::Block::Row(vec![
            w.get("cert.status"),
            w.get(&format!("status.{}", doc.status.as_str())),
        ]),
        work_orders::Block::Text(
            w.fill("cert.original_sha256", &[("hash", proof.original_sha256)]),
        ),
        work_orders::Block::Text(w.fill("cert.head_sha256", &[("hash", proof.head)])),
    ]);
    // Internal approvers are not in the certificate (GetAccept's rule); their acts stay
    // in the audit trail.
    for r in doc
        .recipients
        .iter()
        .filter(|r| r.role != document::Role::Approver)
    {
        b.push(work_orders::Block::Rule);
        acts_rows(&mut b, w, r, proof.entries);
        signature_rows(&mut b, w, r, proof.sigs);
    }
    b.push(work_orders::Block::Rule);
    b
}

/// A recipient in the certificate: who they are, their role and status, when they were
/// sent the document, and their acts with the address and browser they came from.
fn acts_rows(b: &mut Vec<Block>, w: &Words, r: &Recipient, entries: &[trail::Chained]) {
    b.push(work_orders::Block::HeaderRow(rendering::recipient_cells(
        r, w,
    )));
    if let Some(t) = r.sent_ms {
        b.push(work_orders::Block::Row(vec![
            w.time(t),
            w.get("cert.act_sent"),
            String::new(),
        ]));
    }
    for e in entries.iter().filter(|e| {
        (e.entry.actor_type == "recipient" && e.entry.actor_id == r.id)
            || in_person::hands_over_to(&e.entry, &r.id)
            || in_person::self_signs(&e.entry, &r.id)
    }) {
        let on_device = if in_person::hands_over_to(&e.entry, &r.id) {
            Some(w.fill("cert.act_in_person", &[("host", &e.entry.actor_name)]))
        } else if in_person::self_signs(&e.entry, &r.id) {
            Some(w.get("cert.act_self_signed"))
        } else {
            None
        };
        if let Some(act) = on_device {
            b.push(work_orders::Block::Row(vec![
                w.time(e.entry.at_ms),
                act,
                w.fill("cert.ip", &[("ip", &e.entry.ip)]),
            ]));
            continue;
        }
        let act = match e.entry.action.as_str() {
            "partially_signed" | "signed" => "cert.act_signed",
            "viewed" => "cert.act_viewed",
            "reviewed" => "cert.act_reviewed",
            "approved" => "cert.act_approved",
            "rejected" => "cert.act_rejected",
            "downloaded" => "cert.act_downloaded",
            "printed" => "cert.act_printed",
            "forwarded" => "cert.act_handed_over",
            _ => continue,
        };
        b.push(work_orders::Block::Row(vec![
            w.time(e.entry.at_ms),
            w.get(act),
            w.fill("cert.ip", &[("ip", &e.entry.ip)]),
        ]));
        if !e.entry.user_agent.is_empty() {
            b.push(work_orders::Block::Text(
                w.fill("cert.user_agent", &[("agent", &e.entry.user_agent)]),
            ));
        }
    }
}

/// An identity check's name in `w`'s language (`cert.check_*`); one the catalogue
/// does not know as it is.
fn check_name(w: &Words, kind: &str) -> String {
    match kind {
        "sms" | "email" | "qna" | "eid" => w.get(&format!("cert.check_{kind}")),
        other => other.to_string(),
    }
}

/// How a recipient signed, in the certificate: the identity checks they passed and
/// their signature, or that the sender marked them signed.
fn signature_rows(b: &mut Vec<Block>, w: &Words, r: &Recipient, sigs: &[signatures::Signature]) {
    if let Some(s) = sigs.iter().find(|s| s.recipient_id == r.id) {
        for m in signatures::methods(s) {
            let kind = m["type"].as_str().unwrap_or_default();
            if matches!(kind, "signature" | "initials") {
                continue;
            }
            let method = check_name(w, kind);
            let name = m["verified_name"].as_str().unwrap_or_default();
            let line = if name.is_empty() {
                w.fill("cert.identity", &[("method", &method)])
            } else {
                w.fill("cert.identity_name", &[("method", &method), ("name", name)])
            };
            b.push(work_orders::Block::Text(line));
        }
        b.push(work_orders::Block::Signature(SignatureBlock {
            image: s.signature.image.clone(),
            text: s.signature.text.clone(),
            caption: w.fill(
                "cert.signed_at",
                &[("name", &r.fullname()), ("time", &w.time(s.signed_ms))],
            ),
        }));
    } else if r.role == document::Role::Signer && r.status.has_signed_or_approved() {
        b.push(work_orders::Block::Text(match r.signed_ms {
            Some(t) => w.fill("cert.marked_signed_at", &[("time", &w.time(t))]),
            None => w.get("cert.marked_signed"),
        }));
    }
}

/// Records the sealed file of a completed document.
pub fn record(cx: &mut Cx, doc_id: &str, blob: &str, sha256: &str, info: &SealInfo, head: &str) {
    cx.save(
        &seal_key(doc_id),
        &Seal {
            blob: blob.into(),
            sha256: sha256.into(),
            signer: info.signer.clone(),
            certificate_sha256: info.certificate_sha256.clone(),
            signed_at_ms: info.signed_at_ms,
            timestamp_ms: info.timestamp_ms,
            log_head: head.into(),
        },
    );
}

/// The `evidence` member of a document's detail: `none` (not complete), `sealing`, or
/// `sealed` with the file's signature.
pub fn detail(cx: &mut Cx, doc: &Document) -> Value {
    if sealing(doc) {
        return json!({"status": "sealing"});
    }
    match load(cx, &doc.id) {
        Some(s) => json!({
            "status": "sealed",
            "sha256": s.sha256,
            "signer": s.signer,
            "certificate_sha256": s.certificate_sha256,
            "signed_at": iso8601(s.signed_at_ms),
            "timestamp": s.timestamp_ms.map(iso8601),
            "log_head": s.log_head,
        }),
        None => json!({"status": "none"}),
    }
}
