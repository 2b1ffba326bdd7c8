//! Page images for the signing page: every page of a rendered PDF as a PNG, drawn by
//! `hayro`, a PDF rasterizer in pure Rust (so `cargo run` needs nothing installed; it
//! renders the standard 14 fonts from fonts it embeds).
//!
//! Why images on the server rather than pdf.js in the browser: a phone downloads one
//! small image per page it shows instead of about 1.4 MB of script (pdf.js and its
//! worker) before the first page, the page keeps a strict Content-Security-Policy, and
//! the images are made once per rendered PDF, off the request path.

use hayro::hayro_interpret::InterpreterSettings;
use hayro::hayro_syntax::Pdf;
use hayro::vello_cpu::color::palette::css::WHITE;
use hayro::{PixmapSettings, RenderCache, RenderSettings, render};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Width of page images in pixels: sharp at full width on a phone (375 CSS px at 2x)
/// and readable in a desktop column of 900 CSS px.
pub const PAGE_WIDTH_PX: u32 = 800;

/// Pixels of one page image at the most (800 × 10 000: 32 MB of RGBA).
pub const MAX_PAGE_PIXELS: u64 = 8_000_000;

/// One page as a PNG.
pub struct PageImage {
    pub png: Vec<u8>,
    pub width: u32,
    pub height: u32,
}

/// Every page of `pdf` as a PNG `width_px` wide on white. Never panics: a page the
/// rasterizer fails on makes the whole result an error (the PDF itself stays good).
pub fn page_images(pdf: &[u8], width_px: u32) -> Result<Vec<PageImage>, String> {
    catch_unwind(AssertUnwindSafe(|| render_all(pdf, width_px)))
        .unwrap_or_else(|_| Err("the rasterizer failed on this PDF".into()))
}

fn render_all(pdf: &[u8], width_px: u32) -> Result<Vec<PageImage>, String> {
    let max_height = max_height(width_px);
    let pdf = crate::downsample::large_jpegs(pdf, width_px, max_height).into_owned();
    let pdf = Pdf::new(pdf).map_err(|e| format!("cannot read the PDF: {e:?}"))?;
    let cache = RenderCache::new();
    let interp = InterpreterSettings::default();
    let settings = RenderSettings::default();
    let mut out = Vec::new();
    for (i, page) in pdf.pages().iter().enumerate() {
        let (w, h) = page.render_dimensions();
        if w <= 0.0 || h <= 0.0 {
            return Err(format!("page {} has no size", i + 1));
        }
        // `render` truncates `w * scale`: nudge the scale so the width comes out exact.
        let mut scale = width_px as f32 / w;
        if ((w * scale) as u32) < width_px {
            scale = scale.next_up();
        }
        // Very tall pages are drawn narrower, so that no page image has more than
        // MAX_PAGE_PIXELS (a page 100 times as tall as wide would otherwise be an
        // 800 × 65 535 pixmap of 210 MB).
        if h * scale > max_height as f32 {
            scale = max_height as f32 / h;
        }
        let pixmap = render(
            page,
            &cache,
            &interp,
            &settings,
            &PixmapSettings {
                x_scale: scale,
                y_scale: scale,
                bg_color: WHITE,
            },
        );
        let (width, height) = (u32::from(pixmap.width()), u32::from(pixmap.height()));
        // Opaque (white background), so the premultiplied pixels are plain RGBA.
        let png = encode(pixmap.data_as_u8_slice(), width, height)
            .map_err(|e| format!("page {}: {e}", i + 1))?;
        out.push(PageImage { png, width, height });
    }
    Ok(out)
}

/// The height of the tallest page image `width_px` wide.
fn max_height(width_px: u32) -> u32 {
    (MAX_PAGE_PIXELS / u64::from(width_px.max(1))).min(u64::from(u16::MAX)) as u32
}

/// A compact PNG of opaque RGBA pixels: a page with no colour (most contracts) becomes
/// 16-level grey, about a third of the size of full colour with no visible loss for
/// anti-aliased text; anything coloured stays 8-bit RGB.
fn encode(rgba: &[u8], width: u32, height: u32) -> Result<Vec<u8>, png::EncodingError> {
    let grey = rgba.chunks_exact(4).all(|p| p[0] == p[1] && p[1] == p[2]);
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, width, height);
    enc.set_compression(png::Compression::High);
    enc.set_filter(png::Filter::Adaptive);
    let data: Vec<u8> = if grey {
        enc.set_color(png::ColorType::Grayscale);
        enc.set_depth(png::BitDepth::Four);
        let row = (width as usize).div_ceil(2);
        let mut packed = vec![0u8; row * height as usize];
        for (y, line) in rgba.chunks_exact(width as usize * 4).enumerate() {
            for (x, px) in line.chunks_exact(4).enumerate() {
                // Round to the nearest of 16 levels.
                let level = (u16::from(px[0]) * 15 + 127) / 255;
                packed[y * row + x / 2] |= (level as u8) << if x % 2 == 0 { 4 } else { 0 };
            }
        }
        packed
    } else {
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        rgba.chunks_exact(4)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect()
    };
    let mut writer = enc.write_header()?;
    writer.write_image_data(&data)?;
    writer.finish()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_becomes_a_png_of_the_asked_width() {
        let pdf = crate::pdf::sample_pdf(3);
        let pages = page_images(&pdf, 400).unwrap();
        assert_eq!(pages.len(), 3);
        for p in &pages {
            assert_eq!(p.width, 400);
            assert!(p.height > p.width, "portrait pages");
            assert!(p.png.starts_with(b"\x89PNG"));
        }
        assert!(page_images(b"not a pdf", 400).is_err());
    }
}
