//! In-person signing (issue 51 item 4): the owner or an admin hands their device to a
//! signer, who signs there on their own link; the trail and the audit certificate say
//! it was signed in person and who hosted it. Who may call it is `roles.rs`.

mod common;

use common::*;
use serde_json::json;

#[test]
fn the_host_gets_the_signer_s_link_and_the_certificate_says_who_hosted() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (id, sent) = sent_doc(
        &mut p,
        &t,
        json!([{"email": "s@y.se", "first_name": "Sam", "role": "signer"},
               {"email": "cc@y.se", "first_name": "Cy", "role": "cc"}]),
        json!({}),
    );
    let rid = |i: usize| sent["recipients"][i]["id"].as_str().unwrap().to_string();
    let path = |r: &str| format!("/v1/documents/{id}/recipients/{r}/in-person");
    // A CC recipient neither signs nor approves; an unknown one is not found.
    let (s, b) = api(&mut p, &t, "POST", &path(&rid(1)), None);
    assert_eq!(
        (s, b["error"].as_str()),
        (400, Some("invalid_recipient")),
        "{b}"
    );
    let (s, b) = api(&mut p, &t, "POST", &path("nobody0000000000"), None);
    assert_eq!(
        (s, b["error"].as_str()),
        (404, Some("recipient_not_found")),
        "{b}"
    );
    // The signer's own link, to open on the host's device.
    let (s, b) = api(&mut p, &t, "POST", &path(&rid(0)), None);
    assert_eq!(s, 200, "{b}");
    let url = b["signing_url"].as_str().unwrap();
    assert_eq!(url, sent["recipients"][0]["document_url"].as_str().unwrap());
    let (_, log) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}/log"), None);
    let handed = log
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "in_person_signing")
        .unwrap_or_else(|| panic!("the hand-over in the trail: {log}"));
    assert_eq!(handed["actor"]["type"], "user", "{handed}");
    // The signer signs there; the seal's certificate says who hosted.
    let secret = secret_of(&sent, 0);
    for act in ["view", "sign"] {
        let body = json!({"signature": {"type": "typed", "name": "Sam Svensson"}});
        let (s, b) = recipient(
            &mut p,
            "POST",
            &format!("/v1/recipient/{secret}/{act}"),
            Some(body),
        );
        assert_eq!(s, 200, "{act}: {b}");
    }
    let rows = certificate_rows(&mut p);
    assert!(
        rows.iter()
            .any(|r| r.contains("signing in person, hosted by ")),
        "{rows:#?}"
    );
    // Once signed, there is nothing left to host.
    let (s, b) = api(&mut p, &t, "POST", &path(&rid(0)), None);
    assert_eq!(
        (s, b["error"].as_str()),
        (400, Some("invalid_status")),
        "{b}"
    );
}

#[test]
fn the_sender_signs_first_in_the_app_and_the_certificate_says_so() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    // The admin (a@x.se) signs first, then Sam; the order holds for self-signing too.
    let (id, sent) = sent_doc(
        &mut p,
        &t,
        json!([{"email": "S@Y.se", "first_name": "Sam", "role": "signer", "order_num": 2},
               {"email": "A@x.se", "first_name": "Ann", "role": "signer", "order_num": 1}]),
        json!({"is_signing_order": true}),
    );
    let path = format!("/v1/documents/{id}/self-sign");
    let (s, b) = api(&mut p, &t, "POST", &path, None);
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["recipient_id"], sent["recipients"][1]["id"], "{b}");
    assert_eq!(
        b["signing_url"], sent["recipients"][1]["document_url"],
        "{b}"
    );
    let (s, b) = api(&mut p, &t, "POST", &path, Some(json!({"x": 1})));
    assert_eq!(
        (s, b["error"].as_str()),
        (400, Some("unknown_field")),
        "{b}"
    );
    let (_, log) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}/log"), None);
    let opened = log
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "self_signing")
        .unwrap_or_else(|| panic!("self-signing in the trail: {log}"));
    assert_eq!(opened["actor"]["type"], "user", "{opened}");
    // The sender signs, then Sam; the certificate shows the sender's self-signing.
    for i in [1, 0] {
        let secret = secret_of(&sent, i);
        for act in ["view", "sign"] {
            let body = json!({"signature": {"type": "typed", "name": "A Name"}});
            let (s, b) = recipient(
                &mut p,
                "POST",
                &format!("/v1/recipient/{secret}/{act}"),
                Some(body),
            );
            assert_eq!(s, 200, "{act}: {b}");
        }
    }
    let rows = certificate_rows(&mut p);
    assert_eq!(
        rows.iter()
            .filter(|r| r.contains("signed by the sender, in the app"))
            .count(),
        1,
        "{rows:#?}"
    );
    // Nothing is left to sign.
    let (s, b) = api(&mut p, &t, "POST", &path, None);
    assert_eq!(
        (s, b["error"].as_str()),
        (400, Some("invalid_status")),
        "{b}"
    );
}

#[test]
fn a_sender_who_is_not_a_signer_or_whose_turn_it_is_not_cannot_self_sign() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (id, _) = sent_doc(
        &mut p,
        &t,
        json!([{"email": "s@y.se", "first_name": "Sam", "role": "signer"},
               {"email": "a@x.se", "first_name": "Ann", "role": "cc"}]),
        json!({}),
    );
    let (s, b) = api(
        &mut p,
        &t,
        "POST",
        &format!("/v1/documents/{id}/self-sign"),
        None,
    );
    assert_eq!(
        (s, b["error"].as_str()),
        (403, Some("not_a_recipient")),
        "{b}"
    );
    // Second in the order: not yet.
    let (id, _) = sent_doc(
        &mut p,
        &t,
        json!([{"email": "s@y.se", "first_name": "Sam", "role": "signer", "order_num": 1},
               {"email": "a@x.se", "first_name": "Ann", "role": "signer", "order_num": 2}]),
        json!({"is_signing_order": true}),
    );
    let (s, b) = api(
        &mut p,
        &t,
        "POST",
        &format!("/v1/documents/{id}/self-sign"),
        None,
    );
    assert_eq!(s / 100, 4, "{b}");
    assert_ne!(b["error"], "not_a_recipient", "{b}");
    // A draft has no links yet.
    let (id, _) = draft(
        &mut p,
        &t,
        json!([{"email": "a@x.se", "first_name": "Ann", "role": "signer"}]),
        json!({}),
    );
    let (s, b) = api(
        &mut p,
        &t,
        "POST",
        &format!("/v1/documents/{id}/self-sign"),
        None,
    );
    assert_eq!(s / 100, 4, "{b}");
}
