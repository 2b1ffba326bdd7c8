//! The wasmtime CLI's `serve`, built from wasmtime-cli 48's own crate (its `commands`
//! module, the code of the `wasmtime` binary), so that tests/hosts.rs serves the engine
//! with the real `wasmtime serve` while `cargo test` compiles wasmtime and cranelift
//! once, shared with the host. `cargo install wasmtime-cli` builds its own copy of both:
//! about 13 minutes on two cores. `ESIGN_WASMTIME` still picks an installed CLI.
//!
//! `cargo run --example wasmtime -- serve component.wasm` works as `wasmtime serve` does.

use clap::Parser;

/// Wasmtime WebAssembly Runtime (the `serve` command of wasmtime-cli).
#[derive(Parser)]
#[command(name = "wasmtime", version = wasmtime_version())]
enum Wasmtime {
    /// Serves requests from a wasi-http proxy component.
    Serve(wasmtime_cli::commands::ServeCommand),
}

/// The version of wasmtime-cli this is built from (host/Cargo.toml pins it with `=`).
const fn wasmtime_version() -> &'static str {
    "48.0.8 (wasmtime-cli's serve, built as esign's example)"
}

fn main() -> wasmtime::Result<()> {
    match Wasmtime::parse() {
        Wasmtime::Serve(command) => command.execute(),
    }
}
