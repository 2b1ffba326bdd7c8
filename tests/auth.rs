//! Token authentication, black-box: spec §4.1, §5.1 and their §7/§8 rules, DESIGN.md §4.

mod common;

use common::*;
use serde_json::{Value, json};
use std::time::Duration;

const PW: &str = USER_PASSWORD;

/// The admin's right password is refused because the account is locked.
fn assert_locked(s: &Server) {
    let (status, body) = call(
        s.post("/v1/auth")
            .json(&json!({"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD})),
    );
    assert_eq!(assert_error(status, &body, 400), "login_locked");
}

/// The `Retry-After` of a 429, in seconds, asserted to be within a minute.
fn retry_after(resp: &reqwest::blocking::Response) -> u64 {
    let retry: u64 = resp.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "Retry-After {retry}");
    retry
}

#[test]
fn login_with_json_or_form_gives_a_working_token() {
    let s = Server::start(&[]);
    let resp = s.login(ADMIN_EMAIL, ADMIN_PASSWORD, None);
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().unwrap();
    let token = body["access_token"].as_str().unwrap();
    assert!(token.len() >= 43, "at least 256 bits of token: {token}");
    assert_eq!(body["expires_in"], 5_184_000);

    let (status, me) = s.get_as(token, "/v1/test");
    assert_eq!(status, 200);
    for field in [
        "user_id",
        "entity_id",
        "first_name",
        "last_name",
        "entity_name",
    ] {
        assert!(me[field].is_string(), "{field} in {me}");
    }
    assert_eq!(me["first_name"], "Admin");

    let (status, body) = call(s.post("/v1/auth").form(&[
        ("email", ADMIN_EMAIL),
        ("password", ADMIN_PASSWORD),
        ("entity_id", me["entity_id"].as_str().unwrap()),
    ]));
    assert_eq!(status, 200, "{body}");
    let (status, _) = s.get_as(body["access_token"].as_str().unwrap(), "/v1/test");
    assert_eq!(status, 200);
}

#[test]
fn unknown_email_and_wrong_password_get_the_same_400() {
    let s = Server::start(&[]);
    let (s1, b1) = call(
        s.post("/v1/auth")
            .json(&json!({"email": "nobody@example.com", "password": "whatever-1"})),
    );
    let (s2, b2) = call(
        s.post("/v1/auth")
            .json(&json!({"email": ADMIN_EMAIL, "password": "whatever-1"})),
    );
    assert_eq!(assert_error(s1, &b1, 400), "invalid_credentials");
    assert_eq!((s1, &b1), (s2, &b2));
}

#[test]
fn repeated_failures_lock_the_login_even_for_the_right_password() {
    // A lock long enough for the locked attempt to land inside it on a busy machine.
    let s = Server::start(&["--login-max-failures", "3", "--login-lock-secs", "8"]);
    for _ in 0..3 {
        let r = s.login(ADMIN_EMAIL, "wrong-password", None);
        assert_eq!(r.status(), 400);
    }
    assert_locked(&s);
    std::thread::sleep(Duration::from_millis(8500));
    assert_eq!(s.login(ADMIN_EMAIL, ADMIN_PASSWORD, None).status(), 200);
}

#[test]
fn a_lock_emails_the_account_owner_once() {
    let s = Server::start(&["--login-max-failures", "2"]);
    // A token from before the lock, for the barrier below.
    let token = s.admin_token();
    assert_eq!(s.login(ADMIN_EMAIL, "wrong-password", None).status(), 400);
    assert_eq!(s.login(ADMIN_EMAIL, "wrong-password", None).status(), 400);
    assert_locked(&s);
    let is_notice = |m: &str| m.contains("Subject: Your esign account is locked");
    s.wait_mails(1, is_notice);
    // Locked attempts do not send more notices: once a later mail on the same queue is
    // out, any second notice queued before it would be out too.
    assert_locked(&s);
    s.mail_barrier(&token);
    let notices: Vec<String> = s.mails().into_iter().filter(|m| is_notice(m)).collect();
    assert_eq!(notices.len(), 1, "one lock notice: {notices:?}");
    let text = &notices[0];
    assert!(text.contains(&format!("To: {ADMIN_EMAIL}\r\n")), "{text}");
    assert!(text.contains("after 2 failed sign-in attempts"), "{text}");
}

#[test]
fn a_success_resets_the_failure_count() {
    let s = Server::start(&["--login-max-failures", "3"]);
    for _ in 0..2 {
        assert_eq!(s.login(ADMIN_EMAIL, "wrong-password", None).status(), 400);
    }
    assert_eq!(s.login(ADMIN_EMAIL, ADMIN_PASSWORD, None).status(), 200);
    for _ in 0..2 {
        assert_eq!(s.login(ADMIN_EMAIL, "wrong-password", None).status(), 400);
    }
    assert_eq!(s.login(ADMIN_EMAIL, ADMIN_PASSWORD, None).status(), 200);
}

#[test]
fn token_requests_too_close_together_get_429_with_retry_after() {
    // A minute: the token, both 429s and the other user's login fit in it on any machine.
    let mut s = Server::start_with(&["--token-min-interval-ms", "60000"], &[]);
    s.stop();
    s.add_member("other@example.com", &[]);
    s.launch();
    let token = s.admin_token();
    for resp in [
        s.login(ADMIN_EMAIL, ADMIN_PASSWORD, None),
        s.get("/v1/refresh").bearer_auth(&token).send().unwrap(),
    ] {
        assert_eq!(resp.status(), 429);
        retry_after(&resp);
        let body: Value = resp.json().unwrap();
        assert_eq!(assert_error(429, &body, 429), "too_many_requests");
    }
    // The spacing is per user: another user gets a token inside the admin's window,
    // and the token issued before still works.
    assert_eq!(
        s.login("other@example.com", USER_PASSWORD, None).status(),
        200
    );
    assert_eq!(s.get_as(&token, "/v1/test").0, 200);
}

#[test]
fn the_default_spacing_is_one_second() {
    let s = Server::start_with(&[], &[]);
    // Two logins that both happen within one second must see a 429; on a busy machine
    // a pair may take longer, which proves nothing, so a few pairs are tried.
    let mut fast_pairs = 0;
    for _ in 0..5 {
        let started = std::time::Instant::now();
        s.admin_token();
        let second = s.login(ADMIN_EMAIL, ADMIN_PASSWORD, None).status();
        if started.elapsed() < Duration::from_millis(1000) {
            assert_eq!(second, 429, "two logins within a second");
            fast_pairs += 1;
            break;
        }
        std::thread::sleep(Duration::from_millis(1100));
    }
    assert!(
        fast_pairs > 0,
        "no two logins fitted in one second in 5 tries"
    );
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(s.login(ADMIN_EMAIL, ADMIN_PASSWORD, None).status(), 200);
}

#[test]
fn account_states_at_login() {
    let mut s = Server::start(&[]);
    s.stop();
    let home = s.first_entity();
    let pending = s.add_user("pending@example.com", &[]);
    s.add_membership(&pending, &home, &["--profile", "pending"]);
    let inactive = s.add_user("inactive@example.com", &["--active", "false"]);
    s.add_membership(&inactive, &home, &[]);
    let _homeless = s.add_user("homeless@example.com", &[]);
    let noapi = s.add_entity("No API", &["--api-access", "false"]);
    let doomed = s.add_entity("Doomed", &["--marked-for-deletion", "true"]);
    let other = s.add_entity("Other", &[]);
    let multi = s.add_user("multi@example.com", &[]);
    s.add_membership(&multi, &home, &[]);
    s.add_membership(&multi, &noapi, &[]);
    s.add_membership(&multi, &doomed, &[]);
    s.launch();

    // Pending profile: a token is issued, but every other request answers 403.
    let token = s.token("pending@example.com", PW, None);
    for path in ["/v1/test", "/v1/users/me", "/v1/refresh"] {
        let (status, body) = s.get_as(&token, path);
        assert_eq!(
            assert_error(status, &body, 403),
            "profile_pending",
            "{path}"
        );
    }

    let (status, body) = call(
        s.post("/v1/auth")
            .json(&json!({"email": "inactive@example.com", "password": PW})),
    );
    assert_eq!(assert_error(status, &body, 403), "user_inactive");
    // Wrong credentials stay 400 whatever the account's state.
    let (status, _) = call(
        s.post("/v1/auth")
            .json(&json!({"email": "inactive@example.com", "password": "nope-nope"})),
    );
    assert_eq!(status, 400);

    // Right credentials, but the account has no profile anywhere: 404.
    let (status, body) = call(
        s.post("/v1/auth")
            .json(&json!({"email": "homeless@example.com", "password": PW})),
    );
    assert_eq!(assert_error(status, &body, 404), "account_not_found");

    let login = |entity: &str| {
        call(
            s.post("/v1/auth")
                .json(&json!({"email": "multi@example.com", "password": PW, "entity_id": entity})),
        )
    };
    let (status, body) = login(&noapi);
    assert_eq!(assert_error(status, &body, 403), "no_api_access");
    let (status, body) = login(&doomed);
    assert_eq!(assert_error(status, &body, 423), "entity_locked");
    let (status, body) = login(&other);
    assert_eq!(assert_error(status, &body, 400), "invalid_entity");
    let (status, body) = login(&home);
    assert_eq!(status, 200, "{body}");
}

#[test]
fn refresh_gives_a_new_working_token_and_keeps_the_old_one() {
    let s = Server::start(&[]);
    let old = s.admin_token();
    let (status, body) = s.get_as(&old, "/v1/refresh");
    assert_eq!(status, 200, "{body}");
    let new = body["access_token"].as_str().unwrap();
    assert_ne!(new, old);
    assert_eq!(body["expires_in"], 5_184_000);
    assert_eq!(s.get_as(new, "/v1/test").0, 200);
    assert_eq!(s.get_as(&old, "/v1/test").0, 200);
}

#[test]
fn refresh_for_entity_follows_every_rule() {
    let mut s = Server::start(&[]);
    s.stop();
    // root (SAML) with a child; an unrelated entity; entities in various states.
    let root = s.add_entity("Root", &["--saml", "true"]);
    let child = s.add_entity("Child", &["--parent", &root]);
    let unrelated = s.add_entity("Unrelated", &[]);
    let free = s.add_entity("Free", &[]);
    let no_profile = s.add_entity("NoProfile", &[]);
    let unpaid = s.add_entity("Unpaid", &["--subscription-active", "false"]);
    let quarantined = s.add_entity("Quarantined", &["--quarantined", "true"]);
    let doomed = s.add_entity("Doomed", &["--marked-for-deletion", "true"]);
    let stranger = s.add_entity("Stranger", &[]);
    let u = s.add_user("u@example.com", &[]);
    s.add_membership(&u, &root, &[]);
    s.add_membership(&u, &child, &["--role", "manager"]);
    s.add_membership(&u, &unrelated, &[]);
    let v = s.add_user("v@example.com", &[]);
    s.add_membership(&v, &free, &[]);
    for e in [&no_profile, &unpaid, &quarantined, &doomed] {
        s.add_membership(
            &v,
            e,
            if *e == no_profile {
                &["--profile", "none"]
            } else {
                &[]
            },
        );
    }
    s.add_membership(&v, &unrelated, &["--profile", "pending"]);
    s.launch();

    // SAML: from the root, only the root and its children.
    let t = s.token("u@example.com", PW, Some(&root));
    let (status, body) = s.get_as(&t, &format!("/v1/refresh/{unrelated}"));
    assert_eq!(assert_error(status, &body, 400), "saml_restricted");
    let (status, body) = s.get_as(&t, &format!("/v1/refresh/{child}"));
    assert_eq!(status, 200, "{body}");
    let child_token = body["access_token"].as_str().unwrap().to_string();
    let (_, who) = s.get_as(&child_token, "/v1/test");
    assert_eq!(who["entity_id"], child);
    assert_eq!(who["entity_name"], "Child");
    // From the child, the SAML parent still governs.
    let (status, _) = s.get_as(&child_token, &format!("/v1/refresh/{unrelated}"));
    assert_eq!(status, 400);
    let (status, _) = s.get_as(&child_token, &format!("/v1/refresh/{root}"));
    assert_eq!(status, 200);
    // users/me lists only what may be selected.
    let (_, me) = s.get_as(&t, "/v1/users/me");
    let mut ids: Vec<&str> = me["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    ids.sort();
    let mut expected = vec![root.as_str(), child.as_str()];
    expected.sort();
    assert_eq!(ids, expected);
    assert_eq!(me["user"]["email"], "u@example.com");
    assert_eq!(me["user"]["role"], "user");

    let t = s.token("v@example.com", PW, Some(&free));
    let refresh = |target: &str| s.get_as(&t, &format!("/v1/refresh/{target}"));
    let (status, body) = refresh("not-an-id");
    assert_eq!(assert_error(status, &body, 400), "invalid_entity");
    let (status, body) = refresh("aaaaaaaaaaaaaaaa");
    assert_eq!(assert_error(status, &body, 400), "invalid_entity");
    // A foreign entity is answered like an unknown one.
    let (status, body) = refresh(&stranger);
    assert_eq!(assert_error(status, &body, 400), "invalid_entity");
    let (status, body) = refresh(&no_profile);
    assert_eq!(assert_error(status, &body, 404), "profile_not_found");
    for e in [&unpaid, &quarantined, &doomed] {
        let (status, body) = refresh(e);
        assert_eq!(assert_error(status, &body, 403), "entity_unavailable");
    }
    // Pending profile in the target: issued, then 403 for everything else.
    let (status, body) = refresh(&unrelated);
    assert_eq!(status, 200, "{body}");
    let (status, _) = s.get_as(body["access_token"].as_str().unwrap(), "/v1/test");
    assert_eq!(status, 403);
}

#[test]
fn missing_invalid_and_expired_tokens_get_401_with_www_authenticate() {
    // Long enough for the first request to land inside the token's life on a busy machine.
    let s = Server::start(&["--token-ttl-secs", "8"]);
    let token = s.admin_token();
    assert_eq!(s.get_as(&token, "/v1/test").0, 200);
    let cases: Vec<(&str, Option<String>)> = vec![
        ("missing", None),
        ("unknown", Some("Bearer not-a-real-token".into())),
        ("wrong scheme", Some(format!("Basic {token}"))),
    ];
    for (what, header) in cases {
        let mut req = s.get("/v1/test");
        if let Some(h) = header {
            req = req.header("authorization", h);
        }
        let resp = req.send().unwrap();
        assert_eq!(resp.status(), 401, "{what}");
        let challenge = resp.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .to_string();
        assert!(
            challenge.starts_with("Bearer ") && challenge.contains("error=\"invalid_token\""),
            "{challenge}"
        );
        let body: Value = resp.json().unwrap();
        assert_error(401, &body, 401);
    }
    std::thread::sleep(Duration::from_millis(8500));
    let (status, body) = s.get_as(&token, "/v1/test");
    assert_eq!(assert_error(status, &body, 401), "invalid_token");
    assert!(body["description"].as_str().unwrap().contains("expired"));
}

#[test]
fn revoke_ends_a_token_at_once() {
    let s = Server::start(&[]);
    let token = s.admin_token();
    let other = s.admin_token();
    let (status, body) = call(s.get("/v1/revoke").bearer_auth(&token));
    assert_eq!(status, 200, "GetAccept's status: {body}");
    assert_eq!(s.get_as(&token, "/v1/test").0, 401);
    assert_eq!(s.get_as(&other, "/v1/test").0, 200);
}

#[test]
fn a_token_is_still_valid_after_a_restart() {
    let mut s = Server::start(&[]);
    let token = s.admin_token();
    let status = s.stop();
    assert!(
        status.success(),
        "graceful shutdown exits 0, got {status:?}"
    );
    s.launch();
    let (status, body) = s.get_as(&token, "/v1/test");
    assert_eq!(status, 200, "{body}");
}

#[test]
fn an_answered_write_survives_sigkill() {
    let mut s = Server::start(&["--login-max-failures", "3"]);
    let token = s.admin_token();
    for _ in 0..3 {
        assert_eq!(s.login(ADMIN_EMAIL, "wrong-password", None).status(), 400);
    }
    s.kill();
    s.launch();
    // Both the token and the lock were answered before the kill: both must be there.
    assert_eq!(s.get_as(&token, "/v1/test").0, 200);
    assert_locked(&s);
}

#[test]
fn an_engine_trap_mid_call_leaves_no_partial_write() {
    let s = Server::start(&["--login-max-failures", "5"]);
    for _ in 0..4 {
        assert_eq!(s.login(ADMIN_EMAIL, "wrong-password", None).status(), 400);
    }
    // The right password resets the failure count (first write), then the engine traps
    // on its second write: the call must roll back whole, reset included.
    let (status, body) = call(
        s.post("/v1/auth")
            .header("x-esign-test-fault", "trap-on-put=2")
            .json(&json!({"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD})),
    );
    assert_eq!(assert_error(status, &body, 500), "internal_error");
    assert!(
        body["trace_id"].as_str().is_some_and(|t| !t.is_empty()),
        "{body}"
    );
    // Four failures are still on record: one more locks the account.
    assert_eq!(s.login(ADMIN_EMAIL, "wrong-password", None).status(), 400);
    assert_locked(&s);
}

#[test]
fn concurrent_failed_logins_never_lose_a_count() {
    const N: usize = 20;
    let s = Server::start(&["--login-max-failures", &N.to_string()]);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..N - 1)
            .map(|_| {
                scope.spawn(|| {
                    s.login(ADMIN_EMAIL, "wrong-password", None)
                        .status()
                        .as_u16()
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), 400);
        }
    });
    // N-1 failures counted: the N-th locks, so the right password then fails.
    assert_eq!(s.login(ADMIN_EMAIL, "wrong-password", None).status(), 400);
    assert_locked(&s);
}

#[test]
fn first_run_without_a_password_prints_a_generated_one_once() {
    let mut s = Server::start_with(
        &["--token-min-interval-ms", "0"],
        &[("ESIGN_ADMIN_PASSWORD", "")],
    );
    let line = s
        .banner
        .iter()
        .find_map(|l| l.strip_prefix("admin password (shown only now): "))
        .map(str::to_string);
    let password = line.unwrap_or_else(|| panic!("no password in {:?}", s.banner));
    assert!(password.len() >= 16);
    s.token(ADMIN_EMAIL, &password, None);
    s.restart();
    assert!(
        !s.banner.iter().any(|l| l.contains("password")),
        "{:?}",
        s.banner
    );
    s.token(ADMIN_EMAIL, &password, None);
}

#[test]
fn the_admin_cli_works_while_the_server_runs_through_its_private_channel() {
    let mut s = Server::start(&[]);
    // A running server answers admin commands on a socket only its user may open.
    let socket = s.data_dir.join("admin.sock");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{socket:?}");
    }
    let (ok, stdout, stderr) = s.admin_raw(&["entity", "list"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("\"id\""), "{stdout}");
    let user = s.add_member("live@example.com", &[]);
    assert!(!user.is_empty());
    assert_eq!(
        s.login("live@example.com", PW, None).status(),
        200,
        "usable at once"
    );
    // Its errors are the engine's, as offline.
    let (ok, _, stderr) = s.admin_raw(&[
        "user",
        "add",
        "--email",
        "live@example.com",
        "--password",
        PW,
    ]);
    assert!(!ok);
    assert!(!stderr.trim().is_empty());
    // The admin routes stay unreachable over HTTP.
    let t = s.admin_token();
    let (status, _) = call(
        s.post("/admin/users")
            .bearer_auth(&t)
            .json(&json!({"email": "web@example.com", "password": PW})),
    );
    assert_eq!(status, 404);
    // Stopped, the socket is gone and the CLI opens the store itself.
    s.stop();
    assert!(!socket.exists(), "the socket goes with the server");
    let (ok, stdout, stderr) = s.admin_raw(&["user", "list"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("live@example.com"), "{stdout}");
    // After a SIGKILL the socket stays behind, unanswered: the CLI still works and the
    // next server takes the path over.
    s.launch();
    s.kill();
    let (ok, _, stderr) = s.admin_raw(&["user", "list"]);
    assert!(ok, "{stderr}");
    s.launch();
    let (ok, _, stderr) = s.admin_raw(&["entity", "list"]);
    assert!(ok, "{stderr}");
}

#[test]
fn admin_cli_validates_its_input() {
    let mut s = Server::start(&[]);
    s.stop();
    for args in [
        vec!["user", "add", "--email", "not-an-email", "--password", PW],
        vec![
            "user",
            "add",
            "--email",
            "short@example.com",
            "--password",
            "short",
        ],
        vec!["user", "add", "--email", ADMIN_EMAIL, "--password", PW],
        vec!["member", "add", "--user", "nobody", "--entity", "nothing"],
    ] {
        let (ok, _, stderr) = s.admin_raw(&args);
        assert!(!ok, "{args:?} should fail");
        assert!(!stderr.trim().is_empty());
    }
}

#[test]
fn tokens_stop_when_rights_change_and_a_revoke_survives_a_restart() {
    let mut s = Server::start(&[]);
    let admin = s.admin_token();
    s.stop();
    let home = s.first_entity();
    let api = s.add_entity("With API", &[]);
    let [alice, bob, carl, dora] = ["alice", "bob", "carl", "dora"].map(|name| {
        let id = s.add_user(&format!("{name}@example.com"), &[]);
        s.add_membership(&id, if name == "carl" { &api } else { &home }, &[]);
        id
    });
    s.launch();
    let token = |name: &str| s.token(&format!("{name}@example.com"), PW, None);
    let (ta, tb, tc, td) = (token("alice"), token("bob"), token("carl"), token("dora"));
    for t in [&ta, &tb, &tc, &td] {
        assert_eq!(s.get_as(t, "/v1/test").0, 200);
    }
    // Removed from the entity while the server runs: the next request is refused.
    assert_eq!(s.delete_as(&admin, &format!("/v1/users/{dora}")).0, 204);
    // Her only entity: the account is deactivated with the membership.
    let (status, body) = s.get_as(&td, "/v1/test");
    assert_eq!(assert_error(status, &body, 403), "user_inactive", "removed");
    // A revoked token stays revoked after a restart.
    assert_eq!(call(s.get("/v1/revoke").bearer_auth(&tb)).0, 200);
    s.stop();
    // Deactivated, and API access turned off, while the server is down.
    s.admin(&["user", "set", &alice, "--active", "false"]);
    s.admin(&["entity", "set", &api, "--api-access", "false"]);
    s.launch();
    let (status, body) = s.get_as(&ta, "/v1/test");
    assert_eq!(
        assert_error(status, &body, 403),
        "user_inactive",
        "deactivated"
    );
    let (status, body) = s.get_as(&tc, "/v1/test");
    assert_eq!(
        assert_error(status, &body, 403),
        "no_api_access",
        "API access off"
    );
    assert_eq!(
        s.get_as(&tb, "/v1/test").0,
        401,
        "revoked before the restart"
    );
    let (status, body) = s.get_as(&td, "/v1/test");
    assert_eq!(assert_error(status, &body, 403), "user_inactive", "removed");
    // Nobody else was touched.
    assert_eq!(s.get_as(&admin, "/v1/test").0, 200);
    let _ = (bob, carl);
}

/// A client whose connections come from `source` (another loopback address).
fn client_from(source: &str) -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .local_address(source.parse::<std::net::IpAddr>().unwrap())
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

fn login_from(s: &Server, c: &reqwest::blocking::Client, email: &str, pw: &str) -> (u16, Value) {
    call(
        c.post(s.url("/v1/auth"))
            .json(&json!({"email": email, "password": pw})),
    )
}

#[test]
fn known_and_unknown_emails_get_the_same_answers_and_are_locked_alike() {
    let s = Server::start(&["--login-max-failures", "3", "--login-lock-secs", "60"]);
    let answers = |email: &str| -> Vec<(u16, Value)> {
        (0..5)
            .map(|_| {
                call(
                    s.post("/v1/auth")
                        .json(&json!({"email": email, "password": "wrong-1"})),
                )
            })
            .collect()
    };
    let known = answers(ADMIN_EMAIL);
    let unknown = answers("nobody@example.com");
    let codes = |a: &[(u16, Value)]| -> Vec<String> {
        a.iter()
            .map(|(st, b)| format!("{st} {}", b["error"]))
            .collect()
    };
    let expected = [
        "invalid_credentials",
        "invalid_credentials",
        "invalid_credentials",
    ]
    .into_iter()
    .chain(["login_locked", "login_locked"])
    .map(|c| format!("400 \"{c}\""))
    .collect::<Vec<_>>();
    assert_eq!(codes(&known), expected);
    assert_eq!(codes(&known), codes(&unknown));
}

#[test]
fn a_lock_keeps_out_its_source_and_not_the_owner_elsewhere() {
    // Behind a proxy the source is the last X-Forwarded-For entry.
    let s = Server::start(&[
        "--login-max-failures",
        "3",
        "--login-lock-secs",
        "60",
        "--behind-proxy",
    ]);
    let via = |from: &str, pw: &str| {
        call(
            s.post("/v1/auth")
                .header("x-forwarded-for", format!("203.0.113.9, {from}"))
                .json(&json!({"email": ADMIN_EMAIL, "password": pw})),
        )
    };
    for _ in 0..3 {
        assert_eq!(via("198.51.100.1", "wrong-1").0, 400);
    }
    let (status, body) = via("198.51.100.1", ADMIN_PASSWORD);
    assert_eq!(assert_error(status, &body, 400), "login_locked");
    // The right password from another address still signs in.
    let (status, body) = via("198.51.100.2", ADMIN_PASSWORD);
    assert_eq!(status, 200, "{body}");

    // Without --behind-proxy the header is the client's say: the peer counts.
    let plain = Server::start(&["--login-max-failures", "3", "--login-lock-secs", "60"]);
    for n in 0..3 {
        let (status, _) = call(
            plain
                .post("/v1/auth")
                .header("x-forwarded-for", format!("198.51.100.{n}"))
                .json(&json!({"email": ADMIN_EMAIL, "password": "wrong-1"})),
        );
        assert_eq!(status, 400);
    }
    let (status, body) = login_from(
        &plain,
        &client_from("127.0.0.1"),
        ADMIN_EMAIL,
        ADMIN_PASSWORD,
    );
    assert_eq!(assert_error(status, &body, 400), "login_locked");
    let (status, body) = login_from(
        &plain,
        &client_from("127.0.0.2"),
        ADMIN_EMAIL,
        ADMIN_PASSWORD,
    );
    assert_eq!(status, 200, "another source signs in: {body}");
}

#[test]
fn failed_logins_from_one_address_are_throttled_with_429() {
    let s = Server::start(&[]);
    let attacker = client_from("127.0.0.3");
    let mut statuses = Vec::new();
    for n in 0..31 {
        let (status, body) = login_from(&s, &attacker, &format!("guess{n}@example.com"), "wrong-1");
        statuses.push(status);
        if status == 429 {
            assert_eq!(body["error"], "too_many_requests", "{body}");
        }
    }
    assert!(statuses[..30].iter().all(|&st| st == 400), "{statuses:?}");
    assert_eq!(
        statuses[30], 429,
        "the 31st failure in a minute: {statuses:?}"
    );
    let resp = attacker
        .post(s.url("/v1/auth"))
        .json(&json!({"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD}))
        .send()
        .unwrap();
    assert_eq!(resp.status(), 429, "refused before the password is checked");
    retry_after(&resp);
    // Another address is not slowed down.
    let (status, body) = login_from(&s, &client_from("127.0.0.4"), ADMIN_EMAIL, ADMIN_PASSWORD);
    assert_eq!(status, 200, "{body}");
}

#[test]
fn token_answers_are_never_cached() {
    let s = Server::start(&[]);
    let resp = s.login(ADMIN_EMAIL, ADMIN_PASSWORD, None);
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["cache-control"], "no-store");
    let token = resp.json::<Value>().unwrap()["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    std::thread::sleep(Duration::from_millis(1100)); // the default token spacing
    let resp = s.get("/v1/refresh").bearer_auth(&token).send().unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["cache-control"], "no-store");
}

#[test]
fn the_admin_cli_reads_a_password_from_standard_input_or_a_file() {
    let mut s = Server::start(&[]);
    s.stop();
    let dir = fresh_dir("password");
    let file = dir.join("pw.txt");
    std::fs::write(&file, "from-a-file-pw-1\n").unwrap();
    let (ok, out, err) = s.admin_raw(&[
        "user",
        "add",
        "--email",
        "file@example.com",
        "--password-file",
        file.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let entity = s.first_entity();
    let member = |out: &str| {
        let user: Value = serde_json::from_str(out).unwrap();
        s.add_membership(user["id"].as_str().unwrap(), &entity, &[]);
    };
    member(&out);
    std::fs::write(&file, "from-stdin-pw-1\n").unwrap();
    let mut cmd = std::process::Command::new(esign_bin());
    cmd.args(["admin", "--data-dir"])
        .arg(&*s.data_dir)
        .arg("--compile-cache")
        .arg(compile_cache())
        .args([
            "user",
            "add",
            "--email",
            "stdin@example.com",
            "--password-stdin",
        ])
        .env("ESIGN_LOG", "warn")
        .envs(s.env.iter().filter(|(k, _)| k == "ESIGN_STORE").cloned())
        .stdin(std::fs::File::open(&file).unwrap());
    let out = output_within(&mut cmd, 120);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    member(&String::from_utf8_lossy(&out.stdout));
    // Both given together is refused.
    let (ok, _, _) = s.admin_raw(&[
        "user",
        "add",
        "--email",
        "both@example.com",
        "--password",
        PW,
        "--password-file",
        file.to_str().unwrap(),
    ]);
    assert!(!ok);
    s.launch();
    assert_eq!(
        s.login("file@example.com", "from-a-file-pw-1", None)
            .status(),
        200
    );
    assert_eq!(
        s.login("stdin@example.com", "from-stdin-pw-1", None)
            .status(),
        200
    );
}
