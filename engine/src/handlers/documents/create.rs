//! `POST /v1/documents` (spec §4.2, §3.3): JSON, multipart and form-encoded bodies; the
//! text-field rules; recipients; every file source; templates.
//!
//! Order of checks, so that the spec's error cases leave what they promise:
//! 1. everything that is a 400, and the 404s for an unknown template or custom image,
//!    before anything is written;
//! 2. then the document exists: an unknown or expired Word upload in `file_ids` answers
//!    404 and leaves it as a page-less draft; a template that cannot be applied answers
//!    422 and leaves it as a page-less draft (both bodies carry `document_id`);
//! 3. otherwise 200: the short `{id, status: "importing"}` when files are imported in
//!    the background, else the detail form of a draft.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult, Fields, json, member_text};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, is_email, is_mobile, new_id, parse_time};
use crate::domain::accounts::user_name;
use crate::domain::attachments as library;
use crate::domain::auth::{self, Principal};
use crate::domain::creation::{self, Created, NewDocument, Sources};
use crate::domain::document::{
    self, Attachment, CustomField, DocExt, DocExt2, Document, Flags, Recipient, Sender,
    normalize_tags,
};
use crate::domain::drawable::drawable;
use crate::domain::templates::{self, Template};
use crate::domain::uploads::{self, Upload};
use crate::domain::{
    folders, identity, mail_templates, pricing, recipient_states, reminder_schedules, trail, videos,
};
use crate::handlers::documents::input::{self, tags_text};
use crate::handlers::inputs;
use crate::handlers::shapes::{self, DetailOptions, detail_json};
use serde_json::{Map, Value, json};

/// Default days until a document expires.
pub const DEFAULT_EXPIRATION_DAYS: u32 = 30;
const DAY_MS: u64 = 24 * 3600 * 1000;

/// Parses `recipients` (spec §2.3): every recipient needs a valid email or mobile.
pub fn parse_recipients(
    cx: &mut Cx,
    f: &Fields,
    template: Option<&Template>,
) -> ApiResult<Vec<Recipient>> {
    let mut out = Vec::new();
    let given = f.objects("recipients")?;
    if given.len() > document::MAX_RECIPIENTS {
        return Err(http::ApiError::bad_request(
            "invalid_field",
            format!(
                "`recipients` may name at most {} recipients",
                document::MAX_RECIPIENTS
            ),
        ));
    }
    for (i, (path, o)) in given.into_iter().enumerate() {
        out.push(parse_recipient(cx, o, &path, i, template)?);
    }
    Ok(out)
}

/// One recipient of `recipients` (at `path`, the `index`th): an email or a mobile, a
/// role (of the template's, when it names one), names and a position.
pub fn parse_recipient(
    cx: &mut Cx,
    o: &Map<String, Value>,
    path: &str,
    index: usize,
    template: Option<&Template>,
) -> ApiResult<Recipient> {
    let (email, mobile) = parse_address(o, path)?;
    let (role, role_name) = parse_role(o, path, template)?;
    let (mut first, mut last) = (member_text(o, "first_name"), member_text(o, "last_name"));
    if first.is_empty() && last.is_empty() {
        let full = member_text(o, "fullname");
        match full.split_once(' ') {
            Some((a, b)) => (first, last) = (a.to_string(), b.trim().to_string()),
            None => first = full,
        }
    }
    for (member, text) in [
        ("first_name", &first),
        ("last_name", &last),
        ("company_name", &member_text(o, "company_name")),
        ("title", &member_text(o, "title")),
    ] {
        drawable(&format!("{path}.{member}"), text)?;
    }
    let order_num = match o.get("order_num") {
        None | Some(Value::Null) => index as u32 + 1,
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            .filter(|n| *n >= 1 && *n <= 1000)
            .ok_or_else(|| {
                http::ApiError::bad_request(
                    "invalid_recipient",
                    format!("`{path}.order_num` must be a number from 1"),
                )
            })? as u32,
    };
    Ok(Recipient {
        first_name: first,
        last_name: last,
        email,
        mobile,
        phone: member_text(o, "phone"),
        role_name,
        company_name: member_text(o, "company_name"),
        company_number: member_text(o, "company_number"),
        title: member_text(o, "title"),
        note: member_text(o, "note"),
        contact_id: member_text(o, "contact_id"),
        ..recipient_states::created(new_id(cx), role, order_num)
    })
}

/// A recipient's `email` and `mobile`: valid, and at least one of them.
fn parse_address(o: &Map<String, Value>, path: &str) -> ApiResult<(String, String)> {
    let email = member_text(o, "email");
    let mobile = member_text(o, "mobile");
    if !email.is_empty() && !is_email(&email) {
        return Err(http::ApiError::bad_request(
            "invalid_recipient",
            format!("`{path}.email` {email:?} is not a valid email address"),
        ));
    }
    if !mobile.is_empty() && !is_mobile(&mobile) {
        return Err(http::ApiError::bad_request(
            "invalid_recipient",
            format!("`{path}.mobile` {mobile:?} is not a valid mobile number"),
        ));
    }
    if email.is_empty() && mobile.is_empty() {
        return Err(http::ApiError::bad_request(
            "invalid_recipient",
            format!("`{path}` needs a valid email or a mobile number"),
        ));
    }
    Ok((email, mobile))
}

/// A recipient's role and role name: `role_id` or `role_name` of the template's roles
/// (whose role is the default), and `role`.
fn parse_role(
    o: &Map<String, Value>,
    path: &str,
    template: Option<&Template>,
) -> ApiResult<(document::Role, String)> {
    let mut role_name = member_text(o, "role_name");
    let role_id = member_text(o, "role_id");
    if !role_id.is_empty() {
        // GetAccept binds a recipient to a template role by its id
        // (`GET /v1/templates/{id}/roles`).
        let bound = template.and_then(|t| templates::role_by_id(t, &role_id));
        match bound {
            Some(r) => role_name = r.role_name.clone(),
            None => {
                return Err(http::ApiError::bad_request(
                    "invalid_recipient",
                    format!(
                        "`{path}.role_id` {role_id:?} is not a role of the document's template"
                    ),
                ));
            }
        }
    }
    let template_role = template.and_then(|t| t.roles.iter().find(|r| r.role_name == role_name));
    if let Some(t) = template
        && !role_name.is_empty()
        && template_role.is_none()
    {
        return Err(http::ApiError::bad_request(
            "invalid_recipient",
            format!(
                "`{path}.role_name` {role_name:?} is not a role of the template {:?}",
                t.name
            ),
        ));
    }
    let role_text = member_text(o, "role");
    let role = if role_text.is_empty() {
        template_role.map_or(document::Role::Signer, |r| r.role)
    } else {
        document::Role::parse(&role_text).ok_or_else(|| {
            http::ApiError::bad_request(
                "invalid_recipient",
                format!("`{path}.role` must be {}", document::Role::NAMES),
            )
        })?
    };
    Ok((role, role_name))
}

/// `custom_fields`: each `{name, value}`, or GetAccept's `{id, value}` with the id of
/// one of the template's fields (`GET /v1/templates/{id}/fields`).
fn parse_custom_fields(f: &Fields, template: Option<&Template>) -> ApiResult<Vec<CustomField>> {
    let mut out = Vec::new();
    for (path, o) in f.objects("custom_fields")? {
        let mut name = member_text(o, "name");
        let id = member_text(o, "id");
        if name.is_empty() && !id.is_empty() {
            name = template
                .and_then(|t| templates::field_by_id(t, &id))
                .map(|field| field.name.clone())
                .ok_or_else(|| {
                    http::ApiError::bad_request(
                        "invalid_field",
                        format!("`{path}.id` {id:?} is not a field of the document's template"),
                    )
                })?;
        }
        if name.is_empty() {
            return Err(http::ApiError::bad_request(
                "invalid_field",
                format!("`{path}` needs `name` (or the `id` of a template field)"),
            ));
        }
        let value = match o.get("value") {
            Some(Value::Bool(b)) => b.to_string(),
            _ => member_text(o, "value"),
        };
        out.push(CustomField { name, value });
    }
    Ok(out)
}

/// The files the request names, in order: `file_ids` (uploads), the inline file
/// (multipart `file` or `file_content`), `file_url`.
fn parse_sources(cx: &mut Cx, pr: &Principal, f: &Fields) -> ApiResult<Sources> {
    let ids = f.optional_str("file_ids")?.unwrap_or_default();
    let ids: Vec<&str> = ids
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let mut out = Sources::from_uploads(cx, pr, &ids)?;
    if let Some(file) = inputs::given_file(f)? {
        out.add_inline(file);
    }
    if let Some(url) = f.optional_str("file_url")?.filter(|u| !u.is_empty()) {
        uploads::check_url("file_url", &url)?;
        out.add_url(url);
    }
    Ok(out)
}

/// Reads a boolean flag of the create body into `slot` when present.
fn set_flag(f: &Fields, name: &str, slot: &mut bool) -> ApiResult<()> {
    if let Some(v) = f.optional_bool(name)? {
        *slot = v;
    }
    Ok(())
}

/// The flags of a create's body: `is_video` too when a video is given, and nothing
/// sent, scheduled or reminded for an `archive`d contract.
fn parse_flags(
    f: &Fields,
    recipients: &[Recipient],
    video: bool,
    archive: bool,
) -> ApiResult<Flags> {
    let mut flags = document::Flags::default();
    for (name, slot) in [
        ("is_selfsign", &mut flags.is_selfsign),
        ("is_signing_biometric", &mut flags.is_signing_biometric),
        ("is_signing_initials", &mut flags.is_signing_initials),
        ("is_private", &mut flags.is_private),
        ("is_signing_order", &mut flags.is_signing_order),
        ("is_signing_forward", &mut flags.is_signing_forward),
        ("is_identify_recipient", &mut flags.is_identify_recipient),
        ("is_video", &mut flags.is_video),
        ("is_scheduled_sending", &mut flags.is_scheduled_sending),
        ("is_reminder_sending", &mut flags.is_reminder_sending),
        ("is_auto_comment", &mut flags.is_auto_comment),
        ("is_auto_comment_email", &mut flags.is_auto_comment_email),
        ("is_automatic_sending", &mut flags.is_automatic_sending),
    ] {
        set_flag(f, name, slot)?;
    }
    // Spec §2.1: when omitted, no recipients enables signing, recipients without a
    // signer disable it, at least one signer enables it.
    flags.is_signing = match f.optional_bool("is_signing")? {
        Some(v) => v,
        None => {
            recipients.is_empty() || recipients.iter().any(|r| r.role == document::Role::Signer)
        }
    };
    if video && !f.has("is_video") {
        flags.is_video = true;
    }
    if archive {
        // Nothing is sent, scheduled or reminded for a contract signed elsewhere.
        flags.is_automatic_sending = false;
        flags.is_scheduled_sending = false;
        flags.is_reminder_sending = false;
    }
    Ok(flags)
}

/// The members kept in the document's extension: `folder_id` (an archive folder) and
/// `communication_template_id` (whose texts its mails use).
pub fn parse_ext(cx: &mut Cx, pr: &Principal, f: &Fields) -> ApiResult<DocExt> {
    let folder = f.optional_str("folder_id")?.unwrap_or_default();
    let folder_id = folders::check_target(cx, &pr.entity.id, &folder, folders::Kind::Archive)?;
    let comm = f
        .optional_str("communication_template_id")?
        .unwrap_or_default();
    if !comm.is_empty() {
        mail_templates::find_communication(cx, &pr.entity.id, &comm)?;
    }
    Ok(DocExt {
        folder_id,
        communication_template_id: comm,
    })
}

fn parse_time_field(f: &Fields, name: &str) -> ApiResult<Option<u64>> {
    match f.optional_str(name)?.filter(|s| !s.trim().is_empty()) {
        None => Ok(None),
        Some(s) => parse_time(&s).map(Some).ok_or_else(|| {
            http::ApiError::bad_request(
                "invalid_field",
                format!(
                    "the field `{name}` must be an ISO 8601 timestamp, e.g. 2026-12-24T12:00:00Z"
                ),
            )
        }),
    }
}

/// Files attached from uploads: `attachments` ({file_id, name, restricted_to}) and
/// `custom_images` ({file_id, name}); an unknown file is a 404 before anything is
/// created. The uploads used are added to `used`.
fn parse_attachments(
    cx: &mut Cx,
    pr: &Principal,
    f: &Fields,
    used: &mut Vec<Upload>,
) -> ApiResult<Vec<Attachment>> {
    let mut out = Vec::new();
    for field in ["attachments", "custom_images"] {
        for (path, o) in f.objects(field)? {
            let file_id = member_text(o, "file_id");
            let library_id = member_text(o, "id");
            let restricted = member_text(o, "restricted_to");
            let restricted_to = Some(util::normalize_email(&restricted)).filter(|r| !r.is_empty());
            if field == "attachments" && file_id.is_empty() && !library_id.is_empty() {
                // GetAccept's `{id}`: an attachment of the library.
                let a = library::find(cx, &pr.entity.id, &library_id)?;
                out.push(Attachment {
                    id: String::new(),
                    name: a.title,
                    blob: a.blob,
                    size: a.size,
                    restricted_to,
                });
                continue;
            }
            let image = field == "custom_images";
            let up = creation::attachment_upload(cx, pr, &file_id, &path, image)?;
            out.push(Attachment {
                id: String::new(),
                name: Some(member_text(o, "name"))
                    .filter(|n| !n.is_empty())
                    .unwrap_or(up.name.clone()),
                blob: up.blob.clone().unwrap_or_default(),
                size: up.size,
                restricted_to,
            });
            used.push(up);
        }
    }
    Ok(out)
}

/// The error body of a create that left a page-less draft behind.
fn with_document(err: ApiError, doc_id: &str) -> Response {
    let mut resp = err.into_response();
    if let Ok(Value::Object(mut m)) = serde_json::from_slice::<Value>(&resp.body) {
        m.insert("document_id".into(), doc_id.into());
        resp.body = serde_json::to_vec(&Value::Object(m)).unwrap_or_default();
    }
    resp
}

/// `POST /v1/documents`.
pub fn create(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    create_as(cx, pr, req, false)
}

/// `POST /v1/upload/archive` (GetAccept's "upload to archive"): a contract signed
/// elsewhere, kept with the others: the body of a create without recipients or a
/// template, a file required, and `sign_date` (default: now). Its files are imported
/// like a draft's; then it is `archived`, and stays so.
pub fn archive(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let pr = auth::authenticate(cx, req)?;
    create_as(cx, &pr, req, true)
}

/// Parses the request into a [`NewDocument`], creates it (`creation::create`), and
/// answers what it left.
fn create_as(cx: &mut Cx, pr: &Principal, req: &Request, archive: bool) -> ApiResult<Response> {
    let f = req.body_fields()?;
    let reminders = match f.map.get("reminder_schedule") {
        Some(v) => Some(reminder_schedules::parse(v, "reminder_schedule")?),
        None => None,
    };
    let new = parse_new(cx, pr, &f, archive)?;
    if let Some(s) = reminders {
        reminder_schedules::set_doc(cx, &new.doc.id, s);
    }
    let actor = trail::Actor::user(pr, req.client());
    Ok(match creation::create(cx, new, &actor)? {
        Created::PageLess(err, id) => with_document(err, &id),
        Created::Importing(id) => json(200, &json!({"id": id, "status": "importing"})),
        Created::Draft(doc) => {
            let o = DetailOptions {
                with_links: true,
                ..shapes::DetailOptions::default()
            };
            json(200, &detail_json(cx, &doc, o))
        }
    })
}

/// What a create's body asks for (every 400, and the 404s of unknown files, templates,
/// folders and videos, before anything is written).
pub(crate) fn parse_new(
    cx: &mut Cx,
    pr: &Principal,
    f: &Fields,
    archive: bool,
) -> ApiResult<NewDocument> {
    if archive {
        for name in ["recipients", "template_id"] {
            if f.has(name) {
                return Err(http::ApiError::bad_request(
                    "invalid_field",
                    format!("an archived contract has no `{name}`: it was signed elsewhere"),
                ));
            }
        }
    }
    let template = match f.optional_str("template_id")?.filter(|s| !s.is_empty()) {
        Some(id) => Some(templates::find(cx, pr, &id)?),
        None => None,
    };
    let recipients = parse_recipients(cx, f, template.as_ref())?;
    let mut checks = Vec::new();
    for ((path, o), r) in f.objects("recipients")?.into_iter().zip(&recipients) {
        if let Some(c) = identity::parse(cx, o, &path)? {
            checks.push((r.id.clone(), c));
        }
    }
    let given_fields = parse_custom_fields(f, template.as_ref())?;
    let ext = parse_ext(cx, pr, f)?;
    // A video of the library (`POST /v1/upload/video`), shown on the signing page.
    let video_id = f.optional_str("video_id")?.filter(|v| !v.is_empty());
    if let Some(v) = &video_id {
        videos::find(cx, &pr.entity.id, v)?;
    }
    let mut used = Vec::new();
    let attachments = parse_attachments(cx, pr, f, &mut used)?;
    let flags = parse_flags(f, &recipients, video_id.is_some(), archive)?;
    let now = cx.now();
    let dates = parse_dates(f, flags.is_scheduled_sending, now)?;
    let mut sources = parse_sources(cx, pr, f)?;
    let sign_ms = if archive {
        Some(archive_sign_ms(f, &sources, now)?)
    } else {
        None
    };
    used.append(&mut sources.used);
    let tags_raw = tags_text(f)?.unwrap_or_default();
    let name = doc_name(f, template.as_ref(), &sources)?;
    let id = new_id(cx);
    let mut doc = parse_texts(f, template.as_ref())?;
    doc.id = id;
    set_owner(&mut doc, pr);
    doc.name = name;
    doc.tags = normalize_tags(&tags_raw);
    doc.tags_raw = tags_raw;
    doc.flags = flags;
    doc.sign_ms = sign_ms;
    (doc.created_ms, doc.updated_ms) = (now, now);
    doc.video_id = video_id;
    doc.ext = ext;
    doc.custom_fields.clone_from(&given_fields);
    doc.template_id = template.as_ref().map(|t| t.id.clone());
    dates.set(&mut doc);
    Ok(NewDocument {
        doc,
        template,
        recipients,
        attachments,
        given_fields,
        checks,
        sources,
        used,
        archive,
    })
}

/// The caller owns the new document and is its sender.
fn set_owner(doc: &mut Document, pr: &Principal) {
    doc.entity_id.clone_from(&pr.entity.id);
    doc.user_id.clone_from(&pr.user.id);
    doc.sender = Sender {
        user_id: pr.user.id.clone(),
        name: user_name(&pr.user),
        email: pr.user.email.clone(),
        ..document::Sender::default()
    };
}

/// The dates and value of a create's body.
struct Dates {
    value: f64,
    expiration_days: u32,
    expiration_ms: u64,
    scheduled: Option<u64>,
    contract_start: Option<u64>,
    contract_end: Option<u64>,
}

impl Dates {
    fn set(self, doc: &mut Document) {
        doc.value = self.value;
        doc.expiration_days = self.expiration_days;
        doc.expiration_ms = self.expiration_ms;
        doc.scheduled_sending_ms = self.scheduled;
        doc.contract_start_ms = self.contract_start;
        doc.contract_end_ms = self.contract_end;
    }
}

/// `value`, `expiration_days` (from 1 to 3650), `expiration_date` (in the future; else
/// the days from now), `scheduled_sending_time` (needed by `is_scheduled_sending`), and
/// the contract's dates.
fn parse_dates(f: &Fields, scheduled_sending: bool, now: u64) -> ApiResult<Dates> {
    let value = f.optional_number("value")?.unwrap_or(0.0);
    let expiration_days = match f.optional_number("expiration_days")? {
        None => DEFAULT_EXPIRATION_DAYS,
        Some(d) if (1.0..=3650.0).contains(&d) => d as u32,
        Some(_) => {
            return Err(http::ApiError::bad_request(
                "invalid_field",
                "the field `expiration_days` must be from 1 to 3650",
            ));
        }
    };
    let expiration_ms = match parse_time_field(f, "expiration_date")? {
        Some(t) if t <= now => {
            return Err(http::ApiError::bad_request(
                "invalid_field",
                "the field `expiration_date` must be in the future",
            ));
        }
        Some(t) => t,
        None => now + u64::from(expiration_days) * DAY_MS,
    };
    let scheduled = parse_time_field(f, "scheduled_sending_time")?;
    if scheduled_sending && scheduled.is_none() {
        return Err(http::ApiError::bad_request(
            "missing_field",
            "is_scheduled_sending needs `scheduled_sending_time`",
        ));
    }
    Ok(Dates {
        value,
        expiration_days,
        expiration_ms,
        scheduled,
        contract_start: parse_time_field(f, "contract_start_date")?,
        contract_end: parse_time_field(f, "contract_end_date")?,
    })
}

/// An archived contract's signing time (`sign_date`, not in the future; default now),
/// once its file is known: 404 for an unknown upload, 400 for none.
fn archive_sign_ms(f: &Fields, sources: &Sources, now: u64) -> ApiResult<u64> {
    if let Some(missing) = &sources.missing {
        return Err(http::ApiError::not_found(
            "file_not_found",
            format!("the upload {missing} in file_ids is unknown or has expired"),
        ));
    }
    if sources.sources.is_empty() {
        return Err(http::ApiError::bad_request(
            "missing_file",
            "an archived contract needs its file: `file`, `file_content`, `file_url` or `file_ids`",
        ));
    }
    match parse_time_field(f, "sign_date")? {
        Some(t) if t > now => Err(http::ApiError::bad_request(
            "invalid_field",
            "the field `sign_date` must not be in the future",
        )),
        Some(t) => Ok(t),
        None => Ok(now),
    }
}

/// `name`, else the template's, else the first file's, else "Untitled document".
fn doc_name(f: &Fields, template: Option<&Template>, sources: &Sources) -> ApiResult<String> {
    if let Some(name) = f.optional_str("name")? {
        drawable("name", &name)?;
    }
    Ok(f.optional_str("name")?
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .or_else(|| template.map(|t| t.name.clone()))
        .or_else(|| sources.sources.first().map(|s| s.name.clone()))
        .unwrap_or_else(|| "Untitled document".into()))
}

/// The texts of a create's body kept as given, its pricing tables (the template's
/// when not given) and its language, on an empty document.
fn parse_texts(f: &Fields, template: Option<&Template>) -> ApiResult<Document> {
    let s = |k: &str| -> ApiResult<String> { Ok(f.optional_str(k)?.unwrap_or_default()) };
    Ok(Document {
        external_id: s("external_id")?,
        external_client_id: s("external_client_id")?,
        doc_type: s("type")?,
        company_name: s("company_name")?,
        company_id: s("company_id")?,
        company_logo_url: s("company_logo_url")?,
        company_number: s("company_number")?,
        auto_comment_text: s("auto_comment_text")?,
        auto_comment_email: s("auto_comment_email")?,
        email_send_template_id: s("email_send_template_id")?,
        email_send_subject: s("email_send_subject")?,
        email_send_message: s("email_send_message")?,
        parent_id: s("parent_id")?,
        external_editor_type: s("external_editor_type")?,
        external_editor_id: s("external_editor_id")?,
        block_recipient_invite: f.optional_bool("block_recipient_invite")?.unwrap_or(false),
        comment_settings: s("comment_settings")?,
        sign_redirect: input::sign_redirect(f)?.unwrap_or_default(),
        pricing_tables: match f.optional_json("pricing_tables")? {
            Some(v) => pricing::parse_tables(v)?,
            None => template
                .map(|t| t.ext.pricing_tables.clone())
                .unwrap_or_default(),
        },
        ext2: DocExt2 {
            language: input::language(f)?.unwrap_or_else(|| "en".into()),
        },
        ..Document::default()
    })
}
