//! Evidence, checked by tools that do not trust us: a completed document's final PDF is
//! sealed (PAdES) and passes Poppler's `pdfsig`, `qpdf --check` and pyHanko; its audit
//! certificate reads back with `pdftotext`; its audit trail's hash chain checks out with
//! an independent RFC 8785 implementation; `esign verify` and `POST /v1/verify` agree,
//! and fail on a changed byte. With a time stamping authority (a pyHanko test TSA on
//! loopback) the seal waits while it is down, across a crash, and then carries its
//! timestamp.
//!
//! The outside tools are skipped when missing on a developer machine; with
//! `ESIGN_REQUIRE_PDF_TOOLS=1` (poppler-utils, qpdf) and `ESIGN_REQUIRE_PYHANKO=1`
//! (`ESIGN_PYTHON` with tests/evidence/requirements.txt) they must be there, as in CI.

mod common;

use common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const UA: &str = "EvidenceTest/1.0 (phone)";

/// Whether `name` is a program on the PATH.
fn which(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
}

fn tool(name: &str, env: &str) -> bool {
    // Installed: it runs (whatever `-v` exits with).
    let there = {
        let mut cmd = Command::new(name);
        cmd.arg("-v");
        succeeds(&mut cmd) || which(name)
    };
    if !there && std::env::var(env).is_ok_and(|v| v == "1") {
        panic!("{name} is required ({env}=1) but not installed");
    }
    there
}

/// The Python with pyHanko and rfc8785, when there is one.
fn python() -> Option<String> {
    python_with(
        "pyhanko, rfc8785",
        "ESIGN_REQUIRE_PYHANKO",
        "tests/evidence/requirements.txt",
    )
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/evidence")
        .join(name)
}

fn run(cmd: &mut Command) -> (bool, String) {
    let out = output_within(cmd, 60);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn sign_as(s: &Server, secret: &str, name: &str) {
    for (act, body) in [
        ("view", json!({})),
        (
            "sign",
            json!({"signature": {"type": "typed", "name": name}}),
        ),
    ] {
        let (status, b) = call(
            s.post(&format!("/v1/recipient/{secret}/{act}"))
                .header("user-agent", UA)
                .json(&body),
        );
        assert_eq!(status, 200, "{act}: {b}");
    }
}

/// A sent 2-page document with `emails` as signers; its id and detail.
fn sent(s: &Server, t: &str, emails: &[&str]) -> (String, Value) {
    let recipients: Vec<Value> = emails
        .iter()
        .map(|e| json!({"email": e, "first_name": e.split('@').next().unwrap(), "role": "signer"}))
        .collect();
    let id = pdf_draft(s, t, "Evidence", json!(recipients), json!({}));
    s.act_ok(t, &id, "send");
    s.wait_status(t, &id, "sent");
    let (_, d) = s.get_as(t, &format!("/v1/documents/{id}"));
    (id, d)
}

/// Waits until the document's evidence is `sealed`; its detail.
fn wait_sealed(s: &Server, t: &str, id: &str, secs: u64) -> Value {
    wait_until(secs, "the seal", || {
        let (_, d) = s.get_as(t, &format!("/v1/documents/{id}"));
        (d["evidence"]["status"] == "sealed").then_some(d)
    })
}

fn download(s: &Server, t: &str, id: &str) -> (u16, Vec<u8>) {
    let resp = s
        .get(&format!("/v1/documents/{id}/download?direct=true"))
        .bearer_auth(t)
        .send()
        .unwrap();
    (resp.status().as_u16(), resp.bytes().unwrap().to_vec())
}

fn esign_verify(file: &Path, cert: &Path) -> (bool, String) {
    run(Command::new(esign_bin())
        .arg("verify")
        .arg(file)
        .arg("--cert")
        .arg(cert))
}

fn post_verify(s: &Server, t: &str, pdf: &[u8]) -> Value {
    let form = reqwest::blocking::multipart::Form::new().part(
        "file",
        reqwest::blocking::multipart::Part::bytes(pdf.to_vec()).file_name("f.pdf"),
    );
    let (status, v) = call(s.post("/v1/verify").bearer_auth(t).multipart(form));
    assert_eq!(status, 200, "{v}");
    v
}

fn log_of(s: &Server, t: &str, id: &str) -> Value {
    let (status, log) = s.get_as(t, &format!("/v1/documents/{id}/log"));
    assert_eq!(status, 200);
    log
}

/// Where the independent chain check (tests/evidence/chain.py) finds the first broken
/// entry; -1 when none.
fn chain_break(py: &str, log: &Value) -> i64 {
    let dir = fresh_dir("chain");
    let file = dir.join("log.json");
    std::fs::write(&file, log.to_string()).unwrap();
    let out = output_within(
        Command::new(py)
            .arg(script("chain.py"))
            .stdin(std::fs::File::open(&file).unwrap()),
        60,
    );
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(-2)
}

#[test]
fn a_completed_document_is_sealed_and_checks_out_with_outside_tools() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let (id, d) = sent(&s, &t, &["ann@example.com", "bo@example.com"]);
    sign_as(&s, &link(&d, 0), "Ann Andersson");
    sign_as(&s, &link(&d, 1), "Bo Berg");
    let detail = wait_sealed(&s, &t, &id, 60);
    let (status, pdf) = download(&s, &t, &id);
    assert_eq!(status, 200);
    let dir = fresh_dir("evidence");
    let file = dir.join("signed.pdf");
    std::fs::write(&file, &pdf).unwrap();

    // The certificate anyone can fetch, and our own check against it.
    let resp = s.get("/v1/signing-certificate").send().unwrap();
    assert_eq!(resp.status(), 200);
    let pem = resp.text().unwrap();
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
    let cert = dir.join("cert.pem");
    std::fs::write(&cert, &pem).unwrap();
    let (ok, out) = esign_verify(&file, &cert);
    assert!(ok, "{out}");
    let head = detail["evidence"]["log_head"].as_str().unwrap();
    assert!(out.contains(&format!("document id:        {id}")), "{out}");
    assert!(
        out.contains(&format!("audit trail head:   {head}")),
        "{out}"
    );
    assert!(out.contains("result:             VALID"), "{out}");
    let v = post_verify(&s, &t, &pdf);
    assert_eq!(v["valid"], true, "{v}");
    assert_eq!(v["signed_by_this_service"], true, "{v}");
    assert_eq!(
        (v["document_id"].as_str(), v["log_head"].as_str()),
        (Some(id.as_str()), Some(head))
    );
    // The head the file pins is an entry of the trail.
    let log = log_of(&s, &t, &id);
    assert!(
        log.as_array().unwrap().iter().any(|e| e["hash"] == head),
        "{log}"
    );

    if tool("pdfsig", "ESIGN_REQUIRE_PDF_TOOLS") {
        let (_, out) = run(Command::new("pdfsig").arg(&file));
        assert!(out.contains("Signature is Valid."), "{out}");
        assert!(out.contains("Total document signed"), "{out}");
        assert!(out.contains("ETSI.CAdES.detached"), "{out}");
        let (_, text) = run(Command::new("pdftotext").arg(&file).arg("-"));
        let content = detail["content_sha256"].as_str().unwrap();
        for want in [
            "Audit certificate",
            "ann@example.com",
            "bo@example.com",
            "IP 127.0.0.1",
            UA,
            "Ann Andersson",
            "Original content SHA-256",
            &format!("Content SHA-256: {content}"),
            &format!("Audit trail head SHA-256: {head}"),
            &id,
        ] {
            assert!(text.contains(want), "missing {want:?} in:\n{text}");
        }
    }
    if tool("qpdf", "ESIGN_REQUIRE_PDF_TOOLS") {
        let (ok, out) = run(Command::new("qpdf").arg("--check").arg(&file));
        assert!(
            ok && out.contains("No syntax or stream encoding errors"),
            "{out}"
        );
    }
    if let Some(py) = python() {
        let (ok, out) = run(Command::new(&py)
            .arg(script("validate.py"))
            .arg(&file)
            .arg(&cert));
        assert!(ok, "{out}");
        let r: Value = serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("{out}"));
        assert_eq!(r["bottom_line"], true, "{r}");
        assert_eq!(r["coverage"], "ENTIRE_FILE", "{r}");
        assert_eq!(r["subfilter"], "/ETSI.CAdES.detached", "{r}");
        assert_eq!(r["has_m"], true, "{r}");
        let attrs = r["signed_attrs"].to_string();
        assert!(attrs.contains("signing_certificate_v2"), "{r}");
        assert!(
            !attrs.contains("signing_time"),
            "PAdES has no signing-time: {r}"
        );
        assert_eq!(chain_break(&py, &log), -1, "{log}");
    }

    // One byte changed in the signed range (in the content, in the signature's own
    // update): every check says no. (The middle of the file is the reserved signature
    // space, which the range leaves out.)
    for at in [200, pdf.len() - 200] {
        let mut bad = pdf.clone();
        bad[at] ^= 0x01;
        let bad_file = dir.join(format!("changed-{at}.pdf"));
        std::fs::write(&bad_file, &bad).unwrap();
        let (ok, out) = esign_verify(&bad_file, &cert);
        assert!(!ok, "byte {at}: {out}");
        assert_eq!(post_verify(&s, &t, &bad)["valid"], false, "byte {at}");
        if tool("pdfsig", "ESIGN_REQUIRE_PDF_TOOLS") {
            let (_, out) = run(Command::new("pdfsig").arg(&bad_file));
            assert!(!out.contains("Signature is Valid."), "byte {at}: {out}");
        }
    }
    // Something added after signing: the signature no longer covers the file.
    let mut longer = pdf.clone();
    longer.extend_from_slice(b"\n% appended\n");
    let v = post_verify(&s, &t, &longer);
    assert_eq!(
        (v["valid"].as_bool(), v["covers_whole_file"].as_bool()),
        (Some(false), Some(false)),
        "{v}"
    );
    // The signature's padding changed after signing (the gap the range leaves out):
    // the file is not the signed one as a whole, for esign as for pdfsig.
    let padded = padding_altered(&pdf);
    let v = post_verify(&s, &t, &padded);
    assert_eq!(v["covers_whole_file"], false, "{v}");
    let padded_file = dir.join("padding-altered.pdf");
    std::fs::write(&padded_file, &padded).unwrap();
    let (ok, out) = esign_verify(&padded_file, &cert);
    assert!(!ok, "{out}");
    if tool("pdfsig", "ESIGN_REQUIRE_PDF_TOOLS") {
        let (_, out) = run(Command::new("pdfsig").arg(&padded_file));
        assert!(out.contains("Not total document signed"), "{out}");
    }
    // A certificate that is not the signer's.
    let other = dir.join("other.pem");
    std::fs::write(
        &other,
        rcgen::generate_simple_self_signed(vec!["x".into()])
            .unwrap()
            .cert
            .pem(),
    )
    .unwrap();
    let (ok, out) = esign_verify(&file, &other);
    assert!(!ok && out.contains("is --cert:          NO"), "{out}");
}

/// A free loopback port (nothing listens on it when this returns).
/// `pdf` with one zero of its last signature's `/Contents` padding made a one: the gap
/// between the byte ranges ends `...00>`.
fn padding_altered(pdf: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(pdf);
    let at = text.rfind("/ByteRange").expect("a signature");
    let open = at + text[at..].find('[').unwrap();
    let close = open + text[open..].find(']').unwrap();
    let range: Vec<usize> = text[open + 1..close]
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    let gap_end = range[2] - 1; // the '>' closing /Contents
    assert_eq!(&pdf[gap_end - 2..=gap_end], b"00>", "padding at the end");
    let mut out = pdf.to_vec();
    out[gap_end - 1] = b'1';
    out
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The test TSA, killed on drop.
struct Tsa(std::process::Child);

impl Drop for Tsa {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_tsa(py: &str, port: u16, dir: &Path) -> Tsa {
    use std::io::BufRead;
    let mut child = Command::new(py)
        .arg(script("tsa.py"))
        .arg(port.to_string())
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let tsa = Tsa(child);
    let line = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the test TSA did not start within 60 s");
    assert_eq!(line, "ready");
    tsa
}

#[test]
fn with_a_tsa_the_seal_waits_while_it_is_down_even_across_a_crash_then_carries_its_time() {
    let Some(py) = python() else {
        eprintln!("skipped: no Python with pyHanko (set ESIGN_PYTHON)");
        return;
    };
    let port = free_port();
    let tsa_url = format!("http://127.0.0.1:{port}/");
    let mut s = Server::start(&["--tsa-url", &tsa_url, "--tsa-timeout-secs", "2"]);
    let t = s.admin_token();
    let (id, d) = sent(&s, &t, &["cy@example.com"]);
    sign_as(&s, &link(&d, 0), "Cy Carlsson");

    // The authority is down: the document is signed, sealing, and nothing is served.
    assert_eq!(s.status_of(&t, &id), "signed");
    wait_until(60, "a failed seal in the trail", || {
        let log = log_of(&s, &t, &id);
        log.as_array()
            .unwrap()
            .iter()
            .any(|e| e["action"] == "seal_delayed")
            .then_some(())
    });
    let (_, doc) = s.get_as(&t, &format!("/v1/documents/{id}"));
    assert_eq!(doc["evidence"]["status"], "sealing", "{doc}");
    let (status, body) = download(&s, &t, &id);
    assert_eq!(status, 409, "{}", String::from_utf8_lossy(&body));

    // A crash while sealing, then the authority comes back.
    s.kill();
    let dir = fresh_dir("tsa");
    let _tsa = start_tsa(&py, port, &dir);
    s.launch();
    let detail = wait_sealed(&s, &t, &id, 90);
    assert!(detail["evidence"]["timestamp"].is_string(), "{detail}");
    let (status, pdf) = download(&s, &t, &id);
    assert_eq!(status, 200);
    let file = dir.join("stamped.pdf");
    std::fs::write(&file, &pdf).unwrap();
    let cert = dir.join("cert.pem");
    std::fs::write(
        &cert,
        s.get("/v1/signing-certificate")
            .send()
            .unwrap()
            .text()
            .unwrap(),
    )
    .unwrap();

    // Exactly one sealed file and one document.signed, whatever the crash repeated.
    let log = log_of(&s, &t, &id);
    let count = |action: &str| {
        log.as_array()
            .unwrap()
            .iter()
            .filter(|e| e["action"] == action)
            .count()
    };
    assert_eq!((count("signed"), count("sealed_final")), (1, 1), "{log}");
    assert_eq!(
        s.events(&t, &id)
            .iter()
            .filter(|e| *e == "document.signed")
            .count(),
        1
    );

    let (ok, out) = esign_verify(&file, &cert);
    assert!(ok, "{out}");
    assert!(out.contains("(valid: yes)"), "{out}");
    let (ok, out) = run(Command::new(&py)
        .arg(script("validate.py"))
        .arg(&file)
        .arg(&cert)
        .arg(dir.join("ca.pem")));
    assert!(ok, "{out}");
    let r: Value = serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("{out}"));
    assert_eq!(r["bottom_line"], true, "{r}");
    assert_eq!(r["timestamp"]["valid"], true, "{r}");
    assert_eq!(r["timestamp"]["trusted"], true, "{r}");
    assert_eq!(chain_break(&py, &log), -1);
}

/// A P-256 key and a self-signed certificate named `cn`, as PEM files in `dir`.
fn identity(dir: &Path, cn: &str) -> (PathBuf, PathBuf) {
    let kp = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    let cert = params.self_signed(&kp).unwrap();
    let (k, c) = (dir.join("key.pem"), dir.join("cert.pem"));
    std::fs::write(&k, kp.serialize_pem()).unwrap();
    std::fs::write(&c, cert.pem()).unwrap();
    (k, c)
}

/// Signs and seals a one-signer document on `s`; the sealed file.
fn sealed_file(s: &Server, dir: &Path) -> PathBuf {
    let t = s.admin_token();
    let (id, d) = sent(s, &t, &["dee@example.com"]);
    sign_as(s, &link(&d, 0), "Dee Dahl");
    wait_sealed(s, &t, &id, 60);
    let (status, pdf) = download(s, &t, &id);
    assert_eq!(status, 200);
    let file = dir.join(format!("{id}.pdf"));
    std::fs::write(&file, pdf).unwrap();
    file
}

#[test]
fn the_operator_s_own_key_as_pem_or_pkcs12_seals_and_is_the_served_certificate() {
    let dir = fresh_dir("identity");
    let (key, cert) = identity(&dir, "Acme Sealing");
    let s = Server::start(&[
        "--signing-key",
        key.to_str().unwrap(),
        "--signing-cert",
        cert.to_str().unwrap(),
    ]);
    let served = s
        .get("/v1/signing-certificate")
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert_eq!(served, std::fs::read_to_string(&cert).unwrap());
    let (ok, out) = esign_verify(&sealed_file(&s, &dir), &cert);
    assert!(ok && out.contains("CN=Acme Sealing"), "{out}");
    drop(s);

    if !tool("openssl", "ESIGN_REQUIRE_PDF_TOOLS") {
        return;
    }
    let p12 = dir.join("id.p12");
    let (ok, out) = run(Command::new("openssl")
        .args(["pkcs12", "-export", "-inkey"])
        .arg(&key)
        .arg("-in")
        .arg(&cert)
        .arg("-out")
        .arg(&p12)
        .args(["-passout", "pass:s3cret"]));
    assert!(ok, "{out}");
    let s = Server::start(&[
        "--signing-p12",
        p12.to_str().unwrap(),
        "--signing-p12-password",
        "s3cret",
    ]);
    let (ok, out) = esign_verify(&sealed_file(&s, &dir), &cert);
    assert!(ok && out.contains("CN=Acme Sealing"), "{out}");
    drop(s);
    // A wrong password: the server says so and does not start.
    let data = fresh_dir("identity-data");
    let out = output_within(
        Command::new(esign_bin())
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(&data)
            .arg("--signing-p12")
            .arg(&p12)
            .args(["--signing-p12-password", "wrong"]),
        60,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("PKCS #12"), "{err}");
}

/// Issue 50 item 3: once a document is sealed after its last signature, each recipient,
/// the owner and every `sign_copy_emails` address get one completion mail with the
/// sealed PDF attached, byte for byte what a download gives.
#[test]
fn every_party_gets_one_completion_mail_with_the_sealed_pdf_attached() {
    use mail_parser::{MessageParser, MimeHeaders};
    let s = Server::start(&[]);
    let t = s.admin_token();
    let (id, d) = sent(&s, &t, &["a@example.com", "b@example.com"]);
    let copy_to = json!({"sign_copy_emails": ["legal@example.com", "A@example.com"]});
    let (status, body) = s.put_json(&t, &format!("/v1/documents/{id}"), &copy_to);
    assert_eq!(status, 204, "{body}");
    for r in d["recipients"].as_array().unwrap() {
        let url = r["document_url"].as_str().unwrap();
        sign_as(&s, url.rsplit('/').next().unwrap(), "Signer");
    }
    wait_sealed(&s, &t, &id, 60);
    let (status, pdf) = download(&s, &t, &id);
    assert_eq!(status, 200);
    s.mail_barrier(&t);
    let mut to = Vec::new();
    for raw in s.mails() {
        let m = MessageParser::default().parse(raw.as_bytes()).unwrap();
        if m.subject() != Some("Signed: Evidence") {
            continue;
        }
        to.push(
            m.to()
                .unwrap()
                .first()
                .unwrap()
                .address()
                .unwrap()
                .to_string(),
        );
        let files: Vec<_> = m.attachments().collect();
        assert_eq!(files.len(), 1, "{raw}");
        assert_eq!(files[0].attachment_name(), Some("Evidence.pdf"));
        assert!(
            files[0].contents() == pdf.as_slice(),
            "the attachment is the download"
        );
        assert!(
            m.body_text(0).unwrap().contains("signed by every party"),
            "{raw}"
        );
    }
    to.sort();
    assert_eq!(
        to,
        [
            "a@example.com",
            ADMIN_EMAIL,
            "b@example.com",
            "legal@example.com"
        ],
        "each party once"
    );
}

/// Names in every script the PDFs draw, each with its family's letters that WinAnsi
/// lacks: Polish, Czech, Vietnamese, Turkish, Greek, Cyrillic, Arabic, Hebrew,
/// Devanagari and Thai.
const NAMES: [(&str, &str); 10] = [
    ("Łukasz", "Żółć"),
    ("Jiří", "Dvořák"),
    ("Nguyễn", "Thị Minh"),
    ("Şükrü", "Yılmaz"),
    ("Αλέξανδρος", "Παπαδόπουλος"),
    ("Алексей", "Смирнов"),
    ("محمد", "العلي"),
    ("דוד", "כהן"),
    ("अमित", "शर्मा"),
    ("สมชาย", "ใจดี"),
];

/// `pdftotext`'s text without the direction marks it puts around right-to-left words.
fn without_direction_marks(text: &str) -> String {
    text.chars()
        .filter(|c| !matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}'))
        .collect()
}

#[test]
fn names_in_every_script_read_back_exactly_from_the_sealed_pdf() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let recipients: Vec<Value> = NAMES
        .iter()
        .enumerate()
        .map(|(i, (first, last))| {
            json!({"email": format!("s{i}@example.com"), "first_name": first,
                   "last_name": last, "role": "signer"})
        })
        .collect();
    let id = pdf_draft(&s, &t, "Umowa — zażółć", json!(recipients), json!({}));
    s.act_ok(&t, &id, "send");
    s.wait_status(&t, &id, "sent");
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    for (i, (first, last)) in NAMES.iter().enumerate() {
        sign_as(&s, &link(&d, i), &format!("{first} {last}"));
    }
    wait_sealed(&s, &t, &id, 120);
    let (status, pdf) = download(&s, &t, &id);
    assert_eq!(status, 200);
    let dir = fresh_dir("scripts");
    let file = dir.join("signed.pdf");
    std::fs::write(&file, &pdf).unwrap();
    // Our own reading (lopdf, through the ToUnicode maps): the left-to-right scripts.
    let ours = esign_host::pdf::extract_text(&pdf).unwrap();
    for (first, last) in &NAMES[..6] {
        assert!(
            ours.contains(&format!("{first} {last}")),
            "{first} {last} in:\n{ours}"
        );
    }
    assert!(ours.contains("Umowa — zażółć"), "{ours}");
    assert!(!ours.contains('?'), "no character written as ?:\n{ours}");
    if tool("pdfsig", "ESIGN_REQUIRE_PDF_TOOLS") {
        let (_, out) = run(Command::new("pdfsig").arg(&file));
        assert!(out.contains("Signature is Valid."), "{out}");
        let (_, text) = run(Command::new("pdftotext").arg(&file).arg("-"));
        let text = without_direction_marks(&text);
        for (first, last) in NAMES {
            // Right-to-left names come back in typed order, word by word.
            for word in [first, last] {
                assert!(text.contains(word), "{word} missing in:\n{text}");
            }
            if !matches!(first, "محمد" | "דוד") {
                assert!(
                    text.contains(&format!("{first} {last}")),
                    "{first} {last} in:\n{text}"
                );
            }
        }
        let (_, fonts) = run(Command::new("pdffonts").arg(&file));
        assert!(fonts.contains("NotoSansArabic-Regular"), "{fonts}");
        assert!(
            !fonts.contains("Helvetica"),
            "no font left unembedded:\n{fonts}"
        );
    }
}
