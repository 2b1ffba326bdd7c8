//! Custom data (GetAccept's custom data API): the entity's properties
//! (`/v1/custom-data/entity`) and a document's values (`/v1/documents/{id}/custom-data`).

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult, Fields, json, no_content};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::query;
use crate::base::util::iso8601;
use crate::domain::access::{readable, writable};
use crate::domain::auth::Principal;
use crate::domain::custom_data::{
    self, Property, Value, check_declared_type, check_key, check_label, check_type,
    may_change_properties, properties, typed, values,
};
use serde_json::json;

fn bad(code: &'static str, text: impl Into<String>) -> ApiError {
    http::ApiError::bad_request(code, text)
}

fn property_json(p: &Property) -> serde_json::Value {
    json!({"key": p.key, "label": p.label, "value_type": p.value_type, "property_type": "custom"})
}

fn value_json(v: &Value) -> serde_json::Value {
    json!({
        "id": v.id,
        "document_id": "",
        "property": {
            "key": v.key,
            "label": v.label,
            "value_type": v.value_type,
            "value": serde_json::from_str::<serde_json::Value>(&v.value).unwrap_or_default(),
        },
        "created_at": iso8601(v.created_ms),
        "updated_at": iso8601(v.updated_ms),
    })
}

fn with_doc(mut v: serde_json::Value, doc_id: &str) -> serde_json::Value {
    v["document_id"] = json!(doc_id);
    v
}

/// `POST /v1/custom-data/entity` (`key`, `label`, `value_type`).
pub fn add_property(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    may_change_properties(pr)?;
    let f = req.body_fields()?;
    let key = f.required_str("key")?;
    check_key(&key)?;
    let value_type = f.required_str("value_type")?;
    check_type(&value_type)?;
    let label = f.required_str("label")?;
    check_label(&label)?;
    let p = custom_data::add_property(cx, &pr.entity.id, key, label, value_type)?;
    Ok(json(200, &property_json(&p)))
}

/// `GET .../custom-data` (`limit` 1–1000, default 100; `offset`).
pub fn list(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let doc = readable(cx, pr, id)?;
    let limit = query::limit_param(req, "limit")?;
    let offset = query::parse_int(req, "offset")?.unwrap_or(0).max(0);
    let all = values(cx, &doc.id);
    let items: Vec<_> = all
        .iter()
        .skip(offset as usize)
        .take(limit as usize)
        .map(|v| with_doc(value_json(v), &doc.id))
        .collect();
    Ok(json(
        200,
        &json!({"custom_data": items, "total_count": all.len()}),
    ))
}

/// The `property` object of a body.
fn property_member(f: &Fields) -> ApiResult<&serde_json::Map<String, serde_json::Value>> {
    f.optional_json("property")?
        .ok_or_else(|| bad("missing_field", "the field `property` is required"))?
        .as_object()
        .ok_or_else(|| bad("invalid_field", "`property` must be an object"))
}

fn text_member(
    o: &serde_json::Map<String, serde_json::Value>,
    name: &str,
) -> ApiResult<Option<String>> {
    match o.get(name) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(bad(
            "invalid_field",
            format!("`property.{name}` must be a string"),
        )),
    }
}

/// `POST .../custom-data` (`property`: `key`, `value`, optional `label`, `value_type`).
pub fn add_value(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let doc = writable(cx, pr, id)?;
    let f = req.body_fields()?;
    let o = property_member(&f)?;
    let key = text_member(o, "key")?
        .ok_or_else(|| bad("missing_field", "the field `property.key` is required"))?;
    check_key(&key)?;
    let declared = custom_data::declared(cx, &doc.entity_id, &key)?;
    if let Some(t) = text_member(o, "value_type")? {
        check_declared_type(&key, &declared.value_type, &t)?;
    }
    let label = text_member(o, "label")?.unwrap_or_else(|| declared.label.clone());
    check_label(&label)?;
    let value = typed(
        o.get("value")
            .ok_or_else(|| bad("missing_field", "the field `property.value` is required"))?,
        &declared.value_type,
    )?;
    let v = custom_data::add_value(cx, &doc.id, declared, label, value)?;
    Ok(json(200, &with_doc(value_json(&v), &doc.id)))
}

/// `PUT .../custom-data/{id}` (`property`: `value` and/or `label`).
pub fn update_value(
    cx: &mut Cx,
    pr: &Principal,
    req: &Request,
    id: &str,
    vid: &str,
) -> ApiResult<Response> {
    let doc = writable(cx, pr, id)?;
    let mut v = custom_data::value(cx, &doc.id, vid)?;
    let f = req.body_fields()?;
    let o = property_member(&f)?;
    if let Some(t) = text_member(o, "value_type")? {
        check_declared_type(&v.key, &v.value_type, &t)?;
    }
    if let Some(label) = text_member(o, "label")? {
        check_label(&label)?;
        v.label = label;
    }
    if let Some(value) = o.get("value") {
        v.value = typed(value, &v.value_type)?;
    }
    custom_data::save_value(cx, &doc.id, &mut v);
    Ok(no_content())
}

/// `GET /v1/custom-data/entity`: the entity's custom data properties.
pub fn list_properties(cx: &mut Cx, pr: &Principal) -> ApiResult<Response> {
    let items: Vec<_> = properties(cx, &pr.entity.id)
        .iter()
        .map(property_json)
        .collect();
    Ok(json(
        200,
        &json!({"entity_id": pr.entity.id, "allowed_properties": items}),
    ))
}

/// `DELETE /v1/custom-data/entity/{key}` (admins).
pub fn delete_property(cx: &mut Cx, pr: &Principal, key: &str) -> ApiResult<Response> {
    may_change_properties(pr)?;
    custom_data::delete_property(cx, &pr.entity.id, key)?;
    Ok(no_content())
}

/// `GET /v1/documents/{id}/custom-data/{vid}`.
pub fn get_value(cx: &mut Cx, pr: &Principal, id: &str, vid: &str) -> ApiResult<Response> {
    let doc = readable(cx, pr, id)?;
    let v = custom_data::value(cx, &doc.id, vid)?;
    Ok(json(200, &with_doc(value_json(&v), &doc.id)))
}

/// `DELETE /v1/documents/{id}/custom-data/{vid}`.
pub fn delete_value(cx: &mut Cx, pr: &Principal, id: &str, vid: &str) -> ApiResult<Response> {
    let doc = writable(cx, pr, id)?;
    custom_data::delete_value(cx, &doc.id, vid)?;
    Ok(no_content())
}
