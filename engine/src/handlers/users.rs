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
use crate::base::records::{decode, prefix_range};
use crate::base::util::{iso8601, parse_time};
use crate::domain::accounts::{
    self, Membership, Role, User, add_membership, entity_member_key, membership_key,
    memberships_of, team_key, user_key,
};
use crate::domain::auth::{Principal, authenticate};
use crate::domain::document::{self, SortKey, hex, index_prefix, scope_user};
use crate::domain::invitations::{self, Invitee};
use serde_json::{Value, json};

/// 403 unless the caller is a manager or an admin of the entity.
fn manager_or_admin(pr: &Principal) -> ApiResult<()> {
    if pr.membership.role == accounts::Role::User {
        return Err(http::ApiError::forbidden(
            "forbidden",
            "only managers and admins of the entity manage its users",
        ));
    }
    Ok(())
}

/// 403 unless the caller may add or remove a member with `role`.
fn may_manage(pr: &Principal, role: Role) -> ApiResult<()> {
    manager_or_admin(pr)?;
    if pr.membership.role == accounts::Role::Manager && role != accounts::Role::User {
        return Err(http::ApiError::forbidden(
            "forbidden",
            format!(
                "a manager adds and removes users only; a member with the role {} needs an admin",
                role.as_str()
            ),
        ));
    }
    Ok(())
}

/// A member as the entity may see them: until an invited person accepts, what the
/// entity gave (email, names, the invitation's time; no sign-in, no profile), never the
/// account's own data, which may belong to other entities' worlds.
struct Shown {
    user: User,
    invited: bool,
}

fn shown(cx: &mut Cx, user: &User, m: &Membership) -> Shown {
    let mut user = user.clone();
    let invitation = (m.profile == accounts::Profile::Pending)
        .then(|| invitations::invitation(cx, &user.id, &m.entity_id))
        .flatten();
    let invited = invitation.is_some();
    if let Some(inv) = invitation {
        user.email = inv.email;
        user.first_name = inv.first_name;
        user.last_name = inv.last_name;
        user.created_ms = inv.created_ms;
        user.last_token_ms = 0;
        user.active = true;
    }
    Shown { user, invited }
}

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

/// The members of the caller's entity, with their accounts.
fn members(cx: &mut Cx, entity_id: &str) -> Vec<(User, Membership)> {
    let (start, end) = prefix_range(&format!("ent-mem/{entity_id}/"));
    let ids: Vec<String> =
        cx.p.scan(&start, &end, u32::MAX, false)
            .into_iter()
            .filter_map(|(k, _)| {
                let k = String::from_utf8(k).ok()?;
                k.rsplit('/').next().map(str::to_string)
            })
            .collect();
    ids.into_iter()
        .filter_map(|id| {
            let m: Membership = cx.load(&membership_key(&id, entity_id))?;
            let u: User = cx.load(&user_key(&id))?;
            Some((u, m))
        })
        .collect()
}

/// `GET /v1/users`: the entity's members (managers and admins).
pub fn list(cx: &mut Cx, pr: &Principal) -> ApiResult<Response> {
    manager_or_admin(pr)?;
    let items: Vec<Value> = members(cx, &pr.entity.id)
        .iter()
        .filter(|(_, m)| m.profile != accounts::Profile::None)
        .map(|(u, m)| item_json(&shown(cx, u, m), m))
        .collect();
    Ok(json(200, &json!({ "users": items })))
}

/// The member `id` of the caller's entity, or 404 (a user of another entity is not
/// told apart from no user at all).
fn member(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<(User, Membership)> {
    let not_found =
        || http::ApiError::not_found("user_not_found", format!("no user {id} in this entity"));
    let m: Membership = cx
        .load(&membership_key(id, &pr.entity.id))
        .filter(|m: &Membership| m.profile != accounts::Profile::None)
        .ok_or_else(not_found)?;
    let u: User = cx.load(&user_key(id)).ok_or_else(not_found)?;
    Ok((u, m))
}

/// `GET /v1/users/{id}`: a member's details; the caller's own for everyone, any
/// member's for managers and admins.
pub fn get(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    if id != pr.user.id {
        manager_or_admin(pr)?;
    }
    let (u, m) = member(cx, pr, id)?;
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
    let (u, _) = member(cx, pr, id)?;
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
    for status in document::Status::ALL {
        let prefix = index_prefix(
            &pr.entity.id,
            &scope_user(&u.id),
            status.as_str(),
            SortKey::Created,
        );
        let from = format!("{prefix}{}", hex(start)).into_bytes();
        let to = format!("{prefix}{}", hex(end.saturating_add(1))).into_bytes();
        let n = cx.p.scan(&from, &to, MAX_COUNTED, false).len() as u64;
        capped |= n == u64::from(MAX_COUNTED);
        total += n;
        counts.insert(status.as_str().to_string(), n.into());
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
    let (mut user, mut m) = member(cx, pr, id)?;
    may_manage(pr, m.role)?;
    if let Some(role) = role {
        if role != m.role && user.id == pr.user.id {
            return Err(http::ApiError::new(
                409,
                "cannot_change_own_role",
                "you cannot change your own role; another admin can",
            ));
        }
        may_manage(pr, role)?;
        m.role = role;
    }
    if let Some(team) = team {
        m.team_id = Some(team).filter(|t| !t.is_empty());
    }
    add_membership(cx, &mut user, &m);
    Ok(json(200, &detail_json(cx, pr, &user, &m)))
}

/// `DELETE /v1/users/{id}`: removes the member from the caller's entity.
pub fn remove(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    manager_or_admin(pr)?;
    let (mut user, m) = member(cx, pr, id)?;
    if user.id == pr.user.id {
        return Err(http::ApiError::new(
            409,
            "cannot_remove_self",
            "you cannot remove yourself from the entity; another admin can",
        ));
    }
    may_manage(pr, m.role)?;
    if let Some(team) = &m.team_id {
        cx.p.delete(&team_key(&m.entity_id, team, &m.user_id));
    }
    cx.p.delete(&membership_key(&m.user_id, &m.entity_id));
    cx.p.delete(&entity_member_key(&m.entity_id, &m.user_id));
    invitations::forget(cx, &m.user_id, &m.entity_id);
    let (start, end) = memberships_of(&user.id);
    let rest: Vec<Membership> =
        cx.p.scan(&start, &end, 1000, false)
            .into_iter()
            .map(|(_, v)| decode(&v))
            .collect();
    if user.default_entity_id.as_deref() == Some(m.entity_id.as_str()) {
        user.default_entity_id = rest.first().map(|o| o.entity_id.clone());
    }
    if rest.is_empty() {
        user.active = false;
    }
    cx.save(&user_key(&user.id), &user);
    Ok(no_content())
}

/// `GET /v1/teams`: the teams of the entity (the `team_id`s its members carry), with
/// how many members each has.
pub fn teams(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let pr = authenticate(cx, req)?;
    let (start, end) = prefix_range(&format!("team/{}/", pr.entity.id));
    let mut counts: Vec<(String, u64)> = Vec::new();
    for (k, _) in cx.p.scan(&start, &end, u32::MAX, false) {
        let Ok(k) = String::from_utf8(k) else {
            continue;
        };
        let Some(team) = k.split('/').nth(2) else {
            continue;
        };
        match counts.last_mut() {
            Some((t, n)) if t == team => *n += 1,
            _ => counts.push((team.to_string(), 1)),
        }
    }
    let items: Vec<Value> = counts
        .into_iter()
        .map(|(t, n)| json!({"team_id": t, "name": t, "status": "active", "team_user_count": n}))
        .collect();
    Ok(json(200, &json!({ "teams": items })))
}
