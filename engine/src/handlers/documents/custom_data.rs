//! Custom data (GetAccept's custom data API): the entity's properties
//! (`/v1/custom-data/entity`) and a document's values (`/v1/documents/{id}/custom-data`).

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult, Fields, json, no_content};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{iso8601, new_id};
use crate::domain::access::{readable, writable};
use crate::domain::auth::Principal;
use crate::domain::custom_data::{
    MAX_ITEMS, MAX_TEXT, Property, TYPES, Value, properties, property_key, value_key, values,
};
use crate::domain::{accounts, list};
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

/// A property key: 1 to 64 of `A-Z a-z 0-9 _ - .`.
fn check_key(key: &str) -> ApiResult<()> {
    let ok = (1..=64).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(bad(
            "invalid_key",
            format!("the key {key:?} must be 1 to 64 letters, digits, `_`, `-` or `.`"),
        ))
    }
}

fn check_type(t: &str) -> ApiResult<()> {
    if TYPES.contains(&t) {
        Ok(())
    } else {
        Err(bad(
            "invalid_value_type",
            format!("value_type {t:?} must be string, number or boolean"),
        ))
    }
}

fn check_label(label: &str) -> ApiResult<()> {
    if label.chars().count() > 200 {
        return Err(bad("invalid_label", "a label has at most 200 characters"));
    }
    Ok(())
}

/// The value of `member` as JSON text, if it has the type `value_type`.
fn typed(value: &serde_json::Value, value_type: &str) -> ApiResult<String> {
    let ok = match value_type {
        "string" => value
            .as_str()
            .is_some_and(|s| s.chars().count() <= MAX_TEXT),
        "number" => value.is_number(),
        _ => value.is_boolean(),
    };
    if !ok {
        return Err(bad(
            "invalid_value",
            format!(
                "the value must be a {value_type}{}",
                if value_type == "string" {
                    " of at most 10000 characters"
                } else {
                    ""
                }
            ),
        ));
    }
    Ok(value.to_string())
}

fn admin_only(pr: &Principal) -> ApiResult<()> {
    if pr.membership.role != accounts::Role::Admin {
        return Err(http::ApiError::forbidden(
            "forbidden",
            "only admins of the entity change its custom data properties",
        ));
    }
    Ok(())
}

/// `POST /v1/custom-data/entity` (`key`, `label`, `value_type`).
pub fn add_property(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    admin_only(pr)?;
    let f = req.body_fields()?;
    let key = f.required_str("key")?;
    check_key(&key)?;
    let value_type = f.required_str("value_type")?;
    check_type(&value_type)?;
    let label = f.required_str("label")?;
    check_label(&label)?;
    let k = property_key(&pr.entity.id, &key);
    if cx.p.get(&k).is_some() {
        return Err(http::ApiError::new(
            409,
            "property_exists",
            format!("the entity already has the property {key:?}; delete it first"),
        ));
    }
    if properties(cx, &pr.entity.id).len() >= MAX_ITEMS {
        return Err(bad(
            "too_many_properties",
            "an entity has at most 200 custom data properties",
        ));
    }
    let p = Property {
        key,
        label,
        value_type,
        created_ms: cx.now(),
    };
    cx.save(&k, &p);
    Ok(json(200, &property_json(&p)))
}

fn load_value(cx: &mut Cx, doc_id: &str, vid: &str) -> ApiResult<Value> {
    cx.load(&value_key(doc_id, vid)).ok_or_else(|| {
        http::ApiError::not_found(
            "custom_data_not_found",
            format!("the document has no custom data {vid}"),
        )
    })
}

/// `GET .../custom-data` (`limit` 1–1000, default 100; `offset`).
pub fn list(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let doc = readable(cx, pr, id)?;
    let limit = list::limit_param(req, "limit")?;
    let offset = list::parse_int(req, "offset")?.unwrap_or(0).max(0);
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
    let declared: Property = cx
        .load(&property_key(&doc.entity_id, &key))
        .ok_or_else(|| {
            bad(
                "unknown_property",
                format!(
                    "{key:?} is not a custom data property of the entity (POST /v1/custom-data/entity declares one)"
                ),
            )
        })?;
    if let Some(t) = text_member(o, "value_type")?
        && t != declared.value_type
    {
        return Err(bad(
            "invalid_value_type",
            format!("the property {key:?} holds a {}", declared.value_type),
        ));
    }
    let label = text_member(o, "label")?.unwrap_or_else(|| declared.label.clone());
    check_label(&label)?;
    let value = typed(
        o.get("value")
            .ok_or_else(|| bad("missing_field", "the field `property.value` is required"))?,
        &declared.value_type,
    )?;
    let existing = values(cx, &doc.id);
    if existing.iter().any(|v| v.key == key) {
        return Err(http::ApiError::new(
            409,
            "custom_data_exists",
            format!("the document already has {key:?}; change it with PUT"),
        ));
    }
    if existing.len() >= MAX_ITEMS {
        return Err(bad(
            "too_many_values",
            "a document has at most 200 custom data values",
        ));
    }
    let now = cx.now();
    let v = Value {
        id: new_id(cx),
        key,
        label,
        value_type: declared.value_type,
        value,
        created_ms: now,
        updated_ms: now,
    };
    cx.save(&value_key(&doc.id, &v.id), &v);
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
    let mut v = load_value(cx, &doc.id, vid)?;
    let f = req.body_fields()?;
    let o = property_member(&f)?;
    if let Some(t) = text_member(o, "value_type")?
        && t != v.value_type
    {
        return Err(bad(
            "invalid_value_type",
            format!("the property {:?} holds a {}", v.key, v.value_type),
        ));
    }
    if let Some(label) = text_member(o, "label")? {
        check_label(&label)?;
        v.label = label;
    }
    if let Some(value) = o.get("value") {
        v.value = typed(value, &v.value_type)?;
    }
    v.updated_ms = cx.now();
    cx.save(&value_key(&doc.id, &v.id), &v);
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
    admin_only(pr)?;
    let k = property_key(&pr.entity.id, key);
    if cx.p.get(&k).is_none() {
        return Err(http::ApiError::not_found(
            "property_not_found",
            format!("the entity has no custom data property {key:?}"),
        ));
    }
    cx.p.delete(&k);
    Ok(no_content())
}

/// `GET /v1/documents/{id}/custom-data/{vid}`.
pub fn get_value(cx: &mut Cx, pr: &Principal, id: &str, vid: &str) -> ApiResult<Response> {
    let doc = readable(cx, pr, id)?;
    let v = load_value(cx, &doc.id, vid)?;
    Ok(json(200, &with_doc(value_json(&v), &doc.id)))
}

/// `DELETE /v1/documents/{id}/custom-data/{vid}`.
pub fn delete_value(cx: &mut Cx, pr: &Principal, id: &str, vid: &str) -> ApiResult<Response> {
    let doc = writable(cx, pr, id)?;
    load_value(cx, &doc.id, vid)?;
    cx.p.delete(&value_key(&doc.id, vid));
    Ok(no_content())
}
