//! Helpers shared by the engine's native test files.

#![allow(dead_code)]

use esign_engine::memory::MemoryPlatform;
use esign_engine::{Origin, Request, Response, handle};
use serde_json::{Value, json};

pub fn request(origin: Origin, method: &str, path: &str, body: Option<Value>) -> Request {
    let mut headers = Vec::new();
    if body.is_some() {
        headers.push(("content-type".to_string(), "application/json".to_string()));
    }
    Request {
        method: method.into(),
        path: path.into(),
        query: String::new(),
        headers,
        body: body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
        parts: Vec::new(),
        origin,
        remote_addr: "127.0.0.1".into(),
    }
}

pub fn body(resp: &Response) -> Value {
    serde_json::from_slice(&resp.body).unwrap_or(Value::Null)
}

/// A platform with one entity and one admin `a@x.se` / `password1`.
pub fn bootstrapped() -> MemoryPlatform {
    let mut p = MemoryPlatform::new();
    p.settings.token_min_interval_ms = 0;
    let resp = handle(
        &mut p,
        &request(
            Origin::Admin,
            "POST",
            "/admin/bootstrap",
            Some(json!({"email": "a@x.se", "password": "password1"})),
        ),
    );
    assert_eq!(resp.status, 201, "{:?}", body(&resp));
    p
}
