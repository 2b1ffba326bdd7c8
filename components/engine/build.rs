//! Sets the component's shadow-stack size. Rust's default for wasm is 1 MiB, placed
//! first in linear memory (below the data), so an overflow traps instead of writing
//! into data. Every instance's memory is reset when its call ends, and that reset walks
//! the page table of the whole memory: each page we do not need costs every call.
//!
//! The engine's deepest stack is JSON at serde_json's recursion limit (128 levels:
//! parsed, serialized again by MCP tool calls, dropped). `tests/http.rs`
//! (`json_as_deep_as_the_parser_allows_is_answered_not_trapped`) sends that to each
//! JSON-reading route family and fails when the stack is too small (the call traps
//! and answers 500): it passed at 64 KiB and failed at 16 KiB, so 256 KiB is four
//! times what it needs.
const STACK_SIZE: usize = 256 * 1024;

fn main() {
    println!("cargo:rustc-link-arg-cdylib=-zstack-size={STACK_SIZE}");
    println!("cargo:rerun-if-changed=build.rs");
    // `wit_bindgen::generate!` reads the WIT, which cargo does not see as a source.
    println!("cargo:rerun-if-changed=../../wit");
}
