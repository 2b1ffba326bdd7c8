//! The `multipart` fuzz corpus (`fuzz/corpus/multipart`), replayed on every `cargo
//! test` as the fuzz target reads it: any body with any boundary decodes to parts (no
//! more than the limit) or an error, never a panic. Fuzzing for new inputs is
//! `just fuzz` (cargo-fuzz, nightly).

use arbitrary::{Arbitrary, Unstructured};

#[test]
fn every_input_of_the_multipart_corpus_decodes_or_fails_cleanly() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/multipart");
    let mut replayed = 0;
    for entry in std::fs::read_dir(&dir).expect("the multipart corpus") {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let Ok((boundary, body)) =
            <(String, Vec<u8>)>::arbitrary_take_rest(Unstructured::new(&bytes))
        else {
            continue;
        };
        let content_type = format!("multipart/form-data; boundary={boundary}");
        let outcome = std::panic::catch_unwind(|| {
            esign_formats::multipart::decode(&content_type, bytes::Bytes::from(body))
                .map(|parts| parts.len())
        });
        let Ok(decoded) = outcome else {
            panic!("{} made the decoder panic", path.display());
        };
        if let Ok(n) = decoded {
            assert!(
                n <= esign_formats::multipart::MAX_PARTS,
                "{}",
                path.display()
            );
        }
        replayed += 1;
    }
    assert!(
        replayed >= 400,
        "only {replayed} inputs replayed from {}",
        dir.display()
    );
}
