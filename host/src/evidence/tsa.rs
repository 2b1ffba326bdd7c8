//! The RFC 3161 client: a `TimeStampReq` over HTTP POST (`application/timestamp-query`)
//! to the operator's `--tsa-url`, the token out of the answer.
//!
//! The URL is the operator's own configuration, so unlike user-given URLs it may be
//! plain HTTP and on an internal address (most public authorities serve `http://`; the
//! token is signed, so the transport adds nothing).

use super::cms;
use anyhow::{Context, bail};
use std::time::Duration;

/// A time stamping authority.
pub struct Tsa {
    url: String,
    client: reqwest::Client,
}

impl Tsa {
    pub fn new(url: &str, timeout: Duration) -> anyhow::Result<Tsa> {
        let parsed = reqwest::Url::parse(url).context("--tsa-url is not a URL")?;
        if !matches!(parsed.scheme(), "http" | "https") {
            bail!("--tsa-url must be an http:// or https:// URL");
        }
        let client = reqwest::Client::builder()
            .use_rustls_tls()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .user_agent(concat!("esign/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Tsa {
            url: url.to_string(),
            client,
        })
    }

    /// A timestamp token over `data` (the signature value) and its time (ms since the
    /// epoch). An error says why the authority's answer is not usable.
    pub async fn stamp(&self, data: &[u8]) -> anyhow::Result<(Vec<u8>, u64)> {
        let nonce = u64::from_be_bytes(rand_bytes());
        let body = cms::timestamp_request(data, nonce);
        let resp = self
            .client
            .post(&self.url)
            .header("content-type", "application/timestamp-query")
            .body(body)
            .send()
            .await
            .with_context(|| format!("no answer from {}", self.url))?;
        let status = resp.status();
        if !status.is_success() {
            bail!("{} answered {status}", self.url);
        }
        let bytes = resp
            .bytes()
            .await
            .context("reading the authority's answer")?;
        cms::timestamp_token(&bytes, data, nonce)
    }
}

fn rand_bytes() -> [u8; 8] {
    let mut b = [0u8; 8];
    let _ = getrandom::fill(&mut b);
    b
}
