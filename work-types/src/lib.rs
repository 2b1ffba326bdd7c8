//! The shapes that cross esign's component boundaries, defined once: the work orders the
//! engine gives its host (`work-order` in `wit/esign.wit`), what comes back
//! (`work-outcome`), the layout blocks and stamps of a render, blob infos and the check
//! of a signed PDF (`pdf-check`). The engine (`esign-engine`, its `base::work`) and the
//! file work (`esign-formats`, its `work`) both use these, so a work order has one Rust
//! shape from the engine's handlers to the code that renders it. See the WIT for the
//! meaning of each member.
//!
//! Each side of a WIT boundary converts once: [`convert_wit!`] writes the `From`
//! conversions between these types and a crate's generated WIT bindings (wit-bindgen's in
//! the two components, wasmtime's in the host), in one place in that crate.
//!
//! The names are the engine's; where the WIT's differ (`import-files`), the serde name
//! is the WIT's, which is the JSON `esign engine work` reads and writes and
//! `hosts/js/host.mjs` `toSerde` makes.

#![no_std]

extern crate alloc;

pub mod base64_member;
pub mod coverage;

use alloc::string::String;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

/// Work the host does outside any transaction before it runs a job (`types.work-order`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum WorkOrder {
    /// Turn each source into a PDF and read its pages (results in the same order).
    #[serde(rename = "ImportFiles")]
    Import(Vec<ImportSource>),
    /// Build the final PDF of a document.
    Render(RenderOrder),
    /// Download an `https://` URL as it is into a new blob.
    Fetch(String),
}

/// What a work order produced, handed to the job (`types.work-outcome`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum WorkOutcome {
    #[serde(rename = "ImportFiles")]
    Import(Vec<ImportResult>),
    Render(Result<RenderedFile, WorkFailure>),
    Fetch(Result<BlobInfo, WorkFailure>),
}

/// A file to import: a stored blob or an HTTPS URL to download (`types.import-source`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportSource {
    pub blob: Option<String>,
    pub url: Option<String>,
    /// The file's name; with the content it decides the format (PDF or Word).
    pub name: String,
    /// For Word files: values for the `{{name}}` placeholders.
    pub fill: Vec<(String, String)>,
}

/// Size of one page in PDF points (`types.page-size`): as a viewer shows it, the crop
/// box (or the media box), width and height swapped on pages rotated by 90 or 270 degrees.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PageSize {
    /// Width in points (1/72 inch).
    pub width: f32,
    /// Height in points (1/72 inch).
    pub height: f32,
}

/// A file turned into a PDF (`types.imported-file`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportedFile {
    /// The PDF blob: the source blob itself when it was a PDF, else a new blob.
    pub blob: String,
    pub size: u64,
    pub sha256: String,
    pub pages: Vec<PageSize>,
    /// The `{{name}}` placeholders of a Word source, in order; empty for PDFs.
    pub placeholders: Vec<String>,
    /// The source itself when it was downloaded from a URL.
    pub downloaded: Option<BlobInfo>,
}

/// Why work was not done (`types.work-failure`): a stable `code` (see the WIT) and a
/// sentence for people.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkFailure {
    pub code: String,
    pub message: String,
}

/// One source's import (`types.import-result`).
pub type ImportResult = Result<ImportedFile, WorkFailure>;

/// Generated layout, drawn in a standard font on A4 pages (`types.block`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Block {
    Heading(String),
    /// A wrapped paragraph.
    Text(String),
    /// A table row: cells spread over the width, the last one right-aligned.
    Row(Vec<String>),
    /// A table header row (bold).
    HeaderRow(Vec<String>),
    /// A horizontal line.
    Rule,
    PageBreak,
    Signature(SignatureBlock),
}

/// A signature's image, or `text` without one, then `caption` (`types.signature-block`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignatureBlock {
    /// A PNG blob.
    pub image: Option<String>,
    pub text: String,
    pub caption: String,
}

/// Something drawn onto a content page at a field's place, in PDF points from the page's
/// top-left corner (`types.stamp`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stamp {
    /// 0-based index of the page among the content pages.
    pub page: u32,
    pub left: f32,
    pub top: f32,
    pub width: f32,
    pub height: f32,
    pub content: StampContent,
}

/// What a stamp draws (`types.stamp-content`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum StampContent {
    Text(String),
    Check,
    /// A PNG blob.
    Image(String),
}

/// An image of one page of a rendered file (`types.page-image`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageImage {
    pub blob: String,
    pub size: u64,
    pub width: u32,
    pub height: u32,
}

/// The final PDF of a document (`types.render-order`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RenderOrder {
    pub sources: Vec<String>,
    pub stamps: Vec<Stamp>,
    pub appendix: Vec<Block>,
    pub summary: Vec<Block>,
    pub seal: Option<SealOrder>,
}

/// Seal a rendered file as the service (`types.seal-order`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SealOrder {
    pub document_id: String,
    pub log_head: String,
}

/// How a sealed file was signed (`types.seal-info`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SealInfo {
    /// The signing certificate's subject (RFC 4514).
    pub signer: String,
    /// Lower-case hex SHA-256 of the signing certificate (DER).
    pub certificate_sha256: String,
    pub signed_at_ms: u64,
    pub timestamp_ms: Option<u64>,
}

/// What a check of a signed PDF found (`types.pdf-check`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PdfCheck {
    pub signed: bool,
    pub valid: bool,
    pub whole_file: bool,
    pub signer: String,
    pub certificate_sha256: String,
    pub by_this_service: bool,
    pub signed_at_ms: Option<u64>,
    pub timestamp_ms: Option<u64>,
    pub timestamp_valid: bool,
    pub document_id: String,
    pub log_head: String,
    pub problems: Vec<String>,
}

/// A rendered (and perhaps sealed) file (`types.rendered-file`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RenderedFile {
    pub blob: String,
    pub size: u64,
    pub sha256: String,
    /// The SHA-256 of the content pages and appendix, which the summary states.
    pub content_sha256: String,
    pub page_count: u32,
    pub page_images: Vec<PageImage>,
    pub seal: Option<SealInfo>,
}

/// A stored blob (`types.blob-info`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlobInfo {
    pub id: String,
    pub size: u64,
    pub sha256: String,
}

/// What [`convert_wit!`] expands to: a member converted as it is (`into`), each of a
/// list's items (`each`), or an option's value (`opt`).
#[doc(hidden)]
pub mod wit {
    use alloc::vec::Vec;

    pub fn into<A: Into<B>, B>(a: A) -> B {
        a.into()
    }

    pub fn each<A: Into<B>, B>(v: Vec<A>) -> Vec<B> {
        v.into_iter().map(Into::into).collect()
    }

    pub fn opt<A: Into<B>, B>(v: Option<A>) -> Option<B> {
        v.map(Into::into)
    }

    pub fn res<A: Into<B>, B, E: Into<F>, F>(r: Result<A, E>) -> Result<B, F> {
        r.map(Into::into).map_err(Into::into)
    }
}

/// The one conversion of a crate's WIT bindings to and from these types: `From` both
/// ways for every type here, for the types module `$w` (in scope by that name) that
/// wit-bindgen or wasmtime's `bindgen!` made of `esign:engine/types`. Their shapes are
/// the WIT's, so they match these member by member; only `import-result` (a variant of
/// `ok` and `failed`) becomes a `Result`.
#[macro_export]
macro_rules! convert_wit {
    ($w:ident) => {
        $crate::convert_wit!(@records $w;
            BlobInfo { id: into, size: into, sha256: into }
            WorkFailure { code: into, message: into }
            PageSize { width: into, height: into }
            ImportSource { blob: into, url: into, name: into, fill: into }
            ImportedFile {
                blob: into, size: into, sha256: into, pages: each, placeholders: into,
                downloaded: opt
            }
            PageImage { blob: into, size: into, width: into, height: into }
            SealInfo {
                signer: into, certificate_sha256: into, signed_at_ms: into, timestamp_ms: into
            }
            RenderedFile {
                blob: into, size: into, sha256: into, content_sha256: into,
                page_count: into, page_images: each, seal: opt
            }
            SealOrder { document_id: into, log_head: into }
            SignatureBlock { image: into, text: into, caption: into }
            Stamp {
                page: into, left: into, top: into, width: into, height: into, content: into
            }
            RenderOrder {
                sources: into, stamps: each, appendix: each, summary: each, seal: opt
            }
            PdfCheck {
                signed: into, valid: into, whole_file: into, signer: into,
                certificate_sha256: into, by_this_service: into, signed_at_ms: into,
                timestamp_ms: into, timestamp_valid: into, document_id: into,
                log_head: into, problems: into
            }
        );
        // Cases with a value (ours = theirs(how)), then cases without (ours = theirs).
        $crate::convert_wit!(@variants $w;
            StampContent { Text = Text(into), Image = Image(into); Check = Check }
            Block {
                Heading = Heading(into), Text = Text(into), Row = Row(into),
                HeaderRow = HeaderRow(into), Signature = Signature(into);
                Rule = Rule, PageBreak = PageBreak
            }
            WorkOrder {
                Import = ImportFiles(each), Render = Render(into), Fetch = Fetch(into);
            }
        );
        impl From<$w::WorkOutcome> for $crate::WorkOutcome {
            fn from(o: $w::WorkOutcome) -> Self {
                let import = |r: $w::ImportResult| -> $crate::ImportResult {
                    match r {
                    $w::ImportResult::Ok(f) => Ok(f.into()),
                    $w::ImportResult::Failed(f) => Err(f.into()),
                    }
                };
                match o {
                    $w::WorkOutcome::ImportFiles(r) => {
                        Self::Import(r.into_iter().map(import).collect())
                    }
                    $w::WorkOutcome::Render(r) => Self::Render($crate::wit::res(r)),
                    $w::WorkOutcome::Fetch(r) => Self::Fetch($crate::wit::res(r)),
                }
            }
        }
        impl From<$crate::WorkOutcome> for $w::WorkOutcome {
            fn from(o: $crate::WorkOutcome) -> Self {
                let import = |r: $crate::ImportResult| -> $w::ImportResult {
                    match r {
                        Ok(f) => $w::ImportResult::Ok(f.into()),
                        Err(f) => $w::ImportResult::Failed(f.into()),
                    }
                };
                match o {
                    $crate::WorkOutcome::Import(r) => {
                        Self::ImportFiles(r.into_iter().map(import).collect())
                    }
                    $crate::WorkOutcome::Render(r) => Self::Render($crate::wit::res(r)),
                    $crate::WorkOutcome::Fetch(r) => Self::Fetch($crate::wit::res(r)),
                }
            }
        }
    };
    (@records $w:ident; $($ty:ident { $($field:ident: $how:ident),* $(,)? })*) => {$(
        impl From<$w::$ty> for $crate::$ty {
            fn from(x: $w::$ty) -> Self {
                Self { $($field: $crate::wit::$how(x.$field)),* }
            }
        }
        impl From<$crate::$ty> for $w::$ty {
            fn from(x: $crate::$ty) -> Self {
                Self { $($field: $crate::wit::$how(x.$field)),* }
            }
        }
    )*};
    (@variants $w:ident; $($ty:ident {
        $($ours:ident = $theirs:ident($how:ident)),* ; $($unit:ident = $their_unit:ident),*
    })*) => {$(
        impl From<$w::$ty> for $crate::$ty {
            fn from(x: $w::$ty) -> Self {
                match x {
                    $($w::$ty::$theirs(v) => Self::$ours($crate::wit::$how(v)),)*
                    $($w::$ty::$their_unit => Self::$unit,)*
                }
            }
        }
        impl From<$crate::$ty> for $w::$ty {
            fn from(x: $crate::$ty) -> Self {
                match x {
                    $($crate::$ty::$ours(v) => Self::$theirs($crate::wit::$how(v)),)*
                    $($crate::$ty::$unit => Self::$their_unit,)*
                }
            }
        }
    )*};
}

#[cfg(test)]
mod tests;
