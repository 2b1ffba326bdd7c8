//! Text drawn into a PDF we write, with the built-in fonts embedded as subsets.
//!
//! Each font a document uses becomes a Type 0 font (`Identity-H`, two bytes per code)
//! over a `CIDFontType2` whose `FontFile2` is the font cut down to the glyphs drawn
//! (`subsetter`, the subsetter of typst). A code (CID) stands for one glyph *with the
//! text it stands for there*: the shaper gives a cluster's text to its first glyph, so
//! one glyph drawn for different letters (Arabic letters share their dotless forms; a
//! Vietnamese letter is a base and a mark) gets a code per text, the `CIDToGIDMap`
//! takes each code to its glyph, and the `ToUnicode` map each code to its text. Read in
//! drawing order the codes give the typed text back (right-to-left text read in reverse,
//! as readers do), so text extraction (`pdftotext`, search, copy) gives what was typed.
//!
//! Output depends only on what is drawn and in which order: the subset's tag is a hash
//! of its glyphs, so the same inputs give the same bytes on every host.

use crate::fonts::{FONTS, FontId, Glyph, Line, Run, with_faces};
use crate::pdf_text::num;
use lopdf::{Dictionary, Document, Object, Stream, dictionary};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use subsetter::GlyphRemapper;

/// The fonts one PDF (or one incremental update of it) draws with.
#[derive(Default)]
pub(crate) struct PdfFonts {
    used: BTreeMap<FontId, Used>,
}

#[derive(Default)]
struct Used {
    glyphs: GlyphRemapper,
    /// The codes given so far, by glyph (the font's own id) and text; code `n` is
    /// `codes[n - 1]` (code 0 is the missing glyph, with no text).
    codes: Vec<(u16, String)>,
    /// Each code and its width in em: the advance the shaper gave its glyph first.
    code_of: BTreeMap<(u16, String), (u16, f32)>,
    /// The widths of codes 1, 2, …
    widths: Vec<f32>,
}

impl Used {
    /// The code of `glyph` standing for its text, and the code's width in em.
    fn code(&mut self, glyph: &Glyph) -> (u16, f32) {
        self.glyphs.remap(glyph.id);
        if glyph.id == 0 {
            // Never in place: the missing glyph's width is the font's.
            return (0, f32::NAN);
        }
        let key = (glyph.id, glyph.text.clone());
        if let Some(&code) = self.code_of.get(&key) {
            return code;
        }
        // As `W` writes it: whole thousandths of an em, where the PDF's pen moves to.
        let width = (glyph.advance * 1000.0).round() / 1000.0;
        self.codes.push(key.clone());
        self.widths.push(width);
        let code = (u16::try_from(self.codes.len()).unwrap_or(u16::MAX), width);
        self.code_of.insert(key, code);
        code
    }
}

/// The resource name of a built-in font on pages we draw on (distinct from the names
/// an uploaded page's own fonts use).
pub(crate) fn resource(font: FontId) -> String {
    format!("ESF{font}")
}

impl PdfFonts {
    /// Operators that show `line` at `size` points with its left end at (`x`, `y`);
    /// to be put inside `BT` … `ET`.
    pub fn show(&mut self, line: &Line, size: f32, x: f32, y: f32) -> String {
        let mut ops = String::new();
        let mut pen = x;
        for run in &line.runs {
            let _ = write!(ops, "/{} {} Tf ", resource(run.font), num(size));
            pen = self.show_run(&mut ops, run, size, pen, y);
        }
        ops.push('\n');
        ops
    }

    /// Shows one run's glyphs from `pen`; returns the pen after them.
    fn show_run(&mut self, ops: &mut String, run: &Run, size: f32, mut pen: f32, y: f32) -> f32 {
        let used = self.used.entry(run.font).or_default();
        // Glyphs go in one string while each sits where the one before leaves the pen
        // (its code's width, the advance the shaper first gave it); a glyph the shaper
        // placed elsewhere (kerning, a mark's offset) starts a new string at its place. (Not `TJ` adjustments: text extraction
        // such as lopdf's reads a space after every `TJ` array.)
        let mut string = String::new();
        let mut pdf_pen: Option<f32> = None;
        for glyph in &run.glyphs {
            let (id, natural) = used.code(glyph);
            let (at_x, at_y) = (pen + glyph.dx * size, y + glyph.dy * size);
            let in_place = glyph.dy == 0.0 && pdf_pen.is_some_and(|p| (p - at_x).abs() < 0.005);
            if !in_place {
                flush(ops, &mut string);
                let _ = write!(ops, "1 0 0 1 {} {} Tm ", num(at_x), num(at_y));
            }
            let _ = write!(string, "{id:04X}");
            pdf_pen = (glyph.dy == 0.0).then_some(at_x + natural * size);
            pen += glyph.advance * size;
        }
        flush(ops, &mut string);
        pen
    }

    /// Writes the fonts used into `doc`; returns the `Font` resource dictionary that
    /// names them.
    pub fn finish(self, doc: &mut Document) -> Dictionary {
        let mut fonts = Dictionary::new();
        for (font, used) in self.used {
            let id = embed(doc, font, &used);
            fonts.set(resource(font), id);
        }
        fonts
    }
}

/// The Type 0 font of the subset of `font` that `used` drew.
fn embed(doc: &mut Document, font: FontId, used: &Used) -> lopdf::ObjectId {
    let file = &FONTS[font];
    let subset =
        subsetter::subset(file.data, 0, &used.glyphs).unwrap_or_else(|_| file.data.to_vec());
    let old_ids: Vec<u16> = used.glyphs.remapped_gids().collect();
    let name = format!("{}+{}", tag(file.name, &old_ids), file.name);
    // Code n draws glyph codes[n - 1] (code 0 the missing glyph).
    let glyph_of_code: Vec<u16> = std::iter::once(0)
        .chain(used.codes.iter().map(|(g, _)| *g))
        .collect();
    let (widths, descriptor) = with_faces(|faces| {
        let face = &faces[font];
        let em = f32::from(face.units_per_em().max(1) as u16);
        let scale = |v: i16| (f32::from(v) * 1000.0 / em).round() as i64;
        let notdef = face
            .glyph_hor_advance(rustybuzz::ttf_parser::GlyphId(0))
            .map_or(0.0, |a| f32::from(a) / em);
        let widths: Vec<Object> = std::iter::once(notdef)
            .chain(used.widths.iter().copied())
            .map(|w| Object::Integer((w * 1000.0).round() as i64))
            .collect();
        let bbox = face.global_bounding_box();
        let descriptor = dictionary! {
            "Type" => "FontDescriptor",
            "FontName" => Object::Name(name.clone().into_bytes()),
            "Flags" => 4,
            "FontBBox" => vec![
                scale(bbox.x_min).into(), scale(bbox.y_min).into(),
                scale(bbox.x_max).into(), scale(bbox.y_max).into(),
            ],
            "ItalicAngle" => 0,
            "Ascent" => scale(face.ascender()),
            "Descent" => scale(face.descender()),
            "CapHeight" => scale(face.capital_height().unwrap_or(face.ascender())),
            "StemV" => 80,
        };
        (widths, descriptor)
    });
    let mut file_stream = Stream::new(dictionary! { "Length1" => subset.len() as i64 }, subset);
    let _ = file_stream.compress();
    let file_id = doc.add_object(file_stream);
    let mut descriptor = descriptor;
    descriptor.set("FontFile2", file_id);
    let descriptor_id = doc.add_object(descriptor);
    // Each code's glyph in the subset, two bytes each.
    let cid_to_gid: Vec<u8> = glyph_of_code
        .iter()
        .flat_map(|&g| used.glyphs.get(g).unwrap_or(0).to_be_bytes())
        .collect();
    let mut cid_to_gid = Stream::new(Dictionary::new(), cid_to_gid);
    let _ = cid_to_gid.compress();
    let cid_to_gid = doc.add_object(cid_to_gid);
    let cid_font = doc.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "CIDFontType2",
        "BaseFont" => Object::Name(name.clone().into_bytes()),
        "CIDSystemInfo" => dictionary! {
            "Registry" => Object::string_literal("Adobe"),
            "Ordering" => Object::string_literal("Identity"),
            "Supplement" => 0,
        },
        "FontDescriptor" => descriptor_id,
        "W" => vec![0.into(), Object::Array(widths)],
        "CIDToGIDMap" => cid_to_gid,
    });
    let texts = used
        .codes
        .iter()
        .enumerate()
        .filter(|(_, (_, text))| !text.is_empty())
        .map(|(i, (_, text))| (i as u16 + 1, text.as_str()));
    let mut to_unicode = Stream::new(Dictionary::new(), to_unicode_cmap(texts).into_bytes());
    let _ = to_unicode.compress();
    let to_unicode = doc.add_object(to_unicode);
    doc.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type0",
        "BaseFont" => Object::Name(name.into_bytes()),
        "Encoding" => "Identity-H",
        "DescendantFonts" => vec![cid_font.into()],
        "ToUnicode" => to_unicode,
    })
}

/// The six capital letters that mark a subset (PDF 32000 9.6.4), from its glyphs.
fn tag(name: &str, glyphs: &[u16]) -> String {
    let mut hash = Sha256::new();
    hash.update(name.as_bytes());
    for g in glyphs {
        hash.update(g.to_be_bytes());
    }
    hash.finalize()
        .iter()
        .take(6)
        .map(|b| char::from(b'A' + b % 26))
        .collect()
}

/// A ToUnicode CMap (PDF 32000 9.10.3) mapping each code to its text.
fn to_unicode_cmap<'t>(texts: impl Iterator<Item = (u16, &'t str)>) -> String {
    let mut out = String::from(
        "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n\
         /CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n\
         /CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n\
         1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n",
    );
    let entries: Vec<(u16, &str)> = texts.collect();
    for chunk in entries.chunks(100) {
        let _ = writeln!(out, "{} beginbfchar", chunk.len());
        for (id, text) in chunk {
            let hex: String = text.encode_utf16().map(|u| format!("{u:04X}")).collect();
            let _ = writeln!(out, "<{id:04X}> <{hex}>");
        }
        out.push_str("endbfchar\n");
    }
    out.push_str("endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n");
    out
}

/// Shows the glyphs of `string` (hex glyph ids) and empties it.
fn flush(ops: &mut String, string: &mut String) {
    if !string.is_empty() {
        let _ = write!(ops, "<{string}> Tj ");
        string.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fonts::{Style, shape};

    /// The texts of `font`'s codes so far, in code order.
    fn texts(fonts: &PdfFonts, font: FontId) -> Vec<&str> {
        fonts.used[&font]
            .codes
            .iter()
            .map(|(_, t)| t.as_str())
            .collect()
    }

    #[test]
    fn the_subset_holds_the_glyphs_drawn_and_maps_them_to_their_text() {
        let mut fonts = PdfFonts::default();
        let ops = fonts.show(&shape("Łódź", Style::Regular), 12.0, 10.0, 20.0);
        assert!(ops.starts_with("/ESF0 12 Tf 1 0 0 1 10 20 Tm <"), "{ops}");
        // .notdef and four letters.
        assert_eq!(fonts.used[&0].glyphs.num_gids(), 5);
        assert_eq!(texts(&fonts, 0), ["Ł", "ó", "d", "ź"]);
        let mut doc = Document::with_version("1.7");
        let resources = fonts.finish(&mut doc);
        let font = resources.get(b"ESF0").unwrap().as_reference().unwrap();
        let font = doc.get_dictionary(font).unwrap();
        let base = font.get(b"BaseFont").unwrap().as_name().unwrap();
        assert!(
            base.ends_with(b"+NotoSans-Regular") && base.len() == 23,
            "{base:?}"
        );
    }

    #[test]
    fn one_glyph_drawn_for_different_text_gets_a_code_for_each() {
        // Arabic beh and teh, alone, share their dotless form: two codes, one glyph.
        let mut fonts = PdfFonts::default();
        fonts.show(&shape("ب ت", Style::Regular), 10.0, 0.0, 0.0);
        let used = &fonts.used[&2];
        let letters: Vec<&(u16, String)> = used
            .codes
            .iter()
            .filter(|(_, t)| !t.trim().is_empty())
            .collect();
        assert_eq!(letters.len(), 2, "{:?}", used.codes);
        assert_eq!(letters[0].0, letters[1].0, "the same glyph");
        assert_ne!(letters[0].1, letters[1].1, "for different letters");
        // A Devanagari vowel sign drawn before its consonant: the syllable's letters
        // dealt to its glyphs in drawing order.
        fonts.show(&shape("कि", Style::Regular), 10.0, 0.0, 0.0);
        assert_eq!(texts(&fonts, 0).concat(), "कि");
    }

    #[test]
    fn the_same_text_gives_the_same_bytes() {
        let write = || {
            let mut fonts = PdfFonts::default();
            fonts.show(&shape("Ελληνικά नमस्ते", Style::Bold), 10.0, 0.0, 0.0);
            let mut doc = Document::with_version("1.7");
            fonts.finish(&mut doc);
            let mut out = Vec::new();
            doc.save_to(&mut out).unwrap();
            out
        };
        assert_eq!(write(), write());
    }
}
