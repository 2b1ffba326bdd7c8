//! Text the signed PDF draws is refused where it is entered when no font of the PDF has
//! one of its characters (issue 50 item 1): 400 `unsupported_character`, naming the
//! member and the character, and nothing stored. Every script the fonts draw passes.

mod common;

use common::*;
use serde_json::json;

#[test]
fn names_in_the_fonts_scripts_pass_and_a_character_none_has_is_refused_naming_it() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    // Every script of the fonts, in a recipient's names.
    let (_, doc) = draft(
        &mut p,
        &t,
        json!([{"email": "a@y.se", "first_name": "Łukasz Αλέξανδρος Алексей", "last_name": "محمد דוד अमित สมชาย Nguyễn"}]),
        json!({"name": "Umowa — zażółć"}),
    );
    assert_eq!(doc["name"], "Umowa — zażółć");
    // A field's value given by the sender.
    let id = doc["id"].as_str().unwrap();
    for (value, status) in [("漢字", 400), ("Żółć", 200)] {
        let f = json!({"field_type": "text", "page_num": 1, "field_left": 100, "field_top": 600,
                       "field_width": 200, "field_height": 40, "field_value": value});
        let (s, b) = api(
            &mut p,
            &t,
            "POST",
            &format!("/v1/documents/{id}/fields"),
            Some(f),
        );
        assert_eq!(s, status, "{value}: {b}");
    }
    let cases = [
        (
            json!({"name": "Doc", "recipients": [{"email": "a@y.se", "first_name": "Ann", "last_name": "山田"}]}),
            "`recipients[0].last_name`",
        ),
        (
            json!({"name": "契約", "recipients": [{"email": "a@y.se"}]}),
            "`name`",
        ),
        (
            json!({"name": "Doc", "recipients": [{"email": "a@y.se", "company_name": "株式会社"}]}),
            "`recipients[0].company_name`",
        ),
    ];
    let before = api(&mut p, &t, "GET", "/v1/documents", None).1;
    for (body, member) in cases {
        let (status, b) = api(&mut p, &t, "POST", "/v1/documents", Some(body));
        assert_eq!(status, 400, "{b}");
        assert_eq!(b["error"], "unsupported_character", "{b}");
        let text = b.to_string();
        assert!(text.contains(member) && text.contains("U+"), "{b}");
    }
    assert_eq!(
        api(&mut p, &t, "GET", "/v1/documents", None).1,
        before,
        "nothing stored"
    );
}

#[test]
fn a_typed_signature_no_font_draws_is_refused_at_signing() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (_, sent) = sent_doc(
        &mut p,
        &t,
        json!([{"email": "a@y.se", "first_name": "Ann"}]),
        json!({}),
    );
    let sign = format!("/v1/recipient/{}/sign", secret_of(&sent, 0));
    for (name, status) in [("王小明", 400), ("Łukasz Żółć", 200)] {
        let body = json!({"signature": {"type": "typed", "name": name}});
        let (s, b) = recipient(&mut p, "POST", &sign, Some(body));
        assert_eq!(s, status, "{name}: {b}");
        if s == 400 {
            assert_eq!(b["error"], "unsupported_character", "{b}");
            assert!(b.to_string().contains("signature.name"), "{b}");
        }
    }
}
