//! The domain layer: records and their keys, the rules, state changes, events and the
//! audit trail. It decides; it never imports a handler or the router (`tools/tidy`
//! checks), and its modules import one another in one direction only.

pub mod access;
pub mod accounts;
pub mod attachments;
pub mod auth;
pub mod blobs;
pub mod branding;
pub mod check;
pub mod contacts;
pub mod custom_data;
pub mod deletion;
pub mod document;
pub mod document_states;
pub mod downloads;
pub mod events;
pub mod evidence;
pub mod fields;
pub mod folders;
pub mod forgetting;
pub mod identity;
pub mod invitations;
pub mod links;
pub mod list;
pub mod logins;
pub mod mail_templates;
pub mod members;
pub mod notify;
pub mod oauth;
pub mod page_views;
pub mod pages;
pub mod previews;
pub mod pricing;
pub mod products;
pub mod public_files;
pub mod recipient_acts;
pub mod recipient_states;
pub mod rendering;
pub mod sending;
pub mod signatures;
pub mod signup;
pub mod templates;
pub mod trail;
pub mod uploads;
pub mod videos;
pub mod webhooks;
