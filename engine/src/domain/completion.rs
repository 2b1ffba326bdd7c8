//! A copy of the completed document for every party (issue 50 item 3): when a
//! document is sealed after its last signature, each recipient (signers, approvers,
//! external approvers, CC), the owner and every address of `sign_copy_emails` get one
//! mail in the document's language, branded like the invitations, with the sealed PDF
//! attached when it is at most what the operator allows (`completion-attachment-max-bytes`,
//! default [`crate::base::policy::COMPLETION_ATTACHMENT_MAX_BYTES`]), else a download link that works
//! for `completion-link-days` (default [`crate::base::policy::COMPLETION_LINK_DAYS`]; each download of
//! it is logged in the trail). A recipient without an email gets the link by SMS. The
//! entity chooses attachments, links or nothing ([`Copies`], `completion_copies` on
//! `PUT /v1/entity`), and may choose otherwise for a kind of party ([`Kind`],
//! `completion_copies_by_party`). The mails are queued in the transaction that records
//! the seal, so they go once the seal is stored, and a seal repeated after a crash
//! sends none.
//!
//! | key | value |
//! |---|---|
//! | `ccp/{entity}` | [`Copies`] |
//! | `ccpk/{entity}` | [`ByParty`] |

use crate::base::api::{Mail, MailAttachment, Sms};
use crate::base::cx::Cx;
use crate::base::keyspace::{CCP, CCPK};
use crate::base::messages::Words;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, normalize_email};
use crate::domain::accounts::{User, user_key};
use crate::domain::document::{Document, FinalPdf, Role, load_doc, store_doc};
use crate::domain::{downloads, notify, trail};
use serde::{Deserialize, Serialize};

/// What an entity's parties get when a document is completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Copies {
    /// The sealed PDF attached (a link when it is larger than the operator allows).
    #[default]
    Attachment,
    /// A link to download the sealed PDF.
    Link,
    /// No completion mail.
    Nothing,
}

impl Copies {
    /// Its name in the API (`completion_copies`).
    pub fn as_str(self) -> &'static str {
        match self {
            Copies::Attachment => "attachment",
            Copies::Link => "link",
            Copies::Nothing => "none",
        }
    }

    pub fn parse(s: &str) -> Option<Copies> {
        [Copies::Attachment, Copies::Link, Copies::Nothing]
            .into_iter()
            .find(|c| c.as_str() == s)
    }
}

fn key(entity_id: &str) -> Vec<u8> {
    util::key(&[CCP, entity_id])
}

/// The entity's choice (attachments unless it chose otherwise).
pub fn choice(cx: &mut Cx, entity_id: &str) -> Copies {
    cx.load(&key(entity_id)).unwrap_or_default()
}

pub fn set_choice(cx: &mut Cx, entity_id: &str, copies: Copies) {
    cx.save(&key(entity_id), &copies);
}

/// The kinds of party an entity may give a choice of their own
/// (`completion_copies_by_party`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Kind {
    Signers,
    Approvers,
    Cc,
    Owner,
    CopyEmails,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::Signers,
        Kind::Approvers,
        Kind::Cc,
        Kind::Owner,
        Kind::CopyEmails,
    ];

    /// Its name in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Signers => "signers",
            Kind::Approvers => "approvers",
            Kind::Cc => "cc",
            Kind::Owner => "owner",
            Kind::CopyEmails => "copy_emails",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    fn of(role: Role) -> Kind {
        match role {
            Role::Signer => Kind::Signers,
            Role::Approver | Role::ExternalApprover => Kind::Approvers,
            Role::Cc => Kind::Cc,
        }
    }
}

/// The kinds of party whose copies differ from the entity's choice.
pub type ByParty = alloc::collections::BTreeMap<Kind, Copies>;

fn by_party_key(entity_id: &str) -> Vec<u8> {
    util::key(&[CCPK, entity_id])
}

/// What each kind of party gets: the entity's choice unless it chose otherwise for
/// that kind.
pub fn by_party(cx: &mut Cx, entity_id: &str) -> Vec<(Kind, Copies)> {
    let default = choice(cx, entity_id);
    let own: ByParty = cx.load(&by_party_key(entity_id)).unwrap_or_default();
    Kind::ALL
        .into_iter()
        .map(|k| (k, own.get(&k).copied().unwrap_or(default)))
        .collect()
}

/// Sets the copies of some kinds of party; the others keep theirs.
pub fn set_by_party(cx: &mut Cx, entity_id: &str, given: &[(Kind, Copies)]) {
    let mut own: ByParty = cx.load(&by_party_key(entity_id)).unwrap_or_default();
    own.extend(given.iter().copied());
    cx.save(&by_party_key(entity_id), &own);
}

/// One party to send a copy to.
struct Party {
    name: String,
    email: String,
    mobile: String,
    kind: Kind,
}

/// Everyone who gets a copy, each address once: the recipients in their order, the
/// owner, then `sign_copy_emails`.
fn parties(cx: &mut Cx, doc: &Document) -> Vec<Party> {
    let mut out: Vec<Party> = doc
        .recipients
        .iter()
        .map(|r| Party {
            name: r.fullname(),
            email: r.email.clone(),
            mobile: r.mobile.clone(),
            kind: Kind::of(r.role),
        })
        .collect();
    if let Some(owner) = cx.load::<User>(&user_key(&doc.user_id)) {
        let name = format!("{} {}", owner.first_name, owner.last_name);
        out.push(Party {
            name: name.trim().to_string(),
            email: owner.email,
            mobile: String::new(),
            kind: Kind::Owner,
        });
    }
    out.extend(doc.sign_copy_emails.iter().map(|e| Party {
        name: String::new(),
        email: e.clone(),
        mobile: String::new(),
        kind: Kind::CopyEmails,
    }));
    let mut seen = Vec::new();
    out.retain(|p| {
        let id = match p.email.is_empty() {
            true => p.mobile.clone(),
            false => normalize_email(&p.email),
        };
        let new = !id.is_empty() && !seen.contains(&id);
        seen.push(id);
        new
    });
    out
}

/// Queues every party's copy of `doc`, sealed as `file` (in the transaction that
/// records the seal), and says so in the trail.
pub fn send_copies(cx: &mut Cx, doc: &mut Document, file: &FinalPdf) {
    let choices = by_party(cx, &doc.entity_id);
    let fits = file.size <= cx.settings().completion_attachment_max_bytes;
    let words = cx.words(doc.language());
    let (mut attached, mut linked) = (0, 0);
    for p in parties(cx, doc) {
        let copies = choices
            .iter()
            .find(|(k, _)| *k == p.kind)
            .map_or(Copies::Attachment, |(_, c)| *c);
        if copies == Copies::Nothing {
            continue;
        }
        let attach = copies == Copies::Attachment && fits;
        match attach && !p.email.is_empty() {
            true => attached += 1,
            false => linked += 1,
        }
        send_copy(cx, &words, doc, file, &p, attach);
    }
    if attached + linked == 0 {
        return;
    }
    trail::log(
        cx,
        doc,
        &trail::Actor::system(),
        "completion_copies_sent",
        format!(
            "the signed document sent to {} parties: {attached} attached, {linked} as a link",
            attached + linked
        ),
        None,
    );
}

/// A party's copy of document `doc_id` (mailed to `to`) bounced: the trail says so.
pub fn bounced(cx: &mut Cx, doc_id: &str, to: &str, reason: &str) {
    let Some(mut doc) = load_doc(cx, doc_id) else {
        return;
    };
    let before = doc.clone();
    trail::log(
        cx,
        &mut doc,
        &trail::Actor::system(),
        "completion_copy_bounced",
        format!("the signed document's mail to {to} bounced: {reason}"),
        None,
    );
    store_doc(cx, Some(&before), &mut doc);
}

/// The file name of the sealed copy.
fn file_name(doc: &Document) -> String {
    let base: String = doc
        .name
        .chars()
        .map(|c| {
            if c.is_control() || "/\\\"".contains(c) {
                '_'
            } else {
                c
            }
        })
        .collect();
    format!("{}.pdf", base.trim_end_matches(".pdf"))
}

/// One party's copy: a mail with the PDF attached or a link to it; an SMS with the
/// link to a recipient who has no email.
fn send_copy(cx: &mut Cx, words: &Words, doc: &Document, file: &FinalPdf, p: &Party, attach: bool) {
    let subject = words.fill("mail.completed_subject", &[("document", &doc.name)]);
    let intro = words.fill("mail.completed", &[("document", &doc.name)]);
    let to = if p.email.is_empty() {
        &p.mobile
    } else {
        &p.email
    };
    let link = (!attach || p.email.is_empty()).then(|| {
        // Saturating: an operator's number of days never overflows into a past time.
        let ttl = cx
            .settings()
            .completion_link_days
            .saturating_mul(24 * 3600 * 1000);
        let url = downloads::new_link_for(cx, doc, &file.blob, file_name(doc), ttl, to);
        (url, words.time(cx.now().saturating_add(ttl)))
    });
    let tag = format!("completion:{}:{to}", doc.id);
    if p.email.is_empty() {
        let (url, _) = link.expect("made for a recipient without email");
        cx.p.send_sms(Sms {
            to: p.mobile.clone(),
            text: format!("{subject}: {url}"),
            tag,
        });
        return;
    }
    let hello = match p.name.is_empty() {
        true => words.fill("mail.hello", &[("name", &p.email)]),
        false => words.fill("mail.hello", &[("name", &p.name)]),
    };
    let mut body = format!("{hello}\n\n{intro}\n\n");
    let (button, after) = match &link {
        Some((url, until)) => {
            let lead = words.fill("mail.completed_link", &[("date", until)]);
            body.push_str(&format!("{lead}\n{url}\n"));
            (Some((lead, url.clone())), Vec::new())
        }
        None => {
            let attached = words.get("mail.completed_attached");
            body.push_str(&format!("{attached}\n"));
            (None, vec![attached])
        }
    };
    let label = button.as_ref().map(|(lead, url)| {
        (
            lead.trim_end_matches([':', ' ', '\u{a0}', '\u{202f}']),
            url.as_str(),
        )
    });
    let html = notify::branded_html(cx, doc, &[hello, intro], label, &after);
    let attachments = match attach {
        true => vec![MailAttachment {
            name: file_name(doc),
            content_type: "application/pdf".into(),
            blob: file.blob.clone(),
        }],
        false => Vec::new(),
    };
    cx.p.send_mail(Mail {
        to: p.email.clone(),
        subject,
        body,
        tag,
        html,
        attachments,
    });
}
