//! The engine component under other hosts than ours (issue 14): Node.js through jco
//! (`hosts/js`, its own `node:test` suite, which compares every answer with this
//! binary's) and `wasmtime serve` through the WASI HTTP adapter (`hosts/wasi-http`).
//!
//! Each skips, saying so, when its tools are missing, unless `ESIGN_REQUIRE_HOSTS=1`
//! (CI sets it; `.ci/run` installs them).

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn required() -> bool {
    std::env::var("ESIGN_REQUIRE_HOSTS").is_ok_and(|v| v == "1")
}

/// Skips (returns false) or, when required, fails, saying what is missing.
fn have(ok: bool, what: &str) -> bool {
    assert!(ok || !required(), "ESIGN_REQUIRE_HOSTS=1 but {what}");
    if !ok {
        eprintln!("skipped: {what}");
    }
    ok
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn node_host_through_jco_answers_like_this_host() {
    let js = repo().join("hosts/js");
    let installed = js.join("node_modules/@bytecodealliance/jco").is_dir()
        && succeeds(Command::new("node").arg("--version"));
    if !have(
        installed,
        "node or hosts/js/node_modules is missing (npm ci --prefix hosts/js)",
    ) {
        return;
    }
    let out = output_within(
        Command::new("node")
            .args(["--test", "--test-reporter=spec", "test/"])
            .current_dir(&js)
            .env("ESIGN_BIN", esign_bin())
            .env(
                "ESIGN_COMPILE_CACHE",
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("compile-cache"),
            ),
        300,
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the node:test suite failed:\n{text}");
    // Two tests ran and passed (a suite that found no tests also exits 0).
    assert!(text.contains("pass 2"), "{text}");
}
