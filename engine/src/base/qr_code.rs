//! QR codes as PNG pictures (a public link's `qr_url`): the symbol by Nayuki's
//! `qrcodegen-no-heap`, the picture by zune-png's encoder, grey, four pixels a module,
//! with a quiet zone of four modules. zune-png stores its pixels uncompressed, so a
//! link's code is about 25 KB; larger pixels are for CSS (`image-rendering: pixelated`).

use alloc::vec;
use alloc::vec::Vec;
use qrcodegen_no_heap::{QrCode, QrCodeEcc, Version};
use zune_core::bit_depth::BitDepth;
use zune_core::colorspace::ColorSpace;
use zune_core::options::EncoderOptions;
use zune_png::PngEncoder;

/// Pixels per module.
const SCALE: usize = 4;
/// Modules of white around the symbol (the standard's quiet zone).
const QUIET: usize = 4;

/// `text` as a QR code (error correction M) in a PNG, or `None` when it is too long
/// for the largest symbol.
pub fn png(text: &str) -> Option<Vec<u8>> {
    let mut out = vec![0u8; Version::MAX.buffer_len()];
    let mut temp = vec![0u8; Version::MAX.buffer_len()];
    let qr = QrCode::encode_text(
        text,
        &mut temp,
        &mut out,
        QrCodeEcc::Medium,
        Version::MIN,
        Version::MAX,
        None,
        true,
    )
    .ok()?;
    let modules = usize::try_from(qr.size()).ok()?;
    let side = (modules + 2 * QUIET) * SCALE;
    let mut grey = vec![255u8; side * side];
    for y in 0..modules {
        for x in 0..modules {
            if qr.get_module(x as i32, y as i32) {
                paint(&mut grey, side, x, y);
            }
        }
    }
    let options = EncoderOptions::new(side, side, ColorSpace::Luma, BitDepth::Eight);
    let mut bytes = Vec::new();
    PngEncoder::new(&grey, options).encode(&mut bytes).ok()?;
    Some(bytes)
}

/// Paints module (`x`, `y`) black.
fn paint(grey: &mut [u8], side: usize, x: usize, y: usize) {
    for dy in 0..SCALE {
        let row = ((y + QUIET) * SCALE + dy) * side;
        let start = row + (x + QUIET) * SCALE;
        grey[start..start + SCALE].fill(0);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_url_becomes_a_png() {
        let png = super::png("https://esign.example.com/p/abcdefghijklmnop").unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert!(png.len() < 40_000, "{}", png.len());
    }
}
