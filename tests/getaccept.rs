//! The GetAccept drop-in, black-box: the operations of GetAccept's public v1 document
//! (a pinned copy in tests/contract/getaccept/) and the two its own apps call beyond it
//! (`GET /v1/entity`, `POST /v1/register`), as a GetAccept client uses them: template
//! roles and fields by id, folders, contacts, mail templates, the attachment library,
//! videos on the signing page, notifications, events, statistics and previews.
//!
//! Every answer is also checked against esign's own `openapi.json` (`common::call`).

mod common;

use common::*;
use serde_json::{Value, json};

/// A ready template of two pages with two roles, two custom fields and a signature
/// field for the role `Buyer`; its id.
fn template(s: &Server, t: &str, extra: Value) -> String {
    let file = s.upload(t, &esign_host::pdf::sample_pdf(2), "tpl.pdf");
    let mut body = json!({
        "name": "Standard offer", "file_id": file,
        "roles": [{"role_name": "Buyer", "role": "signer"}, {"role_name": "Legal", "role": "approver"}],
        "fields": [{"name": "plan", "type": "dropdown", "options": ["basic", "pro"], "required": true},
                   {"name": "seats", "type": "number", "min": 1, "max": 100, "default_value": "5"}],
        "page_fields": [{"field_type": "signature", "page_num": 1, "role_name": "Buyer",
                         "field_left": 50, "field_top": 600, "field_width": 200, "field_height": 50}],
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let (status, tpl) = s.post_json(t, "/v1/templates", &body);
    assert_eq!(status, 200, "{tpl}");
    let tid = tpl["id"].as_str().unwrap().to_string();
    wait_until(20, "the template", || {
        (s.get_as(t, &format!("/v1/templates/{tid}")).1["status"] == "ready").then_some(())
    });
    tid
}

#[test]
fn a_template_is_used_by_role_id_and_field_id() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let tid = template(&s, &t, json!({}));
    let (status, roles) = s.get_as(&t, &format!("/v1/templates/{tid}/roles"));
    assert_eq!(status, 200, "{roles}");
    let roles = roles["roles"].as_array().unwrap().clone();
    assert_eq!(roles.len(), 2);
    assert_eq!(roles[0]["role_name"], "Buyer");
    let buyer = roles[0]["role_id"].as_str().unwrap().to_string();
    let legal = roles[1]["role_id"].as_str().unwrap().to_string();
    assert_ne!(buyer, legal);
    // The ids are stable: a second read names the same roles.
    let (_, again) = s.get_as(&t, &format!("/v1/templates/{tid}/roles"));
    assert_eq!(again["roles"][0]["role_id"], buyer.as_str());

    let (status, fields) = s.get_as(&t, &format!("/v1/templates/{tid}/fields"));
    assert_eq!(status, 200, "{fields}");
    let items = fields["fields"].as_array().unwrap();
    let plan = items.iter().find(|f| f["field_label"] == "plan").unwrap();
    assert_eq!(plan["field_value"], "", "never null");
    assert_eq!(
        plan["field_options"],
        json!([{"value": "basic"}, {"value": "pro"}])
    );
    assert_eq!(plan["is_required"], true);
    let seats = items.iter().find(|f| f["field_label"] == "seats").unwrap();
    assert_eq!(seats["field_value"], "5");
    let placed = items
        .iter()
        .find(|f| f["field_type"] == "signature")
        .unwrap();
    assert_eq!(
        (placed["role_name"].as_str(), placed["page_id"].as_str()),
        (Some("Buyer"), Some("1"))
    );
    assert_eq!(fields["editor_fields"].as_array().unwrap().len(), 1);
    let (_, fr) = s.get_as(&t, &format!("/v1/templates/{tid}/fields_roles"));
    assert_eq!(fr["fields"][0]["role_name"], "Buyer");

    // A GetAccept client binds recipients by role id and fills fields by field id.
    let doc = s.create_doc(
        &t,
        &json!({"template_id": tid,
                "recipients": [{"email": "l@example.com", "role_id": legal},
                               {"email": "b@example.com", "role_id": buyer}],
                "custom_fields": [{"id": plan["field_id"], "value": "pro"}]}),
    );
    assert_eq!(doc["recipients"][0]["role_name"], "Legal");
    assert_eq!(doc["recipients"][0]["role"], "approver");
    assert_eq!(doc["recipients"][1]["role_name"], "Buyer");
    let id = doc["id"].as_str().unwrap();
    let (_, placed) = s.get_as(&t, &format!("/v1/documents/{id}/fields"));
    let buyer_id = doc["recipients"][1]["id"].as_str().unwrap();
    assert_eq!(placed["fields"][0]["recipient_id"], buyer_id, "{placed}");
    let custom: Vec<(String, String)> = doc["custom_fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().into(),
                c["value"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        custom.contains(&("plan".into(), "pro".into())),
        "{custom:?}"
    );
    assert!(custom.contains(&("seats".into(), "5".into())), "{custom:?}");

    // Unknown ids are a 400 that names them; nothing is created.
    for body in [
        json!({"template_id": tid, "recipients": [{"email": "x@example.com", "role_id": "0000000000000000"}]}),
        json!({"template_id": tid, "custom_fields": [{"id": "0000000000000000", "value": "x"}]}),
    ] {
        let (status, err) = s.post_json(&t, "/v1/documents", &body);
        assert_eq!(
            assert_error(status, &err, 400),
            if body["recipients"].is_null() {
                "invalid_field"
            } else {
                "invalid_recipient"
            }
        );
        assert!(
            err["description"]
                .as_str()
                .unwrap()
                .contains("0000000000000000"),
            "{err}"
        );
    }

    let (status, tables) = s.get_as(&t, &format!("/v1/templates/{tid}/pricing-tables"));
    assert_eq!((status, tables), (200, json!({"pricing_tables": []})));
    let (status, images) = s.get_as(&t, &format!("/v1/templates/{tid}/custom-images"));
    assert_eq!((status, images), (200, json!({"custom_images": []})));
    let (status, err) = s.get_as(&t, "/v1/templates/aaaaaaaaaaaaaaaa/roles");
    assert_eq!(assert_error(status, &err, 404), "template_not_found");
}

#[test]
fn a_template_hands_its_pricing_tables_and_custom_images_to_its_documents() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let tables = json!([{"currency_settings": {"currency": "EUR"}, "sections": [{"display_name": "Licences",
        "rows": [{"name": "Seat", "price": 10, "quantity": 3}]}]}]);
    let tid = template(
        &s,
        &t,
        json!({"pricing_tables": tables, "custom_images": [{"name": "logo"}]}),
    );
    let (_, got) = s.get_as(&t, &format!("/v1/templates/{tid}/pricing-tables"));
    assert_eq!(
        got["pricing_tables"][0]["currency_settings"]["currency"], "EUR",
        "{got}"
    );
    let (_, images) = s.get_as(&t, &format!("/v1/templates/{tid}/custom-images"));
    assert_eq!(images["custom_images"][0]["name"], "logo");
    let doc = s.create_doc(
        &t,
        &json!({"template_id": tid, "recipients": [{"email": "b@example.com", "role_name": "Buyer"}],
                "custom_fields": [{"name": "plan", "value": "basic"}]}),
    );
    let id = doc["id"].as_str().unwrap();
    let (_, p) = s.get_as(&t, &format!("/v1/documents/{id}/pricing-tables"));
    assert_eq!(
        p["pricing_tables"][0]["currency_settings"]["currency"], "EUR",
        "{p}"
    );
}

#[test]
fn folders_file_documents_and_templates_and_lists_filter_by_them() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let (status, f) = s.post_json(&t, "/v1/folders", &json!({"name": "Customers"}));
    assert_eq!(status, 200, "{f}");
    assert_eq!(f["type"], "archive");
    let folder = f["id"].as_str().unwrap().to_string();
    let (_, tf) = s.post_json(
        &t,
        "/v1/folders",
        &json!({"name": "Offers", "type": "template"}),
    );
    let tfolder = tf["id"].as_str().unwrap().to_string();
    let (status, sub) = s.post_json(
        &t,
        "/v1/folders",
        &json!({"name": "2026", "parent_id": folder}),
    );
    assert_eq!(status, 200, "{sub}");
    let (_, listed) = s.get_as(&t, "/v1/folders?type=archive");
    assert_eq!(listed["folders"].as_array().unwrap().len(), 2);
    let (_, one) = s.get_as(&t, &format!("/v1/folders/{folder}"));
    assert_eq!(one["subfolders"][0]["name"], "2026");

    let filed = s.create_doc(&t, &json!({"name": "In folder", "folder_id": folder}));
    let loose = s.create_doc(&t, &json!({"name": "Loose"}));
    assert_eq!(filed["folder_id"], folder.as_str());
    let (_, inside) = s.get_as(&t, &format!("/v1/documents?folder_id={folder}"));
    let names: Vec<&str> = inside
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["In folder"]);
    // With a status filter, the folder's documents of that status.
    let (_, none) = s.get_as(
        &t,
        &format!("/v1/documents?folder_id={folder}&filter=signed"),
    );
    assert_eq!(none, json!([]));
    // A document of the wrong kind of folder, or an unknown one, is refused: neither is
    // a folder this `folder_id` can name.
    let (status, err) = s.post_json(
        &t,
        "/v1/documents",
        &json!({"name": "x", "folder_id": tfolder}),
    );
    assert_eq!(assert_error(status, &err, 404), "folder_not_found");
    let (status, err) = s.post_json(
        &t,
        "/v1/documents",
        &json!({"name": "x", "folder_id": "aaaaaaaaaaaaaaaa"}),
    );
    assert_eq!(assert_error(status, &err, 404), "folder_not_found");

    // A folder with something in it stays; moved out, it can go.
    let (status, err) = s.delete_as(&t, &format!("/v1/folders/{folder}"));
    assert_eq!(assert_error(status, &err, 409), "folder_not_empty");
    let loose_id = loose["id"].as_str().unwrap();
    let filed_id = filed["id"].as_str().unwrap();
    assert_eq!(
        s.put_json(
            &t,
            &format!("/v1/documents/{loose_id}"),
            &json!({"folder_id": folder})
        )
        .0,
        204
    );
    assert_eq!(
        s.put_json(
            &t,
            &format!("/v1/documents/{filed_id}"),
            &json!({"folder_id": ""})
        )
        .0,
        204
    );
    let (_, inside) = s.get_as(&t, &format!("/v1/documents?folder_id={folder}"));
    assert_eq!(inside.as_array().unwrap().len(), 1);
    assert_eq!(inside[0]["name"], "Loose");
    assert_eq!(
        s.put_json(
            &t,
            &format!("/v1/documents/{loose_id}"),
            &json!({"folder_id": ""})
        )
        .0,
        204
    );
    assert_eq!(
        s.delete_as(&t, &format!("/v1/folders/{}", sub["id"].as_str().unwrap()))
            .0,
        204
    );
    assert_eq!(s.delete_as(&t, &format!("/v1/folders/{folder}")).0, 204);
    let (status, _) = s.get_as(&t, &format!("/v1/folders/{folder}"));
    assert_eq!(status, 404);

    // Templates too.
    let tid = template(&s, &t, json!({"folder_id": tfolder}));
    template(&s, &t, json!({}));
    let (_, all) = s.get_as(&t, "/v1/templates");
    assert_eq!(all["templates"].as_array().unwrap().len(), 2);
    let (_, filed) = s.get_as(&t, &format!("/v1/templates?folder_id={tfolder}"));
    let ids: Vec<&str> = filed["templates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [tid.as_str()]);
    assert_eq!(filed["templates"][0]["role_count"], 2);
    assert_eq!(filed["templates"][0]["field_count"], 3);
    assert_eq!(
        filed["templates"][0]["sender_name"]
            .as_str()
            .map(|n| !n.is_empty()),
        Some(true)
    );
}

#[test]
fn contacts_are_kept_searched_filtered_and_deleted() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    for body in [
        json!({"fullname": "Ada Lovelace", "email": "ada@example.com", "company_name": "Analytical"}),
        json!({"first_name": "Bob", "last_name": "Byte", "email": "bob@example.com"}),
        json!({"first_name": "Cy", "mobile": "+46701234567"}),
    ] {
        let (status, c) = s.post_json(&t, "/v1/contacts", &body);
        assert_eq!(status, 200, "{c}");
        assert!(c["contact_id"].is_string());
    }
    for bad in [
        json!({}),
        json!({"email": "not an email"}),
        json!({"email": "a@example.com", "colour": "red"}),
    ] {
        let (status, err) = s.post_json(&t, "/v1/contacts", &bad);
        assert_eq!(status, 400, "{bad}: {err}");
    }
    s.create_doc(
        &t,
        &json!({"name": "For Ada", "recipients": [signer("ada@example.com")]}),
    );
    let (_, all) = s.get_as(&t, "/v1/contacts?sort_by=name&sort_order=asc");
    let names: Vec<&str> = all["contacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["fullname"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Ada Lovelace", "Bob Byte", "Cy"]);
    let (_, found) = s.get_as(&t, "/v1/contacts?search=analyt");
    assert_eq!(found["contacts"].as_array().unwrap().len(), 1);
    assert_eq!(found["contacts"][0]["document_count"], 1);
    let (_, active) = s.get_as(&t, "/v1/contacts?filter=active");
    assert_eq!(active["contacts"][0]["email"], "ada@example.com");
    assert_eq!(active["contacts"].as_array().unwrap().len(), 1);
    let (_, inactive) = s.get_as(&t, "/v1/contacts?filter=inactive&limit=1&offset=1");
    assert_eq!(inactive["contacts"].as_array().unwrap().len(), 1);
    let (status, err) = s.get_as(&t, "/v1/contacts?sort_by=shoe_size");
    assert_eq!(assert_error(status, &err, 400), "invalid_parameter");
    let ada = found["contacts"][0]["contact_id"].as_str().unwrap();
    assert_eq!(s.delete_as(&t, &format!("/v1/contacts/{ada}")).0, 204);
    let (status, _) = s.delete_as(&t, &format!("/v1/contacts/{ada}"));
    assert_eq!(status, 404);
    let (_, left) = s.get_as(&t, "/v1/contacts");
    assert_eq!(left["contacts"].as_array().unwrap().len(), 2);
}

/// The secret of a document's first recipient's link, once sent.
fn sent_link(s: &Server, t: &str, id: &str) -> String {
    s.act_ok(t, id, "send");
    s.wait_status(t, id, "sent");
    let (_, d) = s.get_as(t, &format!("/v1/documents/{id}"));
    link(&d, 0)
}

#[test]
fn mail_texts_come_from_the_document_its_templates_or_the_entity() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let (status, entity) = s.get_as(&t, "/v1/entity");
    assert_eq!(status, 200, "{entity}");
    assert_eq!(entity["entity"]["email_send_subject"], "");
    assert!(
        entity["entity"]["default_email_send_subject"]
            .as_str()
            .unwrap()
            .contains("{{document_name}}")
    );
    let (status, changed) = s.put_json(
        &t,
        "/v1/entity",
        &json!({"email_send_subject": "Entity says: {{document_name}}", "email_send_message": "Entity message"}),
    );
    assert_eq!(status, 200, "{changed}");
    assert_eq!(
        changed["entity"]["email_send_subject"],
        "Entity says: {{document_name}}"
    );

    // The entity's defaults.
    let a = pdf_draft(&s, &t, "Alpha", json!([signer("a@example.com")]), json!({}));
    sent_link(&s, &t, &a);
    let mails = s.wait_mails(1, |m| m.contains("To: a@example.com"));
    assert!(mails[0].contains("Entity says: Alpha"), "{}", mails[0]);
    assert!(mails[0].contains("Entity message"), "{}", mails[0]);

    // An email template's code is the message; a communication template's subject wins
    // over the entity's.
    let (status, et) = s.post_json(
        &t,
        "/v1/email/templates",
        &json!({"name": "Friendly", "code": "Hi {{recipient_first_name}}, {{document_name}} is ready."}),
    );
    assert_eq!(status, 200, "{et}");
    let (status, ct) = s.post_json(
        &t,
        "/v1/communication-templates",
        &json!({"name": "Sales", "language": "en", "status": "published",
                "email_sendout_template": {"email_subject": "From the template: {{document_name}}"},
                "email_sendout_reminder_template": {"email_subject": "Still waiting: {{document_name}}",
                                                    "message": "Reminder text from the template"}}),
    );
    assert_eq!(status, 200, "{ct}");
    let b = pdf_draft(
        &s,
        &t,
        "Beta",
        json!([signer("b@example.com")]),
        json!({"email_send_template_id": et["id"], "communication_template_id": ct["id"]}),
    );
    sent_link(&s, &t, &b);
    let mails = s.wait_mails(1, |m| m.contains("To: b@example.com"));
    assert!(mails[0].contains("From the template: Beta"), "{}", mails[0]);
    assert!(mails[0].contains("Hi Sam, Beta is ready."), "{}", mails[0]);
    let (status, _) = s.post_json(&t, &format!("/v1/documents/{b}/reminders"), &json!({}));
    assert_eq!(status, 200);
    let mails = s.wait_mails(1, |m| m.contains("Still waiting: Beta"));
    assert!(
        mails[0].contains("Reminder text from the template"),
        "{}",
        mails[0]
    );

    // Reads and updates in GetAccept's shapes.
    let (_, grouped) = s.get_as(&t, "/v1/email/templates");
    assert_eq!(grouped["sendout"][0]["name"], "Friendly");
    let eid = et["id"].as_str().unwrap();
    assert_eq!(
        s.put_json(
            &t,
            &format!("/v1/email/templates/{eid}"),
            &json!({"name": "Warm"})
        )
        .0,
        204
    );
    let (_, one) = s.get_as(&t, &format!("/v1/email/templates/{eid}"));
    assert_eq!(
        (
            one["name"].as_str(),
            one["code"].as_str().map(|c| c.starts_with("Hi"))
        ),
        (Some("Warm"), Some(true))
    );
    let cid = ct["id"].as_str().unwrap();
    assert_eq!(
        s.put_json(
            &t,
            &format!("/v1/communication-templates/{cid}"),
            &json!({"status": "draft"})
        )
        .0,
        204
    );
    let (_, drafts) = s.get_as(&t, "/v1/communication-templates?statuses=draft");
    assert_eq!(drafts["communication_templates"][0]["id"], cid);
    let (_, published) = s.get_as(&t, "/v1/communication-templates?statuses=published");
    assert_eq!(published["communication_templates"], json!([]));
    // A document naming an unknown template is refused before anything is made.
    let (status, err) = s.post_json(
        &t,
        "/v1/documents",
        &json!({"name": "x", "communication_template_id": "aaaaaaaaaaaaaaaa"}),
    );
    assert_eq!(assert_error(status, &err, 404), "template_not_found");
    // Only managers and admins write the account's templates and texts.
    s.add_member("user@example.com", &["--role", "user"]);
    let u = s.token("user@example.com", USER_PASSWORD, None);
    let (status, _) = s.post_json(
        &u,
        "/v1/email/templates",
        &json!({"name": "x", "code": "y"}),
    );
    assert_eq!(status, 403);
    let (status, _) = s.put_json(&u, "/v1/entity", &json!({"name": "Mine now"}));
    assert_eq!(status, 403);
}

#[test]
fn a_video_plays_on_the_signing_page_and_library_files_attach_by_id() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    // The first bytes of an MP4 file (an `ftyp` box): enough for esign, which stores it.
    let mut mp4 = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom".to_vec();
    mp4.extend_from_slice(&[7u8; 64]);
    let (status, up) = s.post_json(
        &t,
        "/v1/upload/video",
        &json!({"file_content": b64(&mp4), "file_name": "welcome.mp4", "title": "Welcome"}),
    );
    assert_eq!(status, 200, "{up}");
    assert_eq!(up["file_status"], "ready");
    let video = up["video_id"].as_str().unwrap().to_string();
    let (status, err) = s.post_json(
        &t,
        "/v1/upload/video",
        &json!({"file_content": b64(b"not a video at all"), "file_name": "x.mp4"}),
    );
    assert_eq!(assert_error(status, &err, 400), "unsupported_file");
    let (_, job) = s.get_as(&t, &format!("/v1/video/job/{video}"));
    assert_eq!(job["Status"], "ready");
    let (_, listed) = s.get_as(&t, "/v1/videos?include_video_url=false");
    assert_eq!(listed["videos"][0]["video_title"], "Welcome");
    assert!(listed["videos"][0].get("video_url").is_none());
    let (_, one) = s.get_as(&t, &format!("/v1/videos/{video}"));
    let url = one["video_url"].as_str().unwrap().to_string();
    let thumb = one["thumb_url"].as_str().unwrap().to_string();
    // Both play without a token.
    let got = client().get(&url).send().unwrap();
    assert_eq!(got.status(), 200);
    assert_eq!(got.headers()["content-type"], "video/mp4");
    assert_eq!(got.bytes().unwrap().to_vec(), mp4);
    let poster = client().get(&thumb).send().unwrap();
    assert_eq!(
        (
            poster.status().as_u16(),
            poster.headers()["content-type"].to_str().unwrap()
        ),
        (200, "image/svg+xml")
    );

    // The library: a file kept once, attached by id.
    let (status, att) = s.post_json(
        &t,
        "/v1/upload/attachment",
        &json!({"file_content": b64(&esign_host::pdf::sample_pdf(1)), "file_name": "terms.pdf", "title": "Terms"}),
    );
    assert_eq!(status, 200, "{att}");
    let (_, lib) = s.get_as(&t, "/v1/attachments");
    let item = &lib["attachments"][0];
    assert_eq!(
        (
            item["attachment_title"].as_str(),
            item["attachment_extension"].as_str()
        ),
        (Some("Terms"), Some("pdf"))
    );
    let file = client()
        .get(item["attachment_url"].as_str().unwrap())
        .send()
        .unwrap();
    assert_eq!(file.headers()["content-type"], "application/pdf");

    // A document with the video and the attachment: the recipient sees both.
    let id = pdf_draft(
        &s,
        &t,
        "With video",
        json!([signer("v@example.com")]),
        json!({"video_id": video, "attachments": [{"id": att["id"]}]}),
    );
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    assert_eq!(
        (d["video_id"].as_str(), d["is_video"].as_bool()),
        (Some(video.as_str()), Some(true))
    );
    let secret = sent_link(&s, &t, &id);
    let (status, view) = call(s.get(&format!("/v1/recipient/{secret}")));
    assert_eq!(status, 200, "{view}");
    let shown = view["document"]["video"]["url"].as_str().unwrap();
    assert_eq!(s.url(shown), url, "the page plays the published file");
    assert_eq!(view["document"]["attachments"][0]["name"], "Terms");
    let page = s.get(&format!("/s/{secret}")).send().unwrap();
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(csp.contains("media-src 'self'"), "{csp}");

    // Unknown ids are refused; nothing is published at a made-up address.
    let (status, err) = s.post_json(
        &t,
        "/v1/documents",
        &json!({"name": "x", "video_id": "aaaaaaaaaaaaaaaa"}),
    );
    assert_eq!(assert_error(status, &err, 404), "video_not_found");
    let (status, err) = s.post_json(
        &t,
        "/v1/documents",
        &json!({"name": "x", "attachments": [{"id": "aaaaaaaaaaaaaaaa"}]}),
    );
    assert_eq!(assert_error(status, &err, 404), "attachment_not_found");
    let (status, _) = call(s.get("/v1/files/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"));
    assert_eq!(status, 404);
}

#[test]
fn a_drafts_attachment_takes_a_new_file() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let terms = s.upload(&t, &esign_host::pdf::sample_pdf(1), "terms.pdf");
    let id = pdf_draft(
        &s,
        &t,
        "Att",
        json!([signer("a@example.com")]),
        json!({"attachments": [{"file_id": terms}]}),
    );
    let (_, atts) = s.get_as(&t, &format!("/v1/documents/{id}/attachments"));
    let aid = atts["attachments"][0]["attachment_id"]
        .as_str()
        .unwrap()
        .to_string();
    let form = reqwest::blocking::multipart::Form::new().part(
        "file",
        reqwest::blocking::multipart::Part::bytes(esign_host::pdf::sample_pdf(3))
            .file_name("terms-v2.pdf"),
    );
    let (status, body) = call(
        s.post(&format!("/v1/documents/{id}/attachments/{aid}/upload"))
            .bearer_auth(&t)
            .multipart(form),
    );
    assert_eq!(status, 204, "{body}");
    let (_, atts) = s.get_as(&t, &format!("/v1/documents/{id}/attachments"));
    assert_eq!(
        atts["attachments"][0]["attachment_filename"],
        "terms-v2.pdf"
    );
    let (status, err) = s.post_json(
        &t,
        &format!("/v1/documents/{id}/attachments/aaaaaaaaaaaaaaaa/upload"),
        &json!({"file_content": b64(b"x"), "file_name": "x.txt"}),
    );
    assert_eq!(assert_error(status, &err, 404), "attachment_not_found");
    s.act_ok(&t, &id, "send");
    s.wait_status(&t, &id, "sent");
    let (status, err) = s.post_json(
        &t,
        &format!("/v1/documents/{id}/attachments/{aid}/upload"),
        &json!({"file_content": b64(b"x"), "file_name": "x.txt"}),
    );
    assert_eq!(assert_error(status, &err, 409), "invalid_status");
}

#[test]
fn events_notifications_statistics_and_previews_tell_what_happened() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let id = pdf_draft(
        &s,
        &t,
        "Watched",
        json!([signer("w@example.com")]),
        json!({}),
    );
    // A draft previews as its PDF.
    let (status, pv) = s.post_json(&t, &format!("/v1/documents/{id}/preview"), &json!({}));
    assert_eq!(status, 200, "{pv}");
    let resp = client()
        .get(pv["preview_url"].as_str().unwrap())
        .send()
        .unwrap();
    assert_eq!(resp.headers()["content-type"], "application/pdf");
    let secret = sent_link(&s, &t, &id);
    let (status, _) = call(
        s.post(&format!("/v1/recipient/{secret}/view"))
            .json(&json!({})),
    );
    assert_eq!(status, 200);
    s.wait_until_event(&t, &id, "document.viewed");

    let (status, events) = s.get_as(&t, &format!("/v1/documents/{id}/events"));
    assert_eq!(status, 200);
    let names: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event_name"].as_str().unwrap())
        .collect();
    assert!(names.starts_with(&["document.created"]), "{names:?}");
    assert!(
        names.contains(&"document.sent") && names.contains(&"document.viewed"),
        "{names:?}"
    );
    let viewed = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event_name"] == "document.viewed")
        .unwrap();
    assert_eq!(
        (viewed["email"].as_str(), viewed["first_name"].as_str()),
        (Some("w@example.com"), Some("Sam"))
    );

    // The owner is told what the recipient did, not what they did themselves.
    let (_, notes) = s.get_as(&t, "/v1/notifications");
    let names: Vec<&str> = notes
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event_name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"document.viewed"), "{names:?}");
    assert!(!names.contains(&"document.created"), "{names:?}");

    // A sent document previews as a picture of its first page.
    let (_, pv) = s.post_json(&t, &format!("/v1/documents/{id}/preview"), &json!({}));
    let resp = client()
        .get(pv["preview_url"].as_str().unwrap())
        .send()
        .unwrap();
    assert_eq!(resp.headers()["content-type"], "image/png");
    assert!(resp.bytes().unwrap().starts_with(b"\x89PNG"));

    let (_, me) = s.get_as(&t, "/v1/users/me");
    let uid = me["user"]["id"].as_str().unwrap();
    let (status, stats) = s.get_as(&t, &format!("/v1/users/{uid}/statistics"));
    assert_eq!(status, 200, "{stats}");
    assert_eq!(stats["statistics"]["documents_created"], 1);
    assert_eq!(stats["statistics"]["documents_sent"], 1);
    assert_eq!(stats["statistics"]["by_status"]["viewed"], 1);
    let (_, old) = s.get_as(
        &t,
        &format!("/v1/users/{uid}/statistics?start_date=2020-01-01&end_date=2020-02-01"),
    );
    assert_eq!(old["statistics"]["documents_created"], 0);
    let (status, err) = s.get_as(
        &t,
        &format!("/v1/users/{uid}/statistics?start_date=2020-01-01&end_date=2026-01-01"),
    );
    assert_eq!(assert_error(status, &err, 400), "invalid_parameter");
}

#[test]
fn the_one_event_subscription_endpoints_subscribe_to_their_event() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    for kind in ["signed", "rejected", "reviewed"] {
        let (status, sub) = s.post_json(
            &t,
            &format!("/v1/subscriptions/events/{kind}"),
            &json!({"target_url": "https://hooks.example.com/x"}),
        );
        assert_eq!(status, 200, "{sub}");
        assert_eq!(sub["event"], format!("document.{kind}"));
    }
    let (status, err) = s.post_json(
        &t,
        "/v1/subscriptions/events/signed",
        &json!({"target_url": "https://hooks.example.com/x", "event": "document.viewed"}),
    );
    assert_eq!(assert_error(status, &err, 400), "invalid_event");
    let (_, all) = s.get_as(&t, "/v1/subscriptions");
    assert_eq!(all.as_array().unwrap().len(), 3);
}

#[test]
fn sign_up_is_off_until_the_operator_turns_it_on_and_then_limited() {
    let s = Server::start(&[]);
    let body = |email: &str| {
        json!({"email": email, "password": "correct horse battery", "first_name": "Nia",
               "last_name": "Ng", "mobile": "+46701234567", "entity_name": "Ng Consulting",
               "entity_country_code": "SE"})
    };
    let (status, err) = call(s.post("/v1/register").json(&body("nia@example.com")));
    assert_eq!(assert_error(status, &err, 403), "signup_disabled");
    s.admin(&["signup", "on"]);
    let (status, tok) = call(s.post("/v1/register").json(&body("nia@example.com")));
    assert_eq!(status, 200, "{tok}");
    let token = tok["access_token"].as_str().unwrap();
    let (_, who) = s.get_as(token, "/v1/test");
    assert_eq!(who["entity_name"], "Ng Consulting");
    let (_, me) = s.get_as(token, "/v1/users/me");
    assert_eq!(
        (me["user"]["role"].as_str(), me["user"]["mobile"].as_str()),
        (Some("admin"), Some("+46701234567"))
    );
    // The user's details (GetAccept's `User`) carry the same profile.
    let id = who["user_id"].as_str().unwrap();
    let (_, user) = s.get_as(token, &format!("/v1/users/{id}"));
    assert_eq!(user["mobile"], "+46701234567", "{user}");
    // Signing in works as for anyone.
    assert_eq!(
        s.login("nia@example.com", "correct horse battery", None)
            .status(),
        200
    );
    let (status, err) = call(s.post("/v1/register").json(&body("NIA@example.com")));
    assert_eq!(assert_error(status, &err, 400), "email_taken");
    let (status, err) = call(
        s.post("/v1/register")
            .json(&json!({"email": "x@example.com", "password": "short"})),
    );
    assert_eq!(assert_error(status, &err, 400), "weak_password");
    // Five sign-ups an hour from one address, counted before the email is looked up:
    // the attempt with a taken email above was the second (a weak password is refused
    // before the count).
    for n in 3..=5 {
        let (status, b) = call(
            s.post("/v1/register")
                .json(&body(&format!("n{n}@example.com"))),
        );
        assert_eq!(status, 200, "{b}");
    }
    let resp = s
        .post("/v1/register")
        .json(&body("n6@example.com"))
        .send()
        .unwrap();
    assert_eq!(resp.status(), 429);
    assert!(resp.headers().get("retry-after").is_some());
    // Past the limit a taken email is not told apart from a new one.
    let (status, _) = call(s.post("/v1/register").json(&body("nia@example.com")));
    assert_eq!(status, 429);
    s.admin(&["signup", "off"]);
    let (status, _) = call(s.post("/v1/register").json(&body("n7@example.com")));
    assert_eq!(status, 403);
}

/// What a GetAccept client sends to each operation beyond GetAccept's own examples
/// (which leave most members out): merged over `getaccept::example_body`. `{ids}` in
/// strings are filled from the world of [`replay_world`].
fn client_body(method: &str, template: &str) -> Value {
    match (method, template) {
        ("POST", "/auth") => json!({"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD}),
        ("POST", "/communication-templates") => json!({"name": "Sales", "language": "en"}),
        ("PUT", "/communication-templates/{communicationTemplateId}") => {
            json!({"status": "published"})
        }
        ("POST", "/contacts") => json!({"fullname": "Ada Lovelace", "email": "ada@example.com"}),
        ("POST", "/custom-data/entity") => {
            json!({"key": "crm_id", "label": "CRM id", "value_type": "string"})
        }
        ("POST", "/documents") => {
            json!({"name": "From a client", "attachments": [], "custom_pricing_tables": [],
            "is_scheduled_sending": false,
            "custom_data": null, "recipients": [{"email": "c@example.com", "first_name": "C", "role": "signer"}]})
        }
        ("PUT", "/documents/{documentId}") => json!({"external_id": "ext-replay"}),
        ("POST", "/documents/{documentId}/comments") => json!({"text": "Looks good"}),
        ("POST", "/documents/{documentId}/custom-data") => {
            json!({"property": {"key": "crm_id", "value": "42"}})
        }
        ("PUT", "/documents/{documentId}/custom-data/{customDataId}") => {
            json!({"property": {"key": "crm_id", "value": "43"}})
        }
        ("POST", "/documents/{documentId}/expiration") => {
            json!({"expiration_date": "2099-01-01T00:00:00Z"})
        }
        ("POST", "/documents/{documentId}/fields") => json!({"field_type": "text",
            "page_id": "{page}", "recipient_id": "{draft_recipient}", "field_left": 10, "field_top": 10,
            "field_width": 100, "field_height": 20}),
        ("PUT", "/documents/{documentId}/fields") => json!({"editor_fields": []}),
        ("POST", "/documents/{documentId}/forward") => json!({"recipient_id": "{sent_recipient}",
            "email": "fw@example.com", "first_name": "For", "last_name": "Ward"}),
        ("PUT", "/documents/{documentId}/pricing-tables") => json!({"pricing_tables": []}),
        ("POST", "/documents/{documentId}/revisions") => json!({"message": "New terms"}),
        ("POST", "/email/templates") => {
            json!({"name": "Friendly", "code": "Hi {{recipient_first_name}}"})
        }
        ("PUT", "/email/templates/{emailTemplateId}") => json!({"name": "Warm"}),
        (
            "POST",
            "/subscriptions"
            | "/subscriptions/events/rejected"
            | "/subscriptions/events/reviewed"
            | "/subscriptions/events/signed",
        ) => json!({"global": true, "notification_email": ADMIN_EMAIL}),
        ("POST", "/subscriptions/test") => json!({"event": "document.signed",
            "target_url": "https://abc.x.pipedream.net/", "document_id": "{sent}"}),
        ("POST", "/upload") => json!({"file_content": "{pdf}", "file_name": "a.pdf"}),
        ("POST", "/upload/archive") => {
            json!({"file_content": "{pdf}", "file_name": "signed.pdf", "name": "Signed elsewhere"})
        }
        ("POST", "/upload/attachment") => {
            json!({"file_content": "{pdf}", "file_name": "terms.pdf"})
        }
        ("POST", "/upload/video") => json!({"file_content": "{mp4}", "file_name": "hello.mp4"}),
        ("POST", "/users") => {
            json!({"email": "new.member@example.com", "first_name": "New", "last_name": "Member", "role": "user"})
        }
        _ => json!({}),
    }
}

/// Merges `over` into `base` (objects member by member; anything else replaced).
fn merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                merge(b.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// Replaces `{name}` in every string of `v` by `vars[name]`.
fn fill(v: &mut Value, vars: &[(&str, String)]) {
    match v {
        Value::String(s) => {
            for (k, val) in vars {
                *s = s.replace(&format!("{{{k}}}"), val);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|x| fill(x, vars)),
        Value::Object(m) => m.values_mut().for_each(|x| fill(x, vars)),
        _ => {}
    }
}

/// The operations a client's call may be refused on by the state the replay leaves,
/// each with why; every other operation must answer 2xx.
const REFUSED: &[(&str, &str, &str)] = &[];

#[test]
fn every_getaccept_operation_answers_a_getaccept_client_in_getaccepts_shape() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let pdf = b64(&esign_host::pdf::sample_pdf(2));
    let mut mp4 = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom".to_vec();
    mp4.extend_from_slice(&[7u8; 32]);
    let entity = s.first_entity();
    let (_, me) = s.get_as(&t, "/v1/users/me");
    let member = s.add_member("member@example.com", &["--role", "user"]);
    let tid = template(&s, &t, json!({}));
    let terms = s.upload(&t, &esign_host::pdf::sample_pdf(1), "terms.pdf");
    let draft = pdf_draft(
        &s,
        &t,
        "Draft",
        json!([signer("d@example.com")]),
        json!({"attachments": [{"file_id": terms}], "external_id": "ext-1"}),
    );
    let sent = pdf_draft(
        &s,
        &t,
        "Sent",
        json!([signer("s1@example.com"), signer("s2@example.com")]),
        json!({}),
    );
    sent_link(&s, &t, &sent);
    let to_seal = pdf_draft(
        &s,
        &t,
        "To seal",
        json!([signer("x@example.com")]),
        json!({}),
    );
    let to_send = pdf_draft(
        &s,
        &t,
        "To send",
        json!([signer("y@example.com")]),
        json!({}),
    );
    let to_delete = s.create_doc(&t, &json!({"name": "To delete"}))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let detail = |id: &str| s.get_as(&t, &format!("/v1/documents/{id}")).1;
    let (d_draft, d_sent) = (detail(&draft), detail(&sent));
    let (_, atts) = s.get_as(&t, &format!("/v1/documents/{draft}/attachments"));
    let (_, pages) = s.get_as(&t, &format!("/v1/documents/{draft}/pages"));
    let (_, sub) = s.post_json(
        &t,
        "/v1/subscriptions",
        &json!({"event": "document.signed", "target_url": "https://hooks.example.com/x"}),
    );
    let (_, folder) = s.post_json(&t, "/v1/folders", &json!({"name": "F"}));
    let (_, contact) = s.post_json(
        &t,
        "/v1/contacts",
        &json!({"fullname": "Bo Bee", "email": "bo@example.com"}),
    );
    let (_, et) = s.post_json(
        &t,
        "/v1/email/templates",
        &json!({"name": "E", "code": "c"}),
    );
    let (_, ct) = s.post_json(
        &t,
        "/v1/communication-templates",
        &json!({"name": "C", "language": "en"}),
    );
    let (_, video) = s.post_json(
        &t,
        "/v1/upload/video",
        &json!({"file_content": b64(&mp4), "file_name": "v.mp4"}),
    );
    let (_, prop) = s.post_json(
        &t,
        "/v1/custom-data/entity",
        &json!({"key": "deal", "label": "Deal", "value_type": "string"}),
    );
    let (_, cd) = s.post_json(
        &t,
        &format!("/v1/documents/{sent}/custom-data"),
        &json!({"property": {"key": "deal", "value": "1"}}),
    );
    assert!(prop.is_object() && cd.is_object(), "{prop} {cd}");
    let str_of = |v: &Value, k: &str| {
        v[k].as_str()
            .unwrap_or_else(|| panic!("{k} in {v}"))
            .to_string()
    };
    let vars: Vec<(&str, String)> = vec![
        ("pdf", pdf),
        ("mp4", b64(&mp4)),
        ("page", str_of(&pages["pages"][0], "page_id")),
        ("draft_recipient", str_of(&d_draft["recipients"][0], "id")),
        ("sent_recipient", str_of(&d_sent["recipients"][0], "id")),
        ("sent", sent.clone()),
    ];
    let param = |method: &str, template: &str, name: &str| -> String {
        match name {
            "documentId" => match (method, template) {
                ("PUT", "/documents/{documentId}")
                | (_, "/documents/{documentId}/fields")
                | (_, "/documents/{documentId}/attachments/{documentAttachmentId}/upload")
                | (_, "/documents/{documentId}/preview") => draft.clone(),
                ("POST", "/documents/{documentId}/seal") => to_seal.clone(),
                ("POST", "/documents/{documentId}/send") => to_send.clone(),
                ("DELETE", "/documents/{documentId}") => to_delete.clone(),
                _ => sent.clone(),
            },
            "documentAttachmentId" => str_of(&atts["attachments"][0], "attachment_id"),
            "recipientId" => str_of(&d_sent["recipients"][1], "id"),
            "customDataId" => str_of(&cd, "id"),
            "propertyKey" => "deal".into(),
            "externalId" => "ext-1".into(),
            "entityId" => entity.clone(),
            "templateId" => tid.clone(),
            "userId" => {
                if method == "DELETE" {
                    member.clone()
                } else {
                    str_of(&me["user"], "id")
                }
            }
            "subscriptionId" => str_of(&sub, "id"),
            "folderId" => str_of(&folder, "id"),
            "contactId" => str_of(&contact, "contact_id"),
            "emailTemplateId" => str_of(&et, "id"),
            "communicationTemplateId" => str_of(&ct, "id"),
            "videoId" => str_of(&video, "video_id"),
            other => panic!("no value for the path parameter {other}"),
        }
    };
    // Reads and writes first, then deletions, and the token's revocation last.
    let mut ops = getaccept::operations();
    ops.sort_by_key(|(m, p)| (p == "/revoke", m == "DELETE"));
    let mut failures = Vec::new();
    let mut served = 0;
    for (method, template) in &ops {
        let mut path = template.clone();
        while let Some(start) = path.find('{') {
            let end = path[start..].find('}').unwrap() + start;
            let value = param(method, template, &path[start + 1..end]);
            path.replace_range(start..=end, &value);
        }
        let url = format!("/v1{path}");
        let mut req = match method.as_str() {
            "GET" => s.get(&url),
            "POST" => s.post(&url),
            "PUT" => s.put(&url),
            _ => s.delete(&url),
        };
        if template != "/auth" {
            req = req.bearer_auth(&t);
        }
        if let Some(mut body) = getaccept::example_body(method, template) {
            merge(&mut body, &client_body(method, template));
            fill(&mut body, &vars);
            req = req.json(&body);
        } else if template.ends_with("/upload") {
            // GetAccept documents this one as multipart only.
            let file = reqwest::blocking::multipart::Part::bytes(esign_host::pdf::sample_pdf(1))
                .file_name("terms-v2.pdf");
            req = req.multipart(reqwest::blocking::multipart::Form::new().part("file", file));
        }
        let (status, answer) = call(req);
        served += 1;
        let refused_ok = REFUSED.iter().any(|(m, p, _)| m == method && p == template);
        if !(200..300).contains(&status) && !refused_ok {
            failures.push(format!("{method} {template}: {status} {answer}"));
            continue;
        }
        let errors = getaccept::errors(method, template, status, &answer);
        if !errors.is_empty() {
            failures.push(format!(
                "{method} {template} {status}: GetAccept's schema rejects the answer:\n    {}\n    {answer}",
                errors.join("\n    ")
            ));
        }
    }
    assert_eq!(served, 86, "GetAccept's document has 86 operations");
    assert!(
        failures.is_empty(),
        "{} of {served} operations failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn an_external_approver_approves_and_is_in_the_certificate_an_internal_one_is_not() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let id = pdf_draft(
        &s,
        &t,
        "Approved",
        json!([
            {"email": "ext@example.com", "first_name": "Extra", "last_name": "Outside", "role": "externalApprover"},
            {"email": "int@example.com", "first_name": "Ina", "last_name": "Inside", "role": "internalApprover"},
            signer("s@example.com"),
        ]),
        json!({}),
    );
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    let roles: Vec<&str> = d["recipients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["role"].as_str().unwrap())
        .collect();
    // `approver` is what esign's v1 has always answered for an internal approver.
    assert_eq!(roles, ["externalApprover", "approver", "signer"]);
    let (status, err) = s.post_json(
        &t,
        "/v1/documents",
        &json!({"recipients": [{"email": "a@example.com", "role": "boss"}]}),
    );
    assert_eq!(assert_error(status, &err, 400), "invalid_recipient");
    assert!(
        err["description"]
            .as_str()
            .unwrap()
            .contains("externalApprover"),
        "{err}"
    );
    s.act_ok(&t, &id, "send");
    s.wait_status(&t, &id, "sent");
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    let (ext, int, sig) = (link(&d, 0), link(&d, 1), link(&d, 2));
    // An approver approves; signing is for signers.
    assert_eq!(
        recipient_post(
            &s,
            &ext,
            "sign",
            json!({"signature": {"type": "typed", "name": "X"}})
        )
        .0,
        403
    );
    assert_eq!(recipient_post(&s, &ext, "approve", json!({})).0, 200);
    assert_eq!(recipient_post(&s, &int, "approve", json!({})).0, 200);
    let (status, b) = recipient_post(
        &s,
        &sig,
        "sign",
        json!({"signature": {"type": "typed", "name": "Sam Signer"}}),
    );
    assert_eq!(status, 200, "{b}");
    s.wait_status(&t, &id, "signed");
    let text = pdf_text(&s, &t, &id);
    assert!(
        text.contains("Extra Outside"),
        "the external approver is in the certificate:\n{text}"
    );
    assert!(text.contains("Sam Signer"), "{text}");
    assert!(
        !text.contains("Ina Inside"),
        "the internal approver is not:\n{text}"
    );
}
