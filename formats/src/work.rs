//! The engine's work orders (`work-order` in `wit/esign.wit`): importing files, rendering
//! a document's PDF with its page images and, when asked, sealing it, and fetching a
//! URL. One implementation for every host: the native host calls [`perform`] with its
//! own [`WorkIo`]; the `esign:formats` component (`components/formats`) calls it with
//! one made of its imports. Nothing here does I/O: bytes come from and go to the
//! [`WorkIo`], and so do downloads, Word conversion, the signature and the timestamp.
//!
//! The types are `esign-work`'s, the engine's own: the order the engine writes is the
//! order done here. The hosts convert their WIT bindings to and from them
//! (`esign_work::convert_wit!`).

use crate::digest::sha256_hex;
use crate::seal::{self, SealError, SealHost};
use crate::stamp::Mark;
use crate::{office, pdf, raster};
use std::collections::HashMap;

pub use esign_work::{
    BlobInfo, Block, ImportResult, ImportSource, ImportedFile, PageImage, RenderOrder,
    RenderedFile, SealOrder, SignatureBlock, Stamp, StampContent, WorkFailure, WorkOrder,
    WorkOutcome,
};

/// What the work needs from its host, besides the seal's key and authority
/// ([`SealHost`]).
pub trait WorkIo: SealHost {
    /// A stored blob's bytes: `None` when it is gone, an error when it cannot be read.
    fn blob(&mut self, id: &str) -> Result<Option<Vec<u8>>, String>;
    /// Keeps `data` as a new blob, which the host writes with the outcome.
    fn put(&mut self, data: Vec<u8>) -> BlobInfo;
    /// Downloads an `https://` URL under the host's limits; why not, as a sentence.
    fn download(&mut self, url: &str) -> Result<Vec<u8>, String>;
    /// Converts a Word file (already filled) to PDF, or says why not: code
    /// `conversion-unavailable` where the host has no converter, `conversion-failed`.
    fn convert_docx(&mut self, docx: Vec<u8>) -> Result<Vec<u8>, WorkFailure>;
    /// Something the host's operator may want to know (a picture that cannot be drawn,
    /// page images that failed, a seal that waits).
    fn warn(&mut self, message: &str);
}

fn failure(code: &str, message: impl Into<String>) -> WorkFailure {
    WorkFailure {
        code: code.into(),
        message: message.into(),
    }
}

/// Does `order`; `now_ms` is the time a seal states.
pub fn perform(order: &WorkOrder, now_ms: u64, io: &mut dyn WorkIo) -> WorkOutcome {
    match order {
        WorkOrder::Fetch(url) => WorkOutcome::Fetch(match io.download(url) {
            Ok(bytes) => Ok(io.put(bytes)),
            Err(why) => Err(failure(
                "download-failed",
                format!("downloading {url} failed: {why}"),
            )),
        }),
        WorkOrder::Import(sources) => WorkOutcome::Import(
            sources
                .iter()
                .map(|source| import(source, &mut *io))
                .collect(),
        ),
        WorkOrder::Render(order) => WorkOutcome::Render(render(order, now_ms, io)),
    }
}

fn read_blob(io: &mut dyn WorkIo, id: &str) -> Result<Vec<u8>, WorkFailure> {
    match io.blob(id) {
        Ok(Some(bytes)) => Ok(bytes),
        Ok(None) => Err(failure(
            "blob-missing",
            "the file is no longer stored (the upload expired or was removed)",
        )),
        Err(e) => Err(failure("blob-missing", format!("reading the file: {e}"))),
    }
}

fn import(source: &ImportSource, io: &mut dyn WorkIo) -> Result<ImportedFile, WorkFailure> {
    let (bytes, source_blob, downloaded) = match (&source.blob, &source.url) {
        (Some(id), _) => (read_blob(io, id)?, id.clone(), None),
        (None, Some(url)) => match io.download(url) {
            Ok(bytes) => {
                let info = io.put(bytes.clone());
                (bytes, info.id.clone(), Some(info))
            }
            Err(why) => {
                return Err(failure(
                    "download-failed",
                    format!("downloading {url} failed: {why}"),
                ));
            }
        },
        (None, None) => return Err(failure("blob-missing", "no file given")),
    };
    let converted = to_pdf(io, bytes, &source.name, &source.fill)?;
    // A PDF source is its own PDF blob; a converted one gets a new blob.
    let (blob, size, sha256) = match converted.new_pdf {
        Some(pdf) => {
            let info = io.put(pdf);
            (info.id, info.size, info.sha256)
        }
        None => (source_blob, converted.size, converted.sha256),
    };
    Ok(ImportedFile {
        blob,
        size,
        sha256,
        pages: converted.pages,
        placeholders: converted.placeholders,
        downloaded,
    })
}

/// A source as a PDF.
struct Converted {
    /// A new PDF when the source was not one itself.
    new_pdf: Option<Vec<u8>>,
    size: u64,
    sha256: String,
    pages: Vec<pdf::PageSize>,
    placeholders: Vec<String>,
}

fn inspect(bytes: &[u8]) -> Result<Vec<pdf::PageSize>, WorkFailure> {
    match pdf::inspect(bytes) {
        Ok(info) => Ok(info.pages),
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
    io: &mut dyn WorkIo,
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
            size: bytes.len() as u64,
            sha256: sha256_hex(&bytes),
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
    let pdf = io.convert_docx(filled)?;
    let pages = inspect(&pdf)?;
    Ok(Converted {
        size: pdf.len() as u64,
        sha256: sha256_hex(&pdf),
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
        Block::Signature(SignatureBlock {
            image,
            text,
            caption,
        }) => pdf::Block::Signature {
            picture: image.as_ref().and_then(|id| pictures.get(id).cloned()),
            text: text.clone(),
            caption: caption.clone(),
        },
    }
}

/// The PNG and JPEG blobs a render order draws (stamps and signature blocks), decoded.
/// One that is missing or not a readable picture is left out: its place is drawn
/// without it.
fn pictures(io: &mut dyn WorkIo, order: &RenderOrder) -> HashMap<String, pdf::Picture> {
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
        match read_blob(io, id)
            .ok()
            .and_then(|b| crate::stamp::decode_picture(&b))
        {
            Some(pic) => {
                out.insert(id.clone(), pic);
            }
            None => io.warn(&format!(
                "a signature image is missing or unreadable: blob {id}"
            )),
        }
    }
    out
}

/// Renders the final PDF and its page images, then seals it when the order asks; the
/// new blobs (page images, then the PDF) are put only when all of it succeeded.
fn render(
    order: &RenderOrder,
    now_ms: u64,
    io: &mut dyn WorkIo,
) -> Result<RenderedFile, WorkFailure> {
    let mut sources = Vec::with_capacity(order.sources.len());
    for id in &order.sources {
        sources.push(read_blob(io, id)?);
    }
    let refs: Vec<&[u8]> = sources.iter().map(Vec::as_slice).collect();
    let pictures = pictures(io, order);
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
                StampContent::Text(t) => Mark::Text(t.clone()),
                StampContent::Check => Mark::Check,
                StampContent::Image(id) => Mark::Image(id.clone()),
            },
        })
        .collect();
    let appendix: Vec<pdf::Block> = order.appendix.iter().map(|b| block(b, &pictures)).collect();
    let summary: Vec<pdf::Block> = order.summary.iter().map(|b| block(b, &pictures)).collect();
    let rendered = pdf::render(&refs, &stamps, &pictures, &appendix, &summary)
        .map_err(|e| failure("render-failed", format!("{e:#}")))?;
    drop((sources, pictures));
    let images = match raster::page_images(&rendered.pdf, raster::PAGE_WIDTH_PX) {
        Ok(images) => images,
        Err(why) => {
            io.warn(&format!("page images of a rendered PDF failed: {why}"));
            Vec::new()
        }
    };
    // Sealing last: the page images show the same pages either way, and a seal that
    // must wait (no timestamp) drops everything, so nothing unsealed is kept.
    let (pdf, seal) = match &order.seal {
        None => (rendered.pdf, None),
        Some(s) => {
            let meta = seal::Metadata {
                document_id: &s.document_id,
                log_head: &s.log_head,
            };
            match seal::seal(&rendered.pdf, &meta, now_ms, &*io) {
                Ok((pdf, info)) => (pdf, Some(info)),
                Err(SealError::TimestampUnavailable(why)) => {
                    io.warn(&format!("sealing {} waits: {why}", s.document_id));
                    return Err(failure("timestamp-unavailable", why));
                }
                Err(SealError::Failed(why)) => return Err(failure("seal-failed", why)),
            }
        }
    };
    let page_images = images
        .into_iter()
        .map(|img| {
            let (width, height) = (img.width, img.height);
            let info = io.put(img.png);
            PageImage {
                blob: info.id,
                size: info.size,
                width,
                height,
            }
        })
        .collect();
    let info = io.put(pdf);
    Ok(RenderedFile {
        blob: info.id,
        size: info.size,
        sha256: info.sha256,
        content_sha256: rendered.content_sha256,
        page_count: rendered.page_count,
        page_images,
        seal,
    })
}
