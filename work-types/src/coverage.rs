//! Which characters the signed PDF can draw: the code points of the fonts built into
//! the formats component (`formats/src/fonts.rs`), so that the engine refuses a text
//! no font covers where it is entered, instead of the PDF showing a missing glyph.
//! `coverage_table.rs` is generated from the fonts; a test in `esign-formats`
//! (`fonts::tests::the_engine_s_coverage_table_is_the_fonts_own`) fails when they
//! part, and `ESIGN_BLESS=1` writes it again.

mod table {
    include!("coverage_table.rs");
}
pub use table::RANGES;

/// Whether a PDF we write draws `c`. Control characters and the ones drawn as nothing
/// (joiners, direction marks, variation selectors) count as drawn.
pub fn covers(c: char) -> bool {
    let cp = u32::from(c);
    c.is_control()
        || is_invisible(c)
        || RANGES
            .binary_search_by(|&(start, end)| {
                if end < cp {
                    core::cmp::Ordering::Less
                } else if start > cp {
                    core::cmp::Ordering::Greater
                } else {
                    core::cmp::Ordering::Equal
                }
            })
            .is_ok()
}

/// The first character of `text` no font of the signed PDF draws.
pub fn first_uncovered(text: &str) -> Option<char> {
    text.chars().find(|&c| !covers(c))
}

/// Characters drawn as nothing: soft hyphen, zero-width spaces and joiners, direction
/// marks and embeddings, word joiners, variation selectors, the byte order mark.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00ad}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{feff}'
    )
}
