//! Videos (GetAccept's `/v1/videos`, `POST /v1/upload/video`): a file stored as a blob,
//! published at an unguessable address (`public_files`) so a recipient's browser plays
//! it; a document's `video_id` shows it on the signing page (`is_video`).
//!
//! | key | value |
//! |---|---|
//! | `vid/{entity}/{id}` | [`Video`] |

use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult};
use crate::base::keyspace::VID;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::{self, prefix_range};
use crate::base::util::{self, is_id};
use serde::{Deserialize, Serialize};

/// The most videos an entity keeps.
pub const MAX_VIDEOS: u32 = 1000;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Video {
    pub id: String,
    pub entity_id: String,
    pub user_id: String,
    pub title: String,
    pub file_name: String,
    pub content_type: String,
    pub blob: String,
    pub size: u64,
    /// The secret of its public address (`public_files`).
    pub secret: String,
    pub created_ms: u64,
}

pub fn key(entity: &str, id: &str) -> Vec<u8> {
    util::key(&[VID, entity, id])
}

/// Writes a video's record.
pub fn store(cx: &mut Cx, v: &Video) {
    cx.save(&key(&v.entity_id, &v.id), v);
}

pub fn blob_owner(id: &str) -> String {
    format!("video:{id}")
}

pub fn not_found(id: &str) -> ApiError {
    http::ApiError::not_found("video_not_found", format!("no video {id}"))
}

pub fn find(cx: &mut Cx, entity: &str, id: &str) -> ApiResult<Video> {
    if !is_id(id) {
        return Err(not_found(id));
    }
    cx.load(&key(entity, id)).ok_or_else(|| not_found(id))
}

/// Every video of the entity (at most [`MAX_VIDEOS`]), oldest first.
pub fn all(cx: &mut Cx, entity: &str) -> Vec<Video> {
    let (start, end) = prefix_range(&format!("{VID}/{entity}/"));
    cx.p.scan(&start, &end, MAX_VIDEOS, false)
        .into_iter()
        .map(|(_, v)| records::decode::<Video>(&v))
        .collect()
}

/// The media type of a video file from its first bytes: MP4/QuickTime (`ftyp` box),
/// WebM/Matroska (EBML header) or Ogg; `None` for anything else.
pub fn media_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.len() >= 12 && &bytes[4..8] == b"ftyp" {
        if &bytes[8..10] == b"qt" {
            Some("video/quicktime")
        } else {
            Some("video/mp4")
        }
    } else if bytes.starts_with(&[0x1a, 0x45, 0xdf, 0xa3]) {
        Some("video/webm")
    } else if bytes.starts_with(b"OggS") {
        Some("video/ogg")
    } else {
        None
    }
}
