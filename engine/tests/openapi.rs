//! The contract: `openapi.json` documents exactly the routes the engine answers.

mod common;

use common::*;
use esign_engine::router::templates;
use esign_engine::{Origin, handle, max_chars};
use serde_json::Value;
use std::collections::BTreeSet;

/// The document as it is in the repository (the engine keeps it deflated).
const OPENAPI_JSON: &str = include_str!("../openapi.json");

const METHODS: &[&str] = &[
    "GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE",
];

fn documented() -> BTreeSet<(String, String)> {
    let doc: Value = serde_json::from_str(OPENAPI_JSON).expect("openapi.json is JSON");
    assert_eq!(doc["openapi"].as_str().map(|v| &v[..4]), Some("3.1."));
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (key, _) in item.as_object().expect("path item") {
            if METHODS.contains(&key.to_uppercase().as_str()) {
                out.insert((key.to_uppercase(), path.clone()));
            }
        }
    }
    out
}

fn routed() -> BTreeSet<(String, String)> {
    templates()
        .iter()
        .flat_map(|(path, methods)| methods.iter().map(|m| (m.to_string(), path.to_string())))
        .collect()
}

#[test]
fn the_document_lists_every_route_and_nothing_else() {
    let (doc, routes) = (documented(), routed());
    let undocumented: Vec<_> = routes.difference(&doc).collect();
    let unrouted: Vec<_> = doc.difference(&routes).collect();
    assert!(
        undocumented.is_empty() && unrouted.is_empty(),
        "routed but not in openapi.json: {undocumented:?}\nin openapi.json but not routed: {unrouted:?}"
    );
}

#[test]
fn every_route_in_the_table_reaches_a_handler_and_other_methods_get_405() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    for (template, methods) in &templates() {
        let path = sample(template);
        for method in METHODS {
            let mut req = request(Origin::Http, method, &path, None);
            req.headers
                .push(("authorization".into(), format!("Bearer {t}")));
            let resp = handle(&mut p, &req);
            let b = body(&resp);
            if methods.contains(method) {
                // The dispatcher behind the table knows the route: whatever it answers
                // (a missing record, a bad body), it is not the router's 404 or 405.
                assert!(
                    resp.status != 405 && !(resp.status == 404 && b["error"] == "not_found"),
                    "{method} {template} is in the table but not dispatched: {} {b}",
                    resp.status
                );
            } else {
                assert_eq!(resp.status, 405, "{method} {template}: {b}");
                let allow = resp
                    .headers
                    .iter()
                    .find(|(k, _)| k == "allow")
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                assert_eq!(allow, methods.join(", "), "{method} {template}");
            }
        }
    }
}

#[test]
fn a_path_outside_the_table_is_404() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    for path in [
        "/v1",
        "/v1/documents/a/b/c/d/e",
        "/v1/nothing",
        "/admin/users",
        "/s",
    ] {
        let (status, b) = api(&mut p, &t, "GET", path, None);
        assert_eq!(
            (status, b["error"].as_str()),
            (404, Some("not_found")),
            "{path}"
        );
    }
}

#[test]
fn the_document_is_served_as_it_is() {
    let mut p = bootstrapped();
    let resp = handle(
        &mut p,
        &request(Origin::Http, "GET", "/v1/openapi.json", None),
    );
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, OPENAPI_JSON.as_bytes());
}

/// Every text member of every request body states the limit the engine enforces
/// (`base::limits`): `maxLength` equal to `max_chars` of its name, or none for the
/// members bounded only by the body's size.
#[test]
fn every_text_member_of_a_request_states_the_enforced_limit() {
    let doc: Value = serde_json::from_str(OPENAPI_JSON).unwrap();
    let mut wrong = Vec::new();
    let mut seen = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            for (_, media) in op["requestBody"]["content"]
                .as_object()
                .into_iter()
                .flatten()
            {
                let at = format!("{} {path}", method.to_uppercase());
                members(&doc, &media["schema"], &at, &mut wrong, &mut seen);
            }
        }
    }
    assert!(seen > 100, "only {seen} text members found");
    assert!(
        wrong.is_empty(),
        "maxLength differs from the engine's limit:\n{}",
        wrong.join("\n")
    );
}

fn resolve<'a>(doc: &'a Value, s: &'a Value) -> &'a Value {
    match s["$ref"].as_str() {
        Some(r) => resolve(
            doc,
            &doc["components"]["schemas"][r.rsplit('/').next().unwrap()],
        ),
        None => s,
    }
}

fn members(doc: &Value, s: &Value, at: &str, wrong: &mut Vec<String>, seen: &mut usize) {
    let s = resolve(doc, s);
    for k in ["allOf", "anyOf", "oneOf"] {
        for x in s[k].as_array().into_iter().flatten() {
            members(doc, x, at, wrong, seen);
        }
    }
    for (name, prop) in s["properties"].as_object().into_iter().flatten() {
        text(doc, name, prop, at, wrong, seen);
        members(doc, prop, at, wrong, seen);
    }
    if s.get("items").is_some() {
        members(doc, &s["items"], at, wrong, seen);
    }
}

/// Checks the text schemas of member `name`: itself, its alternatives, its items.
fn text(doc: &Value, name: &str, s: &Value, at: &str, wrong: &mut Vec<String>, seen: &mut usize) {
    let s = resolve(doc, s);
    for k in ["anyOf", "oneOf"] {
        for x in s[k].as_array().into_iter().flatten() {
            text(doc, name, x, at, wrong, seen);
        }
    }
    if s.get("items").is_some() {
        text(doc, name, &s["items"], at, wrong, seen);
    }
    let is_text = s["type"] == "string"
        || s["type"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t == "string"));
    if is_text {
        *seen += 1;
        let stated = s["maxLength"].as_u64().map(|n| n as usize);
        if stated != max_chars(name) {
            wrong.push(format!(
                "{at} `{name}`: maxLength {stated:?}, the engine {:?}",
                max_chars(name)
            ));
        }
    }
}

/// An operation marked `x-esign-rules-beyond-schema` answers 400 for rules no request
/// schema can state (its document's status, the time, stored data, a file's bytes), and
/// tests/contract/schemathesis.toml lets it answer 400 to a request its schema allows; so
/// its own 400 response names those rules (the shared `BadRequest` names none).
#[test]
fn an_operation_with_rules_beyond_its_schema_names_them() {
    let doc: Value = serde_json::from_str(OPENAPI_JSON).unwrap();
    let shared = doc["components"]["responses"]["BadRequest"]["description"]
        .as_str()
        .unwrap();
    let (mut marked, mut unnamed) = (0, Vec::new());
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if op["x-esign-rules-beyond-schema"] != true {
                continue;
            }
            marked += 1;
            let answer = &op["responses"]["400"];
            let said = answer["description"].as_str().unwrap_or("");
            if answer.get("$ref").is_some() || said.trim_start_matches(shared).trim().len() < 30 {
                unnamed.push(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    assert!(marked >= 20, "only {marked} operations marked");
    assert!(
        unnamed.is_empty(),
        "marked, but their 400 does not name the rules: {unnamed:?}"
    );
}

/// The sender's app (`engine/assets/sender.js`) is a client of the documented API: every
/// `/v1/...` path it names begins a documented path (its ids are added at run time, so
/// a literal such as `"/v1/documents/"` must be the start of one, segment by segment).
#[test]
fn the_sender_app_calls_only_documented_paths() {
    const SENDER_JS: &str = include_str!("../assets/sender.js");
    let doc: Value = serde_json::from_str(OPENAPI_JSON).unwrap();
    let paths: Vec<&String> = doc["paths"].as_object().unwrap().keys().collect();
    let mut named = BTreeSet::new();
    for (i, _) in SENDER_JS.match_indices("\"/v1/") {
        let rest = &SENDER_JS[i + 1..];
        let literal = &rest[..rest.find('"').unwrap()];
        named.insert(literal.split('?').next().unwrap().to_string());
    }
    assert!(
        named.len() > 10,
        "the app names its paths as literals: {named:?}"
    );
    // `"/v1/documents"` names a documented path; `"/v1/documents/"` (an id follows)
    // names the start of one whose next segment is a parameter.
    let begins = |path: &str, literal: &str| match literal.strip_suffix('/') {
        None => path == literal,
        Some(stem) => path
            .strip_prefix(stem)
            .and_then(|rest| rest.strip_prefix("/{"))
            .is_some(),
    };
    for literal in &named {
        assert!(
            paths.iter().any(|p| begins(p, literal)),
            "sender.js calls {literal:?}, which begins no documented path"
        );
    }
    // What follows an id (`path + "/fields"`): a documented path goes on so after a
    // parameter.
    for (i, _) in SENDER_JS.match_indices("+ \"/") {
        let rest = &SENDER_JS[i + 3..];
        let suffix = rest[..rest.find('"').unwrap()].split('?').next().unwrap();
        assert!(
            paths.iter().any(|p| p.contains(&format!("}}{suffix}"))),
            "sender.js calls {suffix:?} after an id, which no documented path has"
        );
    }
}
