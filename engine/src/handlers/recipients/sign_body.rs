//! The body of `POST /v1/recipient/{secret}/sign`, read into a
//! [`signatures::SignInput`] for the domain's [`signatures::given`]:
//!
//! ```json
//! {"signature": {"type": "typed" | "drawn" | "uploaded", "name": "Ada Lovelace", "image": "data:image/png;base64,..."},
//!  "initials":  {"text": "AL", "image": "data:image/png;base64,..."},
//!  "fields":    {"<field id>": "value", ...}}
//! ```
//!
//! A typed signature needs `name` (the page also sends the name drawn in a handwriting
//! font as `image`); a drawn one needs `image`, and so does an uploaded one, a picture of
//! the signer's signature. An image is a PNG (`data:image/png;base64,...`) or a JPEG
//! (`data:image/jpeg;base64,...`), bounded in bytes and pixels (`inputs::picture_of`). A field's value is text; `true` reads as
//! `1`, `false` and `null` as empty, a number as its digits.
//!
//! Nothing here fails the request: each member keeps its reading's result, and the
//! domain raises the first fault in the order [`signatures::SignInput`] states.

use crate::base::http::{ApiError, ApiResult, Fields};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::signatures::{MAX_NAME, MarkIn, SignInput};
use crate::handlers::inputs;
use serde_json::Value;

fn bad(code: &'static str, text: impl Into<String>) -> ApiError {
    ApiError::bad_request(code, text)
}

/// Reads the `sign` body `f`.
pub(super) fn read(f: &Fields) -> SignInput {
    SignInput {
        values: values_of(f),
        signature: mark_of(f, "signature", "name"),
        initials: mark_of(f, "initials", "text"),
    }
}

/// The `fields` member: each field id with its value as text, in field id order.
fn values_of(f: &Fields) -> ApiResult<Vec<(String, ApiResult<String>)>> {
    let Some(v) = f.optional_json("fields")? else {
        return Ok(Vec::new());
    };
    let o = v.as_object().ok_or_else(|| {
        bad(
            "invalid_field",
            "`fields` must be an object of field id to value",
        )
    })?;
    Ok(o.iter()
        .map(|(id, value)| (id.clone(), text_of(id, value)))
        .collect())
}

/// A field's value as text.
fn text_of(id: &str, value: &Value) -> ApiResult<String> {
    Ok(match value {
        Value::String(s) => {
            crate::domain::drawable::drawable(&format!("fields.{id}"), s)?;
            s.clone()
        }
        Value::Bool(b) => (if *b { "1" } else { "" }).into(),
        Value::Number(n) => n.to_string(),
        Value::Null => String::new(),
        _ => return Err(bad("invalid_field", format!("`fields.{id}` must be text"))),
    })
}

/// A mark given as `{type?, name|text, image?}`; `None` when the member is absent.
fn mark_of(f: &Fields, member: &str, text_member: &str) -> ApiResult<Option<MarkIn>> {
    let Some(v) = f.optional_json(member)? else {
        return Ok(None);
    };
    let o = v
        .as_object()
        .ok_or_else(|| bad("invalid_field", format!("`{member}` must be an object")))?;
    let image = inputs::picture_of(
        o.get("image").unwrap_or(&Value::Null),
        &format!("{member}.image"),
    )?;
    let text = o
        .get(text_member)
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_string();
    crate::domain::drawable::drawable(&format!("{member}.{text_member}"), &text)?;
    if text.chars().count() > MAX_NAME {
        return Err(bad(
            "invalid_field",
            format!("`{member}.{text_member}` must be at most {MAX_NAME} characters"),
        ));
    }
    let kind = match o.get("type") {
        None | Some(Value::Null) if text.is_empty() => "drawn",
        None | Some(Value::Null) => "typed",
        Some(Value::String(s)) if s == "typed" => "typed",
        Some(Value::String(s)) if s == "drawn" => "drawn",
        Some(Value::String(s)) if s == "uploaded" => "uploaded",
        Some(_) => {
            return Err(bad(
                "invalid_field",
                format!("`{member}.type` must be typed, drawn or uploaded"),
            ));
        }
    };
    if kind == "typed" && text.is_empty() {
        return Err(bad(
            "missing_field",
            format!("a typed `{member}` needs `{member}.{text_member}`"),
        ));
    }
    if kind != "typed" && image.is_none() {
        return Err(bad(
            "missing_field",
            format!("a {kind} `{member}` needs `{member}.image`"),
        ));
    }
    Ok(Some(MarkIn {
        kind: kind.to_string(),
        text,
        image,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::cx::Cx;
    use crate::domain::document::{Document, Recipient};
    use crate::domain::fields::{self, Field, FieldType};
    use crate::domain::signatures;
    use crate::memory::MemoryPlatform;
    use serde_json::json;

    fn field(id: &str, kind: &str, required: bool) -> Field {
        Field {
            id: id.into(),
            kind: FieldType::parse(kind).unwrap(),
            page_num: 1,
            left: 0.0,
            top: 0.0,
            width: 10.0,
            height: 10.0,
            recipient_id: "r1".into(),
            required,
            label: String::new(),
            value: String::new(),
        }
    }

    fn signer() -> Recipient {
        // Read as a record is, so that no status is named here (`tests/statuses.rs`).
        serde_json::from_value(json!({
            "id": "r1", "first_name": "Ada", "last_name": "Lovelace",
            "email": "ada@example.com", "mobile": "", "phone": "", "role": "Signer",
            "role_name": "", "status": "Sent", "company_name": "", "company_number": "",
            "title": "", "note": "", "order_num": 1, "contact_id": "", "ip_address": "",
        }))
        .unwrap()
    }

    /// What signer `r1` of document `d1` (a required text field `f1`, a signature and an
    /// initials field) gives with `body`.
    fn sign(body: &Value) -> ApiResult<signatures::Given> {
        let mut p = MemoryPlatform::new();
        let mut cx = Cx::new(&mut p);
        let doc = Document {
            id: "d1".into(),
            ..Document::default()
        };
        let all = vec![
            field("f1", "text", true),
            field("f2", "signature", false),
            field("f3", "initials", false),
        ];
        fields::save(&mut cx, "d1", &all);
        let f = Fields {
            map: body.as_object().unwrap().clone(),
            ..Fields::default()
        };
        signatures::given(&mut cx, &doc, &signer(), read(&f), &[])
    }

    /// A request with several faults answers the first of them, in `SignInput`'s order.
    #[test]
    fn the_first_fault_of_a_sign_body_is_answered() {
        let sig = json!({"name": "Ada"});
        let cases = [
            (
                json!({"fields": [1], "signature": 5, "initials": 5}),
                "invalid_field",
                "`fields`",
            ),
            (
                json!({"fields": {"a": "x", "f1": {}}, "signature": 5}),
                "unknown_field",
                "`fields.a`",
            ),
            (
                json!({"fields": {"f1": {}, "zz": "x"}, "signature": 5}),
                "invalid_field",
                "`fields.f1`",
            ),
            (
                json!({"fields": {"f1": ""}, "signature": 5, "initials": 5}),
                "required_fields_missing",
                "",
            ),
            (
                json!({"fields": {"f1": "v"}, "signature": 5, "initials": 5}),
                "invalid_field",
                "`signature`",
            ),
            (
                json!({"fields": {"f1": "v"}, "initials": 5}),
                "signature_required",
                "",
            ),
            (
                json!({"fields": {"f1": "v"}, "signature": sig, "initials": 5}),
                "invalid_field",
                "`initials`",
            ),
            (
                json!({"fields": {"f1": "v"}, "signature": sig}),
                "initials_required",
                "",
            ),
        ];
        for (body, code, names) in cases {
            let e = sign(&body)
                .err()
                .unwrap_or_else(|| panic!("{body} was taken"));
            assert_eq!(e.code, code, "{body}: {}", e.description);
            assert!(e.description.contains(names), "{body}: {}", e.description);
        }
        let given =
            sign(&json!({"fields": {"f1": "v"}, "signature": sig, "initials": {"text": "AL"}}))
                .unwrap();
        assert_eq!(given.signature.signature.text, "Ada");
        assert_eq!(given.fields[0].value, "v");
    }
}
