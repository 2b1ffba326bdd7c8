//! esign's file work as a WASI component: implements the `esign:formats/formats` world
//! of `wit/formats/formats.wit` by converting between the generated WIT types and
//! `esign_formats::work`'s own, and by giving the shared code a [`WorkIo`] made of the
//! world's imports. Every host that runs this component runs the code the native host
//! links, so they produce the same bytes (`tests/formats.rs` holds them to it).

// The generated bindings take one argument per field of a flattened record.
#![allow(clippy::too_many_arguments)]

wit_bindgen::generate!({
    world: "esign:formats/formats",
    path: ["../../wit", "../../wit/formats"],
    generate_all,
});

use esign::engine::types as wit;
use esign::formats::{blobs, convert, download, log, signing, timestamping};
use esign_formats::seal::{self, SealHost};
use esign_formats::work::{self as shared, WorkIo};
use exports::esign::formats::work::Guest;

struct Component;
export!(Component);

impl Guest for Component {
    fn perform(order: wit::WorkOrder, now_ms: u64) -> wit::WorkOutcome {
        let outcome = shared::perform(&to_shared(order), now_ms, &mut Imports);
        from_shared(outcome)
    }

    fn check_pdf(pdf: Vec<u8>, own_certificate_sha256: String) -> wit::PdfCheck {
        let c = seal::check(&pdf, &own_certificate_sha256);
        wit::PdfCheck {
            signed: c.signed,
            valid: c.valid,
            whole_file: c.whole_file,
            signer: c.signer,
            certificate_sha256: c.certificate_sha256,
            by_this_service: c.by_this_service,
            signed_at_ms: c.signed_at_ms,
            timestamp_ms: c.timestamp_ms,
            timestamp_valid: c.timestamp_valid,
            document_id: c.document_id,
            log_head: c.log_head,
            problems: c.problems,
        }
    }

    fn generate_signing_key(secret: Vec<u8>, now_ms: u64) -> Result<(String, String), String> {
        let secret: [u8; 32] = secret
            .try_into()
            .map_err(|_| "the secret must be 32 bytes".to_string())?;
        seal::keys::generate(&secret, now_ms).map_err(|e| format!("{e:#}"))
    }
}

/// The shared code's I/O: the world's imports.
struct Imports;

impl SealHost for Imports {
    fn certificates(&self) -> Result<Vec<Vec<u8>>, String> {
        signing::certificates()
    }

    fn sign(&self, digest: &[u8; 32]) -> Result<Vec<u8>, String> {
        signing::sign(digest)
    }

    fn timestamp(&self, request: &[u8]) -> Result<Option<Vec<u8>>, String> {
        timestamping::exchange(request)
    }
}

impl WorkIo for Imports {
    fn blob(&mut self, id: &str) -> Result<Option<Vec<u8>>, String> {
        blobs::get(id)
    }

    fn put(&mut self, data: Vec<u8>) -> shared::BlobInfo {
        let b = blobs::put(&data);
        shared::BlobInfo {
            id: b.id,
            size: b.size,
            sha256: b.sha256,
        }
    }

    fn download(&mut self, url: &str) -> Result<Vec<u8>, String> {
        download::fetch(url)
    }

    fn convert_docx(&mut self, docx: Vec<u8>) -> Result<Vec<u8>, shared::WorkFailure> {
        convert::docx_to_pdf(&docx).map_err(|f| shared::WorkFailure {
            code: f.code,
            message: f.message,
        })
    }

    fn warn(&mut self, message: &str) {
        log::warn(message);
    }
}

fn to_shared(order: wit::WorkOrder) -> shared::WorkOrder {
    match order {
        wit::WorkOrder::ImportFiles(sources) => shared::WorkOrder::ImportFiles(
            sources
                .into_iter()
                .map(|s| shared::ImportSource {
                    blob: s.blob,
                    url: s.url,
                    name: s.name,
                    fill: s.fill,
                })
                .collect(),
        ),
        wit::WorkOrder::Render(o) => shared::WorkOrder::Render(render_order(o)),
        wit::WorkOrder::Fetch(url) => shared::WorkOrder::Fetch(url),
    }
}

fn render_order(o: wit::RenderOrder) -> shared::RenderOrder {
    let block = |b: wit::Block| match b {
        wit::Block::Heading(t) => shared::Block::Heading(t),
        wit::Block::Text(t) => shared::Block::Text(t),
        wit::Block::Row(c) => shared::Block::Row(c),
        wit::Block::HeaderRow(c) => shared::Block::HeaderRow(c),
        wit::Block::Rule => shared::Block::Rule,
        wit::Block::PageBreak => shared::Block::PageBreak,
        wit::Block::Signature(s) => shared::Block::Signature {
            image: s.image,
            text: s.text,
            caption: s.caption,
        },
    };
    shared::RenderOrder {
        sources: o.sources,
        stamps: o
            .stamps
            .into_iter()
            .map(|s| shared::Stamp {
                page: s.page,
                left: s.left,
                top: s.top,
                width: s.width,
                height: s.height,
                content: match s.content {
                    wit::StampContent::Text(t) => shared::StampContent::Text(t),
                    wit::StampContent::Check => shared::StampContent::Check,
                    wit::StampContent::Image(id) => shared::StampContent::Image(id),
                },
            })
            .collect(),
        appendix: o.appendix.into_iter().map(block).collect(),
        summary: o.summary.into_iter().map(block).collect(),
        seal: o.seal.map(|s| shared::SealOrder {
            document_id: s.document_id,
            log_head: s.log_head,
        }),
    }
}

fn failure(f: shared::WorkFailure) -> wit::WorkFailure {
    wit::WorkFailure {
        code: f.code,
        message: f.message,
    }
}

fn blob(b: shared::BlobInfo) -> wit::BlobInfo {
    wit::BlobInfo {
        id: b.id,
        size: b.size,
        sha256: b.sha256,
    }
}

fn from_shared(outcome: shared::WorkOutcome) -> wit::WorkOutcome {
    match outcome {
        shared::WorkOutcome::Fetch(r) => wit::WorkOutcome::Fetch(r.map(blob).map_err(failure)),
        shared::WorkOutcome::ImportFiles(results) => wit::WorkOutcome::ImportFiles(
            results
                .into_iter()
                .map(|r| match r {
                    Ok(f) => wit::ImportResult::Ok(wit::ImportedFile {
                        blob: f.blob,
                        size: f.size,
                        sha256: f.sha256,
                        pages: f
                            .pages
                            .iter()
                            .map(|p| wit::PageSize {
                                width: p.width,
                                height: p.height,
                            })
                            .collect(),
                        placeholders: f.placeholders,
                        downloaded: f.downloaded.map(blob),
                    }),
                    Err(f) => wit::ImportResult::Failed(failure(f)),
                })
                .collect(),
        ),
        shared::WorkOutcome::Render(r) => wit::WorkOutcome::Render(
            r.map(|f| wit::RenderedFile {
                blob: f.blob,
                size: f.size,
                sha256: f.sha256,
                content_sha256: f.content_sha256,
                page_count: f.page_count,
                page_images: f
                    .page_images
                    .into_iter()
                    .map(|p| wit::PageImage {
                        blob: p.blob,
                        size: p.size,
                        width: p.width,
                        height: p.height,
                    })
                    .collect(),
                seal: f.seal.map(|s| wit::SealInfo {
                    signer: s.signer,
                    certificate_sha256: s.certificate_sha256,
                    signed_at_ms: s.signed_at_ms,
                    timestamp_ms: s.timestamp_ms,
                }),
            })
            .map_err(failure),
        ),
    }
}
