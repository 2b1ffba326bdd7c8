//! Small pure helpers: identifiers, secrets, hashing, time formatting.

use crate::Cx;
#[allow(unused_imports)]
use crate::prelude::*;
use base64::Engine as _;
use sha2::{Digest, Sha256};

const ID_ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// A new 16-character lower-case identifier (80 random bits).
pub fn new_id(cx: &mut Cx) -> String {
    let mut bytes = [0u8; 16];
    cx.p.fill_random(&mut bytes);
    bytes
        .iter()
        .map(|b| ID_ALPHABET[(*b & 31) as usize] as char)
        .collect()
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

/// A light syntactic email check: one `@`, a non-empty local part, a dotted domain, no
/// spaces.
pub fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !s.chars().any(char::is_whitespace)
}

/// The canonical form of an email address used for lookups.
pub fn normalize_email(s: &str) -> String {
    s.trim().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails() {
        assert!(is_email("a@b.se"));
        assert!(!is_email("a@b"));
        assert!(!is_email("@b.se"));
        assert!(!is_email("a b@c.se"));
        assert!(!is_email("a@@c.se"));
    }

    #[test]
    fn sha256_is_hex_of_digest() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
