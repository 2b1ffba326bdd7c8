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
use crate::base::keyspace::{DCD, ECD};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::{decode, prefix_range};
use crate::base::util;
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
