//! The audit certificate and the summary page speak the document's language: their
//! words come from the catalogue of `Document::language()`, their times are written
//! the way that language writes them (in UTC, said so), and machine values (ids,
//! hashes, addresses) stay as they are.

mod common;

use common::*;
use esign_engine::memory::MemoryPlatform;
use esign_engine::{Block, Origin, WorkOrder, handle};
use serde_json::{Value, json};

/// 2026-11-28T10:53:00Z.
const NOV_28: u64 = 1_795_863_180_000;

const LANGUAGES: [&str; 10] = ["en", "sv", "nb", "da", "fi", "de", "fr", "es", "nl", "pl"];

fn texts(blocks: &[Block]) -> String {
    blocks
        .iter()
        .map(|b| match b {
            Block::Heading(t) | Block::Text(t) => t.clone(),
            Block::Row(c) | Block::HeaderRow(c) => c.join(" | "),
            Block::Signature(s) => format!("[{}] {}", s.text, s.caption),
            _ => String::new(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A recipient's POST from a browser (with a user agent).
fn act(p: &mut MemoryPlatform, path: &str, b: Value) {
    let mut req = request(Origin::Http, "POST", path, Some(b));
    req.headers
        .push(("origin".into(), "http://127.0.0.1:8080".into()));
    req.headers
        .push(("user-agent".into(), "TestBrowser/1.0".into()));
    let resp = handle(p, &req);
    assert_eq!(resp.status, 200, "{path}: {:?}", body(&resp));
}

/// What a document in `lang` with one signer has drawn: its id, the summary page of
/// its send render, and the audit certificate of its seal once signed.
fn papers(lang: &str) -> (String, String, String) {
    let mut p = bootstrapped();
    p.now_ms = NOV_28;
    let t = token(&mut p);
    let (id, _) = draft(
        &mut p,
        &t,
        json!([{"email": "s@y.se", "first_name": "Sam"}]),
        json!({"language": lang}),
    );
    let (s, sent) = api(
        &mut p,
        &t,
        "POST",
        &format!("/v1/documents/{id}/send"),
        None,
    );
    assert_eq!(s, 200, "{sent}");
    let summary = texts(&finish_render(&mut p, 3).summary);
    let secret = secret_of(&sent, 0);
    act(&mut p, &format!("/v1/recipient/{secret}/view"), json!({}));
    act(
        &mut p,
        &format!("/v1/recipient/{secret}/sign"),
        json!({"signature": {"type": "typed", "name": "Sam Svensson"}}),
    );
    let job = take_jobs(&mut p, "doc.render").remove(0);
    let Some(WorkOrder::Render(order)) = job.work else {
        panic!("a render order")
    };
    assert!(order.seal.is_some(), "the seal's render");
    (id, summary, texts(&order.summary))
}

/// Words of the English certificate and summary page none of the other languages has.
const ENGLISH: &[&str] = &[
    "Audit certificate",
    "Document summary",
    "Document id",
    "Sender",
    "Created",
    "Rendered",
    "Recipient",
    "Role",
    "Completed",
    "Original content",
    "Audit trail head",
    "User agent",
    "Identity",
    "| signed",
    ", signed ",
    "| viewed |",
    "| signer |",
    " Nov ",
];

fn assert_no_english(lang: &str, text: &str) {
    for word in ENGLISH {
        assert!(!text.contains(word), "{lang}: English {word:?} in:\n{text}");
    }
    assert!(
        !text.contains("2026-11-28T"),
        "{lang}: an ISO time in:\n{text}"
    );
}

fn assert_has(lang: &str, text: &str, wants: &[&str]) {
    for want in wants {
        assert!(text.contains(want), "{lang}: missing {want:?} in:\n{text}");
    }
}

#[test]
fn a_swedish_document_s_certificate_and_summary_are_in_swedish() {
    let (id, summary, cert) = papers("sv");
    let at = "28 nov. 2026 kl. 10:53 UTC";
    assert_has(
        "sv",
        &summary,
        &[
            "Dokumentsammanfattning",
            "Dokument | Contract",
            &format!("Dokument-id | {id}"),
            "Avsändare | ",
            &format!("Skapat | {at}"),
            &format!("Genererat | {at}"),
            "Mottagare | Roll | Status",
            "Sam (s@y.se) | undertecknare | ",
        ],
    );
    assert_has(
        "sv",
        &cert,
        &[
            "Verifikat",
            &format!("Dokument-id | {id}"),
            &format!("Skickat | {at}"),
            &format!("Slutfört | {at}"),
            "Status | signerat",
            "Sam (s@y.se) | undertecknare | signerat",
            &format!("{at} | skickat | "),
            &format!("{at} | öppnat | IP-adress 127.0.0.1"),
            &format!("{at} | signerat | IP-adress 127.0.0.1"),
            "Webbläsare: TestBrowser/1.0",
            &format!("[Sam Svensson] Sam, signerade {at}"),
            "Originalinnehållets SHA-256: ",
            "SHA-256 för granskningsloggens senaste post: ",
        ],
    );
    assert_no_english("sv", &summary);
    assert_no_english("sv", &cert);
}

#[test]
fn a_german_document_s_certificate_and_summary_are_in_german() {
    let (id, summary, cert) = papers("de");
    let at = "28. Nov. 2026, 10:53 UTC";
    assert_has(
        "de",
        &summary,
        &[
            "Dokumentübersicht",
            &format!("Dokument-ID | {id}"),
            &format!("Erstellt | {at}"),
            &format!("Erzeugt | {at}"),
            "Empfänger | Rolle | Status",
        ],
    );
    assert_has(
        "de",
        &cert,
        &[
            "Prüfzertifikat",
            &format!("Abgeschlossen | {at}"),
            "Sam (s@y.se) | Unterzeichner | unterschrieben",
            &format!("{at} | angesehen | IP-Adresse 127.0.0.1"),
            &format!("[Sam Svensson] Sam, unterschrieben am {at}"),
        ],
    );
    assert_no_english("de", &summary);
    assert_no_english("de", &cert);
}

#[test]
fn an_english_document_keeps_its_words_and_writes_its_times_for_people() {
    let (id, summary, cert) = papers("en");
    let at = "28 Nov 2026, 10:53 UTC";
    assert_has(
        "en",
        &summary,
        &[
            "Document summary",
            "Document | Contract",
            &format!("Document id | {id}"),
            "Sender | ",
            &format!("Created | {at}"),
            &format!("Rendered | {at}"),
            "Recipient | Role | Status",
            "Sam (s@y.se) | signer | ",
        ],
    );
    assert_has(
        "en",
        &cert,
        &[
            "Audit certificate",
            &format!("Sent | {at}"),
            &format!("Completed | {at}"),
            "Status | signed",
            "Sam (s@y.se) | signer | signed",
            &format!("{at} | sent | "),
            &format!("{at} | viewed | IP 127.0.0.1"),
            &format!("{at} | signed | IP 127.0.0.1"),
            "User agent: TestBrowser/1.0",
            &format!("[Sam Svensson] Sam, signed {at}"),
            "Original content SHA-256: ",
            "Audit trail head SHA-256: ",
        ],
    );
    assert!(!cert.contains("2026-11-28T"), "{cert}");
}

#[test]
fn every_language_draws_the_certificate_without_a_missing_word() {
    for lang in LANGUAGES {
        let (id, summary, cert) = papers(lang);
        for text in [&summary, &cert] {
            assert!(text.contains(&id), "{lang}: the id stays as it is:\n{text}");
            assert!(text.contains("2026"), "{lang}: the year:\n{text}");
            assert!(text.contains("UTC"), "{lang}: the time zone:\n{text}");
            for leak in ["cert.", "time.", "status.", "{", "}"] {
                assert!(
                    !text.contains(leak),
                    "{lang}: {leak:?} (a key or placeholder) in:\n{text}"
                );
            }
        }
        if lang != "en" {
            for english in ["Audit certificate", "Document summary", "Document id"] {
                assert!(
                    !cert.contains(english) && !summary.contains(english),
                    "{lang}"
                );
            }
        }
    }
}

#[test]
fn a_document_without_pages_says_so_in_its_language() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (s, doc) = api(
        &mut p,
        &t,
        "POST",
        "/v1/documents",
        Some(json!({"name": "Avtal", "language": "sv",
                    "recipients": [{"email": "s@y.se", "first_name": "Sam"}]})),
    );
    assert_eq!(s, 200, "{doc}");
    let id = doc["id"].as_str().unwrap().to_string();
    let (s, sent) = api(
        &mut p,
        &t,
        "POST",
        &format!("/v1/documents/{id}/send"),
        None,
    );
    assert_eq!(s, 200, "{sent}");
    let order = finish_render(&mut p, 1);
    let appendix = texts(&order.appendix);
    assert_has(
        "sv",
        &appendix,
        &["Avtal", "Det här dokumentet har inga egna sidor."],
    );
}
