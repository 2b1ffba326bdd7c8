//! The mail and SMS tables: messages the engine queued (`effects.send-mail`,
//! `effects.send-sms`), under `m/` and `sms/` until a transport accepted them.

use crate::bindings::effects;
use crate::clock::now_ms;
use crate::host_tables::keys::{MAIL, SMS, timed};
use crate::ids::random_id;
use crate::store::Txn;

/// A mail as stored under `m/<due ms><id>`.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone)]
pub struct StoredMail {
    pub id: String,
    pub to: String,
    pub subject: String,
    pub body: String,
    pub created_ms: u64,
    #[serde(default)]
    pub attempts: u32,
    /// What the mail is about (for bounces); empty for none.
    #[serde(default)]
    pub tag: String,
    /// The HTML alternative of `body`; empty for plain text only.
    #[serde(default)]
    pub html: String,
    /// Files to attach, by blob (`effects.mail-attachment`).
    #[serde(default)]
    pub attachments: Vec<StoredAttachment>,
    /// The attachments' bytes, read by the mail worker just before it sends (never
    /// stored): one per attachment whose blob is still there, in order.
    #[serde(skip)]
    pub files: Vec<(StoredAttachment, Vec<u8>)>,
}

/// A file attached to a stored mail.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
pub struct StoredAttachment {
    pub name: String,
    pub content_type: String,
    pub blob: String,
}

/// Queues a mail the engine sent (`effects.send-mail`) in the call's transaction.
pub fn queue_mail(txn: &mut Txn, mail: effects::Mail) -> anyhow::Result<()> {
    let record = StoredMail {
        html: mail.html,
        attachments: mail
            .attachments
            .into_iter()
            .map(|a| StoredAttachment {
                name: a.name,
                content_type: a.content_type,
                blob: a.blob,
            })
            .collect(),
        ..record(mail.to, mail.subject, mail.body, mail.tag)
    };
    put(txn, MAIL, &record)
}

/// Queues a text message (`effects.send-sms`): a row like a mail's, without a subject.
pub fn queue_sms(txn: &mut Txn, sms: effects::Sms) -> anyhow::Result<()> {
    put(txn, SMS, &record(sms.to, String::new(), sms.text, sms.tag))
}

/// A new row: not tried yet, no HTML.
fn record(to: String, subject: String, body: String, tag: String) -> StoredMail {
    StoredMail {
        id: random_id(),
        to,
        subject,
        body,
        created_ms: now_ms(),
        attempts: 0,
        tag,
        html: String::new(),
        attachments: Vec::new(),
        files: Vec::new(),
    }
}

fn put(txn: &mut Txn, table: &[u8], record: &StoredMail) -> anyhow::Result<()> {
    txn.put(
        &timed(table, record.created_ms, &record.id),
        &serde_json::to_vec(record)?,
    );
    Ok(())
}
