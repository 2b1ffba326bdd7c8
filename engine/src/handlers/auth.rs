//! Token authentication (spec §4.1, §5.1): login, refresh, entity switching, the
//! authenticated-user reads, revocation, and the bearer check every other route uses.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, json, json_of};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util;
use crate::domain::accounts::{self, User};
use crate::domain::auth::{self, authenticate, check_password, check_selectable};
use crate::domain::invitations;
use crate::domain::signup::{self, Registration};
use serde_json::json;

/// `POST /v1/auth`: email + password (+ `entity_id`) → a token for that entity.
/// Signing in to an entity the user was invited to accepts the invitation
/// (`domain::invitations`): the membership becomes active.
pub fn login(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let fields = req.body_fields()?;
    let email = fields.required_str("email")?;
    let password = fields.required_str("password")?;
    let requested_entity = fields.optional_str("entity_id")?.filter(|s| !s.is_empty());

    let mut user = check_password(cx, &email, &password, &req.remote_addr)?;

    let entity = auth::login_entity(cx, &user, requested_entity)?;
    let resp = issue_token(cx, &mut user, &entity.id)?;
    invitations::accept(cx, &user.id, &entity.id);
    Ok(resp)
}

/// `POST /v1/register` (GetAccept's self sign-up): a new user, admin of a new entity,
/// and a token for it (`{access_token, expires_in}`). 403 `signup_disabled` unless the
/// operator turned sign-up on; every check of the body comes before the sign-up is
/// counted against the source's hourly allowance (`domain::signup`).
pub fn register(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    if !signup::config(cx).enabled {
        return Err(http::ApiError::forbidden(
            "signup_disabled",
            "self sign-up is not enabled on this server; ask its operator for an account",
        ));
    }
    let f = req.body_fields()?;
    let text = |k: &str| -> ApiResult<String> {
        Ok(f.optional_str(k)?.unwrap_or_default().trim().to_string())
    };
    let email = f.required_str("email")?.trim().to_string();
    let password = f.required_str("password")?;
    let (first_name, last_name, mobile) =
        (text("first_name")?, text("last_name")?, text("mobile")?);
    accounts::check_new_credentials(&email, &password)?;
    if !mobile.is_empty() && !util::is_mobile(&mobile) {
        return Err(http::ApiError::bad_request(
            "invalid_field",
            format!("the field `mobile` {mobile:?} is not a valid mobile number"),
        ));
    }
    let country = text("entity_country_code")?;
    let entity_name = text("entity_name")?;
    let two_letters = country.len() == 2 && country.bytes().all(|b| b.is_ascii_alphabetic());
    if !country.is_empty() && !two_letters {
        return Err(http::ApiError::bad_request(
            "invalid_field",
            "the field `entity_country_code` must be a two-letter country code (ISO 3166-1)",
        ));
    }
    let registration = Registration {
        email,
        password,
        first_name,
        last_name,
        mobile,
        entity_name,
    };
    let (mut user, entity) = signup::register(cx, &req.remote_addr, registration)?;
    issue_token(cx, &mut user, &entity.id)
}

/// Issues a token for `user` in `entity_id`, enforcing the spacing rule (429).
fn issue_token(cx: &mut Cx, user: &mut User, entity_id: &str) -> ApiResult<Response> {
    let token = auth::issue_token(cx, user, entity_id)?;
    let mut resp = json(
        200,
        &json!({ "access_token": token.secret, "expires_in": token.expires_in }),
    );
    // The answer carries a token: no cache may keep it (RFC 6749 §5.1).
    resp.headers
        .push(("cache-control".into(), "no-store".into()));
    Ok(resp)
}

/// `GET /v1/refresh`: a new token for the current entity.
pub fn refresh(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let mut pr = authenticate(cx, req)?;
    check_selectable(&pr.entity)?;
    issue_token(cx, &mut pr.user, &pr.entity.id)
}

/// `GET /v1/refresh/{entity}`: a token for another entity of the user; switching to an
/// entity the user was invited to accepts the invitation.
pub fn refresh_entity(cx: &mut Cx, req: &Request, target_id: &str) -> ApiResult<Response> {
    let mut pr = authenticate(cx, req)?;
    let target = auth::switch_target(cx, &pr, target_id)?;
    let resp = issue_token(cx, &mut pr.user, &target.id)?;
    invitations::accept(cx, &pr.user.id, &target.id);
    Ok(resp)
}

/// `GET /v1/test`: who the token belongs to.
pub fn test(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    /// The answer, members in the order `json!` sorts them: the API's cheapest call
    /// serializes borrowed strings instead of building a map of copies.
    #[derive(serde::Serialize)]
    struct Test<'a> {
        entity_id: &'a str,
        entity_name: &'a str,
        first_name: &'a str,
        last_name: &'a str,
        user_id: &'a str,
    }
    let pr = authenticate(cx, req)?;
    Ok(json_of(
        200,
        &Test {
            entity_id: &pr.entity.id,
            entity_name: &pr.entity.name,
            first_name: &pr.user.first_name,
            last_name: &pr.user.last_name,
            user_id: &pr.user.id,
        },
    ))
}

/// `GET /v1/users/me`: the user and the entities the user may select.
pub fn me(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let pr = authenticate(cx, req)?;
    let profile = accounts::user_profile(cx, &pr.user.id);
    let entities: Vec<_> = auth::selectable_profiles(cx, &pr)
        .into_iter()
        .map(|(m, entity)| {
            json!({
                "id": entity.id,
                "name": entity.name,
                "role": m.role.as_str(),
                "profile": m.profile.as_str(),
                "parent_id": entity.parent_id,
            })
        })
        .collect();
    Ok(json(
        200,
        &json!({
            "user": {
                "id": pr.user.id,
                "email": pr.user.email,
                "first_name": pr.user.first_name,
                "last_name": pr.user.last_name,
                "entity_id": pr.entity.id,
                "role": pr.membership.role.as_str(),
                "team_id": pr.membership.team_id,
                "status": "active",
                "mobile": profile.mobile,
                "title": profile.title,
                // GetAccept's clients read it; esign keeps no pictures of people.
                "thumb_url": "",
            },
            "entities": entities,
        }),
    ))
}

/// `GET /v1/revoke`: the presented token stops working at once; 200 without a body, as
/// GetAccept answers it.
pub fn revoke(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let pr = authenticate(cx, req)?;
    auth::revoke_token(cx, &pr.token_hash);
    Ok(Response {
        status: 200,
        headers: Vec::new(),
        body: Vec::new(),
    })
}
