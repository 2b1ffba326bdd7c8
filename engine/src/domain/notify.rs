//! The mail the document lifecycle sends: recipients' links, reminders, and notices to
//! the owner. Every mail is queued with `send-mail` in the same transaction as the change
//! that caused it.

use crate::base::api::{Mail, Sms};
use crate::base::cx::Cx;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util;
use crate::domain::accounts::{User, user_key};
use crate::domain::document::{self, Document, Recipient};
use crate::domain::mail_templates;

/// The recipient's personal link.
pub fn document_url(cx: &mut Cx, secret: &str) -> String {
    let base = cx.settings().base_url.trim_end_matches('/').to_string();
    format!("{base}/s/{secret}")
}

fn what_to_do(r: &Recipient) -> &'static str {
    match r.role {
        document::Role::Signer => "review and sign",
        document::Role::Approver | document::Role::ExternalApprover => "review and approve",
        document::Role::Cc => "view",
    }
}

fn sender_line(doc: &Document) -> String {
    if doc.sender.email.is_empty() {
        doc.sender.name.clone()
    } else {
        format!("{} <{}>", doc.sender.name, doc.sender.email)
    }
}

/// Sends `r` their link to `doc`. `intro` is the first sentence (e.g. "X sent you").
/// By mail; by SMS when `sms` is asked (and they have a mobile number) or they have no
/// email.
fn link_mail(
    cx: &mut Cx,
    doc: &Document,
    r: &Recipient,
    subject: String,
    intro: String,
    message: &str,
    sms: bool,
) {
    let Some(secret) = &r.secret else { return };
    let url = document_url(cx, secret);
    if r.email.is_empty() || (sms && !r.mobile.is_empty()) {
        cx.p.send_sms(Sms {
            to: r.mobile.clone(),
            text: format!("{subject}: {url}"),
            tag: format!("recipient:{}:{}", doc.id, r.id),
        });
        return;
    }
    let mut body = format!(
        "Hello {},\n\n{intro}\n\nOpen it here to {}:\n{url}\n",
        r.fullname(),
        what_to_do(r)
    );
    if !message.is_empty() {
        body.push_str(&format!("\nMessage from {}:\n{message}\n", doc.sender.name));
    }
    body.push_str("\nThis link is personal: do not forward it.\n");
    cx.p.send_mail(Mail {
        to: r.email.clone(),
        subject,
        body,
        tag: format!("recipient:{}:{}", doc.id, r.id),
    });
}

/// The invitation sent when a document is sent (or a batch goes out).
/// Its subject and message are the document's own, else those of its templates or its
/// entity's defaults (`mail_templates::texts`), else the built-in ones.
pub fn invitation(cx: &mut Cx, doc: &Document, r: &Recipient) {
    let (subject, message) = mail_templates::texts(cx, doc, r, mail_templates::Mail::Sendout);
    let subject = if subject.trim().is_empty() {
        format!("{} sent you \"{}\"", doc.sender.name, doc.name)
    } else {
        subject
    };
    let intro = format!(
        "{} sent you the document \"{}\".",
        sender_line(doc),
        doc.name
    );
    link_mail(cx, doc, r, subject, intro, &message, false);
}

/// A reminder with the recipient's link: by mail, or by SMS when `sms` (a recipient
/// without a mobile number gets it by mail then).
/// A message given with the reminder wins over the templates' (`mail_templates::texts`).
pub fn reminder(cx: &mut Cx, doc: &Document, r: &Recipient, message: &str, sms: bool) {
    let (subject, texts_message) =
        mail_templates::texts(cx, doc, r, mail_templates::Mail::Reminder);
    let subject = if subject.trim().is_empty() {
        format!("Reminder: \"{}\" is waiting for you", doc.name)
    } else {
        subject
    };
    let message = if message.trim().is_empty() {
        texts_message.as_str()
    } else {
        message
    };
    let intro = format!(
        "{} is waiting for you to {} \"{}\".",
        sender_line(doc),
        what_to_do(r),
        doc.name
    );
    link_mail(cx, doc, r, subject, intro, message, sms);
}

pub fn revision(cx: &mut Cx, doc: &Document, r: &Recipient, message: &str) {
    let subject = format!("\"{}\" was updated", doc.name);
    let intro = format!(
        "{} published a new revision of \"{}\".",
        sender_line(doc),
        doc.name
    );
    link_mail(cx, doc, r, subject, intro, message, false);
}

pub fn expiration_changed(cx: &mut Cx, doc: &Document, r: &Recipient) {
    let subject = format!("New expiration date for \"{}\"", doc.name);
    let intro = format!(
        "The document \"{}\" now expires on {}.",
        doc.name,
        util::iso8601(doc.expiration_ms)
    );
    link_mail(cx, doc, r, subject, intro, "", false);
}

/// A notice to the document's owner.
pub fn owner_notice(cx: &mut Cx, doc: &Document, subject: String, text: String) {
    let Some(owner) = cx.load::<User>(&user_key(&doc.user_id)) else {
        return;
    };
    let name = if owner.first_name.is_empty() {
        owner.email.clone()
    } else {
        owner.first_name.clone()
    };
    cx.p.send_mail(Mail {
        to: owner.email,
        subject,
        body: format!(
            "Hello {name},\n\n{text}\n\nDocument: {} ({})\n",
            doc.name, doc.id
        ),
        tag: String::new(),
    });
}
