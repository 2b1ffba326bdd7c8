//! Any request, to any route, with or without a valid token: the engine answers an
//! HTTP status and never panics (a panic is a crash here). Covers routing and the
//! decoding of JSON, form and multipart-field bodies, queries and headers. The input
//! and the driver are in `fuzz/shared/engine_request.rs`, which `cargo test` also
//! replays the corpus through.
#![no_main]

#[path = "../shared/engine_request.rs"]
mod engine_request;

libfuzzer_sys::fuzz_target!(|input: engine_request::Input| engine_request::run(input));
