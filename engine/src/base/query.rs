//! A request's query parameters as the list routes read them: integers given at most
//! once, page sizes with their default and ceiling, and `%XX`-escaped path segments.

use crate::base::api::Request;
use crate::base::http::{self, ApiResult};
#[allow(unused_imports)]
use crate::base::prelude::*;

/// Most items one list returns.
pub const MAX_LIMIT: usize = 1000;
/// The default page size (also for `limit` ≤ 0).
pub const DEFAULT_LIMIT: usize = 100;

/// Parses a non-negative paging parameter; `limit` ≤ 0 or absent gives the default.
pub fn limit_param(req: &Request, name: &str) -> ApiResult<u32> {
    Ok(parse_int(req, name)?
        .filter(|n| *n > 0)
        .map_or(DEFAULT_LIMIT, |n| (n as usize).min(MAX_LIMIT)) as u32)
}

/// Parses an integer query parameter given at most once; `None` when absent or blank.
pub fn parse_int(req: &Request, name: &str) -> ApiResult<Option<i64>> {
    let given = form_urlencoded::parse(req.query.as_bytes())
        .filter(|(k, _)| k == name)
        .count();
    if given > 1 {
        return Err(http::ApiError::bad_request(
            "invalid_parameter",
            format!("the query parameter `{name}` is given {given} times; give it once"),
        ));
    }
    match req.query_param(name) {
        None => Ok(None),
        Some(v) if v.trim().is_empty() => Ok(None),
        Some(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(|f| Some(f as i64))
            .ok_or_else(|| {
                http::ApiError::bad_request(
                    "invalid_parameter",
                    format!("the query parameter `{name}` must be a number"),
                )
            }),
    }
}

/// Decodes `%XX` escapes of a path segment (invalid UTF-8 becomes U+FFFD).
pub fn percent_decoded(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}
