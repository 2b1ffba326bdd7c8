//! The `engine_request` fuzz corpus (`fuzz/corpus/engine_request`), replayed on every
//! `cargo test`: each input, read as the fuzz target reads it, is answered with an HTTP
//! status and no panic. Fuzzing for new inputs is `just fuzz` (cargo-fuzz, nightly).

#[path = "../../fuzz/shared/engine_request.rs"]
mod engine_request;

use arbitrary::{Arbitrary, Unstructured};

#[test]
fn every_input_of_the_engine_request_corpus_is_answered() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/engine_request");
    let mut replayed = 0;
    for entry in std::fs::read_dir(&dir).expect("the engine_request corpus") {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        // As libfuzzer-sys decodes a typed input: inputs it cannot decode never run.
        let Ok(input) = engine_request::Input::arbitrary_take_rest(Unstructured::new(&bytes))
        else {
            continue;
        };
        let outcome = std::panic::catch_unwind(|| engine_request::run(input));
        assert!(outcome.is_ok(), "{} made the engine panic", path.display());
        replayed += 1;
    }
    assert!(
        replayed >= 1000,
        "only {replayed} inputs replayed from {}",
        dir.display()
    );
}
