//! Contacts (GetAccept's `/v1/contacts`): the people an entity sends documents to,
//! kept by its members. A contact's documents are the ones that name its email among
//! their recipients (the `drcp/` index).
//!
//! | key | value |
//! |---|---|
//! | `ctc/{entity}/{id}` | [`Contact`] |
//! | `ctc-n/{entity}` | how many contacts the entity has (u32, postcard) |

use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult};
use crate::base::keyspace::{CTC, CTC_N};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::{self, prefix_range};
use crate::base::util::{self, is_id};
use crate::domain::access;
use crate::domain::auth::Principal;
use serde::{Deserialize, Serialize};

/// The most contacts an entity keeps.
pub const MAX_CONTACTS: u32 = 10_000;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Contact {
    pub id: String,
    pub entity_id: String,
    /// The member who added it.
    pub user_id: String,
    pub first_name: String,
    pub last_name: String,
    pub email: String,
    pub mobile: String,
    pub phone: String,
    pub company_name: String,
    pub company_number: String,
    pub title: String,
    pub note: String,
    pub created_ms: u64,
}

impl Contact {
    pub fn fullname(&self) -> String {
        format!("{} {}", self.first_name, self.last_name)
            .trim()
            .to_string()
    }
}

pub fn key(entity: &str, id: &str) -> Vec<u8> {
    util::key(&[CTC, entity, id])
}

fn count_key(entity: &str) -> Vec<u8> {
    util::key(&[CTC_N, entity])
}

pub fn not_found(id: &str) -> ApiError {
    http::ApiError::not_found("contact_not_found", format!("no contact {id}"))
}

/// The caller's entity's contact `id` if the caller may delete it: the member who
/// added it, an admin, or a manager of that member's team (`access::owner_rule`, the
/// documents' rule); 404 when unknown, 403 `access_denied` for other members.
pub fn removable(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Contact> {
    let c = find(cx, &pr.entity.id, id)?;
    if !access::owner_rule(cx, pr, &c.entity_id, &c.user_id) {
        return Err(access::change_denied("contact"));
    }
    Ok(c)
}

pub fn find(cx: &mut Cx, entity: &str, id: &str) -> ApiResult<Contact> {
    if !is_id(id) {
        return Err(not_found(id));
    }
    cx.load(&key(entity, id)).ok_or_else(|| not_found(id))
}

/// Every contact of the entity (at most [`MAX_CONTACTS`]).
pub fn all(cx: &mut Cx, entity: &str) -> Vec<Contact> {
    let (start, end) = prefix_range(&format!("{CTC}/{entity}/"));
    cx.p.scan(&start, &end, MAX_CONTACTS, false)
        .into_iter()
        .map(|(_, v)| records::decode::<Contact>(&v))
        .collect()
}

/// Stores a new contact; 409 `limit_reached` past [`MAX_CONTACTS`].
pub fn add(cx: &mut Cx, c: &Contact) -> ApiResult<()> {
    let n: u32 = cx.load(&count_key(&c.entity_id)).unwrap_or(0);
    if n >= MAX_CONTACTS {
        return Err(http::ApiError::new(
            409,
            "limit_reached",
            format!("an account keeps at most {MAX_CONTACTS} contacts"),
        ));
    }
    cx.save(&count_key(&c.entity_id), &(n + 1));
    cx.save(&key(&c.entity_id, &c.id), c);
    Ok(())
}

pub fn remove(cx: &mut Cx, c: &Contact) {
    let n: u32 = cx.load(&count_key(&c.entity_id)).unwrap_or(1);
    cx.save(&count_key(&c.entity_id), &n.saturating_sub(1));
    cx.p.delete(&key(&c.entity_id, &c.id));
}
