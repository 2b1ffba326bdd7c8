//! The SMTP transport (lettre), used when `--smtp-url` is given, e.g.
//! `smtps://user:pass@smtp.example.com`, `smtp://smtp.example.com:587?tls=required`, or
//! `smtp://127.0.0.1:2525` (plain, for a local relay). A 5xx answer is a permanent
//! failure (a hard bounce when the server refuses the recipient); anything else is
//! retried.

use super::{Failure, Transport};
use crate::host_tables::mail::StoredMail;
use anyhow::Context;
use lettre::message::{Mailbox, MultiPart, header::ContentType};
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
        let message = if mail.html.is_empty() {
            builder
                .header(ContentType::TEXT_PLAIN)
                .body(mail.body.clone())
        } else {
            builder.multipart(MultiPart::alternative_plain_html(
                mail.body.clone(),
                mail.html.clone(),
            ))
        }
        .map_err(|e| Failure::Permanent(format!("the mail cannot be built: {e}")))?;
        match self.transport.send(&message) {
            Ok(_) => Ok(()),
            Err(e) if e.is_permanent() => Err(Failure::Permanent(e.to_string())),
            Err(e) => Err(Failure::Transient(e.into())),
        }
    }
}
