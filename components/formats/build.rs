//! Builds again when the WIT it is generated from changes: `wit_bindgen::generate!`
//! reads those files, but cargo does not see them as sources.

fn main() {
    println!("cargo:rerun-if-changed=../../wit");
}
