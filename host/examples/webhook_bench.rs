//! Webhook delivery benchmark (`just bench`): starts an HTTPS receiver on loopback
//! (hyper + rustls, keep-alive) and an esign (`ESIGN_BIN`, default
//! `target/release/esign`) that trusts it, then measures
//!
//! 1. deliveries per second: 10 subscriptions to `document.created`, 2 000 documents
//!    created by 8 clients → 20 000 deliveries, counted at the receiver from the first
//!    to the last;
//! 2. commit-to-first-attempt latency: one subscription, 300 documents created one at a
//!    time; from before the create request (so an upper bound) to the delivery's arrival.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Arrival time per document id, and the count of all arrivals.
#[derive(Default)]
struct Arrivals {
    by_doc: HashMap<String, Instant>,
    count: usize,
    first: Option<Instant>,
    last: Option<Instant>,
}

fn start_receiver(
    rt: &tokio::runtime::Runtime,
) -> (String, std::path::PathBuf, Arc<Mutex<Arrivals>>) {
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let dir = std::env::temp_dir().join(format!("esign-webhook-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, cert.cert.pem()).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::try_from(cert.key_pair.serialize_der()).unwrap();
    let certs = vec![rustls::pki_types::CertificateDer::from(
        cert.cert.der().to_vec(),
    )];
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let arrivals: Arc<Mutex<Arrivals>> = Default::default();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!(
        "https://127.0.0.1:{}/hook",
        listener.local_addr().unwrap().port()
    );
    let a = arrivals.clone();
    rt.spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let (acceptor, a) = (acceptor.clone(), a.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let a = a.clone();
                    async move {
                        let body = req
                            .into_body()
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        let now = Instant::now();
                        let doc = serde_json::from_slice::<Value>(&body)
                            .ok()
                            .and_then(|v| v["document"]["id"].as_str().map(str::to_string));
                        let mut a = a.lock().unwrap();
                        a.count += 1;
                        a.first.get_or_insert(now);
                        a.last = Some(now);
                        if let Some(d) = doc {
                            a.by_doc.entry(d).or_insert(now);
                        }
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                            Bytes::new(),
                        )))
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), svc)
                    .await;
            });
        }
    });
    (url, ca, arrivals)
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (hook, ca, arrivals) = start_receiver(&rt);
    let bin = std::env::var("ESIGN_BIN").unwrap_or_else(|_| "target/release/esign".into());
    let data = ca.parent().unwrap().join("data");
    let mut child = Command::new(&bin)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--token-min-interval-ms",
            "0",
        ])
        .arg("--data-dir")
        .arg(&data)
        .arg("--outbound-ca-file")
        .arg(&ca)
        .arg("--outbound-allow-private")
        .env("ESIGN_ADMIN_EMAIL", "bench@example.com")
        .env("ESIGN_ADMIN_PASSWORD", "bench-password")
        .env("ESIGN_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .expect("start esign");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let base = loop {
        let line = lines.next().expect("esign printed its address").unwrap();
        if let Some(url) = line.strip_prefix("esign listening on ") {
            break url.to_string();
        }
    };
    let http = reqwest::blocking::Client::new();
    let token = http
        .post(format!("{base}/v1/auth"))
        .json(&json!({"email": "bench@example.com", "password": "bench-password"}))
        .send()
        .unwrap()
        .json::<Value>()
        .unwrap()["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let post = |path: &str, body: &Value| -> Value {
        http.post(format!("{base}{path}"))
            .bearer_auth(&token)
            .json(body)
            .send()
            .unwrap()
            .json()
            .unwrap()
    };
    let mut subs = Vec::new();
    for _ in 0..10 {
        let s = post(
            "/v1/subscriptions",
            &json!({"event": "document.created", "target_url": hook}),
        );
        subs.push(s["id"].as_str().unwrap().to_string());
    }

    const DOCS: usize = 2000;
    let total = DOCS * subs.len();
    println!(
        "webhook deliveries to an HTTPS receiver on loopback ({} cores shared)",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    std::thread::scope(|scope| {
        for _ in 0..8 {
            let (next, base, token) = (next.clone(), base.clone(), token.clone());
            scope.spawn(move || {
                let c = reqwest::blocking::Client::new();
                while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < DOCS {
                    c.post(format!("{base}/v1/documents"))
                        .bearer_auth(&token)
                        .json(&json!({"name": "bench"}))
                        .send()
                        .unwrap();
                }
            });
        }
    });
    let deadline = Instant::now() + Duration::from_secs(300);
    while arrivals.lock().unwrap().count < total {
        assert!(Instant::now() < deadline, "deliveries did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (first, last) = {
        let a = arrivals.lock().unwrap();
        (a.first.unwrap(), a.last.unwrap())
    };
    let secs = (last - first).as_secs_f64();
    println!(
        "  {total} deliveries in {secs:.2} s: {:.0} deliveries/s (goal >= 2000)",
        total as f64 / secs
    );

    for s in &subs[1..] {
        http.delete(format!("{base}/v1/subscriptions/{s}"))
            .bearer_auth(&token)
            .send()
            .unwrap();
    }
    let mut samples = Vec::new();
    for i in 0..300 {
        // From before the request: an upper bound of commit-to-first-attempt.
        let committed = Instant::now();
        let doc = post("/v1/documents", &json!({"name": format!("latency {i}")}));
        let id = doc["id"].as_str().unwrap().to_string();
        let deadline = Instant::now() + Duration::from_secs(10);
        let arrived = loop {
            if let Some(t) = arrivals.lock().unwrap().by_doc.get(&id) {
                break *t;
            }
            assert!(Instant::now() < deadline, "delivery of {id} did not arrive");
            std::thread::sleep(Duration::from_micros(200));
        };
        samples.push(arrived.saturating_duration_since(committed));
        std::thread::sleep(Duration::from_millis(10));
    }
    samples.sort();
    println!(
        "  commit to first attempt (300 events, one at a time, measured from the create request): p50 {:.2} ms  p99 {:.2} ms  (goal: p99 <= 200 ms)",
        pct(&samples, 0.5).as_secs_f64() * 1000.0,
        pct(&samples, 0.99).as_secs_f64() * 1000.0
    );
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(ca.parent().unwrap());
}
