//! Outgoing mail: the engine's `effects.send-mail` rows (`m/`, written in the call's
//! transaction) delivered by a worker through a [`Transport`]. A row is deleted only
//! after its delivery succeeded, so a crash between the two sends the mail again rather
//! than never (at least once). Failures are retried with exponential backoff; after
//! [`MAX_ATTEMPTS`] the row moves to the dead-mail table (`y/`) and is logged.
//!
//! A permanent rejection (an SMTP 5xx: the address does not exist) is not retried: the
//! mail goes to the dead-mail table at once and, when it carries a tag, the engine's
//! `mail.bounced` job is scheduled in the same transaction so the recipient is marked
//! hard-bounced.
//!
//! Transports, one file each: [`folder::FolderTransport`] (the default: `.eml` files a
//! person can open) and [`smtp::SmtpMailer`] (lettre, when `--smtp-url` is given).
//!
//! Text messages (`effects.send-sms`) are the same kind of row in their own table and
//! go through the same worker ([`Outbox::Sms`]) to the transports of `crate::sms`.

pub mod folder;
pub mod smtp;

use crate::calls::Dispatcher;
use crate::clock::{backoff_ms, now_ms};
use crate::host_tables::jobs::StoredJob;
use crate::host_tables::keys;
use crate::host_tables::mail::{StoredAttachment, StoredMail};
use crate::ids::random_id;
use crate::store::{CommitError, Store};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Deliveries tried before a mail is given up.
pub const MAX_ATTEMPTS: u32 = 20;
/// Longest sleep between looks at the mail table.
const IDLE: Duration = Duration::from_secs(30);

/// Why a transport did not deliver.
#[derive(Debug)]
pub enum Failure {
    /// Worth retrying later (connection refused, timeout, 4xx).
    Transient(anyhow::Error),
    /// Will never work for this address (SMTP 5xx).
    Permanent(String),
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::Transient(e.into())
    }
}

/// Somewhere mail can be handed to. `send` may be retried with the same mail: it should
/// be idempotent where the medium allows.
pub trait Transport: Send + Sync + 'static {
    fn send(&self, mail: &StoredMail) -> Result<(), Failure>;
}

/// What a pass over the mail table did.
pub struct Pass {
    /// How long until the next mail is due.
    pub wait: Duration,
    /// Whether a bounce job was scheduled (the job runner should look).
    pub bounced: bool,
}

/// A table of outgoing messages: mail, or text messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outbox {
    Mail,
    Sms,
}

impl Outbox {
    /// Due rows: `<prefix><due ms, 8 bytes BE><id>`.
    pub fn table(self) -> &'static [u8] {
        match self {
            Outbox::Mail => keys::MAIL,
            Outbox::Sms => keys::SMS,
        }
    }

    /// Rows given up.
    pub fn dead(self) -> &'static [u8] {
        match self {
            Outbox::Mail => keys::DEAD_MAIL,
            Outbox::Sms => keys::DEAD_SMS,
        }
    }

    /// For the log.
    pub fn what(self) -> &'static str {
        match self {
            Outbox::Mail => "mail",
            Outbox::Sms => "sms",
        }
    }

    /// Resolves when a committed call queued a message of this outbox.
    async fn queued(self, d: &Dispatcher) {
        match self {
            Outbox::Mail => d.mail_queued().await,
            Outbox::Sms => d.sms_queued().await,
        }
    }
}

/// Delivers due messages of `outbox` until `shutdown` turns true.
pub async fn run(
    dispatcher: Dispatcher,
    outbox: Outbox,
    transport: Arc<dyn Transport>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let store = dispatcher.store().clone();
        let t = transport.clone();
        let pass = tokio::task::spawn_blocking(move || deliver_due(&store, outbox, &*t)).await;
        let wait = match pass {
            Ok(Ok(pass)) => {
                if pass.bounced {
                    dispatcher.notify_jobs();
                }
                pass.wait
            }
            Ok(Err(e)) => {
                tracing::error!("{} worker: {e:#}", outbox.what());
                Duration::from_secs(1)
            }
            Err(e) => {
                tracing::error!("{} worker: {e}", outbox.what());
                Duration::from_secs(1)
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = outbox.queued(&dispatcher) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// The bytes of a mail's attachments, read now; an attachment whose blob is gone (its
/// document erased meanwhile) is left out, with a warning.
fn attachment_files(
    store: &Arc<Store>,
    mail: &StoredMail,
) -> anyhow::Result<Vec<(StoredAttachment, Vec<u8>)>> {
    if mail.attachments.is_empty() {
        return Ok(Vec::new());
    }
    let mut txn = store.begin_read_only();
    let mut files = Vec::new();
    for a in &mail.attachments {
        match txn.get_blob(&keys::blob(&a.blob))? {
            Some(bytes) => files.push((a.clone(), bytes)),
            None => tracing::warn!(id = mail.id, blob = a.blob, "an attachment's file is gone"),
        }
    }
    Ok(files)
}

/// Delivers every due message of `outbox`.
pub fn deliver_due(
    store: &Arc<Store>,
    outbox: Outbox,
    transport: &dyn Transport,
) -> anyhow::Result<Pass> {
    let mut bounced = false;
    let mut skipped = false;
    let what = outbox.what();
    loop {
        let end = keys::timed(outbox.table(), now_ms() + 1, "");
        let due = store.scan_committed(outbox.table(), &end, 64)?;
        let mut progressed = false;
        for (key, value) in due {
            // Another worker (on another host) may hold the row: it sends it.
            let Some(lease) = store.lease(&key)? else {
                skipped = true;
                continue;
            };
            let mut mail: StoredMail = serde_json::from_slice(&value)?;
            mail.files = attachment_files(store, &mail)?;
            // Sent outside any transaction: the row goes only after the transport
            // took it, in a transaction that checks the lease is still ours.
            let sent = transport.send(&mail);
            let mut writes: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            let mut bounces = false;
            match sent {
                Ok(()) => tracing::info!(id = mail.id, to = mail.to, "{what} sent"),
                Err(Failure::Permanent(why)) => {
                    tracing::warn!(
                        id = mail.id,
                        to = mail.to,
                        "{what} rejected for good: {why}"
                    );
                    mail.attempts += 1;
                    let mut dead = outbox.dead().to_vec();
                    dead.extend_from_slice(mail.id.as_bytes());
                    writes.push((dead, serde_json::to_vec(&mail)?));
                    if !mail.tag.is_empty() {
                        let now = now_ms();
                        let job = StoredJob {
                            id: random_id(),
                            kind: MAIL_BOUNCED_JOB.into(),
                            payload: format!("{}\n{why}", mail.tag).into_bytes(),
                            attempt: 1,
                            run_at_ms: now,
                            work: None,
                            failure: None,
                            scope: String::new(),
                        };
                        writes.push((
                            keys::timed(keys::JOBS, now, &job.id),
                            serde_json::to_vec(&job)?,
                        ));
                        bounces = true;
                    }
                }
                Err(Failure::Transient(e)) if mail.attempts + 1 >= MAX_ATTEMPTS => {
                    tracing::error!(
                        id = mail.id,
                        to = mail.to,
                        "{what} given up after {MAX_ATTEMPTS} attempts: {e:#}"
                    );
                    mail.attempts += 1;
                    let mut dead = outbox.dead().to_vec();
                    dead.extend_from_slice(mail.id.as_bytes());
                    writes.push((dead, serde_json::to_vec(&mail)?));
                }
                Err(Failure::Transient(e)) => {
                    mail.attempts += 1;
                    let delay = backoff_ms(mail.attempts);
                    tracing::warn!(
                        id = mail.id,
                        to = mail.to,
                        attempt = mail.attempts,
                        "{what} failed, retrying in {} s: {e:#}",
                        delay / 1000
                    );
                    writes.push((
                        keys::timed(outbox.table(), now_ms() + delay, &mail.id),
                        serde_json::to_vec(&mail)?,
                    ));
                }
            }
            // Recorded with the row's removal, re-run on a conflict: a lost record
            // would send the mail again once the lease expired.
            if record(store, &key, &lease, &writes)? {
                progressed = true;
                bounced |= bounces;
            }
        }
        if !progressed {
            break; // nothing due, or everything due is another worker's
        }
    }
    let mut wait = keys::until_next_due(store, outbox.table(), IDLE)?;
    if skipped {
        // Due rows another worker holds: look again after a poll, not at once.
        wait = wait.max(crate::store::SHARED_POLL);
    }
    Ok(Pass {
        wait: store.poll_cap(wait),
        bounced,
    })
}

/// Removes the row at `key` if `lease` still holds it, with `writes`, in one
/// transaction (re-run on conflicts); whether it was recorded.
fn record(
    store: &Arc<Store>,
    key: &[u8],
    lease: &crate::store::Lease,
    writes: &[(Vec<u8>, Vec<u8>)],
) -> anyhow::Result<bool> {
    for attempt in 0..32 {
        if attempt > 0 {
            store.pause_after_conflict(attempt);
        }
        let mut txn = store.begin();
        match txn.holds(key, lease) {
            Ok(true) => {}
            Ok(false) => return Ok(false), // delivered (or taken over) meanwhile
            Err(_) if txn.conflicted() => continue,
            Err(e) => return Err(e),
        }
        txn.delete(key);
        for (k, v) in writes {
            txn.put(k, v);
        }
        match txn.commit() {
            Ok(()) => return Ok(true),
            Err(CommitError::Conflict(_)) => continue,
            Err(e) => return Err(e.into_error()),
        }
    }
    anyhow::bail!("recording a sent message kept conflicting")
}

/// The engine's job for a hard bounce (see `effects.mail` in the WIT).
const MAIL_BOUNCED_JOB: &str = "mail.bounced";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sled::SledBackend;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// Fails while `failures` is above zero, counting down; records what it sent.
    struct Flaky {
        failures: AtomicU32,
        sent: std::sync::Mutex<Vec<String>>,
    }

    impl Transport for Flaky {
        fn send(&self, mail: &StoredMail) -> Result<(), Failure> {
            if mail.to.starts_with("nobody@") {
                return Err(Failure::Permanent("550 no such user".into()));
            }
            if self.failures.load(Ordering::SeqCst) > 0 {
                self.failures.fetch_sub(1, Ordering::SeqCst);
                return Err(Failure::Transient(anyhow::anyhow!("transport down")));
            }
            self.sent.lock().unwrap().push(mail.id.clone());
            Ok(())
        }
    }

    fn setup(failures: u32, attempts: u32) -> (Arc<Store>, Flaky, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("esign-mail-test-{}", crate::ids::random_id()));
        let store = Store::new(SledBackend::open(&dir).unwrap());
        let mail = StoredMail {
            id: "m1".into(),
            to: "a@example.com".into(),
            subject: "s".into(),
            body: "b".into(),
            created_ms: 1,
            attempts,
            tag: String::new(),
            html: String::new(),
            attachments: Vec::new(),
            files: Vec::new(),
        };
        let mut txn = store.begin();
        txn.put(
            &keys::timed(keys::MAIL, 1, "m1"),
            &serde_json::to_vec(&mail).unwrap(),
        );
        txn.commit().unwrap();
        let flaky = Flaky {
            failures: AtomicU32::new(failures),
            sent: Default::default(),
        };
        (store, flaky, dir)
    }

    fn table(store: &Store, prefix: &[u8]) -> Vec<StoredMail> {
        let mut end = prefix.to_vec();
        end.push(0xff);
        store
            .scan_committed(prefix, &end, 100)
            .unwrap()
            .into_iter()
            .map(|(_, v)| serde_json::from_slice(&v).unwrap())
            .collect()
    }

    #[test]
    fn delivered_mail_leaves_the_table() {
        let (store, t, dir) = setup(0, 0);
        deliver_due(&store, Outbox::Mail, &t).unwrap();
        assert_eq!(*t.sent.lock().unwrap(), ["m1"]);
        assert!(table(&store, keys::MAIL).is_empty());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_failed_delivery_is_kept_and_rescheduled_later() {
        let (store, t, dir) = setup(1, 0);
        let wait = deliver_due(&store, Outbox::Mail, &t).unwrap().wait;
        let left = table(&store, keys::MAIL);
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].attempts, 1);
        assert!(
            wait >= Duration::from_millis(1000),
            "next try after backoff, got {wait:?}"
        );
        assert!(t.sent.lock().unwrap().is_empty());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_permanent_rejection_is_dead_at_once_and_schedules_the_bounce_job() {
        let (store, t, dir) = setup(0, 0);
        let mail = StoredMail {
            id: "m2".into(),
            to: "nobody@example.com".into(),
            subject: "s".into(),
            body: "b".into(),
            created_ms: 2,
            attempts: 0,
            tag: "recipient:d:r".into(),
            html: String::new(),
            attachments: Vec::new(),
            files: Vec::new(),
        };
        let mut txn = store.begin();
        txn.put(
            &keys::timed(keys::MAIL, 2, "m2"),
            &serde_json::to_vec(&mail).unwrap(),
        );
        txn.commit().unwrap();
        let pass = deliver_due(&store, Outbox::Mail, &t).unwrap();
        assert!(pass.bounced);
        assert!(table(&store, keys::MAIL).is_empty(), "not retried");
        assert_eq!(table(&store, keys::DEAD_MAIL).len(), 1);
        let mut end = keys::JOBS.to_vec();
        end.push(0xff);
        let jobs = store.scan_committed(keys::JOBS, &end, 10).unwrap();
        let job: StoredJob = serde_json::from_slice(&jobs[0].1).unwrap();
        assert_eq!(job.kind, "mail.bounced");
        assert_eq!(job.payload, b"recipient:d:r\n550 no such user");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn mail_is_given_up_into_the_dead_table_after_the_last_attempt() {
        let (store, t, dir) = setup(1, MAX_ATTEMPTS - 1);
        deliver_due(&store, Outbox::Mail, &t).unwrap();
        assert!(table(&store, keys::MAIL).is_empty());
        let dead = table(&store, keys::DEAD_MAIL);
        assert_eq!(dead.len(), 1);
        assert_eq!(dead[0].attempts, MAX_ATTEMPTS);
        let _ = std::fs::remove_dir_all(dir);
    }
}
