//! Users and teams of the caller's entity over the API (GetAccept's `/users` and
//! `/teams`): `GET/POST /v1/users`, `GET/PUT/DELETE /v1/users/{id}`, `GET /v1/teams`.
//! `GET /v1/users/me` stays in `handlers::auth::me` (spec shape).
//!
//! Role rules: any active member reads the team list; managers and admins read the
//! members; a manager adds, changes and removes members with the role `user`, an admin
//! any role; nobody removes themselves or changes their own role (an entity must not
//! lose its last admin by accident). A member's team is changed with `PUT`.
//! Removing a member drops the membership in this entity only: the account stays for
//! its other entities, every token of it for this entity stops working at once, and
//! an account left without any membership is deactivated. Its documents stay.
//!
//! Adding a member invites them (`domain::invitations`): every email, with an account
//! elsewhere or not, gets the same answer, a pending member shown with what the caller
//! gave, and an invitation mail; no password is ever answered. Only an email already a
//! member of the caller's own entity is told apart (409 `email_taken`).

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, json, no_content};
use crate::base::messages::from_accept_language;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{iso8601, parse_time};
use crate::domain::accounts::{self, Membership, Role, User};
use crate::domain::auth::{Principal, authenticate};
use crate::domain::invitations::{self, Invitee};
use crate::domain::list;
use crate::domain::members::{self, Shown, manager_or_admin, may_manage, shown};
use serde_json::{Value, json};

fn status(s: &Shown, m: &Membership) -> &'static str {
    if s.invited {
        "pending"
    } else if !s.user.active {
        "inactive"
    } else {
        m.profile.as_str()
    }
}

fn full_name(u: &User) -> String {
    format!("{} {}", u.first_name, u.last_name)
        .trim()
        .to_string()
}

/// An item of `GET /v1/users` (GetAccept's members).
fn item_json(s: &Shown, m: &Membership) -> Value {
    let user = &s.user;
    json!({
        "user_id": user.id,
        "email": user.email,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "name": full_name(user),
        "role": m.role.as_str(),
        "status": status(s, m),
        "team_id": m.team_id.clone().unwrap_or_default(),
        "team_name": m.team_id.clone().unwrap_or_default(),
        "last_login": if user.last_token_ms == 0 { String::new() } else { iso8601(user.last_token_ms) },
    })
}

/// A user's details (GetAccept's `User`): `mobile` and `title` from their profile (what
/// sign-up took); the members esign has no data for are `""` (`thumb_url`: esign keeps
/// no pictures of people).
fn detail_json(cx: &mut Cx, pr: &Principal, user: &User, m: &Membership) -> Value {
    let s = shown(cx, user, m);
    let profile = if s.invited {
        accounts::UserProfile::default()
    } else {
        accounts::user_profile(cx, &user.id)
    };
    let user = &s.user;
    json!({
        "id": user.id,
        "email": user.email,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "entity_id": pr.entity.id,
        "entity_name": pr.entity.name,
        "role": m.role.as_str(),
        "status": status(&s, m),
        "team_id": m.team_id.clone().unwrap_or_default(),
        "mobile": profile.mobile, "title": profile.title,
        "phone": "", "note": "", "thumb_url": "",
        "language": "", "timezone": "", "app_mode": "",
        "disallow_create": false,
        "created_at": iso8601(user.created_ms),
        "last_login": if user.last_token_ms == 0 { String::new() } else { iso8601(user.last_token_ms) },
    })
}

/// `GET /v1/users`: the entity's members (managers and admins).
pub fn list(cx: &mut Cx, pr: &Principal) -> ApiResult<Response> {
    manager_or_admin(pr)?;
    let items: Vec<Value> = members::members(cx, &pr.entity.id)
        .iter()
        .filter(|(_, m)| m.profile != accounts::Profile::None)
        .map(|(u, m)| item_json(&shown(cx, u, m), m))
        .collect();
    Ok(json(200, &json!({ "users": items })))
}

/// `GET /v1/users/{id}`: a member's details; the caller's own for everyone, any
/// member's for managers and admins.
pub fn get(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    if id != pr.user.id {
        manager_or_admin(pr)?;
    }
    let (u, m) = members::member(cx, pr, id)?;
    Ok(json(200, &detail_json(cx, pr, &u, &m)))
}

/// Longest span `GET /v1/users/{id}/statistics` counts over: a year.
const MAX_SPAN_MS: u64 = 366 * 24 * 3600 * 1000;
/// Most documents counted per status (an answer that reached it says `capped`).
const MAX_COUNTED: u32 = 10_000;

/// `GET /v1/users/{id}/statistics` (GetAccept's): how many documents the member made
/// in a date range (`start_date`, `end_date`, ISO 8601; default the last 30 days, at
/// most a year), by their status now, counted from the list index without reading the
/// documents. Oneself, or any member for a manager or admin.
pub fn statistics(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    if id != pr.user.id {
        manager_or_admin(pr)?;
    }
    let (u, _) = members::member(cx, pr, id)?;
    let time = |name: &str| -> ApiResult<Option<u64>> {
        match req.query_param(name).filter(|v| !v.trim().is_empty()) {
            None => Ok(None),
            Some(v) => parse_time(&v).map(Some).ok_or_else(|| {
                http::ApiError::bad_request(
                    "invalid_parameter",
                    format!("`{name}` must be an ISO 8601 date or timestamp, e.g. 2026-01-31"),
                )
            }),
        }
    };
    let now = cx.now();
    let end = time("end_date")?.unwrap_or(now);
    let start = time("start_date")?.unwrap_or(end.saturating_sub(30 * 24 * 3600 * 1000));
    if start > end || end - start > MAX_SPAN_MS {
        return Err(http::ApiError::bad_request(
            "invalid_parameter",
            "`start_date` must come before `end_date`, at most a year apart",
        ));
    }
    let mut counts = serde_json::Map::new();
    let mut total = 0u64;
    let mut capped = false;
    let by_status = list::created_by_status(cx, &pr.entity.id, &u.id, (start, end), MAX_COUNTED);
    for (status, n) in by_status {
        capped |= n == u64::from(MAX_COUNTED);
        total += n;
        counts.insert(status.to_string(), n.into());
    }
    let signed = counts["signed"].as_u64().unwrap_or(0)
        + counts["signedwithoutverification"].as_u64().unwrap_or(0);
    let sent = total
        - ["draft", "importing", "archived", "scheduled", "processing"]
            .iter()
            .map(|k| counts[*k].as_u64().unwrap_or(0))
            .sum::<u64>();
    Ok(json(
        200,
        &json!({
            "daterange": {"start_date": iso8601(start), "end_date": iso8601(end)},
            "statistics": {
                "user_id": u.id,
                "documents_created": total,
                "documents_sent": sent,
                "documents_signed": signed,
                "by_status": counts,
                "capped": capped,
            },
        }),
    ))
}

/// A `role` member of a body: `None` when absent or empty, 400 `invalid_role` for a
/// name that is not a role.
fn parse_role(given: Option<String>) -> ApiResult<Option<Role>> {
    match given.filter(|r| !r.is_empty()) {
        None => Ok(None),
        Some(r) => Role::parse(&r).map(Some).ok_or_else(|| {
            http::ApiError::bad_request("invalid_role", "role must be user, manager or admin")
        }),
    }
}

/// `POST /v1/users`: invites a person to the caller's entity (`domain::invitations`).
/// Body: `email`, `first_name`, `last_name` (or `fullname`), `role` (`user` by
/// default), `team_id`, `password` (at least 8 characters: a new account's, ignored
/// for an existing one). The answer is the pending member, the same whether or not
/// the email has an account in another entity; it never carries a password (a new
/// account without a chosen one gets one made and mailed to its owner only).
pub fn create(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    manager_or_admin(pr)?;
    let f = req.body_fields()?;
    let role = parse_role(f.optional_str("role")?)?.unwrap_or(accounts::Role::User);
    may_manage(pr, role)?;
    let email = f.required_str("email")?;
    let (mut first, mut last) = (
        f.optional_str("first_name")?.unwrap_or_default(),
        f.optional_str("last_name")?.unwrap_or_default(),
    );
    if first.is_empty()
        && last.is_empty()
        && let Some(full) = f.optional_str("fullname")?
    {
        let full = full.trim();
        match full.split_once(' ') {
            Some((a, b)) => (first, last) = (a.to_string(), b.trim().to_string()),
            None => first = full.to_string(),
        }
    }
    let team_id = f.optional_str("team_id")?.filter(|t| !t.trim().is_empty());
    let password = f.optional_str("password")?.filter(|p| !p.is_empty());
    let who = Invitee {
        email,
        first_name: first,
        last_name: last,
        role,
        team_id,
        password,
    };
    let lang = from_accept_language(req.header("accept-language"));
    let (user, m) = invitations::invite(cx, &pr.entity, &pr.user, who, lang)?;
    Ok(json(200, &detail_json(cx, pr, &user, &m)))
}

/// `PUT /v1/users/{id}`: moves a member to another team (`team_id`; empty for none)
/// and/or gives them another `role`; members absent from the body keep theirs.
pub fn update(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    manager_or_admin(pr)?;
    let f = req.body_fields()?;
    let role = parse_role(f.optional_str("role")?)?;
    let team = f.optional_str("team_id")?.map(|t| t.trim().to_string());
    let found = members::member(cx, pr, id)?;
    let (user, m) = members::change(cx, pr, found, role, team)?;
    Ok(json(200, &detail_json(cx, pr, &user, &m)))
}

/// `DELETE /v1/users/{id}`: removes the member from the caller's entity.
pub fn remove(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    manager_or_admin(pr)?;
    let found = members::member(cx, pr, id)?;
    members::remove(cx, pr, found)?;
    Ok(no_content())
}

/// `GET /v1/teams`: the teams of the entity (the `team_id`s its members carry), with
/// how many members each has.
pub fn teams(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let pr = authenticate(cx, req)?;
    let counts = members::teams(cx, &pr.entity.id);
    let items: Vec<Value> = counts
        .into_iter()
        .map(|(t, n)| json!({"team_id": t, "name": t, "status": "active", "team_user_count": n}))
        .collect();
    Ok(json(200, &json!({ "teams": items })))
}
