//! The PostgreSQL backend (`--store postgres://...`): several hosts on one database.
//!
//! - **Transactions.** Each engine call is one database transaction at `SERIALIZABLE`
//!   on a pooled connection held for the call: reads go to the database inside it,
//!   writes stay in the [`super::Txn`] overlay until the commit, which sends them (one
//!   upsert and one delete per table, sorted by key) and `COMMIT` in one pipeline. A
//!   serialization failure (`40001`) or a deadlock (`40P01`), on a read or at the
//!   commit, is a [`Conflict`]: the caller re-runs the call after a short jittered
//!   pause ([`Backend::retry_delay`]). A lost connection or an exhausted pool is
//!   [`Unavailable`] (503). The first statement of a transaction is pipelined with its
//!   `BEGIN`, so a call pays no extra round trip for it. A `GET` or `HEAD` runs first
//!   as `SERIALIZABLE READ ONLY` ([`Backend::begin_read_only`]), whose reads PostgreSQL
//!   can release early, so they make fewer writers re-run; one that writes is run
//!   again read-write (`calls.rs`).
//! - **Schema** (`MIGRATIONS`): the engine's keys keep their exact bytes and are
//!   routed by prefix to plain tables with a `bytea` primary key (range scans are
//!   primary-key index scans): `esign_kv` (engine data and small host tables), one
//!   table for each of the engine's per-document key families ([`FAMILIES`], since
//!   schema step 2), `esign_blobs`, `esign_events`, and the three queues `esign_jobs`, `esign_mail`,
//!   `esign_deliveries`, which carry a lease (`lease_token`, `lease_until`). Migrations
//!   are applied at start inside a transaction that holds the `esign_schema` row lock
//!   (no advisory locks), so hosts starting together apply each step once.
//! - **Leases.** A worker claims a due queue row with one short statement
//!   (`FOR UPDATE SKIP LOCKED`, at the default `READ COMMITTED`) that sets a random
//!   token and an expiry taken from the database's clock; the transaction that records
//!   the outcome checks the token ([`BackendTxn::holds`]), so a host whose lease
//!   expired and was taken over records nothing.
//! - **Blocking.** The engine's imports are synchronous: each statement blocks the
//!   calling thread on this backend's own small tokio runtime, which also runs the
//!   connections. Callers are off the server's tokio workers (the dispatcher runs
//!   calls for a shared backend on blocking threads); a caller that is still on a
//!   worker leaves it through `block_in_place`.
//!
//! - **Wake-ups.** A commit that queues rows (jobs, mail, text messages, deliveries)
//!   sends `NOTIFY esign_wake` with their kinds in its pipeline, delivered by the
//!   database only if it commits; each host holds one more connection that `LISTEN`s
//!   and wakes its workers ([`Backend::listen`]), so work queued on one host starts on
//!   any host at once. That connection is re-opened a second after it is lost (and
//!   the workers woken then, for what came meanwhile); polling every
//!   [`super::SHARED_POLL`] stays as the fallback.
//!
//! The SQL is plain tables, B-tree primary keys, `ON CONFLICT`, `unnest` and
//! `SKIP LOCKED`, so it stays portable to PostgreSQL-compatible distributed databases;
//! where `LISTEN` is not supported, no `NOTIFY` is sent and hosts only poll.

use super::{Backend, BackendTxn, Cause, CommitError, Conflict, Entry, Lease, Unavailable, Writes};
use anyhow::Context;
use bytes::Bytes;
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::error::SqlState;

/// Connections per host at most, unless `ESIGN_STORE_POOL_SIZE` says otherwise (the
/// host keeps 12 for its workers and runs at most the rest as calls at once).
pub const DEFAULT_POOL_SIZE: usize = 48;
/// How long a call waits for a free connection (or a new one) before a 503.
const POOL_WAIT: Duration = Duration::from_secs(10);

/// The engine's key families (`d/{family}/...`) that a document's calls write or look
/// for, each in a table of its own (schema step 2), by family and table name.
/// PostgreSQL's serializable checks lock the B-tree *pages* a read visits, also where
/// it found nothing; in one shared index, a create looking for a new document's
/// signatures locked the page where every other create appended its list index keys,
/// and unrelated creates conflicted. In a table per family, a read and an insert share
/// a page only when they are in the same family. Families not listed stay in
/// `esign_kv`. A scan whose range spans tables reads each and merges. The engine names
/// the same families `own_table` in `esign_engine::keyspace::FAMILIES`; a test holds the
/// two lists equal.
pub const FAMILIES: [(&str, &str); 21] = [
    ("bref", "esign_d_bref"),
    ("dcd", "esign_d_dcd"),
    ("dcli", "esign_d_dcli"),
    ("dcom", "esign_d_dcom"),
    ("ddl", "esign_d_ddl"),
    ("dexp", "esign_d_dexp"),
    ("dext", "esign_d_dext"),
    ("dfld", "esign_d_dfld"),
    ("dlog", "esign_d_dlog"),
    ("doc", "esign_d_doc"),
    ("dpimg", "esign_d_dpimg"),
    ("dpv", "esign_d_dpv"),
    ("drcp", "esign_d_drcp"),
    ("dseal", "esign_d_dseal"),
    ("dsig", "esign_d_dsig"),
    ("duid", "esign_d_duid"),
    ("dx", "esign_d_dx"),
    ("prev", "esign_d_prev"),
    ("rlink", "esign_d_rlink"),
    ("rver", "esign_d_rver"),
    ("sub-ent", "esign_d_sub_ent"),
];

/// The schema's tables, by the key prefixes routed to them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Table {
    Kv,
    /// The engine family `FAMILIES[i]`.
    Family(usize),
    Blobs,
    Events,
    Jobs,
    Mail,
    Deliveries,
}

impl Table {
    /// Every table.
    pub fn all() -> impl Iterator<Item = Table> {
        [Table::Kv]
            .into_iter()
            .chain((0..FAMILIES.len()).map(Table::Family))
            .chain([
                Table::Blobs,
                Table::Events,
                Table::Jobs,
                Table::Mail,
                Table::Deliveries,
            ])
    }

    /// The keys of `FAMILIES[i]`: `[d/{family}/, d/{family}0)` ('0' follows '/').
    fn family_range(i: usize) -> (Vec<u8>, Vec<u8>) {
        let start = format!("d/{}/", FAMILIES[i].0).into_bytes();
        let mut end = start.clone();
        *end.last_mut().expect("not empty") = b'0';
        (start, end)
    }

    /// The table a key lives in (see `runtime::keys`).
    pub fn of(key: &[u8]) -> Table {
        let p = |prefix: &[u8]| key.starts_with(prefix);
        if let Some(rest) = key.strip_prefix(b"d/") {
            let family = rest.split(|b| *b == b'/').next().unwrap_or_default();
            // A family's own keys have a '/' after its name.
            if rest.len() > family.len()
                && let Some(i) = FAMILIES.iter().position(|(f, _)| f.as_bytes() == family)
            {
                return Table::Family(i);
            }
            Table::Kv
        } else if p(b"b/") {
            Table::Blobs
        } else if p(b"e/") {
            Table::Events
        } else if p(b"j/") || p(b"jw/") {
            Table::Jobs
        } else if p(b"m/") || p(b"sms/") {
            Table::Mail
        } else if p(b"wq/") || p(b"w/") {
            Table::Deliveries
        } else {
            Table::Kv
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Table::Kv => "esign_kv",
            Table::Family(i) => FAMILIES[i].1,
            Table::Blobs => "esign_blobs",
            Table::Events => "esign_events",
            Table::Jobs => "esign_jobs",
            Table::Mail => "esign_mail",
            Table::Deliveries => "esign_deliveries",
        }
    }

    /// The name a backup's manifest counts its rows under: schema step 1's tables,
    /// so that backups written before step 2 still match their manifests.
    pub fn manifest_name(self) -> &'static str {
        match self {
            Table::Family(_) => Table::Kv.name(),
            t => t.name(),
        }
    }

    /// Whether its rows are leased by workers.
    fn is_queue(self) -> bool {
        matches!(self, Table::Jobs | Table::Mail | Table::Deliveries)
    }

    /// The tables whose keys `[start, end)` may hold: one for every scan the engine
    /// makes (each stays in a family) and for the host's (each in its own table); a
    /// range that reaches into families without staying in one also reads `esign_kv`.
    fn spanned(start: &[u8], end: &[u8]) -> Vec<Table> {
        let first = Table::of(start);
        if let Table::Family(i) = first
            && end <= Table::family_range(i).1.as_slice()
        {
            return vec![first];
        }
        let families: Vec<Table> = (0..FAMILIES.len())
            .filter(|i| {
                let (s, e) = Table::family_range(*i);
                s.as_slice() < end && start < e.as_slice()
            })
            .map(Table::Family)
            .collect();
        if families.is_empty() {
            return vec![first];
        }
        let mut tables = vec![first, Table::Kv];
        tables.dedup();
        tables.extend(families.into_iter().filter(|t| *t != first));
        tables
    }
}

/// The schema, one step per version; each step is applied once, in order, under the
/// `esign_schema` row lock. Never edit a released step: add one. Only plain tables and
/// primary keys (no storage options, no extensions), so that PostgreSQL-compatible
/// databases take it too.
const MIGRATIONS: &[&str] = &[
    // 1: the key-value tables.
    "CREATE TABLE IF NOT EXISTS esign_kv (k bytea PRIMARY KEY, v bytea NOT NULL);
     CREATE TABLE IF NOT EXISTS esign_blobs (k bytea PRIMARY KEY, v bytea NOT NULL);
     CREATE TABLE IF NOT EXISTS esign_events (k bytea PRIMARY KEY, v bytea NOT NULL);
     CREATE TABLE IF NOT EXISTS esign_jobs (k bytea PRIMARY KEY, v bytea NOT NULL,
         lease_token bigint NOT NULL DEFAULT 0, lease_until bigint NOT NULL DEFAULT 0);
     CREATE TABLE IF NOT EXISTS esign_mail (k bytea PRIMARY KEY, v bytea NOT NULL,
         lease_token bigint NOT NULL DEFAULT 0, lease_until bigint NOT NULL DEFAULT 0);
     CREATE TABLE IF NOT EXISTS esign_deliveries (k bytea PRIMARY KEY, v bytea NOT NULL,
         lease_token bigint NOT NULL DEFAULT 0, lease_until bigint NOT NULL DEFAULT 0);",
    // 2: the engine's per-document key families in tables of their own (`FAMILIES`),
    // their rows moved out of esign_kv.
    "CREATE TABLE IF NOT EXISTS esign_d_bref (k bytea PRIMARY KEY, v bytea NOT NULL);
     INSERT INTO esign_d_bref SELECT k, v FROM esign_kv WHERE k >= convert_to('d/bref/', 'UTF8') AND k < convert_to('d/bref0', 'UTF8');
     DELETE FROM esign_kv WHERE k >= convert_to('d/bref/', 'UTF8') AND k < convert_to('d/bref0', 'UTF8');
     CREATE TABLE IF NOT EXISTS esign_d_dcd (k bytea PRIMARY KEY, v bytea NOT NULL);
     INSERT INTO esign_d_dcd SELECT k, v FROM esign_kv WHERE k >= convert_to('d/dcd/', 'UTF8') AND k < convert_to('d/dcd0', 'UTF8');
     DELETE FROM esign_kv WHERE k >= convert_to('d/dcd/', 'UTF8') AND k < convert_to('d/dcd0', 'UTF8');
     CREATE TABLE IF NOT EXISTS esign_d_dcli (k bytea PRIMARY KEY, v bytea NOT NULL);
     INSERT INTO esign_d_dcli SELECT k, v FROM esign_kv WHERE k >= convert_to('d/dcli/', 'UTF8') AND k < convert_to('d/dcli0', 'UTF8');
     DELETE FROM esign_kv WHERE k >= convert_to('d/dcli/', 'UTF8') AND k < convert_to('d/dcli0', 'UTF8');
     CREATE TABLE IF NOT EXISTS esign_d_dcom (k bytea PRIMARY KEY, v bytea NOT NULL);
     INSERT INTO esign_d_dcom SELECT k, v FROM esign_kv WHERE k >= convert_to('d/dcom/', 'UTF8') AND k < convert_to('d/dcom0', 'UTF8');
     DELETE FROM esign_kv WHERE k >= convert_to('d/dcom/', 'UTF8') AND k < convert_to('d/dcom0', 'UTF8');
     CREATE TABLE IF NOT EXISTS esign_d_ddl (k bytea PRIMARY KEY, v bytea NOT NULL);
     INSERT INTO esign_d_ddl SELECT k, v FROM esign_kv WHERE k >= convert_to('d/ddl/', 'UTF8') AND k < convert_to('d/ddl0', 'UTF8');
     DELETE FROM esign_kv WHERE k >= convert_to('d/ddl/', 'UTF8') AND k < convert_to('d/ddl0', 'UTF8');
     CREATE TABLE IF NOT EXISTS esign_d_dexp (k bytea PRIMARY KEY, v bytea NOT NULL);
     INSERT INTO esign_d_dexp SELECT k, v FROM esign_kv WHERE k >= convert_to('d/dexp/', 'UTF8') AND k < convert_to('d/dexp0', 'UTF8');
     DELETE FROM esign_kv WHERE k >= convert_to('d/dexp/', 'UTF8') AND k < convert_to('d/dexp0', 'UTF8');
     CREATE TABLE IF NOT EXISTS esign_d_dext (k bytea PRIMARY KEY, v bytea NOT NULL);
     INSERT INTO esign_d_dext SELECT k, v FROM esign_kv WHERE k >= convert_to('d/dext/', 'UTF8') AND k < convert_to('d/dext0', 'UTF8');
     DELETE FROM esign_kv WHERE k >= convert_to('d/dext/', 'UTF8') AND k < convert_to('d/dext0', 'UTF8');
     CREATE TABLE IF NOT EXISTS esign_d_dfld (k bytea PRIMARY KEY, v bytea NOT NULL);
     INSERT INTO esign_d_dfld SELECT k, v FROM esign_kv WHERE k >= convert_to('d/dfld/', 'UTF8') AND k < convert_to('d/dfld0', 'UTF8');
     DELETE FROM esign_kv WHERE k >= convert_to('d/dfld/', 'UTF8') AND k < convert_to('d/dfld0', 'UTF8');
     CREATE TABLE IF NOT EXISTS esign_d_dlog (k bytea PRIMARY KEY, v bytea NOT NULL);
     INSERT INTO esign_d_dlog SELECT k, v FROM esign_kv WHERE k >= convert_to('d/dlog/', 'UTF8') AND k < convert_to('d/dlog0', 'UTF8');
     DELETE FROM esign_kv WHERE k >= convert_to('d/dlog/', 'UTF8') AND k < convert_to('d/dlog0', 'UTF8');
     CREATE TABLE IF NOT EXISTS esign_d_doc (k bytea PRIMARY KEY, v bytea NOT NULL);
     INSERT INTO esign_d_doc SELECT k, v FROM esign_kv WHERE k >= convert_to('d/doc/', 'UTF8') AND k < convert_to('d/doc0', 'UTF8');
     DELETE FROM esign_kv WHERE k >= convert_to('d/doc/', 'UTF8') AND k < convert_to('d/doc0', 'UTF8');
     CREATE TABLE IF NOT EXISTS esign_d_dpimg (k bytea PRIMARY KEY, v bytea NOT NULL);
     INSERT INTO esign_d_dpimg SELECT k, v FROM esign_kv WHERE k >= convert_to('d/dpimg/', 'UTF8') AND k < convert_to('d/dpimg0', 'UTF8');
     DELETE FROM esign_kv WHERE k >= convert_to('d/dpimg/', 'UTF8') AND k < convert_to('d/dpimg0', 'UTF8');
     CREATE TABLE IF NOT EXISTS esign_d_dpv (k bytea PRIMARY KEY, v bytea NOT NULL);
     INSERT INTO esign_d_dpv SELECT k, v FROM esign_kv WHERE k >= convert_to('d/dpv/', 'UTF8') AND k < convert_to('d/dpv0', 'UTF8');
     DELETE FROM esign_kv WHERE k >= convert_to('d/dpv/', 'UTF8') AND k < convert_to('d/dpv0', 'UTF8');
     CREATE TABLE IF NOT EXISTS esign_d_drcp (k bytea PRIMARY KEY, v bytea NOT NULL);
     INSERT INTO esign_d_drcp SELECT k, v FROM esign_kv WHERE k >= convert_to('d/drcp/', 'UTF8') AND k < convert_to('d/drcp0', 'UTF8');
     DELETE FROM esign_kv WHERE k >= convert_to('d/drcp/', 'UTF8') AND k < convert_to('d/drcp0', 'UTF8');
     CREATE TABLE IF NOT EXISTS esign_d_dseal (k bytea PRIMARY KEY, v bytea NOT NULL);
     INSERT INTO esign_d_dseal SELECT k, v FROM esign_kv WHERE k >= convert_to('d/dseal/', 'UTF8') AND k < convert_to('d/dseal0', 'UTF8');
     DELETE FROM esign_kv WHERE k >= convert_to('d/dseal/', 'UTF8') AND k < convert_to('d/dseal0', 'UTF8');
     CREATE TABLE IF NOT EXISTS esign_d_dsig (k bytea PRIMARY KEY, v bytea NOT NULL);
     INSERT INTO esign_d_dsig SELECT k, v FROM esign_kv WHERE k >= convert_to('d/dsig/', 'UTF8') AND k < convert_to('d/dsig0', 'UTF8');
     DELETE FROM esign_kv WHERE k >= convert_to('d/dsig/', 'UTF8') AND k < convert_to('d/dsig0', 'UTF8');
     CREATE TABLE IF NOT EXISTS esign_d_duid (k bytea PRIMARY KEY, v bytea NOT NULL);
     INSERT INTO esign_d_duid SELECT k, v FROM esign_kv WHERE k >= convert_to('d/duid/', 'UTF8') AND k < convert_to('d/duid0', 'UTF8');
     DELETE FROM esign_kv WHERE k >= convert_to('d/duid/', 'UTF8') AND k < convert_to('d/duid0', 'UTF8');
     CREATE TABLE IF NOT EXISTS esign_d_dx (k bytea PRIMARY KEY, v bytea NOT NULL);
     INSERT INTO esign_d_dx SELECT k, v FROM esign_kv WHERE k >= convert_to('d/dx/', 'UTF8') AND k < convert_to('d/dx0', 'UTF8');
     DELETE FROM esign_kv WHERE k >= convert_to('d/dx/', 'UTF8') AND k < convert_to('d/dx0', 'UTF8');
     CREATE TABLE IF NOT EXISTS esign_d_prev (k bytea PRIMARY KEY, v bytea NOT NULL);
     INSERT INTO esign_d_prev SELECT k, v FROM esign_kv WHERE k >= convert_to('d/prev/', 'UTF8') AND k < convert_to('d/prev0', 'UTF8');
     DELETE FROM esign_kv WHERE k >= convert_to('d/prev/', 'UTF8') AND k < convert_to('d/prev0', 'UTF8');
     CREATE TABLE IF NOT EXISTS esign_d_rlink (k bytea PRIMARY KEY, v bytea NOT NULL);
     INSERT INTO esign_d_rlink SELECT k, v FROM esign_kv WHERE k >= convert_to('d/rlink/', 'UTF8') AND k < convert_to('d/rlink0', 'UTF8');
     DELETE FROM esign_kv WHERE k >= convert_to('d/rlink/', 'UTF8') AND k < convert_to('d/rlink0', 'UTF8');
     CREATE TABLE IF NOT EXISTS esign_d_rver (k bytea PRIMARY KEY, v bytea NOT NULL);
     INSERT INTO esign_d_rver SELECT k, v FROM esign_kv WHERE k >= convert_to('d/rver/', 'UTF8') AND k < convert_to('d/rver0', 'UTF8');
     DELETE FROM esign_kv WHERE k >= convert_to('d/rver/', 'UTF8') AND k < convert_to('d/rver0', 'UTF8');
     CREATE TABLE IF NOT EXISTS esign_d_sub_ent (k bytea PRIMARY KEY, v bytea NOT NULL);
     INSERT INTO esign_d_sub_ent SELECT k, v FROM esign_kv WHERE k >= convert_to('d/sub-ent/', 'UTF8') AND k < convert_to('d/sub-ent0', 'UTF8');
     DELETE FROM esign_kv WHERE k >= convert_to('d/sub-ent/', 'UTF8') AND k < convert_to('d/sub-ent0', 'UTF8');",
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// The database's clock in Unix milliseconds (leases never depend on hosts' clocks).
const DB_NOW_MS: &str = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// The PostgreSQL backend. See the module documentation.
pub struct PgBackend {
    rt: Option<tokio::runtime::Runtime>,
    pool: Pool,
    /// Where the wake-up listener connects, and how.
    config: tokio_postgres::Config,
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    /// Whether the database takes `LISTEN`/`NOTIFY` (probed at connect); commits send
    /// `NOTIFY` only then.
    notify: Arc<std::sync::atomic::AtomicBool>,
    /// Where it connects, without the password (for logs).
    pub describe: String,
}

impl Drop for PgBackend {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// `url` without its password.
fn redacted(url: &url::Url) -> String {
    let mut u = url.clone();
    if u.password().is_some() {
        let _ = u.set_password(Some("***"));
    }
    u.to_string()
}

/// Splits the URL's TLS parameters from the rest: tokio-postgres knows only
/// `sslmode=disable|prefer|require`; `verify-ca`/`verify-full` and `sslrootcert` are
/// ours. Returns the connection config, whether TLS is used, and extra root
/// certificates.
fn parse(url: &str) -> anyhow::Result<(tokio_postgres::Config, bool, Option<String>)> {
    let mut parsed = url::Url::parse(url).context("--store is not a URL")?;
    if !matches!(parsed.scheme(), "postgres" | "postgresql") {
        anyhow::bail!("--store takes a postgres:// URL");
    }
    let mut tls = false;
    let mut root = None;
    let mut kept = Vec::new();
    for (k, v) in parsed.query_pairs() {
        match k.as_ref() {
            "sslmode" => match v.as_ref() {
                "disable" => tls = false,
                // Every TLS connection verifies the server (rustls has no "trust
                // anything" mode): require, verify-ca and verify-full all verify.
                "require" | "verify-ca" | "verify-full" => tls = true,
                other => anyhow::bail!(
                    "sslmode={other} is not supported; use disable, require or verify-full"
                ),
            },
            "sslrootcert" => root = Some(v.into_owned()),
            _ => kept.push((k.into_owned(), v.into_owned())),
        }
    }
    if kept.is_empty() {
        parsed.set_query(None);
    } else {
        parsed.query_pairs_mut().clear().extend_pairs(kept);
    }
    let mut config = tokio_postgres::Config::from_str(parsed.as_str())
        .with_context(|| format!("reading the store URL {}", redacted(&parsed)))?;
    config.ssl_mode(if tls {
        tokio_postgres::config::SslMode::Require
    } else {
        tokio_postgres::config::SslMode::Disable
    });
    if config.get_application_name().is_none() {
        config.application_name("esign");
    }
    // Nothing waits forever: a dead peer is noticed by the socket (keepalives, TCP user
    // timeout), a stuck statement or lock wait by the server, and a transaction left
    // open (a host frozen mid-call) is ended by the server, releasing its locks.
    config.connect_timeout(Duration::from_secs(10));
    config.keepalives(true);
    config.keepalives_idle(Duration::from_secs(10));
    config.tcp_user_timeout(Duration::from_secs(30));
    if config.get_options().is_none() {
        config.options("-c statement_timeout=30000 -c idle_in_transaction_session_timeout=60000");
    }
    Ok((config, tls, root))
}

fn rustls_config(root: Option<&str>) -> anyhow::Result<rustls::ClientConfig> {
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    match root {
        Some(path) => {
            for cert in CertificateDer::pem_file_iter(path)
                .with_context(|| format!("reading sslrootcert {path}"))?
            {
                roots.add(cert.with_context(|| format!("reading sslrootcert {path}"))?)?;
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// Maps a database error: serialization failures and deadlocks are [`Conflict`]; a
/// connection that is gone (closed, a socket error, the server shutting the session
/// down: classes `08` and `57P0x`) is [`Unavailable`]; anything else is an error of
/// the statement.
fn db_error(e: tokio_postgres::Error) -> anyhow::Error {
    match e.code() {
        Some(c) if *c == SqlState::T_R_DEADLOCK_DETECTED => {
            anyhow::Error::new(Conflict(Cause::Deadlock))
        }
        Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE => {
            anyhow::Error::new(Conflict(serialization_cause(&e)))
        }
        Some(c) if c.code().starts_with("08") || c.code().starts_with("57P0") => {
            anyhow::Error::new(Unavailable(e.to_string()))
        }
        Some(_) => anyhow::Error::new(e).context("the database refused a statement"),
        None if e.is_closed()
            || std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>()) =>
        {
            anyhow::Error::new(Unavailable(e.to_string()))
        }
        None => anyhow::Error::new(e).context("a database statement failed"),
    }
}

/// Which kind of serialization failure PostgreSQL reported: one on a row another
/// transaction changed ("could not serialize access due to concurrent update" or
/// "delete"), or one of the serializable checks' read/write dependencies.
fn serialization_cause(e: &tokio_postgres::Error) -> Cause {
    let concurrent = e
        .as_db_error()
        .is_some_and(|d| d.message().contains("due to concurrent"));
    match concurrent {
        true => Cause::Row,
        false => Cause::Dependency,
    }
}

fn pool_error(e: deadpool_postgres::PoolError) -> anyhow::Error {
    anyhow::Error::new(Unavailable(format!("no database connection: {e}")))
}

impl PgBackend {
    /// Connects to `url` (creating the database when it does not exist and the user
    /// may), applies the schema's migrations, and returns the backend.
    pub fn connect(url: &str) -> anyhow::Result<PgBackend> {
        let (config, tls, root) = parse(url)?;
        let describe = redacted(&url::Url::parse(url)?);
        let pool_size = std::env::var("ESIGN_STORE_POOL_SIZE")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(DEFAULT_POOL_SIZE)
            .max(16);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("esign-db")
            .enable_all()
            .build()?;
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let tls_connect = match tls {
            true => Some(tokio_postgres_rustls::MakeRustlsConnect::new(
                rustls_config(root.as_deref())?,
            )),
            false => None,
        };
        let manager = match &tls_connect {
            Some(tls) => Manager::from_config(config.clone(), tls.clone(), manager_config),
            None => Manager::from_config(config.clone(), tokio_postgres::NoTls, manager_config),
        };
        let pool = Pool::builder(manager)
            .max_size(pool_size)
            .wait_timeout(Some(POOL_WAIT))
            .create_timeout(Some(POOL_WAIT))
            .recycle_timeout(Some(POOL_WAIT))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .context("building the connection pool")?;
        let backend = PgBackend {
            rt: Some(rt),
            pool,
            config: config.clone(),
            tls: tls_connect,
            notify: Arc::default(),
            describe,
        };
        backend.block(async {
            let client = match backend.pool.get().await {
                Ok(c) => c,
                Err(deadpool_postgres::PoolError::Backend(e))
                    if e.code() == Some(&SqlState::INVALID_CATALOG_NAME) =>
                {
                    create_database(&config, tls, root.as_deref()).await?;
                    backend
                        .pool
                        .get()
                        .await
                        .context("connecting to the database")?
                }
                Err(e) => {
                    return Err(anyhow::Error::new(e)
                        .context(format!("connecting to {}", backend.describe)));
                }
            };
            migrate(&client).await?;
            // Whether commits may send NOTIFY (a database that takes no LISTEN would
            // fail them).
            let probe = format!("LISTEN {WAKE_CHANNEL}; UNLISTEN {WAKE_CHANNEL}");
            match client.batch_execute(&probe).await {
                Ok(()) => backend
                    .notify
                    .store(true, std::sync::atomic::Ordering::Relaxed),
                Err(e) => tracing::info!(
                    "the database takes no LISTEN ({e}): hosts look for each other's work every second"
                ),
            }
            anyhow::Ok(())
        })?;
        Ok(backend)
    }

    /// Runs `f` on this backend's runtime and waits for it.
    fn block<F: Future>(&self, f: F) -> F::Output {
        let rt = self.rt.as_ref().expect("running");
        if tokio::runtime::Handle::try_current().is_ok() {
            tokio::task::block_in_place(|| rt.block_on(f))
        } else {
            rt.block_on(f)
        }
    }

    fn handle(&self) -> tokio::runtime::Handle {
        self.rt.as_ref().expect("running").handle().clone()
    }

    /// A transaction on a pooled connection that will open with `begin`.
    fn transaction(&self, begin: &'static str) -> anyhow::Result<Box<dyn BackendTxn>> {
        let conn = self.block(self.pool.get()).map_err(pool_error)?;
        Ok(Box::new(PgTxn {
            rt: self.handle(),
            conn: Some(conn),
            begun: false,
            begin,
            notify: self.notify.clone(),
            trips: 0,
        }))
    }

    /// Connections this host keeps at most.
    pub fn pool_size(&self) -> usize {
        self.pool.status().max_size
    }

    /// Rows per table (for `esign admin migrate`'s check).
    pub fn count(&self, table: Table) -> anyhow::Result<i64> {
        self.block(async {
            let c = self.pool.get().await.map_err(pool_error)?;
            let row = c
                .query_one(&format!("SELECT count(*) FROM {}", table.name()), &[])
                .await
                .map_err(db_error)?;
            Ok(row.get(0))
        })
    }

    /// Whether every table is empty.
    pub fn is_empty(&self) -> anyhow::Result<bool> {
        for t in Table::all() {
            if self.count(t)? > 0 {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Inserts `rows` (a batch of a copy into an empty database), in one transaction.
    pub fn insert_batch(&self, rows: &[Entry]) -> anyhow::Result<()> {
        let mut writes = Writes::new();
        for (k, v) in rows {
            writes.insert(k.clone(), Some(Bytes::copy_from_slice(v)));
        }
        self.begin()?
            .commit(&writes)
            .map_err(CommitError::into_error)
    }
}

/// Creates the database named in `config` from the `postgres` maintenance database.
async fn create_database(
    config: &tokio_postgres::Config,
    tls: bool,
    root: Option<&str>,
) -> anyhow::Result<()> {
    let name = config
        .get_dbname()
        .context("the store URL names no database")?
        .to_string();
    let mut admin = config.clone();
    admin.dbname("postgres");
    let client = if tls {
        let (client, conn) = admin
            .connect(tokio_postgres_rustls::MakeRustlsConnect::new(
                rustls_config(root)?,
            ))
            .await?;
        tokio::spawn(conn);
        client
    } else {
        let (client, conn) = admin.connect(tokio_postgres::NoTls).await?;
        tokio::spawn(conn);
        client
    };
    let quoted = format!("\"{}\"", name.replace('"', "\"\""));
    match client
        .batch_execute(&format!("CREATE DATABASE {quoted}"))
        .await
    {
        Ok(()) => {
            tracing::info!("created the database {name}");
            Ok(())
        }
        // Another host created it first (a race shows as a unique violation).
        Err(e)
            if e.code() == Some(&SqlState::DUPLICATE_DATABASE)
                || e.code() == Some(&SqlState::UNIQUE_VIOLATION) =>
        {
            Ok(())
        }
        Err(e) => Err(anyhow::Error::new(e).context(format!("creating the database {name}"))),
    }
}

/// Applies the migrations this database lacks, under the `esign_schema` row lock.
async fn migrate(client: &Object) -> anyhow::Result<()> {
    // Hosts starting together may race to create the table: the loser sees a
    // unique violation on the catalog, or (when it lost on the table's row type)
    // `type "esign_schema" already exists` (42710), and tries again.
    for attempt in 0.. {
        match client
            .batch_execute(
                "CREATE TABLE IF NOT EXISTS esign_schema (id int PRIMARY KEY, version int NOT NULL)",
            )
            .await
        {
            Ok(()) => break,
            Err(e)
                if attempt < 20
                    && (e.code() == Some(&SqlState::UNIQUE_VIOLATION)
                        || e.code() == Some(&SqlState::DUPLICATE_TABLE)
                        || e.code() == Some(&SqlState::DUPLICATE_OBJECT)) =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(e) => return Err(anyhow::Error::new(e).context("creating esign_schema")),
        }
    }
    client
        .batch_execute("BEGIN; INSERT INTO esign_schema VALUES (1, 0) ON CONFLICT DO NOTHING")
        .await
        .context("locking the schema")?;
    let result = async {
        let version: i32 = client
            .query_one("SELECT version FROM esign_schema WHERE id = 1 FOR UPDATE", &[])
            .await?
            .get(0);
        if version > SCHEMA_VERSION {
            anyhow::bail!(
                "the database has schema version {version}, newer than this esign's {SCHEMA_VERSION}: run the newer esign"
            );
        }
        for (i, step) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            client
                .batch_execute(step)
                .await
                .with_context(|| format!("applying schema migration {}", i + 1))?;
            tracing::info!("applied schema migration {}", i + 1);
        }
        client
            .execute(
                "UPDATE esign_schema SET version = $1 WHERE id = 1",
                &[&SCHEMA_VERSION],
            )
            .await?;
        anyhow::Ok(())
    }
    .await;
    match result {
        Ok(()) => client
            .batch_execute("COMMIT")
            .await
            .context("committing the schema")?,
        Err(e) => {
            let _ = client.batch_execute("ROLLBACK").await;
            return Err(e);
        }
    }
    Ok(())
}

impl Backend for PgBackend {
    fn begin(&self) -> anyhow::Result<Box<dyn BackendTxn>> {
        self.transaction(BEGIN)
    }

    fn begin_read_only(&self) -> anyhow::Result<Box<dyn BackendTxn>> {
        self.transaction(BEGIN_READ_ONLY)
    }

    fn scan_committed(&self, start: &[u8], end: &[u8], limit: usize) -> anyhow::Result<Vec<Entry>> {
        if start >= end || limit == 0 {
            return Ok(Vec::new());
        }
        self.block(async {
            let c = self.pool.get().await.map_err(pool_error)?;
            scan(&c, start, end, limit, false).await.map_err(db_error)
        })
    }

    fn get_committed(&self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        self.block(async {
            let c = self.pool.get().await.map_err(pool_error)?;
            get(&c, key).await.map_err(db_error)
        })
    }

    fn flush(&self) -> anyhow::Result<()> {
        Ok(()) // a commit is durable when COMMIT returns
    }

    fn shared(&self) -> bool {
        true
    }

    fn connections(&self) -> Option<usize> {
        Some(self.pool_size())
    }

    fn pool_use(&self) -> Option<(usize, usize)> {
        let s = self.pool.status();
        Some((s.size.saturating_sub(s.available), s.max_size))
    }

    fn lease(&self, key: &[u8], lease: Duration) -> anyhow::Result<Option<Lease>> {
        let table = Table::of(key);
        anyhow::ensure!(table.is_queue(), "{} rows are not leased", table.name());
        let token = random_token();
        let sql = format!(
            "UPDATE {t} SET lease_token = $2, lease_until = {DB_NOW_MS} + $3
             WHERE k = (SELECT k FROM {t} WHERE k = $1 AND lease_until <= {DB_NOW_MS}
                        FOR UPDATE SKIP LOCKED)",
            t = table.name()
        );
        let ms = lease.as_millis() as i64;
        let n = self.block(async {
            let c = self.pool.get().await.map_err(pool_error)?;
            let st = c.prepare_cached(&sql).await.map_err(db_error)?;
            c.execute(&st, &[&key, &token, &ms]).await.map_err(db_error)
        })?;
        Ok((n == 1).then_some(Lease { token }))
    }

    fn renew(&self, key: &[u8], lease: &Lease, duration: Duration) -> anyhow::Result<bool> {
        let table = Table::of(key);
        let sql = format!(
            "UPDATE {t} SET lease_until = {DB_NOW_MS} + $3 WHERE k = $1 AND lease_token = $2",
            t = table.name()
        );
        let ms = duration.as_millis() as i64;
        let n = self.block(async {
            let c = self.pool.get().await.map_err(pool_error)?;
            let st = c.prepare_cached(&sql).await.map_err(db_error)?;
            c.execute(&st, &[&key, &lease.token, &ms])
                .await
                .map_err(db_error)
        })?;
        Ok(n == 1)
    }

    /// 1 ms, then doubling to at most 64 ms, each ± half (hosts that conflicted with
    /// each other should not retry in lockstep).
    fn listen(&self, wake: super::Wake) {
        let mut config = self.config.clone();
        // A connection that died silently is noticed within a minute or so.
        config.keepalives_idle(Duration::from_secs(30));
        if !self.notify.load(std::sync::atomic::Ordering::Relaxed) {
            return; // the database takes no LISTEN: workers poll
        }
        let tls = self.tls.clone();
        self.handle().spawn(async move {
            loop {
                let listened = match &tls {
                    Some(tls) => listen_once(&config, tls.clone(), &wake).await,
                    None => listen_once(&config, tokio_postgres::NoTls, &wake).await,
                };
                match listened {
                    Err(e) if e.code() == Some(&SqlState::FEATURE_NOT_SUPPORTED) => {
                        tracing::info!(
                            "the database takes no LISTEN ({e}): hosts look for each other's work every second"
                        );
                        return;
                    }
                    Err(e) => tracing::warn!(
                        "wake-ups from the database stopped ({e}); reconnecting in 1 s, polling meanwhile"
                    ),
                    Ok(()) => tracing::warn!(
                        "the database closed the wake-up connection; reconnecting in 1 s, polling meanwhile"
                    ),
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
    }

    fn retry_delay(&self, attempt: u32) -> Duration {
        let base = 1u64 << attempt.min(6);
        let mut b = [0u8; 8];
        let _ = getrandom::fill(&mut b);
        Duration::from_micros(base * 500 + u64::from_le_bytes(b) % (base * 1000))
    }
}

/// The channel of wake-ups.
const WAKE_CHANNEL: &str = "esign_wake";

/// One life of the wake-up connection: `LISTEN`, wake everything once (work may have
/// been queued while nobody listened), then pass on each notice until the connection
/// fails or closes.
async fn listen_once<T>(
    config: &tokio_postgres::Config,
    tls: T,
    wake: &super::Wake,
) -> Result<(), tokio_postgres::Error>
where
    T: tokio_postgres::tls::MakeTlsConnect<tokio_postgres::Socket>,
    T::Stream: Send + 'static,
{
    let (client, mut connection) = config.connect(tls).await?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    // The connection is driven here (its notices come out of it); requests of
    // `client` go through it as well.
    tokio::spawn(async move {
        loop {
            let message = std::future::poll_fn(|cx| connection.poll_message(cx)).await;
            let forwarded = match message {
                Some(Ok(tokio_postgres::AsyncMessage::Notification(n))) => {
                    tx.send(Ok(n.payload().to_string()))
                }
                Some(Ok(_)) => Ok(()),
                Some(Err(e)) => tx.send(Err(e)),
                None => return,
            };
            if forwarded.is_err() {
                return;
            }
        }
    });
    client
        .batch_execute(&format!("LISTEN {WAKE_CHANNEL}"))
        .await?;
    wake(&WAKE_KINDS, None);
    while let Some(notice) = rx.recv().await {
        let notice = notice?;
        let (kinds, sent_ms) = parse_notice(&notice);
        wake(&kinds, sent_ms);
    }
    Ok(())
}

/// A notice's payload, `KIND... t=MS` (see the commit): its kinds and the commit's time.
fn parse_notice(payload: &str) -> (Vec<&str>, Option<u64>) {
    let mut kinds = Vec::new();
    let mut sent_ms = None;
    for word in payload.split(' ') {
        match word.strip_prefix("t=") {
            Some(ms) => sent_ms = ms.parse().ok(),
            None => kinds.push(word),
        }
    }
    (kinds, sent_ms)
}

/// Every kind of work a wake-up names.
const WAKE_KINDS: [&str; 4] = ["jobs", "mail", "sms", "deliveries"];

/// The kinds of work a commit's upserted keys queue.
fn queued_kinds<'a>(keys: impl Iterator<Item = &'a [u8]>) -> Vec<&'static str> {
    let mut kinds = Vec::new();
    for key in keys {
        let kind = match Table::of(key) {
            Table::Jobs => "jobs",
            Table::Mail if key.starts_with(b"sms/") => "sms",
            Table::Mail => "mail",
            Table::Deliveries => "deliveries",
            _ => continue,
        };
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    kinds
}

fn random_token() -> i64 {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).expect("OS randomness");
    (i64::from_le_bytes(b) & i64::MAX).max(1)
}

async fn get(c: &Object, key: &[u8]) -> Result<Option<Vec<u8>>, tokio_postgres::Error> {
    let sql = format!("SELECT v FROM {} WHERE k = $1", Table::of(key).name());
    let st = c.prepare_cached(&sql).await?;
    Ok(c.query_opt(&st, &[&key]).await?.map(|r| r.get(0)))
}

async fn scan(
    c: &Object,
    start: &[u8],
    end: &[u8],
    limit: usize,
    reverse: bool,
) -> Result<Vec<Entry>, tokio_postgres::Error> {
    let limit = limit.min(i64::MAX as usize) as i64;
    let tables = Table::spanned(start, end);
    let mut rows = Vec::new();
    for table in &tables {
        let sql = format!(
            "SELECT k, v FROM {} WHERE k >= $1 AND k < $2 ORDER BY k {} LIMIT $3",
            table.name(),
            if reverse { "DESC" } else { "ASC" }
        );
        let st = c.prepare_cached(&sql).await?;
        rows.extend(
            c.query(&st, &[&start, &end, &limit])
                .await?
                .into_iter()
                .map(|r| (r.get::<_, Vec<u8>>(0), r.get::<_, Vec<u8>>(1))),
        );
    }
    if tables.len() > 1 {
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        if reverse {
            rows.reverse();
        }
        rows.truncate(limit as usize);
    }
    Ok(rows)
}

/// One call's database transaction. See the module documentation.
pub struct PgTxn {
    rt: tokio::runtime::Handle,
    /// Taken by the commit; a transaction dropped with it rolls back.
    conn: Option<Object>,
    /// Whether `BEGIN` was sent.
    begun: bool,
    /// The `BEGIN` it sends: [`BEGIN`], or [`BEGIN_READ_ONLY`].
    begin: &'static str,
    /// Whether commits that queue rows send `NOTIFY` (see [`PgBackend::notify`]).
    notify: Arc<std::sync::atomic::AtomicBool>,
    /// Statements awaited so far (`BEGIN` goes with the first).
    trips: u32,
}

const BEGIN: &str = "BEGIN ISOLATION LEVEL SERIALIZABLE";
/// A transaction that only reads: still serializable (PostgreSQL checks read-only
/// transactions too), but its reads can drop their predicate locks once its snapshot
/// is known to be safe, so it makes fewer writers re-run. A write in it is refused.
const BEGIN_READ_ONLY: &str = "BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY";

impl PgTxn {
    fn block<F: Future>(&self, f: F) -> F::Output {
        if tokio::runtime::Handle::try_current().is_ok() {
            tokio::task::block_in_place(|| self.rt.block_on(f))
        } else {
            self.rt.block_on(f)
        }
    }

    /// Runs one statement in the transaction, sending `BEGIN` in the same pipeline
    /// when it is the first.
    fn run<T>(
        &mut self,
        f: impl for<'a> FnOnce(
            &'a Object,
        ) -> std::pin::Pin<
            Box<dyn Future<Output = Result<T, tokio_postgres::Error>> + Send + 'a>,
        >,
    ) -> anyhow::Result<T> {
        let first = !self.begun;
        self.begun = true;
        self.trips += 1;
        let begin = self.begin;
        let conn = self.conn.as_ref().expect("not committed");
        self.block(async {
            if first {
                let (begun, result) = tokio::join!(conn.batch_execute(begin), f(conn));
                begun.map_err(db_error)?;
                result.map_err(db_error)
            } else {
                f(conn).await.map_err(db_error)
            }
        })
    }
}

impl Drop for PgTxn {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            if !self.begun {
                return drop(conn);
            }
            // Roll back before the connection goes back to the pool; a connection
            // that cannot is detached from the pool and closed.
            self.rt.spawn(async move {
                if conn.batch_execute("ROLLBACK").await.is_err() {
                    drop(Object::take(conn));
                }
            });
        }
    }
}

impl BackendTxn for PgTxn {
    fn get(&mut self, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
        let key = key.to_vec();
        self.run(move |c| Box::pin(async move { get(c, &key).await }))
    }

    fn scan(
        &mut self,
        start: &[u8],
        end: &[u8],
        limit: usize,
        reverse: bool,
    ) -> anyhow::Result<Vec<Entry>> {
        if start >= end || limit == 0 {
            return Ok(Vec::new());
        }
        let (start, end) = (start.to_vec(), end.to_vec());
        self.run(move |c| Box::pin(async move { scan(c, &start, &end, limit, reverse).await }))
    }

    fn holds(&mut self, key: &[u8], lease: &Lease) -> anyhow::Result<bool> {
        let table = Table::of(key);
        if !table.is_queue() {
            return Ok(self.get(key)?.is_some());
        }
        let sql = format!("SELECT lease_token FROM {} WHERE k = $1", table.name());
        let key = key.to_vec();
        let token: Option<i64> = self.run(move |c| {
            Box::pin(async move {
                let st = c.prepare_cached(&sql).await?;
                Ok(c.query_opt(&st, &[&key]).await?.map(|r| r.get(0)))
            })
        })?;
        Ok(token == Some(lease.token))
    }

    fn round_trips(&self) -> Option<u32> {
        Some(self.trips)
    }

    fn commit(mut self: Box<Self>, writes: &Writes) -> Result<(), CommitError> {
        let first = !self.begun;
        self.begun = true;
        /// Keys and values of one table's upsert.
        type Rows<'a> = (Vec<&'a [u8]>, Vec<&'a [u8]>);
        let mut upserts: std::collections::BTreeMap<Table, Rows<'_>> = Default::default();
        let mut deletes: std::collections::BTreeMap<Table, Vec<&[u8]>> = Default::default();
        for (k, v) in writes {
            let t = Table::of(k);
            match v {
                Some(v) => {
                    let e = upserts.entry(t).or_default();
                    e.0.push(k);
                    e.1.push(v);
                }
                None => deletes.entry(t).or_default().push(k),
            }
        }
        // Other hosts' workers learn of new queue rows when this commits.
        let kinds = queued_kinds(upserts.values().flat_map(|(keys, _)| keys.iter().copied()));
        let notice = (!kinds.is_empty() && self.notify.load(std::sync::atomic::Ordering::Relaxed))
            .then(|| {
                let now = crate::clock::now_ms();
                format!("NOTIFY {WAKE_CHANNEL}, '{} t={now}'", kinds.join(" "))
            });
        let conn = self.conn.as_ref().expect("not committed");
        let result = self.block(async {
            // Statements are prepared first: a prepare waits for its own round trip,
            // and everything after BEGIN must reach the server in order.
            let mut delete_steps = Vec::new();
            for (t, keys) in &deletes {
                let sql = format!("DELETE FROM {} WHERE k = ANY($1::bytea[])", t.name());
                delete_steps.push((conn.prepare_cached(&sql).await?, keys));
            }
            let mut upsert_steps = Vec::new();
            for (t, (keys, values)) in &upserts {
                let sql = format!(
                    "INSERT INTO {} (k, v) SELECT * FROM unnest($1::bytea[], $2::bytea[])
                     ON CONFLICT (k) DO UPDATE SET v = excluded.v",
                    t.name()
                );
                upsert_steps.push((conn.prepare_cached(&sql).await?, keys, values));
            }
            type Step<'a> = std::pin::Pin<
                Box<dyn Future<Output = Result<(), tokio_postgres::Error>> + Send + 'a>,
            >;
            // join_all polls the steps in order, and each sends its message at its
            // first poll: one pipeline, in this order.
            // A step that fails before it is sent (a value the client cannot encode)
            // says so here, at its first poll, before COMMIT's: COMMIT then becomes
            // ROLLBACK, so the other writes never commit without it. Failures on the
            // server abort the transaction, and COMMIT rolls back by itself.
            let failed_early = std::sync::atomic::AtomicBool::new(false);
            let noted = |r: Result<u64, tokio_postgres::Error>| {
                if r.is_err() {
                    failed_early.store(true, std::sync::atomic::Ordering::SeqCst);
                }
                r.map(|_| ())
            };
            let noted = &noted;
            let failed_early = &failed_early;
            let mut steps: Vec<Step<'_>> = Vec::new();
            if first {
                steps.push(Box::pin(conn.batch_execute(self.begin)));
            }
            for (st, keys) in &delete_steps {
                steps.push(Box::pin(
                    async move { noted(conn.execute(st, &[keys]).await) },
                ));
            }
            for (st, keys, values) in &upsert_steps {
                steps.push(Box::pin(async move {
                    noted(conn.execute(st, &[keys, values]).await)
                }));
            }
            if let Some(notice) = &notice {
                steps.push(Box::pin(conn.batch_execute(notice)));
            }
            steps.push(Box::pin(async move {
                if failed_early.load(std::sync::atomic::Ordering::SeqCst) {
                    conn.batch_execute("ROLLBACK").await
                } else {
                    conn.batch_execute("COMMIT").await
                }
            }));
            // Every answer is awaited: after the statement that failed, the others
            // fail too ("current transaction is aborted"), and the first failure is
            // the one that says why.
            let results = futures_util::future::join_all(steps).await;
            match results.into_iter().find_map(Result::err) {
                None => Ok(()),
                Some(e) => Err(e),
            }
        });
        match result {
            Ok(()) => {
                // Committed: the connection goes back to the pool as it is.
                drop(self.conn.take());
                Ok(())
            }
            Err(e) => Err(CommitError::classify(db_error(e))),
        }
    }
}

#[cfg(test)]
mod wake_tests {
    use super::{parse_notice, queued_kinds};

    #[test]
    fn a_commit_names_the_kinds_it_queued_and_a_notice_reads_back() {
        let keys: [&[u8]; 5] = [b"d/doc/x", b"jw/abc", b"sms/1", b"m/2", b"j/3"];
        let kinds = queued_kinds(keys.into_iter());
        assert_eq!(kinds, ["jobs", "sms", "mail"]);
        let payload = format!("{} t=1700000000000", kinds.join(" "));
        assert_eq!(
            parse_notice(&payload),
            (vec!["jobs", "sms", "mail"], Some(1_700_000_000_000))
        );
        assert_eq!(parse_notice("deliveries"), (vec!["deliveries"], None));
    }
}

/// Needs `ESIGN_TEST_STORE` (a `postgres://.../` URL; CI's PostgreSQL pass runs the
/// tests named `on_postgres`); skipped without it.
#[cfg(test)]
mod on_postgres_tests {
    use super::super::{Cause, CommitError, Store};
    use super::PgBackend;

    fn store() -> Option<std::sync::Arc<Store>> {
        let base = std::env::var("ESIGN_TEST_STORE")
            .ok()
            .filter(|b| !b.is_empty())?;
        let name = format!("esign_causes_{}", crate::ids::random_id());
        Some(Store::new(
            PgBackend::connect(&format!("{base}{name}")).unwrap(),
        ))
    }

    #[test]
    fn on_postgres_a_conflict_says_whether_a_row_or_a_dependency_caused_it() {
        let Some(s) = store() else {
            return eprintln!("skipped: no ESIGN_TEST_STORE");
        };
        // Two calls change the same record: the second to commit finds the row changed.
        let mut t = s.begin();
        t.put(b"row", b"0");
        t.commit().unwrap();
        assert_eq!(
            second_of_two(&s, [b"row", b"row"], [b"row", b"row"]),
            Cause::Row
        );
        // Write skew: each reads what the other writes, and nothing is written twice.
        assert_eq!(
            second_of_two(&s, [b"a", b"b"], [b"b", b"a"]),
            Cause::Dependency
        );
    }

    /// Two transactions, each reading its key of `reads` and writing its key of
    /// `writes`; the first commits. Why the second could not.
    fn second_of_two(s: &std::sync::Arc<Store>, reads: [&[u8]; 2], writes: [&[u8]; 2]) -> Cause {
        let mut t = [s.begin(), s.begin()];
        for (t, key) in t.iter_mut().zip(reads) {
            t.get(key).unwrap();
        }
        for (t, key) in t.iter_mut().zip(writes) {
            t.put(key, b"1");
        }
        let [t1, t2] = t;
        t1.commit().unwrap();
        match t2.commit() {
            Err(CommitError::Conflict(cause)) => cause,
            other => panic!("the second committed or failed otherwise: {other:?}"),
        }
    }

    #[test]
    fn on_postgres_a_scan_across_family_tables_merges_them_in_key_order() {
        let Some(s) = store() else {
            return eprintln!("skipped: no ESIGN_TEST_STORE");
        };
        let keys: [&[u8]; 5] = [b"d/doc/1", b"d/doc/2", b"d/dp", b"d/dpimg/1", b"d/dx/1"];
        let mut t = s.begin();
        for k in keys {
            t.put(k, b"v");
        }
        t.commit().unwrap();
        let mut t = s.begin();
        let got =
            |rows: Vec<super::super::Entry>| rows.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(got(t.scan(b"d/doc/", b"d/dy", 10, false).unwrap()), keys);
        assert_eq!(
            got(t.scan(b"d/doc/", b"d/dy", 3, true).unwrap()),
            [b"d/dx/1".as_slice(), b"d/dpimg/1", b"d/dp"]
        );
    }
}

#[cfg(test)]
mod table_tests {
    use super::{FAMILIES, MIGRATIONS, Table};
    use std::collections::BTreeSet;

    #[test]
    fn a_family_s_keys_go_to_its_table_and_a_scan_reads_every_table_its_range_reaches() {
        let name = |k: &[u8]| Table::of(k).name();
        assert_eq!(name(b"d/doc/abc"), "esign_d_doc");
        assert_eq!(name(b"d/dx/e/a/draft/c/01/abc"), "esign_d_dx");
        assert_eq!(name(b"d/sub-ent/e/document.sent/s"), "esign_d_sub_ent");
        // Other engine keys, a family's name without its '/', and the host's tables.
        assert_eq!(name(b"d/usr/u"), "esign_kv");
        assert_eq!(name(b"d/doc"), "esign_kv");
        assert_eq!(name(b"d/docs/x"), "esign_kv");
        assert_eq!(name(b"j/123"), "esign_jobs");
        // A backup's manifest keeps counting them as schema 1 did.
        assert_eq!(Table::of(b"d/doc/abc").manifest_name(), "esign_kv");
        let names = |s: &[u8], e: &[u8]| {
            Table::spanned(s, e)
                .into_iter()
                .map(Table::name)
                .collect::<Vec<_>>()
        };
        assert_eq!(names(b"d/dlog/x/", b"d/dlog/x/\xff"), ["esign_d_dlog"]);
        assert_eq!(names(b"d/usr/", b"d/usr/\xff"), ["esign_kv"]);
        assert_eq!(names(b"j/", b"j0"), ["esign_jobs"]);
        assert_eq!(
            names(b"d/doc/", b"d/dpv0"),
            ["esign_d_doc", "esign_kv", "esign_d_dpimg", "esign_d_dpv"]
        );
        assert_eq!(names(b"d/", b"d/dcd/"), ["esign_kv", "esign_d_bref"]);
    }

    /// The engine's per-document families (`esign_engine::keyspace`, `own_table`) are
    /// exactly the ones with a table here: a new one fails this test until a schema
    /// step gives it its table, instead of landing in `esign_kv` unnoticed.
    #[test]
    fn every_per_document_family_of_the_engine_has_its_table() {
        let engine: BTreeSet<&str> = esign_engine::keyspace::FAMILIES
            .iter()
            .filter(|f| f.own_table)
            .map(|f| f.prefix)
            .collect();
        let here: BTreeSet<&str> = FAMILIES.iter().map(|(family, _)| *family).collect();
        assert_eq!(
            here, engine,
            "postgres FAMILIES against the engine's per-document families (engine/src/base/keyspace.rs)"
        );
    }

    #[test]
    fn schema_step_2_creates_and_fills_every_family_s_table() {
        let step = MIGRATIONS[1];
        for (family, table) in FAMILIES {
            assert_eq!(table, format!("esign_d_{}", family.replace('-', "_")));
            assert!(
                step.contains(&format!("CREATE TABLE IF NOT EXISTS {table} "))
                    && step.contains(&format!("INSERT INTO {table} SELECT"))
                    && step.contains(&format!("convert_to('d/{family}/', 'UTF8')")),
                "{family}"
            );
        }
        assert_eq!(step.matches("CREATE TABLE").count(), FAMILIES.len());
    }
}
