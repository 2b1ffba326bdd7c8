//! esign's file work as a WASI component: implements the `esign:formats/formats` world
//! of `wit/formats/formats.wit` by converting between the generated WIT types and
//! `esign_formats::work`'s own (`esign_work::convert_wit!`), and by giving the shared
//! code a [`WorkIo`] made of the world's imports. Every host that runs this component runs the code the native host
//! links, so they produce the same bytes (`tests/formats.rs` holds them to it).

// The generated bindings take one argument per field of a flattened record.
#![allow(clippy::too_many_arguments)]

wit_bindgen::generate!({
    world: "esign:formats/formats",
    path: ["../../wit", "../../wit/formats"],
    generate_all,
});

use esign::engine::types as wit;
use esign::formats::{blobs, convert, download, log, signing, timestamping};
use esign_formats::seal::{self, SealHost};
use esign_formats::work::{self as shared, WorkIo};
use exports::esign::formats::work::Guest;

struct Component;
export!(Component);

impl Guest for Component {
    fn perform(order: wit::WorkOrder, now_ms: u64) -> wit::WorkOutcome {
        shared::perform(&order.into(), now_ms, &mut Imports).into()
    }

    fn check_pdf(pdf: Vec<u8>, own_certificate_sha256: String) -> wit::PdfCheck {
        seal::check(&pdf, &own_certificate_sha256).into()
    }

    fn generate_signing_key(secret: Vec<u8>, now_ms: u64) -> Result<(String, String), String> {
        let secret: [u8; 32] = secret
            .try_into()
            .map_err(|_| "the secret must be 32 bytes".to_string())?;
        seal::keys::generate(&secret, now_ms).map_err(|e| format!("{e:#}"))
    }
}

/// The shared code's I/O: the world's imports.
struct Imports;

impl SealHost for Imports {
    fn certificates(&self) -> Result<Vec<Vec<u8>>, String> {
        signing::certificates()
    }

    fn sign(&self, digest: &[u8; 32]) -> Result<Vec<u8>, String> {
        signing::sign(digest)
    }

    fn timestamp(&self, request: &[u8]) -> Result<Option<Vec<u8>>, String> {
        timestamping::exchange(request)
    }
}

impl WorkIo for Imports {
    fn blob(&mut self, id: &str) -> Result<Option<Vec<u8>>, String> {
        blobs::get(id)
    }

    fn put(&mut self, data: Vec<u8>) -> shared::BlobInfo {
        blobs::put(&data).into()
    }

    fn download(&mut self, url: &str) -> Result<Vec<u8>, String> {
        download::fetch(url)
    }

    fn convert_docx(&mut self, docx: Vec<u8>) -> Result<Vec<u8>, shared::WorkFailure> {
        convert::docx_to_pdf(&docx).map_err(Into::into)
    }

    fn warn(&mut self, message: &str) {
        log::warn(message);
    }
}

// The work orders, outcomes, blob infos and PDF checks: `esign-work`'s types, which
// `esign_formats::work` uses, to and from the WIT's.
esign_work::convert_wit!(wit);
