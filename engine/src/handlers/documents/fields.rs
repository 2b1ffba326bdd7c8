//! `/v1/documents/{id}/fields`: read, add and replace a document's fields, and set
//! their values.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, Fields, json, member_text, no_content};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::access::{readable, writable};
use crate::domain::auth::Principal;
use crate::domain::document::Document;
use crate::domain::document_states::{self as states, Move};
use crate::domain::fields::{Field, MAX_FIELDS, checked_value, invalid, load, parse_field, save};
use serde_json::{Value, json};

/// `editor_fields: [{id, value}]`: sets the values of existing fields.
fn set_values(f: &Fields, fields: &mut [Field]) -> ApiResult<()> {
    for (path, o) in f.objects("editor_fields")? {
        let id = member_text(o, "id");
        let field = fields.iter_mut().find(|x| x.id == id).ok_or_else(|| {
            http::ApiError::bad_request("unknown_field", format!("`{path}.id`: no field {id:?}"))
        })?;
        let value = match o.get("value") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(b)) => (if *b { "1" } else { "" }).into(),
            Some(Value::Number(n)) => n.to_string(),
            None | Some(Value::Null) => String::new(),
            Some(_) => return Err(invalid(&format!("{path}.value"), "a string")),
        };
        field.value = checked_value(field.kind, value, &format!("{path}.value"))?;
    }
    Ok(())
}

/// The draft whose fields may change.
fn editable(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Document> {
    let doc = writable(cx, pr, id)?;
    // A draft whose seal or send is rendering already has its fields drawn.
    if !states::possible(&doc, Move::EditFields) {
        return Err(http::ApiError::bad_request(
            "invalid_status",
            format!(
                "fields can only be changed while the document is a draft; it is {}",
                if doc.pending.is_some() {
                    "being sealed or sent"
                } else {
                    doc.status.as_str()
                }
            ),
        ));
    }
    if doc.page_count() == 0 {
        return Err(http::ApiError::bad_request(
            "no_pages",
            "the document has no pages to place fields on (yet)",
        ));
    }
    Ok(doc)
}

/// `GET /v1/documents/{id}/fields`.
pub fn list(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let doc = readable(cx, pr, id)?;
    let fields = load(cx, id);
    let list: Vec<Value> = fields.iter().map(|f| field_json(&doc, f)).collect();
    Ok(json(
        200,
        &json!({"fields": list, "editor_fields": Vec::<Value>::new()}),
    ))
}

/// `POST /v1/documents/{id}/fields`: one more field.
pub fn add(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let doc = editable(cx, pr, id)?;
    let f = req.body_fields()?;
    let mut fields = load(cx, id);
    if fields.len() >= MAX_FIELDS {
        return Err(http::ApiError::bad_request(
            "too_many_fields",
            format!("a document can have at most {MAX_FIELDS} fields"),
        ));
    }
    let field = parse_field(cx, &doc, &f.map, "")?;
    let field_id = field.id.clone();
    fields.push(field);
    save(cx, id, &fields);
    Ok(json(200, &json!({"field_id": field_id})))
}

/// `PUT /v1/documents/{id}/fields`: the fields replaced, and values set.
pub fn replace(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let doc = editable(cx, pr, id)?;
    let f = req.body_fields()?;
    f.only(&["fields", "editor_fields"])?;
    let mut fields = load(cx, id);
    if f.has("fields") {
        let given = f.objects("fields")?;
        if given.len() > MAX_FIELDS {
            return Err(http::ApiError::bad_request(
                "too_many_fields",
                format!("a document can have at most {MAX_FIELDS} fields"),
            ));
        }
        let mut new = Vec::with_capacity(given.len());
        for (path, o) in given {
            // An existing field keeps its id when the caller names it.
            let keep = member_text(o, "field_id");
            let keep = fields.iter().any(|x| x.id == keep).then_some(keep);
            let mut field = parse_field(cx, &doc, o, &path)?;
            if let Some(id) = keep {
                field.id = id;
            }
            new.push(field);
        }
        fields = new;
    }
    set_values(&f, &mut fields)?;
    save(cx, id, &fields);
    Ok(no_content())
}

/// A field as the API shows it (GetAccept's `Field`, plus the position).
pub fn field_json(doc: &Document, f: &Field) -> Value {
    let r = doc.recipient(&f.recipient_id);
    let page_id = doc
        .files
        .iter()
        .flat_map(|file| (1..=file.pages.len()).map(move |i| format!("{}-{i}", file.id)))
        .nth(f.page_num as usize - 1)
        .unwrap_or_default();
    json!({
        "field_id": f.id,
        "field_type": f.kind.as_str(),
        "field_label": f.label,
        "field_value": f.value,
        "field_options": Vec::<Value>::new(),
        "is_required": f.required,
        "is_collectable": !f.recipient_id.is_empty(),
        "is_editable": f.recipient_id.is_empty(),
        "page_id": page_id,
        "page_num": f.page_num,
        "recipient_id": f.recipient_id,
        "recipient_name": r.map(|r| r.fullname()).unwrap_or_default(),
        "role_name": r.map(|r| r.role_name.clone()).unwrap_or_default(),
        "company_name": r.map(|r| r.company_name.clone()).unwrap_or_default(),
        "company_number": r.map(|r| r.company_number.clone()).unwrap_or_default(),
        "field_left": f.left,
        "field_top": f.top,
        "field_width": f.width,
        "field_height": f.height,
    })
}
