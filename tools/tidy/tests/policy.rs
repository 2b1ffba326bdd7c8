//! The engine owns its policy defaults (issue 49 item 5): token and login lifetimes, the
//! login lock, token spacing, upload and OAuth token lifetimes are set once, in
//! `engine/src/base/policy.rs`; the WIT `settings` carries them as options, and a host
//! passes only what its operator overrides. This rule finds a default copied back into
//! a host: the policy figures written as literals in the hosts' sources.
//!
//! `ESIGN_TIDY_ROOT=/path/to/checkout cargo test -p esign-tidy` checks another checkout.

use esign_tidy::shrinking::root;
use std::path::Path;

/// The hosts' sources (the native host, the wasi-http composition, Node, Workers,
/// Python), relative to the checkout.
const HOSTS: &[&str] = &[
    "host/src",
    "hosts/wasi-http/adapter",
    "hosts/wasi-http/store/src",
    "hosts/js/host.mjs",
    "hosts/workers/src",
    "hosts/python/host.py",
];

/// The engine's defaults as a host would write them: 60 days of seconds, 48 hours of
/// seconds (Rust, JS BigInt and esbuild's forms).
const FIGURES: &[&str] = &[
    "5_184_000",
    "5184000",
    "5184e3",
    "48 * 3600",
    "48n * 3600n",
    "172_800",
    "172800",
];

fn sources(path: &Path, out: &mut Vec<(String, String)>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).expect("a source folder") {
            sources(&entry.expect("a folder entry").path(), out);
        }
    } else if path
        .extension()
        .is_some_and(|e| e == "rs" || e == "mjs" || e == "js" || e == "py")
    {
        let text = std::fs::read_to_string(path).expect("a source file reads");
        out.push((path.display().to_string(), text));
    }
}

fn problems(files: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, text) in files {
        for figure in FIGURES {
            if text.contains(figure) {
                out.push(format!(
                    "{path}: `{figure}` is an engine default (engine/src/base/policy.rs): \
                     pass the operator's override or none"
                ));
            }
        }
    }
    out
}

#[test]
fn no_host_copies_a_policy_default() {
    let mut files = Vec::new();
    for dir in HOSTS {
        let path = root().join(dir);
        assert!(path.exists(), "{dir} is gone: update HOSTS");
        sources(&path, &mut files);
    }
    let wrong = problems(&files);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_engine_holds_the_defaults() {
    let policy = std::fs::read_to_string(root().join("engine/src/base/policy.rs")).unwrap();
    for name in [
        "TOKEN_TTL_SECS",
        "LOGIN_MAX_FAILURES",
        "LOGIN_LOCK_SECS",
        "TOKEN_MIN_INTERVAL_MS",
        "UPLOAD_TTL_SECS",
        "OAUTH_ACCESS_TTL_SECS",
    ] {
        assert!(
            policy.contains(&format!("pub const {name}")),
            "{name} left engine/src/base/policy.rs"
        );
    }
}

#[test]
fn the_check_can_fail() {
    // Today's tree before the rule: the Workers host wrote the engine's token lifetime.
    let before = "tokenTtlSecs: BigInt(num(env, 'ESIGN_TOKEN_TTL_SECS', 5_184_000)),";
    let wrong = problems(&[("settings.mjs".into(), before.into())]);
    assert_eq!(wrong.len(), 1, "{wrong:#?}");
    assert!(wrong[0].starts_with("settings.mjs: `5_184_000`"));
    let after = "tokenTtlSecs: big(env, 'ESIGN_TOKEN_TTL_SECS'),";
    assert!(problems(&[("settings.mjs".into(), after.into())]).is_empty());
}
