//! Small pure helpers: identifiers, secrets, hashing, time formatting.

use crate::base::calendar::{civil_from_days, days_from_civil};
use crate::base::cx::Cx;
#[allow(unused_imports)]
use crate::base::prelude::*;
use base64::Engine as _;
use sha2::{Digest, Sha256};

const ID_ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// A new 16-character lower-case identifier (80 random bits).
pub fn new_id(cx: &mut Cx) -> String {
    let mut bytes = [0u8; 16];
    cx.p.fill_random(&mut bytes);
    let id: String = bytes
        .iter()
        .map(|b| ID_ALPHABET[(*b & 31) as usize] as char)
        .collect();
    cx.p.minted(&id);
    id
}

/// Whether `s` has the shape of an identifier made by [`new_id`].
pub fn is_id(s: &str) -> bool {
    s.len() == 16 && s.bytes().all(|b| ID_ALPHABET.contains(&b))
}

/// A new secret of 256 random bits, base64url without padding (43 characters).
pub fn new_secret(cx: &mut Cx) -> String {
    let mut bytes = [0u8; 32];
    cx.p.fill_random(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Lower-case hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    let digest = Sha256::digest(data);
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(char::from(b"0123456789abcdef"[(b >> 4) as usize]));
        out.push(char::from(b"0123456789abcdef"[(b & 15) as usize]));
    }
    out
}

/// A store key from its parts joined with `/`: `key(&["mem", user, entity])` is
/// `mem/<user>/<entity>`, as `format!` would build it but without `core::fmt`, which is
/// slow in wasm (formatting the four keys a token check reads was a tenth of the wasm
/// time of `GET /v1/test`).
pub fn key(parts: &[&str]) -> Vec<u8> {
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.len() + 1).sum());
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push(b'/');
        }
        out.extend_from_slice(part.as_bytes());
    }
    out
}

/// Characters an address may not hold: they separate addresses in a mail header
/// (`,` `;`), quote or comment (`"` `(` `)`), bracket (`<` `>` `[` `]`), escape (`\`)
/// or end a header's name (`:`), so an address holding one could add a recipient to
/// a saved mail (a second `To:`).
const NOT_IN_EMAIL: &[char] = &[',', ';', '"', '(', ')', '<', '>', '[', ']', '\\', ':'];

/// A light syntactic email check: one `@`, a non-empty local part, a dotted domain, no
/// spaces, control characters or [`NOT_IN_EMAIL`].
pub fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !s
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || NOT_IN_EMAIL.contains(&c))
}

/// The canonical form of an email address used for lookups.
pub fn normalize_email(s: &str) -> String {
    s.trim().to_lowercase()
}

/// A document's value as JSON: an integer when it is whole (GetAccept types `value` as
/// an integer), the number itself otherwise.
pub fn money(v: f64) -> serde_json::Value {
    if v > -9_007_199_254_740_992.0 && v < 9_007_199_254_740_992.0 && (v as i64) as f64 == v {
        serde_json::Value::from(v as i64)
    } else {
        serde_json::Value::from(v)
    }
}

/// RFC 3339 / ISO 8601 with an explicit offset, in UTC: `2026-11-22T17:14:05+00:00`.
pub fn iso8601(ms: u64) -> String {
    let secs = (ms / 1000) as i64;
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let t = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}+00:00",
        t / 3600,
        t / 60 % 60,
        t % 60
    )
}

/// Parses an RFC 3339 timestamp (`2026-11-22T17:14:05Z`, `...T17:14:05.250+01:00`), the
/// same with a space for `T`, a date-time without offset (taken as UTC), or a date
/// alone (midnight UTC); milliseconds since the epoch. `None` for anything else.
pub fn parse_time(s: &str) -> Option<u64> {
    let s = s.trim();
    let b = s.as_bytes();
    let num = |r: core::ops::Range<usize>| -> Option<u32> {
        let part = s.get(r)?;
        if part.bytes().all(|c| c.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if !(1..=12).contains(&mo) || d == 0 || d > 31 {
        return None;
    }
    let days = days_from_civil(i64::from(y), mo, d);
    if civil_from_days(days) != (i64::from(y), mo, d) {
        return None; // e.g. February 30
    }
    let mut secs = days * 86_400;
    let mut ms = 0i64;
    if b.len() > 10 {
        if !(b[10] == b'T' || b[10] == b't' || b[10] == b' ') || b.len() < 19 {
            return None;
        }
        if b[13] != b':' || b[16] != b':' {
            return None;
        }
        let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
        if h > 23 || mi > 59 || se > 60 {
            return None;
        }
        secs += i64::from(h * 3600 + mi * 60 + se.min(59));
        let mut i = 19;
        if i < b.len() && b[i] == b'.' {
            i += 1;
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i == start {
                return None;
            }
            let frac = &s[start..i.min(start + 3)];
            ms = frac.parse::<i64>().ok()? * 10i64.pow(3 - frac.len() as u32);
        }
        match &s[i..] {
            "" | "Z" | "z" => {}
            off => {
                let ob = off.as_bytes();
                if ob.len() != 6 || !(ob[0] == b'+' || ob[0] == b'-') || ob[3] != b':' {
                    return None;
                }
                let oh: i64 = off[1..3].parse().ok()?;
                let om: i64 = off[4..6].parse().ok()?;
                let offset = (oh * 3600 + om * 60) * if ob[0] == b'-' { -1 } else { 1 };
                secs -= offset;
            }
        }
    }
    let total = secs * 1000 + ms;
    u64::try_from(total).ok()
}

/// A URL-safe form of `s` for use inside a key: lower case, at most `max` bytes on a
/// character boundary.
pub fn key_text(s: &str, max: usize) -> String {
    let lower = s.trim().to_lowercase();
    let mut end = lower.len().min(max);
    while !lower.is_char_boundary(end) {
        end -= 1;
    }
    lower[..end].to_string()
}

/// An `f64` as 16 hex digits that sort like the numbers.
pub fn sortable_f64(v: f64) -> String {
    let bits = v.to_bits();
    let key = if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    };
    format!("{key:016x}")
}

/// Whether `s` looks like a mobile number: digits with an optional leading `+`, spaces,
/// dashes and brackets allowed, 7 to 15 digits.
pub fn is_mobile(s: &str) -> bool {
    let s = s.trim();
    let digits = s.chars().filter(char::is_ascii_digit).count();
    (7..=15).contains(&digits)
        && s.chars()
            .enumerate()
            .all(|(i, c)| c.is_ascii_digit() || " -()".contains(c) || (c == '+' && i == 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_round_trip_and_offsets() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00+00:00");
        let t = parse_time("2026-11-22T17:14:05Z").unwrap();
        assert_eq!(iso8601(t), "2026-11-22T17:14:05+00:00");
        assert_eq!(parse_time("2026-11-22T18:14:05+01:00"), Some(t));
        assert_eq!(parse_time("2026-11-22 17:14:05"), Some(t));
        assert_eq!(parse_time("2026-11-22T17:14:05.250Z"), Some(t + 250));
        assert_eq!(
            parse_time("2026-11-22"),
            Some(t - (17 * 3600 + 14 * 60 + 5) * 1000)
        );
        assert_eq!(
            parse_time("2024-02-29T00:00:00Z").map(iso8601).unwrap(),
            "2024-02-29T00:00:00+00:00"
        );
        for bad in [
            "",
            "tomorrow",
            "2026-02-30",
            "2026-13-01",
            "2026-11-22T25:00:00Z",
            "2026-11-22T10:00:00+1",
        ] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
    }

    #[test]
    fn sortable_floats_sort() {
        let mut v = [3.5, -2.0, 0.0, 1e9, -1e9, 0.25];
        let mut keys: Vec<String> = v.iter().map(|x| sortable_f64(*x)).collect();
        keys.sort();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let expected: Vec<String> = v.iter().map(|x| sortable_f64(*x)).collect();
        assert_eq!(keys, expected);
    }

    #[test]
    fn emails() {
        assert!(is_email("a@b.se"));
        assert!(!is_email("a@b"));
        assert!(!is_email("@b.se"));
        assert!(!is_email("a b@c.se"));
        assert!(!is_email("a@@c.se"));
        for bad in [
            "a@x.se,b@y.se",
            "a@x.se;b@y.se",
            "\"a\"@x.se",
            "a@x.se\u{0}",
            "<a@x.se>",
            "a:b@x.se",
            "a\\b@x.se",
        ] {
            assert!(!is_email(bad), "{bad:?}");
        }
        assert!(is_email("first.last+tag@sub.example.com"));
    }

    #[test]
    fn sha256_is_hex_of_digest() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
