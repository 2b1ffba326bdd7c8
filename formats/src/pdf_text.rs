//! Numbers and strings as content streams write them. What text looks like (fonts,
//! shaping, wrapping) is `fonts`; how it goes into a PDF, `pdf_fonts`.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_have_at_most_two_decimals_and_no_negative_zero() {
        assert_eq!(num(12.0), "12");
        assert_eq!(num(595.28), "595.28");
        assert_eq!(num(-0.001), "0");
    }
}
