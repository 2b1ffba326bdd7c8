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

use crate::base::api::JobSpec;
use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult};
use crate::base::job_kinds;
use crate::base::keyspace::{TFLD, TPL, TPL_ENT};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records;
use crate::base::util::{self, is_id, new_id};
use crate::base::work_orders::{self, ImportSource};
use crate::domain::auth::Principal;
use crate::domain::document::{self, CustomField, DocFile, Role, hex};
use crate::domain::uploads::{self, FileKind, GivenFile, Upload};
use crate::domain::{access, accounts, blobs, fields, previews, pricing};
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

/// A template's status: `importing` from its create until its file is back, then
/// `ready` (its pages may be edited, documents made from it) or `failed`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum TemplateStatus {
    Importing,
    Ready,
    Failed,
}

impl TemplateStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TemplateStatus::Importing => "importing",
            TemplateStatus::Ready => "ready",
            TemplateStatus::Failed => "failed",
        }
    }
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

/// The name of the template's owner (empty once the user is gone).
pub fn sender_name(cx: &mut Cx, t: &Template) -> String {
    accounts::user(cx, &t.user_id)
        .map(|u| accounts::user_name(&u))
        .unwrap_or_default()
}

/// Where a new template's file comes from.
pub enum NewSource {
    /// An upload's `file_id`.
    Upload(String),
    /// Given in the request.
    Given(GivenFile),
}

/// An attachment of a new template, as given (`attachments[i]`, its path `path`).
pub struct NewAttachment {
    pub path: String,
    pub file_id: String,
    pub name: String,
    pub role_name: Option<String>,
}

/// `POST /v1/templates`, its members parsed.
pub struct NewTemplate {
    pub name: String,
    pub fields: Vec<TemplateField>,
    pub roles: Vec<TemplateRole>,
    pub page_fields: PageFields,
    pub ext: TemplateExt,
    pub source: NewSource,
    /// The attachments, or why they could not be read (answered after the file's
    /// checks).
    pub attachments: ApiResult<Vec<NewAttachment>>,
}

/// The checked source of a new template: the upload or the given file, its name, and
/// whether it is a Word file. 404 `file_not_found` for an upload not ready, 400
/// `unsupported_file` for neither a PDF nor a Word file.
fn checked_source(
    cx: &mut Cx,
    pr: &Principal,
    source: NewSource,
) -> ApiResult<(Result<Upload, GivenFile>, String, bool)> {
    let (source, name, kind) = match source {
        NewSource::Upload(file_id) => {
            let up = uploads::usable(cx, pr, &file_id, &file_id)?;
            let (name, kind) = (up.name.clone(), up.kind);
            (Ok(up), name, kind)
        }
        NewSource::Given(file) => {
            let kind = FileKind::detect(file.head(), &file.name);
            let name = file.name.clone();
            (Err(file), name, kind)
        }
    };
    if !matches!(kind, FileKind::Pdf | FileKind::Word) {
        return Err(http::ApiError::bad_request(
            "unsupported_file",
            "a template must be a PDF or a Word (.docx) file",
        ));
    }
    Ok((source, name, kind == FileKind::Word))
}

/// The uploads of a new template's attachments, with their names and roles; 404
/// `file_not_found` for one not ready, 400 `invalid_field` for a role the template
/// does not have.
fn checked_attachments(
    cx: &mut Cx,
    pr: &Principal,
    given: Vec<NewAttachment>,
    roles: &[TemplateRole],
) -> ApiResult<Vec<(Upload, String, Option<String>)>> {
    let mut out = Vec::new();
    for a in given {
        let up = uploads::usable(cx, pr, &a.file_id, &format!("{:?}", a.file_id))?;
        if let Some(r) = &a.role_name
            && !roles.iter().any(|x| &x.role_name == r)
        {
            return Err(http::ApiError::bad_request(
                "invalid_field",
                format!(
                    "`{}.role_name` {r:?} is not one of the template's roles",
                    a.path
                ),
            ));
        }
        let name = Some(a.name)
            .filter(|n| !n.is_empty())
            .unwrap_or(up.name.clone());
        out.push((up, name, a.role_name));
    }
    Ok(out)
}

/// The template `id`'s hold on its attachments' files (the uploads used again).
fn hold_attachments(
    cx: &mut Cx,
    id: &str,
    attached: Vec<(Upload, String, Option<String>)>,
) -> Vec<TemplateAttachment> {
    let mut attachments = Vec::new();
    for (mut up, name, role_name) in attached {
        uploads::touch(cx, &mut up);
        let att_blob = up.blob.clone().unwrap_or_default();
        blobs::hold(cx, &att_blob, &blob_owner(id));
        attachments.push(TemplateAttachment {
            name,
            blob: att_blob,
            size: up.size,
            role_name,
        });
    }
    attachments
}

/// `POST /v1/templates`: checks the file and the attachments (everything before
/// anything is written), then stores the template `importing` and asks the host to
/// import its file ([`imported`]). 422 `conversion_unavailable` for a Word file where
/// LibreOffice is missing.
pub fn create(cx: &mut Cx, pr: &Principal, new: NewTemplate) -> ApiResult<Template> {
    let (source, source_name, is_word) = checked_source(cx, pr, new.source)?;
    let attached = checked_attachments(cx, pr, new.attachments?, &new.roles)?;
    if is_word && !cx.settings().can_convert_word {
        return Err(http::ApiError::new(
            422,
            "conversion_unavailable",
            "Word templates cannot be imported here: LibreOffice is not installed on the server",
        ));
    }
    // Now write: the file, the uploads' use, the references.
    let id = new_id(cx);
    let blob = match source {
        Ok(mut up) => {
            uploads::touch(cx, &mut up);
            up.blob.clone().unwrap_or_default()
        }
        Err(file) => file.store(cx)?.id,
    };
    blobs::hold(cx, &blob, &blob_owner(&id));
    let attachments = hold_attachments(cx, &id, attached);
    let mut fields = new.fields;
    fields.dedup_by(|a, b| a.name == b.name);
    let now = cx.now();
    let fill = defaults(&fields);
    let t = Template {
        id: id.clone(),
        entity_id: pr.entity.id.clone(),
        user_id: pr.user.id.clone(),
        name: new.name,
        status: TemplateStatus::Importing,
        failure: None,
        source_blob: blob.clone(),
        source_name: source_name.clone(),
        is_word,
        file: None,
        fields,
        roles: new.roles,
        attachments,
        trashed: false,
        created_ms: now,
        ext: new.ext,
    };
    save(cx, &t);
    if !new.page_fields.is_empty() {
        cx.save(&page_fields_key(&id), &new.page_fields);
    }
    cx.p.put(&entity_index_key(&t.entity_id, now, &id), b"");
    cx.p.schedule_job(JobSpec {
        kind: job_kinds::TEMPLATE_IMPORT.into(),
        payload: id.into_bytes(),
        run_at_ms: now,
        work: Some(work_orders::WorkOrder::Import(vec![ImportSource {
            blob: Some(blob),
            url: None,
            name: source_name,
            fill,
        }])),
        scope: t.entity_id.clone(),
    });
    Ok(t)
}

/// Whether `t`'s pages may be edited: once its file is imported (400 `invalid_status`
/// before, or after a failed import).
pub fn may_edit(t: &Template) -> ApiResult<()> {
    if t.status != TemplateStatus::Ready {
        return Err(http::ApiError::bad_request(
            "invalid_status",
            "the template's file is not imported (yet): its pages can be edited once its status is ready",
        ));
    }
    Ok(())
}

/// `PUT /v1/templates/{id}`, its members parsed: each `Some` replaces.
pub struct TemplateChange {
    pub name: Option<String>,
    pub roles: Option<Vec<TemplateRole>>,
    pub page_fields: Option<PageFields>,
}

/// `PUT /v1/templates/{id}` of an editable template ([`may_edit`]): every placed field
/// (the new ones, else those kept) must fit its page and name one of the roles (the
/// new ones when given); 400 `invalid_field` otherwise, and nothing is written.
pub fn update(cx: &mut Cx, mut t: Template, change: TemplateChange) -> ApiResult<()> {
    if let Some(name) = change.name {
        t.name = name;
    }
    if let Some(roles) = change.roles {
        t.roles = roles;
    }
    let placed = match &change.page_fields {
        Some(p) => p.clone(),
        None => page_fields(cx, &t.id),
    };
    let sizes = t.file.as_ref().map(|f| f.pages.clone()).unwrap_or_default();
    for (i, (role, field)) in placed.iter().enumerate() {
        let path = format!("page_fields[{i}]");
        let Some((w, h)) = sizes.get(field.page_num as usize - 1) else {
            return Err(http::ApiError::bad_request(
                "invalid_field",
                format!("`{path}.page_num`: the template has {} pages", sizes.len()),
            ));
        };
        fields::check_fit(field, *w, *h, &path)?;
        if !role.is_empty() && !t.roles.iter().any(|r| &r.role_name == role) {
            return Err(http::ApiError::bad_request(
                "invalid_field",
                format!("`{path}` is for the role {role:?}, which the new roles do not have"),
            ));
        }
    }
    save(cx, &t);
    match change.page_fields {
        Some(p) if p.is_empty() => cx.p.delete(&page_fields_key(&t.id)),
        Some(p) => cx.save(&page_fields_key(&t.id), &p),
        None => {}
    }
    Ok(())
}

/// `DELETE /v1/templates/{id}`: under the document delete rules (the owner or an admin;
/// only an admin when the entity says so: 403 `deletion_restricted`; another member's
/// is not found), the template goes to the trash, its pictures are erased and its
/// files released.
pub fn trash(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<()> {
    let admin = pr.membership.role == accounts::Role::Admin;
    if pr.entity.delete_admin_only && !admin {
        return Err(http::ApiError::forbidden(
            "deletion_restricted",
            "this account lets only admins delete templates",
        ));
    }
    let mut t = find(cx, pr, id)?;
    if t.user_id != pr.user.id && !admin {
        return Err(not_found(id));
    }
    t.trashed = true;
    let owner = blob_owner(&t.id);
    previews::erase(cx, &owner);
    let held = [Some(&t.source_blob), t.file.as_ref().map(|f| &f.blob)];
    let attachments = t.attachments.iter().map(|a| &a.blob);
    for blob in held.into_iter().flatten().chain(attachments) {
        blobs::release(cx, blob, &owner);
    }
    save(cx, &t);
    Ok(())
}

/// The imported file becomes `t`'s: its `{{name}}` placeholders text fields (unless
/// declared), its PDF held, `ready` unless a page field does not fit the pages it has
/// (`failed`, with why).
fn take_file(cx: &mut Cx, t: &mut Template, file: &work_orders::ImportedFile) {
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
        blobs::hold(cx, &file.blob, &blob_owner(&t.id));
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
    for (i, (_, field)) in page_fields(cx, &t.id).iter().enumerate() {
        let path = format!("page_fields[{i}]");
        let fit = match file.pages.get(field.page_num as usize - 1) {
            Some(p) => {
                fields::check_fit(field, p.width, p.height, &path).map_err(|e| e.description)
            }
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

/// Job `template.import`: the file of template `id` is back (`outcome`): `ready` (and
/// its pictures asked for) or `failed`. `Err` when the outcome is not an import's.
pub fn imported(
    cx: &mut Cx,
    id: &str,
    outcome: Option<&work_orders::WorkOutcome>,
) -> Result<(), &'static str> {
    let Some(mut t) = load(cx, id) else {
        return Ok(());
    };
    match outcome {
        Some(work_orders::WorkOutcome::Import(results)) => match results.first() {
            Some(Ok(file)) => take_file(cx, &mut t, file),
            Some(Err(f)) => {
                t.status = TemplateStatus::Failed;
                t.failure = Some(f.message.clone());
            }
            None => return Err("import outcome without results"),
        },
        _ => return Err("template import without an import outcome"),
    }
    if t.status == TemplateStatus::Ready
        && let Some(file) = &t.file
    {
        let owner = blob_owner(id);
        previews::request(cx, &owner, &t.entity_id, vec![file.blob.clone()]);
    }
    save(cx, &t);
    Ok(())
}
