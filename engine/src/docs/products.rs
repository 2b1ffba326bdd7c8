//! Products (spec §4.3): an entity's catalogue for pricing tables.
//! `GET /v1/products?limit=N` lists them (newest first, default and maximum 100 when
//! `limit` is absent or not positive); `POST /v1/products` adds one.

use super::model::hex;
use crate::auth::authenticate;
use crate::http::{ApiError, ApiResult, json};
use crate::model::prefix_range;
#[allow(unused_imports)]
use crate::prelude::*;
use crate::router::method_not_allowed;
use crate::util::new_id;
use crate::{Cx, Request, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

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

fn product_json(p: &Product) -> Value {
    json!({
        "id": p.id, "name": p.name, "description": p.description, "sku": p.sku,
        "price": p.price, "currency": p.currency, "unit": p.unit,
        "created_at": crate::util::iso8601(p.created_ms),
    })
}

/// `/v1/products`
pub fn route(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let pr = authenticate(cx, req)?;
    let prefix = format!("prod/{}/", pr.entity.id);
    match req.method.as_str() {
        "GET" => {
            let limit = super::list::limit_param(req, "limit")?;
            let (start, end) = prefix_range(&prefix);
            let items: Vec<Value> =
                cx.p.scan(&start, &end, limit, true)
                    .into_iter()
                    .map(|(_, v)| product_json(&crate::model::decode::<Product>(&v)))
                    .collect();
            Ok(json(200, &json!({ "products": items })))
        }
        "POST" => {
            let f = req.body_fields()?;
            let price = f.optional_number("price")?.unwrap_or(0.0);
            if price < 0.0 {
                return Err(ApiError::bad_request(
                    "invalid_field",
                    "the field `price` cannot be negative",
                ));
            }
            let p = Product {
                id: new_id(cx),
                name: f.required_str("name")?,
                description: f.optional_str("description")?.unwrap_or_default(),
                sku: f.optional_str("sku")?.unwrap_or_default(),
                price,
                currency: f.optional_str("currency")?.unwrap_or_default(),
                unit: f.optional_str("unit")?.unwrap_or_default(),
                created_ms: cx.now(),
            };
            let key = format!("{prefix}{}{}", hex(p.created_ms), p.id);
            cx.save(key.as_bytes(), &p);
            Ok(json(200, &product_json(&p)))
        }
        m => Err(method_not_allowed(m, &["GET", "POST"])),
    }
}
