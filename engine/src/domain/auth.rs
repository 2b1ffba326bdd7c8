//! Who is calling: the bearer check every route uses, the login rules (the password
//! check with `domain::logins`' throttling, the spacing of tokens) and the principal a
//! token or an agent's grant acts as.

use crate::base::api::{self, Mail, Request};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records;
use crate::base::util::sha256_hex;
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
