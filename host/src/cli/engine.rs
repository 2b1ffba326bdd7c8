//! What every command that opens the data shares: the engine and store options, opening
//! the store, and `esign engine export`.

use crate::bindings::Settings;
use crate::calls::Dispatcher;
use crate::{eid, job_runner, outbound, passwords, runtime, store};
use anyhow::Context;
use clap::Args;
use runtime::{Runtime, Shared};
use std::path::PathBuf;
use std::time::Duration;

/// Where the data lives and which engine runs on it.
#[derive(Args, Clone)]
pub struct EngineArgs {
    /// Data directory (created when missing). Holds the sled database unless --store
    /// is given, the compile cache, and the mail and SMS folders.
    #[arg(long, env = "ESIGN_DATA_DIR", default_value = "./esign-data")]
    pub data_dir: PathBuf,
    /// Keep the data in PostgreSQL instead of sled in the data directory:
    /// postgres://user:password@host:port/database (created when missing; add
    /// ?sslmode=require or verify-full for TLS, &sslrootcert=FILE for a private CA).
    /// Several hosts may share one database.
    #[arg(long, env = "ESIGN_STORE")]
    pub store: Option<String>,
    /// Run this engine component instead of the embedded one.
    #[arg(long, env = "ESIGN_ENGINE")]
    pub engine: Option<PathBuf>,
    /// Where compiled engine code is cached [default: <data-dir>/cache].
    #[arg(long, env = "ESIGN_COMPILE_CACHE")]
    pub compile_cache: Option<PathBuf>,
    /// The key recipient links are derived from, in a file (at least 32 characters;
    /// `openssl rand -hex 32`) [default: generated at first start into
    /// <data-dir>/signing/link.key; with --store, into the database, which a copy of the
    /// database then holds as well].
    #[arg(long, env = "ESIGN_LINK_KEY_FILE")]
    pub link_key_file: Option<PathBuf>,
    /// The embedded database's page cache, in MiB (sled; not used with --store).
    #[arg(long, env = "ESIGN_STORE_CACHE_MB", default_value_t = store::sled::DEFAULT_CACHE_MB)]
    pub store_cache_mb: u64,
}

impl EngineArgs {
    /// Where compiled components are cached: `--compile-cache` or `<data-dir>/cache`.
    pub fn compile_cache_dir(&self) -> PathBuf {
        self.compile_cache
            .clone()
            .unwrap_or_else(|| self.data_dir.join("cache"))
    }
}

/// `esign engine export [--wasi-http] FILE`: an embedded component, written whole or not
/// at all.
pub fn export_engine(file: &std::path::Path, component: &[u8]) -> anyhow::Result<()> {
    crate::fs::write_whole(file, component)
        .with_context(|| format!("writing the engine component to {}", file.display()))?;
    println!(
        "{}: {} bytes, sha256 {}",
        file.display(),
        component.len(),
        crate::ids::sha256_hex(component)
    );
    Ok(())
}

/// Database connections kept for the workers on a shared store (see `open_on`).
pub const WORKER_CONNECTIONS: usize = 12;

/// Opens the store `args` name: PostgreSQL with --store, else sled in the data dir.
pub fn open_store(args: &EngineArgs) -> anyhow::Result<std::sync::Arc<store::Store>> {
    crate::fs::restrict_data_dir(&args.data_dir)?;
    let store = match &args.store {
        Some(url) => {
            let backend = store::postgres::PgBackend::connect(url)?;
            tracing::info!("data in PostgreSQL at {}", backend.describe);
            store::Store::new(backend)
        }
        None => {
            crate::backup::unfinished_restore(&args.data_dir)?;
            store::Store::new(store::sled::SledBackend::open_with_cache(
                &args.data_dir,
                args.store_cache_mb,
            )?)
        }
    };
    if let Some(ms) = std::env::var("ESIGN_WORKER_LEASE_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        store.set_lease(Duration::from_millis(ms));
    }
    Ok(store)
}

/// Loads the engine over `store`; also returns the SHA-256 of the component.
pub fn open_on(
    args: &EngineArgs,
    store: std::sync::Arc<store::Store>,
    settings: Settings,
    eid: Option<std::sync::Arc<dyn eid::Provider>>,
    seal_certificate_sha256: String,
    max_calls: u32,
    outbound: Option<outbound::Outbound>,
) -> anyhow::Result<(Dispatcher, String)> {
    // On a shared store each call holds a database connection while it runs: leave
    // some of the pool to the workers (jobs, leases, deliveries).
    let max_calls = match store.connections() {
        Some(pool) => {
            let cap = pool.saturating_sub(WORKER_CONNECTIONS).max(1) as u32;
            if cap < max_calls {
                tracing::info!(
                    "at most {cap} calls at once: the database pool has {pool} connections, {WORKER_CONNECTIONS} kept for workers"
                );
            }
            max_calls.min(cap)
        }
        None => max_calls,
    };
    let wasm = match &args.engine {
        Some(path) => std::fs::read(path)
            .with_context(|| format!("reading the engine component {}", path.display()))?,
        None => runtime::EMBEDDED_ENGINE.to_vec(),
    };
    let cache = args.compile_cache_dir();
    let shared = Shared {
        settings,
        passwords: passwords::Passwords::new(),
        eid,
        seal_certificate_sha256,
        outbound,
    };
    let sha = crate::ids::sha256_hex(&wasm);
    // Requests run at most `max_calls` instances at once, and jobs theirs beside them.
    let instances = max_calls + job_runner::ENGINE_CONCURRENCY as u32;
    let runtime = Runtime::new(&wasm, Some(&cache), instances, shared)?;
    Ok((Dispatcher::new(runtime, store, max_calls as usize), sha))
}
