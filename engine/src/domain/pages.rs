//! Page images: every page of a document's final PDF as a PNG, made by the host when it
//! renders the PDF, kept under `dpimg/{document}` beside the document and shown by the
//! signing page. The blobs are held by the document (`bref`) like its PDF.

use crate::base::cx::Cx;
use crate::base::keyspace::DPIMG;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util;
use crate::base::work_orders::PageImage;
use crate::domain::blobs::{self, owner_of};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct PageImages {
    /// The final PDF the images show.
    pub pdf_blob: String,
    /// (blob, width px, height px, bytes) per page, in order.
    pub pages: Vec<(String, u32, u32, u64)>,
}

fn key(doc_id: &str) -> Vec<u8> {
    util::key(&[DPIMG, doc_id])
}

pub fn load(cx: &mut Cx, doc_id: &str) -> PageImages {
    cx.load(&key(doc_id)).unwrap_or_default()
}

/// Records the images of a newly rendered PDF and lets go of the previous ones.
pub fn replace(cx: &mut Cx, doc_id: &str, pdf_blob: &str, images: &[PageImage]) {
    let owner = owner_of(doc_id);
    for img in images {
        blobs::hold(cx, &img.blob, &owner);
    }
    for (old, ..) in load(cx, doc_id).pages {
        blobs::release(cx, &old, &owner);
    }
    let record = PageImages {
        pdf_blob: pdf_blob.to_string(),
        pages: images
            .iter()
            .map(|i| (i.blob.clone(), i.width, i.height, i.size))
            .collect(),
    };
    cx.save(&key(doc_id), &record);
}

/// The image blobs of a document.
pub fn blobs(cx: &mut Cx, doc_id: &str) -> Vec<String> {
    load(cx, doc_id).pages.into_iter().map(|p| p.0).collect()
}

/// Forgets a deleted document's images (their blobs are released by the caller).
pub fn erase(cx: &mut Cx, doc_id: &str) {
    cx.p.delete(&key(doc_id));
}

/// Page `n` (1-based) of the document's page images: its blob and its PNG bytes.
pub fn image(cx: &mut Cx, doc_id: &str, n: usize) -> Option<(String, Vec<u8>)> {
    let images = load(cx, doc_id);
    let (blob, ..) = images.pages.get(n.checked_sub(1)?)?.clone();
    let bytes = cx.p.get_blob(&blob)?;
    Some((blob, bytes))
}
