//! Prometheus metrics, served on their own listener (`--metrics-listen`, off by
//! default): what a dashboard or an alert needs to see the service from outside.
//!
//! Counters and histograms live in one process-wide [`Metrics`] that the modules which
//! see the events update ([`get`]); the queue gauges are read from the store when the
//! page is asked for. The text is written by `prometheus-client` (OpenMetrics text,
//! which Prometheus reads). Every name is listed in docs/operating.md ("Operating esign").

use crate::clock::now_ms;
use crate::host_tables::keys;
use crate::queues;
use crate::store::Store;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};
use std::sync::LazyLock;
use std::time::Duration;

/// A request's route template (`openapi.json`'s path; `unmatched` for unknown paths),
/// method and status.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub route: String,
    pub method: String,
    pub status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabel {
    pub route: String,
}

/// Where a conflict showed, `read` (a read found the transaction doomed) or `commit`,
/// and why (`crate::store::Cause`: `row`, `phantom`, `dependency`, `deadlock`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ConflictLabels {
    pub at: String,
    pub cause: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    pub outcome: String,
}

/// A job's host work: `import`, `fetch`, `render`, or `seal` (a render that seals).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    pub kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabels {
    /// `jobs`, `work`, `mail`, `sms` or `webhooks`.
    pub queue: String,
    /// The scope of a per-scope queue: a tenant for `work`, a target (scheme, host and
    /// port) for `webhooks`; empty for the others.
    pub scope: String,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// Every counter and histogram of the process.
pub struct Metrics {
    pub requests: Family<RequestLabels, Counter>,
    pub request_seconds: Histograms<RouteLabel>,
    pub engine_call_seconds: Histogram,
    pub instantiate_seconds: Histogram,
    pub teardown_seconds: Histogram,
    pub commits: Counter,
    pub read_only_calls: Counter,
    pub read_only_reruns: Counter,
    pub conflicts: Family<ConflictLabels, Counter>,
    pub round_trips: Histogram,
    pub store_unavailable: Counter,
    pub webhook_attempts: Family<OutcomeLabel, Counter>,
    pub work_seconds: Histograms<KindLabel>,
    pub queue_wakeups: Counter,
    pub queue_wakeup_seconds: Histogram,
}

fn latency() -> Histogram {
    // 50 µs to about 100 s.
    Histogram::new(exponential_buckets(0.000_05, 2.0, 22))
}

fn slow() -> Histogram {
    // 10 ms to about 20 min.
    Histogram::new(exponential_buckets(0.01, 2.0, 18))
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| Metrics {
    requests: Family::default(),
    request_seconds: Family::new_with_constructor(latency),
    engine_call_seconds: latency(),
    instantiate_seconds: latency(),
    teardown_seconds: latency(),
    commits: Counter::default(),
    read_only_calls: Counter::default(),
    read_only_reruns: Counter::default(),
    conflicts: Family::default(),
    // 1 to 1024 round trips.
    round_trips: Histogram::new(exponential_buckets(1.0, 2.0, 11)),
    store_unavailable: Counter::default(),
    webhook_attempts: Family::default(),
    work_seconds: Family::new_with_constructor(slow),
    queue_wakeups: Counter::default(),
    queue_wakeup_seconds: latency(),
});

/// The process's metrics.
pub fn get() -> &'static Metrics {
    &METRICS
}

/// Counts one answered request.
pub fn request(route: &str, method: &str, status: u16, took: Duration) {
    let m = get();
    m.requests
        .get_or_create(&RequestLabels {
            route: route.to_string(),
            method: method.to_string(),
            status: status.to_string(),
        })
        .inc();
    m.request_seconds
        .get_or_create(&RouteLabel {
            route: route.to_string(),
        })
        .observe(took.as_secs_f64());
}

/// Rows of a queue counted at most (a larger backlog shows as this).
const MAX_COUNTED: usize = 100_000;
/// Queues of one kind (scopes, targets) looked at most.
const MAX_QUEUES: usize = 1_000;

/// The metrics page: every counter, and the queues as the store holds them now.
pub fn render(store: &Store) -> String {
    let m = get();
    let mut r = Registry::with_prefix("esign");
    r.register(
        "http_requests",
        "Requests answered, by route template, method and status",
        m.requests.clone(),
    );
    r.register_with_unit(
        "http_request_duration",
        "Time from a request's arrival to its answer",
        Unit::Seconds,
        m.request_seconds.clone(),
    );
    r.register_with_unit(
        "engine_call_duration",
        "Engine calls (instantiation included), requests and jobs",
        Unit::Seconds,
        m.engine_call_seconds.clone(),
    );
    r.register_with_unit(
        "engine_instantiate_duration",
        "Instantiating the engine for one call",
        Unit::Seconds,
        m.instantiate_seconds.clone(),
    );
    r.register_with_unit(
        "engine_teardown_duration",
        "Ending a call's instance (resetting its memory)",
        Unit::Seconds,
        m.teardown_seconds.clone(),
    );
    r.register("store_commits", "Transactions committed", m.commits.clone());
    r.register(
        "store_read_only_calls",
        "Calls (GET, HEAD, POST /mcp) run as read-only transactions, where the database can skip the locks a writer takes",
        m.read_only_calls.clone(),
    );
    r.register(
        "store_read_only_reruns",
        "Calls begun read-only (GET, HEAD, POST /mcp) that wrote, and so ran again read-write",
        m.read_only_reruns.clone(),
    );
    r.register(
        "store_conflicts",
        "Calls and jobs re-run because a concurrent transaction conflicted, by where it showed (read, commit)",
        m.conflicts.clone(),
    );
    r.register(
        "store_round_trips",
        "Round trips to the database of each committed call or job (shared stores only)",
        m.round_trips.clone(),
    );
    r.register(
        "store_unavailable",
        "Calls answered 503 because the store could not be reached",
        m.store_unavailable.clone(),
    );
    r.register(
        "queue_wakeups",
        "Wake-ups from the database: another host sharing the store queued work",
        m.queue_wakeups.clone(),
    );
    r.register_with_unit(
        "queue_wakeup_delay",
        "From another host's commit of new queue rows to this host's wake-up (by the hosts' clocks)",
        Unit::Seconds,
        m.queue_wakeup_seconds.clone(),
    );
    r.register(
        "webhook_attempts",
        "Webhook delivery attempts by outcome (delivered, failed, gone)",
        m.webhook_attempts.clone(),
    );
    r.register_with_unit(
        "work_duration",
        "Host work of jobs by kind (import, fetch, render, seal: a render that seals)",
        Unit::Seconds,
        m.work_seconds.clone(),
    );
    if let Some((in_use, max)) = store.pool_use() {
        let used = Gauge::<i64>::default();
        used.set(in_use as i64);
        r.register("store_pool_in_use", "Database connections in use", used);
        let size = Gauge::<i64>::default();
        size.set(max as i64);
        r.register("store_pool_size", "Database connections at most", size);
    }
    let (depth, age) = queue_gauges(store);
    r.register(
        "queue_due",
        "Rows due now and not yet done, per queue (and scope)",
        depth,
    );
    r.register_with_unit(
        "queue_oldest_age",
        "How long the oldest due row of a queue has waited",
        Unit::Seconds,
        age,
    );
    let mut out = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &r) {
        tracing::error!("writing the metrics page: {e}");
    }
    out
}

/// Due rows and the age of the oldest, for every queue.
fn queue_gauges(store: &Store) -> (Family<QueueLabels, Gauge>, Family<QueueLabels, Gauge>) {
    let depth = Family::<QueueLabels, Gauge>::default();
    let age = Family::<QueueLabels, Gauge>::default();
    let now = now_ms();
    let put = |queue: &str, scope: String, (n, oldest): (usize, Option<u64>)| {
        let labels = QueueLabels {
            queue: queue.into(),
            scope,
        };
        depth.get_or_create(&labels).set(n as i64);
        let waited = oldest.map_or(0, |due| now.saturating_sub(due) / 1000);
        age.get_or_create(&labels).set(waited as i64);
    };
    for (name, prefix) in [
        ("jobs", keys::JOBS),
        ("mail", keys::MAIL),
        ("sms", keys::SMS),
    ] {
        match due_rows(store, prefix, now) {
            Ok(found) => put(name, String::new(), found),
            Err(e) => tracing::warn!("metrics: reading the {name} queue: {e:#}"),
        }
    }
    let scoped = [
        ("work", keys::WORK_JOBS, scope_of_job as fn(&[u8]) -> String),
        ("webhooks", keys::DELIVERIES, target_of_delivery),
    ];
    for (name, prefix, scope_of) in scoped {
        let found = scoped_queues(store, prefix, now, |value, counted| {
            put(name, scope_of(value), counted)
        });
        if let Err(e) = found {
            tracing::warn!("metrics: reading the {name} queues: {e:#}");
        }
    }
    (depth, age)
}

/// How many rows of the time-keyed queue starting at `prefix` are due at `now`, and
/// when the first was due.
fn due_rows(store: &Store, prefix: &[u8], now: u64) -> anyhow::Result<(usize, Option<u64>)> {
    let mut end = prefix.to_vec();
    end.extend_from_slice(&now.saturating_add(1).to_be_bytes());
    let rows = store.scan_committed(prefix, &end, MAX_COUNTED)?;
    let oldest = match rows.first() {
        Some((k, _)) => Some(queues::due_of(prefix, k)?),
        None => None,
    };
    Ok((rows.len(), oldest))
}

/// Visits each non-empty queue under `prefix` (see [`crate::queues`]) with its first
/// row's value and its due rows.
fn scoped_queues(
    store: &Store,
    prefix: &[u8],
    now: u64,
    mut visit: impl FnMut(&[u8], (usize, Option<u64>)),
) -> anyhow::Result<()> {
    let all_end = queues::range_end(prefix);
    let mut start = prefix.to_vec();
    for _ in 0..MAX_QUEUES {
        let Some((key, value)) = store
            .scan_committed(&start, &all_end, 1)?
            .into_iter()
            .next()
        else {
            break;
        };
        let Some(name) = key.get(prefix.len()..prefix.len() + queues::NAME_LEN) else {
            break;
        };
        let queue = queues::queue(prefix, name);
        let counted = due_rows(store, &queue, now)?;
        visit(&value, counted);
        start = queues::range_end(&queue);
    }
    Ok(())
}

fn scope_of_job(value: &[u8]) -> String {
    serde_json::from_slice::<crate::host_tables::jobs::StoredJob>(value)
        .map(|j| j.scope)
        .unwrap_or_default()
}

fn target_of_delivery(value: &[u8]) -> String {
    serde_json::from_slice::<crate::host_tables::webhooks::StoredDelivery>(value)
        .map(|d| crate::host_tables::webhooks::target_of(&d.target_url))
        .unwrap_or_default()
}

/// Serves the metrics page (`GET /metrics`; every other path 404) on `listener` until
/// `stop` turns true.
pub async fn serve(
    listener: tokio::net::TcpListener,
    store: std::sync::Arc<Store>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    use http_body_util::Full;
    use hyper::body::Bytes;
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!("metrics: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stop.changed() => return,
        };
        let store = store.clone();
        let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let store = store.clone();
            async move {
                let resp = if req.uri().path() == "/metrics" {
                    let text = tokio::task::spawn_blocking(move || render(&store))
                        .await
                        .unwrap_or_default();
                    hyper::Response::builder()
                        .header(
                            "content-type",
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )
                        .body(Full::new(Bytes::from(text)))
                } else {
                    hyper::Response::builder()
                        .status(404)
                        .body(Full::new(Bytes::from_static(
                            b"the metrics are at /metrics\n",
                        )))
                };
                Ok::<_, std::convert::Infallible>(resp.expect("a valid answer"))
            }
        });
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let conn = hyper::server::conn::http1::Builder::new().serve_connection(io, svc);
            let _ = tokio::time::timeout(Duration::from_secs(60), conn).await;
        });
    }
}

/// Counts a commit; `trips`: the transaction's round trips before the commit (`None`
/// on an embedded store).
pub fn committed(trips: Option<u32>) {
    let m = get();
    m.commits.inc();
    if let Some(trips) = trips {
        m.round_trips.observe(f64::from(trips + 1));
    }
}

/// Counts a wake-up from the database; `sent_ms`: when the other host committed.
pub fn woken(sent_ms: Option<u64>) {
    let m = get();
    m.queue_wakeups.inc();
    if let Some(ms) = sent_ms {
        let delay = crate::clock::now_ms().saturating_sub(ms);
        m.queue_wakeup_seconds.observe(delay as f64 / 1000.0);
    }
}

/// Counts a call that committed read-only (`rerun`: false), or that began read-only,
/// wrote, and runs again read-write (`rerun`: true).
pub fn read_only_call(rerun: bool) {
    let m = get();
    if rerun {
        m.read_only_reruns.inc();
    } else {
        m.read_only_calls.inc();
    }
}

/// Counts a re-run after a conflict that showed `at` a read or the commit.
pub fn conflict(at: &str, cause: crate::store::Cause) {
    get()
        .conflicts
        .get_or_create(&ConflictLabels {
            at: at.to_string(),
            cause: cause.label().to_string(),
        })
        .inc();
}
