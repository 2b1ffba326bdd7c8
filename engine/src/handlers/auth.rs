//! Token authentication (spec §4.1, §5.1): login, refresh, entity switching, the
//! authenticated-user reads, revocation, and the bearer check every other route uses.

use crate::base::api::{JobSpec, Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, json, json_of};
use crate::base::job_kinds;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, is_id, new_secret, sha256_hex};
use crate::domain::accounts::{
    self, Entity, Membership, Token, User, entity_key, membership_key, token_key,
};
use crate::domain::auth::{
    PURGE_GRACE_MS, authenticate, check_password, check_selectable, check_spacing, no_api_access,
    profiles,
};
use crate::domain::{invitations, signup};
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

    let cannot_load = || {
        http::ApiError::not_found(
            "account_not_found",
            "the account cannot be loaded: it has no profile in any entity",
        )
    };
    let (entity_id, explicit) = match requested_entity {
        Some(id) => (id, true),
        None => (
            user.default_entity_id.clone().ok_or_else(cannot_load)?,
            false,
        ),
    };
    let membership = match cx.load::<Membership>(&membership_key(&user.id, &entity_id)) {
        Some(m) => m,
        None if explicit => {
            return Err(http::ApiError::bad_request(
                "invalid_entity",
                format!("entity_id {entity_id:?} is not an entity this user belongs to"),
            ));
        }
        None => return Err(cannot_load()),
    };
    if membership.profile == accounts::Profile::None {
        return Err(http::ApiError::not_found(
            "profile_not_found",
            "the user has no profile in that entity",
        ));
    }
    let entity = cx
        .load::<Entity>(&entity_key(&entity_id))
        .ok_or_else(cannot_load)?;
    if !user.active {
        return Err(http::ApiError::forbidden(
            "user_inactive",
            "the user is not active",
        ));
    }
    if !entity.api_access {
        return Err(no_api_access());
    }
    if entity.marked_for_deletion {
        return Err(http::ApiError::new(
            423,
            "entity_locked",
            "the selected entity is marked for deletion",
        ));
    }
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
    // Counted before the email is looked up (and kept when it is taken: a call's
    // writes commit whatever it answers), so past the limit a known email gets the same
    // 429 as an unknown one, and emails are never told apart faster than sign-ups are
    // allowed.
    signup::count(cx, &req.remote_addr)?;
    if accounts::user_id_by_email(cx, &email).is_some() {
        // GetAccept's clients read 400s, not 409s.
        return Err(http::ApiError::bad_request(
            "email_taken",
            format!("an account with email {email} already exists; sign in instead"),
        ));
    }
    let mut user = accounts::new_user(cx, &email, &password, first_name, last_name)?;
    let entity_name = Some(entity_name)
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| accounts::user_name(&user));
    let entity = accounts::new_entity(cx, entity_name, None)?;
    cx.save(&entity_key(&entity.id), &entity);
    let membership = Membership {
        user_id: user.id.clone(),
        entity_id: entity.id.clone(),
        role: accounts::Role::Admin,
        profile: accounts::Profile::Active,
        team_id: None,
    };
    accounts::add_membership(cx, &mut user, &membership);
    if !mobile.is_empty() {
        let profile = accounts::UserProfile {
            mobile,
            title: String::new(),
        };
        cx.save(&accounts::user_profile_key(&user.id), &profile);
    }
    issue_token(cx, &mut user, &entity.id)
}

/// Issues a token for `user` in `entity_id`, enforcing the spacing rule (429).
fn issue_token(cx: &mut Cx, user: &mut User, entity_id: &str) -> ApiResult<Response> {
    let now = cx.now();
    let settings = cx.settings().clone();
    check_spacing(cx, user)?;

    let secret = new_secret(cx);
    let hash = sha256_hex(secret.as_bytes());
    let token = Token {
        user_id: user.id.clone(),
        entity_id: entity_id.to_string(),
        issued_ms: now,
        expires_ms: now + settings.token_ttl_secs * 1000,
    };
    cx.save(&token_key(&hash), &token);
    cx.p.schedule_job(JobSpec {
        kind: job_kinds::TOKEN_PURGE.into(),
        payload: hash.into_bytes(),
        run_at_ms: token.expires_ms + PURGE_GRACE_MS,
        work: None,
        scope: String::new(),
    });
    let mut resp = json(
        200,
        &json!({ "access_token": secret, "expires_in": settings.token_ttl_secs }),
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

/// The entity whose SAML integration governs switching away from `current`: its parent,
/// or itself when it has none.
fn saml_root(cx: &mut Cx, current: &Entity) -> Option<Entity> {
    match &current.parent_id {
        Some(parent) => cx.load::<Entity>(&entity_key(parent)),
        None => Some(current.clone()),
    }
}

/// Whether the SAML rule (spec §5.1 rule 4) lets a user in `current` select `target`.
fn saml_allows(root: Option<&Entity>, target: &Entity) -> bool {
    match root {
        Some(root) if root.saml => {
            target.id == root.id || target.parent_id.as_deref() == Some(root.id.as_str())
        }
        _ => true,
    }
}

/// `GET /v1/refresh/{entity}`: a token for another entity of the user; switching to an
/// entity the user was invited to accepts the invitation.
pub fn refresh_entity(cx: &mut Cx, req: &Request, target_id: &str) -> ApiResult<Response> {
    let mut pr = authenticate(cx, req)?;
    // Unknown and foreign entities get the same answer: no way to learn which exist.
    let invalid = || {
        http::ApiError::bad_request(
            "invalid_entity",
            format!("{target_id:?} is not the id of an entity you are a member of"),
        )
    };
    if !is_id(target_id) {
        return Err(invalid());
    }
    let target = cx
        .load::<Entity>(&entity_key(target_id))
        .ok_or_else(invalid)?;
    let membership = cx
        .load::<Membership>(&membership_key(&pr.user.id, target_id))
        .ok_or_else(invalid)?;
    let root = saml_root(cx, &pr.entity);
    if !saml_allows(root.as_ref(), &target) {
        return Err(http::ApiError::bad_request(
            "saml_restricted",
            "a SAML integration restricts this user to its entity and that entity's children",
        ));
    }
    if membership.profile == accounts::Profile::None {
        return Err(http::ApiError::not_found(
            "profile_not_found",
            "the user has no profile in that entity",
        ));
    }
    check_selectable(&target)?;
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
    let root = saml_root(cx, &pr.entity);
    let mut entities = Vec::new();
    for (m, entity) in profiles(cx, &pr.user.id) {
        if saml_allows(root.as_ref(), &entity) {
            entities.push(json!({
                "id": entity.id,
                "name": entity.name,
                "role": m.role.as_str(),
                "profile": m.profile.as_str(),
                "parent_id": entity.parent_id,
            }));
        }
    }
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
    cx.p.delete(&token_key(&pr.token_hash));
    Ok(Response {
        status: 200,
        headers: Vec::new(),
        body: Vec::new(),
    })
}
