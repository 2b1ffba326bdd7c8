//! Test harness: starts the real `esign` binary on a free loopback port with its own data
//! directory, and talks HTTP to it. Every wait is bounded.

#![allow(dead_code)]

pub mod contract;
pub mod getaccept;
mod process;
pub use process::*;

use reqwest::blocking::{Client, RequestBuilder, Response};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub const ADMIN_EMAIL: &str = "admin@example.com";
pub const ADMIN_PASSWORD: &str = "admin-password-1";

/// The esign binary under test.
pub fn esign_bin() -> &'static str {
    env!("CARGO_BIN_EXE_esign")
}

/// Shared across test binaries of one target dir, so the engine is compiled once.
pub fn compile_cache() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("compile-cache")
}

/// A fresh, unique directory under the target's tmp dir, removed when the guard drops
/// (also while a failed test unwinds). Bind it (`let dir = fresh_dir(..)`) for as long
/// as the directory is used.
pub fn fresh_dir(tag: &str) -> TempDir {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).unwrap();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{tag}-{:016x}", u64::from_le_bytes(bytes)));
    TempDir::create(dir)
}

/// A running (or stopped) server with its data directory, removed on drop.
pub struct Server {
    pub data_dir: TempDir,
    pub base: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// What the server printed on stdout up to "listening".
    pub banner: Vec<String>,
    /// Whether the server honours `x-esign-test-fault` headers (`--test-faults`; on by
    /// default in the suite).
    pub test_faults: bool,
    child: Option<Child>,
    client: Client,
}

impl Server {
    /// Starts a server with the test admin and no token spacing, plus `args`.
    pub fn start(args: &[&str]) -> Server {
        let mut all = vec!["--token-min-interval-ms", "0"];
        all.extend_from_slice(args);
        Self::start_with(&all, &[])
    }

    /// Starts a server with exactly `args` (after the harness's own) and `env`.
    ///
    /// With `ESIGN_TEST_STORE` set (a `postgres://` URL ending in `/`), the server keeps
    /// its data in a fresh database there instead of sled (see [`test_store`]).
    pub fn start_with(args: &[&str], env: &[(&str, &str)]) -> Server {
        let mut base_env: Vec<(String, String)> = vec![
            ("ESIGN_ADMIN_EMAIL".into(), ADMIN_EMAIL.into()),
            ("ESIGN_ADMIN_PASSWORD".into(), ADMIN_PASSWORD.into()),
        ];
        base_env.extend(store_env(test_store().as_deref()));
        let mut server = Server {
            data_dir: fresh_dir("server"),
            base: String::new(),
            args: args.iter().map(|s| s.to_string()).collect(),
            env: base_env,
            banner: Vec::new(),
            test_faults: true,
            child: None,
            client: client(),
        };
        for (k, v) in env {
            server.env.retain(|(name, _)| name != k);
            if !v.is_empty() {
                server.env.push((k.to_string(), v.to_string()));
            }
        }
        server.launch();
        server
    }

    /// Spawns the process and waits (at most 60 s) for its "listening" line.
    pub fn launch(&mut self) {
        assert!(self.child.is_none(), "already running");
        let mut cmd = Command::new(esign_bin());
        cmd.arg("serve")
            .arg("--listen")
            .arg(self.listen_addr())
            .arg("--data-dir")
            .arg(&self.data_dir)
            .arg("--compile-cache")
            .arg(compile_cache())
            .args(self.test_faults.then_some("--test-faults"))
            .args(&self.args)
            .env_remove("ESIGN_ADMIN_PASSWORD")
            .env("ESIGN_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn esign");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        self.banner.clear();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(url) = line.strip_prefix("esign listening on ") {
                        self.base = url.replace("://localhost", "://127.0.0.1");
                        break;
                    }
                    self.banner.push(line);
                }
                Err(_) => {
                    let _ = child.kill();
                    panic!(
                        "esign did not start within 60 s: {:?}\n{}",
                        child.wait(),
                        self.banner.join("\n")
                    );
                }
            }
        }
        self.child = Some(child);
    }

    /// The address to listen on: the port of the last run (so a restart keeps its
    /// URL), or a free one.
    fn listen_addr(&self) -> String {
        match self.base.rsplit_once(':') {
            Some((_, port)) if !port.is_empty() => format!("127.0.0.1:{port}"),
            _ => "127.0.0.1:0".into(),
        }
    }

    /// SIGTERM, then waits (at most 20 s) for a clean exit.
    pub fn stop(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        // SAFETY: plain kill(2) on our own child's pid.
        let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        assert_eq!(rc, 0, "kill(SIGTERM) failed");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("esign did not stop within 20 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's resident memory in bytes (Linux `/proc`), while it runs.
    /// The server process's id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    pub fn rss_bytes(&self) -> Option<u64> {
        let pid = self.child.as_ref()?.id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    }

    /// SIGKILL: no chance to flush or clean up.
    pub fn kill(&mut self) {
        let mut child = self.child.take().expect("running");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    pub fn restart(&mut self) {
        assert!(self.stop().success());
        self.launch();
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub fn get(&self, path: &str) -> RequestBuilder {
        self.client.get(self.url(path))
    }

    pub fn post(&self, path: &str) -> RequestBuilder {
        self.client.post(self.url(path))
    }

    /// `POST /v1/auth` with a JSON body.
    pub fn login(&self, email: &str, password: &str, entity_id: Option<&str>) -> Response {
        let mut body = json!({ "email": email, "password": password });
        if let Some(e) = entity_id {
            body["entity_id"] = e.into();
        }
        self.post("/v1/auth").json(&body).send().unwrap()
    }

    /// Logs in and returns the access token, asserting success.
    pub fn token(&self, email: &str, password: &str, entity_id: Option<&str>) -> String {
        let resp = self.login(email, password, entity_id);
        let status = resp.status().as_u16();
        let body: Value = resp.json().unwrap();
        assert_eq!(status, 200, "login of {email} failed: {body}");
        body["access_token"].as_str().unwrap().to_string()
    }

    pub fn admin_token(&self) -> String {
        self.token(ADMIN_EMAIL, ADMIN_PASSWORD, None)
    }

    /// `GET path` with a bearer token; (status, JSON body or Null).
    pub fn get_as(&self, token: &str, path: &str) -> (u16, Value) {
        call(self.get(path).bearer_auth(token))
    }

    /// Runs `esign admin ...` on this server's data dir (through the running server's
    /// channel, or on the store itself when it is stopped).
    pub fn admin(&self, args: &[&str]) -> Value {
        let (ok, stdout, stderr) = self.admin_raw(args);
        assert!(ok, "esign admin {args:?} failed: {stderr}");
        serde_json::from_str(&stdout).unwrap()
    }

    pub fn admin_raw(&self, args: &[&str]) -> (bool, String, String) {
        run_admin_env(&self.data_dir, &self.env, args)
    }
}

/// Runs `cmd` to its end and returns what it printed; kills it and fails the test when
/// it runs longer than `secs` (a command that should stop must never hang the suite).
pub fn output_within(cmd: &mut Command, secs: u64) -> std::process::Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pipe = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = pipe(child.stdout.take().map(|s| Box::new(s) as _));
    let err = pipe(child.stderr.take().map(|s| Box::new(s) as _));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} did not finish within {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    std::process::Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// Runs `esign engine export [args...] FILE`, asserting success; returns what it printed.
pub fn engine_export(file: &Path, args: &[&str]) -> String {
    let out = output_within(
        Command::new(esign_bin())
            .args(["engine", "export"])
            .args(args)
            .arg(file),
        60,
    );
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A fresh database URL under `ESIGN_TEST_STORE` (the whole suite then runs on
/// PostgreSQL; `esign` creates the database at its first start), or `None` for sled.
pub fn test_store() -> Option<String> {
    let base = std::env::var("ESIGN_TEST_STORE").ok()?;
    if base.is_empty() {
        return None;
    }
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).unwrap();
    Some(format!("{base}esign_{:016x}", u64::from_le_bytes(bytes)))
}

/// Whether the suite runs on PostgreSQL (`ESIGN_TEST_STORE`).
pub fn on_postgres() -> bool {
    std::env::var("ESIGN_TEST_STORE").is_ok_and(|v| !v.is_empty())
}

/// The environment that points `esign` at `store` (nothing for sled). Leases are short
/// there, so that rows held by a killed server are taken over within the tests' waits.
pub fn store_env(store: Option<&str>) -> Vec<(String, String)> {
    match store {
        Some(url) => vec![
            ("ESIGN_STORE".into(), url.into()),
            ("ESIGN_WORKER_LEASE_MS".into(), "3000".into()),
            ("ESIGN_STORE_POOL_SIZE".into(), "24".into()),
        ],
        None => Vec::new(),
    }
}

/// Runs `esign admin --data-dir DIR args...`; (success, stdout, stderr).
pub fn run_admin(data_dir: &Path, args: &[&str]) -> (bool, String, String) {
    run_admin_env(data_dir, &[], args)
}

/// [`run_admin`] with extra environment (a server's store).
pub fn run_admin_env(
    data_dir: &Path,
    env: &[(String, String)],
    args: &[&str],
) -> (bool, String, String) {
    let out = output_within(
        Command::new(esign_bin())
            .arg("admin")
            .arg("--data-dir")
            .arg(data_dir)
            .arg("--compile-cache")
            .arg(compile_cache())
            .args(args)
            .env("ESIGN_LOG", "warn")
            .envs(env.iter().filter(|(k, _)| k == "ESIGN_STORE").cloned()),
        120,
    );
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        // `data_dir` removes itself after this.
    }
}

/// A client with bounded timeouts.
pub fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(30))
        .connect_timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

/// Sends and returns (status, JSON body or Null). The answer must be one that
/// `engine/openapi.json` describes ([`contract::check`]).
pub fn call(req: RequestBuilder) -> (u16, Value) {
    let (client, req) = req.build_split();
    let req = req.unwrap();
    let (method, path) = (req.method().to_string(), req.url().path().to_string());
    let resp = client.execute(req).unwrap();
    let status = resp.status().as_u16();
    let ctype = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let text = resp.text().unwrap();
    contract::check(&method, &path, status, &ctype, &text);
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Asserts the error shape of DESIGN.md §4 and returns the error code.
pub fn assert_error(status: u16, body: &Value, expected: u16) -> String {
    assert_eq!(status, expected, "unexpected status; body {body}");
    assert_eq!(body["status"], expected, "status member; body {body}");
    assert!(
        body["description"].as_str().is_some_and(|d| !d.is_empty()),
        "description; body {body}"
    );
    body["error"].as_str().expect("error code").to_string()
}

impl Server {
    pub fn put(&self, path: &str) -> RequestBuilder {
        self.client.put(self.url(path))
    }

    pub fn delete(&self, path: &str) -> RequestBuilder {
        self.client.delete(self.url(path))
    }

    /// `POST path` with a JSON body and a bearer token.
    pub fn post_json(&self, token: &str, path: &str, body: &Value) -> (u16, Value) {
        call(self.post(path).bearer_auth(token).json(body))
    }

    /// `PUT path` with a JSON body and a bearer token.
    pub fn put_json(&self, token: &str, path: &str, body: &Value) -> (u16, Value) {
        call(self.put(path).bearer_auth(token).json(body))
    }

    pub fn delete_as(&self, token: &str, path: &str) -> (u16, Value) {
        call(self.delete(path).bearer_auth(token))
    }

    /// Creates a document from JSON; asserts 200 and returns the body.
    pub fn create_doc(&self, token: &str, body: &Value) -> Value {
        let (status, doc) = self.post_json(token, "/v1/documents", body);
        assert_eq!(status, 200, "create failed: {doc}");
        doc
    }

    /// Polls `/status` (every 50 ms, at most 30 s) until it is `want`. A status no
    /// document leaves by itself (signed, rejected, archived, lost) fails at once with
    /// the body, instead of after the 30 s.
    pub fn wait_status(&self, token: &str, id: &str, want: &str) -> Value {
        const SETTLED: &[&str] = &[
            "signed",
            "signedwithoutverification",
            "rejected",
            "archived",
            "lost",
        ];
        let last = std::cell::RefCell::new(Value::Null);
        wait_until_or(
            30,
            || {
                let (code, body) = self.get_as(token, &format!("/v1/documents/{id}/status"));
                assert_eq!(code, 200, "status of {id}: {body}");
                if body["status"] == want {
                    return Some(body);
                }
                let now = body["status"].as_str().unwrap_or_default();
                assert!(
                    !SETTLED.contains(&now),
                    "{id} is {now}, which it will not leave, while waiting for {want}: {body}"
                );
                *last.borrow_mut() = body;
                None
            },
            || {
                format!(
                    "{id} did not reach {want} within 30 s; it is {}",
                    last.borrow()
                )
            },
        )
    }

    /// The event names of a document's log, in order.
    pub fn events(&self, token: &str, id: &str) -> Vec<String> {
        let (code, body) = self.get_as(token, &format!("/v1/documents/{id}/log"));
        assert_eq!(code, 200, "log of {id}: {body}");
        body.as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["event"].as_str().map(str::to_string))
            .collect()
    }

    /// The mail written to the folder transport so far, oldest first, as text.
    pub fn mails(&self) -> Vec<String> {
        read_folder(&self.data_dir.join("mail"), "eml")
    }

    /// Waits (at most 20 s) until at least `n` mails match `pred`; returns them.
    pub fn wait_mails(&self, n: usize, pred: impl Fn(&str) -> bool) -> Vec<String> {
        wait_until_or(
            20,
            || {
                let found: Vec<String> = self.mails().into_iter().filter(|m| pred(m)).collect();
                (found.len() >= n).then_some(found)
            },
            || {
                format!(
                    "expected {n} matching mail(s) in 20 s; the mails: {:?}",
                    self.mails()
                )
            },
        )
    }
}

impl Server {
    /// Uploads `bytes` as `name` (`POST /v1/upload`, base64); asserts a ready upload and
    /// returns its `file_id`.
    pub fn upload(&self, token: &str, bytes: &[u8], name: &str) -> String {
        let (status, body) = self.post_json(
            token,
            "/v1/upload",
            &json!({"file_content": b64(bytes), "file_name": name}),
        );
        assert_eq!(status, 200, "upload {name}: {body}");
        assert_eq!(body["file_status"], "ready", "upload {name}: {body}");
        body["file_id"].as_str().unwrap().to_string()
    }

    /// A mail barrier: the mail worker sends one mail at a time, oldest first, so once
    /// this owner notice is out (a document whose file is not a PDF fails its import),
    /// every mail queued before it is out too. No bug of sealing, sending or reminding
    /// makes this mail, so it cannot be mistaken for the mail a test counts. Returns
    /// the notice's text.
    pub fn mail_barrier(&self, token: &str) -> String {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).unwrap();
        let name = format!("barrier {:016x}", u64::from_le_bytes(bytes));
        let (status, body) = self.post_json(
            token,
            "/v1/documents",
            &json!({"name": name, "file_content": b64(b"not a pdf"), "file_name": "barrier.pdf"}),
        );
        assert_eq!(status, 200, "the barrier document: {body}");
        let mut found = self.wait_mails(1, |m| {
            m.contains(&name) && m.contains("could not be imported")
        });
        found.remove(0)
    }
}

/// The Python (`ESIGN_PYTHON`, else `python3`) when it can `import {modules}`, else
/// `None` (the caller skips), unless the variable `require` is `1` (as in CI): then it
/// panics naming `hint`, the requirements file that installs them.
pub fn python_with(modules: &str, require: &str, hint: &str) -> Option<String> {
    let py = std::env::var("ESIGN_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = succeeds(Command::new(&py).args(["-c", &format!("import {modules}")]));
    if !ok && std::env::var(require).is_ok_and(|v| v == "1") {
        panic!("{py} cannot import {modules} ({hint}; {require}=1)");
    }
    ok.then_some(py)
}

/// Base64 (standard alphabet, padded).
pub fn b64(data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// A request an [`HttpsServer`] received.
#[derive(Clone, Debug)]
pub struct Incoming {
    pub method: String,
    pub path: String,
    /// Header names in lower case.
    pub headers: std::collections::HashMap<String, String>,
    pub body: Vec<u8>,
    pub at: Instant,
}

impl Incoming {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// What an [`HttpsServer`] answers.
#[derive(Clone)]
pub struct Canned {
    pub status: u16,
    pub body: Vec<u8>,
    pub delay: Duration,
}

impl Canned {
    pub fn ok(body: Vec<u8>) -> Canned {
        Canned {
            status: 200,
            body,
            delay: Duration::ZERO,
        }
    }

    pub fn status(status: u16) -> Canned {
        Canned {
            status,
            body: Vec::new(),
            delay: Duration::ZERO,
        }
    }
}

type Handler = dyn Fn(&Incoming) -> Canned + Send + Sync;

/// An HTTPS/1.1 server on loopback (keep-alive), with a self-signed certificate for
/// 127.0.0.1 and localhost written to `ca_file` (for `--outbound-ca-file`). It records
/// every request and answers with `handler`.
pub struct HttpsServer {
    pub base: String,
    pub ca_file: PathBuf,
    pub requests: std::sync::Arc<std::sync::Mutex<Vec<Incoming>>>,
    /// Holds `ca_file`.
    _dir: TempDir,
}

impl HttpsServer {
    pub fn start(handler: impl Fn(&Incoming) -> Canned + Send + Sync + 'static) -> HttpsServer {
        use std::io::{Read, Write};
        use std::sync::Arc;
        let cert = rcgen::generate_simple_self_signed(vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
        ])
        .unwrap();
        let dir = fresh_dir("https");
        let ca_file = dir.join("ca.pem");
        std::fs::write(&ca_file, cert.cert.pem()).unwrap();
        let certs = vec![rustls::pki_types::CertificateDer::from(
            cert.cert.der().to_vec(),
        )];
        let key =
            rustls::pki_types::PrivateKeyDer::try_from(cert.key_pair.serialize_der()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = Arc::new(
            rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(certs, key)
                .unwrap(),
        );
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!(
            "https://127.0.0.1:{}",
            listener.local_addr().unwrap().port()
        );
        let requests: Arc<std::sync::Mutex<Vec<Incoming>>> = Default::default();
        let handler: Arc<Handler> = Arc::new(handler);
        let seen = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(tcp) = stream else { continue };
                let (config, handler, seen) = (config.clone(), handler.clone(), seen.clone());
                std::thread::spawn(move || {
                    let _ = tcp.set_read_timeout(Some(Duration::from_secs(30)));
                    let conn = rustls::ServerConnection::new(config).unwrap();
                    let mut tls = rustls::StreamOwned::new(conn, tcp);
                    let mut buf: Vec<u8> = Vec::new();
                    let mut chunk = [0u8; 16 * 1024];
                    loop {
                        // One request: headers, then content-length bytes of body.
                        let head_end = loop {
                            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                                break i + 4;
                            }
                            match tls.read(&mut chunk) {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        };
                        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
                        let mut lines = head.split("\r\n");
                        let mut first = lines.next().unwrap_or("").split_whitespace();
                        let method = first.next().unwrap_or("").to_string();
                        let path = first.next().unwrap_or("/").to_string();
                        let headers: std::collections::HashMap<String, String> = lines
                            .filter_map(|l| l.split_once(':'))
                            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                            .collect();
                        let len: usize = headers
                            .get("content-length")
                            .and_then(|v| v.parse().ok())
                            .unwrap_or(0);
                        while buf.len() < head_end + len {
                            match tls.read(&mut chunk) {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        }
                        let body = buf[head_end..head_end + len].to_vec();
                        buf.drain(..head_end + len);
                        let req = Incoming {
                            method,
                            path,
                            headers,
                            body,
                            at: Instant::now(),
                        };
                        let answer = handler(&req);
                        seen.lock().unwrap().push(req);
                        std::thread::sleep(answer.delay);
                        let location = if (300..400).contains(&answer.status) {
                            "location: /elsewhere\r\n"
                        } else {
                            ""
                        };
                        let resp = format!(
                            "HTTP/1.1 {} X\r\ncontent-length: {}\r\n{location}\r\n",
                            answer.status,
                            answer.body.len()
                        );
                        if tls.write_all(resp.as_bytes()).is_err()
                            || tls.write_all(&answer.body).is_err()
                            || tls.flush().is_err()
                        {
                            return;
                        }
                    }
                });
            }
        });
        HttpsServer {
            base,
            ca_file,
            _dir: dir,
            requests,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// The requests received so far for `path`.
    pub fn received(&self, path: &str) -> Vec<Incoming> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.path == path)
            .cloned()
            .collect()
    }

    /// Waits (at most `secs`) until `path` got at least `n` requests; returns them.
    pub fn wait_for(&self, path: &str, n: usize, secs: u64) -> Vec<Incoming> {
        wait_until(secs, &format!("{n} request(s) to {path}"), || {
            let got = self.received(path);
            (got.len() >= n).then_some(got)
        })
    }
}

/// An [`HttpsServer`] serving canned files (GET `path` → its `Canned`; else 404).
pub struct FileServer {
    server: HttpsServer,
    pub ca_file: PathBuf,
}

impl FileServer {
    pub fn start(routes: Vec<(&str, Canned)>) -> FileServer {
        let routes: std::collections::HashMap<String, Canned> = routes
            .into_iter()
            .map(|(p, c)| (p.to_string(), c))
            .collect();
        let server = HttpsServer::start(move |req| {
            routes.get(&req.path).cloned().unwrap_or(Canned {
                status: 404,
                body: b"not found".to_vec(),
                delay: Duration::ZERO,
            })
        });
        FileServer {
            ca_file: server.ca_file.clone(),
            server,
        }
    }

    pub fn url(&self, path: &str) -> String {
        self.server.url(path)
    }

    /// How many requests `path` got.
    pub fn hits(&self, path: &str) -> usize {
        self.server.received(path).len()
    }
}

/// A fake SMTP server on loopback (no TLS): accepts every recipient except those whose
/// address contains `bounce`, which get `550 5.1.1 no such user`. Keeps what it received.
pub struct SmtpServer {
    pub url: String,
    /// (recipient, whole message) per accepted mail.
    pub received: std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>,
}

impl SmtpServer {
    pub fn start() -> SmtpServer {
        Self::start_at("127.0.0.1:0")
    }

    /// Listens on `addr` (`127.0.0.1:PORT`), e.g. a port a server was configured with
    /// while nothing listened there.
    pub fn start_at(addr: &str) -> SmtpServer {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind(addr).unwrap();
        let url = format!("smtp://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let received: std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>> = Default::default();
        let store = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let store = store.clone();
                std::thread::spawn(move || {
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                    let mut out = stream.try_clone().unwrap();
                    let mut lines = BufReader::new(stream);
                    let mut say = |s: &str| out.write_all(format!("{s}\r\n").as_bytes());
                    let _ = say("220 fake ESMTP");
                    let mut rcpt = String::new();
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if lines.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let upper = line.to_ascii_uppercase();
                        let reply = if upper.starts_with("EHLO") || upper.starts_with("HELO") {
                            "250 fake"
                        } else if upper.starts_with("MAIL FROM") {
                            "250 ok"
                        } else if upper.starts_with("RCPT TO") {
                            rcpt = line[8..]
                                .trim()
                                .trim_matches(['<', '>', ':', ' '])
                                .to_string();
                            if rcpt.contains("bounce") {
                                "550 5.1.1 no such user"
                            } else {
                                "250 ok"
                            }
                        } else if upper.starts_with("DATA") {
                            let _ = say("354 go ahead");
                            let mut data = String::new();
                            loop {
                                line.clear();
                                if lines.read_line(&mut line).unwrap_or(0) == 0 {
                                    return;
                                }
                                if line == ".\r\n" {
                                    break;
                                }
                                data.push_str(&line);
                            }
                            store.lock().unwrap().push((rcpt.clone(), data));
                            "250 queued"
                        } else if upper.starts_with("QUIT") {
                            let _ = say("221 bye");
                            return;
                        } else {
                            "250 ok"
                        };
                        if say(reply).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        SmtpServer { url, received }
    }

    /// Waits (at most 20 s) until a mail to `to` has arrived; returns it.
    pub fn wait_for(&self, to: &str) -> String {
        wait_until(20, &format!("a mail to {to}"), || {
            let received = self.received.lock().unwrap();
            received
                .iter()
                .find(|(r, _)| r == to)
                .map(|(_, m)| m.clone())
        })
    }
}

/// The password of the users the harness adds ([`Server::add_user`], [`Server::add_member`]).
pub const USER_PASSWORD: &str = "user-password-1";

/// Setting up accounts through the admin CLI; the server must be stopped for each.
impl Server {
    /// The admin's (first) entity.
    pub fn first_entity(&self) -> String {
        self.admin(&["entity", "list"])[0]["id"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Adds a user (Ada Lovelace, [`USER_PASSWORD`]) with `extra` (`--active`, ...);
    /// returns its id.
    pub fn add_user(&self, email: &str, extra: &[&str]) -> String {
        let mut args = vec![
            "user",
            "add",
            "--email",
            email,
            "--password",
            USER_PASSWORD,
            "--first-name",
            "Ada",
            "--last-name",
            "Lovelace",
        ];
        args.extend_from_slice(extra);
        self.admin(&args)["id"].as_str().unwrap().to_string()
    }

    /// Adds an entity with `extra` (`--saml`, `--parent`, ...); returns its id.
    pub fn add_entity(&self, name: &str, extra: &[&str]) -> String {
        let mut args = vec!["entity", "add", "--name", name];
        args.extend_from_slice(extra);
        self.admin(&args)["id"].as_str().unwrap().to_string()
    }

    /// Makes an existing user a member of `entity`, with `extra` (`--role`,
    /// `--profile`, `--team`, ...).
    pub fn add_membership(&self, user: &str, entity: &str, extra: &[&str]) {
        let mut args = vec!["member", "add", "--user", user, "--entity", entity];
        args.extend_from_slice(extra);
        self.admin(&args);
    }

    /// Adds another entity named `name` with `email` as its admin; returns the
    /// entity's id.
    pub fn add_entity_with_admin(&self, name: &str, email: &str) -> String {
        let entity = self.add_entity(name, &[]);
        self.add_member_of(&entity, email, &["--role", "admin"]);
        entity
    }

    /// Adds a user as a member of the admin's entity, with `member_args` (`--role`,
    /// `--team`, ...); returns the user's id.
    pub fn add_member(&self, email: &str, member_args: &[&str]) -> String {
        let entity = self.first_entity();
        self.add_member_of(&entity, email, member_args)
    }

    /// Adds a user as a member of `entity`, with `member_args`; returns its id.
    pub fn add_member_of(&self, entity: &str, email: &str, member_args: &[&str]) -> String {
        let id = self.add_user(email, &[]);
        self.add_membership(&id, entity, member_args);
        id
    }
}

/// Calls `probe` every 50 ms until it returns `Some` (at most `secs` seconds, then fails
/// with `what`).
pub fn wait_until<T>(secs: u64, what: &str, probe: impl FnMut() -> Option<T>) -> T {
    wait_until_or(secs, probe, || format!("waited {secs} s for {what}"))
}

/// [`wait_until`], failing with the message `timed_out` makes then (what was seen).
pub fn wait_until_or<T>(
    secs: u64,
    mut probe: impl FnMut() -> Option<T>,
    timed_out: impl FnOnce() -> String,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = probe() {
            return v;
        }
        if Instant::now() >= deadline {
            panic!("{}", timed_out());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A draft named `name` with one imported 2-page PDF and `recipients` (`extra` adds
/// create fields); waits until it is a draft.
pub fn pdf_draft(s: &Server, t: &str, name: &str, recipients: Value, extra: Value) -> String {
    let mut body = json!({
        "name": name,
        "file_content": b64(&esign_host::pdf::sample_pdf(2)),
        "file_name": "offer.pdf",
        "recipients": recipients,
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let created = s.create_doc(t, &body);
    assert_eq!(
        created.as_object().unwrap().len(),
        2,
        "the short form: {created}"
    );
    assert_eq!(created["status"], "importing");
    let id = created["id"].as_str().unwrap().to_string();
    s.wait_status(t, &id, "draft");
    id
}

/// The text of the document's current PDF (`/download`), once it is not being sealed
/// (a completed document's download answers 409 until its sealed file is stored).
pub fn pdf_text(s: &Server, t: &str, id: &str) -> String {
    let resp = wait_until(60, "a PDF that is not being sealed", || {
        let resp = s
            .get(&format!("/v1/documents/{id}/download?direct=true"))
            .bearer_auth(t)
            .send()
            .unwrap();
        (resp.status() != 409).then_some(resp)
    });
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/pdf");
    esign_host::pdf::extract_text(&resp.bytes().unwrap()).unwrap()
}

/// A server that trusts `rx`'s certificate and may deliver to loopback, with a quick
/// retry schedule. One attempt at a time per target, and the worker launches the
/// oldest due delivery first: so once a delivery queued later has arrived, every one
/// queued or due before it has been attempted (the barrier the webhook tests count
/// behind).
pub fn server_for(rx: &HttpsServer, schedule: &str) -> Server {
    let ca = rx.ca_file.display().to_string();
    Server::start(&[
        "--outbound-ca-file",
        &ca,
        "--outbound-allow-private",
        "--webhook-retry-schedule",
        schedule,
        "--webhook-timeout-secs",
        "5",
        "--webhook-per-target",
        "1",
    ])
}

/// Subscribes to `event` with target `url`; returns (id, secret).
pub fn subscribe(s: &Server, t: &str, event: &str, url: &str, extra: Value) -> (String, String) {
    let mut body = json!({"event": event, "target_url": url});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let (status, created) = s.post_json(t, "/v1/subscriptions", &body);
    assert_eq!(status, 200, "{created}");
    let c = &created;
    (
        c["id"].as_str().unwrap().to_string(),
        c["secret"].as_str().unwrap().to_string(),
    )
}

impl Server {
    /// Waits (at most 20 s) until the document's log records `event`.
    pub fn wait_until_event(&self, token: &str, id: &str, event: &str) {
        wait_until(20, &format!("{event} on {id}"), || {
            self.events(token, id)
                .iter()
                .any(|e| e == event)
                .then_some(())
        });
    }
}

impl Server {
    /// The text messages written to the folder transport so far, oldest first.
    pub fn sms(&self) -> Vec<String> {
        read_folder(&self.data_dir.join("sms"), "txt")
    }

    /// Waits (at most 20 s) for the `n`-th text message to `to`; returns its 6-digit code.
    pub fn wait_sms_code(&self, to: &str, n: usize) -> String {
        let texts = wait_until(20, &format!("text message #{n} to {to}"), || {
            let mine: Vec<String> = self
                .sms()
                .into_iter()
                .filter(|m| m.starts_with(&format!("To: {to}\n")))
                .collect();
            (mine.len() >= n).then_some(mine)
        });
        texts[n - 1]
            .split(|c: char| !c.is_ascii_digit())
            .find(|w| w.len() == 6)
            .expect("a 6-digit code")
            .to_string()
    }
}

/// The contents of the files ending in `.ext` in `dir`, by name (the folder transports
/// name them by time, so oldest first); none when the folder does not exist yet.
fn read_folder(dir: &Path, ext: &str) -> Vec<String> {
    let mut names: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

impl Server {
    /// The document's status now (no waiting: for checking that something did not
    /// change it).
    pub fn status_of(&self, token: &str, id: &str) -> String {
        let (code, body) = self.get_as(token, &format!("/v1/documents/{id}/status"));
        assert_eq!(code, 200, "status of {id}: {body}");
        body["status"].as_str().unwrap_or("").to_string()
    }

    /// `POST /v1/documents/{id}/{act}` (`send`, `seal`) with an empty body; asserts 200,
    /// showing the error body otherwise, and returns the answer.
    pub fn act_ok(&self, token: &str, id: &str, act: &str) -> Value {
        let (status, body) =
            self.post_json(token, &format!("/v1/documents/{id}/{act}"), &json!({}));
        assert_eq!(status, 200, "{act} {id}: {body}");
        body
    }
}

/// A recipient named `first` `last` with `email` (no role: the default, or a
/// template's).
pub fn person(first: &str, last: &str, email: &str) -> Value {
    json!({"first_name": first, "last_name": last, "email": email})
}

/// The suite's usual recipient: Sam Signer at `email`, role left to the default (or
/// the template's).
pub fn signer(email: &str) -> Value {
    person("Sam", "Signer", email)
}

/// [`signer`] with `"role": "signer"` given explicitly (which overrides a template's
/// role for that recipient).
pub fn role_signer(email: &str) -> Value {
    let mut r = signer(email);
    r["role"] = "signer".into();
    r
}

/// `POST /v1/recipient/{secret}/{act}` (`view`, `sign`, `approve`, ...) with `body`.
pub fn recipient_post(s: &Server, secret: &str, act: &str, body: Value) -> (u16, Value) {
    call(s.post(&format!("/v1/recipient/{secret}/{act}")).json(&body))
}

/// The secret of recipient `i`'s link, from a document detail.
pub fn link(d: &Value, i: usize) -> String {
    let url = d["recipients"][i]["document_url"].as_str().unwrap();
    url.rsplit('/').next().unwrap().to_string()
}

/// A language's catalogue (`engine/assets/messages-{lang}.json`), the words the
/// recipients' texts are made of.
pub fn words(lang: &str) -> Value {
    let path = format!(
        "{}/../engine/assets/messages-{lang}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The text of `key` in `w` with `vars` put in, as the engine fills it.
pub fn said(w: &Value, key: &str, vars: &[(&str, &str)]) -> String {
    let mut s = w[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key}"))
        .to_string();
    for (k, v) in vars {
        s = s.replace(&format!("{{{k}}}"), v);
    }
    s
}

pub fn html_escaped(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// `POST /mcp` with `headers` and, with `bearer`, a token: the status, the body as JSON
/// (`null` when it is none) and the headers.
pub fn mcp(
    s: &Server,
    bearer: Option<&str>,
    headers: &[(&str, &str)],
    body: &Value,
) -> (u16, Value, reqwest::header::HeaderMap) {
    let mut req = s
        .post("/mcp")
        .header("accept", "application/json, text/event-stream")
        .json(body);
    if let Some(t) = bearer {
        req = req.bearer_auth(t);
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().unwrap();
    let status = resp.status().as_u16();
    let h = resp.headers().clone();
    (
        status,
        serde_json::from_str(&resp.text().unwrap()).unwrap_or(Value::Null),
        h,
    )
}

/// The `_meta` a 2026-07-28 MCP request carries.
pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// A ready template named `name` from a 1-page PDF, with one signer role `role` and a
/// signature field for it; its id.
pub fn signer_template(s: &Server, t: &str, name: &str, role: &str) -> String {
    let file = s.upload(t, &esign_host::pdf::sample_pdf(1), "template.pdf");
    let (status, tpl) = s.post_json(t, "/v1/templates", &json!({
        "name": name, "file_id": file,
        "roles": [{"role_name": role, "role": "signer"}],
        "page_fields": [{"field_type": "signature", "page_num": 1, "role_name": role,
                         "field_left": 72, "field_top": 600, "field_width": 200, "field_height": 50}],
    }));
    assert_eq!(status, 200, "{tpl}");
    let tid = tpl["id"].as_str().unwrap().to_string();
    wait_until(30, "the template", || {
        (s.get_as(t, &format!("/v1/templates/{tid}")).1["status"] == "ready").then_some(())
    });
    tid
}
