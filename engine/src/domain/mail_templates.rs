//! The texts an entity's mails to recipients use, and which one wins.
//!
//! - Email templates (GetAccept's `/v1/email/templates`): a name, a `type` (`sendout`,
//!   `reminder`) and a `code`, the message text with placeholders; a document's
//!   `email_send_template_id` names one.
//! - Communication templates (`/v1/communication-templates`): the subject, message,
//!   button text, footer and SMS text of the send-out, reminder and signed mails; a
//!   document's `communication_template_id` names one.
//! - The entity's defaults (`GET/PUT /v1/entity`): `email_send_subject` and
//!   `email_send_message`.
//!
//! For an invitation the document's own `email_send_subject`/`email_send_message` win,
//! then its email template, then its communication template, then the entity's
//! defaults, then the built-in text ([`sendout`]). Placeholders: `{{document_name}}`,
//! `{{sender_name}}`, `{{recipient_name}}`, `{{recipient_first_name}}`,
//! `{{entity_name}}` ([`fill`]).
//!
//! | key | value |
//! |---|---|
//! | `emt/{entity}/{id}` | [`EmailTemplate`] |
//! | `cmt/{entity}/{id}` | [`CommunicationTemplate`] |
//! | `ent-texts/{entity}` | [`EntityTexts`] |

use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult};
use crate::base::keyspace::{CMT, EMT, ENT_TEXTS};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::{self, prefix_range};
use crate::base::util::{self, is_id};
use crate::domain::document::{Document, Recipient};
use serde::{Deserialize, Serialize};

/// The most templates of each kind an entity keeps.
pub const MAX_TEMPLATES: usize = 500;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EmailTemplate {
    pub id: String,
    pub entity_id: String,
    pub user_id: String,
    pub name: String,
    /// `sendout` or `reminder`.
    pub kind: String,
    /// The message text, with placeholders.
    pub code: String,
    pub created_ms: u64,
    pub updated_ms: u64,
}

/// The texts of one mail.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct MailTexts {
    pub email_subject: String,
    pub message: String,
    pub button_text: String,
    pub footer: String,
    pub sms_message: String,
    pub automatic_message: bool,
}

/// The texts of a conversation (GetAccept's chat); kept and answered as given.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ConversationTexts {
    pub conversation_starter: String,
    pub reminder_message: String,
    pub automatic_message: bool,
    pub automatic_reminder_message: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CommunicationTemplate {
    pub id: String,
    pub entity_id: String,
    pub name: String,
    pub language: String,
    /// `published` or `draft`.
    pub status: String,
    pub tags: Vec<String>,
    pub sendout: MailTexts,
    pub reminder: MailTexts,
    pub signed: MailTexts,
    pub conversation: ConversationTexts,
    pub created_by: String,
    pub updated_by: String,
    pub created_ms: u64,
    pub updated_ms: u64,
}

/// The entity's default texts.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct EntityTexts {
    pub email_send_subject: String,
    pub email_send_message: String,
}

pub fn email_key(entity: &str, id: &str) -> Vec<u8> {
    util::key(&[EMT, entity, id])
}

pub fn communication_key(entity: &str, id: &str) -> Vec<u8> {
    util::key(&[CMT, entity, id])
}

pub fn entity_texts_key(entity: &str) -> Vec<u8> {
    util::key(&[ENT_TEXTS, entity])
}

pub fn entity_texts(cx: &mut Cx, entity: &str) -> EntityTexts {
    cx.load(&entity_texts_key(entity)).unwrap_or_default()
}

fn not_found(what: &str, id: &str) -> ApiError {
    http::ApiError::not_found("template_not_found", format!("no {what} {id}"))
}

pub fn find_email(cx: &mut Cx, entity: &str, id: &str) -> ApiResult<EmailTemplate> {
    if !is_id(id) {
        return Err(not_found("email template", id));
    }
    cx.load(&email_key(entity, id))
        .ok_or_else(|| not_found("email template", id))
}

pub fn find_communication(cx: &mut Cx, entity: &str, id: &str) -> ApiResult<CommunicationTemplate> {
    if !is_id(id) {
        return Err(not_found("communication template", id));
    }
    cx.load(&communication_key(entity, id))
        .ok_or_else(|| not_found("communication template", id))
}

/// Every record under `{table}/{entity}/` (at most [`MAX_TEMPLATES`]).
pub fn all<T: serde::de::DeserializeOwned>(cx: &mut Cx, table: &str, entity: &str) -> Vec<T> {
    let (start, end) = prefix_range(&format!("{table}/{entity}/"));
    cx.p.scan(&start, &end, MAX_TEMPLATES as u32, false)
        .into_iter()
        .map(|(_, v)| records::decode::<T>(&v))
        .collect()
}

/// The entity's email templates (`emt/`).
pub fn all_email(cx: &mut Cx, entity: &str) -> Vec<EmailTemplate> {
    all(cx, EMT, entity)
}

/// The entity's communication templates (`cmt/`).
pub fn all_communication(cx: &mut Cx, entity: &str) -> Vec<CommunicationTemplate> {
    all(cx, CMT, entity)
}

/// Writes an email template of `entity`, new or changed.
pub fn store_email(cx: &mut Cx, entity: &str, t: &EmailTemplate) {
    cx.save(&email_key(entity, &t.id), t);
}

/// Writes a communication template of `entity`, new or changed.
pub fn store_communication(cx: &mut Cx, entity: &str, t: &CommunicationTemplate) {
    cx.save(&communication_key(entity, &t.id), t);
}

/// Writes the entity's default texts.
pub fn store_entity_texts(cx: &mut Cx, entity: &str, texts: &EntityTexts) {
    cx.save(&entity_texts_key(entity), texts);
}

/// Replaces the placeholders of `text` for one recipient of `doc`.
pub fn fill(text: &str, doc: &Document, r: &Recipient, entity_name: &str) -> String {
    text.replace("{{document_name}}", &doc.name)
        .replace("{{sender_name}}", &doc.sender.name)
        .replace("{{recipient_name}}", &r.fullname())
        .replace("{{recipient_first_name}}", &r.first_name)
        .replace("{{entity_name}}", entity_name)
}

/// Which mail of a communication template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mail {
    Sendout,
    Reminder,
}

/// The subject and message `doc`'s mail of `which` kind to `r` uses, before the
/// built-in text: each empty when nothing sets it (see the module's order).
pub fn texts(cx: &mut Cx, doc: &Document, r: &Recipient, which: Mail) -> (String, String) {
    let entity = &doc.entity_id;
    let entity_name = cx
        .load::<crate::domain::accounts::Entity>(&crate::domain::accounts::entity_key(entity))
        .map(|e| e.name)
        .unwrap_or_default();
    let comm = Some(&doc.ext.communication_template_id)
        .filter(|id| !id.is_empty())
        .and_then(|id| find_communication(cx, entity, id).ok())
        .map(|t| match which {
            Mail::Sendout => t.sendout,
            Mail::Reminder => t.reminder,
        })
        .unwrap_or_default();
    let email_code = Some(&doc.email_send_template_id)
        .filter(|id| !id.is_empty())
        .and_then(|id| find_email(cx, entity, id).ok())
        .filter(|t| match which {
            Mail::Sendout => t.kind != "reminder",
            Mail::Reminder => t.kind == "reminder",
        })
        .map(|t| t.code)
        .unwrap_or_default();
    let defaults = match which {
        Mail::Sendout => entity_texts(cx, entity),
        Mail::Reminder => EntityTexts::default(),
    };
    let (own_subject, own_message) = match which {
        Mail::Sendout => (
            doc.email_send_subject.clone(),
            doc.email_send_message.clone(),
        ),
        Mail::Reminder => (String::new(), String::new()),
    };
    let first = |options: [&String; 3]| -> String {
        options
            .into_iter()
            .find(|t| !t.trim().is_empty())
            .cloned()
            .unwrap_or_default()
    };
    let subject = first([
        &own_subject,
        &comm.email_subject,
        &defaults.email_send_subject,
    ]);
    let message = if !own_message.trim().is_empty() {
        own_message
    } else {
        first([&email_code, &comm.message, &defaults.email_send_message])
    };
    (
        fill(&subject, doc, r, &entity_name),
        fill(&message, doc, r, &entity_name),
    )
}
