//! Self sign-up (`POST /v1/register`, which GetAccept's own apps call): a new user
//! with a new entity of which they are the admin. Off unless the operator turns it on
//! (`esign admin signup on`); then at most [`PER_SOURCE_PER_HOUR`] sign-ups from one
//! source address and [`TOTAL_PER_HOUR`] in all, each in the hour from the first of
//! them (429 with `Retry-After` past that).
//!
//! | key | value |
//! |---|---|
//! | `cfg/signup` | [`Config`] |
//! | `sgup/s/{source}` | [`Window`]: sign-ups from one source (one record per address that signed up) |
//! | `sgup/all` | [`Window`] |

use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult};
use crate::base::keyspace::{CFG, SGUP};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::key;
use crate::domain::accounts::{self, Entity, Membership, User};
use serde::{Deserialize, Serialize};

pub const PER_SOURCE_PER_HOUR: u32 = 5;
pub const TOTAL_PER_HOUR: u32 = 100;
const HOUR_MS: u64 = 3_600_000;

fn config_key() -> Vec<u8> {
    key(&[CFG, "signup"])
}

fn total_key() -> Vec<u8> {
    key(&[SGUP, "all"])
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Config {
    pub enabled: bool,
}

#[derive(Serialize, Deserialize, Default)]
struct Window {
    start_ms: u64,
    count: u32,
}

pub fn config(cx: &mut Cx) -> Config {
    cx.load(&config_key()).unwrap_or_default()
}

pub fn set_config(cx: &mut Cx, c: &Config) {
    cx.save(&config_key(), c);
}

/// Counts one sign-up from `source`; 429 (nothing counted) when the source or everyone
/// is over the hour's sign-ups.
pub fn count(cx: &mut Cx, source: &str) -> ApiResult<()> {
    let now = cx.now();
    let source_key = key(&[SGUP, "s", source]);
    let mut windows = Vec::new();
    for (k, max) in [
        (source_key, PER_SOURCE_PER_HOUR),
        (total_key(), TOTAL_PER_HOUR),
    ] {
        let mut w: Window = cx.load(&k).unwrap_or_default();
        if now >= w.start_ms + HOUR_MS {
            w = Window {
                start_ms: now,
                count: 0,
            };
        }
        if w.count >= max {
            let secs = (w.start_ms + HOUR_MS - now).div_ceil(1000).max(1);
            return Err(http::ApiError::new(
                429,
                "too_many_requests",
                format!("too many sign-ups; try again in {secs} s"),
            )
            .with_header("retry-after", secs.to_string()));
        }
        w.count += 1;
        windows.push((k, w));
    }
    for (k, w) in windows {
        cx.save(&k, &w);
    }
    Ok(())
}

/// What a sign-up gives: the account (`email` and `password` checked by
/// `accounts::check_new_credentials`), an optional mobile number, and the new entity's
/// name (empty: the person's name).
pub struct Registration {
    pub email: String,
    pub password: String,
    pub first_name: String,
    pub last_name: String,
    pub mobile: String,
    pub entity_name: String,
}

/// Signs a person up from `source`: counted first ([`count`]), then 400
/// `email_taken` for a known email; else a new account, admin of a new entity.
pub fn register(cx: &mut Cx, source: &str, r: Registration) -> ApiResult<(User, Entity)> {
    // Counted before the email is looked up (and kept when it is taken: a call's
    // writes commit whatever it answers), so past the limit a known email gets the same
    // 429 as an unknown one, and emails are never told apart faster than sign-ups are
    // allowed.
    count(cx, source)?;
    if accounts::user_id_by_email(cx, &r.email).is_some() {
        // GetAccept's clients read 400s, not 409s.
        return Err(http::ApiError::bad_request(
            "email_taken",
            format!(
                "an account with email {} already exists; sign in instead",
                r.email
            ),
        ));
    }
    let mut user = accounts::new_user(cx, &r.email, &r.password, r.first_name, r.last_name)?;
    let entity_name = Some(r.entity_name)
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| accounts::user_name(&user));
    let entity = accounts::new_entity(cx, entity_name, None)?;
    accounts::store_entity(cx, &entity);
    let membership = Membership {
        user_id: user.id.clone(),
        entity_id: entity.id.clone(),
        role: accounts::Role::Admin,
        profile: accounts::Profile::Active,
        team_id: None,
    };
    accounts::add_membership(cx, &mut user, &membership);
    if !r.mobile.is_empty() {
        let profile = accounts::UserProfile {
            mobile: r.mobile,
            title: String::new(),
        };
        cx.save(&accounts::user_profile_key(&user.id), &profile);
    }
    Ok((user, entity))
}
