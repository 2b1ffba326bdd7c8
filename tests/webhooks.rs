//! Webhooks, black-box: the subscriptions API, the 19 events (the recipient acts
//! through the recipient API), signed deliveries to a real HTTPS receiver on loopback,
//! retries, 410, redirects, dead letters, scoping, tenant isolation, and a crash.

mod common;

use common::*;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::time::Duration;

/// Checks the Standard Webhooks headers of a delivery against `secret`.
fn assert_signed(req: &Incoming, secret: &str) {
    let id = &req.headers["webhook-id"];
    let ts: u64 = req.headers["webhook-timestamp"].parse().unwrap();
    let now = chrono::Utc::now().timestamp() as u64;
    assert!(now.abs_diff(ts) < 60, "timestamp {ts} vs now {now}");
    let body = String::from_utf8(req.body.clone()).unwrap();
    let expected = esign_host::webhooks::sign(secret, id, ts, &body);
    assert_eq!(
        req.headers["webhook-signature"], expected,
        "signature of {id}"
    );
    assert_eq!(req.headers["content-type"], "application/json");
}

/// A sent document with `recipients`; returns (id, detail).
fn sent_doc(s: &Server, t: &str, recipients: Value, extra: Value) -> (String, Value) {
    let mut body = json!({"name": "Hooked", "value": 42, "recipients": recipients});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let doc = s.create_doc(t, &body);
    let id = doc["id"].as_str().unwrap().to_string();
    let (status, b) = s.post_json(t, &format!("/v1/documents/{id}/send"), &json!({}));
    assert_eq!(status, 200, "{b}");
    s.wait_status(t, &id, "sent");
    let (_, d) = s.get_as(t, &format!("/v1/documents/{id}"));
    (id, d)
}

#[test]
fn the_subscriptions_api() {
    let rx = HttpsServer::start(|_| Canned::status(200));
    let mut s = server_for(&rx, "1s");
    let t = s.admin_token();
    let (status, events) = s.get_as(&t, "/v1/subscriptions/events");
    assert_eq!(status, 200);
    let names: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 19);
    for e in [
        "document.created",
        "document.partially_signed",
        "document.hardbounced",
        "comment.created",
    ] {
        assert!(names.contains(&e), "{e}");
    }
    let (status, body) = s.post_json(
        &t,
        "/v1/subscriptions",
        &json!({"event": "document.sent", "target_url": "http://example.com/h"}),
    );
    assert_eq!(assert_error(status, &body, 400), "invalid_target_url");
    let (status, body) = s.post_json(
        &t,
        "/v1/subscriptions",
        &json!({"event": "document.exploded", "target_url": rx.url("/h")}),
    );
    assert_eq!(assert_error(status, &body, 400), "invalid_event");
    let (status, body) = s.post_json(&t, "/v1/subscriptions", &json!({"event": "document.sent"}));
    assert_eq!(assert_error(status, &body, 400), "missing_field");
    let (status, body) = s.post_json(&t, "/v1/subscriptions",
        &json!({"event": "document.sent", "target_url": rx.url("/h"), "notification_email": "nope"}));
    assert_eq!(assert_error(status, &body, 400), "invalid_field");
    let (id, secret) = subscribe(
        &s,
        &t,
        "document.sent",
        &rx.url("/h"),
        json!({"payload": "hello", "global": true}),
    );
    assert!(secret.starts_with("whsec_") && secret.len() > 30);
    // The secret is shown once.
    let (status, one) = s.get_as(&t, &format!("/v1/subscriptions/{id}"));
    assert_eq!(status, 200);
    assert!(one.get("secret").is_none(), "{one}");
    assert_eq!(one["payload"], "hello");
    assert_eq!(one["global"], true);
    assert_eq!(
        (&one["status"], &one["state"]),
        (&json!(1), &json!("active"))
    );
    let (_, all) = s.get_as(&t, "/v1/subscriptions");
    assert_eq!(all.as_array().unwrap().len(), 1);
    assert!(all[0].get("secret").is_none());
    // Rotating gives a new secret.
    let (status, rotated) = s.post_json(&t, &format!("/v1/subscriptions/{id}/secret"), &json!({}));
    assert_eq!(status, 200);
    assert_ne!(rotated["secret"], secret);
    // Only admins subscribe globally.
    s.stop();
    s.add_member("user@example.com", &[]);
    s.launch();
    let u = s.token("user@example.com", USER_PASSWORD, None);
    let (status, body) = s.post_json(
        &u,
        "/v1/subscriptions",
        &json!({"event": "document.sent", "target_url": rx.url("/u"), "global": true}),
    );
    assert_eq!(assert_error(status, &body, 403), "access_denied");
    assert_eq!(
        s.get_as(&u, &format!("/v1/subscriptions/{id}")).0,
        404,
        "not the user's"
    );
    // Delete.
    assert_eq!(s.delete_as(&t, &format!("/v1/subscriptions/{id}")).0, 204);
    assert_eq!(s.get_as(&t, &format!("/v1/subscriptions/{id}")).0, 404);
    let (status, _) = call(s.post("/v1/subscriptions").json(&json!({})));
    assert_eq!(status, 401);
}

#[test]
fn deliveries_are_signed_and_carry_the_payload_of_their_event() {
    let rx = HttpsServer::start(|_| Canned::status(204));
    let s = server_for(&rx, "1s");
    let t = s.admin_token();
    let mut secrets = std::collections::HashMap::new();
    for e in [
        "document.created",
        "document.sent",
        "document.viewed",
        "document.reviewed",
        "comment.created",
        "document.commented",
        "document.partially_signed",
        "document.signed",
        "document.downloaded",
        "document.printed",
        "document.lost",
    ] {
        let (_, secret) = subscribe(
            &s,
            &t,
            e,
            &rx.url(&format!("/{e}")),
            json!({"payload": format!("echo {e}")}),
        );
        secrets.insert(e, secret);
    }
    let (id, d) = sent_doc(
        &s,
        &t,
        json!([signer("one@example.com"), signer("two@example.com")]),
        json!({}),
    );
    let (one, two) = (link(&d, 0), link(&d, 1));
    for (act, body) in [
        ("view", json!({})),
        ("review", json!({})),
        ("comment", json!({"text": "Nice"})),
        (
            "sign",
            json!({"signature": {"type": "typed", "name": "Sam Signer"}}),
        ),
    ] {
        let (status, b) = recipient_post(&s, &one, act, body);
        assert_eq!(status, 200, "{act}: {b}");
    }
    // A recipient cannot choose the recorded address (CLIENT_IP is for the sender's server).
    let (status, b) = call(
        s.post(&format!("/v1/recipient/{two}/sign"))
            .header("CLIENT_IP", "203.0.113.9")
            .json(&json!({})),
    );
    assert_eq!(status, 200, "{b}");
    assert_eq!(b["status"], "signed");
    // The sealed file is handed out once it is sealed (409 `sealing` until then).
    wait_until(60, "the sealed PDF", || {
        let pdf = s
            .get(&format!("/v1/recipient/{two}/download"))
            .send()
            .unwrap();
        match pdf.status().as_u16() {
            200 => Some(()),
            409 => None,
            other => panic!("download answered {other}"),
        }
    });
    assert_eq!(recipient_post(&s, &two, "print", json!({})).0, 200);
    assert_eq!(
        call(s.post(&format!("/v1/documents/{id}/lost")).bearer_auth(&t)).0,
        204
    );

    let get = |e: &str, n: usize| {
        let got = rx.wait_for(&format!("/{e}"), n, 20);
        for r in &got {
            assert_signed(r, &secrets[e]);
            let b = r.json();
            assert_eq!(b["event"], e);
            let (ty, action) = e.split_once('.').unwrap();
            assert_eq!(
                (b["event_type"].as_str(), b["event_action"].as_str()),
                (Some(ty), Some(action))
            );
            assert!(b["subscription_id"].is_string());
            assert_eq!(
                b["payload"],
                format!("echo {e}"),
                "the subscription's payload is echoed"
            );
            assert_eq!(r.headers["webhook-id"], b["event_id"].as_str().unwrap());
        }
        got.last().unwrap().json()
    };
    let sent = get("document.sent", 1);
    for k in ["id", "name", "status", "value", "send_date"] {
        assert!(!sent["document"][k].is_null(), "document.sent {k}: {sent}");
    }
    assert_eq!(sent["document"]["status"], "sent");
    let viewed = get("document.viewed", 1);
    for k in ["fullname", "email", "role", "order_num"] {
        assert!(viewed["recipient"][k].is_string(), "viewed {k}: {viewed}");
    }
    assert_eq!(viewed["document"]["id"], id);
    get("document.reviewed", 1);
    let comment = get("comment.created", 1);
    for k in ["comment_id", "created_by", "created_at", "text"] {
        assert!(comment["event_meta"][k].is_string(), "{k}: {comment}");
    }
    assert_eq!(comment["event_meta"]["text"], "Nice");
    get("document.commented", 1);
    let partial = get("document.partially_signed", 1);
    assert_eq!(partial["recipient"]["email"], "one@example.com");
    let signed = get("document.signed", 1);
    assert_eq!(signed["document"]["status"], "signed");
    assert!(signed["document"]["sign_date"].is_string());
    let r = &signed["recipient"];
    for k in [
        "fullname",
        "email",
        "role",
        "status",
        "order_num",
        "ip_address",
    ] {
        assert!(r[k].is_string(), "signed recipient {k}: {signed}");
    }
    assert!(r["signing_methods"].is_array());
    assert_eq!(signed["recipients"].as_array().unwrap().len(), 2);
    assert!(signed["recipients"][0]["fullname"].is_string());
    assert_eq!(
        r["ip_address"], "127.0.0.1",
        "the peer's address, not CLIENT_IP"
    );
    // No identity check was set: the only method is the signature itself.
    let first_signer = rx.received("/document.partially_signed")[0].json();
    assert_eq!(
        first_signer["recipient"]["signing_methods"],
        json!([{"type": "signature", "signed_at": first_signer["recipient"]["signing_methods"][0]["signed_at"], "verified_name": ""}])
    );
    let down = get("document.downloaded", 1);
    for k in ["id", "status", "download_url"] {
        assert!(down["document"][k].is_string(), "downloaded {k}: {down}");
    }
    for k in ["fullname", "email", "role"] {
        assert!(down["recipient"][k].is_string());
    }
    get("document.printed", 1);
    get("document.lost", 1);
    get("document.created", 1);
    // Each event exactly once: no second delivery of any of them. Barrier: a later
    // event's delivery; a second delivery of any earlier one would have come first.
    s.create_doc(&t, &json!({"name": "barrier"}));
    rx.wait_for("/document.created", 2, 20);
    for e in [
        "document.sent",
        "document.viewed",
        "document.signed",
        "document.lost",
    ] {
        assert_eq!(rx.received(&format!("/{e}")).len(), 1, "{e}");
    }
    // The document's state followed the acts.
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    assert_eq!(d["status"], "lost");
    assert_eq!(d["recipients"][0]["status"], "signed");
}

#[test]
fn recipient_acts_move_statuses_and_respect_roles_and_order() {
    let rx = HttpsServer::start(|_| Canned::status(200));
    let s = server_for(&rx, "1s");
    let t = s.admin_token();
    for e in ["document.approved", "document.rejected", "document.signed"] {
        subscribe(&s, &t, e, &rx.url(&format!("/{e}")), json!({}));
    }
    // Signing order: the approver (1) first, then the signer (2).
    let (id, d) = sent_doc(
        &s,
        &t,
        json!([
            {"email": "boss@example.com", "role": "approver", "order_num": 1},
            {"email": "client@example.com", "role": "signer", "order_num": 2},
            {"email": "cc@example.com", "role": "cc", "order_num": 3},
        ]),
        json!({"is_signing_order": true}),
    );
    assert_eq!(
        d["recipients"][1]["status"], "added",
        "the signer waits its turn"
    );
    let (boss, client, cc) = (link(&d, 0), link(&d, 1), link(&d, 2));
    // The mailed link answers the recipient view (until the signing page exists).
    let mailed = d["recipients"][0]["document_url"].as_str().unwrap();
    assert!(mailed.starts_with(&format!("{}/s/", s.base)), "{mailed}");
    let (status, view) = call(common::client().get(mailed));
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["recipient"]["email"], "boss@example.com");
    let (status, body) = recipient_post(&s, &client, "sign", json!({}));
    assert_eq!(
        assert_error(status, &body, 403),
        "not_allowed",
        "not its turn"
    );
    let (status, body) = recipient_post(&s, &boss, "sign", json!({}));
    assert_eq!(
        assert_error(status, &body, 403),
        "not_allowed",
        "an approver approves"
    );
    let (status, body) = recipient_post(&s, &cc, "reject", json!({}));
    assert_eq!(assert_error(status, &body, 403), "not_allowed");
    assert_eq!(recipient_post(&s, &boss, "approve", json!({})).0, 200);
    rx.wait_for("/document.approved", 1, 20);
    s.wait_mails(1, |m| m.contains("To: client@example.com"));
    let (status, body) = recipient_post(&s, &boss, "approve", json!({}));
    assert_eq!(assert_error(status, &body, 400), "invalid_status", "once");
    assert_eq!(recipient_post(&s, &client, "sign", json!({})).0, 200);
    s.wait_status(&t, &id, "signed");
    rx.wait_for("/document.signed", 1, 20);
    let (status, body) = recipient_post(&s, &client, "reject", json!({}));
    assert_eq!(assert_error(status, &body, 400), "invalid_status");

    // Rejection.
    let (id, d) = sent_doc(&s, &t, json!([signer("no@example.com")]), json!({}));
    let (status, _) = recipient_post(
        &s,
        &link(&d, 0),
        "reject",
        json!({"reason": "Too expensive"}),
    );
    assert_eq!(status, 200);
    let (_, st) = s.get_as(&t, &format!("/v1/documents/{id}/status"));
    assert_eq!(
        st,
        json!({"status": "rejected", "rejection_reason": "Too expensive"})
    );
    let rejected = rx.wait_for("/document.rejected", 1, 20)[0].json();
    assert_eq!(rejected["recipient"]["email"], "no@example.com");
    // Links of a recalled document stop working; unknown links are 404.
    let (id, d) = sent_doc(&s, &t, json!([signer("gone@example.com")]), json!({}));
    assert_eq!(s.delete_as(&t, &format!("/v1/documents/{id}")).0, 204);
    let (status, body) = call(s.get(&format!("/v1/recipient/{}", link(&d, 0))));
    assert_eq!(assert_error(status, &body, 410), "document_unavailable");
    let (status, body) = call(s.get("/v1/recipient/not-a-real-secret"));
    assert_eq!(assert_error(status, &body, 404), "link_not_found");
}

#[test]
fn failures_are_retried_then_delivered_and_410_disables() {
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c = counter.clone();
    let rx = HttpsServer::start(move |req| match req.path.as_str() {
        "/flaky" => {
            let n = c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if n < 2 {
                Canned::status(500)
            } else {
                Canned::status(200)
            }
        }
        "/gone" => Canned::status(410),
        _ => Canned::status(200),
    });
    let s = server_for(&rx, "200ms,200ms,200ms");
    let t = s.admin_token();
    subscribe(&s, &t, "document.created", &rx.url("/flaky"), json!({}));
    let (gone_id, _) = subscribe(&s, &t, "document.lost", &rx.url("/gone"), json!({}));
    let doc = s.create_doc(&t, &json!({"name": "retry me"}));
    let attempts = rx.wait_for("/flaky", 3, 20);
    let ids: HashSet<&String> = attempts.iter().map(|r| &r.headers["webhook-id"]).collect();
    assert_eq!(ids.len(), 1, "webhook-id is stable across retries");
    // No attempt after the success. Barrier: past the time a retry would have been due
    // (200 ms + 20 %), a later event's delivery; such a retry would have come first.
    std::thread::sleep(Duration::from_millis(300));
    s.create_doc(&t, &json!({"name": "barrier"}));
    let seen = rx.wait_for("/flaky", 4, 20);
    let first_id = &attempts[0].headers["webhook-id"];
    assert_eq!(
        seen.iter()
            .filter(|r| &r.headers["webhook-id"] == first_id)
            .count(),
        3,
        "no attempt after the success"
    );
    assert_eq!(s.get_as(&t, "/v1/subscriptions/errors").1, json!([]));
    // 410 disables the subscription: no more deliveries to it.
    let id = doc["id"].as_str().unwrap();
    call(s.post(&format!("/v1/documents/{id}/lost")).bearer_auth(&t));
    rx.wait_for("/gone", 1, 20);
    wait_until(20, "the subscription to be disabled", || {
        let (_, sub) = s.get_as(&t, &format!("/v1/subscriptions/{gone_id}"));
        (sub["state"] == "disabled" && sub["status"] == 0).then_some(())
    });
    s.wait_mails(1, |m| m.contains("disabled") && m.contains("410"));
    let other = s.create_doc(&t, &json!({"name": "second"}));
    call(
        s.post(&format!(
            "/v1/documents/{}/lost",
            other["id"].as_str().unwrap()
        ))
        .bearer_auth(&t),
    );
    // Barrier: a later event's delivery (the third document's `created`; the second's
    // was the fifth on /flaky); a delivery to the disabled target would have come first.
    s.create_doc(&t, &json!({"name": "third"}));
    rx.wait_for("/flaky", 6, 20);
    assert_eq!(rx.received("/gone").len(), 1);
}

#[test]
fn redirects_are_failures_and_end_as_dead_letters() {
    let rx = HttpsServer::start(|req| match req.path.as_str() {
        "/moved" => Canned::status(302),
        _ => Canned::status(200),
    });
    let mut s = server_for(&rx, "100ms,100ms");
    // Dead-letter notices go to a member of the entity only.
    s.stop();
    s.add_member("ops@example.com", &[]);
    s.launch();
    let t = s.admin_token();
    let (sub, _) = subscribe(
        &s,
        &t,
        "document.created",
        &rx.url("/moved"),
        json!({"notification_email": "ops@example.com"}),
    );
    s.create_doc(&t, &json!({"name": "nowhere"}));
    rx.wait_for("/moved", 3, 20);
    let errors = wait_until(20, "the dead letter", || {
        let (_, e) = s.get_as(&t, "/v1/subscriptions/errors");
        let list = e.as_array().unwrap().clone();
        (!list.is_empty()).then_some(list)
    });
    assert_eq!(errors[0]["subscription_id"], sub);
    assert_eq!(errors[0]["event"], "document.created");
    assert_eq!(errors[0]["attempts"], 3);
    assert!(
        errors[0]["last_error"].as_str().unwrap().contains("302"),
        "{}",
        errors[0]
    );
    assert!(
        rx.received("/elsewhere").is_empty(),
        "redirects are never followed"
    );
    s.wait_mails(1, |m| {
        m.contains("To: ops@example.com") && m.contains("could not be delivered")
    });
    assert_eq!(
        rx.received("/moved").len(),
        3,
        "no attempt after the last one"
    );
}

#[test]
fn a_subscription_lists_its_deliveries_still_waiting_with_their_last_error() {
    let rx = HttpsServer::start(|req| match req.path.as_str() {
        "/down" => Canned::status(503),
        _ => Canned::status(200),
    });
    let s = server_for(&rx, "1h");
    let t = s.admin_token();
    let (down, _) = subscribe(&s, &t, "document.created", &rx.url("/down"), json!({}));
    let (up, _) = subscribe(&s, &t, "document.created", &rx.url("/up"), json!({}));
    let doc = s.create_doc(&t, &json!({"name": "waiting"}));
    rx.wait_for("/down", 1, 20);
    rx.wait_for("/up", 1, 20);
    let waiting = wait_until(20, "the failed attempt recorded", || {
        let (status, body) = s.get_as(&t, &format!("/v1/subscriptions/{down}/deliveries"));
        assert_eq!(status, 200, "{body}");
        (body["deliveries"][0]["status"] == "retrying").then_some(body)
    });
    assert_eq!(waiting["subscription_id"], down.as_str());
    assert_eq!(waiting["target_url"], rx.url("/down"));
    let list = waiting["deliveries"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{waiting}");
    let d = &list[0];
    assert_eq!(d["event"], "document.created");
    assert_eq!(d["attempts"], 1);
    assert!(d["last_error"].as_str().unwrap().contains("503"), "{d}");
    let (queued, next) = (
        chrono::DateTime::parse_from_rfc3339(d["queued_at"].as_str().unwrap()).unwrap(),
        chrono::DateTime::parse_from_rfc3339(d["next_attempt_at"].as_str().unwrap()).unwrap(),
    );
    let wait = (next - queued).num_seconds();
    assert!(
        (2800..=4400).contains(&wait),
        "next attempt in about an hour: {d}"
    );
    let seen = rx.received("/down");
    assert_eq!(d["event_id"], seen[0].headers["webhook-id"].as_str());
    assert_eq!(seen[0].json()["document"]["id"], doc["id"], "{d}");
    // Delivered: nothing waits.
    let (_, body) = s.get_as(&t, &format!("/v1/subscriptions/{up}/deliveries"));
    assert_eq!(body["deliveries"], json!([]), "{body}");
    // Another entity's admin, an unknown id: 404.
    let other = Server::start(&[]);
    let (status, body) = other.get_as(
        &other.admin_token(),
        &format!("/v1/subscriptions/{down}/deliveries"),
    );
    assert_eq!(assert_error(status, &body, 404), "subscription_not_found");
    let (status, body) = s.get_as(&t, "/v1/subscriptions/aaaaaaaaaaaaaaaa/deliveries");
    assert_eq!(assert_error(status, &body, 404), "subscription_not_found");
    // Deleted: its queued retry is dropped, and it is gone.
    let (status, _) = s.delete_as(&t, &format!("/v1/subscriptions/{down}"));
    assert_eq!(status, 204);
    let (status, body) = s.get_as(&t, &format!("/v1/subscriptions/{down}/deliveries"));
    assert_eq!(assert_error(status, &body, 404), "subscription_not_found");
}

#[test]
fn a_dead_letter_is_sent_again_on_retry_with_its_event_id_and_body() {
    let up = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let u = up.clone();
    let rx = HttpsServer::start(move |req| match req.path.as_str() {
        "/down" if !u.load(std::sync::atomic::Ordering::SeqCst) => Canned::status(503),
        _ => Canned::status(200),
    });
    let s = server_for(&rx, "100ms");
    let t = s.admin_token();
    let (sub, secret) = subscribe(&s, &t, "document.created", &rx.url("/down"), json!({}));
    s.create_doc(&t, &json!({"name": "try again"}));
    let dead = |n: usize| {
        wait_until(20, "the dead letter", || {
            let (_, e) = s.get_as(&t, "/v1/subscriptions/errors");
            let list = e.as_array().unwrap().clone();
            (list.len() == n).then_some(list)
        })
    };
    let errors = dead(1);
    let error = errors[0]["id"].as_str().unwrap().to_string();
    let failed = rx.received("/down");
    assert_eq!(failed.len(), 2, "two attempts, then a dead letter");

    // Unknown and malformed ids: 404 in the error shape.
    for bad in ["nope", "0000000000000000aaaaaaaaaaaaaaaa", &error[..31]] {
        let (status, body) = s.post_json(
            &t,
            &format!("/v1/subscriptions/errors/{bad}/retry"),
            &json!({}),
        );
        assert_eq!(assert_error(status, &body, 404), "error_not_found", "{bad}");
    }
    // Another entity's admin does not see it.
    let other = Server::start(&[]);
    let (status, body) = other.post_json(
        &other.admin_token(),
        &format!("/v1/subscriptions/errors/{error}/retry"),
        &json!({}),
    );
    assert_eq!(assert_error(status, &body, 404), "error_not_found");

    // The target is back: a retry sends the same event, signed with the secret.
    up.store(true, std::sync::atomic::Ordering::SeqCst);
    let (status, body) = s.post_json(
        &t,
        &format!("/v1/subscriptions/errors/{error}/retry"),
        &json!({}),
    );
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["event_id"], errors[0]["event_id"], "{body}");
    assert_eq!(body["subscription_id"], sub.as_str(), "{body}");
    let seen = rx.wait_for("/down", 3, 20);
    let again = &seen[2];
    assert_signed(again, &secret);
    assert_eq!(again.headers["webhook-id"], failed[0].headers["webhook-id"]);
    assert_eq!(again.body, failed[0].body, "the same body");
    assert_eq!(s.get_as(&t, "/v1/subscriptions/errors").1, json!([]));
    // Gone once retried.
    let (status, body) = s.post_json(
        &t,
        &format!("/v1/subscriptions/errors/{error}/retry"),
        &json!({}),
    );
    assert_eq!(assert_error(status, &body, 404), "error_not_found");

    // A dead letter of a deleted subscription is still listed for the admin, but a
    // retry would reach nobody: 409.
    up.store(false, std::sync::atomic::Ordering::SeqCst);
    s.create_doc(&t, &json!({"name": "again"}));
    let errors = dead(1);
    let (status, _) = s.delete_as(&t, &format!("/v1/subscriptions/{sub}"));
    assert_eq!(status, 204);
    let (status, body) = s.post_json(
        &t,
        &format!(
            "/v1/subscriptions/errors/{}/retry",
            errors[0]["id"].as_str().unwrap()
        ),
        &json!({}),
    );
    assert_eq!(assert_error(status, &body, 409), "subscription_inactive");
}

#[test]
fn global_scoping_and_tenant_isolation() {
    let rx = HttpsServer::start(|_| Canned::status(200));
    let mut s = server_for(&rx, "1s");
    let t = s.admin_token();
    s.stop();
    s.add_member("bea@example.com", &[]);
    s.add_entity_with_admin("Other", "olle@other.example");
    s.launch();
    let bea = s.token("bea@example.com", USER_PASSWORD, None);
    let olle = s.token("olle@other.example", USER_PASSWORD, None);
    subscribe(
        &s,
        &t,
        "document.created",
        &rx.url("/admin-global"),
        json!({"global": true}),
    );
    subscribe(&s, &t, "document.created", &rx.url("/admin-own"), json!({}));
    subscribe(&s, &bea, "document.created", &rx.url("/bea-own"), json!({}));
    subscribe(
        &s,
        &olle,
        "document.created",
        &rx.url("/other-entity"),
        json!({"global": true}),
    );
    s.create_doc(&bea, &json!({"name": "bea's"}));
    s.create_doc(&t, &json!({"name": "admin's"}));
    s.create_doc(&olle, &json!({"name": "olle's"}));
    rx.wait_for("/admin-global", 2, 20);
    rx.wait_for("/bea-own", 1, 20);
    rx.wait_for("/admin-own", 1, 20);
    rx.wait_for("/other-entity", 1, 20);
    // Barrier: a later event's delivery; any misdirected one was queued before it.
    s.create_doc(&t, &json!({"name": "barrier"}));
    rx.wait_for("/admin-own", 2, 20);
    let names = |path: &str| -> Vec<String> {
        let mut n: Vec<String> = rx
            .received(path)
            .iter()
            .map(|r| r.json()["document"]["name"].as_str().unwrap().to_string())
            .filter(|n| n != "barrier")
            .collect();
        n.sort();
        n
    };
    assert_eq!(
        names("/admin-global"),
        ["admin's", "bea's"],
        "global covers every user of the entity"
    );
    assert_eq!(
        names("/admin-own"),
        ["admin's"],
        "non-global: the subscriber's own documents"
    );
    assert_eq!(names("/bea-own"), ["bea's"]);
    assert_eq!(
        names("/other-entity"),
        ["olle's"],
        "no event of one entity reaches another's"
    );
}

#[test]
fn the_test_endpoint_sends_a_sample() {
    let rx = HttpsServer::start(|_| Canned::status(200));
    let s = server_for(&rx, "1s");
    let t = s.admin_token();
    let (sub, secret) = subscribe(&s, &t, "document.signed", &rx.url("/sample"), json!({}));
    let doc = s.create_doc(
        &t,
        &json!({"name": "sample", "recipients": [signer("x@example.com")]}),
    );
    let (status, body) = s.post_json(
        &t,
        "/v1/subscriptions/test",
        &json!({"event": "document.signed", "document_id": doc["id"]}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["subscriptions"], json!([sub]));
    let got = rx.wait_for("/sample", 1, 20);
    assert_signed(&got[0], &secret);
    let b = got[0].json();
    assert_eq!(b["test"], true);
    assert_eq!(b["document"]["id"], doc["id"]);
    assert_eq!(b["recipient"]["email"], "x@example.com");
    let (status, body) = s.post_json(
        &t,
        "/v1/subscriptions/test",
        &json!({"event": "document.sent", "document_id": doc["id"]}),
    );
    assert_eq!(assert_error(status, &body, 400), "no_subscription");
}

#[test]
fn no_event_is_lost_when_the_host_is_killed() {
    // A receiver held shut until the host has been killed and started again, so that
    // the deliveries are still queued when the host dies, however fast the machine.
    let open = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let gate = open.clone();
    // Counted on arrival: the server records a request only once its handler returns.
    let arrived = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = arrived.clone();
    let rx = HttpsServer::start(move |_| {
        count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !gate.load(std::sync::atomic::Ordering::SeqCst)
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        Canned::ok(Vec::new())
    });
    let ca = rx.ca_file.display().to_string();
    let mut s = Server::start(&[
        "--outbound-ca-file",
        &ca,
        "--outbound-allow-private",
        "--webhook-per-target",
        "4",
        "--webhook-retry-schedule",
        "1s",
        // No held attempt times out (and is tried again) while the documents are made.
        "--webhook-timeout-secs",
        "120",
    ]);
    let t = s.admin_token();
    subscribe(&s, &t, "document.created", &rx.url("/all"), json!({}));
    std::thread::scope(|scope| {
        for w in 0..4 {
            let (s, t) = (&s, &t);
            scope.spawn(move || {
                for i in 0..250 {
                    s.create_doc(t, &json!({"name": format!("d{w}-{i}")}));
                }
            });
        }
    });
    // Exactly 1 000 documents (and so 1 000 document.created events) are committed.
    let (_, last) = s.get_as(&t, "/v1/documents?offset=999&limit=1");
    let (_, past) = s.get_as(&t, "/v1/documents?offset=1000&limit=1");
    assert_eq!(
        (last.as_array().map(Vec::len), past.as_array().map(Vec::len)),
        (Some(1), Some(0)),
        "1 000 documents"
    );
    let before = arrived.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        before <= 4,
        "only the attempts in flight (--webhook-per-target 4) reached the held receiver: {before}"
    );
    s.kill();
    s.launch();
    open.store(true, std::sync::atomic::Ordering::SeqCst);
    let ids = wait_until(120, "all 1 000 events", || {
        let ids: HashSet<String> = rx
            .received("/all")
            .iter()
            .map(|r| r.headers["webhook-id"].clone())
            .collect();
        (ids.len() >= 1000).then_some(ids)
    });
    assert_eq!(
        ids.len(),
        1000,
        "every event arrived (duplicates allowed, losses not)"
    );
}

#[test]
fn internal_targets_are_refused_without_allow_private() {
    let rx = HttpsServer::start(|_| Canned::status(200));
    let ca = rx.ca_file.display().to_string();
    let s = Server::start(&[
        "--outbound-ca-file",
        &ca,
        "--webhook-retry-schedule",
        "100ms",
    ]);
    let t = s.admin_token();
    subscribe(&s, &t, "document.created", &rx.url("/private"), json!({}));
    s.create_doc(&t, &json!({"name": "x"}));
    let errors = wait_until(20, "the dead letter", || {
        let (_, e) = s.get_as(&t, "/v1/subscriptions/errors");
        let list = e.as_array().unwrap().clone();
        (!list.is_empty()).then_some(list)
    });
    assert!(
        errors[0]["last_error"]
            .as_str()
            .unwrap()
            .contains("internal address"),
        "{}",
        errors[0]
    );
    assert!(
        rx.received("/private").is_empty(),
        "nothing reached the loopback target"
    );
}

#[test]
fn deleting_a_subscription_drops_its_queued_retries() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    // The first attempt is held in the receiver until the DELETE has answered (at most
    // a minute), so its retry is queued for a subscription already deleted, however
    // slow the machine.
    let (arrived, release) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (a, r) = (arrived.clone(), release.clone());
    let rx = HttpsServer::start(move |req| {
        if req.path != "/failing" {
            return Canned::status(200);
        }
        a.store(true, Ordering::SeqCst);
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !r.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        Canned::status(500)
    });
    let s = server_for(&rx, "1s,1s,1s");
    let t = s.admin_token();
    let (sub, _) = subscribe(&s, &t, "document.created", &rx.url("/failing"), json!({}));
    s.create_doc(&t, &json!({"name": "x"}));
    wait_until(20, "the first attempt", || {
        arrived.load(Ordering::SeqCst).then_some(())
    });
    assert_eq!(s.delete_as(&t, &format!("/v1/subscriptions/{sub}")).0, 204);
    release.store(true, Ordering::SeqCst);
    rx.wait_for("/failing", 1, 20);
    // Barrier: past the time the retry would be due (1 s + 20 %), a later event's
    // delivery to the same target; the retry would have been launched first.
    std::thread::sleep(Duration::from_millis(1300));
    subscribe(&s, &t, "document.created", &rx.url("/barrier"), json!({}));
    s.create_doc(&t, &json!({"name": "barrier"}));
    rx.wait_for("/barrier", 1, 20);
    assert_eq!(
        rx.received("/failing").len(),
        1,
        "the queued retry was dropped"
    );
}

#[test]
fn a_manual_signature_is_announced_with_its_recipient() {
    let rx = HttpsServer::start(|_| Canned::status(200));
    let s = server_for(&rx, "1s");
    let t = s.admin_token();
    subscribe(&s, &t, "document.signed", &rx.url("/signed"), json!({}));
    let (id, _) = sent_doc(&s, &t, json!([signer("m@example.com")]), json!({}));
    assert_eq!(
        s.post_json(&t, &format!("/v1/documents/{id}/manually-sign"), &json!({}))
            .0,
        200
    );
    let b = rx.wait_for("/signed", 1, 20)[0].json();
    assert_eq!(b["recipient"]["email"], "m@example.com");
    assert_eq!(b["recipient"]["signing_methods"][0]["type"], "manual");
    assert_eq!(b["recipients"][0]["status"], "signedwithoutverification");
}

#[test]
fn subscriptions_stop_when_their_owner_loses_access() {
    let rx = HttpsServer::start(|_| Canned::status(200));
    let s = server_for(&rx, "1s");
    let t = s.admin_token();
    // A second admin with a global subscription, a user with one to comments on their
    // own documents; the first admin's own subscription is the barrier.
    let make = |email: &str, role: &str| -> (String, String) {
        let (status, u) = s.post_json(
            &t,
            "/v1/users",
            &json!({"email": email, "role": role, "password": USER_PASSWORD}),
        );
        assert_eq!(status, 200, "{u}");
        (
            u["id"].as_str().unwrap().to_string(),
            s.token(email, USER_PASSWORD, None),
        )
    };
    let (mia_id, mia) = make("mia@example.com", "admin");
    let (uwe_id, uwe) = make("uwe@example.com", "user");
    subscribe(
        &s,
        &mia,
        "document.created",
        &rx.url("/mia-global"),
        json!({"global": true}),
    );
    subscribe(
        &s,
        &uwe,
        "comment.created",
        &rx.url("/uwe-comments"),
        json!({}),
    );
    subscribe(&s, &t, "comment.created", &rx.url("/barrier"), json!({}));
    let uwes = s.create_doc(&uwe, &json!({"name": "uwe's"}));
    rx.wait_for("/mia-global", 1, 20);
    // Both lose their membership.
    for id in [&mia_id, &uwe_id] {
        assert_eq!(s.delete_as(&t, &format!("/v1/users/{id}")).0, 204);
    }
    // Events they would have covered: a comment on uwe's document, a new document.
    let (status, body) = s.post_json(
        &t,
        &format!("/v1/documents/{}/comments", uwes["id"].as_str().unwrap()),
        &json!({"text": "after"}),
    );
    assert_eq!(status, 200, "{body}");
    let mine = s.create_doc(&t, &json!({"name": "admin's"}));
    // Barrier: a later event's delivery to the same receiver.
    let (status, body) = s.post_json(
        &t,
        &format!("/v1/documents/{}/comments", mine["id"].as_str().unwrap()),
        &json!({"text": "barrier"}),
    );
    assert_eq!(status, 200, "{body}");
    rx.wait_for("/barrier", 1, 20);
    assert_eq!(
        rx.received("/mia-global").len(),
        1,
        "nothing after mia left"
    );
    assert!(
        rx.received("/uwe-comments").is_empty(),
        "nothing after uwe left"
    );
    // Each owner is told.
    for who in ["mia@example.com", "uwe@example.com"] {
        s.wait_mails(1, |m| {
            m.contains(&format!("To: {who}")) && m.contains("disabled")
        });
    }
}

#[test]
fn a_dead_target_with_a_backlog_does_not_delay_another() {
    let rx = HttpsServer::start(|_| Canned::status(200));
    // A target that accepts connections and never answers: each attempt waits for the
    // timeout, so the target is always busy.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("https://127.0.0.1:{}", dead.local_addr().unwrap().port());
    let s = server_for(&rx, "1h");
    let t = s.admin_token();
    for i in 0..1000 {
        subscribe(
            &s,
            &t,
            "document.created",
            &format!("{dead_url}/h{i}"),
            json!({}),
        );
    }
    // 100 events × 1 000 subscriptions: 100 000 deliveries queued for the dead target.
    // On PostgreSQL 20 events (20 000 deliveries): each create writes its 1 000
    // deliveries in its own transaction, and 100 of them took a minute of CI's
    // PostgreSQL pass; the queue's queries are the same for any backlog many times the
    // size of a batch.
    let events = if std::env::var("ESIGN_TEST_STORE").is_ok_and(|s| !s.is_empty()) {
        20
    } else {
        100
    };
    for i in 0..events {
        s.create_doc(&t, &json!({"name": format!("backlog {i}")}));
    }
    subscribe(&s, &t, "document.created", &rx.url("/live"), json!({}));
    let started = std::time::Instant::now();
    let doc = s.create_doc(&t, &json!({"name": "the live one"}));
    let got = rx.wait_for("/live", 1, 60);
    let delay = started.elapsed();
    eprintln!(
        "first attempt at the live target after {delay:?} (behind {} 000 queued for a dead one)",
        events
    );
    assert_eq!(
        got[0].json()["document"]["id"],
        doc["id"],
        "{:?}",
        got[0].json()
    );
    // The goal is one second; the bound leaves room for a loaded machine (without
    // per-target queues the live target waited behind the whole backlog).
    assert!(delay < Duration::from_secs(5), "{delay:?}");
    drop(dead);
}
