//! Drawing onto PDF pages: field values, check marks and signature images stamped at
//! their places on content pages, and PNG and JPEG images turned into PDF image objects
//! (also used for signatures on the summary page): a PNG decoded, its transparency kept
//! as a soft mask; a JPEG put in as it is (`DCTDecode`), so no host's decoder shapes the
//! file's bytes.
//!
//! Positions are PDF points from the top-left corner of the page as displayed (its crop
//! box, rotation applied), the way the API and the signing page give them. A stamp is
//! appended to the page's content wrapped in `q`/`Q`, after the original content is
//! wrapped too, so whatever state the original leaves behind cannot move it.

use crate::fonts::{Style, shape};
use crate::pdf_fonts::PdfFonts;
use lopdf::{Dictionary, Document, Object, ObjectId, Stream, dictionary};
use std::collections::HashMap;
use std::io::Cursor;

/// An image to draw: its size and its pixels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picture {
    pub width: u32,
    pub height: u32,
    pub pixels: Pixels,
}

/// A picture's pixels, as they go into the PDF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pixels {
    /// A decoded PNG: 8-bit RGB and, when it has any transparency, 8-bit alpha.
    Rgb {
        rgb: Vec<u8>,
        alpha: Option<Vec<u8>>,
    },
    /// A JPEG's own bytes (PDF's `DCTDecode` reads them), of a grey or a colour JPEG.
    Jpeg { bytes: Vec<u8>, grey: bool },
}

/// Largest picture decoded (pixels), far above a signature pad's.
pub const MAX_PIXELS: u64 = 4_000_000;

/// A PNG or a JPEG, by its first bytes; `None` for anything else, unreadable or
/// oversized.
pub fn decode_picture(bytes: &[u8]) -> Option<Picture> {
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        jpeg(bytes)
    } else {
        decode_png(bytes)
    }
}

fn within(w: u32, h: u32) -> bool {
    w > 0 && h > 0 && u64::from(w) * u64::from(h) <= MAX_PIXELS
}

/// A JPEG as it is, with its size and colour from its headers (read by `zune-jpeg`,
/// nothing decoded); `None` unless it is grey or colour (YCbCr or RGB) and within
/// [`MAX_PIXELS`]. A CMYK JPEG is left out: readers disagree on how to show one.
fn jpeg(bytes: &[u8]) -> Option<Picture> {
    use zune_jpeg::zune_core::{bytestream::ZCursor, colorspace::ColorSpace};
    let mut decoder = zune_jpeg::JpegDecoder::new(ZCursor::new(bytes));
    decoder.decode_headers().ok()?;
    let grey = match decoder.input_colorspace()? {
        ColorSpace::Luma => true,
        ColorSpace::YCbCr | ColorSpace::RGB => false,
        _ => return None,
    };
    let info = decoder.info()?;
    let (width, height) = (u32::from(info.width), u32::from(info.height));
    if !within(width, height) {
        return None;
    }
    Some(Picture {
        width,
        height,
        pixels: Pixels::Jpeg {
            bytes: bytes.to_vec(),
            grey,
        },
    })
}

/// Decodes a PNG (any colour type and depth); `None` for anything else or oversized.
pub fn decode_png(bytes: &[u8]) -> Option<Picture> {
    let mut decoder = png::Decoder::new_with_limits(
        Cursor::new(bytes),
        png::Limits {
            bytes: 64 * 1024 * 1024,
        },
    );
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().ok()?;
    let (w, h) = (reader.info().width, reader.info().height);
    if !within(w, h) {
        return None;
    }
    let mut buf = vec![0; reader.output_buffer_size()?];
    let info = reader.next_frame(&mut buf).ok()?;
    buf.truncate(info.buffer_size());
    let n = (w * h) as usize;
    let (rgb, alpha) = match info.color_type {
        png::ColorType::Rgb => (buf, None),
        png::ColorType::Rgba => {
            let mut rgb = Vec::with_capacity(n * 3);
            let mut alpha = Vec::with_capacity(n);
            for px in buf.chunks_exact(4) {
                rgb.extend_from_slice(&px[..3]);
                alpha.push(px[3]);
            }
            (rgb, Some(alpha))
        }
        png::ColorType::Grayscale => (buf.iter().flat_map(|&g| [g, g, g]).collect(), None),
        png::ColorType::GrayscaleAlpha => {
            let mut rgb = Vec::with_capacity(n * 3);
            let mut alpha = Vec::with_capacity(n);
            for px in buf.chunks_exact(2) {
                rgb.extend_from_slice(&[px[0], px[0], px[0]]);
                alpha.push(px[1]);
            }
            (rgb, Some(alpha))
        }
        png::ColorType::Indexed => return None, // EXPAND turns palettes into RGB(A)
    };
    if rgb.len() != n * 3 {
        return None;
    }
    Some(Picture {
        width: w,
        height: h,
        pixels: Pixels::Rgb {
            rgb,
            alpha: alpha.filter(|a| a.iter().any(|&v| v != 255)),
        },
    })
}

/// Adds `pic` as an image XObject (with a soft mask for a PNG's alpha) and returns its
/// id.
pub fn add_picture(doc: &mut Document, pic: &Picture) -> ObjectId {
    let (w, h) = (i64::from(pic.width), i64::from(pic.height));
    let (rgb, alpha) = match &pic.pixels {
        Pixels::Rgb { rgb, alpha } => (rgb, alpha),
        Pixels::Jpeg { bytes, grey } => {
            let space = if *grey { "DeviceGray" } else { "DeviceRGB" };
            let dict = dictionary! {
                "Type" => "XObject", "Subtype" => "Image", "Width" => w, "Height" => h,
                "ColorSpace" => space, "BitsPerComponent" => 8, "Filter" => "DCTDecode",
            };
            return doc.add_object(Stream::new(dict, bytes.clone()).with_compression(false));
        }
    };
    let smask = alpha.as_ref().map(|alpha| {
        let mut s = Stream::new(
            dictionary! {
                "Type" => "XObject", "Subtype" => "Image", "Width" => w, "Height" => h,
                "ColorSpace" => "DeviceGray", "BitsPerComponent" => 8,
            },
            alpha.clone(),
        );
        let _ = s.compress();
        doc.add_object(s)
    });
    let mut dict = dictionary! {
        "Type" => "XObject", "Subtype" => "Image", "Width" => w, "Height" => h,
        "ColorSpace" => "DeviceRGB", "BitsPerComponent" => 8,
    };
    if let Some(id) = smask {
        dict.set("SMask", id);
    }
    let mut s = Stream::new(dict, rgb.clone());
    // Compression only fails on an I/O error writing to memory; uncompressed is valid.
    let _ = s.compress();
    doc.add_object(s)
}

/// The operators that draw an image XObject named `name` fitted into the box
/// (`x`, `y` lower-left, `w` x `h`), centred, keeping its proportions.
pub fn fit_image_ops(name: &str, pic: &Picture, x: f32, y: f32, w: f32, h: f32) -> String {
    let scale = (w / pic.width as f32).min(h / pic.height as f32);
    let (iw, ih) = (pic.width as f32 * scale, pic.height as f32 * scale);
    let (ix, iy) = (x + (w - iw) / 2.0, y + (h - ih) / 2.0);
    format!("q {iw:.2} 0 0 {ih:.2} {ix:.2} {iy:.2} cm /{name} Do Q\n")
}

/// What to draw in a field's box.
#[derive(Debug, Clone, PartialEq)]
pub enum Mark {
    Text(String),
    Check,
    /// A key of the pictures given to [`stamp_pages`].
    Image(String),
}

/// One thing to draw on a page (see the module docs for the coordinates).
#[derive(Debug, Clone, PartialEq)]
pub struct Stamp {
    /// 0-based index into the pages given to [`stamp_pages`].
    pub page: usize,
    pub left: f32,
    pub top: f32,
    pub width: f32,
    pub height: f32,
    pub mark: Mark,
}

/// The page's visible box `[x0 y0 x1 y1]` and rotation, as the signing page saw it.
struct Frame {
    visible: [f32; 4],
    rotate: i64,
}

impl Frame {
    /// Height of the page as displayed.
    fn shown_height(&self) -> f32 {
        let [x0, y0, x1, y1] = self.visible;
        if self.rotate == 90 || self.rotate == 270 {
            (x1 - x0).abs()
        } else {
            (y1 - y0).abs()
        }
    }

    /// The matrix from display coordinates (origin at the displayed bottom-left, y up)
    /// to the page's user space.
    fn ctm(&self) -> [f32; 6] {
        let [x0, y0, x1, y1] = self.visible;
        let h = self.shown_height();
        match self.rotate {
            90 => [0.0, 1.0, -1.0, 0.0, x0 + h, y0],
            180 => [-1.0, 0.0, 0.0, -1.0, x1, y1],
            270 => [0.0, -1.0, 1.0, 0.0, x1 - h, y1],
            _ => [1.0, 0.0, 0.0, 1.0, x0, y0],
        }
    }
}

/// Draws `stamps` onto `pages` of `doc` (whose attributes `append_source` already made
/// local: `MediaBox`, `CropBox`, `Resources`, `Rotate`). `frame_of` gives each page's
/// visible box. A stamp for a page that does not exist, or an image that is not among
/// `pictures`, is skipped.
pub fn stamp_pages(
    doc: &mut Document,
    pages: &[ObjectId],
    stamps: &[Stamp],
    pictures: &HashMap<String, Picture>,
    visible_box: impl Fn(&Document, ObjectId) -> [f32; 4],
) -> anyhow::Result<()> {
    let mut by_page: HashMap<usize, Vec<&Stamp>> = HashMap::new();
    for s in stamps {
        if s.page < pages.len() {
            by_page.entry(s.page).or_default().push(s);
        }
    }
    if by_page.is_empty() {
        return Ok(());
    }
    let mut fonts = PdfFonts::default();
    let mut stamped: Vec<(ObjectId, Dictionary)> = Vec::new();
    let mut images: HashMap<String, ObjectId> = HashMap::new();
    let mut page_list: Vec<_> = by_page.into_iter().collect();
    page_list.sort_by_key(|(p, _)| *p);
    for (index, stamps) in page_list {
        let page_id = pages[index];
        let rotate = doc
            .get_dictionary(page_id)?
            .get(b"Rotate")
            .ok()
            .and_then(|o| o.as_i64().ok())
            .unwrap_or(0)
            .rem_euclid(360);
        let frame = Frame {
            visible: visible_box(doc, page_id),
            rotate,
        };
        let h = frame.shown_height();
        let m = frame.ctm();
        let mut ops = format!(
            "Q\nq {} {} {} {} {} {} cm\n",
            m[0], m[1], m[2], m[3], m[4], m[5]
        );
        let mut xobjects = Dictionary::new();
        for s in stamps {
            let (x, y, w, bh) = (s.left, h - s.top - s.height, s.width, s.height);
            match &s.mark {
                Mark::Text(text) => ops.push_str(&text_ops(&mut fonts, text, x, y, w, bh)),
                Mark::Check => {
                    let lw = (w.min(bh) * 0.12).max(0.8);
                    ops.push_str(&format!(
                        "q 0.1 0.14 0.5 RG {lw:.2} w 1 J 1 j {:.2} {:.2} m {:.2} {:.2} l {:.2} {:.2} l S Q\n",
                        x + w * 0.2, y + bh * 0.5, x + w * 0.42, y + bh * 0.22, x + w * 0.82, y + bh * 0.82
                    ));
                }
                Mark::Image(key) => {
                    let Some(pic) = pictures.get(key) else {
                        continue;
                    };
                    let id = *images
                        .entry(key.clone())
                        .or_insert_with(|| add_picture(doc, pic));
                    let name = format!("ESImg{}", id.0);
                    xobjects.set(name.as_bytes().to_vec(), id);
                    ops.push_str(&fit_image_ops(&name, pic, x, y, w, bh));
                }
            }
        }
        ops.push_str("Q\n");
        stamped.push((page_id, xobjects));
        let open = doc.add_object(Stream::new(Dictionary::new(), b"q\n".to_vec()));
        let mut close = Stream::new(Dictionary::new(), ops.into_bytes());
        let _ = close.compress();
        let close = doc.add_object(close);
        let page = doc.get_dictionary_mut(page_id)?;
        let mut contents = vec![Object::Reference(open)];
        match page.get(b"Contents") {
            Ok(Object::Array(a)) => contents.extend(a.iter().cloned()),
            Ok(other) => contents.push(other.clone()),
            Err(_) => {}
        }
        contents.push(Object::Reference(close));
        page.set("Contents", contents);
    }
    let font_resources = fonts.finish(doc);
    for (page_id, xobjects) in stamped {
        add_resources(doc, page_id, &font_resources, xobjects)?;
    }
    Ok(())
}

/// One line of text, shrunk to fit the box, vertically centred.
fn text_ops(fonts: &mut PdfFonts, text: &str, x: f32, y: f32, w: f32, h: f32) -> String {
    let line = shape(text.lines().next().unwrap_or(""), Style::Regular);
    let pad = 2.0_f32.min(w / 10.0);
    let size = (h * 0.7)
        .min(14.0)
        .min((w - 2.0 * pad) / line.width().max(0.001))
        .max(2.0);
    let baseline = y + (h - size) / 2.0 + size * 0.22;
    let shown = fonts.show(&line, size, x + pad, baseline);
    format!("BT 0.1 0.14 0.5 rg {shown}ET\n")
}

/// Gives the page its own resource dictionary (copied from the shared one) with the
/// stamp fonts (`/ESF…`) and the stamp images as XObjects.
fn add_resources(
    doc: &mut Document,
    page_id: ObjectId,
    stamp_fonts: &Dictionary,
    xobjects: Dictionary,
) -> anyhow::Result<()> {
    let resolve = |doc: &Document, o: &Object| -> Dictionary {
        match o {
            Object::Reference(id) => doc
                .get_dictionary(*id)
                .cloned()
                .unwrap_or_else(|_| Dictionary::new()),
            Object::Dictionary(d) => d.clone(),
            _ => Dictionary::new(),
        }
    };
    let page = doc.get_dictionary(page_id)?;
    let mut res = page
        .get(b"Resources")
        .map(|o| resolve(doc, o))
        .unwrap_or_default();
    let mut fonts = res
        .get(b"Font")
        .map(|o| resolve(doc, o))
        .unwrap_or_default();
    for (name, font) in stamp_fonts.iter() {
        fonts.set(name.clone(), font.clone());
    }
    res.set("Font", fonts);
    if !xobjects.is_empty() {
        let mut xo = res
            .get(b"XObject")
            .map(|o| resolve(doc, o))
            .unwrap_or_default();
        for (k, v) in xobjects.into_iter() {
            xo.set(k, v);
        }
        res.set("XObject", xo);
    }
    doc.get_dictionary_mut(page_id)?.set("Resources", res);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png_rgba(w: u32, h: u32) -> Vec<u8> {
        let mut out = Vec::new();
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgba);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header().unwrap();
        let data: Vec<u8> = (0..w * h)
            .flat_map(|i| [10, 20, 200, if i % 2 == 0 { 0 } else { 255 }])
            .collect();
        writer.write_image_data(&data).unwrap();
        writer.finish().unwrap();
        out
    }

    /// A 16 x 8 colour JPEG, as Chromium's canvas writes one.
    const JPEG: &[u8] = include_bytes!("testdata/signature-16x8.jpg");

    #[test]
    fn decodes_png_with_alpha_and_refuses_other_bytes() {
        let pic = decode_picture(&png_rgba(4, 2)).unwrap();
        assert_eq!((pic.width, pic.height), (4, 2));
        let Pixels::Rgb { rgb, alpha } = &pic.pixels else {
            panic!("a PNG is decoded")
        };
        assert_eq!(rgb.len(), 24);
        assert_eq!(alpha.as_ref().unwrap().len(), 8);
        assert!(decode_picture(b"\x89PNG\r\n\x1a\nnot really").is_none());
        assert!(decode_picture(b"GIF89a").is_none());
        assert!(decode_picture(&JPEG[..20]).is_none());
    }

    /// A JPEG is put into the PDF as it is: its own bytes, `DCTDecode`, so every host
    /// writes the same object whatever its decoder would have made of the pixels.
    #[test]
    fn a_jpeg_becomes_an_image_object_of_its_own_bytes() {
        let pic = decode_picture(JPEG).unwrap();
        assert_eq!((pic.width, pic.height), (16, 8));
        let mut doc = Document::with_version("1.7");
        let id = add_picture(&mut doc, &pic);
        let s = doc.get_object(id).unwrap().as_stream().unwrap();
        assert_eq!(s.content, JPEG);
        let d = &s.dict;
        assert_eq!(d.get(b"Filter").unwrap().as_name().unwrap(), b"DCTDecode");
        assert_eq!(
            d.get(b"ColorSpace").unwrap().as_name().unwrap(),
            b"DeviceRGB"
        );
        assert_eq!(d.get(b"Width").unwrap().as_i64().unwrap(), 16);
        assert_eq!(d.get(b"Height").unwrap().as_i64().unwrap(), 8);
        assert!(d.get(b"SMask").is_err(), "a JPEG has no transparency");
        // A JPEG saying it has more pixels than are drawn is left out.
        let mut big = JPEG.to_vec();
        let at = big.windows(2).position(|p| p == [0xFF, 0xC0]).unwrap();
        big[at + 5..at + 9].copy_from_slice(&[0x07, 0xD1, 0x07, 0xD1]); // 2001 x 2001
        assert!(decode_picture(&big).is_none());
    }

    #[test]
    fn the_matrix_maps_the_displayed_top_left_corner_for_each_rotation() {
        // A 600 x 800 page (user space) whose visible box starts at (10, 20).
        let visible = [10.0, 20.0, 610.0, 820.0];
        let apply =
            |m: [f32; 6], x: f32, y: f32| (m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]);
        for (rotate, expected) in [
            (0, (10.0, 820.0)),   // top-left stays top-left
            (90, (10.0, 20.0)),   // clockwise: the bottom-left corner is shown top-left
            (180, (610.0, 20.0)), // upside down: the bottom-right corner
            (270, (610.0, 820.0)),
        ] {
            let f = Frame { visible, rotate };
            let top_left = apply(f.ctm(), 0.0, f.shown_height());
            assert_eq!(top_left, expected, "rotate {rotate}");
        }
    }
}
