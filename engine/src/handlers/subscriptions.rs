//! Webhooks (spec §6, DESIGN.md §4): subscriptions, the 19 event kinds, fan-out of
//! each event to the matching subscriptions in the transaction that records it, and
//! what delivery reports back (dead letters, 410 Gone).
//!
//! | key | value |
//! |---|---|
//! | `sub/{id}` | [`Subscription`] |
//! | `sub-ent/{entity}/{event}/{id}` | empty: the entity's subscriptions to an event |
//! | `sub-err/{entity}/{error}` | [`DeadLetter`] |
//! | `sub-errb/{entity}/{error}` | its delivery's body |
//!
//! Routes: `GET/POST /v1/subscriptions`, `GET/DELETE /v1/subscriptions/{id}`,
//! `POST /v1/subscriptions/{id}/secret` (rotate), `GET /v1/subscriptions/events`,
//! `GET /v1/subscriptions/{id}/deliveries`, `GET /v1/subscriptions/errors`,
//! `POST /v1/subscriptions/errors/{id}/retry`, `POST /v1/subscriptions/test`.

use crate::base::api::{Delivery, Event, Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult, json, no_content};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::{decode, prefix_range};
use crate::base::util::{is_email, is_id, iso8601, new_id, normalize_email};
use crate::domain::auth::Principal;
use crate::domain::webhooks::{
    DeadLetter, EVENTS, Subscription, dead_body_key, dead_letter_key, delivery_for, fanout_key,
    new_secret, sub_key,
};
use crate::domain::{access, accounts, events};
use serde_json::{Value, json};

/// The `event` field of a body: one of [`EVENTS`], else 400.
fn required_event(f: &http::Fields) -> ApiResult<String> {
    let event = f.required_str("event")?;
    if EVENTS.iter().any(|(e, _)| *e == event) {
        Ok(event)
    } else {
        Err(http::ApiError::bad_request(
            "invalid_event",
            format!("{event:?} is not an event; GET /v1/subscriptions/events lists them"),
        ))
    }
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

/// Whether the user with `email` is a member of entity `entity_id`.
fn is_member(cx: &mut Cx, email: &str, entity_id: &str) -> bool {
    accounts::user_id_by_email(cx, email).is_some_and(|id| {
        cx.p.get(&accounts::membership_key(&id, entity_id))
            .is_some()
    })
}

fn not_found(id: &str) -> ApiError {
    http::ApiError::not_found("subscription_not_found", format!("no subscription {id}"))
}

/// The caller's view: admins manage every subscription of the entity, others their own.
fn find(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Subscription> {
    if !is_id(id) {
        return Err(not_found(id));
    }
    cx.load::<Subscription>(&sub_key(id))
        .filter(|s| s.entity_id == pr.entity.id)
        .filter(|s| s.user_id == pr.user.id || pr.membership.role == accounts::Role::Admin)
        .ok_or_else(|| not_found(id))
}

/// The subscriptions the caller may see, oldest first.
fn list(cx: &mut Cx, pr: &Principal) -> Vec<Subscription> {
    let (start, end) = prefix_range(&format!("sub-ent/{}/", pr.entity.id));
    let mut out: Vec<Subscription> = Vec::new();
    for (k, _) in cx.p.scan(&start, &end, 10_000, false) {
        let id = String::from_utf8_lossy(&k[k.len() - 16..]).into_owned();
        if let Some(s) = cx.load::<Subscription>(&sub_key(&id))
            && (s.user_id == pr.user.id || pr.membership.role == accounts::Role::Admin)
        {
            out.push(s);
        }
    }
    out.sort_by_key(|s| s.created_ms);
    out
}

/// `POST /v1/subscriptions`, or with `fixed` one of the one-event endpoints
/// (`/v1/subscriptions/events/{signed,rejected,reviewed}`), whose `event` may be left
/// out and must otherwise be `document.{fixed}`.
pub fn create(
    cx: &mut Cx,
    pr: &Principal,
    req: &Request,
    fixed: Option<&str>,
) -> ApiResult<Response> {
    let f = req.body_fields()?;
    let event = match fixed {
        None => required_event(&f)?,
        Some(kind) => {
            let event = format!("document.{kind}");
            match f.optional_str("event")? {
                Some(given) if !given.is_empty() && given != event => {
                    return Err(http::ApiError::bad_request(
                        "invalid_event",
                        format!("this endpoint subscribes to {event}, not {given:?}"),
                    ));
                }
                _ => event,
            }
        }
    };
    let target_url = f.required_str("target_url")?;
    let host = target_url.strip_prefix("https://").unwrap_or("");
    if host.is_empty() || host.starts_with('/') || target_url.chars().any(char::is_whitespace) {
        return Err(http::ApiError::bad_request(
            "invalid_target_url",
            "target_url must be an https:// URL with a host",
        ));
    }
    let global = f.optional_bool("global")?.unwrap_or(false);
    if global && pr.membership.role != accounts::Role::Admin {
        return Err(http::ApiError::forbidden(
            "access_denied",
            "only an admin may subscribe to every user's documents (global)",
        ));
    }
    let notification_email = f
        .optional_str("notification_email")?
        .map(|e| normalize_email(&e))
        .unwrap_or_default();
    if !notification_email.is_empty() && !is_email(&notification_email) {
        return Err(http::ApiError::bad_request(
            "invalid_field",
            "notification_email must be an email address",
        ));
    }
    // Dead-letter notices name the target URL and its errors: only a member of the
    // entity may receive them.
    if !notification_email.is_empty() && !is_member(cx, &notification_email, &pr.entity.id) {
        return Err(http::ApiError::bad_request(
            "invalid_field",
            "notification_email must be the address of a user of this entity",
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

pub fn errors(cx: &mut Cx, pr: &Principal) -> ApiResult<Response> {
    let visible: Vec<String> = list(cx, pr).into_iter().map(|s| s.id).collect();
    let prefix = format!("sub-err/{}/", pr.entity.id);
    let (start, end) = prefix_range(&prefix);
    let items: Vec<Value> = cx
        .p
        .scan(&start, &end, 1000, true)
        .into_iter()
        .map(|(k, v)| {
            let error = String::from_utf8_lossy(&k[prefix.len()..]).into_owned();
            (error, decode::<DeadLetter>(&v))
        })
        .filter(|(_, d)| {
            visible.contains(&d.subscription_id) || pr.membership.role == accounts::Role::Admin
        })
        .map(|(error, d)| {
            json!({
                "id": error,
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

/// Most deliveries `GET /v1/subscriptions/{id}/deliveries` lists.
const PENDING_LISTED: u32 = 100;

/// `GET /v1/subscriptions/{id}/deliveries`: the subscription's deliveries the host
/// still holds (not tried yet, or failed and waiting for their next attempt), the next
/// due first, at most [`PENDING_LISTED`]. Delivered ones are gone from it; given-up
/// ones are in `GET /v1/subscriptions/errors`.
pub fn deliveries(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let s = find(cx, pr, id)?;
    let items: Vec<Value> =
        cx.p.pending_deliveries(&s.id, &s.target_url, PENDING_LISTED)
            .into_iter()
            .map(|d| {
                json!({
                    "event_id": d.event_id,
                    "event": d.event,
                    "status": if d.attempts == 0 { "queued" } else { "retrying" },
                    "attempts": d.attempts,
                    "last_error": d.last_error,
                    "queued_at": iso8601(d.queued_at_ms),
                    "next_attempt_at": iso8601(d.next_attempt_at_ms),
                })
            })
            .collect();
    Ok(json(
        200,
        &json!({"subscription_id": s.id, "target_url": s.target_url, "deliveries": items}),
    ))
}

/// `POST /v1/subscriptions/errors/{id}/retry`: the dead letter's delivery is queued
/// again, with the same body and event id (`webhook-id`), to the subscription's target
/// and signed with its secret as they are now; the dead letter is removed (a new
/// failure records a new one). 404 for a dead letter the caller does not see, 409 when
/// the subscription is deleted or disabled, or when the host did not keep the body.
pub fn retry(cx: &mut Cx, pr: &Principal, error: &str) -> ApiResult<Response> {
    let missing =
        || http::ApiError::not_found("error_not_found", format!("no failed delivery {error}"));
    let well_formed = error.len() == 32
        && error.is_char_boundary(16)
        && error[..16].bytes().all(|b| b.is_ascii_hexdigit())
        && is_id(&error[16..]);
    if !well_formed {
        return Err(missing());
    }
    let key = dead_letter_key(&pr.entity.id, error);
    let d = cx.load::<DeadLetter>(&key).ok_or_else(missing)?;
    // Seen as in the list: by the subscription's owner, or an admin. The key is the
    // caller's entity's, and so is the subscription.
    let sub = cx.load::<Subscription>(&sub_key(&d.subscription_id));
    let admin = pr.membership.role == accounts::Role::Admin;
    if !(admin || sub.as_ref().is_some_and(|s| s.user_id == pr.user.id)) {
        return Err(missing());
    }
    let Some(s) = sub.filter(|s| s.active) else {
        return Err(http::ApiError::new(
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
        return Err(http::ApiError::new(
            409,
            "body_unknown",
            "the host did not keep this delivery's body, so it cannot be sent again",
        ));
    };
    let body = String::from_utf8_lossy(&body).into_owned();
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
    cx.p.delete(&key);
    cx.p.delete(&body_key);
    Ok(json(
        202,
        &json!({"id": error, "event_id": d.event_id, "subscription_id": s.id, "status": "queued"}),
    ))
}

/// `POST /v1/subscriptions/test` (body `event`, `document_id`, `subscription_id`?): a
/// sample delivery of `event` for the document to the caller's subscriptions to it.
pub fn test(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    let f = req.body_fields()?;
    let event = required_event(&f)?;
    let doc_id = f.required_str("document_id")?;
    let doc = access::readable(cx, pr, &doc_id)?;
    let only = f.optional_str("subscription_id")?;
    let targets: Vec<Subscription> = list(cx, pr)
        .into_iter()
        .filter(|s| s.event == event && s.active)
        .filter(|s| only.as_ref().is_none_or(|o| &s.id == o))
        .collect();
    if targets.is_empty() {
        return Err(http::ApiError::bad_request(
            "no_subscription",
            format!("you have no active subscription to {event}"),
        ));
    }
    let mut payload = events::event_payload(cx, &doc, &event);
    if let Some(r) = doc.recipients.first() {
        payload["recipient"] = events::event_recipient(r);
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

/// `GET /v1/subscriptions`: the caller's subscriptions.
pub fn list_json(cx: &mut Cx, pr: &Principal) -> ApiResult<Response> {
    let mine = list(cx, pr);
    Ok(json(
        200,
        &Value::Array(mine.iter().map(sub_json).collect()),
    ))
}

/// `GET /v1/subscriptions/events`: GetAccept's `{name, value}` items, and ours.
pub fn events() -> Response {
    json(
        200,
        &Value::Array(
            EVENTS
                .iter()
                .map(|(e, d)| json!({"name": d, "value": e, "event": e, "description": d}))
                .collect(),
        ),
    )
}

/// `GET /v1/subscriptions/{id}`.
pub fn get(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    Ok(json(200, &sub_json(&find(cx, pr, id)?)))
}

/// `DELETE /v1/subscriptions/{id}`: no more events, and its queued deliveries dropped.
pub fn delete(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let s = find(cx, pr, id)?;
    cx.p.delete(&sub_key(id));
    cx.p.delete(&fanout_key(&s.entity_id, &s.event, id));
    cx.p.cancel_deliveries(id);
    Ok(no_content())
}

/// `POST /v1/subscriptions/{id}/secret`: a new signing secret, shown only now.
pub fn rotate_secret(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let mut s = find(cx, pr, id)?;
    s.secret = new_secret(cx);
    cx.save(&sub_key(id), &s);
    Ok(json(
        200,
        &json!({"subscription_id": s.id, "secret": s.secret}),
    ))
}
