//! Fields: places on a document's pages that a recipient fills (text, check, date),
//! signs (signature, initials), or that the sender pre-fills. GetAccept v1 names
//! (`field_type`, `field_left`, `field_top`, `field_width`, `field_height` in PDF points
//! from the page's top-left, `page_id`/`page_num`, `recipient_id`, `is_required`,
//! `field_label`, `field_value`).
//!
//! | route | |
//! |---|---|
//! | `GET /v1/documents/{id}/fields` | `{"fields": [...], "editor_fields": []}` |
//! | `POST /v1/documents/{id}/fields` | one field → `{"field_id"}` (drafts only) |
//! | `PUT /v1/documents/{id}/fields` | `fields`: replace them all; `editor_fields` (`[{id, value}]`): set values (drafts only) → 204 |
//!
//! Fields live beside the document under `dfld/{document}` so the document record keeps
//! its shape; values filled by a recipient are written there when they sign. At render
//! every filled field becomes a [`Stamp`] drawn at its place.

use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult, member_text};
use crate::base::keyspace::DFLD;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, new_id};
use crate::base::work_orders::{self, Stamp, StampContent};
use crate::domain::document::{self, Document, Recipient};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Most fields one document may have.
pub const MAX_FIELDS: usize = 500;
/// Longest label and value.
const MAX_LABEL: usize = 200;
pub const MAX_VALUE: usize = 1000;

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum FieldType {
    Text,
    Check,
    Signature,
    Initials,
    Date,
    // Filled from the signer's own data when they sign (GetAccept's merge fields).
    // Variants are appended: records hold their index.
    Name,
    Email,
    Company,
    Title,
}

impl FieldType {
    pub fn parse(s: &str) -> Option<FieldType> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "text" => FieldType::Text,
            "check" | "checkbox" => FieldType::Check,
            "signature" => FieldType::Signature,
            "initials" => FieldType::Initials,
            "date" => FieldType::Date,
            "name" => FieldType::Name,
            "email" => FieldType::Email,
            "company" => FieldType::Company,
            "title" => FieldType::Title,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FieldType::Text => "text",
            FieldType::Check => "check",
            FieldType::Signature => "signature",
            FieldType::Initials => "initials",
            FieldType::Date => "date",
            FieldType::Name => "name",
            FieldType::Email => "email",
            FieldType::Company => "company",
            FieldType::Title => "title",
        }
    }

    /// Filled from the signer's data (name, email, company, title) when they sign.
    pub fn is_merge(self) -> bool {
        matches!(
            self,
            FieldType::Name | FieldType::Email | FieldType::Company | FieldType::Title
        )
    }

    /// What a merge field of this type holds for `r`; `None` for other types.
    pub fn merged(self, r: &Recipient) -> Option<String> {
        Some(match self {
            FieldType::Name => r.fullname(),
            FieldType::Email => r.email.clone(),
            FieldType::Company => r.company_name.clone(),
            FieldType::Title => r.title.clone(),
            _ => return None,
        })
    }

    /// Filled by typing or ticking (not by the signature itself).
    pub fn is_input(self) -> bool {
        matches!(self, FieldType::Text | FieldType::Check | FieldType::Date)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Field {
    pub id: String,
    pub kind: FieldType,
    /// 1-based among the document's content pages.
    pub page_num: u32,
    pub left: f32,
    pub top: f32,
    pub width: f32,
    pub height: f32,
    /// The recipient who fills it; empty for a field the sender fills.
    pub recipient_id: String,
    pub required: bool,
    pub label: String,
    pub value: String,
}

impl Field {
    /// Whether the field holds something to show (a ticked box, some text).
    pub fn is_filled(&self) -> bool {
        match self.kind {
            FieldType::Check => is_checked(&self.value),
            _ => !self.value.trim().is_empty(),
        }
    }
}

/// A check box's value: `1`/`true`/`yes`/`on`/`x` is ticked.
pub fn is_checked(v: &str) -> bool {
    matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on" | "x"
    )
}

fn fields_key(doc_id: &str) -> Vec<u8> {
    util::key(&[DFLD, doc_id])
}

/// The document's fields, in the order they were added.
pub fn load(cx: &mut Cx, doc_id: &str) -> Vec<Field> {
    cx.load(&fields_key(doc_id)).unwrap_or_default()
}

pub fn save(cx: &mut Cx, doc_id: &str, fields: &Vec<Field>) {
    if fields.is_empty() {
        cx.p.delete(&fields_key(doc_id));
    } else {
        cx.save(&fields_key(doc_id), fields);
    }
}

/// Forgets a deleted document's fields.
pub fn erase(cx: &mut Cx, doc_id: &str) {
    cx.p.delete(&fields_key(doc_id));
}

pub fn invalid(name: &str, what: &str) -> ApiError {
    http::ApiError::bad_request(
        "invalid_field",
        format!("the field `{name}` must be {what}"),
    )
}

fn name_of(path: &str, member: &str) -> String {
    if path.is_empty() {
        member.to_string()
    } else {
        format!("{path}.{member}")
    }
}

/// A number member: a JSON number or text holding one.
fn number(o: &Map<String, Value>, path: &str, member: &str) -> ApiResult<Option<f32>> {
    let name = name_of(path, member);
    match o.get(member) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_f64()
            .filter(|v| v.is_finite())
            .map(|v| Some(v as f32))
            .ok_or_else(|| invalid(&name, "a number")),
        Some(Value::String(s)) => match s.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Some(v as f32)),
            _ => Err(invalid(&name, "a number")),
        },
        Some(_) => Err(invalid(&name, "a number")),
    }
}

fn required_number(o: &Map<String, Value>, path: &str, member: &str) -> ApiResult<f32> {
    number(o, path, member)?.ok_or_else(|| {
        http::ApiError::bad_request(
            "missing_field",
            format!("the field `{}` is required", name_of(path, member)),
        )
    })
}

fn boolean(o: &Map<String, Value>, path: &str, member: &str) -> ApiResult<Option<bool>> {
    match o.get(member) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::Number(n)) if n.as_f64() == Some(0.0) => Ok(Some(false)),
        Some(Value::Number(n)) if n.as_f64() == Some(1.0) => Ok(Some(true)),
        Some(Value::String(s)) => match s.trim() {
            "1" | "true" => Ok(Some(true)),
            "0" | "false" => Ok(Some(false)),
            _ => Err(invalid(&name_of(path, member), "a boolean")),
        },
        Some(_) => Err(invalid(&name_of(path, member), "a boolean")),
    }
}

fn text(o: &Map<String, Value>, path: &str, member: &str, max: usize) -> ApiResult<String> {
    let name = name_of(path, member);
    let s = match o.get(member) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => (if *b { "1" } else { "" }).into(),
        Some(_) => return Err(invalid(&name, "a string")),
    };
    if s.chars().count() > max {
        return Err(invalid(&name, &format!("at most {max} characters")));
    }
    Ok(s)
}

/// A value as stored for a field of `kind`: check boxes become `1` or empty.
pub fn checked_value(kind: FieldType, value: String, name: &str) -> ApiResult<String> {
    if value.chars().count() > MAX_VALUE {
        return Err(invalid(name, &format!("at most {MAX_VALUE} characters")));
    }
    Ok(match kind {
        FieldType::Check => (if is_checked(&value) { "1" } else { "" }).into(),
        _ => value,
    })
}

/// The 1-based content page a field names by `page_num` or `page_id`, and its size.
fn page_of(doc: &Document, o: &Map<String, Value>, path: &str) -> ApiResult<(u32, f32, f32)> {
    let pages: Vec<(String, f32, f32)> = doc
        .files
        .iter()
        .flat_map(|f| {
            f.pages
                .iter()
                .enumerate()
                .map(move |(i, (w, h))| (format!("{}-{}", f.id, i + 1), *w, *h))
        })
        .collect();
    let page_id = member_text(o, "page_id");
    let n = if !page_id.is_empty() {
        pages
            .iter()
            .position(|(id, _, _)| *id == page_id)
            .map(|i| i + 1)
            .ok_or_else(|| {
                http::ApiError::bad_request(
                    "invalid_page",
                    format!(
                        "`{}`: the document has no page {page_id:?}",
                        name_of(path, "page_id")
                    ),
                )
            })?
    } else {
        let n = number(o, path, "page_num")?.ok_or_else(|| {
            http::ApiError::bad_request(
                "missing_field",
                format!(
                    "the field `{}` (or `{}`) is required",
                    name_of(path, "page_id"),
                    name_of(path, "page_num")
                ),
            )
        })?;
        if n < 1.0 || n as usize as f32 != n || n as usize > pages.len() {
            return Err(http::ApiError::bad_request(
                "invalid_page",
                format!(
                    "`{}` must be a page number from 1 to {}",
                    name_of(path, "page_num"),
                    pages.len()
                ),
            ));
        }
        n as usize
    };
    let (_, w, h) = &pages[n - 1];
    Ok((n as u32, *w, *h))
}

/// Reads and checks one field object of a document; `path` names it in errors
/// (`fields[2]`).
pub fn parse_field(
    cx: &mut Cx,
    doc: &Document,
    o: &Map<String, Value>,
    path: &str,
) -> ApiResult<Field> {
    let (page_num, pw, ph) = page_of(doc, o, path)?;
    let mut field = parse_shape(cx, o, path, page_num)?;
    check_fit(&field, pw, ph, path)?;
    let recipient_id = member_text(o, "recipient_id");
    if recipient_id.is_empty() {
        needs_signer(&field, path, "recipient_id")?;
    } else {
        let r = doc.recipient(&recipient_id).ok_or_else(|| {
            http::ApiError::bad_request(
                "invalid_recipient",
                format!(
                    "`{}`: the document has no recipient {recipient_id:?}",
                    name_of(path, "recipient_id")
                ),
            )
        })?;
        if r.role != document::Role::Signer {
            return Err(http::ApiError::bad_request(
                "invalid_recipient",
                format!(
                    "`{}`: only signers fill fields; {recipient_id} is {}",
                    name_of(path, "recipient_id"),
                    r.role.as_str()
                ),
            ));
        }
    }
    field.recipient_id = recipient_id;
    Ok(field)
}

/// 400 for a signature or initials field with no signer (`member` names who).
pub fn needs_signer(field: &Field, path: &str, member: &str) -> ApiResult<()> {
    if field.kind.is_input() {
        return Ok(());
    }
    Err(http::ApiError::bad_request(
        "missing_field",
        format!(
            "a {} field needs the `{}` of the signer who signs it",
            field.kind.as_str(),
            name_of(path, member)
        ),
    ))
}

/// 400 unless the field's box lies on its page (`pw` x `ph` points).
pub fn check_fit(f: &Field, pw: f32, ph: f32, path: &str) -> ApiResult<()> {
    // Half a point of slack for rounding in the caller's arithmetic.
    if f.left + f.width > pw + 0.5 || f.top + f.height > ph + 0.5 {
        return Err(http::ApiError::bad_request(
            "invalid_position",
            format!(
                "the field{} does not fit on page {} ({pw} x {ph} points)",
                if path.is_empty() {
                    String::new()
                } else {
                    format!(" `{path}`")
                },
                f.page_num
            ),
        ));
    }
    Ok(())
}

/// The parts of a field object that need no document: type, box, label, value, and
/// whether it is required; no recipient yet.
pub fn parse_shape(
    cx: &mut Cx,
    o: &Map<String, Value>,
    path: &str,
    page_num: u32,
) -> ApiResult<Field> {
    let kind_text = member_text(o, "field_type");
    if kind_text.is_empty() {
        return Err(http::ApiError::bad_request(
            "missing_field",
            format!("the field `{}` is required", name_of(path, "field_type")),
        ));
    }
    let kind = FieldType::parse(&kind_text).ok_or_else(|| {
        invalid(
            &name_of(path, "field_type"),
            "one of text, check, signature, initials, date",
        )
    })?;
    let left = required_number(o, path, "field_left")?;
    let top = required_number(o, path, "field_top")?;
    let width = required_number(o, path, "field_width")?;
    let height = required_number(o, path, "field_height")?;
    if left < 0.0 || top < 0.0 {
        return Err(http::ApiError::bad_request(
            "invalid_position",
            format!(
                "`{}` and `{}` must not be negative",
                name_of(path, "field_left"),
                name_of(path, "field_top")
            ),
        ));
    }
    if width <= 0.0 || height <= 0.0 {
        return Err(http::ApiError::bad_request(
            "invalid_position",
            format!(
                "`{}` and `{}` must be greater than 0",
                name_of(path, "field_width"),
                name_of(path, "field_height")
            ),
        ));
    }
    let required = boolean(o, path, "is_required")?.unwrap_or(!kind.is_input());
    let label = text(o, path, "field_label", MAX_LABEL)?;
    let value = text(o, path, "field_value", MAX_VALUE)?;
    crate::domain::drawable::drawable(&name_of(path, "field_value"), &value)?;
    let value = checked_value(kind, value, &name_of(path, "field_value"))?;
    if !kind.is_input() && !value.is_empty() {
        return Err(invalid(
            &name_of(path, "field_value"),
            "empty for signature, initials, name, email, company and title fields (the signer's signing fills them)",
        ));
    }
    Ok(Field {
        id: new_id(cx),
        kind,
        page_num,
        left,
        top,
        width,
        height,
        recipient_id: String::new(),
        required,
        label,
        value,
    })
}

/// A template's `page_num`: a whole number from 1 (its pages are known only once the
/// template's file is imported).
pub fn page_num_of(o: &Map<String, Value>, path: &str) -> ApiResult<u32> {
    let n = number(o, path, "page_num")?.ok_or_else(|| {
        http::ApiError::bad_request(
            "missing_field",
            format!("the field `{}` is required", name_of(path, "page_num")),
        )
    })?;
    if n < 1.0 || n as u32 as f32 != n {
        return Err(http::ApiError::bad_request(
            "invalid_page",
            format!(
                "`{}` must be a page number from 1",
                name_of(path, "page_num")
            ),
        ));
    }
    Ok(n as u32)
}

/// What is drawn where at render: every filled input field, and each signature or
/// initials field of a recipient who has signed (`signed` gives the image blob or the
/// text of a recipient's signature and initials).
pub fn stamps(
    fields: &[Field],
    signed: impl Fn(&str, FieldType) -> Option<StampContent>,
) -> Vec<Stamp> {
    fields
        .iter()
        .filter_map(|f| {
            let content = match f.kind {
                FieldType::Check if f.is_filled() => work_orders::StampContent::Check,
                FieldType::Text | FieldType::Date if f.is_filled() => {
                    work_orders::StampContent::Text(f.value.clone())
                }
                k if k.is_merge() && f.is_filled() => {
                    work_orders::StampContent::Text(f.value.clone())
                }
                FieldType::Signature | FieldType::Initials => signed(&f.recipient_id, f.kind)?,
                _ => return None,
            };
            Some(Stamp {
                page: f.page_num - 1,
                left: f.left,
                top: f.top,
                width: f.width,
                height: f.height,
                content,
            })
        })
        .collect()
}
