//! The role matrix, generated from the route table: every document route and method,
//! called by each kind of member of the document's entity (its owner, an admin, a
//! manager of the owner's team, a manager of another team, another user of the same
//! team), on a document that is public and on one that is private, in a fresh world
//! each time. The oracle is the access rule of DESIGN.md §4 as `docs::access` states
//! it, and the owner-or-admin rules of spec §4:
//!
//! - members read the entity's public documents; a private one is read only by its
//!   owner, admins and managers of the owner's team, and is 404 to everyone else;
//! - the owner, admins and managers of the owner's team change a document; other
//!   readers get 403 `access_denied`;
//! - the delete step and manual signing are the owner's or an admin's: a team manager
//!   gets 404 for the delete step (spec §4: "for others the delete step answers 404 and
//!   the document is kept") and 403 for manual signing.
//!
//! A comment is a reader's act, but a suggestion (which blocks sending) is a change:
//! the comment route is called with a suggestion, under the change rule.
//!
//! A call the rule allows may still be refused for its (empty) body or the document's
//! state; what it must not get is an access refusal.

mod common;

use common::*;
use esign_engine::memory::MemoryPlatform;
use esign_engine::router::templates;
use serde_json::{Value, json};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Actor {
    Owner,
    Admin,
    TeamManager,
    OtherManager,
    TeamUser,
}

const ACTORS: [Actor; 5] = [
    Actor::Owner,
    Actor::Admin,
    Actor::TeamManager,
    Actor::OtherManager,
    Actor::TeamUser,
];

/// A world: the admin's entity with an owner (user, team t1), a manager of t1, a
/// manager of t2 and another user of t1; the owner's draft, private or not. Returns
/// the platform, each actor's token and the document's id and first recipient.
fn world(private: bool) -> (MemoryPlatform, Vec<(Actor, String)>, String, String) {
    let mut p = bootstrapped();
    let admin = token(&mut p);
    let entity = entity_of(&mut p, &admin);
    let mut tokens = vec![(Actor::Admin, admin)];
    for (actor, email, role, team) in [
        (Actor::Owner, "owner@x.se", "user", "t1"),
        (Actor::TeamManager, "manager@x.se", "manager", "t1"),
        (Actor::OtherManager, "other@x.se", "manager", "t2"),
        (Actor::TeamUser, "peer@x.se", "user", "t1"),
    ] {
        add_member(&mut p, email, &entity, role, Some(team));
        tokens.push((actor, login(&mut p, email, None)));
    }
    let owner = tokens
        .iter()
        .find(|(a, _)| *a == Actor::Owner)
        .unwrap()
        .1
        .clone();
    let (id, detail) = draft(
        &mut p,
        &owner,
        json!([{"email": "r@x.se", "first_name": "R", "last_name": "S"}]),
        json!({"is_private": private}),
    );
    let recipient = detail["recipients"][0]["id"].as_str().unwrap().to_string();
    (p, tokens, id, recipient)
}

/// What the rule says `actor` gets from `method pattern` on a document.
#[derive(Debug, PartialEq)]
enum Expect {
    /// Not refused for access (any other answer).
    Allowed,
    /// 404 (the document is not theirs to see, or the spec's delete-step 404).
    NotFound,
    /// 403 `access_denied`.
    Forbidden,
}

fn expect(actor: Actor, private: bool, method: &str, pattern: &str) -> Expect {
    let writer = matches!(actor, Actor::Owner | Actor::Admin | Actor::TeamManager);
    let owner_or_admin = matches!(actor, Actor::Owner | Actor::Admin);
    if private && !writer {
        return Expect::NotFound;
    }
    match (method, pattern) {
        ("DELETE", "/v1/documents/{id}") if !owner_or_admin => Expect::NotFound,
        ("POST", "/v1/documents/{id}/manually-sign") if !owner_or_admin => Expect::Forbidden,
        (
            "POST",
            "/v1/documents/{id}/recipients/{recipient_id}/in-person"
            | "/v1/documents/{id}/self-sign",
        ) if !owner_or_admin => Expect::Forbidden,
        ("GET", _) => Expect::Allowed,
        _ if writer => Expect::Allowed,
        _ => Expect::Forbidden,
    }
}

#[test]
fn every_document_route_follows_the_access_rule_for_every_role() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for (pattern, methods) in &templates() {
        if !pattern.starts_with("/v1/documents/{id}") {
            continue;
        }
        for method in methods.iter() {
            for private in [false, true] {
                for actor in ACTORS {
                    let (mut p, tokens, id, recipient) = world(private);
                    let t = &tokens.iter().find(|(a, _)| *a == actor).unwrap().1;
                    let path = pattern
                        .replace("{id}", &id)
                        .replace("{recipient_id}", &recipient)
                        .replace("{comment_id}", "nocomment0000000")
                        .replace("{custom_data_id}", "nodata0000000000");
                    let b = match (*method, *pattern) {
                        ("POST", "/v1/documents/{id}/comments") => {
                            Some(json!({"text": "see page 2", "suggestion": true}))
                        }
                        ("POST" | "PUT", _) => Some(json!({})),
                        _ => None,
                    };
                    let (status, answer) = api(&mut p, t, method, &path, b);
                    checked += 1;
                    let want = expect(actor, private, method, pattern);
                    let access_refused = (status == 404 && answer["error"] == "document_not_found")
                        || (status == 403 && answer["error"] == "access_denied");
                    let ok = match want {
                        Expect::Allowed => !access_refused,
                        Expect::NotFound => status == 404,
                        Expect::Forbidden => status == 403,
                    };
                    if !ok {
                        failures.push(format!(
                            "{actor:?} {method} {pattern} (private: {private}): want {want:?}, got {status} {answer}"
                        ));
                    }
                }
            }
        }
    }
    eprintln!("{checked} calls: document routes × methods × 5 roles × public/private");
    assert!(checked > 300, "only {checked} calls");
    assert!(
        failures.is_empty(),
        "{} calls broke the access rule:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn entity_routes_follow_the_role_rules() {
    // (role, method, path, body, the status wanted)
    let rules: &[(Actor, &str, &str, Value, u16)] = &[
        // Users: managers and admins; a manager manages users only.
        (Actor::TeamUser, "GET", "/v1/users", Value::Null, 403),
        (Actor::TeamManager, "GET", "/v1/users", Value::Null, 200),
        (Actor::Admin, "GET", "/v1/users", Value::Null, 200),
        (
            Actor::TeamUser,
            "POST",
            "/v1/users",
            json!({"email": "n@x.se", "first_name": "N", "last_name": "U"}),
            403,
        ),
        (
            Actor::TeamManager,
            "POST",
            "/v1/users",
            json!({"email": "n@x.se", "first_name": "N", "last_name": "U"}),
            200,
        ),
        (
            Actor::TeamManager,
            "POST",
            "/v1/users",
            json!({"email": "n@x.se", "first_name": "N", "last_name": "U", "role": "admin"}),
            403,
        ),
        (
            Actor::Admin,
            "POST",
            "/v1/users",
            json!({"email": "n@x.se", "first_name": "N", "last_name": "U", "role": "admin"}),
            200,
        ),
        // Entity properties: admins only.
        (
            Actor::TeamManager,
            "POST",
            "/v1/custom-data/entity",
            json!({"key": "crm", "label": "CRM", "value_type": "string"}),
            403,
        ),
        (
            Actor::Admin,
            "POST",
            "/v1/custom-data/entity",
            json!({"key": "crm", "label": "CRM", "value_type": "string"}),
            200,
        ),
        // Global subscriptions (every member's documents): admins only.
        (
            Actor::TeamManager,
            "POST",
            "/v1/subscriptions",
            json!({"event": "document.sent", "target_url": "https://h.example/a", "global": true}),
            403,
        ),
        (
            Actor::Admin,
            "POST",
            "/v1/subscriptions",
            json!({"event": "document.sent", "target_url": "https://h.example/a", "global": true}),
            200,
        ),
        (
            Actor::TeamUser,
            "POST",
            "/v1/subscriptions",
            json!({"event": "document.sent", "target_url": "https://h.example/a"}),
            200,
        ),
    ];
    let mut failures = Vec::new();
    for (actor, method, path, b, want) in rules {
        let (mut p, tokens, _, _) = world(false);
        let t = &tokens.iter().find(|(a, _)| a == actor).unwrap().1;
        let b = (!b.is_null()).then(|| b.clone());
        let (status, answer) = api(&mut p, t, method, path, b);
        if status != *want {
            failures.push(format!(
                "{actor:?} {method} {path}: want {want}, got {status} {answer}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
