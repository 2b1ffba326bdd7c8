//! `/v1/contacts` (GetAccept's list, create and delete).
//!
//! The list takes GetAccept's parameters: `filter` (`active`: contacts with documents,
//! `inactive`: without, `signed`: one of their 20 newest documents is signed),
//! `sort_by` (`name`, `email`, `company_name`, `document_count`, `created`),
//! `sort_order`, `showteam`/`showall` (default: the caller's own contacts), `search`
//! (in names, email and company), `offset` and `limit` (default 100, at most 1000).

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, json, no_content};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, is_email, is_mobile, new_id};
use crate::domain::auth::Principal;
use crate::domain::contacts::{self, Contact};
use crate::domain::document::load_doc;
use crate::domain::list::{self, lookup, parse_int};
use serde_json::{Value, json};

pub fn create(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    let f = req.body_fields()?;
    f.only(&[
        "first_name",
        "last_name",
        "fullname",
        "email",
        "mobile",
        "phone",
        "company_name",
        "company_number",
        "title",
        "note",
    ])?;
    let s = |k: &str| -> ApiResult<String> {
        Ok(f.optional_str(k)?.unwrap_or_default().trim().to_string())
    };
    let (mut first, mut last, full) = (s("first_name")?, s("last_name")?, s("fullname")?);
    if first.is_empty() && last.is_empty() {
        match full.split_once(' ') {
            Some((a, b)) => (first, last) = (a.to_string(), b.trim().to_string()),
            None => first = full,
        }
    }
    let (email, mobile) = (s("email")?, s("mobile")?);
    if !email.is_empty() && !is_email(&email) {
        return Err(http::ApiError::bad_request(
            "invalid_field",
            format!("the field `email` {email:?} is not a valid email address"),
        ));
    }
    if !mobile.is_empty() && !is_mobile(&mobile) {
        return Err(http::ApiError::bad_request(
            "invalid_field",
            format!("the field `mobile` {mobile:?} is not a valid mobile number"),
        ));
    }
    if email.is_empty() && mobile.is_empty() && first.is_empty() && last.is_empty() {
        return Err(http::ApiError::bad_request(
            "missing_field",
            "a contact needs a name, an email or a mobile number",
        ));
    }
    let c = Contact {
        id: new_id(cx),
        entity_id: pr.entity.id.clone(),
        user_id: pr.user.id.clone(),
        first_name: first,
        last_name: last,
        email,
        mobile,
        phone: s("phone")?,
        company_name: s("company_name")?,
        company_number: s("company_number")?,
        title: s("title")?,
        note: s("note")?,
        created_ms: cx.now(),
    };
    contacts::add(cx, &c)?;
    Ok(json(200, &json!({ "contact_id": c.id })))
}

/// Ids of the documents that name `email` among their recipients, newest first.
fn documents_of(cx: &mut Cx, entity: &str, email: &str, limit: u32) -> Vec<String> {
    if email.is_empty() {
        return Vec::new();
    }
    lookup(cx, entity, "drcp", &util::normalize_email(email), limit)
}

fn enum_param(req: &Request, name: &str, allowed: &[&str]) -> ApiResult<Option<String>> {
    match req.query_param(name).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) if allowed.contains(&v.as_str()) => Ok(Some(v)),
        Some(v) => Err(http::ApiError::bad_request(
            "invalid_parameter",
            format!(
                "the query parameter `{name}` must be one of {}, not {v:?}",
                allowed.join(", ")
            ),
        )),
    }
}

#[expect(
    clippy::too_many_lines,
    reason = "older than the 70-line rule (issue 49)"
)]
pub fn list_contacts(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    let filter = enum_param(req, "filter", &["active", "inactive", "signed"])?;
    let sort = enum_param(
        req,
        "sort_by",
        &["name", "email", "company_name", "document_count", "created"],
    )?;
    let desc = enum_param(req, "sort_order", &["asc", "desc"])?.is_some_and(|o| o == "desc");
    let truthy = |name: &str| {
        req.query_param(name)
            .is_some_and(|v| v == "true" || v == "1")
    };
    let owners: Option<Vec<String>> = if truthy("showall") {
        None
    } else if truthy("showteam") {
        Some(
            list::team_scopes(cx, pr)
                .into_iter()
                .map(|s| s.trim_start_matches('u').to_string())
                .collect(),
        )
    } else {
        Some(vec![pr.user.id.clone()])
    };
    let search = req
        .query_param("search")
        .unwrap_or_default()
        .trim()
        .to_lowercase();
    let offset = parse_int(req, "offset")?.unwrap_or(0).max(0) as usize;
    let limit = list::limit_param(req, "limit")? as usize;
    let entity = pr.entity.id.clone();
    let mut found: Vec<(Contact, Option<usize>)> = contacts::all(cx, &entity)
        .into_iter()
        .filter(|c| owners.as_ref().is_none_or(|o| o.contains(&c.user_id)))
        .filter(|c| {
            search.is_empty()
                || [&c.fullname(), &c.email, &c.company_name, &c.mobile]
                    .iter()
                    .any(|t| t.to_lowercase().contains(&search))
        })
        .map(|c| (c, None))
        .collect();
    let counts_needed = filter.is_some() || sort.as_deref() == Some("document_count");
    if counts_needed {
        for (c, n) in found.iter_mut() {
            *n = Some(documents_of(cx, &entity, &c.email, 1000).len());
        }
    }
    if let Some(filter) = &filter {
        let mut kept = Vec::new();
        for (c, n) in found {
            let n = n.unwrap_or(0);
            let keep = match filter.as_str() {
                "active" => n > 0,
                "inactive" => n == 0,
                _ => has_signed(cx, &entity, &c.email),
            };
            if keep {
                kept.push((c, Some(n)));
            }
        }
        found = kept;
    }
    let key = |c: &Contact, n: Option<usize>| -> String {
        match sort.as_deref() {
            Some("name") => c.fullname().to_lowercase(),
            Some("email") => c.email.to_lowercase(),
            Some("company_name") => c.company_name.to_lowercase(),
            Some("document_count") => format!("{:010}", n.unwrap_or(0)),
            _ => format!("{:016x}", c.created_ms),
        }
    };
    found.sort_by(|(a, na), (b, nb)| {
        let ord = key(a, *na)
            .cmp(&key(b, *nb))
            .then(a.created_ms.cmp(&b.created_ms));
        // Newest first unless a sort is asked for.
        if desc || sort.is_none() {
            ord.reverse()
        } else {
            ord
        }
    });
    let mut items = Vec::new();
    for (c, n) in found.into_iter().skip(offset).take(limit) {
        let n = n.unwrap_or_else(|| documents_of(cx, &entity, &c.email, 1000).len());
        items.push(contact_json(&c, n));
    }
    Ok(json(200, &json!({ "contacts": items })))
}

/// Whether one of the contact's 20 newest documents is signed.
fn has_signed(cx: &mut Cx, entity: &str, email: &str) -> bool {
    documents_of(cx, entity, email, 20)
        .iter()
        .any(|id| load_doc(cx, id).is_some_and(|d| d.status.is_signed()))
}

fn contact_json(c: &Contact, document_count: usize) -> Value {
    json!({
        "contact_id": c.id,
        "first_name": c.first_name,
        "last_name": c.last_name,
        "fullname": c.fullname(),
        "email": c.email,
        "mobile": c.mobile,
        "phone": c.phone,
        "company_name": c.company_name,
        "company_number": c.company_number,
        "title": c.title,
        "note": c.note,
        "document_count": document_count,
        "created_at": util::iso8601(c.created_ms),
    })
}

/// `DELETE /v1/contacts/{id}`.
pub fn delete(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let c = contacts::removable(cx, pr, id)?;
    contacts::remove(cx, &c);
    Ok(no_content())
}
