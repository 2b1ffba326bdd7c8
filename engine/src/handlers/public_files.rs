//! `GET /v1/files/{secret}`: a published file (`domain::public_files`), served inline
//! under a safe name, never as a page that could run script.

use crate::base::api::Response;
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::public_files;

/// `GET /v1/files/{secret}`: a published file, or 404 `file_not_found`.
pub fn serve(cx: &mut Cx, secret: &str) -> ApiResult<Response> {
    let (file, body) = public_files::published(cx, secret).ok_or_else(|| {
        http::ApiError::not_found("file_not_found", "nothing is published here (any more)")
    })?;
    let name: String = file
        .file_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_. ".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    Ok(body.response(
        200,
        vec![
            ("content-type".into(), file.content_type),
            (
                "content-disposition".into(),
                format!("inline; filename=\"{name}\""),
            ),
            ("cache-control".into(), "private, max-age=3600".into()),
            // Served from the API's origin: never as a page that could run script.
            (
                "content-security-policy".into(),
                "default-src 'none'; sandbox".into(),
            ),
        ],
    ))
}
