//! `/v1/templates`: list, create (from a PDF or Word file, with fields and roles), read,
//! edit (name, roles, fields placed on the pages) and delete templates.

use crate::base::api::{JobSpec, Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, Fields, json, member_text, no_content};
use crate::base::job_kinds;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, new_id};
use crate::base::work::{self, ImportSource};
use crate::domain::auth::Principal;
use crate::domain::templates::{
    self, FieldKind, PageFields, Template, TemplateAttachment, TemplateExt, TemplateField,
    TemplateRole, TemplateStatus, defaults, entity_index_key, find, page_fields, page_fields_key,
};
use crate::domain::{
    accounts, blobs, document, fields, folders, previews, pricing, public_files, uploads,
};
use serde_json::{Value, json};

/// `DELETE /v1/templates/{id}`: under the document delete rules (the owner or an admin;
/// only an admin when the entity says so), and the template's files are released.
pub fn delete(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    if pr.entity.delete_admin_only && pr.membership.role != accounts::Role::Admin {
        return Err(http::ApiError::forbidden(
            "deletion_restricted",
            "this account lets only admins delete templates",
        ));
    }
    let mut t = find(cx, pr, id)?;
    if t.user_id != pr.user.id && pr.membership.role != accounts::Role::Admin {
        return Err(templates::not_found(id));
    }
    t.trashed = true;
    let owner = templates::blob_owner(id);
    previews::erase(cx, &owner);
    let held = [Some(&t.source_blob), t.file.as_ref().map(|f| &f.blob)];
    let attachments = t.attachments.iter().map(|a| &a.blob);
    for blob in held.into_iter().flatten().chain(attachments) {
        blobs::release(cx, blob, &owner);
    }
    templates::save(cx, &t);
    Ok(no_content())
}

/// `GET /v1/templates/{id}/roles`: GetAccept's role shape; `role_id` is what a
/// document's `recipients[].role_id` names.
fn roles_json(t: &Template) -> Vec<Value> {
    t.roles
        .iter()
        .map(|r| {
            json!({
                "role_id": templates::role_id(&t.id, &r.role_name),
                "role_name": r.role_name,
                "role": r.role.as_str(),
                "first_name": "", "last_name": "", "email": "", "mobile": "",
            })
        })
        .collect()
}

/// `GET /v1/templates/{id}/fields`: the custom fields a document made from it fills
/// (`fields`, GetAccept's members; `field_value` is the default, never null) and the
/// fields placed on its pages for its roles (`editor_fields`, and in `fields` too).
fn fields_json(cx: &mut Cx, t: &Template) -> Value {
    let mut out: Vec<Value> = t
        .fields
        .iter()
        .map(|f| {
            json!({
                "field_id": templates::field_id(&t.id, &f.name),
                "field_label": f.name,
                "field_value": f.default,
                "field_type": f.kind.as_str(),
                "field_options": f.options.iter().map(|o| json!({"value": o})).collect::<Vec<_>>(),
                "is_editable": true,
                "is_required": f.required,
                "is_collectable": false,
                "page_id": "",
                "role_name": "",
                "recipient_id": "",
                "recipient_name": "",
                "company_name": "",
                "company_number": "",
            })
        })
        .collect();
    let placed = page_fields(cx, &t.id);
    let mut editor = Vec::new();
    for (role, f) in &placed {
        out.push(json!({
            "field_id": f.id,
            "field_label": f.label,
            "field_value": f.value,
            "field_type": f.kind.as_str(),
            "field_options": [],
            "is_editable": !role.is_empty(),
            "is_required": f.required,
            "is_collectable": !role.is_empty(),
            "page_id": f.page_num.to_string(),
            "role_name": role,
            "recipient_id": "",
            "recipient_name": "",
            "company_name": "",
            "company_number": "",
        }));
        editor.push(json!({
            "id": f.id,
            "type": f.kind.as_str(),
            "recipient_id": role,
            "user_id": if role.is_empty() { t.user_id.as_str() } else { "" },
            "input_settings": {
                "label": f.label, "options": [], "required": f.required,
                "type": f.kind.as_str(),
            },
        }));
    }
    json!({"fields": out, "editor_fields": editor})
}

fn template_json(cx: &mut Cx, t: &Template) -> Value {
    let sender_name = cx
        .load::<accounts::User>(&accounts::user_key(&t.user_id))
        .map(|u| accounts::user_name(&u))
        .unwrap_or_default();
    let placed = page_fields(cx, &t.id).len();
    let thumb_url = previews::page_url(cx, &templates::blob_owner(&t.id), 1).unwrap_or_default();
    json!({
        "thumb_url": thumb_url,
        "folder_id": t.ext.folder_id,
        "field_count": t.fields.len() + placed,
        "role_count": t.roles.len(),
        "sender_name": sender_name,
        "is_editable": true,
        "is_private": false,
        "video_id": "",
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
        "roles": roles_json(t),
        "attachments": t.attachments.iter().map(|a| json!({
            "name": a.name, "size": a.size, "role_name": a.role_name,
        })).collect::<Vec<_>>(),
        "user_id": t.user_id,
        "created_at": util::iso8601(t.created_ms),
    })
}

/// `GET /v1/templates` (`folder_id` filters by folder).
pub fn list(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    let folder = req.query_param("folder_id").filter(|f| !f.is_empty());
    let out: Vec<Value> = templates::all(cx, &pr.entity.id)
        .iter()
        .filter(|t| folder.as_ref().is_none_or(|f| &t.ext.folder_id == f))
        .map(|t| template_json(cx, t))
        .collect();
    Ok(json(200, &json!({ "templates": out })))
}

fn opt_num(o: &serde_json::Map<String, Value>, k: &str, path: &str) -> ApiResult<Option<f64>> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        _ => Err(http::ApiError::bad_request(
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
            return Err(http::ApiError::bad_request(
                "missing_field",
                format!("`{path}.name` is required"),
            ));
        }
        let kind = match member_text(o, "type").as_str() {
            "" | "text" => FieldKind::Text,
            "number" => FieldKind::Number,
            "dropdown" => FieldKind::Dropdown,
            other => {
                return Err(http::ApiError::bad_request(
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
                    http::ApiError::bad_request(
                        "invalid_field",
                        format!("`{path}.options` must be strings"),
                    )
                })?,
            _ => {
                return Err(http::ApiError::bad_request(
                    "invalid_field",
                    format!("`{path}.options` must be an array"),
                ));
            }
        };
        if kind == FieldKind::Dropdown && options.is_empty() {
            return Err(http::ApiError::bad_request(
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
            return Err(http::ApiError::bad_request(
                "missing_field",
                format!("`{path}.role_name` is required"),
            ));
        }
        let role_text = member_text(o, "role");
        let role = if role_text.is_empty() {
            document::Role::Signer
        } else {
            document::Role::parse(&role_text).ok_or_else(|| {
                http::ApiError::bad_request(
                    "invalid_field",
                    format!("`{path}.role` must be {}", document::Role::NAMES),
                )
            })?
        };
        out.push(TemplateRole { role_name, role });
    }
    Ok(out)
}

/// `folder_id` (a template folder), `pricing_tables` (every document made from the
/// template starts with them) and `custom_images` (`[{name}]`: the images a document
/// made from it fills in).
fn parse_ext(cx: &mut Cx, pr: &Principal, f: &Fields) -> ApiResult<TemplateExt> {
    let folder = f.optional_str("folder_id")?.unwrap_or_default();
    let folder_id = folders::check_target(cx, &pr.entity.id, &folder, folders::Kind::Template)?;
    let pricing_tables = match f.optional_json("pricing_tables")? {
        Some(v) => pricing::parse_tables(v)?,
        None => Vec::new(),
    };
    let mut custom_images: Vec<String> = Vec::new();
    for (path, o) in f.objects("custom_images")? {
        let name = member_text(o, "name");
        if name.is_empty() {
            return Err(http::ApiError::bad_request(
                "missing_field",
                format!("`{path}.name` is required"),
            ));
        }
        if !custom_images.contains(&name) {
            custom_images.push(name);
        }
    }
    Ok(TemplateExt {
        folder_id,
        pricing_tables,
        custom_images,
    })
}

#[expect(
    clippy::too_many_lines,
    reason = "older than the 70-line rule (issue 49)"
)]
pub fn create(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    let f = req.body_fields()?;
    let name = f.required_str("name")?;
    let mut fields = parse_fields(&f)?;
    let roles = parse_roles(&f)?;
    let page_fields = parse_page_fields(cx, &f, &roles)?;
    let ext = parse_ext(cx, pr, &f)?;
    // Everything is checked before anything is written.
    enum Source {
        Upload(uploads::Upload),
        Inline(uploads::GivenFile),
    }
    let (source, source_name, kind) = if let Some(file_id) = f.optional_str("file_id")? {
        let up = uploads::find(cx, pr, &file_id)
            .filter(|u| u.status == uploads::UploadStatus::Ready)
            .ok_or_else(|| {
                http::ApiError::not_found("file_not_found", format!("no usable upload {file_id}"))
            })?;
        let (name, kind) = (up.name.clone(), up.kind);
        (Source::Upload(up), name, kind)
    } else if let Some(file) = uploads::given_file(&f)? {
        let kind = uploads::FileKind::detect(&file.bytes, &file.name);
        let name = file.name.clone();
        (Source::Inline(file), name, kind)
    } else {
        return Err(http::ApiError::bad_request(
            "missing_field",
            "a template needs a file: `file_id`, a multipart `file`, or `file_content` with `file_name`",
        ));
    };
    if !matches!(kind, uploads::FileKind::Pdf | uploads::FileKind::Word) {
        return Err(http::ApiError::bad_request(
            "unsupported_file",
            "a template must be a PDF or a Word (.docx) file",
        ));
    }
    let mut attached = Vec::new();
    for (path, o) in f.objects("attachments")? {
        let file_id = member_text(o, "file_id");
        let up = uploads::find(cx, pr, &file_id)
            .filter(|u| u.status == uploads::UploadStatus::Ready)
            .ok_or_else(|| {
                http::ApiError::not_found("file_not_found", format!("no usable upload {file_id:?}"))
            })?;
        let role_name = Some(member_text(o, "role_name")).filter(|r| !r.is_empty());
        if let Some(r) = &role_name
            && !roles.iter().any(|x| &x.role_name == r)
        {
            return Err(http::ApiError::bad_request(
                "invalid_field",
                format!("`{path}.role_name` {r:?} is not one of the template's roles"),
            ));
        }
        let name = Some(member_text(o, "name"))
            .filter(|n| !n.is_empty())
            .unwrap_or(up.name.clone());
        attached.push((up, name, role_name));
    }
    let is_word = kind == uploads::FileKind::Word;
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
        Source::Upload(mut up) => {
            uploads::touch(cx, &mut up);
            up.blob.clone().unwrap_or_default()
        }
        Source::Inline(file) => uploads::put_blob(cx, &file.bytes)?.id,
    };
    blobs::hold(cx, &blob, &templates::blob_owner(&id));
    let mut attachments = Vec::new();
    for (mut up, name, role_name) in attached {
        uploads::touch(cx, &mut up);
        let att_blob = up.blob.clone().unwrap_or_default();
        blobs::hold(cx, &att_blob, &templates::blob_owner(&id));
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
        ext,
    };
    templates::save(cx, &t);
    if !page_fields.is_empty() {
        cx.save(&page_fields_key(&id), &page_fields);
    }
    cx.p.put(&entity_index_key(&t.entity_id, now, &id), b"");
    cx.p.schedule_job(JobSpec {
        kind: job_kinds::TEMPLATE_IMPORT.into(),
        payload: id.into_bytes(),
        run_at_ms: now,
        work: Some(work::WorkOrder::Import(vec![ImportSource {
            blob: Some(blob),
            url: None,
            name: source_name,
            fill,
        }])),
        scope: t.entity_id.clone(),
    });
    let mut out = template_json(cx, &t);
    out["page_fields"] = page_fields_json(&page_fields);
    Ok(json(200, &out))
}

/// The template's content pages as a document's are answered (`GET
/// /v1/documents/{id}/pages`): number, size in points, and picture (`thumb_url`, empty
/// until made after the import).
fn pages_json(cx: &mut Cx, t: &Template) -> Value {
    let previews = previews::load(cx, &templates::blob_owner(&t.id));
    let sizes = t.file.as_ref().map(|f| f.pages.clone()).unwrap_or_default();
    let mut out = Vec::new();
    for (i, (w, h)) in sizes.iter().enumerate() {
        let thumb = match previews.pages.get(i) {
            Some(p) => public_files::url(cx, &p.secret),
            None => String::new(),
        };
        out.push(json!({"page_num": i + 1, "page_width": w, "page_height": h, "thumb_url": thumb}));
    }
    Value::Array(out)
}

/// `PUT /v1/templates/{id}`: its `name`, `roles` and the fields placed on its pages
/// (`page_fields`, as at create), each replaced when given; 204. By its owner, an
/// admin or the owner's team manager (403 for other members). Only once its file is
/// imported (400 `invalid_status` before, or after a failed import); every placed field
/// must fit its page and name one of the roles (the new ones when `roles` is given).
pub fn update(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let mut t = templates::writable(cx, pr, id)?;
    let f = req.body_fields()?;
    f.only(&["name", "roles", "page_fields"])?;
    if t.status != TemplateStatus::Ready {
        return Err(http::ApiError::bad_request(
            "invalid_status",
            "the template's file is not imported (yet): its pages can be edited once its status is ready",
        ));
    }
    if let Some(name) = f.optional_str("name")? {
        if name.trim().is_empty() {
            return Err(http::ApiError::bad_request(
                "invalid_field",
                "the field `name` must not be empty",
            ));
        }
        t.name = name.trim().to_string();
    }
    if f.has("roles") {
        t.roles = parse_roles(&f)?;
    }
    let given = if f.has("page_fields") {
        Some(parse_page_fields(cx, &f, &t.roles)?)
    } else {
        None
    };
    let placed = match &given {
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
    templates::save(cx, &t);
    match given {
        Some(p) if p.is_empty() => cx.p.delete(&page_fields_key(&t.id)),
        Some(p) => cx.save(&page_fields_key(&t.id), &p),
        None => {}
    }
    Ok(no_content())
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
    if given.len() > fields::MAX_FIELDS {
        return Err(http::ApiError::bad_request(
            "too_many_fields",
            format!(
                "a template can have at most {} page fields",
                fields::MAX_FIELDS
            ),
        ));
    }
    let mut out = Vec::new();
    for (path, o) in given {
        let page = fields::page_num_of(o, &path)?;
        let field = fields::parse_shape(cx, o, &path, page)?;
        let role_name = member_text(o, "role_name");
        if role_name.is_empty() {
            fields::needs_signer(&field, &path, "role_name")?;
        } else {
            match roles.iter().find(|r| r.role_name == role_name) {
                None => {
                    return Err(http::ApiError::bad_request(
                        "invalid_field",
                        format!(
                            "`{path}.role_name` {role_name:?} is not one of the template's roles"
                        ),
                    ));
                }
                Some(r) if r.role != document::Role::Signer => {
                    return Err(http::ApiError::bad_request(
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

/// `GET /v1/templates/{id}`: the template with its fields and pages.
pub fn get(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let t = find(cx, pr, id)?;
    let mut out = template_json(cx, &t);
    out["page_fields"] = page_fields_json(&page_fields(cx, &t.id));
    out["pages"] = pages_json(cx, &t);
    Ok(json(200, &out))
}

/// `GET /v1/templates/{id}/fields`.
pub fn fields(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let t = find(cx, pr, id)?;
    Ok(json(200, &fields_json(cx, &t)))
}

/// `GET /v1/templates/{id}/roles`.
pub fn roles(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let t = find(cx, pr, id)?;
    Ok(json(200, &json!({ "roles": roles_json(&t) })))
}

/// `GET /v1/templates/{id}/fields_roles`: which role fills each field.
pub fn fields_roles(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let t = find(cx, pr, id)?;
    let fields: Vec<Value> = page_fields(cx, &t.id)
        .iter()
        .map(|(role, f)| json!({"field_id": f.id, "role_name": role}))
        .collect();
    Ok(json(200, &json!({ "fields": fields })))
}

/// `GET /v1/templates/{id}/pricing-tables`.
pub fn pricing_tables(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let t = find(cx, pr, id)?;
    let tables = pricing::tables_json(&t.ext.pricing_tables);
    Ok(json(200, &json!({ "pricing_tables": tables })))
}

/// `GET /v1/templates/{id}/custom-images`.
pub fn custom_images(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let t = find(cx, pr, id)?;
    let images: Vec<Value> = t
        .ext
        .custom_images
        .iter()
        .map(|name| json!({"id": templates::field_id(&t.id, name), "name": name}))
        .collect();
    Ok(json(200, &json!({ "custom_images": images })))
}
