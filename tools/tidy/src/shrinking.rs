//! What the rules with a list of today's exceptions share: where the checkout is, a
//! count per file, and what is wrong with the counts against a list that may only
//! shrink (a file not in it may have none, a listed one no more than its number, and a
//! number that went down must be lowered in the list).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The checkout the rules read: `ESIGN_TIDY_ROOT`, or the one this crate is in.
pub fn root() -> PathBuf {
    match std::env::var_os("ESIGN_TIDY_ROOT") {
        Some(r) => PathBuf::from(r),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
    }
}

/// `count` of every `.rs` file under `dir`, by its path relative to `dir` (with `/`).
pub fn per_file(dir: &Path, count: impl Fn(&str) -> usize) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("a source folder") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("a source file reads");
                let rel = path.strip_prefix(dir).expect("under dir").to_string_lossy();
                out.insert(rel.replace('\\', "/"), count(&text));
            }
        }
    }
    out
}

/// A list of exceptions: what it counts (`"store calls"`), what to do instead, and the
/// file that holds it.
pub struct Shrinking<'a> {
    pub counts: &'a str,
    pub instead: &'a str,
    pub list_in: &'a str,
}

impl Shrinking<'_> {
    /// Fails with every problem when `count` over the `.rs` files under `dir` (relative
    /// to the checkout) does not match `allowed`.
    pub fn assert_holds(
        &self,
        dir: &str,
        count: impl Fn(&str) -> usize,
        allowed: &[(&str, usize)],
    ) {
        let wrong = self.problems(&per_file(&root().join(dir), count), allowed);
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    /// Fails unless the check reports each kind of problem, in this list's words: a
    /// number that went down, a file not listed, a listed file that is gone.
    pub fn assert_can_fail(&self) {
        let found: BTreeMap<String, usize> = [("a.rs".to_string(), 2), ("new.rs".to_string(), 1)]
            .into_iter()
            .collect();
        let wrong = self.problems(&found, &[("a.rs", 3), ("gone.rs", 1)]);
        assert_eq!(wrong.len(), 3, "{wrong:#?}");
        let counts = self.counts;
        assert!(
            wrong[0].contains(&format!("a.rs: 2 {counts}, the list says 3")),
            "{}",
            wrong[0]
        );
        assert!(wrong[0].contains(self.list_in), "{}", wrong[0]);
        assert!(
            wrong[1].contains(&format!("new.rs: 1 {counts}, 0 allowed")),
            "{}",
            wrong[1]
        );
        assert!(wrong[1].contains(self.instead), "{}", wrong[1]);
        assert!(wrong[2].contains("gone.rs is gone"), "{}", wrong[2]);
    }

    /// What is wrong with `found` against `allowed`.
    pub fn problems(
        &self,
        found: &BTreeMap<String, usize>,
        allowed: &[(&str, usize)],
    ) -> Vec<String> {
        let allowed: BTreeMap<&str, usize> = allowed.iter().copied().collect();
        let mut out = Vec::new();
        for (file, &n) in found {
            let may = allowed.get(file.as_str()).copied().unwrap_or(0);
            if n > may {
                out.push(format!(
                    "{file}: {n} {}, {may} allowed: {}",
                    self.counts, self.instead
                ));
            } else if n < may {
                out.push(format!(
                    "{file}: {n} {}, the list says {may}: lower it in {} (it may only shrink)",
                    self.counts, self.list_in
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
}
