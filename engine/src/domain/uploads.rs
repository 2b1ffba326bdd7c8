//! Uploads (DESIGN.md §4): `POST /v1/upload` stores a file for later use by `file_ids`,
//! templates, `custom_images` and manual signing; `GET /v1/upload/{id}` tells its state.
//! An upload unused for the configured time (48 h by default) expires: its bytes are
//! released and using it fails.

use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, Fields};
use crate::base::keyspace::UPL;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, is_id};
use crate::base::work;
use crate::domain::auth::Principal;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum UploadStatus {
    /// Being downloaded from its URL.
    Pending,
    Ready,
    Failed,
    Expired,
}

impl UploadStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            UploadStatus::Pending => "pending",
            UploadStatus::Ready => "ready",
            UploadStatus::Failed => "failed",
            UploadStatus::Expired => "expired",
        }
    }
}

/// What a file is, from its first bytes and its name.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum FileKind {
    Pdf,
    Word,
    Image,
    Other,
}

impl FileKind {
    pub fn detect(bytes: &[u8], name: &str) -> FileKind {
        let lower = name.to_ascii_lowercase();
        if bytes.starts_with(b"%PDF") {
            FileKind::Pdf
        } else if bytes.starts_with(b"PK\x03\x04")
            && (lower.ends_with(".docx") || !lower.contains('.'))
        {
            FileKind::Word
        } else if bytes.starts_with(b"\x89PNG")
            || bytes.starts_with(b"\xff\xd8\xff")
            || bytes.starts_with(b"GIF8")
        {
            FileKind::Image
        } else {
            FileKind::by_name(&lower)
        }
    }

    pub fn by_name(name: &str) -> FileKind {
        let lower = name.to_ascii_lowercase();
        if lower.ends_with(".pdf") {
            FileKind::Pdf
        } else if lower.ends_with(".docx") {
            FileKind::Word
        } else if [".png", ".jpg", ".jpeg", ".gif"]
            .iter()
            .any(|e| lower.ends_with(e))
        {
            FileKind::Image
        } else {
            FileKind::Other
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FileKind::Pdf => "pdf",
            FileKind::Word => "docx",
            FileKind::Image => "image",
            FileKind::Other => "other",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Upload {
    pub id: String,
    pub entity_id: String,
    pub user_id: String,
    pub name: String,
    pub kind: FileKind,
    pub status: UploadStatus,
    pub blob: Option<String>,
    pub size: u64,
    pub sha256: String,
    pub url: Option<String>,
    pub failure: Option<String>,
    pub created_ms: u64,
    pub expires_ms: u64,
}

pub fn upload_key(id: &str) -> Vec<u8> {
    util::key(&[UPL, id])
}

pub fn blob_owner(id: &str) -> String {
    format!("upload:{id}")
}

/// The caller's entity's upload `id`, if it exists (in any state).
pub fn find(cx: &mut Cx, pr: &Principal, id: &str) -> Option<Upload> {
    if !is_id(id) {
        return None;
    }
    cx.load::<Upload>(&upload_key(id))
        .filter(|u| u.entity_id == pr.entity.id)
}

/// Marks an upload as used now: its expiry moves to `now + ttl`.
pub fn touch(cx: &mut Cx, upload: &mut Upload) {
    let ttl = cx.settings().upload_ttl_secs * 1000;
    let now = cx.now();
    if upload.status != UploadStatus::Expired && upload.expires_ms < now + ttl {
        upload.expires_ms = now + ttl;
        cx.save(&upload_key(&upload.id), upload);
    }
}

/// Decodes base64 (standard or URL-safe, padded or not).
pub fn decode_base64(field: &str, text: &str) -> ApiResult<Vec<u8>> {
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

/// Stores bytes as a blob; 503 (nothing done) when blob storage is unavailable.
pub fn put_blob(cx: &mut Cx, data: &[u8]) -> ApiResult<work::BlobInfo> {
    cx.p.put_blob(data).map_err(|why| {
        http::ApiError::new(
            503,
            "storage_unavailable",
            format!("file storage is unavailable ({why}); nothing was created, retry later"),
        )
    })
}

/// Checks a URL given for download.
pub fn check_url(field: &str, url: &str) -> ApiResult<()> {
    let rest = url.strip_prefix("https://").ok_or_else(|| {
        http::ApiError::bad_request(
            "invalid_field",
            format!("the field `{field}` must be an https:// URL"),
        )
    })?;
    if rest.is_empty() || rest.starts_with('/') || url.chars().any(char::is_whitespace) {
        return Err(http::ApiError::bad_request(
            "invalid_field",
            format!("the field `{field}` must be an https:// URL with a host"),
        ));
    }
    Ok(())
}

/// A stored file taken from a request: one multipart `file`, or `file_content` with
/// `file_name`.
pub struct GivenFile {
    pub name: String,
    pub bytes: Vec<u8>,
}

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
/// (`file_id`). A `file_url` is fetched by `POST /v1/upload` first.
pub fn file_of(cx: &mut Cx, pr: &Principal, f: &Fields) -> ApiResult<(String, Vec<u8>)> {
    // Every member is read (and type-checked) whichever source is used.
    let file_id = f.optional_str("file_id")?.filter(|i| !i.is_empty());
    let file_url = f.optional_str("file_url")?.filter(|u| !u.is_empty());
    f.optional_str("file_name")?;
    if let Some(file) = given_file(f)? {
        let name = if file.name.is_empty() {
            "file".to_string()
        } else {
            file.name
        };
        return Ok((name, file.bytes));
    }
    if let Some(id) = file_id {
        let up = find(cx, pr, &id)
            .filter(|u| u.status == UploadStatus::Ready)
            .ok_or_else(|| {
                http::ApiError::not_found("file_not_found", format!("no usable upload {id}"))
            })?;
        let bytes = up
            .blob
            .as_deref()
            .and_then(|b| cx.p.get_blob(b))
            .ok_or_else(|| {
                http::ApiError::not_found("file_not_found", format!("no usable upload {id}"))
            })?;
        return Ok((up.name, bytes));
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
