//! Builds the engine component (`components/engine`, target wasm32-wasip2, profile
//! `component`) and hands its path to the host crate as `ESIGN_ENGINE_WASM`, so that the
//! `esign` binary embeds the engine it was built with.
//!
//! - Adds the wasm32-wasip2 target with rustup when the toolchain lacks it.
//! - Runs the nested cargo with its own target dir (`<target>/engine-wasm`), so it never
//!   waits on the lock the outer cargo holds on its build directory.
//! - Re-runs when the engine, the component or the WIT changes.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest_dir.parent().unwrap().to_path_buf();
    for path in [
        "engine/src",
        "engine/Cargo.toml",
        "engine/build.rs",
        "engine/assets",
        "engine/openapi.json",
        "components/engine/src",
        "components/engine/Cargo.toml",
        "components/engine/build.rs",
        "wit",
        "Cargo.lock",
        // The `component` profile.
        "Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");

    ensure_wasm_target();

    let target_dir = env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|d| if d.is_relative() { root.join(d) } else { d })
        .unwrap_or_else(|| root.join("target"))
        .join("engine-wasm");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root)
        .args(["build", "--locked", "-p", "esign-engine-component"])
        .args(["--target", TARGET, "--profile", "component", "--target-dir"])
        .arg(&target_dir);
    // Settings meant for the outer build must not leak into the wasm build.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_RUSTFLAGS",
    ] {
        cmd.env_remove(var);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("could not run cargo to build the engine component: {e}"));
    if !out.status.success() {
        panic!(
            "building the engine component failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let wasm = target_dir
        .join(TARGET)
        .join("component")
        .join("esign_engine_component.wasm");
    assert!(wasm.exists(), "{} was not produced", wasm.display());
    println!("cargo:rustc-env=ESIGN_ENGINE_WASM={}", wasm.display());
}

/// Makes sure the active toolchain can build for wasm32-wasip2.
fn ensure_wasm_target() {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let installed = |root: &Path| root.join("lib/rustlib").join(TARGET).exists();
    if sysroot.as_deref().is_some_and(installed) {
        return;
    }
    let status = Command::new("rustup")
        .args(["target", "add", TARGET])
        .status();
    match status {
        Ok(s) if s.success() => {}
        _ => panic!(
            "the Rust target {TARGET} is missing and `rustup target add {TARGET}` failed; \
             install it by hand and build again"
        ),
    }
}
