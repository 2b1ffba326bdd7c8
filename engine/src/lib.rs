//! The esign domain core.
//!
//! This crate decides: routing, authentication, authorization, validation, state
//! changes, and which effects (events, jobs, mail) follow. It performs no I/O of its own.
//! Everything it needs from the world comes through [`Platform`], which the wasm
//! component (`components/engine`) implements with the WIT imports of `wit/esign.wit`
//! and which tests implement in memory ([`memory::MemoryPlatform`]).
//!
//! Entry points: [`handle`] answers one request; [`run_job`] runs one due job. Each is
//! meant to run inside one host transaction: all of its store writes and effects
//! commit together or not at all.
//!
//! The crate is `no_std` (with `alloc`), so the component needs no WASI beyond the clock
//! and randomness the host gives it.

#![cfg_attr(not(test), no_std)]
#![recursion_limit = "256"]

extern crate alloc;

/// What `std`'s prelude would bring, for the modules of this `no_std` crate.
#[allow(unused_imports)]
mod prelude {
    pub use alloc::borrow::ToOwned;
    pub use alloc::boxed::Box;
    pub use alloc::format;
    pub use alloc::string::{String, ToString};
    pub use alloc::vec;
    pub use alloc::vec::Vec;
}

use prelude::*;

mod admin;
mod agents;
mod auth;
mod docs;
mod hooks;
mod http;
pub mod memory;
mod model;
mod recipients;
pub mod router;
mod users;
mod util;
pub mod work;

/// The audit trail's hash chain (RFC 8785 canonical JSON, entry encoding), for tests and tools.
pub use docs::trail;
pub use http::ApiError;
/// RFC 3339 formatting and parsing of milliseconds since the epoch, as the API uses them.
pub use util::{iso8601, parse_time};
pub use work::*;

/// Who sent a request (mirrors `types.origin` in the WIT).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A client over HTTP: only `/v1/...` routes.
    Http,
    /// The local administrator's CLI: `/admin/...` routes.
    Admin,
}

/// One request (mirrors `types.request`).
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub query: String,
    /// Lower-case names.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Decoded `multipart/form-data` parts (then `body` is empty).
    pub parts: Vec<FormPart>,
    pub origin: Origin,
    pub remote_addr: String,
}

/// One part of a multipart body (mirrors `types.form-part`).
#[derive(Debug, Clone, PartialEq)]
pub struct FormPart {
    pub name: String,
    pub filename: Option<String>,
    /// Lower case, without parameters; empty when the part declared none.
    pub content_type: String,
    pub data: Vec<u8>,
}

/// One response (mirrors `types.response`).
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// A due job (mirrors `types.job`).
#[derive(Debug, Clone)]
pub struct Job {
    pub id: String,
    pub kind: String,
    pub payload: Vec<u8>,
    pub attempt: u32,
    /// The outcome of the job's work order, if it had one.
    pub outcome: Option<WorkOutcome>,
}

/// What became of a job (mirrors `types.job-outcome`).
#[derive(Debug, Clone, PartialEq)]
pub enum JobOutcome {
    Done,
    RetryAt(u64),
    Failed(String),
}

/// Operator settings (mirrors `types.settings`).
#[derive(Debug, Clone)]
pub struct Settings {
    pub token_ttl_secs: u64,
    pub login_max_failures: u32,
    pub login_lock_secs: u64,
    pub token_min_interval_ms: u64,
    pub base_url: String,
    /// Whether the host can convert Word files to PDF.
    pub can_convert_word: bool,
    /// How long an unused upload is kept (DESIGN.md §4: 48 h).
    pub upload_ttl_secs: u64,
    /// The eID provider the host offers; empty when none.
    pub eid_provider: String,
    /// The PEM certificate (chain) final PDFs are signed with.
    pub signing_certificate: String,
    /// Lifetime of an OAuth access token for `/mcp` (refresh tokens live 30 days).
    pub oauth_access_ttl_secs: u64,
    /// Tests only: `/mcp` without a token acts as this user (email); empty otherwise.
    pub mcp_test_user: String,
}

impl Default for Settings {
    /// The documented defaults: 60-day tokens, 5 failures lock for 15 minutes, one
    /// second between token issuances.
    fn default() -> Self {
        Settings {
            token_ttl_secs: 5_184_000,
            login_max_failures: 5,
            login_lock_secs: 900,
            token_min_interval_ms: 1000,
            base_url: "http://127.0.0.1:8080".into(),
            can_convert_word: false,
            upload_ttl_secs: 48 * 3600,
            eid_provider: String::new(),
            signing_certificate: String::new(),
            oauth_access_ttl_secs: 3600,
            mcp_test_user: String::new(),
        }
    }
}

/// A webhook event to record in the outbox (mirrors `effects.event`).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: String,
    pub kind: String,
    pub entity_id: String,
    pub user_id: String,
    pub payload: String,
}

/// One subscription's copy of an event (mirrors `effects.delivery`).
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub subscription_id: String,
    pub target_url: String,
    pub secret: String,
    pub body: String,
    pub entity_id: String,
}

/// A job to schedule (mirrors `effects.job-spec`).
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    pub kind: String,
    pub payload: Vec<u8>,
    pub run_at_ms: u64,
    /// Host work to do before the job runs.
    pub work: Option<WorkOrder>,
    /// Whose work it is: the entity id for a job with `work`, empty otherwise (the
    /// host bounds work in flight per scope).
    pub scope: String,
}

/// An email to send (mirrors `effects.mail`).
#[derive(Debug, Clone, PartialEq)]
pub struct Mail {
    pub to: String,
    pub subject: String,
    pub body: String,
    /// What the mail is about (`recipient:{document}:{recipient}`), for bounces; or empty.
    pub tag: String,
}

/// A text message to send (mirrors `effects.sms`).
#[derive(Debug, Clone, PartialEq)]
pub struct Sms {
    pub to: String,
    pub text: String,
    pub tag: String,
}

/// Who an eID provider identified (mirrors `types.eid-identity`).
#[derive(Debug, Clone, PartialEq)]
pub struct EidIdentity {
    pub name: String,
    pub subject: String,
}

/// The job the host schedules when a tagged mail bounces for good (payload
/// `{tag}\n{reason}`).
pub const MAIL_BOUNCED_JOB: &str = "mail.bounced";

/// Everything the engine needs from outside. Store reads see the call's own writes;
/// nothing written is visible elsewhere until the host commits the call.
pub trait Platform {
    fn get(&mut self, key: &[u8]) -> Option<Vec<u8>>;
    fn put(&mut self, key: &[u8], value: &[u8]);
    fn delete(&mut self, key: &[u8]);
    /// At most `limit` entries with `start <= key < end`, ascending or, with
    /// `reverse`, descending.
    fn scan(
        &mut self,
        start: &[u8],
        end: &[u8],
        limit: u32,
        reverse: bool,
    ) -> Vec<(Vec<u8>, Vec<u8>)>;
    /// Stores a blob in the call's transaction; `Err` when blob storage is unavailable.
    fn put_blob(&mut self, data: &[u8]) -> Result<BlobInfo, String>;
    fn get_blob(&mut self, id: &str) -> Option<Vec<u8>>;
    fn delete_blob(&mut self, id: &str);
    /// Records an event and queues its deliveries.
    fn emit_event(&mut self, event: Event, deliveries: Vec<Delivery>);
    /// Drops the queued deliveries of a subscription.
    fn cancel_deliveries(&mut self, subscription_id: &str);
    fn schedule_job(&mut self, job: JobSpec) -> String;
    fn send_mail(&mut self, mail: Mail);
    fn send_sms(&mut self, sms: Sms);
    fn settings(&mut self) -> Settings;
    /// Starts an eID check; the URL to send the person's browser to.
    fn eid_start(&mut self, session: &str, return_url: &str) -> Result<String, String>;
    /// Finishes an eID check with the query the provider returned with.
    fn eid_finish(&mut self, session: &str, query: &str) -> Result<EidIdentity, String>;
    /// Checks the signature of a PDF.
    fn verify_pdf(&mut self, data: &[u8]) -> PdfCheck;
    /// Fetches an OAuth Client ID Metadata Document (an `https` URL) under the host's
    /// outbound rules; its text, or why not.
    fn fetch_client_metadata(&mut self, url: &str) -> Result<String, String>;
    fn hash_password(&mut self, password: &str) -> String;
    /// An empty `hash` must return false after doing the same work as a real check.
    fn verify_password(&mut self, password: &str, hash: &str) -> bool;
    /// Milliseconds since the Unix epoch.
    fn now_ms(&mut self) -> u64;
    fn fill_random(&mut self, buf: &mut [u8]);
}

/// Answers one request. Never panics on bad input: every client mistake becomes a 4xx
/// in the error shape `{"error", "description", "status"}`.
pub fn handle(p: &mut dyn Platform, req: &Request) -> Response {
    let mut cx = Cx::new(p);
    match router::route(&mut cx, req) {
        Ok(resp) => resp,
        Err(err) => err.into_response(),
    }
}

/// Checks the store's derived data against its records, for tests and simulations:
/// each document's index keys are exactly the ones its record gives, no index key is
/// left without its document, and every blob reference names a stored blob. Returns
/// what is wrong (empty when all holds).
#[doc(hidden)]
pub fn check_invariants(p: &mut dyn Platform) -> Vec<String> {
    docs::invariants(&mut Cx::new(p))
}

/// Runs one due job.
pub fn run_job(p: &mut dyn Platform, job: &Job) -> JobOutcome {
    let mut cx = Cx::new(p);
    match job.kind.as_str() {
        auth::PURGE_TOKEN_JOB => auth::purge_token(&mut cx, &job.payload),
        agents::FORGET_JOB => agents::forget(&mut cx, &job.payload),
        docs::download::FORGET_LINK_JOB => docs::download::forget_link(&mut cx, &job.payload),
        docs::create::IMPORT_JOB | docs::create::ARCHIVE_IMPORT_JOB => {
            docs::jobs::imported(&mut cx, job)
        }
        docs::lifecycle::RENDER_JOB => docs::jobs::rendered(&mut cx, job),
        docs::lifecycle::SCHEDULED_SEND_JOB => docs::jobs::scheduled_send(&mut cx, job),
        docs::lifecycle::EXPIRE_JOB => docs::jobs::expire(&mut cx, job),
        docs::lifecycle::ERASE_JOB => docs::jobs::erase(&mut cx, job),
        docs::lifecycle::REMIND_JOB => docs::jobs::remind_job(&mut cx, job),
        docs::uploads::EXPIRE_JOB => docs::uploads::expire(&mut cx, job),
        docs::uploads::FETCH_JOB => docs::uploads::fetched(&mut cx, job),
        docs::templates::IMPORT_JOB => docs::templates::imported(&mut cx, job),
        MAIL_BOUNCED_JOB => docs::jobs::bounced(&mut cx, job),
        hooks::DEAD_JOB => hooks::dead(&mut cx, job),
        hooks::GONE_JOB => hooks::gone(&mut cx, job),
        other => JobOutcome::Failed(format!("unknown job kind {other:?}")),
    }
}

/// The per-call context: the platform plus values read once per call.
pub(crate) struct Cx<'a> {
    pub p: &'a mut dyn Platform,
    now: Option<u64>,
    settings: Option<Settings>,
    /// Inside an MCP tool call: who the agent's grant acts for (checked when the call
    /// began), which [`auth::authenticate`] answers instead of reading a bearer token.
    pub agent: Option<auth::Principal>,
}

impl<'a> Cx<'a> {
    fn new(p: &'a mut dyn Platform) -> Self {
        Cx {
            p,
            now: None,
            settings: None,
            agent: None,
        }
    }

    /// The call's time, read once so that one call sees one instant.
    pub fn now(&mut self) -> u64 {
        *self.now.get_or_insert_with(|| self.p.now_ms())
    }

    pub fn settings(&mut self) -> &Settings {
        if self.settings.is_none() {
            self.settings = Some(self.p.settings());
        }
        self.settings.as_ref().unwrap()
    }
}
