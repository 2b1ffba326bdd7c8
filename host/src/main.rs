//! `esign`: the e-signing service. `esign serve` runs the HTTP API; `esign admin ...`
//! manages entities, users and memberships in the same data directory.

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use esign::bindings::{Origin, Request, Settings};
use esign::calls::Dispatcher;
use esign::{
    eid, evidence, jobs, mail, outbound, passwords, runtime, server, sms, store, webhooks, work,
};
use runtime::{Faults, Runtime, Shared};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "esign",
    version,
    about = "Electronic proposals and contracts: the esign service"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API.
    Serve(Box<ServeArgs>),
    /// Manage entities, users and memberships (with the server stopped).
    Admin(AdminArgs),
    /// Check the signature of a sealed PDF: valid, covering the whole file, by which
    /// certificate, when, and for which document and audit trail head. Exits 0 only
    /// when all of it holds (and, with --cert, the signer is that certificate).
    Verify(VerifyArgs),
    /// The engine component this binary embeds.
    #[command(subcommand)]
    Engine(EngineCommand),
}

#[derive(Subcommand)]
enum EngineCommand {
    /// Write the embedded engine component (wasm32-wasip2, world `esign:engine/esign` of
    /// wit/esign.wit) to FILE, so that another host runs exactly this build. Prints its
    /// SHA-256, which `esign serve` logs for the engine it runs.
    Export {
        /// Where to write the component (replaced if it exists).
        file: PathBuf,
        /// Write instead the engine composed with `hosts/wasi-http` into one component
        /// that exports `wasi:http/incoming-handler`, for `wasmtime serve -Scli --dir
        /// DATA::/data FILE` (README, "Embedding the engine").
        #[arg(long)]
        wasi_http: bool,
    },
}

#[derive(Args)]
struct VerifyArgs {
    /// The PDF to check.
    file: PathBuf,
    /// The certificate (PEM, e.g. from GET /v1/signing-certificate) the file must be
    /// signed with.
    #[arg(long)]
    cert: Option<PathBuf>,
}

/// Where the data lives and which engine runs on it.
#[derive(Args, Clone)]
struct EngineArgs {
    /// Data directory (created when missing). Holds the sled database unless --store
    /// is given, the compile cache, and the mail and SMS folders.
    #[arg(long, env = "ESIGN_DATA_DIR", default_value = "./esign-data")]
    data_dir: PathBuf,
    /// Keep the data in PostgreSQL instead of sled in the data directory:
    /// postgres://user:password@host:port/database (created when missing; add
    /// ?sslmode=require or verify-full for TLS, &sslrootcert=FILE for a private CA).
    /// Several hosts may share one database.
    #[arg(long, env = "ESIGN_STORE")]
    store: Option<String>,
    /// Run this engine component instead of the embedded one.
    #[arg(long, env = "ESIGN_ENGINE")]
    engine: Option<PathBuf>,
    /// Where compiled engine code is cached [default: <data-dir>/cache].
    #[arg(long, env = "ESIGN_COMPILE_CACHE")]
    compile_cache: Option<PathBuf>,
}

#[derive(Args)]
struct ServeArgs {
    #[command(flatten)]
    engine: EngineArgs,
    /// Address to listen on; port 0 picks a free port (the chosen one is printed).
    #[arg(long, env = "ESIGN_LISTEN", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// TLS certificate chain (PEM). With --tls-key, serves HTTPS.
    #[arg(long, env = "ESIGN_TLS_CERT", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    #[arg(long, env = "ESIGN_TLS_KEY", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Allow plain HTTP on a non-loopback address because a TLS-terminating proxy is in front.
    #[arg(long, env = "ESIGN_BEHIND_PROXY")]
    behind_proxy: bool,
    /// Public base URL used in links [default: derived from --listen].
    #[arg(long, env = "ESIGN_BASE_URL")]
    base_url: Option<String>,
    /// Largest accepted request body.
    #[arg(long, env = "ESIGN_MAX_BODY_BYTES", default_value_t = 25 << 20)]
    max_body_bytes: usize,
    /// Engine calls that may run at once.
    #[arg(long, env = "ESIGN_MAX_CONCURRENT_CALLS", default_value_t = 64)]
    max_concurrent_calls: u32,
    /// Requests with a body over 1 MiB read and handled at once; more wait before their
    /// body is read.
    #[arg(long, env = "ESIGN_MAX_LARGE_BODIES", default_value_t = 16)]
    max_large_bodies: usize,
    /// Open client connections at most; more wait in the listen backlog until one closes.
    #[arg(long, env = "ESIGN_MAX_CONNECTIONS", default_value_t = 4096)]
    max_connections: usize,
    /// Seconds a client has for each of: the TLS handshake, a request's headers, and its
    /// body (a body not complete by then gets 408).
    #[arg(long, env = "ESIGN_READ_TIMEOUT_SECS", default_value_t = 30)]
    read_timeout_secs: u64,
    /// Lifetime of access tokens, in seconds.
    #[arg(long, env = "ESIGN_TOKEN_TTL_SECS", default_value_t = runtime::DEFAULT_TOKEN_TTL_SECS)]
    token_ttl_secs: u64,
    /// Failed logins in a row that lock an account.
    #[arg(long, env = "ESIGN_LOGIN_MAX_FAILURES", default_value_t = runtime::DEFAULT_LOGIN_MAX_FAILURES)]
    login_max_failures: u32,
    /// How long a locked account stays locked, in seconds.
    #[arg(long, env = "ESIGN_LOGIN_LOCK_SECS", default_value_t = runtime::DEFAULT_LOGIN_LOCK_SECS)]
    login_lock_secs: u64,
    /// Minimum time between two tokens for one user, in milliseconds (429 below it).
    #[arg(long, env = "ESIGN_TOKEN_MIN_INTERVAL_MS", default_value_t = runtime::DEFAULT_TOKEN_MIN_INTERVAL_MS)]
    token_min_interval_ms: u64,
    /// Lifetime of an OAuth access token for /mcp, in seconds (agents renew it with
    /// their refresh token, which lives 30 days).
    #[arg(long, env = "ESIGN_OAUTH_ACCESS_TTL_SECS", default_value_t = runtime::DEFAULT_OAUTH_ACCESS_TTL_SECS)]
    oauth_access_ttl_secs: u64,
    /// Tests only: /mcp requests without a token act as this user (an email), so that
    /// protocol test suites without OAuth can run. Never use it on a real server.
    #[arg(long, hide = true)]
    test_mcp_user: Option<String>,
    /// Folder that outgoing mail is written to, one .eml file each [default: <data-dir>/mail].
    #[arg(long, env = "ESIGN_MAIL_DIR")]
    mail_dir: Option<PathBuf>,
    /// Send mail over SMTP instead of writing it to --mail-dir, e.g.
    /// `smtps://user:pass@smtp.example.com` or `smtp://host:587?tls=required`.
    #[arg(long, env = "ESIGN_SMTP_URL")]
    smtp_url: Option<String>,
    /// Sender of outgoing mail.
    #[arg(
        long,
        env = "ESIGN_MAIL_FROM",
        default_value = "esign <no-reply@esign.local>"
    )]
    mail_from: String,
    /// Where text messages are written (one file each) when no SMS gateway is given
    /// [default: <data-dir>/sms].
    #[arg(long, env = "ESIGN_SMS_DIR")]
    sms_dir: Option<PathBuf>,
    /// Send text messages through this HTTP gateway instead: a JSON POST `{"to", "text"}`.
    #[arg(long, env = "ESIGN_SMS_GATEWAY_URL")]
    sms_gateway_url: Option<String>,
    /// Bearer token for the SMS gateway.
    #[arg(long, env = "ESIGN_SMS_GATEWAY_TOKEN")]
    sms_gateway_token: Option<String>,
    /// The eID provider for identity checks (`test`: a stand-in for tests and demos
    /// only); without one, `verify_eid` is refused.
    #[arg(long, env = "ESIGN_EID_PROVIDER")]
    eid_provider: Option<String>,
    /// How long an unused upload is kept, in seconds.
    #[arg(long, env = "ESIGN_UPLOAD_TTL_SECS", default_value_t = runtime::DEFAULT_UPLOAD_TTL_SECS)]
    upload_ttl_secs: u64,
    /// LibreOffice binary for Word conversion [default: `soffice` or `libreoffice` on PATH].
    #[arg(long, env = "ESIGN_SOFFICE")]
    soffice: Option<String>,
    /// Longest a Word conversion may take, in seconds.
    #[arg(long, env = "ESIGN_CONVERT_TIMEOUT_SECS", default_value_t = 60)]
    convert_timeout_secs: u64,
    /// Longest an outbound request (a file_url download) may take, in seconds.
    #[arg(long, env = "ESIGN_FETCH_TIMEOUT_SECS", default_value_t = 30)]
    fetch_timeout_secs: u64,
    /// Extra CA certificate (PEM) trusted for outbound HTTPS, beside the system roots.
    #[arg(long, env = "ESIGN_OUTBOUND_CA_FILE", alias = "webhook-ca-file")]
    outbound_ca_file: Option<PathBuf>,
    /// Allow outbound requests to loopback, private and link-local addresses.
    #[arg(
        long,
        env = "ESIGN_OUTBOUND_ALLOW_PRIVATE",
        alias = "webhook-allow-private"
    )]
    outbound_allow_private: bool,
    /// Longest a webhook delivery attempt may take, in seconds.
    #[arg(long, env = "ESIGN_WEBHOOK_TIMEOUT_SECS", default_value_t = 15)]
    webhook_timeout_secs: u64,
    /// Delays between webhook retries, e.g. `5s,30s,2m,1h` [default: 14 retries over about
    /// three days]; after the last the delivery is a dead letter.
    #[arg(long, env = "ESIGN_WEBHOOK_RETRY_SCHEDULE")]
    webhook_retry_schedule: Option<String>,
    /// Webhook attempts in flight to one target at most.
    #[arg(long, env = "ESIGN_WEBHOOK_PER_TARGET", default_value_t = 16)]
    webhook_per_target: usize,
    /// Webhook attempts in flight in all.
    #[arg(long, env = "ESIGN_WEBHOOK_CONCURRENCY", default_value_t = 256)]
    webhook_concurrency: usize,
    /// Days the event journal keeps events.
    #[arg(long, env = "ESIGN_EVENT_RETENTION_DAYS", default_value_t = 7)]
    event_retention_days: u64,
    /// The key final PDFs are sealed with (PEM, P-256) [default: generated at first start
    /// into <data-dir>/signing/].
    #[arg(long, env = "ESIGN_SIGNING_KEY", requires = "signing_cert")]
    signing_key: Option<PathBuf>,
    /// Its certificate (PEM; a chain, signer first). Served at /v1/signing-certificate.
    #[arg(long, env = "ESIGN_SIGNING_CERT", requires = "signing_key")]
    signing_cert: Option<PathBuf>,
    /// Or a PKCS #12 file with the key and its certificate chain (instead of
    /// --signing-key and --signing-cert).
    #[arg(long, env = "ESIGN_SIGNING_P12", conflicts_with_all = ["signing_key", "signing_cert"])]
    signing_p12: Option<PathBuf>,
    /// The PKCS #12 file's password.
    #[arg(
        long,
        env = "ESIGN_SIGNING_P12_PASSWORD",
        default_value = "",
        hide_default_value = true
    )]
    signing_p12_password: String,
    /// An RFC 3161 time stamping authority: every seal then carries its timestamp, and a
    /// completed document waits (retrying) while the authority does not answer.
    #[arg(long, env = "ESIGN_TSA_URL")]
    tsa_url: Option<String>,
    /// Longest a time stamping request may take, in seconds.
    #[arg(long, env = "ESIGN_TSA_TIMEOUT_SECS", default_value_t = 10)]
    tsa_timeout_secs: u64,
    /// Honour `x-esign-test-fault` headers. For the test suite only.
    #[arg(long, env = "ESIGN_TEST_FAULTS", hide = true)]
    test_faults: bool,
}

#[derive(Args)]
struct AdminArgs {
    #[command(flatten)]
    engine: EngineArgs,
    #[command(subcommand)]
    command: AdminCommand,
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Entities (accounts).
    #[command(subcommand)]
    Entity(EntityCommand),
    /// Users.
    #[command(subcommand)]
    User(UserCommand),
    /// Memberships of users in entities.
    #[command(subcommand)]
    Member(MemberCommand),
    /// Copies a stopped sled data directory into an empty PostgreSQL database, then
    /// checks the counts of rows per table.
    Migrate {
        /// The sled data directory (its server must be stopped).
        #[arg(long)]
        from: PathBuf,
        /// postgres://user:password@host/database (empty, or created when missing).
        #[arg(long)]
        to: String,
    },
}

#[derive(Args)]
struct EntityFlags {
    #[arg(long)]
    saml: Option<bool>,
    #[arg(long)]
    api_access: Option<bool>,
    #[arg(long)]
    subscription_active: Option<bool>,
    #[arg(long)]
    quarantined: Option<bool>,
    #[arg(long)]
    marked_for_deletion: Option<bool>,
    /// Only admins may delete documents.
    #[arg(long)]
    delete_admin_only: Option<bool>,
}

#[derive(Subcommand)]
enum EntityCommand {
    /// Add an entity (defaults: API access, active subscription, no SAML).
    Add {
        #[arg(long)]
        name: String,
        /// Parent entity id.
        #[arg(long)]
        parent: Option<String>,
        #[command(flatten)]
        flags: EntityFlags,
    },
    /// Change an entity's name or flags.
    Set {
        id: String,
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        flags: EntityFlags,
    },
    /// List entities.
    List,
}

#[derive(Subcommand)]
enum UserCommand {
    /// Add a user.
    Add {
        #[arg(long)]
        email: String,
        #[arg(long)]
        password: String,
        #[arg(long, default_value = "")]
        first_name: String,
        #[arg(long, default_value = "")]
        last_name: String,
        #[arg(long)]
        active: Option<bool>,
    },
    /// Change a user's password or activity.
    Set {
        id: String,
        #[arg(long)]
        password: Option<String>,
        #[arg(long)]
        active: Option<bool>,
    },
    /// List users.
    List,
}

#[derive(Subcommand)]
enum MemberCommand {
    /// Add (or replace) a user's membership of an entity.
    Add {
        #[arg(long)]
        user: String,
        #[arg(long)]
        entity: String,
        /// user, manager or admin.
        #[arg(long, default_value = "user")]
        role: String,
        /// pending, active or none.
        #[arg(long, default_value = "active")]
        profile: String,
        #[arg(long)]
        team: Option<String>,
    },
}

fn main() {
    let level = std::env::var("ESIGN_LOG")
        .ok()
        .and_then(|l| l.parse::<tracing::Level>().ok())
        .unwrap_or(tracing::Level::INFO);
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve(*args),
        Command::Admin(args) => admin(args),
        Command::Verify(args) => verify(args),
        Command::Engine(EngineCommand::Export { file, wasi_http }) => export_engine(
            &file,
            if wasi_http {
                runtime::EMBEDDED_WASI_HTTP
            } else {
                runtime::EMBEDDED_ENGINE
            },
        ),
    };
    if let Err(e) = result {
        eprintln!("esign: {e:#}");
        std::process::exit(1);
    }
}

/// `esign engine export [--wasi-http] FILE`: an embedded component, written whole or not
/// at all.
fn export_engine(file: &std::path::Path, component: &[u8]) -> anyhow::Result<()> {
    esign::fs::write_whole(file, component)
        .with_context(|| format!("writing the engine component to {}", file.display()))?;
    println!(
        "{}: {} bytes, sha256 {}",
        file.display(),
        component.len(),
        esign::ids::sha256_hex(component)
    );
    Ok(())
}

/// Database connections kept for the workers on a shared store (see `open_on`).
const WORKER_CONNECTIONS: usize = 12;

/// Opens the store `args` name: PostgreSQL with --store, else sled in the data dir.
fn open_store(args: &EngineArgs) -> anyhow::Result<std::sync::Arc<store::Store>> {
    let store = match &args.store {
        Some(url) => {
            let backend = store::postgres::PgBackend::connect(url)?;
            tracing::info!("data in PostgreSQL at {}", backend.describe);
            store::Store::new(backend)
        }
        None => store::Store::new(store::sled::SledBackend::open(&args.data_dir)?),
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
fn open_on(
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
    let cache = args
        .compile_cache
        .clone()
        .unwrap_or_else(|| args.data_dir.join("cache"));
    let shared = Shared {
        settings,
        passwords: passwords::Passwords::new(),
        eid,
        seal_certificate_sha256,
        outbound,
    };
    let sha = esign::ids::sha256_hex(&wasm);
    // Requests run at most `max_calls` instances at once, and jobs theirs beside them.
    let instances = max_calls + jobs::ENGINE_CONCURRENCY as u32;
    let runtime = Runtime::new(&wasm, Some(&cache), instances, shared)?;
    Ok((Dispatcher::new(runtime, store, max_calls as usize), sha))
}

/// A request from the local administrator.
fn admin_request(method: &str, path: &str, body: serde_json::Value) -> Request {
    Request {
        method: method.into(),
        path: path.into(),
        query: String::new(),
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.to_string().into_bytes(),
        parts: Vec::new(),
        origin: Origin::Admin,
        remote_addr: "local".into(),
    }
}

/// Runs an admin request; the JSON body on success, the engine's error otherwise.
fn admin_call(d: &Dispatcher, req: Request) -> anyhow::Result<serde_json::Value> {
    let resp = d.handle_blocking(&req, Faults::default());
    let body: serde_json::Value = serde_json::from_slice(&resp.body).unwrap_or_default();
    if resp.status >= 400 {
        anyhow::bail!(
            "{} ({})",
            body["description"].as_str().unwrap_or("failed"),
            resp.status
        );
    }
    Ok(body)
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(server::tls_acceptor(cert, key)?),
        _ => None,
    };
    if tls.is_none() && !args.listen.ip().is_loopback() && !args.behind_proxy {
        anyhow::bail!(
            "refusing to serve plain HTTP on {}: give --tls-cert and --tls-key, listen on a loopback address, or pass --behind-proxy when a TLS-terminating proxy is in front",
            args.listen
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let listener = {
        let _guard = rt.enter();
        server::listen(args.listen)?
    };
    let addr = listener.local_addr()?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let soffice = work::find_soffice(args.soffice.as_deref());
    match &soffice {
        Some(s) => tracing::info!("Word files are converted with {s}"),
        None => tracing::warn!(
            "LibreOffice (soffice) was not found: Word (.docx) files cannot be imported"
        ),
    }
    let base_url = args
        .base_url
        .clone()
        .unwrap_or_else(|| format!("{scheme}://{addr}"));
    let eid_test = match args.eid_provider.as_deref() {
        Some("test") => {
            tracing::warn!(
                "the test eID provider is on: anyone can claim any name (tests and demos only)"
            );
            Some(std::sync::Arc::new(eid::TestProvider::new(&base_url)))
        }
        _ => None,
    };
    let eid: Option<std::sync::Arc<dyn eid::Provider>> = match (&eid_test, &args.eid_provider) {
        (Some(t), _) => Some(t.clone()),
        (None, Some(name)) => Some(eid::provider(name, &base_url)?),
        (None, None) => None,
    };
    let given = match (&args.signing_p12, &args.signing_key, &args.signing_cert) {
        (Some(file), _, _) => evidence::keys::Given::Pkcs12 {
            file,
            password: &args.signing_p12_password,
        },
        (None, Some(key), Some(cert)) => evidence::keys::Given::Pem { key, cert },
        _ => evidence::keys::Given::None,
    };
    let store = open_store(&args.engine)?;
    let identity = match given {
        // Every host of a shared store seals with the same generated key.
        evidence::keys::Given::None if store.shared() => {
            evidence::keys::load_or_create_stored(&store)?
        }
        given => evidence::keys::load_given(&args.engine.data_dir, given)?,
    };
    let tsa = match &args.tsa_url {
        Some(url) => Some(evidence::tsa::Tsa::new(
            url,
            Duration::from_secs(args.tsa_timeout_secs),
        )?),
        None => None,
    };
    let source = identity.source.clone();
    let sealer = std::sync::Arc::new(evidence::Sealer::new(identity, tsa)?);
    tracing::info!(
        "final PDFs are sealed by \"{}\" (certificate sha256 {}, from {source}){}",
        sealer.subject,
        sealer.certificate_sha256,
        match &args.tsa_url {
            Some(u) => format!(", timestamped by {u}"),
            None => ", without timestamps (no --tsa-url)".into(),
        }
    );
    let settings = Settings {
        signing_certificate: sealer.certificate_pem.clone(),
        oauth_access_ttl_secs: args.oauth_access_ttl_secs,
        mcp_test_user: args.test_mcp_user.clone().unwrap_or_default(),
        can_convert_word: soffice.is_some(),
        upload_ttl_secs: args.upload_ttl_secs,
        token_ttl_secs: args.token_ttl_secs,
        login_max_failures: args.login_max_failures,
        login_lock_secs: args.login_lock_secs,
        token_min_interval_ms: args.token_min_interval_ms,
        base_url,
        eid_provider: eid
            .as_ref()
            .map(|p| p.name().to_string())
            .unwrap_or_default(),
    };
    let outbound_config = outbound::OutboundConfig {
        ca_file: args.outbound_ca_file.clone(),
        allow_private: args.outbound_allow_private,
    };
    let metadata_client = {
        let _guard = rt.enter();
        outbound::Outbound::new(&outbound_config, Duration::from_secs(5))?
    };
    let (dispatcher, engine_sha) = open_on(
        &args.engine,
        store,
        settings,
        eid,
        sealer.certificate_sha256.clone(),
        args.max_concurrent_calls,
        Some(metadata_client),
    )?;
    println!(
        "engine component: {} (sha256 {engine_sha})",
        args.engine
            .engine
            .as_ref()
            .map_or("embedded".to_string(), |p| p.display().to_string())
    );
    bootstrap(&dispatcher)?;
    let (outbound, webhook_client) = {
        let _guard = rt.enter();
        (
            outbound::Outbound::new(
                &outbound_config,
                Duration::from_secs(args.fetch_timeout_secs),
            )?,
            outbound::Outbound::new(
                &outbound_config,
                Duration::from_secs(args.webhook_timeout_secs),
            )?,
        )
    };
    let webhook_config = webhooks::WebhookConfig {
        schedule: match &args.webhook_retry_schedule {
            Some(text) => webhooks::parse_schedule(text)
                .map_err(|e| anyhow::anyhow!("--webhook-retry-schedule: {e}"))?,
            None => webhooks::default_schedule(),
        },
        per_target: args.webhook_per_target.max(1),
        concurrency: args.webhook_concurrency.max(1),
        event_retention: Duration::from_secs(args.event_retention_days * 86_400),
    };
    let work = work::WorkContext {
        store: dispatcher.store().clone(),
        outbound,
        max_download_bytes: args.max_body_bytes,
        soffice,
        convert_timeout: Duration::from_secs(args.convert_timeout_secs),
        sealer,
    };

    let mail_dir = args
        .mail_dir
        .clone()
        .unwrap_or_else(|| args.engine.data_dir.join("mail"));
    let transport: std::sync::Arc<dyn mail::Transport> = match &args.smtp_url {
        Some(url) => {
            let smtp = mail::smtp::SmtpMailer::new(url, &args.mail_from, Duration::from_secs(30))?;
            tracing::info!("outgoing mail goes over SMTP");
            std::sync::Arc::new(smtp)
        }
        None => {
            tracing::info!("outgoing mail goes to {}", mail_dir.display());
            std::sync::Arc::new(mail::folder::FolderTransport::new(
                mail_dir.clone(),
                args.mail_from.clone(),
            ))
        }
    };
    let sms_transport: std::sync::Arc<dyn mail::Transport> = match &args.sms_gateway_url {
        Some(url) => {
            let _guard = rt.enter();
            tracing::info!("text messages go to the SMS gateway");
            std::sync::Arc::new(sms::gateway::GatewayTransport::new(
                url,
                args.sms_gateway_token.clone(),
                args.outbound_ca_file.as_deref(),
                Duration::from_secs(15),
            )?)
        }
        None => {
            let dir = args
                .sms_dir
                .clone()
                .unwrap_or_else(|| args.engine.data_dir.join("sms"));
            tracing::info!("text messages go to {}", dir.display());
            std::sync::Arc::new(sms::folder::FolderTransport::new(dir))
        }
    };
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let front = server::FrontConfig {
        max_body_bytes: args.max_body_bytes,
        max_connections: args.max_connections.max(1),
        read_timeout: std::time::Duration::from_secs(args.read_timeout_secs.max(1)),
        large_bodies: std::sync::Arc::new(tokio::sync::Semaphore::new(
            args.max_large_bodies.max(1),
        )),
        test_faults: args.test_faults,
        eid_test,
    };
    if args.test_faults {
        tracing::warn!("test faults are on: requests may ask for injected failures");
    }
    if let Some(user) = &args.test_mcp_user {
        tracing::warn!("/mcp without a token acts as {user}: tests only, never on a real server");
    }
    println!("esign listening on {scheme}://{addr}");
    rt.block_on(async {
        let jobs = tokio::spawn(jobs::run(dispatcher.clone(), work, stop_rx.clone()));
        let mailer = tokio::spawn(mail::run(
            dispatcher.clone(),
            mail::Outbox::Mail,
            transport,
            stop_rx.clone(),
        ));
        let texter = tokio::spawn(mail::run(
            dispatcher.clone(),
            mail::Outbox::Sms,
            sms_transport,
            stop_rx.clone(),
        ));
        let deliverer = tokio::spawn(webhooks::run(
            dispatcher.clone(),
            webhook_client,
            webhook_config,
            stop_rx,
        ));
        let shutdown = async {
            shutdown_signal().await;
            tracing::info!("shutdown requested");
        };
        server::serve(
            listener,
            tls,
            dispatcher.clone(),
            front,
            shutdown,
            Duration::from_secs(10),
        )
        .await?;
        let _ = stop_tx.send(true);
        let _ = jobs.await;
        let _ = mailer.await;
        let _ = texter.await;
        let _ = deliverer.await;
        anyhow::Ok(())
    })?;
    dispatcher.store().flush()?;
    tracing::info!("stopped");
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("installing the SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

/// On a first start (no users yet), creates an entity and an admin from
/// `ESIGN_ADMIN_EMAIL` / `ESIGN_ADMIN_PASSWORD` / `ESIGN_ADMIN_ENTITY`, printing a
/// generated password once when none was given.
fn bootstrap(d: &Dispatcher) -> anyhow::Result<()> {
    let email = std::env::var("ESIGN_ADMIN_EMAIL").unwrap_or_else(|_| "admin@esign.local".into());
    let mut body = serde_json::json!({ "email": email });
    if let Ok(p) = std::env::var("ESIGN_ADMIN_PASSWORD") {
        body["password"] = p.into();
    }
    if let Ok(name) = std::env::var("ESIGN_ADMIN_ENTITY") {
        body["entity_name"] = name.into();
    }
    let result = admin_call(d, admin_request("POST", "/admin/bootstrap", body))
        .context("first-run setup")?;
    if result["created"] == true {
        println!(
            "first run: created entity {:?} ({}) and admin user {}",
            result["entity"]["name"].as_str().unwrap_or(""),
            result["entity"]["id"].as_str().unwrap_or(""),
            result["user"]["email"].as_str().unwrap_or(""),
        );
        if let Some(p) = result["generated_password"].as_str() {
            println!("admin password (shown only now): {p}");
        }
    }
    Ok(())
}

fn entity_flags(body: &mut serde_json::Value, f: &EntityFlags) {
    let pairs = [
        ("saml", f.saml),
        ("api_access", f.api_access),
        ("subscription_active", f.subscription_active),
        ("quarantined", f.quarantined),
        ("marked_for_deletion", f.marked_for_deletion),
        ("delete_admin_only", f.delete_admin_only),
    ];
    for (name, value) in pairs {
        if let Some(v) = value {
            body[name] = v.into();
        }
    }
}

fn admin(args: AdminArgs) -> anyhow::Result<()> {
    if let AdminCommand::Migrate { from, to } = &args.command {
        return esign::migrate::sled_to_postgres(from, to);
    }
    let (d, _) = open_on(
        &args.engine,
        open_store(&args.engine)?,
        runtime::default_settings(),
        None,
        String::new(),
        4,
        None,
    )?;
    use serde_json::json;
    let req = match args.command {
        AdminCommand::Entity(EntityCommand::Add {
            name,
            parent,
            flags,
        }) => {
            let mut body = json!({ "name": name, "parent_id": parent });
            entity_flags(&mut body, &flags);
            admin_request("POST", "/admin/entities", body)
        }
        AdminCommand::Entity(EntityCommand::Set { id, name, flags }) => {
            let mut body = json!({ "name": name });
            entity_flags(&mut body, &flags);
            admin_request("PATCH", &format!("/admin/entities/{id}"), body)
        }
        AdminCommand::Entity(EntityCommand::List) => {
            admin_request("GET", "/admin/entities", json!({}))
        }
        AdminCommand::User(UserCommand::Add {
            email,
            password,
            first_name,
            last_name,
            active,
        }) => admin_request(
            "POST",
            "/admin/users",
            json!({ "email": email, "password": password, "first_name": first_name,
                    "last_name": last_name, "active": active }),
        ),
        AdminCommand::User(UserCommand::Set {
            id,
            password,
            active,
        }) => admin_request(
            "PATCH",
            &format!("/admin/users/{id}"),
            json!({ "password": password, "active": active }),
        ),
        AdminCommand::User(UserCommand::List) => admin_request("GET", "/admin/users", json!({})),
        AdminCommand::Migrate { .. } => unreachable!("handled above"),
        AdminCommand::Member(MemberCommand::Add {
            user,
            entity,
            role,
            profile,
            team,
        }) => admin_request(
            "POST",
            "/admin/memberships",
            json!({ "user_id": user, "entity_id": entity, "role": role,
                    "profile": profile, "team_id": team }),
        ),
    };
    let body = admin_call(&d, req)?;
    println!("{}", serde_json::to_string_pretty(&body)?);
    d.store().flush()?;
    Ok(())
}

/// `esign verify FILE [--cert PEM]`.
fn verify(args: VerifyArgs) -> anyhow::Result<()> {
    let pdf =
        std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let wanted: Option<Vec<String>> = match &args.cert {
        None => None,
        Some(path) => {
            let pem = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            let chain = x509_cert::Certificate::load_pem_chain(&pem)
                .map_err(|e| anyhow::anyhow!("{}: not a PEM certificate: {e}", path.display()))?;
            Some(
                chain
                    .iter()
                    .map(|c| {
                        use der::Encode;
                        let der = c.to_der().unwrap_or_default();
                        esign::ids::sha256_hex(&der)
                    })
                    .collect(),
            )
        }
    };
    let c = evidence::check(&pdf, "");
    let by_cert = wanted.as_ref().map(|w| w.contains(&c.certificate_sha256));
    let yes = |b: bool| if b { "yes" } else { "NO" };
    println!("file:               {}", args.file.display());
    println!("signed:             {}", yes(c.signed));
    println!("signature valid:    {}", yes(c.valid));
    println!("covers whole file:  {}", yes(c.whole_file));
    println!("signer:             {}", c.signer);
    println!("certificate sha256: {}", c.certificate_sha256);
    if let Some(ok) = by_cert {
        println!("is --cert:          {}", yes(ok));
    }
    let when = |ms: Option<u64>| {
        ms.and_then(|m| chrono::DateTime::from_timestamp_millis(m as i64))
            .map(|t| t.to_rfc3339())
            .unwrap_or_else(|| "-".into())
    };
    println!("signed at:          {}", when(c.signed_at_ms));
    match c.timestamp_ms {
        Some(_) => println!(
            "timestamp:          {} (valid: {})",
            when(c.timestamp_ms),
            yes(c.timestamp_valid)
        ),
        None => println!("timestamp:          none"),
    }
    println!("document id:        {}", c.document_id);
    println!("audit trail head:   {}", c.log_head);
    for p in &c.problems {
        println!("problem:            {p}");
    }
    let ok = c.signed
        && c.valid
        && c.whole_file
        && by_cert.unwrap_or(true)
        && (c.timestamp_ms.is_none() || c.timestamp_valid);
    println!(
        "result:             {}",
        if ok { "VALID" } else { "NOT VALID" }
    );
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
