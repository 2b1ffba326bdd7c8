//! Document records, their statuses, and the keys that store and index them.
//!
//! | key | value |
//! |---|---|
//! | `doc/{id}` | [`Document`] |
//! | `dx/{entity}/{scope}/{tag}/{sort}/{sort key}/{id}` | empty: list index (see [`index_keys`]) |
//! | `dext/{entity}/{external id}/{created}/{id}` | empty: by external id |
//! | `dcli/{entity}/{external client id}/{created}/{id}` | empty: by external client id |
//! | `drcp/{entity}/{recipient email}/{created}/{id}` | empty: by recipient email |
//! | `dexp/{entity}/{expiration}/{id}` | empty: active documents by expiration |
//! | `duid/{unique id}` | document id (written until documents drew their number without a lookup; deleted with its document) |
//! | `rlink/{sha256 of link secret}` | `{document id}/{recipient id}` |
//! | `dlog/{id}/{at}{seq}` | [`LogEntry`] in a [`crate::domain::trail::Chained`] (schema 2; 3 with a client-asserted address after it) |
//! | `dcom/{id}/{at}{comment id}` | [`Comment`] |
//! | `bref/{blob}/{owner}` | empty: a record that uses a blob (see `blobs.rs`) |
//!
//! Times in keys are 16 lower-case hex digits of milliseconds, so they sort.

use crate::base::cx::Cx;
use crate::base::keyspace::{DCLI, DCOM, DEXP, DEXT, DLOG, DOC, DRCP, DUID, DX, RLINK};
use crate::base::messages;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::{self, prefix_range};
use crate::base::util::{self, key_text, sortable_f64};
use crate::domain::pricing;
use serde::{Deserialize, Serialize};

/// Document statuses (spec §3.1). A document is created a draft (the default).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Status {
    #[default]
    Draft,
    Archived,
    Expired,
    Hardbounced,
    Importing,
    Lost,
    Processing,
    Recalled,
    Rejected,
    Reviewed,
    Scheduled,
    Sealed,
    Sent,
    Signed,
    SignedWithoutVerification,
    Viewed,
}

impl Status {
    pub const ALL: [Status; 16] = [
        Status::Archived,
        Status::Draft,
        Status::Expired,
        Status::Hardbounced,
        Status::Importing,
        Status::Lost,
        Status::Processing,
        Status::Recalled,
        Status::Rejected,
        Status::Reviewed,
        Status::Scheduled,
        Status::Sealed,
        Status::Sent,
        Status::Signed,
        Status::SignedWithoutVerification,
        Status::Viewed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Draft => "draft",
            Status::Archived => "archived",
            Status::Expired => "expired",
            Status::Hardbounced => "hardbounced",
            Status::Importing => "importing",
            Status::Lost => "lost",
            Status::Processing => "processing",
            Status::Recalled => "recalled",
            Status::Rejected => "rejected",
            Status::Reviewed => "reviewed",
            Status::Scheduled => "scheduled",
            Status::Sealed => "sealed",
            Status::Sent => "sent",
            Status::Signed => "signed",
            Status::SignedWithoutVerification => "signedwithoutverification",
            Status::Viewed => "viewed",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Out with recipients and waiting for them: the statuses that expire, take
    /// send-to-recipients batches and reminders, and accept recipients' acts.
    pub fn is_active(self) -> bool {
        matches!(
            self,
            Status::Sent | Status::Viewed | Status::Reviewed | Status::Hardbounced | Status::Sealed
        )
    }

    pub fn is_signed(self) -> bool {
        matches!(self, Status::Signed | Status::SignedWithoutVerification)
    }
}

/// Recipient statuses (spec §3.2).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum RecipientStatus {
    Added,
    Sent,
    Viewed,
    Reviewed,
    Approved,
    Signed,
    SignedWithoutVerification,
    Rejected,
    Skipped,
    NotRequired,
    Hardbounced,
}

impl RecipientStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RecipientStatus::Added => "added",
            RecipientStatus::Sent => "sent",
            RecipientStatus::Viewed => "viewed",
            RecipientStatus::Reviewed => "reviewed",
            RecipientStatus::Approved => "approved",
            RecipientStatus::Signed => "signed",
            RecipientStatus::SignedWithoutVerification => "signedwithoutverification",
            RecipientStatus::Rejected => "rejected",
            RecipientStatus::Skipped => "skipped",
            RecipientStatus::NotRequired => "notrequired",
            RecipientStatus::Hardbounced => "hardbounced",
        }
    }

    /// Done with the document: signed, approved, rejected, or rights handed on.
    pub fn is_finished(self) -> bool {
        self.has_signed_or_approved()
            || matches!(
                self,
                RecipientStatus::Rejected | RecipientStatus::NotRequired
            )
    }

    /// Signed or approved: the document's content is committed to.
    pub fn has_signed_or_approved(self) -> bool {
        matches!(
            self,
            RecipientStatus::Signed
                | RecipientStatus::SignedWithoutVerification
                | RecipientStatus::Approved
        )
    }
}

/// What a recipient does with the document: GetAccept's roles. An approver approves
/// instead of signing; an internal one (`Approver`, answered `approver` as esign's v1
/// always has, GetAccept's `internalApprover`) is left out of the audit certificate, an
/// external one is listed there beside the signers. (Variants are only ever added at
/// the end: stored records name them by position.)
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum Role {
    Signer,
    Approver,
    Cc,
    ExternalApprover,
}

impl Role {
    /// GetAccept's names (any case), and `approver` for an internal approver.
    pub fn parse(s: &str) -> Option<Role> {
        match s.trim().to_ascii_lowercase().as_str() {
            "signer" => Some(Role::Signer),
            "approver" | "internalapprover" => Some(Role::Approver),
            "externalapprover" => Some(Role::ExternalApprover),
            "cc" => Some(Role::Cc),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Signer => "signer",
            Role::Approver => "approver",
            Role::ExternalApprover => "externalApprover",
            Role::Cc => "cc",
        }
    }

    /// An approver, internal or external.
    pub fn approves(self) -> bool {
        matches!(self, Role::Approver | Role::ExternalApprover)
    }

    /// What a role's 400 lists.
    pub const NAMES: &str = "signer, internalApprover (or approver), externalApprover or cc";
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Recipient {
    pub id: String,
    pub first_name: String,
    pub last_name: String,
    pub email: String,
    pub mobile: String,
    pub phone: String,
    pub role: Role,
    pub role_name: String,
    pub status: RecipientStatus,
    pub company_name: String,
    pub company_number: String,
    pub title: String,
    pub note: String,
    /// Position in the signing order (1-based).
    pub order_num: u32,
    pub contact_id: String,
    /// What the record keeps of the recipient's link, once sealed or sent: a nonce the
    /// link's secret is derived from with the host's link key, never the secret itself
    /// (records written before link keys hold the secret; see [`LinkRef`]).
    pub secret: Option<LinkRef>,
    pub sent_ms: Option<u64>,
    pub signed_ms: Option<u64>,
    /// Unused since identity checks record their passes with the signature (`dsig/`);
    /// kept so stored records keep their encoding.
    pub signing_method: Option<(String, String)>,
    /// The address the recipient signed, approved or rejected from.
    pub ip_address: String,
    pub viewed_ms: Option<u64>,
}

/// A recipient's link as their record keeps it (`domain::links` reads and makes it):
/// `nonce:{nonce}`, from which the secret is derived as HMAC-SHA256 of the host's link
/// key (`settings.link-key`) over `recipient-link/{document}/{recipient}/{nonce}`; or,
/// in records written before link keys, the secret itself (43 characters of base64url,
/// which never holds a `:`). Stored as that one string, so records keep their encoding.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(transparent)]
pub struct LinkRef(pub String);

impl Recipient {
    pub fn fullname(&self) -> String {
        match (self.first_name.is_empty(), self.last_name.is_empty()) {
            (false, false) => format!("{} {}", self.first_name, self.last_name),
            (false, true) => self.first_name.clone(),
            (true, false) => self.last_name.clone(),
            (true, true) => self.email.clone(),
        }
    }

    /// Where the recipient is reached: their address, else their mobile number.
    pub fn contact(&self) -> &str {
        if self.email.is_empty() {
            &self.mobile
        } else {
            &self.email
        }
    }
}

/// An imported file: a PDF blob and its pages.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DocFile {
    pub id: String,
    pub name: String,
    pub blob: String,
    pub size: u64,
    pub sha256: String,
    /// Page sizes in points (width, height).
    pub pages: Vec<(f32, f32)>,
}

/// A file from the create request, still to be imported.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PendingSource {
    pub blob: Option<String>,
    pub url: Option<String>,
    pub name: String,
    pub fill: Vec<(String, String)>,
    /// The upload it came from, if any.
    pub upload_id: Option<String>,
}

/// An attachment: a stored file shown beside the document, optionally restricted to
/// one recipient.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Attachment {
    pub id: String,
    pub name: String,
    pub blob: String,
    pub size: u64,
    /// Only this recipient (by email) may see it.
    pub restricted_to: Option<String>,
}

/// The final, rendered PDF.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FinalPdf {
    pub blob: String,
    pub size: u64,
    pub sha256: String,
    pub content_sha256: String,
    pub page_count: u32,
    pub rendered_ms: u64,
}

/// What a running render is for.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum RenderPurpose {
    Seal,
    Send,
    /// A new revision; send to recipients afterwards when true.
    Revision {
        send: bool,
    },
    /// Content changed after sealing (pricing tables): render again, nothing else.
    Refresh,
    /// The document is complete: the final PDF with its audit certificate, sealed.
    /// [`Pending::message`] holds the audit trail head hash the file states.
    Complete,
}

/// The render in progress, if any.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Pending {
    pub purpose: RenderPurpose,
    /// Matches the job's payload; an outcome for another number is stale.
    pub seq: u32,
    pub message: String,
}

/// Who asked for sealing or sending, and from where (recorded, spec §4.2).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Sender {
    pub user_id: String,
    pub name: String,
    pub email: String,
    pub user_agent: String,
    pub ip: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CustomField {
    pub name: String,
    pub value: String,
}

/// A published revision of a sealed or sent document.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Revision {
    pub number: u32,
    pub message: String,
    pub created_ms: u64,
    /// Set once its PDF has been rendered.
    pub sealed_ms: Option<u64>,
    pub content_sha256: Option<String>,
}

/// Its default is an empty draft, for a create to fill in.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Document {
    pub id: String,
    pub entity_id: String,
    /// The owner.
    pub user_id: String,
    pub name: String,
    pub external_id: String,
    pub external_client_id: String,
    pub value: f64,
    pub doc_type: String,
    /// Normalized tags (comma-separated).
    pub tags: String,
    /// The tags text exactly as last sent through the API.
    pub tags_raw: String,
    pub company_name: String,
    pub company_id: String,
    pub company_logo_url: String,
    pub company_number: String,
    pub flags: Flags,
    pub scheduled_sending_ms: Option<u64>,
    pub auto_comment_text: String,
    pub auto_comment_email: String,
    pub status: Status,
    /// The status an expired document had, restored when its date is moved forward.
    pub status_before_expiry: Option<Status>,
    pub rejection_reason: Option<String>,
    pub send_ms: Option<u64>,
    pub sign_ms: Option<u64>,
    pub created_ms: u64,
    pub updated_ms: u64,
    pub expiration_ms: u64,
    pub contract_start_ms: Option<u64>,
    pub contract_end_ms: Option<u64>,
    pub sender: Sender,
    pub email_send_template_id: String,
    pub email_send_subject: String,
    pub email_send_message: String,
    pub video_id: Option<String>,
    pub unique_id: u64,
    pub parent_id: String,
    pub external_editor_type: String,
    pub external_editor_id: String,
    pub expiration_days: u32,
    pub block_recipient_invite: bool,
    pub comment_settings: String,
    pub sign_redirect: String,
    pub sign_copy_emails: Vec<String>,
    pub recipients: Vec<Recipient>,
    pub files: Vec<DocFile>,
    /// Files still to import (while `importing`).
    pub sources: Vec<PendingSource>,
    /// Why the last import failed, if it did.
    pub import_error: Option<String>,
    pub attachments: Vec<Attachment>,
    pub custom_fields: Vec<CustomField>,
    pub template_id: Option<String>,
    pub pricing_tables: Vec<pricing::PricingTable>,
    pub pending: Option<Pending>,
    pub render_seq: u32,
    pub final_pdf: Option<FinalPdf>,
    pub revisions: Vec<Revision>,
    /// Reminder emails sent.
    pub reminders_sent: u32,
    pub views: u32,
    /// Monotonic counter for log entry keys within one millisecond.
    pub log_seq: u32,
    /// What was added after this record's layout was fixed: stored after it.
    #[serde(skip)]
    pub ext: DocExt,
    /// What was added after the first extension's layout was fixed: stored after it.
    #[serde(skip)]
    pub ext2: DocExt2,
}

/// The members of a document added after its record's layout was fixed, stored after
/// the record (`records::encode_ext`), so documents written before read with defaults.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct DocExt {
    /// The folder the document is filed in (`fold/`), or empty.
    pub folder_id: String,
    /// The communication template whose texts its mails use, or empty.
    pub communication_template_id: String,
}

/// The members of a document added after [`DocExt`]'s layout was fixed, stored after it
/// (`records::encode_ext2`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct DocExt2 {
    /// The language of the recipients' texts (mail, SMS, the signing page): a code of
    /// `base::messages::LANGUAGES`; empty (documents written before) reads as English.
    pub language: String,
}

impl Document {
    /// The language of the recipients' texts.
    pub fn language(&self) -> &'static str {
        messages::language(&self.ext2.language).unwrap_or("en")
    }
}

/// The boolean settings of a document (spec §2.1).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Flags {
    pub is_selfsign: bool,
    pub is_signing_biometric: bool,
    pub is_signing_initials: bool,
    pub is_private: bool,
    pub is_signing: bool,
    pub is_signing_order: bool,
    pub is_signing_forward: bool,
    pub is_identify_recipient: bool,
    pub is_video: bool,
    pub is_scheduled_sending: bool,
    pub is_reminder_sending: bool,
    pub is_auto_comment: bool,
    pub is_auto_comment_email: bool,
    pub is_automatic_sending: bool,
}

impl Document {
    pub fn page_count(&self) -> usize {
        self.files.iter().map(|f| f.pages.len()).sum()
    }

    pub fn recipient(&self, id: &str) -> Option<&Recipient> {
        self.recipients.iter().find(|r| r.id == id)
    }

    pub fn has_signer(&self) -> bool {
        self.recipients.iter().any(|r| r.role == Role::Signer)
    }
}

/// An entry of a document's audit trail.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LogEntry {
    pub at_ms: u64,
    pub action: String,
    /// `user`, `recipient` or `system`.
    pub actor_type: String,
    pub actor_id: String,
    pub actor_name: String,
    pub detail: String,
    /// The webhook event this change recorded, and its outbox id.
    pub event: Option<(String, String)>,
    /// The address the request came from, as the host saw it (the peer, or the
    /// client a trusted proxy names).
    pub ip: String,
    pub user_agent: String,
    /// An address the client asserted itself (GetAccept's `CLIENT_IP` header): kept
    /// beside `ip`, never instead of it; empty when none was given. Stored after the
    /// entry (`trail::encode`), so entries written before it still read.
    #[serde(skip)]
    pub client_asserted_ip: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Comment {
    pub id: String,
    pub text: String,
    pub author_type: String,
    pub author_id: String,
    pub author_name: String,
    pub author_email: String,
    pub created_ms: u64,
    /// Internal comments are not shown to recipients.
    pub internal: bool,
    /// An internal edit suggestion; an unresolved one blocks sending.
    pub suggestion: bool,
    pub resolved: bool,
}

pub fn hex(ms: u64) -> String {
    format!("{ms:016x}")
}

pub fn doc_key(id: &str) -> Vec<u8> {
    util::key(&[DOC, id])
}

pub fn link_key(secret_hash: &str) -> Vec<u8> {
    util::key(&[RLINK, secret_hash])
}

pub fn unique_id_key(n: u64) -> Vec<u8> {
    format!("{DUID}/{n}").into_bytes()
}

pub fn log_prefix(doc_id: &str) -> (Vec<u8>, Vec<u8>) {
    prefix_range(&format!("{DLOG}/{doc_id}/"))
}

pub fn log_key(doc_id: &str, at_ms: u64, seq: u32) -> Vec<u8> {
    format!("{DLOG}/{doc_id}/{}{seq:08x}", hex(at_ms)).into_bytes()
}

pub fn comments_prefix(doc_id: &str) -> (Vec<u8>, Vec<u8>) {
    prefix_range(&format!("{DCOM}/{doc_id}/"))
}

pub fn comment_key(doc_id: &str, at_ms: u64, id: &str) -> Vec<u8> {
    format!("{DCOM}/{doc_id}/{}{id}", hex(at_ms)).into_bytes()
}

/// The list scope of an index key: every document of the entity, or one owner's.
pub fn scope_all() -> String {
    "a".into()
}

pub fn scope_user(user_id: &str) -> String {
    format!("u{user_id}")
}

/// Sort orders an index is kept in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Created,
    Name,
    Value,
    Owner,
    SignDate,
}

impl SortKey {
    pub fn letter(self) -> char {
        match self {
            SortKey::Created => 'c',
            SortKey::Name => 'n',
            SortKey::Value => 'v',
            SortKey::Owner => 'o',
            SortKey::SignDate => 'g',
        }
    }
}

/// The index tags of a document: its status, `vod` for video documents, and
/// `f{folder}` for a document filed in a folder.
pub fn index_tags(doc: &Document) -> Vec<String> {
    let mut tags = vec![doc.status.as_str().to_string()];
    if doc.flags.is_video {
        tags.push("vod".into());
    }
    if !doc.ext.folder_id.is_empty() {
        tags.push(folder_tag(&doc.ext.folder_id));
    }
    tags
}

/// The index tag of the documents in a folder.
pub fn folder_tag(folder_id: &str) -> String {
    format!("f{folder_id}")
}

/// The prefix of one index range: `dx/{entity}/{scope}/{tag}/{sort}/`.
pub fn index_prefix(entity: &str, scope: &str, tag: &str, sort: SortKey) -> String {
    format!("{DX}/{entity}/{scope}/{tag}/{}/", sort.letter())
}

/// Every index key of `doc` (list, lookups). A change rewrites the difference.
pub fn index_keys(doc: &Document) -> Vec<Vec<u8>> {
    let e = &doc.entity_id;
    let id = &doc.id;
    let created = hex(doc.created_ms);
    let mut keys = Vec::new();
    for scope in [scope_all(), scope_user(&doc.user_id)] {
        for tag in index_tags(doc) {
            let mut sorts = vec![
                (SortKey::Created, created.clone()),
                (SortKey::Name, format!("{}\u{0}", key_text(&doc.name, 48))),
                (SortKey::Value, sortable_f64(doc.value)),
                (
                    SortKey::Owner,
                    format!("{}\u{0}", key_text(&doc.sender.name, 48)),
                ),
            ];
            if let Some(sign) = doc.sign_ms {
                sorts.push((SortKey::SignDate, hex(sign)));
            }
            for (sort, sort_key) in sorts {
                let mut k = index_prefix(e, &scope, &tag, sort);
                k.push_str(&sort_key);
                k.push('/');
                k.push_str(id);
                keys.push(k.into_bytes());
            }
        }
    }
    if !doc.external_id.is_empty() {
        keys.push(
            format!(
                "{DEXT}/{e}/{}/{created}/{id}",
                key_text(&doc.external_id, 128)
            )
            .into_bytes(),
        );
    }
    if !doc.external_client_id.is_empty() {
        keys.push(
            format!(
                "{DCLI}/{e}/{}/{created}/{id}",
                key_text(&doc.external_client_id, 128)
            )
            .into_bytes(),
        );
    }
    let mut emails: Vec<String> = doc
        .recipients
        .iter()
        .filter(|r| !r.email.is_empty())
        .map(|r| util::normalize_email(&r.email))
        .collect();
    emails.sort();
    emails.dedup();
    for email in emails {
        keys.push(format!("{DRCP}/{e}/{email}/{created}/{id}").into_bytes());
    }
    if doc.status.is_active() {
        keys.push(format!("{DEXP}/{e}/{}/{id}", hex(doc.expiration_ms)).into_bytes());
    }
    keys
}

/// The document id at the end of an index key.
pub fn id_of_index_key(key: &[u8]) -> String {
    let s = core::str::from_utf8(key).unwrap_or("");
    s.rsplit('/').next().unwrap_or("").to_string()
}

/// The most recipients a document has (so a document's answers, a page of the list
/// included, stay bounded).
pub const MAX_RECIPIENTS: usize = 100;

pub fn load_doc(cx: &mut Cx, id: &str) -> Option<Document> {
    if !util::is_id(id) {
        return None;
    }
    let bytes = cx.p.get(&doc_key(id))?;
    Some(try_decode_doc(&bytes).unwrap_or_else(|e| panic!("{e}")))
}

/// A stored document record with its extension ([`DocExt`]).
pub fn try_decode_doc(bytes: &[u8]) -> Result<Document, String> {
    let (mut doc, ext, ext2): (Document, DocExt, DocExt2) = records::try_decode_ext2(bytes)?;
    doc.ext = ext;
    doc.ext2 = ext2;
    Ok(doc)
}

/// Writes `doc` and brings its index keys from `before`'s to its own.
pub fn store_doc(cx: &mut Cx, before: Option<&Document>, doc: &mut Document) {
    doc.updated_ms = cx.now();
    let new_keys = index_keys(doc);
    if let Some(before) = before {
        for k in index_keys(before) {
            if !new_keys.contains(&k) {
                cx.p.delete(&k);
            }
        }
        let old_keys = index_keys(before);
        for k in &new_keys {
            if !old_keys.contains(k) {
                cx.p.put(k, b"");
            }
        }
    } else {
        for k in &new_keys {
            cx.p.put(k, b"");
        }
    }
    cx.p.put(
        &doc_key(&doc.id),
        &records::encode_ext2(doc, &doc.ext, &doc.ext2),
    );
}

/// Removes a document and its index keys (its other data is erased by a job).
pub fn remove_doc(cx: &mut Cx, doc: &Document) {
    for k in index_keys(doc) {
        cx.p.delete(&k);
    }
    cx.p.delete(&doc_key(&doc.id));
    cx.p.delete(&unique_id_key(doc.unique_id));
}

/// Normalized tags: trimmed, without empties or duplicates, comma-joined.
pub fn normalize_tags(raw: &str) -> String {
    let mut seen: Vec<String> = Vec::new();
    for t in raw.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        if !seen.iter().any(|s| s.eq_ignore_ascii_case(t)) {
            seen.push(t.to_string());
        }
    }
    seen.join(",")
}
