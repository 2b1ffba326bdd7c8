//! The members of an entity, as the entity's managers see and change them (GetAccept's
//! `/users` and `/teams`): who may manage whom, a member as the entity may see them,
//! the member list, a role or team change, removal, and the teams.
//!
//! Role rules: managers and admins manage members; a manager adds, changes and removes
//! members with the role `user`, an admin any role; nobody removes themselves or
//! changes their own role (an entity must not lose its last admin by accident).
//! Removing a member drops the membership in this entity only: the account stays for
//! its other entities, and an account left without any membership is deactivated.

use crate::base::cx::Cx;
use crate::base::http::{ApiError, ApiResult};
use crate::base::keyspace::{ENT_MEM, TEAM};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::{decode, prefix_range};
use crate::domain::accounts::{
    self, Membership, Role, User, add_membership, entity_member_key, membership_key,
    memberships_of, team_key, user_key,
};
use crate::domain::auth::Principal;
use crate::domain::invitations;

/// 403 unless the caller is a manager or an admin of the entity.
pub fn manager_or_admin(pr: &Principal) -> ApiResult<()> {
    if pr.membership.role == Role::User {
        return Err(ApiError::forbidden(
            "forbidden",
            "only managers and admins of the entity manage its users",
        ));
    }
    Ok(())
}

/// 403 unless the caller may add or remove a member with `role`.
pub fn may_manage(pr: &Principal, role: Role) -> ApiResult<()> {
    manager_or_admin(pr)?;
    if pr.membership.role == Role::Manager && role != Role::User {
        return Err(ApiError::forbidden(
            "forbidden",
            format!(
                "a manager adds and removes users only; a member with the role {} needs an admin",
                role.as_str()
            ),
        ));
    }
    Ok(())
}

/// A member as the entity may see them: until an invited person accepts, what the
/// entity gave (email, names, the invitation's time; no sign-in, no profile), never the
/// account's own data, which may belong to other entities' worlds.
pub struct Shown {
    pub user: User,
    pub invited: bool,
}

pub fn shown(cx: &mut Cx, user: &User, m: &Membership) -> Shown {
    let mut user = user.clone();
    let invitation = (m.profile == accounts::Profile::Pending)
        .then(|| invitations::invitation(cx, &user.id, &m.entity_id))
        .flatten();
    let invited = invitation.is_some();
    if let Some(inv) = invitation {
        user.email = inv.email;
        user.first_name = inv.first_name;
        user.last_name = inv.last_name;
        user.created_ms = inv.created_ms;
        user.last_token_ms = 0;
        user.active = true;
    }
    Shown { user, invited }
}

/// The members of entity `entity_id`, with their accounts.
pub fn members(cx: &mut Cx, entity_id: &str) -> Vec<(User, Membership)> {
    let (start, end) = prefix_range(&format!("{ENT_MEM}/{entity_id}/"));
    let ids: Vec<String> =
        cx.p.scan(&start, &end, u32::MAX, false)
            .into_iter()
            .filter_map(|(k, _)| {
                let k = String::from_utf8(k).ok()?;
                k.rsplit('/').next().map(str::to_string)
            })
            .collect();
    ids.into_iter()
        .filter_map(|id| {
            let m: Membership = cx.load(&membership_key(&id, entity_id))?;
            let u: User = cx.load(&user_key(&id))?;
            Some((u, m))
        })
        .collect()
}

/// The member `id` of the caller's entity, or 404 (a user of another entity is not
/// told apart from no user at all).
pub fn member(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<(User, Membership)> {
    let not_found =
        || ApiError::not_found("user_not_found", format!("no user {id} in this entity"));
    let m: Membership = cx
        .load(&membership_key(id, &pr.entity.id))
        .filter(|m: &Membership| m.profile != accounts::Profile::None)
        .ok_or_else(not_found)?;
    let u: User = cx.load(&user_key(id)).ok_or_else(not_found)?;
    Ok((u, m))
}

/// Gives member `m` (of `user`) another `role` and/or moves them to another team
/// (`Some("")`: none); `None`s keep theirs. 409 for one's own role.
pub fn change(
    cx: &mut Cx,
    pr: &Principal,
    (mut user, mut m): (User, Membership),
    role: Option<Role>,
    team: Option<String>,
) -> ApiResult<(User, Membership)> {
    may_manage(pr, m.role)?;
    if let Some(role) = role {
        if role != m.role && user.id == pr.user.id {
            return Err(ApiError::new(
                409,
                "cannot_change_own_role",
                "you cannot change your own role; another admin can",
            ));
        }
        may_manage(pr, role)?;
        m.role = role;
    }
    if let Some(team) = team {
        m.team_id = Some(team).filter(|t| !t.is_empty());
    }
    add_membership(cx, &mut user, &m);
    Ok((user, m))
}

/// Removes member `m` (of `user`) from the caller's entity: its membership, team and
/// invitation; an account left without memberships is deactivated. 409 for oneself.
pub fn remove(cx: &mut Cx, pr: &Principal, (mut user, m): (User, Membership)) -> ApiResult<()> {
    if user.id == pr.user.id {
        return Err(ApiError::new(
            409,
            "cannot_remove_self",
            "you cannot remove yourself from the entity; another admin can",
        ));
    }
    may_manage(pr, m.role)?;
    if let Some(team) = &m.team_id {
        cx.p.delete(&team_key(&m.entity_id, team, &m.user_id));
    }
    cx.p.delete(&membership_key(&m.user_id, &m.entity_id));
    cx.p.delete(&entity_member_key(&m.entity_id, &m.user_id));
    invitations::forget(cx, &m.user_id, &m.entity_id);
    let (start, end) = memberships_of(&user.id);
    let rest: Vec<Membership> =
        cx.p.scan(&start, &end, 1000, false)
            .into_iter()
            .map(|(_, v)| decode(&v))
            .collect();
    if user.default_entity_id.as_deref() == Some(m.entity_id.as_str()) {
        user.default_entity_id = rest.first().map(|o| o.entity_id.clone());
    }
    if rest.is_empty() {
        user.active = false;
    }
    cx.save(&user_key(&user.id), &user);
    Ok(())
}

/// The teams of entity `entity_id` (the `team_id`s its members carry) and how many
/// members each has, in key order.
pub fn teams(cx: &mut Cx, entity_id: &str) -> Vec<(String, u64)> {
    let (start, end) = prefix_range(&format!("{TEAM}/{entity_id}/"));
    let mut counts: Vec<(String, u64)> = Vec::new();
    for (k, _) in cx.p.scan(&start, &end, u32::MAX, false) {
        let Ok(k) = String::from_utf8(k) else {
            continue;
        };
        let Some(team) = k.split('/').nth(2) else {
            continue;
        };
        match counts.last_mut() {
            Some((t, n)) if t == team => *n += 1,
            _ => counts.push((team.to_string(), 1)),
        }
    }
    counts
}
