//! `/v1/templates`: list, create (from a PDF or Word file, with fields and roles), read,
//! edit (name, roles, fields placed on the pages) and delete templates.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, Fields, json, member_text, no_content};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util;
use crate::domain::auth::Principal;
use crate::domain::templates::{
    self, FieldKind, NewAttachment, NewSource, NewTemplate, PageFields, Template, TemplateChange,
    TemplateExt, TemplateField, TemplateRole, find, page_fields,
};
use crate::domain::{document, fields, folders, previews, pricing, public_files};
use crate::handlers::inputs;
use crate::handlers::shapes;
use serde_json::{Value, json};

/// `DELETE /v1/templates/{id}`: under the document delete rules (the owner or an admin;
/// only an admin when the entity says so), and the template's files are released.
pub fn delete(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    templates::trash(cx, pr, id)?;
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
    let sender_name = templates::sender_name(cx, t);
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
        "status": t.status.as_str(),
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

/// The attachments given (`attachments`: `file_id`, `name`, `role_name`).
fn parse_attachments(f: &Fields) -> ApiResult<Vec<NewAttachment>> {
    Ok(f.objects("attachments")?
        .into_iter()
        .map(|(path, o)| NewAttachment {
            file_id: member_text(o, "file_id"),
            name: member_text(o, "name"),
            role_name: Some(member_text(o, "role_name")).filter(|r| !r.is_empty()),
            path,
        })
        .collect())
}

/// `POST /v1/templates`: a PDF or Word file (`file_id`, a multipart `file`, or
/// `file_content` with `file_name`) with its fields, roles, page fields and
/// attachments; imported in the background.
pub fn create(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    let f = req.body_fields()?;
    let name = f.required_str("name")?;
    let fields = parse_fields(&f)?;
    let roles = parse_roles(&f)?;
    let page_fields = parse_page_fields(cx, &f, &roles)?;
    let ext = parse_ext(cx, pr, &f)?;
    let source = if let Some(file_id) = f.optional_str("file_id")? {
        NewSource::Upload(file_id)
    } else if let Some(file) = inputs::given_file(&f)? {
        NewSource::Given(file)
    } else {
        return Err(http::ApiError::bad_request(
            "missing_field",
            "a template needs a file: `file_id`, a multipart `file`, or `file_content` with `file_name`",
        ));
    };
    let placed = page_fields_json(&page_fields);
    let new = NewTemplate {
        name,
        fields,
        roles,
        page_fields,
        ext,
        source,
        attachments: parse_attachments(&f),
    };
    let t = templates::create(cx, pr, new)?;
    let mut out = template_json(cx, &t);
    out["page_fields"] = placed;
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
    let t = templates::writable(cx, pr, id)?;
    let f = req.body_fields()?;
    f.only(&["name", "roles", "page_fields"])?;
    templates::may_edit(&t)?;
    let name = match f.optional_str("name")? {
        Some(name) if name.trim().is_empty() => {
            return Err(http::ApiError::bad_request(
                "invalid_field",
                "the field `name` must not be empty",
            ));
        }
        name => name.map(|n| n.trim().to_string()),
    };
    let roles = if f.has("roles") {
        Some(parse_roles(&f)?)
    } else {
        None
    };
    let page_fields = if f.has("page_fields") {
        Some(parse_page_fields(
            cx,
            &f,
            roles.as_deref().unwrap_or(&t.roles),
        )?)
    } else {
        None
    };
    let change = TemplateChange {
        name,
        roles,
        page_fields,
    };
    templates::update(cx, t, change)?;
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
    let tables = shapes::pricing_tables_json(&t.ext.pricing_tables);
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
