//! Handlers translate, the domain decides (ARCHITECTURE.md, "Layers"; issue 49): a handler
//! parses the request, calls a domain verb and shapes the answer; reading and writing the
//! store is the domain's. The handlers that still reach the store are listed here with
//! their number of store calls (`esign_tidy::store_calls`). The list may only shrink: a
//! file not in it may make none, a listed one no more than its number, and a number must
//! come down (or its line go) as calls move into the domain.
//!
//! `ESIGN_TIDY_ROOT=/path/to/checkout cargo test -p esign-tidy` checks another checkout.

use esign_tidy::store_calls;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Today's handlers with store calls (under `engine/src/handlers/`), and how many.
const STORE_CALLS_LEFT: &[(&str, usize)] = &[
    ("admin.rs", 11),
    ("agents/authorize.rs", 7),
    ("agents/clients.rs", 1),
    ("agents/mcp.rs", 7),
    ("agents/tokens.rs", 13),
    ("attachments.rs", 1),
    ("auth.rs", 9),
    ("documents/comments.rs", 3),
    ("documents/custom_data.rs", 9),
    ("documents/download.rs", 5),
    ("documents/read.rs", 1),
    ("documents/roster.rs", 1),
    ("documents/send.rs", 2),
    ("entity.rs", 2),
    ("folders.rs", 3),
    ("jobs/accounts.rs", 4),
    ("jobs/documents.rs", 4),
    ("jobs/uploads.rs", 6),
    ("jobs/webhooks.rs", 5),
    ("mail_templates.rs", 4),
    ("products.rs", 2),
    ("recipients/acts.rs", 2),
    ("recipients/verify.rs", 4),
    ("recipients/view.rs", 2),
    ("shapes.rs", 3),
    ("subscriptions.rs", 15),
    ("templates.rs", 5),
    ("uploads.rs", 1),
    ("users.rs", 12),
    ("videos.rs", 1),
];

fn root() -> PathBuf {
    match std::env::var_os("ESIGN_TIDY_ROOT") {
        Some(r) => PathBuf::from(r),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
    }
}

/// Store calls per file under `dir`, by path relative to it.
fn counted(dir: &Path) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("a handlers folder") {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let n = store_calls(&std::fs::read_to_string(&path).unwrap());
                let rel = path.strip_prefix(dir).unwrap().to_string_lossy();
                out.insert(rel.replace('\\', "/"), n);
            }
        }
    }
    out
}

/// What is wrong with `found` against `allowed`.
fn problems(found: &BTreeMap<String, usize>, allowed: &[(&str, usize)]) -> Vec<String> {
    let allowed: BTreeMap<&str, usize> = allowed.iter().copied().collect();
    let mut out = Vec::new();
    for (file, &n) in found {
        let may = allowed.get(file.as_str()).copied().unwrap_or(0);
        if n > may {
            out.push(format!(
                "{file}: {n} store calls, {may} allowed: a handler asks a domain verb, which reads and writes the store"
            ));
        } else if n < may {
            out.push(format!(
                "{file}: {n} store calls, the list says {may}: lower it in tools/tidy/tests/handlers.rs (it may only shrink)"
            ));
        }
    }
    for file in allowed.keys() {
        if !found.contains_key(*file) {
            out.push(format!("{file} is gone: remove its line from the list"));
        }
    }
    out
}

#[test]
fn handlers_reach_the_store_no_more_than_listed() {
    let found = counted(&root().join("engine/src/handlers"));
    let wrong = problems(&found, STORE_CALLS_LEFT);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_check_can_fail() {
    let found: BTreeMap<String, usize> = [("a.rs".to_string(), 2), ("new.rs".to_string(), 1)]
        .into_iter()
        .collect();
    let wrong = problems(&found, &[("a.rs", 3), ("gone.rs", 1)]);
    assert_eq!(wrong.len(), 3, "{wrong:#?}");
    assert!(wrong[0].contains("a.rs: 2 store calls, the list says 3"));
    assert!(wrong[1].contains("new.rs: 1 store calls, 0 allowed"));
    assert!(wrong[2].contains("gone.rs is gone"));
}
