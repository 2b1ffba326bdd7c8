//! The engine component under other hosts than ours (issue 14): Node.js through jco
//! (`hosts/js`, its own `node:test` suite, which compares every answer with this
//! binary's) and `wasmtime serve` through the WASI HTTP adapter (`hosts/wasi-http`).
//!
//! Each skips, saying so, when its tools are missing, unless `ESIGN_REQUIRE_HOSTS=1`
//! (CI sets it; `.ci/run` installs them).

mod common;

use common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

fn required() -> bool {
    std::env::var("ESIGN_REQUIRE_HOSTS").is_ok_and(|v| v == "1")
}

/// Skips (returns false) or, when required, fails, saying what is missing.
fn have(ok: bool, what: &str) -> bool {
    assert!(ok || !required(), "ESIGN_REQUIRE_HOSTS=1 but {what}");
    if !ok {
        eprintln!("skipped: {what}");
    }
    ok
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn node_host_through_jco_answers_like_this_host() {
    let js = repo().join("hosts/js");
    let installed = js.join("node_modules/@bytecodealliance/jco").is_dir()
        && succeeds(Command::new("node").arg("--version"));
    if !have(
        installed,
        "node or hosts/js/node_modules is missing (npm ci --prefix hosts/js)",
    ) {
        return;
    }
    let out = output_within(
        Command::new("node")
            .args(["--test", "--test-reporter=spec", "test/"])
            .current_dir(&js)
            .env("ESIGN_BIN", esign_bin())
            .env(
                "ESIGN_COMPILE_CACHE",
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("compile-cache"),
            ),
        300,
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the node:test suite failed:\n{text}");
    // Two tests ran and passed (a suite that found no tests also exits 0).
    assert!(text.contains("pass 2"), "{text}");
}

/// The wasmtime CLI (48.x) to serve with: `ESIGN_WASMTIME`, else `wasmtime` on the PATH.
fn wasmtime() -> Option<String> {
    let bin = std::env::var("ESIGN_WASMTIME").unwrap_or_else(|_| "wasmtime".into());
    let out = Command::new(&bin).arg("--version").output().ok()?;
    let version = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        version.starts_with("wasmtime 48."),
        "{bin} is {version}; the adapter is tested with wasmtime-cli 48"
    );
    Some(bin)
}

/// `wasmtime serve` of the composed component on a free loopback port, killed on drop.
struct WasmtimeServe {
    child: std::process::Child,
    base: String,
}

impl WasmtimeServe {
    fn start(bin: &str, component: &Path, data: &Path) -> WasmtimeServe {
        use std::io::{BufRead, BufReader};
        let mut child = Command::new(bin)
            .args(["serve", "-Scli", "--addr", "127.0.0.1:0", "--dir"])
            .arg(format!("{}::/data", data.display()))
            .args(["--env", &format!("ESIGN_ADMIN_EMAIL={ADMIN_EMAIL}")])
            .args(["--env", &format!("ESIGN_ADMIN_PASSWORD={ADMIN_PASSWORD}")])
            .args(["--env", "ESIGN_TOKEN_MIN_INTERVAL_MS=0"])
            .arg(component)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn wasmtime serve");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                eprintln!("wasmtime serve: {line}");
                let _ = tx.send(line);
            }
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(url) = line.strip_prefix("Serving HTTP on ") {
                        let base = url.trim_end_matches('/').to_string();
                        return WasmtimeServe { child, base };
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    panic!(
                        "wasmtime serve did not start within 120 s: {:?}",
                        child.wait()
                    );
                }
            }
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

impl Drop for WasmtimeServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn wasmtime_serve_runs_the_composed_component() {
    let Some(bin) = wasmtime() else {
        have(
            false,
            "wasmtime (48.x) is not installed (ESIGN_WASMTIME or the PATH; .ci/run builds it)",
        );
        return;
    };
    let dir = fresh_dir("wasi-http");
    let component = dir.join("esign-wasi-http.wasm");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    engine_export(&component, &["--wasi-http"]);

    let server = WasmtimeServe::start(&bin, &component, &data);
    let http = client();
    // Without a token: the engine's 401, in its error shape.
    let (status, body) = call(http.get(server.url("/v1/test")));
    assert_eq!(status, 401, "{body}");
    assert_error(status, &body, 401);

    // The first request set up the admin from the environment.
    let login = json!({"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD});
    let (status, body) = call(http.post(server.url("/v1/auth")).json(&login));
    assert_eq!(status, 200, "{body}");
    let token = body["access_token"].as_str().unwrap().to_string();
    let (status, body) = call(http.get(server.url("/v1/test")).bearer_auth(&token));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["first_name"], "Admin", "{body}");

    let doc = json!({"name": "Served by wasmtime", "recipients": [
        {"email": "signer@example.com", "first_name": "Sam", "role": "signer"}
    ]});
    let (status, created) = call(
        http.post(server.url("/v1/documents"))
            .bearer_auth(&token)
            .json(&doc),
    );
    assert_eq!(status, 200, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    let read = |server: &WasmtimeServe| {
        call(
            http.get(server.url(&format!("/v1/documents/{id}")))
                .bearer_auth(&token),
        )
    };
    let (status, body) = read(&server);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["name"], "Served by wasmtime");
    assert_eq!(body["status"], "draft");
    assert_eq!(body["recipients"][0]["email"], "signer@example.com");

    // Multipart is the host's to decode, and this one does not: refused like any body
    // the engine cannot take.
    let form = reqwest::blocking::multipart::Form::new().text("name", "x");
    let (status, body) = call(
        http.post(server.url("/v1/documents"))
            .bearer_auth(&token)
            .multipart(form),
    );
    assert_eq!(assert_error(status, &body, 400), "invalid_content_type");

    // Requests that commit at once: each is either done (200) or not at all (503 with
    // retry-after); the list holds exactly the documents that were answered 200.
    let answers: Vec<(u16, Value)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..8)
            .map(|i| {
                let (http, server, token) = (&http, &server, &token);
                scope.spawn(move || {
                    call(
                        http.post(server.url("/v1/documents"))
                            .bearer_auth(token)
                            .json(&json!({"name": format!("Concurrent {i}")})),
                    )
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let created = answers.iter().filter(|(s, _)| *s == 200).count();
    for (status, body) in &answers {
        if *status != 200 {
            assert_eq!(assert_error(*status, body, 503), "conflict", "{body}");
        }
    }
    assert!(created >= 1, "{answers:?}");
    eprintln!("concurrent creates: {created} of 8 committed, the rest conflicted");
    let (status, list) = call(http.get(server.url("/v1/documents")).bearer_auth(&token));
    assert_eq!(status, 200, "{list}");
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["name"].as_str())
        .filter(|n| n.starts_with("Concurrent "))
        .collect();
    assert_eq!(names.len(), created, "{names:?} against {answers:?}");

    // The data is in the directory: a new server on it knows the token and the document.
    drop(server);
    let server = WasmtimeServe::start(&bin, &component, &data);
    let (status, body) = read(&server);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["name"], "Served by wasmtime");
}

#[test]
fn python_host_through_wasmtime_py_runs_the_smoke_test() {
    let Some(py) = python_with(
        "wasmtime.component, argon2",
        "ESIGN_REQUIRE_HOSTS",
        "hosts/python/requirements.txt",
    ) else {
        eprintln!(
            "skipped: no Python with wasmtime and argon2-cffi (hosts/python/requirements.txt)"
        );
        return;
    };
    let dir = fresh_dir("python-host");
    let component = dir.join("engine.wasm");
    engine_export(&component, &[]);
    let out = output_within(
        Command::new(py)
            .arg(repo().join("hosts/python/host.py"))
            .arg(&component),
        300,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the Python host failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok ")).count(),
        8,
        "{stdout}"
    );
}
