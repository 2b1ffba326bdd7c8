//! Who is calling: the bearer check every route uses, the login rules (the password
//! check with `domain::logins`' throttling, the spacing of tokens) and the principal a
//! token or an agent's grant acts as.

use crate::base::api::{self, Mail, Request};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, sha256_hex};
use crate::base::{job_kinds, records};
use crate::domain::accounts::{
    self, Entity, Membership, Token, User, entity_key, membership_key, memberships_of, token_key,
    user_key,
};
use crate::domain::logins;

/// How long an expired token is remembered, so that its holder is told "expired"
/// rather than "invalid".
pub const PURGE_GRACE_MS: u64 = 7 * 24 * 3600 * 1000;

/// The caller of an authenticated request.
#[derive(Clone)]
pub struct Principal {
    pub user: User,
    pub membership: Membership,
    pub entity: Entity,
    pub token_hash: String,
}

fn invalid_credentials() -> ApiError {
    http::ApiError::bad_request("invalid_credentials", "wrong email or password")
}

/// Checks an email and password under the login rules (spec §8, `domain::logins`): a
/// login this email from this `source` may not try now is refused before the password
/// is checked (400 `login_locked`, or 429 while the source or everyone is over the
/// minute's failures); an unknown email costs the same work and gets the same answers
/// as a wrong password; `login_max_failures` failures in a row lock the email from
/// that source, and the account's owner is mailed (once a day at most).
pub(crate) fn check_password(
    cx: &mut Cx,
    email: &str,
    password: &str,
    source: &str,
) -> ApiResult<User> {
    logins::refuse_early(cx, email, source)?;
    let user = accounts::user_id_by_email(cx, email).and_then(|id| cx.load::<User>(&user_key(&id)));
    let hash = user.as_ref().map_or("", |u| u.password_hash.as_str());
    // An empty hash is checked against a dummy: the same work as a wrong password.
    if !cx.p.verify_password(password, hash) || user.is_none() {
        if logins::failed(cx, email, source)
            && let Some(mut user) = user
        {
            let now = cx.now();
            if now.saturating_sub(user.lock_notice_ms) >= LOCK_NOTICE_EVERY_MS {
                let settings = cx.settings().clone();
                cx.p.send_mail(lock_notice(&user, &settings, source));
                user.lock_notice_ms = now;
                cx.save(&user_key(&user.id), &user);
            }
        }
        return Err(invalid_credentials());
    }
    logins::succeeded(cx, email, source);
    Ok(user.expect("checked above"))
}

/// How often an account's owner is told of a lock, at most.
const LOCK_NOTICE_EVERY_MS: u64 = 24 * 3600 * 1000;

/// The email telling an account's owner that repeated failures from one address locked
/// signing in from there.
fn lock_notice(user: &User, settings: &api::Settings, source: &str) -> Mail {
    let minutes = settings.login_lock_secs.div_ceil(60);
    Mail {
        to: user.email.clone(),
        subject: "Your esign account is locked".into(),
        body: format!(
            "Hello {name},\n\n\
             after {n} failed sign-in attempts in a row from the address {source}, sign-in \
             to your esign account {email} from that address is locked for {minutes} \
             minutes. Signing in from elsewhere still works.\n\n\
             If these attempts were not yours, someone may be guessing your password: \
             change it, and tell your administrator. (This notice is sent once a day at \
             most.)\n",
            name = if user.first_name.is_empty() {
                &user.email
            } else {
                &user.first_name
            },
            n = settings.login_max_failures,
            email = user.email,
        ),
        tag: String::new(),
        html: String::new(),
        attachments: Vec::new(),
    }
}

pub fn no_api_access() -> ApiError {
    http::ApiError::forbidden("no_api_access", "the entity has no API access")
}

/// The spacing rule (spec §8): 429 with `Retry-After` when the user's last token was
/// issued less than `token_min_interval_ms` ago; otherwise records this issuance.
pub(crate) fn check_spacing(cx: &mut Cx, user: &mut User) -> ApiResult<()> {
    let now = cx.now();
    let interval = cx.settings().token_min_interval_ms;
    let next_allowed = user.last_token_ms.saturating_add(interval);
    if user.last_token_ms != 0 && now < next_allowed {
        let wait_secs = (next_allowed - now).div_ceil(1000).max(1);
        return Err(http::ApiError::new(
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

/// Makes the rest of the call act as `pr` (an MCP tool call acts as the grant's person).
pub fn act_as(cx: &mut Cx, pr: Principal) {
    cx.agent = Some(Box::new(pr));
}

/// Checks `Authorization: Bearer <token>` and loads who is calling. 401 for a missing,
/// unknown or expired token; 403 when the token no longer grants access.
///
/// Inside an MCP tool call the caller is the agent's grant ([`Cx::agent`]) and the
/// request's headers are not read: the REST operation runs with exactly the rights
/// of the person who consented.
pub fn authenticate(cx: &mut Cx, req: &Request) -> ApiResult<Principal> {
    if let Some(pr) = cx
        .agent
        .as_ref()
        .and_then(|a| a.downcast_ref::<Principal>())
    {
        return Ok(pr.clone());
    }
    let header = req.header("authorization").ok_or_else(|| {
        http::ApiError::unauthorized(
            "an access token is required: send Authorization: Bearer <token>",
        )
    })?;
    let Some(secret) = bearer_secret(header) else {
        return Err(http::ApiError::unauthorized(
            "the Authorization header must be `Bearer <token>`",
        ));
    };
    let token_hash = sha256_hex(secret.as_bytes());
    let token = cx.load::<Token>(&token_key(&token_hash)).ok_or_else(|| {
        http::ApiError::unauthorized("the access token is invalid or was revoked")
    })?;
    if token.expires_ms <= cx.now() {
        return Err(http::ApiError::unauthorized("the access token has expired"));
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
        let m: Membership = records::decode(&value);
        if m.profile == accounts::Profile::None {
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
/// access, is quarantined, marked for deletion or without subscription.
pub(crate) fn principal(
    cx: &mut Cx,
    user_id: &str,
    entity_id: &str,
    token_hash: String,
) -> ApiResult<Principal> {
    let user = cx
        .load::<User>(&user_key(user_id))
        .ok_or_else(|| http::ApiError::unauthorized("the token's user no longer exists"))?;
    if !user.active {
        return Err(http::ApiError::forbidden(
            "user_inactive",
            "the user is not active",
        ));
    }
    let no_access = || {
        http::ApiError::forbidden(
            "access_denied",
            "the token does not grant access to this entity",
        )
    };
    let membership = cx
        .load::<Membership>(&membership_key(&user.id, entity_id))
        .filter(|m| m.profile != accounts::Profile::None)
        .ok_or_else(no_access)?;
    if membership.profile == accounts::Profile::Pending {
        return Err(http::ApiError::forbidden(
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
    // A token outlives none of the states that close an entity: once it is
    // quarantined, marked for deletion or without subscription, its tokens are refused
    // as a new token for it would be (403 `entity_unavailable`).
    check_selectable(&entity)?;
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
    Err(http::ApiError::forbidden("entity_unavailable", reason))
}

/// The entity a login with `user`'s password opens: `requested`, else the user's
/// default; 400/404 when the user has no usable profile there, 403 when the user is
/// inactive or the entity has no API access, 423 when it is marked for deletion.
pub(crate) fn login_entity(
    cx: &mut Cx,
    user: &User,
    requested: Option<String>,
) -> ApiResult<Entity> {
    let cannot_load = || {
        http::ApiError::not_found(
            "account_not_found",
            "the account cannot be loaded: it has no profile in any entity",
        )
    };
    let (entity_id, explicit) = match requested {
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
        return Err(no_profile());
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
    Ok(entity)
}

fn no_profile() -> ApiError {
    http::ApiError::not_found(
        "profile_not_found",
        "the user has no profile in that entity",
    )
}

/// A new API token: its secret and how many seconds it lives.
pub struct IssuedToken {
    pub secret: String,
    pub expires_in: u64,
}

/// Issues a token for `user` in `entity_id`, enforcing the spacing rule (429), and
/// schedules its record's purge.
pub(crate) fn issue_token(cx: &mut Cx, user: &mut User, entity_id: &str) -> ApiResult<IssuedToken> {
    let now = cx.now();
    let settings = cx.settings().clone();
    check_spacing(cx, user)?;
    let secret = util::new_secret(cx);
    let hash = sha256_hex(secret.as_bytes());
    let token = Token {
        user_id: user.id.clone(),
        entity_id: entity_id.to_string(),
        issued_ms: now,
        expires_ms: now + settings.token_ttl_secs * 1000,
    };
    cx.save(&token_key(&hash), &token);
    cx.schedule_at(
        job_kinds::TOKEN_PURGE,
        hash.into_bytes(),
        token.expires_ms + PURGE_GRACE_MS,
    );
    Ok(IssuedToken {
        secret,
        expires_in: settings.token_ttl_secs,
    })
}

/// The presented token (by its hash) stops working at once.
pub fn revoke_token(cx: &mut Cx, token_hash: &str) {
    cx.p.delete(&token_key(token_hash));
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

/// The entity `target_id` the caller switches to: one they are a member of (400 for
/// any other, known or not), allowed by the SAML rule, with a profile (404), and
/// selectable ([`check_selectable`]).
pub(crate) fn switch_target(cx: &mut Cx, pr: &Principal, target_id: &str) -> ApiResult<Entity> {
    // Unknown and foreign entities get the same answer: no way to learn which exist.
    let invalid = || {
        http::ApiError::bad_request(
            "invalid_entity",
            format!("{target_id:?} is not the id of an entity you are a member of"),
        )
    };
    if !util::is_id(target_id) {
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
        return Err(no_profile());
    }
    check_selectable(&target)?;
    Ok(target)
}

/// The caller's profiles ([`profiles`]) in the entities the SAML rule lets them select.
pub fn selectable_profiles(cx: &mut Cx, pr: &Principal) -> Vec<(Membership, Entity)> {
    let root = saml_root(cx, &pr.entity);
    profiles(cx, &pr.user.id)
        .into_iter()
        .filter(|(_, entity)| saml_allows(root.as_ref(), entity))
        .collect()
}
