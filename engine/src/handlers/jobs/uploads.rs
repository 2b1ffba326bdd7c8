//! Jobs of uploads: an unused upload expires; a `file_url` download is back.

use crate::base::api::{self, Job, JobOutcome};
use crate::base::cx::Cx;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::work;
use crate::domain::blobs;
use crate::domain::uploads::{self, FileKind, Upload, UploadStatus, upload_key};

/// Job [`job_kinds::UPLOAD_EXPIRE`].
pub fn expire(cx: &mut Cx, job: &Job) -> JobOutcome {
    let id = String::from_utf8_lossy(&job.payload).into_owned();
    let Some(mut u) = cx.load::<Upload>(&upload_key(&id)) else {
        return api::JobOutcome::Done;
    };
    if u.status == UploadStatus::Expired {
        return api::JobOutcome::Done;
    }
    if u.expires_ms > cx.now() {
        return api::JobOutcome::RetryAt(u.expires_ms);
    }
    if let Some(blob) = u.blob.take() {
        blobs::release(cx, &blob, &uploads::blob_owner(&id));
    }
    u.status = UploadStatus::Expired;
    cx.save(&upload_key(&id), &u);
    api::JobOutcome::Done
}

/// Job [`job_kinds::UPLOAD_FETCH`]: records the downloaded file (or why it failed).
pub fn fetched(cx: &mut Cx, job: &Job) -> JobOutcome {
    let id = String::from_utf8_lossy(&job.payload).into_owned();
    let Some(work::WorkOutcome::Fetch(result)) = job.outcome.clone() else {
        return api::JobOutcome::Failed("fetch job without a fetch outcome".into());
    };
    let Some(mut u) = cx.load::<Upload>(&upload_key(&id)) else {
        if let Ok(info) = result {
            cx.p.delete_blob(&info.id);
        }
        return api::JobOutcome::Done;
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
            blobs::hold(cx, &info.id, &uploads::blob_owner(&id));
            u.blob = Some(info.id);
            u.status = UploadStatus::Ready;
        }
        Err(f) => {
            u.status = UploadStatus::Failed;
            u.failure = Some(f.message);
        }
    }
    cx.save(&upload_key(&id), &u);
    api::JobOutcome::Done
}
