//! PDF handling for esign: inspecting uploaded PDFs, merging them with generated
//! text pages (appendix and signature summary), and extracting text.
//!
//! Field values and signatures are drawn onto the content pages by [`crate::stamp`].
//! Generated pages draw every script with the built-in fonts, embedded as subsets with
//! a ToUnicode map (`pdf_fonts`), so text extraction reads them back; they are laid out
//! in [`crate::layout`].
//!
//! (Over 800 lines with its tests: the code is about 560.)

use std::collections::{HashMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};

use anyhow::{Context, anyhow, bail};
use lopdf::{Dictionary, Document, IncrementalDocument, Object, ObjectId, Stream, dictionary};
use sha2::{Digest, Sha256};

use crate::digest::hex;
pub use crate::layout::Block;
use crate::layout::{A4_HEIGHT, A4_WIDTH, layout};
pub use crate::stamp::{Picture, Stamp};

/// Size of one page in PDF points: what a viewer shows, the crop box (or the media box
/// when there is no crop box), with width and height swapped when the page is rotated by
/// 90 or 270 degrees. The WIT's `page-size`, shared with the engine.
pub use esign_work::PageSize;

/// What importing a PDF found: one entry per page, in page order (never empty).
#[derive(Debug, Clone, PartialEq)]
pub struct PdfInfo {
    /// The size of every page, first page first.
    pub pages: Vec<PageSize>,
}

/// Why a file could not be imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InspectError {
    /// The PDF is encrypted and needs a user password to open.
    Encrypted,
    /// Not a readable PDF (garbage, truncated, broken), or it has zero pages.
    /// The string is a human-readable reason.
    Invalid(String),
}

impl std::fmt::Display for InspectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InspectError::Encrypted => f.write_str("the PDF is password protected"),
            InspectError::Invalid(reason) => write!(f, "not a valid PDF: {reason}"),
        }
    }
}

impl std::error::Error for InspectError {}

/// The final document produced by [`render`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The complete PDF file.
    pub pdf: Vec<u8>,
    /// Lower-case hex SHA-256 of the content revision: the serialized PDF of the sources
    /// plus the appendix, before the summary. The summary is an incremental update, so that
    /// revision is byte-for-byte the start of `pdf`, up to and including the second-to-last
    /// `%%EOF` marker (no newline after it): anyone can recompute this hash from the final file.
    pub content_sha256: String,
    /// Total number of pages in `pdf`.
    pub page_count: u32,
}

/// Size used when a page has no usable media box (US Letter, as viewers assume).
const DEFAULT_MEDIA_BOX: [f32; 4] = [0.0, 0.0, 612.0, 792.0];
/// How far from the end of the file `%%EOF` must be (the limit readers such as Acrobat use).
const EOF_WINDOW: usize = 1024;

/// Reads a PDF and reports its page sizes.
///
/// Accepts unencrypted PDFs and PDFs encrypted with an owner password only (empty user
/// password). Returns [`InspectError::Encrypted`] when a user password is needed and
/// [`InspectError::Invalid`] for anything that is not a complete, readable PDF with at
/// least one page (including a file cut short: `%%EOF` must be within the last 1024
/// bytes). Never panics, whatever the input.
pub fn inspect(bytes: &[u8]) -> Result<PdfInfo, InspectError> {
    guarded(|| inspect_inner(bytes)).unwrap_or_else(|| {
        Err(InspectError::Invalid(
            "the PDF parser failed on this file".to_string(),
        ))
    })
}

fn inspect_inner(bytes: &[u8]) -> Result<PdfInfo, InspectError> {
    let invalid = |reason: &str| InspectError::Invalid(reason.to_string());
    if bytes.is_empty() {
        return Err(invalid("the file is empty"));
    }
    if !bytes.windows(5).take(1024).any(|w| w == b"%PDF-") {
        return Err(invalid("the file does not start with a PDF header"));
    }
    let tail = &bytes[bytes.len().saturating_sub(EOF_WINDOW)..];
    if !tail.windows(5).any(|w| w == b"%%EOF") {
        return Err(invalid(
            "the file is truncated (no %%EOF marker at its end)",
        ));
    }
    let doc = Document::load_mem(bytes)
        .map_err(|e| InspectError::Invalid(format!("cannot parse the PDF: {e}")))?;
    if needs_password(&doc) {
        return Err(InspectError::Encrypted);
    }
    let page_ids: Vec<ObjectId> = doc.get_pages().into_values().collect();
    if page_ids.is_empty() {
        return Err(invalid("the PDF has no pages"));
    }
    check_image_sizes(&doc)?;
    let mut pages = Vec::with_capacity(page_ids.len());
    for (index, page_id) in page_ids.into_iter().enumerate() {
        for content_id in doc.get_page_contents(page_id) {
            if !doc.objects.contains_key(&content_id) {
                return Err(InspectError::Invalid(format!(
                    "the content of page {} is missing",
                    index + 1
                )));
            }
        }
        pages.push(page_size(&doc, page_id));
    }
    Ok(PdfInfo { pages })
}

/// Pixels an image in an imported PDF may have: a page image is 800 pixels wide, and
/// an A4 page scanned at 600 dpi has 35 million. Decoding is what costs memory (a 1 MB
/// Flate stream can hold 400 million pixels), so larger images are refused at import,
/// before anything decodes them.
pub const MAX_IMAGE_PIXELS: u64 = 50_000_000;

/// Refuses a PDF with an image of more than [`MAX_IMAGE_PIXELS`] (by its dictionary's
/// `Width` and `Height`, which every decoder allocates by).
fn check_image_sizes(doc: &Document) -> Result<(), InspectError> {
    let int = |d: &Dictionary, key: &[u8]| {
        d.get(key)
            .ok()
            .and_then(|o| doc.dereference(o).ok())
            .and_then(|(_, o)| o.as_i64().ok())
            .map_or(0, |v| v.max(0) as u64)
    };
    for object in doc.objects.values() {
        let Object::Stream(stream) = object else {
            continue;
        };
        let d = &stream.dict;
        if !d
            .get(b"Subtype")
            .is_ok_and(|t| t.as_name().is_ok_and(|n| n == b"Image"))
        {
            continue;
        }
        let (width, height) = (int(d, b"Width"), int(d, b"Height"));
        if width.saturating_mul(height) > MAX_IMAGE_PIXELS {
            return Err(InspectError::Invalid(format!(
                "it has an image of {width} × {height} pixels; images of up to {} million \
                 pixels are taken",
                MAX_IMAGE_PIXELS / 1_000_000
            )));
        }
    }
    Ok(())
}

/// Whether the document is encrypted and could not be opened with an empty user password.
fn needs_password(doc: &Document) -> bool {
    doc.trailer.has(b"Encrypt") && doc.encryption_state.is_none()
}

/// The part of a page that is shown: its crop box within its media box, normalized to
/// `[x0 y0 x1 y1]` with `x0 < x1`, `y0 < y1`.
pub(crate) fn visible_box(doc: &Document, page_id: ObjectId) -> [f32; 4] {
    let media = inherited(doc, page_id, b"MediaBox")
        .and_then(|o| rect(doc, &o))
        .unwrap_or(DEFAULT_MEDIA_BOX);
    let v = inherited(doc, page_id, b"CropBox")
        .and_then(|o| rect(doc, &o))
        .map(|crop| intersect(crop, media))
        .unwrap_or(media);
    [
        v[0].min(v[2]),
        v[1].min(v[3]),
        v[0].max(v[2]),
        v[1].max(v[3]),
    ]
}

/// The displayed size of a page (crop box, else media box, rotation applied).
pub(crate) fn page_size(doc: &Document, page_id: ObjectId) -> PageSize {
    let visible = visible_box(doc, page_id);
    let width = (visible[2] - visible[0]).abs();
    let height = (visible[3] - visible[1]).abs();
    let rotate = inherited(doc, page_id, b"Rotate")
        .and_then(|o| deref(doc, &o).as_i64().ok())
        .unwrap_or(0);
    if rotate.rem_euclid(180) == 90 {
        PageSize {
            width: height,
            height: width,
        }
    } else {
        PageSize { width, height }
    }
}

/// Intersection of two rectangles; falls back to `outer` when they do not overlap.
fn intersect(inner: [f32; 4], outer: [f32; 4]) -> [f32; 4] {
    let norm = |r: [f32; 4]| {
        [
            r[0].min(r[2]),
            r[1].min(r[3]),
            r[0].max(r[2]),
            r[1].max(r[3]),
        ]
    };
    let (a, b) = (norm(inner), norm(outer));
    let r = [
        a[0].max(b[0]),
        a[1].max(b[1]),
        a[2].min(b[2]),
        a[3].min(b[3]),
    ];
    if r[2] > r[0] && r[3] > r[1] { r } else { b }
}

/// Follows a reference (a few levels at most) to the object it names.
fn deref<'a>(doc: &'a Document, object: &'a Object) -> &'a Object {
    let mut current = object;
    for _ in 0..8 {
        match current {
            Object::Reference(id) => match doc.objects.get(id) {
                Some(next) => current = next,
                None => return &Object::Null,
            },
            _ => return current,
        }
    }
    &Object::Null
}

/// A rectangle `[llx lly urx ury]` with finite numbers, or `None`.
fn rect(doc: &Document, object: &Object) -> Option<[f32; 4]> {
    let array = deref(doc, object).as_array().ok()?;
    if array.len() != 4 {
        return None;
    }
    let mut r = [0.0f32; 4];
    for (slot, item) in r.iter_mut().zip(array) {
        *slot = deref(doc, item).as_float().ok()?;
        if !slot.is_finite() {
            return None;
        }
    }
    ((r[2] - r[0]).abs() > 0.0 && (r[3] - r[1]).abs() > 0.0).then_some(r)
}

/// The value of an inheritable page attribute, looked up on the page and then its
/// ancestors. A missing or null value counts as absent.
fn inherited(doc: &Document, page_id: ObjectId, key: &[u8]) -> Option<Object> {
    let mut current = page_id;
    let mut seen = HashSet::new();
    while seen.insert(current) {
        let node = doc.get_dictionary(current).ok()?;
        if let Ok(value) = node.get(key)
            && !matches!(deref(doc, value), Object::Null)
        {
            return Some(value.clone());
        }
        current = node.get(b"Parent").ok()?.as_reference().ok()?;
    }
    None
}

/// Runs `f`, turning a panic inside it (from the PDF parser) into `None`.
fn guarded<T>(f: impl FnOnce() -> T) -> Option<T> {
    catch_unwind(AssertUnwindSafe(f)).ok()
}

/// Loads a PDF for merging or text extraction, decrypting owner-password-only files.
fn load(bytes: &[u8]) -> anyhow::Result<Document> {
    let doc = guarded(|| Document::load_mem(bytes))
        .ok_or_else(|| anyhow!("the PDF parser failed on this file"))?
        .context("cannot parse the PDF")?;
    if needs_password(&doc) {
        bail!("the PDF is password protected");
    }
    Ok(doc)
}

/// Builds the final document: all pages of every source PDF in order, then `appendix`
/// laid out on new A4 pages (none when it is empty). The SHA-256 of that content (the
/// serialized PDF of sources + appendix) is computed; then `summary` is laid out on new
/// A4 page(s), followed by a final line `Content SHA-256: <hex>`.
///
/// The summary pages are written as an incremental update, so the hashed content is
/// exactly the first bytes of [`Rendered::pdf`] (see [`Rendered::content_sha256`]). The output is deterministic: the same inputs give the same bytes and hash.
/// Source pages keep their content, resources, size, crop box and rotation; document-level
/// parts of the sources (outline, form definitions, metadata) are not carried over.
/// Sources must be PDFs that [`inspect`] accepted; anything else returns an error.
pub fn render(
    sources: &[&[u8]],
    stamps: &[Stamp],
    pictures: &HashMap<String, Picture>,
    appendix: &[Block],
    summary: &[Block],
) -> anyhow::Result<Rendered> {
    guarded(|| render_inner(sources, stamps, pictures, appendix, summary))
        .unwrap_or_else(|| Err(anyhow!("the PDF library failed on these inputs")))
}

fn render_inner(
    sources: &[&[u8]],
    stamps: &[Stamp],
    pictures: &HashMap<String, Picture>,
    appendix: &[Block],
    summary: &[Block],
) -> anyhow::Result<Rendered> {
    let mut doc = Document::with_version("1.7");
    let pages_id = doc.new_object_id();
    let mut kids: Vec<ObjectId> = Vec::new();

    for (index, source) in sources.iter().enumerate() {
        let source = load(source).with_context(|| format!("source PDF #{}", index + 1))?;
        append_source(&mut doc, source, pages_id, &mut kids)
            .with_context(|| format!("source PDF #{}", index + 1))?;
    }
    crate::stamp::stamp_pages(&mut doc, &kids, stamps, pictures, visible_box)
        .context("drawing the fields")?;

    let appendix = layout(appendix);
    if !appendix.pages.is_empty() {
        let resources = add_font_resources(&mut doc, &appendix.pictures, appendix.fonts);
        for content in appendix.pages {
            kids.push(add_page(&mut doc, pages_id, resources, content));
        }
    }
    if kids.is_empty() {
        bail!("nothing to render: no source pages and an empty appendix");
    }
    doc.objects
        .insert(pages_id, Object::Dictionary(pages_node(&kids)));
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    doc.prune_objects();

    let mut content = Vec::new();
    doc.save_to(&mut content).context("cannot write the PDF")?;
    let content_sha256 = hex(&Sha256::digest(&content));
    doc.xref_start = startxref(&content).context("cannot find startxref in the written PDF")?;

    // Summary: an incremental update on top of the hashed content.
    let mut summary_blocks = summary.to_vec();
    summary_blocks.push(Block::Text(format!("Content SHA-256: {content_sha256}")));
    let mut update = IncrementalDocument::create_from(content, doc);
    let new = &mut update.new_document;
    // lopdf numbered the content's cross-reference stream `max_id + 1` without counting
    // it: new objects start after it, so none redefines it (strict readers refuse that).
    new.max_id += 1;
    let summary = layout(&summary_blocks);
    let resources = add_font_resources(new, &summary.pictures, summary.fonts);
    for page in summary.pages {
        kids.push(add_page(new, pages_id, resources, page));
    }
    new.objects
        .insert(pages_id, Object::Dictionary(pages_node(&kids)));
    let mut pdf = Vec::new();
    update.save_to(&mut pdf).context("cannot write the PDF")?;

    Ok(Rendered {
        pdf,
        content_sha256,
        page_count: u32::try_from(kids.len()).context("too many pages")?,
    })
}

/// The byte offset after the last `startxref` keyword of a PDF we just wrote.
fn startxref(pdf: &[u8]) -> Option<usize> {
    let keyword = b"startxref";
    let at = pdf.windows(keyword.len()).rposition(|w| w == keyword)?;
    let digits: String = pdf[at + keyword.len()..]
        .iter()
        .skip_while(|b| b.is_ascii_whitespace())
        .take_while(|b| b.is_ascii_digit())
        .map(|&b| char::from(b))
        .collect();
    digits.parse().ok()
}

fn pages_node(kids: &[ObjectId]) -> Dictionary {
    dictionary! {
        "Type" => "Pages",
        "Kids" => kids.iter().map(|&id| Object::Reference(id)).collect::<Vec<_>>(),
        "Count" => kids.len() as i64,
    }
}

/// Copies every page of `source` into `doc` under the page tree node `pages_id`,
/// renumbering the source's objects past `doc`'s and appending the new page ids to `kids`.
/// Objects the pages do not use are removed later by `prune_objects`.
fn append_source(
    doc: &mut Document,
    mut source: Document,
    pages_id: ObjectId,
    kids: &mut Vec<ObjectId>,
) -> anyhow::Result<()> {
    let page_ids: Vec<ObjectId> = source.get_pages().into_values().collect();
    if page_ids.is_empty() {
        bail!("the PDF has no pages");
    }
    // Inherited attributes live on page tree nodes that are not copied: put them on the page.
    for &page_id in &page_ids {
        let mut page = source
            .get_dictionary(page_id)
            .context("a page is not a dictionary")?
            .clone();
        let media_box = inherited(&source, page_id, b"MediaBox")
            .filter(|o| rect(&source, o).is_some())
            .unwrap_or_else(|| {
                DEFAULT_MEDIA_BOX
                    .iter()
                    .map(|&v| Object::Real(v))
                    .collect::<Vec<_>>()
                    .into()
            });
        page.set("MediaBox", media_box);
        if let Some(crop_box) = inherited(&source, page_id, b"CropBox") {
            page.set("CropBox", crop_box);
        }
        page.set(
            "Resources",
            inherited(&source, page_id, b"Resources").unwrap_or_else(|| Dictionary::new().into()),
        );
        if let Some(rotate) = inherited(&source, page_id, b"Rotate") {
            page.set("Rotate", rotate);
        }
        source.objects.insert(page_id, Object::Dictionary(page));
    }

    source.renumber_objects_with(doc.max_id + 1);
    let page_ids: Vec<ObjectId> = source.get_pages().into_values().collect();
    for &page_id in &page_ids {
        if let Some(Object::Dictionary(page)) = source.objects.get_mut(&page_id) {
            page.set("Parent", pages_id);
        }
    }
    let highest = source.objects.keys().map(|id| id.0).max().unwrap_or(0);
    doc.objects.extend(source.objects);
    doc.max_id = doc.max_id.max(highest).max(source.max_id);
    kids.extend(page_ids);
    Ok(())
}

/// Adds the resources of generated pages: the fonts they drew with (`fonts`, embedded
/// as subsets) and `pictures` as image XObjects under their names; returns the id of
/// the resource dictionary.
fn add_font_resources(
    doc: &mut Document,
    pictures: &[(String, Picture)],
    fonts: crate::pdf_fonts::PdfFonts,
) -> ObjectId {
    let fonts = fonts.finish(doc);
    let mut resources = dictionary! {
        "Font" => fonts,
        "ProcSet" => vec![Object::Name(b"PDF".to_vec()), Object::Name(b"Text".to_vec())],
    };
    if !pictures.is_empty() {
        let mut xobjects = Dictionary::new();
        for (name, pic) in pictures {
            let id = crate::stamp::add_picture(doc, pic);
            xobjects.set(name.as_bytes().to_vec(), id);
        }
        resources.set("XObject", xobjects);
    }
    doc.add_object(resources)
}

/// Adds one A4 page with the given content stream and returns its id.
fn add_page(
    doc: &mut Document,
    pages_id: ObjectId,
    resources: ObjectId,
    content: Vec<u8>,
) -> ObjectId {
    let mut stream = Stream::new(Dictionary::new(), content);
    // Compression only fails on an I/O error writing to memory; uncompressed is still valid.
    let _ = stream.compress();
    let content_id = doc.add_object(stream);
    doc.add_object(dictionary! {
        "Type" => "Page",
        "Parent" => pages_id,
        "MediaBox" => vec![0.into(), 0.into(), Object::Real(A4_WIDTH), Object::Real(A4_HEIGHT)],
        "Resources" => resources,
        "Contents" => content_id,
    })
}

/// Text of every page (for tests and search), using lopdf's text extraction.
///
/// Pages are concatenated in order; text lines end with `\n`, without the spaces before
/// it. lopdf reads glyphs through their ToUnicode maps, not `/ActualText`: text whose
/// glyphs are reordered (right-to-left, Indic) reads back in drawing order here, and
/// exactly with `pdftotext`. Text in fonts lopdf cannot
/// decode is skipped rather than failing the whole document. Errors only when the bytes
/// are not a readable PDF or need a password.
pub fn extract_text(bytes: &[u8]) -> anyhow::Result<String> {
    let doc = load(bytes)?;
    guarded(|| {
        let mut text = String::new();
        for page_number in doc.get_pages().into_keys() {
            for chunk in doc
                .extract_text_chunks(&[page_number])
                .into_iter()
                .flatten()
            {
                text.push_str(&chunk);
            }
        }
        // lopdf ends every shown array of glyphs with a space: none at a line's end. A
        // glyph without text of its own (a mark the font draws apart from its letter,
        // whose cluster's text its first glyph carries) reads as U+FFFD: dropped.
        let text = text.replace('\u{fffd}', "");
        let mut trimmed: String = text
            .lines()
            .map(|l| l.trim_end().to_string() + "\n")
            .collect();
        if !text.ends_with('\n') {
            trimmed.pop();
        }
        trimmed
    })
    .ok_or_else(|| anyhow!("text extraction failed on this file"))
}

/// A valid PDF with `pages` A4 pages, page i (from 1) showing the text "Page i"
/// (for tests and benchmarks). `sample_pdf(0)` is a PDF with zero pages, which
/// [`inspect`] rejects.
pub fn sample_pdf(pages: usize) -> Vec<u8> {
    sample_pdf_of_size(pages, 0)
}

/// [`sample_pdf`] grown to at least `bytes` by an unreferenced stream of filler (for
/// tests and benchmarks of large files).
pub fn sample_pdf_of_size(pages: usize, bytes: usize) -> Vec<u8> {
    let mut doc = Document::with_version("1.7");
    if bytes > 0 {
        doc.add_object(lopdf::Stream::new(dictionary! {}, vec![b'x'; bytes]));
    }
    let pages_id = doc.new_object_id();
    let blocks: Vec<Block> = (1..=pages)
        .flat_map(|i| [Block::Heading(format!("Page {i}")), Block::PageBreak])
        .collect();
    let laid_out = layout(&blocks);
    let resources = add_font_resources(&mut doc, &[], laid_out.fonts);
    let kids: Vec<ObjectId> = laid_out
        .pages
        .into_iter()
        .map(|content| add_page(&mut doc, pages_id, resources, content))
        .collect();
    doc.objects
        .insert(pages_id, Object::Dictionary(pages_node(&kids)));
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = doc.save_to(&mut out);
    out
}

// ---------------------------------------------------------------------------
// Text layout
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fonts::{Style, shape};
    use crate::layout::{MARGIN, TEXT_SIZE};
    use std::time::Instant;

    const ENCRYPTED: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/encrypted.pdf"
    ));
    const OWNER_ONLY: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/owner-only.pdf"
    ));

    /// The revision covered by `content_sha256`: everything up to the second-to-last `%%EOF`.
    fn content_revision(pdf: &[u8]) -> &[u8] {
        let last = pdf.windows(5).rposition(|w| w == b"%%EOF").expect("%%EOF");
        let end = pdf[..last]
            .windows(5)
            .rposition(|w| w == b"%%EOF")
            .expect("two %%EOF")
            + 5;
        &pdf[..end]
    }

    fn a4() -> PageSize {
        PageSize {
            width: A4_WIDTH,
            height: A4_HEIGHT,
        }
    }

    /// A 2-page PDF whose size, crop box, rotation and resources are inherited from the
    /// page tree, saved with object streams and a cross-reference stream.
    fn inherited_attributes_pdf() -> Vec<u8> {
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font = doc.add_object(dictionary! {
            "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Courier",
        });
        let mut kids = Vec::new();
        for text in ["Landscape one", "Landscape two"] {
            let content = format!("BT /F9 12 Tf 20 20 Td ({text}) Tj ET");
            let content_id = doc.add_object(Stream::new(Dictionary::new(), content.into_bytes()));
            kids.push(Object::Reference(doc.add_object(dictionary! {
                "Type" => "Page", "Parent" => pages_id, "Contents" => content_id,
            })));
        }
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! {
                "Type" => "Pages", "Kids" => kids, "Count" => 2,
                "MediaBox" => vec![0.into(), 0.into(), 400.into(), 300.into()],
                "CropBox" => vec![10.into(), 10.into(), 390.into(), 290.into()],
                "Rotate" => 90,
                "Resources" => dictionary! { "Font" => dictionary! { "F9" => font } },
            }),
        );
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog);
        let mut out = Vec::new();
        doc.save_modern(&mut out).unwrap();
        out
    }

    #[test]
    fn sample_pdf_is_accepted_and_readable() {
        let pdf = sample_pdf(3);
        let info = inspect(&pdf).unwrap();
        assert_eq!(info.pages, vec![a4(); 3]);
        let text = extract_text(&pdf).unwrap();
        assert_eq!(text, "Page 1\nPage 2\nPage 3\n");
    }

    #[test]
    fn inspect_rejects_broken_input_with_a_reason() {
        let pdf = sample_pdf(2);
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("empty", Vec::new()),
            ("garbage", b"hello, this is not a PDF at all".to_vec()),
            ("header only", b"%PDF-1.7\n".to_vec()),
            ("truncated", pdf[..pdf.len() / 2].to_vec()),
            ("truncated end", pdf[..pdf.len() - 7].to_vec()),
            ("zero pages", sample_pdf(0)),
        ];
        for (what, bytes) in cases {
            match inspect(&bytes) {
                Err(InspectError::Invalid(reason)) => {
                    assert!(!reason.is_empty(), "{what}");
                    println!("{what}: {reason}");
                }
                other => panic!("{what}: expected Invalid, got {other:?}"),
            }
        }
    }

    #[test]
    fn inspect_never_panics_on_random_or_damaged_bytes() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let pdf = sample_pdf(2);
        let modern = inherited_attributes_pdf();
        for round in 0..300 {
            let mut bytes: Vec<u8> = match round % 3 {
                0 => (0..next() % 2048).map(|_| next() as u8).collect(),
                1 => pdf[..(next() as usize) % pdf.len()].to_vec(),
                _ => modern.clone(),
            };
            if round % 3 == 2 || round % 5 == 0 {
                for _ in 0..1 + next() % 8 {
                    if !bytes.is_empty() {
                        let at = (next() as usize) % bytes.len();
                        bytes[at] = next() as u8;
                    }
                }
            }
            if round % 7 == 0 {
                bytes.splice(0..0, b"%PDF-1.4\n".iter().copied());
            }
            // Whatever the verdict, none of these may panic or hang.
            if inspect(&bytes).is_ok() {
                let _ = render(
                    &[&bytes],
                    &[],
                    &Default::default(),
                    &[Block::Text("x".into())],
                    &[],
                );
            }
            let _ = extract_text(&bytes);
        }
    }

    #[test]
    fn inspect_tells_encrypted_from_owner_password_only() {
        assert_eq!(inspect(ENCRYPTED), Err(InspectError::Encrypted));
        let info = inspect(OWNER_ONLY).unwrap();
        assert_eq!(info.pages.len(), 1);
        assert!((info.pages[0].width - A4_WIDTH).abs() < 0.01);
        assert!(render(&[ENCRYPTED], &[], &Default::default(), &[], &[]).is_err());
        assert!(extract_text(ENCRYPTED).is_err());
    }

    #[test]
    fn owner_password_only_source_is_merged_decrypted() {
        let out = render(
            &[OWNER_ONLY],
            &[],
            &Default::default(),
            &[],
            &[Block::Text("Signed".into())],
        )
        .unwrap();
        assert_eq!(out.page_count, 2);
        let text = extract_text(&out.pdf).unwrap();
        assert!(text.starts_with("Page 1\n"), "{text}");
        assert!(!out.pdf.windows(8).any(|w| w == b"/Encrypt"));
    }

    #[test]
    fn render_merges_sources_then_appendix_then_summary() {
        let first = sample_pdf(2);
        let second = inherited_attributes_pdf();
        let appendix = vec![
            Block::Heading("Pricing".into()),
            Block::HeaderRow(vec!["Item".into(), "Quantity".into(), "Total".into()]),
            Block::Rule,
            Block::Row(vec!["Widget".into(), "2 x 10.00".into(), "20.00".into()]),
            Block::Row(vec![
                "Caf\u{e9} cr\u{e8}me \u{2014} \u{201c}deluxe\u{201d}".into(),
                "1 x \u{20ac}5.00".into(),
                "\u{20ac}5.00".into(),
            ]),
            Block::Text("Non-Latin: Łódź Ελλάδα Россия שלום مرحبا 日本".into()),
        ];
        let summary = vec![
            Block::Heading("Signatures".into()),
            Block::Text("Signed by Alice (alice@example.com)".into()),
        ];
        let out = render(
            &[&first, &second],
            &[],
            &Default::default(),
            &appendix,
            &summary,
        )
        .unwrap();
        assert_eq!(out.page_count, 2 + 2 + 1 + 1);

        let info = inspect(&out.pdf).unwrap();
        let landscape = PageSize {
            width: 280.0,
            height: 380.0,
        };
        assert_eq!(
            info.pages,
            vec![a4(), a4(), landscape, landscape, a4(), a4()]
        );

        let text = extract_text(&out.pdf).unwrap();
        let expected_order = [
            "Page 1",
            "Page 2",
            "Landscape one",
            "Landscape two",
            "Pricing",
            "Item Quantity Total\n",
            "Widget 2 x 10.00 20.00\n",
            "Caf\u{e9} cr\u{e8}me \u{2014} \u{201c}deluxe\u{201d} 1 x \u{20ac}5.00 \u{20ac}5.00\n",
            "Non-Latin: Łódź Ελλάδα Россия ",
            "Signatures",
            "Signed by Alice (alice@example.com)\n",
        ];
        let mut from = 0;
        for needle in expected_order {
            let at = text[from..]
                .find(needle)
                .unwrap_or_else(|| panic!("{needle:?} missing in order in {text}"));
            from += at + needle.len();
        }
        let hash_line = format!("Content SHA-256: {}\n", out.content_sha256);
        assert!(text.ends_with(&hash_line), "{text}");

        // The hash covers the first revision, which is a complete PDF without the summary.
        assert_eq!(out.content_sha256.len(), 64);
        let content = content_revision(&out.pdf);
        assert_eq!(hex(&Sha256::digest(content)), out.content_sha256);
        assert!(content.len() < out.pdf.len());
        assert_eq!(inspect(content).unwrap().pages.len(), 5);
        assert!(!extract_text(content).unwrap().contains("Signatures"));
    }

    #[test]
    fn render_is_deterministic_and_hash_depends_on_content_only() {
        let src = sample_pdf(2);
        let a = render(
            &[&src],
            &[],
            &Default::default(),
            &[Block::Text("A".into())],
            &[Block::Text("one".into())],
        )
        .unwrap();
        let b = render(
            &[&src],
            &[],
            &Default::default(),
            &[Block::Text("A".into())],
            &[Block::Text("one".into())],
        )
        .unwrap();
        assert_eq!(a, b);
        let c = render(
            &[&src],
            &[],
            &Default::default(),
            &[Block::Text("A".into())],
            &[Block::Text("two".into())],
        )
        .unwrap();
        assert_eq!(a.content_sha256, c.content_sha256);
        let d = render(
            &[&src],
            &[],
            &Default::default(),
            &[Block::Text("B".into())],
            &[Block::Text("one".into())],
        )
        .unwrap();
        assert_ne!(a.content_sha256, d.content_sha256);
    }

    #[test]
    fn empty_appendix_adds_no_page_and_empty_summary_still_has_hash_page() {
        let src = sample_pdf(3);
        let out = render(&[&src], &[], &Default::default(), &[], &[]).unwrap();
        assert_eq!(out.page_count, 4);
        assert_eq!(inspect(&out.pdf).unwrap().pages.len(), 4);
        let text = extract_text(&out.pdf).unwrap();
        assert!(text.ends_with(&format!("Content SHA-256: {}\n", out.content_sha256)));
        // Appendix-only documents work too.
        let out = render(
            &[],
            &[],
            &Default::default(),
            &[Block::Text("Only text".into())],
            &[],
        )
        .unwrap();
        assert_eq!(out.page_count, 2);
        assert!(render(&[], &[], &Default::default(), &[], &[]).is_err());
    }

    #[test]
    fn long_text_wraps_and_flows_onto_new_pages() {
        let word = "lorem ipsum dolor sit amet consectetur ";
        let paragraph = word.repeat(40);
        let mut appendix: Vec<Block> = (0..30).map(|_| Block::Text(paragraph.clone())).collect();
        appendix.push(Block::Text(format!("UNBROKEN{}", "x".repeat(300))));
        appendix.push(Block::Text("The end.".into()));
        appendix.push(Block::PageBreak);
        appendix.push(Block::Text("After break.".into()));
        let out = render(&[], &[], &Default::default(), &appendix, &[]).unwrap();
        assert!(out.page_count >= 6, "{}", out.page_count);
        let text = extract_text(&out.pdf).unwrap();
        // Every generated line fits the text width.
        for line in text.lines() {
            let width = shape(line.trim_end(), Style::Regular).width() * TEXT_SIZE;
            assert!(width <= A4_WIDTH - 2.0 * MARGIN + 0.01, "too wide: {line}");
        }
        assert!(text.contains("The end.\nAfter break."));
        assert!(text.contains("UNBROKENxxxx"));
        let doc = Document::load_mem(&out.pdf).unwrap();
        let pages = doc.get_pages();
        let last_page_text = doc
            .extract_text(&[*pages.keys().nth_back(1).unwrap()])
            .unwrap();
        assert_eq!(last_page_text, "After break.\n");
    }

    #[test]
    fn a_cell_or_line_a_little_too_wide_is_drawn_smaller_on_one_line() {
        let appendix = vec![
            Block::HeaderRow(vec![
                "Ann Tester (ann@example.com)".into(),
                "signer".into(),
                "signed".into(),
            ]),
            Block::Text(format!("Audit trail head SHA-256: {}", "f".repeat(64))),
        ];
        let out = render(&[], &[], &Default::default(), &appendix, &[]).unwrap();
        let text = extract_text(&out.pdf).unwrap();
        assert!(
            text.contains("Ann Tester (ann@example.com) signer signed\n"),
            "{text}"
        );
        assert!(
            text.contains(&format!("SHA-256: {}\n", "f".repeat(64))),
            "{text}"
        );
    }

    #[test]
    fn render_and_inspect_of_20_pages() {
        let src = sample_pdf(20);
        let appendix = vec![
            Block::Heading("Pricing".into()),
            Block::Row(vec!["Widget".into(), "2 x 10.00".into(), "20.00".into()]),
            Block::Text("Terms apply.".into()),
        ];
        let summary = vec![
            Block::Heading("Signatures".into()),
            Block::Text("Alice signed.".into()),
        ];
        let runs = 10;
        let started = Instant::now();
        for _ in 0..runs {
            inspect(&src).unwrap();
        }
        let inspect_ms = started.elapsed().as_secs_f64() * 1000.0 / runs as f64;
        let started = Instant::now();
        let mut out = None;
        for _ in 0..runs {
            out = Some(render(&[&src], &[], &Default::default(), &appendix, &summary).unwrap());
        }
        let render_ms = started.elapsed().as_secs_f64() * 1000.0 / runs as f64;
        let out = out.unwrap();
        let started = Instant::now();
        inspect(&out.pdf).unwrap();
        let inspect_out_ms = started.elapsed().as_secs_f64() * 1000.0;
        println!(
            "TIMING inspect(20 pages) {inspect_ms:.2} ms; render(20 pages + appendix + summary) {render_ms:.2} ms; \
             inspect(rendered, {} pages, {} bytes) {inspect_out_ms:.2} ms",
            out.page_count,
            out.pdf.len()
        );
        // Printed only: speed is `just bench`'s business (docs_bench renders 20 pages),
        // never a test's, which runs on loaded machines too.
        assert_eq!(out.page_count, 22);
    }
}
