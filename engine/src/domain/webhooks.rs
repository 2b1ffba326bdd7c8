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

use crate::base::api::{Delivery, Event, Mail, PendingDelivery};
use crate::base::cx::Cx;
use crate::base::http::{ApiError, ApiResult};
use crate::base::keyspace::{SUB, SUB_ENT, SUB_ERR, SUB_ERRB};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::{decode, prefix_range};
use crate::base::util::{self, new_id};
use crate::domain::accounts::{self, Membership, User, membership_key, user_key};
use crate::domain::auth::Principal;
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
        attachments: Vec::new(),
    });
}

fn is_admin(pr: &Principal) -> bool {
    pr.membership.role == accounts::Role::Admin
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found("subscription_not_found", format!("no subscription {id}"))
}

/// An event a subscription names: one of [`EVENTS`], else 400.
pub fn check_event(event: &str) -> ApiResult<()> {
    if EVENTS.iter().any(|(e, _)| *e == event) {
        Ok(())
    } else {
        Err(ApiError::bad_request(
            "invalid_event",
            format!("{event:?} is not an event; GET /v1/subscriptions/events lists them"),
        ))
    }
}

/// A target: an `https://` URL with a host and no whitespace.
pub fn check_target_url(target_url: &str) -> ApiResult<()> {
    let host = target_url.strip_prefix("https://").unwrap_or("");
    if host.is_empty() || host.starts_with('/') || target_url.chars().any(char::is_whitespace) {
        return Err(ApiError::bad_request(
            "invalid_target_url",
            "target_url must be an https:// URL with a host",
        ));
    }
    Ok(())
}

/// A global subscription (every user's documents) is an admin's.
pub fn may_subscribe(pr: &Principal, global: bool) -> ApiResult<()> {
    if global && !is_admin(pr) {
        return Err(ApiError::forbidden(
            "access_denied",
            "only an admin may subscribe to every user's documents (global)",
        ));
    }
    Ok(())
}

/// A `notification_email` (normalized; empty for none): an address, and, since
/// dead-letter notices name the target URL and its errors, a member of the entity's.
pub fn check_notification_email(cx: &mut Cx, pr: &Principal, email: &str) -> ApiResult<()> {
    if email.is_empty() {
        return Ok(());
    }
    if !util::is_email(email) {
        return Err(ApiError::bad_request(
            "invalid_field",
            "notification_email must be an email address",
        ));
    }
    let member = accounts::user_id_by_email(cx, email)
        .is_some_and(|id| cx.p.get(&membership_key(&id, &pr.entity.id)).is_some());
    if !member {
        return Err(ApiError::bad_request(
            "invalid_field",
            "notification_email must be the address of a user of this entity",
        ));
    }
    Ok(())
}

/// What a new subscription is given, checked ([`check_event`], [`check_target_url`],
/// [`may_subscribe`], [`check_notification_email`]).
pub struct NewSubscription {
    pub event: String,
    pub target_url: String,
    pub global: bool,
    pub payload: String,
    pub notification_email: String,
}

/// Subscribes the caller: the subscription with a new secret, and its fan-out key.
pub fn subscribe(cx: &mut Cx, pr: &Principal, new: NewSubscription) -> Subscription {
    let s = Subscription {
        id: new_id(cx),
        entity_id: pr.entity.id.clone(),
        user_id: pr.user.id.clone(),
        event: new.event,
        target_url: new.target_url,
        global: new.global,
        payload: new.payload,
        notification_email: new.notification_email,
        secret: new_secret(cx),
        active: true,
        disabled_reason: None,
        dead_letters: 0,
        created_ms: cx.now(),
    };
    cx.save(&sub_key(&s.id), &s);
    cx.p.put(&fanout_key(&s.entity_id, &s.event, &s.id), b"");
    s
}

/// The caller's view of subscription `id`: admins manage every subscription of the
/// entity, others their own; 404 otherwise.
pub fn find(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Subscription> {
    if !util::is_id(id) {
        return Err(not_found(id));
    }
    cx.load::<Subscription>(&sub_key(id))
        .filter(|s| s.entity_id == pr.entity.id)
        .filter(|s| s.user_id == pr.user.id || is_admin(pr))
        .ok_or_else(|| not_found(id))
}

/// The subscriptions the caller may see, oldest first.
pub fn visible(cx: &mut Cx, pr: &Principal) -> Vec<Subscription> {
    let (start, end) = prefix_range(&format!("{SUB_ENT}/{}/", pr.entity.id));
    let mut out: Vec<Subscription> = Vec::new();
    for (k, _) in cx.p.scan(&start, &end, 10_000, false) {
        let id = String::from_utf8_lossy(&k[k.len() - 16..]).into_owned();
        if let Some(s) = cx.load::<Subscription>(&sub_key(&id))
            && (s.user_id == pr.user.id || is_admin(pr))
        {
            out.push(s);
        }
    }
    out.sort_by_key(|s| s.created_ms);
    out
}

/// The dead letters the caller may see (of their subscriptions; an admin's: all the
/// entity's), newest first, each with its `error` id; at most 1000.
pub fn dead_letters(cx: &mut Cx, pr: &Principal) -> Vec<(String, DeadLetter)> {
    let visible: Vec<String> = visible(cx, pr).into_iter().map(|s| s.id).collect();
    let prefix = format!("{SUB_ERR}/{}/", pr.entity.id);
    let (start, end) = prefix_range(&prefix);
    cx.p.scan(&start, &end, 1000, true)
        .into_iter()
        .map(|(k, v)| {
            let error = String::from_utf8_lossy(&k[prefix.len()..]).into_owned();
            (error, decode::<DeadLetter>(&v))
        })
        .filter(|(_, d)| visible.contains(&d.subscription_id) || is_admin(pr))
        .collect()
}

/// The deliveries of `s` the host still holds, the next due first, at most `limit`.
pub fn pending_deliveries(cx: &mut Cx, s: &Subscription, limit: u32) -> Vec<PendingDelivery> {
    cx.p.pending_deliveries(&s.id, &s.target_url, limit)
}

/// Queues dead letter `error`'s delivery again, with the same body and event id, to
/// its subscription's target and signed with its secret as they are now, and removes
/// the dead letter. 404 for a dead letter the caller does not see, 409 when the
/// subscription is deleted or disabled, or when the host did not keep the body.
pub fn retry(cx: &mut Cx, pr: &Principal, error: &str) -> ApiResult<(DeadLetter, Subscription)> {
    let missing = || ApiError::not_found("error_not_found", format!("no failed delivery {error}"));
    let well_formed = error.len() == 32
        && error.is_char_boundary(16)
        && error[..16].bytes().all(|b| b.is_ascii_hexdigit())
        && util::is_id(&error[16..]);
    if !well_formed {
        return Err(missing());
    }
    let key = dead_letter_key(&pr.entity.id, error);
    let d = cx.load::<DeadLetter>(&key).ok_or_else(missing)?;
    // Seen as in the list: by the subscription's owner, or an admin. The key is the
    // caller's entity's, and so is the subscription.
    let sub = cx.load::<Subscription>(&sub_key(&d.subscription_id));
    if !(is_admin(pr) || sub.as_ref().is_some_and(|s| s.user_id == pr.user.id)) {
        return Err(missing());
    }
    let Some(s) = sub.filter(|s| s.active) else {
        return Err(ApiError::new(
            409,
            "subscription_inactive",
            format!(
                "subscription {} is deleted or disabled: a retry would reach nobody",
                d.subscription_id
            ),
        ));
    };
    let body_key = dead_body_key(&pr.entity.id, error);
    let Some(body) = cx.p.get(&body_key) else {
        return Err(ApiError::new(
            409,
            "body_unknown",
            "the host did not keep this delivery's body, so it cannot be sent again",
        ));
    };
    redeliver(cx, &s, &d, String::from_utf8_lossy(&body).into_owned());
    cx.p.delete(&key);
    cx.p.delete(&body_key);
    Ok((d, s))
}

/// Emits the event of dead letter `d` again with one delivery of `body` to `s`.
fn redeliver(cx: &mut Cx, s: &Subscription, d: &DeadLetter, body: String) {
    // The event as recorded: the body without its per-subscription members.
    let mut payload: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    if let Some(o) = payload.as_object_mut() {
        o.remove("subscription_id");
        o.remove("payload");
    }
    let delivery = Delivery {
        subscription_id: s.id.clone(),
        target_url: s.target_url.clone(),
        secret: s.secret.clone(),
        body,
        entity_id: s.entity_id.clone(),
    };
    cx.p.emit_event(
        Event {
            id: d.event_id.clone(),
            kind: d.event.clone(),
            entity_id: s.entity_id.clone(),
            user_id: s.user_id.clone(),
            payload: payload.to_string(),
        },
        vec![delivery],
    );
}

/// Deletes subscription `s`: no more events, and its queued deliveries dropped.
pub fn unsubscribe(cx: &mut Cx, s: &Subscription) {
    cx.p.delete(&sub_key(&s.id));
    cx.p.delete(&fanout_key(&s.entity_id, &s.event, &s.id));
    cx.p.cancel_deliveries(&s.id);
}

/// Gives `s` a new signing secret.
pub fn rotate_secret(cx: &mut Cx, s: &mut Subscription) {
    s.secret = new_secret(cx);
    cx.save(&sub_key(&s.id), s);
}

/// A delivery given up on (job `webhook.dead`): records the dead letter (and the body
/// its delivery carried, when the host sent it), visible in `/v1/subscriptions/errors`
/// and sent again by `POST /v1/subscriptions/errors/{id}/retry`, counts it on its
/// subscription and tells the owner.
pub fn record_dead(cx: &mut Cx, report: DeadReport) {
    let DeadReport {
        letter: mut d,
        body,
    } = report;
    d.failed_ms = cx.now();
    let error = format!("{:016x}{}", d.failed_ms, new_id(cx));
    cx.save(&dead_letter_key(&d.entity_id, &error), &d);
    if !body.is_empty() {
        cx.p.put(&dead_body_key(&d.entity_id, &error), body.as_bytes());
    }
    if let Some(mut s) = cx.load::<Subscription>(&sub_key(&d.subscription_id)) {
        s.dead_letters += 1;
        cx.save(&sub_key(&s.id), &s);
        let subject = format!("Webhook delivery to {} failed", s.target_url);
        let body = format!(
            "The {} event {} could not be delivered to {} after {} attempts.\n\nLast error: {}\n\nGET /v1/subscriptions/errors lists every failed delivery.\n",
            d.event, d.event_id, s.target_url, d.attempts, d.last_error
        );
        tell_owner(cx, &s, subject, body);
    }
}

/// The target of subscription `id` answered 410 Gone (job `webhook.gone`): an active
/// subscription is disabled and its queued deliveries dropped.
pub fn target_gone(cx: &mut Cx, id: &str) {
    if let Some(s) = cx.load::<Subscription>(&sub_key(id))
        && s.active
    {
        disable(cx, s, "the target answered 410 Gone");
    }
}
