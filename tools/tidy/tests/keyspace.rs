//! Every key family named once (issue 49): the prefixes of the engine's keys are the
//! constants of `engine/src/base/keyspace.rs`, and code builds keys from them
//! (`key(&[DOC, id])`, `format!("{DLOG}/{doc_id}/")`). A string literal in
//! `engine/src` outside that file and test code fails when it starts with a family and
//! a `/` (`"doc/"`, `"dlog/{id}"`), or is a family's name passed on as a value (an
//! argument or an array element: `key(&["doc", id])`, `lookup(cx, e, "dext", …)`);
//! a map key or an index (`json!({"doc": …})`, `p["doc"]`) is not one. The families
//! are read from the constants (`pub const NAME: &str = "x";`), so a new family is
//! checked once it is declared there.
//!
//! The files older than the rule that still spelled some were listed in
//! [`LITERALS_LEFT`] by file and family; the list may only shrink, and has been empty
//! since the last (`handlers/documents/read.rs`'s `"dext"`) became the domain verb
//! `list::by_external_id`.
//!
//! `ESIGN_TIDY_ROOT=/path/to/checkout cargo test -p esign-tidy` checks another checkout.

use esign_tidy::shrinking::root;
use esign_tidy::string_literals;
use std::collections::BTreeSet;
use std::path::Path;

/// Where the families are declared, under `engine/src/`.
const KEYSPACE: &str = "base/keyspace.rs";

/// Families still spelled as literals (under `engine/src/`): file, family.
const LITERALS_LEFT: &[(&str, &str)] = &[];

/// The families the keyspace module declares.
fn families(keyspace: &str) -> Vec<String> {
    keyspace
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub const "))
        .filter_map(|l| l.split_once(": &str = \""))
        .filter_map(|(_, v)| v.strip_suffix("\";"))
        .map(str::to_string)
        .collect()
}

/// The family a literal spells, if it spells one as a key.
fn spelled<'a>(families: &'a [String], text: &str, passed: bool) -> Option<&'a String> {
    families.iter().find(|f| {
        text.strip_prefix(f.as_str())
            .is_some_and(|rest| rest.starts_with('/') || (passed && rest.is_empty()))
    })
}

/// Each file's spelled families under `src` (path relative to it, family, line).
fn found(src: &Path, families: &[String]) -> Vec<(String, String, usize)> {
    let mut out = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("a source folder") {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(src).unwrap().to_string_lossy();
            let rel = rel.replace('\\', "/");
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && rel != KEYSPACE {
                let text = std::fs::read_to_string(&path).unwrap();
                for l in string_literals(&text) {
                    if let Some(f) = spelled(families, &l.text, l.passed) {
                        out.push((rel.clone(), f.clone(), l.line));
                    }
                }
            }
        }
    }
    out.sort();
    out
}

/// What is wrong with `found` against `allowed`.
fn problems(found: &[(String, String, usize)], allowed: &[(&str, &str)]) -> Vec<String> {
    let allowed: BTreeSet<(&str, &str)> = allowed.iter().copied().collect();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (file, family, line) in found {
        seen.insert((file.as_str(), family.as_str()));
        if !allowed.contains(&(file.as_str(), family.as_str())) {
            out.push(format!(
                "engine/src/{file}:{line}: the key family \"{family}\" spelled as a literal: use its constant in engine/src/{KEYSPACE}"
            ));
        }
    }
    for (file, family) in allowed.difference(&seen) {
        out.push(format!(
            "{file} no longer spells \"{family}\": remove its line from LITERALS_LEFT in tools/tidy/tests/keyspace.rs (it may only shrink)"
        ));
    }
    out
}

#[test]
fn every_key_family_is_named_once() {
    let src = root().join("engine/src");
    let keyspace = std::fs::read_to_string(src.join(KEYSPACE)).expect("the keyspace module");
    let families = families(&keyspace);
    assert!(families.len() > 40, "read {} families", families.len());
    let wrong = problems(&found(&src, &families), LITERALS_LEFT);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_check_can_fail() {
    let families = families("pub const DOC: &str = \"doc\";\n    pub const DX: &str = \"dx\";");
    assert_eq!(families, ["doc", "dx"]);
    let dir = std::env::temp_dir().join(format!("esign-tidy-keyspace-{}", std::process::id()));
    let src = dir.join("engine/src");
    std::fs::create_dir_all(src.join("base")).unwrap();
    std::fs::write(
        src.join("a.rs"),
        "fn f() { key(&[\"doc\", id]); format!(\"dx/{e}/\"); json!({\"doc\": 1});\n\
         p[\"doc\"]; \"docs/x\"; \"application/pdf\"; format!(\"{DX}/{e}/\"); }\n\
         #[cfg(test)]\nmod tests { fn t() { key(&[\"doc\", x]); } }\n",
    )
    .unwrap();
    std::fs::write(src.join("old.rs"), "const K: &[u8] = b\"dx/all\";").unwrap();
    std::fs::write(src.join(KEYSPACE), "pub const DOC: &str = \"doc\";").unwrap();
    let got = found(&src, &families);
    let _ = std::fs::remove_dir_all(&dir);
    let wrong = problems(&got, &[("old.rs", "dx"), ("gone.rs", "doc")]);
    assert_eq!(wrong.len(), 3, "{wrong:#?}");
    assert!(wrong[0].contains("a.rs:1: the key family \"doc\""));
    assert!(wrong[1].contains("a.rs:1: the key family \"dx\""));
    assert!(wrong[2].contains("gone.rs no longer spells \"doc\""));
}
