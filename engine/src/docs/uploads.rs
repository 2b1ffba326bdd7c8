//! Uploads (DESIGN.md §4): `POST /v1/upload` stores a file for later use by `file_ids`,
//! templates, `custom_images` and manual signing; `GET /v1/upload/{id}` tells its state.
//! An upload unused for the configured time (48 h by default) expires: its bytes are
//! released and using it fails.

use super::blobs;
use crate::auth::{Principal, authenticate};
use crate::http::{ApiError, ApiResult, Fields, json};
#[allow(unused_imports)]
use crate::prelude::*;
use crate::util::{is_id, new_id};
use crate::{Cx, Job, JobOutcome, JobSpec, Request, Response, WorkOrder, WorkOutcome};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Job: expire an upload when its time has come.
pub const EXPIRE_JOB: &str = "upload.expire";
/// Job: download an upload given by URL.
pub const FETCH_JOB: &str = "upload.fetch";

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
    crate::util::key(&["upl", id])
}

fn owner(id: &str) -> String {
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
    Err(ApiError::bad_request(
        "invalid_field",
        format!("the field `{field}` must be non-empty base64"),
    ))
}

/// Stores bytes as a blob; 503 (nothing done) when blob storage is unavailable.
pub fn put_blob(cx: &mut Cx, data: &[u8]) -> ApiResult<crate::BlobInfo> {
    cx.p.put_blob(data).map_err(|why| {
        ApiError::new(
            503,
            "storage_unavailable",
            format!("file storage is unavailable ({why}); nothing was created, retry later"),
        )
    })
}

/// Checks a URL given for download.
pub fn check_url(field: &str, url: &str) -> ApiResult<()> {
    let rest = url.strip_prefix("https://").ok_or_else(|| {
        ApiError::bad_request(
            "invalid_field",
            format!("the field `{field}` must be an https:// URL"),
        )
    })?;
    if rest.is_empty() || rest.starts_with('/') || url.chars().any(char::is_whitespace) {
        return Err(ApiError::bad_request(
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
        return Err(ApiError::bad_request(
            "too_many_files",
            "only one file may be uploaded in one request",
        ));
    }
    if let Some(part) = f.files.first() {
        if part.name != "file" {
            return Err(ApiError::bad_request(
                "invalid_field",
                format!("a file part must be named `file`, not `{}`", part.name),
            ));
        }
        if part.data.is_empty() {
            return Err(ApiError::bad_request(
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

fn upload_json(u: &Upload) -> serde_json::Value {
    json!({
        "file_id": u.id,
        "file_status": u.status.as_str(),
        "file_name": u.name,
        "file_type": u.kind.as_str(),
        "file_size": u.size,
        "sha256": u.sha256,
        "created_at": crate::util::iso8601(u.created_ms),
        "expires_at": crate::util::iso8601(u.expires_ms),
        "failure": u.failure,
    })
}

/// `POST /v1/upload`.
pub fn create(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let pr = authenticate(cx, req)?;
    let f = req.body_fields()?;
    let now = cx.now();
    let ttl = cx.settings().upload_ttl_secs * 1000;
    let mut upload = Upload {
        id: new_id(cx),
        entity_id: pr.entity.id.clone(),
        user_id: pr.user.id.clone(),
        name: String::new(),
        kind: FileKind::Other,
        status: UploadStatus::Ready,
        blob: None,
        size: 0,
        sha256: String::new(),
        url: None,
        failure: None,
        created_ms: now,
        expires_ms: now + ttl,
    };
    // Every member is checked, even one the chosen source makes unused.
    let file_url = f.optional_str("file_url")?;
    if let Some(file) = given_file(&f)? {
        let info = put_blob(cx, &file.bytes)?;
        upload.name = if file.name.is_empty() {
            "file".into()
        } else {
            file.name
        };
        upload.kind = FileKind::detect(&file.bytes, &upload.name);
        upload.size = info.size;
        upload.sha256 = info.sha256;
        blobs::hold(cx, &info.id, &owner(&upload.id));
        upload.blob = Some(info.id);
    } else if let Some(url) = file_url.filter(|u| !u.is_empty()) {
        check_url("file_url", &url)?;
        upload.name = f
            .optional_str("file_name")?
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| {
                url.rsplit('/')
                    .next()
                    .unwrap_or("file")
                    .split('?')
                    .next()
                    .unwrap_or("file")
                    .to_string()
            });
        upload.kind = FileKind::by_name(&upload.name);
        upload.status = UploadStatus::Pending;
        upload.url = Some(url.clone());
        cx.p.schedule_job(JobSpec {
            kind: FETCH_JOB.into(),
            payload: upload.id.clone().into_bytes(),
            run_at_ms: now,
            work: Some(WorkOrder::Fetch(url)),
            scope: upload.entity_id.clone(),
        });
    } else {
        return Err(ApiError::bad_request(
            "missing_field",
            "send the file as a multipart part `file`, as base64 `file_content` with `file_name`, or as `file_url`",
        ));
    }
    cx.save(&upload_key(&upload.id), &upload);
    cx.p.schedule_job(JobSpec {
        kind: EXPIRE_JOB.into(),
        payload: upload.id.clone().into_bytes(),
        run_at_ms: upload.expires_ms,
        work: None,
        scope: String::new(),
    });
    Ok(json(200, &upload_json(&upload)))
}

/// `GET /v1/upload/{id}`.
pub fn get(cx: &mut Cx, req: &Request, id: &str) -> ApiResult<Response> {
    let pr = authenticate(cx, req)?;
    let u = find(cx, &pr, id)
        .ok_or_else(|| ApiError::not_found("file_not_found", format!("no upload {id}")))?;
    Ok(json(200, &upload_json(&u)))
}

/// Job [`EXPIRE_JOB`].
pub fn expire(cx: &mut Cx, job: &Job) -> JobOutcome {
    let id = String::from_utf8_lossy(&job.payload).into_owned();
    let Some(mut u) = cx.load::<Upload>(&upload_key(&id)) else {
        return JobOutcome::Done;
    };
    if u.status == UploadStatus::Expired {
        return JobOutcome::Done;
    }
    if u.expires_ms > cx.now() {
        return JobOutcome::RetryAt(u.expires_ms);
    }
    if let Some(blob) = u.blob.take() {
        blobs::release(cx, &blob, &owner(&id));
    }
    u.status = UploadStatus::Expired;
    cx.save(&upload_key(&id), &u);
    JobOutcome::Done
}

/// Job [`FETCH_JOB`]: records the downloaded file (or why it failed).
pub fn fetched(cx: &mut Cx, job: &Job) -> JobOutcome {
    let id = String::from_utf8_lossy(&job.payload).into_owned();
    let Some(WorkOutcome::Fetch(result)) = job.outcome.clone() else {
        return JobOutcome::Failed("fetch job without a fetch outcome".into());
    };
    let Some(mut u) = cx.load::<Upload>(&upload_key(&id)) else {
        if let Ok(info) = result {
            cx.p.delete_blob(&info.id);
        }
        return JobOutcome::Done;
    };
    match result {
        Ok(info) => {
            if u.kind == FileKind::Other {
                // The URL's name said nothing: look at the content.
                let bytes = cx.p.get_blob(&info.id).unwrap_or_default();
                u.kind = FileKind::detect(&bytes[..bytes.len().min(16)], &u.name);
            }
            u.size = info.size;
            u.sha256 = info.sha256;
            blobs::hold(cx, &info.id, &owner(&id));
            u.blob = Some(info.id);
            u.status = UploadStatus::Ready;
        }
        Err(f) => {
            u.status = UploadStatus::Failed;
            u.failure = Some(f.message);
        }
    }
    cx.save(&upload_key(&id), &u);
    JobOutcome::Done
}
