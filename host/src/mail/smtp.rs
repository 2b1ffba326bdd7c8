//! The SMTP transport (lettre), used when `--smtp-url` is given, e.g.
//! `smtps://user:pass@smtp.example.com`, `smtp://smtp.example.com:587?tls=required`, or
//! `smtp://127.0.0.1:2525` (plain, for a local relay). A 5xx answer is a permanent
//! failure (a hard bounce when the server refuses the recipient); anything else is
//! retried.

use super::{Failure, Transport};
use crate::host_tables::mail::StoredMail;
use anyhow::Context;
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart, header::ContentType};
use lettre::{Message, SmtpTransport, Transport as _};
use std::time::Duration;

pub struct SmtpMailer {
    transport: SmtpTransport,
    from: Mailbox,
}

impl SmtpMailer {
    /// Connects lazily (on the first mail); `url` as described in the module docs.
    pub fn new(url: &str, from: &str, timeout: Duration) -> anyhow::Result<SmtpMailer> {
        let transport = SmtpTransport::from_url(url)
            .with_context(|| format!("the SMTP URL {url:?} is not usable"))?
            .timeout(Some(timeout))
            .build();
        let from = from
            .parse()
            .with_context(|| format!("the sender {from:?} is not a mailbox"))?;
        Ok(SmtpMailer { transport, from })
    }
}

impl Transport for SmtpMailer {
    fn send(&self, mail: &StoredMail) -> Result<(), Failure> {
        let to: Mailbox = mail
            .to
            .parse()
            .map_err(|e| Failure::Permanent(format!("{:?} is not an address: {e}", mail.to)))?;
        let builder = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(mail.subject.clone())
            .message_id(Some(format!("<{}@esign>", mail.id)));
        let text = || SinglePart::plain(mail.body.clone());
        let content = match mail.html.is_empty() {
            true => None,
            false => Some(MultiPart::alternative_plain_html(
                mail.body.clone(),
                mail.html.clone(),
            )),
        };
        let message = if mail.files.is_empty() {
            match content {
                None => builder.singlepart(text()),
                Some(alternative) => builder.multipart(alternative),
            }
        } else {
            // The text (or its alternatives) first, then each file (RFC 2046 mixed).
            let mut mixed = match content {
                None => MultiPart::mixed().singlepart(text()),
                Some(alternative) => MultiPart::mixed().multipart(alternative),
            };
            for (a, bytes) in &mail.files {
                let kind = ContentType::parse(&a.content_type)
                    .unwrap_or_else(|_| ContentType::parse("application/octet-stream").unwrap());
                mixed = mixed.singlepart(Attachment::new(a.name.clone()).body(bytes.clone(), kind));
            }
            builder.multipart(mixed)
        }
        .map_err(|e| Failure::Permanent(format!("the mail cannot be built: {e}")))?;
        match self.transport.send(&message) {
            Ok(_) => Ok(()),
            Err(e) if e.is_permanent() => Err(Failure::Permanent(e.to_string())),
            Err(e) => Err(Failure::Transient(e.into())),
        }
    }
}
