//! Generated pages: the appendix, summary and audit certificate blocks (headings,
//! wrapped text, table rows, rules, signatures) laid out on A4 pages as PDF content
//! streams, in the built-in fonts (`fonts`), every script shaped and embedded.

use crate::fonts::{Style, shape, wrap};
use crate::pdf_fonts::PdfFonts;
pub(crate) use crate::pdf_text::num;
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

/// How much wider than the text width a line may be and still be drawn on one line,
/// smaller, rather than broken.
pub(crate) const NARROWER: f32 = 1.15;

/// Blocks laid out: one content stream per page (none if no blocks produced any
/// output), the pictures they draw by resource name, and the fonts they draw with.
pub(crate) struct LaidOut {
    pub pages: Vec<Vec<u8>>,
    pub pictures: Vec<(String, Picture)>,
    pub fonts: PdfFonts,
}

/// Lays out blocks on A4 pages.
pub(crate) fn layout(blocks: &[Block]) -> LaidOut {
    let mut layout = Layout::new();
    for block in blocks {
        layout.block(block);
    }
    layout.finish()
}

/// A text line piece placed at an absolute x position.
pub(crate) struct Piece {
    x: f32,
    text: String,
    /// Its font size (the line's, or smaller for a piece a little too wide).
    size: f32,
}

pub(crate) struct Layout {
    pages: Vec<Vec<u8>>,
    current: Vec<u8>,
    /// Top of the free space on the current page.
    y: f32,
    /// Pictures drawn so far, by resource name.
    pictures: Vec<(String, Picture)>,
    fonts: PdfFonts,
}

impl Layout {
    pub(crate) fn new() -> Self {
        Layout {
            pages: Vec::new(),
            current: Vec::new(),
            y: A4_HEIGHT - MARGIN,
            pictures: Vec::new(),
            fonts: PdfFonts::default(),
        }
    }

    pub(crate) fn finish(mut self) -> LaidOut {
        if !self.current.is_empty() {
            self.pages.push(std::mem::take(&mut self.current));
        }
        LaidOut {
            pages: self.pages,
            pictures: self.pictures,
            fonts: self.fonts,
        }
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

    /// Places one line of text made of pieces in one style, as tall as `size` makes it
    /// (each piece at its own size).
    fn line(&mut self, style: Style, size: f32, pieces: &[Piece]) {
        let height = size * LINE_FACTOR;
        self.reserve(height);
        let baseline = self.y - size;
        self.y -= height;
        let mut ops = String::from("BT\n");
        for piece in pieces.iter().filter(|p| !p.text.is_empty()) {
            let line = shape(&piece.text, style);
            ops.push_str(&self.fonts.show(&line, piece.size, piece.x, baseline));
        }
        ops.push_str("ET\n");
        self.current.extend_from_slice(ops.as_bytes());
    }

    pub(crate) fn block(&mut self, block: &Block) {
        let width = A4_WIDTH - 2.0 * MARGIN;
        match block {
            Block::Heading(text) => {
                self.space(6.0);
                self.paragraph(text, Style::Bold, HEADING_SIZE, width);
                self.space(4.0);
            }
            Block::Text(text) => {
                self.paragraph(text, Style::Regular, TEXT_SIZE, width);
                self.space(6.0);
            }
            Block::Row(cells) => self.row(cells, Style::Regular),
            Block::HeaderRow(cells) => self.row(cells, Style::Bold),
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
                let line = shape(text, Style::Handwriting);
                let size = 22.0_f32.min(BOX_W / line.width().max(0.001));
                let shown = self.fonts.show(&line, size, MARGIN, y + 12.0);
                format!("BT {shown}ET\n").into_bytes()
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
        self.paragraph(caption, Style::Regular, 9.0, A4_WIDTH - 2.0 * MARGIN);
    }

    fn paragraph(&mut self, text: &str, style: Style, size: f32, width: f32) {
        for hard_line in text.split('\n') {
            // A line a little too wide (a label and a 64-digit hash) is drawn a little
            // smaller rather than broken.
            if let Some(smaller) = narrower(hard_line, style, size, width) {
                let pieces = [Piece {
                    x: MARGIN,
                    text: hard_line.to_string(),
                    size: smaller,
                }];
                self.line(style, size, &pieces);
                continue;
            }
            for line in wrap(hard_line, style, width / size) {
                self.line(
                    style,
                    size,
                    &[Piece {
                        x: MARGIN,
                        text: line,
                        size,
                    }],
                );
            }
        }
    }

    fn row(&mut self, cells: &[String], style: Style) {
        if cells.is_empty() {
            return;
        }
        let column = (A4_WIDTH - 2.0 * MARGIN) / cells.len() as f32;
        let last = cells.len() - 1;
        // Each cell's lines, each with its size: a cell a little too wide for its
        // column (a name and an address) is drawn smaller on one line.
        let wrapped: Vec<Vec<(String, f32)>> = cells
            .iter()
            .enumerate()
            .map(|(i, cell)| {
                let room = if i == last { column } else { column - CELL_GAP };
                let text = cell.replace('\n', " ");
                if text.is_empty() {
                    Vec::new()
                } else if let Some(smaller) = narrower(&text, style, TEXT_SIZE, room) {
                    vec![(text, smaller)]
                } else {
                    let lines = wrap(&text, style, room.max(TEXT_SIZE) / TEXT_SIZE);
                    lines.into_iter().map(|l| (l, TEXT_SIZE)).collect()
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
                    let (mut text, size) = wrapped[i][k].clone();
                    let x = if i == last {
                        A4_WIDTH - MARGIN - shape(&text, style).width() * size
                    } else {
                        MARGIN + column * i as f32
                    };
                    // A trailing space (invisible) keeps cells apart in extracted text.
                    if n + 1 < present.len() {
                        text.push(' ');
                    }
                    Piece { x, text, size }
                })
                .collect();
            self.line(style, TEXT_SIZE, &pieces);
        }
        self.y -= 2.0;
    }
}

/// The size at which `text`, a little too wide at `size` for `width` (at most
/// [`NARROWER`] times), fits on one line; `None` when it fits as it is or is too wide
/// for that.
fn narrower(text: &str, style: Style, size: f32, width: f32) -> Option<f32> {
    let natural = shape(text, style).width() * size;
    (natural > width && natural <= width * NARROWER).then(|| size * width / natural)
}
