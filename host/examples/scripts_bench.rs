//! Text in every script against Latin only (issue 50's benchmark): the final render of
//! a 20-page document (a field value stamped on every page, a pricing appendix, the
//! summary with its signatures) and its page images, once with Latin text and once
//! with the same amount of text in six scripts (Latin with Polish and Vietnamese,
//! Greek, Cyrillic, Arabic, Hebrew, Devanagari). Prints p50 times, the ratio (goal:
//! within 1.5x), the file sizes (goal: under 2x, thanks to subsetting) and the size of
//! the formats component this build embeds.
//!
//! Usage: `scripts_bench [ROUNDS]` (default 9).

use esign_formats::pdf::Block;
use esign_formats::stamp::{Mark, Stamp};
use esign_host::runtime::EMBEDDED_FORMATS;
use std::collections::HashMap;
use std::time::Instant;

const LATIN: [&str; 6] = [
    "Anna Andersson",
    "Bertil Berg",
    "Cecilia Carlsson",
    "David Dahl",
    "Erika Ek",
    "Fredrik Falk",
];

const SCRIPTS: [&str; 6] = [
    "Łukasz Żółć, Nguyễn Thị",
    "Αλέξανδρος Παπαδόπουλος",
    "Алексей Смирнов",
    "محمد العلي",
    "דוד כהן",
    "अमित शर्मा",
];

/// The blocks and stamps of a 20-page document whose people are `names`.
fn order(names: &[&str; 6]) -> (Vec<Stamp>, Vec<Block>, Vec<Block>) {
    let stamps = (0..20)
        .map(|page| Stamp {
            page,
            left: 72.0,
            top: 600.0,
            width: 220.0,
            height: 24.0,
            mark: Mark::Text(format!("{} — 2026-11-28", names[page % 6])),
        })
        .collect();
    let mut appendix = vec![
        Block::Heading("Pricing".into()),
        Block::HeaderRow(vec!["Item".into(), "Qty".into(), "Total".into()]),
    ];
    for (i, name) in names.iter().enumerate() {
        appendix.push(Block::Row(vec![
            format!("{name}: licence {i}"),
            "12".into(),
            "1 200,00".into(),
        ]));
    }
    let mut summary = vec![Block::Heading("Document summary".into())];
    for name in names {
        summary.push(Block::Text(format!(
            "{name} signed on 2026-11-28 at 10:00 UTC from 127.0.0.1"
        )));
        summary.push(Block::Signature {
            picture: None,
            text: name.to_string(),
            caption: format!("{name}, 2026-11-28"),
        });
    }
    (stamps, appendix, summary)
}

fn p50(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// p50 of the render in ms, p50 of the page images in ms, the PDF's size in bytes.
fn measure(names: &[&str; 6], rounds: usize) -> (f64, f64, usize) {
    let source = esign_formats::pdf::sample_pdf(20);
    let (stamps, appendix, summary) = order(names);
    let pictures = HashMap::new();
    let (mut render, mut images, mut size) = (Vec::new(), Vec::new(), 0);
    for _ in 0..rounds {
        let started = Instant::now();
        let out = esign_formats::pdf::render(&[&source], &stamps, &pictures, &appendix, &summary)
            .expect("the render");
        render.push(started.elapsed().as_secs_f64() * 1000.0);
        let started = Instant::now();
        let pages = esign_formats::raster::page_images(&out.pdf, 800).expect("page images");
        images.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(pages.len(), out.page_count as usize);
        size = out.pdf.len();
    }
    (p50(render), p50(images), size)
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(9, |r| r.parse().expect("ROUNDS"));
    println!(
        "== a 20-page document's final render: Latin only against six scripts ({rounds} rounds)"
    );
    println!(
        "{:<14} {:>12} {:>16} {:>12}",
        "text", "render ms", "page images ms", "PDF bytes"
    );
    let latin = measure(&LATIN, rounds);
    let scripts = measure(&SCRIPTS, rounds);
    for (name, (r, i, s)) in [("Latin", latin), ("six scripts", scripts)] {
        println!("{name:<14} {r:>12.1} {i:>16.1} {s:>12}");
    }
    println!(
        "six scripts / Latin: render {:.2}x (goal within 1.5x), page images {:.2}x, size {:.2}x (goal under 2x)",
        scripts.0 / latin.0,
        scripts.1 / latin.1,
        scripts.2 as f64 / latin.2 as f64
    );
    println!(
        "formats component embedded in this build: {:.2} MB",
        EMBEDDED_FORMATS.len() as f64 / 1e6
    );
}
