//! Host work: what the engine asks the host to do outside a transaction (download,
//! import, convert, render) and what comes back. Mirrors the work types of
//! `wit/esign.wit`; see there for the meaning of each member.

#[allow(unused_imports)]
use crate::base::prelude::*;

/// Mirrors `types.work-order`.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkOrder {
    Import(Vec<ImportSource>),
    Render(RenderOrder),
    Fetch(String),
}

/// Mirrors `types.work-outcome`.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkOutcome {
    Import(Vec<ImportResult>),
    Render(Result<RenderedFile, WorkFailure>),
    Fetch(Result<BlobInfo, WorkFailure>),
}

/// Mirrors `types.import-source`.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportSource {
    pub blob: Option<String>,
    pub url: Option<String>,
    pub name: String,
    pub fill: Vec<(String, String)>,
}

/// Mirrors `types.page-size`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PageSize {
    pub width: f32,
    pub height: f32,
}

/// Mirrors `types.imported-file`.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedFile {
    pub blob: String,
    pub size: u64,
    pub sha256: String,
    pub pages: Vec<PageSize>,
    pub placeholders: Vec<String>,
    pub downloaded: Option<BlobInfo>,
}

/// Mirrors `types.work-failure`.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkFailure {
    pub code: String,
    pub message: String,
}

/// Mirrors `types.import-result`.
pub type ImportResult = Result<ImportedFile, WorkFailure>;

/// Mirrors `types.block`.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Heading(String),
    Text(String),
    Row(Vec<String>),
    HeaderRow(Vec<String>),
    Rule,
    PageBreak,
    Signature(SignatureBlock),
}

/// Mirrors `types.signature-block`.
#[derive(Debug, Clone, PartialEq)]
pub struct SignatureBlock {
    pub image: Option<String>,
    pub text: String,
    pub caption: String,
}

/// Mirrors `types.stamp`.
#[derive(Debug, Clone, PartialEq)]
pub struct Stamp {
    pub page: u32,
    pub left: f32,
    pub top: f32,
    pub width: f32,
    pub height: f32,
    pub content: StampContent,
}

/// Mirrors `types.stamp-content`.
#[derive(Debug, Clone, PartialEq)]
pub enum StampContent {
    Text(String),
    Check,
    Image(String),
}

/// Mirrors `types.page-image`.
#[derive(Debug, Clone, PartialEq)]
pub struct PageImage {
    pub blob: String,
    pub size: u64,
    pub width: u32,
    pub height: u32,
}

/// Mirrors `types.render-order`.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderOrder {
    pub sources: Vec<String>,
    pub stamps: Vec<Stamp>,
    pub appendix: Vec<Block>,
    pub summary: Vec<Block>,
    pub seal: Option<SealOrder>,
}

/// Mirrors `types.seal-order`.
#[derive(Debug, Clone, PartialEq)]
pub struct SealOrder {
    pub document_id: String,
    pub log_head: String,
}

/// Mirrors `types.seal-info`.
#[derive(Debug, Clone, PartialEq)]
pub struct SealInfo {
    pub signer: String,
    pub certificate_sha256: String,
    pub signed_at_ms: u64,
    pub timestamp_ms: Option<u64>,
}

/// Mirrors `types.pdf-check`.
#[derive(Debug, Clone, PartialEq, Default)]
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

/// Mirrors `types.rendered-file`.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedFile {
    pub blob: String,
    pub size: u64,
    pub sha256: String,
    pub content_sha256: String,
    pub page_count: u32,
    pub page_images: Vec<PageImage>,
    pub seal: Option<SealInfo>,
}

/// Mirrors `types.blob-info`.
#[derive(Debug, Clone, PartialEq)]
pub struct BlobInfo {
    pub id: String,
    pub size: u64,
    pub sha256: String,
}
