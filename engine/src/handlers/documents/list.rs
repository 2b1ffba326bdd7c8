//! `GET /v1/documents`: the list, with its filters, sorts and scopes.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{ApiResult, json_of};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::query::{limit_param, parse_int};
use crate::base::util::{self, is_email};
use crate::domain::auth::Principal;
use crate::domain::document::{self, scope_all};
use crate::domain::list::{Query, run, team_scopes};
use crate::handlers::shapes::{ListItem, list_item};

/// `GET /v1/documents`.
pub fn list(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    let mut q = Query::own(pr);
    let truthy = |name: &str| {
        req.query_param(name)
            .is_some_and(|v| v == "true" || v == "1")
    };
    if truthy("showall") {
        q.scopes = vec![scope_all()];
        q.entity_wide = true;
    } else if truthy("showteam") {
        q.scopes = team_scopes(cx, pr);
    }
    let filter = req.query_param("filter").unwrap_or_default();
    q.set_filter(&filter);
    let descending = req
        .query_param("sort_order")
        .is_some_and(|o| o.eq_ignore_ascii_case("desc"));
    match req.query_param("sort_by").as_deref() {
        Some("name") => (q.sort, q.descending) = (document::SortKey::Name, descending),
        Some("value") => (q.sort, q.descending) = (document::SortKey::Value, descending),
        Some("owner") => (q.sort, q.descending) = (document::SortKey::Owner, descending),
        Some("created") if filter == "signed" => {
            (q.sort, q.descending) = (document::SortKey::SignDate, descending)
        }
        Some("created") => (q.sort, q.descending) = (document::SortKey::Created, descending),
        Some("status") => (q.by_status, q.descending) = (true, descending),
        _ => {}
    }
    for v in req
        .query_param("external_id")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
    {
        if is_email(v) {
            q.emails.push(util::normalize_email(v));
        } else {
            q.external_ids.push(v.to_string());
        }
    }
    q.external_client_id = req
        .query_param("external_client_id")
        .filter(|v| !v.is_empty());
    q.folder = req.query_param("folder_id").filter(|v| !v.is_empty());
    q.offset = parse_int(req, "offset")?.unwrap_or(0).max(0) as usize;
    q.limit = limit_param(req, "limit")? as usize;
    let docs = run(cx, pr, &q);
    let items: Vec<ListItem> = docs.iter().map(|d| list_item(cx, d, q.archive)).collect();
    Ok(json_of(200, &items))
}
