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
use crate::base::keyspace::{CTC, CTC_N, DRCP};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::{self, prefix_range};
use crate::base::util::{self, is_id};
use crate::domain::access;
use crate::domain::auth::Principal;
use crate::domain::document::load_doc;
use crate::domain::list;
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

/// Whose contacts a list shows: the caller's (the default), their team's
/// (`showteam`) or the whole entity's (`showall`).
pub enum Owners {
    Own,
    Team,
    All,
}

/// A contact list (`GET /v1/contacts`): the filter (`active`, `inactive`, `signed`) and
/// the sort key as the API names them, already checked.
pub struct ListQuery {
    pub filter: Option<String>,
    pub sort: Option<String>,
    pub descending: bool,
    pub owners: Owners,
    /// Lowercase; empty is no search.
    pub search: String,
    pub offset: usize,
    pub limit: usize,
}

/// Ids of the documents that name `email` among their recipients, newest first.
fn documents_of(cx: &mut Cx, entity: &str, email: &str, limit: u32) -> Vec<String> {
    if email.is_empty() {
        return Vec::new();
    }
    list::lookup(cx, entity, DRCP, &util::normalize_email(email), limit)
}

/// Whether one of the contact's 20 newest documents is signed.
fn has_signed(cx: &mut Cx, entity: &str, email: &str) -> bool {
    documents_of(cx, entity, email, 20)
        .iter()
        .any(|id| load_doc(cx, id).is_some_and(|d| d.status.is_signed()))
}

/// The contacts of the caller's scope that the search finds (in names, email, company
/// and mobile), each with its number of documents when the filter or sort needs it.
fn found(cx: &mut Cx, pr: &Principal, q: &ListQuery) -> Vec<(Contact, Option<usize>)> {
    let owners: Option<Vec<String>> = match q.owners {
        Owners::All => None,
        Owners::Team => Some(
            list::team_scopes(cx, pr)
                .into_iter()
                .map(|s| s.trim_start_matches('u').to_string())
                .collect(),
        ),
        Owners::Own => Some(vec![pr.user.id.clone()]),
    };
    let search = &q.search;
    let mut found: Vec<(Contact, Option<usize>)> = all(cx, &pr.entity.id)
        .into_iter()
        .filter(|c| owners.as_ref().is_none_or(|o| o.contains(&c.user_id)))
        .filter(|c| {
            search.is_empty()
                || [&c.fullname(), &c.email, &c.company_name, &c.mobile]
                    .iter()
                    .any(|t| t.to_lowercase().contains(search.as_str()))
        })
        .map(|c| (c, None))
        .collect();
    if q.filter.is_some() || q.sort.as_deref() == Some("document_count") {
        for (c, n) in &mut found {
            *n = Some(documents_of(cx, &pr.entity.id, &c.email, 1000).len());
        }
    }
    found
}

/// One page of contacts with their numbers of documents: filtered, sorted (newest
/// first unless a sort is asked for), paged.
pub fn list(cx: &mut Cx, pr: &Principal, q: &ListQuery) -> Vec<(Contact, usize)> {
    let entity = pr.entity.id.clone();
    let mut found = found(cx, pr, q);
    if let Some(filter) = &q.filter {
        let mut kept = Vec::new();
        for (c, n) in found {
            let n = n.unwrap_or(0);
            let keep = match filter.as_str() {
                "active" => n > 0,
                "inactive" => n == 0,
                _ => has_signed(cx, &entity, &c.email),
            };
            if keep {
                kept.push((c, Some(n)));
            }
        }
        found = kept;
    }
    let key = |c: &Contact, n: Option<usize>| -> String {
        match q.sort.as_deref() {
            Some("name") => c.fullname().to_lowercase(),
            Some("email") => c.email.to_lowercase(),
            Some("company_name") => c.company_name.to_lowercase(),
            Some("document_count") => format!("{:010}", n.unwrap_or(0)),
            _ => format!("{:016x}", c.created_ms),
        }
    };
    found.sort_by(|(a, na), (b, nb)| {
        let ord = key(a, *na)
            .cmp(&key(b, *nb))
            .then(a.created_ms.cmp(&b.created_ms));
        if q.descending || q.sort.is_none() {
            ord.reverse()
        } else {
            ord
        }
    });
    let mut page = Vec::new();
    for (c, n) in found.into_iter().skip(q.offset).take(q.limit) {
        let n = n.unwrap_or_else(|| documents_of(cx, &entity, &c.email, 1000).len());
        page.push((c, n));
    }
    page
}
