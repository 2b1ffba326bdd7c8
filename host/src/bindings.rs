//! The engine's WIT world (`wit/esign.wit`) as Rust: the types and traits wasmtime's
//! `bindgen!` generates, in one small module that everything else imports from; and
//! their one conversion to and from the work types the file work (`esign_formats::work`)
//! and the engine share (`esign-work`), for the native side of the work.

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

// Work orders, outcomes, blob infos and PDF checks: `From` both ways between these
// bindings and `esign_work`'s types. The host keeps and passes on the WIT's (the job rows
// store them), and converts where it meets the native code: the formats component's
// imports (`sandbox.rs`), `evidence::check`, and the tests that compare the two builds.
esign_work::convert_wit!(types);
