//! Sets `ESIGN_ASSETS_VERSION`: a hash of the signing page's assets (`assets/`), used in
//! their URLs so browsers may cache them for good and still see every change; and
//! deflates `openapi.json` into `OUT_DIR` (see `router::openapi`).

use std::hash::Hasher;

fn main() {
    println!("cargo:rerun-if-changed=openapi.json");
    let doc = std::fs::read("openapi.json").expect("engine/openapi.json");
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    std::fs::write(
        out.join("openapi.json.deflate"),
        miniz_oxide::deflate::compress_to_vec(&doc, 10),
    )
    .expect("write the deflated openapi.json");

    println!("cargo:rerun-if-changed=assets");
    let mut names: Vec<_> = std::fs::read_dir("assets")
        .expect("engine/assets")
        .map(|e| e.expect("engine/assets entry").path())
        .collect();
    names.sort();
    // Not a security property: only a cache key, so std's SipHash with fixed keys is
    // enough (it is stable for one toolchain, and a toolchain change at most costs
    // browsers one download).
    #[allow(deprecated)]
    let mut h = std::hash::SipHasher::new();
    for path in names {
        h.write(path.file_name().unwrap().as_encoded_bytes());
        h.write(&std::fs::read(&path).expect("read asset"));
    }
    println!("cargo:rustc-env=ESIGN_ASSETS_VERSION={:016x}", h.finish());
}
