//! `POST /v1/upload` (JSON, multipart or a `file_url`) and `GET /v1/upload/{id}`.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util;
use crate::domain::auth::authenticate;
use crate::domain::uploads::{self, NewUpload, Upload, check_url, find};
use crate::handlers::inputs::given_file;
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

/// `POST /v1/upload`: a file given (multipart `file`, or base64 `file_content` with
/// `file_name`) or a `file_url` to download.
pub fn create(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let pr = authenticate(cx, req)?;
    let f = req.body_fields()?;
    let draft = uploads::draft(cx, &pr);
    // Every member is checked, even one the chosen source makes unused.
    let file_url = f.optional_str("file_url")?;
    let source = if let Some(file) = given_file(&f)? {
        NewUpload::Given(file)
    } else if let Some(url) = file_url.filter(|u| !u.is_empty()) {
        check_url("file_url", &url)?;
        let name = f.optional_str("file_name")?;
        NewUpload::Url { url, name }
    } else {
        return Err(http::ApiError::bad_request(
            "missing_field",
            "send the file as a multipart part `file`, as base64 `file_content` with `file_name`, or as `file_url`",
        ));
    };
    let upload = uploads::create(cx, draft, source)?;
    Ok(json(200, &upload_json(&upload)))
}

/// `GET /v1/upload/{id}`.
pub fn get(cx: &mut Cx, req: &Request, id: &str) -> ApiResult<Response> {
    let pr = authenticate(cx, req)?;
    let u = find(cx, &pr, id)
        .ok_or_else(|| http::ApiError::not_found("file_not_found", format!("no upload {id}")))?;
    Ok(json(200, &upload_json(&u)))
}
