//! Tenant isolation, generated from the route table: every route that names an object
//! by id, called by another entity's admin with the ids of this entity's objects,
//! answers 404 in the error shape, and changes nothing.

mod common;

use common::*;
use esign_engine::router::templates;
use serde_json::{Value, json};

/// Routes whose parameters are not an entity's object ids: recipient links and
/// download links (the secret is the credential), the page assets, eID returns, and
/// the sender app's views (one page for every path, whose script then asks the API),
/// and public links (`/p/{slug}`: anyone may visit one).
const NOT_TENANT_IDS: &[&str] = &["{secret}", "{name}", "{session}", "{view}", "{slug}"];

#[test]
fn another_entitys_ids_are_404_on_every_route() {
    let mut p = bootstrapped();
    let a = token(&mut p);
    // A second entity with its own admin.
    let other = new_entity(&mut p, "Other", json!({}));
    add_member(&mut p, "b@y.se", &other, "admin", None);
    let b = login(&mut p, "b@y.se", None);

    // The first entity's objects, one of each kind.
    let (doc, detail) = draft(
        &mut p,
        &a,
        json!([{"email": "r@x.se", "first_name": "R", "last_name": "S"}]),
        json!({"external_id": "ext-1"}),
    );
    let recipient = detail["recipients"][0]["id"].as_str().unwrap().to_string();
    let (s, comment) = api(
        &mut p,
        &a,
        "POST",
        &format!("/v1/documents/{doc}/comments"),
        Some(json!({"text": "mine"})),
    );
    assert_eq!(s, 200, "{comment}");
    let (s, prop) = api(
        &mut p,
        &a,
        "POST",
        "/v1/custom-data/entity",
        Some(json!({"key": "crm_id", "label": "CRM id", "value_type": "string"})),
    );
    assert_eq!(s, 200, "{prop}");
    let (s, value) = api(
        &mut p,
        &a,
        "POST",
        &format!("/v1/documents/{doc}/custom-data"),
        Some(json!({"property": {"key": "crm_id", "value": "ACME"}})),
    );
    assert_eq!(s, 200, "{value}");
    let (s, upload) = api(
        &mut p,
        &a,
        "POST",
        "/v1/upload",
        Some(json!({"file_content": "JVBERi0xLjQKZmFrZQ==", "file_name": "u.pdf"})),
    );
    assert_eq!(s, 200, "{upload}");
    let (s, template) = api(
        &mut p,
        &a,
        "POST",
        "/v1/templates",
        Some(json!({"name": "T", "file_content": "JVBERi0xLjQKZmFrZQ==", "file_name": "t.pdf"})),
    );
    assert_eq!(s, 200, "{template}");
    let (s, sub) = api(
        &mut p,
        &a,
        "POST",
        "/v1/subscriptions",
        Some(json!({"event": "document.created", "target_url": "https://hooks.example/a"})),
    );
    assert_eq!(s, 200, "{sub}");
    let (s, user) = api(
        &mut p,
        &a,
        "POST",
        "/v1/users",
        Some(json!({"email": "u@x.se", "first_name": "U", "last_name": "V", "role": "user"})),
    );
    assert_eq!(s, 200, "{user}");
    let id_of = |v: &Value, k: &str| {
        v[k].as_str()
            .unwrap_or_else(|| panic!("{k} in {v}"))
            .to_string()
    };
    let entity_a = id_of(&detail, "entity_id");

    let mut failures = Vec::new();
    let mut checked = 0;
    for (pattern, methods) in &templates() {
        if !pattern.contains('{') || NOT_TENANT_IDS.iter().any(|p| pattern.contains(p)) {
            continue;
        }
        let object = if pattern.starts_with("/v1/upload/") {
            id_of(&upload, "file_id")
        } else if pattern.starts_with("/v1/templates/") {
            id_of(&template, "id")
        } else if pattern.starts_with("/v1/subscriptions/") {
            id_of(&sub, "id")
        } else {
            doc.clone()
        };
        let path = pattern
            .replace("{id}", &object)
            .replace("{recipient_id}", &recipient)
            .replace("{comment_id}", &id_of(&comment, "id"))
            .replace("{custom_data_id}", &id_of(&value, "id"))
            .replace("{key}", "crm_id")
            .replace("{user_id}", &id_of(&user, "id"))
            .replace("{external_id}", "ext-1")
            .replace("{entity_id}", &entity_a)
            .replace("{client_id}", "client-of-another-entity")
            .replace("{n}", "1");
        for method in methods.iter() {
            checked += 1;
            let b_body = matches!(*method, "POST" | "PUT").then(|| json!({}));
            let (status, answer) = api(&mut p, &b, method, &path, b_body);
            let isolated = match *pattern {
                // A lookup by external id lists what the caller may see: nothing.
                "/v1/documents/external/{external_id}" => status == 200 && answer == json!([]),
                // The spec answers 400 for an entity the user is not a member of: the
                // same answer as for an entity that does not exist.
                "/v1/refresh/{entity_id}" => {
                    let (s, unknown) = api(&mut p, &b, method, "/v1/refresh/no-such-entity", None);
                    status == 400 && s == 400 && answer["error"] == unknown["error"]
                }
                _ => status == 404 && answer["status"] == status && answer["error"].is_string(),
            };
            if !isolated {
                failures.push(format!("{method} {path}: {status} {answer}"));
            }
        }
    }
    eprintln!("{checked} route and method pairs called with another entity's ids");
    assert!(checked > 40, "only {checked} routes checked");
    assert!(
        failures.is_empty(),
        "another entity's ids were not 404:\n{}",
        failures.join("\n")
    );
    // Nothing changed: the first entity still has its objects.
    for path in [
        format!("/v1/documents/{doc}"),
        format!("/v1/templates/{}", id_of(&template, "id")),
        format!("/v1/subscriptions/{}", id_of(&sub, "id")),
        format!("/v1/users/{}", id_of(&user, "id")),
    ] {
        assert_eq!(api(&mut p, &a, "GET", &path, None).0, 200, "{path}");
    }
}
