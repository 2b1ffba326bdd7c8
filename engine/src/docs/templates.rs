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

use super::blobs;
use super::model::{CustomField, DocFile, Role, hex};
use super::uploads::{self, FileKind, UploadStatus};
use crate::auth::{Principal, authenticate};
use crate::http::{ApiError, ApiResult, Fields, json, member_text, no_content};
use crate::model::prefix_range;
#[allow(unused_imports)]
use crate::prelude::*;
use crate::router::method_not_allowed;
use crate::util::{is_id, new_id};
use crate::{
    Cx, ImportSource, Job, JobOutcome, JobSpec, Request, Response, WorkOrder, WorkOutcome,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Job: record the import of a template's file.
pub const IMPORT_JOB: &str = "template.import";

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum FieldKind {
    Text,
    Number,
    Dropdown,
}

impl FieldKind {
    fn as_str(self) -> &'static str {
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
}

pub fn template_key(id: &str) -> Vec<u8> {
    crate::util::key(&["tpl", id])
}

fn entity_index_key(entity: &str, created_ms: u64, id: &str) -> Vec<u8> {
    format!("tpl-ent/{entity}/{}{id}", hex(created_ms)).into_bytes()
}

fn owner(id: &str) -> String {
    format!("template:{id}")
}

/// `/v1/templates/...`
pub fn route(cx: &mut Cx, req: &Request, rest: &[&str]) -> ApiResult<Response> {
    let m = req.method.as_str();
    let pr = authenticate(cx, req)?;
    match (m, rest) {
        ("GET", []) => list(cx, &pr),
        ("POST", []) => create(cx, &pr, req),
        (_, []) => Err(method_not_allowed(m, &["GET", "POST"])),
        ("GET", [id]) => {
            let t = find(cx, &pr, id)?;
            let mut out = template_json(&t);
            out["page_fields"] = page_fields_json(&page_fields(cx, &t.id));
            Ok(json(200, &out))
        }
        ("DELETE", [id]) => {
            let mut t = find(cx, &pr, id)?;
            t.trashed = true;
            cx.save(&template_key(id), &t);
            Ok(no_content())
        }
        (_, [_]) => Err(method_not_allowed(m, &["GET", "DELETE"])),
        _ => Err(ApiError::not_found("not_found", "no such endpoint")),
    }
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found("template_not_found", format!("no template {id}"))
}

/// The caller's entity's template `id`; 404 when unknown or trashed.
pub fn find(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Template> {
    if !is_id(id) {
        return Err(not_found(id));
    }
    cx.load::<Template>(&template_key(id))
        .filter(|t| t.entity_id == pr.entity.id && !t.trashed)
        .ok_or_else(|| not_found(id))
}

fn template_json(t: &Template) -> Value {
    json!({
        "id": t.id,
        "name": t.name,
        "status": match t.status {
            TemplateStatus::Importing => "importing",
            TemplateStatus::Ready => "ready",
            TemplateStatus::Failed => "failed",
        },
        "failure": t.failure,
        "file_name": t.source_name,
        "is_word": t.is_word,
        "page_count": t.file.as_ref().map_or(0, |f| f.pages.len()),
        "fields": t.fields.iter().map(|f| json!({
            "name": f.name, "type": f.kind.as_str(), "options": f.options,
            "min": f.min, "max": f.max, "required": f.required, "default_value": f.default,
        })).collect::<Vec<_>>(),
        "roles": t.roles.iter().map(|r| json!({"role_name": r.role_name, "role": r.role.as_str()}))
            .collect::<Vec<_>>(),
        "attachments": t.attachments.iter().map(|a| json!({
            "name": a.name, "size": a.size, "role_name": a.role_name,
        })).collect::<Vec<_>>(),
        "user_id": t.user_id,
        "created_at": crate::util::iso8601(t.created_ms),
    })
}

fn list(cx: &mut Cx, pr: &Principal) -> ApiResult<Response> {
    let (start, end) = prefix_range(&format!("tpl-ent/{}/", pr.entity.id));
    let mut out = Vec::new();
    for (k, _) in cx.p.scan(&start, &end, 1000, true) {
        let id = String::from_utf8_lossy(&k[k.len() - 16..]).into_owned();
        if let Some(t) = cx.load::<Template>(&template_key(&id))
            && !t.trashed
        {
            out.push(template_json(&t));
        }
    }
    Ok(json(200, &json!({ "templates": out })))
}

fn opt_num(o: &serde_json::Map<String, Value>, k: &str, path: &str) -> ApiResult<Option<f64>> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        _ => Err(ApiError::bad_request(
            "invalid_field",
            format!("`{path}.{k}` must be a number"),
        )),
    }
}

fn parse_fields(f: &Fields) -> ApiResult<Vec<TemplateField>> {
    let mut out: Vec<TemplateField> = Vec::new();
    for (path, o) in f.objects("fields")? {
        let name = member_text(o, "name");
        if name.trim().is_empty() {
            return Err(ApiError::bad_request(
                "missing_field",
                format!("`{path}.name` is required"),
            ));
        }
        let kind = match member_text(o, "type").as_str() {
            "" | "text" => FieldKind::Text,
            "number" => FieldKind::Number,
            "dropdown" => FieldKind::Dropdown,
            other => {
                return Err(ApiError::bad_request(
                    "invalid_field",
                    format!("`{path}.type` {other:?} must be text, number or dropdown"),
                ));
            }
        };
        let options: Vec<String> = match o.get("options") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| x.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "invalid_field",
                        format!("`{path}.options` must be strings"),
                    )
                })?,
            _ => {
                return Err(ApiError::bad_request(
                    "invalid_field",
                    format!("`{path}.options` must be an array"),
                ));
            }
        };
        if kind == FieldKind::Dropdown && options.is_empty() {
            return Err(ApiError::bad_request(
                "invalid_field",
                format!("`{path}` is a dropdown and needs `options`"),
            ));
        }
        out.push(TemplateField {
            name,
            kind,
            options,
            min: opt_num(o, "min", &path)?,
            max: opt_num(o, "max", &path)?,
            required: matches!(o.get("required"), Some(Value::Bool(true))),
            default: member_text(o, "default_value"),
        });
    }
    Ok(out)
}

fn parse_roles(f: &Fields) -> ApiResult<Vec<TemplateRole>> {
    let mut out = Vec::new();
    for (path, o) in f.objects("roles")? {
        let role_name = member_text(o, "role_name");
        if role_name.trim().is_empty() {
            return Err(ApiError::bad_request(
                "missing_field",
                format!("`{path}.role_name` is required"),
            ));
        }
        let role_text = member_text(o, "role");
        let role = if role_text.is_empty() {
            Role::Signer
        } else {
            Role::parse(&role_text).ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_field",
                    format!("`{path}.role` must be signer, approver or cc"),
                )
            })?
        };
        out.push(TemplateRole { role_name, role });
    }
    Ok(out)
}

fn create(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    let f = req.body_fields()?;
    let name = f.required_str("name")?;
    let mut fields = parse_fields(&f)?;
    let roles = parse_roles(&f)?;
    let page_fields = parse_page_fields(cx, &f, &roles)?;
    // Everything is checked before anything is written.
    enum Source {
        Upload(uploads::Upload),
        Inline(uploads::GivenFile),
    }
    let (source, source_name, kind) = if let Some(file_id) = f.optional_str("file_id")? {
        let up = uploads::find(cx, pr, &file_id)
            .filter(|u| u.status == UploadStatus::Ready)
            .ok_or_else(|| {
                ApiError::not_found("file_not_found", format!("no usable upload {file_id}"))
            })?;
        let (name, kind) = (up.name.clone(), up.kind);
        (Source::Upload(up), name, kind)
    } else if let Some(file) = uploads::given_file(&f)? {
        let kind = FileKind::detect(&file.bytes, &file.name);
        let name = file.name.clone();
        (Source::Inline(file), name, kind)
    } else {
        return Err(ApiError::bad_request(
            "missing_field",
            "a template needs a file: `file_id`, a multipart `file`, or `file_content` with `file_name`",
        ));
    };
    if !matches!(kind, FileKind::Pdf | FileKind::Word) {
        return Err(ApiError::bad_request(
            "unsupported_file",
            "a template must be a PDF or a Word (.docx) file",
        ));
    }
    let mut attached = Vec::new();
    for (path, o) in f.objects("attachments")? {
        let file_id = member_text(o, "file_id");
        let up = uploads::find(cx, pr, &file_id)
            .filter(|u| u.status == UploadStatus::Ready)
            .ok_or_else(|| {
                ApiError::not_found("file_not_found", format!("no usable upload {file_id:?}"))
            })?;
        let role_name = Some(member_text(o, "role_name")).filter(|r| !r.is_empty());
        if let Some(r) = &role_name
            && !roles.iter().any(|x| &x.role_name == r)
        {
            return Err(ApiError::bad_request(
                "invalid_field",
                format!("`{path}.role_name` {r:?} is not one of the template's roles"),
            ));
        }
        let name = Some(member_text(o, "name"))
            .filter(|n| !n.is_empty())
            .unwrap_or(up.name.clone());
        attached.push((up, name, role_name));
    }
    let is_word = kind == FileKind::Word;
    if is_word && !cx.settings().can_convert_word {
        return Err(ApiError::new(
            422,
            "conversion_unavailable",
            "Word templates cannot be imported here: LibreOffice is not installed on the server",
        ));
    }
    // Now write: the file, the uploads' use, the references.
    let id = new_id(cx);
    let blob = match source {
        Source::Upload(mut up) => {
            uploads::touch(cx, &mut up);
            up.blob.clone().unwrap_or_default()
        }
        Source::Inline(file) => uploads::put_blob(cx, &file.bytes)?.id,
    };
    blobs::hold(cx, &blob, &owner(&id));
    let mut attachments = Vec::new();
    for (mut up, name, role_name) in attached {
        uploads::touch(cx, &mut up);
        let att_blob = up.blob.clone().unwrap_or_default();
        blobs::hold(cx, &att_blob, &owner(&id));
        attachments.push(TemplateAttachment {
            name,
            blob: att_blob,
            size: up.size,
            role_name,
        });
    }
    fields.dedup_by(|a, b| a.name == b.name);
    let now = cx.now();
    let fill = defaults(&fields);
    let t = Template {
        id: id.clone(),
        entity_id: pr.entity.id.clone(),
        user_id: pr.user.id.clone(),
        name,
        status: TemplateStatus::Importing,
        failure: None,
        source_blob: blob.clone(),
        source_name: source_name.clone(),
        is_word,
        file: None,
        fields,
        roles,
        attachments,
        trashed: false,
        created_ms: now,
    };
    cx.save(&template_key(&id), &t);
    if !page_fields.is_empty() {
        cx.save(&page_fields_key(&id), &page_fields);
    }
    cx.p.put(&entity_index_key(&t.entity_id, now, &id), b"");
    cx.p.schedule_job(JobSpec {
        kind: IMPORT_JOB.into(),
        payload: id.into_bytes(),
        run_at_ms: now,
        work: Some(WorkOrder::Import(vec![ImportSource {
            blob: Some(blob),
            url: None,
            name: source_name,
            fill,
        }])),
        scope: t.entity_id.clone(),
    });
    let mut out = template_json(&t);
    out["page_fields"] = page_fields_json(&page_fields);
    Ok(json(200, &out))
}

/// A template's fields on its pages: (role name or empty for the sender's, field).
pub type PageFields = Vec<(String, super::fields::Field)>;

fn page_fields_key(id: &str) -> Vec<u8> {
    crate::util::key(&["tfld", id])
}

pub fn page_fields(cx: &mut Cx, id: &str) -> PageFields {
    cx.load(&page_fields_key(id)).unwrap_or_default()
}

fn page_fields_json(fields: &PageFields) -> Value {
    fields
        .iter()
        .map(|(role, f)| {
            json!({"field_type": f.kind.as_str(), "page_num": f.page_num, "role_name": role,
                   "field_left": f.left, "field_top": f.top, "field_width": f.width,
                   "field_height": f.height, "is_required": f.required,
                   "field_label": f.label, "field_value": f.value})
        })
        .collect()
}

/// `page_fields`: checked for shape and roles now, against the pages at import.
fn parse_page_fields(cx: &mut Cx, f: &Fields, roles: &[TemplateRole]) -> ApiResult<PageFields> {
    let given = f.objects("page_fields")?;
    if given.len() > super::fields::MAX_FIELDS {
        return Err(ApiError::bad_request(
            "too_many_fields",
            format!(
                "a template can have at most {} page fields",
                super::fields::MAX_FIELDS
            ),
        ));
    }
    let mut out = Vec::new();
    for (path, o) in given {
        let page = super::fields::page_num_of(o, &path)?;
        let field = super::fields::parse_shape(cx, o, &path, page)?;
        let role_name = member_text(o, "role_name");
        if role_name.is_empty() {
            super::fields::needs_signer(&field, &path, "role_name")?;
        } else {
            match roles.iter().find(|r| r.role_name == role_name) {
                None => {
                    return Err(ApiError::bad_request(
                        "invalid_field",
                        format!(
                            "`{path}.role_name` {role_name:?} is not one of the template's roles"
                        ),
                    ));
                }
                Some(r) if r.role != Role::Signer => {
                    return Err(ApiError::bad_request(
                        "invalid_field",
                        format!(
                            "`{path}.role_name`: only signers fill fields; {role_name:?} is {}",
                            r.role.as_str()
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        out.push((role_name, field));
    }
    Ok(out)
}

/// The template's page fields for a document whose recipients are `recipients`: each
/// with the id of the recipient in its role (fields of a role nobody has are left out),
/// and a new id.
pub fn fields_for(
    cx: &mut Cx,
    t: &Template,
    recipients: &[super::model::Recipient],
) -> Vec<super::fields::Field> {
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
fn defaults(fields: &[TemplateField]) -> Vec<(String, String)> {
    fields
        .iter()
        .filter(|f| !f.default.is_empty())
        .map(|f| (f.name.clone(), f.default.clone()))
        .collect()
}

/// Job [`IMPORT_JOB`].
pub fn imported(cx: &mut Cx, job: &Job) -> JobOutcome {
    let id = String::from_utf8_lossy(&job.payload).into_owned();
    let Some(mut t) = cx.load::<Template>(&template_key(&id)) else {
        return JobOutcome::Done;
    };
    match &job.outcome {
        Some(WorkOutcome::Import(results)) => match results.first() {
            Some(Ok(file)) => {
                for name in &file.placeholders {
                    if !t.fields.iter().any(|f| &f.name == name) {
                        t.fields.push(TemplateField {
                            name: name.clone(),
                            kind: FieldKind::Text,
                            options: Vec::new(),
                            min: None,
                            max: None,
                            required: false,
                            default: String::new(),
                        });
                    }
                }
                if file.blob != t.source_blob {
                    blobs::hold(cx, &file.blob, &owner(&id));
                }
                t.file = Some(DocFile {
                    id: new_id(cx),
                    name: t.source_name.clone(),
                    blob: file.blob.clone(),
                    size: file.size,
                    sha256: file.sha256.clone(),
                    pages: file.pages.iter().map(|p| (p.width, p.height)).collect(),
                });
                t.status = TemplateStatus::Ready;
                // The page fields must lie on the pages the file turned out to have.
                for (i, (_, field)) in page_fields(cx, &id).iter().enumerate() {
                    let path = format!("page_fields[{i}]");
                    let fit = match file.pages.get(field.page_num as usize - 1) {
                        Some(p) => super::fields::check_fit(field, p.width, p.height, &path)
                            .map_err(|e| e.description),
                        None => Err(format!(
                            "`{path}` is on page {}, but the file has {} pages",
                            field.page_num,
                            file.pages.len()
                        )),
                    };
                    if let Err(why) = fit {
                        t.status = TemplateStatus::Failed;
                        t.failure = Some(why);
                        break;
                    }
                }
            }
            Some(Err(f)) => {
                t.status = TemplateStatus::Failed;
                t.failure = Some(f.message.clone());
            }
            None => return JobOutcome::Failed("import outcome without results".into()),
        },
        _ => return JobOutcome::Failed("template import without an import outcome".into()),
    }
    cx.save(&template_key(&id), &t);
    JobOutcome::Done
}

/// Checks `given` custom field values against the template's fields and returns the
/// document's custom fields (given values, then defaults). A value outside a dropdown's
/// options, a number out of range or a missing required field is a 422: the template
/// cannot be applied.
pub fn apply_fields(t: &Template, given: &[CustomField]) -> ApiResult<Vec<CustomField>> {
    let unapplicable = |why: String| ApiError::new(422, "template_not_applicable", why);
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
