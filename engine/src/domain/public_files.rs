//! Files served at an unguessable address without a token (`GET /v1/files/{secret}`):
//! what GetAccept's clients put in `<video>` and `<a>` elements (`video_url`,
//! `attachment_url`). The secret is 256 random bits; the record that publishes a file
//! keeps the secret (to answer its URL again) and unpublishes it when it goes.
//!
//! | key | value |
//! |---|---|
//! | `pubf/{sha256 hex of secret}` | [`PublicFile`] |

use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, FileBody};
use crate::base::keyspace::PUBF;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, new_secret, sha256_hex};
use crate::base::work_orders::BlobInfo;
use crate::domain::{blobs, downloads, uploads};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PublicFile {
    pub blob: String,
    pub content_type: String,
    pub file_name: String,
}

fn key(secret: &str) -> Vec<u8> {
    util::key(&[PUBF, &sha256_hex(secret.as_bytes())])
}

/// Stores `bytes` as a blob held by `owner` and publishes it as `content_type` under
/// `file_name`: the blob and the secret of its address (503 when blob storage is down).
pub fn store(
    cx: &mut Cx,
    owner: &str,
    bytes: &[u8],
    content_type: &str,
    file_name: &str,
) -> ApiResult<(BlobInfo, String)> {
    let info = uploads::put_blob(cx, bytes)?;
    blobs::hold(cx, &info.id, owner);
    let secret = publish(
        cx,
        &PublicFile {
            blob: info.id.clone(),
            content_type: content_type.into(),
            file_name: file_name.into(),
        },
    );
    Ok((info, secret))
}

/// Publishes `file`; its secret.
pub fn publish(cx: &mut Cx, file: &PublicFile) -> String {
    let secret = new_secret(cx);
    cx.save(&key(&secret), file);
    secret
}

/// Stops serving a published file (its blob is its owner's to release).
pub fn unpublish(cx: &mut Cx, secret: &str) {
    cx.p.delete(&key(secret));
}

/// The address of a published file.
pub fn url(cx: &mut Cx, secret: &str) -> String {
    let base = cx.settings().base_url.trim_end_matches('/').to_string();
    format!("{base}/v1/files/{secret}")
}

/// What `GET /v1/files/{secret}` serves: the published file and its bytes, or `None`
/// when nothing is published there (any more).
pub fn published(cx: &mut Cx, secret: &str) -> Option<(PublicFile, FileBody)> {
    let file: PublicFile = cx.load(&key(secret))?;
    let body = downloads::file_body(cx, &file.blob, || {
        http::ApiError::not_found("file_not_found", "gone")
    })
    .ok()?;
    Some((file, body))
}
