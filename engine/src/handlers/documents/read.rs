//! Document reads: the detail form (spec §2.1), list items (§2.2), recipients (§2.3),
//! and the read endpoints.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::query;
use crate::base::util::iso8601;
use crate::domain::access::{access, readable};
use crate::domain::auth::Principal;
use crate::domain::document::{self, Document};
use crate::domain::{comments, list, trail};
use crate::handlers::shapes::{
    self, DetailOptions, comment_json, detail_json, flag, pages_json, recipient_json,
};
use serde_json::{Value, json};

/// The detail (or, with `in_object`, the one-element array with entity, first
/// recipient and custom fields) of `doc`.
fn detail_response(cx: &mut Cx, pr: &Principal, req: &Request, doc: &Document) -> Response {
    let mut o = DetailOptions::from_query(req);
    o.with_links = access(cx, pr, doc).write;
    let mut detail = detail_json(cx, doc, o);
    if flag(req, "in_object") {
        detail["entity"] = json!({"id": pr.entity.id, "name": pr.entity.name});
        detail["recipient"] = match doc.recipients.first() {
            Some(r) => recipient_json(cx, &doc.id, r, false),
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
    let mut q = list::Query::own(pr);
    q.limit = 1;
    if !filter.is_empty() {
        q.set_filter(&filter);
        if filter == "signed" {
            q.sort = document::SortKey::SignDate;
            q.descending = true;
        }
    }
    let found = list::run(cx, pr, &q);
    let doc = found.into_iter().next().ok_or_else(|| {
        http::ApiError::not_found("document_not_found", "there is no such document yet")
    })?;
    Ok(detail_response(cx, pr, req, &doc))
}

/// `GET /v1/documents/external/{externalId}`.
pub fn external(cx: &mut Cx, pr: &Principal, req: &Request, ext: &str) -> ApiResult<Response> {
    if req.query_param("showall").is_some() {
        return Err(http::ApiError::bad_request(
            "invalid_parameter",
            "showall is not accepted by the external-id read",
        ));
    }
    let ext = query::percent_decoded(ext);
    let ids = list::by_external_id(cx, &pr.entity.id, &ext);
    for id in ids {
        let Some(doc) = document::load_doc(cx, &id) else {
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
        .map(|r| recipient_json(cx, &doc.id, r, links))
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
        &json!({"page_count": doc.page_count(), "pages": pages_json(cx, &doc, false)}),
    ))
}

/// `GET /v1/documents/{id}/log`: the audit trail, oldest first, with its chain hashes.
pub fn log(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let doc = readable(cx, pr, id)?;
    let entries: Vec<Value> = trail::entries(cx, &doc.id)
        .iter()
        .map(trail::served)
        .collect();
    // A bare array, as GetAccept answers it. The entries keep the hash-chained shape of
    // the audit trail (DESIGN.md §4, Evidence): a member added here would break the
    // chain a client recomputes.
    Ok(json(200, &Value::Array(entries)))
}

/// `GET /v1/documents/{id}/events` (GetAccept's): the events of the document's audit
/// trail, oldest first, as a bare array.
pub fn events(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let doc = readable(cx, pr, id)?;
    Ok(json(200, &Value::Array(shapes::trail_events(cx, &doc, 0))))
}

/// `GET /v1/documents/{id}/comments`: a bare array, as GetAccept answers it.
pub fn comments(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let doc = readable(cx, pr, id)?;
    let items: Vec<Value> = comments::all(cx, &doc.id)
        .into_iter()
        .map(|c| {
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
        &json!({"pricing_tables": shapes::pricing_tables_json(&doc.pricing_tables)}),
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
