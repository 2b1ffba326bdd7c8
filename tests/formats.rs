//! One source, two builds, proven equal: every work order of the fixtures and of the fuzz
//! corpora goes through the native file work (`esign_formats::work`, as the host links
//! it) and through the formats component (`components/formats`, in wasmtime), with the
//! same blobs, key and clock; the outcomes, the new blobs and the warnings must be
//! identical, byte for byte.

#[path = "common/formats_component.rs"]
mod formats_component;

use esign_formats::digest::sha256_hex;
use esign_formats::seal::keys::{LocalKey, generate};
use esign_formats::work as shared;
use esign_formats::{office, pdf};
use esign_host::bindings::{WorkOrder, WorkOutcome};
use esign_host::runtime::EMBEDDED_FORMATS;
use formats_component::{FormatsComponent, MemIo, NOW_MS, Tsa};
use std::path::Path;
use std::sync::OnceLock;

fn component() -> &'static FormatsComponent<MemIo> {
    static C: OnceLock<FormatsComponent<MemIo>> = OnceLock::new();
    C.get_or_init(|| FormatsComponent::new(EMBEDDED_FORMATS).expect("the formats component loads"))
}

/// Runs `order` both ways over `io`; panics with the difference when they differ.
/// Returns the native outcome and I/O.
fn same(what: &str, order: &WorkOrder, io: MemIo) -> (WorkOutcome, MemIo) {
    let mut native_io = io.clone();
    let native: WorkOutcome = shared::perform(&order.clone().into(), NOW_MS, &mut native_io).into();
    let (component, component_io, _) = component().perform(order, NOW_MS, io);
    let component = component.unwrap_or_else(|e| panic!("{what}: the component trapped: {e:#}"));
    let json = |o: &WorkOutcome| serde_json::to_string(o).unwrap();
    assert_eq!(json(&native), json(&component), "{what}: outcomes differ");
    assert_eq!(
        native_io.warnings, component_io.warnings,
        "{what}: warnings differ"
    );
    let ids = |io: &MemIo| {
        io.new
            .iter()
            .map(|(id, b)| (id.clone(), sha256_hex(b)))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids(&native_io),
        ids(&component_io),
        "{what}: new blobs differ"
    );
    (native, native_io)
}

fn import(name: &str, fill: &[(&str, &str)]) -> WorkOrder {
    WorkOrder::ImportFiles(vec![esign_host::bindings::ImportSource {
        blob: Some("src".into()),
        url: None,
        name: name.into(),
        fill: fill
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }])
}

fn corpus(name: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(name);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect()
}

#[test]
fn imports_of_the_pdf_corpus_are_the_same() {
    let mut files = corpus("pdf_inspect");
    for f in ["encrypted.pdf", "owner-only.pdf"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures")
            .join(f);
        files.push((f.into(), std::fs::read(path).unwrap()));
    }
    files.push(("sample.pdf".into(), pdf::sample_pdf(20)));
    let mut pages = 0;
    for (name, bytes) in &files {
        let (outcome, _) = same(
            name,
            &import("file.pdf", &[]),
            MemIo::new(&[("src", bytes.clone())]),
        );
        if let WorkOutcome::ImportFiles(r) = outcome
            && let Some(esign_host::bindings::ImportResult::Ok(f)) = r.first()
        {
            pages += f.pages.len();
        }
    }
    eprintln!(
        "{} PDFs imported the same way ({pages} pages read)",
        files.len()
    );
}

#[test]
fn imports_of_the_word_corpus_are_the_same() {
    let mut files = corpus("docx_fill");
    files.push((
        "sample.docx".into(),
        office::sample_docx(&["Dear {{name}},", "the price is {{ price }}."]),
    ));
    for (name, bytes) in &files {
        let fill = [("name", "Ada"), ("price", "100 EUR")];
        same(
            name,
            &import("file.docx", &fill),
            MemIo::new(&[("src", bytes.clone())]),
        );
    }
    eprintln!("{} Word files imported the same way", files.len());
}

/// A signature image: a page of a sample PDF as a PNG.
fn png() -> Vec<u8> {
    let pages = esign_formats::raster::page_images(&pdf::sample_pdf(1), 120).unwrap();
    pages.into_iter().next().unwrap().png
}

/// A render order over `sources`, with stamps of every kind, an appendix and a summary
/// with signatures (one drawn from `sig`, one typed), sealed when `seal`.
fn render_order(sources: &[&str], seal: bool) -> WorkOrder {
    use esign_host::bindings::{
        Block, RenderOrder, SealOrder, SignatureBlock, Stamp, StampContent,
    };
    let stamp = |page, left, top, content| Stamp {
        page,
        left,
        top,
        width: 160.0,
        height: 40.0,
        content,
    };
    let signature = |image: Option<&str>, who: &str| {
        Block::Signature(SignatureBlock {
            image: image.map(str::to_string),
            text: who.into(),
            caption: format!("{who}, signed 2026-11-25T11:00:00+00:00"),
        })
    };
    WorkOrder::Render(RenderOrder {
        sources: sources.iter().map(|s| s.to_string()).collect(),
        stamps: vec![
            stamp(
                0,
                72.0,
                600.0,
                StampContent::Text("Ada Lovelace — 2026-11-25".into()),
            ),
            stamp(0, 72.0, 660.0, StampContent::Check),
            stamp(1, 300.0, 500.0, StampContent::Image("sig".into())),
        ],
        appendix: vec![
            Block::Heading("Pricing".into()),
            Block::HeaderRow(vec!["Item".into(), "Qty".into(), "Total".into()]),
            Block::Row(vec!["Licences".into(), "12".into(), "1 200,00 €".into()]),
            Block::Rule,
            Block::Text("Payable within thirty days. Œuvre, naïve, “quotes”.".into()),
            Block::PageBreak,
            Block::Text("A second page of the appendix.".into()),
        ],
        summary: vec![
            Block::Heading("Document summary".into()),
            Block::Row(vec!["Document".into(), "Contract".into()]),
            signature(Some("sig"), "Ada Lovelace"),
            signature(None, "Charles Babbage"),
            signature(Some("gone"), "Grace Hopper"),
        ],
        seal: seal.then(|| SealOrder {
            document_id: "doc00000000000001".into(),
            log_head: "ab".repeat(32),
        }),
    })
}

fn render_io() -> MemIo {
    MemIo::new(&[
        ("a", pdf::sample_pdf(3)),
        ("b", pdf::sample_pdf(1)),
        ("sig", png()),
    ])
}

#[test]
fn renders_and_seals_are_the_same() {
    let (outcome, io) = same("render", &render_order(&["a", "b"], false), render_io());
    let WorkOutcome::Render(Ok(file)) = &outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(file.page_count, 4 + 2 + 1, "{file:?}");
    assert_eq!(file.page_images.len(), file.page_count as usize);
    assert!(file.seal.is_none());
    assert!(
        io.warnings.iter().any(|w| w.contains("gone")),
        "{:?}",
        io.warnings
    );

    let (outcome, io) = same(
        "sealed render",
        &render_order(&["a", "b"], true),
        render_io(),
    );
    let WorkOutcome::Render(Ok(file)) = &outcome else {
        panic!("{outcome:?}")
    };
    let seal = file.seal.as_ref().expect("sealed");
    assert_eq!(seal.signed_at_ms, NOW_MS);
    assert_eq!(seal.signer, "CN=esign document seal,O=esign");
    let sealed = &io.new.iter().find(|(id, _)| *id == file.blob).unwrap().1;
    // The check of the sealed file, both ways.
    let own = seal.certificate_sha256.clone();
    let native = esign_host::evidence::check(sealed, &own);
    let (checked, _, _) = component().check_pdf(sealed, &own, render_io());
    let checked = checked.unwrap();
    let json = |c: &esign_host::bindings::PdfCheck| serde_json::to_string(c).unwrap();
    assert_eq!(json(&native), json(&checked));
    assert!(
        checked.valid && checked.whole_file && checked.by_this_service,
        "{checked:?}"
    );
    assert_eq!(checked.document_id, "doc00000000000001");

    // Twenty pages, as the benchmarks render them.
    let io = MemIo::new(&[("a", pdf::sample_pdf(20)), ("sig", png())]);
    same("20 pages", &render_order(&["a"], true), io);
}

#[test]
fn renders_in_every_script_are_the_same() {
    use esign_host::bindings::{Block, RenderOrder, SignatureBlock, Stamp, StampContent};
    let texts = [
        "Zażółć gęślą jaźń, Příliš žluťoučký kůň, Şükrü Yılmaz",
        "Tiếng Việt: Nguyễn Thị Minh",
        "Ελληνικά: Αλέξανδρος Παπαδόπουλος",
        "Русский: Алексей Смирнов",
        "العربية: محمد العلي 123",
        "עברית: דוד כהן",
        "हिन्दी: अमित शर्मा",
        "ไทย: สมชาย ใจดี",
    ];
    let stamp = |top: f32, text: &str| Stamp {
        page: 0,
        left: 72.0,
        top,
        width: 300.0,
        height: 30.0,
        content: StampContent::Text(text.into()),
    };
    let signature = |who: &str| {
        Block::Signature(SignatureBlock {
            image: None,
            text: who.into(),
            caption: format!("{who}, 2026-11-25"),
        })
    };
    let order = WorkOrder::Render(RenderOrder {
        sources: vec!["a".into()],
        stamps: texts
            .iter()
            .enumerate()
            .map(|(i, t)| stamp(100.0 + 40.0 * i as f32, t))
            .collect(),
        appendix: texts.iter().map(|t| Block::Text(t.to_string())).collect(),
        summary: vec![
            Block::HeaderRow(vec!["Ελληνικά".into(), "עברית".into(), "ไทย".into()]),
            signature("Łukasz Żółć"),
            signature("محمد العلي"),
            signature("अमित शर्मा"),
        ],
        seal: None,
    });
    let io = MemIo::new(&[("a", pdf::sample_pdf(1))]);
    let (outcome, io) = same("every script", &order, io);
    let WorkOutcome::Render(Ok(file)) = &outcome else {
        panic!("{outcome:?}")
    };
    let rendered = &io.new.iter().find(|(id, _)| *id == file.blob).unwrap().1;
    let text = pdf::extract_text(rendered).unwrap();
    for t in &texts[..4] {
        assert!(text.contains(t), "{t} in {text}");
    }
}

/// What a small runtime gives a component: 128 MiB of linear memory.
const SMALL_RUNTIME_MEMORY: usize = 128 << 20;

#[test]
fn a_twenty_page_documents_work_fits_in_128_mib() {
    let twenty = pdf::sample_pdf(20);
    let orders = [
        (
            "import",
            import("twenty.pdf", &[]),
            vec![("src", twenty.clone())],
        ),
        (
            "render with page images and seal",
            render_order(&["a"], true),
            vec![("a", twenty.clone()), ("sig", png())],
        ),
    ];
    for (what, order, blobs) in orders {
        let (outcome, _, peak) =
            component().perform_within(&order, NOW_MS, MemIo::new(&blobs), SMALL_RUNTIME_MEMORY);
        let outcome = outcome.unwrap_or_else(|e| panic!("{what}: trapped within 128 MiB: {e:#}"));
        let ok = match &outcome {
            WorkOutcome::ImportFiles(files) => {
                matches!(&files[..], [esign_host::bindings::ImportResult::Ok(f)] if f.pages.len() == 20)
            }
            WorkOutcome::Render(Ok(file)) => {
                file.seal.is_some() && file.page_images.len() == file.page_count as usize
            }
            _ => false,
        };
        assert!(ok, "{what}: {outcome:?}");
        eprintln!(
            "{what} of 20 pages: peak linear memory {:.1} MiB",
            peak as f64 / 1048576.0
        );
        assert!(peak <= SMALL_RUNTIME_MEMORY);
    }
    // The limit bites: the same render in 2 MiB does not come back sealed.
    let (outcome, _, _) = component().perform_within(
        &render_order(&["a"], true),
        NOW_MS,
        MemIo::new(&[("a", twenty), ("sig", png())]),
        2 << 20,
    );
    assert!(
        !matches!(outcome, Ok(WorkOutcome::Render(Ok(_)))),
        "{outcome:?}"
    );
}

#[test]
fn generated_signing_keys_are_the_same() {
    let secret = [7u8; 32];
    let native = generate(&secret, NOW_MS).unwrap();
    let (made, _, _) = component().generate_signing_key(&secret, NOW_MS, render_io());
    assert_eq!(made.unwrap(), Ok(native.clone()));
    // The key signs: a seal with it is by that certificate.
    let key = LocalKey::from_pem(&native.0, &native.1).unwrap();
    assert_eq!(key.chain.len(), 1);
    let (refused, _, _) = component().generate_signing_key(&[1, 2, 3], NOW_MS, render_io());
    assert!(refused.unwrap().is_err());
}

#[test]
fn failures_are_the_same() {
    same(
        "missing source",
        &render_order(&["a", "nope"], false),
        render_io(),
    );
    let mut io = render_io();
    io.tsa = Tsa::Down;
    let (outcome, io) = same("authority down", &render_order(&["a"], true), io);
    assert!(
        matches!(&outcome, WorkOutcome::Render(Err(f)) if f.code == "timestamp-unavailable"),
        "{outcome:?}"
    );
    assert!(io.new.is_empty(), "nothing is kept of a seal that waits");
    let mut io = render_io();
    io.key_down = true;
    let (outcome, _) = same("key down", &render_order(&["a"], true), io);
    assert!(
        matches!(&outcome, WorkOutcome::Render(Err(f)) if f.code == "seal-failed"),
        "{outcome:?}"
    );
    same("not a pdf", &render_order(&["sig"], false), render_io());
    same("empty", &render_order(&[], false), MemIo::new(&[]));
}

#[test]
fn fetches_and_downloaded_imports_are_the_same() {
    let mut io = MemIo::new(&[]);
    let url = "https://files.example/contract.pdf";
    io.downloads.insert(url.into(), pdf::sample_pdf(2));
    same("fetch", &WorkOrder::Fetch(url.into()), io.clone());
    same(
        "fetch refused",
        &WorkOrder::Fetch("https://elsewhere.example/".into()),
        io.clone(),
    );
    let order = WorkOrder::ImportFiles(vec![
        esign_host::bindings::ImportSource {
            blob: None,
            url: Some(url.into()),
            name: "contract.pdf".into(),
            fill: Vec::new(),
        },
        esign_host::bindings::ImportSource {
            blob: None,
            url: None,
            name: "nothing.pdf".into(),
            fill: Vec::new(),
        },
    ]);
    let (outcome, io) = same("downloaded import", &order, io);
    assert!(
        matches!(outcome, WorkOutcome::ImportFiles(ref r) if r.len() == 2),
        "{outcome:?}"
    );
    assert_eq!(io.new.len(), 1, "the download is kept as a blob");
}
