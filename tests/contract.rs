//! The contract of `engine/openapi.json`, checked from outside:
//! - each documented example validates against its own schema;
//! - schemathesis (PyPI, pinned in tests/contract/requirements.txt) generates requests
//!   from the document against the real binary: examples, coverage, fuzzing and the
//!   stateful phase, with all of its checks; none may find a server error or an answer
//!   the document does not describe;
//! - schemathesis driven by GetAccept's own `openapi.json` (v1.6, a pinned copy in
//!   tests/contract/getaccept/) over the operations both APIs have finds no response
//!   that GetAccept's schema rejects.
//!
//! The schemathesis tests are skipped when `ESIGN_PYTHON` has no schemathesis, and must
//! run with `ESIGN_REQUIRE_CONTRACT=1` (as in CI). `ESIGN_CONTRACT_EXAMPLES` sets the
//! cases per operation (CI: the default, 10; the nightly-size run in docs/development.md: 200).

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Every `example` next to a schema: (pointer of the schema, the example).
fn examples(doc: &Value, pointer: &str, out: &mut Vec<(String, Value)>) {
    match doc {
        Value::Object(map) => {
            if let (Some(ex), Some(_)) = (map.get("example"), map.get("schema")) {
                out.push((format!("{pointer}/schema"), ex.clone()));
            }
            if let Some(Value::Object(exs)) = map.get("examples")
                && map.contains_key("schema")
            {
                for (name, ex) in exs {
                    if let Some(v) = ex.get("value") {
                        out.push((format!("{pointer}/schema ({name})"), v.clone()));
                    }
                }
            }
            // A schema's own example (components/schemas/X/example).
            if let Some(ex) = map.get("example")
                && (map.contains_key("type") || map.contains_key("properties"))
            {
                out.push((pointer.to_string(), ex.clone()));
            }
            for (k, v) in map {
                if k != "example" && k != "examples" {
                    let key = k.replace('~', "~0").replace('/', "~1");
                    examples(v, &format!("{pointer}/{key}"), out);
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                examples(v, &format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn every_documented_example_matches_its_schema() {
    let doc = contract::document();
    let mut found = Vec::new();
    examples(doc, "", &mut found);
    assert!(
        found.len() >= 50,
        "only {} examples in openapi.json",
        found.len()
    );
    let mut failures = Vec::new();
    for (pointer, example) in &found {
        let schema_pointer = pointer.split(" (").next().unwrap();
        let errors = contract::errors_at(schema_pointer, example);
        if !errors.is_empty() {
            failures.push(format!("{pointer}: {}", errors.join("; ")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} examples fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_operation_documents_its_errors_and_an_example() {
    let doc = contract::document();
    let mut missing = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if !["get", "put", "post", "delete", "head"].contains(&method.as_str()) {
                continue;
            }
            let name = format!("{} {path}", method.to_uppercase());
            let responses = op["responses"].as_object().unwrap();
            if op.get("operationId").is_none() {
                missing.push(format!("{name}: operationId"));
            }
            let secured = op
                .get("security")
                .is_none_or(|s| s.as_array().is_some_and(|a| !a.is_empty()));
            if secured && !responses.contains_key("401") {
                missing.push(format!("{name}: 401"));
            }
            if op.get("requestBody").is_some() && !responses.contains_key("400") {
                missing.push(format!("{name}: 400"));
            }
            for (status, resp) in responses {
                let resp = match resp.get("$ref").and_then(Value::as_str) {
                    Some(r) => doc.pointer(r.trim_start_matches('#')).unwrap(),
                    None => resp,
                };
                if let Some(media) = resp["content"].get("application/json")
                    && status.starts_with('2')
                    && media.get("example").is_none()
                    && media.get("examples").is_none()
                    && media["schema"].get("$ref").is_none()
                {
                    missing.push(format!("{name} {status}: example"));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "openapi.json lacks:\n{}",
        missing.join("\n")
    );
}

/// The Python that has schemathesis, or `None` (then the test is skipped, unless
/// `ESIGN_REQUIRE_CONTRACT=1`).
fn schemathesis() -> Option<String> {
    python_with(
        "schemathesis",
        "ESIGN_REQUIRE_CONTRACT",
        "tests/contract/requirements.txt",
    )
}

fn cases() -> String {
    std::env::var("ESIGN_CONTRACT_EXAMPLES").unwrap_or_else(|_| "10".into())
}

/// Runs `schemathesis run` with `args`, [`cases`] per operation, a fixed seed and one
/// worker; panics with its report unless it exits 0.
fn run_schemathesis(py: &str, args: &[&str], secs: u64) -> String {
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/contract/schemathesis.toml");
    // schemathesis keeps a `.schemathesis/` cache in its working directory: not in the
    // source tree.
    let work = fresh_dir("schemathesis");
    let out = output_within(
        Command::new(py)
            .args(["-m", "schemathesis.cli", "--no-color", "--config-file"])
            .arg(&config)
            .arg("run")
            .args(args)
            .args(["--max-examples", &cases(), "--seed", "1"])
            // One worker: hypothesis describes its lambdas through `ast`, which races
            // between worker threads (a runtime error "AST constructor recursion depth
            // mismatch" in a few runs out of ten).
            .args(["--workers", "1", "--request-timeout", "20"])
            .env("SCHEMATHESIS_HOOKS", "")
            .current_dir(&work),
        secs,
    );
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "schemathesis failed:\n{text}");
    text
}

#[test]
fn schemathesis_finds_nothing_our_document_does_not_describe() {
    let Some(py) = schemathesis() else {
        eprintln!("skipped: no Python with schemathesis (set ESIGN_PYTHON)");
        return;
    };
    let s = Server::start(&[]);
    let token = s.admin_token();
    let auth = format!("Authorization: Bearer {token}");
    let text = run_schemathesis(
        &py,
        &[
            &s.url("/v1/openapi.json"),
            "--url",
            &s.url(""),
            "-H",
            &auth,
            "--checks",
            "all",
            "--phases",
            "examples,coverage,fuzzing,stateful",
        ],
        1200,
    );
    eprintln!("{text}");
}

/// `/documents/{documentId}` → `/documents/{}`: templates compared without names.
fn shape(template: &str) -> String {
    template
        .split('/')
        .map(|s| if s.starts_with('{') { "{}" } else { s })
        .collect::<Vec<_>>()
        .join("/")
}

/// GetAccept's document reduced to the operations esign also has (its paths are
/// relative to `/v1`), written to a file schemathesis can read.
fn getaccept_shared(dir: &Path) -> (std::path::PathBuf, Vec<String>) {
    let mut ga = getaccept::document();
    let mut ours_ops = std::collections::BTreeSet::new();
    for (path, methods) in &esign_engine::router::templates() {
        if let Some(rest) = path.strip_prefix("/v1") {
            for method in methods.iter() {
                ours_ops.insert((method.to_lowercase(), shape(rest)));
            }
        }
    }
    // Where our spec fixes a shape, it wins over GetAccept's (docs/api.md, "The
    // deliberate differences"): `getaccept::document` widens those members, each with its reason.
    let mut shared = Vec::new();
    let paths = ga["paths"].as_object_mut().unwrap();
    for (path, item) in paths.iter_mut() {
        let item = item.as_object_mut().unwrap();
        item.retain(|method, _| {
            let keep = !["get", "put", "post", "delete", "patch"].contains(&method.as_str())
                || ours_ops.contains(&(method.clone(), shape(path)));
            if keep && ["get", "put", "post", "delete"].contains(&method.as_str()) {
                shared.push(format!("{} {path}", method.to_uppercase()));
            }
            keep
        });
    }
    paths.retain(|_, item| {
        item.as_object()
            .unwrap()
            .keys()
            .any(|m| ["get", "put", "post", "delete"].contains(&m.as_str()))
    });
    // Links (GetAccept's document has none) so the stateful phase feeds what a create
    // answers into the operations on it.
    for (creator, param) in [
        ("/documents", "documentId"),
        ("/subscriptions", "subscriptionId"),
    ] {
        let mut links = serde_json::Map::new();
        for (path, item) in ga["paths"].as_object().unwrap() {
            if !path.starts_with(creator) || !path.contains(&format!("{{{param}}}")) {
                continue;
            }
            for (method, op) in item.as_object().unwrap() {
                if let Some(op_id) = op.get("operationId").and_then(Value::as_str) {
                    links.insert(
                        format!("{op_id}-{method}"),
                        serde_json::json!({"operationId": op_id, "parameters": {param: "$response.body#/id"}}),
                    );
                }
            }
        }
        ga["paths"][creator]["post"]["responses"]["200"]["links"] = Value::Object(links);
    }
    let file = dir.join("getaccept-shared.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&ga).unwrap()).unwrap();
    (file, shared)
}

#[test]
fn schemathesis_with_getaccepts_own_schema_accepts_our_answers_to_the_operations_we_share() {
    let Some(py) = schemathesis() else {
        eprintln!("skipped: no Python with schemathesis (set ESIGN_PYTHON)");
        return;
    };
    let dir = fresh_dir("getaccept-contract");
    let (file, shared) = getaccept_shared(&dir);
    assert!(
        shared.len() >= 30,
        "only {} shared operations: {shared:?}",
        shared.len()
    );
    let s = Server::start(&[]);
    let token = s.admin_token();
    let auth = format!("Authorization: Bearer {token}");
    let text = run_schemathesis(
        &py,
        &[
            file.to_str().unwrap(),
            "--url",
            &s.url("/v1"),
            "-H",
            &auth,
            "--checks",
            "not_a_server_error,response_schema_conformance",
            "--phases",
            "examples,fuzzing,stateful",
            "--mode",
            "positive",
        ],
        1200,
    );
    eprintln!("{} shared operations\n{text}", shared.len());
}

#[test]
fn the_answer_check_refuses_what_the_document_does_not_describe() {
    let refused = |method: &str, path: &str, status: u16, body: &str| {
        std::panic::catch_unwind(|| contract::check(method, path, status, "application/json", body))
            .is_err()
    };
    let good =
        r#"{"user_id":"a","entity_id":"b","first_name":"c","last_name":"d","entity_name":"e"}"#;
    assert!(!refused("GET", "/v1/test", 200, good));
    // A member missing, a member of the wrong type, a status not listed, a method not
    // routed that did not answer 405, a path outside the document that did not 404.
    assert!(refused("GET", "/v1/test", 200, r#"{"user_id":"a"}"#));
    assert!(refused(
        "GET",
        "/v1/test",
        200,
        &good.replace(r#""a""#, "1")
    ));
    assert!(refused("GET", "/v1/test", 418, good));
    assert!(refused("PATCH", "/v1/test", 200, good));
    assert!(refused("GET", "/v1/nowhere", 200, good));
    assert!(!refused(
        "GET",
        "/v1/nowhere",
        404,
        r#"{"error":"not_found","description":"x","status":404}"#
    ));
}
