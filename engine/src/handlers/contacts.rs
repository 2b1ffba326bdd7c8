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
use crate::base::query::{self, parse_int};
use crate::base::util::{self, is_email, is_mobile, new_id};
use crate::domain::auth::Principal;
use crate::domain::contacts::{self, Contact, ListQuery, Owners};
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

pub fn list_contacts(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    let filter = enum_param(req, "filter", &["active", "inactive", "signed"])?;
    let sort = enum_param(
        req,
        "sort_by",
        &["name", "email", "company_name", "document_count", "created"],
    )?;
    let descending = enum_param(req, "sort_order", &["asc", "desc"])?.is_some_and(|o| o == "desc");
    let truthy = |name: &str| {
        req.query_param(name)
            .is_some_and(|v| v == "true" || v == "1")
    };
    let owners = if truthy("showall") {
        Owners::All
    } else if truthy("showteam") {
        Owners::Team
    } else {
        Owners::Own
    };
    let search = req
        .query_param("search")
        .unwrap_or_default()
        .trim()
        .to_lowercase();
    let offset = parse_int(req, "offset")?.unwrap_or(0).max(0) as usize;
    let limit = query::limit_param(req, "limit")? as usize;
    let q = ListQuery {
        filter,
        sort,
        descending,
        owners,
        search,
        offset,
        limit,
    };
    let items: Vec<Value> = contacts::list(cx, pr, &q)
        .iter()
        .map(|(c, n)| contact_json(c, *n))
        .collect();
    Ok(json(200, &json!({ "contacts": items })))
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
