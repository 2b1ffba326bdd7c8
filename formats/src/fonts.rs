//! The fonts every PDF we write draws its text with, and the shaping that turns a line
//! of text into glyphs: Noto Sans (Latin with Extended A and B and Vietnamese, Greek,
//! Cyrillic, Devanagari; regular and bold), Noto Sans Arabic, Hebrew and Thai, and
//! Dancing Script for typed signatures, all under the SIL Open Font License
//! (`formats/fonts/`). They are data built into the code, so the same text gives the
//! same glyphs on every host.
//!
//! A line is split into bidirectional runs in visual order (`unicode-bidi`), each run
//! into pieces of one font (the first font of the style's chain that has the
//! character; combining marks and joiners stay with their base), and each piece is
//! shaped by `rustybuzz` (HarfBuzz's shaping in Rust: Arabic joining, Indic reordering,
//! marks, kerning). [`coverage`] lists the characters the fonts have, so that the
//! engine refuses a text with any other where it is entered, instead of the PDF
//! showing a missing glyph.

use rustybuzz::{Direction, Face, UnicodeBuffer};
use unicode_bidi::ParagraphBidiInfo;

/// One of the built-in fonts, by its place in [`FONTS`].
pub(crate) type FontId = usize;

/// A built-in font: its PostScript name (for the PDF) and its bytes.
pub(crate) struct FontFile {
    pub name: &'static str,
    pub data: &'static [u8],
}

macro_rules! font {
    ($name:literal, $file:literal) => {
        FontFile {
            name: $name,
            data: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/fonts/", $file)),
        }
    };
}

/// Every built-in font; [`Style`] chains pick from them.
pub(crate) static FONTS: [FontFile; 6] = [
    font!("NotoSans-Regular", "NotoSans-Regular.ttf"),
    font!("NotoSans-Bold", "NotoSans-Bold.ttf"),
    font!("NotoSansArabic-Regular", "NotoSansArabic-Regular.ttf"),
    font!("NotoSansHebrew-Regular", "NotoSansHebrew-Regular.ttf"),
    font!("NotoSansThai-Regular", "NotoSansThai-Regular.ttf"),
    font!("DancingScript-Regular", "DancingScript-Regular.ttf"),
];

/// The other scripts' fonts, after a style's first font.
const FALLBACKS: [FontId; 3] = [2, 3, 4];

/// How a text is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Style {
    Regular,
    Bold,
    /// A typed signature: handwriting for Latin, the regular fonts for the rest.
    Handwriting,
}

impl Style {
    /// The fonts tried for a character, in order.
    fn chain(self) -> impl Iterator<Item = FontId> {
        let first: &'static [FontId] = match self {
            Style::Regular => &[0],
            Style::Bold => &[1, 0],
            Style::Handwriting => &[5, 0],
        };
        first.iter().copied().chain(FALLBACKS)
    }
}

thread_local! {
    /// The parsed fonts (parsing reads table directories only; glyph data is read as
    /// shaping needs it).
    static FACES: Vec<Face<'static>> = FONTS
        .iter()
        .map(|f| Face::from_slice(f.data, 0).expect("a built-in font parses"))
        .collect();
}

/// Runs `f` with the parsed built-in fonts.
pub(crate) fn with_faces<T>(f: impl FnOnce(&[Face<'static>]) -> T) -> T {
    FACES.with(|faces| f(faces))
}

/// One glyph of shaped text; lengths in units of the font's em (1.0 = the font size).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Glyph {
    pub id: u16,
    pub advance: f32,
    pub dx: f32,
    pub dy: f32,
    /// The text this glyph stands for: its share of its cluster's characters (see
    /// `shape_piece`), possibly none.
    pub text: String,
}

/// A piece of a line in one font and one direction, its glyphs in visual order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Run {
    pub font: FontId,
    pub glyphs: Vec<Glyph>,
    /// The piece's text in logical (typed) order.
    pub text: String,
    pub rtl: bool,
}

/// A shaped line: its runs left to right.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Line {
    pub runs: Vec<Run>,
}

impl Line {
    /// Width in em (multiply by the font size for points).
    pub fn width(&self) -> f32 {
        self.runs
            .iter()
            .flat_map(|r| &r.glyphs)
            .map(|g| g.advance)
            .sum()
    }
}

/// The first character of `text` that no built-in font of `style` draws (control
/// characters aside, which are never drawn). The engine asks `esign_work::coverage`,
/// generated from these fonts.
#[cfg(test)]
pub(crate) fn uncovered(text: &str, style: Style) -> Option<char> {
    with_faces(|faces| {
        text.chars()
            .filter(|&c| !c.is_control() && !esign_work::coverage::is_invisible(c))
            .find(|&c| font_for(faces, style, c).is_none())
    })
}

/// Shapes one line of `text` (line breaks and other controls are dropped, tabs become
/// spaces) in `style`.
pub(crate) fn shape(text: &str, style: Style) -> Line {
    let text: String = text
        .chars()
        .filter_map(|c| match c {
            '\t' => Some(' '),
            c if c.is_control() => None,
            c => Some(c),
        })
        .collect();
    if text.is_empty() {
        return Line::default();
    }
    with_faces(|faces| {
        let bidi = ParagraphBidiInfo::new(&text, None);
        let (levels, runs) = bidi.visual_runs(0..text.len());
        let mut line = Line::default();
        for range in runs {
            let rtl = levels[range.start].is_rtl();
            let mut pieces = font_pieces(faces, style, &text[range.clone()]);
            if rtl {
                pieces.reverse();
            }
            for (font, piece) in pieces {
                line.runs.push(shape_piece(faces, font, piece, rtl));
            }
        }
        line
    })
}

/// Splits `text` into pieces of one font each, in logical order.
fn font_pieces<'t>(faces: &[Face], style: Style, text: &'t str) -> Vec<(FontId, &'t str)> {
    let mut pieces: Vec<(FontId, &'t str)> = Vec::new();
    let mut start = 0;
    let mut current: Option<FontId> = None;
    for (at, c) in text.char_indices() {
        let stays = is_mark_or_joiner(c) || (c == ' ' && current.is_some());
        let font = match current {
            Some(f) if stays => f,
            _ => font_for(faces, style, c).unwrap_or(0),
        };
        if let Some(cur) = current
            && cur != font
        {
            pieces.push((cur, &text[start..at]));
            start = at;
        }
        current = Some(font);
    }
    if let Some(cur) = current {
        pieces.push((cur, &text[start..]));
    }
    pieces
}

/// The first font of `style`'s chain that has `c`.
fn font_for(faces: &[Face], style: Style, c: char) -> Option<FontId> {
    style.chain().find(|&f| has_glyph(&faces[f], c))
}

fn has_glyph(face: &Face, c: char) -> bool {
    face.glyph_index(c).is_some_and(|g| g.0 != 0)
}

fn is_mark_or_joiner(c: char) -> bool {
    matches!(c, '\u{200c}' | '\u{200d}' | '\u{fe00}'..='\u{fe0f}') || extends_grapheme(c)
}

/// Whether `c` extends the character before it (combining and spacing marks, vowel
/// signs, viramas), by Unicode's grapheme cluster rules.
fn extends_grapheme(c: char) -> bool {
    use unicode_segmentation::UnicodeSegmentation;
    // A character that does not start a grapheme cluster of its own after a base
    // letter extends it (marks, vowel signs, viramas).
    let mut s = String::from("a");
    s.push(c);
    s.graphemes(true).count() == 1
}

/// Shapes one piece of one font and direction.
fn shape_piece(faces: &[Face], font: FontId, text: &str, rtl: bool) -> Run {
    let face = &faces[font];
    let mut buffer = UnicodeBuffer::new();
    buffer.push_str(text);
    buffer.guess_segment_properties();
    buffer.set_direction(if rtl {
        Direction::RightToLeft
    } else {
        Direction::LeftToRight
    });
    let shaped = rustybuzz::shape(face, &[], buffer);
    let em = face.units_per_em().max(1) as f32;
    let infos = shaped.glyph_infos();
    let positions = shaped.glyph_positions();
    // Cluster starts, to cut the text of each cluster.
    let mut starts: Vec<usize> = infos.iter().map(|i| i.cluster as usize).collect();
    starts.sort_unstable();
    starts.dedup();
    let cluster_text = |start: usize| {
        let end = starts
            .iter()
            .find(|&&s| s > start)
            .copied()
            .unwrap_or(text.len());
        text.get(start..end).unwrap_or_default().to_string()
    };
    // A cluster's characters are dealt to its glyphs in reading order (left to right,
    // or right to left in right-to-left text), one each, the last glyph taking the
    // rest: read in that order the glyphs give the text back, with no glyph of a
    // cluster left without text between two that have some (which readers take for a
    // gap between words).
    let order: Vec<usize> = if rtl {
        (0..infos.len()).rev().collect()
    } else {
        (0..infos.len()).collect()
    };
    let mut members: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for i in order {
        members
            .entry(infos[i].cluster as usize)
            .or_default()
            .push(i);
    }
    let mut texts = vec![String::new(); infos.len()];
    for (cluster, glyphs) in members {
        let chars: Vec<char> = cluster_text(cluster).chars().collect();
        for (k, &i) in glyphs.iter().enumerate() {
            texts[i] = if k + 1 == glyphs.len() {
                chars.get(k..).unwrap_or_default().iter().collect()
            } else {
                chars.get(k).map(|c| c.to_string()).unwrap_or_default()
            };
        }
    }
    let glyphs = infos
        .iter()
        .zip(positions)
        .zip(texts)
        .map(|((info, pos), text)| Glyph {
            id: u16::try_from(info.glyph_id).unwrap_or(0),
            advance: pos.x_advance as f32 / em,
            dx: pos.x_offset as f32 / em,
            dy: pos.y_offset as f32 / em,
            text,
        })
        .collect();
    Run {
        font,
        glyphs,
        text: text.to_string(),
        rtl,
    }
}

/// Breaks `text` into lines no wider than `width` em, at spaces where possible, and
/// within a word between grapheme clusters when the word alone is too wide.
pub(crate) fn wrap(text: &str, style: Style, width: f32) -> Vec<String> {
    use unicode_segmentation::UnicodeSegmentation;
    let fits = |s: &str| shape(s, style).width() <= width;
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let candidate = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if fits(&candidate) {
            line = candidate;
            continue;
        }
        if !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        if fits(word) {
            line = word.to_string();
            continue;
        }
        for cluster in word.graphemes(true) {
            if !line.is_empty() && !fits(&format!("{line}{cluster}")) {
                lines.push(std::mem::take(&mut line));
            }
            line.push_str(cluster);
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Every character the built-in fonts draw, as ranges of code points (the engine's
/// copy, `esign_work::coverage`, refuses the others where a text is entered).
pub fn coverage() -> Vec<(u32, u32)> {
    let mut points = std::collections::BTreeSet::new();
    with_faces(|faces| {
        for f in Style::Regular.chain() {
            let face = &faces[f];
            let Some(cmap) = face.tables().cmap else {
                continue;
            };
            for sub in cmap.subtables.into_iter().filter(|s| s.is_unicode()) {
                sub.codepoints(|cp| {
                    if sub.glyph_index(cp).is_some_and(|g| g.0 != 0) {
                        points.insert(cp);
                    }
                });
            }
        }
    });
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for cp in points {
        match ranges.last_mut() {
            Some((_, end)) if *end + 1 == cp => *end = cp,
            _ => ranges.push((cp, cp)),
        }
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fonts_of(line: &Line) -> Vec<&'static str> {
        line.runs.iter().map(|r| FONTS[r.font].name).collect()
    }

    #[test]
    fn every_script_we_promise_has_a_font() {
        for text in [
            "Zażółć gęślą jaźń",
            "Příliš žluťoučký kůň",
            "Tiếng Việt có dấu",
            "Şişli İstanbul, Ștefan",
            "Ελληνικά",
            "Съешь же ещё этих",
            "مرحبا بالعالم",
            "שלום עולם",
            "नमस्ते दुनिया",
            "สวัสดีชาวโลก",
        ] {
            assert_eq!(uncovered(text, Style::Regular), None, "{text}");
            assert_eq!(uncovered(text, Style::Bold), None, "{text}");
            assert_eq!(uncovered(text, Style::Handwriting), None, "{text}");
            let line = shape(text, Style::Regular);
            assert!(
                line.runs.iter().flat_map(|r| &r.glyphs).all(|g| g.id != 0),
                "no missing glyph in {text}"
            );
        }
        assert_eq!(uncovered("Ok 漢字", Style::Regular), Some('漢'));
    }

    #[test]
    fn right_to_left_text_runs_right_to_left_beside_latin_and_digits() {
        let line = shape("Dr שלום Cohen", Style::Regular);
        assert_eq!(
            fonts_of(&line),
            [
                "NotoSans-Regular",
                "NotoSansHebrew-Regular",
                "NotoSans-Regular"
            ]
        );
        assert!(line.runs[1].rtl && !line.runs[0].rtl);
        assert_eq!(line.runs[1].text, "שלום");
        // Drawn left to right, the Hebrew word's last letter comes first.
        assert_eq!(line.runs[1].glyphs[0].text, "ם");
        // Digits after Hebrew in a left-to-right line go before it, as bidi orders them.
        let line = shape("Name: שלום 42", Style::Regular);
        let texts: Vec<&str> = line.runs.iter().map(|r| r.text.as_str()).collect();
        assert_eq!(texts, ["Name: ", "42", "שלום "], "{texts:?}");
    }

    #[test]
    fn arabic_letters_join_and_marks_stay_with_their_base() {
        // Joined forms (initial, final) differ from the isolated letter; the font draws
        // the dot as a mark glyph of its own, which stands for no text.
        let letters = |t: &str| -> Vec<u16> {
            let line = shape(t, Style::Regular);
            let glyphs = line.runs[0].glyphs.iter();
            glyphs
                .filter(|g| !g.text.is_empty())
                .map(|g| g.id)
                .collect()
        };
        let (joined, alone) = (letters("بب"), letters("ب"));
        assert_eq!((joined.len(), alone.len()), (2, 1));
        assert!(!joined.contains(&alone[0]) && joined[0] != joined[1]);
        // A Devanagari vowel sign stays with its consonant, and goes before it.
        let line = shape("कि", Style::Regular);
        assert_eq!(line.runs.len(), 1);
        let texts: Vec<&str> = line.runs[0]
            .glyphs
            .iter()
            .map(|g| g.text.as_str())
            .collect();
        assert_eq!(texts.concat(), "कि", "read in drawing order: {texts:?}");
    }

    #[test]
    fn typed_signatures_are_handwriting_in_latin_and_fall_back_elsewhere() {
        let line = shape("Anna Łukasz", Style::Handwriting);
        assert_eq!(fonts_of(&line), ["DancingScript-Regular"]);
        let line = shape("Анна", Style::Handwriting);
        assert_eq!(fonts_of(&line), ["NotoSans-Regular"]);
    }

    #[test]
    fn the_engine_s_coverage_table_is_the_fonts_own() {
        let ranges = coverage();
        if std::env::var("ESIGN_BLESS").is_ok_and(|v| v == "1") {
            let mut table = String::from(
                "// Generated from formats/fonts/ by `ESIGN_BLESS=1 cargo test -p esign-formats \
                 coverage_table`: do not edit.\n#[rustfmt::skip]\npub const RANGES: &[(u32, u32)] = &[\n",
            );
            for chunk in ranges.chunks(6) {
                let row: Vec<String> = chunk
                    .iter()
                    .map(|(a, b)| format!("(0x{a:X}, 0x{b:X})"))
                    .collect();
                table.push_str(&format!("    {},\n", row.join(", ")));
            }
            table.push_str("];\n");
            let path = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../work-types/src/coverage_table.rs"
            );
            std::fs::write(path, table).unwrap();
        }
        assert!(
            ranges == esign_work::coverage::RANGES,
            "work-types/src/coverage_table.rs is not the fonts' coverage: run the test with ESIGN_BLESS=1"
        );
        // What the engine refuses is what the fonts lack.
        for text in ["Łódź", "Ελλάδα", "مرحبا", "नमस्ते", "สวัสดี"]
        {
            assert_eq!(esign_work::coverage::first_uncovered(text), None, "{text}");
            assert_eq!(uncovered(text, Style::Regular), None, "{text}");
        }
        assert_eq!(esign_work::coverage::first_uncovered("Ok 漢字"), Some('漢'));
    }

    #[test]
    fn long_lines_wrap_at_spaces_and_long_words_between_clusters() {
        let lines = wrap("one two three four five six", Style::Regular, 6.0);
        assert!(lines.len() > 1, "{lines:?}");
        assert_eq!(lines.join(" "), "one two three four five six");
        for l in &lines {
            assert!(shape(l, Style::Regular).width() <= 6.0, "{l}");
        }
        let word = "x".repeat(80);
        let lines = wrap(&word, Style::Regular, 10.0);
        assert!(lines.len() > 1);
        assert_eq!(lines.concat(), word);
    }
}
