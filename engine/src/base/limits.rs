//! How long each text member of a request body may be: one table, by member name,
//! enforced on every body the engine decodes ([`too_long`], from
//! `Request::body_fields`) and stated as `maxLength` in `openapi.json`
//! (`engine/tests/openapi.rs` keeps the two equal). A member the table does not name
//! gets [`DEFAULT_MAX_CHARS`]. Lengths count characters (Unicode scalar values), as
//! JSON Schema's `maxLength` does.
//!
//! Bounded text keeps what one caller stores, and therefore every answer that lists it
//! (a page of the document list, a mail to the owner), bounded too.

use crate::base::prelude::*;
use serde_json::{Map, Value};

/// The limit of a text member the table does not name.
pub const DEFAULT_MAX_CHARS: usize = 10_000;

/// The longest text member `name` may hold; `None` for members bounded only by the
/// request body's size (a file's content in base64).
pub fn max_chars(name: &str) -> Option<usize> {
    Some(match name {
        // Files and drawn pictures: bounded by the body's size and their own checks.
        "file_content" | "file" | "image" | "logo" => return None,
        "email" | "sender_email" | "notification_email" => 254,
        "first_name" | "last_name" | "fullname" | "title" | "role_name" => 100,
        "name" | "company_name" | "company_number" | "external_id" | "external_client_id"
        | "entity_name" | "file_name" | "field_label" | "sku" => 255,
        "label" | "client_name" => 200,
        "mobile" | "phone" => 32,
        "file_url" | "target_url" | "sign_redirect" | "redirect_uri" | "redirect_uris"
        | "client_uri" | "logo_uri" => 2000,
        "tags" | "file_ids" => 1000,
        "text" | "message" | "reason" | "note" | "description" | "comment" => 4000,
        "answer" | "verify_qna_question" | "verify_qna_answer" => 500,
        "password" => 1024,
        "payload" | "value" | "field_value" | "default_value" => 10_000,
        "currency"
        | "unit"
        | "code"
        | "type"
        | "role"
        | "method"
        | "event"
        | "stage"
        | "value_type"
        | "field_type"
        | "verify_eid_type"
        | "jsonrpc"
        | "key"
        | "token_endpoint_auth_method"
        | "restricted_to"
        | "language"
        | "brand_color" => 64,
        "send_at"
        | "signed_at"
        | "sign_date"
        | "expiration_date"
        | "contract_start_date"
        | "contract_end_date" => 64,
        n if n == "id" || n.ends_with("_id") => 64,
        _ => DEFAULT_MAX_CHARS,
    })
}

/// A text member of `map` longer than its limit, if any: its path
/// (`recipients[1].email`) and the limit. `Request::body_fields` answers it with 400
/// `invalid_field`.
pub fn too_long(map: &Map<String, Value>) -> Option<(String, usize)> {
    map.iter().find_map(|(k, v)| check_value(k, k, v).err())
}

fn check_value(member: &str, path: &str, v: &Value) -> Result<(), (String, usize)> {
    match v {
        Value::String(s) => match max_chars(member) {
            Some(max) if s.len() > max && s.chars().count() > max => Err((path.to_string(), max)),
            _ => Ok(()),
        },
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                check_value(member, &format!("{path}[{i}]"), item)?;
            }
            Ok(())
        }
        Value::Object(o) => {
            for (k, v) in o {
                check_value(k, &format!("{path}.{k}"), v)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_members_are_checked_by_their_own_name() {
        let ok = json!({"name": "a".repeat(255), "recipients": [{"email": "x@example.com"}]});
        assert_eq!(too_long(ok.as_object().unwrap()), None);
        let long = json!({"recipients": [{"email": "x@example.com"}, {"email": format!("{}@example.com", "a".repeat(300))}]});
        assert_eq!(
            too_long(long.as_object().unwrap()),
            Some(("recipients[1].email".to_string(), 254))
        );
        // Characters, not bytes: 255 two-byte letters are a name of 255.
        let wide = json!({"name": "é".repeat(255)});
        assert_eq!(too_long(wide.as_object().unwrap()), None);
        let file = json!({"file_content": "A".repeat(100_000)});
        assert_eq!(too_long(file.as_object().unwrap()), None);
        let other = json!({"anything_else": "b".repeat(DEFAULT_MAX_CHARS + 1)});
        assert!(too_long(other.as_object().unwrap()).is_some());
    }
}
