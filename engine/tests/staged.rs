//! File parts a host staged (`form-part.staged`, WIT 0.5.0): the host keeps the bytes
//! and the engine sees the part's first bytes and its blob-to-be. A route that stores
//! the file keeps it (`files.keep`) as that blob, without the bytes passing through the
//! engine; a request that fails keeps nothing; the size limits count the staged size.

mod common;

use common::*;
use esign_engine::memory::MemoryPlatform;
use esign_engine::{BlobInfo, FormPart, Origin, WorkOrder, handle};
use serde_json::Value;

const PDF: &[u8] = b"%PDF-1.4\nstaged bytes the engine never holds\n%%EOF\n";

/// Stages `bytes` in the platform as the host would, and the part that names them.
fn staged(p: &mut MemoryPlatform, id: &str, name: &str, filename: &str, bytes: &[u8]) -> FormPart {
    p.staged.insert(id.into(), bytes.to_vec());
    FormPart {
        name: name.into(),
        filename: Some(filename.into()),
        content_type: "application/pdf".into(),
        data: bytes[..bytes.len().min(esign_engine::STAGED_HEAD)].to_vec(),
        staged: Some(BlobInfo {
            id: id.into(),
            size: bytes.len() as u64,
            sha256: esign_engine::sha256_hex(bytes),
        }),
    }
}

fn text(name: &str, value: &str) -> FormPart {
    FormPart {
        name: name.into(),
        filename: None,
        content_type: String::new(),
        data: value.as_bytes().to_vec(),
        staged: None,
    }
}

fn post_form(p: &mut MemoryPlatform, t: &str, path: &str, parts: Vec<FormPart>) -> (u16, Value) {
    let mut req = request(Origin::Http, "POST", path, None);
    req.headers.push((
        "content-type".into(),
        "multipart/form-data; boundary=x".into(),
    ));
    req.headers
        .push(("authorization".into(), format!("Bearer {t}")));
    req.parts = parts;
    let resp = handle(p, &req);
    (resp.status, body(&resp))
}

#[test]
fn a_documents_staged_file_is_kept_as_its_blob_and_imported() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let part = staged(&mut p, "stagedpdf1", "file", "contract.pdf", PDF);
    let (s, doc) = post_form(&mut p, &t, "/v1/documents", vec![text("name", "N"), part]);
    assert_eq!(s, 200, "{doc}");
    assert_eq!(p.blobs.get("stagedpdf1").map(Vec::as_slice), Some(PDF));
    let import = take_jobs(&mut p, "doc.import").remove(0);
    let Some(WorkOrder::Import(order)) = import.work else {
        panic!("an import order: {import:?}")
    };
    assert_eq!(order[0].blob.as_deref(), Some("stagedpdf1"));
    assert_eq!(order[0].name, "contract.pdf");
}

#[test]
fn an_uploads_staged_file_is_kept_with_its_size_hash_and_kind() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    // Longer than the head the engine sees: its size is the staged one.
    let mut big = PDF.to_vec();
    big.resize(5000, b'x');
    let part = staged(&mut p, "stagedpdf2", "file", "u.pdf", &big);
    let (s, up) = post_form(&mut p, &t, "/v1/upload", vec![part]);
    assert_eq!(s, 200, "{up}");
    assert_eq!(p.blobs.get("stagedpdf2"), Some(&big));
    let id = up["file_id"].as_str().unwrap();
    let (s, shown) = api(&mut p, &t, "GET", &format!("/v1/upload/{id}"), None);
    assert_eq!(s, 200, "{shown}");
    assert_eq!(shown["file_size"], 5000, "{shown}");
    assert_eq!(shown["file_type"], "pdf", "{shown}");
}

#[test]
fn a_failed_request_keeps_no_staged_file() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let part = staged(&mut p, "stagedpdf3", "file", "a.pdf", PDF);
    // A recipient without an email: 400, and the staged file is not stored.
    let bad = text("recipients", "not json");
    let (s, e) = post_form(
        &mut p,
        &t,
        "/v1/documents",
        vec![text("name", "N"), bad, part],
    );
    assert_eq!(s, 400, "{e}");
    assert!(!p.blobs.contains_key("stagedpdf3"));
    assert!(take_jobs(&mut p, "doc.import").is_empty());
}

#[test]
fn an_empty_staged_file_is_refused() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let part = staged(&mut p, "stagedempty", "file", "a.pdf", b"");
    let (s, e) = post_form(&mut p, &t, "/v1/upload", vec![part]);
    assert_eq!(
        (s, e["error"].as_str()),
        (400, Some("invalid_field")),
        "{e}"
    );
}

#[test]
fn a_staged_file_the_host_lost_answers_503_and_creates_nothing() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let part = staged(&mut p, "stagedlost", "file", "a.pdf", PDF);
    p.staged.clear();
    let (s, e) = post_form(&mut p, &t, "/v1/upload", vec![part]);
    assert_eq!(
        (s, e["error"].as_str()),
        (503, Some("storage_unavailable")),
        "{e}"
    );
    assert!(p.blobs.is_empty());
}

#[test]
fn a_route_without_files_counts_the_staged_size() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    // Its head is small; the file is 2 MiB.
    let part = staged(&mut p, "stagedbig", "file", "a.pdf", &vec![b'%'; 2 << 20]);
    let (s, e) = post_form(&mut p, &t, "/v1/contacts", vec![part]);
    assert_eq!(
        (s, e["error"].as_str()),
        (413, Some("payload_too_large")),
        "{e}"
    );
}

#[test]
fn verify_reads_a_staged_pdf_whole() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let part = staged(
        &mut p,
        "stagedsealed",
        "file",
        "s.pdf",
        b"%PDF-sealed:doc1:abc",
    );
    let (s, v) = post_form(&mut p, &t, "/v1/verify", vec![part]);
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["signed"], true, "{v}");
    assert!(p.blobs.is_empty(), "a check stores nothing");
}

/// A JSON request whose `file_content` the host decoded and staged: the body without
/// the member, and the staged part named after it.
fn send_json(
    p: &mut MemoryPlatform,
    t: &str,
    method: &str,
    path: &str,
    json: Value,
    part: FormPart,
) -> (u16, Value) {
    let mut req = request(Origin::Http, method, path, Some(json));
    req.headers
        .push(("authorization".into(), format!("Bearer {t}")));
    req.parts = vec![part];
    let resp = handle(p, &req);
    (resp.status, body(&resp))
}

/// A staged JSON member: no file name, no media type (the host reads `file_content`).
fn staged_member(p: &mut MemoryPlatform, id: &str, bytes: &[u8]) -> FormPart {
    FormPart {
        filename: None,
        content_type: String::new(),
        ..staged(p, id, "file_content", "", bytes)
    }
}

#[test]
fn a_json_bodys_staged_file_content_is_the_documents_file_under_its_file_name() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let part = staged_member(&mut p, "stagedjson1", PDF);
    let body = serde_json::json!({"name": "N", "file_name": "offer.pdf"});
    let (s, doc) = send_json(&mut p, &t, "POST", "/v1/documents", body, part);
    assert_eq!(s, 200, "{doc}");
    assert_eq!(p.blobs.get("stagedjson1").map(Vec::as_slice), Some(PDF));
    let import = take_jobs(&mut p, "doc.import").remove(0);
    let Some(WorkOrder::Import(order)) = import.work else {
        panic!("an import order: {import:?}")
    };
    assert_eq!(order[0].blob.as_deref(), Some("stagedjson1"));
    assert_eq!(order[0].name, "offer.pdf");
}

#[test]
fn a_staged_json_member_counts_as_a_member_where_it_is_not_accepted() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let part = staged_member(&mut p, "stagedjson2", PDF);
    let body = serde_json::json!({"name": "E"});
    let (s, e) = send_json(&mut p, &t, "PUT", "/v1/entity", body, part);
    assert_eq!(
        (s, e["error"].as_str()),
        (400, Some("unknown_field")),
        "{e}"
    );
    assert!(
        e["description"].as_str().unwrap().contains("file_content"),
        "{e}"
    );
    assert!(p.blobs.is_empty());
}
