//! `/v1/documents/...` (spec §2–§4, §8): the routes of one document and of the list.
//!
//! Files: [`create`], [`read`] (the reads), [`list`], [`update`] (properties, expiry,
//! pricing), [`send`] (send, seal, send to recipients, forward, revisions), [`signing`]
//! (manual signing), [`comments`], [`reminders`], [`delete`] (recall, delete, lost),
//! [`roster`] (correcting and removing a recipient), [`fields`], [`custom_data`],
//! [`download`], [`bulk_sends`] (a template sent to many, and its job), [`public_links`] (public signing links from a template, and
//! what a visitor meets at `/p/{slug}`); [`input`] reads request members several of them take.

pub mod bulk_sends;
pub mod comments;
pub mod create;
pub mod custom_data;
pub mod delete;
pub mod download;
pub mod fields;
pub mod input;
pub mod list;
pub mod public_links;
pub mod read;
pub mod reminders;
pub mod roster;
pub mod send;
pub mod signing;
pub mod update;
