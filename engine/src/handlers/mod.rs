//! The handler layer: one module or folder per family of routes (and the job handlers),
//! each translating a request (or a job) into domain calls and the answer. A handler
//! never imports another family's handler; the shapes they share are in [`shapes`], the
//! body members several read in [`inputs`].

pub mod admin;
pub mod agents;
pub mod app;
pub mod attachments;
pub mod auth;
pub mod contacts;
pub mod documents;
pub mod entity;
pub mod evidence;
pub mod folders;
pub mod inputs;
pub mod jobs;
pub mod mail_templates;
pub mod notifications;
pub mod products;
pub mod public_files;
pub mod recipients;
pub mod shapes;
pub mod subscriptions;
pub mod templates;
pub mod uploads;
pub mod users;
pub mod videos;
