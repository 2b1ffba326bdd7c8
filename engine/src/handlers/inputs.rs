//! What handlers of several families read from a request body the same way: a file
//! given inline (a multipart `file`, or base64 `file_content` with `file_name`), and the
//! file of a library upload (inline, or an upload's `file_id`). The domain gets the
//! typed value ([`GivenFile`], [`FileSource`]).

use crate::base::http::{self, ApiResult, Fields};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::uploads::{FileSource, GivenFile};

/// The file a request carries inline, if any (multipart part or base64 content).
pub fn given_file(f: &Fields) -> ApiResult<Option<GivenFile>> {
    if f.files.len() > 1 {
        return Err(http::ApiError::bad_request(
            "too_many_files",
            "only one file may be uploaded in one request",
        ));
    }
    if let Some(part) = f.files.first() {
        if part.name != "file" {
            return Err(http::ApiError::bad_request(
                "invalid_field",
                format!("a file part must be named `file`, not `{}`", part.name),
            ));
        }
        if part.data.is_empty() {
            return Err(http::ApiError::bad_request(
                "invalid_field",
                "the uploaded file is empty",
            ));
        }
        return Ok(Some(GivenFile {
            name: part.filename.clone().unwrap_or_default(),
            bytes: part.data.clone(),
        }));
    }
    if let Some(content) = f.optional_str("file_content")? {
        let bytes = decode_base64("file_content", &content)?;
        let name = f.optional_str("file_name")?.unwrap_or_default();
        return Ok(Some(GivenFile { name, bytes }));
    }
    Ok(None)
}

/// The file of a library upload (video or attachment): inline, or a finished upload's
/// (`file_id`); `uploads::library_file` finds the upload. A `file_url` is fetched by
/// `POST /v1/upload` first.
pub fn file_source(f: &Fields) -> ApiResult<FileSource> {
    // Every member is read (and type-checked) whichever source is used.
    let file_id = f.optional_str("file_id")?.filter(|i| !i.is_empty());
    let file_url = f.optional_str("file_url")?.filter(|u| !u.is_empty());
    f.optional_str("file_name")?;
    if let Some(file) = given_file(f)? {
        return Ok(FileSource::Given(file));
    }
    if let Some(id) = file_id {
        return Ok(FileSource::Upload(id));
    }
    if file_url.is_some() {
        return Err(http::ApiError::bad_request(
            "invalid_field",
            "a file_url is fetched by POST /v1/upload: send its file_id here once its file_status is ready",
        ));
    }
    Err(http::ApiError::bad_request(
        "missing_field",
        "send the file as a multipart part `file`, as base64 `file_content` with `file_name`, or as the `file_id` of an upload",
    ))
}

/// Decodes base64 (standard or URL-safe, padded or not).
pub fn decode_base64(field: &str, text: &str) -> ApiResult<Vec<u8>> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let cleaned: String = text
        .split(',')
        .next_back()
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
        if let Ok(bytes) = engine.decode(&cleaned) {
            if bytes.is_empty() {
                break;
            }
            return Ok(bytes);
        }
    }
    Err(http::ApiError::bad_request(
        "invalid_field",
        format!("the field `{field}` must be non-empty base64"),
    ))
}
