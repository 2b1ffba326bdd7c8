//! Host work: what the engine asks the host to do outside a transaction (download,
//! import, convert, render) and what comes back. The types are `esign-work`'s, shared
//! with the file work (`esign-formats`) that does it; see `wit/esign.wit` for the
//! meaning of each member.

pub use esign_work::{
    BlobInfo, Block, ImportResult, ImportSource, ImportedFile, PageImage, PageSize, PdfCheck,
    RenderOrder, RenderedFile, SealInfo, SealOrder, SignatureBlock, Stamp, StampContent,
    WorkFailure, WorkOrder, WorkOutcome,
};
