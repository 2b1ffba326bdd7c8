//! `esign serve`: the options, and the process that serves: store, engine, workers,
//! the HTTP front, and the first-run bootstrap.

use crate::admin_channel::{self, admin_call, admin_request};
use crate::bindings::Settings;
use crate::calls::Dispatcher;
use crate::cli::engine::{EngineArgs, open_on, open_store};
use crate::{
    eid, evidence, file_work, health, job_runner, mail, metrics, outbound, runtime, sandbox,
    server, sms, webhooks,
};
use anyhow::Context;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Address to listen on; port 0 picks a free port (the chosen one is printed).
    #[arg(long, env = "ESIGN_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// TLS certificate chain (PEM). With --tls-key, serves HTTPS.
    #[arg(long, env = "ESIGN_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    #[arg(long, env = "ESIGN_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Allow plain HTTP on a non-loopback address because a TLS-terminating proxy is in front.
    #[arg(long, env = "ESIGN_BEHIND_PROXY")]
    pub behind_proxy: bool,
    /// Public base URL used in links [default: derived from --listen].
    #[arg(long, env = "ESIGN_BASE_URL")]
    pub base_url: Option<String>,
    /// Largest accepted request body.
    #[arg(long, env = "ESIGN_MAX_BODY_BYTES", default_value_t = 25 << 20)]
    pub max_body_bytes: usize,
    /// Engine calls that may run at once.
    #[arg(long, env = "ESIGN_MAX_CONCURRENT_CALLS", default_value_t = 64)]
    pub max_concurrent_calls: u32,
    /// Requests with a body over 1 MiB read and handled at once; more wait before their
    /// body is read.
    #[arg(long, env = "ESIGN_MAX_LARGE_BODIES", default_value_t = 16)]
    pub max_large_bodies: usize,
    /// Open client connections at most; more wait in the listen backlog until one closes.
    #[arg(long, env = "ESIGN_MAX_CONNECTIONS", default_value_t = 4096)]
    pub max_connections: usize,
    /// Seconds a client has for each of: the TLS handshake, a request's headers, and its
    /// body (a body not complete by then gets 408).
    #[arg(long, env = "ESIGN_READ_TIMEOUT_SECS", default_value_t = 30)]
    pub read_timeout_secs: u64,
    #[arg(long, env = "ESIGN_TOKEN_TTL_SECS", help = engine_default("Lifetime of access tokens, in seconds"))]
    pub token_ttl_secs: Option<u64>,
    #[arg(long, env = "ESIGN_LOGIN_MAX_FAILURES", help = engine_default("Failed logins in a row that lock an account"))]
    pub login_max_failures: Option<u32>,
    #[arg(long, env = "ESIGN_LOGIN_LOCK_SECS", help = engine_default("How long a locked account stays locked, in seconds"))]
    pub login_lock_secs: Option<u64>,
    #[arg(long, env = "ESIGN_TOKEN_MIN_INTERVAL_MS", help = engine_default("Minimum time between two tokens for one user, in milliseconds (429 below it)"))]
    pub token_min_interval_ms: Option<u64>,
    #[arg(long, env = "ESIGN_OAUTH_ACCESS_TTL_SECS", help = engine_default("Lifetime of an OAuth access token for /mcp, in seconds (agents renew it with their refresh token, which lives 30 days)"))]
    pub oauth_access_ttl_secs: Option<u64>,
    #[arg(long, env = "ESIGN_COMPLETION_ATTACHMENT_MAX_BYTES", help = engine_default("The largest signed PDF the completion mail to every party carries attached, in bytes; a larger one goes as a link"))]
    pub completion_attachment_max_bytes: Option<u64>,
    #[arg(long, env = "ESIGN_COMPLETION_LINK_DAYS", help = engine_default("How long the link in a completion mail works, in days"))]
    pub completion_link_days: Option<u64>,
    /// Tests only: /mcp requests without a token act as this user (an email), so that
    /// protocol test suites without OAuth can run. Never use it on a real server.
    #[arg(long, hide = true)]
    pub test_mcp_user: Option<String>,
    /// Folder that outgoing mail is written to, one .eml file each [default: <data-dir>/mail].
    #[arg(long, env = "ESIGN_MAIL_DIR")]
    pub mail_dir: Option<PathBuf>,
    /// Send mail over SMTP instead of writing it to --mail-dir, e.g.
    /// `smtps://user:pass@smtp.example.com` or `smtp://host:587?tls=required`.
    #[arg(long, env = "ESIGN_SMTP_URL")]
    pub smtp_url: Option<String>,
    /// Sender of outgoing mail.
    #[arg(
        long,
        env = "ESIGN_MAIL_FROM",
        default_value = "esign <no-reply@esign.local>"
    )]
    pub mail_from: String,
    /// Where text messages are written (one file each) when no SMS gateway is given
    /// [default: <data-dir>/sms].
    #[arg(long, env = "ESIGN_SMS_DIR")]
    pub sms_dir: Option<PathBuf>,
    /// Send text messages through this HTTP gateway instead: a JSON POST `{"to", "text"}`.
    #[arg(long, env = "ESIGN_SMS_GATEWAY_URL")]
    pub sms_gateway_url: Option<String>,
    /// Bearer token for the SMS gateway.
    #[arg(long, env = "ESIGN_SMS_GATEWAY_TOKEN")]
    pub sms_gateway_token: Option<String>,
    /// The eID provider for identity checks (`test`: a stand-in for tests and demos
    /// only); without one, `verify_eid` is refused.
    #[arg(long, env = "ESIGN_EID_PROVIDER")]
    pub eid_provider: Option<String>,
    #[arg(long, env = "ESIGN_UPLOAD_TTL_SECS", help = engine_default("How long an unused upload is kept, in seconds"))]
    pub upload_ttl_secs: Option<u64>,
    /// LibreOffice binary for Word conversion [default: `soffice` or `libreoffice` on PATH].
    #[arg(long, env = "ESIGN_SOFFICE")]
    pub soffice: Option<String>,
    /// Longest a Word conversion may take, in seconds.
    #[arg(long, env = "ESIGN_CONVERT_TIMEOUT_SECS", default_value_t = 60)]
    pub convert_timeout_secs: u64,
    /// Pages an imported file may have; a longer one fails its import (`invalid-pdf`).
    #[arg(long, env = "ESIGN_MAX_PAGES", default_value_t = sandbox::DEFAULT_MAX_PAGES)]
    pub max_pages: usize,
    /// Memory one work order (an import, a render, a seal) may use, in MiB: a file
    /// needing more fails with that reason, and the server goes on.
    #[arg(long, env = "ESIGN_WORK_MEMORY_MB", default_value_t = sandbox::DEFAULT_MEMORY_MB)]
    pub work_memory_mb: usize,
    /// Longest one work order may take, in seconds: past it the file fails with that
    /// reason.
    #[arg(long, env = "ESIGN_WORK_DEADLINE_SECS", default_value_t = sandbox::DEFAULT_DEADLINE_SECS)]
    pub work_deadline_secs: u64,
    /// Longest an outbound request (a file_url download) may take, in seconds.
    #[arg(long, env = "ESIGN_FETCH_TIMEOUT_SECS", default_value_t = 30)]
    pub fetch_timeout_secs: u64,
    /// Extra CA certificate (PEM) trusted for outbound HTTPS, beside the system roots.
    #[arg(long, env = "ESIGN_OUTBOUND_CA_FILE", alias = "webhook-ca-file")]
    pub outbound_ca_file: Option<PathBuf>,
    /// Allow outbound requests to loopback, private and link-local addresses.
    #[arg(
        long,
        env = "ESIGN_OUTBOUND_ALLOW_PRIVATE",
        alias = "webhook-allow-private"
    )]
    pub outbound_allow_private: bool,
    /// Longest a webhook delivery attempt may take, in seconds.
    #[arg(long, env = "ESIGN_WEBHOOK_TIMEOUT_SECS", default_value_t = 15)]
    pub webhook_timeout_secs: u64,
    /// Delays between webhook retries, e.g. `5s,30s,2m,1h` [default: 14 retries over about
    /// three days]; after the last the delivery is a dead letter.
    #[arg(long, env = "ESIGN_WEBHOOK_RETRY_SCHEDULE")]
    pub webhook_retry_schedule: Option<String>,
    /// Webhook attempts in flight to one target at most.
    #[arg(long, env = "ESIGN_WEBHOOK_PER_TARGET", default_value_t = 16)]
    pub webhook_per_target: usize,
    /// Webhook attempts in flight in all.
    #[arg(long, env = "ESIGN_WEBHOOK_CONCURRENCY", default_value_t = 256)]
    pub webhook_concurrency: usize,
    /// Days the event journal keeps events.
    #[arg(long, env = "ESIGN_EVENT_RETENTION_DAYS", default_value_t = 7)]
    pub event_retention_days: u64,
    /// The key final PDFs are sealed with (PEM, P-256) [default: generated at first start
    /// into <data-dir>/signing/].
    #[arg(long, env = "ESIGN_SIGNING_KEY", requires = "signing_cert")]
    pub signing_key: Option<PathBuf>,
    /// Its certificate (PEM; a chain, signer first). Served at /v1/signing-certificate.
    #[arg(long, env = "ESIGN_SIGNING_CERT", requires = "signing_key")]
    pub signing_cert: Option<PathBuf>,
    /// Or a PKCS #12 file with the key and its certificate chain (instead of
    /// --signing-key and --signing-cert).
    #[arg(long, env = "ESIGN_SIGNING_P12", conflicts_with_all = ["signing_key", "signing_cert"])]
    pub signing_p12: Option<PathBuf>,
    /// The PKCS #12 file's password.
    #[arg(
        long,
        env = "ESIGN_SIGNING_P12_PASSWORD",
        default_value = "",
        hide_default_value = true
    )]
    pub signing_p12_password: String,
    /// An RFC 3161 time stamping authority: every seal then carries its timestamp, and a
    /// completed document waits (retrying) while the authority does not answer.
    #[arg(long, env = "ESIGN_TSA_URL")]
    pub tsa_url: Option<String>,
    /// Longest a time stamping request may take, in seconds.
    #[arg(long, env = "ESIGN_TSA_TIMEOUT_SECS", default_value_t = 10)]
    pub tsa_timeout_secs: u64,
    /// Serve Prometheus metrics at `http://ADDR/metrics` (off by default; keep it on a
    /// loopback or private address: it names routes, tenants' queues and targets).
    #[arg(long, env = "ESIGN_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,
    /// Honour `x-esign-test-fault` headers. For the test suite only.
    #[arg(long, env = "ESIGN_TEST_FAULTS", hide = true)]
    pub test_faults: bool,
    /// Serve requests only: no jobs, mail, SMS or webhook workers (the other hosts of
    /// a shared store do the work). For the test suite only.
    #[arg(long, env = "ESIGN_TEST_NO_WORKERS", hide = true)]
    pub test_no_workers: bool,
    /// On a shared store (--store): how often, in milliseconds, workers look for work
    /// other hosts queued. Wake-ups from the database start it at once; this is the
    /// fallback.
    #[arg(long, env = "ESIGN_SHARED_POLL_MS", default_value_t = 1000)]
    pub shared_poll_ms: u64,
}

/// The help of a policy flag: what it sets, and that the engine's default applies when
/// the flag is not given (the host passes only what the operator overrides; the figures
/// are in `engine/src/base/policy.rs` and docs/operating.md).
fn engine_default(what: &str) -> String {
    format!("{what} [default: the engine's, see docs/operating.md]")
}

pub fn serve(args: ServeArgs) -> anyhow::Result<()> {
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
    let soffice = file_work::find_soffice(args.soffice.as_deref());
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
    store.set_shared_poll(Duration::from_millis(args.shared_poll_ms));
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
    let link_key = runtime::link_key::load(
        &args.engine.data_dir,
        args.engine.link_key_file.as_deref(),
        &store,
    )?;
    let settings = Settings {
        link_key,
        signing_certificate: sealer.certificate_pem.clone(),
        oauth_access_ttl_secs: args.oauth_access_ttl_secs,
        completion_attachment_max_bytes: args.completion_attachment_max_bytes,
        completion_link_days: args.completion_link_days,
        mcp_test_user: args.test_mcp_user.clone().unwrap_or_default(),
        can_convert_word: soffice.is_some(),
        // The server sends a download's blob from storage (server.rs `send_blob`).
        blob_responses: true,
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
    let work = file_work::WorkContext {
        store: dispatcher.store().clone(),
        outbound,
        max_download_bytes: args.max_body_bytes,
        soffice,
        convert_timeout: Duration::from_secs(args.convert_timeout_secs),
        sealer,
        sandbox: std::sync::Arc::new(sandbox::Sandbox::new(
            runtime::EMBEDDED_FORMATS,
            Some(&args.engine.compile_cache_dir()),
            sandbox::Limits {
                memory_bytes: args.work_memory_mb.max(16) << 20,
                deadline: Duration::from_secs(args.work_deadline_secs.max(1)),
            },
        )?),
        max_pages: args.max_pages.max(1),
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
    let health = std::sync::Arc::new(health::Health::default());
    let metrics_listener = match args.metrics_listen {
        Some(addr) => {
            let _guard = rt.enter();
            let l = server::listen(addr).context("--metrics-listen")?;
            println!("metrics at http://{}/metrics", l.local_addr()?);
            Some(l)
        }
        None => None,
    };
    let front = server::FrontConfig {
        max_body_bytes: args.max_body_bytes,
        max_connections: args.max_connections.max(1),
        read_timeout: std::time::Duration::from_secs(args.read_timeout_secs.max(1)),
        large_bodies: std::sync::Arc::new(tokio::sync::Semaphore::new(
            args.max_large_bodies.max(1),
        )),
        test_faults: args.test_faults,
        eid_test,
        behind_proxy: args.behind_proxy,
        tls: tls.is_some(),
        health: health.clone(),
    };
    if args.test_faults {
        tracing::warn!("test faults are on: requests may ask for injected failures");
    }
    if let Some(user) = &args.test_mcp_user {
        tracing::warn!("/mcp without a token acts as {user}: tests only, never on a real server");
    }
    // Bound before the server says it listens: admin commands find it from then on.
    #[cfg(unix)]
    let admin_listener = {
        let _guard = rt.enter();
        match admin_channel::bind(&admin_channel::socket_path(&args.engine.data_dir)) {
            Ok(l) => Some(l),
            Err(e) => {
                tracing::warn!("no admin channel: {e:#}");
                None
            }
        }
    };
    println!("esign listening on {scheme}://{addr}");
    rt.block_on(async {
        #[cfg(unix)]
        if let Some(listener) = admin_listener {
            tokio::spawn(admin_channel::serve(
                listener,
                admin_channel::socket_path(&args.engine.data_dir),
                args.engine.data_dir.clone(),
                dispatcher.clone(),
                stop_rx.clone(),
            ));
        }
        if let Some(l) = metrics_listener {
            let store = dispatcher.store().clone();
            tokio::spawn(metrics::serve(l, store, stop_rx.clone()));
        }
        let mut workers = Vec::new();
        if !args.test_no_workers {
            dispatcher.listen_for_wakeups();
            workers.push(health.spawn_watched(
                "jobs",
                job_runner::run(dispatcher.clone(), work, stop_rx.clone()),
            ));
            workers.push(health.spawn_watched(
                "mail",
                mail::run(
                    dispatcher.clone(),
                    mail::Outbox::Mail,
                    transport,
                    stop_rx.clone(),
                ),
            ));
            workers.push(health.spawn_watched(
                "sms",
                mail::run(
                    dispatcher.clone(),
                    mail::Outbox::Sms,
                    sms_transport,
                    stop_rx.clone(),
                ),
            ));
            workers.push(health.spawn_watched(
                "webhooks",
                webhooks::run(dispatcher.clone(), webhook_client, webhook_config, stop_rx),
            ));
        }
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
        for worker in workers {
            let _ = worker.await;
        }
        anyhow::Ok(())
    })?;
    dispatcher.store().flush()?;
    // The channel's task may not have run its last turn before the runtime ended.
    let _ = std::fs::remove_file(admin_channel::socket_path(&args.engine.data_dir));
    tracing::info!("stopped");
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
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
pub fn bootstrap(d: &Dispatcher) -> anyhow::Result<()> {
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
