//! Custom data (GetAccept's `/custom-data`): an entity declares the properties its
//! documents may carry (`key`, `label`, `value_type` string, number or boolean), and a
//! document holds values of them.
//!
//! | key | value |
//! |---|---|
//! | `ecd/{entity_id}/{key}` | [`Property`]: a property the entity allows |
//! | `dcd/{doc_id}/{id}` | [`Value`]: a document's value of a property |
//!
//! Rules: every member reads the entity's properties; only admins add or delete them.
//! A document's values are read by those who read the document and changed by those
//! who may change it, in any status (they are the sender's data, not the contract's).
//! A value must be of the property's type; a key is set once per document (409; `PUT`
//! changes it). Deleting a property leaves the values already given.

use crate::base::cx::Cx;
use crate::base::http::{ApiError, ApiResult};
use crate::base::keyspace::{DCD, ECD};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::{decode, prefix_range};
use crate::base::util;
use crate::domain::accounts;
use crate::domain::auth::Principal;
use serde::{Deserialize, Serialize};

/// A property an entity allows on its documents.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Property {
    pub key: String,
    pub label: String,
    /// `string`, `number` or `boolean`.
    pub value_type: String,
    pub created_ms: u64,
}

/// A document's value of a property.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Value {
    pub id: String,
    pub key: String,
    pub label: String,
    pub value_type: String,
    /// The value as JSON text (a string, a number or a boolean).
    pub value: String,
    pub created_ms: u64,
    pub updated_ms: u64,
}

pub const TYPES: [&str; 3] = ["string", "number", "boolean"];
/// How many properties an entity, and values a document, may have.
pub const MAX_ITEMS: usize = 200;
pub const MAX_TEXT: usize = 10_000;

pub fn property_key(entity_id: &str, key: &str) -> Vec<u8> {
    util::key(&[ECD, entity_id, key])
}

pub fn value_key(doc_id: &str, id: &str) -> Vec<u8> {
    util::key(&[DCD, doc_id, id])
}

/// The range of a document's values (the erase job deletes it).
pub fn values_prefix(doc_id: &str) -> (Vec<u8>, Vec<u8>) {
    prefix_range(&format!("{DCD}/{doc_id}/"))
}

pub fn properties(cx: &mut Cx, entity_id: &str) -> Vec<Property> {
    let (start, end) = prefix_range(&format!("{ECD}/{entity_id}/"));
    cx.p.scan(&start, &end, u32::MAX, false)
        .into_iter()
        .map(|(_, v)| decode(&v))
        .collect()
}

pub fn values(cx: &mut Cx, doc_id: &str) -> Vec<Value> {
    let (start, end) = values_prefix(doc_id);
    let mut out: Vec<Value> =
        cx.p.scan(&start, &end, u32::MAX, false)
            .into_iter()
            .map(|(_, v)| decode(&v))
            .collect();
    out.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
    out
}

fn bad(code: &'static str, text: impl Into<String>) -> ApiError {
    ApiError::bad_request(code, text)
}

/// A property key: 1 to 64 of `A-Z a-z 0-9 _ - .`.
pub fn check_key(key: &str) -> ApiResult<()> {
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

/// A `value_type`: one of [`TYPES`].
pub fn check_type(t: &str) -> ApiResult<()> {
    if TYPES.contains(&t) {
        Ok(())
    } else {
        Err(bad(
            "invalid_value_type",
            format!("value_type {t:?} must be string, number or boolean"),
        ))
    }
}

/// A label: at most 200 characters.
pub fn check_label(label: &str) -> ApiResult<()> {
    if label.chars().count() > 200 {
        return Err(bad("invalid_label", "a label has at most 200 characters"));
    }
    Ok(())
}

/// A `value_type` a value was given with: the property's own, else 400.
pub fn check_declared_type(key: &str, declared: &str, given: &str) -> ApiResult<()> {
    if given != declared {
        return Err(bad(
            "invalid_value_type",
            format!("the property {key:?} holds a {declared}"),
        ));
    }
    Ok(())
}

/// A value as JSON text, if it has the type `value_type`.
pub fn typed(value: &serde_json::Value, value_type: &str) -> ApiResult<String> {
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

/// Only admins of the entity change its properties.
pub fn may_change_properties(pr: &Principal) -> ApiResult<()> {
    if pr.membership.role != accounts::Role::Admin {
        return Err(ApiError::forbidden(
            "forbidden",
            "only admins of the entity change its custom data properties",
        ));
    }
    Ok(())
}

/// Adds a checked property to the entity: 409 when it has the key, 400 past
/// [`MAX_ITEMS`].
pub fn add_property(
    cx: &mut Cx,
    entity_id: &str,
    key: String,
    label: String,
    value_type: String,
) -> ApiResult<Property> {
    let k = property_key(entity_id, &key);
    if cx.p.get(&k).is_some() {
        return Err(ApiError::new(
            409,
            "property_exists",
            format!("the entity already has the property {key:?}; delete it first"),
        ));
    }
    if properties(cx, entity_id).len() >= MAX_ITEMS {
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
    Ok(p)
}

/// Deletes the entity's property `key` (404 when it has none); values given stay.
pub fn delete_property(cx: &mut Cx, entity_id: &str, key: &str) -> ApiResult<()> {
    let k = property_key(entity_id, key);
    if cx.p.get(&k).is_none() {
        return Err(ApiError::not_found(
            "property_not_found",
            format!("the entity has no custom data property {key:?}"),
        ));
    }
    cx.p.delete(&k);
    Ok(())
}

/// The entity's property `key`, which a value names; 400 when it has none.
pub fn declared(cx: &mut Cx, entity_id: &str, key: &str) -> ApiResult<Property> {
    cx.load(&property_key(entity_id, key)).ok_or_else(|| {
        bad(
            "unknown_property",
            format!(
                "{key:?} is not a custom data property of the entity (POST /v1/custom-data/entity declares one)"
            ),
        )
    })
}

/// A document's value `vid`, or 404.
pub fn value(cx: &mut Cx, doc_id: &str, vid: &str) -> ApiResult<Value> {
    cx.load(&value_key(doc_id, vid)).ok_or_else(|| {
        ApiError::not_found(
            "custom_data_not_found",
            format!("the document has no custom data {vid}"),
        )
    })
}

/// Gives a document a value of `declared` (`value` already [`typed`]): 409 when it has
/// one of that key, 400 past [`MAX_ITEMS`].
pub fn add_value(
    cx: &mut Cx,
    doc_id: &str,
    declared: Property,
    label: String,
    value: String,
) -> ApiResult<Value> {
    let existing = values(cx, doc_id);
    if existing.iter().any(|v| v.key == declared.key) {
        return Err(ApiError::new(
            409,
            "custom_data_exists",
            format!(
                "the document already has {:?}; change it with PUT",
                declared.key
            ),
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
        id: util::new_id(cx),
        key: declared.key,
        label,
        value_type: declared.value_type,
        value,
        created_ms: now,
        updated_ms: now,
    };
    cx.save(&value_key(doc_id, &v.id), &v);
    Ok(v)
}

/// Stores a changed value, updated now.
pub fn save_value(cx: &mut Cx, doc_id: &str, v: &mut Value) {
    v.updated_ms = cx.now();
    cx.save(&value_key(doc_id, &v.id), v);
}

/// Deletes a document's value `vid` (404 when it has none).
pub fn delete_value(cx: &mut Cx, doc_id: &str, vid: &str) -> ApiResult<()> {
    value(cx, doc_id, vid)?;
    cx.p.delete(&value_key(doc_id, vid));
    Ok(())
}
