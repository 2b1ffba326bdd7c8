//! The `esign` command line: one module per command (`main.rs` parses and dispatches).

pub mod admin;
pub mod engine;
pub mod serve;
pub mod verify;
pub mod work;
