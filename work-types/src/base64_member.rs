//! The bytes of a base64 request member (`file_content`), read one way on both sides of
//! the boundary: by the engine, and by a host that decodes a large member before the
//! engine sees it (a staged part, `form-part.staged`). Standard or URL-safe, padded or
//! not, whitespace ignored, after a data URL's comma; never empty.

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec::Vec;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

/// The decoded bytes, or `None` when `text` is not (non-empty) base64.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let after_comma = text.rsplit(',').next().unwrap_or("");
    let cleaned: Cow<str> = if after_comma.chars().any(char::is_whitespace) {
        Cow::Owned(
            after_comma
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect::<String>(),
        )
    } else {
        Cow::Borrowed(after_comma)
    };
    [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD]
        .into_iter()
        .find_map(|engine| engine.decode(cleaned.as_bytes()).ok())
        .filter(|bytes| !bytes.is_empty())
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn every_form_the_engine_accepts() {
        assert_eq!(decode("aGk=").as_deref(), Some(&b"hi"[..]));
        assert_eq!(decode("aGk").as_deref(), Some(&b"hi"[..]));
        assert_eq!(
            decode("data:application/pdf;base64,aGk=").as_deref(),
            Some(&b"hi"[..])
        );
        assert_eq!(decode(" aG\nk= ").as_deref(), Some(&b"hi"[..]));
        assert_eq!(decode("-_8").as_deref(), Some(&[0xfb, 0xff][..]));
        assert_eq!(decode(""), None);
        assert_eq!(decode("not base64!"), None);
    }
}
