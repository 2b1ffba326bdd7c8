//! Compiled components kept on disk: a component's machine code, precompiled by an
//! engine and keyed by the wasm's hash, so that a restart (or another test server on
//! the same cache) loads it in milliseconds instead of compiling it again.

use crate::fs::write_whole;
use anyhow::Context;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Instant;
use wasmtime::Engine;
use wasmtime::component::Component;

/// Loads the component `wasm` precompiled for `engine` from `cache_dir`, or compiles
/// it and writes it there. `what` names the component in the log and in the cache's
/// file names (`{what}-{hash}.cwasm`).
pub fn load_component(
    engine: &Engine,
    wasm: &[u8],
    cache_dir: Option<&Path>,
    what: &str,
) -> anyhow::Result<Component> {
    let started = Instant::now();
    let digest = Sha256::digest(wasm);
    let name: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    let cached: Option<PathBuf> = cache_dir.map(|d| d.join(format!("{what}-{name}.cwasm")));
    // Several processes starting on one cache (a test suite's servers) compile once:
    // the others wait on the lock, then load what the first wrote.
    let _lock = cache_dir.and_then(|d| {
        std::fs::create_dir_all(d).ok()?;
        let file = std::fs::File::create(d.join(format!("{what}-{name}.lock"))).ok()?;
        file.lock().ok()?;
        Some(file)
    });
    if let Some(path) = &cached
        && path.exists()
    {
        // SAFETY: the file is one this function wrote with `precompile_component` for the
        // same wasm bytes; wasmtime checks that it matches this engine's configuration
        // and version, and we fall back to compiling when it does not.
        match unsafe { Component::deserialize_file(engine, path) } {
            Ok(c) => {
                tracing::info!(
                    "{what} component loaded from {} in {:?}",
                    path.display(),
                    started.elapsed()
                );
                return Ok(c);
            }
            Err(e) => tracing::warn!("ignoring unusable compile cache {}: {e}", path.display()),
        }
    }
    let bytes = engine
        .precompile_component(wasm)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("compiling the {what} component"))?;
    if let Some(path) = &cached {
        let write = std::fs::create_dir_all(path.parent().unwrap())
            .and_then(|()| write_whole(path, &bytes));
        if let Err(e) = write {
            tracing::warn!("could not write the compile cache {}: {e}", path.display());
        }
    }
    // SAFETY: `bytes` was produced just now by `precompile_component` of this engine.
    let component = unsafe { Component::deserialize(engine, &bytes)? };
    tracing::info!("{what} component compiled in {:?}", started.elapsed());
    Ok(component)
}
