//! Downloads a host sends itself (WIT `settings.blob-responses`): the engine names the
//! blob in the `esign-blob` header and leaves the body empty, so a file never passes
//! through its memory; without the setting the bytes are in the body as before.

mod common;

use common::*;
use esign_engine::BLOB_HEADER;
use serde_json::json;

#[test]
fn a_download_names_its_blob_for_a_host_that_sends_files() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (id, _) = draft(&mut p, &t, json!([{"email": "s@y.se"}]), json!({}));
    let path = format!("/v1/documents/{id}/download");
    let get = |p: &mut esign_engine::memory::MemoryPlatform| {
        let mut req = request(esign_engine::Origin::Http, "GET", &path, None);
        req.query = "direct=true".into();
        req.headers
            .push(("authorization".into(), format!("Bearer {t}")));
        esign_engine::handle(p, &req)
    };
    let whole = get(&mut p);
    assert_eq!(whole.status, 200);
    assert!(whole.body.starts_with(b"%PDF"));
    assert!(whole.headers.iter().all(|(n, _)| n != BLOB_HEADER));

    p.settings.blob_responses = true;
    let named = get(&mut p);
    assert_eq!(named.status, 200);
    assert!(named.body.is_empty(), "the host sends the bytes");
    let blob = named
        .headers
        .iter()
        .find(|(n, _)| n == BLOB_HEADER)
        .map(|(_, v)| v.clone())
        .expect("the blob is named");
    assert_eq!(p.blobs.get(&blob), Some(&whole.body));
    assert!(
        named
            .headers
            .iter()
            .any(|(n, v)| n == "content-type" && v == "application/pdf")
    );
}
