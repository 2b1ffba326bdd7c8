//! A signer hands their part to someone else (issue 51 item 6), when the sender allows
//! it: after their own checks, the new signer is invited, passes a code check of their
//! own, signs, and the certificate shows the hand-over; a question only the first
//! signer can answer is not handed on.

mod common;

use common::*;
use esign_engine::memory::MemoryPlatform;
use esign_engine::{Origin, handle};
use serde_json::{Value, json};

/// A browser on a recipient's link: its session cookie kept across calls.
#[derive(Default)]
struct Browser {
    cookie: String,
}

impl Browser {
    fn post(&mut self, p: &mut MemoryPlatform, path: &str, b: Value) -> (u16, Value) {
        let mut req = request(Origin::Http, "POST", path, Some(b));
        req.headers
            .push(("origin".into(), "http://127.0.0.1:8080".into()));
        if !self.cookie.is_empty() {
            req.headers.push(("cookie".into(), self.cookie.clone()));
        }
        let resp = handle(p, &req);
        if let Some((_, v)) = resp.headers.iter().find(|(n, _)| n == "set-cookie") {
            self.cookie = v.split(';').next().unwrap().to_string();
        }
        (resp.status, body(&resp))
    }

    /// Passes the SMS code check on link `secret`.
    fn pass_sms(&mut self, p: &mut MemoryPlatform, secret: &str) {
        let base = format!("/v1/recipient/{secret}");
        let (s, b) = self.post(p, &format!("{base}/verify/start"), json!({"method": "sms"}));
        assert_eq!(s, 200, "{b}");
        let text = &p.sms.last().unwrap().text;
        let code: String = text.chars().filter(char::is_ascii_digit).take(6).collect();
        let (s, b) = self.post(
            p,
            &format!("{base}/verify"),
            json!({"method": "sms", "code": code}),
        );
        assert_eq!(s, 200, "{b}");
    }
}

#[test]
fn a_signer_hands_over_only_when_the_sender_allows_it_and_the_new_one_signs() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let who = json!({"first_name": "Nina", "last_name": "New", "email": "nina@n.se", "mobile": "+46709876543"});
    // Not allowed: 403.
    let (_, sent) = sent_doc(
        &mut p,
        &t,
        json!([{"email": "s@y.se", "first_name": "Sam", "role": "signer"}]),
        json!({}),
    );
    let mut other = Browser::default();
    let path = format!("/v1/recipient/{}/transfer", secret_of(&sent, 0));
    let (s, b) = other.post(&mut p, &path, who.clone());
    assert_eq!(
        (s, b["error"].as_str()),
        (403, Some("hand_over_not_allowed")),
        "{b}"
    );
    // Allowed, with an SMS code check: Sam passes his first.
    let (id, sent) = sent_doc(
        &mut p,
        &t,
        json!([{"email": "s@y.se", "first_name": "Sam", "role": "signer", "verify_sms": true, "mobile": "+46701234567"}]),
        json!({"is_signing_forward": true}),
    );
    let secret = secret_of(&sent, 0);
    let path = format!("/v1/recipient/{secret}/transfer");
    let mut sam = Browser::default();
    let (s, b) = sam.post(&mut p, &path, who.clone());
    assert_eq!(
        (s, b["error"].as_str()),
        (403, Some("verification_required")),
        "{b}"
    );
    sam.pass_sms(&mut p, &secret);
    for bad in [
        json!({"first_name": "X"}),
        json!({"first_name": "X", "email": "nope"}),
        json!({"email": "x@y.se"}),
    ] {
        let (s, b) = sam.post(&mut p, &path, bad);
        assert_eq!(s, 400, "{b}");
    }
    let mails = p.mails.len();
    let (s, b) = sam.post(&mut p, &path, who);
    assert_eq!(s, 200, "{b}");
    assert!(
        p.mails[mails..].iter().any(|m| m.to == "nina@n.se"),
        "Nina is invited"
    );
    let (_, d) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}"), None);
    let nina_r = d["recipients"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["email"] == "nina@n.se")
        .unwrap()
        .clone();
    let nina_secret = nina_r["document_url"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    // Nina passes a code check of her own before she signs.
    let sign = json!({"signature": {"type": "typed", "name": "Nina New"}});
    let mut nina = Browser::default();
    let (s, b) = nina.post(
        &mut p,
        &format!("/v1/recipient/{nina_secret}/sign"),
        sign.clone(),
    );
    assert_eq!(
        (s, b["error"].as_str()),
        (403, Some("verification_required")),
        "{b}"
    );
    nina.pass_sms(&mut p, &nina_secret);
    assert_eq!(p.sms.last().unwrap().to, "+46709876543");
    for act in ["view", "sign"] {
        let (s, b) = nina.post(
            &mut p,
            &format!("/v1/recipient/{nina_secret}/{act}"),
            sign.clone(),
        );
        assert_eq!(s, 200, "{act}: {b}");
    }
    let rows = certificate_rows(&mut p);
    assert!(
        rows.iter()
            .any(|r| r.contains("handed their part to someone else")),
        "{rows:#?}"
    );
}

#[test]
fn a_question_for_the_first_signer_is_not_handed_on() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (_, sent) = sent_doc(
        &mut p,
        &t,
        json!([{"email": "s@y.se", "first_name": "Sam", "role": "signer", "verify_qna": true,
                "verify_qna_question": "Our project?", "verify_qna_answer": "Apollo"}]),
        json!({"is_signing_forward": true}),
    );
    let secret = secret_of(&sent, 0);
    let mut sam = Browser::default();
    let (s, b) = sam.post(
        &mut p,
        &format!("/v1/recipient/{secret}/verify"),
        json!({"method": "qna", "answer": "apollo"}),
    );
    assert_eq!(s, 200, "{b}");
    let (s, b) = sam.post(
        &mut p,
        &format!("/v1/recipient/{secret}/transfer"),
        json!({"first_name": "Nina", "email": "nina@n.se"}),
    );
    assert_eq!(
        (s, b["error"].as_str()),
        (409, Some("hand_over_not_possible")),
        "{b}"
    );
}
