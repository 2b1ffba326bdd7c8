//! Document reads: the detail form (spec §2.1), list items (§2.2), recipients (§2.3),
//! and the read endpoints.

use super::list::{self, Query};
use super::model::{Comment, Document, Recipient, comments_prefix};
use super::{access, readable};
use crate::auth::Principal;
use crate::http::{ApiError, ApiResult, json};
use crate::model::{Entity, User, decode, entity_key};
#[allow(unused_imports)]
use crate::prelude::*;
use crate::util::iso8601;
use crate::{Cx, Request, Response};
use serde_json::{Value, json};

pub fn user_name(u: &User) -> String {
    let full = format!("{} {}", u.first_name, u.last_name);
    let full = full.trim();
    if full.is_empty() {
        u.email.clone()
    } else {
        full.to_string()
    }
}

/// A query flag: any non-empty value other than `0` turns it on (even `false`).
pub fn flag(req: &Request, name: &str) -> bool {
    req.query_param(name)
        .is_some_and(|v| !v.is_empty() && v != "0")
}

fn base_url(cx: &mut Cx) -> String {
    cx.settings().base_url.trim_end_matches('/').to_string()
}

/// Whether a PDF can be downloaded now: the rendered one, or a draft's single file.
/// Nothing while a completed document is being sealed: after completion only the sealed
/// file is handed out.
pub fn current_pdf(doc: &Document) -> Option<(String, u64)> {
    if super::evidence::sealing(doc) {
        return None;
    }
    match (&doc.final_pdf, doc.files.as_slice()) {
        (Some(f), _) => Some((f.blob.clone(), f.size)),
        (None, [only]) => Some((only.blob.clone(), only.size)),
        _ => None,
    }
}

pub fn recipient_json(cx: &mut Cx, r: &Recipient, with_link: bool) -> Value {
    let mut v = json!({
        "id": r.id,
        "fullname": r.fullname(),
        "first_name": r.first_name,
        "last_name": r.last_name,
        "email": r.email,
        "mobile": r.mobile,
        "phone": r.phone,
        "role": r.role.as_str(),
        "role_name": r.role_name,
        "status": r.status.as_str(),
        "company_name": r.company_name,
        "company_number": r.company_number,
        "title": r.title,
        "note": r.note,
        "thumb_url": "",
        "order_num": r.order_num.to_string(),
        "contact_id": r.contact_id,
    });
    if with_link && let Some(secret) = &r.secret {
        v["document_url"] = super::notify::document_url(cx, secret).into();
    }
    v
}

/// Optional parts of the detail form.
#[derive(Default, Clone, Copy)]
pub struct DetailOptions {
    pub with_pages: bool,
    pub with_small_pages: bool,
    pub with_stats: bool,
    pub with_attachments: bool,
    /// The external-id form: no `rejection_reason`, `tags` as last sent.
    pub external: bool,
    /// Include recipients' personal links (callers who may change the document).
    pub with_links: bool,
}

impl DetailOptions {
    pub fn from_query(req: &Request) -> DetailOptions {
        DetailOptions {
            with_pages: flag(req, "with_pages"),
            with_small_pages: flag(req, "with_small_pages"),
            with_stats: flag(req, "with_stats"),
            with_attachments: flag(req, "with_attachments"),
            external: false,
            with_links: false,
        }
    }
}

fn pages_json(doc: &Document, small: bool) -> Value {
    let mut out = Vec::new();
    let mut n = 0;
    for f in &doc.files {
        for (i, (w, h)) in f.pages.iter().enumerate() {
            n += 1;
            let (w, h) = if small { (w / 4.0, h / 4.0) } else { (*w, *h) };
            out.push(json!({
                "page_id": format!("{}-{}", f.id, i + 1),
                "page_num": n,
                "file_id": f.id,
                "file_name": f.name,
                "file_page_num": i + 1,
                "width": w,
                "height": h,
            }));
        }
    }
    Value::Array(out)
}

/// The detail form of spec §2.1.
pub fn detail_json(cx: &mut Cx, doc: &Document, o: DetailOptions) -> Value {
    let base = base_url(cx);
    let id = &doc.id;
    let f = &doc.flags;
    let download_url = if current_pdf(doc).is_some() {
        format!("{base}/v1/documents/{id}/download")
    } else {
        String::new()
    };
    let mut recipients: Vec<Value> = doc
        .recipients
        .iter()
        .map(|r| recipient_json(cx, r, o.with_links))
        .collect();
    // How each signed (identity checks passed, signature, initials), and, for those who
    // may change the document, the identity checks set.
    let sigs = super::signatures::load_all(cx, id);
    for (v, r) in recipients.iter_mut().zip(&doc.recipients) {
        v["signing_methods"] = sigs
            .iter()
            .find(|s| s.recipient_id == r.id)
            .map(super::signatures::methods)
            .unwrap_or_default()
            .into();
        if o.with_links
            && let Some(c) = crate::recipients::verify::load(cx, id, &r.id)
            && let (Value::Object(m), Value::Object(set)) =
                (v, crate::recipients::verify::settings_json(&c))
        {
            m.extend(set);
        }
    }
    let entity = cx.load::<Entity>(&entity_key(&doc.entity_id));
    let mut v = json!({
        "id": id,
        "name": doc.name,
        "external_id": doc.external_id,
        "external_client_id": doc.external_client_id,
        "value": crate::util::money(doc.value),
        "type": doc.doc_type,
        "tags": if o.external { &doc.tags_raw } else { &doc.tags },
        "company_name": doc.company_name,
        "company_id": doc.company_id,
        "company_logo_url": doc.company_logo_url,
        "company_number": doc.company_number,
        "is_selfsign": f.is_selfsign,
        "is_signing_biometric": f.is_signing_biometric,
        "is_signing_initials": f.is_signing_initials,
        "is_private": f.is_private,
        "is_signing": f.is_signing,
        "is_signing_order": f.is_signing_order,
        "is_signing_forward": f.is_signing_forward,
        "is_identify_recipient": f.is_identify_recipient,
        "is_video": f.is_video,
        "is_scheduled_sending": f.is_scheduled_sending,
        "scheduled_sending_time": doc.scheduled_sending_ms.map(iso8601),
        "is_reminder_sending": f.is_reminder_sending,
        "is_signed": doc.status.is_signed(),
        "is_auto_comment": f.is_auto_comment,
        "is_auto_comment_email": f.is_auto_comment_email,
        "auto_comment_text": doc.auto_comment_text,
        "auto_comment_email": doc.auto_comment_email,
        "entity_auto_comment_text": "",
        "entity_auto_comment_email": "",
        "status": doc.status.as_str(),
        "send_date": doc.send_ms.map(iso8601),
        "sign_date": doc.sign_ms.map(iso8601),
        "created_at": iso8601(doc.created_ms),
        "updated_at": iso8601(doc.updated_ms),
        "expiration_date": iso8601(doc.expiration_ms),
        "contract_start_date": doc.contract_start_ms.map(iso8601),
        "contract_end_date": doc.contract_end_ms.map(iso8601),
        "user_id": doc.user_id,
        "sender_name": doc.sender.name,
        "sender_email": doc.sender.email,
        "sender_thumb_url": "",
        "email_send_template_id": doc.email_send_template_id,
        "email_send_subject": doc.email_send_subject,
        "email_send_message": doc.email_send_message,
        "video_id": doc.video_id,
        "thumb_url": format!("{base}/v1/documents/{id}/pages"),
        "preview_url": download_url.clone(),
        "app_url": format!("{base}/app/documents/{id}"),
        "download_url": download_url,
        "unique_id": doc.unique_id,
        "parent_id": doc.parent_id,
        "field_count": super::fields::load(cx, id).len(),
        "external_editor_type": doc.external_editor_type,
        "external_editor_id": doc.external_editor_id,
        "settings": {
            "expirationDays": doc.expiration_days,
            "blockRecipientInvite": doc.block_recipient_invite,
        },
        "recipients": recipients,
        "page_count": doc.page_count(),
        "entity_id": doc.entity_id,
        "entity_name": entity.map(|e| e.name).unwrap_or_default(),
        "template_id": doc.template_id,
        "import_error": doc.import_error,
        "comment_settings": doc.comment_settings,
        "sign_redirect": doc.sign_redirect,
        "sign_copy_emails": doc.sign_copy_emails,
        "content_sha256": doc.final_pdf.as_ref().map(|p| p.content_sha256.clone()),
        "evidence": super::evidence::detail(cx, doc),
        "revision": doc.revisions.len(),
    });
    if !o.external {
        v["rejection_reason"] = doc.rejection_reason.clone().into();
    }
    if o.with_pages {
        v["pages"] = pages_json(doc, false);
    }
    if o.with_small_pages {
        v["small_pages"] = pages_json(doc, true);
    }
    if o.with_stats {
        let (start, end) = comments_prefix(&doc.id);
        let comments = cx.p.scan(&start, &end, u32::MAX, false).len();
        let signed = doc
            .recipients
            .iter()
            .filter(|r| r.status.has_signed_or_approved())
            .count();
        v["stats"] = json!({
            "views": doc.views,
            "comments": comments,
            "page_count": doc.page_count(),
            "recipients": doc.recipients.len(),
            "signed_or_approved": signed,
            "reminders_sent": doc.reminders_sent,
            "revisions": doc.revisions.len(),
        });
    }
    if o.with_attachments {
        v["attachments"] = Value::Array(
            doc.attachments
                .iter()
                .map(|a| {
                    json!({"id": a.id, "name": a.name, "size": a.size,
                           "restricted_to": a.restricted_to})
                })
                .collect(),
        );
    }
    v
}

/// A list item (spec §2.2).
pub fn list_item_json(cx: &mut Cx, doc: &Document, archive: bool) -> Value {
    let mut v = json!({
        "id": doc.id,
        "name": doc.name,
        "status": doc.status.as_str(),
        "value": crate::util::money(doc.value),
        "sender_name": doc.sender.name,
        "created_at": iso8601(doc.created_ms),
        "updated_at": iso8601(doc.updated_ms),
        "type": doc.doc_type,
        "external_id": doc.external_id,
        "is_private": doc.flags.is_private,
        "is_signing": doc.flags.is_signing,
        "company_name": doc.company_name,
        "user_id": doc.user_id,
        "sender_thumb": "",
        "tags": doc.tags,
        "sign_date": doc.sign_ms.map(iso8601),
        "expiration_date": iso8601(doc.expiration_ms),
    });
    if archive {
        let base = base_url(cx);
        v["thumb_url"] = format!("{base}/v1/documents/{}/pages", doc.id).into();
    } else {
        v["recipients"] = Value::Array(
            doc.recipients
                .iter()
                .map(|r| {
                    json!({
                        "id": r.id, "fullname": r.fullname(), "first_name": r.first_name,
                        "last_name": r.last_name, "email": r.email, "mobile": r.mobile,
                        "role": r.role.as_str(), "recipient_status": r.status.as_str(),
                        "status": r.status.as_str(), "order_num": r.order_num.to_string(),
                    })
                })
                .collect(),
        );
    }
    v
}

/// The detail (or, with `in_object`, the one-element array with entity, first
/// recipient and custom fields) of `doc`.
fn detail_response(cx: &mut Cx, pr: &Principal, req: &Request, doc: &Document) -> Response {
    let mut o = DetailOptions::from_query(req);
    o.with_links = access(cx, pr, doc).write;
    let mut detail = detail_json(cx, doc, o);
    if flag(req, "in_object") {
        detail["entity"] = json!({"id": pr.entity.id, "name": pr.entity.name});
        detail["recipient"] = match doc.recipients.first() {
            Some(r) => recipient_json(cx, r, false),
            None => Value::Null,
        };
        detail["custom_fields"] = doc
            .custom_fields
            .iter()
            .map(|f| json!({"name": f.name, "value": f.value}))
            .collect();
        return json(200, &json!([detail]));
    }
    json(200, &detail)
}

/// `GET /v1/documents/{id}`.
pub fn get(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let doc = readable(cx, pr, id)?;
    Ok(detail_response(cx, pr, req, &doc))
}

/// `GET /v1/documents/latest`: the caller's most recently created document, or with
/// `filter=signed` the most recently signed one. 404 when there is none.
pub fn latest(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    let filter = req.query_param("filter").unwrap_or_default();
    let mut q = Query::own(pr);
    q.limit = 1;
    if !filter.is_empty() {
        q.set_filter(&filter);
        if filter == "signed" {
            q.sort = super::model::SortKey::SignDate;
            q.descending = true;
        }
    }
    let found = list::run(cx, pr, &q);
    let doc = found.into_iter().next().ok_or_else(|| {
        ApiError::not_found("document_not_found", "there is no such document yet")
    })?;
    Ok(detail_response(cx, pr, req, &doc))
}

/// `GET /v1/documents/external/{externalId}`.
pub fn external(cx: &mut Cx, pr: &Principal, req: &Request, ext: &str) -> ApiResult<Response> {
    if req.query_param("showall").is_some() {
        return Err(ApiError::bad_request(
            "invalid_parameter",
            "showall is not accepted by the external-id read",
        ));
    }
    let ext = list::percent_decoded(ext);
    let ids = list::lookup(cx, &pr.entity.id, "dext", &ext, 100);
    for id in ids {
        let Some(doc) = super::load_doc(cx, &id) else {
            continue;
        };
        if doc.external_id != ext || !access(cx, pr, &doc).read {
            continue;
        }
        let mut o = DetailOptions::from_query(req);
        o.external = true;
        o.with_links = access(cx, pr, &doc).write;
        return Ok(json(200, &detail_json(cx, &doc, o)));
    }
    Ok(json(200, &json!([])))
}

/// `GET /v1/documents/{id}/status`.
pub fn status(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let doc = readable(cx, pr, id)?;
    Ok(json(
        200,
        &json!({"status": doc.status.as_str(), "rejection_reason": doc.rejection_reason}),
    ))
}

/// `GET /v1/documents/{id}/recipients`.
pub fn recipients(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let doc = readable(cx, pr, id)?;
    let links = access(cx, pr, &doc).write;
    let items: Vec<Value> = doc
        .recipients
        .iter()
        .map(|r| recipient_json(cx, r, links))
        .collect();
    Ok(json(200, &json!({ "recipients": items })))
}

/// `GET /v1/documents/{id}/attachments`: the files attached to the document, in
/// GetAccept's shape (esign serves no attachment URLs of its own: those are `""`).
pub fn attachments(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let doc = readable(cx, pr, id)?;
    let items: Vec<Value> = doc
        .attachments
        .iter()
        .map(|a| {
            let extension = a
                .name
                .rsplit_once('.')
                .map(|(_, e)| e.to_ascii_lowercase())
                .unwrap_or_default();
            let names: Vec<String> = a
                .restricted_to
                .iter()
                .flat_map(|email| {
                    doc.recipients
                        .iter()
                        .filter(move |r| r.email.eq_ignore_ascii_case(email))
                        .map(|r| r.fullname())
                })
                .collect();
            json!({
                "attachment_id": a.id,
                "attachment_title": a.name,
                "attachment_filename": a.name,
                "attachment_extension": extension,
                "attachment_type": "file",
                "attachment_description": "",
                "attachment_url": "",
                "attachment_download_url": "",
                "attachment_preview_url": "",
                "size": a.size,
                "restrict_access": a.restricted_to.is_some(),
                "access_recipient_names": names,
                "last_attachment_view": "",
            })
        })
        .collect();
    Ok(json(200, &json!({ "attachments": items })))
}

/// `GET /v1/documents/{id}/pages`.
pub fn pages(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let doc = readable(cx, pr, id)?;
    Ok(json(
        200,
        &json!({"page_count": doc.page_count(), "pages": pages_json(&doc, false)}),
    ))
}

/// `GET /v1/documents/{id}/log`: the audit trail, oldest first, with its chain hashes.
pub fn log(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let doc = readable(cx, pr, id)?;
    let entries: Vec<Value> = super::trail::entries(cx, &doc.id)
        .iter()
        .map(super::trail::served)
        .collect();
    // A bare array, as GetAccept answers it. The entries keep the hash-chained shape of
    // the audit trail (DESIGN.md §4, Evidence): a member added here would break the
    // chain a client recomputes.
    Ok(json(200, &Value::Array(entries)))
}

pub fn comment_json(c: &Comment) -> Value {
    json!({
        "id": c.id, "text": c.text,
        "author": {"type": c.author_type, "id": c.author_id, "name": c.author_name, "email": c.author_email},
        "created_at": iso8601(c.created_ms),
        "internal": c.internal, "suggestion": c.suggestion, "resolved": c.resolved,
    })
}

/// `GET /v1/documents/{id}/comments`: a bare array, as GetAccept answers it.
pub fn comments(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let doc = readable(cx, pr, id)?;
    let (start, end) = comments_prefix(&doc.id);
    let items: Vec<Value> =
        cx.p.scan(&start, &end, u32::MAX, false)
            .into_iter()
            .map(|(_, v)| {
                let c = decode::<Comment>(&v);
                let mut out = comment_json(&c);
                // GetAccept's members: who wrote it, and whether the caller did.
                out["email"] = json!(c.author_email);
                out["full_name"] = json!(c.author_name);
                out["thumb_url"] = json!("");
                out["self"] = json!(u8::from(c.author_id == pr.user.id));
                out
            })
            .collect();
    Ok(json(200, &Value::Array(items)))
}

/// `GET /v1/documents/{id}/pricing-tables`.
pub fn pricing_tables(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let doc = readable(cx, pr, id)?;
    Ok(json(
        200,
        &json!({"pricing_tables": super::pricing::tables_json(&doc.pricing_tables)}),
    ))
}

/// `GET /v1/documents/{id}/revisions`.
pub fn revisions(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let doc = readable(cx, pr, id)?;
    let items: Vec<Value> = doc
        .revisions
        .iter()
        .map(|r| {
            json!({
                "revision": r.number, "message": r.message,
                "created_at": iso8601(r.created_ms),
                "status": if r.sealed_ms.is_some() { "sealed" } else { "processing" },
                "sealed_at": r.sealed_ms.map(iso8601),
                "content_sha256": r.content_sha256,
            })
        })
        .collect();
    Ok(json(200, &json!({ "revisions": items })))
}
