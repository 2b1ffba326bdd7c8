//! Signing page benchmark (`just bench`), against a running server: for a 20-page
//! document with one signature field, in Debian's headless Chromium with an empty
//! cache,
//!
//! 1. the bytes transferred before the first page is visible (the page, its script,
//!    style sheet and font; the first page image counted apart: it is the document),
//! 2. the time from opening the link to `signed` (typed name, Sign, until the page says
//!    so), p50 of 10 runs, WebDriver round trips included.
//!
//! Usage: `signing_bench URL EMAIL PASSWORD`. Needs `chromium` and `chromedriver`.

#[path = "../../tests/common/browser.rs"]
mod browser;

/// What the browser harness needs from the test harness, and a sign-in.
#[path = "support/browser_bench.rs"]
mod common;

use base64::Engine as _;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const RUNS: usize = 10;
const PAGES: usize = 20;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (base, email, password) = (
        args.next().expect("URL"),
        args.next().expect("EMAIL"),
        args.next().expect("PASSWORD"),
    );
    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    let token = common::token(&http, &base, &email, &password)?;
    let pdf = base64::engine::general_purpose::STANDARD.encode(esign_host::pdf::sample_pdf(PAGES));
    // A sent document with one signer and one signature field on the last page; its link.
    let sent_doc = |n: usize| -> anyhow::Result<String> {
        let doc: Value = http
            .post(format!("{base}/v1/documents"))
            .bearer_auth(&token)
            .json(&json!({"name": format!("Bench {n}"), "file_content": pdf, "file_name": "b.pdf",
                          "recipients": [{"first_name": "Bea", "last_name": "Bench", "email": "bea@example.com"}]}))
            .send()?
            .json()?;
        let id = doc["id"].as_str().expect("created").to_string();
        let status = |http: &reqwest::blocking::Client| -> anyhow::Result<String> {
            let v: Value = http
                .get(format!("{base}/v1/documents/{id}/status"))
                .bearer_auth(&token)
                .send()?
                .json()?;
            Ok(v["status"].as_str().unwrap_or("").to_string())
        };
        let wait = |want: &str| -> anyhow::Result<()> {
            let deadline = Instant::now() + Duration::from_secs(120);
            while status(&http)? != want {
                anyhow::ensure!(Instant::now() < deadline, "{id} never became {want}");
                std::thread::sleep(Duration::from_millis(50));
            }
            Ok(())
        };
        wait("draft")?;
        let d: Value = http
            .get(format!("{base}/v1/documents/{id}"))
            .bearer_auth(&token)
            .send()?
            .json()?;
        let rid = d["recipients"][0]["id"].as_str().unwrap();
        let f = http
            .post(format!("{base}/v1/documents/{id}/fields"))
            .bearer_auth(&token)
            .json(&json!({"field_type": "signature", "page_num": PAGES, "recipient_id": rid,
                          "field_left": 72, "field_top": 600, "field_width": 200, "field_height": 50}))
            .send()?;
        anyhow::ensure!(f.status().is_success(), "field: {}", f.text()?);
        let s = http
            .post(format!("{base}/v1/documents/{id}/send"))
            .bearer_auth(&token)
            .json(&json!({}))
            .send()?;
        anyhow::ensure!(s.status().is_success(), "send: {}", s.text()?);
        wait("sent")?;
        let d: Value = http
            .get(format!("{base}/v1/documents/{id}"))
            .bearer_auth(&token)
            .send()?
            .json()?;
        Ok(d["recipients"][0]["document_url"]
            .as_str()
            .unwrap()
            .to_string())
    };

    // 1. Bytes before the first page is visible, cold cache.
    let link = sent_doc(0)?;
    let b = browser::Browser::start().expect("chromium and chromedriver");
    b.phone(375, 800);
    b.goto(&link);
    b.wait_js(
        30,
        "the first page",
        "const i = document.querySelector('.page img'); return i && i.complete && i.naturalWidth > 0;",
    );
    let sizes = b.js(
        "const nav = performance.getEntriesByType('navigation')[0];\
         const out = [['page (HTML)', nav.transferSize]];\
         for (const r of performance.getEntriesByType('resource')) out.push([r.name.split('?')[0], r.transferSize]);\
         return out;",
        vec![],
    );
    drop(b);
    let (mut assets, mut first_image, mut other_images) = (0u64, 0u64, 0u64);
    println!("signing page, {PAGES}-page document, 375 px phone, empty cache:");
    for row in sizes.as_array().unwrap() {
        let (name, bytes) = (row[0].as_str().unwrap_or(""), row[1].as_u64().unwrap_or(0));
        if name.ends_with("/pages/1") {
            first_image += bytes;
        } else if name.contains("/pages/") {
            other_images += bytes;
        } else {
            assets += bytes;
            println!(
                "  {:<48} {:>8} B",
                name.rsplit('/').next().unwrap_or(name),
                bytes
            );
        }
    }
    println!(
        "  bytes before the first page is visible, without the document: {assets} B ({:.1} KB; goal <= 300 KB)",
        assets as f64 / 1000.0
    );
    println!(
        "  the first page image: {first_image} B; other page images loaded by then: {other_images} B"
    );

    // 2. Opening the link to signed, RUNS times, each in a fresh browser.
    let mut times = Vec::new();
    for n in 1..=RUNS {
        let link = sent_doc(n)?;
        let b = browser::Browser::start().expect("chromium and chromedriver");
        let t0 = Instant::now();
        b.goto(&link);
        b.wait_for_text("sign at the bottom");
        b.fill("Full name", "Bea Bench");
        b.click("Sign");
        b.wait_for_text("You signed the document");
        times.push(t0.elapsed());
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "  opening the link to signed ({RUNS} runs): p50 {:.0} ms, min {:.0} ms, max {:.0} ms",
        ms(times[RUNS / 2]),
        ms(times[0]),
        ms(times[RUNS - 1])
    );
    Ok(())
}
