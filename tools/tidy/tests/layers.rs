//! The layers of each crate (ARCHITECTURE.md, "Layers"): a file imports only from files
//! of its own layer or of layers below, no two files import each other (directly or
//! round a circle), and in the engine a handler never imports another family's handler.
//! A new file must be given a layer here.
//!
//! `ESIGN_TIDY_ROOT=/path/to/checkout cargo test -p esign-tidy` checks another checkout.

use esign_tidy::shrinking::root;
use esign_tidy::{Graph, cycles, read_crate};

/// A crate's layers, lowest first: each a name and the paths (under `src/`) in it; a
/// path ending in `/` is a folder.
struct Layers {
    krate: &'static str,
    lib_name: Option<&'static str>,
    layers: &'static [(&'static str, &'static [&'static str])],
}

const ENGINE: Layers = Layers {
    krate: "engine",
    lib_name: None,
    layers: &[
        ("base", &["base/", "memory.rs"]),
        ("domain", &["domain/"]),
        ("handlers", &["handlers/"]),
        ("tables", &["router.rs", "job_table.rs"]),
        ("crate root", &["lib.rs"]),
    ],
};

const HOST: Layers = Layers {
    krate: "host",
    lib_name: Some("esign_host"),
    layers: &[
        (
            "leaves",
            &[
                "bindings.rs",
                "clock.rs",
                "compile_cache.rs",
                "ids.rs",
                "fs.rs",
                "logging.rs",
            ],
        ),
        ("store", &["store/", "queues.rs"]),
        ("tables", &["host_tables/"]),
        ("metrics", &["metrics.rs"]),
        (
            "capabilities",
            &[
                "passwords.rs",
                "outbound.rs",
                "eid.rs",
                "evidence/",
                "sandbox.rs",
                "file_work.rs",
                "staged_parts.rs",
            ],
        ),
        ("runtime", &["runtime/"]),
        ("dispatcher", &["calls.rs"]),
        (
            "workers",
            &["job_runner.rs", "mail/", "sms/", "webhooks.rs"],
        ),
        (
            "server and CLI",
            &[
                "admin_channel.rs",
                "backup.rs",
                "check.rs",
                "health.rs",
                "server.rs",
                "migrate.rs",
                "cli/",
            ],
        ),
        ("crate roots", &["lib.rs", "main.rs"]),
    ],
};

const FORMATS: Layers = Layers {
    krate: "formats",
    lib_name: None,
    layers: &[
        ("primitives", &["pdf_text.rs", "digest.rs", "fonts.rs"]),
        (
            "formats",
            &[
                "pdf_fonts.rs",
                "stamp.rs",
                "layout.rs",
                "pdf.rs",
                "raster.rs",
                "downsample.rs",
                "office.rs",
                "multipart.rs",
                "seal/",
            ],
        ),
        ("work orders", &["work.rs"]),
        ("crate root", &["lib.rs"]),
    ],
};

/// The engine's handler families may share only these.
const SHARED_HANDLERS: &[&str] = &[
    "handlers/shapes.rs",
    "handlers/inputs.rs",
    "handlers/mod.rs",
];

fn layer_of(layers: &Layers, file: &str) -> Option<usize> {
    layers.layers.iter().position(|(_, paths)| {
        paths.iter().any(|p| {
            if p.ends_with('/') {
                file.starts_with(p)
            } else {
                file == *p
            }
        })
    })
}

/// The engine's handler family of a file (`handlers/documents/send.rs` → `documents`).
fn family(file: &str) -> Option<&str> {
    let rest = file.strip_prefix("handlers/")?;
    Some(rest.split('/').next()?.trim_end_matches(".rs"))
}

fn problems(layers: &Layers) -> Vec<String> {
    let graph: Graph = read_crate(&root().join(layers.krate).join("src"), layers.lib_name);
    let mut out = Vec::new();
    for f in &graph.files {
        if layer_of(layers, &f.path).is_none() {
            out.push(format!(
                "{}/src/{}: in no layer; give it one in tools/tidy/tests/layers.rs",
                layers.krate, f.path
            ));
        }
    }
    for ((from, to), names) in &graph.edges {
        let names = names.iter().cloned().collect::<Vec<_>>().join(", ");
        let (Some(a), Some(b)) = (layer_of(layers, from), layer_of(layers, to)) else {
            continue;
        };
        if b > a {
            out.push(format!(
                "{} → {}: {names} ({} may not import {}, a layer above it)",
                from, to, layers.layers[a].0, layers.layers[b].0
            ));
        }
        if layers.krate == "engine"
            && let (Some(fa), Some(fb)) = (family(from), family(to))
            && fa != fb
            && !SHARED_HANDLERS.contains(&to.as_str())
        {
            out.push(format!(
                "{from} → {to}: {names} (the {fa} handlers may not import the {fb} handlers; \
                 share through handlers/shapes.rs or the domain)"
            ));
        }
    }
    for circle in cycles(&graph) {
        let members: Vec<&String> = circle.iter().collect();
        let mut edges = Vec::new();
        for ((from, to), names) in &graph.edges {
            if members.contains(&from) && members.contains(&to) {
                let names = names.iter().cloned().collect::<Vec<_>>().join(", ");
                edges.push(format!("  {from} → {to}: {names}"));
            }
        }
        out.push(format!(
            "an import circle of {} files in {}:\n{}",
            circle.len(),
            layers.krate,
            edges.join("\n")
        ));
    }
    out
}

fn check(layers: &Layers) {
    let found = problems(layers);
    assert!(
        found.is_empty(),
        "{} breaks its layers (ARCHITECTURE.md, \"Layers\"):\n{}",
        layers.krate,
        found.join("\n")
    );
}

#[test]
fn engine_layers() {
    check(&ENGINE);
}

#[test]
fn host_layers() {
    check(&HOST);
}

#[test]
fn formats_layers() {
    check(&FORMATS);
}

/// The rules see what they must: a domain file that imported the router, or two files
/// that imported each other, would be reported.
#[test]
fn the_check_can_fail() {
    let dir = std::env::temp_dir().join(format!("esign-tidy-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("domain")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod domain;\nmod router;\n").unwrap();
    std::fs::write(src.join("router.rs"), "pub fn g() {}\n").unwrap();
    std::fs::write(src.join("domain/mod.rs"), "pub mod a;\npub mod b;\n").unwrap();
    std::fs::write(
        src.join("domain/a.rs"),
        "pub fn f() { crate::router::g(); super::b::h(); }\n",
    )
    .unwrap();
    std::fs::write(
        src.join("domain/b.rs"),
        "use super::a;\npub fn h() { a::f() }\n",
    )
    .unwrap();
    let graph = read_crate(&src, None);
    let layers = Layers {
        krate: "x",
        lib_name: None,
        layers: &[("domain", &["domain/"]), ("top", &["router.rs", "lib.rs"])],
    };
    let up: Vec<_> = graph
        .edges
        .keys()
        .filter(|(a, b)| layer_of(&layers, b) > layer_of(&layers, a))
        .collect();
    assert_eq!(
        up,
        vec![&("domain/a.rs".to_string(), "router.rs".to_string())]
    );
    assert_eq!(
        cycles(&graph),
        vec![vec!["domain/a.rs".to_string(), "domain/b.rs".to_string()]]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
