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

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, json, no_content};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{iso8601, normalize_email};
use crate::domain::auth::Principal;
use crate::domain::webhooks::{self, EVENTS, NewSubscription, Subscription};
use crate::domain::{access, events};
use serde_json::{Value, json};

/// The `event` field of a body: one of [`EVENTS`], else 400.
fn required_event(f: &http::Fields) -> ApiResult<String> {
    let event = f.required_str("event")?;
    webhooks::check_event(&event)?;
    Ok(event)
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
    webhooks::check_target_url(&target_url)?;
    let global = f.optional_bool("global")?.unwrap_or(false);
    webhooks::may_subscribe(pr, global)?;
    let notification_email = f
        .optional_str("notification_email")?
        .map(|e| normalize_email(&e))
        .unwrap_or_default();
    webhooks::check_notification_email(cx, pr, &notification_email)?;
    let new = NewSubscription {
        event,
        target_url,
        global,
        payload: f.optional_str("payload")?.unwrap_or_default(),
        notification_email,
    };
    let s = webhooks::subscribe(cx, pr, new);
    let mut v = sub_json(&s);
    v["secret"] = s.secret.clone().into(); // shown only now
    Ok(json(200, &v))
}

/// `GET /v1/subscriptions/errors`: the dead letters the caller may see.
pub fn errors(cx: &mut Cx, pr: &Principal) -> ApiResult<Response> {
    let items: Vec<Value> = webhooks::dead_letters(cx, pr)
        .into_iter()
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
    let s = webhooks::find(cx, pr, id)?;
    let items: Vec<Value> = webhooks::pending_deliveries(cx, &s, PENDING_LISTED)
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
    let (d, s) = webhooks::retry(cx, pr, error)?;
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
    let (id, targets) = events::send_test(cx, pr, &doc, event, only)?;
    Ok(json(
        200,
        &json!({"event_id": id, "subscriptions": targets.iter().map(|s| s.id.clone()).collect::<Vec<_>>()}),
    ))
}

/// `GET /v1/subscriptions`: the caller's subscriptions.
pub fn list_json(cx: &mut Cx, pr: &Principal) -> ApiResult<Response> {
    let mine = webhooks::visible(cx, pr);
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
    Ok(json(200, &sub_json(&webhooks::find(cx, pr, id)?)))
}

/// `DELETE /v1/subscriptions/{id}`: no more events, and its queued deliveries dropped.
pub fn delete(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let s = webhooks::find(cx, pr, id)?;
    webhooks::unsubscribe(cx, &s);
    Ok(no_content())
}

/// `POST /v1/subscriptions/{id}/secret`: a new signing secret, shown only now.
pub fn rotate_secret(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let mut s = webhooks::find(cx, pr, id)?;
    webhooks::rotate_secret(cx, &mut s);
    Ok(json(
        200,
        &json!({"subscription_id": s.id, "secret": s.secret}),
    ))
}
