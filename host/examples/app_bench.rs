//! The sender's app benchmark (`just bench`), against a running server whose entity
//! holds at least 100 documents, in Debian's headless Chromium with an empty cache:
//!
//! 1. the size of the app's script and style sheet, as served and compressed (deflate
//!    at level 9; the budget a test keeps: 80 KB),
//! 2. the bytes transferred before the documents list is usable on a 375 px phone (the
//!    shell, its script, style sheet and words, the sign-in, the first page of the list
//!    and the API's answers behind it),
//! 3. the time from "Sign in" to the list showing 100 documents (`/app/documents?per=100`),
//!    p50 of 10 runs, each in a fresh browser, WebDriver round trips included.
//!
//! Usage: `app_bench URL EMAIL PASSWORD`. Needs `chromium` and `chromedriver`.

#[path = "../../tests/common/browser.rs"]
mod browser;

/// What the browser harness needs from the test harness, and a sign-in.
#[path = "support/browser_bench.rs"]
mod common;

use serde_json::{Value, json};
use std::time::{Duration, Instant};

const RUNS: usize = 10;
const LIST: usize = 100;

/// Signs in through the app's form and waits until the list shows `rows` rows.
fn sign_in_to_the_list(b: &browser::Browser, email: &str, password: &str, rows: usize) -> Duration {
    b.wait_for_text("Sign in");
    b.fill("Email", email);
    b.fill("Password", password);
    let t0 = Instant::now();
    b.click("Sign in");
    b.wait_js(
        60,
        "the documents list",
        &format!("return document.querySelectorAll('table.list tbody tr').length >= {rows}"),
    );
    t0.elapsed()
}

/// The size compressed with deflate at level 9 (gzip -9 less its 18-byte frame), as the
/// engine's size test measures it.
fn deflated(bytes: &[u8]) -> usize {
    miniz_oxide::deflate::compress_to_vec(bytes, 9).len()
}

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
    // Enough documents for a full list (drafts without files are quick to make).
    let listed: Value = http
        .get(format!("{base}/v1/documents?limit={LIST}"))
        .bearer_auth(&token)
        .send()?
        .json()?;
    for n in listed.as_array().map_or(0, Vec::len)..LIST {
        let r = http
            .post(format!("{base}/v1/documents"))
            .bearer_auth(&token)
            .json(&json!({"name": format!("App bench {n}")}))
            .send()?;
        anyhow::ensure!(r.status().is_success(), "create: {}", r.text()?);
    }

    // 1. The app's script and style, as served.
    let shell = http.get(format!("{base}/app/sign-in")).send()?.text()?;
    let version = shell
        .split("data-assets=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or("");
    println!("sender's app (/app):");
    let mut total = 0;
    for asset in ["sender.js", "sender.css"] {
        let bytes = http
            .get(format!("{base}/app/_/{asset}?v={version}"))
            .send()?
            .bytes()?;
        let z = deflated(&bytes);
        total += z;
        println!("  {asset:<24} {:>8} B, {z:>7} B compressed", bytes.len());
    }
    println!(
        "  script and style: {total} B compressed ({:.1} KB; budget 80 KB)",
        total as f64 / 1024.0
    );

    // 2. Bytes before the list is usable, cold cache, phone.
    let b = browser::Browser::start().expect("chromium and chromedriver");
    b.phone(375, 800);
    b.goto(&format!("{base}/app/documents"));
    sign_in_to_the_list(&b, &email, &password, 25);
    let sizes = b.js(
        "const nav = performance.getEntriesByType('navigation')[0];\
         const out = [['/app/documents (HTML)', nav.transferSize]];\
         for (const r of performance.getEntriesByType('resource')) out.push([new URL(r.name).pathname, r.transferSize]);\
         return out;",
        vec![],
    );
    drop(b);
    let mut bytes = 0u64;
    println!("  before the documents list is usable (375 px phone, empty cache):");
    for row in sizes.as_array().unwrap() {
        let (name, n) = (row[0].as_str().unwrap_or(""), row[1].as_u64().unwrap_or(0));
        bytes += n;
        println!("    {name:<48} {n:>8} B");
    }
    println!("    in all: {bytes} B ({:.1} KB)", bytes as f64 / 1000.0);

    // 3. Sign-in to a list of 100, RUNS times, each in a fresh browser.
    let mut times = Vec::new();
    for _ in 0..RUNS {
        let b = browser::Browser::start().expect("chromium and chromedriver");
        b.goto(&format!("{base}/app/documents?per={LIST}"));
        times.push(sign_in_to_the_list(&b, &email, &password, LIST));
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "  \"Sign in\" to a list of {LIST} documents ({RUNS} runs): p50 {:.0} ms, min {:.0} ms, max {:.0} ms",
        ms(times[RUNS / 2]),
        ms(times[0]),
        ms(times[RUNS - 1])
    );
    Ok(())
}
