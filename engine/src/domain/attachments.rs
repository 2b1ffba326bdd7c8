//! The entity's attachment library (GetAccept's `GET /v1/attachments`,
//! `POST /v1/upload/attachment`): files kept to attach to documents by `id`, each
//! published at an unguessable address (`public_files`).
//!
//! | key | value |
//! |---|---|
//! | `att/{entity}/{id}` | [`LibraryAttachment`] |

use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult};
use crate::base::keyspace::ATT;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::{self, prefix_range};
use crate::base::util::{self, is_id};
use serde::{Deserialize, Serialize};

/// The most attachments an entity's library keeps.
pub const MAX_ATTACHMENTS: u32 = 1000;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LibraryAttachment {
    pub id: String,
    pub entity_id: String,
    pub user_id: String,
    pub title: String,
    pub file_name: String,
    pub content_type: String,
    pub blob: String,
    pub size: u64,
    pub secret: String,
    pub created_ms: u64,
}

impl LibraryAttachment {
    /// The file name's extension, lower case, without the dot.
    pub fn extension(&self) -> String {
        self.file_name
            .rsplit_once('.')
            .map(|(_, e)| e.to_ascii_lowercase())
            .unwrap_or_default()
    }
}

pub fn key(entity: &str, id: &str) -> Vec<u8> {
    util::key(&[ATT, entity, id])
}

/// Writes a library attachment's record.
pub fn store(cx: &mut Cx, a: &LibraryAttachment) {
    cx.save(&key(&a.entity_id, &a.id), a);
}

pub fn blob_owner(id: &str) -> String {
    format!("attachment:{id}")
}

pub fn not_found(id: &str) -> ApiError {
    http::ApiError::not_found("attachment_not_found", format!("no attachment {id}"))
}

pub fn find(cx: &mut Cx, entity: &str, id: &str) -> ApiResult<LibraryAttachment> {
    if !is_id(id) {
        return Err(not_found(id));
    }
    cx.load(&key(entity, id)).ok_or_else(|| not_found(id))
}

pub fn all(cx: &mut Cx, entity: &str) -> Vec<LibraryAttachment> {
    let (start, end) = prefix_range(&format!("{ATT}/{entity}/"));
    cx.p.scan(&start, &end, MAX_ATTACHMENTS, false)
        .into_iter()
        .map(|(_, v)| records::decode::<LibraryAttachment>(&v))
        .collect()
}

/// The media type of an attachment from its first bytes and name.
pub fn media_type(bytes: &[u8], name: &str) -> &'static str {
    let lower = name.to_ascii_lowercase();
    if bytes.starts_with(b"%PDF") {
        "application/pdf"
    } else if bytes.starts_with(b"\x89PNG") {
        "image/png"
    } else if bytes.starts_with(b"\xff\xd8\xff") {
        "image/jpeg"
    } else if bytes.starts_with(b"GIF8") {
        "image/gif"
    } else if lower.ends_with(".txt") && core::str::from_utf8(bytes).is_ok() {
        "text/plain; charset=utf-8"
    } else {
        "application/octet-stream"
    }
}
