//! The WIT contract's versioning rule (wit/README.md), checked. `wit/released/` holds the
//! contract as last released. While `wit/esign.wit` keeps that version it may change
//! only compatibly: every function the world imports must be one the released world
//! imports, with the same signature (a host written for the release provides it), and
//! every function the released world exports must still be exported with the same
//! signature (a host written for the release calls it). A new version must come with
//! `wit/released/` updated to it.
//!
//! Signatures are compared structurally, as the component model types them: records by
//! their fields' names and types, variants and enums by their cases, type names aside.

use std::collections::BTreeMap;
use std::path::Path;
use wit_parser::{Resolve, Type, TypeDefKind, WorldItem};

/// One world's functions, `interface#function` (or the bare name) -> signature, for its
/// imports and its exports; and the package version.
struct Contract {
    version: String,
    imports: BTreeMap<String, String>,
    exports: BTreeMap<String, String>,
}

fn load(dir: &Path) -> Contract {
    let mut resolve = Resolve::default();
    let (pkg, _) = resolve
        .push_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e:#}", dir.display()));
    let world = resolve.select_world(&[pkg], Some("esign")).unwrap();
    let version = resolve.packages[pkg]
        .name
        .version
        .as_ref()
        .map(|v| v.to_string())
        .expect("the package has a version");
    let w = &resolve.worlds[world];
    let mut contract = Contract {
        version,
        imports: BTreeMap::new(),
        exports: BTreeMap::new(),
    };
    for (items, out) in [
        (&w.imports, &mut contract.imports),
        (&w.exports, &mut contract.exports),
    ] {
        for (key, item) in items {
            let name = resolve.name_world_key(key);
            match item {
                WorldItem::Function(f) => {
                    out.insert(name, signature(&resolve, &f.params, &f.result));
                }
                WorldItem::Interface { id, .. } => {
                    for (fname, f) in &resolve.interfaces[*id].functions {
                        out.insert(
                            format!("{name}#{fname}"),
                            signature(&resolve, &f.params, &f.result),
                        );
                    }
                }
                // Types named at the world level reach the boundary only through
                // functions, whose signatures spell them out.
                WorldItem::Type { .. } => {}
            }
        }
    }
    contract
}

fn signature(resolve: &Resolve, params: &[wit_parser::Param], result: &Option<Type>) -> String {
    let params: Vec<String> = params
        .iter()
        .map(|p| format!("{}: {}", p.name, ty(resolve, &p.ty)))
        .collect();
    let result = result.as_ref().map(|t| ty(resolve, t)).unwrap_or_default();
    format!("func({}) -> {result}", params.join(", "))
}

/// A type spelled out structurally.
fn ty(resolve: &Resolve, t: &Type) -> String {
    let Type::Id(id) = t else {
        return format!("{t:?}").to_lowercase();
    };
    let opt = |t: &Option<Type>| t.as_ref().map(|t| ty(resolve, t)).unwrap_or("_".into());
    match &resolve.types[*id].kind {
        TypeDefKind::Type(t) => ty(resolve, t),
        TypeDefKind::Record(r) => {
            let fields: Vec<String> = r
                .fields
                .iter()
                .map(|f| format!("{}: {}", f.name, ty(resolve, &f.ty)))
                .collect();
            format!("record {{{}}}", fields.join(", "))
        }
        TypeDefKind::Variant(v) => {
            let cases: Vec<String> = v
                .cases
                .iter()
                .map(|c| format!("{}({})", c.name, opt(&c.ty)))
                .collect();
            format!("variant {{{}}}", cases.join(", "))
        }
        TypeDefKind::Enum(e) => {
            let cases: Vec<&str> = e.cases.iter().map(|c| c.name.as_str()).collect();
            format!("enum {{{}}}", cases.join(", "))
        }
        TypeDefKind::Flags(f) => {
            let flags: Vec<&str> = f.flags.iter().map(|f| f.name.as_str()).collect();
            format!("flags {{{}}}", flags.join(", "))
        }
        TypeDefKind::Tuple(t) => {
            let types: Vec<String> = t.types.iter().map(|t| ty(resolve, t)).collect();
            format!("tuple<{}>", types.join(", "))
        }
        TypeDefKind::Option(t) => format!("option<{}>", ty(resolve, t)),
        TypeDefKind::Result(r) => format!("result<{}, {}>", opt(&r.ok), opt(&r.err)),
        TypeDefKind::List(t) => format!("list<{}>", ty(resolve, t)),
        other => panic!("a type the contract does not use yet: {other:?}; teach this test"),
    }
}

fn wit_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../wit"))
}

/// Why `current` breaks a host written for `released`, one line per reason.
fn breaks(released: &Contract, current: &Contract) -> Vec<String> {
    let mut why = Vec::new();
    for (name, sig) in &current.imports {
        match released.imports.get(name) {
            None => why.push(format!("new import {name}: {sig}")),
            Some(old) if old != sig => {
                why.push(format!("import {name} changed:\n  was {old}\n  now {sig}"))
            }
            Some(_) => {}
        }
    }
    for (name, old) in &released.exports {
        match current.exports.get(name) {
            None => why.push(format!("export {name} removed")),
            Some(sig) if sig != old => {
                why.push(format!("export {name} changed:\n  was {old}\n  now {sig}"))
            }
            Some(_) => {}
        }
    }
    why
}

#[test]
fn the_contract_changes_compatibly_or_with_a_new_version() {
    let released = load(&wit_dir().join("released"));
    let current = load(wit_dir());
    assert_eq!(
        current.version, released.version,
        "esign.wit is at {}, wit/released/ at {}: copy esign.wit and deps/ to wit/released/ \
         in the commit that changes the version",
        current.version, released.version
    );
    let why = breaks(&released, &current);
    assert!(
        why.is_empty(),
        "esign.wit changed incompatibly with the released {} without a new version \
         (wit/README.md: raise the minor version and update wit/released/):\n{}",
        released.version,
        why.join("\n")
    );
}

/// The check itself can fail: each kind of incompatible change is caught, and the
/// compatible ones are not.
#[test]
fn the_check_catches_each_kind_of_incompatible_change() {
    let released = load(&wit_dir().join("released"));
    let text = std::fs::read_to_string(wit_dir().join("esign.wit")).unwrap();
    let changed = |from: &str, to: &str| -> Vec<String> {
        assert!(text.contains(from), "the WIT no longer has {from:?}");
        let dir = std::env::temp_dir().join(format!(
            "esign-wit-{}-{}",
            std::process::id(),
            from.len() * 31 + to.len()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("deps")).unwrap();
        for entry in std::fs::read_dir(wit_dir().join("deps")).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), dir.join("deps").join(entry.file_name())).unwrap();
        }
        std::fs::write(dir.join("esign.wit"), text.replacen(from, to, 1)).unwrap();
        let why = breaks(&released, &load(&dir));
        let _ = std::fs::remove_dir_all(&dir);
        why
    };
    let store_get = "    get: func(key: list<u8>) -> option<list<u8>>;";
    // A new import function.
    let why = changed(
        store_get,
        &format!("{store_get}\n    has: func(key: list<u8>) -> bool;"),
    );
    assert!(
        why.iter()
            .any(|w| w.contains("new import") && w.contains("#has")),
        "{why:?}"
    );
    // A changed import signature.
    let why = changed(store_get, "    get: func(key: list<u8>) -> list<u8>;");
    assert!(why.iter().any(|w| w.contains("#get changed")), "{why:?}");
    // A record field added to a type that crosses the boundary (through an export).
    let why = changed(
        "        remote-addr: string,\n",
        "        remote-addr: string,\n        tls: bool,\n",
    );
    assert!(
        why.iter().any(|w| w.contains("export handle changed")),
        "{why:?}"
    );
    // An export removed.
    let why = changed("    export run-job: func(job: job) -> job-outcome;", "");
    assert!(
        why.iter().any(|w| w.contains("export run-job removed")),
        "{why:?}"
    );
    // Compatible: documentation, and a new export.
    assert!(changed(store_get, &format!("    /// More words.\n{store_get}")).is_empty());
    assert!(
        changed(
            "    export run-job: func(job: job) -> job-outcome;",
            "    export run-job: func(job: job) -> job-outcome;\n    export ping: func() -> u32;",
        )
        .is_empty()
    );
}
