//! The audit's low findings (issue 58) and a client's small miss, engine side: sign-up
//! counted before the email is looked up, sending on another's behalf, tokens of a
//! closed entity, addresses that would split a mail header, and `thumb_url` in
//! `GET /v1/users/me`. (The trail's address is in docs.rs.)

mod common;

use common::*;
use esign_engine::memory::MemoryPlatform;
use esign_engine::{Origin, handle};
use serde_json::{Value, json};

fn register(p: &mut MemoryPlatform, email: &str) -> (u16, Value) {
    let mut req = request(
        Origin::Http,
        "POST",
        "/v1/register",
        Some(json!({"email": email, "password": "password1", "first_name": "N"})),
    );
    req.remote_addr = "198.51.100.7".into();
    let resp = handle(p, &req);
    (resp.status, body(&resp))
}

/// Past the hour's sign-ups from one address, a known email gets the same 429 as an
/// unknown one: asking about a known email uses up a sign-up too.
#[test]
fn sign_up_counts_before_it_looks_up_the_email() {
    let mut p = bootstrapped();
    admin_post(&mut p, "/admin/signup", json!({"enabled": true}));
    for i in 0..5 {
        let (s, b) = register(&mut p, "a@x.se");
        assert_eq!(
            (s, b["error"].as_str()),
            (400, Some("email_taken")),
            "{i}: {b}"
        );
    }
    let (known, kb) = register(&mut p, "a@x.se");
    let (unknown, ub) = register(&mut p, "new@x.se");
    assert_eq!(
        (known, kb["error"].as_str()),
        (429, Some("too_many_requests")),
        "{kb}"
    );
    assert_eq!(
        (unknown, ub["error"].as_str()),
        (429, Some("too_many_requests")),
        "{ub}"
    );
}

/// An admin, a manager, a plain member in one entity; a draft of each non-admin.
fn world() -> (MemoryPlatform, String, String, String, String) {
    let mut p = bootstrapped();
    let admin = token(&mut p);
    let entity = entity_of(&mut p, &admin);
    add_member(&mut p, "m@x.se", &entity, "manager", Some("t1"));
    add_member(&mut p, "u@x.se", &entity, "user", Some("t1"));
    let manager = login(&mut p, "m@x.se", None);
    let user = login(&mut p, "u@x.se", None);
    (p, admin, manager, user, entity)
}

fn draft_of(p: &mut MemoryPlatform, t: &str) -> String {
    draft(
        p,
        t,
        json!([{"email": "r@y.se", "first_name": "R", "last_name": "S"}]),
        json!({}),
    )
    .0
}

/// Only admins send as someone else; anyone sends as themselves; the refusal is the
/// same whether the named email has an account or not.
#[test]
fn sending_on_anothers_behalf_is_for_admins() {
    for (who, named, want) in [
        ("user", "a@x.se", 403),
        ("user", "m@x.se", 403),
        ("user", "nobody@else.se", 403),
        ("manager", "u@x.se", 403),
        ("user", "U@x.se", 200),
        ("admin", "u@x.se", 200),
    ] {
        let (mut p, admin, manager, user, _) = world();
        let t = match who {
            "admin" => admin.clone(),
            "manager" => manager.clone(),
            _ => user.clone(),
        };
        let id = draft_of(&mut p, &user);
        let (s, b) = api(
            &mut p,
            &t,
            "POST",
            &format!("/v1/documents/{id}/send"),
            Some(json!({"sender_email": named})),
        );
        assert_eq!(s, want, "{who} as {named}: {b}");
        if want == 403 {
            assert_eq!(b["error"], "access_denied", "{b}");
        } else {
            assert_eq!(
                b["sender_email"].as_str().map(str::to_lowercase),
                Some(named.to_lowercase()),
                "{b}"
            );
        }
    }
    // By id too, and on seal.
    let (mut p, _, _, user, _) = world();
    let id = draft_of(&mut p, &user);
    let (_, me) = api(&mut p, &user, "GET", "/v1/users/me", None);
    let admin = token(&mut p);
    let (_, admin_me) = api(&mut p, &admin, "GET", "/v1/users/me", None);
    for path in ["send", "seal"] {
        let (s, b) = api(
            &mut p,
            &user,
            "POST",
            &format!("/v1/documents/{id}/{path}"),
            Some(json!({"sender_id": admin_me["user"]["id"]})),
        );
        assert_eq!(
            (s, b["error"].as_str()),
            (403, Some("access_denied")),
            "{b}"
        );
    }
    let (s, b) = api(
        &mut p,
        &user,
        "POST",
        &format!("/v1/documents/{id}/send"),
        Some(json!({"sender_id": me["user"]["id"]})),
    );
    assert_eq!(s, 200, "{b}");
}

/// An admin naming someone who is not a member of the document's entity is told the
/// same whether another entity has the account or nobody does.
#[test]
fn a_sender_outside_the_entity_is_one_answer() {
    let (mut p, admin, _, _, _) = world();
    let other = new_entity(&mut p, "Other", json!({}));
    add_member(&mut p, "b@y.se", &other, "admin", None);
    let mut answers = Vec::new();
    for named in ["b@y.se", "nobody@y.se"] {
        let id = draft_of(&mut p, &admin);
        let (s, b) = api(
            &mut p,
            &admin,
            "POST",
            &format!("/v1/documents/{id}/send"),
            Some(json!({"sender_email": named})),
        );
        assert_eq!(
            (s, b["error"].as_str()),
            (400, Some("invalid_sender")),
            "{b}"
        );
        answers.push(b["description"].as_str().unwrap().replace(named, "X"));
    }
    assert_eq!(answers[0], answers[1]);
}

/// A token stops working once its entity is quarantined, marked for deletion or its
/// subscription is turned off: 403 `entity_unavailable`, in the error shape.
#[test]
fn tokens_of_a_closed_entity_are_refused() {
    for flag in ["quarantined", "marked_for_deletion", "subscription_active"] {
        let (mut p, admin, _, user, entity) = world();
        for t in [&admin, &user] {
            assert_eq!(api(&mut p, t, "GET", "/v1/documents", None).0, 200);
        }
        let value = flag != "subscription_active";
        let resp = handle(
            &mut p,
            &request(
                Origin::Admin,
                "PATCH",
                &format!("/admin/entities/{entity}"),
                Some(json!({ flag: value })),
            ),
        );
        assert!(resp.status < 300, "{flag}: {:?}", body(&resp));
        for t in [&admin, &user] {
            for (m, path) in [("GET", "/v1/documents"), ("GET", "/v1/users/me")] {
                let (s, b) = api(&mut p, t, m, path, None);
                assert_eq!(
                    (s, b["error"].as_str(), b["status"].as_u64()),
                    (403, Some("entity_unavailable"), Some(403)),
                    "{flag} {m} {path}: {b}"
                );
            }
        }
    }
}

/// An address that would split a mail header (`,` `;` and the like) is refused where
/// addresses come in: a recipient, a contact, a new member.
#[test]
fn addresses_that_split_a_header_are_refused() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    for bad in [
        "r,evil@y.se",
        "r;evil@y.se",
        "r@y.se,evil.se",
        "r@y.se,evil@z.se",
        "\"r\"@y.se",
        "r@y.se>",
    ] {
        let (s, b) = api(
            &mut p,
            &t,
            "POST",
            "/v1/documents",
            Some(json!({"name": "C", "recipients": [{"email": bad, "first_name": "R"}]})),
        );
        assert_eq!(s, 400, "recipient {bad}: {b}");
        let (s, b) = api(
            &mut p,
            &t,
            "POST",
            "/v1/contacts",
            Some(json!({"first_name": "R", "email": bad})),
        );
        assert_eq!(s, 400, "contact {bad}: {b}");
        let (s, b) = api(
            &mut p,
            &t,
            "POST",
            "/v1/users",
            Some(json!({"email": bad, "first_name": "R", "last_name": "S"})),
        );
        assert_eq!(s, 400, "user {bad}: {b}");
    }
}

/// `GET /v1/users/me` has the user's `thumb_url` (GetAccept's CRM client reads it):
/// empty, as esign keeps no pictures of people.
#[test]
fn me_answers_a_thumb_url() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (s, me) = api(&mut p, &t, "GET", "/v1/users/me", None);
    assert_eq!(s, 200);
    assert_eq!(me["user"]["thumb_url"], "", "{me}");
}
