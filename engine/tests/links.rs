//! Recipient links at rest: the store holds only the SHA-256 of a link's secret
//! (`rlink/`) and a nonce the secret is derived from with the host's link key
//! (`settings.link-key`), so a copy of the store hands out no signing links. Records
//! written before link keys, which hold the secret itself, keep working.

mod common;

use common::*;
use esign_engine::JobOutcome;
use esign_engine::memory::MemoryPlatform;
use serde_json::json;

/// Whether `needle` occurs anywhere in the store, in a key or a value.
fn stored_anywhere(p: &MemoryPlatform, needle: &[u8]) -> bool {
    let has = |hay: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
    p.data.iter().any(|(k, v)| has(k) || has(v)) || p.blobs.values().any(|b| has(b))
}

fn rlink_keys(p: &MemoryPlatform) -> Vec<String> {
    keys_containing(p, &["rlink/"])
}

#[test]
fn the_store_holds_no_link_secret_and_the_link_opens() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (id, sent) = sent_doc(
        &mut p,
        &t,
        json!([{"email": "ann@example.com", "first_name": "Ann"},
               {"email": "bo@example.com", "first_name": "Bo"}]),
        json!({}),
    );
    for i in 0..2 {
        let secret = secret_of(&sent, i);
        // The shape links always had: 32 bytes in base64url without padding.
        assert_eq!(secret.len(), 43, "{secret}");
        assert!(
            secret
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert!(
            !stored_anywhere(&p, secret.as_bytes()),
            "the secret of recipient {i} is in the store"
        );
        let (s, v) = recipient(&mut p, "GET", &format!("/v1/recipient/{secret}"), None);
        assert_eq!(s, 200, "{v}");
        // The mail that carried it is an effect, not a record.
        assert!(p.mails.iter().any(|m| m.body.contains(&secret)));
    }
    assert_eq!(rlink_keys(&p).len(), 2);
    // The owner sees the same links again, though nothing stored holds them.
    let (s, d) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}"), None);
    assert_eq!(s, 200);
    assert_eq!(secret_of(&d, 0), secret_of(&sent, 0));
    assert_eq!(secret_of(&d, 1), secret_of(&sent, 1));
    assert_ne!(secret_of(&sent, 0), secret_of(&sent, 1));
}

#[test]
fn a_link_is_derived_from_the_hosts_key() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (id, sent) = sent_doc(&mut p, &t, json!([{"email": "ann@example.com"}]), json!({}));
    let secret = secret_of(&sent, 0);
    let key = p.settings.link_key.clone();
    // With another key (a copy of the store without the host's key) the record names
    // another secret: the link does not open and the owner is shown no working link.
    p.settings.link_key = "some-other-key".into();
    let (s, _) = recipient(&mut p, "GET", &format!("/v1/recipient/{secret}"), None);
    assert_eq!(s, 404);
    let (_, d) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}"), None);
    assert_ne!(secret_of(&d, 0), secret);
    p.settings.link_key = key;
    let (s, _) = recipient(&mut p, "GET", &format!("/v1/recipient/{secret}"), None);
    assert_eq!(s, 200);
}

#[test]
fn an_old_record_holding_the_secret_still_resolves_and_is_erased_with_its_document() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let (id, sent) = sent_doc(
        &mut p,
        &t,
        json!([{"email": "ann@example.com", "first_name": "Ann"}]),
        json!({}),
    );
    let new_secret = secret_of(&sent, 0);
    // Rewrite the record as one written before link keys: the member holds the secret
    // itself (a postcard string: its length, then its bytes), and `rlink/` its hash.
    let old_secret = "OldStyleSecretOldStyleSecretOldStyleSecret0"; // 43 characters
    let doc_key = format!("doc/{id}").into_bytes();
    let record = p.data.get(&doc_key).unwrap().clone();
    let at = record
        .windows(6)
        .position(|w| w == b"nonce:")
        .expect("the record keeps a nonce");
    let len = record[at - 1] as usize;
    let mut old = record[..at - 1].to_vec();
    old.push(old_secret.len() as u8);
    old.extend_from_slice(old_secret.as_bytes());
    old.extend_from_slice(&record[at + len..]);
    p.data.insert(doc_key, old);
    let target = p
        .data
        .remove(&format!("rlink/{}", esign_engine::sha256_hex(new_secret.as_bytes())).into_bytes())
        .expect("the new link's key");
    p.data.insert(
        format!("rlink/{}", esign_engine::sha256_hex(old_secret.as_bytes())).into_bytes(),
        target,
    );

    let (s, v) = recipient(&mut p, "GET", &format!("/v1/recipient/{old_secret}"), None);
    assert_eq!(s, 200, "{v}");
    let (s, _) = recipient(&mut p, "GET", &format!("/v1/recipient/{new_secret}"), None);
    assert_eq!(s, 404);
    let (_, d) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}"), None);
    assert_eq!(secret_of(&d, 0), old_secret);

    // Deleting the document deletes its link keys, old style or new.
    let (other, _) = sent_doc(&mut p, &t, json!([{"email": "bo@example.com"}]), json!({}));
    assert_eq!(rlink_keys(&p).len(), 2);
    for doc in [&id, &other] {
        api(&mut p, &t, "DELETE", &format!("/v1/documents/{doc}"), None);
        let (s, _) = api(&mut p, &t, "DELETE", &format!("/v1/documents/{doc}"), None);
        assert_eq!(s, 204);
    }
    for erase in take_jobs(&mut p, "doc.erase") {
        assert_eq!(run(&mut p, &erase, None), JobOutcome::Done);
    }
    assert!(
        rlink_keys(&p).is_empty(),
        "left behind: {:?}",
        rlink_keys(&p)
    );
    let (s, _) = recipient(&mut p, "GET", &format!("/v1/recipient/{old_secret}"), None);
    assert_eq!(s, 404);
}
