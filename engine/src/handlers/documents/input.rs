//! Members of request bodies that several document routes read.

use crate::base::http::{ApiError, ApiResult, Fields};
use crate::base::messages;
#[allow(unused_imports)]
use crate::base::prelude::*;
use serde_json::Value;

/// Reads the text of `tags`: a string, or (JSON) an array of strings.
pub fn tags_text(f: &Fields) -> ApiResult<Option<String>> {
    match f.map.get("tags") {
        Some(Value::Array(a)) => Ok(Some(
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(","),
        )),
        _ => f.optional_str("tags"),
    }
}

/// The ids of `recipient_ids` (an array of strings, or comma-separated text).
pub fn recipient_ids(f: &Fields) -> ApiResult<Vec<String>> {
    let ids: Vec<String> = match f.map.get("recipient_ids") {
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().map(|s| s.trim().to_string()))
            .collect::<Option<_>>()
            .ok_or_else(|| bad("invalid_field", "`recipient_ids` must be strings"))?,
        Some(Value::String(s)) => s
            .split(',')
            .map(|x| x.trim().to_string())
            .filter(|x| !x.is_empty())
            .collect(),
        None | Some(Value::Null) => Vec::new(),
        Some(_) => {
            return Err(bad(
                "invalid_field",
                "`recipient_ids` must be an array of ids",
            ));
        }
    };
    if ids.is_empty() {
        return Err(bad(
            "missing_field",
            "the field `recipient_ids` is required",
        ));
    }
    Ok(ids)
}

/// `sign_redirect`, where the signing page sends a recipient after signing: empty, or an
/// absolute `https` URL with a host (never `javascript:`, `data:` or plain `http`).
pub fn sign_redirect(f: &Fields) -> ApiResult<Option<String>> {
    let Some(v) = f.optional_str("sign_redirect")? else {
        return Ok(None);
    };
    let v = v.trim().to_string();
    let https = url::Url::parse(&v).is_ok_and(|u| u.scheme() == "https" && u.host().is_some());
    if !v.is_empty() && !https {
        return Err(bad(
            "invalid_field",
            "`sign_redirect` must be an https:// URL",
        ));
    }
    Ok(Some(v))
}

/// `language`, the language of the recipients' texts: a code of
/// `messages::LANGUAGES` (`sv` or `sv-SE`), kept as its two letters; `None` when not given.
pub fn language(f: &Fields) -> ApiResult<Option<String>> {
    let Some(v) = f.optional_str("language")? else {
        return Ok(None);
    };
    match messages::language(&v) {
        Some(code) => Ok(Some(code.to_string())),
        None => Err(bad(
            "invalid_field",
            format!(
                "`language` must be one of {}",
                messages::LANGUAGES.join(", ")
            ),
        )),
    }
}

fn bad(code: &'static str, text: impl Into<String>) -> ApiError {
    ApiError::bad_request(code, text)
}
