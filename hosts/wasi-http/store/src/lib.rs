//! The engine's imports over what a standard WebAssembly runtime offers, for serving the
//! engine with `wasmtime serve` (see `hosts/wasi-http/wit/wasi-http.wit`).
//!
//! # Storage
//!
//! With a preopened directory (`wasmtime serve --dir DIR::/data`, or the guest path in
//! `ESIGN_WASI_DATA`), the state is durable and shared by every request:
//!
//! - `v/{version}`: the whole key-value state and the job queue after each commit, one
//!   postcard file per version. A call reads the highest version; its commit writes
//!   version + 1 by hard-linking a finished temporary file to that name, which fails
//!   when another request committed that version first (then nothing is written and the
//!   adapter answers 503). The four newest versions are kept whole; an older one is
//!   emptied, not removed, so that its name stays taken: a call that read a version
//!   several commits ago (a slow request on a busy host) then fails to link its commit
//!   instead of publishing a version below the newest, which no later call would read
//!   (a commit answered 200 and lost). The empty names go once 1 000 newer versions
//!   exist, far more commits than can pass during one request.
//! - `b/{id}`: blobs, written when the engine stores them and deleted after the commit
//!   that deletes them. A blob written by a call that does not commit stays behind.
//!
//! Without one, the state lives in memory for one request: each request starts empty.
//!
//! # The formats component's imports
//!
//! The file work of due jobs is the formats component's; this component gives it what
//! it imports: the blobs (as the engine's, written at once and committed with the job's
//! call), the sealing key, and answers for what this host cannot do (downloads, Word
//! conversion, a time stamping authority). The key is `signing/key.pem` and
//! `signing/cert.pem` in the data directory, else the PEM text of `ESIGN_SIGNING_KEY`
//! and `ESIGN_SIGNING_CERT`, else generated into the data directory at first use (a P-256
//! key and a self-signed certificate, as the native host makes them). `host.verify-pdf`
//! checks PDFs with the same code (`esign_formats::seal`).
//!
//! # The recipient link key
//!
//! `settings.link-key`, which the engine derives recipients' links from (the state
//! keeps only a nonce per link, so a copy of `v/` opens no signing link): the text of
//! `ESIGN_LINK_KEY`, else `signing/link.key` in the data directory, generated there at
//! first use (64 hex digits of 32 random bytes), as the native host keeps it. In memory
//! mode a key lives as long as the instance, like the state.
//!
//! # What this host does not do
//!
//! It sends no mail, SMS or webhooks (it prints mail and SMS to stderr, where `wasmtime
//! serve` logs them), converts no Word files, timestamps no seals, has no eID provider
//! and makes no outbound requests. Jobs run one per incoming request.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

wit_bindgen::generate!({
    path: ["../../../wit", "../../../wit/formats", "../wit"],
    world: "esign:wasi-http/store",
    additional_derives: [serde::Serialize, serde::Deserialize],
    generate_all,
});

use esign_formats::seal::cms::DigestSigner;
use esign_formats::seal::keys::{LocalKey, generate};
use exports::esign::engine::types::{
    BlobInfo, EidIdentity, Job, JobOutcome, PdfCheck, Settings, WorkFailure, WorkOrder,
};
use exports::esign::engine::{effects, files, host, store, types};
use exports::esign::formats::{blobs, convert, download, log, signing, timestamping};
use exports::esign::wasi_http::calls;

struct Component;

// The check of a signed PDF (`esign_formats::seal::check`, `esign-work`'s `PdfCheck`) as
// the WIT's, and the other work types both ways.
esign_work::convert_wit!(types);
export!(Component);

/// Everything a commit writes.
#[derive(Serialize, Deserialize, Default, Clone)]
struct State {
    kv: BTreeMap<Vec<u8>, Vec<u8>>,
    jobs: BTreeMap<String, StoredJob>,
}

/// A scheduled job and its work order.
#[derive(Serialize, Deserialize, Clone)]
struct StoredJob {
    kind: String,
    payload: Vec<u8>,
    run_at_ms: u64,
    attempt: u32,
    work: Option<WorkOrder>,
}

/// The open transaction: a copy of the state it started from, changed in place.
struct Txn {
    /// The version read; 0 when there was none.
    base: u64,
    state: State,
    dirty: bool,
    deleted_blobs: Vec<String>,
    /// Lines printed once the call commits (mail, SMS, dropped webhooks, dead jobs).
    log: Vec<String>,
}

/// Memory mode: the committed state (none before the first commit) and the blobs.
type Memory = (Option<State>, BTreeMap<String, Vec<u8>>);

thread_local! {
    static TXN: RefCell<Option<Txn>> = const { RefCell::new(None) };
    /// Memory mode: what this request committed.
    static MEMORY: RefCell<Memory> = const { RefCell::new((None, BTreeMap::new())) };
}

fn with_txn<R>(f: impl FnOnce(&mut Txn) -> R) -> R {
    TXN.with(|t| {
        let mut t = t.borrow_mut();
        // An import called outside `begin`/`commit` is a bug of the adapter.
        f(t.as_mut().expect("engine call outside a transaction"))
    })
}

/// The preopened data directory, when the runtime gave one.
fn root() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var("ESIGN_WASI_DATA").unwrap_or_else(|_| "/data".into()));
    dir.is_dir().then_some(dir)
}

/// The highest committed version in `root`, 0 when there is none.
fn latest(root: &Path) -> std::io::Result<u64> {
    let dir = match std::fs::read_dir(root.join("v")) {
        Ok(d) => d,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut max = 0;
    for entry in dir {
        let entry = match entry {
            Ok(entry) => entry,
            // A version pruned by a concurrent commit while the directory was listed.
            Err(e) if e.kind() == ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        if let Some(v) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u64>().ok())
        {
            max = max.max(v);
        }
    }
    Ok(max)
}

fn version_path(root: &Path, v: u64) -> PathBuf {
    root.join("v").join(format!("{v:020}"))
}

/// The latest committed state and its version.
fn load() -> Result<(u64, State), String> {
    let Some(root) = root() else {
        return Ok(MEMORY.with(|m| (0, m.borrow().0.clone().unwrap_or_default())));
    };
    // A version can be pruned between listing and reading it: read again.
    for _ in 0..8 {
        let v = latest(&root).map_err(|e| format!("listing {}: {e}", root.display()))?;
        if v == 0 {
            return Ok((0, State::default()));
        }
        match std::fs::read(version_path(&root, v)) {
            // Emptied by a commit since the listing: a newer version exists.
            Ok(bytes) if bytes.is_empty() => continue,
            Ok(bytes) => {
                let state = postcard::from_bytes(&bytes)
                    .map_err(|e| format!("version {v} is unreadable: {e}"))?;
                return Ok((v, state));
            }
            Err(e) if e.kind() == ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("reading version {v}: {e}")),
        }
    }
    Err("the data directory changes faster than it can be read".into())
}

/// How many versions back a version's name stays taken after its content is gone.
const RESERVED: u64 = 1000;

/// Writes `state` as version `base + 1`; false when that version exists already.
fn publish(root: &Path, base: u64, state: &State) -> Result<bool, String> {
    let bytes = postcard::to_stdvec(state).map_err(|e| e.to_string())?;
    for dir in ["v", "tmp"] {
        std::fs::create_dir_all(root.join(dir)).map_err(|e| format!("creating {dir}/: {e}"))?;
    }
    let tmp = root.join("tmp").join(random_id());
    std::fs::write(&tmp, &bytes).map_err(|e| format!("writing {}: {e}", tmp.display()))?;
    let linked = std::fs::hard_link(&tmp, version_path(root, base + 1));
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            // Four versions stay whole; older names stay taken (see the module's
            // documentation) until 1 000 newer versions exist.
            if base >= 4 {
                let _ = std::fs::write(version_path(root, base - 3), []);
            }
            if base >= RESERVED {
                let _ = std::fs::remove_file(version_path(root, base - RESERVED));
            }
            Ok(true)
        }
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(format!("publishing version {}: {e}", base + 1)),
    }
}

fn random_id() -> String {
    let mut b = [0u8; 12];
    getrandom::fill(&mut b).expect("WASI randomness");
    hex(&b)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|x| format!("{x:02x}")).collect()
}

/// Where blob `id` lives: only for the lower-case hex ids `files.put` makes, so that no
/// id names a path outside `b/`.
fn blob_path(root: &Path, id: &str) -> Option<PathBuf> {
    let ours = !id.is_empty() && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    ours.then(|| root.join("b").join(id))
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// An operator's override of a policy setting, from the environment; `None` (unset or
/// not a number) takes the engine's default (`esign:engine` 0.5.0, `settings`).
fn env_number<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

impl calls::Guest for Component {
    fn begin() -> Result<(), String> {
        let (base, state) = load()?;
        TXN.with(|t| {
            *t.borrow_mut() = Some(Txn {
                base,
                state,
                dirty: false,
                deleted_blobs: Vec::new(),
                log: Vec::new(),
            })
        });
        Ok(())
    }

    fn commit() -> Result<bool, String> {
        let Some(txn) = TXN.with(|t| t.borrow_mut().take()) else {
            return Err("no open transaction".into());
        };
        if txn.dirty {
            match root() {
                Some(root) => {
                    if !publish(&root, txn.base, &txn.state)? {
                        return Ok(false);
                    }
                    for path in txn
                        .deleted_blobs
                        .iter()
                        .filter_map(|id| blob_path(&root, id))
                    {
                        let _ = std::fs::remove_file(path);
                    }
                }
                None => MEMORY.with(|m| {
                    let mut m = m.borrow_mut();
                    m.0 = Some(txn.state);
                    for id in &txn.deleted_blobs {
                        m.1.remove(id);
                    }
                }),
            }
        }
        for line in txn.log {
            eprintln!("{line}");
        }
        Ok(true)
    }

    fn is_empty() -> bool {
        match root() {
            Some(root) => latest(&root).is_ok_and(|v| v == 0),
            None => MEMORY.with(|m| m.borrow().0.is_none()),
        }
    }

    fn due_job() -> Option<(Job, Option<WorkOrder>)> {
        let now = now_ms();
        with_txn(|t| {
            let (id, job) = t
                .state
                .jobs
                .iter()
                .filter(|(_, j)| j.run_at_ms <= now)
                .min_by_key(|(_, j)| j.run_at_ms)?;
            let due = Job {
                id: id.clone(),
                kind: job.kind.clone(),
                payload: job.payload.clone(),
                attempt: job.attempt,
                outcome: None,
            };
            Some((due, job.work.clone()))
        })
    }

    fn finish_job(id: String, outcome: JobOutcome) {
        with_txn(|t| {
            t.dirty = true;
            match outcome {
                JobOutcome::Done => {
                    t.state.jobs.remove(&id);
                }
                JobOutcome::RetryAt(at) => {
                    if let Some(job) = t.state.jobs.get_mut(&id) {
                        job.run_at_ms = at;
                        job.attempt += 1;
                    }
                }
                JobOutcome::Failed(reason) => {
                    if let Some(job) = t.state.jobs.remove(&id) {
                        t.log
                            .push(format!("job {} {id} failed: {reason}", job.kind));
                    }
                }
            }
        })
    }
}

impl store::Guest for Component {
    fn get(key: Vec<u8>) -> Option<Vec<u8>> {
        with_txn(|t| t.state.kv.get(&key).cloned())
    }

    fn put(key: Vec<u8>, value: Vec<u8>) {
        with_txn(|t| {
            t.dirty = true;
            t.state.kv.insert(key, value);
        })
    }

    fn delete(key: Vec<u8>) {
        with_txn(|t| {
            t.dirty |= t.state.kv.remove(&key).is_some();
        })
    }

    fn scan(start: Vec<u8>, end: Vec<u8>, limit: u32, reverse: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
        with_txn(|t| {
            if start >= end {
                return Vec::new();
            }
            let range = t.state.kv.range(start..end);
            let pair = |(k, v): (&Vec<u8>, &Vec<u8>)| (k.clone(), v.clone());
            if reverse {
                range.rev().take(limit as usize).map(pair).collect()
            } else {
                range.take(limit as usize).map(pair).collect()
            }
        })
    }
}

/// Writes a new blob: a file in the data directory (or memory), kept when the call
/// commits (a blob of a call that does not commit stays behind).
fn put_blob(data: &[u8]) -> Result<BlobInfo, String> {
    let id = random_id();
    let info = BlobInfo {
        id: id.clone(),
        size: data.len() as u64,
        sha256: hex(&Sha256::digest(data)),
    };
    match root() {
        Some(root) => {
            let path = blob_path(&root, &id).expect("a random id is a blob name");
            std::fs::create_dir_all(root.join("b")).map_err(|e| format!("creating b/: {e}"))?;
            std::fs::write(path, data).map_err(|e| format!("writing a blob: {e}"))?;
        }
        None => MEMORY.with(|m| {
            m.borrow_mut().1.insert(id.clone(), data.to_vec());
        }),
    }
    with_txn(|t| t.dirty = true);
    Ok(info)
}

/// A blob's bytes, unless the open transaction deleted it.
fn get_blob(id: &str) -> Option<Vec<u8>> {
    if with_txn(|t| t.deleted_blobs.iter().any(|d| d == id)) {
        return None;
    }
    match root() {
        Some(root) => std::fs::read(blob_path(&root, id)?).ok(),
        None => MEMORY.with(|m| m.borrow().1.get(id).cloned()),
    }
}

impl files::Guest for Component {
    fn put(data: Vec<u8>) -> Result<BlobInfo, String> {
        put_blob(&data)
    }

    /// The adapter passes every part whole, so no part is ever staged here.
    fn keep(id: String) -> Result<BlobInfo, String> {
        Err(format!("the request staged no file part {id}"))
    }

    fn get(id: String) -> Option<Vec<u8>> {
        get_blob(&id)
    }

    fn delete(id: String) {
        with_txn(|t| {
            t.dirty = true;
            t.deleted_blobs.push(id);
        })
    }
}

impl effects::Guest for Component {
    fn emit_event(event: effects::Event, deliveries: Vec<effects::Delivery>) {
        if !deliveries.is_empty() {
            with_txn(|t| {
                t.log.push(format!(
                    "webhook event {} {}: {} deliveries not sent (this host makes no outbound requests)",
                    event.kind,
                    event.id,
                    deliveries.len()
                ))
            });
        }
    }

    fn cancel_deliveries(_subscription_id: String) {}

    /// This host sends no webhooks: it holds none.
    fn pending_deliveries(
        _subscription_id: String,
        _target_url: String,
        _limit: u32,
    ) -> Vec<effects::PendingDelivery> {
        Vec::new()
    }

    fn schedule_job(job: effects::JobSpec) -> String {
        let id = random_id();
        let work = job.work;
        with_txn(|t| {
            t.dirty = true;
            t.state.jobs.insert(
                id.clone(),
                StoredJob {
                    kind: job.kind,
                    payload: job.payload,
                    run_at_ms: job.run_at_ms,
                    attempt: 1,
                    work,
                },
            );
        });
        id
    }

    fn send_mail(mail: effects::Mail) {
        with_txn(|t| {
            t.log.push(format!(
                "mail to {} (not sent: this host has no mail transport): {}\n{}",
                mail.to, mail.subject, mail.body
            ))
        })
    }

    fn send_sms(sms: effects::Sms) {
        with_txn(|t| {
            t.log.push(format!(
                "SMS to {} (not sent: this host has no SMS transport): {}",
                sms.to, sms.text
            ))
        })
    }
}

fn argon() -> Argon2<'static> {
    let params = Params::new(19 * 1024, 2, 1, None).expect("valid argon2 parameters");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

fn hash(password: &str) -> String {
    let mut random = [0u8; 16];
    getrandom::fill(&mut random).expect("WASI randomness");
    let salt = SaltString::encode_b64(&random).expect("16 bytes is a valid salt");
    argon()
        .hash_password(password.as_bytes(), &salt)
        .expect("argon2 hashing with valid parameters")
        .to_string()
}

impl host::Guest for Component {
    fn get_settings() -> Settings {
        Settings {
            token_ttl_secs: env_number("ESIGN_TOKEN_TTL_SECS"),
            login_max_failures: env_number("ESIGN_LOGIN_MAX_FAILURES"),
            login_lock_secs: env_number("ESIGN_LOGIN_LOCK_SECS"),
            token_min_interval_ms: env_number("ESIGN_TOKEN_MIN_INTERVAL_MS"),
            base_url: std::env::var("ESIGN_BASE_URL")
                .unwrap_or_else(|_| "http://127.0.0.1:8080".into()),
            can_convert_word: false,
            blob_responses: false,
            upload_ttl_secs: env_number("ESIGN_UPLOAD_TTL_SECS"),
            eid_provider: String::new(),
            signing_certificate: sealing_key()
                .map(|k| k.cert_pem.clone())
                .unwrap_or_default(),
            oauth_access_ttl_secs: env_number("ESIGN_OAUTH_ACCESS_TTL_SECS"),
            completion_attachment_max_bytes: env_number("ESIGN_COMPLETION_ATTACHMENT_MAX_BYTES"),
            completion_link_days: env_number("ESIGN_COMPLETION_LINK_DAYS"),
            mcp_test_user: String::new(),
            link_key: link_key(),
        }
    }

    fn hash_password(password: String) -> String {
        hash(&password)
    }

    fn verify_password(password: String, hash_str: String) -> bool {
        // An unknown account costs one hash too, like a wrong password.
        let dummy;
        let (parsed, real) = match PasswordHash::new(&hash_str) {
            Ok(p) => (p, true),
            Err(_) => {
                dummy = hash("esign dummy password");
                (
                    PasswordHash::new(&dummy).expect("a fresh hash parses"),
                    false,
                )
            }
        };
        let ok = argon()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok();
        ok && real
    }

    fn log_error(message: String) {
        eprintln!("engine error: {message}");
    }

    fn eid_start(_session: String, _return_url: String) -> Result<String, String> {
        Err("this host has no eID provider".into())
    }

    fn eid_finish(_session: String, _query: String) -> Result<EidIdentity, String> {
        Err("this host has no eID provider".into())
    }

    fn verify_pdf(data: Vec<u8>) -> PdfCheck {
        let own = sealing_key()
            .map(|k| k.certificate_sha256.clone())
            .unwrap_or_default();
        esign_formats::seal::check(&data, &own).into()
    }

    fn fetch_client_metadata(_url: String) -> Result<String, String> {
        Err("this host makes no outbound requests".into())
    }
}

/// The sealing key and its certificate, loaded once per instance.
struct SealingKey {
    key: LocalKey,
    cert_pem: String,
    certificate_sha256: String,
}

thread_local! {
    static SEALING_KEY: RefCell<Option<Result<std::rc::Rc<SealingKey>, String>>> =
        const { RefCell::new(None) };
}

thread_local! {
    static LINK_KEY: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The recipient link key (see the crate's documentation). Traps when a new key cannot
/// be kept: a key that changed with every start would break every link sent.
fn link_key() -> String {
    LINK_KEY.with(|k| {
        k.borrow_mut()
            .get_or_insert_with(|| load_link_key().unwrap_or_else(|e| panic!("{e}")))
            .clone()
    })
}

fn load_link_key() -> Result<String, String> {
    if let Ok(key) = std::env::var("ESIGN_LINK_KEY")
        && !key.trim().is_empty()
    {
        return Ok(key.trim().to_string());
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("WASI randomness: {e}"))?;
    let new = hex(&bytes);
    let Some(dir) = root().map(|r| r.join("signing")) else {
        return Ok(new); // memory mode
    };
    let file = dir.join("link.key");
    if let Ok(text) = std::fs::read_to_string(&file) {
        return Ok(text.trim().to_string());
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating signing/: {e}"))?;
    // Linked into place only where no file is: two first requests agree on one key.
    let tmp = dir.join(format!("link.key.tmp{}", hex(&bytes[..8])));
    std::fs::write(&tmp, format!("{new}\n"))
        .map_err(|e| format!("writing {}: {e}", tmp.display()))?;
    let linked = std::fs::hard_link(&tmp, &file);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => eprintln!("generated the recipient link key signing/link.key"),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("writing {}: {e}", file.display())),
    }
    std::fs::read_to_string(&file)
        .map(|t| t.trim().to_string())
        .map_err(|e| format!("reading {}: {e}", file.display()))
}

/// The sealing key: `signing/` in the data directory, else `ESIGN_SIGNING_KEY` and
/// `ESIGN_SIGNING_CERT` (PEM text), else a new one, written into the data directory
/// (each file through a temporary name, so a crash leaves none or all of it).
fn sealing_key() -> Result<std::rc::Rc<SealingKey>, String> {
    SEALING_KEY.with(|k| {
        k.borrow_mut()
            .get_or_insert_with(|| load_sealing_key().map(std::rc::Rc::new))
            .clone()
    })
}

fn load_sealing_key() -> Result<SealingKey, String> {
    let dir = root().map(|r| r.join("signing"));
    let files = dir
        .as_ref()
        .map(|d| (d.join("key.pem"), d.join("cert.pem")));
    let from_files = files.as_ref().and_then(|(k, c)| {
        Some((
            std::fs::read_to_string(k).ok()?,
            std::fs::read_to_string(c).ok()?,
        ))
    });
    let from_env = || {
        Some((
            std::env::var("ESIGN_SIGNING_KEY").ok()?,
            std::env::var("ESIGN_SIGNING_CERT").ok()?,
        ))
    };
    let (key_pem, cert_pem) = match from_files.or_else(from_env) {
        Some(pems) => pems,
        None => {
            let mut secret = [0u8; 32];
            getrandom::fill(&mut secret).map_err(|e| format!("WASI randomness: {e}"))?;
            let (key_pem, cert_pem) =
                generate(&secret, now_ms()).map_err(|e| format!("a new sealing key: {e:#}"))?;
            if let (Some(dir), Some((k, c))) = (&dir, &files) {
                std::fs::create_dir_all(dir).map_err(|e| format!("creating signing/: {e}"))?;
                for (path, text) in [(k, &key_pem), (c, &cert_pem)] {
                    let tmp = path.with_extension("tmp");
                    std::fs::write(&tmp, text)
                        .and_then(|()| std::fs::rename(&tmp, path))
                        .map_err(|e| format!("writing {}: {e}", path.display()))?;
                }
                eprintln!("generated a sealing key and a self-signed certificate in signing/");
            }
            (key_pem, cert_pem)
        }
    };
    let key =
        LocalKey::from_pem(&key_pem, &cert_pem).map_err(|e| format!("the sealing key: {e:#}"))?;
    let der = key.chain_der().map_err(|e| e.to_string())?;
    Ok(SealingKey {
        certificate_sha256: hex(&Sha256::digest(&der[0])),
        key,
        cert_pem,
    })
}

impl blobs::Guest for Component {
    fn get(id: String) -> Result<Option<Vec<u8>>, String> {
        Ok(get_blob(&id))
    }

    fn put(data: Vec<u8>) -> BlobInfo {
        // The formats component cannot take an error here; a full disk traps the job's
        // call, which rolls back and runs again later.
        put_blob(&data).unwrap_or_else(|e| panic!("{e}"))
    }
}

impl download::Guest for Component {
    fn fetch(_url: String) -> Result<Vec<u8>, String> {
        Err("this host makes no outbound requests".into())
    }
}

impl convert::Guest for Component {
    fn docx_to_pdf(_docx: Vec<u8>) -> Result<Vec<u8>, WorkFailure> {
        Err(WorkFailure {
            code: "conversion-unavailable".into(),
            message: "Word files cannot be converted here (esign served by a WebAssembly runtime)"
                .into(),
        })
    }
}

impl signing::Guest for Component {
    fn certificates() -> Result<Vec<Vec<u8>>, String> {
        sealing_key()?.key.chain_der().map_err(|e| e.to_string())
    }

    fn sign(digest: Vec<u8>) -> Result<Vec<u8>, String> {
        let digest: [u8; 32] = digest
            .try_into()
            .map_err(|_| "a digest is 32 bytes".to_string())?;
        sealing_key()?
            .key
            .sign_digest(&digest)
            .map_err(|e| format!("{e:#}"))
    }
}

impl timestamping::Guest for Component {
    fn exchange(_request: Vec<u8>) -> Result<Option<Vec<u8>>, String> {
        Ok(None)
    }
}

impl log::Guest for Component {
    fn warn(message: String) {
        eprintln!("warning: {message}");
    }
}
