//! `POST /v1/upload` (JSON, multipart or a `file_url`) and `GET /v1/upload/{id}`.

use crate::base::api::{JobSpec, Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, new_id};
use crate::base::{job_kinds, work};
use crate::domain::auth::authenticate;
use crate::domain::blobs;
use crate::domain::uploads::{
    self, FileKind, Upload, UploadStatus, check_url, find, given_file, put_blob, upload_key,
};
use serde_json::json;

fn upload_json(u: &Upload) -> serde_json::Value {
    json!({
        "file_id": u.id,
        "file_status": u.status.as_str(),
        "file_name": u.name,
        "file_type": u.kind.as_str(),
        "file_size": u.size,
        "sha256": u.sha256,
        "created_at": util::iso8601(u.created_ms),
        "expires_at": util::iso8601(u.expires_ms),
        "failure": u.failure,
    })
}

/// `POST /v1/upload`.
#[expect(
    clippy::too_many_lines,
    reason = "older than the 70-line rule (issue 49)"
)]
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
        blobs::hold(cx, &info.id, &uploads::blob_owner(&upload.id));
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
            kind: job_kinds::UPLOAD_FETCH.into(),
            payload: upload.id.clone().into_bytes(),
            run_at_ms: now,
            work: Some(work::WorkOrder::Fetch(url)),
            scope: upload.entity_id.clone(),
        });
    } else {
        return Err(http::ApiError::bad_request(
            "missing_field",
            "send the file as a multipart part `file`, as base64 `file_content` with `file_name`, or as `file_url`",
        ));
    }
    cx.save(&upload_key(&upload.id), &upload);
    cx.p.schedule_job(JobSpec {
        kind: job_kinds::UPLOAD_EXPIRE.into(),
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
        .ok_or_else(|| http::ApiError::not_found("file_not_found", format!("no upload {id}")))?;
    Ok(json(200, &upload_json(&u)))
}
