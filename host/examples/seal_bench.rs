//! Sealing benchmarks, in process on one thread (`just bench` runs it):
//!
//! 1. The work between the last signature and the sealed final PDF of a 20-page
//!    document, without a TSA: render (pages + audit certificate), page images, seal;
//!    p50/p99 of 50, each part on its own.
//! 2. Seals per second on one core for a rendered 1-page document.
//!
//! Usage: `seal_bench` (env `SEAL_BENCH_ROUNDS` overrides the 50 rounds).

use esign_formats::seal;
use esign_host::evidence::{Sealer, keys};
use esign_host::{pdf, raster};
use std::time::{Duration, Instant};

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

fn certificate() -> Vec<pdf::Block> {
    let mut b = vec![pdf::Block::Heading("Audit certificate".into())];
    for i in 0..4 {
        b.push(pdf::Block::HeaderRow(vec![
            format!("Signer {i} (s{i}@example.com)"),
            "signer".into(),
            "signed".into(),
        ]));
        for act in ["sent", "viewed", "reviewed", "signed"] {
            b.push(pdf::Block::Row(vec![
                "2026-11-23T12:00:00+00:00".into(),
                act.into(),
                "IP 203.0.113.7".into(),
            ]));
        }
        b.push(pdf::Block::Text(
            "User agent: Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X)".into(),
        ));
        b.push(pdf::Block::Signature {
            picture: None,
            text: format!("Signer {i}"),
            caption: format!("Signer {i}, signed 2026-11-23T12:00:00+00:00"),
        });
    }
    b
}

fn main() -> anyhow::Result<()> {
    let rounds: usize = std::env::var("SEAL_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let dir = std::env::temp_dir().join(format!("seal-bench-{}", std::process::id()));
    let sealer = Sealer::new(keys::load_or_create(&dir, None, None)?, None)?;
    let meta = seal::Metadata {
        document_id: "benchdocument0001",
        log_head: &"ab".repeat(32),
    };
    let source = pdf::sample_pdf(20);
    let summary = certificate();
    let (mut render, mut images, mut seal, mut total) = (vec![], vec![], vec![], vec![]);
    for _ in 0..rounds {
        let t0 = Instant::now();
        let out = pdf::render(&[&source], &[], &Default::default(), &[], &summary)?;
        let t1 = Instant::now();
        let pics =
            raster::page_images(&out.pdf, raster::PAGE_WIDTH_PX).map_err(anyhow::Error::msg)?;
        let t2 = Instant::now();
        let (sealed, _) = seal::seal(&out.pdf, &meta, esign_host::clock::now_ms(), &sealer)
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let t3 = Instant::now();
        assert!(sealed.len() > out.pdf.len() && !pics.is_empty());
        render.push(t1 - t0);
        images.push(t2 - t1);
        seal.push(t3 - t2);
        total.push(t3 - t0);
    }
    for v in [&mut render, &mut images, &mut seal, &mut total] {
        v.sort();
    }
    println!("20-page document, last signature to sealed final PDF (work only, {rounds} rounds):");
    for (name, v) in [
        ("render", &render),
        ("page images", &images),
        ("seal", &seal),
        ("total", &total),
    ] {
        println!(
            "  {name:<12} p50 {:>7.1} ms  p99 {:>7.1} ms",
            pct(v, 0.5),
            pct(v, 0.99)
        );
    }

    let one = pdf::render(
        &[&pdf::sample_pdf(1)],
        &[],
        &Default::default(),
        &[],
        &summary,
    )?;
    let start = Instant::now();
    let mut n = 0u32;
    while start.elapsed() < Duration::from_secs(3) {
        seal::seal(&one.pdf, &meta, esign_host::clock::now_ms(), &sealer)
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        n += 1;
    }
    println!(
        "1-page document: {:.0} seals per second on one core",
        f64::from(n) / start.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
