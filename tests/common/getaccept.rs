//! GetAccept's public v1 document (1.6, pinned in tests/contract/getaccept/) as a
//! validator of esign's answers: its OpenAPI 3.0 schemas read as JSON Schema
//! (`nullable` made a `null` type), with the members esign's specification fixes
//! otherwise widened ([`DIFFERENCES`], each with its reason; docs/api.md lists them).

use jsonschema::Validator;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The members of GetAccept's document that our spec (docs/interface.md) fixes
/// otherwise: (JSON pointer into GetAccept's document, the schema the spec gives).
pub const DIFFERENCES: &[(&str, &str)] = &[
    // Spec §2: `send_date`, `sign_date` and `scheduled_sending_time` are null until set.
    (
        "/components/schemas/Document/properties/send_date",
        r#"{"type": ["string", "null"]}"#,
    ),
    (
        "/components/schemas/Document/properties/sign_date",
        r#"{"type": ["string", "null"]}"#,
    ),
    (
        "/components/schemas/Document/properties/scheduled_sending_time",
        r#"{"type": ["string", "null"]}"#,
    ),
    // Spec §4.2: an unknown external id answers 200 with an empty array.
    (
        "/paths/~1documents~1external~1{externalId}/get/responses/200/content/application~1json/schema",
        r##"{"anyOf": [{"$ref": "#/components/schemas/Document"}, {"type": "array", "maxItems": 0}]}"##,
    ),
    // Spec §2: `value` is a number (GetAccept's detail says float, its list int32); a
    // whole value is written as an integer, a fraction stays exact.
    (
        "/components/schemas/Documents/items/properties/value",
        r#"{"type": "number"}"#,
    ),
];

/// GetAccept's document with [`DIFFERENCES`] applied (as served to schemathesis).
pub fn document() -> Value {
    let mut ga: Value = serde_json::from_str(include_str!("../contract/getaccept/openapi.json"))
        .expect("GetAccept's openapi.json is JSON");
    for (pointer, schema) in DIFFERENCES {
        let at = ga
            .pointer_mut(pointer)
            .unwrap_or_else(|| panic!("GetAccept has no {pointer}"));
        *at = serde_json::from_str(schema).unwrap();
    }
    ga
}

/// OpenAPI 3.0's `nullable: true` as JSON Schema: `null` is one of the types.
fn nullable_as_types(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if map.get("nullable") == Some(&Value::Bool(true)) {
                match map.get_mut("type") {
                    Some(Value::String(t)) => {
                        let t = t.clone();
                        map.insert("type".into(), json!([t, "null"]));
                    }
                    Some(Value::Array(ts)) if !ts.contains(&json!("null")) => {
                        ts.push(json!("null"))
                    }
                    _ => {}
                }
                if let Some(Value::Array(e)) = map.get_mut("enum") {
                    e.push(Value::Null);
                }
            }
            for (_, x) in map.iter_mut() {
                nullable_as_types(x);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(nullable_as_types),
        _ => {}
    }
}

fn root() -> &'static Value {
    static ROOT: OnceLock<Value> = OnceLock::new();
    ROOT.get_or_init(|| {
        let mut ga = document();
        nullable_as_types(&mut ga);
        ga
    })
}

/// The schema of GetAccept's JSON answer to `method path_template` with `status`
/// (`None` when it documents none) as a validator, compiled once.
fn validator(method: &str, template: &str, status: u16) -> Option<&'static Validator> {
    static CACHE: OnceLock<Mutex<HashMap<String, Option<&'static Validator>>>> = OnceLock::new();
    let key = format!("{method} {template} {status}");
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    *cache.entry(key).or_insert_with(|| {
        let op = &root()["paths"][template][method.to_lowercase()];
        let mut response = &op["responses"][status.to_string()];
        if let Some(r) = response.get("$ref").and_then(Value::as_str) {
            response = root().pointer(r.trim_start_matches('#')).unwrap();
        }
        response["content"]["application/json"].get("schema")?;
        let pointer = format!(
            "/paths/{}/{}/responses/{status}/content/application~1json/schema",
            template.replace('~', "~0").replace('/', "~1"),
            method.to_lowercase()
        );
        let pointer = if op["responses"][status.to_string()].get("$ref").is_some() {
            let r = op["responses"][status.to_string()]["$ref"]
                .as_str()
                .unwrap();
            format!(
                "{}/content/application~1json/schema",
                r.trim_start_matches('#')
            )
        } else {
            pointer
        };
        let mut doc = root().clone();
        let obj = doc.as_object_mut().unwrap();
        obj.insert(
            "$schema".into(),
            json!("https://json-schema.org/draft/2020-12/schema"),
        );
        let fragment = pointer.replace('{', "%7B").replace('}', "%7D");
        obj.insert("$ref".into(), json!(format!("#{fragment}")));
        let v = jsonschema::draft202012::new(&doc)
            .unwrap_or_else(|e| panic!("GetAccept's schema at {pointer} does not compile: {e}"));
        Some(&*Box::leak(Box::new(v)))
    })
}

/// What GetAccept's schema for this answer rejects in `body` (empty: it accepts it,
/// or documents no JSON body for this status).
pub fn errors(method: &str, template: &str, status: u16, body: &Value) -> Vec<String> {
    match validator(method, template, status) {
        None => Vec::new(),
        Some(v) => v
            .iter_errors(body)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect(),
    }
}

/// Every operation of GetAccept's document: (method, path template relative to /v1).
pub fn operations() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (path, item) in root()["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            if ["get", "put", "post", "delete", "patch"].contains(&method.as_str()) {
                out.push((method.to_uppercase(), path.clone()));
            }
        }
    }
    out
}

/// GetAccept's example body of an operation: its media example, else an object of the
/// `example`s its properties give (nested objects likewise); `None` without a JSON body.
pub fn example_body(method: &str, template: &str) -> Option<Value> {
    let op = &root()["paths"][template][method.to_lowercase()];
    let media = op["requestBody"]["content"].get("application/json")?;
    if let Some(ex) = media.get("example") {
        return Some(ex.clone());
    }
    Some(from_examples(&media["schema"]))
}

fn resolved(s: &Value) -> &Value {
    match s.get("$ref").and_then(Value::as_str) {
        Some(r) => resolved(root().pointer(r.trim_start_matches('#')).unwrap()),
        None => s,
    }
}

fn from_examples(schema: &Value) -> Value {
    let s = resolved(schema);
    if let Some(ex) = s.get("example") {
        return ex.clone();
    }
    match s.get("type").and_then(Value::as_str) {
        Some("object") | None if s.get("properties").is_some() => {
            let mut out = serde_json::Map::new();
            for (k, p) in s["properties"].as_object().unwrap() {
                let v = from_examples(p);
                if !v.is_null() {
                    out.insert(k.clone(), v);
                }
            }
            Value::Object(out)
        }
        Some("array") => {
            let item = from_examples(&s["items"]);
            if item.is_null() || item == json!({}) {
                Value::Null
            } else {
                json!([item])
            }
        }
        _ => Value::Null,
    }
}
