//! The contract check: every response a black-box test reads through [`super::call`] is
//! compared with `engine/openapi.json`: the operation must be documented, the status
//! must be one it documents, and a JSON body must validate against the documented
//! schema. A test that gets an answer the document does not describe fails there.

use jsonschema::Validator;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The document, parsed once per test binary.
pub fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let text = include_str!("../../engine/openapi.json");
        serde_json::from_str(text).expect("engine/openapi.json is JSON")
    })
}

/// The documented path template for a concrete path: the one whose literal segments
/// match most segments, as the engine's router decides.
pub fn template_for(path: &str) -> Option<&'static str> {
    let path = path
        .strip_suffix('/')
        .filter(|p| !p.is_empty())
        .unwrap_or(path);
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let mut best: Option<(usize, &'static str)> = None;
    for template in document()["paths"].as_object()?.keys() {
        let parts: Vec<&str> = template.split('/').skip(1).collect();
        if parts.len() != segments.len() {
            continue;
        }
        let mut literals = 0;
        let fits = parts.iter().zip(&segments).all(|(t, s)| {
            if t.starts_with('{') {
                !s.is_empty()
            } else {
                literals += 1;
                t == s
            }
        });
        if fits && best.is_none_or(|(n, _)| literals > n) {
            best = Some((literals, template.as_str()));
        }
    }
    best.map(|(_, t)| t)
}

/// Follows a local `$ref` (`#/components/...`), returning the target and its pointer.
fn resolve(value: &Value, pointer: String) -> (&Value, String) {
    match value.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let p = r.strip_prefix('#').expect("local $ref").to_string();
            let target = document()
                .pointer(&p)
                .unwrap_or_else(|| panic!("dangling $ref {r}"));
            resolve(target, p)
        }
        None => (value, pointer),
    }
}

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// A validator for the schema at `pointer` (inside the whole document, so its `$ref`s
/// resolve), compiled once.
fn validator(pointer: &str) -> &'static Validator {
    static CACHE: OnceLock<Mutex<HashMap<String, &'static Validator>>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    cache.entry(pointer.to_string()).or_insert_with(|| {
        let mut root = document().clone();
        let obj = root.as_object_mut().unwrap();
        obj.insert(
            "$schema".into(),
            json!("https://json-schema.org/draft/2020-12/schema"),
        );
        let fragment = pointer.replace('{', "%7B").replace('}', "%7D");
        obj.insert("$ref".into(), json!(format!("#{fragment}")));
        let v = jsonschema::draft202012::new(&root)
            .unwrap_or_else(|e| panic!("the schema at {pointer} does not compile: {e}"));
        Box::leak(Box::new(v))
    })
}

/// Validates `instance` against the schema at `pointer`; the errors, if any.
pub fn errors_at(pointer: &str, instance: &Value) -> Vec<String> {
    validator(pointer)
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Panics unless the document describes this answer. With `ESIGN_CONTRACT_RECORD=FILE`
/// it appends the answer to FILE (one JSON line) instead: how the document's examples
/// and schemas are checked against what the suites really see.
pub fn check(method: &str, path: &str, status: u16, content_type: &str, body: &str) {
    if let Ok(file) = std::env::var("ESIGN_CONTRACT_RECORD") {
        use std::io::Write;
        let line = json!({"method": method, "path": path, "status": status,
            "content_type": content_type, "body": body});
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
            .unwrap();
        f.write_all(format!("{line}\n").as_bytes()).unwrap();
        return;
    }
    let Some(template) = template_for(path) else {
        // Not an API path: the router's 404 is all it may answer.
        assert_eq!(
            status, 404,
            "{method} {path} is not documented yet answered {status}"
        );
        return;
    };
    let item = &document()["paths"][template];
    let op_pointer = format!("/paths/{}/{}", escape(template), method.to_lowercase());
    let Some(op) = item.get(method.to_lowercase()) else {
        assert_eq!(
            status, 405,
            "{method} {template} is not documented yet answered {status}: {body}"
        );
        return;
    };
    let responses = &op["responses"];
    let code = status.to_string();
    let range = format!("{}XX", status / 100);
    let key = [code.as_str(), range.as_str(), "default"]
        .into_iter()
        .find(|k| responses.get(*k).is_some())
        .unwrap_or_else(|| {
            panic!(
                "{method} {template} answered {status}, which openapi.json does not list: {body}"
            )
        });
    let (response, pointer) = resolve(&responses[key], format!("{op_pointer}/responses/{key}"));
    let media = content_type.split(';').next().unwrap_or("").trim();
    let Some(content) = response.get("content").and_then(Value::as_object) else {
        assert!(
            body.is_empty(),
            "{method} {template} {status}: openapi.json documents no body, got {media}: {body}"
        );
        return;
    };
    if body.is_empty() && status == 204 {
        return;
    }
    assert!(
        content.contains_key(media) || content.contains_key("*/*"),
        "{method} {template} {status}: content type {media} is not documented ({:?})",
        content.keys().collect::<Vec<_>>()
    );
    if media != "application/json" {
        return;
    }
    let (schema, schema_pointer) = resolve(
        &response["content"]["application/json"]["schema"],
        format!("{pointer}/content/application~1json/schema"),
    );
    if schema.is_null() {
        return;
    }
    let instance: Value = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("{method} {template} {status}: body is not JSON ({e}): {body}"));
    let errors = errors_at(&schema_pointer, &instance);
    assert!(
        errors.is_empty(),
        "{method} {template} {status}: the body does not match openapi.json:\n  {}\nbody: {body}",
        errors.join("\n  ")
    );
}
