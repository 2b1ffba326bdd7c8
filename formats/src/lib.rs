//! The file work of esign, apart from the server so that it can be tested and fuzzed
//! without the WebAssembly runtime, and built twice: into the native host, and as the
//! `esign:formats` component (`components/formats`) that every other host runs:
//!
//! - `work`: the engine's work orders (import, render with page images, seal, fetch)
//!   over a host's [`work::WorkIo`] (feature `raster`);
//! - [`pdf`]: inspecting uploads, rendering final PDFs, text extraction;
//! - [`stamp`]: fields and signature images drawn onto pages;
//! - `raster`: page images (feature `raster`, on by default), with `downsample`: large
//!   JPEGs decoded smaller before the rasterizer sees them;
//! - [`seal`]: the PAdES seal and the check of a signed PDF;
//! - [`office`]: `.docx` placeholders and LibreOffice conversion;
//! - [`multipart`]: `multipart/form-data` bodies.
//!
//! Every decoder here takes untrusted bytes and answers an error, never a panic or a
//! hang (the `fuzz/` targets hold them to it).

pub mod digest;
#[cfg(feature = "raster")]
pub mod downsample;
pub mod fonts;
mod layout;
pub mod multipart;
pub mod office;
pub mod pdf;
mod pdf_fonts;
mod pdf_text;
#[cfg(feature = "raster")]
pub mod raster;
pub mod seal;
pub mod stamp;
#[cfg(feature = "raster")]
pub mod work;
