//! Operating esign, black-box: `/healthz` and `/readyz` (with the database going away
//! and coming back), the Prometheus page read by the Prometheus project's own parser,
//! and the JSON log, with no secret of a path in it.

mod common;

use common::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn status_of(s: &Server, path: &str) -> (u16, Value) {
    let resp = s.get(path).send().unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().unwrap_or(Value::Null))
}

#[test]
fn health_and_readiness_answer_without_a_token() {
    let s = Server::start(&[]);
    let (status, body) = status_of(&s, "/healthz");
    assert_eq!((status, &body["status"]), (200, &json!("ok")), "{body}");
    let (status, body) = status_of(&s, "/readyz");
    assert_eq!((status, &body["status"]), (200, &json!("ready")), "{body}");
    let resp = s.get("/readyz").send().unwrap();
    assert_eq!(resp.headers()["cache-control"], "no-store");
    // Only GET: anything else is the engine's (404 for an unknown route).
    let resp = s.post("/healthz").send().unwrap();
    assert_eq!(resp.status(), 404);
}

/// A TCP forwarder in front of the database that can play "stopped": while down it
/// closes every connection it holds and every new one at once.
struct Forwarder {
    addr: SocketAddr,
    up: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Forwarder {
    fn start(upstream: String) -> Forwarder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let up = Arc::new(AtomicBool::new(true));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (up2, open2) = (up.clone(), open.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if !up2.load(Ordering::SeqCst) {
                    continue; // dropped: closed at once
                }
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                let mut held = open2.lock().unwrap();
                held.push(client.try_clone().unwrap());
                held.push(server.try_clone().unwrap());
                drop(held);
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Forwarder { addr, up, open }
    }

    fn set_up(&self, up: bool) {
        self.up.store(up, Ordering::SeqCst);
        if !up {
            for s in self.open.lock().unwrap().drain(..) {
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
        }
    }
}

#[test]
fn readiness_follows_the_database_while_health_stays() {
    let Some(url) = test_store() else {
        assert!(
            std::env::var("ESIGN_REQUIRE_POSTGRES").is_err(),
            "ESIGN_REQUIRE_POSTGRES is set but ESIGN_TEST_STORE is not"
        );
        eprintln!("skipped: no ESIGN_TEST_STORE (a PostgreSQL server for the test)");
        return;
    };
    // postgres://user@HOST:PORT/db...: the host and port go through the forwarder.
    let (scheme_user, rest) = url.split_once('@').unwrap();
    let (host_port, db) = rest.split_once('/').unwrap();
    let fwd = Forwarder::start(host_port.to_string());
    let through = format!("{scheme_user}@{}/{db}", fwd.addr);
    let s = Server::start_with(&[], &[("ESIGN_STORE", &through)]);
    assert_eq!(status_of(&s, "/readyz").0, 200);

    fwd.set_up(false);
    let body = wait_until(30, "/readyz to fail", || {
        let (status, body) = status_of(&s, "/readyz");
        (status == 503).then_some(body)
    });
    assert_eq!(body["error"], "not_ready", "{body}");
    assert!(
        body["description"].as_str().unwrap().contains("store"),
        "{body}"
    );
    assert_eq!(status_of(&s, "/healthz").0, 200, "the process still serves");

    fwd.set_up(true);
    wait_until(30, "/readyz to recover", || {
        (status_of(&s, "/readyz").0 == 200).then_some(())
    });
    let t = s.admin_token();
    assert_eq!(s.get_as(&t, "/v1/documents").0, 200);
}

/// The metrics page, parsed by the Prometheus client's OpenMetrics parser.
fn scrape(py: &str, url: &str) -> Vec<Value> {
    let resp = client().get(url).send().unwrap();
    assert_eq!(resp.status(), 200);
    let ctype = resp.headers()["content-type"].to_str().unwrap().to_string();
    assert!(ctype.starts_with("application/openmetrics-text"), "{ctype}");
    let text = resp.text().unwrap();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/running/metrics.py");
    let mut child = Command::new(py)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the parser refused the page: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The value of sample `name` whose labels include `labels` (0 when absent).
fn value(samples: &[Value], name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|s| s["name"] == name)
        .find(|s| labels.iter().all(|(k, v)| s["labels"][*k] == *v))
        .and_then(|s| s["value"].as_f64())
        .unwrap_or(0.0)
}

#[test]
fn the_metrics_page_parses_and_moves_with_the_requests() {
    let Some(py) = python_with(
        "prometheus_client",
        "ESIGN_REQUIRE_METRICS_PARSER",
        "pip install -r tests/running/requirements.txt",
    ) else {
        eprintln!("skipped: no prometheus_client for Python");
        return;
    };
    let s = Server::start(&[
        "--metrics-listen",
        "127.0.0.1:0",
        "--test-mcp-user",
        ADMIN_EMAIL,
    ]);
    let url = s
        .banner
        .iter()
        .find_map(|l| l.strip_prefix("metrics at "))
        .expect("the metrics address in the banner")
        .to_string();
    // Off the main listener.
    assert_eq!(s.get("/metrics").send().unwrap().status(), 404);
    let t = s.admin_token();
    let before = scrape(&py, &url);
    let route = [
        ("route", "/v1/documents/{id}"),
        ("method", "GET"),
        ("status", "404"),
    ];
    for _ in 0..3 {
        let (status, _) = s.get_as(&t, "/v1/documents/aaaaaaaaaaaaaaaa");
        assert_eq!(status, 404);
    }
    s.create_doc(&t, &json!({"name": "counted"}));
    // A mail is queued and (within a moment) sent; the queue gauges exist either way.
    let after = scrape(&py, &url);
    let requests = "esign_http_requests_total";
    assert_eq!(
        value(&after, requests, &route) - value(&before, requests, &route),
        3.0,
        "three 404s of one route template"
    );
    let created = [
        ("route", "/v1/documents"),
        ("method", "POST"),
        ("status", "200"),
    ];
    assert_eq!(value(&after, requests, &created), 1.0);
    assert!(
        value(&after, "esign_store_commits_total", &[])
            > value(&before, "esign_store_commits_total", &[]),
        "commits counted"
    );
    // The GETs ran as read-only transactions; a GET that writes (a token refresh) ran
    // again read-write, and did what it says.
    let read_only = "esign_store_read_only_calls_total";
    assert!(value(&after, read_only, &[]) >= value(&before, read_only, &[]) + 3.0);
    let reruns = "esign_store_read_only_reruns_total";
    let (status, refreshed) = s.get_as(&t, "/v1/refresh");
    assert_eq!(status, 200, "{refreshed}");
    let fresh = refreshed["access_token"].as_str().expect("a new token");
    assert_eq!(s.get_as(fresh, "/v1/users/me").0, 200);
    let rerun = scrape(&py, &url);
    assert_eq!(
        value(&rerun, reruns, &[]) - value(&after, reruns, &[]),
        1.0,
        "the refresh began read-only, wrote, and ran again"
    );
    // A POST /mcp begins read-only too: a tool that reads commits so, one that writes
    // runs again read-write and does what it says.
    let tool_call = |tool: &str, args: Value| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": tool, "arguments": args, "_meta": modern_meta()}});
        let headers = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", tool),
        ];
        let (status, answer, _) = mcp(&s, None, &headers, &body);
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        answer
    };
    let before_mcp = scrape(&py, &url);
    let made = tool_call("create_document", json!({"name": "by an agent"}));
    let made: Value =
        serde_json::from_str(made["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    let id = made["id"]
        .as_str()
        .expect("the new document's id")
        .to_string();
    tool_call("get_document_status", json!({"document_id": id}));
    let after_mcp = scrape(&py, &url);
    assert_eq!(
        value(&after_mcp, reruns, &[]) - value(&before_mcp, reruns, &[]),
        1.0,
        "the create began read-only, wrote, and ran again"
    );
    assert!(value(&after_mcp, read_only, &[]) > value(&before_mcp, read_only, &[]));
    assert_eq!(s.get_as(&t, &format!("/v1/documents/{id}")).0, 200);
    let calls = "esign_engine_call_duration_seconds_count";
    assert!(value(&after, calls, &[]) >= value(&before, calls, &[]) + 4.0);
    let latency = "esign_http_request_duration_seconds_count";
    assert!(value(&after, latency, &[("route", "/v1/documents/{id}")]) >= 3.0);
    for queue in ["jobs", "mail", "sms"] {
        assert!(
            after
                .iter()
                .any(|s| s["name"] == "esign_queue_due" && s["labels"]["queue"] == queue),
            "the {queue} queue is on the page"
        );
    }
    // No label carries a secret or an id: routes are templates.
    assert!(!after.iter().any(|s| {
        s["labels"]["route"]
            .as_str()
            .is_some_and(|r| r.contains("aaaaaaaaaaaaaaaa"))
    }));
}

#[test]
fn json_logs_are_one_object_per_line_without_path_secrets() {
    let dir = fresh_dir("logs");
    let log = dir.join("stderr.log");
    let mut cmd = Command::new(esign_bin());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.join("data"))
        .arg("--compile-cache")
        .arg(compile_cache())
        .env("ESIGN_LOG", "debug")
        .env("ESIGN_LOG_FORMAT", "json")
        .env("ESIGN_ADMIN_EMAIL", ADMIN_EMAIL)
        .env("ESIGN_ADMIN_PASSWORD", ADMIN_PASSWORD)
        .envs(store_env(test_store().as_deref()))
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap());
    let mut child = cmd.spawn().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("esign listening on ") {
                let _ = tx.send(url.to_string());
            }
        }
    });
    let base = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the server starts");
    let c = client();
    let secret = "SecretOfARecipientLink0123456789abcdef";
    for path in [
        format!("/s/{secret}"),
        format!("/v1/recipient/{secret}/pages/1"),
        format!("/v1/download/{secret}"),
        format!("/v1/eid/return/{secret}"),
        "/v1/documents".to_string(),
    ] {
        let _ = c.get(format!("{base}{path}")).send().unwrap();
    }
    let _ = c
        .post(format!("{base}/v1/auth"))
        .json(&json!({"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD}))
        .send()
        .unwrap();
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = output_within_wait(&mut child);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(secret), "a secret in the log:\n{text}");
    let mut requests = 0;
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        for key in ["timestamp", "level", "message"] {
            assert!(v.get(key).is_some(), "{key} in {line}");
        }
        if v.get("route").is_some() {
            requests += 1;
            for key in ["trace_id", "status", "duration_ms", "method", "path"] {
                assert!(v.get(key).is_some(), "{key} in {line}");
            }
        }
    }
    assert!(requests >= 6, "one line per request:\n{text}");
    assert!(text.contains("\"route\":\"/s/{secret}\""), "{text}");
}

/// Waits (at most 20 s) for `child` to exit after a SIGTERM; kills it otherwise.
fn output_within_wait(child: &mut std::process::Child) -> Option<std::process::ExitStatus> {
    for _ in 0..200 {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    child.wait().ok()
}
