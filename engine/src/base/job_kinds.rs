//! Every kind of job the engine schedules (and `mail.bounced`, which the host schedules
//! when a tagged mail bounces for good). A job's kind is one of these constants, never a
//! literal; `crate::job_table::JOBS` maps each to its handler, and a test there keeps the two
//! equal.

/// Job that deletes a token record a while after it expired.
pub const TOKEN_PURGE: &str = "token.purge";

/// Job that deletes an OAuth record (payload: its key) once it has expired.
pub const OAUTH_FORGET: &str = "oauth.forget";

/// Job: forget a download link once it has expired.
pub const DOWNLOAD_LINK_FORGET: &str = "doc.download-link.forget";

/// Job: record the import of a document's files.
pub const DOC_IMPORT: &str = "doc.import";

/// Job: record the import of an archived contract's files (`importing` → `archived`).
pub const DOC_IMPORT_ARCHIVE: &str = "doc.import-archive";

/// Job: record a rendered PDF.
pub const DOC_RENDER: &str = "doc.render";

/// Job: send a scheduled document.
pub const DOC_SCHEDULED_SEND: &str = "doc.scheduled-send";

/// Job: expire a document whose date has come.
pub const DOC_EXPIRE: &str = "doc.expire";

/// Job: send scheduled or automatic reminders.
pub const DOC_REMIND: &str = "doc.remind";

/// Job: erase a permanently deleted document's data.
pub const DOC_ERASE: &str = "doc.erase";

/// Job: expire an upload when its time has come.
pub const UPLOAD_EXPIRE: &str = "upload.expire";

/// Job: download an upload given by URL.
pub const UPLOAD_FETCH: &str = "upload.fetch";

/// Job: record the import of a template's file.
pub const TEMPLATE_IMPORT: &str = "template.import";

/// Job: record the page previews of an imported file (payload: the owner,
/// `doc:{id}` or `template:{id}`; `domain::previews`).
pub const PREVIEWS: &str = "previews";

/// The job the host schedules when a tagged mail bounces for good (payload
/// `{tag}\n{reason}`).
pub const MAIL_BOUNCED: &str = "mail.bounced";

/// Job: a delivery was given up (payload: [`DeadLetter`] as JSON).
pub const WEBHOOK_DEAD: &str = "webhook.dead";

/// Job: a target answered 410 Gone (payload: the subscription id).
pub const WEBHOOK_GONE: &str = "webhook.gone";

/// Job: send the next rows of a bulk send (payload: the batch id; `bulk_sends`).
pub const BULK_SEND: &str = "bulk.send";

/// Every kind above (for the test of `crate::job_table`).
#[cfg(test)]
pub const ALL: &[&str] = &[
    TOKEN_PURGE,
    OAUTH_FORGET,
    DOWNLOAD_LINK_FORGET,
    DOC_IMPORT,
    DOC_IMPORT_ARCHIVE,
    DOC_RENDER,
    DOC_SCHEDULED_SEND,
    DOC_EXPIRE,
    DOC_REMIND,
    DOC_ERASE,
    UPLOAD_EXPIRE,
    UPLOAD_FETCH,
    TEMPLATE_IMPORT,
    PREVIEWS,
    MAIL_BOUNCED,
    WEBHOOK_DEAD,
    WEBHOOK_GONE,
    BULK_SEND,
];
