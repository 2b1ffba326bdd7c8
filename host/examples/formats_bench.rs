//! The file work natively and as the formats component in wasmtime (`just bench` runs
//! it after hosts/js/bench.mjs, which wrote the work orders of a 20-page document's life
//! into DIR): per order, the mean and p50 of ROUNDS rounds each way, the ratio (goal:
//! the component within 2x of native) and the component's peak linear memory. The
//! component gets a fresh instance per round, compiled once.
//!
//! Usage: `formats_bench DIR [ROUNDS]` (DIR/<n>/order.json, blobs/, name, now-ms);
//! `FORMATS_BENCH_WASM=FILE` measures another build of the component.

#[allow(dead_code)]
#[path = "../../tests/common/formats_component.rs"]
mod formats_component;

use esign_host::bindings::WorkOrder;
use esign_host::runtime::EMBEDDED_FORMATS;
use formats_component::{FormatsComponent, MemIo};
use std::path::Path;
use std::time::{Duration, Instant};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: formats_bench DIR [ROUNDS]"))?;
    let rounds: usize = args.next().map_or(Ok(5), |r| r.parse())?;
    // FORMATS_BENCH_WASM: another build of the component, to compare builds.
    let wasm = match std::env::var_os("FORMATS_BENCH_WASM") {
        Some(file) => std::fs::read(file)?,
        None => EMBEDDED_FORMATS.to_vec(),
    };
    let component = FormatsComponent::<MemIo>::new(&wasm)?;
    let mut orders: Vec<_> = std::fs::read_dir(&dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    orders.sort();
    println!(
        "== file work of a 20-page document: native vs the formats component in wasmtime ({rounds} rounds each)"
    );
    println!(
        "{:<30} {:>14} {:>14} {:>8} {:>12}",
        "order", "native p50 ms", "wasm p50 ms", "ratio", "peak memory"
    );
    for at in orders {
        let (name, order, now_ms, io) = load(&at)?;
        let shared: esign_formats::work::WorkOrder = order.clone().into();
        let native = time(rounds, || {
            let mut io = io.clone();
            esign_formats::work::perform(&shared, now_ms, &mut io);
        });
        let mut peak = 0;
        let wasm = time(rounds, || {
            let (outcome, _, p) = component.perform(&order, now_ms, io.clone());
            outcome.expect("the component trapped");
            peak = p;
        });
        println!(
            "{name:<30} {:>14.1} {:>14.1} {:>7.2}x {:>8.1} MiB",
            native,
            wasm,
            wasm / native,
            peak as f64 / 1048576.0
        );
    }
    Ok(())
}

/// One order written by hosts/js/bench.mjs, with a [`MemIo`] holding its blobs.
fn load(at: &Path) -> anyhow::Result<(String, WorkOrder, u64, MemIo)> {
    let name = std::fs::read_to_string(at.join("name"))?;
    let order = serde_json::from_str(&std::fs::read_to_string(at.join("order.json"))?)?;
    let now_ms = std::fs::read_to_string(at.join("now-ms"))?.trim().parse()?;
    let mut blobs = Vec::new();
    for e in std::fs::read_dir(at.join("blobs"))? {
        let e = e?;
        blobs.push((
            e.file_name().to_string_lossy().into_owned(),
            std::fs::read(e.path())?,
        ));
    }
    let named: Vec<(&str, Vec<u8>)> = blobs.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    Ok((name, order, now_ms, MemIo::new(&named)))
}

/// The p50 of `rounds` runs of `f`, in milliseconds.
fn time(rounds: usize, mut f: impl FnMut()) -> f64 {
    let mut all: Vec<Duration> = (0..rounds.max(1))
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    all.sort();
    all[all.len() / 2].as_secs_f64() * 1000.0
}
