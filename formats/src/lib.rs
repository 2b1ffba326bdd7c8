//! The file formats the esign host reads and writes, apart from the server so that
//! they can be tested and fuzzed without the WebAssembly runtime:
//!
//! - [`pdf`]: inspecting uploads, rendering final PDFs, text extraction;
//! - [`stamp`]: fields and signature images drawn onto pages;
//! - `raster`: page images (feature `raster`, on by default);
//! - [`office`]: `.docx` placeholders and LibreOffice conversion;
//! - [`multipart`]: `multipart/form-data` bodies.
//!
//! Every decoder here takes untrusted bytes and answers an error, never a panic or a
//! hang (the `fuzz/` targets hold them to it).

mod layout;
pub mod multipart;
pub mod office;
pub mod pdf;
mod pdf_text;
#[cfg(feature = "raster")]
pub mod raster;
pub mod stamp;
