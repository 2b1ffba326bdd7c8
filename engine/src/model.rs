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
//!
//! Values are a schema-version byte followed by the postcard encoding of the record.

use crate::Cx;
#[allow(unused_imports)]
use crate::prelude::*;
use serde::{Deserialize, Serialize, de::DeserializeOwned};

const SCHEMA_V1: u8 = 1;

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
    /// Failed logins since the last success or lock.
    pub failed_logins: u32,
    /// While `now < locked_until_ms` every login fails.
    pub locked_until_ms: u64,
    /// When the last token was issued (for the 429 spacing rule).
    pub last_token_ms: u64,
    /// The entity a login without `entity_id` selects: the first membership.
    pub default_entity_id: Option<String>,
    pub created_ms: u64,
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
    crate::util::key(&["ent", id])
}

pub fn user_key(id: &str) -> Vec<u8> {
    crate::util::key(&["usr", id])
}

pub fn user_email_key(normalized_email: &str) -> Vec<u8> {
    crate::util::key(&["usr-email", normalized_email])
}

pub fn membership_key(user_id: &str, entity_id: &str) -> Vec<u8> {
    crate::util::key(&["mem", user_id, entity_id])
}

/// The range of all memberships of a user.
pub fn memberships_of(user_id: &str) -> (Vec<u8>, Vec<u8>) {
    prefix_range(&format!("mem/{user_id}/"))
}

pub fn entity_member_key(entity_id: &str, user_id: &str) -> Vec<u8> {
    crate::util::key(&["ent-mem", entity_id, user_id])
}

pub fn token_key(token_hash: &str) -> Vec<u8> {
    crate::util::key(&["tok", token_hash])
}

/// `[prefix, prefix + 0xff)`: every key that starts with `prefix`.
pub fn prefix_range(prefix: &str) -> (Vec<u8>, Vec<u8>) {
    let start = prefix.as_bytes().to_vec();
    let mut end = start.clone();
    end.push(0xff);
    (start, end)
}

/// Encodes a record with its schema-version byte.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = vec![SCHEMA_V1];
    out.extend(postcard::to_allocvec(value).expect("records always serialize"));
    out
}

/// Decodes a record written by [`encode`]. A record that does not decode is corruption
/// or a bug, never a client error: it panics, which traps the component, so the host
/// rolls the call back and answers 500 with a `trace_id`.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> T {
    match bytes.split_first() {
        Some((&SCHEMA_V1, rest)) => match postcard::from_bytes(rest) {
            Ok(v) => v,
            Err(e) => panic!("a stored record is unreadable: {e}"),
        },
        _ => panic!("a stored record has an unknown schema version"),
    }
}

impl Cx<'_> {
    /// Reads and decodes a record.
    pub fn load<T: DeserializeOwned>(&mut self, key: &[u8]) -> Option<T> {
        self.p.get(key).map(|bytes| decode(&bytes))
    }

    /// Encodes and writes a record.
    pub fn save<T: Serialize>(&mut self, key: &[u8], value: &T) {
        self.p.put(key, &encode(value));
    }
}
