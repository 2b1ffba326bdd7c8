//! Invitations: how a manager or an admin adds a person to their entity
//! (`POST /v1/users`) without learning whether that person has an account elsewhere.
//!
//! The rule, the same for every email: the person joins *pending* and is mailed an
//! invitation; nobody is told a password. An email without an account gets a new
//! account whose password is the one the caller chose, or one made here and written
//! only in the invitation mail. An email with an account (in other entities) keeps
//! that account as it is: its password (a chosen one is ignored), its names and its
//! data; the invitation asks its owner to sign in with their own password. Until the
//! person accepts, what the entity sees of them is what it gave (email, names, the
//! invitation's time), never the account's own data, and no token acts in the entity.
//! They accept by signing in to the entity (`POST /v1/auth` with its `entity_id`, a
//! sign-in whose default entity it is, or `GET /v1/refresh/{entity}`): the membership
//! becomes active and the entity sees the account as it is.
//!
//! The work is the same both ways: one password hashed (for an existing account, the
//! hash is made and dropped), one mail, so neither the answer nor its time differs.
//!
//! | key | value |
//! |---|---|
//! | `inv/{user_id}/{entity_id}` | [`Invitation`]: beside a membership with the profile `pending` |

use crate::base::api::Mail;
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult};
use crate::base::keyspace::INV;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, new_secret};
use crate::domain::accounts::{
    self, Entity, Membership, Profile, Role, User, add_membership, check_new_credentials,
    membership_key, memberships_of, new_user, user_id_by_email, user_key,
};
use serde::{Deserialize, Serialize};

/// What the inviting entity said about the person, shown until they accept.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Invitation {
    /// The email as the caller wrote it.
    pub email: String,
    pub first_name: String,
    pub last_name: String,
    /// Who invited (a user id of the entity).
    pub invited_by: String,
    pub created_ms: u64,
}

pub fn invitation_key(user_id: &str, entity_id: &str) -> Vec<u8> {
    util::key(&[INV, user_id, entity_id])
}

/// The open invitation of `user_id` to `entity_id`, if any.
pub fn invitation(cx: &mut Cx, user_id: &str, entity_id: &str) -> Option<Invitation> {
    cx.load(&invitation_key(user_id, entity_id))
}

/// Who to invite, and as what.
pub struct Invitee {
    pub email: String,
    pub first_name: String,
    pub last_name: String,
    pub role: Role,
    pub team_id: Option<String>,
    /// The password the caller chose for a new account (at least 8 characters).
    pub password: Option<String>,
}

/// Invites `who` to `entity` on behalf of `inviter`; the mail is written in `lang`.
/// 400 for an email that is not one or a chosen password under 8 characters; 409
/// `email_taken` when the email's account is already a member of `entity` (the
/// entity's own data). Answers the account and its new, pending membership.
pub fn invite(
    cx: &mut Cx,
    entity: &Entity,
    inviter: &User,
    who: Invitee,
    lang: &str,
) -> ApiResult<(User, Membership)> {
    let email = who.email.trim().to_string();
    // Checked before the email is looked up, so a bad body is told the same either way.
    let (password, chosen) = match who.password {
        Some(p) => (p, true),
        None => (new_secret(cx)[..24].to_string(), false),
    };
    check_new_credentials(&email, &password)?;
    let existing = user_id_by_email(cx, &email).and_then(|id| cx.load::<User>(&user_key(&id)));
    if let Some(user) = &existing
        && cx.p.get(&membership_key(&user.id, &entity.id)).is_some()
    {
        return Err(http::ApiError::new(
            409,
            "email_taken",
            format!("{email} is already a member of this entity"),
        ));
    }
    let (mut user, new_account) = match existing {
        Some(mut user) => {
            // The same work as a new account's password, whose result nobody uses.
            let _ = cx.p.hash_password(&password);
            // An account every entity removed was deactivated with its last
            // membership; an invitation may bring it back (no other entity's data
            // is reached by it).
            let (start, end) = memberships_of(&user.id);
            if !user.active && cx.p.scan(&start, &end, 1, false).is_empty() {
                user.active = true;
                cx.save(&user_key(&user.id), &user);
            }
            (user, false)
        }
        None => (
            new_user(
                cx,
                &email,
                &password,
                who.first_name.clone(),
                who.last_name.clone(),
            )?,
            true,
        ),
    };
    let m = Membership {
        user_id: user.id.clone(),
        entity_id: entity.id.clone(),
        role: who.role,
        profile: Profile::Pending,
        team_id: who.team_id,
    };
    add_membership(cx, &mut user, &m);
    let inv = Invitation {
        email: email.clone(),
        first_name: who.first_name,
        last_name: who.last_name,
        invited_by: inviter.id.clone(),
        created_ms: cx.now(),
    };
    cx.save(&invitation_key(&user.id, &entity.id), &inv);
    let account = match (new_account, chosen) {
        (false, _) => Account::Existing,
        (true, true) => Account::Chosen,
        (true, false) => Account::Made(&password),
    };
    let mail = invitation_mail(cx, entity, inviter, &email, account, lang);
    cx.p.send_mail(mail);
    Ok((user, m))
}

/// Accepts the open invitation of `user_id` to `entity_id`, if there is one: the
/// membership becomes active. Called when the person signs in to the entity.
pub fn accept(cx: &mut Cx, user_id: &str, entity_id: &str) {
    let key = invitation_key(user_id, entity_id);
    if cx.p.get(&key).is_none() {
        return;
    }
    cx.p.delete(&key);
    if let Some(mut m) = cx.load::<Membership>(&membership_key(user_id, entity_id))
        && m.profile == Profile::Pending
    {
        m.profile = Profile::Active;
        cx.save(&membership_key(user_id, entity_id), &m);
    }
}

/// Drops the open invitation of `user_id` to `entity_id` (the member was removed).
pub fn forget(cx: &mut Cx, user_id: &str, entity_id: &str) {
    cx.p.delete(&invitation_key(user_id, entity_id));
}

/// What the invitation tells about the account it is for.
enum Account<'a> {
    /// The person's own account: they sign in with their own password.
    Existing,
    /// A new account whose password the inviter chose (and passes on).
    Chosen,
    /// A new account with this password, written only here.
    Made(&'a str),
}

fn invitation_mail(
    cx: &mut Cx,
    entity: &Entity,
    inviter: &User,
    email: &str,
    account: Account,
    lang: &str,
) -> Mail {
    let words = cx.words(lang);
    let app = format!("{}/app", cx.settings().base_url.trim_end_matches('/'));
    let inviter_name = accounts::user_name(inviter);
    let vars = [
        ("inviter", inviter_name.as_str()),
        ("entity", entity.name.as_str()),
        ("entity_id", entity.id.as_str()),
        ("email", email),
        ("url", app.as_str()),
    ];
    let how = match account {
        Account::Existing => words.fill("mail.member_existing", &vars),
        Account::Chosen => words.fill("mail.member_chosen", &vars),
        Account::Made(password) => format!(
            "{}\n\n    {password}",
            words.fill("mail.member_password", &vars)
        ),
    };
    let body = format!(
        "{}\n\n{}\n\n{}\n\n{how}\n\n{}\n",
        words.fill("mail.hello", &[("name", email)]),
        words.fill("mail.member_invitation", &vars),
        words.fill("mail.member_accept", &vars),
        words.fill("mail.member_decline", &vars),
    );
    Mail {
        to: email.to_string(),
        subject: words.fill("mail.member_subject", &vars),
        body,
        tag: String::new(),
        html: String::new(),
        attachments: Vec::new(),
    }
}
