//! The engine's WIT world (`wit/esign.wit`) as Rust: the types and traits wasmtime's
//! `bindgen!` generates, in one small module that everything else imports from.

wasmtime::component::bindgen!({
    world: "esign",
    path: "../wit",
    imports: { default: trappable },
    additional_derives: [serde::Serialize, serde::Deserialize],
});

pub use self::esign::engine::types::{
    BlobInfo, Block, FormPart, ImportResult, ImportSource, ImportedFile, Origin, PageImage,
    PageSize, PdfCheck, RenderOrder, RenderedFile, SealInfo, SealOrder, Settings, SignatureBlock,
    Stamp, StampContent, WorkFailure, WorkOrder, WorkOutcome,
};
pub use self::esign::engine::{effects, files, host, store, types};
pub use self::wasi::clocks::wall_clock;
pub use self::wasi::random::random;
