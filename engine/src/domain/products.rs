//! Products (`GET/POST /v1/products`): the entity's price list.

#[allow(unused_imports)]
use crate::base::prelude::*;
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
