//! The engine's interface: the request, response and job types (each mirrors a type of
//! `wit/esign.wit`) and [`Platform`], everything the engine needs from outside.

#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::work_orders::{BlobInfo, PdfCheck, WorkOrder, WorkOutcome};

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
    /// The part's bytes; only their first bytes ([`STAGED_HEAD`]) when `staged`.
    pub data: Vec<u8>,
    /// A file part the host kept out of the engine: the blob [`Platform::keep_staged`]
    /// stores it as. `None` when the whole part is in `data`.
    pub staged: Option<BlobInfo>,
}

/// The response header naming the blob a host sends as the body
/// ([`Settings::blob_responses`]).
pub const BLOB_HEADER: &str = "esign-blob";

/// At most how many first bytes of a staged part arrive in its `data`.
pub const STAGED_HEAD: usize = 1024;

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

/// Operator settings (mirrors `types.settings`), with the policy resolved
/// (`base::policy`: a host passes only what its operator overrides).
#[derive(Debug, Clone)]
pub struct Settings {
    pub token_ttl_secs: u64,
    pub login_max_failures: u32,
    pub login_lock_secs: u64,
    pub token_min_interval_ms: u64,
    pub base_url: String,
    /// Whether the host can convert Word files to PDF.
    pub can_convert_word: bool,
    /// Whether the host sends a download's blob itself (WIT `settings.blob-responses`,
    /// the header [`BLOB_HEADER`]).
    pub blob_responses: bool,
    /// How long an unused upload is kept (DESIGN.md §4: 48 h).
    pub upload_ttl_secs: u64,
    /// The eID provider the host offers; empty when none.
    pub eid_provider: String,
    /// The PEM certificate (chain) final PDFs are signed with.
    pub signing_certificate: String,
    /// Lifetime of an OAuth access token for `/mcp` (refresh tokens live 30 days).
    pub oauth_access_ttl_secs: u64,
    /// The largest sealed PDF a completion mail carries attached (`domain::completion`).
    pub completion_attachment_max_bytes: u64,
    /// How long the link of a completion mail works, in days.
    pub completion_link_days: u64,
    /// Tests only: `/mcp` without a token acts as this user (email); empty otherwise.
    pub mcp_test_user: String,
    /// The key recipient links are derived with (`domain::links`), kept by the host
    /// outside the store; its UTF-8 bytes are the HMAC key.
    pub link_key: String,
}

impl Default for Settings {
    /// The engine's policy defaults (`base::policy`) and no operator settings.
    fn default() -> Self {
        Settings::with_policy(crate::base::policy::Policy::default())
    }
}

impl Settings {
    /// The policy in force (`base::policy`, the defaults where the operator set
    /// nothing) and no other operator settings; a host adapter fills in the rest.
    pub fn with_policy(p: crate::base::policy::Policy) -> Self {
        Settings {
            token_ttl_secs: p.token_ttl_secs,
            login_max_failures: p.login_max_failures,
            login_lock_secs: p.login_lock_secs,
            token_min_interval_ms: p.token_min_interval_ms,
            base_url: "http://127.0.0.1:8080".into(),
            can_convert_word: false,
            blob_responses: false,
            upload_ttl_secs: p.upload_ttl_secs,
            eid_provider: String::new(),
            signing_certificate: String::new(),
            oauth_access_ttl_secs: p.oauth_access_ttl_secs,
            completion_attachment_max_bytes: p.completion_attachment_max_bytes,
            completion_link_days: p.completion_link_days,
            mcp_test_user: String::new(),
            link_key: String::new(),
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
    /// The same mail as HTML (in the entity's branding), sent beside `body` as its
    /// alternative; empty for plain text only.
    pub html: String,
    /// Files the host attaches, read from their blobs when it sends the mail.
    pub attachments: Vec<MailAttachment>,
}

/// A file attached to a mail (mirrors `effects.mail-attachment`).
#[derive(Debug, Clone, PartialEq)]
pub struct MailAttachment {
    pub name: String,
    pub content_type: String,
    pub blob: String,
}

/// A webhook delivery the host still holds (mirrors `effects.pending-delivery`).
#[derive(Debug, Clone, PartialEq)]
pub struct PendingDelivery {
    pub event_id: String,
    pub event: String,
    /// Attempts made so far (0: not tried yet).
    pub attempts: u32,
    /// Why the last attempt failed; empty before the first.
    pub last_error: String,
    pub queued_at_ms: u64,
    pub next_attempt_at_ms: u64,
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
    /// Stores the request's staged file part `id` ([`FormPart::staged`]) as its blob, in
    /// the call's transaction; `Err` when blob storage is unavailable or nothing was
    /// staged as `id`. `get_blob` reads a staged part's bytes before too.
    fn keep_staged(&mut self, id: &str) -> Result<BlobInfo, String>;
    fn get_blob(&mut self, id: &str) -> Option<Vec<u8>>;
    fn delete_blob(&mut self, id: &str);
    /// Records an event and queues its deliveries.
    fn emit_event(&mut self, event: Event, deliveries: Vec<Delivery>);
    /// Drops the queued deliveries of a subscription.
    fn cancel_deliveries(&mut self, subscription_id: &str);
    /// The deliveries of a subscription (to `target_url`) the host still holds, at most
    /// `limit`, the next due first.
    fn pending_deliveries(
        &mut self,
        subscription_id: &str,
        target_url: &str,
        limit: u32,
    ) -> Vec<PendingDelivery>;
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
    /// The engine minted `id` ([`crate::base::util::new_id`]) in this call: no stored key
    /// names it yet (`base::fresh` answers reads of such keys itself).
    fn minted(&mut self, _id: &str) {}
}
