//! Webhooks (spec §6, DESIGN.md §4): subscriptions, the 19 event kinds, fan-out of
//! each event to the matching subscriptions in the transaction that records it, and
//! what delivery reports back (dead letters, 410 Gone).
//!
//! | key | value |
//! |---|---|
//! | `sub/{id}` | [`Subscription`] |
//! | `sub-ent/{entity}/{event}/{id}` | empty: the entity's subscriptions to an event |
//! | `sub-err/{entity}/{error}` | [`DeadLetter`] (`error` is `{at}{id}`) |
//! | `sub-errb/{entity}/{error}` | the body the dead letter's delivery carried, for a retry |

use crate::base::api::{Delivery, Event, Mail};
use crate::base::cx::Cx;
use crate::base::keyspace::{SUB, SUB_ENT, SUB_ERR, SUB_ERRB};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::prefix_range;
use crate::base::util::{self, new_id};
use crate::domain::accounts::{self, Membership, User, membership_key, user_key};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The 19 event kinds (DESIGN.md §4) and when each is emitted.
pub const EVENTS: [(&str, &str); 19] = [
    ("document.created", "a document is created"),
    ("document.imported", "a document's files are imported"),
    ("document.sealed", "a document is sealed"),
    (
        "document.sent",
        "a document is sent (not by send-to-recipients batches)",
    ),
    (
        "document.viewed",
        "a recipient opens the document the first time",
    ),
    ("document.reviewed", "a recipient has read every page"),
    (
        "document.signed",
        "the last signer signs: the document is signed",
    ),
    (
        "document.partially_signed",
        "a signer signs and others are still to sign",
    ),
    ("document.approved", "an approver approves"),
    ("document.rejected", "a recipient rejects the document"),
    ("document.expired", "the expiration date passes"),
    ("document.downloaded", "a recipient downloads the PDF"),
    ("document.printed", "a recipient prints the document"),
    (
        "document.forwarded",
        "the document is forwarded to a new recipient",
    ),
    ("document.commented", "a recipient leaves a comment"),
    (
        "document.hardbounced",
        "mail to a recipient bounced for good",
    ),
    ("document.recalled", "a sent document is recalled by delete"),
    ("document.lost", "the document is marked as lost"),
    (
        "comment.created",
        "a comment is left (by a user or a recipient)",
    ),
];

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Subscription {
    pub id: String,
    pub entity_id: String,
    /// Who created it; a non-global subscription gets only this user's documents.
    pub user_id: String,
    pub event: String,
    pub target_url: String,
    pub global: bool,
    /// Text echoed as `payload` in every delivery.
    pub payload: String,
    /// Where failures are reported (else the creator).
    pub notification_email: String,
    /// `whsec_` + base64 of 24 random bytes.
    pub secret: String,
    pub active: bool,
    pub disabled_reason: Option<String>,
    pub dead_letters: u32,
    pub created_ms: u64,
}

/// A delivery given up after its last retry (reported by the host).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeadLetter {
    pub subscription_id: String,
    pub entity_id: String,
    pub event_id: String,
    pub event: String,
    pub target_url: String,
    pub attempts: u32,
    pub last_error: String,
    pub first_attempt_ms: u64,
    #[serde(default)]
    pub failed_ms: u64,
}

/// What the host's `webhook.dead` job carries: the dead letter and, from hosts that
/// send it, the body the delivery carried (kept apart, for a retry).
#[derive(Debug, Deserialize)]
pub struct DeadReport {
    #[serde(flatten)]
    pub letter: DeadLetter,
    #[serde(default)]
    pub body: String,
}

/// A dead letter's key; `error` is `{failed_at:016x}{id}`, the `id` of
/// `GET /v1/subscriptions/errors`.
pub fn dead_letter_key(entity: &str, error: &str) -> Vec<u8> {
    format!("{SUB_ERR}/{entity}/{error}").into_bytes()
}

/// The body of a dead letter's delivery, apart so that listing dead letters reads none.
pub fn dead_body_key(entity: &str, error: &str) -> Vec<u8> {
    format!("{SUB_ERRB}/{entity}/{error}").into_bytes()
}

pub fn sub_key(id: &str) -> Vec<u8> {
    util::key(&[SUB, id])
}

pub fn fanout_key(entity: &str, event: &str, id: &str) -> Vec<u8> {
    util::key(&[SUB_ENT, entity, event, id])
}

/// Records event `kind` with `payload` (a JSON object) and queues one delivery per
/// active subscription of the entity to that event that covers `user_id`'s documents,
/// and whose owner may still see them (see [`owner_lost_access`]; a subscription whose
/// owner may not is disabled here, and its owner told).
/// Each delivery's body is the payload plus `event_id`, `subscription_id` and the
/// subscription's `payload` text. Returns the event id.
pub fn emit(cx: &mut Cx, kind: &str, entity_id: &str, user_id: &str, mut payload: Value) -> String {
    let id = format!("evt_{}", new_id(cx));
    payload["event_id"] = id.clone().into();
    let (start, end) = prefix_range(&format!("{SUB_ENT}/{entity_id}/{kind}/"));
    let mut deliveries = Vec::new();
    for (k, _) in cx.p.scan(&start, &end, 1000, false) {
        let sub_id = String::from_utf8_lossy(&k[k.len() - 16..]).into_owned();
        let Some(sub) = cx.load::<Subscription>(&sub_key(&sub_id)) else {
            continue;
        };
        if !(sub.active && (sub.global || sub.user_id == user_id)) {
            continue;
        }
        match owner_lost_access(cx, &sub) {
            None => deliveries.push(delivery_for(&sub, &payload)),
            Some(why) => disable(cx, sub, why),
        }
    }
    cx.p.emit_event(
        Event {
            id: id.clone(),
            kind: kind.into(),
            entity_id: entity_id.into(),
            user_id: user_id.into(),
            payload: payload.to_string(),
        },
        deliveries,
    );
    id
}

/// `sub`'s copy of an event: the payload plus `subscription_id` and the echoed `payload`.
pub fn delivery_for(sub: &Subscription, payload: &Value) -> Delivery {
    let mut body = payload.clone();
    body["subscription_id"] = sub.id.clone().into();
    body["payload"] = sub.payload.clone().into();
    Delivery {
        subscription_id: sub.id.clone(),
        target_url: sub.target_url.clone(),
        secret: sub.secret.clone(),
        body: body.to_string(),
        entity_id: sub.entity_id.clone(),
    }
}

pub fn new_secret(cx: &mut Cx) -> String {
    let mut b = [0u8; 24];
    cx.p.fill_random(&mut b);
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(b)
    )
}

/// Why a subscription's owner may no longer receive its events, if so: the account is
/// gone or inactive, it is no longer an active member of the entity, or (for a global
/// subscription, which covers every user's documents) no longer an admin there.
fn owner_lost_access(cx: &mut Cx, s: &Subscription) -> Option<&'static str> {
    match cx.load::<User>(&user_key(&s.user_id)) {
        Some(u) if u.active => {}
        _ => return Some("its owner's account is no longer active"),
    }
    let m = cx.load::<Membership>(&membership_key(&s.user_id, &s.entity_id));
    match m {
        Some(m) if m.profile == accounts::Profile::Active => (s.global
            && m.role != accounts::Role::Admin)
            .then_some("its owner is no longer an admin, which a global subscription needs"),
        _ => Some("its owner is no longer a member of the entity"),
    }
}

/// Disables a subscription whose owner lost access, drops its queued deliveries and
/// tells the owner.
pub fn disable(cx: &mut Cx, mut s: Subscription, why: &str) {
    s.active = false;
    s.disabled_reason = Some(why.into());
    cx.save(&sub_key(&s.id), &s);
    cx.p.cancel_deliveries(&s.id);
    let subject = format!("Webhook subscription to {} disabled", s.target_url);
    let body = format!(
        "The subscription {} to {} events was disabled: {why}.\n",
        s.id, s.event
    );
    tell_owner(cx, &s, subject, body);
}

/// Mails a subscription's failure to its notification address, else its creator.
pub fn tell_owner(cx: &mut Cx, s: &Subscription, subject: String, body: String) {
    let to = if s.notification_email.is_empty() {
        match cx.load::<User>(&user_key(&s.user_id)) {
            Some(u) => u.email,
            None => return,
        }
    } else {
        s.notification_email.clone()
    };
    cx.p.send_mail(Mail {
        to,
        subject,
        body,
        tag: String::new(),
        html: String::new(),
    });
}
