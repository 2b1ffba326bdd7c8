//! Embedded signing (issue 51 item 1): an entity's `embed_origins` on `/v1/entity`, the
//! signing page's `frame-ancestors` with and without `?embed=1`, the origins the page
//! embeds for its events, and `/embed.js`.

mod common;

use common::*;
use esign_engine::memory::MemoryPlatform;
use esign_engine::{Origin, Response, handle};
use serde_json::{Value, json};

/// `PUT /v1/entity` with `embed_origins`: its status, and the stored origins or the
/// error code.
fn set(p: &mut MemoryPlatform, t: &str, origins: Value) -> (u16, Value) {
    let (s, e) = api(
        p,
        t,
        "PUT",
        "/v1/entity",
        Some(json!({"embed_origins": origins})),
    );
    match s {
        200 => (s, e["entity"]["embed_origins"].clone()),
        _ => (s, e["error"].clone()),
    }
}

fn stored(p: &mut MemoryPlatform, t: &str) -> Value {
    let (s, e) = api(p, t, "GET", "/v1/entity", None);
    assert_eq!(s, 200, "{e}");
    e["entity"]["embed_origins"].clone()
}

/// The page at `path?query` as a browser asks for it.
fn page(p: &mut MemoryPlatform, path: &str, query: &str) -> Response {
    let mut req = request(Origin::Http, "GET", path, None);
    req.query = query.to_string();
    req.headers
        .push(("accept".into(), "text/html,application/xhtml+xml".into()));
    handle(p, &req)
}

fn header<'a>(r: &'a Response, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

fn frame_ancestors(r: &Response) -> String {
    let csp = header(r, "content-security-policy").expect("a CSP");
    csp.split(';')
        .map(str::trim)
        .find(|d| d.starts_with("frame-ancestors"))
        .expect("frame-ancestors")
        .to_string()
}

fn html(r: &Response) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

#[test]
fn the_entity_names_exact_https_origins() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    assert_eq!(stored(&mut p, &t), json!([]));
    let ok = json!([
        "https://shop.example.com",
        "HTTPS://App.Example.com:8443",
        "https://shop.example.com"
    ]);
    assert_eq!(
        set(&mut p, &t, ok),
        (
            200,
            json!(["https://shop.example.com", "https://app.example.com:8443"])
        )
    );
    for bad in [
        json!(["http://shop.example.com"]),
        json!(["https://shop.example.com/"]),
        json!(["https://shop.example.com/sign"]),
        json!(["https://*.example.com"]),
        json!(["*"]),
        json!(["https://shop.example.com:99999"]),
        json!(["https://shop.example.com 'unsafe-inline'"]),
        json!(["shop.example.com"]),
        json!([42]),
        json!("https://shop.example.com"),
    ] {
        assert_eq!(
            set(&mut p, &t, bad.clone()),
            (400, json!("invalid_field")),
            "{bad}"
        );
    }
    // Nothing changed by a refused list, even one with a valid origin first.
    let mixed = json!(["https://other.example", "http://other.example"]);
    assert_eq!(set(&mut p, &t, mixed), (400, json!("invalid_field")));
    assert_eq!(
        stored(&mut p, &t),
        json!(["https://shop.example.com", "https://app.example.com:8443"])
    );

    let twenty: Vec<String> = (0..20).map(|i| format!("https://s{i}.example")).collect();
    assert_eq!(set(&mut p, &t, json!(twenty)).0, 200);
    let mut twenty_one = twenty.clone();
    twenty_one.push("https://s20.example".into());
    let (s, e) = api(
        &mut p,
        &t,
        "PUT",
        "/v1/entity",
        Some(json!({"embed_origins": twenty_one})),
    );
    assert_eq!((s, &e["error"]), (400, &json!("invalid_field")), "{e}");
    assert!(
        e["description"].as_str().is_some_and(|d| d.contains("20")),
        "{e}"
    );
    assert_eq!(stored(&mut p, &t), json!(twenty));

    assert_eq!(set(&mut p, &t, json!([])), (200, json!([])));
}

#[test]
fn only_admins_set_them() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let entity = entity_of(&mut p, &t);
    add_member(&mut p, "m@example.com", &entity, "user", None);
    let member = login(&mut p, "m@example.com", Some(&entity));
    let (s, _) = api(
        &mut p,
        &member,
        "PUT",
        "/v1/entity",
        Some(json!({"embed_origins": ["https://shop.example.com"]})),
    );
    assert_eq!(s, 403);
    assert_eq!(stored(&mut p, &t), json!([]));
}

#[test]
fn the_page_may_be_framed_by_exactly_the_origins_when_opened_to_embed() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (_, sent) = sent_doc(
        &mut p,
        &t,
        json!([{"email": "s@y.se", "first_name": "Sam", "role": "signer"}]),
        json!({}),
    );
    let path = format!("/s/{}", secret_of(&sent, 0));

    // No origins: never framed, with or without the flag, and no origins embedded.
    for q in ["", "embed=1", "embed=1&hide_header=1"] {
        let r = page(&mut p, &path, q);
        assert_eq!(r.status, 200);
        assert_eq!(frame_ancestors(&r), "frame-ancestors 'none'", "{q}");
        assert_eq!(header(&r, "x-frame-options"), Some("DENY"), "{q}");
        assert!(!html(&r).contains("esign-embed"), "{q}");
        assert!(html(&r).contains("<header class=\"top\">"), "{q}");
    }

    let origins = json!(["https://shop.example.com", "https://app.example.com:8443"]);
    assert_eq!(set(&mut p, &t, origins).0, 200);
    // Without the flag: as ever.
    for q in ["", "embed=0", "hide_header=1"] {
        let r = page(&mut p, &path, q);
        assert_eq!(frame_ancestors(&r), "frame-ancestors 'none'", "{q}");
        assert_eq!(header(&r, "x-frame-options"), Some("DENY"), "{q}");
        assert!(!html(&r).contains("esign-embed"), "{q}");
    }
    // With it: exactly those origins, no X-Frame-Options, the rest of the policy kept.
    let r = page(&mut p, &path, "embed=1");
    assert_eq!(
        frame_ancestors(&r),
        "frame-ancestors https://shop.example.com https://app.example.com:8443"
    );
    assert_eq!(header(&r, "x-frame-options"), None);
    let csp = header(&r, "content-security-policy").unwrap();
    assert!(csp.contains("script-src 'self';") && csp.contains("default-src 'none'"));
    assert_eq!(
        r.headers
            .iter()
            .filter(|(n, _)| n == "content-security-policy")
            .count(),
        1
    );
    let body = html(&r);
    assert!(body.contains(
        "<script type=\"application/json\" id=\"esign-embed\">{\"origins\":[\"https://shop.example.com\",\"https://app.example.com:8443\"]}</script>"
    ), "{body}");
    assert!(body.contains("<header class=\"top\">"));
    let r = page(&mut p, &path, "embed=1&hide_header=1");
    assert!(html(&r).contains("<header class=\"top\" hidden>"));

    // An unknown link is never framed.
    let r = page(&mut p, "/s/not-a-real-secret", "embed=1");
    assert_eq!(frame_ancestors(&r), "frame-ancestors 'none'");
    // Nor is the JSON view, nor the app.
    let mut req = request(Origin::Http, "GET", &path, None);
    req.query = "embed=1".into();
    let r = handle(&mut p, &req);
    assert_eq!(frame_ancestors(&r), "frame-ancestors 'none'");
    let r = page(&mut p, "/app", "embed=1");
    assert_eq!(frame_ancestors(&r), "frame-ancestors 'none'");
}

#[test]
fn embed_js_is_served() {
    let mut p = bootstrapped();
    let r = handle(&mut p, &request(Origin::Http, "GET", "/embed.js", None));
    assert_eq!(r.status, 200);
    assert_eq!(
        header(&r, "content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert_eq!(header(&r, "cache-control"), Some("public, max-age=300"));
    let js = html(&r);
    assert!(js.contains("esign.mount") || js.contains("mount,"));
    assert!(js.len() < 8192, "a few KB: {}", js.len());
    for e in [
        "esign:loaded",
        "esign:viewed",
        "esign:field",
        "esign:signed",
        "esign:approved",
        "esign:rejected",
        "esign:completed",
        "esign:error",
    ] {
        assert!(js.contains(e), "{e}");
    }
}
