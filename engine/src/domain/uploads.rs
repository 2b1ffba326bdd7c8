//! Uploads (DESIGN.md §4): `POST /v1/upload` stores a file for later use by `file_ids`,
//! templates, `custom_images` and manual signing; `GET /v1/upload/{id}` tells its state.
//! An upload unused for the configured time (48 h by default) expires: its bytes are
//! released and using it fails.

use crate::base::api::{FormPart, JobSpec};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult};
use crate::base::job_kinds;
use crate::base::keyspace::UPL;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, is_id};
use crate::base::work_orders::{self, BlobInfo};
use crate::domain::auth::Principal;
use crate::domain::blobs;
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

/// Stores bytes as a blob; 503 (nothing done) when blob storage is unavailable.
pub fn put_blob(cx: &mut Cx, data: &[u8]) -> ApiResult<work_orders::BlobInfo> {
    cx.p.put_blob(data).map_err(unavailable)
}

/// The bytes of a request's file part: a staged part's read from the host (empty if
/// gone), for the few uses that need them whole.
pub fn part_bytes(cx: &mut Cx, part: &FormPart) -> Vec<u8> {
    match &part.staged {
        Some(blob) => cx.p.get_blob(&blob.id).unwrap_or_default(),
        None => part.data.clone(),
    }
}

/// 503 `storage_unavailable`: blob storage failed, `why`.
fn unavailable(why: String) -> http::ApiError {
    http::ApiError::new(
        503,
        "storage_unavailable",
        format!("file storage is unavailable ({why}); nothing was created, retry later"),
    )
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

/// A file taken from a request: one multipart `file`, or `file_content` with
/// `file_name`.
pub struct GivenFile {
    pub name: String,
    pub content: Given,
}

/// What a request holds of a given file.
pub enum Given {
    /// The bytes themselves (a base64 member, or a part the host passed whole).
    Bytes(Vec<u8>),
    /// A part the host kept (`FormPart::staged`): the blob it becomes when kept, and
    /// its first bytes.
    Staged { blob: BlobInfo, head: Vec<u8> },
}

impl GivenFile {
    /// Its first bytes (at least what [`FileKind::detect`] looks at).
    pub fn head(&self) -> &[u8] {
        match &self.content {
            Given::Bytes(bytes) => bytes,
            Given::Staged { head, .. } => head,
        }
    }

    pub fn size(&self) -> u64 {
        match &self.content {
            Given::Bytes(bytes) => bytes.len() as u64,
            Given::Staged { blob, .. } => blob.size,
        }
    }

    /// Stores it as a new blob in the call's transaction: a staged part without its
    /// bytes passing through the engine. 503 when blob storage is unavailable.
    pub fn store(&self, cx: &mut Cx) -> ApiResult<BlobInfo> {
        match &self.content {
            Given::Bytes(bytes) => put_blob(cx, bytes),
            Given::Staged { blob, .. } => cx.p.keep_staged(&blob.id).map_err(unavailable),
        }
    }

    /// Its bytes (a staged part's read from the host, for the few uses that need them
    /// whole).
    pub fn into_bytes(self, cx: &mut Cx) -> ApiResult<Vec<u8>> {
        match self.content {
            Given::Bytes(bytes) => Ok(bytes),
            Given::Staged { blob, .. } => cx
                .p
                .get_blob(&blob.id)
                .ok_or_else(|| unavailable(format!("the request's file part {} is gone", blob.id))),
        }
    }
}

/// Where the file of a library upload (video or attachment) comes from, as the request
/// gave it (`handlers::inputs::file_source` reads it).
pub enum FileSource {
    /// Given in the request (a multipart part, or base64).
    Given(GivenFile),
    /// A finished upload's (`file_id`).
    Upload(String),
}

/// The file of a library upload: its name (`file` when none was given) and bytes; an
/// upload must be the caller's and ready.
pub fn library_file(cx: &mut Cx, pr: &Principal, src: FileSource) -> ApiResult<(String, Vec<u8>)> {
    let id = match src {
        FileSource::Given(file) => {
            let name = if file.name.is_empty() {
                "file".to_string()
            } else {
                file.name.clone()
            };
            return Ok((name, file.into_bytes(cx)?));
        }
        FileSource::Upload(id) => id,
    };
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
    Ok((up.name, bytes))
}

/// Where a new upload's file comes from (`POST /v1/upload`).
pub enum NewUpload {
    /// Given in the request (a multipart part, or base64).
    Given(GivenFile),
    /// To be downloaded from an https URL (checked), under `name` (empty: the URL's last
    /// segment).
    Url { url: String, name: Option<String> },
}

/// The name a `file_url` download takes when none is given: the URL's last segment
/// without its query.
fn name_of_url(url: &str) -> String {
    url.rsplit('/')
        .next()
        .unwrap_or("file")
        .split('?')
        .next()
        .unwrap_or("file")
        .to_string()
}

/// A new upload of the caller's, its id drawn, before its file is known: [`create`]
/// completes it.
pub fn draft(cx: &mut Cx, pr: &Principal) -> Upload {
    let now = cx.now();
    let ttl = cx.settings().upload_ttl_secs * 1000;
    Upload {
        id: util::new_id(cx),
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
    }
}

/// `POST /v1/upload` (its [`draft`] made first): stores a given file (ready at once) or
/// asks the host to download a URL (pending until [`fetched`]); either expires unused
/// after the configured time.
pub fn create(cx: &mut Cx, mut upload: Upload, source: NewUpload) -> ApiResult<Upload> {
    let now = upload.created_ms;
    match source {
        NewUpload::Given(file) => {
            let info = file.store(cx)?;
            upload.name = if file.name.is_empty() {
                "file".into()
            } else {
                file.name.clone()
            };
            upload.kind = FileKind::detect(file.head(), &upload.name);
            upload.size = info.size;
            upload.sha256 = info.sha256;
            blobs::hold(cx, &info.id, &blob_owner(&upload.id));
            upload.blob = Some(info.id);
        }
        NewUpload::Url { url, name } => {
            upload.name = name
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| name_of_url(&url));
            upload.kind = FileKind::by_name(&upload.name);
            upload.status = UploadStatus::Pending;
            upload.url = Some(url.clone());
            cx.p.schedule_job(JobSpec {
                kind: job_kinds::UPLOAD_FETCH.into(),
                payload: upload.id.clone().into_bytes(),
                run_at_ms: now,
                work: Some(work_orders::WorkOrder::Fetch(url)),
                scope: upload.entity_id.clone(),
            });
        }
    }
    cx.save(&upload_key(&upload.id), &upload);
    cx.schedule_at(
        job_kinds::UPLOAD_EXPIRE,
        upload.id.clone().into_bytes(),
        upload.expires_ms,
    );
    Ok(upload)
}

/// The caller's upload `id` once its file is there (`ready`); 404 `file_not_found`
/// (`no usable upload {shown}`) for any other.
pub fn usable(cx: &mut Cx, pr: &Principal, id: &str, shown: &str) -> ApiResult<Upload> {
    find(cx, pr, id)
        .filter(|u| u.status == UploadStatus::Ready)
        .ok_or_else(|| {
            http::ApiError::not_found("file_not_found", format!("no usable upload {shown}"))
        })
}

/// Job `upload.expire`: an unused upload expires and its file is released; `Some(at)`
/// when it was used meanwhile and expires later (the job runs again then).
pub fn expire(cx: &mut Cx, id: &str) -> Option<u64> {
    let mut u = cx.load::<Upload>(&upload_key(id))?;
    if u.status == UploadStatus::Expired {
        return None;
    }
    if u.expires_ms > cx.now() {
        return Some(u.expires_ms);
    }
    if let Some(blob) = u.blob.take() {
        blobs::release(cx, &blob, &blob_owner(id));
    }
    u.status = UploadStatus::Expired;
    cx.save(&upload_key(id), &u);
    None
}

/// Job `upload.fetch`: records the downloaded file of upload `id` (ready) or why it
/// failed; a download for an upload gone meanwhile is deleted.
pub fn fetched(
    cx: &mut Cx,
    id: &str,
    result: Result<work_orders::BlobInfo, work_orders::WorkFailure>,
) {
    let Some(mut u) = cx.load::<Upload>(&upload_key(id)) else {
        if let Ok(info) = result {
            cx.p.delete_blob(&info.id);
        }
        return;
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
            blobs::hold(cx, &info.id, &blob_owner(id));
            u.blob = Some(info.id);
            u.status = UploadStatus::Ready;
        }
        Err(f) => {
            u.status = UploadStatus::Failed;
            u.failure = Some(f.message);
        }
    }
    cx.save(&upload_key(id), &u);
}
