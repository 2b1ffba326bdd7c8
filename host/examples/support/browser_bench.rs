//! What the browser benchmarks (`signing_bench`, `app_bench`) share: the `common` module
//! the tests' browser harness (`tests/common/browser.rs`) asks for, and a sign-in.

#[path = "../../../tests/common/process.rs"]
#[allow(dead_code)]
mod process;

pub use process::{TempDir, succeeds};
use serde_json::{Value, json};

pub fn fresh_dir(tag: &str) -> TempDir {
    TempDir::create(std::env::temp_dir().join(format!(
        "esign-bench-{tag}-{}-{}",
        std::process::id(),
        esign_host::ids::random_id()
    )))
}

/// An access token for `email` and `password` (`POST /v1/auth`).
pub fn token(
    http: &reqwest::blocking::Client,
    base: &str,
    email: &str,
    password: &str,
) -> anyhow::Result<String> {
    let answer: Value = http
        .post(format!("{base}/v1/auth"))
        .json(&json!({"email": email, "password": password}))
        .send()?
        .json()?;
    let token = answer["access_token"].as_str();
    Ok(token
        .ok_or_else(|| anyhow::anyhow!("no token: {answer}"))?
        .to_string())
}
