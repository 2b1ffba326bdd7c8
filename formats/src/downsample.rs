//! Large JPEGs downsampled before the page images decode them.
//!
//! A page image is 800 pixels wide, yet a PDF may draw a 50-million-pixel photo on a
//! page, and the rasterizer decodes every image at full size: 150 MB for one RGB
//! image. A baseline JPEG can be decoded at 1/2, 1/4 or 1/8 of its size straight from
//! its DCT coefficients (`jpeg-decoder`'s scaled decoding), in memory of the smaller
//! size. So before the rasterizer sees the file, every baseline grey or colour JPEG of
//! more than [`SHRINK_ABOVE_PIXELS`] is replaced, in a copy used for the page images
//! only, by its scaled-down pixels; the PDF itself (what is sealed and downloaded) keeps
//! the original. Other images keep their size: Flate and raw images cannot be decoded
//! smaller than they are (the import refuses the largest, `pdf::MAX_IMAGE_PIXELS`),
//! a progressive JPEG needs all its coefficients, and JPEG 2000 is decoded at a
//! reduced resolution by the rasterizer itself. The work order's memory cap holds what
//! is left.

use lopdf::{Dictionary, Document, Object, Stream};
use std::borrow::Cow;

/// Images of more pixels than this are decoded smaller (an A4 page scanned at 200 dpi
/// has 3.7 million; the largest page image 8 million).
pub const SHRINK_ABOVE_PIXELS: u64 = 4_000_000;

/// `pdf` with its large baseline JPEGs decoded at the smallest scale that keeps, in
/// one axis at least, as many pixels as the largest of its page images (`width_px`
/// wide, at most `max_height_px` tall); `pdf` itself when there is none, or when the
/// file cannot be rewritten (the rasterizer then sees the original).
pub fn large_jpegs(pdf: &[u8], width_px: u32, max_height_px: u32) -> Cow<'_, [u8]> {
    if !contains(pdf, b"DCTDecode") {
        return Cow::Borrowed(pdf);
    }
    let Ok(mut doc) = Document::load_mem(pdf) else {
        return Cow::Borrowed(pdf);
    };
    // An encrypted file would be written back decrypted under its old /Encrypt.
    if doc.trailer.has(b"Encrypt") {
        return Cow::Borrowed(pdf);
    }
    let target = largest_page_image(&doc, width_px, max_height_px);
    let mut changed = false;
    for object in doc.objects.values_mut() {
        if let Object::Stream(stream) = object
            && let Some(smaller) = shrink(stream, target)
        {
            *stream = smaller;
            changed = true;
        }
    }
    let mut out = Vec::new();
    if !changed || doc.save_to(&mut out).is_err() {
        return Cow::Borrowed(pdf);
    }
    Cow::Owned(out)
}

/// Width and height in pixels of the largest page image of `doc` at `width_px` wide.
fn largest_page_image(doc: &Document, width_px: u32, max_height_px: u32) -> (u32, u32) {
    let tallest = doc
        .get_pages()
        .values()
        .map(|&id| crate::pdf::page_size(doc, id))
        .map(|p| p.height / p.width.max(1.0))
        .fold(1.0f32, f32::max);
    let height = (width_px as f32 * tallest).min(max_height_px as f32);
    (width_px, height as u32)
}

/// The image `stream` decoded smaller and Flate-compressed, when it is a large baseline
/// JPEG of one or three components that decodes smaller at `target`.
fn shrink(stream: &Stream, target: (u32, u32)) -> Option<Stream> {
    let d = &stream.dict;
    if !is_plain_jpeg_image(d) {
        return None;
    }
    let int = |key: &[u8]| d.get(key).ok()?.as_i64().ok();
    let (width, height) = (int(b"Width")?, int(b"Height")?);
    if (width.max(0) as u64).saturating_mul(height.max(0) as u64) <= SHRINK_ABOVE_PIXELS {
        return None;
    }
    let components = grey_or_colour(&stream.content)?;
    let mut decoder = jpeg_decoder::Decoder::new(stream.content.as_slice());
    decoder.read_info().ok()?;
    let info = decoder.info()?;
    if info.coding_process != jpeg_decoder::CodingProcess::DctSequential {
        return None;
    }
    let full = (u64::from(info.width), u64::from(info.height));
    let clamp = |v: u32| v.clamp(1, u32::from(u16::MAX)) as u16;
    let (w, h) = decoder.scale(clamp(target.0), clamp(target.1)).ok()?;
    let scaled = (u64::from(w), u64::from(h));
    if scaled.0 * scaled.1 >= full.0 * full.1 {
        return None;
    }
    let pixels = decoder.decode().ok()?;
    if pixels.len() as u64 != scaled.0 * scaled.1 * components {
        return None;
    }
    let mut dict = d.clone();
    dict.set("Width", i64::from(w));
    dict.set("Height", i64::from(h));
    dict.set("BitsPerComponent", 8);
    dict.remove(b"DecodeParms");
    dict.remove(b"Filter");
    if !dict.has(b"ColorSpace") {
        let space = if components == 1 {
            "DeviceGray"
        } else {
            "DeviceRGB"
        };
        dict.set("ColorSpace", Object::Name(space.into()));
    }
    let mut smaller = Stream::new(dict, pixels);
    smaller.compress().ok()?;
    Some(smaller)
}

/// An image XObject whose only filter is `DCTDecode`, not a mask, without a
/// `ColorTransform` of its own (the decoder follows the JPEG's own markers).
fn is_plain_jpeg_image(d: &Dictionary) -> bool {
    let name_is = |key: &[u8], want: &[u8]| {
        d.get(key)
            .is_ok_and(|o| o.as_name().is_ok_and(|n| n == want))
    };
    let filter_is_dct = match d.get(b"Filter") {
        Ok(Object::Name(n)) => n == b"DCTDecode",
        Ok(Object::Array(a)) => a.len() == 1 && a[0].as_name().is_ok_and(|n| n == b"DCTDecode"),
        _ => false,
    };
    let has_own_transform = match d.get(b"DecodeParms") {
        Ok(Object::Dictionary(p)) => p.has(b"ColorTransform"),
        Ok(Object::Array(a)) => a
            .iter()
            .any(|p| p.as_dict().is_ok_and(|p| p.has(b"ColorTransform"))),
        Ok(Object::Null) | Err(_) => false,
        Ok(_) => true,
    };
    name_is(b"Subtype", b"Image")
        && filter_is_dct
        && !has_own_transform
        && !d
            .get(b"ImageMask")
            .is_ok_and(|m| m.as_bool().unwrap_or(false))
}

/// The number of components of a grey (1) or colour (3) JPEG, read from its headers
/// before `jpeg-decoder` sees it (whose `info` panics on other counts); `None` for
/// anything else (CMYK), which keeps its size.
fn grey_or_colour(jpeg: &[u8]) -> Option<u64> {
    use zune_jpeg::zune_core::bytestream::ZCursor;
    let mut decoder = zune_jpeg::JpegDecoder::new(ZCursor::new(jpeg));
    decoder.decode_headers().ok()?;
    let components = decoder.info()?.components;
    matches!(components, 1 | 3).then_some(u64::from(components))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lopdf::{content::Content, dictionary};

    /// A baseline (or progressive) JPEG of one grey level, `components` 1 or 3.
    fn jpeg(width: u16, height: u16, components: u8, progressive: bool) -> Vec<u8> {
        let (color, px) = if components == 1 {
            (jpeg_encoder::ColorType::Luma, 1)
        } else {
            (jpeg_encoder::ColorType::Rgb, 3)
        };
        let pixels = vec![200u8; usize::from(width) * usize::from(height) * px];
        let mut out = Vec::new();
        let mut encoder = jpeg_encoder::Encoder::new(&mut out, 80);
        encoder.set_progressive(progressive);
        encoder.encode(&pixels, width, height, color).unwrap();
        out
    }

    /// A one-page PDF (612 × 792 points) drawing `jpeg` over the whole page.
    fn page_with(jpeg: Vec<u8>, width: u16, height: u16) -> Vec<u8> {
        let mut doc = Document::with_version("1.7");
        let image = doc.add_object(Stream::new(
            dictionary! {
                "Type" => "XObject", "Subtype" => "Image",
                "Width" => i64::from(width), "Height" => i64::from(height),
                "ColorSpace" => "DeviceRGB", "BitsPerComponent" => 8, "Filter" => "DCTDecode",
            },
            jpeg,
        ));
        let content = Content {
            operations: vec![
                lopdf::content::Operation::new(
                    "cm",
                    vec![
                        612.into(),
                        0.into(),
                        0.into(),
                        792.into(),
                        0.into(),
                        0.into(),
                    ],
                ),
                lopdf::content::Operation::new("Do", vec![Object::Name(b"Im0".to_vec())]),
            ],
        };
        let contents = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
        let pages = doc.new_object_id();
        let page = doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages, "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
            "Contents" => contents,
            "Resources" => dictionary! { "XObject" => dictionary! { "Im0" => image } },
        });
        doc.objects.insert(
            pages,
            Object::Dictionary(
                dictionary! { "Type" => "Pages", "Kids" => vec![page.into()], "Count" => 1 },
            ),
        );
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages });
        doc.trailer.set("Root", catalog);
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }

    /// Width, height and filter of the one image in `pdf`.
    fn the_image(pdf: &[u8]) -> (i64, i64, Option<Vec<u8>>, Vec<u8>) {
        let doc = Document::load_mem(pdf).unwrap();
        let stream = doc
            .objects
            .values()
            .find_map(|o| match o {
                Object::Stream(s) if s.dict.has(b"Width") => Some(s.clone()),
                _ => None,
            })
            .unwrap();
        let int = |k: &[u8]| stream.dict.get(k).unwrap().as_i64().unwrap();
        let filter = stream
            .dict
            .get(b"Filter")
            .ok()
            .map(|f| f.as_name().unwrap().to_vec());
        let pixels = stream.decompressed_content().unwrap_or_default();
        (int(b"Width"), int(b"Height"), filter, pixels)
    }

    #[test]
    fn a_large_colour_jpeg_is_decoded_at_the_page_image_s_size() {
        let pdf = page_with(jpeg(5000, 4000, 3, false), 5000, 4000);
        let smaller = large_jpegs(&pdf, 800, 10_000);
        assert!(matches!(smaller, Cow::Owned(_)), "rewritten");
        // 1/4 keeps 1250 ≥ 800 pixels across; 1/8 would keep 625.
        let (w, h, filter, pixels) = the_image(&smaller);
        assert_eq!((w, h), (1250, 1000));
        assert_eq!(filter.as_deref(), Some(&b"FlateDecode"[..]));
        assert_eq!(pixels.len(), 1250 * 1000 * 3);
        assert!(
            pixels.iter().all(|&p| p.abs_diff(200) <= 3),
            "the same grey"
        );
        // The page image is drawn from it.
        let pages = crate::raster::page_images(&pdf, 800).unwrap();
        assert_eq!((pages.len(), pages[0].width), (1, 800));
    }

    #[test]
    fn a_grey_jpeg_keeps_its_one_component() {
        let pdf = page_with(jpeg(4000, 4000, 1, false), 4000, 4000);
        let (w, h, _, pixels) = the_image(&large_jpegs(&pdf, 400, 10_000));
        assert_eq!((w, h), (500, 500));
        assert_eq!(pixels.len(), 500 * 500);
    }

    #[test]
    fn small_and_progressive_jpegs_and_files_without_one_stay_as_they_are() {
        // Within the pixel budget.
        let small = page_with(jpeg(1500, 1500, 3, false), 1500, 1500);
        assert!(matches!(large_jpegs(&small, 800, 10_000), Cow::Borrowed(_)));
        // A progressive JPEG needs all its coefficients: the scale would save nothing.
        let progressive = page_with(jpeg(3000, 3000, 3, true), 3000, 3000);
        assert!(matches!(
            large_jpegs(&progressive, 800, 10_000),
            Cow::Borrowed(_)
        ));
        // No JPEG at all.
        let plain = crate::pdf::sample_pdf(1);
        assert!(matches!(large_jpegs(&plain, 800, 10_000), Cow::Borrowed(_)));
        // Not a PDF: left to the rasterizer's own error.
        assert!(matches!(
            large_jpegs(b"%PDF DCTDecode", 800, 10_000),
            Cow::Borrowed(_)
        ));
    }
}
