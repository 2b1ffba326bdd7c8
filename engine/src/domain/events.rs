//! Events (spec §6): the payload members every event shares, and [`emit_and_log`], which
//! records an event with its webhook deliveries and writes it to the audit trail.

use crate::base::api::{Delivery, Event};
use crate::base::cx::Cx;
use crate::base::http::{ApiError, ApiResult};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util;
use crate::domain::auth::Principal;
use crate::domain::document::{self, Document};
use crate::domain::trail::{Actor, log};
use crate::domain::{accounts, webhooks};
use serde_json::{Value, json};

/// The document members of an event payload.
pub fn event_document(doc: &Document) -> Value {
    json!({
        "id": doc.id,
        "name": doc.name,
        "status": doc.status.as_str(),
        "value": util::money(doc.value),
        "external_id": doc.external_id,
        "external_client_id": doc.external_client_id,
        "send_date": doc.send_ms.map(util::iso8601),
        "sign_date": doc.sign_ms.map(util::iso8601),
        "expiration_date": util::iso8601(doc.expiration_ms),
        "user_id": doc.user_id,
        "sender_name": doc.sender.name,
        "sender_email": doc.sender.email,
    })
}

/// The common members of an event's payload (spec §6): `event`, `event_type`,
/// `event_action`, the document, the entity and the custom fields.
pub fn event_payload(cx: &mut Cx, doc: &Document, kind: &str) -> Value {
    let (event_type, event_action) = kind.split_once('.').unwrap_or((kind, ""));
    let entity_name = cx
        .load::<accounts::Entity>(&accounts::entity_key(&doc.entity_id))
        .map(|e| e.name)
        .unwrap_or_default();
    json!({
        "event": kind,
        "event_type": event_type,
        "event_action": event_action,
        "document": event_document(doc),
        "entity": {"id": doc.entity_id, "name": entity_name},
        "custom_fields": doc.custom_fields.iter()
            .map(|f| json!({"name": f.name, "value": f.value}))
            .collect::<Vec<_>>(),
    })
}

/// A recipient as event payloads show it (spec §6).
pub fn event_recipient(r: &document::Recipient) -> Value {
    json!({
        "id": r.id,
        "fullname": r.fullname(),
        "email": r.email,
        "mobile": r.mobile,
        "role": r.role.as_str(),
        "status": r.status.as_str(),
        "order_num": r.order_num.to_string(),
    })
}

/// Records event `kind` (`document.sent`, ...) with the common payload members plus
/// `extra` (its members replace common ones of the same name), queues its webhook
/// deliveries, and logs the change with the event's id. The document must be saved
/// after.
pub fn emit_and_log(
    cx: &mut Cx,
    doc: &mut Document,
    actor: &Actor,
    kind: &str,
    action: &str,
    detail: impl Into<String>,
    extra: Value,
) {
    let mut payload = event_payload(cx, doc, kind);
    if let (Value::Object(p), Value::Object(x)) = (&mut payload, extra) {
        for (k, v) in x {
            p.insert(k, v);
        }
    }
    let id = webhooks::emit(cx, kind, &doc.entity_id, &doc.user_id, payload);
    log(cx, doc, actor, action, detail, Some((kind.into(), id)));
}

/// `recipients` of the signing events (spec §6): fullname, role, status of each.
pub fn recipients_summary(doc: &Document) -> Value {
    doc.recipients
        .iter()
        .map(|o| json!({"fullname": o.fullname(), "role": o.role.as_str(), "status": o.status.as_str()}))
        .collect()
}

/// A sample delivery of `event` (checked, [`webhooks::check_event`]) for `doc` to the
/// caller's active subscriptions to it (only `only`, when given); 400 when there are
/// none. Returns the event id and the subscriptions reached.
pub fn send_test(
    cx: &mut Cx,
    pr: &Principal,
    doc: &Document,
    event: String,
    only: Option<String>,
) -> ApiResult<(String, Vec<webhooks::Subscription>)> {
    let targets: Vec<webhooks::Subscription> = webhooks::visible(cx, pr)
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
    let mut payload = event_payload(cx, doc, &event);
    if let Some(r) = doc.recipients.first() {
        payload["recipient"] = event_recipient(r);
    }
    payload["test"] = true.into();
    let id = format!("evt_{}", util::new_id(cx));
    payload["event_id"] = id.clone().into();
    let deliveries: Vec<Delivery> = targets
        .iter()
        .map(|s| webhooks::delivery_for(s, &payload))
        .collect();
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
    Ok((id, targets))
}
