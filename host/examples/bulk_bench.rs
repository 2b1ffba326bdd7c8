//! Bulk send (issue 51): a CSV of `ROWS` rows (default 10 000, `BULK_BENCH_ROWS`)
//! against a one-role template on a running host: rows per second until the batch is
//! done (every document made and its send started), then the time until the last
//! invitation is queued (every document `sent`: its render back and its invitation
//! mailed), bounded by `BULK_BENCH_WAIT` seconds (default 3 600).
//!
//! Usage: `bulk_bench URL TOKEN`.

use reqwest::blocking::Client;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn call(req: reqwest::blocking::RequestBuilder) -> Value {
    let resp = req.send().expect("the host answers");
    let status = resp.status();
    let body: Value = resp.json().unwrap_or(Value::Null);
    assert!(status.is_success(), "{status}: {body}");
    body
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A ready template with one signer role and a signature field; its id.
fn template(http: &Client, url: &str, token: &str) -> String {
    let pdf = esign_host::pdf::sample_pdf(1);
    use base64::Engine as _;
    let up = call(http.post(format!("{url}/v1/upload")).bearer_auth(token).json(&json!({
        "file_content": base64::engine::general_purpose::STANDARD.encode(pdf), "file_name": "offer.pdf"})));
    let tpl = call(http.post(format!("{url}/v1/templates")).bearer_auth(token).json(&json!({
        "name": "Bulk offer", "file_id": up["file_id"],
        "roles": [{"role_name": "Client", "role": "signer"}],
        "page_fields": [{"field_type": "signature", "page_num": 1, "role_name": "Client",
                         "field_left": 72, "field_top": 600, "field_width": 200, "field_height": 50}]})));
    let id = tpl["id"].as_str().unwrap().to_string();
    for _ in 0..600 {
        let t = call(
            http.get(format!("{url}/v1/templates/{id}"))
                .bearer_auth(token),
        );
        if t["status"] == "ready" {
            return id;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the template did not become ready")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, token] = [&args[0], &args[1]];
    let rows = env_num("BULK_BENCH_ROWS", 10_000);
    let wait = Duration::from_secs(env_num("BULK_BENCH_WAIT", 3_600));
    let http = Client::builder()
        .timeout(Duration::from_secs(300))
        .build()
        .unwrap();
    let tid = template(&http, url, token);
    let mut csv = String::from("first_name,last_name,email\n");
    for i in 0..rows {
        csv.push_str(&format!("Bulk,Person {i},bulk{i}@example.com\n"));
    }
    let start = Instant::now();
    let batch = call(
        http.post(format!("{url}/v1/templates/{tid}/bulk-sends"))
            .bearer_auth(token)
            .header("content-type", "text/csv")
            .body(csv),
    );
    let id = batch["id"].as_str().unwrap().to_string();
    let accepted = start.elapsed();
    let done = loop {
        let b = call(
            http.get(format!("{url}/v1/bulk-sends/{id}"))
                .bearer_auth(token),
        );
        if b["status"] == "done" {
            break b;
        }
        assert!(
            start.elapsed() < wait,
            "the batch did not finish in time: {b}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let made = start.elapsed();
    println!(
        "{rows} rows: accepted in {:.2} s, done in {:.1} s ({:.0} rows/s), {} sent, {} failed",
        accepted.as_secs_f64(),
        made.as_secs_f64(),
        rows as f64 / made.as_secs_f64(),
        done["rows_done"],
        done["rows_failed"]
    );
    loop {
        let left = call(
            http.get(format!("{url}/v1/documents?filter=draft&limit=1000"))
                .bearer_auth(token),
        );
        if left.as_array().is_some_and(Vec::is_empty) {
            println!(
                "  the last invitation queued (no draft left) after {:.1} s",
                start.elapsed().as_secs_f64()
            );
            break;
        }
        if start.elapsed() > wait {
            println!("  not every invitation queued within {} s", wait.as_secs());
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
