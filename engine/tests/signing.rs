//! Native tests of fields, signatures and the signing page's routes on the in-memory
//! platform: what the API accepts and refuses, what a signer must give, what the render
//! of a signed document is asked to draw, and the page's safety rules.

mod common;

use common::*;
use esign_engine::memory::MemoryPlatform;
use esign_engine::{Block, JobOutcome, Origin, StampContent, handle};
use serde_json::{Value, json};

const PNG_1X1: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

fn field(kind: &str, page: u32, rid: &str, extra: Value) -> Value {
    let mut f = json!({"field_type": kind, "page_num": page, "field_left": 100, "field_top": 600,
                       "field_width": 200, "field_height": 40, "recipient_id": rid});
    for (k, v) in extra.as_object().unwrap() {
        f[k] = v.clone();
    }
    f
}

#[test]
fn fields_are_checked_listed_replaced_and_frozen_after_sending() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (id, doc) = draft(
        &mut p,
        &t,
        json!([{"email": "s@x.se", "first_name": "Sam"}, {"email": "c@x.se", "role": "cc"}]),
        json!({}),
    );
    let signer = doc["recipients"][0]["id"].as_str().unwrap().to_string();
    let cc = doc["recipients"][1]["id"].as_str().unwrap().to_string();
    let path = format!("/v1/documents/{id}/fields");
    let bad = [
        (field("stamp", 1, &signer, json!({})), "invalid_field"),
        (field("text", 3, &signer, json!({})), "invalid_page"),
        (
            field("text", 1, &signer, json!({"field_left": 500})),
            "invalid_position",
        ),
        (
            field("text", 1, &signer, json!({"field_width": 0})),
            "invalid_position",
        ),
        (field("text", 1, "nobody", json!({})), "invalid_recipient"),
        (field("signature", 1, &cc, json!({})), "invalid_recipient"),
        (field("signature", 1, "", json!({})), "missing_field"),
        (
            field("text", 1, &signer, json!({"field_top": "x"})),
            "invalid_field",
        ),
        (
            field("text", 1, &signer, json!({"page_id": "nope"})),
            "invalid_page",
        ),
    ];
    for (f, code) in bad {
        let (s, b) = api(&mut p, &t, "POST", &path, Some(f.clone()));
        assert_eq!(
            (s, b["error"].as_str().unwrap_or("")),
            (400, code),
            "{f} -> {b}"
        );
    }
    let (s, b) = api(
        &mut p,
        &t,
        "POST",
        &path,
        Some(field(
            "text",
            2,
            &signer,
            json!({"field_label": "Company", "is_required": true}),
        )),
    );
    assert_eq!(s, 200, "{b}");
    let text_id = b["field_id"].as_str().unwrap().to_string();
    let (s, b) = api(
        &mut p,
        &t,
        "POST",
        &path,
        Some(field("signature", 2, &signer, json!({"field_top": 700}))),
    );
    assert_eq!(s, 200, "{b}");
    let (s, list) = api(&mut p, &t, "GET", &path, None);
    assert_eq!(s, 200);
    let fields = list["fields"].as_array().unwrap();
    assert_eq!(fields.len(), 2);
    assert_eq!(list["editor_fields"], json!([]));
    let f = &fields[0];
    assert_eq!(f["field_id"], text_id.as_str());
    assert_eq!(f["field_type"], "text");
    assert_eq!(f["field_label"], "Company");
    assert_eq!(f["is_required"], true);
    assert_eq!(f["page_num"], 2);
    assert!(f["page_id"].as_str().unwrap().ends_with("-2"));
    assert_eq!(f["recipient_id"], signer.as_str());
    assert_eq!(f["recipient_name"], "Sam");
    assert_eq!(
        (
            f["field_left"].as_f64(),
            f["field_top"].as_f64(),
            f["field_width"].as_f64(),
            f["field_height"].as_f64()
        ),
        (Some(100.0), Some(600.0), Some(200.0), Some(40.0))
    );
    assert_eq!(fields[1]["is_required"], true, "signatures are required");
    let (_, d) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}"), None);
    assert_eq!(d["field_count"], 2);

    // PUT: values by id; an unknown id changes nothing.
    let (s, b) = api(
        &mut p,
        &t,
        "PUT",
        &path,
        Some(
            json!({"editor_fields": [{"id": text_id, "value": "Acme"}, {"id": "zzz", "value": "x"}]}),
        ),
    );
    assert_eq!((s, b["error"].as_str()), (400, Some("unknown_field")));
    let (s, _) = api(
        &mut p,
        &t,
        "PUT",
        &path,
        Some(json!({"editor_fields": [{"id": text_id, "value": "Acme"}]})),
    );
    assert_eq!(s, 204);
    assert_eq!(
        api(&mut p, &t, "GET", &path, None).1["fields"][0]["field_value"],
        "Acme"
    );
    // PUT: a whole new set, keeping a named field's id.
    let mut keep = field(
        "check",
        1,
        &signer,
        json!({"field_width": 20, "field_height": 20}),
    );
    keep["field_id"] = text_id.clone().into();
    let (s, b) = api(&mut p, &t, "PUT", &path, Some(json!({"fields": [keep]})));
    assert_eq!(s, 204, "{b}");
    let (_, list) = api(&mut p, &t, "GET", &path, None);
    assert_eq!(list["fields"].as_array().unwrap().len(), 1);
    assert_eq!(list["fields"][0]["field_id"], text_id.as_str());
    assert_eq!(list["fields"][0]["field_type"], "check");

    // After sending, the fields are frozen.
    let (s, _) = api(
        &mut p,
        &t,
        "POST",
        &format!("/v1/documents/{id}/send"),
        None,
    );
    assert_eq!(s, 200);
    let (s, b) = api(
        &mut p,
        &t,
        "POST",
        &path,
        Some(field("text", 1, &signer, json!({}))),
    );
    assert_eq!((s, b["error"].as_str()), (400, Some("invalid_status")));
    let (s, b) = api(&mut p, &t, "PUT", &path, Some(json!({"fields": []})));
    assert_eq!((s, b["error"].as_str()), (400, Some("invalid_status")));
}

#[test]
fn a_signer_fills_required_fields_and_signs_and_the_render_stamps_them() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (id, doc) = draft(
        &mut p,
        &t,
        json!([{"email": "a@y.se", "first_name": "Ann"}, {"email": "b@y.se", "first_name": "Bo"}]),
        json!({"is_signing_initials": true}),
    );
    let ann = doc["recipients"][0]["id"].as_str().unwrap().to_string();
    let path = format!("/v1/documents/{id}/fields");
    let mut ids = Vec::new();
    for f in [
        field(
            "text",
            1,
            &ann,
            json!({"is_required": true, "field_label": "Title"}),
        ),
        field(
            "check",
            1,
            &ann,
            json!({"field_top": 650, "field_width": 20, "field_height": 20}),
        ),
        field("signature", 2, &ann, json!({})),
        field(
            "initials",
            1,
            &ann,
            json!({"field_top": 700, "field_width": 60}),
        ),
        field(
            "text",
            1,
            "",
            json!({"field_top": 10, "field_value": "Ref 42"}),
        ),
    ] {
        let (s, b) = api(&mut p, &t, "POST", &path, Some(f));
        assert_eq!(s, 200, "{b}");
        ids.push(b["field_id"].as_str().unwrap().to_string());
    }
    let (s, sent) = api(
        &mut p,
        &t,
        "POST",
        &format!("/v1/documents/{id}/send"),
        None,
    );
    assert_eq!(s, 200);
    // The render at sending draws the sender's value only.
    let order = finish_render(&mut p, 3);
    assert_eq!(order.stamps.len(), 1);
    assert_eq!(order.stamps[0].content, StampContent::Text("Ref 42".into()));
    assert_eq!((order.stamps[0].page, order.stamps[0].top), (0, 10.0));

    let ann_secret = secret_of(&sent, 0);
    let bo_secret = secret_of(&sent, 1);
    // Ann's view: her fields and the sender's, the page images.
    let (s, view) = recipient(&mut p, "GET", &format!("/v1/recipient/{ann_secret}"), None);
    assert_eq!(s, 200);
    assert_eq!(view["fields"].as_array().unwrap().len(), 5);
    assert_eq!(view["pages"].as_array().unwrap().len(), 3);
    assert_eq!(view["pages"][0]["points"], json!([595.0, 842.0]));
    assert!(
        view["pages"][2]["points"].is_null(),
        "the summary page has no fields"
    );
    let img = view["pages"][1]["image"].as_str().unwrap().to_string();
    let resp = handle(&mut p, &request(Origin::Http, "GET", &img, None));
    assert_eq!(resp.status, 200);
    assert!(resp.body.starts_with(b"\x89PNG"));
    // Bo's view does not show Ann's fields.
    let (_, bo_view) = recipient(&mut p, "GET", &format!("/v1/recipient/{bo_secret}"), None);
    assert_eq!(bo_view["fields"].as_array().unwrap().len(), 1);

    let sign = format!("/v1/recipient/{ann_secret}/sign");
    let sig = json!({"type": "drawn", "image": PNG_1X1});
    let initials = json!({"text": "AL"});
    let cases = [
        (
            json!({"signature": sig, "initials": initials}),
            "required_fields_missing",
        ),
        (
            json!({"fields": {(ids[0].clone()): "CEO"}, "initials": initials}),
            "signature_required",
        ),
        (
            json!({"fields": {(ids[0].clone()): "CEO"}, "signature": sig}),
            "initials_required",
        ),
        (
            json!({"fields": {(ids[4].clone()): "x"}, "signature": sig, "initials": initials}),
            "unknown_field",
        ),
        (
            json!({"fields": {(ids[0].clone()): "CEO"}, "signature": {"type": "drawn"}, "initials": initials}),
            "missing_field",
        ),
        (
            json!({"fields": {(ids[0].clone()): "CEO"}, "signature": {"type": "typed", "name": " "}, "initials": initials}),
            "missing_field",
        ),
        (
            json!({"fields": {(ids[0].clone()): "CEO"}, "signature": {"image": "data:image/png;base64,R0lGODlh"}, "initials": initials}),
            "invalid_image",
        ),
    ];
    for (b, code) in cases {
        let (s, r) = recipient(&mut p, "POST", &sign, Some(b.clone()));
        assert_eq!(
            (s, r["error"].as_str().unwrap_or("")),
            (400, code),
            "{b} -> {r}"
        );
    }
    let blobs_before = p.blobs.len();
    let (s, r) = recipient(
        &mut p,
        "POST",
        &sign,
        Some(
            json!({"fields": {(ids[0].clone()): "CEO", (ids[1].clone()): true},
                    "signature": sig, "initials": initials}),
        ),
    );
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["recipient_status"], "signed");
    assert_eq!(
        p.blobs.len(),
        blobs_before + 1,
        "the drawn signature is stored"
    );
    // Values are visible to the sender.
    let (_, list) = api(&mut p, &t, "GET", &path, None);
    assert_eq!(list["fields"][0]["field_value"], "CEO");
    assert_eq!(list["fields"][1]["field_value"], "1");

    // Bo has no fields: a typed signature without an image is enough; the document is
    // complete and rendered again with everything stamped.
    let (s, r) = recipient(
        &mut p,
        "POST",
        &format!("/v1/recipient/{bo_secret}/sign"),
        Some(
            json!({"signature": {"type": "typed", "name": "Bo Berg"}, "initials": {"text": "BB"}}),
        ),
    );
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["status"], "signed");
    let signed_event = p
        .events
        .iter()
        .rev()
        .find(|e| e.kind == "document.signed")
        .unwrap();
    let payload: Value = serde_json::from_str(&signed_event.payload).unwrap();
    let types: Vec<&str> = payload["recipient"]["signing_methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["type"].as_str().unwrap())
        .collect();
    assert!(
        types.contains(&"signature") && types.contains(&"initials"),
        "{types:?}"
    );
    let order = finish_render(&mut p, 3);
    let content = |page: u32, top: f32| {
        order
            .stamps
            .iter()
            .find(|s| s.page == page && s.top == top)
            .map(|s| s.content.clone())
    };
    assert_eq!(content(0, 600.0), Some(StampContent::Text("CEO".into())));
    assert_eq!(content(0, 650.0), Some(StampContent::Check));
    assert!(
        matches!(content(1, 600.0), Some(StampContent::Image(_))),
        "Ann's drawn signature"
    );
    assert_eq!(
        content(0, 700.0),
        Some(StampContent::Text("AL".into())),
        "typed initials"
    );
    assert_eq!(content(0, 10.0), Some(StampContent::Text("Ref 42".into())));
    // The audit certificate shows every signature: Ann's drawn one, Bo's typed name
    // (he had no signature field).
    let sigs: Vec<_> = order
        .summary
        .iter()
        .filter_map(|b| match b {
            Block::Signature(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(sigs.len(), 2, "{sigs:?}");
    assert!(
        sigs.iter()
            .any(|s| s.image.is_some() && s.caption.starts_with("Ann"))
    );
    assert!(
        sigs.iter().any(|s| s.image.is_none()
            && s.text == "Bo Berg"
            && s.caption.starts_with("Bo, signed")),
        "{sigs:?}"
    );
    assert!(order.seal.is_some(), "the final render is sealed");
    // The signed view says the final file is ready.
    let (_, v) = recipient(&mut p, "GET", &format!("/v1/recipient/{bo_secret}"), None);
    assert_eq!(v["document"]["final_ready"], true);

    // Deleting the document erases fields, signatures, images and their blobs.
    api(&mut p, &t, "DELETE", &format!("/v1/documents/{id}"), None);
    let (s, _) = api(&mut p, &t, "DELETE", &format!("/v1/documents/{id}"), None);
    assert_eq!(s, 204);
    let erase = take_jobs(&mut p, "doc.erase").remove(0);
    assert_eq!(run(&mut p, &erase, None), JobOutcome::Done);
    let left = keys_containing(&p, &[&id]);
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(p.blobs.is_empty(), "left blobs: {:?}", p.blobs.keys());
}

fn header<'a>(resp: &'a esign_engine::Response, name: &str) -> Option<&'a str> {
    resp.headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn page_get(p: &mut MemoryPlatform, path: &str, accept: &str) -> esign_engine::Response {
    let mut req = request(Origin::Http, "GET", path, None);
    req.headers.push(("accept".into(), accept.into()));
    handle(p, &req)
}

/// Name, email, company and title fields take the signer's own data when they sign: the
/// sender cannot give them a value, the signer's view shows what signing puts in, and
/// the final render stamps it.
#[test]
fn name_email_company_and_title_fields_are_filled_from_the_signer_s_data() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (id, doc) = draft(
        &mut p,
        &t,
        json!([{"email": "ann@y.se", "first_name": "Ann", "last_name": "Lee",
                "company_name": "Acme AB", "title": "CEO"}]),
        json!({}),
    );
    let ann = doc["recipients"][0]["id"].as_str().unwrap().to_string();
    let path = format!("/v1/documents/{id}/fields");
    for (kind, bad) in [
        ("company", json!({"field_value": "Other"})),
        ("name", json!({"recipient_id": ""})),
    ] {
        let (s, b) = api(
            &mut p,
            &t,
            "POST",
            &path,
            Some(field(kind, 1, &ann, bad.clone())),
        );
        assert_eq!(s, 400, "{kind} {bad}: {b}");
    }
    let kinds = ["name", "email", "company", "title"];
    for (i, kind) in kinds.iter().enumerate() {
        let top = 100.0 + 50.0 * i as f64;
        let (s, b) = api(
            &mut p,
            &t,
            "POST",
            &path,
            Some(field(kind, 1, &ann, json!({"field_top": top}))),
        );
        assert_eq!(s, 200, "{kind}: {b}");
    }
    let (s, sent) = api(
        &mut p,
        &t,
        "POST",
        &format!("/v1/documents/{id}/send"),
        None,
    );
    assert_eq!(s, 200, "{sent}");
    finish_render(&mut p, 3);
    let secret = secret_of(&sent, 0);
    let (_, view) = recipient(&mut p, "GET", &format!("/v1/recipient/{secret}"), None);
    let shown: Vec<(&str, &str)> = view["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["type"].as_str().unwrap(), f["value"].as_str().unwrap()))
        .collect();
    let want = [
        ("name", "Ann Lee"),
        ("email", "ann@y.se"),
        ("company", "Acme AB"),
        ("title", "CEO"),
    ];
    assert_eq!(shown, want, "the view shows what signing puts in");
    // Values are not the signer's to type.
    let (_, list) = api(&mut p, &t, "GET", &path, None);
    let first = list["fields"][0]["field_id"].as_str().unwrap().to_string();
    let (s, r) = recipient(
        &mut p,
        "POST",
        &format!("/v1/recipient/{secret}/sign"),
        Some(
            json!({"fields": {(first): "Someone else"}, "signature": {"type": "typed", "name": "Ann Lee"}}),
        ),
    );
    assert_eq!(
        (s, r["error"].as_str().unwrap_or("")),
        (400, "unknown_field"),
        "{r}"
    );
    let (s, r) = recipient(
        &mut p,
        "POST",
        &format!("/v1/recipient/{secret}/sign"),
        Some(json!({"signature": {"type": "typed", "name": "Ann Lee"}})),
    );
    assert_eq!(s, 200, "{r}");
    let (_, list) = api(&mut p, &t, "GET", &path, None);
    let values: Vec<&str> = list["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field_value"].as_str().unwrap())
        .collect();
    assert_eq!(values, ["Ann Lee", "ann@y.se", "Acme AB", "CEO"]);
    let order = finish_render(&mut p, 3);
    for (i, (_, value)) in want.iter().enumerate() {
        let top = 100.0 + 50.0 * i as f32;
        let stamp = order.stamps.iter().find(|s| s.page == 0 && s.top == top);
        assert_eq!(
            stamp.map(|s| s.content.clone()),
            Some(StampContent::Text((*value).into())),
            "{value}"
        );
    }
}

#[test]
fn the_link_serves_a_page_to_browsers_and_json_to_clients() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (id, sent) = sent_doc(
        &mut p,
        &t,
        json!([{"email": "s@x.se"}]),
        json!({"value": 1250.5}),
    );
    let secret = secret_of(&sent, 0);
    let path = format!("/s/{secret}");
    let html = page_get(&mut p, &path, "text/html,application/xhtml+xml,*/*;q=0.8");
    assert_eq!(html.status, 200);
    assert_eq!(
        header(&html, "content-type"),
        Some("text/html; charset=utf-8")
    );
    let csp = header(&html, "content-security-policy").unwrap();
    assert!(csp.contains("frame-ancestors 'none'") && csp.contains("script-src 'self'"));
    assert!(!csp.contains("unsafe-inline"));
    assert_eq!(header(&html, "referrer-policy"), Some("no-referrer"));
    assert_eq!(header(&html, "cache-control"), Some("no-store"));
    let text = String::from_utf8(html.body).unwrap();
    assert!(text.contains("<h1>Contract</h1>"), "{text}");
    assert!(text.contains("1,250.50"));
    assert!(text.contains("id=\"esign-data\""));
    // Its script and style are served from the engine, cached for good.
    let js_url = text
        .split("src=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    let (js_path, js_query) = js_url.split_once('?').unwrap();
    let mut req = request(Origin::Http, "GET", js_path, None);
    req.query = js_query.into();
    let js = handle(&mut p, &req);
    assert_eq!(js.status, 200);
    assert!(header(&js, "cache-control").unwrap().contains("immutable"));
    assert_eq!(
        handle(&mut p, &request(Origin::Http, "GET", "/s/_/nope.js", None)).status,
        404
    );
    // JSON for API clients, as before.
    let j = page_get(&mut p, &path, "application/json");
    assert_eq!(j.status, 200);
    assert_eq!(body(&j)["document"]["name"], "Contract");
    // An unknown link: a page saying so, 404.
    let gone = page_get(&mut p, "/s/not-a-real-secret", "text/html");
    assert_eq!(gone.status, 404);
    assert!(
        String::from_utf8(gone.body)
            .unwrap()
            .contains("This link does not work")
    );
    // Recalled: 410 with a page (and 410 JSON for clients).
    let (s, _) = api(&mut p, &t, "DELETE", &format!("/v1/documents/{id}"), None);
    assert_eq!(s, 204);
    let recalled = page_get(&mut p, &path, "text/html");
    assert_eq!(recalled.status, 410);
    assert!(
        String::from_utf8(recalled.body)
            .unwrap()
            .contains("withdrew")
    );
    assert_eq!(page_get(&mut p, &path, "application/json").status, 410);
}

#[test]
fn cross_site_posts_are_refused_and_acts_are_rate_limited() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (_, sent) = sent_doc(&mut p, &t, json!([{"email": "s@x.se"}]), json!({}));
    let secret = secret_of(&sent, 0);
    let comment = format!("/v1/recipient/{secret}/comment");
    let mut req = request(Origin::Http, "POST", &comment, Some(json!({"text": "hi"})));
    req.headers
        .push(("origin".into(), "https://evil.example".into()));
    let resp = handle(&mut p, &req);
    assert_eq!(resp.status, 403);
    assert_eq!(body(&resp)["error"], "cross_site_request");
    // Too long a comment.
    let (s, b) = recipient(
        &mut p,
        "POST",
        &comment,
        Some(json!({"text": "x".repeat(4001)})),
    );
    assert_eq!((s, b["error"].as_str()), (400, Some("invalid_field")));
    // 30 acts a minute, then 429 with Retry-After (the refused ones above count too).
    let mut statuses = Vec::new();
    for _ in 0..30 {
        statuses.push(recipient(&mut p, "POST", &comment, Some(json!({"text": "hi"}))).0);
    }
    assert!(statuses[..29].iter().all(|&s| s == 200), "{statuses:?}");
    assert_eq!(statuses[29], 429);
    let mut req = request(Origin::Http, "POST", &comment, Some(json!({"text": "hi"})));
    req.headers
        .push(("origin".into(), "http://127.0.0.1:8080".into()));
    let resp = handle(&mut p, &req);
    assert_eq!(resp.status, 429);
    let wait: u64 = header(&resp, "retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait));
    // The next minute it works again.
    p.now_ms += 60_000;
    assert_eq!(
        recipient(&mut p, "POST", &comment, Some(json!({"text": "hi"}))).0,
        200
    );
}

#[test]
fn with_a_signing_order_the_next_signer_is_mailed_even_after_opening_early() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (_, sent) = sent_doc(
        &mut p,
        &t,
        json!([{"email": "a@y.se", "order_num": 1}, {"email": "b@y.se", "order_num": 2},
               {"email": "c@y.se", "order_num": 2}]),
        json!({"is_signing_order": true}),
    );
    let mailed = |p: &MemoryPlatform, to: &str| p.mails.iter().filter(|m| m.to == to).count();
    assert_eq!(mailed(&p, "a@y.se"), 1);
    assert_eq!(mailed(&p, "b@y.se"), 0, "not their turn");
    // b opens early: viewed, told whom they wait for, cannot sign.
    let b = secret_of(&sent, 1);
    let (s, _) = recipient(
        &mut p,
        "POST",
        &format!("/v1/recipient/{b}/view"),
        Some(json!({})),
    );
    assert_eq!(s, 200);
    let (_, v) = recipient(&mut p, "GET", &format!("/v1/recipient/{b}"), None);
    assert_eq!(v["recipient"]["status"], "viewed");
    assert_eq!(v["waiting_for"], json!(["a@y.se"]));
    let (s, r) = recipient(
        &mut p,
        "POST",
        &format!("/v1/recipient/{b}/sign"),
        Some(json!({})),
    );
    assert_eq!((s, r["error"].as_str()), (403, Some("not_allowed")));
    // a signs: the whole second group is mailed once, b included.
    let a = secret_of(&sent, 0);
    let (s, r) = recipient(
        &mut p,
        "POST",
        &format!("/v1/recipient/{a}/sign"),
        Some(json!({})),
    );
    assert_eq!(s, 200, "{r}");
    assert_eq!((mailed(&p, "b@y.se"), mailed(&p, "c@y.se")), (1, 1));
    let (_, v) = recipient(&mut p, "GET", &format!("/v1/recipient/{b}"), None);
    assert_eq!(v["waiting_for"], json!([]));
    assert_eq!(v["recipient"]["status"], "viewed", "opening early is kept");
    // b signs: c is in the same group and was mailed already; nobody is mailed twice.
    let (s, _) = recipient(
        &mut p,
        "POST",
        &format!("/v1/recipient/{b}/sign"),
        Some(json!({})),
    );
    assert_eq!(s, 200);
    assert_eq!((mailed(&p, "b@y.se"), mailed(&p, "c@y.se")), (1, 1));
}

/// A recipient request carrying `cookie` (the verification session), as a browser sends it.
fn with_cookie(
    p: &mut MemoryPlatform,
    method: &str,
    path: &str,
    b: Option<Value>,
    cookie: &str,
) -> esign_engine::Response {
    let mut req = request(Origin::Http, method, path, b);
    req.headers
        .push(("origin".into(), "http://127.0.0.1:8080".into()));
    if !cookie.is_empty() {
        req.headers.push(("cookie".into(), cookie.into()));
    }
    handle(p, &req)
}

/// The `name=value` of a `Set-Cookie` header.
fn cookie_of(resp: &esign_engine::Response) -> String {
    header(resp, "set-cookie")
        .expect("a session cookie")
        .split(';')
        .next()
        .unwrap()
        .to_string()
}

/// The code in the last text message (or mail) to `to`.
fn last_code(p: &MemoryPlatform, to: &str) -> String {
    let text = p
        .sms
        .iter()
        .rev()
        .find(|m| m.to == to)
        .map(|m| m.text.clone())
        .or_else(|| {
            p.mails
                .iter()
                .rev()
                .find(|m| m.to == to)
                .map(|m| m.body.clone())
        })
        .expect("a code was sent");
    text.split_whitespace()
        .find(|w| {
            w.trim_end_matches('.').len() == 6
                && w.trim_end_matches('.').chars().all(|c| c.is_ascii_digit())
        })
        .unwrap()
        .trim_end_matches('.')
        .to_string()
}

#[test]
fn an_sms_code_guards_opening_and_five_wrong_codes_lock_the_link() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (id, sent) = sent_doc(
        &mut p,
        &t,
        json!([{"email": "a@y.se", "mobile": "+46701234567", "verify_sms_open": true},
               {"email": "b@y.se", "mobile": "+46709999999", "verify_sms": true, "verify_sms_open": true}]),
        json!({"value": 4321}),
    );
    let (_, d) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}"), None);
    assert_eq!(d["recipients"][0]["verify_sms_open"], true);
    assert_eq!(d["recipients"][0]["verify_sms_sign"], false);
    let a = secret_of(&sent, 0);
    let base = format!("/v1/recipient/{a}");
    // Before verifying: the page and the view show no content, and nothing else is
    // allowed.
    let html = page_get(&mut p, &format!("/s/{a}"), "text/html");
    let text = String::from_utf8(html.body).unwrap();
    assert!(text.contains("<h1>Contract</h1>"), "who sent what is shown");
    assert!(
        !text.contains("4,321") && !text.contains("<dt>Pages</dt>"),
        "{text}"
    );
    let (s, v) = recipient(&mut p, "GET", &base, None);
    assert_eq!(s, 200);
    assert_eq!(v["pages"], json!([]));
    assert_eq!(v["verification"]["open"][0]["method"], "sms");
    assert_eq!(v["verification"]["open"][0]["to"], "•••• •• 67");
    for (m, path) in [
        ("GET", "/pages/1"),
        ("GET", "/download"),
        ("GET", "/comments"),
        ("POST", "/view"),
        ("POST", "/sign"),
    ] {
        let (s, b) = recipient(
            &mut p,
            m,
            &format!("{base}{path}"),
            (m == "POST").then(|| json!({})),
        );
        assert_eq!(
            (s, b["error"].as_str()),
            (403, Some("verification_required")),
            "{m} {path}"
        );
    }
    // A code by SMS; a new one only after 30 s.
    let (s, r) = recipient(
        &mut p,
        "POST",
        &format!("{base}/verify/start"),
        Some(json!({"method": "sms"})),
    );
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["sent_to"], "•••• •• 67");
    assert_eq!(p.sms.last().unwrap().to, "+46701234567");
    let (s, r) = recipient(
        &mut p,
        "POST",
        &format!("{base}/verify/start"),
        Some(json!({"method": "sms"})),
    );
    assert_eq!((s, r["error"].as_str()), (429, Some("too_many_requests")));
    let code = last_code(&p, "+46701234567");
    // A wrong code costs a try; the right one opens a session.
    let wrong = if code == "000000" { "111111" } else { "000000" };
    let (s, r) = recipient(
        &mut p,
        "POST",
        &format!("{base}/verify"),
        Some(json!({"method": "sms", "code": wrong})),
    );
    assert_eq!(
        (s, r["error"].as_str()),
        (400, Some("verification_failed")),
        "{r}"
    );
    assert!(r["description"].as_str().unwrap().contains("4 tries left"));
    let resp = with_cookie(
        &mut p,
        "POST",
        &format!("{base}/verify"),
        Some(json!({"method": "sms", "code": code})),
        "",
    );
    assert_eq!(resp.status, 200, "{}", body(&resp));
    let set = header(&resp, "set-cookie").unwrap().to_string();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Lax") && set.contains("Path=/"),
        "{set}"
    );
    let cookie = cookie_of(&resp);
    // The code is used up.
    let (s, r) = recipient(
        &mut p,
        "POST",
        &format!("{base}/verify"),
        Some(json!({"method": "sms", "code": code})),
    );
    assert_eq!((s, r["error"].as_str()), (400, Some("no_code")));
    let v = body(&with_cookie(&mut p, "GET", &base, None, &cookie));
    assert_eq!(v["pages"].as_array().unwrap().len(), 3);
    assert_eq!(v["verification"]["passed"], json!(["sms"]));
    assert_eq!(
        with_cookie(&mut p, "GET", &format!("{base}/pages/1"), None, &cookie).status,
        200
    );
    // Another browser (no cookie) still cannot.
    assert_eq!(
        recipient(&mut p, "GET", &format!("{base}/pages/1"), None).0,
        403
    );
    // Signing needs no check here: the session is enough.
    let resp = with_cookie(
        &mut p,
        "POST",
        &format!("{base}/sign"),
        Some(json!({})),
        &cookie,
    );
    assert_eq!(resp.status, 200, "{}", body(&resp));

    // The second recipient gives five wrong codes: locked, and the sender is told.
    let b = secret_of(&sent, 1);
    let bbase = format!("/v1/recipient/{b}");
    recipient(
        &mut p,
        "POST",
        &format!("{bbase}/verify/start"),
        Some(json!({"method": "sms"})),
    );
    let right = last_code(&p, "+46709999999");
    let wrong = if right == "000000" {
        "111111"
    } else {
        "000000"
    };
    let mails_before = p.mails.len();
    for i in 1..=5 {
        let (s, r) = recipient(
            &mut p,
            "POST",
            &format!("{bbase}/verify"),
            Some(json!({"method": "sms", "code": wrong})),
        );
        if i < 5 {
            assert_eq!((s, r["error"].as_str()), (400, Some("verification_failed")));
        } else {
            assert_eq!((s, r["error"].as_str()), (403, Some("verification_locked")));
        }
    }
    let notice = &p.mails[mails_before..];
    assert_eq!(notice.len(), 1, "{notice:?}");
    assert_eq!(notice[0].to, "a@x.se", "the sender");
    assert!(notice[0].subject.contains("locked out"));
    // Even the right code does not help now.
    let (s, r) = recipient(
        &mut p,
        "POST",
        &format!("{bbase}/verify"),
        Some(json!({"method": "sms", "code": right})),
    );
    assert_eq!((s, r["error"].as_str()), (403, Some("verification_locked")));
    let (_, v) = recipient(&mut p, "GET", &bbase, None);
    assert_eq!(v["verification"]["locked"], true);
}

#[test]
fn codes_expire_and_a_recipient_without_a_mobile_gets_them_by_email() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (id, sent) = sent_doc(
        &mut p,
        &t,
        json!([{"email": "e@y.se", "verify_sms": true}]),
        json!({}),
    );
    let base = format!("/v1/recipient/{}", secret_of(&sent, 0));
    // Opening is free; signing needs the code (verify_sms alone: before signing).
    let (_, v) = recipient(&mut p, "GET", &base, None);
    assert_eq!(v["verification"]["open"], json!([]));
    assert_eq!(v["verification"]["sign"][0]["method"], "email");
    assert_eq!(v["verification"]["sign"][0]["to"], "e•••@y.se");
    let (s, r) = recipient(&mut p, "POST", &format!("{base}/sign"), Some(json!({})));
    assert_eq!(
        (s, r["error"].as_str()),
        (403, Some("verification_required"))
    );
    let (s, r) = recipient(
        &mut p,
        "POST",
        &format!("{base}/verify/start"),
        Some(json!({"method": "email"})),
    );
    assert_eq!(s, 200, "{r}");
    assert!(p.sms.is_empty(), "no SMS without a mobile number");
    let code = last_code(&p, "e@y.se");
    p.now_ms += 10 * 60 * 1000;
    let (s, r) = recipient(
        &mut p,
        "POST",
        &format!("{base}/verify"),
        Some(json!({"method": "email", "code": code})),
    );
    assert_eq!((s, r["error"].as_str()), (400, Some("code_expired")));
    recipient(
        &mut p,
        "POST",
        &format!("{base}/verify/start"),
        Some(json!({"method": "email"})),
    );
    let code = last_code(&p, "e@y.se");
    let resp = with_cookie(
        &mut p,
        "POST",
        &format!("{base}/verify"),
        Some(json!({"method": "email", "code": format!(" {code} ")})),
        "",
    );
    assert_eq!(resp.status, 200, "{}", body(&resp));
    let cookie = cookie_of(&resp);
    // A pass for signing is fresh for 10 minutes only.
    p.now_ms += 11 * 60 * 1000;
    let resp = with_cookie(
        &mut p,
        "POST",
        &format!("{base}/sign"),
        Some(json!({})),
        &cookie,
    );
    assert_eq!(resp.status, 403);
    p.now_ms += 31_000;
    recipient(
        &mut p,
        "POST",
        &format!("{base}/verify/start"),
        Some(json!({"method": "email"})),
    );
    let code = last_code(&p, "e@y.se");
    let resp = with_cookie(
        &mut p,
        "POST",
        &format!("{base}/verify"),
        Some(json!({"method": "email", "code": code})),
        &cookie,
    );
    assert_eq!(resp.status, 200);
    let resp = with_cookie(
        &mut p,
        "POST",
        &format!("{base}/sign"),
        Some(json!({})),
        &cookie,
    );
    assert_eq!(resp.status, 200, "{}", body(&resp));
    let (_, d) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}"), None);
    assert_eq!(d["recipients"][0]["signing_methods"][0]["type"], "email");
    assert_eq!(
        d["recipients"][0]["signing_methods"][1]["type"],
        "signature"
    );
}

#[test]
fn a_question_and_an_eid_check_before_signing_are_recorded_in_signing_methods() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    // eID needs a provider.
    let (s, b) = api(
        &mut p,
        &t,
        "POST",
        "/v1/documents",
        Some(json!({"name": "x", "recipients": [{"email": "q@y.se", "verify_eid": true}]})),
    );
    assert_eq!((s, b["error"].as_str()), (400, Some("eid_unavailable")));
    let (s, b) = api(
        &mut p,
        &t,
        "POST",
        "/v1/documents",
        Some(
            json!({"name": "x", "recipients": [{"email": "q@y.se", "verify_qna": true, "verify_qna_question": "Pet?"}]}),
        ),
    );
    assert_eq!(
        (s, b["error"].as_str()),
        (400, Some("invalid_recipient")),
        "{b}"
    );
    p.settings.eid_provider = "test".into();
    let (id, sent) = sent_doc(
        &mut p,
        &t,
        json!([{"email": "q@y.se", "verify_qna_sign": true, "verify_qna_question": "Your pet's name?",
                "verify_qna_answer": "  Rex ", "verify_eid": true, "verify_eid_type": "bankid"}]),
        json!({}),
    );
    let (_, d) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}"), None);
    assert_eq!(
        d["recipients"][0]["verify_qna_question"],
        "Your pet's name?"
    );
    assert!(
        d["recipients"][0].get("verify_qna_answer").is_none(),
        "never shown"
    );
    let secret = secret_of(&sent, 0);
    let base = format!("/v1/recipient/{secret}");
    let (_, v) = recipient(&mut p, "GET", &base, None);
    let methods: Vec<&str> = v["verification"]["sign"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["method"].as_str().unwrap())
        .collect();
    assert_eq!(methods, ["qna", "eid"]);
    assert_eq!(v["verification"]["sign"][0]["question"], "Your pet's name?");
    // The answer ignores case and surrounding spaces.
    let (s, r) = recipient(
        &mut p,
        "POST",
        &format!("{base}/verify"),
        Some(json!({"method": "qna", "answer": "cat"})),
    );
    assert_eq!((s, r["error"].as_str()), (400, Some("verification_failed")));
    let resp = with_cookie(
        &mut p,
        "POST",
        &format!("{base}/verify"),
        Some(json!({"method": "qna", "answer": "REX"})),
        "",
    );
    assert_eq!(resp.status, 200, "{}", body(&resp));
    let cookie = cookie_of(&resp);
    // eID still missing.
    let resp = with_cookie(
        &mut p,
        "POST",
        &format!("{base}/sign"),
        Some(json!({})),
        &cookie,
    );
    assert_eq!(resp.status, 403);
    assert!(body(&resp)["description"].as_str().unwrap().contains("eid"));
    let resp = with_cookie(
        &mut p,
        "POST",
        &format!("{base}/verify/start"),
        Some(json!({"method": "eid"})),
        &cookie,
    );
    assert_eq!(resp.status, 200);
    let redirect = body(&resp)["redirect_url"].as_str().unwrap().to_string();
    let session = redirect
        .split("session=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .to_string();
    // Coming back before the provider identified the person fails.
    let back = format!("/v1/eid/return/{session}");
    let resp = with_cookie(&mut p, "GET", &back, None, &cookie);
    assert_eq!(resp.status, 400, "{}", body(&resp));
    // A new start, identified this time.
    let resp = with_cookie(
        &mut p,
        "POST",
        &format!("{base}/verify/start"),
        Some(json!({"method": "eid"})),
        &cookie,
    );
    let redirect = body(&resp)["redirect_url"].as_str().unwrap().to_string();
    let session = redirect
        .split("session=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .to_string();
    p.eid_names.insert(session.clone(), "Quinn Q".into());
    let resp = with_cookie(
        &mut p,
        "GET",
        &format!("/v1/eid/return/{session}"),
        None,
        &cookie,
    );
    assert_eq!(resp.status, 303, "{}", body(&resp));
    assert_eq!(
        header(&resp, "location"),
        Some(format!("/s/{secret}").as_str())
    );
    assert_eq!(cookie_of(&resp), cookie, "the same session goes on");
    // Used once.
    assert_eq!(
        with_cookie(
            &mut p,
            "GET",
            &format!("/v1/eid/return/{session}"),
            None,
            &cookie
        )
        .status,
        404
    );
    let resp = with_cookie(
        &mut p,
        "POST",
        &format!("{base}/sign"),
        Some(json!({})),
        &cookie,
    );
    assert_eq!(resp.status, 200, "{}", body(&resp));
    let ev = p
        .events
        .iter()
        .rev()
        .find(|e| e.kind == "document.signed")
        .unwrap();
    let payload: Value = serde_json::from_str(&ev.payload).unwrap();
    let m = &payload["recipient"]["signing_methods"];
    assert_eq!(m[0]["type"], "qna");
    assert_eq!(m[1]["type"], "eid");
    assert_eq!(m[1]["verified_name"], "Quinn Q");
    assert!(m[1]["signed_at"].is_string());
    // An eID check started and never finished, then the document is deleted: the
    // erase forgets the checks, the sessions and the unfinished eID check.
    p.now_ms += 20 * 60 * 1000;
    let resp = with_cookie(
        &mut p,
        "POST",
        &format!("{base}/verify/start"),
        Some(json!({"method": "eid"})),
        &cookie,
    );
    assert_eq!(resp.status, 400, "signed already: {}", body(&resp));
    assert_eq!(body(&resp)["error"], "nothing_to_verify");
    for _ in 0..2 {
        api(&mut p, &t, "DELETE", &format!("/v1/documents/{id}"), None);
    }
    let erase = take_jobs(&mut p, "doc.erase").remove(0);
    assert_eq!(run(&mut p, &erase, None), JobOutcome::Done);
    let left = keys_containing(&p, &[&id, "reid/"]);
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn unfinished_eid_checks_are_forgotten_with_the_document() {
    let mut p = bootstrapped();
    p.settings.eid_provider = "test".into();
    let t = token(&mut p);
    let (id, sent) = sent_doc(
        &mut p,
        &t,
        json!([{"email": "q@y.se", "verify_eid_open": true}]),
        json!({}),
    );
    let base = format!("/v1/recipient/{}", secret_of(&sent, 0));
    for _ in 0..5 {
        let (s, r) = recipient(
            &mut p,
            "POST",
            &format!("{base}/verify/start"),
            Some(json!({"method": "eid"})),
        );
        assert_eq!(s, 200, "{r}");
    }
    let pending = |p: &MemoryPlatform| p.data.keys().filter(|k| k.starts_with(b"reid/")).count();
    assert_eq!(pending(&p), 3, "at most three unfinished checks are kept");
    for _ in 0..2 {
        api(&mut p, &t, "DELETE", &format!("/v1/documents/{id}"), None);
    }
    let erase = take_jobs(&mut p, "doc.erase").remove(0);
    assert_eq!(run(&mut p, &erase, None), JobOutcome::Done);
    assert_eq!(pending(&p), 0);
}

#[test]
fn a_recipient_cannot_claim_a_verification_and_a_mobile_only_recipient_gets_an_sms() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (_, sent) = sent_doc(
        &mut p,
        &t,
        json!([{"mobile": "+46700000001", "first_name": "Mo"}]),
        json!({}),
    );
    let link = sent["recipients"][0]["document_url"].as_str().unwrap();
    let sms = p
        .sms
        .iter()
        .find(|m| m.to == "+46700000001")
        .expect("the link by SMS");
    assert!(sms.text.contains(link), "{}", sms.text);
    let base = format!("/v1/recipient/{}", secret_of(&sent, 0));
    let (s, r) = recipient(
        &mut p,
        "POST",
        &format!("{base}/sign"),
        Some(json!({"signing_method": "eid", "verified_name": "Somebody Else"})),
    );
    assert_eq!((s, r["error"].as_str()), (400, Some("unknown_field")));
}

/// A template from a 2-page PDF with a `Client` signer role and `page_fields`, imported
/// (pages of 595 x 842); its id and the answer to the create.
fn template(p: &mut MemoryPlatform, t: &str, page_fields: Value) -> (u16, Value) {
    let (s, b) = api(
        p,
        t,
        "POST",
        "/v1/templates",
        Some(
            json!({"name": "Tpl", "file_content": "JVBERi0xLjQKZmFrZQ==", "file_name": "t.pdf",
                    "roles": [{"role_name": "Client", "role": "signer"}, {"role_name": "Boss", "role": "approver"}],
                    "page_fields": page_fields}),
        ),
    );
    if s != 200 {
        return (s, b);
    }
    let job = take_jobs(p, "template.import").remove(0);
    let blob = p.blobs.keys().last().unwrap().clone();
    assert_eq!(
        run(p, &job, Some(imported_pages(&blob, 2))),
        JobOutcome::Done
    );
    let id = b["id"].as_str().unwrap();
    api(p, t, "GET", &format!("/v1/templates/{id}"), None)
}

#[test]
fn fields_placed_on_a_template_go_to_the_recipient_in_their_role() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    // Shape and roles are checked at once.
    for (f, code) in [
        (
            json!({"field_type": "signature", "page_num": 1, "role_name": "Nobody", "field_left": 1, "field_top": 1, "field_width": 10, "field_height": 10}),
            "invalid_field",
        ),
        (
            json!({"field_type": "signature", "page_num": 1, "role_name": "Boss", "field_left": 1, "field_top": 1, "field_width": 10, "field_height": 10}),
            "invalid_field",
        ),
        (
            json!({"field_type": "signature", "page_num": 1, "field_left": 1, "field_top": 1, "field_width": 10, "field_height": 10}),
            "missing_field",
        ),
        (
            json!({"field_type": "text", "page_num": 0, "field_left": 1, "field_top": 1, "field_width": 10, "field_height": 10}),
            "invalid_page",
        ),
        (
            json!({"field_type": "text", "page_num": 1, "field_left": -1, "field_top": 1, "field_width": 10, "field_height": 10}),
            "invalid_position",
        ),
    ] {
        let (s, b) = template(&mut p, &t, json!([f]));
        assert_eq!((s, b["error"].as_str().unwrap_or("")), (400, code), "{b}");
    }
    // Pages are checked when the file is imported: a field off the pages fails it.
    let (s, tpl) = template(
        &mut p,
        &t,
        json!([{"field_type": "text", "page_num": 3, "field_left": 1, "field_top": 1, "field_width": 10, "field_height": 10}]),
    );
    assert_eq!(s, 200);
    assert_eq!(tpl["status"], "failed", "{tpl}");
    assert!(tpl["failure"].as_str().unwrap().contains("page 3"), "{tpl}");
    let (s, tpl) = template(
        &mut p,
        &t,
        json!([{"field_type": "signature", "page_num": 2, "role_name": "Client", "field_left": 72, "field_top": 700, "field_width": 200, "field_height": 50},
               {"field_type": "text", "page_num": 1, "field_left": 72, "field_top": 40, "field_width": 200, "field_height": 20, "field_value": "Ref 7"}]),
    );
    assert_eq!(s, 200);
    assert_eq!(tpl["status"], "ready", "{tpl}");
    assert_eq!(tpl["page_fields"].as_array().unwrap().len(), 2);
    let tid = tpl["id"].as_str().unwrap();
    let (s, doc) = api(
        &mut p,
        &t,
        "POST",
        "/v1/documents",
        Some(json!({"template_id": tid, "recipients": [
            {"email": "c@y.se", "role_name": "Client"}, {"email": "b@y.se", "role_name": "Boss"}]})),
    );
    assert_eq!(s, 200, "{doc}");
    let id = doc["id"].as_str().unwrap();
    let client = doc["recipients"][0]["id"].as_str().unwrap();
    let (_, list) = api(
        &mut p,
        &t,
        "GET",
        &format!("/v1/documents/{id}/fields"),
        None,
    );
    let fields = list["fields"].as_array().unwrap();
    assert_eq!(fields.len(), 2, "{list}");
    assert_eq!(fields[0]["field_type"], "signature");
    assert_eq!(fields[0]["recipient_id"], client);
    assert_eq!(fields[0]["page_num"], 2);
    assert_eq!(fields[1]["field_value"], "Ref 7");
    // A document whose recipients leave the role empty gets the sender's field only.
    let (_, doc2) = api(
        &mut p,
        &t,
        "POST",
        "/v1/documents",
        Some(json!({"template_id": tid, "recipients": [{"email": "x@y.se"}]})),
    );
    let id2 = doc2["id"].as_str().unwrap();
    let (_, list2) = api(
        &mut p,
        &t,
        "GET",
        &format!("/v1/documents/{id2}/fields"),
        None,
    );
    assert_eq!(list2["fields"].as_array().unwrap().len(), 1);
    assert_ne!(
        list2["fields"][0]["field_id"], fields[1]["field_id"],
        "ids are per document"
    );
}

#[test]
fn recipient_acts_at_their_edges() {
    let mut p = bootstrapped();
    p.settings.token_min_interval_ms = 0;
    let t = token(&mut p);
    let (id, sent) = sent_doc(
        &mut p,
        &t,
        json!([
            {"email": "one@x.se", "first_name": "One", "last_name": "S"},
            {"email": "two@x.se", "first_name": "Two", "last_name": "S"},
            {"email": "cc@x.se", "role": "cc"}
        ]),
        json!({}),
    );
    let act = |p: &mut MemoryPlatform, i: usize, what: &str, b: Value| {
        recipient(
            p,
            "POST",
            &format!("/v1/recipient/{}/{what}", secret_of(&sent, i)),
            Some(b),
        )
    };
    // Either claimed verification alone is refused.
    for b in [
        json!({"signing_method": "eid"}),
        json!({"verified_name": "Someone"}),
    ] {
        let (s, a) = act(&mut p, 0, "sign", b);
        assert_eq!(
            (s, a["error"].as_str()),
            (400, Some("unknown_field")),
            "{a}"
        );
    }
    // Each view counts.
    for _ in 0..3 {
        assert_eq!(act(&mut p, 0, "view", json!({})).0, 200);
    }
    let (_, d) = api(
        &mut p,
        &t,
        "GET",
        &format!("/v1/documents/{id}?with_stats=true"),
        None,
    );
    assert_eq!(d["stats"]["views"], 3, "{d}");
    // A comment of exactly the longest length is taken; one character more is not.
    let longest = "x".repeat(4000);
    assert_eq!(act(&mut p, 0, "comment", json!({"text": longest})).0, 200);
    let (s, a) = act(&mut p, 0, "comment", json!({"text": "x".repeat(4001)}));
    assert_eq!((s, a["error"].as_str()), (400, Some("invalid_field")));
    // The first of two signers: partially signed, with everyone's state in the event.
    assert_eq!(act(&mut p, 0, "sign", json!({})).0, 200);
    let partial = p
        .events
        .iter()
        .find(|e| e.kind == "document.partially_signed")
        .expect("a partially signed event");
    let payload: Value = serde_json::from_str(&partial.payload).unwrap();
    assert_eq!(payload["recipient"]["email"], "one@x.se", "{payload}");
    assert_eq!(
        payload["recipients"],
        json!([
            {"fullname": "One S", "role": "signer", "status": "signed"},
            {"fullname": "Two S", "role": "signer", "status": "sent"},
            {"fullname": "cc@x.se", "role": "cc", "status": "sent"}
        ]),
        "{payload}"
    );
    assert!(
        !p.events
            .iter()
            .any(|e| e.kind == "document.signed" || e.kind == "document.approved"),
        "a signature is neither the last one nor an approval"
    );
    // A CC cannot reject; a signer can, and a blank reason is no reason.
    let (s, _) = act(&mut p, 2, "reject", json!({"reason": "no"}));
    assert_eq!(s, 403);
    assert_eq!(act(&mut p, 1, "reject", json!({"reason": "   "})).0, 200);
    let st = status_of(&mut p, &t, &id);
    assert_eq!(st, json!({"status": "rejected", "rejection_reason": null}));
    // A reason that is given is kept.
    let (id, sent) = sent_doc(&mut p, &t, json!([{"email": "three@x.se"}]), json!({}));
    let path = format!("/v1/recipient/{}/reject", secret_of(&sent, 0));
    let (s, _) = recipient(&mut p, "POST", &path, Some(json!({"reason": " too dear "})));
    assert_eq!(s, 200);
    let st = status_of(&mut p, &t, &id);
    assert_eq!(st["rejection_reason"], " too dear ");
}

#[test]
fn signed_documents_sorted_by_created_are_sorted_by_their_signing() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (first, a) = sent_doc(&mut p, &t, json!([{"email": "a@y.se"}]), json!({}));
    p.now_ms += 60_000;
    let (second, b) = sent_doc(&mut p, &t, json!([{"email": "b@y.se"}]), json!({}));
    // The second is signed first.
    for sent in [&b, &a] {
        p.now_ms += 60_000;
        let path = format!("/v1/recipient/{}/sign", secret_of(sent, 0));
        let (s, answer) = recipient(&mut p, "POST", &path, Some(json!({})));
        assert_eq!(s, 200, "{answer}");
    }
    let order = |p: &mut MemoryPlatform, query: &str| -> Vec<String> {
        let (_, list) = api(p, &t, "GET", &format!("/v1/documents?{query}"), None);
        list.as_array()
            .unwrap()
            .iter()
            .map(|d| d["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        order(&mut p, "filter=signed&sort_by=created&sort_order=asc"),
        [second.clone(), first.clone()]
    );
    assert_eq!(
        order(&mut p, "filter=&sort_by=created&sort_order=asc"),
        [first, second]
    );
}

#[test]
fn page_view_times_add_up_per_page_and_bad_reports_are_refused() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (id, sent) = sent_doc(
        &mut p,
        &t,
        json!([
            {"email": "one@x.se", "first_name": "One", "last_name": "S"},
            {"email": "two@x.se", "first_name": "Two", "last_name": "S"}
        ]),
        json!({}),
    );
    let (_, pages) = api(
        &mut p,
        &t,
        "GET",
        &format!("/v1/documents/{id}/pages"),
        None,
    );
    let count = pages["page_count"].as_u64().unwrap();
    assert!(count >= 1, "{pages}");
    // Before any report every page answers zero seconds.
    for page in pages["pages"].as_array().unwrap() {
        assert_eq!(page["page_time"], 0.0, "{page}");
        assert_eq!(page["view_duration_seconds"], 0.0, "{page}");
    }
    let report = |p: &mut MemoryPlatform, i: usize, b: Value| {
        recipient(
            p,
            "POST",
            &format!("/v1/recipient/{}/page-views", secret_of(&sent, i)),
            Some(b),
        )
    };
    // Two recipients' reports add up on page 1; page 2 (when there is one) is its own.
    let (s, b) = report(
        &mut p,
        0,
        json!({"pages": [{"page_num": 1, "seconds": 12.5}]}),
    );
    assert_eq!(s, 204, "{b}");
    let mut second = vec![json!({"page_num": 1, "seconds": 2})];
    if count >= 2 {
        second.push(json!({"page_num": 2, "seconds": 0.25}));
    }
    assert_eq!(report(&mut p, 1, json!({"pages": second})).0, 204);
    let (_, pages) = api(
        &mut p,
        &t,
        "GET",
        &format!("/v1/documents/{id}/pages"),
        None,
    );
    assert_eq!(pages["pages"][0]["page_time"], 14.5, "{pages}");
    assert_eq!(pages["pages"][0]["view_duration_seconds"], 14.5, "{pages}");
    let (_, d) = api(
        &mut p,
        &t,
        "GET",
        &format!("/v1/documents/{id}?with_pages=true&with_stats=true"),
        None,
    );
    assert_eq!(d["pages"][0]["page_time"], 14.5, "{d}");
    assert_eq!(d["stats"]["pages"][0]["page_num"], 1, "{d}");
    assert_eq!(d["stats"]["pages"][0]["views"], 2, "{d}");
    if count >= 2 {
        assert_eq!(pages["pages"][1]["page_time"], 0.25, "{pages}");
        assert_eq!(d["stats"]["view_seconds"], 14.75, "{d}");
    } else {
        assert_eq!(d["stats"]["view_seconds"], 14.5, "{d}");
    }
    // What a report may not say: each refused whole, nothing added.
    let beyond = count + 1;
    for bad in [
        json!({}),
        json!({"pages": []}),
        json!({"pages": [{"page_num": 0, "seconds": 1}]}),
        json!({"pages": [{"page_num": beyond, "seconds": 1}]}),
        json!({"pages": [{"page_num": 1, "seconds": 0}]}),
        json!({"pages": [{"page_num": 1, "seconds": -3}]}),
        json!({"pages": [{"page_num": 1, "seconds": 3600.5}]}),
        json!({"pages": [{"page_num": 1, "seconds": "5"}]}),
        json!({"pages": [{"page_num": 1.5, "seconds": 5}]}),
        json!({"pages": [{"page_num": 1, "seconds": 1}, {"page_num": 1, "seconds": 1}]}),
        json!({"pages": [{"page_num": 1, "seconds": 1, "extra": true}]}),
        json!({"pages": [{"page_num": 1, "seconds": 1}], "more": 1}),
        json!({"pages": "page 1"}),
    ] {
        let (s, b) = report(&mut p, 0, bad.clone());
        assert_eq!(s, 400, "{bad} -> {b}");
        assert!(
            b["error"].is_string() && b["description"].is_string(),
            "{b}"
        );
    }
    let (_, after) = api(
        &mut p,
        &t,
        "GET",
        &format!("/v1/documents/{id}/pages"),
        None,
    );
    assert_eq!(after["pages"][0]["page_time"], 14.5, "{after}");
    // An unknown link is 404; another site's page may not report.
    let (s, _) = recipient(
        &mut p,
        "POST",
        "/v1/recipient/not-a-link/page-views",
        Some(json!({"pages": [{"page_num": 1, "seconds": 1}]})),
    );
    assert_eq!(s, 404);
    let mut req = request(
        Origin::Http,
        "POST",
        &format!("/v1/recipient/{}/page-views", secret_of(&sent, 0)),
        Some(json!({"pages": [{"page_num": 1, "seconds": 1}]})),
    );
    req.headers
        .push(("origin".into(), "https://elsewhere.example".into()));
    assert_eq!(handle(&mut p, &req).status, 403);
}

/// `PUT /v1/templates/{id}`: once imported, a template's name, roles and placed fields
/// are replaced (a document made afterwards gets the new fields for the recipient in
/// the new role); what does not fit its page, names a missing role or comes before the
/// import is refused whole.
#[test]
fn a_template_s_fields_and_roles_are_edited_after_its_import() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    // Before the import: 400 invalid_status.
    let (s, b) = api(
        &mut p,
        &t,
        "POST",
        "/v1/templates",
        Some(
            json!({"name": "Early", "file_content": "JVBERi0xLjQKZmFrZQ==", "file_name": "t.pdf"}),
        ),
    );
    assert_eq!(s, 200, "{b}");
    let early = b["id"].as_str().unwrap().to_string();
    // Its import never runs here.
    take_jobs(&mut p, "template.import");
    let (s, b) = api(
        &mut p,
        &t,
        "PUT",
        &format!("/v1/templates/{early}"),
        Some(json!({"name": "x"})),
    );
    assert_eq!(
        (s, b["error"].as_str()),
        (400, Some("invalid_status")),
        "{b}"
    );

    let (s, tpl) = template(&mut p, &t, json!([]));
    assert_eq!(s, 200, "{tpl}");
    let id = tpl["id"].as_str().unwrap().to_string();
    // Its pages are answered with their sizes.
    assert_eq!(tpl["pages"].as_array().map(Vec::len), Some(2), "{tpl}");
    assert_eq!(tpl["pages"][1]["page_num"], 2);
    assert_eq!(tpl["pages"][0]["page_width"].as_f64(), Some(595.0));
    let put = |p: &mut MemoryPlatform, b: Value| {
        api(p, &t, "PUT", &format!("/v1/templates/{id}"), Some(b))
    };
    let sig = |role: &str, page: u32, top: f64| {
        json!({"field_type": "signature", "page_num": page, "role_name": role,
               "field_left": 72, "field_top": top, "field_width": 200, "field_height": 50})
    };
    // Refused whole: off the page, a third page, a role it does not have, an empty name,
    // an unknown member.
    for (body, code) in [
        (
            json!({"page_fields": [sig("Client", 1, 800.0)]}),
            "invalid_position",
        ),
        (
            json!({"page_fields": [sig("Client", 3, 100.0)]}),
            "invalid_field",
        ),
        (
            json!({"page_fields": [sig("Buyer", 1, 100.0)]}),
            "invalid_field",
        ),
        (
            json!({"roles": [{"role_name": "Buyer"}], "page_fields": [sig("Client", 1, 100.0)]}),
            "invalid_field",
        ),
        (json!({"name": "  "}), "invalid_field"),
        (json!({"colour": "red"}), "unknown_field"),
    ] {
        let (s, b) = put(&mut p, body.clone());
        assert_eq!((s, b["error"].as_str()), (400, Some(code)), "{body}: {b}");
    }
    let (_, same) = api(&mut p, &t, "GET", &format!("/v1/templates/{id}"), None);
    assert_eq!(same["name"], "Tpl");
    assert_eq!(same["page_fields"], json!([]));
    // Renamed, a new signer role, and a field placed for it.
    let (s, b) = put(
        &mut p,
        json!({"name": "Offer", "roles": [{"role_name": "Buyer", "role": "signer"}],
               "page_fields": [sig("Buyer", 2, 100.0)]}),
    );
    assert_eq!(s, 204, "{b}");
    let (_, now) = api(&mut p, &t, "GET", &format!("/v1/templates/{id}"), None);
    assert_eq!(now["name"], "Offer");
    assert_eq!(now["roles"][0]["role_name"], "Buyer");
    assert_eq!(now["roles"].as_array().map(Vec::len), Some(1));
    assert_eq!(now["page_fields"][0]["page_num"], 2);
    // Roles alone: one its fields use must stay.
    let (s, b) = put(&mut p, json!({"roles": [{"role_name": "Other"}]}));
    assert_eq!(
        (s, b["error"].as_str()),
        (400, Some("invalid_field")),
        "{b}"
    );
    // A document from it: the field is the Buyer's.
    let (s, d) = api(
        &mut p,
        &t,
        "POST",
        "/v1/documents",
        Some(json!({"template_id": id, "name": "From the template",
                    "recipients": [{"first_name": "Bo", "last_name": "Buyer", "email": "bo@example.com", "role_name": "Buyer"}]})),
    );
    assert_eq!(s, 200, "{d}");
    let doc = d["id"].as_str().unwrap().to_string();
    let (_, f) = api(
        &mut p,
        &t,
        "GET",
        &format!("/v1/documents/{doc}/fields"),
        None,
    );
    let (_, d) = api(&mut p, &t, "GET", &format!("/v1/documents/{doc}"), None);
    assert_eq!(
        f["fields"][0]["recipient_id"], d["recipients"][0]["id"],
        "{f}"
    );
    assert_eq!(f["fields"][0]["page_num"], 2, "{f}");
    // No fields: [] removes them.
    let (s, _) = put(&mut p, json!({"page_fields": []}));
    assert_eq!(s, 204);
    let (_, now) = api(&mut p, &t, "GET", &format!("/v1/templates/{id}"), None);
    assert_eq!(now["page_fields"], json!([]));
}
