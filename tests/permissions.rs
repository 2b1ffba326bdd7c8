//! Who may change what, black-box (docs/permissions.md; every row is a native test in
//! engine/tests/permissions.rs): the audit's template edit by a plain member, against
//! the real binary.

mod common;

use common::*;
use serde_json::json;

/// A plain member cannot rewrite the admin's template (turn its signer into a CC and
/// drop its signature field): 403 `access_denied`, and the template is unchanged; its
/// owner can.
#[test]
fn a_plain_member_cannot_edit_anothers_template() {
    let s = Server::start(&[]);
    let admin = s.admin_token();
    s.add_member("peer@example.com", &["--role", "user"]);
    let peer = s.token("peer@example.com", USER_PASSWORD, None);

    let file = s.upload(&admin, &esign_host::pdf::sample_pdf(1), "tpl.pdf");
    let (status, tpl) = s.post_json(
        &admin,
        "/v1/templates",
        &json!({
            "name": "Offer", "file_id": file,
            "roles": [{"role_name": "Buyer", "role": "signer"}],
            "page_fields": [{"field_type": "signature", "page_num": 1, "role_name": "Buyer",
                             "field_left": 50, "field_top": 600, "field_width": 200,
                             "field_height": 50}],
        }),
    );
    assert_eq!(status, 200, "{tpl}");
    let id = tpl["id"].as_str().unwrap().to_string();
    let path = format!("/v1/templates/{id}");
    wait_until(20, "the template", || {
        (s.get_as(&admin, &path).1["status"] == "ready").then_some(())
    });

    let (status, err) = s.put_json(
        &peer,
        &path,
        &json!({"roles": [{"role_name": "Buyer", "role": "cc"}], "page_fields": []}),
    );
    assert_eq!(assert_error(status, &err, 403), "access_denied");
    let (status, after) = s.get_as(&peer, &path);
    assert_eq!(status, 200, "members still read it: {after}");
    assert_eq!(after["roles"][0]["role"], "signer");
    assert_eq!(after["page_fields"].as_array().unwrap().len(), 1);

    let (status, body) = s.put_json(&admin, &path, &json!({"name": "Offer 2"}));
    assert_eq!(status, 204, "{body}");
    assert_eq!(s.get_as(&admin, &path).1["name"], "Offer 2");
}
