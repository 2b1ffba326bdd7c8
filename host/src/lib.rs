//! The esign host: everything around the engine component that touches the world.
//!
//! - [`runtime`]: the wasmtime embedding and the world's imports.
//! - [`store`]: transactional storage ([`store::Store`], [`store::Txn`]) over a
//!   [`store::Backend`] (sled by default).
//! - [`calls`]: one engine call = one transaction; conflicts re-run, traps roll back.
//! - [`job_runner`]: the runner for scheduled jobs; [`host_tables`]: the rows the
//!   engine's effects queue for it and the other workers (jobs, mail, webhook events).
//! - [`mail`]: delivery of queued mail through a transport (a folder by default).
//! - [`admin_channel`]: the Unix socket `esign admin` reaches a running server by;
//!   [`backup`]: online backups and restores of the embedded store.
//! - [`server`]: hyper + rustls front; [`health`] its `/healthz` and `/readyz`.
//! - [`metrics`]: the Prometheus page (`--metrics-listen`); [`logging`]: the log's
//!   format and the redaction of secrets in paths.
//! - [`passwords`]: argon2id for the engine's password imports.
//! - [`webhooks`]: delivery of queued webhook events (signed, retried, dead-lettered).
//! - [`file_work`]: host work for jobs (download, import, Word conversion, rendering), run in
//!   the formats component under a memory cap and a deadline ([`sandbox`]), with
//!   [`pdf`] and [`office`] doing the file formats and [`outbound`] the HTTPS client.
//!
//! The `esign` binary (`main.rs`) wires these together behind its CLI.

pub mod admin_channel;
pub mod backup;
pub mod bindings;
pub mod calls;
pub mod check;
pub mod cli;
pub mod clock;
pub mod compile_cache;
pub mod eid;
pub mod evidence;
pub mod file_work;
pub mod fs;
pub mod health;
pub mod ids;
pub mod job_runner;
pub mod logging;
pub mod mail;
pub mod metrics;
pub mod migrate;
pub mod outbound;
pub mod passwords;
/// The file formats, from their own crate (so they build and fuzz without wasmtime).
pub use esign_formats::{office, pdf, raster, stamp};
pub mod host_tables;
pub mod queues;
pub mod runtime;
pub mod sandbox;
pub mod server;
pub mod sms;
pub mod staged_parts;
pub mod store;
pub mod webhooks;
