//! Document benchmarks against a running esign (`just bench` starts one):
//!
//! 1. `GET /v1/documents?filter=sent&limit=100` p50/p99 on an entity with 1 000 and
//!    then 100 000 documents (every tenth sent), seeded through the API.
//! 2. Create a document from a 20-page PDF and send it, until its status is `sent`:
//!    p50/p99 wall time.
//! 3. Its signer signs: wall time from the signature to the sealed final PDF (render
//!    with the audit certificate, page images, PAdES seal, commit), p50/p99.
//!
//! Usage: `docs_bench BASE_URL EMAIL PASSWORD` (env `DOCS_BENCH_LARGE` overrides the
//! 100 000, `DOCS_BENCH_ROUNDS` the 50 create-and-send rounds; `DOCS_BENCH_LIST_ONLY=N`
//! only measures the list on a server that already holds N documents, with the query
//! `DOCS_BENCH_QUERY` (default `filter=sent&limit=100`); `DOCS_BENCH_DRAFTS=N` seeds N
//! drafts through the API, 16 clients, none sent, and measures
//! `GET /v1/documents?limit=100`).

use base64::Engine as _;
use reqwest::blocking::Client;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

struct Api {
    base: String,
    token: String,
    http: Client,
}

impl Api {
    fn post(&self, path: &str, body: &Value) -> Value {
        let resp = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .unwrap();
        let status = resp.status();
        let v: Value = resp.json().unwrap_or(Value::Null);
        assert!(status.is_success(), "POST {path}: {status} {v}");
        v
    }

    fn get(&self, path: &str) -> Value {
        let resp = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .send()
            .unwrap();
        assert!(resp.status().is_success(), "GET {path}: {}", resp.status());
        resp.json().unwrap()
    }

    fn wait_status(&self, id: &str, want: &str) {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if self.get(&format!("/v1/documents/{id}/status"))["status"] == want {
                return;
            }
            assert!(Instant::now() < deadline, "{id} never became {want}");
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// Creates documents `from..to` with 8 threads; every tenth is sent.
/// Creates documents `from..to` through the API, every tenth sent when `send` (then
/// waits until all of those are sent).
fn seed(api: &Arc<Api>, from: usize, to: usize) {
    seed_with(api, from, to, true, 8)
}

fn seed_with(api: &Arc<Api>, from: usize, to: usize, send: bool, clients: usize) {
    let next = Arc::new(AtomicUsize::new(from));
    let started = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let (api, next) = (api.clone(), next.clone());
            std::thread::spawn(move || {
                let local = Api {
                    base: api.base.clone(),
                    token: api.token.clone(),
                    http: client(),
                };
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= to {
                        break;
                    }
                    let doc = local.post(
                        "/v1/documents",
                        &json!({"name": format!("Bench {i:06}"), "value": i,
                                "recipients": [{"email": format!("r{i}@example.com")}]}),
                    );
                    if send && i % 10 == 0 {
                        let id = doc["id"].as_str().unwrap();
                        local.post(&format!("/v1/documents/{id}/send"), &json!({}));
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    if !send {
        let secs = started.elapsed().as_secs_f64();
        println!(
            "  seeded {} drafts through the API ({clients} clients) in {secs:.0} s, {:.0}/s",
            to - from,
            (to - from) as f64 / secs
        );
        return;
    }
    let sent_target = to.div_ceil(10);
    let deadline = Instant::now() + Duration::from_secs(1800);
    // Every tenth document renders in the background; wait until all are sent.
    loop {
        let probe = api.get(&format!(
            "/v1/documents?filter=sent&limit=1&offset={}",
            sent_target - 1
        ));
        if !probe.as_array().unwrap().is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "sending did not finish");
        std::thread::sleep(Duration::from_millis(200));
    }
    println!(
        "  seeded documents {from}..{to} ({} sent in all) in {:.1} s",
        sent_target,
        started.elapsed().as_secs_f64()
    );
}

/// p50 and p99 of `GET /v1/documents?filter=sent&limit=100` over `n` requests.
fn measure_list(api: &Api, n: usize) -> (Duration, Duration) {
    measure_query(api, "filter=sent&limit=100", n)
}

/// p50 and p99 of `GET /v1/documents?{query}` (a page of 100) over `n` requests.
fn measure_query(api: &Api, query: &str, n: usize) -> (Duration, Duration) {
    let path = format!("/v1/documents?{query}");
    for _ in 0..20 {
        api.get(&path);
    }
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let list = api.get(&path);
        samples.push(t.elapsed());
        assert_eq!(list.as_array().unwrap().len(), 100);
    }
    samples.sort();
    (pct(&samples, 0.5), pct(&samples, 0.99))
}

/// Measures `GET /v1/documents?{query}` over 500 requests and prints p50 and p99.
fn print_list(api: &Api, n: usize, query: &str) {
    let (p50, p99) = measure_query(api, query, 500);
    println!(
        "  {n:>7} documents, GET /v1/documents?{query}: p50 {:.2} ms  p99 {:.2} ms",
        ms(p50),
        ms(p99)
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (base, email, password) = (&args[1], &args[2], &args[3]);
    let large: usize = std::env::var("DOCS_BENCH_LARGE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let rounds: usize = std::env::var("DOCS_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let http = client();
    let token: Value = http
        .post(format!("{base}/v1/auth"))
        .json(&json!({"email": email, "password": password}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let api = Arc::new(Api {
        base: base.clone(),
        token: token["access_token"].as_str().expect("login").to_string(),
        http,
    });

    // `DOCS_BENCH_LIST_ONLY=N`: the server already holds N documents (just bench moves
    // the seeded store to PostgreSQL): measure the list only.
    if let Some(n) = std::env::var("DOCS_BENCH_LIST_ONLY")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        let query =
            std::env::var("DOCS_BENCH_QUERY").unwrap_or_else(|_| "filter=sent&limit=100".into());
        print_list(&api, n, &query);
        return;
    }
    if let Some(n) = std::env::var("DOCS_BENCH_DRAFTS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        seed_with(&api, 0, n, false, 16);
        print_list(&api, n, "limit=100");
        return;
    }
    // `DOCS_BENCH_SEED_ONLY=N`: seed N documents and stop (the backup benchmark's
    // smaller store).
    if let Some(n) = std::env::var("DOCS_BENCH_SEED_ONLY")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        seed(&api, 0, n);
        return;
    }
    println!("GET /v1/documents?filter=sent&limit=100, one client, 500 requests per row");
    seed(&api, 0, 1000);
    let (p50_small, p99_small) = measure_list(&api, 500);
    println!(
        "  {:>7} documents: p50 {:.2} ms  p99 {:.2} ms",
        1000,
        ms(p50_small),
        ms(p99_small)
    );
    seed(&api, 1000, large);
    let (p50_large, p99_large) = measure_list(&api, 500);
    println!(
        "  {:>7} documents: p50 {:.2} ms  p99 {:.2} ms",
        large,
        ms(p50_large),
        ms(p99_large)
    );
    println!(
        "  p99 at {large} / p99 at 1000: {:.2}x (goals: p99 <= 50 ms, <= 2x)",
        p99_large.as_secs_f64() / p99_small.as_secs_f64()
    );

    println!("create from a 20-page PDF and send, until status sent: {rounds} rounds");
    let pdf = esign_host::pdf::sample_pdf(20);
    let b64 = base64::engine::general_purpose::STANDARD.encode(&pdf);
    let mut samples = Vec::with_capacity(rounds);
    let mut sent = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let t = Instant::now();
        let doc = api.post(
            "/v1/documents",
            &json!({"name": format!("Twenty {i}"), "file_content": b64, "file_name": "twenty.pdf",
                    "recipients": [{"email": "signer@example.com"}]}),
        );
        let id = doc["id"].as_str().unwrap().to_string();
        api.wait_status(&id, "draft");
        api.post(&format!("/v1/documents/{id}/send"), &json!({}));
        api.wait_status(&id, "sent");
        samples.push(t.elapsed());
        sent.push(id);
    }
    samples.sort();
    println!(
        "  p50 {:.1} ms  p99 {:.1} ms  (goal: p50 <= 1000 ms)",
        ms(pct(&samples, 0.5)),
        ms(pct(&samples, 0.99))
    );

    println!(
        "the last signature to the sealed final PDF of those documents (no TSA): {rounds} rounds"
    );
    let mut samples = Vec::with_capacity(rounds);
    for id in &sent {
        let doc = api.get(&format!("/v1/documents/{id}"));
        let url = doc["recipients"][0]["document_url"].as_str().unwrap();
        let secret = url.rsplit('/').next().unwrap();
        let t = Instant::now();
        let resp = api
            .http
            .post(format!("{}/v1/recipient/{secret}/sign", api.base))
            .json(&json!({"signature": {"type": "typed", "name": "Bench Signer"}}))
            .send()
            .unwrap();
        assert!(resp.status().is_success(), "sign: {}", resp.status());
        let deadline = Instant::now() + Duration::from_secs(120);
        while api.get(&format!("/v1/documents/{id}"))["evidence"]["status"] != "sealed" {
            assert!(Instant::now() < deadline, "{id} was never sealed");
            std::thread::sleep(Duration::from_millis(2));
        }
        samples.push(t.elapsed());
    }
    samples.sort();
    println!(
        "  p50 {:.1} ms  p99 {:.1} ms  (goal: p50 <= 100 ms)",
        ms(pct(&samples, 0.5)),
        ms(pct(&samples, 0.99))
    );
}
