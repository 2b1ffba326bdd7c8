//! Generated pages: the appendix, summary and audit certificate blocks (headings,
//! wrapped text, table rows, rules, signatures) laid out on A4 pages as PDF content
//! streams, in the standard fonts.

use crate::pdf_text::{Font, encode, push_pdf_string, text_width, wrap};
use crate::stamp::Picture;

/// A piece of generated text layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// A heading: bold, larger, wrapped to the page width.
    Heading(String),
    /// A wrapped paragraph; `\n` starts a new line.
    Text(String),
    /// A table row: cells spread evenly across the width, the last cell right-aligned.
    /// A cell too wide for its column wraps within it.
    Row(Vec<String>),
    /// Same as [`Block::Row`], in bold.
    HeaderRow(Vec<String>),
    /// A thin horizontal line across the text width.
    Rule,
    /// Continue on a new page (ignored at the top of an empty page).
    PageBreak,
    /// A signature: the picture fitted into a 200 x 50 point box (or, without one, the
    /// text in an oblique font) above a line, then the caption in small type.
    Signature {
        picture: Option<Picture>,
        text: String,
        caption: String,
    },
}

/// A4 width in points.
pub(crate) const A4_WIDTH: f32 = 595.28;

/// A4 height in points.
pub(crate) const A4_HEIGHT: f32 = 841.89;

/// Page margin of generated pages, in points (about 20 mm).
pub(crate) const MARGIN: f32 = 56.0;

pub(crate) const TEXT_SIZE: f32 = 10.0;

pub(crate) const HEADING_SIZE: f32 = 16.0;

pub(crate) const LINE_FACTOR: f32 = 1.35;

pub(crate) const CELL_GAP: f32 = 8.0;

/// Lays out blocks on A4 pages; returns one content stream per page (none if no blocks
/// produced any output) and the pictures they draw, by resource name.
pub(crate) fn layout(blocks: &[Block]) -> (Vec<Vec<u8>>, Vec<(String, Picture)>) {
    let mut layout = Layout::new();
    for block in blocks {
        layout.block(block);
    }
    let pictures = std::mem::take(&mut layout.pictures);
    (layout.finish(), pictures)
}

/// A text line piece placed at an absolute x position.
pub(crate) struct Piece {
    x: f32,
    text: Vec<u8>,
}

pub(crate) struct Layout {
    pages: Vec<Vec<u8>>,
    current: Vec<u8>,
    /// Top of the free space on the current page.
    y: f32,
    /// Pictures drawn so far, by resource name.
    pictures: Vec<(String, Picture)>,
}

impl Layout {
    pub(crate) fn new() -> Self {
        Layout {
            pages: Vec::new(),
            current: Vec::new(),
            y: A4_HEIGHT - MARGIN,
            pictures: Vec::new(),
        }
    }

    pub(crate) fn finish(mut self) -> Vec<Vec<u8>> {
        if !self.current.is_empty() {
            self.pages.push(std::mem::take(&mut self.current));
        }
        self.pages
    }

    fn new_page(&mut self) {
        if !self.current.is_empty() {
            self.pages.push(std::mem::take(&mut self.current));
        }
        self.y = A4_HEIGHT - MARGIN;
    }

    fn at_top(&self) -> bool {
        self.current.is_empty()
    }

    /// Makes room for `height` points, starting a new page if needed.
    fn reserve(&mut self, height: f32) {
        if self.y - height < MARGIN && !self.at_top() {
            self.new_page();
        }
    }

    fn space(&mut self, height: f32) {
        if !self.at_top() {
            self.y -= height;
        }
    }

    /// Places one line of text made of pieces, all in the same font and size.
    fn line(&mut self, font: Font, size: f32, pieces: &[Piece]) {
        let height = size * LINE_FACTOR;
        self.reserve(height);
        let baseline = self.y - size;
        self.y -= height;
        let mut ops = format!("BT /{} {} Tf\n", font.resource(), num(size)).into_bytes();
        for piece in pieces.iter().filter(|p| !p.text.is_empty()) {
            ops.extend_from_slice(
                format!("1 0 0 1 {} {} Tm ", num(piece.x), num(baseline)).as_bytes(),
            );
            push_pdf_string(&mut ops, &piece.text);
            ops.extend_from_slice(b" Tj\n");
        }
        ops.extend_from_slice(b"ET\n");
        self.current.extend_from_slice(&ops);
    }

    pub(crate) fn block(&mut self, block: &Block) {
        let width = A4_WIDTH - 2.0 * MARGIN;
        match block {
            Block::Heading(text) => {
                self.space(6.0);
                self.paragraph(text, Font::Bold, HEADING_SIZE, width);
                self.space(4.0);
            }
            Block::Text(text) => {
                self.paragraph(text, Font::Regular, TEXT_SIZE, width);
                self.space(6.0);
            }
            Block::Row(cells) => self.row(cells, Font::Regular),
            Block::HeaderRow(cells) => self.row(cells, Font::Bold),
            Block::Rule => {
                self.reserve(10.0);
                self.space(4.0);
                let y = num(self.y);
                self.current.extend_from_slice(
                    format!(
                        "q 0.5 w 0.6 G {} {y} m {} {y} l S Q\n",
                        num(MARGIN),
                        num(A4_WIDTH - MARGIN)
                    )
                    .as_bytes(),
                );
                self.y -= 6.0;
            }
            Block::PageBreak => self.new_page(),
            Block::Signature {
                picture,
                text,
                caption,
            } => self.signature(picture.as_ref(), text, caption),
        }
    }

    fn signature(&mut self, picture: Option<&Picture>, text: &str, caption: &str) {
        const BOX_W: f32 = 200.0;
        const BOX_H: f32 = 50.0;
        self.reserve(BOX_H + 28.0);
        self.space(8.0);
        let y = self.y - BOX_H;
        let drawn = match picture {
            Some(pic) => {
                let name = format!("Sig{}", self.pictures.len() + 1);
                let ops = crate::stamp::fit_image_ops(&name, pic, MARGIN, y, BOX_W, BOX_H);
                self.pictures.push((name, pic.clone()));
                ops.into_bytes()
            }
            None => {
                let encoded = encode(text);
                let size = 22.0_f32.min(BOX_W * 1000.0 / text_width(&encoded, 1000.0).max(1.0));
                let mut ops = format!(
                    "BT /F3 {} Tf 1 0 0 1 {} {} Tm ",
                    num(size),
                    num(MARGIN),
                    num(y + 12.0)
                )
                .into_bytes();
                push_pdf_string(&mut ops, &encoded);
                ops.extend_from_slice(b" Tj ET\n");
                ops
            }
        };
        self.current.extend_from_slice(&drawn);
        self.current.extend_from_slice(
            format!(
                "q 0.5 w 0.6 G {} {} m {} {} l S Q\n",
                num(MARGIN),
                num(y),
                num(MARGIN + BOX_W),
                num(y)
            )
            .as_bytes(),
        );
        self.y = y - 2.0;
        self.paragraph(caption, Font::Regular, 9.0, A4_WIDTH - 2.0 * MARGIN);
    }

    fn paragraph(&mut self, text: &str, font: Font, size: f32, width: f32) {
        for hard_line in text.split('\n') {
            for line in wrap(&encode(hard_line), font, size, width) {
                self.line(
                    font,
                    size,
                    &[Piece {
                        x: MARGIN,
                        text: line,
                    }],
                );
            }
        }
    }

    fn row(&mut self, cells: &[String], font: Font) {
        if cells.is_empty() {
            return;
        }
        let column = (A4_WIDTH - 2.0 * MARGIN) / cells.len() as f32;
        let last = cells.len() - 1;
        let wrapped: Vec<Vec<Vec<u8>>> = cells
            .iter()
            .enumerate()
            .map(|(i, cell)| {
                let room = if i == last { column } else { column - CELL_GAP };
                let text = encode(&cell.replace('\n', " "));
                if text.is_empty() {
                    Vec::new()
                } else {
                    wrap(&text, font, TEXT_SIZE, room.max(TEXT_SIZE))
                }
            })
            .collect();
        let lines = wrapped.iter().map(Vec::len).max().unwrap_or(0).max(1);
        for k in 0..lines {
            let present: Vec<usize> = (0..cells.len())
                .filter(|&i| wrapped[i].get(k).is_some())
                .collect();
            let pieces: Vec<Piece> = present
                .iter()
                .enumerate()
                .map(|(n, &i)| {
                    let mut text = wrapped[i][k].clone();
                    let x = if i == last {
                        A4_WIDTH - MARGIN - Font::width(font, &text, TEXT_SIZE)
                    } else {
                        MARGIN + column * i as f32
                    };
                    // A trailing space (invisible) keeps cells apart in extracted text.
                    if n + 1 < present.len() {
                        text.push(b' ');
                    }
                    Piece { x, text }
                })
                .collect();
            self.line(font, TEXT_SIZE, &pieces);
        }
        self.y -= 2.0;
    }
}

/// Formats a number for a content stream (at most 2 decimals, no exponent).
pub(crate) fn num(value: f32) -> String {
    let s = format!("{value:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}
