//! The operations GetAccept v1 has that a self-hosted service needs (issue 12, part 3),
//! and GetAccept's shapes of download and reminders, against the real binary: users
//! and teams, removing a recipient, attachments, archiving a signed contract, custom
//! data. Every answer is also checked against `engine/openapi.json` by `call`.

mod common;

use common::*;
use serde_json::{Value, json};

/// A user made through the API with `role`; returns (id, token).
fn api_user(s: &Server, admin: &str, email: &str, role: &str) -> (String, String) {
    let (status, u) = s.post_json(
        admin,
        "/v1/users",
        &json!({"email": email, "first_name": "Uma", "last_name": "User", "role": role,
                "password": USER_PASSWORD}),
    );
    assert_eq!(status, 200, "{u}");
    assert!(
        u.get("password").is_none(),
        "a given password is not echoed: {u}"
    );
    let id = u["id"].as_str().unwrap().to_string();
    (id, s.token(email, USER_PASSWORD, None))
}

#[test]
fn users_and_teams_follow_the_role_rules() {
    let s = Server::start(&[]);
    let admin = s.admin_token();

    // A manager and a user, made by the admin; a new member joins pending and is
    // mailed an invitation (with a password made for a new account without one); no
    // password is ever answered. Signing in accepts.
    let (manager_id, manager) = api_user(&s, &admin, "manager@example.com", "manager");
    let (user_id, user) = api_user(&s, &admin, "user@example.com", "user");
    let (status, made) = s.post_json(
        &admin,
        "/v1/users",
        &json!({"email": "gen@example.com", "fullname": "Grace Hopper", "team_id": "sales"}),
    );
    assert_eq!(status, 200, "{made}");
    assert_eq!(made["first_name"], "Grace");
    assert_eq!(made["last_name"], "Hopper");
    assert_eq!(made["role"], "user");
    assert_eq!(made["team_id"], "sales");
    assert!(made.get("password").is_none(), "{made}");
    assert_eq!(made["status"], "pending", "{made}");
    let invitation = s.wait_mails(1, |m| m.contains("To: gen@example.com"));
    let generated = mailed_password(&invitation[0]);
    let gen_id = made["id"].as_str().unwrap().to_string();
    // The generated password signs in.
    let grace = s.token("gen@example.com", &generated, None);

    // Bad input: 400s and a 409, nothing made.
    for (body, code) in [
        (json!({"email": "not-an-email"}), "invalid_email"),
        (
            json!({"email": "x@example.com", "role": "owner"}),
            "invalid_role",
        ),
        (
            json!({"email": "x@example.com", "password": "short"}),
            "weak_password",
        ),
        (json!({}), "missing_field"),
    ] {
        let (status, body) = s.post_json(&admin, "/v1/users", &body);
        assert_eq!(assert_error(status, &body, 400), code);
    }
    let (status, body) = s.post_json(
        &admin,
        "/v1/users",
        &json!({"email": "USER@example.com", "password": USER_PASSWORD}),
    );
    assert_eq!(assert_error(status, &body, 409), "email_taken");

    // The list: admins and managers; a user is refused.
    let (status, list) = s.get_as(&manager, "/v1/users");
    assert_eq!(status, 200, "{list}");
    let mut emails: Vec<&str> = list["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["email"].as_str().unwrap())
        .collect();
    emails.sort();
    assert_eq!(
        emails,
        [
            ADMIN_EMAIL,
            "gen@example.com",
            "manager@example.com",
            "user@example.com"
        ]
    );
    let me = list["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["email"] == "manager@example.com")
        .unwrap();
    assert_eq!(me["role"], "manager");
    assert_eq!(me["status"], "active");
    assert_eq!(me["user_id"], manager_id.as_str());
    assert!(me["last_login"].as_str().unwrap().ends_with("+00:00"));
    let (status, body) = s.get_as(&user, "/v1/users");
    assert_eq!(assert_error(status, &body, 403), "forbidden");

    // Details: one's own for everyone, others' for managers and admins.
    let (status, own) = s.get_as(&user, &format!("/v1/users/{user_id}"));
    assert_eq!(status, 200, "{own}");
    assert_eq!(own["email"], "user@example.com");
    assert_eq!(own["entity_name"], "Default");
    let (status, body) = s.get_as(&user, &format!("/v1/users/{manager_id}"));
    assert_eq!(assert_error(status, &body, 403), "forbidden");
    let (status, body) = s.get_as(&manager, &format!("/v1/users/{user_id}"));
    assert_eq!(status, 200, "{body}");
    let (status, body) = s.get_as(&admin, "/v1/users/0123456789abcdef0123456789abcdef");
    assert_eq!(assert_error(status, &body, 404), "user_not_found");

    // A manager makes and removes users only.
    let (status, body) = s.post_json(
        &manager,
        "/v1/users",
        &json!({"email": "boss@example.com", "role": "admin"}),
    );
    assert_eq!(assert_error(status, &body, 403), "forbidden");
    let (status, body) = s.post_json(&user, "/v1/users", &json!({"email": "u2@example.com"}));
    assert_eq!(assert_error(status, &body, 403), "forbidden");

    // Teams: every member reads them.
    let (status, teams) = s.get_as(&user, "/v1/teams");
    assert_eq!(status, 200, "{teams}");
    assert_eq!(
        teams["teams"],
        json!([{"team_id": "sales", "name": "sales", "status": "active", "team_user_count": 1}])
    );

    // Moving a member: a manager moves a user to another team but gives nobody a
    // higher role and does not change managers; nobody changes their own role; what the
    // body leaves out stays.
    let path = format!("/v1/users/{gen_id}");
    let (status, moved) = s.put_json(&manager, &path, &json!({"team_id": "support"}));
    assert_eq!(status, 200, "{moved}");
    assert_eq!(
        (&moved["team_id"], &moved["role"]),
        (&json!("support"), &json!("user"))
    );
    let (_, teams) = s.get_as(&user, "/v1/teams");
    assert_eq!(
        teams["teams"],
        json!([{"team_id": "support", "name": "support", "status": "active", "team_user_count": 1}])
    );
    let (_, again) = s.get_as(&admin, &path);
    assert_eq!(again["team_id"], "support");
    for (token, id, body, status, code) in [
        (
            &manager,
            &gen_id,
            json!({"role": "admin"}),
            403,
            "forbidden",
        ),
        (
            &manager,
            &manager_id,
            json!({"team_id": "x"}),
            403,
            "forbidden",
        ),
        (&user, &gen_id, json!({"team_id": "x"}), 403, "forbidden"),
        (
            &manager,
            &gen_id,
            json!({"role": "owner"}),
            400,
            "invalid_role",
        ),
        (
            &manager,
            &gen_id,
            json!({"team_id": 7}),
            400,
            "invalid_field",
        ),
        (
            &manager,
            &gen_id,
            json!({"team_id": "t".repeat(65)}),
            400,
            "invalid_field",
        ),
        (
            &admin,
            &admin_id(&s, &admin),
            json!({"role": "user"}),
            409,
            "cannot_change_own_role",
        ),
        (
            &admin,
            &"0123456789abcdef".to_string(),
            json!({}),
            404,
            "user_not_found",
        ),
    ] {
        let (got, body) = s.put_json(token, &format!("/v1/users/{id}"), &body);
        assert_eq!(assert_error(got, &body, status), code, "{body}");
    }
    // An admin makes the user a manager and takes them out of every team; the new role
    // holds for the member's token at once.
    let (status, moved) = s.put_json(&admin, &path, &json!({"team_id": "", "role": "manager"}));
    assert_eq!(status, 200, "{moved}");
    assert_eq!(
        (&moved["team_id"], &moved["role"]),
        (&json!(""), &json!("manager"))
    );
    let (status, body) = s.get_as(&grace, "/v1/users");
    assert_eq!(status, 200, "a manager lists the members: {body}");
    let (_, teams) = s.get_as(&user, "/v1/teams");
    assert_eq!(teams["teams"], json!([]));
    let (status, _) = s.put_json(&admin, &path, &json!({"role": "user", "team_id": "sales"}));
    assert_eq!(status, 200);

    // Removal: nobody removes themselves; a manager cannot remove a manager; removing a
    // member stops their token at once and leaves them out of the list and the teams.
    let (status, body) = s.delete_as(&admin, &format!("/v1/users/{}", admin_id(&s, &admin)));
    assert_eq!(assert_error(status, &body, 409), "cannot_remove_self");
    let (status, body) = s.delete_as(&manager, &format!("/v1/users/{manager_id}"));
    assert_eq!(assert_error(status, &body, 409), "cannot_remove_self");
    let (status, _) = s.get_as(&user, "/v1/test");
    assert_eq!(status, 200);
    let (status, body) = s.delete_as(&manager, &format!("/v1/users/{user_id}"));
    assert_eq!(status, 204, "{body}");
    let (status, body) = s.get_as(&user, "/v1/test");
    assert_eq!(
        status, 403,
        "a removed member's token stops at once: {body}"
    );
    let (status, body) = s.delete_as(&manager, &format!("/v1/users/{user_id}"));
    assert_eq!(assert_error(status, &body, 404), "user_not_found");
    // Without another membership, the account cannot sign in any more.
    let resp = s.login("user@example.com", USER_PASSWORD, None);
    assert_ne!(resp.status(), 200);
    let (status, body) = s.delete_as(&admin, &format!("/v1/users/{gen_id}"));
    assert_eq!(status, 204, "{body}");
    let (_, teams) = s.get_as(&admin, "/v1/teams");
    assert_eq!(teams["teams"], json!([]));
    let (_, list) = s.get_as(&admin, "/v1/users");
    assert_eq!(list["users"].as_array().unwrap().len(), 2, "{list}");
}

fn admin_id(s: &Server, token: &str) -> String {
    let (_, me) = s.get_as(token, "/v1/test");
    me["user_id"].as_str().unwrap().to_string()
}

#[test]
fn a_recipient_who_has_not_acted_can_be_removed() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    // In a draft: gone from the recipients, logged.
    let id = pdf_draft(
        &s,
        &t,
        "Roster",
        json!([
            role_signer("a@example.com"),
            role_signer("b@example.com"),
            role_signer("c@example.com")
        ]),
        json!({}),
    );
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    let rid = |d: &Value, i: usize| d["recipients"][i]["id"].as_str().unwrap().to_string();
    let (a, b, c) = (rid(&d, 0), rid(&d, 1), rid(&d, 2));
    // A field each for a and c; c's goes with c.
    for who in [&a, &c] {
        let (status, body) = s.post_json(
            &t,
            &format!("/v1/documents/{id}/fields"),
            &json!({"field_type": "signature", "page_num": 1, "field_left": 72, "field_top": 600,
                    "field_width": 220, "field_height": 60, "recipient_id": who}),
        );
        assert_eq!(status, 200, "{body}");
    }
    let (status, body) = s.delete_as(&t, &format!("/v1/documents/{id}/recipients/{c}"));
    assert_eq!(status, 204, "{body}");
    let (_, r) = s.get_as(&t, &format!("/v1/documents/{id}/recipients"));
    assert_eq!(r["recipients"].as_array().unwrap().len(), 2, "{r}");
    let (_, f) = s.get_as(&t, &format!("/v1/documents/{id}/fields"));
    let owners: Vec<&str> = f["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["recipient_id"].as_str().unwrap())
        .collect();
    assert_eq!(owners, [a.as_str()], "{f}");
    let (status, body) = s.delete_as(&t, &format!("/v1/documents/{id}/recipients/{c}"));
    assert_eq!(assert_error(status, &body, 404), "recipient_not_found");

    // Sent: b has not acted and goes, and b's link stops working at once; a signs.
    s.act_ok(&t, &id, "send");
    let d = s.wait_status(&t, &id, "sent");
    assert_eq!(d["status"], "sent");
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    let (link_a, link_b) = (link(&d, 0), link(&d, 1));
    let (status, _) = call(s.get(&format!("/v1/recipient/{link_b}")));
    assert_eq!(status, 200);
    let (status, body) = s.delete_as(&t, &format!("/v1/documents/{id}/recipients/{b}"));
    assert_eq!(status, 204, "{body}");
    let (status, body) = call(s.get(&format!("/v1/recipient/{link_b}")));
    assert_eq!(assert_error(status, &body, 404), "link_not_found");
    assert!(
        s.events(&t, &id).len() >= 2,
        "the removal is in the log, with the rest"
    );
    let (_, log) = s.get_as(&t, &format!("/v1/documents/{id}/log"));
    assert!(
        log.as_array()
            .unwrap()
            .iter()
            .any(|e| e["action"] == "recipient_removed"),
        "{log}"
    );
    // a is the last signer waiting: removing a would finish the document.
    let (status, body) = s.delete_as(&t, &format!("/v1/documents/{id}/recipients/{a}"));
    assert_eq!(assert_error(status, &body, 409), "last_recipient");
    let (status, body) = call(
        s.post(&format!("/v1/recipient/{link_a}/sign"))
            .json(&json!({"signature": {"type": "typed", "name": "Sam Signer"}})),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = s.delete_as(&t, &format!("/v1/documents/{id}/recipients/{a}"));
    assert_eq!(assert_error(status, &body, 409), "invalid_status");
}

#[test]
fn attachments_are_listed_in_getaccepts_shape() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let file_id = &s.upload(&t, &esign_host::pdf::sample_pdf(1), "Terms.PDF");
    let id = pdf_draft(
        &s,
        &t,
        "With attachment",
        json!([role_signer("a@example.com")]),
        json!({"attachments": [{"file_id": file_id, "name": "Terms.PDF", "restricted_to": "a@example.com"}]}),
    );
    let (status, body) = s.get_as(&t, &format!("/v1/documents/{id}/attachments"));
    assert_eq!(status, 200, "{body}");
    let items = body["attachments"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{body}");
    assert_eq!(items[0]["attachment_title"], "Terms.PDF");
    assert_eq!(items[0]["attachment_extension"], "pdf");
    assert_eq!(items[0]["restrict_access"], true);
    assert_eq!(items[0]["access_recipient_names"], json!(["Sam Signer"]));
    let other = pdf_draft(&s, &t, "Plain", json!([]), json!({}));
    let (_, body) = s.get_as(&t, &format!("/v1/documents/{other}/attachments"));
    assert_eq!(body, json!({"attachments": []}));
    let (status, body) = s.get_as(
        &t,
        "/v1/documents/0123456789abcdef0123456789abcdef/attachments",
    );
    assert_eq!(assert_error(status, &body, 404), "document_not_found");
}

#[test]
fn a_contract_signed_elsewhere_is_archived() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let (status, created) = s.post_json(
        &t,
        "/v1/upload/archive",
        &json!({"name": "Old lease", "file_content": b64(&esign_host::pdf::sample_pdf(3)),
                "file_name": "lease.pdf", "sign_date": "2024-05-01T10:00:00+00:00", "value": 1200}),
    );
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["status"], "importing");
    let id = created["id"].as_str().unwrap().to_string();
    s.wait_status(&t, &id, "archived");
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    assert_eq!(d["status"], "archived");
    assert_eq!(d["sign_date"], "2024-05-01T10:00:00+00:00");
    assert_eq!(d["recipients"], json!([]));
    let (_, p) = s.get_as(&t, &format!("/v1/documents/{id}/pages"));
    assert_eq!(p["page_count"], 3);
    // It lists under filter=archived, and cannot be sent.
    let (_, list) = s.get_as(&t, "/v1/documents?filter=archive");
    let item = list
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == id.as_str())
        .unwrap_or_else(|| panic!("{list}"));
    // An archive item has the first page's image instead of recipients.
    assert!(item["thumb_url"].is_string(), "{item}");
    assert!(item.get("recipients").is_none(), "{item}");
    let (status, body) = s.post_json(&t, &format!("/v1/documents/{id}/send"), &json!({}));
    assert!((400..500).contains(&status), "{status} {body}");
    assert_eq!(s.status_of(&t, &id), "archived");

    // Bad input: 400 or 404 before anything exists.
    for (body, want, code) in [
        (json!({"name": "No file"}), 400, "missing_file"),
        (
            json!({"name": "x", "file_content": b64(b"%PDF"), "recipients": [role_signer("a@example.com")]}),
            400,
            "invalid_field",
        ),
        (
            json!({"name": "x", "file_content": b64(b"%PDF"), "sign_date": "2999-01-01T00:00:00Z"}),
            400,
            "invalid_field",
        ),
        (
            json!({"name": "x", "file_ids": "0123456789abcdef0123456789abcdef"}),
            404,
            "file_not_found",
        ),
    ] {
        let (status, answer) = s.post_json(&t, "/v1/upload/archive", &body);
        assert_eq!(assert_error(status, &answer, want), code, "{body}");
    }
    // Nothing was left behind by the refused requests.
    let (_, archived) = s.get_as(&t, "/v1/documents?filter=archive");
    assert_eq!(archived.as_array().unwrap().len(), 1, "{archived}");
    let (_, every) = s.get_as(&t, "/v1/documents");
    assert_eq!(
        every.as_array().unwrap().len(),
        1,
        "no draft was made: {every}"
    );
}

#[test]
fn custom_data_is_declared_by_the_entity_and_typed() {
    let s = Server::start(&[]);
    let admin = s.admin_token();
    let (_, user) = api_user(&s, &admin, "user@example.com", "user");

    let (status, body) = s.get_as(&user, "/v1/custom-data/entity");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["allowed_properties"], json!([]));
    // Only admins declare properties.
    let prop = json!({"key": "crm_id", "label": "CRM id", "value_type": "string"});
    let (status, body) = s.post_json(&user, "/v1/custom-data/entity", &prop);
    assert_eq!(assert_error(status, &body, 403), "forbidden");
    let (status, body) = s.post_json(&admin, "/v1/custom-data/entity", &prop);
    assert_eq!(status, 200, "{body}");
    let (status, body) = s.post_json(&admin, "/v1/custom-data/entity", &prop);
    assert_eq!(assert_error(status, &body, 409), "property_exists");
    let (status, _) = s.post_json(
        &admin,
        "/v1/custom-data/entity",
        &json!({"key": "seats", "label": "Seats", "value_type": "number"}),
    );
    assert_eq!(status, 200);
    for (bad, code) in [
        (
            json!({"key": "a b", "label": "x", "value_type": "string"}),
            "invalid_key",
        ),
        (
            json!({"key": "ok", "label": "x", "value_type": "date"}),
            "invalid_value_type",
        ),
        (
            json!({"key": "ok", "value_type": "string"}),
            "missing_field",
        ),
    ] {
        let (status, body) = s.post_json(&admin, "/v1/custom-data/entity", &bad);
        assert_eq!(assert_error(status, &body, 400), code, "{bad}");
    }
    let (_, body) = s.get_as(&user, "/v1/custom-data/entity");
    assert_eq!(body["allowed_properties"].as_array().unwrap().len(), 2);

    // Values on a document: declared keys only, of the declared type.
    let id = pdf_draft(&s, &admin, "With data", json!([]), json!({}));
    let base = format!("/v1/documents/{id}/custom-data");
    let (status, v) = s.post_json(
        &admin,
        &base,
        &json!({"property": {"key": "crm_id", "value": "ACME-7"}}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["document_id"], id.as_str());
    assert_eq!(v["property"]["value"], "ACME-7");
    assert_eq!(v["property"]["label"], "CRM id");
    let vid = v["id"].as_str().unwrap().to_string();
    for (bad, want, code) in [
        (
            json!({"property": {"key": "seats", "value": "ten"}}),
            400,
            "invalid_value",
        ),
        (
            json!({"property": {"key": "nope", "value": 1}}),
            400,
            "unknown_property",
        ),
        (json!({"property": {"key": "seats"}}), 400, "missing_field"),
        (json!({"value": 1}), 400, "missing_field"),
        (
            json!({"property": {"key": "crm_id", "value": "again"}}),
            409,
            "custom_data_exists",
        ),
    ] {
        let (status, body) = s.post_json(&admin, &base, &bad);
        assert_eq!(assert_error(status, &body, want), code, "{bad}");
    }
    let (status, _) = s.post_json(
        &admin,
        &base,
        &json!({"property": {"key": "seats", "value": 10}}),
    );
    assert_eq!(status, 200);
    let (status, body) = s.put_json(
        &admin,
        &format!("{base}/{vid}"),
        &json!({"property": {"value": "ACME-8", "label": "CRM"}}),
    );
    assert_eq!(status, 204, "{body}");
    let (status, body) = s.put_json(
        &admin,
        &format!("{base}/{vid}"),
        &json!({"property": {"value": 8}}),
    );
    assert_eq!(assert_error(status, &body, 400), "invalid_value");
    let (_, one) = s.get_as(&admin, &format!("{base}/{vid}"));
    assert_eq!(one["property"]["value"], "ACME-8");
    assert_eq!(one["property"]["label"], "CRM");
    let (_, list) = s.get_as(&admin, &format!("{base}?limit=1&offset=1"));
    assert_eq!(list["total_count"], 2);
    assert_eq!(list["custom_data"][0]["property"]["value"], 10, "{list}");
    // Another member reads the document's values; deleting one leaves the other.
    let (status, list) = s.get_as(&user, &base);
    assert_eq!(status, 200, "{list}");
    let (status, body) = s.delete_as(&admin, &format!("{base}/{vid}"));
    assert_eq!(status, 204, "{body}");
    let (status, body) = s.get_as(&admin, &format!("{base}/{vid}"));
    assert_eq!(assert_error(status, &body, 404), "custom_data_not_found");
    let (_, list) = s.get_as(&admin, &base);
    assert_eq!(list["total_count"], 1);
    // Deleting the property keeps the values given.
    let (status, _) = s.delete_as(&admin, "/v1/custom-data/entity/seats");
    assert_eq!(status, 204);
    let (status, body) = s.delete_as(&admin, "/v1/custom-data/entity/seats");
    assert_eq!(assert_error(status, &body, 404), "property_not_found");
    let (_, list) = s.get_as(&admin, &base);
    assert_eq!(list["total_count"], 1);
}

#[test]
fn download_answers_a_link_by_default_and_the_bytes_when_direct() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let id = pdf_draft(&s, &t, "Offer: 2026/Q4", json!([]), json!({}));
    let (status, body) = s.get_as(&t, &format!("/v1/documents/{id}/download"));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["file"], "Offer_ 2026_Q4.pdf");
    assert!(body.get("file_content").is_none());
    let url = body["document_url"].as_str().unwrap();
    // The link serves the PDF without a token.
    let path = url
        .split_once("/v1/")
        .map(|(_, p)| format!("/v1/{p}"))
        .unwrap();
    let resp = s.get(&path).send().unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/pdf");
    let linked = resp.bytes().unwrap().to_vec();
    assert!(linked.starts_with(b"%PDF"));
    // with_file_content: the same bytes in base64.
    let (_, body) = s.get_as(
        &t,
        &format!("/v1/documents/{id}/download?with_file_content=true"),
    );
    assert_eq!(body["file_content"], b64(&linked));
    // direct: the bytes.
    let resp = s
        .get(&format!("/v1/documents/{id}/download?direct=true"))
        .bearer_auth(&t)
        .send()
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.bytes().unwrap().to_vec(), linked);
    let (status, body) = s.get_as(&t, &format!("/v1/documents/{id}/download?direct=maybe"));
    assert_eq!(assert_error(status, &body, 400), "invalid_parameter");
    // A made-up link, and a link to a deleted document: 404.
    let (status, body) = call(s.get("/v1/download/not-a-real-secret"));
    assert_eq!(assert_error(status, &body, 404), "link_not_found");
    let (status, _) = s.delete_as(&t, &format!("/v1/documents/{id}"));
    assert_eq!(status, 204);
    let (status, body) = call(s.get(&path));
    assert_eq!(assert_error(status, &body, 404), "link_not_found");
}

#[test]
fn reminders_take_getaccepts_type_text_and_not_opened() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let id = pdf_draft(
        &s,
        &t,
        "Remind me",
        json!([
            {"email": "opened@example.com", "first_name": "Olive", "role": "signer"},
            {"email": "unopened@example.com", "first_name": "Uri", "role": "signer"},
            {"mobile": "+46701234567", "first_name": "Mo", "role": "signer"}
        ]),
        json!({}),
    );
    s.act_ok(&t, &id, "send");
    let d = s.wait_status(&t, &id, "sent");
    assert_eq!(d["status"], "sent");
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    let (status, _) = call(
        s.post(&format!("/v1/recipient/{}/view", link(&d, 0)))
            .json(&json!({})),
    );
    assert_eq!(status, 200);
    // The invitations first, so that the reminders are counted on their own.
    s.wait_mails(2, |m| m.contains("Remind me"));
    let sms_before = s.sms().len();

    let (status, body) = s.post_json(
        &t,
        &format!("/v1/documents/{id}/reminders"),
        &json!({"type": "email", "text": "Nudge number one", "not_opened": true}),
    );
    assert_eq!(status, 200, "{body}");
    let reminders = s.wait_mails(1, |m| m.contains("Nudge number one"));
    assert!(
        reminders[0].contains("unopened@example.com"),
        "{reminders:?}"
    );
    // SMS reminders reach those with a mobile number.
    let (status, body) = s.post_json(
        &t,
        &format!("/v1/documents/{id}/reminders"),
        &json!({"type": "sms", "text": "Nudge by text"}),
    );
    assert_eq!(status, 200, "{body}");
    wait_until(20, "an SMS reminder", || {
        (s.sms().len() > sms_before).then_some(())
    });
    // Barrier: a later mail on the same queue, then count.
    let (status, _) = s.post_json(
        &t,
        &format!("/v1/documents/{id}/reminders"),
        &json!({"text": "Barrier", "not_signed": true}),
    );
    assert_eq!(status, 200);
    s.wait_mails(2, |m| m.contains("Barrier"));
    let ones = s
        .mails()
        .into_iter()
        .filter(|m| m.contains("Nudge number one"))
        .count();
    assert_eq!(ones, 1, "only the recipient who had not opened it");
    assert!(
        !s.mails().iter().any(|m| m.contains("Nudge by text")),
        "SMS reminders are not mailed"
    );
    let (status, body) = s.post_json(
        &t,
        &format!("/v1/documents/{id}/reminders"),
        &json!({"type": "video", "text": "x"}),
    );
    assert_eq!(assert_error(status, &body, 400), "invalid_field");
}

/// The JSON keys of an answer, sorted.
fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

/// `POST /v1/users` tells an entity nothing about other entities' accounts (issue 58):
/// an email with an account elsewhere gets the same answer as one without, the
/// account's password and data stay untouched, and the person joins only by accepting
/// the invitation mailed to them, signing in to the entity.
#[test]
fn adding_a_user_tells_nothing_of_accounts_in_other_entities() {
    let s = Server::start(&[]);
    // Entity A (the first one) with two members who have data there; entity B with
    // its own admin.
    let a_admin = s.admin_token();
    s.add_member("ann@example.com", &[]);
    s.add_member("amy@example.com", &[]);
    let entity_b = s.add_entity_with_admin("Bravo Ltd", "bea@example.com");
    let b = s.token("bea@example.com", USER_PASSWORD, Some(&entity_b));
    let ann_a = s.token("ann@example.com", USER_PASSWORD, None);
    let ann_doc = s.create_doc(&ann_a, &json!({"name": "Ann's contract"}));
    let ann_doc_id = ann_doc["id"].as_str().unwrap().to_string();

    // B adds, without a password and with one, a person with an account in A and one
    // without any: the same status, the same members, the same values but the email.
    let add = |email: &str, password: Option<&str>| -> (u16, Value) {
        let mut body = json!({"email": email, "first_name": "Pat", "last_name": "Doe",
                              "role": "manager", "team_id": "north"});
        if let Some(p) = password {
            body["password"] = json!(p);
        }
        s.post_json(&b, "/v1/users", &body)
    };
    for (known, unknown, password) in [
        ("ann@example.com", "nobody@example.com", None),
        (
            "AMY@example.com",
            "fresh@example.com",
            Some("chosen-by-b-123"),
        ),
    ] {
        let (st_known, known_body) = add(known, password);
        let (st_unknown, unknown_body) = add(unknown, password);
        assert_eq!(
            (st_known, st_unknown),
            (200, 200),
            "{known_body} {unknown_body}"
        );
        assert_eq!(keys(&known_body), keys(&unknown_body));
        let same = |v: &Value| {
            let mut v = v.clone();
            for k in ["id", "email", "created_at"] {
                v.as_object_mut().unwrap().remove(k);
            }
            v
        };
        assert_eq!(same(&known_body), same(&unknown_body));
        assert_eq!(known_body["email"], known);
        assert_eq!(known_body["status"], "pending", "{known_body}");
        assert!(known_body.get("password").is_none(), "{known_body}");
    }
    // The list shows them alike, pending, with the names B gave.
    let (_, list) = s.get_as(&b, "/v1/users");
    let row = |email: &str| -> Value {
        list["users"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["email"] == email)
            .cloned()
            .unwrap_or_else(|| panic!("{email} listed: {list}"))
    };
    for email in ["ann@example.com", "nobody@example.com"] {
        let r = row(email);
        assert_eq!(
            (&r["status"], &r["name"], &r["last_login"], &r["role"]),
            (
                &json!("pending"),
                &json!("Pat Doe"),
                &json!(""),
                &json!("manager")
            ),
            "{r}"
        );
    }
    // The email of a member of B's own is B's to know: 409.
    let (status, body) = add("ann@example.com", None);
    assert_eq!(assert_error(status, &body, 409), "email_taken");

    // Ann's and Amy's passwords still work, B's chosen one does not; A's data are as
    // they were.
    let (status, body) = call(
        s.post("/v1/auth")
            .json(&json!({"email": "amy@example.com", "password": "chosen-by-b-123"})),
    );
    assert_eq!(assert_error(status, &body, 400), "invalid_credentials");
    let ann_again = s.token("ann@example.com", USER_PASSWORD, None);
    let (status, doc) = s.get_as(&ann_again, &format!("/v1/documents/{ann_doc_id}"));
    assert_eq!(
        (status, &doc["name"]),
        (200, &json!("Ann's contract")),
        "{doc}"
    );
    let (_, me) = s.get_as(&ann_again, "/v1/users/me");
    assert_eq!(me["user"]["first_name"], "Ada", "{me}");
    let (status, body) = s.get_as(&a_admin, "/v1/users");
    assert_eq!(status, 200, "{body}");

    // Before accepting, Ann cannot act in B: her token is A's, and B is pending.
    let b_doc = s.create_doc(&b, &json!({"name": "Bravo's contract"}));
    let (status, _) = s.get_as(
        &ann_again,
        &format!("/v1/documents/{}", b_doc["id"].as_str().unwrap()),
    );
    assert_eq!(status, 404);
    let listed = me["entities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == entity_b.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("B among Ann's entities: {me}"));
    assert_eq!(listed["profile"], "pending", "{me}");

    // The invitations are mailed: to Ann, to sign in with her own password; to the new
    // person, with a password made for them (never answered to B).
    let ann_mail = s.wait_mails(1, |m| {
        m.contains("To: ann@example.com") && m.contains("Bravo Ltd")
    });
    assert!(ann_mail[0].contains(&entity_b), "{}", ann_mail[0]);
    let new_mail = s.wait_mails(1, |m| {
        m.contains("To: nobody@example.com") && m.contains("Bravo Ltd")
    });
    let password = mailed_password(&new_mail[0]);

    // Ann accepts by signing in to B; then she acts there and switches between both.
    let ann_b = s.token("ann@example.com", USER_PASSWORD, Some(&entity_b));
    let (status, test) = s.get_as(&ann_b, "/v1/test");
    assert_eq!(
        (status, &test["entity_id"]),
        (200, &json!(entity_b)),
        "{test}"
    );
    let (status, _) = s.get_as(&ann_b, "/v1/users");
    assert_eq!(status, 200, "a manager of B now");
    let (status, _) = s.get_as(&ann_again, &format!("/v1/refresh/{entity_b}"));
    assert_eq!(status, 200);
    // Amy accepts by switching to B from her token for A.
    let amy_a = s.token("amy@example.com", USER_PASSWORD, None);
    let (status, switched) = s.get_as(&amy_a, &format!("/v1/refresh/{entity_b}"));
    assert_eq!(status, 200, "{switched}");
    // Once accepted, B sees the account's own names.
    let (_, list) = s.get_as(&b, "/v1/users");
    let accepted = list["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["email"] == "ann@example.com")
        .cloned()
        .unwrap();
    assert_eq!(
        (&accepted["status"], &accepted["first_name"]),
        (&json!("active"), &json!("Ada")),
        "{accepted}"
    );
    // The new person signs in with the mailed password and is active in B.
    let fresh = s.token("nobody@example.com", &password, None);
    let (status, test) = s.get_as(&fresh, "/v1/test");
    assert_eq!(
        (status, &test["entity_id"]),
        (200, &json!(entity_b)),
        "{test}"
    );
    // The one whose password B chose signs in with it.
    let chosen = s.token("fresh@example.com", "chosen-by-b-123", None);
    assert_eq!(s.get_as(&chosen, "/v1/test").0, 200);
    // Ann's A data are still hers, untouched.
    let (status, doc) = s.get_as(&ann_again, &format!("/v1/documents/{ann_doc_id}"));
    assert_eq!((status, &doc["name"]), (200, &json!("Ann's contract")));
}

/// The password an invitation mail gives a new account: the line after the one that
/// ends with a colon and names the password, indented.
fn mailed_password(mail: &str) -> String {
    mail.lines()
        .map(str::trim)
        .find(|l| l.len() == 24 && !l.contains(' '))
        .unwrap_or_else(|| panic!("a password in {mail}"))
        .to_string()
}
