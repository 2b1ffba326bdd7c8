//! Webhooks (spec §6, DESIGN.md §4): subscriptions, the 19 event kinds, fan-out of
//! each event to the matching subscriptions in the transaction that records it, and
//! what delivery reports back (dead letters, 410 Gone).
//!
//! | key | value |
//! |---|---|
//! | `sub/{id}` | [`Subscription`] |
//! | `sub-ent/{entity}/{event}/{id}` | empty: the entity's subscriptions to an event |
//! | `sub-err/{entity}/{at}{id}` | [`DeadLetter`] |
//!
//! Routes: `GET/POST /v1/subscriptions`, `GET/DELETE /v1/subscriptions/{id}`,
//! `POST /v1/subscriptions/{id}/secret` (rotate), `GET /v1/subscriptions/events`,
//! `GET /v1/subscriptions/errors`, `POST /v1/subscriptions/test`.

use crate::auth::{Principal, authenticate};
use crate::http::{ApiError, ApiResult, json, no_content};
use crate::model::{
    Membership, Profile, Role, User, decode, membership_key, prefix_range, user_key,
};
#[allow(unused_imports)]
use crate::prelude::*;
use crate::router::method_not_allowed;
use crate::util::{is_email, is_id, iso8601, new_id};
use crate::{Cx, Delivery, Event, Job, JobOutcome, Mail, Request, Response};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Job: a delivery was given up (payload: [`DeadLetter`] as JSON).
pub const DEAD_JOB: &str = "webhook.dead";
/// Job: a target answered 410 Gone (payload: the subscription id).
pub const GONE_JOB: &str = "webhook.gone";

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

fn sub_key(id: &str) -> Vec<u8> {
    crate::util::key(&["sub", id])
}

fn fanout_key(entity: &str, event: &str, id: &str) -> Vec<u8> {
    crate::util::key(&["sub-ent", entity, event, id])
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
    let (start, end) = prefix_range(&format!("sub-ent/{entity_id}/{kind}/"));
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

/// The `event` field of a body: one of [`EVENTS`], else 400.
fn required_event(f: &crate::http::Fields) -> ApiResult<String> {
    let event = f.required_str("event")?;
    if EVENTS.iter().any(|(e, _)| *e == event) {
        Ok(event)
    } else {
        Err(ApiError::bad_request(
            "invalid_event",
            format!("{event:?} is not an event; GET /v1/subscriptions/events lists them"),
        ))
    }
}

/// `sub`'s copy of an event: the payload plus `subscription_id` and the echoed `payload`.
fn delivery_for(sub: &Subscription, payload: &Value) -> Delivery {
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

fn new_secret(cx: &mut Cx) -> String {
    let mut b = [0u8; 24];
    cx.p.fill_random(&mut b);
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(b)
    )
}

fn sub_json(s: &Subscription) -> Value {
    json!({
        "id": s.id,
        "subscription_id": s.id,
        "event": s.event,
        "target_url": s.target_url,
        "global": s.global,
        "payload": s.payload,
        "notification_email": s.notification_email,
        "user_id": s.user_id,
        // GetAccept types `status` as an integer: 1 active, 0 disabled.
        "status": u8::from(s.active),
        "state": if s.active { "active" } else { "disabled" },
        "disabled_reason": s.disabled_reason,
        "dead_letters": s.dead_letters,
        "created_at": iso8601(s.created_ms),
    })
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found("subscription_not_found", format!("no subscription {id}"))
}

/// The caller's view: admins manage every subscription of the entity, others their own.
fn find(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Subscription> {
    if !is_id(id) {
        return Err(not_found(id));
    }
    cx.load::<Subscription>(&sub_key(id))
        .filter(|s| s.entity_id == pr.entity.id)
        .filter(|s| s.user_id == pr.user.id || pr.membership.role == Role::Admin)
        .ok_or_else(|| not_found(id))
}

/// `/v1/subscriptions/...`
pub fn route(cx: &mut Cx, req: &Request, rest: &[&str]) -> ApiResult<Response> {
    let m = req.method.as_str();
    let pr = authenticate(cx, req)?;
    match (m, rest) {
        ("GET", []) => {
            let mine = list(cx, &pr);
            Ok(json(
                200,
                &Value::Array(mine.iter().map(sub_json).collect()),
            ))
        }
        ("POST", []) => create(cx, &pr, req),
        (_, []) => Err(method_not_allowed(m, &["GET", "POST"])),
        // GetAccept's `{name, value}` items, and ours.
        ("GET", ["events"]) => Ok(json(
            200,
            &Value::Array(
                EVENTS
                    .iter()
                    .map(|(e, d)| json!({"name": d, "value": e, "event": e, "description": d}))
                    .collect(),
            ),
        )),
        ("GET", ["errors"]) => errors(cx, &pr),
        ("POST", ["test"]) => test(cx, &pr, req),
        (_, ["events" | "errors"]) => Err(method_not_allowed(m, &["GET"])),
        (_, ["test"]) => Err(method_not_allowed(m, &["POST"])),
        ("GET", [id]) => Ok(json(200, &sub_json(&find(cx, &pr, id)?))),
        ("DELETE", [id]) => {
            let s = find(cx, &pr, id)?;
            cx.p.delete(&sub_key(id));
            cx.p.delete(&fanout_key(&s.entity_id, &s.event, id));
            cx.p.cancel_deliveries(id);
            Ok(no_content())
        }
        (_, [_]) => Err(method_not_allowed(m, &["GET", "DELETE"])),
        ("POST", [id, "secret"]) => {
            let mut s = find(cx, &pr, id)?;
            s.secret = new_secret(cx);
            cx.save(&sub_key(id), &s);
            Ok(json(
                200,
                &json!({"subscription_id": s.id, "secret": s.secret}),
            ))
        }
        (_, [_, "secret"]) => Err(method_not_allowed(m, &["POST"])),
        _ => Err(ApiError::not_found("not_found", "no such endpoint")),
    }
}

/// The subscriptions the caller may see, oldest first.
fn list(cx: &mut Cx, pr: &Principal) -> Vec<Subscription> {
    let (start, end) = prefix_range(&format!("sub-ent/{}/", pr.entity.id));
    let mut out: Vec<Subscription> = Vec::new();
    for (k, _) in cx.p.scan(&start, &end, 10_000, false) {
        let id = String::from_utf8_lossy(&k[k.len() - 16..]).into_owned();
        if let Some(s) = cx.load::<Subscription>(&sub_key(&id))
            && (s.user_id == pr.user.id || pr.membership.role == Role::Admin)
        {
            out.push(s);
        }
    }
    out.sort_by_key(|s| s.created_ms);
    out
}

fn create(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    let f = req.body_fields()?;
    let event = required_event(&f)?;
    let target_url = f.required_str("target_url")?;
    let host = target_url.strip_prefix("https://").unwrap_or("");
    if host.is_empty() || host.starts_with('/') || target_url.chars().any(char::is_whitespace) {
        return Err(ApiError::bad_request(
            "invalid_target_url",
            "target_url must be an https:// URL with a host",
        ));
    }
    let global = f.optional_bool("global")?.unwrap_or(false);
    if global && pr.membership.role != Role::Admin {
        return Err(ApiError::forbidden(
            "access_denied",
            "only an admin may subscribe to every user's documents (global)",
        ));
    }
    let notification_email = f.optional_str("notification_email")?.unwrap_or_default();
    if !notification_email.is_empty() && !is_email(&notification_email) {
        return Err(ApiError::bad_request(
            "invalid_field",
            "notification_email must be an email address",
        ));
    }
    let s = Subscription {
        id: new_id(cx),
        entity_id: pr.entity.id.clone(),
        user_id: pr.user.id.clone(),
        event,
        target_url,
        global,
        payload: f.optional_str("payload")?.unwrap_or_default(),
        notification_email,
        secret: new_secret(cx),
        active: true,
        disabled_reason: None,
        dead_letters: 0,
        created_ms: cx.now(),
    };
    cx.save(&sub_key(&s.id), &s);
    cx.p.put(&fanout_key(&s.entity_id, &s.event, &s.id), b"");
    let mut v = sub_json(&s);
    v["secret"] = s.secret.clone().into(); // shown only now
    Ok(json(200, &v))
}

fn errors(cx: &mut Cx, pr: &Principal) -> ApiResult<Response> {
    let visible: Vec<String> = list(cx, pr).into_iter().map(|s| s.id).collect();
    let (start, end) = prefix_range(&format!("sub-err/{}/", pr.entity.id));
    let items: Vec<Value> = cx
        .p
        .scan(&start, &end, 1000, true)
        .into_iter()
        .map(|(_, v)| decode::<DeadLetter>(&v))
        .filter(|d| visible.contains(&d.subscription_id) || pr.membership.role == Role::Admin)
        .map(|d| {
            json!({
                "subscription_id": d.subscription_id, "event": d.event, "event_id": d.event_id,
                "target_url": d.target_url, "attempts": d.attempts, "last_error": d.last_error,
                "first_attempt_at": iso8601(d.first_attempt_ms), "failed_at": iso8601(d.failed_ms),
                // GetAccept's members (all strings there).
                "created_at": iso8601(d.failed_ms), "result": d.last_error,
                "retry": d.attempts.to_string(), "status": "failed", "payload": "",
            })
        })
        .collect();
    Ok(json(200, &Value::Array(items)))
}

/// `POST /v1/subscriptions/test` (body `event`, `document_id`, `subscription_id`?): a
/// sample delivery of `event` for the document to the caller's subscriptions to it.
fn test(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    let f = req.body_fields()?;
    let event = required_event(&f)?;
    let doc_id = f.required_str("document_id")?;
    let doc = crate::docs::readable(cx, pr, &doc_id)?;
    let only = f.optional_str("subscription_id")?;
    let targets: Vec<Subscription> = list(cx, pr)
        .into_iter()
        .filter(|s| s.event == event && s.active)
        .filter(|s| only.as_ref().is_none_or(|o| &s.id == o))
        .collect();
    if targets.is_empty() {
        return Err(ApiError::bad_request(
            "no_subscription",
            format!("you have no active subscription to {event}"),
        ));
    }
    let mut payload = crate::docs::event_payload(cx, &doc, &event);
    if let Some(r) = doc.recipients.first() {
        payload["recipient"] = crate::docs::event_recipient(r);
    }
    payload["test"] = true.into();
    let id = format!("evt_{}", new_id(cx));
    payload["event_id"] = id.clone().into();
    let deliveries: Vec<Delivery> = targets.iter().map(|s| delivery_for(s, &payload)).collect();
    cx.p.emit_event(
        Event {
            id: id.clone(),
            kind: event,
            entity_id: doc.entity_id.clone(),
            user_id: doc.user_id.clone(),
            payload: payload.to_string(),
        },
        deliveries,
    );
    Ok(json(
        200,
        &json!({"event_id": id, "subscriptions": targets.iter().map(|s| s.id.clone()).collect::<Vec<_>>()}),
    ))
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
        Some(m) if m.profile == Profile::Active => (s.global && m.role != Role::Admin)
            .then_some("its owner is no longer an admin, which a global subscription needs"),
        _ => Some("its owner is no longer a member of the entity"),
    }
}

/// Disables a subscription whose owner lost access, drops its queued deliveries and
/// tells the owner.
fn disable(cx: &mut Cx, mut s: Subscription, why: &str) {
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
fn tell_owner(cx: &mut Cx, s: &Subscription, subject: String, body: String) {
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
    });
}

/// Job [`DEAD_JOB`]: records a dead letter, visible in `/v1/subscriptions/errors`, and
/// tells the owner.
pub fn dead(cx: &mut Cx, job: &Job) -> JobOutcome {
    let Ok(mut d) = serde_json::from_slice::<DeadLetter>(&job.payload) else {
        return JobOutcome::Failed("bad dead-letter payload".into());
    };
    d.failed_ms = cx.now();
    let key = format!("sub-err/{}/{:016x}{}", d.entity_id, d.failed_ms, new_id(cx));
    cx.save(key.as_bytes(), &d);
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
    JobOutcome::Done
}

/// Job [`GONE_JOB`]: the target answered 410 Gone: the subscription is disabled and its
/// queued deliveries dropped.
pub fn gone(cx: &mut Cx, job: &Job) -> JobOutcome {
    let id = String::from_utf8_lossy(&job.payload).into_owned();
    let Some(s) = cx.load::<Subscription>(&sub_key(&id)) else {
        return JobOutcome::Done;
    };
    if s.active {
        disable(cx, s, "the target answered 410 Gone");
    }
    JobOutcome::Done
}
