//! The import graph of a crate's source files, read without building it.
//!
//! `tests/layers.rs` holds each crate of esign to its layer order with it (ARCHITECTURE.md,
//! "Layers"). It reads `use` trees, `mod` declarations and paths written inline
//! (`crate::a::b`, `super::x`, `child::y`, or a name a `use` brought in), and resolves each
//! to the source file of the longest module prefix it names. Standard library only, so it
//! builds in a second and needs nothing the crates it reads need.
//!
//! What it does not see, on purpose: items gated by `#[cfg(test)]` (a unit test may reach
//! any layer), and glob imports' single names (a glob counts as an import of its module).

pub mod shrinking;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// One source file of a crate.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Relative to the crate's `src/`, with `/` separators: `docs/lifecycle.rs`.
    pub path: String,
    /// Its module path: `["docs", "lifecycle"]`; the crate root is `[]`.
    pub module: Vec<String>,
}

/// The files of one crate and the imports between them.
#[derive(Debug, Default)]
pub struct Graph {
    pub files: Vec<SourceFile>,
    /// `(from, to)` → the names imported (the first segment past the module path).
    pub edges: BTreeMap<(String, String), BTreeSet<String>>,
}

/// Reads every `.rs` file under `src` (a crate's `src/`). `bin_root` names a binary root
/// (`main.rs`) whose paths starting with `lib_name::` are the library's.
pub fn read_crate(src: &Path, lib_name: Option<&str>) -> Graph {
    let mut files = Vec::new();
    collect(src, src, &mut files);
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let mut modules: BTreeMap<Vec<String>, String> = BTreeMap::new();
    for file in &files {
        if file.path != "main.rs" {
            modules.insert(file.module.clone(), file.path.clone());
        }
    }
    let mut graph = Graph {
        files: files.clone(),
        ..Graph::default()
    };
    let lexed: Vec<Vec<Tok>> = files
        .iter()
        .map(|f| lex(&fs::read_to_string(src.join(&f.path)).expect("a source file reads")))
        .collect();
    // Inline modules (`mod x { ... }`) are modules of the file they are written in; all
    // of them are known before any path is resolved.
    for (file, tokens) in files.iter().zip(&lexed) {
        inline_modules(file, tokens, &mut modules);
    }
    for (file, tokens) in files.iter().zip(&lexed) {
        let mut scanner = Scanner {
            file,
            modules: &modules,
            lib_name,
            refs: Vec::new(),
        };
        scanner.scan(tokens);
        for path in scanner.refs {
            if let Some((to, name)) = resolve(&modules, &path)
                && to != file.path
            {
                graph
                    .edges
                    .entry((file.path.clone(), to))
                    .or_default()
                    .insert(name);
            }
        }
    }
    graph
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<SourceFile>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .expect("a source folder reads")
        .map(|e| e.expect("a folder entry reads").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).expect("under the root");
            let rel = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>();
            let mut module: Vec<String> = rel.clone();
            let last = module.pop().expect("a file name");
            match last.as_str() {
                "lib.rs" | "main.rs" | "mod.rs" => {}
                other => module.push(other.trim_end_matches(".rs").to_string()),
            }
            if last == "main.rs" && module.is_empty() {
                module.push("<bin>".to_string());
            }
            out.push(SourceFile {
                path: rel.join("/"),
                module,
            });
        }
    }
}

/// The file of the longest module prefix of `path`, and the name past it.
fn resolve(modules: &BTreeMap<Vec<String>, String>, path: &[String]) -> Option<(String, String)> {
    for len in (0..=path.len()).rev() {
        if let Some(file) = modules.get(&path[..len]) {
            let name = path
                .get(len)
                .cloned()
                .unwrap_or_else(|| path.last().cloned().unwrap_or_else(|| "crate".into()));
            return Some((file.clone(), name));
        }
    }
    None
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
    /// A string literal (`"…"`, `b"…"`, `r#"…"#`): its text between the quotes as
    /// written (escapes kept), and its line.
    Str(String, usize),
}

/// Tokens of Rust source with comments, strings, chars and numbers dropped.
fn lex(src: &str) -> Vec<Tok> {
    lex_with_strings(src)
        .into_iter()
        .filter(|t| !matches!(t, Tok::Str(..)))
        .collect()
}

/// Tokens of Rust source with comments, chars and numbers dropped; strings kept.
fn lex_with_strings(src: &str) -> Vec<Tok> {
    let s: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    // The line of position `at`, counted on from the last position asked (they grow).
    let (mut counted, mut lines) = (0, 1);
    let mut line = |at: usize| {
        lines += s[counted..at].iter().filter(|c| **c == '\n').count();
        counted = at;
        lines
    };
    while i < s.len() {
        let c = s[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && s.get(i + 1) == Some(&'/') {
            while i < s.len() && s[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && s.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < s.len() {
                if s[i] == '/' && s.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if let Some(end) = raw_string_end(&s, i) {
            let open = i + s[i..].iter().position(|c| *c == '"').unwrap_or(0) + 1;
            let hashes = s[i..open].iter().filter(|c| **c == '#').count();
            let close = end.saturating_sub(1 + hashes).max(open);
            out.push(Tok::Str(s[open..close].iter().collect(), line(i)));
            i = end;
        } else if c == '"' || (c == 'b' && s.get(i + 1) == Some(&'"')) {
            let start = i;
            i += if c == 'b' { 2 } else { 1 };
            let open = i;
            while i < s.len() && s[i] != '"' {
                i += if s[i] == '\\' { 2 } else { 1 };
            }
            let text = s[open..i.min(s.len())].iter().collect();
            out.push(Tok::Str(text, line(start)));
            i += 1;
        } else if c == '\'' || (c == 'b' && s.get(i + 1) == Some(&'\'')) {
            let start = if c == 'b' { i + 1 } else { i };
            // A char literal closes within a few characters; a lifetime does not.
            if s.get(start + 1) == Some(&'\\') {
                let mut j = start + 2;
                while j < s.len() && s[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
            } else if s.get(start + 2) == Some(&'\'') {
                i = start + 3;
            } else {
                i = start + 1;
                while i < s.len() && (s[i].is_alphanumeric() || s[i] == '_') {
                    i += 1;
                }
            }
        } else if c.is_ascii_digit() {
            while i < s.len() && (s[i].is_alphanumeric() || s[i] == '_' || s[i] == '.') {
                if s[i] == '.' && s.get(i + 1) == Some(&'.') {
                    break;
                }
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' || c == '$' {
            let start = i;
            i += 1;
            while i < s.len() && (s[i].is_alphanumeric() || s[i] == '_') {
                i += 1;
            }
            let word: String = s[start..i].iter().collect();
            let word = word.strip_prefix("r#").map(str::to_string).unwrap_or(word);
            out.push(Tok::Ident(if word == "$crate" {
                "crate".to_string()
            } else {
                word
            }));
        } else if c == ':' && s.get(i + 1) == Some(&':') {
            out.push(Tok::Path);
            i += 2;
        } else {
            out.push(Tok::Punct(c));
            i += 1;
        }
    }
    out
}

/// Where a raw string (`r"…"`, `r#"…"#`, `br"…"`) starting at `i` ends, if one does.
fn raw_string_end(s: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if s.get(j) == Some(&'b') {
        j += 1;
    }
    if s.get(j) != Some(&'r') {
        return None;
    }
    if j > 0 && i == j && (s[j - 1].is_alphanumeric() || s[j - 1] == '_') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while s.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if s.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < s.len() {
        if s[j] == '"' && (0..hashes).all(|k| s.get(j + 1 + k) == Some(&'#')) {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(s.len())
}

struct Scope {
    module: Vec<String>,
    depth: usize,
    aliases: BTreeMap<String, Vec<String>>,
    test: bool,
}

struct Scanner<'a> {
    file: &'a SourceFile,
    modules: &'a BTreeMap<Vec<String>, String>,
    lib_name: Option<&'a str>,
    refs: Vec<Vec<String>>,
}

const KEYWORDS_BEFORE_ITEM: &[&str] = &["pub", "crate", "in", "self", "super", "unsafe", "async"];

impl Scanner<'_> {
    fn scan(&mut self, toks: &[Tok]) {
        // The names each scope's `use` items bind are known before any path is read, as
        // Rust resolves them regardless of order.
        let aliases = self.collect_aliases(toks);
        let mut scopes = vec![Scope {
            module: self.file.module.clone(),
            depth: 0,
            aliases: aliases.get(&self.file.module).cloned().unwrap_or_default(),
            test: false,
        }];
        let mut depth = 0usize;
        let mut cfg_test = false;
        let mut skip_until_depth: Option<usize> = None;
        let mut i = 0;
        while i < toks.len() {
            let tok = &toks[i];
            if let Some(d) = skip_until_depth {
                match tok {
                    Tok::Punct('{') => depth += 1,
                    Tok::Punct('}') => {
                        depth -= 1;
                        if depth == d {
                            skip_until_depth = None;
                        }
                    }
                    Tok::Punct(';') if depth == d => skip_until_depth = None,
                    _ => {}
                }
                i += 1;
                continue;
            }
            if is_cfg_test(toks, i) {
                cfg_test = true;
                i += 7;
                continue;
            }
            match tok {
                Tok::Punct('{') => {
                    depth += 1;
                    i += 1;
                }
                Tok::Punct('}') => {
                    depth -= 1;
                    if scopes.len() > 1 && scopes.last().is_some_and(|s| s.depth == depth) {
                        scopes.pop();
                    }
                    i += 1;
                }
                Tok::Punct('#') => {
                    // Other attributes: skip to their closing bracket.
                    i = skip_attribute(toks, i);
                }
                Tok::Ident(w) if w == "mod" => {
                    let name = ident(toks, i + 1).unwrap_or_default();
                    if toks.get(i + 2) == Some(&Tok::Punct('{')) {
                        let parent = scopes.last().expect("a scope");
                        let mut module = parent.module.clone();
                        module.push(name);
                        let key = module.clone();
                        scopes.push(Scope {
                            module,
                            depth,
                            aliases: aliases.get(&key).cloned().unwrap_or_default(),
                            test: parent.test || cfg_test,
                        });
                        depth += 1;
                        i += 3;
                    } else {
                        i += 2;
                    }
                    cfg_test = false;
                }
                Tok::Ident(w) if w == "use" => {
                    let end = find(toks, i, Tok::Punct(';'));
                    let test = scopes.last().expect("a scope").test || cfg_test;
                    if !test {
                        let scope = scopes.last().expect("a scope");
                        let mut leaves = Vec::new();
                        use_tree(&toks[i + 1..end], &mut Vec::new(), &mut leaves);
                        for (path, _) in leaves {
                            if let Some(p) = self.absolute(scope, &path) {
                                self.refs.push(p);
                            }
                        }
                    }
                    cfg_test = false;
                    i = end + 1;
                }
                Tok::Ident(w) if cfg_test && !KEYWORDS_BEFORE_ITEM.contains(&w.as_str()) => {
                    // A test-only item other than a module or a use: skip its body.
                    cfg_test = false;
                    skip_until_depth = Some(depth);
                    i += 1;
                }
                Tok::Ident(w) => {
                    let starts_path =
                        toks.get(i + 1) == Some(&Tok::Path) && (i == 0 || toks[i - 1] != Tok::Path);
                    let scope = scopes.last().expect("a scope");
                    if starts_path && !scope.test && !matches!(w.as_str(), "mod" | "use") {
                        let mut path = vec![w.clone()];
                        let mut j = i + 1;
                        while toks.get(j) == Some(&Tok::Path) {
                            match toks.get(j + 1) {
                                Some(Tok::Ident(next)) => {
                                    path.push(next.clone());
                                    j += 2;
                                }
                                _ => break,
                            }
                        }
                        if let Some(p) = self.absolute(scope, &path) {
                            self.refs.push(p);
                        }
                        i = j;
                    } else {
                        i += 1;
                    }
                }
                _ => i += 1,
            }
        }
    }

    /// The names each module scope of this file brings in with `use`.
    fn collect_aliases(
        &self,
        toks: &[Tok],
    ) -> BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> {
        let mut out: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        let (paths, at) = module_paths(&self.file.module, toks);
        let mut i = 0;
        while i < toks.len() {
            if toks[i] == Tok::Ident("use".into()) {
                let end = find(toks, i, Tok::Punct(';'));
                let mut leaves = Vec::new();
                use_tree(&toks[i + 1..end], &mut Vec::new(), &mut leaves);
                let module = paths[at[i]].clone();
                let scope = Scope {
                    module: module.clone(),
                    depth: 0,
                    aliases: BTreeMap::new(),
                    test: false,
                };
                for (path, alias) in leaves {
                    if let (Some(alias), Some(abs)) = (alias, self.absolute(&scope, &path)) {
                        out.entry(module.clone()).or_default().insert(alias, abs);
                    }
                }
                i = end;
            }
            i += 1;
        }
        out
    }

    /// `path` as written in `scope`, made absolute; `None` for other crates.
    fn absolute(&self, scope: &Scope, path: &[String]) -> Option<Vec<String>> {
        let first = path.first()?;
        let rest = &path[1..];
        let mut base: Vec<String> = match first.as_str() {
            "crate" if self.file.path == "main.rs" => vec!["<bin>".into()],
            "crate" => Vec::new(),
            "self" => scope.module.clone(),
            "super" => {
                let mut m = scope.module.clone();
                m.pop();
                let mut k = 0;
                while rest.get(k).is_some_and(|s| s == "super") {
                    m.pop();
                    k += 1;
                }
                m.extend(rest[k..].iter().cloned());
                return Some(m);
            }
            name if Some(name) == self.lib_name => Vec::new(),
            name => {
                if let Some(target) = scope.aliases.get(name) {
                    target.clone()
                } else {
                    let mut child = scope.module.clone();
                    child.push(name.to_string());
                    if self.modules.contains_key(&child) {
                        child
                    } else {
                        return None;
                    }
                }
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }
}

fn inline_modules(file: &SourceFile, toks: &[Tok], modules: &mut BTreeMap<Vec<String>, String>) {
    let (paths, _) = module_paths(&file.module, toks);
    for module in paths.into_iter().skip(1) {
        modules.entry(module).or_insert_with(|| file.path.clone());
    }
}

/// The modules of a file (its own first, then each inline `mod x { ... }`), and for
/// each token the index of the module it is in.
fn module_paths(file_module: &[String], toks: &[Tok]) -> (Vec<Vec<String>>, Vec<usize>) {
    let mut paths = vec![file_module.to_vec()];
    let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
    let mut depth = 0;
    let mut at = Vec::with_capacity(toks.len());
    for (i, tok) in toks.iter().enumerate() {
        match tok {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth -= 1;
                if stack.len() > 1 && stack.last().is_some_and(|s| s.1 == depth) {
                    stack.pop();
                }
            }
            Tok::Ident(w) if w == "mod" && toks.get(i + 2) == Some(&Tok::Punct('{')) => {
                let mut module = paths[stack.last().expect("a scope").0].clone();
                module.push(ident(toks, i + 1).unwrap_or_default());
                paths.push(module);
                stack.push((paths.len() - 1, depth));
            }
            _ => {}
        }
        at.push(stack.last().expect("a scope").0);
    }
    (paths, at)
}

fn ident(toks: &[Tok], i: usize) -> Option<String> {
    match toks.get(i) {
        Some(Tok::Ident(w)) => Some(w.clone()),
        _ => None,
    }
}

fn find(toks: &[Tok], from: usize, what: Tok) -> usize {
    (from..toks.len())
        .find(|&j| toks[j] == what)
        .unwrap_or(toks.len())
}

fn is_cfg_test(toks: &[Tok], i: usize) -> bool {
    let want = [
        Tok::Punct('#'),
        Tok::Punct('['),
        Tok::Ident("cfg".into()),
        Tok::Punct('('),
        Tok::Ident("test".into()),
        Tok::Punct(')'),
        Tok::Punct(']'),
    ];
    toks.get(i..i + 7) == Some(&want[..])
}

fn skip_attribute(toks: &[Tok], i: usize) -> usize {
    let mut j = i + 1;
    if toks.get(j) == Some(&Tok::Punct('!')) {
        j += 1;
    }
    if toks.get(j) != Some(&Tok::Punct('[')) {
        return i + 1;
    }
    let mut depth = 0;
    while j < toks.len() {
        match toks[j] {
            Tok::Punct('[') => depth += 1,
            Tok::Punct(']') => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    j
}

/// The leaves of a use tree: each full path and the name it binds (`None` for a glob).
fn use_tree(toks: &[Tok], prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
    let mut i = 0;
    let base = prefix.len();
    // Leading `::` (2015 style) or visibility tokens are not part of the path.
    while i < toks.len() {
        match &toks[i] {
            Tok::Ident(w) => {
                prefix.push(w.clone());
                i += 1;
                if toks.get(i) == Some(&Tok::Path) {
                    i += 1;
                    continue;
                }
                if toks.get(i) == Some(&Tok::Ident("as".into())) {
                    let alias = ident(toks, i + 1).filter(|a| a != "_");
                    let mut path = prefix.clone();
                    if path.last().is_some_and(|s| s == "self") {
                        path.pop();
                    }
                    out.push((path, alias));
                    i += 2;
                } else {
                    let mut path = prefix.clone();
                    if path.last().is_some_and(|s| s == "self") {
                        path.pop();
                    }
                    let alias = path.last().cloned();
                    out.push((path, alias));
                }
                prefix.truncate(base);
                if toks.get(i) == Some(&Tok::Punct(',')) {
                    i += 1;
                }
            }
            Tok::Punct('*') => {
                out.push((prefix.clone(), None));
                prefix.truncate(base);
                i += 1;
                if toks.get(i) == Some(&Tok::Punct(',')) {
                    i += 1;
                }
            }
            Tok::Punct('{') => {
                let mut depth = 0;
                let mut j = i;
                while j < toks.len() {
                    match toks[j] {
                        Tok::Punct('{') => depth += 1,
                        Tok::Punct('}') => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                // Split the group at its top-level commas.
                let inner = &toks[i + 1..j.min(toks.len())];
                let mut start = 0;
                let mut d = 0;
                for (k, t) in inner.iter().enumerate() {
                    match t {
                        Tok::Punct('{') => d += 1,
                        Tok::Punct('}') => d -= 1,
                        Tok::Punct(',') if d == 0 => {
                            use_tree(&inner[start..k], prefix, out);
                            start = k + 1;
                        }
                        _ => {}
                    }
                }
                if start < inner.len() {
                    use_tree(&inner[start..], prefix, out);
                }
                prefix.truncate(base);
                i = j + 1;
                if toks.get(i) == Some(&Tok::Punct(',')) {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    prefix.truncate(base);
}

/// The strongly connected components of more than one file (import circles).
pub fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    let names: Vec<&String> = graph.files.iter().map(|f| &f.path).collect();
    let index: BTreeMap<&String, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let mut adj = vec![Vec::new(); names.len()];
    for (from, to) in graph.edges.keys() {
        if let (Some(&a), Some(&b)) = (index.get(from), index.get(to)) {
            adj[a].push(b);
        }
    }
    // Tarjan's algorithm, iteratively.
    let n = names.len();
    let mut idx = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on = vec![false; n];
    let mut stack = Vec::new();
    let mut next = 0;
    let mut out = Vec::new();
    for root in 0..n {
        if idx[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut k)) = work.last_mut() {
            if *k == 0 && idx[v] == usize::MAX {
                idx[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on[v] = true;
            }
            if let Some(&w) = adj[v].get(*k) {
                *k += 1;
                if idx[w] == usize::MAX {
                    work.push((w, 0));
                } else if on[w] {
                    low[v] = low[v].min(idx[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == idx[v] {
                let mut comp = Vec::new();
                loop {
                    let w = stack.pop().expect("on the stack");
                    on[w] = false;
                    comp.push(names[w].clone());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    out.push(comp);
                }
            }
        }
    }
    out.sort();
    out
}

/// The store calls in Rust source `src` (comments and strings skipped): the platform's
/// key-value and blob calls through the call context (`cx.p.get(…)`, `cx.p.scan(…)`,
/// `cx.p.put_blob(…)` …) and the context's record helpers (`cx.load(…)`, `cx.save(…)`).
pub fn store_calls(src: &str) -> usize {
    const PLATFORM: &[&str] = &[
        "get",
        "put",
        "delete",
        "scan",
        "put_blob",
        "keep_staged",
        "get_blob",
        "delete_blob",
    ];
    const CONTEXT: &[&str] = &["load", "save"];
    let toks = lex(src);
    let word = |i: usize, w: &[&str]| matches!(toks.get(i), Some(Tok::Ident(x)) if w.contains(&x.as_str()));
    let dot = |i: usize| toks.get(i) == Some(&Tok::Punct('.'));
    (0..toks.len())
        .filter(|&i| word(i, &["cx"]) && dot(i + 1))
        .filter(|&i| {
            word(i + 2, CONTEXT) || (word(i + 2, &["p"]) && dot(i + 3) && word(i + 4, PLATFORM))
        })
        .count()
}

/// The status references in Rust source `src` (comments and strings skipped): a name
/// ending in `Status` followed by `::` (`Status::Sent`, `document::Status::Draft`,
/// `RecipientStatus::Added`, `UploadStatus::Ready`), each counted once.
pub fn status_refs(src: &str) -> usize {
    let toks = lex(src);
    toks.windows(2)
        .filter(|w| matches!(&w[0], Tok::Ident(x) if x.ends_with("Status")) && w[1] == Tok::Path)
        .count()
}

/// The HTTP names in Rust source `src` (comments, strings and items under
/// `#[cfg(test)]` skipped): each `Request` (a request), `Fields` (its decoded body),
/// `Response` (an answer) and `query_param` (a query's reader) named, counted once.
pub fn http_names(src: &str) -> usize {
    const NAMES: &[&str] = &["Request", "Fields", "Response", "query_param"];
    let toks = lex(src);
    let mut n = 0;
    let mut i = 0;
    while i < toks.len() {
        if is_cfg_test(&toks, i) {
            i = item_end(&toks, i + 7);
            continue;
        }
        if matches!(&toks[i], Tok::Ident(x) if NAMES.contains(&x.as_str())) {
            n += 1;
        }
        i += 1;
    }
    n
}

/// A string literal of Rust source, outside test code.
#[derive(Debug, Clone, PartialEq)]
pub struct Literal {
    /// Its text between the quotes, as written (escapes kept; `b"…"` and raw strings too).
    pub text: String,
    pub line: usize,
    /// Whether it is passed on as a value: an argument or an array element (the token
    /// before it is `(`, `[` or `,` and the one after `,` or `)`), not a map key
    /// (`{"doc": …}`), an index (`v["doc"]`) or a match pattern.
    pub passed: bool,
}

/// The string literals of Rust source `src`, skipping comments and items under
/// `#[cfg(test)]` (a test module, a test helper), by the lexer the import graph uses.
pub fn string_literals(src: &str) -> Vec<Literal> {
    let toks = lex_with_strings(src);
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if is_cfg_test(&toks, i) {
            i = item_end(&toks, i + 7);
            continue;
        }
        if let Tok::Str(text, line) = &toks[i] {
            let before = i.checked_sub(1).map(|j| &toks[j]);
            let passed = matches!(before, Some(Tok::Punct('(' | '[' | ',')))
                && matches!(toks.get(i + 1), Some(Tok::Punct(',' | ')')));
            out.push(Literal {
                text: text.clone(),
                line: *line,
                passed,
            });
        }
        i += 1;
    }
    out
}

/// The index just past the item that starts at `i`: its `;`, or the `}` that closes
/// its body.
fn item_end(toks: &[Tok], mut i: usize) -> usize {
    let (mut braces, mut nested) = (0usize, 0usize);
    while i < toks.len() {
        match toks[i] {
            Tok::Punct('(' | '[') => nested += 1,
            Tok::Punct(')' | ']') => nested = nested.saturating_sub(1),
            Tok::Punct('{') => braces += 1,
            Tok::Punct('}') => {
                braces = braces.saturating_sub(1);
                if braces == 0 {
                    return i + 1;
                }
            }
            Tok::Punct(';') if braces == 0 && nested == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_string_literals_outside_tests() {
        let src = "fn f() { key(&[\"doc\", id]); let m = json!({\"doc\": 1}); v[\"doc\"];\n\
                   // \"in/a/comment\"\n\
                   g(b\"dlog/\", r#\"raw \"x\" /\"#); let c = '\"'; }\n\
                   #[cfg(test)]\nmod tests { fn t() { key(&[\"doc\", x]); } }\n\
                   #[cfg(test)]\nfn helper(a: [u8; 2]) { \"dx/\"; }\nconst Y: &str = \"fold/x\";";
        let found: Vec<(String, usize, bool)> = string_literals(src)
            .into_iter()
            .map(|l| (l.text, l.line, l.passed))
            .collect();
        let want = [
            ("doc", 1, true),
            ("doc", 1, false),
            ("doc", 1, false),
            ("dlog/", 3, true),
            ("raw \"x\" /", 3, true),
            ("fold/x", 8, false),
        ];
        let want: Vec<(String, usize, bool)> = want
            .iter()
            .map(|(t, l, p)| (t.to_string(), *l, *p))
            .collect();
        assert_eq!(found, want);
    }

    #[test]
    fn counts_store_calls_outside_comments_and_strings() {
        let src = "fn f(cx: &mut Cx) {\n  let d: Doc = cx.load(&k)?; cx.save(&k, &d);\n\
                   cx.p.get(&k); cx\n    .p\n    .scan(a, b, 1, false); cx.p.now_ms();\n\
                   // cx.p.put(&k, b\"\");\n  let s = \"cx.load(x)\"; other.load(); cx.now();\n}";
        assert_eq!(store_calls(src), 4);
    }

    #[test]
    fn counts_http_names_outside_tests_comments_and_strings() {
        let src = "use crate::base::api::{Request, Response};\n\
                   fn f(req: &Request, f: &Fields) -> Option<Response> { req.query_param(\"x\"); None }\n\
                   // Request, Fields\n\
                   struct AuthRequest; type PageFields = (); let s = \"Response\";\n\
                   #[cfg(test)]\nmod tests { fn t(r: Request) -> Response { todo!() } }\n\
                   #[cfg(test)]\nfn helper(f: Fields) {}";
        assert_eq!(http_names(src), 6);
    }

    fn paths(src: &str, module: &[&str]) -> Vec<Vec<String>> {
        let file = SourceFile {
            path: "x.rs".into(),
            module: module.iter().map(|s| s.to_string()).collect(),
        };
        let mut modules = BTreeMap::new();
        modules.insert(vec!["a".to_string()], "a.rs".to_string());
        modules.insert(vec!["a".to_string(), "b".to_string()], "a/b.rs".to_string());
        let mut s = Scanner {
            file: &file,
            modules: &modules,
            lib_name: None,
            refs: Vec::new(),
        };
        s.scan(&lex(src));
        s.refs
    }

    fn p(s: &str) -> Vec<String> {
        s.split("::")
            .filter(|x| !x.is_empty())
            .map(String::from)
            .collect()
    }

    #[test]
    fn reads_use_trees_inline_paths_and_aliases() {
        let refs = paths(
            "use crate::a::{self, b::{C, d as e}}; use super::*;\n\
             fn f() { let s = \"crate::z::y\"; a::g(); e::h(); crate::q::r(); b::x(); }",
            &["a", "b"],
        );
        assert!(refs.contains(&p("a")));
        assert!(refs.contains(&p("a::b::C")));
        assert!(refs.contains(&p("a::b::d")));
        assert!(refs.contains(&p("a")), "a glob of super");
        assert!(refs.contains(&p("a::g")));
        assert!(refs.contains(&p("a::b::d::h")), "through the alias e");
        assert!(refs.contains(&p("q::r")));
        assert!(
            !refs.iter().any(|r| r.first().is_some_and(|s| s == "z")),
            "not in strings"
        );
    }

    #[test]
    fn skips_test_items_and_comments() {
        let refs = paths(
            "// use crate::a;\n/* crate::a::x */\n#[cfg(test)]\nmod tests { use crate::a; fn t() { crate::a::x(); } }\n\
             #[cfg(test)] fn helper() { crate::a::y(); }\nfn real<'a>(c: char) -> bool { c == '{' && crate::a::b::z() }",
            &[],
        );
        assert_eq!(refs, vec![p("a::b::z")]);
    }

    #[test]
    fn finds_circles() {
        let mut g = Graph::default();
        for n in ["a", "b", "c", "d"] {
            g.files.push(SourceFile {
                path: n.into(),
                module: vec![n.into()],
            });
        }
        for (x, y) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
            g.edges.insert((x.into(), y.into()), BTreeSet::new());
        }
        assert_eq!(
            cycles(&g),
            vec![vec!["a".to_string(), "b".into(), "c".into()]]
        );
    }
}
