//! Builds the engine component (`components/engine`, target wasm32-wasip2, profile
//! `component`) and hands its path to the host crate as `ESIGN_ENGINE_WASM`, so that the
//! `esign` binary embeds the engine it was built with. Then builds the two components of
//! `hosts/wasi-http` and composes them with that engine into one component that serves
//! the API as `wasi:http/incoming-handler` (`ESIGN_WASI_HTTP_WASM`, written by `esign
//! engine export --wasi-http`). And builds the formats component (`components/formats`:
//! the file work, `ESIGN_FORMATS_WASM`, written by `esign engine export --formats`),
//! which the native host does not run (it links the same code) but other hosts do.
//!
//! - Adds the wasm32-wasip2 target with rustup when the toolchain lacks it.
//! - Runs the nested cargo with its own target dirs (`<target>/engine-wasm`, and
//!   `<target>/formats-wasm` for the SIMD build of the file work), so it never waits on
//!   the lock the outer cargo holds on its build directory.
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
        "components/formats/src",
        "components/formats/Cargo.toml",
        "formats/src",
        "formats/Cargo.toml",
        "hosts/wasi-http",
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
    // The engine on its own, so that features of the other components cannot change it.
    // The file work with wasm SIMD (which wasmtime, V8 and workerd run): LLVM vectorizes
    // the rasterizer's loops, a 20-page render with page images 390 -> 293 ms in
    // wasmtime (`just bench`), the bytes unchanged (SIMD arithmetic is IEEE's, and
    // `tests/formats.rs` compares them with the native build's). In a target dir of its
    // own: other flags there would rebuild the engine's dependencies on every build.
    // The two builds run side by side (they share the outer cargo's job slots): the
    // engine's whole-program link is one thread, which the other build's crates fill.
    let (engine_dir, out) = std::thread::scope(|s| {
        let engine = s.spawn(|| build(&root, &target_dir, &["esign-engine-component"], ""));
        let formats = build(
            &root,
            &target_dir.with_file_name("formats-wasm"),
            &[
                "esign-wasi-store",
                "esign-wasi-adapter",
                "esign-formats-component",
            ],
            "-Ctarget-feature=+simd128",
        );
        (engine.join().expect("the engine build panicked"), formats)
    });
    let engine = engine_dir.join("esign_engine_component.wasm");
    assert!(engine.exists(), "{} was not produced", engine.display());
    println!("cargo:rustc-env=ESIGN_ENGINE_WASM={}", engine.display());
    let formats = out.join("esign_formats_component.wasm");
    assert!(formats.exists(), "{} was not produced", formats.display());
    println!("cargo:rustc-env=ESIGN_FORMATS_WASM={}", formats.display());
    let composed = PathBuf::from(env::var("OUT_DIR").unwrap()).join("esign-wasi-http.wasm");
    let bytes = compose(
        &engine,
        &formats,
        &out.join("esign_wasi_store.wasm"),
        &out.join("esign_wasi_adapter.wasm"),
    )
    .unwrap_or_else(|e| panic!("composing the wasi:http component failed: {e:#}"));
    std::fs::write(&composed, bytes).unwrap();
    println!(
        "cargo:rustc-env=ESIGN_WASI_HTTP_WASM={}",
        composed.display()
    );
}

/// Builds `packages` for wasm32-wasip2 with the `component` profile and `rustflags` in
/// one nested cargo run; returns the directory of the artifacts.
fn build(root: &Path, target_dir: &Path, packages: &[&str], rustflags: &str) -> PathBuf {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root).args(["build", "--locked"]);
    for p in packages {
        cmd.args(["-p", p]);
    }
    cmd.args(["--target", TARGET, "--profile", "component", "--target-dir"])
        .arg(target_dir);
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
    if !rustflags.is_empty() {
        cmd.env("CARGO_ENCODED_RUSTFLAGS", rustflags);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("could not run cargo to build {packages:?}: {e}"));
    if !out.status.success() {
        panic!(
            "building {packages:?} for {TARGET} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    target_dir.join(TARGET).join("component")
}

/// The engine served as `wasi:http/incoming-handler` (see
/// `hosts/wasi-http/wit/wasi-http.wit`): the store component, two instances of the
/// engine on it (one per call an incoming request makes), the formats component on it
/// (the work orders of due jobs), and the adapter. What none of them provides (WASI
/// clocks, random, filesystem, environment, stdio) stays an import of the result.
/// wac-graph is the Bytecode Alliance's composition library, the one the `wac` tool is
/// built on.
fn compose(engine: &Path, formats: &Path, store: &Path, adapter: &Path) -> anyhow::Result<Vec<u8>> {
    use wac_graph::{CompositionGraph, EncodeOptions, types::Package};
    const ENGINE_IMPORTS: [&str; 5] = [
        "esign:engine/types@0.5.0",
        "esign:engine/store@0.5.0",
        "esign:engine/files@0.5.0",
        "esign:engine/effects@0.5.0",
        "esign:engine/host@0.5.0",
    ];
    const FORMATS_IMPORTS: [&str; 6] = [
        "esign:formats/blobs@0.5.0",
        "esign:formats/download@0.5.0",
        "esign:formats/convert@0.5.0",
        "esign:formats/signing@0.5.0",
        "esign:formats/timestamping@0.5.0",
        "esign:formats/log@0.5.0",
    ];
    let mut g = CompositionGraph::new();
    let mut package = |name: &str, path: &Path| -> anyhow::Result<_> {
        let p = Package::from_file(name, None, path, g.types_mut())?;
        Ok(g.register_package(p)?)
    };
    let store = package("esign:wasi-store", store)?;
    let engine = package("esign:engine", engine)?;
    let formats = package("esign:formats", formats)?;
    let adapter = package("esign:wasi-adapter", adapter)?;
    let imports_of = |g: &CompositionGraph, p: wac_graph::PackageId| -> Vec<String> {
        g.types()[g[p].ty()].imports.keys().cloned().collect()
    };
    let (engine_imports, formats_imports, adapter_imports) = (
        imports_of(&g, engine),
        imports_of(&g, formats),
        imports_of(&g, adapter),
    );

    let s = g.instantiate(store);
    let [e1, e2] = [g.instantiate(engine), g.instantiate(engine)];
    let f = g.instantiate(formats);
    let a = g.instantiate(adapter);
    // Each of the store's items goes to every instance that imports it by that name.
    let takers = [
        (e1, &engine_imports),
        (e2, &engine_imports),
        (f, &formats_imports),
        (a, &adapter_imports),
    ];
    let give = |g: &mut CompositionGraph, name: &str, item| -> anyhow::Result<()> {
        for (node, imports) in takers {
            if imports.iter().any(|i| i == name) {
                g.set_instantiation_argument(node, name, item)?;
            }
        }
        Ok(())
    };
    for name in ENGINE_IMPORTS.iter().chain(&FORMATS_IMPORTS) {
        let export = g.alias_instance_export(s, name)?;
        give(&mut g, name, export)?;
    }
    // The world-level `use types.{..}` of the engine and the adapter imports these types
    // on their own; they are the store's, like the rest of `types`.
    let types = g.alias_instance_export(s, "esign:engine/types@0.5.0")?;
    for name in ["request", "response", "job", "job-outcome"] {
        let ty = g.alias_instance_export(types, name)?;
        give(&mut g, name, ty)?;
    }
    let calls = g.alias_instance_export(s, "esign:wasi-http/calls@0.1.0")?;
    g.set_instantiation_argument(a, "esign:wasi-http/calls@0.1.0", calls)?;
    let work = g.alias_instance_export(f, "esign:formats/work@0.5.0")?;
    g.set_instantiation_argument(a, "esign:formats/work@0.5.0", work)?;
    for (import, instance, export) in [
        ("handle", e1, "handle"),
        ("background-handle", e2, "handle"),
        ("background-run-job", e2, "run-job"),
    ] {
        let f = g.alias_instance_export(instance, export)?;
        g.set_instantiation_argument(a, import, f)?;
    }
    let handler = g.alias_instance_export(a, "wasi:http/incoming-handler@0.2.12")?;
    g.export(handler, "wasi:http/incoming-handler@0.2.12")?;
    Ok(g.encode(EncodeOptions::default())?)
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
