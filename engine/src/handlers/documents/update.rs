//! Changing a document's properties: `PUT /v1/documents/{id}` (what its status
//! allows), a new expiration date, and its pricing tables.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{ApiError, ApiResult, Fields, json, no_content};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{is_email, parse_time};
use crate::domain::access::writable;
use crate::domain::auth::Principal;
use crate::domain::document::{self, Document, store_doc};
use crate::domain::document_states::{self as states, Move, may};
use crate::domain::reminder_schedules;
use crate::domain::rendering::request_render;
use crate::domain::sending::change_expiration;
use crate::domain::trail::{self, log};
use crate::domain::{blobs, folders, pricing, uploads};
use crate::handlers::documents::input;
use crate::handlers::inputs;
use serde_json::{Value, json};

/// `POST /v1/documents/{id}/expiration` (body `expiration_date`, `send_notification`).
pub fn expiration(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    let f = req.body_fields()?;
    let text = f.required_str("expiration_date")?;
    let at = parse_time(&text).ok_or_else(|| {
        bad(
            "invalid_field",
            "`expiration_date` must be an ISO 8601 timestamp, e.g. 2026-12-24T12:00:00Z",
        )
    })?;
    let now = cx.now();
    if at <= now {
        return Err(bad(
            "invalid_field",
            "`expiration_date` must be in the future",
        ));
    }
    may(&doc, Move::ChangeExpiration)?;
    let notify_them = f.optional_bool("send_notification")?.unwrap_or(false);
    let before = doc.clone();
    let actor = trail::Actor::user(pr, req.client());
    change_expiration(cx, &mut doc, &actor, at, notify_them);
    store_doc(cx, Some(&before), &mut doc);
    Ok(json(200, &json!({ "status": 1 })))
}

fn opt_time(f: &Fields, name: &str) -> ApiResult<Option<Option<u64>>> {
    if !f.map.contains_key(name) {
        return Ok(None);
    }
    match f.optional_str(name)?.filter(|s| !s.is_empty()) {
        None => Ok(Some(None)),
        Some(t) => parse_time(&t).map(|v| Some(Some(v))).ok_or_else(|| {
            bad(
                "invalid_field",
                format!("`{name}` must be an ISO 8601 timestamp"),
            )
        }),
    }
}

/// `PUT /v1/documents/{id}`: the properties allowed for the status; 400 for any other.
pub fn update(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    let f = req.body_fields()?;
    check_keys(&doc, &f)?;
    let before = doc.clone();
    set_properties(&f, &mut doc)?;
    if f.has("sign_copy_emails") {
        doc.sign_copy_emails = sign_copy_emails(&f)?;
    }
    if let Some(v) = opt_time(&f, "contract_start_date")? {
        doc.contract_start_ms = v;
    }
    if let Some(v) = opt_time(&f, "contract_end_date")? {
        doc.contract_end_ms = v;
    }
    if let Some(v) = input::tags_text(&f)? {
        doc.tags = document::normalize_tags(&v);
        doc.tags_raw = v;
    }
    if let Some(code) = input::language(&f)? {
        doc.ext2.language = code;
    }
    if f.map.contains_key("folder_id") {
        let given = f.optional_str("folder_id")?.unwrap_or_default();
        doc.ext.folder_id =
            folders::check_target(cx, &pr.entity.id, &given, folders::Kind::Archive)?;
    }
    if let Some(v) = f.map.get("reminder_schedule") {
        let s = reminder_schedules::parse(v, "reminder_schedule")?;
        reminder_schedules::set_doc(cx, &doc.id, s);
    }
    let changed: Vec<&str> = f.map.keys().map(String::as_str).collect();
    log(
        cx,
        &mut doc,
        &trail::Actor::user(pr, req.client()),
        "updated",
        changed.join(", "),
        None,
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(no_content())
}

/// The members a `PUT` may name: a draft's ([`Move::EditDraft`]), or once sent the
/// ones that may still change; 400 `property_not_allowed` for any other.
fn check_keys(doc: &Document, f: &Fields) -> ApiResult<()> {
    const DRAFT: &[&str] = &[
        "external_id",
        "external_client_id",
        "is_private",
        "value",
        "comment_settings",
        "sign_redirect",
        "block_recipient_invite",
        "sign_copy_emails",
        "folder_id",
        "language",
        "reminder_schedule",
    ];
    const LATER: &[&str] = &[
        "value",
        "contract_start_date",
        "contract_end_date",
        "tags",
        "is_private",
        "comment_settings",
        "sign_redirect",
        "block_recipient_invite",
        "sign_copy_emails",
        "folder_id",
        "language",
        "reminder_schedule",
    ];
    let draft = states::allowed(doc, Move::EditDraft);
    let allowed = if draft { DRAFT } else { LATER };
    if let Some(k) = f.map.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(bad(
            "property_not_allowed",
            format!(
                "`{k}` cannot be updated while the document is {}; allowed: {}",
                doc.status.as_str(),
                allowed.join(", ")
            ),
        ));
    }
    Ok(())
}

/// The plain members of a `PUT`: ids, privacy, value, comment settings, redirect,
/// `block_recipient_invite`.
fn set_properties(f: &Fields, doc: &mut Document) -> ApiResult<()> {
    if let Some(v) = f.optional_str("external_id")? {
        doc.external_id = v;
    }
    if let Some(v) = f.optional_str("external_client_id")? {
        doc.external_client_id = v;
    }
    if let Some(v) = f.optional_bool("is_private")? {
        doc.flags.is_private = v;
    }
    if let Some(v) = f.optional_number("value")? {
        doc.value = v;
    }
    match f.map.get("comment_settings") {
        None => {}
        Some(Value::String(s)) => doc.comment_settings = s.clone(),
        Some(Value::Null) => doc.comment_settings.clear(),
        Some(v) => doc.comment_settings = v.to_string(),
    }
    if let Some(v) = input::sign_redirect(f)? {
        doc.sign_redirect = v;
    }
    if let Some(v) = f.optional_bool("block_recipient_invite")? {
        doc.block_recipient_invite = v;
    }
    Ok(())
}

/// `sign_copy_emails`: a list (or a comma-separated text) of email addresses.
fn sign_copy_emails(f: &Fields) -> ApiResult<Vec<String>> {
    let emails: Vec<String> = match &f.map["sign_copy_emails"] {
        Value::Array(a) => a
            .iter()
            .map(|v| v.as_str().unwrap_or("").trim().to_string())
            .collect(),
        Value::String(s) => s
            .split(',')
            .map(|x| x.trim().to_string())
            .filter(|x| !x.is_empty())
            .collect(),
        _ => {
            return Err(bad(
                "invalid_field",
                "`sign_copy_emails` must be a list of emails",
            ));
        }
    };
    if let Some(e) = emails.iter().find(|e| !is_email(e)) {
        return Err(bad(
            "invalid_field",
            format!("`sign_copy_emails`: {e:?} is not an email address"),
        ));
    }
    Ok(emails)
}

/// `PUT /v1/documents/{id}/pricing-tables`: replaces the tables; a sealed or sent
/// document is rendered again so its PDF shows them.
pub fn put_pricing_tables(
    cx: &mut Cx,
    pr: &Principal,
    req: &Request,
    id: &str,
) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    let f = req.body_fields()?;
    let raw = f
        .optional_json("pricing_tables")?
        .ok_or_else(|| bad("missing_field", "the field `pricing_tables` is required"))?;
    let tables = pricing::parse_tables(raw)?;
    may(&doc, Move::ChangePricing)?;
    let before = doc.clone();
    doc.pricing_tables = tables;
    let actor = trail::Actor::user(pr, req.client());
    match doc.pending.clone() {
        // A render is under way: render again with the new tables, for the same purpose.
        Some(p) => request_render(cx, &mut doc, p.purpose, p.message),
        None if doc.final_pdf.is_some() => request_render(
            cx,
            &mut doc,
            document::RenderPurpose::Refresh,
            String::new(),
        ),
        None => {}
    }
    let detail = format!("{} table(s)", doc.pricing_tables.len());
    log(cx, &mut doc, &actor, "pricing_updated", detail, None);
    store_doc(cx, Some(&before), &mut doc);
    // 204, as GetAccept answers it; `GET .../pricing-tables` reads them with totals.
    Ok(no_content())
}

fn bad(code: &'static str, text: impl Into<String>) -> ApiError {
    ApiError::bad_request(code, text)
}

/// `POST /v1/documents/{id}/attachments/{attachment}/upload` (GetAccept's): replaces
/// the file of one of a draft's attachments (multipart `file`, base64 `file_content` +
/// `file_name`, or an upload's `file_id`) → 204. Once sealed or sent, what recipients
/// were given stays (409 `invalid_status`).
pub fn upload_attachment(
    cx: &mut Cx,
    pr: &Principal,
    req: &Request,
    id: &str,
    attachment_id: &str,
) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    let f = req.body_fields()?;
    f.only(&["file", "file_content", "file_name", "file_id"])?;
    let index = doc
        .attachments
        .iter()
        .position(|a| a.id == attachment_id)
        .ok_or_else(|| {
            ApiError::not_found(
                "attachment_not_found",
                format!("the document {id} has no attachment {attachment_id}"),
            )
        })?;
    may(&doc, Move::EditDraft)?;
    let (name, bytes) = uploads::library_file(cx, pr, inputs::file_source(&f)?)?;
    let info = uploads::put_blob(cx, &bytes)?;
    let owner = blobs::owner_of(&doc.id);
    blobs::hold(cx, &info.id, &owner);
    let before = doc.clone();
    let old_blob = core::mem::replace(&mut doc.attachments[index].blob, info.id);
    doc.attachments[index].size = info.size;
    if !name.is_empty() && name != "file" {
        doc.attachments[index].name = name.clone();
    }
    let still_used = doc.attachments.iter().any(|a| a.blob == old_blob)
        || doc.files.iter().any(|file| file.blob == old_blob);
    if !still_used {
        blobs::release(cx, &old_blob, &owner);
    }
    log(
        cx,
        &mut doc,
        &trail::Actor::user(pr, req.client()),
        "attachment_replaced",
        format!("attachment {attachment_id}: {name}"),
        None,
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(no_content())
}
