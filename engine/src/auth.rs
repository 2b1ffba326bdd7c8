//! Token authentication (spec §4.1, §5.1): login, refresh, entity switching, the
//! authenticated-user reads, revocation, and the bearer check every other route uses.

use crate::http::{ApiError, ApiResult, json, json_of};
use crate::model::{
    Entity, Membership, Profile, Token, User, entity_key, membership_key, memberships_of,
    token_key, user_email_key, user_key,
};
#[allow(unused_imports)]
use crate::prelude::*;
use crate::util::{is_id, new_secret, normalize_email, sha256_hex};
use crate::{Cx, JobOutcome, JobSpec, Mail, Request, Response};
use serde_json::json;

/// Job that deletes a token record a while after it expired.
pub const PURGE_TOKEN_JOB: &str = "token.purge";

/// How long an expired token is remembered, so that its holder is told "expired"
/// rather than "invalid".
const PURGE_GRACE_MS: u64 = 7 * 24 * 3600 * 1000;

/// The caller of an authenticated request.
#[derive(Clone)]
pub struct Principal {
    pub user: User,
    pub membership: Membership,
    pub entity: Entity,
    pub token_hash: String,
}

fn invalid_credentials() -> ApiError {
    ApiError::bad_request("invalid_credentials", "wrong email or password")
}

/// `POST /v1/auth`: email + password (+ `entity_id`) → a token for that entity.
pub fn login(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let fields = req.body_fields()?;
    let email = fields.required_str("email")?;
    let password = fields.required_str("password")?;
    let requested_entity = fields.optional_str("entity_id")?.filter(|s| !s.is_empty());

    let mut user = check_password(cx, &email, &password)?;

    let cannot_load = || {
        ApiError::not_found(
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
            return Err(ApiError::bad_request(
                "invalid_entity",
                format!("entity_id {entity_id:?} is not an entity this user belongs to"),
            ));
        }
        None => return Err(cannot_load()),
    };
    if membership.profile == Profile::None {
        return Err(ApiError::not_found(
            "profile_not_found",
            "the user has no profile in that entity",
        ));
    }
    let entity = cx
        .load::<Entity>(&entity_key(&entity_id))
        .ok_or_else(cannot_load)?;
    if !user.active {
        return Err(ApiError::forbidden(
            "user_inactive",
            "the user is not active",
        ));
    }
    if !entity.api_access {
        return Err(no_api_access());
    }
    if entity.marked_for_deletion {
        return Err(ApiError::new(
            423,
            "entity_locked",
            "the selected entity is marked for deletion",
        ));
    }
    issue_token(cx, &mut user, &entity.id)
}

/// Checks an email and password under the lockout rule (spec §8): an unknown email costs
/// the same work as a wrong password, a locked account fails even with the right one,
/// and `login_max_failures` failures in a row lock it (and mail its owner).
pub(crate) fn check_password(cx: &mut Cx, email: &str, password: &str) -> ApiResult<User> {
    let user_id =
        cx.p.get(&user_email_key(&normalize_email(email)))
            .and_then(|v| String::from_utf8(v).ok());
    let Some(mut user) = user_id.and_then(|id| cx.load::<User>(&user_key(&id))) else {
        // Same work and same answer as a wrong password: no account enumeration.
        cx.p.verify_password(password, "");
        return Err(invalid_credentials());
    };

    let now = cx.now();
    if user.locked_until_ms > now {
        let secs = (user.locked_until_ms - now).div_ceil(1000);
        return Err(ApiError::bad_request(
            "login_locked",
            format!("too many failed logins; this account is locked for {secs} more seconds"),
        ));
    }
    if !cx.p.verify_password(password, &user.password_hash) {
        let settings = cx.settings().clone();
        user.failed_logins += 1;
        if user.failed_logins >= settings.login_max_failures {
            user.failed_logins = 0;
            user.locked_until_ms = now + settings.login_lock_secs * 1000;
            cx.p.send_mail(lock_notice(&user, &settings));
        }
        cx.save(&user_key(&user.id), &user);
        return Err(invalid_credentials());
    }
    if user.failed_logins != 0 || user.locked_until_ms != 0 {
        user.failed_logins = 0;
        user.locked_until_ms = 0;
        cx.save(&user_key(&user.id), &user);
    }
    Ok(user)
}

/// The email telling an account's owner that repeated failures locked it.
fn lock_notice(user: &User, settings: &crate::Settings) -> Mail {
    let minutes = settings.login_lock_secs.div_ceil(60);
    Mail {
        to: user.email.clone(),
        subject: "Your esign account is locked".into(),
        body: format!(
            "Hello {name},\n\n\
             after {n} failed sign-in attempts in a row, sign-in to your esign account \
             {email} is locked for {minutes} minutes.\n\n\
             If these attempts were not yours, someone may be guessing your password: \
             change it once the lock ends, and tell your administrator.\n",
            name = if user.first_name.is_empty() {
                &user.email
            } else {
                &user.first_name
            },
            n = settings.login_max_failures,
            email = user.email,
        ),
        tag: String::new(),
    }
}

fn no_api_access() -> ApiError {
    ApiError::forbidden("no_api_access", "the entity has no API access")
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
        kind: PURGE_TOKEN_JOB.into(),
        payload: hash.into_bytes(),
        run_at_ms: token.expires_ms + PURGE_GRACE_MS,
        work: None,
        scope: String::new(),
    });
    Ok(json(
        200,
        &json!({ "access_token": secret, "expires_in": settings.token_ttl_secs }),
    ))
}

/// The spacing rule (spec §8): 429 with `Retry-After` when the user's last token was
/// issued less than `token_min_interval_ms` ago; otherwise records this issuance.
pub(crate) fn check_spacing(cx: &mut Cx, user: &mut User) -> ApiResult<()> {
    let now = cx.now();
    let interval = cx.settings().token_min_interval_ms;
    let next_allowed = user.last_token_ms.saturating_add(interval);
    if user.last_token_ms != 0 && now < next_allowed {
        let wait_secs = (next_allowed - now).div_ceil(1000).max(1);
        return Err(ApiError::new(
            429,
            "too_many_requests",
            "token requests are too close together; wait and retry",
        )
        .with_header("retry-after", wait_secs.to_string()));
    }
    user.last_token_ms = now;
    cx.save(&user_key(&user.id), user);
    Ok(())
}

/// Checks `Authorization: Bearer <token>` and loads who is calling. 401 for a missing,
/// unknown or expired token; 403 when the token no longer grants access.
///
/// Inside an MCP tool call the caller is the agent's grant ([`Cx::agent`]) and the
/// request's headers are not read: the REST operation runs with exactly the rights
/// of the person who consented.
pub fn authenticate(cx: &mut Cx, req: &Request) -> ApiResult<Principal> {
    if let Some(pr) = &cx.agent {
        return Ok(pr.clone());
    }
    let header = req.header("authorization").ok_or_else(|| {
        ApiError::unauthorized("an access token is required: send Authorization: Bearer <token>")
    })?;
    let Some(secret) = bearer_secret(header) else {
        return Err(ApiError::unauthorized(
            "the Authorization header must be `Bearer <token>`",
        ));
    };
    let token_hash = sha256_hex(secret.as_bytes());
    let token = cx
        .load::<Token>(&token_key(&token_hash))
        .ok_or_else(|| ApiError::unauthorized("the access token is invalid or was revoked"))?;
    if token.expires_ms <= cx.now() {
        return Err(ApiError::unauthorized("the access token has expired"));
    }
    principal(cx, &token.user_id, &token.entity_id, token_hash)
}

/// The token of an `Authorization: Bearer <token>` header; `None` for another scheme
/// or an empty token.
pub(crate) fn bearer_secret(header: &str) -> Option<&str> {
    match header.split_once(' ') {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("bearer") => {
            Some(rest.trim()).filter(|s| !s.is_empty())
        }
        _ => None,
    }
}

/// The entities in which `user_id` has a profile (active or pending), with the
/// membership: what a user may choose among.
pub(crate) fn profiles(cx: &mut Cx, user_id: &str) -> Vec<(Membership, Entity)> {
    let (start, end) = memberships_of(user_id);
    let mut out = Vec::new();
    for (_, value) in cx.p.scan(&start, &end, 1000, false) {
        let m: Membership = crate::model::decode(&value);
        if m.profile == Profile::None {
            continue;
        }
        if let Some(entity) = cx.load::<Entity>(&entity_key(&m.entity_id)) {
            out.push((m, entity));
        }
    }
    out
}

/// Loads who acts for `user_id` in `entity_id` and checks they still may: 401 when the
/// user is gone; 403 when inactive, without a usable profile, or the entity has no API
/// access.
pub(crate) fn principal(
    cx: &mut Cx,
    user_id: &str,
    entity_id: &str,
    token_hash: String,
) -> ApiResult<Principal> {
    let user = cx
        .load::<User>(&user_key(user_id))
        .ok_or_else(|| ApiError::unauthorized("the token's user no longer exists"))?;
    if !user.active {
        return Err(ApiError::forbidden(
            "user_inactive",
            "the user is not active",
        ));
    }
    let no_access = || {
        ApiError::forbidden(
            "access_denied",
            "the token does not grant access to this entity",
        )
    };
    let membership = cx
        .load::<Membership>(&membership_key(&user.id, entity_id))
        .filter(|m| m.profile != Profile::None)
        .ok_or_else(no_access)?;
    if membership.profile == Profile::Pending {
        return Err(ApiError::forbidden(
            "profile_pending",
            "the user's profile in this entity is pending; it must be activated first",
        ));
    }
    let entity = cx
        .load::<Entity>(&entity_key(entity_id))
        .ok_or_else(no_access)?;
    if !entity.api_access {
        return Err(no_api_access());
    }
    Ok(Principal {
        user,
        membership,
        entity,
        token_hash,
    })
}

/// 403 unless the entity may be selected for a new token.
pub(crate) fn check_selectable(entity: &Entity) -> ApiResult<()> {
    let reason = if !entity.subscription_active {
        "the entity has no active subscription"
    } else if entity.quarantined {
        "the entity is quarantined"
    } else if entity.marked_for_deletion {
        "the entity is marked for deletion"
    } else if !entity.api_access {
        "the entity has no API access"
    } else {
        return Ok(());
    };
    Err(ApiError::forbidden("entity_unavailable", reason))
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

/// `GET /v1/refresh/{entity}`: a token for another entity of the user.
pub fn refresh_entity(cx: &mut Cx, req: &Request, target_id: &str) -> ApiResult<Response> {
    let mut pr = authenticate(cx, req)?;
    // Unknown and foreign entities get the same answer: no way to learn which exist.
    let invalid = || {
        ApiError::bad_request(
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
        return Err(ApiError::bad_request(
            "saml_restricted",
            "a SAML integration restricts this user to its entity and that entity's children",
        ));
    }
    if membership.profile == Profile::None {
        return Err(ApiError::not_found(
            "profile_not_found",
            "the user has no profile in that entity",
        ));
    }
    check_selectable(&target)?;
    issue_token(cx, &mut pr.user, &target.id)
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

/// Job [`PURGE_TOKEN_JOB`]: forgets a token record once its grace period is over.
pub fn purge_token(cx: &mut Cx, payload: &[u8]) -> JobOutcome {
    let Ok(hash) = core::str::from_utf8(payload) else {
        return JobOutcome::Failed("token hash is not UTF-8".into());
    };
    let key = token_key(hash);
    match cx.load::<Token>(&key) {
        Some(token) if token.expires_ms + PURGE_GRACE_MS > cx.now() => {
            JobOutcome::RetryAt(token.expires_ms + PURGE_GRACE_MS)
        }
        Some(_) => {
            cx.p.delete(&key);
            JobOutcome::Done
        }
        None => JobOutcome::Done,
    }
}
