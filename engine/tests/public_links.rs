//! Public signing links (issue 51 item 2): a template published as a link; visitors
//! make and sign their own document; `max_uses`, `one_per_email`, expiry, the emailed
//! code, the per-source rate limit and unpublishing, as a client sees them. (Under
//! real concurrency on sled and PostgreSQL: `tests/public_links.rs` of the host.)

mod common;

use common::*;
use esign_engine::handle;
use esign_engine::memory::MemoryPlatform;
use serde_json::{Value, json};

/// A ready template from a 2-page PDF with one `Client` signer role and a signature
/// field for it; its id.
fn template(p: &mut MemoryPlatform, t: &str, roles: Value) -> String {
    let (s, b) = api(
        p,
        t,
        "POST",
        "/v1/templates",
        Some(
            json!({"name": "Waiver", "file_content": "JVBERi0xLjQKZmFrZQ==", "file_name": "t.pdf",
                    "roles": roles}),
        ),
    );
    assert_eq!(s, 200, "{b}");
    let job = take_jobs(p, "template.import").remove(0);
    let blob = p.blobs.keys().last().unwrap().clone();
    assert_eq!(
        run(p, &job, Some(imported_pages(&blob, 2))),
        esign_engine::JobOutcome::Done
    );
    b["id"].as_str().unwrap().to_string()
}

fn client_role() -> Value {
    json!([{"role_name": "Client", "role": "signer"}])
}

fn publish(p: &mut MemoryPlatform, t: &str, tid: &str, terms: Value) -> Value {
    let (s, b) = api(
        p,
        t,
        "POST",
        &format!("/v1/templates/{tid}/public-links"),
        Some(terms),
    );
    assert_eq!(s, 201, "{b}");
    b
}

fn slug_of(link: &Value) -> String {
    link["url"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string()
}

/// A visit: `POST /p/{slug}` as a script sends it.
fn visit(p: &mut MemoryPlatform, slug: &str, email: &str, code: Option<&str>) -> (u16, Value) {
    let mut b = json!({"first_name": "Vera", "last_name": "Visitor", "email": email});
    if let Some(c) = code {
        b["code"] = c.into();
    }
    recipient(p, "POST", &format!("/p/{slug}"), Some(b))
}

/// Moves the clock a minute on, so the per-source limit starts over.
fn next_minute(p: &mut MemoryPlatform) {
    p.now_ms += 60_000;
}

#[test]
fn a_visitor_makes_signs_and_both_sides_get_the_record() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let tid = template(&mut p, &t, client_role());
    let link = publish(&mut p, &t, &tid, json!({}));
    for k in ["id", "url", "qr_url", "uses", "max_uses", "created_at"] {
        assert!(!link[k].is_null(), "{k}: {link}");
    }
    let slug = slug_of(&link);
    // The page and the QR code are public.
    let mut get_page = request(
        esign_engine::Origin::Http,
        "GET",
        &format!("/p/{slug}"),
        None,
    );
    let (s, b) = (
        handle(&mut p, &get_page).status,
        body(&handle(&mut p, &get_page)),
    );
    assert_eq!(
        (s, &b["name"]),
        (200, &json!("Waiver")),
        "a script gets JSON: {b}"
    );
    get_page.headers.push(("accept".into(), "text/html".into()));
    let page = handle(&mut p, &get_page);
    assert_eq!(page.status, 200);
    let csp = |r: &esign_engine::Response| {
        r.headers
            .iter()
            .find(|(n, _)| n == "content-security-policy")
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    assert!(
        csp(&page).contains("frame-ancestors 'none'"),
        "{}",
        csp(&page)
    );
    // Embedded (`?embed=1`): the entity's allowed origins may frame it.
    let (s, b) = api(
        &mut p,
        &t,
        "PUT",
        "/v1/entity",
        Some(json!({"embed_origins": ["https://shop.example"]})),
    );
    assert_eq!(s / 100, 2, "{b}");
    get_page.query = "embed=1".into();
    let framed = handle(&mut p, &get_page);
    assert!(
        csp(&framed).contains("frame-ancestors https://shop.example"),
        "{}",
        csp(&framed)
    );
    assert!(String::from_utf8_lossy(&framed.body).contains("data-embed=\"?embed=1\""));
    let html = String::from_utf8_lossy(&page.body).to_string();
    assert!(
        html.contains("Waiver") && html.contains("public.js"),
        "{html}"
    );
    let qr = handle(
        &mut p,
        &request(
            esign_engine::Origin::Http,
            "GET",
            &format!("/p/{slug}/qr.png"),
            None,
        ),
    );
    assert_eq!(qr.status, 200);
    assert_eq!(&qr.body[..8], b"\x89PNG\r\n\x1a\n");
    // A visit makes a sealed document for the visitor in the signer role; no mail.
    let mails = p.mails.len();
    let (s, made) = visit(&mut p, &slug, "vera@v.se", None);
    assert_eq!(s, 200, "{made}");
    assert_eq!(p.mails.len(), mails, "no invitation mail");
    let id = made["document_id"].as_str().unwrap();
    let (_, doc) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}"), None);
    assert_eq!(doc["recipients"][0]["email"], "vera@v.se", "{doc}");
    assert_eq!(doc["recipients"][0]["role_name"], "Client", "{doc}");
    assert_eq!(doc["template_id"], tid.as_str(), "{doc}");
    finish_render(&mut p, 2);
    let secret = made["signing_url"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    for act in ["view", "sign"] {
        let body = json!({"signature": {"type": "typed", "name": "Vera Visitor"}});
        let (s, b) = recipient(
            &mut p,
            "POST",
            &format!("/v1/recipient/{secret}/{act}"),
            Some(body),
        );
        assert_eq!(s, 200, "{act}: {b}");
    }
    let (_, doc) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}"), None);
    assert_eq!(doc["status"], "signed", "{doc}");
    let (_, log) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}/log"), None);
    let created = &log.as_array().unwrap()[0];
    assert_eq!(created["actor"]["type"], "visitor", "{created}");
    // The link counts its use.
    let (_, links) = api(&mut p, &t, "GET", "/v1/public-links", None);
    assert_eq!(links["public_links"][0]["uses"], 1, "{links}");
}

#[test]
fn max_uses_one_per_email_expiry_and_unpublishing_hold() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let tid = template(&mut p, &t, client_role());
    let link = publish(
        &mut p,
        &t,
        &tid,
        json!({"max_uses": 3, "one_per_email": true}),
    );
    let slug = slug_of(&link);
    for i in 0..3 {
        let (s, b) = visit(&mut p, &slug, &format!("v{i}@v.se"), None);
        assert_eq!(s, 200, "{b}");
    }
    let (s, b) = visit(&mut p, &slug, "v9@v.se", None);
    assert_eq!(
        (s, b["error"].as_str()),
        (410, Some("link_unavailable")),
        "{b}"
    );
    let (_, docs) = api(&mut p, &t, "GET", "/v1/documents", None);
    assert_eq!(docs.as_array().map(Vec::len), Some(3), "{docs}");
    // One per email.
    let link = publish(&mut p, &t, &tid, json!({"one_per_email": true}));
    let one = slug_of(&link);
    let (s, _) = visit(&mut p, &one, "same@v.se", None);
    assert_eq!(s, 200);
    let (s, b) = visit(&mut p, &one, "SAME@v.se", None);
    assert_eq!((s, b["error"].as_str()), (409, Some("already_used")), "{b}");
    // Unpublished: 404 at once, page and QR code too.
    let id = link["id"].as_str().unwrap();
    let (s, _) = api(
        &mut p,
        &t,
        "DELETE",
        &format!("/v1/public-links/{id}"),
        None,
    );
    assert_eq!(s, 204);
    next_minute(&mut p);
    let (s, b) = visit(&mut p, &one, "new@v.se", None);
    assert_eq!(
        (s, b["error"].as_str()),
        (404, Some("link_not_found")),
        "{b}"
    );
    let qr = handle(
        &mut p,
        &request(
            esign_engine::Origin::Http,
            "GET",
            &format!("/p/{one}/qr.png"),
            None,
        ),
    );
    assert_eq!(qr.status, 404);
    // Expiry.
    let soon = esign_engine::iso8601(p.now_ms + 120_000);
    let link = publish(&mut p, &t, &tid, json!({"expires_at": soon}));
    p.now_ms += 180_000;
    let (s, b) = visit(&mut p, &slug_of(&link), "late@v.se", None);
    assert_eq!(
        (s, b["error"].as_str()),
        (410, Some("link_unavailable")),
        "{b}"
    );
}

#[test]
fn a_link_that_asks_for_a_code_admits_only_the_mailed_one() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let tid = template(&mut p, &t, client_role());
    let link = publish(&mut p, &t, &tid, json!({"require_email_code": true}));
    let slug = slug_of(&link);
    let (s, b) = visit(&mut p, &slug, "c@v.se", None);
    assert_eq!((s, b["error"].as_str()), (400, Some("invalid_code")), "{b}");
    let (s, b) = recipient(
        &mut p,
        "POST",
        &format!("/p/{slug}/code"),
        Some(json!({"email": "c@v.se"})),
    );
    assert_eq!(s, 202, "{b}");
    let mail = p.mails.last().unwrap().clone();
    assert_eq!(mail.to, "c@v.se");
    let code: String = mail
        .body
        .split("is ")
        .nth(1)
        .unwrap()
        .chars()
        .take(6)
        .collect();
    let (s, b) = visit(&mut p, &slug, "c@v.se", Some("000000x"));
    assert_eq!((s, b["error"].as_str()), (400, Some("invalid_code")), "{b}");
    let (s, b) = visit(&mut p, &slug, "c@v.se", Some(&code));
    assert_eq!(s, 200, "{b}");
    // A code works once.
    next_minute(&mut p);
    let (s, b) = visit(&mut p, &slug, "c@v.se", Some(&code));
    assert_eq!((s, b["error"].as_str()), (400, Some("invalid_code")), "{b}");
}

#[test]
fn a_source_is_slowed_down_and_bad_requests_are_refused() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let tid = template(&mut p, &t, client_role());
    let slug = slug_of(&publish(&mut p, &t, &tid, json!({})));
    let mut last = (0, Value::Null);
    for i in 0..11 {
        last = visit(&mut p, &slug, &format!("r{i}@v.se"), None);
    }
    assert_eq!(
        (last.0, last.1["error"].as_str()),
        (429, Some("too_many_requests")),
        "{}",
        last.1
    );
    next_minute(&mut p);
    let (s, b) = visit(&mut p, &slug, "not an email", None);
    assert_eq!(
        (s, b["error"].as_str()),
        (400, Some("invalid_field")),
        "{b}"
    );
    // Publishing: bad terms; a template with roles no visitor fills.
    for terms in [
        json!({"max_uses": 0}),
        json!({"max_uses": 1.5}),
        json!({"expires_at": "yesterday"}),
        json!({"x": 1}),
    ] {
        let (s, b) = api(
            &mut p,
            &t,
            "POST",
            &format!("/v1/templates/{tid}/public-links"),
            Some(terms),
        );
        assert_eq!(s, 400, "{b}");
    }
    let two = template(
        &mut p,
        &t,
        json!([{"role_name": "Client", "role": "signer"}, {"role_name": "Boss", "role": "approver"}]),
    );
    let (s, b) = api(
        &mut p,
        &t,
        "POST",
        &format!("/v1/templates/{two}/public-links"),
        Some(json!({})),
    );
    assert_eq!(
        (s, b["error"].as_str()),
        (409, Some("template_not_publishable")),
        "{b}"
    );
}
