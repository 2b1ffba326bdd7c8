//! Host work: what a job's work order asks for (download, import, Word conversion,
//! rendering), done outside any transaction before the engine runs the job. The result
//! ([`Prepared`]) holds the outcome for the engine and the new blobs, which the job's
//! transaction writes together with the engine's changes: a crash before that commit
//! loses nothing but the work, which is done again.

use crate::bindings::{
    Block, ImportResult, ImportSource, ImportedFile, PageImage, PageSize, RenderOrder,
    RenderedFile, StampContent, WorkFailure, WorkOrder, WorkOutcome,
};
use crate::ids::{random_id, sha256_hex};
use crate::outbound::Outbound;
use crate::store::Store;
use crate::tables::keys;
use esign_formats::{office, pdf, raster};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// What a work order produced.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub outcome: WorkOutcome,
    /// New blobs (id, bytes) that the outcome names.
    pub blobs: Vec<(String, Vec<u8>)>,
}

/// What the work needs from the process.
#[derive(Clone)]
pub struct WorkContext {
    pub store: Arc<Store>,
    pub outbound: Outbound,
    /// Largest file downloaded from a URL.
    pub max_download_bytes: usize,
    /// The LibreOffice binary, when Word conversion is available.
    pub soffice: Option<String>,
    pub convert_timeout: Duration,
    /// Seals the final PDFs of completed documents.
    pub sealer: Arc<crate::evidence::Sealer>,
}

/// Finds LibreOffice: `configured` if given, else `soffice` or `libreoffice` on PATH.
/// `None` when none of them runs.
pub fn find_soffice(configured: Option<&str>) -> Option<String> {
    let candidates: Vec<&str> = match configured {
        Some(c) => vec![c],
        None => vec!["soffice", "libreoffice"],
    };
    candidates.into_iter().map(str::to_string).find(|c| {
        std::process::Command::new(c)
            .arg("--version")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

fn failure(code: &str, message: impl Into<String>) -> WorkFailure {
    WorkFailure {
        code: code.into(),
        message: message.into(),
    }
}

/// Does the work of `order`.
pub async fn perform(cx: &WorkContext, order: &WorkOrder) -> Prepared {
    let mut blobs = Vec::new();
    let outcome = match order {
        WorkOrder::Fetch(url) => WorkOutcome::Fetch(
            match cx.outbound.download(url, cx.max_download_bytes).await {
                Ok(bytes) => {
                    let info = crate::bindings::BlobInfo {
                        id: random_id(),
                        size: bytes.len() as u64,
                        sha256: sha256_hex(&bytes),
                    };
                    blobs.push((info.id.clone(), bytes));
                    Ok(info)
                }
                Err(why) => Err(failure(
                    "download-failed",
                    format!("downloading {url} failed: {why}"),
                )),
            },
        ),
        WorkOrder::ImportFiles(sources) => {
            let mut results = Vec::with_capacity(sources.len());
            for source in sources {
                results.push(import(cx, source, &mut blobs).await);
            }
            WorkOutcome::ImportFiles(results)
        }
        WorkOrder::Render(order) => {
            let cx = cx.clone();
            let order = order.clone();
            let result = tokio::task::spawn_blocking(move || render(&cx, &order))
                .await
                .unwrap_or_else(|e| Err(failure("render-failed", e.to_string())));
            WorkOutcome::Render(result.map(|(file, new)| {
                blobs.extend(new);
                file
            }))
        }
    };
    Prepared { outcome, blobs }
}

fn read_blob(cx: &WorkContext, id: &str) -> Result<Vec<u8>, WorkFailure> {
    match cx.store.get_committed(&keys::blob(id)) {
        Ok(Some(bytes)) => Ok(bytes),
        Ok(None) => Err(failure(
            "blob-missing",
            "the file is no longer stored (the upload expired or was removed)",
        )),
        Err(e) => Err(failure("blob-missing", format!("reading the file: {e:#}"))),
    }
}

async fn import(
    cx: &WorkContext,
    source: &ImportSource,
    blobs: &mut Vec<(String, Vec<u8>)>,
) -> ImportResult {
    let (bytes, source_blob, downloaded) = match (&source.blob, &source.url) {
        (Some(id), _) => match read_blob(cx, id) {
            Ok(b) => (b, id.clone(), None),
            Err(f) => return ImportResult::Failed(f),
        },
        (None, Some(url)) => match cx.outbound.download(url, cx.max_download_bytes).await {
            Ok(b) => {
                let id = random_id();
                let info = crate::bindings::BlobInfo {
                    id: id.clone(),
                    size: b.len() as u64,
                    sha256: sha256_hex(&b),
                };
                blobs.push((id.clone(), b.clone()));
                (b, id, Some(info))
            }
            Err(why) => {
                return ImportResult::Failed(failure(
                    "download-failed",
                    format!("downloading {url} failed: {why}"),
                ));
            }
        },
        (None, None) => return ImportResult::Failed(failure("blob-missing", "no file given")),
    };
    let cx2 = cx.clone();
    let fill = source.fill.clone();
    let name = source.name.clone();
    let converted = tokio::task::spawn_blocking(move || to_pdf(&cx2, bytes, &name, &fill))
        .await
        .unwrap_or_else(|e| Err(failure("conversion-failed", e.to_string())));
    match converted {
        Ok(c) => {
            // A PDF source is its own PDF blob; a converted one gets a new blob.
            let blob = match c.new_pdf {
                Some(pdf) => {
                    let id = random_id();
                    blobs.push((id.clone(), pdf));
                    id
                }
                None => source_blob,
            };
            let (size, sha256) = (c.pdf_size, c.pdf_sha256);
            ImportResult::Ok(ImportedFile {
                blob,
                size,
                sha256,
                pages: c.pages,
                placeholders: c.placeholders,
                downloaded,
            })
        }
        Err(f) => ImportResult::Failed(f),
    }
}

/// A source as a PDF.
struct Converted {
    /// A new PDF when the source was not one itself.
    new_pdf: Option<Vec<u8>>,
    pdf_size: u64,
    pdf_sha256: String,
    pages: Vec<PageSize>,
    placeholders: Vec<String>,
}

fn inspect(bytes: &[u8]) -> Result<Vec<PageSize>, WorkFailure> {
    match pdf::inspect(bytes) {
        Ok(info) => Ok(info
            .pages
            .into_iter()
            .map(|p| PageSize {
                width: p.width,
                height: p.height,
            })
            .collect()),
        Err(pdf::InspectError::Encrypted) => Err(failure(
            "encrypted",
            "the PDF is password-protected; upload it without a password",
        )),
        Err(pdf::InspectError::Invalid(why)) => Err(failure(
            "invalid-pdf",
            format!("the file is not a readable PDF: {why}"),
        )),
    }
}

fn to_pdf(
    cx: &WorkContext,
    bytes: Vec<u8>,
    name: &str,
    fill: &[(String, String)],
) -> Result<Converted, WorkFailure> {
    if bytes.starts_with(b"%PDF")
        || (name.to_ascii_lowercase().ends_with(".pdf") && !office::is_docx(&bytes))
    {
        let pages = inspect(&bytes)?;
        return Ok(Converted {
            new_pdf: None,
            pdf_size: bytes.len() as u64,
            pdf_sha256: sha256_hex(&bytes),
            pages,
            placeholders: Vec::new(),
        });
    }
    if !office::is_docx(&bytes) {
        return Err(failure(
            "unsupported-format",
            format!("{name:?} is neither a PDF nor a Word (.docx) file"),
        ));
    }
    let placeholders = office::docx_placeholders(&bytes)
        .map_err(|e| failure("conversion-failed", format!("reading the Word file: {e:#}")))?;
    let filled = if fill.is_empty() {
        bytes
    } else {
        office::fill_docx(&bytes, fill)
            .map_err(|e| failure("conversion-failed", format!("filling the Word file: {e:#}")))?
    };
    let filled = office::strip_external_links(&filled)
        .map_err(|e| failure("conversion-failed", format!("reading the Word file: {e:#}")))?;
    let Some(soffice) = &cx.soffice else {
        return Err(failure(
            "conversion-unavailable",
            "Word files cannot be converted here: LibreOffice (soffice) is not installed",
        ));
    };
    let pdf =
        office::convert_docx_to_pdf(&filled, soffice, cx.convert_timeout).map_err(|e| match e {
            office::ConvertError::Unavailable(why) => failure(
                "conversion-unavailable",
                format!("LibreOffice could not be started: {why}"),
            ),
            office::ConvertError::Failed(why) => failure(
                "conversion-failed",
                format!("LibreOffice could not convert the Word file: {why}"),
            ),
        })?;
    let pages = inspect(&pdf)?;
    Ok(Converted {
        pdf_size: pdf.len() as u64,
        pdf_sha256: sha256_hex(&pdf),
        new_pdf: Some(pdf),
        pages,
        placeholders,
    })
}

fn block(b: &Block, pictures: &HashMap<String, pdf::Picture>) -> pdf::Block {
    match b {
        Block::Heading(t) => pdf::Block::Heading(t.clone()),
        Block::Text(t) => pdf::Block::Text(t.clone()),
        Block::Row(c) => pdf::Block::Row(c.clone()),
        Block::HeaderRow(c) => pdf::Block::HeaderRow(c.clone()),
        Block::Rule => pdf::Block::Rule,
        Block::PageBreak => pdf::Block::PageBreak,
        Block::Signature(s) => pdf::Block::Signature {
            picture: s.image.as_ref().and_then(|id| pictures.get(id).cloned()),
            text: s.text.clone(),
            caption: s.caption.clone(),
        },
    }
}

/// The PNG blobs a render order draws (stamps and signature blocks), decoded. One that
/// is missing or not a readable PNG is left out: its place is drawn without it.
fn pictures(cx: &WorkContext, order: &RenderOrder) -> HashMap<String, pdf::Picture> {
    let stamped = order.stamps.iter().filter_map(|s| match &s.content {
        StampContent::Image(id) => Some(id),
        _ => None,
    });
    let signed = order
        .appendix
        .iter()
        .chain(&order.summary)
        .filter_map(|b| match b {
            Block::Signature(s) => s.image.as_ref(),
            _ => None,
        });
    let mut out = HashMap::new();
    for id in stamped.chain(signed) {
        if out.contains_key(id) {
            continue;
        }
        match read_blob(cx, id)
            .ok()
            .and_then(|b| esign_formats::stamp::decode_png(&b))
        {
            Some(pic) => {
                out.insert(id.clone(), pic);
            }
            None => tracing::warn!(blob = id, "a signature image is missing or unreadable"),
        }
    }
    out
}

/// Renders the final PDF and its page images; returns the file and its new blobs.
fn render(cx: &WorkContext, order: &RenderOrder) -> Result<(RenderedFile, NewBlobs), WorkFailure> {
    let mut sources = Vec::with_capacity(order.sources.len());
    for id in &order.sources {
        sources.push(read_blob(cx, id)?);
    }
    let refs: Vec<&[u8]> = sources.iter().map(Vec::as_slice).collect();
    let pictures = pictures(cx, order);
    let stamps: Vec<pdf::Stamp> = order
        .stamps
        .iter()
        .map(|s| pdf::Stamp {
            page: s.page as usize,
            left: s.left,
            top: s.top,
            width: s.width,
            height: s.height,
            mark: match &s.content {
                StampContent::Text(t) => esign_formats::stamp::Mark::Text(t.clone()),
                StampContent::Check => esign_formats::stamp::Mark::Check,
                StampContent::Image(id) => esign_formats::stamp::Mark::Image(id.clone()),
            },
        })
        .collect();
    let appendix: Vec<pdf::Block> = order.appendix.iter().map(|b| block(b, &pictures)).collect();
    let summary: Vec<pdf::Block> = order.summary.iter().map(|b| block(b, &pictures)).collect();
    let rendered = pdf::render(&refs, &stamps, &pictures, &appendix, &summary)
        .map_err(|e| failure("render-failed", format!("{e:#}")))?;
    let mut blobs = Vec::new();
    let page_images = match raster::page_images(&rendered.pdf, raster::PAGE_WIDTH_PX) {
        Ok(images) => images
            .into_iter()
            .map(|img| {
                let id = random_id();
                let info = PageImage {
                    blob: id.clone(),
                    size: img.png.len() as u64,
                    width: img.width,
                    height: img.height,
                };
                blobs.push((id, img.png));
                info
            })
            .collect(),
        Err(why) => {
            tracing::warn!("page images of a rendered PDF failed: {why}");
            Vec::new()
        }
    };
    // Sealing last: the page images show the same pages either way, and a seal that
    // must wait (no timestamp) drops everything, so nothing unsealed is kept.
    let (pdf, seal) = match &order.seal {
        None => (rendered.pdf, None),
        Some(s) => {
            let meta = crate::evidence::pades::Metadata {
                document_id: &s.document_id,
                log_head: &s.log_head,
            };
            let (pdf, info) = cx.sealer.seal(&rendered.pdf, &meta)?;
            (pdf, Some(info))
        }
    };
    let file = RenderedFile {
        blob: random_id(),
        size: pdf.len() as u64,
        sha256: sha256_hex(&pdf),
        content_sha256: rendered.content_sha256,
        page_count: rendered.page_count,
        page_images,
        seal,
    };
    blobs.push((file.blob.clone(), pdf));
    Ok((file, blobs))
}

/// New blobs (id, bytes) made by a work order.
type NewBlobs = Vec<(String, Vec<u8>)>;
