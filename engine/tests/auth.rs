//! Native tests of the authentication rules (spec §5.1, §8) at their edges: which
//! entity a login selects, the lockout counter and its exact window, token spacing and
//! its `Retry-After`, the `Bearer` scheme, the SAML rule of entity switching, and when
//! a token record is purged. Each test names the boundary it pins.

mod common;

use common::*;
use esign_engine::memory::MemoryPlatform;
use esign_engine::{Job, JobOutcome, Origin, Request, Response, handle, run_job};
use serde_json::json;

const MINUTE: u64 = 60_000;

/// A call with `Authorization: <header>` exactly.
fn with_authorization(p: &mut MemoryPlatform, path: &str, header: &str) -> Response {
    let mut req: Request = request(Origin::Http, "GET", path, None);
    req.headers.retain(|(n, _)| n != "authorization");
    req.headers.push(("authorization".into(), header.into()));
    handle(p, &req)
}

/// Makes an existing user a member of another entity.
fn join(p: &mut MemoryPlatform, user: &str, entity: &str) {
    admin_post(
        p,
        "/admin/memberships",
        json!({"user_id": user, "entity_id": entity, "role": "user"}),
    );
}

#[test]
fn a_login_selects_the_default_entity_unless_one_is_named() {
    let mut p = bootstrapped();
    let admin = token(&mut p);
    let home = entity_of(&mut p, &admin);
    let other = new_entity(&mut p, "Other", json!({}));
    let bob = add_member(&mut p, "b@x.se", &home, "user", None);
    join(&mut p, &bob, &other);
    // An empty entity_id is no entity_id: the default.
    let (s, b) = auth(
        &mut p,
        json!({"email": "b@x.se", "password": "password1", "entity_id": ""}),
    );
    assert_eq!(s, 200, "{b}");
    assert_eq!(entity_of(&mut p, b["access_token"].as_str().unwrap()), home);
    // A named one the user belongs to.
    let t = login(&mut p, "b@x.se", Some(&other));
    assert_eq!(entity_of(&mut p, &t), other);
    // A named one the user does not belong to: 400, whether it exists or not.
    let stranger = new_entity(&mut p, "Stranger", json!({}));
    for entity in [stranger.as_str(), "nosuchentity0000"] {
        let (s, b) = auth(
            &mut p,
            json!({"email": "b@x.se", "password": "password1", "entity_id": entity}),
        );
        assert_eq!(
            (s, b["error"].as_str()),
            (400, Some("invalid_entity")),
            "{b}"
        );
    }
    // A default entity whose membership is gone (an operator's change): the account
    // cannot be loaded, 404, not a complaint about an entity the caller never named.
    p.data
        .remove(format!("mem/{bob}/{home}").as_bytes())
        .expect("the membership record");
    let (s, b) = auth(&mut p, json!({"email": "b@x.se", "password": "password1"}));
    assert_eq!(
        (s, b["error"].as_str()),
        (404, Some("account_not_found")),
        "{b}"
    );
}

#[test]
fn the_lock_starts_at_the_last_allowed_failure_and_lasts_exactly_its_window() {
    let mut p = bootstrapped();
    p.settings.login_max_failures = 3;
    p.settings.login_lock_secs = 120;
    // Two failures, then the right password: it works and the count starts over.
    for _ in 0..2 {
        assert_eq!(admin_auth(&mut p, "wrong").0, 400);
    }
    assert_eq!(admin_auth(&mut p, "password1").0, 200);
    for _ in 0..2 {
        assert_eq!(admin_auth(&mut p, "wrong").0, 400);
    }
    assert_eq!(
        admin_auth(&mut p, "password1").0,
        200,
        "the count was reset"
    );
    assert!(p.mails.is_empty(), "no lock yet");
    // The third failure in a row locks it.
    for _ in 0..3 {
        assert_eq!(admin_auth(&mut p, "wrong").0, 400);
    }
    assert_eq!(p.mails.len(), 1, "the owner is told once");
    let (s, b) = admin_auth(&mut p, "password1");
    assert_eq!((s, b["error"].as_str()), (400, Some("login_locked")));
    assert!(
        b["description"]
            .as_str()
            .unwrap()
            .contains("locked for 120 more seconds"),
        "{b}"
    );
    p.now_ms += 30_500;
    let (_, b) = admin_auth(&mut p, "password1");
    assert!(
        b["description"]
            .as_str()
            .unwrap()
            .contains("locked for 90 more seconds"),
        "rounded up: {b}"
    );
    // Locked until the last millisecond of the window, open at its end.
    p.now_ms += 120_000 - 30_500 - 1;
    assert_eq!(admin_auth(&mut p, "password1").1["error"], "login_locked");
    p.now_ms += 1;
    assert_eq!(admin_auth(&mut p, "password1").0, 200);
    // After a lock the count starts over too: two failures do not lock it.
    for _ in 0..2 {
        assert_eq!(admin_auth(&mut p, "wrong").0, 400);
    }
    assert_eq!(admin_auth(&mut p, "password1").0, 200);
}

#[test]
fn tokens_are_spaced_per_user_with_a_retry_after_in_whole_seconds() {
    let mut p = bootstrapped();
    p.settings.token_min_interval_ms = 2_500;
    let admin = token(&mut p);
    let home = entity_of(&mut p, &admin);
    add_member(&mut p, "b@x.se", &home, "user", None);
    p.now_ms += 10 * MINUTE;
    assert_eq!(admin_auth(&mut p, "password1").0, 200);
    // Another user inside the first one's window is not held back.
    let (s, _) = auth(&mut p, json!({"email": "b@x.se", "password": "password1"}));
    assert_eq!(s, 200);
    let retry_after = |resp: &Response| {
        resp.headers
            .iter()
            .find(|(n, _)| n == "retry-after")
            .map(|(_, v)| v.clone())
    };
    let login_resp = |p: &mut MemoryPlatform| {
        handle(
            p,
            &request(
                Origin::Http,
                "POST",
                "/v1/auth",
                Some(json!({"email": "a@x.se", "password": "password1"})),
            ),
        )
    };
    p.now_ms += 1;
    let resp = login_resp(&mut p);
    assert_eq!(resp.status, 429);
    assert_eq!(
        retry_after(&resp).as_deref(),
        Some("3"),
        "2.499 s rounds up"
    );
    p.now_ms += 1_000;
    assert_eq!(retry_after(&login_resp(&mut p)).as_deref(), Some("2"));
    // The last millisecond of the window is still inside it; its end is not.
    p.now_ms += 2_500 - 1_001 - 1;
    let resp = login_resp(&mut p);
    assert_eq!(resp.status, 429);
    assert_eq!(retry_after(&resp).as_deref(), Some("1"), "never 0");
    p.now_ms += 1;
    assert_eq!(login_resp(&mut p).status, 200);
}

#[test]
fn only_the_bearer_scheme_carries_a_token() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    assert_eq!(
        with_authorization(&mut p, "/v1/test", &format!("Bearer {t}")).status,
        200
    );
    assert_eq!(
        with_authorization(&mut p, "/v1/test", &format!("bearer  {t} ")).status,
        200,
        "the scheme is case-insensitive and the token trimmed"
    );
    for header in [
        format!("Basic {t}"),
        format!("Token {t}"),
        t.clone(),
        "Bearer ".to_string(),
        "Bearer    ".to_string(),
    ] {
        let resp = with_authorization(&mut p, "/v1/test", &header);
        assert_eq!(resp.status, 401, "{header:?}: {:?}", body(&resp));
    }
}

#[test]
fn a_saml_parent_keeps_its_users_within_itself_and_its_children() {
    let mut p = bootstrapped();
    let root = new_entity(&mut p, "Root", json!({"saml": true}));
    let child = new_entity(&mut p, "Child", json!({"parent_id": root}));
    let grandchild = new_entity(&mut p, "Grandchild", json!({"parent_id": child}));
    let outside = new_entity(&mut p, "Outside", json!({}));
    let s = add_member(&mut p, "s@x.se", &root, "user", None);
    for e in [&child, &grandchild, &outside] {
        join(&mut p, &s, e);
    }
    let refresh = |p: &mut MemoryPlatform, t: &str, e: &str| {
        api(p, t, "GET", &format!("/v1/refresh/{e}"), None)
    };
    let names = |p: &mut MemoryPlatform, t: &str| {
        let (_, me) = api(p, t, "GET", "/v1/users/me", None);
        let mut v: Vec<String> = me["entities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    // In the SAML root: itself and its children, nothing else.
    let t = login(&mut p, "s@x.se", Some(&root));
    assert_eq!(names(&mut p, &t), ["Child", "Root"]);
    assert_eq!(refresh(&mut p, &t, &child).0, 200);
    assert_eq!(refresh(&mut p, &t, &root).0, 200);
    for e in [&grandchild, &outside] {
        let (s, b) = refresh(&mut p, &t, e);
        assert_eq!(
            (s, b["error"].as_str()),
            (400, Some("saml_restricted")),
            "{b}"
        );
    }
    // In a child: its parent governs (the parent and its children).
    let t = login(&mut p, "s@x.se", Some(&child));
    assert_eq!(names(&mut p, &t), ["Child", "Root"]);
    assert_eq!(refresh(&mut p, &t, &root).0, 200);
    assert_eq!(refresh(&mut p, &t, &outside).1["error"], "saml_restricted");
    // In an entity without SAML, or under a parent without it: no restriction.
    let t = login(&mut p, "s@x.se", Some(&outside));
    assert_eq!(
        names(&mut p, &t),
        ["Child", "Grandchild", "Outside", "Root"]
    );
    assert_eq!(refresh(&mut p, &t, &grandchild).0, 200);
    let t = login(&mut p, "s@x.se", Some(&grandchild));
    assert_eq!(refresh(&mut p, &t, &outside).0, 200);
}

#[test]
fn refresh_to_an_entity_needs_an_id_a_membership_and_a_profile() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let home = entity_of(&mut p, &t);
    let other = new_entity(&mut p, "Other", json!({}));
    // Not an id, unknown, and not a member: one answer.
    for e in ["not an id!", "nosuchentity0000", other.as_str()] {
        let (s, b) = api(&mut p, &t, "GET", &format!("/v1/refresh/{e}"), None);
        assert_eq!(
            (s, b["error"].as_str()),
            (400, Some("invalid_entity")),
            "{e}: {b}"
        );
    }
    let (_, me) = api(&mut p, &t, "GET", "/v1/users/me", None);
    let user = me["user"]["id"].as_str().unwrap().to_string();
    admin_post(
        &mut p,
        "/admin/memberships",
        json!({"user_id": user, "entity_id": other, "role": "user", "profile": "none"}),
    );
    let (s, b) = api(&mut p, &t, "GET", &format!("/v1/refresh/{other}"), None);
    assert_eq!(
        (s, b["error"].as_str()),
        (404, Some("profile_not_found")),
        "{b}"
    );
    admin_post(
        &mut p,
        "/admin/memberships",
        json!({"user_id": user, "entity_id": other, "role": "user", "profile": "active"}),
    );
    let (s, b) = api(&mut p, &t, "GET", &format!("/v1/refresh/{other}"), None);
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        entity_of(&mut p, b["access_token"].as_str().unwrap()),
        other
    );
    let (s, b) = api(&mut p, &t, "GET", &format!("/v1/refresh/{home}"), None);
    assert_eq!(s, 200, "{b}");
}

#[test]
fn a_token_record_is_purged_exactly_a_week_after_it_expires() {
    let mut p = bootstrapped();
    p.settings.token_ttl_secs = 3600;
    let issued = p.now_ms;
    token(&mut p);
    let spec = p
        .jobs
        .iter()
        .rev()
        .find(|j| j.kind == "token.purge")
        .expect("a purge job")
        .clone();
    let week = 7 * 24 * 3600 * 1000;
    assert_eq!(spec.run_at_ms, issued + 3_600_000 + week, "scheduled then");
    let job = Job {
        id: "1".into(),
        kind: spec.kind,
        payload: spec.payload,
        attempt: 1,
        outcome: None,
    };
    let tokens = |p: &MemoryPlatform| p.data.keys().filter(|k| k.starts_with(b"tok/")).count();
    p.now_ms = spec.run_at_ms - 1;
    assert_eq!(run_job(&mut p, &job), JobOutcome::RetryAt(spec.run_at_ms));
    assert_eq!(tokens(&p), 1);
    p.now_ms = spec.run_at_ms;
    assert_eq!(run_job(&mut p, &job), JobOutcome::Done);
    assert_eq!(tokens(&p), 0);
}
