//! Products (`GET/POST /v1/products`): the entity's price list.
//!
//! | key | value |
//! |---|---|
//! | `prod/{entity}/{hex(created_ms)}{id}` | [`Product`] |

use crate::base::cx::Cx;
use crate::base::keyspace::PROD;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::{self, prefix_range};
use crate::domain::document::hex;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Product {
    pub id: String,
    pub name: String,
    pub description: String,
    pub sku: String,
    pub price: f64,
    pub currency: String,
    pub unit: String,
    pub created_ms: u64,
}

/// The key prefix of an entity's products.
fn prefix(entity: &str) -> String {
    format!("{PROD}/{entity}/")
}

/// The entity's products, newest first, at most `limit`.
pub fn list(cx: &mut Cx, entity: &str, limit: u32) -> Vec<Product> {
    let (start, end) = prefix_range(&prefix(entity));
    cx.p.scan(&start, &end, limit, true)
        .into_iter()
        .map(|(_, v)| records::decode::<Product>(&v))
        .collect()
}

/// Adds a product to the entity's list.
pub fn add(cx: &mut Cx, entity: &str, p: &Product) {
    let key = format!("{}{}{}", prefix(entity), hex(p.created_ms), p.id);
    cx.save(key.as_bytes(), p);
}
