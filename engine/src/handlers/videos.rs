//! `POST /v1/upload/video`, `GET /v1/videos`, `GET /v1/videos/{id}`,
//! `GET /v1/video/job/{id}` (GetAccept's shapes). A video is stored when it is
//! uploaded, so its "job" is done at once (`Status: ready`). `thumb_url` is the
//! signing page's video poster (a picture esign serves; esign does not cut frames out
//! of videos).

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::query;
use crate::base::util::{self, new_id};
use crate::domain::auth::authenticate;
use crate::domain::public_files;
use crate::domain::uploads;
use crate::domain::videos::{self, MAX_VIDEOS, Video};
use crate::handlers::inputs;
use serde_json::{Value, json};

/// The picture `thumb_url` names: the signing page's video poster.
pub fn poster_url(cx: &mut Cx) -> String {
    let base = cx.settings().base_url.trim_end_matches('/').to_string();
    format!("{base}/s/_/video.svg")
}

fn video_json(cx: &mut Cx, v: &Video, urls: (bool, bool)) -> Value {
    let mut out = json!({
        "video_id": v.id,
        "video_title": v.title,
        "video_type": "upload",
        "created_at": util::iso8601(v.created_ms),
        "editable": true,
        "published": true,
        "saved": true,
        "file_name": v.file_name,
        "file_size": v.size,
    });
    if urls.0 {
        out["video_url"] = json!(public_files::url(cx, &v.secret));
    }
    if urls.1 {
        out["thumb_url"] = json!(poster_url(cx));
    }
    out
}

fn flag(req: &Request, name: &str) -> ApiResult<Option<bool>> {
    match req.query_param(name).as_deref() {
        None | Some("") => Ok(None),
        Some("true" | "1") => Ok(Some(true)),
        Some("false" | "0") => Ok(Some(false)),
        Some(other) => Err(http::ApiError::bad_request(
            "invalid_parameter",
            format!("the query parameter `{name}` must be true or false, not {other:?}"),
        )),
    }
}

/// `GET /v1/videos` (`offset`, `limit`, `include_video_url`, `include_thumb_url`):
/// newest first.
pub fn list_videos(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let pr = authenticate(cx, req)?;
    let urls = (
        flag(req, "include_video_url")?.unwrap_or(true),
        flag(req, "include_thumb_url")?.unwrap_or(true),
    );
    let offset = query::parse_int(req, "offset")?.unwrap_or(0).max(0) as usize;
    let limit = query::limit_param(req, "limit")? as usize;
    let mut all = videos::all(cx, &pr.entity.id);
    all.sort_by(|a, b| b.created_ms.cmp(&a.created_ms).then(b.id.cmp(&a.id)));
    let items: Vec<Value> = all
        .iter()
        .skip(offset)
        .take(limit)
        .map(|v| video_json(cx, v, urls))
        .collect();
    Ok(json(200, &json!({ "videos": items })))
}

/// `GET /v1/videos/{id}`.
pub fn get(cx: &mut Cx, req: &Request, id: &str) -> ApiResult<Response> {
    let pr = authenticate(cx, req)?;
    let v = videos::find(cx, &pr.entity.id, id)?;
    Ok(json(200, &video_json(cx, &v, (true, true))))
}

/// `GET /v1/video/job/{id}`: the video's processing, done when it was stored.
pub fn job(cx: &mut Cx, req: &Request, id: &str) -> ApiResult<Response> {
    let pr = authenticate(cx, req)?;
    let v = videos::find(cx, &pr.entity.id, id)?;
    let video_url = public_files::url(cx, &v.secret);
    Ok(json(
        200,
        &json!({"Status": "ready", "video_url": video_url, "thumb_url": poster_url(cx)}),
    ))
}

/// `POST /v1/upload/video`: multipart `file`, base64 `file_content` + `file_name`, or
/// `file_id` of a finished upload; an MP4, QuickTime, WebM or Ogg file.
pub fn upload(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let pr = authenticate(cx, req)?;
    let f = req.body_fields()?;
    f.only(&[
        "file",
        "file_content",
        "file_name",
        "file_id",
        "file_url",
        "title",
    ])?;
    let (name, bytes) = uploads::library_file(cx, &pr, inputs::file_source(&f)?)?;
    let content_type = videos::media_type(&bytes).ok_or_else(|| {
        http::ApiError::bad_request(
            "unsupported_file",
            "a video must be an MP4, QuickTime, WebM or Ogg file",
        )
    })?;
    if videos::all(cx, &pr.entity.id).len() as u32 >= MAX_VIDEOS {
        return Err(http::ApiError::new(
            409,
            "limit_reached",
            format!("an account keeps at most {MAX_VIDEOS} videos"),
        ));
    }
    let title = f
        .optional_str("title")?
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| name.clone());
    let id = new_id(cx);
    let owner = videos::blob_owner(&id);
    let (info, secret) = public_files::store(cx, &owner, &bytes, content_type, &name)?;
    let v = Video {
        id: id.clone(),
        entity_id: pr.entity.id.clone(),
        user_id: pr.user.id.clone(),
        title,
        file_name: name.clone(),
        content_type: content_type.into(),
        blob: info.id,
        size: info.size,
        secret,
        created_ms: cx.now(),
    };
    videos::store(cx, &v);
    Ok(json(
        200,
        &json!({"video_id": id, "job_id": id, "filename": name, "file_status": "ready"}),
    ))
}
