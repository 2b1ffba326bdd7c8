//! The attachment library: `GET /v1/attachments`, `POST /v1/upload/attachment`
//! (GetAccept's shapes). A document attaches one with `attachments: [{id}]`.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, new_id};
use crate::domain::attachments::{self, LibraryAttachment, MAX_ATTACHMENTS};
use crate::domain::auth::authenticate;
use crate::domain::public_files;
use crate::domain::uploads;
use crate::handlers::inputs;
use serde_json::{Value, json};

fn attachment_json(cx: &mut Cx, a: &LibraryAttachment) -> Value {
    let url = public_files::url(cx, &a.secret);
    json!({
        "attachment_id": a.id,
        "attachment_title": a.title,
        "attachment_filename": a.file_name,
        "attachment_extension": a.extension(),
        "attachment_type": "file",
        "attachment_description": "",
        "attachment_url": url,
        "attachment_download_url": url,
        "attachment_preview_url": url,
        "attachment_size": a.size,
        "restrict_access": false,
        "access_recipient_names": [],
        "created_at": util::iso8601(a.created_ms),
    })
}

/// `GET /v1/attachments`: the library, newest first.
pub fn list(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let pr = authenticate(cx, req)?;
    let mut all = attachments::all(cx, &pr.entity.id);
    all.sort_by(|a, b| b.created_ms.cmp(&a.created_ms).then(b.id.cmp(&a.id)));
    let items: Vec<Value> = all.iter().map(|a| attachment_json(cx, a)).collect();
    Ok(json(200, &json!({ "attachments": items })))
}

/// `POST /v1/upload/attachment`: multipart `file`, base64 `file_content` +
/// `file_name`, or an upload's `file_id`; `title` (default: the file name).
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
    if attachments::all(cx, &pr.entity.id).len() as u32 >= MAX_ATTACHMENTS {
        return Err(http::ApiError::new(
            409,
            "limit_reached",
            format!("an account's library keeps at most {MAX_ATTACHMENTS} attachments"),
        ));
    }
    let title = f
        .optional_str("title")?
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| name.clone());
    let content_type = attachments::media_type(&bytes, &name);
    let id = new_id(cx);
    let owner = attachments::blob_owner(&id);
    let (info, secret) = public_files::store(cx, &owner, &bytes, content_type, &name)?;
    let a = LibraryAttachment {
        id: id.clone(),
        entity_id: pr.entity.id.clone(),
        user_id: pr.user.id.clone(),
        title: title.clone(),
        file_name: name.clone(),
        content_type: content_type.into(),
        blob: info.id,
        size: info.size,
        secret,
        created_ms: cx.now(),
    };
    attachments::store(cx, &a);
    Ok(json(
        200,
        &json!({"id": id, "filename": name, "type": "file", "title": title}),
    ))
}
