//! The response shapes several handlers share: a document's detail (spec §2.1), a list
//! item (§2.2), a recipient (§2.3), a comment. Handlers of one family import these,
//! never each other.

use crate::base::api::Request;
use crate::base::cx::Cx;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, iso8601};
use crate::domain::branding::{self, Branding};
use crate::domain::document::{Comment, Document, Recipient};
use crate::domain::downloads::current_pdf;
use crate::domain::identity::{Checks, When};
use crate::domain::page_views::PageViews;
use crate::domain::pricing::{self, PricingTable};
use crate::domain::reminder_schedules;
use crate::domain::{
    accounts, blobs, comments, evidence, fields, identity, notify, page_views, previews,
    public_files, signatures,
};
use serde_json::{Map, Value, json};

/// A query flag: any non-empty value other than `0` turns it on (even `false`).
pub fn flag(req: &Request, name: &str) -> bool {
    req.query_param(name)
        .is_some_and(|v| !v.is_empty() && v != "0")
}

fn base_url(cx: &mut Cx) -> String {
    cx.settings().base_url.trim_end_matches('/').to_string()
}

/// Recipient `r` of document `doc_id`; with their `document_url` when `with_link`.
pub fn recipient_json(cx: &mut Cx, doc_id: &str, r: &Recipient, with_link: bool) -> Value {
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
    if with_link && let Some(url) = notify::recipient_url(cx, doc_id, r) {
        v["document_url"] = url.into();
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
/// The content pages of `doc`, with GetAccept's members: `order_num`, `page_width`,
/// `page_height` (points; a quarter for `small`), `thumb_url`, a picture of the page
/// (`domain::previews`; empty until made after the import), and `page_time` and
/// `view_duration_seconds`, the seconds recipients spent on it (`domain::page_views`).
pub fn pages_json(cx: &mut Cx, doc: &Document, small: bool) -> Value {
    let previews = previews::load(cx, &blobs::owner_of(&doc.id));
    let views = page_views::load(cx, &doc.id);
    let mut out = Vec::new();
    let mut n = 0;
    for f in &doc.files {
        for (i, (w, h)) in f.pages.iter().enumerate() {
            let thumb = match previews.pages.get(n) {
                Some(p) => public_files::url(cx, &p.secret),
                None => String::new(),
            };
            n += 1;
            let (w, h) = if small { (w / 4.0, h / 4.0) } else { (*w, *h) };
            let seconds = page_views::page_seconds(&views, n);
            out.push(json!({
                "page_id": format!("{}-{}", f.id, i + 1),
                "page_num": n,
                "order_num": n,
                "file_id": f.id,
                "file_name": f.name,
                "file_page_num": i + 1,
                "width": w,
                "height": h,
                "page_width": w,
                "page_height": h,
                "thumb_url": thumb,
                "page_time": seconds,
                "view_duration_seconds": seconds,
            }));
        }
    }
    Value::Array(out)
}

/// A picture of the document's first page (`domain::previews`), or empty until made.
pub fn thumb_url(cx: &mut Cx, doc: &Document) -> String {
    previews::page_url(cx, &blobs::owner_of(&doc.id), 1).unwrap_or_default()
}

/// The detail form of spec §2.1: the document's own members, its dates, its links,
/// recipients and evidence, then what `o` asks for.
pub fn detail_json(cx: &mut Cx, doc: &Document, o: DetailOptions) -> Value {
    let recipients = detail_recipients(cx, doc, o.with_links);
    // Three `json!` objects merged into one; an object's members are kept in key order,
    // so the parts write the same bytes as one literal would.
    let mut m = members(options_json(doc, o.external));
    m.extend(members(dates_json(doc)));
    m.extend(members(links_json(cx, doc, recipients)));
    let mut v = Value::Object(m);
    if !o.external {
        v["rejection_reason"] = doc.rejection_reason.clone().into();
    }
    if o.with_pages {
        v["pages"] = pages_json(cx, doc, false);
    }
    if o.with_small_pages {
        v["small_pages"] = pages_json(cx, doc, true);
    }
    if o.with_stats {
        v["stats"] = stats_json(cx, doc);
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

/// The members of an object (none of anything else).
fn members(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// The detail's recipients, with how each signed (identity checks passed, signature,
/// initials) and, `with_links` (for those who may change the document), the identity
/// checks set.
fn detail_recipients(cx: &mut Cx, doc: &Document, with_links: bool) -> Vec<Value> {
    let id = &doc.id;
    let mut recipients: Vec<Value> = doc
        .recipients
        .iter()
        .map(|r| recipient_json(cx, &doc.id, r, with_links))
        .collect();
    let sigs = signatures::load_all(cx, id);
    for (v, r) in recipients.iter_mut().zip(&doc.recipients) {
        v["signing_methods"] = sigs
            .iter()
            .find(|s| s.recipient_id == r.id)
            .map(signatures::methods)
            .unwrap_or_default()
            .into();
        if with_links
            && let Some(c) = identity::load(cx, id, &r.id)
            && let (Value::Object(m), Value::Object(set)) = (v, verify_settings_json(&c))
        {
            m.extend(set);
        }
    }
    recipients
}

/// The detail's members from `id` to `status`: what the document is and its options
/// (`tags` as last sent when `external`).
fn options_json(doc: &Document, external: bool) -> Value {
    let f = &doc.flags;
    json!({
        "id": doc.id,
        "name": doc.name,
        "external_id": doc.external_id,
        "external_client_id": doc.external_client_id,
        "value": util::money(doc.value),
        "type": doc.doc_type,
        "tags": if external { &doc.tags_raw } else { &doc.tags },
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
    })
}

/// The detail's members from `send_date` to `video_id`: dates, the sender and the
/// sending mail.
fn dates_json(doc: &Document) -> Value {
    json!({
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
    })
}

/// The detail's members from `thumb_url` to `revision`: its addresses, `recipients`,
/// the entity, the settings and the evidence.
fn links_json(cx: &mut Cx, doc: &Document, recipients: Vec<Value>) -> Value {
    let base = base_url(cx);
    let id = &doc.id;
    let download_url = if current_pdf(doc).is_some() {
        format!("{base}/v1/documents/{id}/download")
    } else {
        String::new()
    };
    let entity = accounts::entity(cx, &doc.entity_id).ok();
    let thumb = thumb_url(cx, doc);
    json!({
        "thumb_url": thumb.clone(),
        "preview_url": thumb,
        "app_url": format!("{base}/app/documents/{id}"),
        "download_url": download_url,
        "unique_id": doc.unique_id,
        "parent_id": doc.parent_id,
        "field_count": fields::load(cx, id).len(),
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
        "custom_fields": doc.custom_fields.iter()
            .map(|c| json!({"name": c.name, "value": c.value}))
            .collect::<Vec<_>>(),
        "folder_id": doc.ext.folder_id,
        "communication_template_id": doc.ext.communication_template_id,
        "language": doc.language(),
        "import_error": doc.import_error,
        "comment_settings": doc.comment_settings,
        "sign_redirect": doc.sign_redirect,
        "sign_copy_emails": doc.sign_copy_emails,
        "reminder_schedule": reminder_schedules::to_json(&reminder_schedules::of_doc(cx, doc)),
        "content_sha256": doc.final_pdf.as_ref().map(|p| p.content_sha256.clone()),
        "evidence": evidence::detail(cx, doc),
        "revision": doc.revisions.len(),
    })
}

/// The detail's `stats` (`with_stats`).
fn stats_json(cx: &mut Cx, doc: &Document) -> Value {
    let comments = comments::count(cx, &doc.id);
    let signed = doc
        .recipients
        .iter()
        .filter(|r| r.status.has_signed_or_approved())
        .count();
    let mut stats = json!({
        "views": doc.views,
        "comments": comments,
        "page_count": doc.page_count(),
        "recipients": doc.recipients.len(),
        "signed_or_approved": signed,
        "reminders_sent": doc.reminders_sent,
        "revisions": doc.revisions.len(),
    });
    let (seconds, pages) = page_view_stats(&page_views::load(cx, &doc.id));
    stats["view_seconds"] = seconds;
    stats["pages"] = pages;
    stats
}

/// A list item (spec §2.2).
/// One item of `GET /v1/documents` (spec §2.2), serialized straight from the record:
/// a list answers up to a thousand of these, and building a [`Value`] map of each was
/// most of the list's work. Fields are declared in key order, as a [`Value`] map
/// would write them.
#[derive(serde::Serialize)]
pub struct ListItem<'a> {
    company_name: &'a str,
    created_at: String,
    expiration_date: String,
    external_id: &'a str,
    folder_id: &'a str,
    id: &'a str,
    is_private: bool,
    is_signing: bool,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    recipients: Option<Vec<ListRecipient<'a>>>,
    sender_name: &'a str,
    sender_thumb: &'static str,
    sign_date: Option<String>,
    status: &'static str,
    tags: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    thumb_url: Option<String>,
    #[serde(rename = "type")]
    doc_type: &'a str,
    updated_at: String,
    user_id: &'a str,
    value: Value,
}

/// A recipient inside a [`ListItem`].
#[derive(serde::Serialize)]
pub struct ListRecipient<'a> {
    email: &'a str,
    first_name: &'a str,
    fullname: String,
    id: &'a str,
    last_name: &'a str,
    mobile: &'a str,
    order_num: String,
    recipient_status: &'static str,
    role: &'static str,
    status: &'static str,
}

/// A list item of `doc`: recipients, or in the archive view (`filter=archive`) the
/// first page's image instead.
pub fn list_item<'a>(cx: &mut Cx, doc: &'a Document, archive: bool) -> ListItem<'a> {
    let recipients = |r: &'a Recipient| ListRecipient {
        email: &r.email,
        first_name: &r.first_name,
        fullname: r.fullname(),
        id: &r.id,
        last_name: &r.last_name,
        mobile: &r.mobile,
        order_num: r.order_num.to_string(),
        recipient_status: r.status.as_str(),
        role: r.role.as_str(),
        status: r.status.as_str(),
    };
    ListItem {
        company_name: &doc.company_name,
        created_at: iso8601(doc.created_ms),
        expiration_date: iso8601(doc.expiration_ms),
        external_id: &doc.external_id,
        folder_id: &doc.ext.folder_id,
        id: &doc.id,
        is_private: doc.flags.is_private,
        is_signing: doc.flags.is_signing,
        name: &doc.name,
        recipients: (!archive).then(|| doc.recipients.iter().map(recipients).collect()),
        sender_name: &doc.sender.name,
        sender_thumb: "",
        sign_date: doc.sign_ms.map(iso8601),
        status: doc.status.as_str(),
        tags: &doc.tags,
        thumb_url: archive.then(|| thumb_url(cx, doc)),
        doc_type: &doc.doc_type,
        updated_at: iso8601(doc.updated_ms),
        user_id: &doc.user_id,
        value: util::money(doc.value),
    }
}

pub fn comment_json(c: &Comment) -> Value {
    json!({
        "id": c.id, "text": c.text,
        "author": {"type": c.author_type, "id": c.author_id, "name": c.author_name, "email": c.author_email},
        "created_at": iso8601(c.created_ms),
        "internal": c.internal, "suggestion": c.suggestion, "resolved": c.resolved,
    })
}

/// The events of `doc`'s audit trail (entries that emitted a webhook event) from
/// `since_ms` on, oldest first, in GetAccept's event shape: who (`email`,
/// `first_name`, `last_name`, `company_name` of the recipient or member who acted;
/// empty for the system) and what (`event_name`, `event_meta_data`).
pub fn trail_events(cx: &mut Cx, doc: &Document, since_ms: u64) -> Vec<Value> {
    let mut out = Vec::new();
    for c in crate::domain::trail::entries(cx, &doc.id) {
        let e = c.entry;
        let Some((event, event_id)) = e.event.clone() else {
            continue;
        };
        if e.at_ms < since_ms {
            continue;
        }
        let (email, first, last, company) = match e.actor_type.as_str() {
            "recipient" => doc
                .recipient(&e.actor_id)
                .map_or_else(Default::default, |r| {
                    (
                        r.email.clone(),
                        r.first_name.clone(),
                        r.last_name.clone(),
                        r.company_name.clone(),
                    )
                }),
            "user" => accounts::user(cx, &e.actor_id)
                .ok()
                .map_or_else(Default::default, |u| {
                    (u.email, u.first_name, u.last_name, String::new())
                }),
            _ => Default::default(),
        };
        out.push(json!({
            "event_id": event_id,
            "event_name": event,
            "event_meta_data": e.detail,
            "created_at": iso8601(e.at_ms),
            "document_id": doc.id,
            "document_name": doc.name,
            "document_status": doc.status.as_str(),
            "actor_type": e.actor_type,
            "actor_id": e.actor_id,
            "email": email,
            "first_name": first,
            "last_name": last,
            "company_name": company,
        }));
    }
    out
}

/// A document's or template's pricing tables as answers show them (spec §2.1), with
/// their subtotal and total ([`pricing::totals`]).
pub fn pricing_tables_json(tables: &[PricingTable]) -> Value {
    Value::Array(
        tables
            .iter()
            .map(|t| {
                let (subtotal, _, total) = pricing::totals(t);
                let summary: Map<String, Value> = t
                    .summary_values
                    .iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            json!({"value": v.value, "flat_fee": v.flat_fee,
                                   "enabled": v.enabled, "display_name": v.display_name}),
                        )
                    })
                    .collect();
                json!({
                    "currency_settings": {"currency": t.currency, "locale": t.locale},
                    "sections": t.sections.iter().map(|s| json!({
                        "display_name": s.display_name,
                        "rows": s.rows.iter().map(|r| json!({
                            "name": r.name, "quantity": r.quantity, "price": r.price,
                            "total": r.quantity * r.price,
                        })).collect::<Vec<_>>(),
                    })).collect::<Vec<_>>(),
                    "locked": t.locked,
                    "summary_values": summary,
                    "subtotal": subtotal,
                    "total": total,
                })
            })
            .collect(),
    )
}

/// An entity's branding as answers show it: `color` and `logo_url`
/// ([`branding::logo_path`]).
pub fn branding_json(b: &Branding) -> Value {
    json!({"color": b.color, "logo_url": branding::logo_path(b)})
}

/// What `with_stats` adds of the page view times: seconds on all pages together, and
/// per page seen the seconds and the reports that named it.
fn page_view_stats(views: &PageViews) -> (Value, Value) {
    let pages = views
        .pages
        .iter()
        .enumerate()
        .filter(|(_, p)| p.views > 0)
        .map(|(i, p)| {
            json!({"page_num": i + 1, "page_time": p.millis as f64 / 1000.0, "views": p.views})
        })
        .collect();
    (json!(views.total_seconds()), Value::Array(pages))
}

/// A recipient's identity-check settings as the API shows them (the answer never).
fn verify_settings_json(c: &Checks) -> Value {
    let w = |w: Option<When>| w.unwrap_or_default();
    let (code, qna, eid) = (
        w(c.code),
        w(c.qna.as_ref().map(|q| q.0)),
        w(c.eid.as_ref().map(|e| e.0)),
    );
    json!({
        "verify_sms": c.code.is_some(), "verify_sms_open": code.open, "verify_sms_sign": code.sign,
        "verify_qna": c.qna.is_some(), "verify_qna_open": qna.open, "verify_qna_sign": qna.sign,
        "verify_qna_question": c.qna.as_ref().map(|q| q.1.clone()).unwrap_or_default(),
        "verify_eid": c.eid.is_some(), "verify_eid_open": eid.open, "verify_eid_sign": eid.sign,
        "verify_eid_type": c.eid.as_ref().map(|e| e.1.clone()).unwrap_or_default(),
    })
}
