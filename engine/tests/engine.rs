//! Native tests of the engine through its public entry points, on the in-memory platform.

mod common;

use common::*;
use esign_engine::memory::MemoryPlatform;
use esign_engine::{Job, JobOutcome, Origin, handle, run_job};
use serde_json::json;

#[test]
fn login_then_test_returns_the_user() {
    let mut p = bootstrapped();
    let (status, answer) = admin_auth(&mut p, "password1");
    assert_eq!(status, 200);
    let token = answer["access_token"].as_str().unwrap().to_string();
    assert_eq!(answer["expires_in"], 5_184_000);
    let mut req = request(Origin::Http, "GET", "/v1/test", None);
    req.headers
        .push(("authorization".into(), format!("Bearer {token}")));
    let resp = handle(&mut p, &req);
    assert_eq!(resp.status, 200);
    assert_eq!(body(&resp)["first_name"], "Admin");
    assert_eq!(body(&resp)["entity_name"], "Default");
}

#[test]
fn token_is_stored_only_as_a_hash() {
    let mut p = bootstrapped();
    let token = admin_auth(&mut p, "password1").1["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(token.len() >= 43, "at least 256 bits");
    let needle = token.as_bytes();
    for (k, v) in &p.data {
        assert!(!k.windows(needle.len()).any(|w| w == needle));
        assert!(!v.windows(needle.len()).any(|w| w == needle));
    }
}

#[test]
fn lock_after_five_failures_even_for_the_right_password() {
    let mut p = bootstrapped();
    for _ in 0..5 {
        assert_eq!(admin_auth(&mut p, "wrong-password").0, 400);
    }
    let (status, answer) = admin_auth(&mut p, "password1");
    assert_eq!(status, 400);
    assert_eq!(answer["error"], "login_locked");
    assert_eq!(p.mails.len(), 1, "one notice per lock");
    assert_eq!(p.mails[0].to, "a@x.se");
    assert!(p.mails[0].body.contains("locked for 15 minutes"));
    p.now_ms += 15 * 60 * 1000;
    assert_eq!(admin_auth(&mut p, "password1").0, 200);
}

#[test]
fn unknown_route_and_wrong_method() {
    let mut p = bootstrapped();
    let resp = handle(&mut p, &request(Origin::Http, "GET", "/v1/nope", None));
    assert_eq!(resp.status, 404);
    assert_eq!(body(&resp)["status"], 404);
    let resp = handle(&mut p, &request(Origin::Http, "GET", "/v1/auth", None));
    assert_eq!(resp.status, 405);
    assert!(
        resp.headers
            .iter()
            .any(|(n, v)| n == "allow" && v == "POST")
    );
}

#[test]
fn admin_routes_are_not_reachable_over_http() {
    let mut p = bootstrapped();
    let resp = handle(&mut p, &request(Origin::Http, "GET", "/admin/users", None));
    assert_eq!(resp.status, 404);
}

#[test]
fn purge_job_forgets_expired_tokens_only() {
    let mut p = bootstrapped();
    admin_auth(&mut p, "password1");
    let job = p.jobs.last().unwrap().clone();
    // A second token, issued a day later: still live when the first one is purged.
    p.now_ms += 24 * 3600 * 1000;
    admin_auth(&mut p, "password1");
    let live = p.jobs.last().unwrap().clone();
    let job = Job {
        id: "1".into(),
        kind: job.kind,
        payload: job.payload,
        attempt: 1,
        outcome: None,
    };
    let tokens = |p: &MemoryPlatform| p.data.keys().filter(|k| k.starts_with(b"tok/")).count();
    assert!(matches!(run_job(&mut p, &job), JobOutcome::RetryAt(_)));
    assert_eq!(tokens(&p), 2);
    p.now_ms += 5_184_000 * 1000 - 24 * 3600 * 1000;
    assert!(
        matches!(run_job(&mut p, &job), JobOutcome::RetryAt(_)),
        "kept a week after expiry"
    );
    assert_eq!(tokens(&p), 2);
    // Seven and a half days after the first expired, six and a half after the second:
    // only the first is past its week.
    p.now_ms += (7 * 24 + 12) * 3600 * 1000;
    assert_eq!(run_job(&mut p, &job), JobOutcome::Done);
    assert_eq!(
        tokens(&p),
        1,
        "the live token survives the purge of the other"
    );
    let live = Job {
        id: "2".into(),
        kind: live.kind,
        payload: live.payload,
        attempt: 1,
        outcome: None,
    };
    assert!(matches!(run_job(&mut p, &live), JobOutcome::RetryAt(_)));
    assert_eq!(tokens(&p), 1);
}

#[test]
fn every_route_reaches_its_handler_and_answers_405_with_its_allow_list_to_another_method() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let mut wrong = Vec::new();
    for (pattern, methods) in &esign_engine::router::templates() {
        if pattern.starts_with("/.well-known") || !pattern.starts_with("/v1") {
            continue;
        }
        let path = sample(pattern);
        for method in ["GET", "POST", "PUT", "DELETE", "PATCH"] {
            if methods.contains(&method) && *pattern == "/v1/revoke" {
                continue; // would end the token the rest of the test uses
            }
            let mut req = request(Origin::Http, method, &path, None);
            req.headers
                .push(("authorization".into(), format!("Bearer {t}")));
            let resp = handle(&mut p, &req);
            if methods.contains(&method) {
                // Its handler answers (a 404 names what is missing), not the router.
                let b = body(&resp);
                if resp.status == 405 || b["error"] == "not_found" {
                    wrong.push(format!("{method} {path} is not routed: {b}"));
                }
                continue;
            }
            let allow = resp
                .headers
                .iter()
                .find(|(n, _)| n == "allow")
                .map(|(_, v)| v.clone());
            if resp.status != 405 || allow.as_deref() != Some(methods.join(", ").as_str()) {
                wrong.push(format!("{method} {path}: {} allow {allow:?}", resp.status));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    // A literal segment wins over an id: `latest` is the newest document (on a fresh
    // platform: the calls above created documents).
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (s, doc) = api(
        &mut p,
        &t,
        "POST",
        "/v1/documents",
        Some(json!({"name": "n"})),
    );
    assert_eq!(s, 200, "{doc}");
    let (s, latest) = api(&mut p, &t, "GET", "/v1/documents/latest", None);
    assert_eq!((s, &latest["id"]), (200, &doc["id"]), "{latest}");
}

#[test]
fn the_admin_routes_answer_404_and_405_from_their_table_and_never_over_http() {
    let mut p = bootstrapped();
    let admin = |p: &mut MemoryPlatform, method: &str, path: &str| {
        let resp = handle(p, &request(Origin::Admin, method, path, None));
        let allow = resp
            .headers
            .iter()
            .find(|(n, _)| n == "allow")
            .map(|(_, v)| v.clone());
        (resp.status, allow, body(&resp))
    };
    let (s, _, b) = admin(&mut p, "GET", "/admin/entities");
    assert_eq!(s, 200, "{b}");
    assert_eq!(b.as_array().map(Vec::len), Some(1), "{b}");
    for (method, path, allow) in [
        ("GET", "/admin/bootstrap", "POST"),
        ("DELETE", "/admin/entities", "GET, POST"),
        ("GET", "/admin/users/u1", "PATCH"),
        ("GET", "/admin/check/scan", "POST"),
        ("PUT", "/admin/signup", "POST"),
    ] {
        let (s, a, b) = admin(&mut p, method, path);
        assert_eq!(
            (s, a.as_deref()),
            (405, Some(allow)),
            "{method} {path}: {b}"
        );
    }
    for path in ["/admin/nothing", "/admin/entities/e/x", "/admin"] {
        let (s, _, b) = admin(&mut p, "GET", path);
        assert_eq!((s, &b["error"]), (404, &json!("not_found")), "{path}: {b}");
    }
    // Over HTTP the same path is no route at all.
    let resp = handle(
        &mut p,
        &request(Origin::Http, "GET", "/admin/entities", None),
    );
    assert_eq!(resp.status, 404, "{:?}", body(&resp));
}
