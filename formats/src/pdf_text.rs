//! Text in PDF content streams, as the rendered pages and the stamps both write it:
//! WinAnsi encoding, Helvetica and Helvetica-Bold widths, line wrapping and PDF string
//! literals. `pdf` and `stamp` use it; it uses neither.

/// One of the two standard fonts used on generated pages.
#[derive(Clone, Copy)]
pub(crate) enum Font {
    Regular,
    Bold,
}

impl Font {
    pub(crate) fn resource(self) -> &'static str {
        match self {
            Font::Regular => "F1",
            Font::Bold => "F2",
        }
    }

    /// Width of a WinAnsi-encoded string in points at `size`.
    pub(crate) fn width(self, text: &[u8], size: f32) -> f32 {
        let table = match self {
            Font::Regular => &HELVETICA_WIDTHS,
            Font::Bold => &HELVETICA_BOLD_WIDTHS,
        };
        let units: u32 = text
            .iter()
            .map(|&b| match b {
                32.. => match table[usize::from(b - 32)] {
                    0 => 556,
                    w => u32::from(w),
                },
                _ => 556,
            })
            .sum();
        units as f32 * size / 1000.0
    }
}

/// Width in points of WinAnsi-encoded `text` in Helvetica at `size`.
pub(crate) fn text_width(text: &[u8], size: f32) -> f32 {
    Font::Regular.width(text, size)
}

/// Appends a PDF literal string, escaping delimiters and non-printable bytes.
pub(crate) fn push_pdf_string(out: &mut Vec<u8>, text: &[u8]) {
    out.push(b'(');
    for &b in text {
        match b {
            b'(' | b')' | b'\\' => out.extend_from_slice(&[b'\\', b]),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(format!("\\{b:03o}").as_bytes()),
        }
    }
    out.push(b')');
}

/// Breaks encoded text into lines no wider than `width`, at spaces where possible.
pub(crate) fn wrap(text: &[u8], font: Font, size: f32, width: f32) -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    let mut line: Vec<u8> = Vec::new();
    for word in text.split(|&b| b == b' ') {
        let candidate_width = if line.is_empty() {
            font.width(word, size)
        } else {
            font.width(&line, size) + font.width(b" ", size) + font.width(word, size)
        };
        if candidate_width <= width {
            if !line.is_empty() {
                line.push(b' ');
            }
            line.extend_from_slice(word);
            continue;
        }
        if !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        // The word alone may still be too wide: break it between characters.
        for &b in word {
            if !line.is_empty() && font.width(&line, size) + font.width(&[b], size) > width {
                lines.push(std::mem::take(&mut line));
            }
            line.push(b);
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Encodes text in WinAnsiEncoding; characters it cannot represent become `?`,
/// tabs become spaces and other control characters are dropped.
pub(crate) fn encode(text: &str) -> Vec<u8> {
    text.chars()
        .filter_map(|c| match c {
            '\t' => Some(b' '),
            ' '..='~' | '\u{a0}'..='\u{ff}' => u8::try_from(u32::from(c)).ok(),
            c if c.is_control() => None,
            c => Some(
                CP1252_HIGH
                    .iter()
                    .find(|(ch, _)| *ch == c)
                    .map_or(b'?', |&(_, b)| b),
            ),
        })
        .collect()
}

/// Unicode characters that WinAnsiEncoding places in 0x80..=0x9F.
const CP1252_HIGH: [(char, u8); 27] = [
    ('\u{20ac}', 0x80),
    ('\u{201a}', 0x82),
    ('\u{0192}', 0x83),
    ('\u{201e}', 0x84),
    ('\u{2026}', 0x85),
    ('\u{2020}', 0x86),
    ('\u{2021}', 0x87),
    ('\u{02c6}', 0x88),
    ('\u{2030}', 0x89),
    ('\u{0160}', 0x8a),
    ('\u{2039}', 0x8b),
    ('\u{0152}', 0x8c),
    ('\u{017d}', 0x8e),
    ('\u{2018}', 0x91),
    ('\u{2019}', 0x92),
    ('\u{201c}', 0x93),
    ('\u{201d}', 0x94),
    ('\u{2022}', 0x95),
    ('\u{2013}', 0x96),
    ('\u{2014}', 0x97),
    ('\u{02dc}', 0x98),
    ('\u{2122}', 0x99),
    ('\u{0161}', 0x9a),
    ('\u{203a}', 0x9b),
    ('\u{0153}', 0x9c),
    ('\u{017e}', 0x9e),
    ('\u{0178}', 0x9f),
];

/// Helvetica glyph widths (Adobe AFM, 1/1000 em) for WinAnsi codes 32..=255; 0 = unused code.
#[rustfmt::skip]
const HELVETICA_WIDTHS: [u16; 224] = [
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278,
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556,
    1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778,
    667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556,
    333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556,
    556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584, 0,
    556, 0, 222, 556, 333, 1000, 556, 556, 333, 1000, 667, 333, 1000, 0, 611, 0,
    0, 222, 222, 333, 333, 350, 556, 1000, 333, 1000, 500, 333, 944, 0, 500, 667,
    278, 333, 556, 556, 556, 556, 260, 556, 333, 737, 370, 556, 584, 333, 737, 333,
    400, 584, 333, 333, 333, 578, 537, 278, 333, 333, 365, 556, 834, 834, 834, 611,
    667, 667, 667, 667, 667, 667, 1000, 722, 667, 667, 667, 667, 278, 278, 278, 278,
    722, 722, 778, 778, 778, 778, 778, 584, 778, 722, 722, 722, 722, 667, 667, 611,
    556, 556, 556, 556, 556, 556, 889, 500, 556, 556, 556, 556, 278, 278, 278, 278,
    556, 556, 556, 556, 556, 556, 556, 584, 611, 556, 556, 556, 556, 500, 556, 500,
];

/// Helvetica-Bold glyph widths (Adobe AFM, 1/1000 em) for WinAnsi codes 32..=255; 0 = unused code.
#[rustfmt::skip]
const HELVETICA_BOLD_WIDTHS: [u16; 224] = [
    278, 333, 474, 556, 556, 889, 722, 238, 333, 333, 389, 584, 278, 333, 278, 278,
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 333, 333, 584, 584, 584, 611,
    975, 722, 722, 722, 722, 667, 611, 778, 722, 278, 556, 722, 611, 833, 722, 778,
    667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 333, 278, 333, 584, 556,
    333, 556, 611, 556, 611, 556, 333, 611, 611, 278, 278, 556, 278, 889, 611, 611,
    611, 611, 389, 556, 333, 611, 556, 778, 556, 556, 500, 389, 280, 389, 584, 0,
    556, 0, 278, 556, 500, 1000, 556, 556, 333, 1000, 667, 333, 1000, 0, 611, 0,
    0, 278, 278, 500, 500, 350, 556, 1000, 333, 1000, 556, 333, 944, 0, 500, 667,
    278, 333, 556, 556, 556, 556, 280, 556, 333, 737, 370, 556, 584, 333, 737, 333,
    400, 584, 333, 333, 333, 611, 556, 278, 333, 333, 365, 556, 834, 834, 834, 611,
    722, 722, 722, 722, 722, 722, 1000, 722, 667, 667, 667, 667, 278, 278, 278, 278,
    722, 722, 778, 778, 778, 778, 778, 584, 778, 722, 722, 722, 722, 667, 667, 611,
    556, 556, 556, 556, 556, 556, 889, 556, 556, 556, 556, 556, 278, 278, 278, 278,
    611, 611, 611, 611, 611, 611, 611, 584, 611, 611, 611, 611, 611, 556, 611, 556,
];
