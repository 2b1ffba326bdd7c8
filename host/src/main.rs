//! `esign`: the e-signing service. `esign serve` runs the HTTP API; `esign admin ...`
//! manages entities, users and memberships in the same data directory.

use clap::{Parser, Subcommand};
use esign_host::cli::admin::{AdminArgs, admin};
use esign_host::cli::engine::export_engine;
use esign_host::cli::serve::{ServeArgs, serve};
use esign_host::cli::verify::{VerifyArgs, verify};
use esign_host::cli::work::{WorkArgs, work};
use esign_host::runtime;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "esign",
    version,
    about = "Electronic proposals and contracts: the esign service"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API.
    Serve(Box<ServeArgs>),
    /// Manage entities, users and memberships; back up, restore and check the store.
    /// Commands go through the running server's admin socket (<data-dir>/admin.sock);
    /// when no server runs, they open the store themselves.
    Admin(AdminArgs),
    /// Check the signature of a sealed PDF: valid, covering the whole file, by which
    /// certificate, when, and for which document and audit trail head. Exits 0 only
    /// when all of it holds (and, with --cert, the signer is that certificate).
    Verify(VerifyArgs),
    /// The engine component this binary embeds.
    #[command(subcommand)]
    Engine(EngineCommand),
}

#[derive(Subcommand)]
enum EngineCommand {
    /// Write the embedded engine component (wasm32-wasip2, world `esign:engine/esign` of
    /// wit/esign.wit) to FILE, so that another host runs exactly this build. Prints its
    /// SHA-256, which `esign serve` logs for the engine it runs.
    Export {
        /// Where to write the component (replaced if it exists).
        file: PathBuf,
        /// Write instead the engine composed with `hosts/wasi-http` into one component
        /// that exports `wasi:http/incoming-handler`, for `wasmtime serve -Scli --dir
        /// DATA::/data FILE` (docs/embedding.md).
        #[arg(long, conflicts_with = "formats")]
        wasi_http: bool,
        /// Write instead the formats component (world `esign:formats/formats` of
        /// wit/formats/formats.wit): the file work (import, render, page images, seal)
        /// for hosts other than this one (docs/embedding.md).
        #[arg(long)]
        formats: bool,
    },
    /// Do one work order (import, render, seal) with this binary's own file work, the
    /// code the formats component is built from: to compare another host's formats
    /// component with it, or to see what an order gives.
    Work(WorkArgs),
}

fn main() {
    esign_host::logging::init();
    esign_host::fs::restrict_new_files();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve(*args),
        Command::Admin(args) => admin(args),
        Command::Verify(args) => verify(args),
        Command::Engine(EngineCommand::Work(args)) => work(args),
        Command::Engine(EngineCommand::Export {
            file,
            wasi_http,
            formats,
        }) => export_engine(
            &file,
            match (wasi_http, formats) {
                (true, _) => runtime::EMBEDDED_WASI_HTTP,
                (_, true) => runtime::EMBEDDED_FORMATS,
                _ => runtime::EMBEDDED_ENGINE,
            },
        ),
    };
    if let Err(e) = result {
        eprintln!("esign: {e:#}");
        std::process::exit(1);
    }
}
