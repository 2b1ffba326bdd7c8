//! The webhook tables: events (`e/`), their deliveries in one queue per target (`wq/`),
//! and the markers of subscriptions whose deliveries are dropped (`wc/`).

use crate::bindings::effects;
use crate::clock::now_ms;
use crate::host_tables::keys::{self, EVENTS, timed};
use crate::ids::random_id;
use crate::queues;
use crate::store::Txn;

/// A queued delivery, as stored under `w/<due ms><id>`.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone)]
pub struct StoredDelivery {
    pub id: String,
    /// The `webhook-id`.
    pub event_id: String,
    pub event: String,
    pub subscription_id: String,
    pub entity_id: String,
    pub target_url: String,
    pub secret: String,
    pub body: String,
    /// Attempts made so far.
    pub attempts: u32,
    pub created_ms: u64,
    /// When the first attempt was made (0 before it).
    pub first_attempt_ms: u64,
    pub last_error: String,
}

/// The queue key of a delivery to `url` due at `due_ms`.
pub fn queue_key(url: &str, due_ms: u64, id: &str) -> Vec<u8> {
    queues::key(keys::DELIVERIES, &target_hash(url), due_ms, id)
}

/// The queue name of the target of `url`.
pub fn target_hash(url: &str) -> Vec<u8> {
    queues::name_of(&target_of(url))
}

/// The key of a target's concurrency limit: scheme, host and port.
pub fn target_of(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => format!(
            "{}://{}:{}",
            u.scheme(),
            u.host_str().unwrap_or(""),
            u.port_or_known_default().unwrap_or(0)
        ),
        Err(_) => url.to_string(),
    }
}

/// Records an event and queues its deliveries (`effects.emit-event`) in the call's
/// transaction; whether any delivery was queued.
pub fn record_event(
    txn: &mut Txn,
    event: effects::Event,
    deliveries: Vec<effects::Delivery>,
) -> anyhow::Result<bool> {
    let created_ms = now_ms();
    let record = serde_json::json!({
        "id": event.id, "kind": event.kind, "entity_id": event.entity_id,
        "user_id": event.user_id, "payload": event.payload, "created_ms": created_ms,
    });
    txn.put(
        &timed(EVENTS, created_ms, &event.id),
        &serde_json::to_vec(&record)?,
    );
    let queued = !deliveries.is_empty();
    for d in deliveries {
        let row = StoredDelivery {
            id: random_id(),
            event_id: event.id.clone(),
            event: event.kind.clone(),
            subscription_id: d.subscription_id,
            entity_id: d.entity_id,
            target_url: d.target_url,
            secret: d.secret,
            body: d.body,
            attempts: 0,
            created_ms,
            first_attempt_ms: 0,
            last_error: String::new(),
        };
        txn.put(
            &queue_key(&row.target_url, created_ms, &row.id),
            &serde_json::to_vec(&row)?,
        );
    }
    Ok(queued)
}

/// Most entries of a target's queue [`pending`] reads looking for one subscription's.
const PENDING_SCAN: usize = 10_000;

/// The deliveries of `subscription_id` still queued for the target of `url`
/// (`effects.pending-deliveries`), the next due first, at most `limit`, among the first
/// [`PENDING_SCAN`] of the target's queue. None once the subscription's deliveries
/// were dropped.
pub fn pending(
    txn: &mut Txn,
    subscription_id: &str,
    url: &str,
    limit: u32,
) -> anyhow::Result<Vec<effects::PendingDelivery>> {
    if txn.get(&keys::cancelled(subscription_id))?.is_some() {
        return Ok(Vec::new());
    }
    let queue = queues::queue(keys::DELIVERIES, &target_hash(url));
    let mut out = Vec::new();
    for (k, v) in txn.scan(&queue, &queues::range_end(&queue), PENDING_SCAN, false)? {
        let row: StoredDelivery = serde_json::from_slice(&v)?;
        if row.subscription_id != subscription_id {
            continue;
        }
        out.push(effects::PendingDelivery {
            event_id: row.event_id,
            event: row.event,
            attempts: row.attempts,
            last_error: row.last_error,
            queued_at_ms: row.created_ms,
            next_attempt_at_ms: queues::due_of(&queue, &k)?,
        });
        if out.len() >= limit as usize {
            break;
        }
    }
    Ok(out)
}

/// Drops a subscription's queued deliveries (`effects.cancel-deliveries`): a marker, not
/// a scan of the queue; the delivery worker drops the subscription's rows when it
/// reaches them.
pub fn cancel(txn: &mut Txn, subscription_id: &str) {
    txn.put(&keys::cancelled(subscription_id), b"");
}
