//! The serde shape is kept: JSON written by `esign engine work` and hosts/js's `toSerde`
//! before these types moved here (from `esign_formats::work`, whose import case was
//! named `ImportFiles`) still decodes, and encodes back to the same JSON.

extern crate std;

use super::*;

/// Orders and outcomes as the previous build of `esign engine work` read and wrote them.
const OLD: &[&str] = &[
    r#"{"ImportFiles":[{"blob":"p1","url":null,"name":"a.pdf","fill":[]},{"blob":"p2","url":null,"name":"b.pdf","fill":[["k","v"]]},{"blob":null,"url":"https://example.com/x.pdf","name":"c.pdf","fill":[]}]}"#,
    r#"{"Render":{"sources":["p1"],"stamps":[{"page":0,"left":10.5,"top":20.0,"width":100.0,"height":20.0,"content":"Check"},{"page":0,"left":10.0,"top":60.0,"width":100.0,"height":20.0,"content":{"Text":"Ann"}},{"page":0,"left":10.0,"top":90.0,"width":100.0,"height":20.0,"content":{"Image":"nopng"}}],"appendix":[{"Heading":"Appendix"},{"Text":"words"},{"HeaderRow":["a","b"]},{"Row":["c","d"]},"Rule","PageBreak",{"Signature":{"image":null,"text":"Ann Signer","caption":"Signed"}}],"summary":[{"Heading":"Summary"}],"seal":{"document_id":"d1","log_head":"h1"}}}"#,
    r#"{"Fetch":"https://example.com/a.pdf"}"#,
];

const OLD_OUTCOMES: &[&str] = &[
    r#"{"ImportFiles":[{"Ok":{"blob":"p1","size":1608,"sha256":"4a0b842c1ddb367a6a6c0d8f26b1e7b3e2523676f4c92173a4dbc6851d49baed","pages":[{"width":595.28,"height":841.89}],"placeholders":[],"downloaded":{"id":"b9","size":1608,"sha256":"4a0b"}}},{"Err":{"code":"encrypted","message":"the PDF is password-protected; upload it without a password"}}]}"#,
    r#"{"Render":{"Ok":{"blob":"made-5","size":3102,"sha256":"e742","content_sha256":"3e6b","page_count":4,"page_images":[{"blob":"made-1","size":6921,"width":800,"height":1131}],"seal":{"signer":"CN=esign","certificate_sha256":"ab12","signed_at_ms":1795608000000,"timestamp_ms":null}}}}"#,
    r#"{"Render":{"Err":{"code":"timestamp-unavailable","message":"no answer"}}}"#,
    r#"{"Fetch":{"Ok":{"id":"b1","size":3,"sha256":"cd"}}}"#,
];

fn same_json<T: serde::Serialize + serde::de::DeserializeOwned>(old: &str) -> T {
    let decoded: T = serde_json::from_str(old).expect(old);
    // As text: a `Value` would widen the f32 page sizes.
    assert_eq!(serde_json::to_string(&decoded).unwrap(), old);
    decoded
}

#[test]
fn old_orders_and_outcomes_decode_and_encode_the_same() {
    let orders: std::vec::Vec<WorkOrder> = OLD.iter().map(|o| same_json(o)).collect();
    assert!(matches!(&orders[0], WorkOrder::Import(s) if s.len() == 3 && s[1].fill.len() == 1));
    let WorkOrder::Render(r) = &orders[1] else {
        panic!("{:?}", orders[1])
    };
    assert_eq!(r.stamps[0].content, StampContent::Check);
    assert!(matches!(&r.appendix[6], Block::Signature(s) if s.text == "Ann Signer"));
    let outcomes: std::vec::Vec<WorkOutcome> = OLD_OUTCOMES.iter().map(|o| same_json(o)).collect();
    assert!(matches!(&outcomes[0], WorkOutcome::Import(r) if r[0].is_ok() && r[1].is_err()));
    let check = PdfCheck {
        problems: std::vec!["one".into()],
        ..PdfCheck::default()
    };
    let text = serde_json::to_string(&check).unwrap();
    assert_eq!(same_json::<PdfCheck>(&text), check);
}
