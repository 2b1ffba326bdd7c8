//! Products (spec §4.3): an entity's catalogue for pricing tables.
//! `GET /v1/products?limit=N` lists them (newest first, default and maximum 100 when
//! `limit` is absent or not positive); `POST /v1/products` adds one.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::query;
use crate::base::util::{self, new_id};
use crate::domain::auth::Principal;
use crate::domain::products::{self, Product};
use serde_json::{Value, json};

fn product_json(p: &Product) -> Value {
    json!({
        "id": p.id, "name": p.name, "description": p.description, "sku": p.sku,
        "price": p.price, "currency": p.currency, "unit": p.unit,
        "created_at": util::iso8601(p.created_ms),
    })
}

/// `GET /v1/products`: the entity's products, newest first.
pub fn list(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    let limit = query::limit_param(req, "limit")?;
    let items: Vec<Value> = products::list(cx, &pr.entity.id, limit)
        .iter()
        .map(product_json)
        .collect();
    Ok(json(200, &json!({ "products": items })))
}

/// `POST /v1/products`: a new product.
pub fn create(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    let f = req.body_fields()?;
    let price = f.optional_number("price")?.unwrap_or(0.0);
    if price < 0.0 {
        return Err(http::ApiError::bad_request(
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
    products::add(cx, &pr.entity.id, &p);
    Ok(json(200, &product_json(&p)))
}
