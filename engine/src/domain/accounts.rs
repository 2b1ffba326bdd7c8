//! Stored records and their keys.
//!
//! Key layout (all UTF-8, `/`-separated, so that prefixes are ranges):
//!
//! | key | value |
//! |---|---|
//! | `ent/{entity_id}` | [`Entity`] |
//! | `usr/{user_id}` | [`User`] |
//! | `usr-email/{normalized email}` | user id (UTF-8) |
//! | `mem/{user_id}/{entity_id}` | [`Membership`] |
//! | `ent-mem/{entity_id}/{user_id}` | empty: index of an entity's members |
//! | `tok/{sha256 hex of token}` | [`Token`] |
//! | `usr-prof/{user_id}` | [`UserProfile`] |
//!
//! Values are a schema-version byte followed by the postcard encoding of the record.

use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult};
use crate::base::keyspace::{ENT, ENT_MEM, MEM, TEAM, TOK, USR, USR_EMAIL, USR_PROF};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::{decode, prefix_range};
use crate::base::util::{self, is_email, new_id, normalize_email};
use serde::{Deserialize, Serialize};

/// An account: a company or a team within one (child entities have a parent).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Entity {
    pub id: String,
    pub name: String,
    pub parent_id: Option<String>,
    /// The entity has a SAML integration (restricts entity switching, spec §5.1 rule 4).
    pub saml: bool,
    pub api_access: bool,
    pub subscription_active: bool,
    pub quarantined: bool,
    pub marked_for_deletion: bool,
    /// Only admins may delete documents.
    pub delete_admin_only: bool,
    pub created_ms: u64,
}

/// A person who can sign in.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct User {
    pub id: String,
    pub email: String,
    pub first_name: String,
    pub last_name: String,
    pub password_hash: String,
    pub active: bool,
    /// No longer counted (failed logins are kept per email and source address:
    /// `domain::logins`); kept for the record's layout.
    pub failed_logins: u32,
    /// When the owner was last mailed that failed logins locked signing in from an
    /// address (at most once a day).
    pub lock_notice_ms: u64,
    /// When the last token was issued (for the 429 spacing rule).
    pub last_token_ms: u64,
    /// The entity a login without `entity_id` selects: the first membership.
    pub default_entity_id: Option<String>,
    pub created_ms: u64,
}

/// What a user tells about themselves beyond their account: kept beside the `User`
/// record (`usr-prof/{user}`) so that record keeps its layout.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct UserProfile {
    pub mobile: String,
    pub title: String,
}

pub fn user_profile_key(user_id: &str) -> Vec<u8> {
    util::key(&[USR_PROF, user_id])
}

pub fn user_profile(cx: &mut Cx, user_id: &str) -> UserProfile {
    cx.load(&user_profile_key(user_id)).unwrap_or_default()
}

/// A user's role in an entity.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum Role {
    User,
    Manager,
    Admin,
}

impl Role {
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "user" => Some(Role::User),
            "manager" => Some(Role::Manager),
            "admin" => Some(Role::Admin),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Manager => "manager",
            Role::Admin => "admin",
        }
    }
}

/// The state of a user's profile in an entity.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum Profile {
    /// Tokens are issued, but every request with them answers 403.
    Pending,
    Active,
    /// A member without a profile: the entity cannot be selected (404).
    None,
}

impl Profile {
    pub fn parse(s: &str) -> Option<Profile> {
        match s {
            "pending" => Some(Profile::Pending),
            "active" => Some(Profile::Active),
            "none" => Some(Profile::None),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Pending => "pending",
            Profile::Active => "active",
            Profile::None => "none",
        }
    }
}

/// A user's membership of an entity.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Membership {
    pub user_id: String,
    pub entity_id: String,
    pub role: Role,
    pub profile: Profile,
    /// Users with the same team id see each other's documents with `showteam`.
    pub team_id: Option<String>,
}

/// An issued access token; stored under the hash of its secret only.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Token {
    pub user_id: String,
    pub entity_id: String,
    pub issued_ms: u64,
    pub expires_ms: u64,
}

pub fn entity_key(id: &str) -> Vec<u8> {
    util::key(&[ENT, id])
}

pub fn user_key(id: &str) -> Vec<u8> {
    util::key(&[USR, id])
}

pub fn user_email_key(normalized_email: &str) -> Vec<u8> {
    util::key(&[USR_EMAIL, normalized_email])
}

/// The id of the user whose email is `email` (normalized here), if any.
pub fn user_id_by_email(cx: &mut Cx, email: &str) -> Option<String> {
    cx.p.get(&user_email_key(&normalize_email(email)))
        .and_then(|v| String::from_utf8(v).ok())
}

pub fn membership_key(user_id: &str, entity_id: &str) -> Vec<u8> {
    util::key(&[MEM, user_id, entity_id])
}

/// The range of all memberships of a user.
pub fn memberships_of(user_id: &str) -> (Vec<u8>, Vec<u8>) {
    prefix_range(&format!("{MEM}/{user_id}/"))
}

pub fn entity_member_key(entity_id: &str, user_id: &str) -> Vec<u8> {
    util::key(&[ENT_MEM, entity_id, user_id])
}

pub fn token_key(token_hash: &str) -> Vec<u8> {
    util::key(&[TOK, token_hash])
}

/// A new entity (not stored): API access and an active subscription, no SAML.
pub(crate) fn new_entity(
    cx: &mut Cx,
    name: String,
    parent_id: Option<String>,
) -> ApiResult<Entity> {
    if let Some(parent) = &parent_id
        && cx.p.get(&entity_key(parent)).is_none()
    {
        return Err(http::ApiError::not_found(
            "entity_not_found",
            format!("no parent entity {parent}"),
        ));
    }
    let created_ms = cx.now();
    Ok(Entity {
        id: new_id(cx),
        name,
        parent_id,
        saml: false,
        api_access: true,
        subscription_active: true,
        quarantined: false,
        marked_for_deletion: false,
        delete_admin_only: false,
        created_ms,
    })
}

/// A new account's email must be one, and its password at least 8 characters (400s).
pub(crate) fn check_new_credentials(email: &str, password: &str) -> ApiResult<()> {
    if !is_email(email) {
        return Err(http::ApiError::bad_request(
            "invalid_email",
            format!("{email:?} is not an email address"),
        ));
    }
    if password.chars().count() < 8 {
        return Err(http::ApiError::bad_request(
            "weak_password",
            "a password needs at least 8 characters",
        ));
    }
    Ok(())
}

pub(crate) fn new_user(
    cx: &mut Cx,
    email: &str,
    password: &str,
    first_name: String,
    last_name: String,
) -> ApiResult<User> {
    check_new_credentials(email, password)?;
    let email_key = user_email_key(&normalize_email(email));
    if cx.p.get(&email_key).is_some() {
        return Err(http::ApiError::new(
            409,
            "email_taken",
            format!("a user with email {email} already exists"),
        ));
    }
    let created_ms = cx.now();
    let user = User {
        id: new_id(cx),
        email: email.trim().to_string(),
        first_name,
        last_name,
        password_hash: cx.p.hash_password(password),
        active: true,
        failed_logins: 0,
        lock_notice_ms: 0,
        last_token_ms: 0,
        default_entity_id: None,
        created_ms,
    };
    cx.p.put(&email_key, user.id.as_bytes());
    cx.save(&user_key(&user.id), &user);
    Ok(user)
}

/// The key listing `user_id` in `team_id` of `entity_id` (for `showteam` lists).
pub fn team_key(entity_id: &str, team_id: &str, user_id: &str) -> Vec<u8> {
    util::key(&[TEAM, entity_id, team_id, user_id])
}

pub(crate) fn add_membership(cx: &mut Cx, user: &mut User, m: &Membership) {
    if let Some(old) = cx.load::<Membership>(&membership_key(&m.user_id, &m.entity_id))
        && let Some(team) = old.team_id
    {
        cx.p.delete(&team_key(&m.entity_id, &team, &m.user_id));
    }
    if let Some(team) = &m.team_id {
        cx.p.put(&team_key(&m.entity_id, team, &m.user_id), b"");
    }
    if user.default_entity_id.is_none() {
        user.default_entity_id = Some(m.entity_id.clone());
        cx.save(&user_key(&user.id), user);
    }
    cx.save(&membership_key(&m.user_id, &m.entity_id), m);
    cx.p.put(&entity_member_key(&m.entity_id, &m.user_id), b"");
}

pub fn user_name(u: &User) -> String {
    let full = format!("{} {}", u.first_name, u.last_name);
    let full = full.trim();
    if full.is_empty() {
        u.email.clone()
    } else {
        full.to_string()
    }
}

/// Every entity of the store, in key order (the local administrator's list).
pub fn all_entities(cx: &mut Cx) -> Vec<Entity> {
    let (start, end) = prefix_range(&format!("{ENT}/"));
    cx.p.scan(&start, &end, u32::MAX, false)
        .into_iter()
        .map(|(_, v)| decode(&v))
        .collect()
}

/// Every account of the store, in key order (the local administrator's list).
pub fn all_users(cx: &mut Cx) -> Vec<User> {
    let (start, end) = prefix_range(&format!("{USR}/"));
    cx.p.scan(&start, &end, u32::MAX, false)
        .into_iter()
        .map(|(_, v)| decode(&v))
        .collect()
}

/// Whether the store has any account (a first run has none).
pub fn has_users(cx: &mut Cx) -> bool {
    let (start, end) = prefix_range(&format!("{USR}/"));
    !cx.p.scan(&start, &end, 1, false).is_empty()
}

fn no_entity(id: &str) -> http::ApiError {
    http::ApiError::not_found("entity_not_found", format!("no entity {id}"))
}

/// Entity `id`, or 404.
pub fn entity(cx: &mut Cx, id: &str) -> ApiResult<Entity> {
    cx.load(&entity_key(id)).ok_or_else(|| no_entity(id))
}

/// 404 unless entity `id` exists.
pub fn entity_exists(cx: &mut Cx, id: &str) -> ApiResult<()> {
    if cx.p.get(&entity_key(id)).is_none() {
        return Err(no_entity(id));
    }
    Ok(())
}

/// Account `id`, or 404.
pub fn user(cx: &mut Cx, id: &str) -> ApiResult<User> {
    cx.load(&user_key(id))
        .ok_or_else(|| http::ApiError::not_found("user_not_found", format!("no user {id}")))
}

/// Writes an entity's record.
pub fn store_entity(cx: &mut Cx, e: &Entity) {
    cx.save(&entity_key(&e.id), e);
}

/// Writes an account's record.
pub fn store_user(cx: &mut Cx, u: &User) {
    cx.save(&user_key(&u.id), u);
}

/// Gives an account (not stored) the password `password`.
pub fn set_password(cx: &mut Cx, u: &mut User, password: &str) {
    u.password_hash = cx.p.hash_password(password);
}

/// First run: an entity named `entity_name` and in it an admin with `email` and
/// `password` (named "Admin").
pub(crate) fn bootstrap(
    cx: &mut Cx,
    email: &str,
    password: &str,
    entity_name: String,
) -> ApiResult<(Entity, User)> {
    let entity = new_entity(cx, entity_name, None)?;
    store_entity(cx, &entity);
    let mut user = new_user(cx, email, password, "Admin".into(), String::new())?;
    let m = Membership {
        user_id: user.id.clone(),
        entity_id: entity.id.clone(),
        role: Role::Admin,
        profile: Profile::Active,
        team_id: None,
    };
    add_membership(cx, &mut user, &m);
    Ok((entity, user))
}
