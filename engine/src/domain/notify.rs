//! The mail the document lifecycle sends: recipients' links, reminders, and notices to
//! the owner. Every mail is queued with `send-mail` in the same transaction as the change
//! that caused it.

use crate::base::api::{Mail, Sms};
use crate::base::cx::Cx;
use crate::base::html::esc;
use crate::base::messages::Words;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::accounts::{User, user_key};
use crate::domain::branding;
use crate::domain::document::{self, Document, Recipient};
use crate::domain::links;
use crate::domain::mail_templates;

/// The personal link whose secret is `secret`.
pub fn document_url(cx: &mut Cx, secret: &str) -> String {
    let base = cx.settings().base_url.trim_end_matches('/').to_string();
    format!("{base}/s/{secret}")
}

/// Recipient `r`'s personal link to document `doc_id`, once they have one.
pub fn recipient_url(cx: &mut Cx, doc_id: &str, r: &Recipient) -> Option<String> {
    let secret = links::secret(cx, doc_id, r)?;
    Some(document_url(cx, &secret))
}

/// What the recipient is asked to do, as the last part of a key: `mail.open_{what}`,
/// `mail.reminder_{what}`.
fn what_to_do(r: &Recipient) -> &'static str {
    match r.role {
        document::Role::Signer => "sign",
        document::Role::Approver | document::Role::ExternalApprover => "approve",
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

/// Sends `r` their link to `doc`, in the document's language. `intro` is the first
/// sentence (e.g. "X sent you"). By mail; by SMS when `sms` is asked (and they have a
/// mobile number) or they have no email.
#[allow(clippy::too_many_arguments)]
fn link_mail(
    cx: &mut Cx,
    words: &Words,
    doc: &Document,
    r: &Recipient,
    subject: String,
    intro: String,
    message: &str,
    sms: bool,
) {
    let Some(url) = recipient_url(cx, &doc.id, r) else {
        return;
    };
    if r.email.is_empty() || (sms && !r.mobile.is_empty()) {
        cx.p.send_sms(Sms {
            to: r.mobile.clone(),
            text: format!("{subject}: {url}"),
            tag: format!("recipient:{}:{}", doc.id, r.id),
        });
        return;
    }
    let hello = words.fill("mail.hello", &[("name", &r.fullname())]);
    let open = words.get(&format!("mail.open_{}", what_to_do(r)));
    let personal = words.get("mail.personal");
    let mut body = format!("{hello}\n\n{intro}\n\n{open}\n{url}\n");
    let before = [hello, intro];
    let mut after = Vec::new();
    if !message.is_empty() {
        let from = words.fill("mail.message_from", &[("sender", &doc.sender.name)]);
        body.push_str(&format!("\n{from}\n{message}\n"));
        after.push(format!("{from}\n{message}"));
    }
    body.push_str(&format!("\n{personal}\n"));
    after.push(personal);
    // On the button, the line without the colon that leads to the link in the text.
    let label = open.trim_end_matches([':', ' ', '\u{a0}', '\u{202f}']);
    let html = branded_html(cx, doc, &before, Some((label, &url)), &after);
    cx.p.send_mail(Mail {
        to: r.email.clone(),
        subject,
        body,
        tag: format!("recipient:{}:{}", doc.id, r.id),
        html,
        attachments: Vec::new(),
    });
}

/// A mail to a document's recipient as HTML, in the branding of the document's entity
/// (`domain::branding`): its logo (else esign's name) above the text, its colour on the
/// top rule and on the button to `link` (label, URL), which comes between the
/// paragraphs `before` and `after`. Every text is escaped; a line break in a paragraph
/// stays one. Styles are inline, as mail clients want them.
pub fn branded_html(
    cx: &mut Cx,
    doc: &Document,
    before: &[String],
    link: Option<(&str, &str)>,
    after: &[String],
) -> String {
    let brand = branding::load(cx, &doc.entity_id);
    let base = cx.settings().base_url.trim_end_matches('/').to_string();
    let color = if branding::is_color(&brand.color) {
        brand.color.clone()
    } else {
        "#1a4fd6".to_string()
    };
    let logo = branding::logo_path(&brand);
    let header = if logo.is_empty() {
        format!("<strong style=\"font-size:20px;color:{color}\">esign</strong>")
    } else {
        format!(
            "<img src=\"{}\" alt=\"{}\" style=\"max-height:48px;max-width:240px\">",
            esc(&format!("{base}{logo}")),
            esc(&doc.sender.name)
        )
    };
    let paragraph = |text: &String| {
        format!(
            "<p style=\"margin:0 0 16px\">{}</p>\n",
            esc(text).replace('\n', "<br>\n")
        )
    };
    let mut html = format!(
        "<!doctype html>\n<html lang=\"{}\"><head><meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width\"></head>\n\
         <body style=\"margin:0;padding:24px;background:#f4f5f7;font:16px/1.5 system-ui,sans-serif;color:#1b1f24\">\n\
         <div style=\"max-width:560px;margin:0 auto;background:#fff;border-top:6px solid {color};padding:24px\">\n\
         <div style=\"margin:0 0 24px\">{header}</div>\n",
        esc(doc.language()),
    );
    html.extend(before.iter().map(paragraph));
    if let Some((label, url)) = link {
        html.push_str(&format!(
            "<p style=\"margin:24px 0\"><a href=\"{}\" style=\"display:inline-block;padding:12px 20px;\
             border-radius:6px;background:{color};color:{};text-decoration:none;font-weight:600\">{}</a></p>\n",
            esc(url),
            ink_on(&color),
            esc(label)
        ));
    }
    html.extend(after.iter().map(paragraph));
    html.push_str("</div></body></html>\n");
    html
}

/// Black or white, whichever reads better on `color` (`#rrggbb`): by the colour's
/// perceived brightness (the YIQ weights), white below the middle.
fn ink_on(color: &str) -> &'static str {
    let channel = |i: usize| u32::from(u8::from_str_radix(&color[i..i + 2], 16).unwrap_or(0));
    let brightness = (channel(1) * 299 + channel(3) * 587 + channel(5) * 114) / 1000;
    if brightness < 128 {
        "#ffffff"
    } else {
        "#000000"
    }
}

/// The invitation sent when a document is sent (or a batch goes out).
/// Its subject and message are the document's own, else those of its templates or its
/// entity's defaults (`mail_templates::texts`), else the built-in ones in the
/// document's language.
pub fn invitation(cx: &mut Cx, doc: &Document, r: &Recipient) {
    let words = cx.words(doc.language());
    let (subject, message) = mail_templates::texts(cx, doc, r, mail_templates::Mail::Sendout);
    let subject = if subject.trim().is_empty() {
        words.fill(
            "mail.invitation_subject",
            &[("sender", &doc.sender.name), ("document", &doc.name)],
        )
    } else {
        subject
    };
    let intro = words.fill(
        "mail.invitation",
        &[("sender", &sender_line(doc)), ("document", &doc.name)],
    );
    link_mail(cx, &words, doc, r, subject, intro, &message, false);
}

/// A reminder with the recipient's link: by mail, or by SMS when `sms` (a recipient
/// without a mobile number gets it by mail then).
/// A message given with the reminder wins over the templates' (`mail_templates::texts`).
pub fn reminder(cx: &mut Cx, doc: &Document, r: &Recipient, message: &str, sms: bool) {
    let words = cx.words(doc.language());
    let (subject, texts_message) =
        mail_templates::texts(cx, doc, r, mail_templates::Mail::Reminder);
    let subject = if subject.trim().is_empty() {
        words.fill("mail.reminder_subject", &[("document", &doc.name)])
    } else {
        subject
    };
    let message = if message.trim().is_empty() {
        texts_message.as_str()
    } else {
        message
    };
    let intro = words.fill(
        &format!("mail.reminder_{}", what_to_do(r)),
        &[("sender", &sender_line(doc)), ("document", &doc.name)],
    );
    link_mail(cx, &words, doc, r, subject, intro, message, sms);
}

pub fn revision(cx: &mut Cx, doc: &Document, r: &Recipient, message: &str) {
    let words = cx.words(doc.language());
    let subject = words.fill("mail.revision_subject", &[("document", &doc.name)]);
    let intro = words.fill(
        "mail.revision",
        &[("sender", &sender_line(doc)), ("document", &doc.name)],
    );
    link_mail(cx, &words, doc, r, subject, intro, message, false);
}

pub fn expiration_changed(cx: &mut Cx, doc: &Document, r: &Recipient) {
    let words = cx.words(doc.language());
    let subject = words.fill("mail.expiration_subject", &[("document", &doc.name)]);
    let intro = words.fill(
        "mail.expiration",
        &[
            ("document", &doc.name),
            ("date", &words.time(doc.expiration_ms)),
        ],
    );
    link_mail(cx, &words, doc, r, subject, intro, "", false);
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
        html: String::new(),
        attachments: Vec::new(),
    });
}

/// The code a public link asks of a visitor, mailed to them in `words`' language.
pub fn public_link_code(cx: &mut Cx, words: &Words, to: &str, document: &str, code: &str) {
    cx.p.send_mail(Mail {
        to: to.to_string(),
        subject: words.fill("pub.mail_subject", &[("document", document)]),
        body: words.fill("pub.mail_body", &[("document", document), ("code", code)]),
        tag: String::new(),
        html: String::new(),
        attachments: Vec::new(),
    });
}
