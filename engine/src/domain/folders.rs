//! Folders (GetAccept's `/v1/folders`): named places an entity files its documents
//! (`archive` folders) and templates (`template` folders) in, nested by `parent_id`.
//! A document or template names its folder in `folder_id` (its record's extension);
//! documents in a folder are indexed under the tag `f{folder}` (`document::index_tags`),
//! so a list filtered by folder reads one index range.
//!
//! | key | value |
//! |---|---|
//! | `fold/{entity}/{id}` | [`Folder`] |

use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult};
use crate::base::keyspace::FOLD;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::{self, prefix_range};
use crate::base::util::{self, is_id};
use crate::domain::auth::Principal;
use crate::domain::document::{SortKey, folder_tag, index_prefix, scope_all};
use crate::domain::{accounts, templates};
use serde::{Deserialize, Serialize};

/// The most folders an entity keeps (so the list stays one bounded answer).
pub const MAX_FOLDERS: usize = 1000;

/// What a folder holds.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum Kind {
    /// Documents.
    Archive,
    Template,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Archive => "archive",
            Kind::Template => "template",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "archive" => Some(Kind::Archive),
            "template" => Some(Kind::Template),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Folder {
    pub id: String,
    pub entity_id: String,
    pub name: String,
    pub kind: Kind,
    /// The folder it sits in, or empty at the top.
    pub parent_id: String,
    pub user_id: String,
    pub created_ms: u64,
}

pub fn key(entity: &str, id: &str) -> Vec<u8> {
    util::key(&[FOLD, entity, id])
}

pub fn not_found(id: &str) -> ApiError {
    http::ApiError::not_found("folder_not_found", format!("no folder {id}"))
}

/// The entity's folder `id`; 404 when there is none.
pub fn find(cx: &mut Cx, entity: &str, id: &str) -> ApiResult<Folder> {
    if !is_id(id) {
        return Err(not_found(id));
    }
    cx.load::<Folder>(&key(entity, id))
        .ok_or_else(|| not_found(id))
}

/// Every folder of the entity (at most [`MAX_FOLDERS`]), by name.
pub fn all(cx: &mut Cx, entity: &str) -> Vec<Folder> {
    let (start, end) = prefix_range(&format!("{FOLD}/{entity}/"));
    let mut out: Vec<Folder> =
        cx.p.scan(&start, &end, MAX_FOLDERS as u32, false)
            .into_iter()
            .map(|(_, v)| records::decode::<Folder>(&v))
            .collect();
    out.sort_by_key(|f| f.name.to_lowercase());
    out
}

/// Checks a `folder_id` a document (`Kind::Archive`) or template is filed under: empty
/// clears it; an unknown folder is a 404; a folder of the other kind a 400.
pub fn check_target(cx: &mut Cx, entity: &str, id: &str, kind: Kind) -> ApiResult<String> {
    if id.is_empty() {
        return Ok(String::new());
    }
    let folder = find(cx, entity, id)?;
    // A folder of another type is not one this `folder_id` can name: 404, as for an
    // unknown one (a reference, which no schema can check).
    if folder.kind != kind {
        return Err(http::ApiError::not_found(
            "folder_not_found",
            format!(
                "no {} folder {id}: that folder holds {}s",
                kind.as_str(),
                folder.kind.as_str()
            ),
        ));
    }
    Ok(folder.id)
}

/// Writes a folder, new or changed.
pub fn store(cx: &mut Cx, folder: &Folder) {
    cx.save(&key(&folder.entity_id, &folder.id), folder);
}

/// Deletes the entity's folder `id` for `pr`: 404 when there is none, 403 unless `pr`
/// made it or is an admin, 409 while it holds folders, documents or templates (checked
/// in that order).
pub fn delete(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<()> {
    let folder = find(cx, &pr.entity.id, id)?;
    if folder.user_id != pr.user.id && pr.membership.role != accounts::Role::Admin {
        return Err(http::ApiError::forbidden(
            "forbidden",
            "only the folder's maker or an admin deletes it",
        ));
    }
    let busy = |what: &str| {
        http::ApiError::new(
            409,
            "folder_not_empty",
            format!("the folder {id} still holds {what}; move or delete them first"),
        )
    };
    if all(cx, &pr.entity.id)
        .iter()
        .any(|f| f.parent_id == folder.id)
    {
        return Err(busy("folders"));
    }
    let docs = index_prefix(
        &pr.entity.id,
        &scope_all(),
        &folder_tag(id),
        SortKey::Created,
    );
    let (start, end) = prefix_range(&docs);
    if !cx.p.scan(&start, &end, 1, false).is_empty() {
        return Err(busy("documents"));
    }
    if templates::all(cx, &pr.entity.id)
        .iter()
        .any(|t| t.ext.folder_id == folder.id)
    {
        return Err(busy("templates"));
    }
    cx.p.delete(&key(&pr.entity.id, id));
    Ok(())
}
