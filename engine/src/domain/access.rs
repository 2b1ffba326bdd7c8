//! Who may read and change a document (spec §5): the owner, admins and the owner's
//! team manager change it; other members of its entity read it unless it is private.

use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::accounts::{self, Membership, membership_key};
use crate::domain::auth::Principal;
use crate::domain::document::{Document, load_doc};

pub fn doc_not_found(id: &str) -> ApiError {
    http::ApiError::not_found("document_not_found", format!("no document {id}"))
}

/// What the caller may do with a document.
pub struct Access {
    pub read: bool,
    pub write: bool,
    /// The owner or an entity admin (permanent delete, manual signing).
    pub owner_or_admin: bool,
}

/// Whether the caller may change something of its entity that the member `owner_id`
/// owns (a document, a template, a contact): the owner, an admin of the entity, or a
/// manager of the owner's team. The caller is of the thing's entity (checked by the
/// caller of this).
pub fn owner_rule(cx: &mut Cx, pr: &Principal, entity_id: &str, owner_id: &str) -> bool {
    let owner = owner_id == pr.user.id;
    let admin = pr.membership.role == accounts::Role::Admin;
    owner
        || admin
        || (pr.membership.role == accounts::Role::Manager
            && pr.membership.team_id.is_some()
            && cx
                .load::<Membership>(&membership_key(owner_id, entity_id))
                .is_some_and(|m| m.team_id == pr.membership.team_id))
}

/// The refusal of a change that [`owner_rule`] does not allow, for a thing the caller
/// may read: 403 `access_denied`.
pub fn change_denied(what: &str) -> ApiError {
    http::ApiError::forbidden(
        "access_denied",
        format!("only the {what}'s owner, an admin or the owner's team manager may change it"),
    )
}

/// Access rules: members of the document's entity read its non-private documents; the
/// owner, admins, and managers of the owner's team read and change it ([`owner_rule`]);
/// private documents are for those three only.
pub fn access(cx: &mut Cx, pr: &Principal, doc: &Document) -> Access {
    if doc.entity_id != pr.entity.id {
        return Access {
            read: false,
            write: false,
            owner_or_admin: false,
        };
    }
    let owner = doc.user_id == pr.user.id;
    let admin = pr.membership.role == accounts::Role::Admin;
    let write = owner_rule(cx, pr, &doc.entity_id, &doc.user_id);
    Access {
        read: write || !doc.flags.is_private,
        write,
        owner_or_admin: owner || admin,
    }
}

/// The document if the caller may read it; 404 otherwise.
pub fn readable(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Document> {
    let doc = load_doc(cx, id).ok_or_else(|| doc_not_found(id))?;
    if !access(cx, pr, &doc).read {
        return Err(doc_not_found(id));
    }
    Ok(doc)
}

/// The document if the caller may change it; 404 when it may not even read it, 403
/// when it may only read it.
pub fn writable(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Document> {
    let doc = load_doc(cx, id).ok_or_else(|| doc_not_found(id))?;
    let a = access(cx, pr, &doc);
    if !a.read {
        return Err(doc_not_found(id));
    }
    if !a.write {
        return Err(change_denied("document"));
    }
    Ok(doc)
}
