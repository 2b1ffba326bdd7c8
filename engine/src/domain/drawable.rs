//! Texts the signed PDF draws (names, companies and titles, the document's name,
//! typed signatures and initials, field values, pricing rows) are refused where they
//! are entered when a character is one no font of the PDF has: the record never shows
//! a missing glyph or a "?" where a person typed a letter. Which characters the fonts
//! draw is `esign_work::coverage`, generated from the fonts themselves.

use crate::base::http::{ApiError, ApiResult};
#[allow(unused_imports)]
use crate::base::prelude::*;

/// 400 `unsupported_character` naming `member` and the character, when `text` has one
/// the signed PDF cannot draw.
pub fn drawable(member: &str, text: &str) -> ApiResult<()> {
    match esign_work::coverage::first_uncovered(text) {
        None => Ok(()),
        Some(c) => Err(ApiError::bad_request(
            "unsupported_character",
            format!(
                "`{member}` has the character {c} (U+{:04X}), which the fonts of the \
                 signed PDF cannot draw",
                u32::from(c)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_with_a_character_no_font_has_is_refused_naming_it() {
        for ok in [
            "Łukasz Żółć",
            "Nguyễn",
            "Αλέξανδρος",
            "Алексей",
            "محمد",
            "דוד",
            "अमित",
            "สมชาย",
            "a\u{200d}b",
        ] {
            assert!(drawable("name", ok).is_ok(), "{ok}");
        }
        let e = drawable("recipients[0].first_name", "Ann 漢").unwrap_err();
        assert_eq!(e.code, "unsupported_character");
        assert!(
            e.description.contains("`recipients[0].first_name`")
                && e.description.contains("U+6F22"),
            "{}",
            e.description
        );
    }
}
