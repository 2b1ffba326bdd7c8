//! The one keyspace's layout: engine data under `d/`, and the host's own tables beside
//! it, each under its prefix, so that the engine cannot touch them.

/// Everything the engine stores, under its own keys.
pub const DATA: &[u8] = b"d/";
/// Webhook events: `e/<created ms, 8 bytes BE><id>`.
pub const EVENTS: &[u8] = b"e/";
/// Due jobs without host work: `j/<run-at ms, 8 bytes BE><id>`.
pub const JOBS: &[u8] = b"j/";
/// Due jobs with host work, one queue per scope (the tenant):
/// `jw/<scope: 16 hex digits of its SHA-256><run-at ms, 8 bytes BE><id>` (see
/// [`crate::queues`]).
pub const WORK_JOBS: &[u8] = b"jw/";

/// Jobs that failed for good: `x/<id>`.
pub const DEAD_JOBS: &[u8] = b"x/";
/// Outgoing mail: `m/<due ms, 8 bytes BE><id>`.
pub const MAIL: &[u8] = b"m/";
/// Mail given up after repeated failures: `y/<id>`.
pub const DEAD_MAIL: &[u8] = b"y/";
/// Outgoing text messages: `sms/<due ms, 8 bytes BE><id>` (rows like mail's).
pub const SMS: &[u8] = b"sms/";
/// Text messages given up: `smsx/<id>`.
pub const DEAD_SMS: &[u8] = b"smsx/";
/// File contents: `b/<blob id>`.
pub const BLOBS: &[u8] = b"b/";
/// Webhook deliveries of stores written before per-target queues: `w/<due ms, 8
/// bytes BE><delivery id>`; moved to [`DELIVERIES`] when the delivery worker starts.
pub const WEBHOOKS: &[u8] = b"w/";
/// Webhook deliveries, one queue per target (scheme, host and port):
/// `wq/<target: 16 hex digits of its SHA-256><due ms, 8 bytes BE><delivery id>`
/// (see [`crate::queues`]).
pub const DELIVERIES: &[u8] = b"wq/";
/// Subscriptions whose queued deliveries are dropped: `wc/<subscription id>`.
pub const CANCELLED: &[u8] = b"wc/";

/// The cancellation marker of a subscription.
pub fn cancelled(subscription_id: &str) -> Vec<u8> {
    let mut k = CANCELLED.to_vec();
    k.extend_from_slice(subscription_id.as_bytes());
    k
}

/// The key of a blob.
pub fn blob(id: &str) -> Vec<u8> {
    let mut k = BLOBS.to_vec();
    k.extend_from_slice(id.as_bytes());
    k
}

/// `prefix + ms (big-endian) + id`: ordered by time.
pub fn timed(prefix: &[u8], ms: u64, id: &str) -> Vec<u8> {
    let mut k = prefix.to_vec();
    k.extend_from_slice(&ms.to_be_bytes());
    k.extend_from_slice(id.as_bytes());
    k
}

/// How long until the earliest row of the time-keyed table `prefix` is due (zero if
/// overdue), capped at `idle`; `idle` when the table is empty.
pub fn until_next_due(
    store: &crate::store::Store,
    prefix: &[u8],
    idle: std::time::Duration,
) -> anyhow::Result<std::time::Duration> {
    let mut end = prefix.to_vec();
    end.push(0xff);
    let Some((key, _)) = store.scan_committed(prefix, &end, 1)?.into_iter().next() else {
        return Ok(idle);
    };
    let at = u64::from_be_bytes(key[prefix.len()..prefix.len() + 8].try_into()?);
    let now = crate::clock::now_ms();
    Ok(std::time::Duration::from_millis(at.saturating_sub(now)).min(idle))
}
