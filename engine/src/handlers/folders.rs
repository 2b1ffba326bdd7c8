//! `/v1/folders` (GetAccept's list and detail, plus create and delete): where an
//! entity files its documents and templates.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, json, no_content};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, new_id};
use crate::domain::auth::Principal;
use crate::domain::folders::{self, Folder, Kind, MAX_FOLDERS};
use serde_json::{Value, json};

fn folder_json(f: &Folder) -> Value {
    json!({
        "id": f.id,
        "name": f.name,
        "type": f.kind.as_str(),
        "parent_id": f.parent_id,
        "created_at": util::iso8601(f.created_ms),
    })
}

/// `GET /v1/folders?type=archive|template`.
pub fn list(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    let kind = match req.query_param("type").as_deref() {
        None | Some("") => None,
        Some(t) => Some(Kind::parse(t).ok_or_else(|| {
            http::ApiError::bad_request(
                "invalid_parameter",
                format!("`type` must be archive or template, not {t:?}"),
            )
        })?),
    };
    let items: Vec<Value> = folders::all(cx, &pr.entity.id)
        .iter()
        .filter(|f| kind.is_none_or(|k| f.kind == k))
        .map(folder_json)
        .collect();
    Ok(json(200, &json!({ "folders": items })))
}

/// `POST /v1/folders` `{name, type, parent_id?}`: any member files things.
pub fn create(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    let f = req.body_fields()?;
    f.only(&["name", "type", "parent_id"])?;
    let name = f.required_str("name")?.trim().to_string();
    let kind_text = f.optional_str("type")?.unwrap_or_else(|| "archive".into());
    let kind = Kind::parse(&kind_text).ok_or_else(|| {
        http::ApiError::bad_request(
            "invalid_field",
            format!("the field `type` must be archive or template, not {kind_text:?}"),
        )
    })?;
    let parent_id = f.optional_str("parent_id")?.unwrap_or_default();
    let parent_id = folders::check_target(cx, &pr.entity.id, &parent_id, kind)?;
    if folders::all(cx, &pr.entity.id).len() >= MAX_FOLDERS {
        return Err(http::ApiError::new(
            409,
            "limit_reached",
            format!("an account keeps at most {MAX_FOLDERS} folders"),
        ));
    }
    let folder = Folder {
        id: new_id(cx),
        entity_id: pr.entity.id.clone(),
        name,
        kind,
        parent_id,
        user_id: pr.user.id.clone(),
        created_ms: cx.now(),
    };
    folders::store(cx, &folder);
    Ok(json(200, &folder_json(&folder)))
}

/// `DELETE /v1/folders/{id}`: by its maker or an admin, once nothing is filed in it.
pub fn delete(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    folders::delete(cx, pr, id)?;
    Ok(no_content())
}

/// `GET /v1/folders/{id}`: the folder and its subfolders.
pub fn get(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let folder = folders::find(cx, &pr.entity.id, id)?;
    let subfolders: Vec<Value> = folders::all(cx, &pr.entity.id)
        .iter()
        .filter(|f| f.parent_id == folder.id)
        .map(folder_json)
        .collect();
    Ok(json(
        200,
        &json!({"folder": folder_json(&folder), "subfolders": subfolders}),
    ))
}
