//! Embedded signing (issue 51 item 1): an entity names the sites that may show its
//! signing pages in a frame (`embed_origins` on `GET`/`PUT /v1/entity`). The signing
//! page opened with `?embed=1` then lets exactly those origins frame it
//! (`Content-Security-Policy: frame-ancestors ...`) and posts its events to its parent
//! on one of them only; without the flag, or with no origins, it is never framed.
//!
//! An origin is `https://` and a host, with a port when it is not the default: no path,
//! no trailing slash, no wildcard, at most [`MAX_ORIGINS`] of them.
//!
//! | key | value |
//! |---|---|
//! | `embo/{entity}` | [`Origins`] |

use crate::base::cx::Cx;
use crate::base::html::CSP;
use crate::base::http::{ApiError, ApiResult};
use crate::base::keyspace::EMBO;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util;
use serde::{Deserialize, Serialize};

/// How many origins an entity may name.
pub const MAX_ORIGINS: usize = 20;
/// The longest origin accepted (a host name is at most 253 characters).
pub const MAX_ORIGIN_LEN: usize = 270;

/// The origins that may frame an entity's signing pages, lower case, each once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Origins {
    pub origins: Vec<String>,
}

fn key(entity_id: &str) -> Vec<u8> {
    util::key(&[EMBO, entity_id])
}

/// The entity's origins (none unless it named some).
pub fn origins(cx: &mut Cx, entity_id: &str) -> Vec<String> {
    cx.load::<Origins>(&key(entity_id))
        .map(|o| o.origins)
        .unwrap_or_default()
}

/// Sets the entity's origins: each must be an exact `https://` origin, at most
/// [`MAX_ORIGINS`]; anything else is refused (400 `invalid_field`) and nothing changes.
pub fn set_origins(cx: &mut Cx, entity_id: &str, given: &[String]) -> ApiResult<Vec<String>> {
    if given.len() > MAX_ORIGINS {
        return Err(ApiError::bad_request(
            "invalid_field",
            format!("`embed_origins` holds at most {MAX_ORIGINS} origins"),
        ));
    }
    let mut list: Vec<String> = Vec::new();
    for g in given {
        let o = parse_origin(g).ok_or_else(|| {
            ApiError::bad_request(
                "invalid_field",
                format!(
                    "`embed_origins`: `{}` is not an origin as `https://host` or `https://host:port` (no path, no trailing slash, no wildcard)",
                    g.chars().take(80).collect::<String>()
                ),
            )
        })?;
        if !list.contains(&o) {
            list.push(o);
        }
    }
    cx.save(
        &key(entity_id),
        &Origins {
            origins: list.clone(),
        },
    );
    Ok(list)
}

/// `s` as an origin, lower case, when it is `https://` and a host name (or IPv4
/// address) with an optional port and nothing else.
pub fn parse_origin(s: &str) -> Option<String> {
    if s.len() > MAX_ORIGIN_LEN {
        return None;
    }
    let rest = s
        .get(..8)?
        .eq_ignore_ascii_case("https://")
        .then(|| &s[8..])?;
    let (host, port) = match rest.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (rest, None),
    };
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    if host.is_empty() || host.len() > 253 || !host.split('.').all(label_ok) {
        return None;
    }
    if let Some(p) = port {
        let n: u32 = p
            .parse()
            .ok()
            .filter(|_| p.bytes().all(|b| b.is_ascii_digit()))?;
        if n == 0 || n > 65535 || p.starts_with('0') {
            return None;
        }
    }
    Some(format!("https://{}", rest.to_ascii_lowercase()))
}

/// The signing page's Content-Security-Policy: the engine's pages' own, with
/// `frame-ancestors` naming `origins` (`'none'` when there are none).
pub fn page_csp(origins: &[String]) -> String {
    if origins.is_empty() {
        return CSP.to_string();
    }
    CSP.replace(
        "frame-ancestors 'none'",
        &format!("frame-ancestors {}", origins.join(" ")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_exact_https_origins() {
        for ok in [
            "https://example.com",
            "https://a.example.com:8443",
            "HTTPS://Shop.Example.COM",
            "https://127.0.0.1:9",
        ] {
            assert!(parse_origin(ok).is_some(), "{ok}");
        }
        assert_eq!(
            parse_origin("HTTPS://Shop.Example.COM").as_deref(),
            Some("https://shop.example.com")
        );
        for bad in [
            "http://example.com",
            "https://example.com/",
            "https://example.com/path",
            "https://*.example.com",
            "*",
            "https://",
            "https://example.com:",
            "https://example.com:0",
            "https://example.com:65536",
            "https://example.com:+80",
            "https://user@example.com",
            "https://exa mple.com",
            "https://example.com?x",
            "https://example..com",
            "example.com",
            "'self'",
            "https://example.com 'unsafe-inline'",
        ] {
            assert!(parse_origin(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_policy_names_the_origins_or_none() {
        assert!(page_csp(&[]).contains("frame-ancestors 'none';"));
        let csp = page_csp(&["https://a.example".into(), "https://b.example:8443".into()]);
        assert!(csp.contains("frame-ancestors https://a.example https://b.example:8443;"));
        assert!(!csp.contains("'none'; base-uri") || csp.contains("base-uri 'none'"));
        assert!(csp.starts_with("default-src 'none'; script-src 'self';"));
    }
}
