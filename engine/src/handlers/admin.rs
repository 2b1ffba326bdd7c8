//! Routes of the local administrator (origin `admin`, never reachable over HTTP):
//! first-run bootstrap and the management of entities, users and memberships that the
//! `esign admin` CLI drives, and the pages of `esign admin check` (`domain/check.rs`).
//! Their routes are `router::ADMIN_ROUTES`.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, Fields, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::new_secret;
use crate::domain::accounts::{
    self, Entity, Membership, User, add_membership, new_entity, new_user,
};
use crate::domain::{check, signup};
use serde_json::{Value, json};

/// `GET /admin/entities`.
pub fn entities(cx: &mut Cx) -> Response {
    list(accounts::all_entities(cx), entity_json)
}

/// `GET /admin/users`.
pub fn users(cx: &mut Cx) -> Response {
    list(accounts::all_users(cx), user_json)
}

/// `POST /admin/signup`: sign-up on or off.
pub fn set_signup(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let f = req.body_fields()?;
    let enabled = f.optional_bool("enabled")?.ok_or_else(|| {
        http::ApiError::bad_request("missing_field", "the field `enabled` is required")
    })?;
    signup::set_config(cx, &signup::Config { enabled });
    Ok(json(200, &json!({ "enabled": enabled })))
}

fn entity_json(e: Entity) -> Value {
    json!({
        "id": e.id, "name": e.name, "parent_id": e.parent_id, "saml": e.saml,
        "api_access": e.api_access, "subscription_active": e.subscription_active,
        "quarantined": e.quarantined, "marked_for_deletion": e.marked_for_deletion,
        "delete_admin_only": e.delete_admin_only,
    })
}

fn user_json(u: User) -> Value {
    json!({
        "id": u.id, "email": u.email, "first_name": u.first_name,
        "last_name": u.last_name, "active": u.active,
        "default_entity_id": u.default_entity_id,
    })
}

fn list<T>(items: Vec<T>, render: fn(T) -> Value) -> Response {
    json(200, &Value::Array(items.into_iter().map(render).collect()))
}

/// Applies the optional boolean flags of an entity body.
fn apply_entity_flags(e: &mut Entity, f: &Fields) -> ApiResult<()> {
    let flags: [(&str, &mut bool); 6] = [
        ("saml", &mut e.saml),
        ("api_access", &mut e.api_access),
        ("subscription_active", &mut e.subscription_active),
        ("quarantined", &mut e.quarantined),
        ("marked_for_deletion", &mut e.marked_for_deletion),
        ("delete_admin_only", &mut e.delete_admin_only),
    ];
    for (name, slot) in flags {
        if let Some(v) = f.optional_bool(name)? {
            *slot = v;
        }
    }
    Ok(())
}

pub fn create_entity(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let f = req.body_fields()?;
    let mut e = new_entity(cx, f.required_str("name")?, f.optional_str("parent_id")?)?;
    apply_entity_flags(&mut e, &f)?;
    accounts::store_entity(cx, &e);
    Ok(json(201, &entity_json(e)))
}

pub fn update_entity(cx: &mut Cx, req: &Request, id: &str) -> ApiResult<Response> {
    let f = req.body_fields()?;
    let mut e = accounts::entity(cx, id)?;
    if let Some(name) = f.optional_str("name")? {
        e.name = name;
    }
    apply_entity_flags(&mut e, &f)?;
    accounts::store_entity(cx, &e);
    Ok(json(200, &entity_json(e)))
}

pub fn create_user(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let f = req.body_fields()?;
    let mut user = new_user(
        cx,
        &f.required_str("email")?,
        &f.required_str("password")?,
        f.optional_str("first_name")?.unwrap_or_default(),
        f.optional_str("last_name")?.unwrap_or_default(),
    )?;
    if let Some(active) = f.optional_bool("active")? {
        user.active = active;
        accounts::store_user(cx, &user);
    }
    Ok(json(201, &user_json(user)))
}

pub fn update_user(cx: &mut Cx, req: &Request, id: &str) -> ApiResult<Response> {
    let f = req.body_fields()?;
    let mut user = accounts::user(cx, id)?;
    if let Some(active) = f.optional_bool("active")? {
        user.active = active;
    }
    if let Some(password) = f.optional_str("password")? {
        accounts::set_password(cx, &mut user, &password);
    }
    accounts::store_user(cx, &user);
    Ok(json(200, &user_json(user)))
}

pub fn put_membership(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let f = req.body_fields()?;
    let user_id = f.required_str("user_id")?;
    let entity_id = f.required_str("entity_id")?;
    let mut user = accounts::user(cx, &user_id)?;
    accounts::entity_exists(cx, &entity_id)?;
    let role_text = f.optional_str("role")?.unwrap_or_else(|| "user".into());
    let role = accounts::Role::parse(&role_text).ok_or_else(|| {
        http::ApiError::bad_request("invalid_role", "role must be user, manager or admin")
    })?;
    let profile_text = f
        .optional_str("profile")?
        .unwrap_or_else(|| "active".into());
    let profile = accounts::Profile::parse(&profile_text).ok_or_else(|| {
        http::ApiError::bad_request("invalid_profile", "profile must be pending, active or none")
    })?;
    let m = Membership {
        user_id,
        entity_id,
        role,
        profile,
        team_id: f.optional_str("team_id")?.filter(|t| !t.is_empty()),
    };
    add_membership(cx, &mut user, &m);
    Ok(json(
        201,
        &json!({
            "user_id": m.user_id, "entity_id": m.entity_id, "role": role.as_str(),
            "profile": profile.as_str(), "team_id": m.team_id,
        }),
    ))
}

/// First run: with no user in the store, creates an entity and an admin user in it. The
/// password is the one given or a generated one, returned once. With users present it
/// changes nothing and answers `{"created": false}`.
pub fn bootstrap(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let f = req.body_fields()?;
    if accounts::has_users(cx) {
        return Ok(json(200, &json!({ "created": false })));
    }
    let email = f.required_str("email")?;
    let (password, generated) = match f.optional_str("password")?.filter(|p| !p.is_empty()) {
        Some(p) => (p, false),
        None => (new_secret(cx)[..24].to_string(), true),
    };
    let entity_name = f
        .optional_str("entity_name")?
        .unwrap_or_else(|| "Default".into());
    let (entity, user) = accounts::bootstrap(cx, &email, &password, entity_name)?;
    Ok(json(
        201,
        &json!({
            "created": true,
            "entity": entity_json(entity),
            "user": user_json(user),
            "generated_password": if generated { Some(password) } else { None },
        }),
    ))
}

/// One page of the store check: `POST /admin/check/{documents,index,references,blobs}`
/// with `{after, limit, repair}` (`blobs`: `{blobs, repair}`; `references` with `refs`:
/// which of those reference keys still exist).
pub fn check(cx: &mut Cx, req: &Request, phase: &str) -> ApiResult<Response> {
    let f = req.body_fields()?;
    let after = f.optional_str("after")?.unwrap_or_default();
    let limit = f
        .optional_number("limit")?
        .unwrap_or(100.0)
        .clamp(1.0, 10_000.0) as u32;
    let repair = f.optional_bool("repair")?.unwrap_or(false);
    let strings = |name: &str| -> ApiResult<Vec<String>> {
        Ok(f.optional_json(name)?
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default())
    };
    let page = match phase {
        "documents" => check::documents(cx, &after, limit, repair),
        "index" => check::index(cx, &after, limit, repair),
        "blobs" => check::unreferenced(cx, &strings("blobs")?, repair),
        "references" if f.has("refs") => {
            let live = check::still_referenced(cx, &strings("refs")?);
            return Ok(json(200, &json!({ "refs": live })));
        }
        "references" => {
            let (refs, next) = check::references(cx, &after, limit);
            let refs: Vec<Value> = refs
                .into_iter()
                .map(|r| json!({"key": r.key, "blob": r.blob, "owner": r.owner}))
                .collect();
            return Ok(json(200, &json!({ "refs": refs, "next": next })));
        }
        _ => return Err(http::ApiError::not_found("not_found", "no such check")),
    };
    Ok(json(
        200,
        &json!({
            "checked": page.checked, "next": page.next,
            "problems": page.problems, "repaired": page.repaired,
        }),
    ))
}
