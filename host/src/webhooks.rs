//! Webhook delivery: POSTs the delivery rows (`w/`) that engine calls queue with their
//! events, at least once, with the Standard Webhooks headers:
//!
//! - `webhook-id`: the event id, the same on every retry;
//! - `webhook-timestamp`: Unix seconds of the attempt;
//! - `webhook-signature`: `v1,` + base64 HMAC-SHA256 over `{id}.{timestamp}.{body}`,
//!   keyed with the subscription's secret (the base64 after `whsec_`).
//!
//! A 2xx answer is success. A 410 disables the subscription (engine job
//! `webhook.gone`). Anything else — 3xx (never followed), 4xx, 5xx, a timeout, a refused
//! address — is retried after the next delay of the schedule, with ±20 % jitter; after
//! the last one the delivery is a dead letter (engine job `webhook.dead`, listed in
//! `/v1/subscriptions/errors`, the owner mailed).
//!
//! A row is removed or rescheduled only after its attempt, in a transaction that commits
//! the results of many attempts at once: a crash in between repeats the attempt (at
//! least once), never loses it.
//!
//! Each target (scheme, host and port) has its own queue (`wq/<target><due><id>`) and
//! its own concurrency limit. A pass visits the targets, one seek each, and reads only
//! the due heads of those with room: a busy target's backlog is never read, so a slow
//! or dead subscriber with any number of queued deliveries does not delay the others.
//! When all attempts are in flight, the next pass starts where this one stopped, so
//! every target gets its turn. Passes run on a blocking thread.

use crate::calls::Dispatcher;
use crate::clock::now_ms;
use crate::host_tables::jobs::StoredJob;
use crate::host_tables::keys;
use crate::host_tables::webhooks::{StoredDelivery, queue_key};
use crate::ids::random_id;
use crate::outbound::Outbound;
use crate::queues::{self, Visit};
use crate::store::{CommitError, Lease};
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc, watch};

/// How delivery behaves; fixed for the process.
#[derive(Clone, Debug)]
pub struct WebhookConfig {
    /// Delays before each retry; after the last, a dead letter.
    pub schedule: Vec<Duration>,
    /// Attempts in flight to one target at most.
    pub per_target: usize,
    /// Attempts in flight in all.
    pub concurrency: usize,
    /// How long the event journal (`e/`) keeps events.
    pub event_retention: Duration,
}

/// The default retry schedule: 14 retries over about three days (3.2).
pub fn default_schedule() -> Vec<Duration> {
    let s = Duration::from_secs;
    let m = |n: u64| s(60 * n);
    let h = |n: u64| s(3600 * n);
    vec![
        s(5),
        s(30),
        m(2),
        m(10),
        m(30),
        h(1),
        h(2),
        h(4),
        h(8),
        h(12),
        h(12),
        h(12),
        h(12),
        h(12),
    ]
}

/// Parses a schedule such as `5s,30s,2m,1h` (units ms, s, m, h).
pub fn parse_schedule(text: &str) -> Result<Vec<Duration>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (num, unit) = p.split_at(p.find(|c: char| !c.is_ascii_digit()).unwrap_or(p.len()));
            let n: u64 = num
                .parse()
                .map_err(|_| format!("{p:?} is not a duration"))?;
            Ok(match unit {
                "ms" => Duration::from_millis(n),
                "s" | "" => Duration::from_secs(n),
                "m" => Duration::from_secs(n * 60),
                "h" => Duration::from_secs(n * 3600),
                other => return Err(format!("{other:?} is not a unit (ms, s, m, h)")),
            })
        })
        .collect()
}

/// The `webhook-signature` value for a message.
pub fn sign(secret: &str, id: &str, timestamp: u64, body: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD;
    let key = b64
        .decode(secret.strip_prefix("whsec_").unwrap_or(secret))
        .unwrap_or_else(|_| secret.as_bytes().to_vec());
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes any key length");
    mac.update(format!("{id}.{timestamp}.{body}").as_bytes());
    format!("v1,{}", b64.encode(mac.finalize().into_bytes()))
}

/// What an attempt came to.
enum Outcome {
    Delivered,
    Gone,
    Failed(String),
    /// Not attempted: the subscription was deleted or disabled.
    Cancelled,
}

struct Attempted {
    key: Vec<u8>,
    lease: Lease,
    row: StoredDelivery,
    outcome: Outcome,
}

/// Longest sleep between looks at the table.
const IDLE: Duration = Duration::from_secs(30);
/// Rows read from one target's queue per page, and pages per target per pass at most
/// (rows in flight or cancelled are read past).
const PAGE: usize = 256;
const PAGES_PER_TARGET: usize = 4;
/// Targets visited per pass at most; the next pass goes on from there.
const TARGETS_PER_PASS: usize = 10_000;
/// Results committed together at most.
const BATCH: usize = 512;

struct Shared {
    dispatcher: Dispatcher,
    outbound: Outbound,
    config: WebhookConfig,
    in_flight: Mutex<HashSet<Vec<u8>>>,
    /// Each target's concurrency limit, by queue name.
    targets: Mutex<HashMap<Vec<u8>, Arc<Semaphore>>>,
    global: Arc<Semaphore>,
    /// The queue the next pass starts at (empty: the first).
    cursor: Mutex<Vec<u8>>,
    /// Woken when results were committed (rows freed, permits back).
    progress: Notify,
}

/// Delivers until `shutdown` turns true. Attempts in flight then are cut off; their
/// rows stay and are attempted again at the next start.
pub async fn run(
    dispatcher: Dispatcher,
    outbound: Outbound,
    config: WebhookConfig,
    mut shutdown: watch::Receiver<bool>,
) {
    let shared = Arc::new(Shared {
        global: Arc::new(Semaphore::new(config.concurrency)),
        dispatcher,
        outbound,
        config,
        in_flight: Mutex::default(),
        targets: Mutex::default(),
        cursor: Mutex::default(),
        progress: Notify::new(),
    });
    let (tx, rx) = mpsc::unbounded_channel::<Attempted>();
    tokio::spawn(commit_loop(shared.clone(), rx));
    let s = shared.clone();
    match tokio::task::spawn_blocking(move || move_legacy_rows(s.dispatcher.store())).await {
        Ok(Ok(0)) => {}
        Ok(Ok(n)) => {
            tracing::info!("webhook delivery: moved {n} queued deliveries to per-target queues")
        }
        Ok(Err(e)) => tracing::error!("webhook delivery: moving queued deliveries: {e:#}"),
        Err(e) => tracing::error!("webhook delivery: moving queued deliveries: {e}"),
    }
    let mut next_prune = 0u64;
    loop {
        let (s, t) = (shared.clone(), tx.clone());
        let wait = match tokio::task::spawn_blocking(move || plan(&s, &t)).await {
            Ok(Ok(plan)) => {
                for launch in plan.launches {
                    start_attempt(&shared, &tx, launch);
                }
                plan.wait
            }
            Ok(Err(e)) => {
                tracing::error!("webhook delivery: {e:#}");
                Duration::from_secs(1)
            }
            Err(e) => {
                tracing::error!("webhook delivery: {e}");
                Duration::from_secs(1)
            }
        };
        if now_ms() >= next_prune {
            next_prune = now_ms() + 600_000;
            let s = shared.clone();
            tokio::task::spawn_blocking(move || prune_events(&s));
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shared.dispatcher.deliveries_queued() => {}
            _ = shared.progress.notified() => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// An attempt to start: the row and the permits it holds while in flight.
struct Launch {
    key: Vec<u8>,
    lease: Lease,
    row: StoredDelivery,
    permits: (OwnedSemaphorePermit, OwnedSemaphorePermit),
}

/// What a pass decided: attempts to start, and how long until the next look.
struct Plan {
    launches: Vec<Launch>,
    wait: Duration,
}

/// One pass over the target queues (on a blocking thread): takes the due rows, not in
/// flight, of every target with room, while global permits last; cancelled rows go
/// straight to the commit loop.
fn plan(shared: &Shared, tx: &mpsc::UnboundedSender<Attempted>) -> anyhow::Result<Plan> {
    let mut plan = Plan {
        launches: Vec::new(),
        wait: IDLE,
    };
    match plan_into(shared, tx, &mut plan) {
        Ok(()) => Ok(plan),
        // The attempts claimed before the error still start: they are in flight.
        Err(e) => {
            tracing::error!("webhook delivery: {e:#}");
            plan.wait = Duration::from_secs(1);
            Ok(plan)
        }
    }
}

/// [`plan`]'s pass, filling `plan`.
fn plan_into(
    shared: &Shared,
    tx: &mpsc::UnboundedSender<Attempted>,
    plan: &mut Plan,
) -> anyhow::Result<()> {
    let store = shared.dispatcher.store();
    let now = now_ms();
    let mut cancelled: HashMap<String, bool> = HashMap::new();
    let mut cursor = std::mem::take(&mut *shared.cursor.lock().unwrap());
    let more = queues::visit_ring(
        store,
        keys::DELIVERIES,
        &mut cursor,
        TARGETS_PER_PASS,
        |target| {
            let semaphore = {
                let mut targets = shared.targets.lock().unwrap();
                targets
                    .entry(target.to_vec())
                    .or_insert_with(|| Arc::new(Semaphore::new(shared.config.per_target)))
                    .clone()
            };
            if semaphore.available_permits() == 0 {
                return Ok(Visit::Next); // busy: its queue is not read
            }
            let queue = queues::queue(keys::DELIVERIES, target);
            let queue_end = queues::range_end(&queue);
            let mut from = queue.clone();
            for _ in 0..PAGES_PER_TARGET {
                let rows = store.scan_committed(&from, &queue_end, PAGE)?;
                let full = rows.len() == PAGE;
                for (key, value) in rows {
                    from = key.clone();
                    from.push(0);
                    if shared.in_flight.lock().unwrap().contains(&key) {
                        continue;
                    }
                    let at = queues::due_of(&queue, &key)?;
                    if at > now {
                        plan.wait = plan.wait.min(Duration::from_millis(at - now));
                        return Ok(Visit::Next);
                    }
                    let row: StoredDelivery = serde_json::from_slice(&value)?;
                    let dropped = match cancelled.get(&row.subscription_id) {
                        Some(c) => *c,
                        None => {
                            let c = store
                                .get_committed(&keys::cancelled(&row.subscription_id))?
                                .is_some();
                            cancelled.insert(row.subscription_id.clone(), c);
                            c
                        }
                    };
                    if dropped {
                        let Some(lease) = store.lease(&key)? else {
                            continue; // another host has it
                        };
                        shared.in_flight.lock().unwrap().insert(key.clone());
                        let _ = tx.send(Attempted {
                            key,
                            lease,
                            row,
                            outcome: Outcome::Cancelled,
                        });
                        continue;
                    }
                    let Ok(target_permit) = semaphore.clone().try_acquire_owned() else {
                        return Ok(Visit::Next);
                    };
                    let Ok(permit) = shared.global.clone().try_acquire_owned() else {
                        // Out of attempts: the next pass (woken when one ends) starts here.
                        return Ok(Visit::Stop);
                    };
                    let Some(lease) = store.lease(&key)? else {
                        continue; // another host attempts it
                    };
                    shared.in_flight.lock().unwrap().insert(key.clone());
                    plan.launches.push(Launch {
                        key,
                        lease,
                        row,
                        permits: (permit, target_permit),
                    });
                }
                if !full {
                    break;
                }
            }
            Ok(Visit::Next)
        },
    )?;
    *shared.cursor.lock().unwrap() = cursor;
    if more {
        plan.wait = Duration::ZERO;
    }
    plan.wait = store.poll_cap(plan.wait);
    Ok(())
}

/// Runs one attempt as a task; its result goes to the commit loop.
fn start_attempt(shared: &Arc<Shared>, tx: &mpsc::UnboundedSender<Attempted>, launch: Launch) {
    let (s, tx) = (shared.clone(), tx.clone());
    tokio::spawn(async move {
        let Launch {
            key,
            lease,
            mut row,
            permits,
        } = launch;
        let started = now_ms();
        row.attempts += 1;
        if row.first_attempt_ms == 0 {
            row.first_attempt_ms = started;
        }
        let store = s.dispatcher.store().clone();
        let outcome =
            crate::queues::renewing(&store, &key, &lease, attempt(&s.outbound, &row)).await;
        drop(permits);
        let _ = tx.send(Attempted {
            key,
            lease,
            row,
            outcome,
        });
    });
}

/// Moves the rows of the old single queue (`w/`) into the per-target queues, keeping
/// their due times; returns how many.
fn move_legacy_rows(store: &Arc<crate::store::Store>) -> anyhow::Result<usize> {
    let end = queues::range_end(keys::WEBHOOKS);
    let mut moved = 0;
    loop {
        let rows = store.scan_committed(keys::WEBHOOKS, &end, BATCH)?;
        if rows.is_empty() {
            return Ok(moved);
        }
        let mut txn = store.begin();
        let mut batch = 0;
        for (key, value) in &rows {
            if txn.get(key)?.is_none() {
                continue;
            }
            let row: StoredDelivery = serde_json::from_slice(value)?;
            let at = keys::WEBHOOKS.len();
            let due = u64::from_be_bytes(key[at..at + 8].try_into()?);
            txn.delete(key);
            txn.put(&queue_key(&row.target_url, due, &row.id), value);
            batch += 1;
        }
        match txn.commit() {
            Ok(()) => moved += batch,
            Err(CommitError::Conflict(_)) => {}
            Err(e) => return Err(e.into_error()),
        }
    }
}

async fn attempt(outbound: &Outbound, row: &StoredDelivery) -> Outcome {
    let outcome = attempt_once(outbound, row).await;
    let name = match &outcome {
        Outcome::Delivered => "delivered",
        Outcome::Gone => "gone",
        Outcome::Failed(_) => "failed",
        Outcome::Cancelled => "cancelled",
    };
    crate::metrics::get()
        .webhook_attempts
        .get_or_create(&crate::metrics::OutcomeLabel {
            outcome: name.into(),
        })
        .inc();
    outcome
}

async fn attempt_once(outbound: &Outbound, row: &StoredDelivery) -> Outcome {
    if let Err(why) = outbound.check_url(&row.target_url) {
        return Outcome::Failed(why);
    }
    let timestamp = now_ms() / 1000;
    let signature = sign(&row.secret, &row.event_id, timestamp, &row.body);
    let result = outbound
        .client()
        .post(&row.target_url)
        .header("content-type", "application/json")
        .header("webhook-id", &row.event_id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(row.body.clone())
        .send()
        .await;
    match result {
        Ok(resp) if resp.status().is_success() => Outcome::Delivered,
        Ok(resp) if resp.status() == reqwest::StatusCode::GONE => Outcome::Gone,
        Ok(resp) if resp.status().is_redirection() => Outcome::Failed(format!(
            "answered {} (redirects are not followed)",
            resp.status()
        )),
        Ok(resp) => Outcome::Failed(format!("answered {}", resp.status())),
        Err(e) => Outcome::Failed(crate::outbound::describe(&e)),
    }
}

/// Commits attempt results in batches: a delivered row goes, a failed one is
/// rescheduled or becomes a dead letter, a 410 disables the subscription.
async fn commit_loop(shared: Arc<Shared>, mut rx: mpsc::UnboundedReceiver<Attempted>) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(more) => batch.push(more),
                Err(_) => break,
            }
        }
        let s = shared.clone();
        let keys: Vec<Vec<u8>> = batch.iter().map(|a| a.key.clone()).collect();
        let result = tokio::task::spawn_blocking(move || commit(&s, &batch)).await;
        match result {
            Ok(Ok(jobs)) => {
                if jobs {
                    shared.dispatcher.notify_jobs();
                }
            }
            Ok(Err(e)) => tracing::error!("webhook delivery: committing results: {e:#}"),
            Err(e) => tracing::error!("webhook delivery: committing results: {e}"),
        }
        let mut flight = shared.in_flight.lock().unwrap();
        for k in keys {
            flight.remove(&k);
        }
        drop(flight);
        shared.progress.notify_one();
    }
}

/// Writes a batch of results in one transaction; whether engine jobs were scheduled.
fn commit(shared: &Shared, batch: &[Attempted]) -> anyhow::Result<bool> {
    let store = shared.dispatcher.store();
    let schedule = &shared.config.schedule;
    'attempt: for attempt in 0..32 {
        if attempt > 0 {
            store.pause_after_conflict(attempt);
        }
        let mut txn = store.begin();
        let mut jobs = false;
        let now = now_ms();
        for a in batch {
            match txn.holds(&a.key, &a.lease) {
                Ok(true) => {}
                // Gone: cancelled meanwhile (subscription deleted or disabled), or
                // another host took the row over after this lease expired.
                Ok(false) => continue,
                Err(_) if txn.conflicted() => continue 'attempt,
                Err(e) => return Err(e),
            }
            txn.delete(&a.key);
            let row = &a.row;
            let job = |kind: &str, payload: Vec<u8>| StoredJob {
                id: random_id(),
                kind: kind.into(),
                payload,
                attempt: 1,
                run_at_ms: now,
                work: None,
                failure: None,
                scope: String::new(),
            };
            match &a.outcome {
                Outcome::Delivered | Outcome::Cancelled => {}
                Outcome::Gone => {
                    tracing::warn!(target = row.target_url, "webhook target answered 410 Gone");
                    let j = job("webhook.gone", row.subscription_id.clone().into_bytes());
                    txn.put(
                        &keys::timed(keys::JOBS, now, &j.id),
                        &serde_json::to_vec(&j)?,
                    );
                    jobs = true;
                }
                Outcome::Failed(why) => {
                    let mut row = row.clone();
                    row.last_error = why.clone();
                    match schedule.get(row.attempts as usize - 1) {
                        Some(delay) => {
                            let due = now + jittered(*delay);
                            tracing::debug!(
                                target = row.target_url,
                                attempt = row.attempts,
                                "webhook failed, retrying: {why}"
                            );
                            txn.put(
                                &queue_key(&row.target_url, due, &row.id),
                                &serde_json::to_vec(&row)?,
                            );
                        }
                        None => {
                            tracing::warn!(
                                target = row.target_url,
                                event = row.event_id,
                                "webhook given up after {} attempts: {why}",
                                row.attempts
                            );
                            let dead = serde_json::json!({
                                "subscription_id": row.subscription_id, "entity_id": row.entity_id,
                                "event_id": row.event_id, "event": row.event, "target_url": row.target_url,
                                "attempts": row.attempts, "last_error": why,
                                "first_attempt_ms": row.first_attempt_ms,
                                // Kept by the engine for a retry.
                                "body": row.body,
                            });
                            let j = job("webhook.dead", serde_json::to_vec(&dead)?);
                            txn.put(
                                &keys::timed(keys::JOBS, now, &j.id),
                                &serde_json::to_vec(&j)?,
                            );
                            jobs = true;
                        }
                    }
                }
            }
        }
        match txn.commit() {
            Ok(()) => return Ok(jobs),
            Err(CommitError::Conflict(_)) => continue,
            Err(e) => return Err(e.into_error()),
        }
    }
    anyhow::bail!("results kept conflicting")
}

/// `delay` ± 20 %.
fn jittered(delay: Duration) -> u64 {
    let ms = delay.as_millis() as u64;
    let mut b = [0u8; 8];
    let _ = getrandom::fill(&mut b);
    let spread = ms / 5;
    if spread == 0 {
        return ms;
    }
    ms - spread + u64::from_le_bytes(b) % (2 * spread + 1)
}

/// Deletes journal events older than the retention.
fn prune_events(shared: &Shared) {
    let store = shared.dispatcher.store();
    let cutoff = now_ms().saturating_sub(shared.config.event_retention.as_millis() as u64);
    let end = keys::timed(keys::EVENTS, cutoff, "");
    loop {
        let Ok(old) = store.scan_committed(keys::EVENTS, &end, 1000) else {
            return;
        };
        if old.is_empty() {
            return;
        }
        let mut txn = store.begin();
        for (k, _) in &old {
            txn.delete(k);
        }
        if let Err(e) = txn.commit() {
            tracing::warn!("pruning old events: {e:?}");
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host_tables::webhooks::target_hash;

    #[test]
    fn signature_matches_the_standard_webhooks_example() {
        // The example of the Standard Webhooks specification.
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let sig = sign(
            secret,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            r#"{"test": 2432232314}"#,
        );
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn schedules_parse_and_jitter_stays_within_a_fifth() {
        assert_eq!(
            parse_schedule("500ms, 2s,3m,1h").unwrap(),
            [
                Duration::from_millis(500),
                Duration::from_secs(2),
                Duration::from_secs(180),
                Duration::from_secs(3600)
            ]
        );
        assert!(parse_schedule("5x").is_err());
        let total: Duration = default_schedule().iter().sum();
        let days = total.as_secs_f64() / 86_400.0;
        assert!((2.5..=3.5).contains(&days), "about three days: {days}");
        for _ in 0..100 {
            let j = jittered(Duration::from_secs(10));
            assert!((8000..=12000).contains(&j), "{j}");
        }
    }

    #[test]
    fn rows_of_the_old_single_queue_move_to_their_target_queues() {
        let dir = std::env::temp_dir().join(format!("esign-wq-test-{}", random_id()));
        let store = crate::store::Store::new(crate::store::sled::SledBackend::open(&dir).unwrap());
        let row = |id: &str, url: &str| StoredDelivery {
            id: id.into(),
            event_id: "ev".into(),
            event: "document.created".into(),
            subscription_id: "sub".into(),
            entity_id: "ent".into(),
            target_url: url.into(),
            secret: "whsec_AA==".into(),
            body: "{}".into(),
            attempts: 0,
            created_ms: 1,
            first_attempt_ms: 0,
            last_error: String::new(),
        };
        let mut txn = store.begin();
        for (id, url, due) in [
            ("a", "https://one.example/x", 5u64),
            ("b", "https://two.example:8443/y", 7),
            ("c", "https://one.example:443/z", 9),
        ] {
            let value = serde_json::to_vec(&row(id, url)).unwrap();
            txn.put(&keys::timed(keys::WEBHOOKS, due, id), &value);
        }
        txn.commit().unwrap();
        assert_eq!(move_legacy_rows(&store).unwrap(), 3);
        assert_eq!(move_legacy_rows(&store).unwrap(), 0);
        let one = queues::queue(keys::DELIVERIES, &target_hash("https://one.example/"));
        let keys_of = |prefix: &[u8]| -> Vec<Vec<u8>> {
            store
                .scan_committed(prefix, &queues::range_end(prefix), 10)
                .unwrap()
                .into_iter()
                .map(|(k, _)| k)
                .collect()
        };
        // Port 443 is the default: one target, in due order.
        assert_eq!(
            keys_of(&one),
            [
                queue_key("https://one.example/", 5, "a"),
                queue_key("https://one.example/", 9, "c")
            ]
        );
        assert_eq!(keys_of(keys::DELIVERIES).len(), 3);
        assert!(keys_of(keys::WEBHOOKS).is_empty());
        drop(store);
        let _ = std::fs::remove_dir_all(dir);
    }
}
