//! The esign domain core.
//!
//! This crate decides: routing, authentication, authorization, validation, state
//! changes, and which effects (events, jobs, mail) follow. It performs no I/O of its own.
//! Everything it needs from the world comes through [`Platform`], which the wasm
//! component (`components/engine`) implements with the WIT imports of `wit/esign.wit`
//! and which tests implement in memory ([`memory::MemoryPlatform`]).
//!
//! Entry points: [`handle`] answers one request; [`run_job`] runs one due job. Each is
//! meant to run inside one host transaction: all of its store writes and effects
//! commit together or not at all.
//!
//! The crate is `no_std` (with `alloc`), so the component needs no WASI beyond the clock
//! and randomness the host gives it.
//!
//! Layers (ARCHITECTURE.md, "Layers"; `tools/tidy` checks them): `base` (the interface
//! types, `Cx`, records, HTTP helpers) → `domain` (records, rules, state changes,
//! events) → `handlers` (one family of routes each, and the job handlers) → [`router`]
//! and `job_table` (the route and job tables) → this file. A module imports only from its
//! own layer's lower modules or from layers below.

#![cfg_attr(not(test), no_std)]
#![recursion_limit = "256"]
#![warn(clippy::too_many_lines)]

extern crate alloc;

mod base;
mod domain;
mod handlers;
mod job_table;
pub mod memory;
pub mod router;

use base::cx::Cx;
#[allow(unused_imports)]
use base::prelude::*;

pub use base::api::*;
pub use base::http::ApiError;
/// Every key family of the engine (`doc/`, `dlog/`, ...) and which have a PostgreSQL
/// table of their own, for the host's test that holds its tables to them.
pub use base::keyspace;
/// The longest text a request body member may hold (`base::limits`), for the contract
/// test that keeps `openapi.json`'s `maxLength`s equal to it.
pub use base::limits::max_chars;
/// The policy defaults (token and login lifetimes, the login lock, token spacing, upload
/// lifetime): hosts pass only what an operator overrides, and show these in their help.
pub use base::policy;
/// RFC 3339 formatting and parsing of milliseconds since the epoch, as the API uses them.
pub use base::util::{iso8601, parse_time, sha256_hex};
pub use base::work_orders;
pub use base::work_orders::*;
/// The audit trail's hash chain (RFC 8785 canonical JSON, entry encoding), for tests and tools.
pub use domain::trail;

/// Answers one request. Never panics on bad input: every client mistake becomes a 4xx
/// in the error shape `{"error", "description", "status"}`.
pub fn handle(p: &mut dyn Platform, req: &Request) -> Response {
    let mut fresh = base::fresh::FreshKeys::new(p);
    let mut cx = Cx::new(&mut fresh);
    let (answer, template) = router::route_named(&mut cx, req);
    let mut resp = answer.unwrap_or_else(|err| err.into_response());
    if let Some(template) = template {
        resp.headers
            .push((router::ROUTE_HEADER.into(), template.into()));
    }
    // No answer is ever to be read as another type than it says (an uploaded file, an
    // error): every answer forbids sniffing.
    let named = |h: &(String, String)| h.0.eq_ignore_ascii_case("x-content-type-options");
    if !resp.headers.iter().any(named) {
        resp.headers
            .push(("x-content-type-options".into(), "nosniff".into()));
    }
    resp
}

/// Checks the store against its records, for tests and simulations: what `esign admin
/// check` checks (`domain/check.rs`: each document's trail chain, index keys and seal,
/// no index key without its document, every blob reference names a stored blob).
/// Returns what is wrong (empty when all holds).
#[doc(hidden)]
pub fn check_invariants(p: &mut dyn Platform) -> Vec<String> {
    domain::check::invariants(&mut Cx::new(p))
}

/// Runs one due job (see `job_table::JOBS`, the job table).
pub fn run_job(p: &mut dyn Platform, job: &Job) -> JobOutcome {
    job_table::run(&mut Cx::new(&mut base::fresh::FreshKeys::new(p)), job)
}
