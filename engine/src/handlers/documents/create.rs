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

use crate::base::api::{JobSpec, Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult, Fields, json, member_text};
use crate::base::job_kinds;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, is_email, is_mobile, new_id, parse_time};
use crate::base::work::{self, ImportSource};
use crate::domain::accounts::user_name;
use crate::domain::attachments as library;
use crate::domain::auth::{self, Principal};
use crate::domain::document::{
    self, Attachment, CustomField, DocExt, DocExt2, DocFile, Document, Flags, PendingSource,
    Recipient, Sender, normalize_tags, store_doc,
};
use crate::domain::events::emit_and_log;
use crate::domain::templates::{self, Template};
use crate::domain::uploads::{self, Upload};
use crate::domain::{
    blobs, fields, folders, identity, mail_templates, previews, pricing, sending, trail, videos,
};
use crate::handlers::documents::input::{self, tags_text};
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

#[expect(
    clippy::too_many_lines,
    reason = "older than the 70-line rule (issue 49)"
)]
pub fn parse_recipient(
    cx: &mut Cx,
    o: &Map<String, Value>,
    path: &str,
    index: usize,
    template: Option<&Template>,
) -> ApiResult<Recipient> {
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
    let (mut first, mut last) = (member_text(o, "first_name"), member_text(o, "last_name"));
    if first.is_empty() && last.is_empty() {
        let full = member_text(o, "fullname");
        match full.split_once(' ') {
            Some((a, b)) => (first, last) = (a.to_string(), b.trim().to_string()),
            None => first = full,
        }
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
        id: new_id(cx),
        first_name: first,
        last_name: last,
        email,
        mobile,
        phone: member_text(o, "phone"),
        role,
        role_name,
        status: document::RecipientStatus::Added,
        company_name: member_text(o, "company_name"),
        company_number: member_text(o, "company_number"),
        title: member_text(o, "title"),
        note: member_text(o, "note"),
        order_num,
        contact_id: member_text(o, "contact_id"),
        secret: None,
        sent_ms: None,
        signed_ms: None,
        signing_method: None,
        ip_address: String::new(),
        viewed_ms: None,
    })
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

/// The files the request names, as sources to import, and the first `file_ids` entry
/// that is an unknown upload or an expired Word upload (404, page-less draft).
struct Sources {
    /// In order; the inline file's entry has neither `blob` nor `url` until stored.
    sources: Vec<PendingSource>,
    /// The bytes of a file sent inline (multipart `file` or `file_content`).
    inline: Option<Vec<u8>>,
    missing: Option<String>,
    /// Uploads used, to be marked as such once the request succeeds.
    used: Vec<Upload>,
}

/// Stores the inline file (503 when blob storage is down), fills in its source, and
/// holds it for the document (`owner`) in the same transaction: until the import is
/// recorded nothing else refers to it, and the store check must not take it for unused.
/// The import releases it when it does not keep it.
fn store_inline(
    cx: &mut Cx,
    inline: Option<Vec<u8>>,
    import: &mut [PendingSource],
    owner: &str,
) -> ApiResult<()> {
    if let Some(bytes) = inline {
        let info = uploads::put_blob(cx, &bytes)?;
        blobs::hold(cx, &info.id, owner);
        if let Some(s) = import
            .iter_mut()
            .find(|s| s.blob.is_none() && s.url.is_none())
        {
            s.blob = Some(info.id);
        }
    }
    Ok(())
}

#[expect(
    clippy::too_many_lines,
    reason = "older than the 70-line rule (issue 49)"
)]
fn parse_sources(cx: &mut Cx, pr: &Principal, f: &Fields) -> ApiResult<Sources> {
    let mut out = Sources {
        sources: Vec::new(),
        inline: None,
        missing: None,
        used: Vec::new(),
    };
    let ids = f.optional_str("file_ids")?.unwrap_or_default();
    for id in ids.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match uploads::find(cx, pr, id) {
            None => {
                out.missing.get_or_insert_with(|| id.to_string());
            }
            Some(u)
                if u.status == uploads::UploadStatus::Expired
                    && u.kind == uploads::FileKind::Word =>
            {
                out.missing.get_or_insert_with(|| id.to_string());
            }
            Some(u) if u.status == uploads::UploadStatus::Pending => {
                return Err(http::ApiError::bad_request(
                    "file_not_ready",
                    format!(
                        "the upload {id} is still being downloaded; wait until its file_status is ready"
                    ),
                ));
            }
            Some(u) if u.status == uploads::UploadStatus::Failed => {
                return Err(http::ApiError::bad_request(
                    "file_failed",
                    format!(
                        "the upload {id} failed: {}",
                        u.failure.as_deref().unwrap_or("unknown reason")
                    ),
                ));
            }
            Some(u) => {
                out.sources.push(PendingSource {
                    // An expired upload keeps its (released) blob id, so that the import
                    // fails with "the file is no longer stored".
                    blob: Some(
                        u.blob
                            .clone()
                            .unwrap_or_else(|| format!("expired-{}", u.id)),
                    ),
                    url: None,
                    name: u.name.clone(),
                    fill: Vec::new(),
                    upload_id: Some(u.id.clone()),
                });
                out.used.push(u);
            }
        }
    }
    if let Some(file) = uploads::given_file(f)? {
        // Stored only once the request is known to succeed (see `store_inline`).
        out.inline = Some(file.bytes);
        out.sources.push(PendingSource {
            blob: None,
            url: None,
            name: if file.name.is_empty() {
                "document.pdf".into()
            } else {
                file.name
            },
            fill: Vec::new(),
            upload_id: None,
        });
    }
    if let Some(url) = f.optional_str("file_url")?.filter(|u| !u.is_empty()) {
        uploads::check_url("file_url", &url)?;
        let name = url
            .rsplit('/')
            .next()
            .and_then(|n| n.split('?').next())
            .filter(|n| !n.is_empty())
            .unwrap_or("document.pdf")
            .to_string();
        out.sources.push(PendingSource {
            blob: None,
            url: Some(url),
            name,
            fill: Vec::new(),
            upload_id: None,
        });
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

fn parse_flags(f: &Fields, recipients: &[Recipient]) -> ApiResult<Flags> {
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
            if field == "attachments" && file_id.is_empty() && !library_id.is_empty() {
                // GetAccept's `{id}`: an attachment of the library.
                let a = library::find(cx, &pr.entity.id, &library_id)?;
                let restricted = member_text(o, "restricted_to");
                out.push(Attachment {
                    id: String::new(),
                    name: a.title,
                    blob: a.blob,
                    size: a.size,
                    restricted_to: Some(util::normalize_email(&restricted))
                        .filter(|r| !r.is_empty()),
                });
                continue;
            }
            let up = uploads::find(cx, pr, &file_id)
                .filter(|u| u.status == uploads::UploadStatus::Ready)
                .ok_or_else(|| {
                    http::ApiError::not_found(
                        "file_not_found",
                        format!("`{path}.file_id`: no usable upload {file_id:?}"),
                    )
                })?;
            if field == "custom_images" && up.kind != uploads::FileKind::Image {
                return Err(http::ApiError::bad_request(
                    "invalid_field",
                    format!("`{path}.file_id` is not an image (PNG, JPEG or GIF)"),
                ));
            }
            let restricted = member_text(o, "restricted_to");
            out.push(Attachment {
                id: String::new(),
                name: Some(member_text(o, "name"))
                    .filter(|n| !n.is_empty())
                    .unwrap_or(up.name.clone()),
                blob: up.blob.clone().unwrap_or_default(),
                size: up.size,
                restricted_to: Some(util::normalize_email(&restricted)).filter(|r| !r.is_empty()),
            });
            used.push(up);
        }
    }
    Ok(out)
}

/// A new document's `unique_id`: 53 random bits (a JSON number every client reads
/// exactly), unique by chance as document ids are (80 bits), without a lookup. The
/// lookup it replaced (`duid/{n}` must be absent) made concurrent creates conflict on
/// PostgreSQL, which locks the index page a read finds empty, where the others were
/// inserting their own numbers; two documents in a million share a number with odds
/// of about 1 in 18 000. `duid/` keys of older documents are deleted with them.
fn new_unique_id(cx: &mut Cx) -> u64 {
    let mut b = [0u8; 8];
    cx.p.fill_random(&mut b[..7]);
    (u64::from_le_bytes(b) & ((1 << 53) - 1)).max(1)
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

#[expect(
    clippy::too_many_lines,
    reason = "older than the 70-line rule (issue 49)"
)]
fn create_as(cx: &mut Cx, pr: &Principal, req: &Request, archive: bool) -> ApiResult<Response> {
    let f = req.body_fields()?;
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
    let mut recipients = parse_recipients(cx, &f, template.as_ref())?;
    let mut checks = Vec::new();
    for ((path, o), r) in f.objects("recipients")?.into_iter().zip(&recipients) {
        if let Some(c) = identity::parse(cx, o, &path)? {
            checks.push((r.id.clone(), c));
        }
    }
    let given_fields = parse_custom_fields(&f, template.as_ref())?;
    let ext = parse_ext(cx, pr, &f)?;
    // A video of the library (`POST /v1/upload/video`), shown on the signing page.
    let video_id = f.optional_str("video_id")?.filter(|v| !v.is_empty());
    if let Some(v) = &video_id {
        videos::find(cx, &pr.entity.id, v)?;
    }
    let mut used = Vec::new();
    let mut attachments = parse_attachments(cx, pr, &f, &mut used)?;
    let mut flags = parse_flags(&f, &recipients)?;
    if video_id.is_some() && !f.has("is_video") {
        flags.is_video = true;
    }
    if archive {
        // Nothing is sent, scheduled or reminded for a contract signed elsewhere.
        flags.is_automatic_sending = false;
        flags.is_scheduled_sending = false;
        flags.is_reminder_sending = false;
    }
    let value = f.optional_number("value")?.unwrap_or(0.0);
    let now = cx.now();
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
    let expiration_ms = match parse_time_field(&f, "expiration_date")? {
        Some(t) if t <= now => {
            return Err(http::ApiError::bad_request(
                "invalid_field",
                "the field `expiration_date` must be in the future",
            ));
        }
        Some(t) => t,
        None => now + u64::from(expiration_days) * DAY_MS,
    };
    let scheduled = parse_time_field(&f, "scheduled_sending_time")?;
    if flags.is_scheduled_sending && scheduled.is_none() {
        return Err(http::ApiError::bad_request(
            "missing_field",
            "is_scheduled_sending needs `scheduled_sending_time`",
        ));
    }
    let contract_start = parse_time_field(&f, "contract_start_date")?;
    let contract_end = parse_time_field(&f, "contract_end_date")?;
    let mut sources = parse_sources(cx, pr, &f)?;
    let sign_ms = if archive {
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
        match parse_time_field(&f, "sign_date")? {
            Some(t) if t > now => {
                return Err(http::ApiError::bad_request(
                    "invalid_field",
                    "the field `sign_date` must not be in the future",
                ));
            }
            Some(t) => Some(t),
            None => Some(now),
        }
    } else {
        None
    };
    used.append(&mut sources.used);
    let tags_raw = tags_text(&f)?.unwrap_or_default();
    let name = f
        .optional_str("name")?
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .or_else(|| template.as_ref().map(|t| t.name.clone()))
        .or_else(|| sources.sources.first().map(|s| s.name.clone()))
        .unwrap_or_else(|| "Untitled document".into());
    let s = |k: &str| -> ApiResult<String> { Ok(f.optional_str(k)?.unwrap_or_default()) };

    let id = new_id(cx);
    let mut doc = Document {
        id: id.clone(),
        entity_id: pr.entity.id.clone(),
        user_id: pr.user.id.clone(),
        name,
        external_id: s("external_id")?,
        external_client_id: s("external_client_id")?,
        value,
        doc_type: s("type")?,
        tags: normalize_tags(&tags_raw),
        tags_raw,
        company_name: s("company_name")?,
        company_id: s("company_id")?,
        company_logo_url: s("company_logo_url")?,
        company_number: s("company_number")?,
        flags,
        scheduled_sending_ms: scheduled,
        auto_comment_text: s("auto_comment_text")?,
        auto_comment_email: s("auto_comment_email")?,
        status: document::Status::Draft,
        status_before_expiry: None,
        rejection_reason: None,
        send_ms: None,
        sign_ms,
        created_ms: now,
        updated_ms: now,
        expiration_ms,
        contract_start_ms: contract_start,
        contract_end_ms: contract_end,
        sender: Sender {
            user_id: pr.user.id.clone(),
            name: user_name(&pr.user),
            email: pr.user.email.clone(),
            ..document::Sender::default()
        },
        email_send_template_id: s("email_send_template_id")?,
        email_send_subject: s("email_send_subject")?,
        email_send_message: s("email_send_message")?,
        video_id: video_id.clone(),
        unique_id: 0,
        parent_id: s("parent_id")?,
        external_editor_type: s("external_editor_type")?,
        external_editor_id: s("external_editor_id")?,
        expiration_days,
        block_recipient_invite: f.optional_bool("block_recipient_invite")?.unwrap_or(false),
        comment_settings: s("comment_settings")?,
        sign_redirect: input::sign_redirect(&f)?.unwrap_or_default(),
        sign_copy_emails: Vec::new(),
        recipients: Vec::new(),
        files: Vec::new(),
        sources: Vec::new(),
        import_error: None,
        attachments: Vec::new(),
        custom_fields: given_fields.clone(),
        template_id: template.as_ref().map(|t| t.id.clone()),
        pricing_tables: match f.optional_json("pricing_tables")? {
            Some(v) => pricing::parse_tables(v)?,
            None => template
                .as_ref()
                .map(|t| t.ext.pricing_tables.clone())
                .unwrap_or_default(),
        },
        pending: None,
        render_seq: 0,
        final_pdf: None,
        revisions: Vec::new(),
        reminders_sent: 0,
        views: 0,
        log_seq: 0,
        ext,
        ext2: DocExt2 {
            language: input::language(&f)?.unwrap_or_else(|| "en".into()),
        },
    };
    // Every 400 is behind us: from here on the document exists, whatever the answer.
    doc.unique_id = new_unique_id(cx);
    for (rid, c) in &checks {
        identity::save(cx, &id, rid, c);
    }
    for mut u in used {
        uploads::touch(cx, &mut u);
    }
    let actor = trail::Actor::user(pr, Some(req));
    let owner = format!("doc:{id}");

    let created = |cx: &mut Cx, doc: &mut Document, detail: &str| {
        for a in doc.attachments.iter_mut() {
            if a.id.is_empty() {
                a.id = new_id(cx);
            }
            blobs::hold(cx, &a.blob, &format!("doc:{}", doc.id));
        }
        emit_and_log(
            cx,
            doc,
            &actor,
            "document.created",
            "created",
            detail,
            json!({}),
        );
        store_doc(cx, None, doc);
    };
    if let Some(missing) = sources.missing {
        doc.recipients = recipients;
        doc.attachments = attachments;
        doc.import_error = Some(format!("the upload {missing} is unknown or has expired"));
        created(
            cx,
            &mut doc,
            "created without pages: an upload in file_ids was not found",
        );
        return Ok(with_document(
            http::ApiError::not_found(
                "file_not_found",
                format!(
                    "the upload {missing} in file_ids is unknown or has expired; the document {id} was left as a draft without pages"
                ),
            ),
            &id,
        ));
    }
    let mut import: Vec<PendingSource> = sources.sources;
    if let Some(t) = &template {
        let applied = apply_template(t, &mut recipients, &mut attachments, &given_fields);
        match applied {
            Err(e) => {
                doc.recipients = recipients;
                doc.attachments = attachments;
                doc.import_error = Some(e.description.clone());
                created(
                    cx,
                    &mut doc,
                    "created without pages: the template could not be applied",
                );
                return Ok(with_document(e, &id));
            }
            Ok(fields) => {
                doc.custom_fields = fields;
                let placed = templates::fields_for(cx, t, &recipients);
                fields::save(cx, &id, &placed);
                let fill: Vec<(String, String)> = doc
                    .custom_fields
                    .iter()
                    .map(|c| (c.name.clone(), c.value.clone()))
                    .collect();
                if t.is_word && !given_fields.is_empty() {
                    import.insert(
                        0,
                        PendingSource {
                            blob: Some(t.source_blob.clone()),
                            url: None,
                            name: t.source_name.clone(),
                            fill,
                            upload_id: None,
                        },
                    );
                } else if let Some(file) = &t.file {
                    blobs::hold(cx, &file.blob, &owner);
                    doc.files.push(DocFile {
                        id: new_id(cx),
                        ..file.clone()
                    });
                    previews::request(cx, &owner, &doc.entity_id, vec![file.blob.clone()]);
                }
            }
        }
    }
    doc.recipients = recipients;
    doc.attachments = attachments;
    // Only a create that goes on to import stores the inline file (a page-less draft
    // left by a 404 or 422 has no use for it).
    store_inline(cx, sources.inline, &mut import, &owner)?;
    if !import.is_empty() {
        doc.status = document::Status::Importing;
        let order = import
            .iter()
            .map(|s| ImportSource {
                blob: s.blob.clone(),
                url: s.url.clone(),
                name: s.name.clone(),
                fill: s.fill.clone(),
            })
            .collect();
        doc.sources = import;
        cx.p.schedule_job(JobSpec {
            kind: if archive {
                job_kinds::DOC_IMPORT_ARCHIVE
            } else {
                job_kinds::DOC_IMPORT
            }
            .into(),
            payload: id.clone().into_bytes(),
            run_at_ms: now,
            work: Some(work::WorkOrder::Import(order)),
            scope: doc.entity_id.clone(),
        });
        let detail = if archive {
            "created for the archive; importing files"
        } else {
            "created; importing files"
        };
        created(cx, &mut doc, detail);
        return Ok(json(200, &json!({"id": id, "status": "importing"})));
    }
    created(cx, &mut doc, "created");
    if doc.flags.is_automatic_sending {
        let before = doc.clone();
        let sender = doc.sender.clone();
        if sending::start_send(cx, &mut doc, &actor, sender).is_ok() {
            store_doc(cx, Some(&before), &mut doc);
        }
    }
    let o = DetailOptions {
        with_links: true,
        ..shapes::DetailOptions::default()
    };
    Ok(json(200, &detail_json(cx, &doc, o)))
}

/// Applies a ready template to the request's recipients and attachments; the custom
/// fields of the document, or a 422.
fn apply_template(
    t: &Template,
    recipients: &mut [Recipient],
    attachments: &mut Vec<Attachment>,
    given: &[CustomField],
) -> ApiResult<Vec<CustomField>> {
    if t.status != templates::TemplateStatus::Ready {
        return Err(http::ApiError::new(
            422,
            "template_not_applicable",
            format!(
                "the template {:?} is not ready ({})",
                t.name,
                t.failure.as_deref().unwrap_or("still importing")
            ),
        ));
    }
    for a in &t.attachments {
        let restricted_to = match &a.role_name {
            None => None,
            Some(role) => {
                let r = recipients.iter().find(|r| &r.role_name == role).ok_or_else(|| {
                    http::ApiError::new(
                        422,
                        "template_not_applicable",
                        format!(
                            "the template's attachment {:?} is restricted to the role {role:?}, which has no recipient",
                            a.name
                        ),
                    )
                })?;
                Some(util::normalize_email(&r.email))
            }
        };
        attachments.push(Attachment {
            id: String::new(),
            name: a.name.clone(),
            blob: a.blob.clone(),
            size: a.size,
            restricted_to,
        });
    }
    templates::apply_fields(t, given)
}
