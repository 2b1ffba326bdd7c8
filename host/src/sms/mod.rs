//! Text messages: one-time codes and, for recipients with only a mobile number, their
//! links. The engine queues them with `effects.send-sms` in the call's transaction; the
//! mail worker delivers them from their own table ([`crate::mail::Outbox::Sms`]) with
//! the same at-least-once rules, through a transport of this module:
//! [`folder::FolderTransport`] (the default: one text file per message under
//! `<data-dir>/sms`) or [`gateway::GatewayTransport`] (`--sms-gateway-url`: a JSON POST
//! `{"to", "text"}` to an HTTP gateway).
//!
//! Rows are [`crate::host_tables::mail::StoredMail`]s: `to` is the number, `body` the text.

pub mod folder;
pub mod gateway;
