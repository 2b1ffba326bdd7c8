//! Documents, black-box: create (JSON, form, multipart; text-field rules; recipients),
//! the reads of spec §4.2, update, and the list with its filters, sorting, scopes and
//! paging.

mod common;

use common::*;
use serde_json::{Value, json};

#[test]
fn create_from_json_answers_the_detail_form_of_a_draft() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let doc = s.create_doc(
        &t,
        &json!({
            "name": "Offer 1", "value": 1200.5, "type": "sales", "external_id": "ext-1",
            "company_name": "ACME", "tags": "a, b,,a",
            "recipients": [role_signer("sam@example.com"),
                           {"email": "carl@example.com", "role": "cc", "fullname": "Carl Copy"}],
        }),
    );
    assert_eq!(doc["status"], "draft");
    assert_eq!(doc["name"], "Offer 1");
    assert_eq!(doc["value"], 1200.5);
    assert_eq!(doc["type"], "sales");
    assert_eq!(doc["tags"], "a,b");
    assert_eq!(doc["is_signing"], true, "a signer enables signing");
    assert_eq!(doc["send_date"], Value::Null);
    assert_eq!(doc["rejection_reason"], Value::Null);
    assert_eq!(doc["settings"]["expirationDays"], 30);
    for field in [
        "id",
        "external_id",
        "external_client_id",
        "company_id",
        "company_logo_url",
        "company_number",
        "created_at",
        "updated_at",
        "expiration_date",
        "user_id",
        "sender_name",
        "sender_email",
        "email_send_subject",
        "thumb_url",
        "preview_url",
        "app_url",
        "download_url",
        "parent_id",
        "external_editor_type",
        "external_editor_id",
        "auto_comment_text",
        "entity_auto_comment_text",
    ] {
        assert!(doc[field].is_string(), "{field} in {doc}");
    }
    for field in [
        "is_selfsign",
        "is_signing_biometric",
        "is_signing_initials",
        "is_private",
        "is_signing_order",
        "is_signing_forward",
        "is_identify_recipient",
        "is_video",
        "is_scheduled_sending",
        "is_reminder_sending",
        "is_signed",
        "is_auto_comment",
        "is_auto_comment_email",
    ] {
        assert!(doc[field].is_boolean(), "{field} in {doc}");
    }
    assert!(doc["unique_id"].is_u64() && doc["field_count"].is_u64());
    assert!(doc["created_at"].as_str().unwrap().ends_with("+00:00"));
    let r = &doc["recipients"][1];
    assert_eq!(r["fullname"], "Carl Copy");
    assert_eq!(r["role"], "cc");
    assert_eq!(r["status"], "added");
    assert_eq!(r["order_num"], "2");
    let id = doc["id"].as_str().unwrap();
    assert_eq!(s.events(&t, id), ["document.created"]);

    // The is_signing default: no recipients → on; recipients without a signer → off.
    let none = s.create_doc(&t, &json!({"name": "n"}));
    assert_eq!(none["is_signing"], true);
    let cc_only = s.create_doc(
        &t,
        &json!({"name": "n", "recipients": [{"email": "c@example.com", "role": "cc"}]}),
    );
    assert_eq!(cc_only["is_signing"], false);
    let explicit = s.create_doc(
        &t,
        &json!({"name": "n", "is_signing": false, "recipients": [role_signer("x@example.com")]}),
    );
    assert_eq!(explicit["is_signing"], false);
}

#[test]
fn every_recipient_needs_a_valid_email_or_mobile() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    for bad in [
        json!({"first_name": "No contact"}),
        json!({"email": "not-an-email"}),
        json!({"mobile": "12"}),
        json!({"email": "", "mobile": ""}),
    ] {
        let (status, body) = s.post_json(
            &t,
            "/v1/documents",
            &json!({"name": "n", "recipients": [bad]}),
        );
        assert_eq!(
            assert_error(status, &body, 400),
            "invalid_recipient",
            "{body}"
        );
    }
    let (status, body) = s.post_json(
        &t,
        "/v1/documents",
        &json!({"name": "n", "recipients": [{"mobile": "+46 70 123 45 67"}, {"email": "a@b.se"}]}),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = s.post_json(
        &t,
        "/v1/documents",
        &json!({"name": "n", "recipients": [{"email": "a@b.se", "role": "boss"}]}),
    );
    assert_eq!(assert_error(status, &body, 400), "invalid_recipient");
    // Nothing was created by the refused requests.
    let (_, list) = s.get_as(&t, "/v1/documents");
    assert_eq!(list.as_array().unwrap().len(), 1);
}

#[test]
fn form_and_multipart_fields_are_text() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    // Form-encoded: booleans are 1/0 and the text "false" counts as true.
    let (status, doc) = call(s.post("/v1/documents").bearer_auth(&t).form(&[
        ("name", "Form doc"),
        ("value", "99"),
        ("is_private", "false"),
        ("is_video", "0"),
        ("is_signing_order", "1"),
    ]));
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["name"], "Form doc");
    assert_eq!(doc["value"], 99.0);
    assert_eq!(doc["is_private"], true, "the text false counts as true");
    assert_eq!(doc["is_video"], false);
    assert_eq!(doc["is_signing_order"], true);
    // Arrays are not read from form-encoded bodies.
    let (status, body) = call(
        s.post("/v1/documents")
            .bearer_auth(&t)
            .form(&[("name", "x"), ("recipients", r#"[{"email":"a@b.se"}]"#)]),
    );
    assert_eq!(assert_error(status, &body, 400), "invalid_field");
    assert!(
        body["description"]
            .as_str()
            .unwrap()
            .contains("application/json")
    );

    // Multipart: the same text rules; recipients only from an application/json part.
    let recipients = json!([role_signer("m@example.com")]).to_string();
    let form = reqwest::blocking::multipart::Form::new()
        .text("name", "Multipart doc")
        .text("is_signing", "false")
        .part(
            "recipients",
            reqwest::blocking::multipart::Part::text(recipients.clone())
                .mime_str("application/json")
                .unwrap(),
        );
    let (status, doc) = call(s.post("/v1/documents").bearer_auth(&t).multipart(form));
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["is_signing"], true, "false is true in text bodies");
    assert_eq!(doc["recipients"][0]["email"], "m@example.com");
    let form = reqwest::blocking::multipart::Form::new()
        .text("name", "Multipart doc")
        .text("recipients", recipients);
    let (status, body) = call(s.post("/v1/documents").bearer_auth(&t).multipart(form));
    assert_eq!(assert_error(status, &body, 400), "invalid_field");
    // Only one file per create request.
    let pdf = esign_host::pdf::sample_pdf(1);
    let form = reqwest::blocking::multipart::Form::new()
        .part(
            "file",
            reqwest::blocking::multipart::Part::bytes(pdf.clone()).file_name("a.pdf"),
        )
        .part(
            "file",
            reqwest::blocking::multipart::Part::bytes(pdf).file_name("b.pdf"),
        );
    let (status, body) = call(s.post("/v1/documents").bearer_auth(&t).multipart(form));
    assert_eq!(assert_error(status, &body, 400), "too_many_files");
    // Malformed bodies and types.
    let (status, body) = call(
        s.post("/v1/documents")
            .bearer_auth(&t)
            .header("content-type", "text/csv")
            .body("a,b"),
    );
    assert_eq!(assert_error(status, &body, 400), "invalid_content_type");
    let (status, body) = s.post_json(&t, "/v1/documents", &json!({"name": "x", "value": "lots"}));
    assert_eq!(assert_error(status, &body, 400), "invalid_field");
    let (status, body) = s.post_json(
        &t,
        "/v1/documents",
        &json!({"name": "x", "expiration_date": "next week"}),
    );
    assert_eq!(assert_error(status, &body, 400), "invalid_field");
    let (status, body) = s.post_json(
        &t,
        "/v1/documents",
        &json!({"name": "x", "file_url": "http://example.com/a.pdf"}),
    );
    assert_eq!(assert_error(status, &body, 400), "invalid_field");
    let (status, _) = call(s.post("/v1/documents").json(&json!({"name": "x"})));
    assert_eq!(status, 401);
}

#[test]
fn detail_reads_flags_status_and_in_object() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let doc = s.create_doc(
        &t,
        &json!({"name": "Flags", "recipients": [role_signer("f@example.com")]}),
    );
    let id = doc["id"].as_str().unwrap();
    let (status, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    assert_eq!(status, 200);
    assert!(d.get("pages").is_none() && d.get("stats").is_none());
    // Any non-empty value other than 0 turns a flag on, false included.
    let (_, d) = s.get_as(
        &t,
        &format!("/v1/documents/{id}?with_pages=false&with_stats=1&with_attachments=yes&with_small_pages=0"),
    );
    assert!(d["pages"].is_array(), "{d}");
    assert!(d["stats"].is_object());
    assert!(d["attachments"].is_array());
    assert!(d.get("small_pages").is_none());
    let (_, arr) = s.get_as(&t, &format!("/v1/documents/{id}?in_object=false"));
    let arr = arr.as_array().expect("in_object gives an array");
    assert_eq!(arr.len(), 1);
    assert_eq!(arr[0]["id"], id);
    assert_eq!(arr[0]["recipient"]["email"], "f@example.com");
    assert!(arr[0]["entity"]["id"].is_string());
    assert!(arr[0]["custom_fields"].is_array());
    let (_, obj) = s.get_as(&t, &format!("/v1/documents/{id}?in_object=0"));
    assert!(obj.is_object());

    let (_, st) = s.get_as(&t, &format!("/v1/documents/{id}/status"));
    assert_eq!(st, json!({"status": "draft", "rejection_reason": null}));
    let (_, r) = s.get_as(&t, &format!("/v1/documents/{id}/recipients"));
    assert_eq!(r["recipients"][0]["email"], "f@example.com");
    let (_, p) = s.get_as(&t, &format!("/v1/documents/{id}/pages"));
    assert_eq!(p, json!({"page_count": 0, "pages": []}));
    let (status, body) = s.get_as(&t, &format!("/v1/documents/{id}/download"));
    assert_eq!(assert_error(status, &body, 404), "pdf_not_ready");

    // Comments: POST then GET.
    let (status, c) = s.post_json(
        &t,
        &format!("/v1/documents/{id}/comments"),
        &json!({"text": "Looks good"}),
    );
    assert_eq!(status, 200, "{c}");
    let (_, cs) = s.get_as(&t, &format!("/v1/documents/{id}/comments"));
    assert_eq!(cs[0]["text"], "Looks good");
    let (status, body) = s.post_json(&t, &format!("/v1/documents/{id}/comments"), &json!({}));
    assert_eq!(assert_error(status, &body, 400), "missing_field");
    // Every member is checked, even one a suggestion makes moot.
    let (status, body) = s.post_json(
        &t,
        &format!("/v1/documents/{id}/comments"),
        &json!({"text": "x", "suggestion": true, "internal": "maybe"}),
    );
    assert_eq!(assert_error(status, &body, 400), "invalid_field");
    assert_eq!(s.events(&t, id), ["document.created", "comment.created"]);
    // The log says who and when.
    let (_, log) = s.get_as(&t, &format!("/v1/documents/{id}/log"));
    let first = &log[0];
    assert_eq!(first["action"], "created");
    assert_eq!(first["actor"]["type"], "user");
    assert!(first["at"].as_str().unwrap().ends_with("+00:00"));

    for path in [
        "/v1/documents/aaaaaaaaaaaaaaaa",
        "/v1/documents/nope/status",
    ] {
        let (status, body) = s.get_as(&t, path);
        assert_eq!(assert_error(status, &body, 404), "document_not_found");
    }
    let (status, _) = call(
        s.post(&format!("/v1/documents/{id}/status"))
            .bearer_auth(&t),
    );
    assert_eq!(status, 405);
}

#[test]
fn latest_and_external_reads() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let (status, body) = s.get_as(&t, "/v1/documents/latest");
    assert_eq!(assert_error(status, &body, 404), "document_not_found");
    let a = s.create_doc(
        &t,
        &json!({"name": "A", "external_id": "crm-7", "tags": "x ,y"}),
    );
    std::thread::sleep(std::time::Duration::from_millis(5));
    let b = s.create_doc(
        &t,
        &json!({"name": "B", "external_id": "crm-7", "tags": " z"}),
    );
    let (_, latest) = s.get_as(&t, "/v1/documents/latest");
    assert_eq!(latest["id"], b["id"]);
    let (_, arr) = s.get_as(&t, "/v1/documents/latest?in_object=1");
    assert_eq!(arr[0]["id"], b["id"]);
    let (status, body) = s.get_as(&t, "/v1/documents/latest?filter=signed");
    assert_eq!(status, 404, "nothing signed yet: {body}");

    // External: the most recent, without rejection_reason, tags as last sent.
    let (status, ext) = s.get_as(&t, "/v1/documents/external/crm-7");
    assert_eq!(status, 200);
    assert_eq!(ext["id"], b["id"]);
    assert!(ext.get("rejection_reason").is_none());
    assert_eq!(ext["tags"], " z");
    let (_, none) = s.get_as(&t, "/v1/documents/external/unknown-id");
    assert_eq!(none, json!([]));
    let (status, body) = s.get_as(&t, "/v1/documents/external/crm-7?showall=true");
    assert_eq!(assert_error(status, &body, 400), "invalid_parameter");
    let _ = a;
}

#[test]
fn update_accepts_the_properties_of_the_status() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let doc = s.create_doc(
        &t,
        &json!({"name": "U", "recipients": [role_signer("u@example.com")]}),
    );
    let id = doc["id"].as_str().unwrap();
    let path = format!("/v1/documents/{id}");
    let (status, body) = s.put_json(
        &t,
        &path,
        &json!({"external_id": "e2", "external_client_id": "c2", "is_private": true, "value": 5,
                "comment_settings": {"allow": true}, "sign_redirect": "https://example.com/done",
                "block_recipient_invite": true, "sign_copy_emails": ["cc@example.com"]}),
    );
    assert_eq!(status, 204, "{body}");
    let (_, d) = s.get_as(&t, &path);
    assert_eq!(d["external_id"], "e2");
    assert_eq!(d["external_client_id"], "c2");
    assert_eq!(d["is_private"], true);
    assert_eq!(d["value"], 5.0);
    assert_eq!(d["settings"]["blockRecipientInvite"], true);
    for not_in_draft in ["tags", "contract_start_date", "name"] {
        let (status, body) = s.put_json(&t, &path, &json!({not_in_draft: "2026-01-01"}));
        assert_eq!(
            assert_error(status, &body, 400),
            "property_not_allowed",
            "{not_in_draft}"
        );
    }
    let (status, body) = s.put_json(&t, &path, &json!({"value": "much"}));
    assert_eq!(assert_error(status, &body, 400), "invalid_field");

    // After sending: external_id is refused, tags and contract dates are accepted.
    let (status, body) = s.post_json(&t, &format!("{path}/send"), &json!({}));
    assert_eq!(status, 200, "{body}");
    s.wait_status(&t, id, "sent");
    let (status, body) = s.put_json(&t, &path, &json!({"external_id": "e3"}));
    assert_eq!(assert_error(status, &body, 400), "property_not_allowed");
    let (status, body) = s.put_json(
        &t,
        &path,
        &json!({"tags": "won, big", "contract_start_date": "2027-01-01T00:00:00Z",
                "contract_end_date": "2027-12-31", "value": 7}),
    );
    assert_eq!(status, 204, "{body}");
    let (_, d) = s.get_as(&t, &path);
    assert_eq!(d["tags"], "won,big");
    assert_eq!(d["contract_start_date"], "2027-01-01T00:00:00+00:00");
    assert_eq!(d["contract_end_date"], "2027-12-31T00:00:00+00:00");
    assert_eq!(d["value"], 7.0);
}

/// Creates `n` drafts named `prefix-i` with values `i`, each in a later millisecond than
/// the one before (two in the same millisecond have no defined order, and a fast
/// machine makes several per millisecond).
fn drafts(s: &Server, t: &str, prefix: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let d = s.create_doc(t, &json!({"name": format!("{prefix}-{i:03}"), "value": i}));
            std::thread::sleep(std::time::Duration::from_millis(2));
            d["id"].as_str().unwrap().to_string()
        })
        .collect()
}

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("a list: {list}"))
        .iter()
        .map(|d| d["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn list_filters_sorts_and_pages() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let ids = drafts(&s, &t, "doc", 105);
    // Default: newest first, 100 items; limit 0 or less also gives 100.
    for q in ["", "?limit=0", "?limit=-5"] {
        let (status, list) = s.get_as(&t, &format!("/v1/documents{q}"));
        assert_eq!(status, 200);
        assert_eq!(list.as_array().unwrap().len(), 100, "{q}");
    }
    let (_, list) = s.get_as(&t, "/v1/documents");
    assert_eq!(list[0]["name"], "doc-104");
    let item = &list[0];
    for f in [
        "id",
        "name",
        "status",
        "value",
        "sender_name",
        "created_at",
        "updated_at",
        "recipients",
        "type",
        "external_id",
        "is_private",
        "is_signing",
        "company_name",
        "user_id",
        "sender_thumb",
        "tags",
        "sign_date",
        "expiration_date",
        "folder_id",
    ] {
        assert!(item.get(f).is_some(), "{f} in {item}");
    }
    assert!(item.get("thumb_url").is_none(), "{item}");
    assert_eq!(item["recipients"], json!([]), "{item}");
    let (_, page) = s.get_as(&t, "/v1/documents?offset=100&limit=10");
    assert_eq!(
        names(&page),
        ["doc-004", "doc-003", "doc-002", "doc-001", "doc-000"]
    );
    let (_, page) = s.get_as(&t, "/v1/documents?sort_by=name&limit=3");
    assert_eq!(names(&page), ["doc-000", "doc-001", "doc-002"]);
    let (_, page) = s.get_as(&t, "/v1/documents?sort_by=value&sort_order=desc&limit=2");
    assert_eq!(names(&page), ["doc-104", "doc-103"]);
    let (_, page) = s.get_as(&t, "/v1/documents?sort_by=unknown&limit=1");
    assert_eq!(
        names(&page),
        ["doc-104"],
        "other values keep the default order"
    );
    let (status, body) = s.get_as(&t, "/v1/documents?limit=many");
    assert_eq!(assert_error(status, &body, 400), "invalid_parameter");

    // Statuses: lose two, recall one (sent first), then filter.
    for id in &ids[..2] {
        assert_eq!(
            call(s.post(&format!("/v1/documents/{id}/lost")).bearer_auth(&t)).0,
            204
        );
    }
    let (_, lost) = s.get_as(&t, "/v1/documents?filter=lost");
    assert_eq!(names(&lost), ["doc-001", "doc-000"]);
    let (_, both) = s.get_as(&t, "/v1/documents?filter=lost,draft&limit=200");
    assert_eq!(both.as_array().unwrap().len(), 105);
    let (_, repeated) = s.get_as(&t, "/v1/documents?filter=lost,draft,lost&limit=200");
    assert_eq!(
        repeated.as_array().unwrap().len(),
        105,
        "a repeated status lists nothing twice"
    );
    let (_, drafts_only) = s.get_as(&t, "/v1/documents?filter=draft&limit=200");
    assert_eq!(drafts_only.as_array().unwrap().len(), 103);
    // Recall one: sent, then deleted once.
    let sent = s.create_doc(
        &t,
        &json!({"name": "recall-me", "recipients": [role_signer("r@example.com")]}),
    );
    let rid = sent["id"].as_str().unwrap();
    let (status, body) = s.post_json(&t, &format!("/v1/documents/{rid}/send"), &json!({}));
    assert_eq!(status, 200, "{body}");
    s.wait_status(&t, rid, "sent");
    assert_eq!(s.delete_as(&t, &format!("/v1/documents/{rid}")).0, 204);
    let (_, recalled) = s.get_as(&t, "/v1/documents?filter=recalled");
    assert_eq!(names(&recalled), ["recall-me"]);
    let (_, drafts_only) = s.get_as(&t, "/v1/documents?filter=draft&limit=200");
    assert_eq!(drafts_only.as_array().unwrap().len(), 103, "not a draft");
    for nothing in ["nonsense", "signed", "archive", "expired,foo"] {
        let (status, list) = s.get_as(&t, &format!("/v1/documents?filter={nothing}"));
        assert_eq!((status, list), (200, json!([])), "{nothing}");
    }
    let (_, by_status) = s.get_as(&t, "/v1/documents?sort_by=status&sort_order=desc&limit=2");
    assert_eq!(by_status[0]["status"], "recalled");
    assert_eq!(by_status[1]["status"], "lost");
}

#[test]
fn list_lookups_by_external_id_email_and_client() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    s.create_doc(
        &t,
        &json!({"name": "one", "external_id": "E1", "external_client_id": "K"}),
    );
    s.create_doc(
        &t,
        &json!({"name": "two", "external_id": "E2",
                             "recipients": [role_signer("Buyer@Example.com")]}),
    );
    s.create_doc(
        &t,
        &json!({"name": "three", "external_id": "E3", "external_client_id": "K"}),
    );
    let (_, l) = s.get_as(&t, "/v1/documents?external_id=E1,E3&sort_by=name");
    assert_eq!(names(&l), ["one", "three"]);
    let (_, l) = s.get_as(&t, "/v1/documents?external_id=buyer@example.com");
    assert_eq!(names(&l), ["two"]);
    let (_, l) = s.get_as(
        &t,
        "/v1/documents?external_client_id=K&sort_by=name&sort_order=desc",
    );
    assert_eq!(names(&l), ["three", "one"]);
    let (_, l) = s.get_as(&t, "/v1/documents?external_id=E1&external_client_id=K");
    assert_eq!(names(&l), ["one"]);
    let (_, l) = s.get_as(&t, "/v1/documents?external_id=nope");
    assert_eq!(l, json!([]));
}

#[test]
fn list_scopes_own_team_and_all() {
    let mut s = Server::start(&[]);
    let t = s.admin_token();
    s.create_doc(&t, &json!({"name": "admin-doc"}));
    s.stop();
    for (email, team) in [
        ("ann@example.com", "red"),
        ("bob@example.com", "red"),
        ("cid@example.com", "blue"),
    ] {
        s.add_member(email, &["--team", team]);
    }
    s.launch();
    let tok = |e: &str| s.token(e, USER_PASSWORD, None);
    let (ann, bob, cid) = (
        tok("ann@example.com"),
        tok("bob@example.com"),
        tok("cid@example.com"),
    );
    s.create_doc(&ann, &json!({"name": "ann-doc"}));
    s.create_doc(&bob, &json!({"name": "bob-doc"}));
    s.create_doc(&bob, &json!({"name": "bob-private", "is_private": true}));
    s.create_doc(&cid, &json!({"name": "cid-doc"}));
    let sorted = |v: Value| {
        let mut n = names(&v);
        n.sort();
        n
    };
    assert_eq!(sorted(s.get_as(&ann, "/v1/documents").1), ["ann-doc"]);
    assert_eq!(
        sorted(s.get_as(&ann, "/v1/documents?showteam=true").1),
        ["ann-doc", "bob-doc"],
        "team members' documents, but not their private ones"
    );
    assert_eq!(
        sorted(s.get_as(&ann, "/v1/documents?showall=true&showteam=true").1),
        ["admin-doc", "ann-doc", "bob-doc", "cid-doc"],
        "showall takes precedence; private documents of others stay hidden"
    );
    assert_eq!(
        sorted(s.get_as(&t, "/v1/documents?showall=true").1),
        ["admin-doc", "ann-doc", "bob-doc", "bob-private", "cid-doc"],
        "an admin sees everything"
    );
    // showall affects the list only: reading another's private document is still 404.
    let (_, bobs) = s.get_as(&bob, "/v1/documents?filter=draft");
    let private_id = bobs
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "bob-private")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, _) = s.get_as(&ann, &format!("/v1/documents/{private_id}?showall=true"));
    assert_eq!(status, 404);
}

#[test]
fn another_entitys_documents_do_not_exist_for_its_users() {
    let mut s = Server::start(&[]);
    let t = s.admin_token();
    let doc = s.create_doc(
        &t,
        &json!({"name": "ours", "recipients": [role_signer("o@example.com")]}),
    );
    let id = doc["id"].as_str().unwrap();
    s.stop();
    s.add_entity_with_admin("Other", "x@other.example");
    s.launch();
    let x = s.token("x@other.example", USER_PASSWORD, None);
    for path in [
        "",
        "/status",
        "/recipients",
        "/pages",
        "/log",
        "/comments",
        "/pricing-tables",
    ] {
        let (status, body) = s.get_as(&x, &format!("/v1/documents/{id}{path}"));
        assert_eq!(
            assert_error(status, &body, 404),
            "document_not_found",
            "{path}"
        );
    }
    for (method, path) in [
        ("POST", "/send"),
        ("POST", "/seal"),
        ("POST", "/lost"),
        ("PUT", ""),
    ] {
        let url = s.url(&format!("/v1/documents/{id}{path}"));
        let req = if method == "PUT" {
            client().put(url)
        } else {
            client().post(url)
        };
        let (status, _) = call(req.bearer_auth(&x).json(&json!({})));
        assert_eq!(status, 404, "{method} {path}");
    }
    assert_eq!(s.delete_as(&x, &format!("/v1/documents/{id}")).0, 404);
    assert_eq!(s.get_as(&x, "/v1/documents?showall=true").1, json!([]));
    assert_eq!(s.get_as(&x, "/v1/documents/external/whatever").1, json!([]));
    // Still there, untouched, for its own entity.
    let t = s.admin_token();
    assert_eq!(
        s.get_as(&t, &format!("/v1/documents/{id}/status")).1["status"],
        "draft"
    );
}

#[test]
fn only_those_who_may_change_a_document_can_block_it_with_a_suggestion() {
    let mut s = Server::start(&[]);
    let t = s.admin_token();
    let doc = s.create_doc(
        &t,
        &json!({"name": "shared", "recipients": [role_signer("r@example.com")]}),
    );
    let id = doc["id"].as_str().unwrap();
    s.stop();
    s.add_member("reader@example.com", &[]);
    s.launch();
    let reader = s.token("reader@example.com", USER_PASSWORD, None);
    let path = format!("/v1/documents/{id}/comments");
    let (status, body) = s.post_json(
        &reader,
        &path,
        &json!({"text": "Change it", "suggestion": true}),
    );
    assert_eq!(assert_error(status, &body, 403), "access_denied");
    let (status, _) = s.post_json(&reader, &path, &json!({"text": "A plain comment"}));
    assert_eq!(status, 200, "reading is enough to comment");
    let (status, body) = s.post_json(&t, &format!("/v1/documents/{id}/send"), &json!({}));
    assert_eq!(status, 200, "nothing blocks sending: {body}");
}
