//! Templates: a PDF or Word file with roles, custom fields and attachments, from which
//! documents are created (`template_id`). `POST /v1/templates` imports the file in the
//! background (`status` `importing`, then `ready` or `failed`); `GET /v1/templates`,
//! `GET /v1/templates/{id}`, `DELETE /v1/templates/{id}` (moves it to the trash).
//!
//! A Word template's `{{name}}` placeholders become its text fields (unless declared
//! with another type); creating a document with `custom_fields` fills them in.
//!
//! `page_fields` are fields placed on the template's pages (the fields API's names,
//! `page_num`, and `role_name` instead of `recipient_id`); each document created from
//! the template gets them, for the recipient in that role. They are kept beside the
//! template (`tfld/{id}`) and checked against its pages when its file is imported.

use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult};
use crate::base::keyspace::{TFLD, TPL, TPL_ENT};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records;
use crate::base::util::{self, is_id, new_id};
use crate::domain::auth::Principal;
use crate::domain::document::{self, CustomField, DocFile, Role, hex};
use crate::domain::{access, fields, pricing};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum FieldKind {
    Text,
    Number,
    Dropdown,
}

impl FieldKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FieldKind::Text => "text",
            FieldKind::Number => "number",
            FieldKind::Dropdown => "dropdown",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TemplateField {
    pub name: String,
    pub kind: FieldKind,
    pub options: Vec<String>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub required: bool,
    pub default: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TemplateRole {
    pub role_name: String,
    pub role: Role,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TemplateAttachment {
    pub name: String,
    pub blob: String,
    pub size: u64,
    /// Only the recipient in this role may see it.
    pub role_name: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum TemplateStatus {
    Importing,
    Ready,
    Failed,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Template {
    pub id: String,
    pub entity_id: String,
    pub user_id: String,
    pub name: String,
    pub status: TemplateStatus,
    pub failure: Option<String>,
    /// The uploaded file (PDF or Word).
    pub source_blob: String,
    pub source_name: String,
    pub is_word: bool,
    /// The file as a PDF, with its pages (a Word file converted with the field defaults).
    pub file: Option<DocFile>,
    pub fields: Vec<TemplateField>,
    pub roles: Vec<TemplateRole>,
    pub attachments: Vec<TemplateAttachment>,
    pub trashed: bool,
    pub created_ms: u64,
    /// What was added after this record's layout was fixed: stored after it.
    #[serde(skip)]
    pub ext: TemplateExt,
}

/// The members of a template added after its record's layout was fixed, stored after
/// the record (`records::encode_ext`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct TemplateExt {
    /// The folder the template is filed in (`fold/`), or empty.
    pub folder_id: String,
    /// Pricing tables every document made from the template starts with.
    pub pricing_tables: Vec<pricing::PricingTable>,
    /// Names of the images a document made from it fills in (`custom_images`).
    pub custom_images: Vec<String>,
}

/// The stable id of a template's role (`GET /v1/templates/{id}/roles`), which a
/// document's `recipients[].role_id` names: derived from the template and the role's
/// name, so it needs no record of its own.
pub fn role_id(template_id: &str, role_name: &str) -> String {
    util::sha256_hex(format!("role\n{template_id}\n{role_name}").as_bytes())[..16].to_string()
}

/// The stable id of a template's custom field (`GET /v1/templates/{id}/fields`), which
/// a document's `custom_fields[].id` names.
pub fn field_id(template_id: &str, field_name: &str) -> String {
    util::sha256_hex(format!("field\n{template_id}\n{field_name}").as_bytes())[..16].to_string()
}

/// The role of `t` whose [`role_id`] is `id`.
pub fn role_by_id<'a>(t: &'a Template, id: &str) -> Option<&'a TemplateRole> {
    t.roles.iter().find(|r| role_id(&t.id, &r.role_name) == id)
}

/// The name of the custom field of `t` whose [`field_id`] is `id`.
pub fn field_by_id<'a>(t: &'a Template, id: &str) -> Option<&'a TemplateField> {
    t.fields.iter().find(|f| field_id(&t.id, &f.name) == id)
}

/// The most templates a list reads.
pub const MAX_LISTED: u32 = 1000;

/// The entity's templates not in the trash, newest first (at most [`MAX_LISTED`]).
pub fn all(cx: &mut Cx, entity: &str) -> Vec<Template> {
    let (start, end) = records::prefix_range(&format!("{TPL_ENT}/{entity}/"));
    let mut out = Vec::new();
    for (k, _) in cx.p.scan(&start, &end, MAX_LISTED, true) {
        let id = String::from_utf8_lossy(&k[k.len() - 16..]).into_owned();
        if let Some(t) = load(cx, &id)
            && !t.trashed
        {
            out.push(t);
        }
    }
    out
}

/// A stored template (trashed or not), with its extension.
pub fn load(cx: &mut Cx, id: &str) -> Option<Template> {
    let bytes = cx.p.get(&template_key(id))?;
    let (mut t, ext): (Template, TemplateExt) = records::decode_ext(&bytes);
    t.ext = ext;
    Some(t)
}

/// Writes a template with its extension.
pub fn save(cx: &mut Cx, t: &Template) {
    cx.p.put(&template_key(&t.id), &records::encode_ext(t, &t.ext));
}

pub fn template_key(id: &str) -> Vec<u8> {
    util::key(&[TPL, id])
}

pub fn entity_index_key(entity: &str, created_ms: u64, id: &str) -> Vec<u8> {
    format!("{TPL_ENT}/{entity}/{}{id}", hex(created_ms)).into_bytes()
}

pub fn blob_owner(id: &str) -> String {
    format!("template:{id}")
}

pub fn not_found(id: &str) -> ApiError {
    http::ApiError::not_found("template_not_found", format!("no template {id}"))
}

/// The caller's entity's template `id`; 404 when unknown or trashed.
pub fn find(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Template> {
    if !is_id(id) {
        return Err(not_found(id));
    }
    load(cx, id)
        .filter(|t| t.entity_id == pr.entity.id && !t.trashed)
        .ok_or_else(|| not_found(id))
}

/// The caller's entity's template `id` if the caller may change it (as a document:
/// its owner, an admin, or a manager of the owner's team, `access::owner_rule`); 404
/// when unknown or trashed, 403 `access_denied` for other members, who read it.
pub fn writable(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Template> {
    let t = find(cx, pr, id)?;
    if !access::owner_rule(cx, pr, &t.entity_id, &t.user_id) {
        return Err(access::change_denied("template"));
    }
    Ok(t)
}

/// A template's fields on its pages: (role name or empty for the sender's, field).
pub type PageFields = Vec<(String, fields::Field)>;

pub fn page_fields_key(id: &str) -> Vec<u8> {
    util::key(&[TFLD, id])
}

pub fn page_fields(cx: &mut Cx, id: &str) -> PageFields {
    cx.load(&page_fields_key(id)).unwrap_or_default()
}

/// The template's page fields for a document whose recipients are `recipients`: each
/// with the id of the recipient in its role (fields of a role nobody has are left out),
/// and a new id.
pub fn fields_for(
    cx: &mut Cx,
    t: &Template,
    recipients: &[document::Recipient],
) -> Vec<fields::Field> {
    let mut out = Vec::new();
    for (role, mut field) in page_fields(cx, &t.id) {
        if !role.is_empty() {
            match recipients.iter().find(|r| r.role_name == role) {
                Some(r) => field.recipient_id = r.id.clone(),
                None => continue,
            }
        }
        field.id = new_id(cx);
        out.push(field);
    }
    out
}

/// Field defaults, for a Word template's base rendering.
pub fn defaults(fields: &[TemplateField]) -> Vec<(String, String)> {
    fields
        .iter()
        .filter(|f| !f.default.is_empty())
        .map(|f| (f.name.clone(), f.default.clone()))
        .collect()
}

/// Checks `given` custom field values against the template's fields and returns the
/// document's custom fields (given values, then defaults). A value outside a dropdown's
/// options, a number out of range or a missing required field is a 422: the template
/// cannot be applied.
pub fn apply_fields(t: &Template, given: &[CustomField]) -> ApiResult<Vec<CustomField>> {
    let unapplicable = |why: String| http::ApiError::new(422, "template_not_applicable", why);
    let mut out = Vec::new();
    for field in &t.fields {
        let value = given
            .iter()
            .find(|g| g.name == field.name)
            .map(|g| g.value.clone())
            .unwrap_or_else(|| field.default.clone());
        if value.is_empty() {
            if field.required {
                return Err(unapplicable(format!(
                    "the template field {:?} is required",
                    field.name
                )));
            }
            continue;
        }
        match field.kind {
            FieldKind::Dropdown if !field.options.contains(&value) => {
                return Err(unapplicable(format!(
                    "{value:?} is not an option of the template field {:?} ({})",
                    field.name,
                    field.options.join(", ")
                )));
            }
            FieldKind::Number => {
                let n: f64 = value.trim().parse().map_err(|_| {
                    unapplicable(format!(
                        "the template field {:?} needs a number, not {value:?}",
                        field.name
                    ))
                })?;
                if field.min.is_some_and(|m| n < m) || field.max.is_some_and(|m| n > m) {
                    return Err(unapplicable(format!(
                        "{n} is out of range for the template field {:?} ({} to {})",
                        field.name,
                        field.min.map_or("any".into(), |m| format!("{m}")),
                        field.max.map_or("any".into(), |m| format!("{m}")),
                    )));
                }
            }
            _ => {}
        }
        out.push(CustomField {
            name: field.name.clone(),
            value,
        });
    }
    for g in given {
        if !out.iter().any(|o| o.name == g.name) {
            out.push(g.clone());
        }
    }
    Ok(out)
}
