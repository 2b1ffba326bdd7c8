//! Micro-benchmark of one engine call (`GET /v1/test` with a valid token) over the same
//! sled-backed transactions: the engine linked natively vs the wasm component, the
//! component's call split into instantiation, the call and the teardown, plus
//! instantiation alone, calls that touch no store, and the full dispatcher path with
//! commit. Prints one line per measure; `bench/run.sh` runs it.

use esign_engine as native;
use esign_host::bindings::{Origin, Request};
use esign_host::calls::Dispatcher;
use esign_host::passwords::Passwords;
use esign_host::runtime::{EMBEDDED_ENGINE, Faults, Runtime, Shared, default_settings};
use esign_host::store::{Store, Txn, sled::SledBackend};
use std::collections::HashMap;
use std::time::{Duration, Instant};

const ITERATIONS: usize = 20_000;

/// The engine's Platform over a host transaction, as the component's imports are.
struct NativePlatform {
    txn: Txn,
    settings: native::Settings,
}

fn data_key(key: &[u8]) -> Vec<u8> {
    [b"d/".as_slice(), key].concat()
}

impl native::Platform for NativePlatform {
    fn get(&mut self, key: &[u8]) -> Option<Vec<u8>> {
        self.txn.get(&data_key(key)).unwrap()
    }
    fn put(&mut self, key: &[u8], value: &[u8]) {
        self.txn.put(&data_key(key), value)
    }
    fn delete(&mut self, key: &[u8]) {
        self.txn.delete(&data_key(key))
    }
    fn scan(&mut self, s: &[u8], e: &[u8], limit: u32, rev: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.txn
            .scan(&data_key(s), &data_key(e), limit as usize, rev)
            .unwrap()
            .into_iter()
            .map(|(k, v)| (k[2..].to_vec(), v))
            .collect()
    }
    fn put_blob(&mut self, _: &[u8]) -> Result<native::BlobInfo, String> {
        Err("no blobs in this benchmark".into())
    }
    fn keep_staged(&mut self, _: &str) -> Result<native::BlobInfo, String> {
        Err("no blobs in this benchmark".into())
    }
    fn get_blob(&mut self, _: &str) -> Option<Vec<u8>> {
        None
    }
    fn delete_blob(&mut self, _: &str) {}
    fn cancel_deliveries(&mut self, _: &str) {}
    fn pending_deliveries(&mut self, _: &str, _: &str, _: u32) -> Vec<native::PendingDelivery> {
        Vec::new()
    }
    fn emit_event(&mut self, _: native::Event, _: Vec<native::Delivery>) {
        unreachable!("GET /v1/test emits nothing")
    }
    fn schedule_job(&mut self, _: native::JobSpec) -> String {
        unreachable!("GET /v1/test schedules nothing")
    }
    fn send_mail(&mut self, _: native::Mail) {
        unreachable!("GET /v1/test sends nothing")
    }
    fn send_sms(&mut self, _: native::Sms) {
        unreachable!("GET /v1/test sends nothing")
    }
    fn eid_start(&mut self, _: &str, _: &str) -> Result<String, String> {
        unreachable!("GET /v1/test verifies nobody")
    }
    fn eid_finish(&mut self, _: &str, _: &str) -> Result<native::EidIdentity, String> {
        unreachable!("GET /v1/test verifies nobody")
    }
    fn verify_pdf(&mut self, _: &[u8]) -> native::PdfCheck {
        unreachable!("GET /v1/test checks no file")
    }
    fn fetch_client_metadata(&mut self, _: &str) -> Result<String, String> {
        unreachable!("GET /v1/test fetches nothing")
    }
    fn settings(&mut self) -> native::Settings {
        self.settings.clone()
    }
    fn hash_password(&mut self, _: &str) -> String {
        unreachable!()
    }
    fn verify_password(&mut self, _: &str, _: &str) -> bool {
        unreachable!()
    }
    fn now_ms(&mut self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    }
    fn fill_random(&mut self, buf: &mut [u8]) {
        getrandom::fill(buf).unwrap()
    }
}

fn minor_faults() -> i64 {
    // SAFETY: getrusage fills the struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    u.ru_minflt
}

/// (mean, p50, p99) of `samples`.
fn summarize(samples: &mut [Duration]) -> (Duration, Duration, Duration) {
    samples.sort();
    let n = samples.len();
    let mean = samples.iter().sum::<Duration>() / n as u32;
    (mean, samples[n / 2], samples[n * 99 / 100])
}

/// Runs `f` ITERATIONS times after a warm-up; returns (mean, p50, p99).
fn measure(mut f: impl FnMut()) -> (Duration, Duration, Duration) {
    for _ in 0..ITERATIONS / 10 {
        f();
    }
    let mut samples = Vec::with_capacity(ITERATIONS);
    let faults_before = minor_faults();
    let all = Instant::now();
    for _ in 0..ITERATIONS {
        let t = Instant::now();
        f();
        samples.push(t.elapsed());
    }
    let mean = all.elapsed() / ITERATIONS as u32;
    let faults_after = minor_faults();
    println!(
        "  (minor page faults per call: {:.1})",
        (faults_after - faults_before) as f64 / ITERATIONS as f64
    );
    let (_, p50, p99) = summarize(&mut samples);
    (mean, p50, p99)
}

fn report(name: &str, (mean, p50, p99): (Duration, Duration, Duration)) -> f64 {
    println!(
        "{name:<54} mean {:>7.2} µs   p50 {:>7.2} µs   p99 {:>7.2} µs",
        mean.as_secs_f64() * 1e6,
        p50.as_secs_f64() * 1e6,
        p99.as_secs_f64() * 1e6
    );
    mean.as_secs_f64() * 1e6
}

fn request(method: &str, path: &str, headers: Vec<(String, String)>, body: &str) -> Request {
    Request {
        method: method.into(),
        path: path.into(),
        query: String::new(),
        headers,
        body: body.as_bytes().to_vec(),
        parts: Vec::new(),
        origin: Origin::Admin,
        remote_addr: "127.0.0.1".into(),
    }
}

fn main() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("esign-bench-{}", std::process::id()));
    let store = Store::new(SledBackend::open(&dir)?);
    let mut settings = default_settings();
    settings.token_min_interval_ms = Some(0);
    let shared = || Shared {
        settings: settings.clone(),
        passwords: Passwords::new(),
        eid: None,
        seal_certificate_sha256: String::new(),
        outbound: None,
    };
    let cache = dir.join("cache");
    let d = Dispatcher::new(
        Runtime::new(EMBEDDED_ENGINE, Some(&cache), 8, shared())?,
        store.clone(),
        8,
    );
    let json = vec![("content-type".to_string(), "application/json".to_string())];
    let body = r#"{"email":"bench@example.com","password":"bench-password"}"#;
    d.handle_blocking(
        &request("POST", "/admin/bootstrap", json.clone(), body),
        Faults::default(),
    );
    let mut login = request("POST", "/v1/auth", json, body);
    login.origin = Origin::Http;
    let resp = d.handle_blocking(&login, Faults::default());
    let token: serde_json::Value = serde_json::from_slice(&resp.body)?;
    let token = token["access_token"]
        .as_str()
        .expect("login works")
        .to_string();

    let mut req = request(
        "GET",
        "/v1/test",
        vec![("authorization".into(), format!("Bearer {token}"))],
        "",
    );
    req.origin = Origin::Http;
    let native_req = native::Request {
        method: req.method.clone(),
        path: req.path.clone(),
        query: req.query.clone(),
        headers: req.headers.clone(),
        body: req.body.clone(),
        parts: Vec::new(),
        origin: native::Origin::Http,
        remote_addr: req.remote_addr.clone(),
    };
    let native_settings = native::Settings {
        token_min_interval_ms: 0,
        base_url: settings.base_url.clone(),
        link_key: settings.link_key.clone(),
        ..native::Settings::default()
    };
    let runtime = Runtime::new(EMBEDDED_ENGINE, Some(&cache), 8, shared())?;

    // One native call, over a sled transaction like the component's.
    let native_call = || {
        let mut p = NativePlatform {
            txn: store.begin(),
            settings: native_settings.clone(),
        };
        assert_eq!(native::handle(&mut p, &native_req).status, 200);
    };
    // One component call, its instance torn down inline (outside tokio).
    let component_call = || {
        let (resp, _) = runtime.call(
            store.begin(),
            Faults::default(),
            false,
            HashMap::new(),
            |b, s| b.call_handle(s, &req),
        );
        assert_eq!(resp.unwrap().status, 200);
    };
    // `ENGINE_CALL_PROFILE=SECS`: only component calls (instantiate, handle, teardown)
    // for SECS seconds after a line on stderr, for `perf record -p` to attach to (with
    // `ESIGN_PERFMAP=1`); no figures.
    if let Some(secs) = std::env::var("ENGINE_CALL_PROFILE")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        eprintln!("profiling: component calls for {secs} s");
        let until = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < until {
            component_call();
        }
        return Ok(());
    }
    println!("one engine call, GET /v1/test, {ITERATIONS} iterations, sled transaction each:");
    report("native engine: handle", measure(native_call));
    // One call in three phases, each timed alone: instantiation (`Store::new` and the
    // instance), the `handle` call, and the teardown (the memory reset and freeing the
    // instance). Outside tokio, as here, `Runtime::call` tears down inline; the server
    // does it after the answer is written, so a request waits for the first two.
    // A native call runs after each component call, so that the ratio compares calls
    // made under the same conditions (on a shared machine the load moves within
    // seconds, and measuring each side alone gave ratios from 1.7x to 4.7x).
    let mut phases = [const { Vec::new() }; 3];
    let mut native_paired = Vec::new();
    for i in 0..ITERATIONS + ITERATIONS / 10 {
        let started = Instant::now();
        let (mut instantiated, mut called) = (started, started);
        let (resp, _) = runtime.call(
            store.begin(),
            Faults::default(),
            false,
            HashMap::new(),
            |b, s| {
                instantiated = Instant::now();
                let resp = b.call_handle(s, &req);
                called = Instant::now();
                resp
            },
        );
        let ended = Instant::now();
        assert_eq!(resp.unwrap().status, 200);
        let native_started = Instant::now();
        native_call();
        let native_took = native_started.elapsed();
        if i >= ITERATIONS / 10 {
            phases[0].push(instantiated - started);
            phases[1].push(called - instantiated);
            phases[2].push(ended - called);
            native_paired.push(native_took);
        }
    }
    let instantiate_us = report("component: instantiate", summarize(&mut phases[0]));
    let call = summarize(&mut phases[1]);
    report("component: handle (the call alone)", call);
    let paired = summarize(&mut native_paired);
    report("native engine: handle, interleaved with those", paired);
    let ratio = call.1.as_secs_f64() / paired.1.as_secs_f64();
    report(
        "component: teardown (after the answer, in the server)",
        summarize(&mut phases[2]),
    );
    let mut waited: Vec<Duration> = phases[0]
        .iter()
        .zip(&phases[1])
        .map(|(a, b)| *a + *b)
        .collect();
    let component_us = report("component: instantiate + handle", summarize(&mut waited));
    report(
        "component: instantiate + handle + teardown",
        measure(component_call),
    );
    report(
        "component: instantiate only",
        measure(|| {
            let (r, _) = runtime.call(
                store.begin(),
                Faults::default(),
                false,
                HashMap::new(),
                |_, _| Ok(()),
            );
            r.unwrap();
        }),
    );
    for (label, path, auth) in [
        ("component: 404, no store access", "/v1/nope", false),
        (
            "component: 401 no token, no store access",
            "/v1/test",
            false,
        ),
    ] {
        let mut r = req.clone();
        r.path = path.into();
        if !auth {
            r.headers.clear();
        }
        report(
            label,
            measure(|| {
                let (resp, _) = runtime.call(
                    store.begin(),
                    Faults::default(),
                    false,
                    HashMap::new(),
                    |b, s| b.call_handle(s, &r),
                );
                std::hint::black_box(resp.unwrap());
            }),
        );
    }
    report(
        "dispatcher: instantiate + handle + commit",
        measure(|| {
            assert_eq!(d.handle_blocking(&req, Faults::default()).status, 200);
        }),
    );
    println!(
        "instantiate {instantiate_us:.1} µs (goal <= 5 µs); handle / native {ratio:.2}x (p50s, interleaved; goal <= 2x); instantiate + handle {component_us:.1} µs (goal <= 12 µs)",
    );
    drop(d);
    drop(runtime);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
