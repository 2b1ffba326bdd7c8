//! The RFC 3161 exchange: a DER `TimeStampReq` over HTTP POST
//! (`application/timestamp-query`) to the operator's `--tsa-url`, and the DER
//! `TimeStampResp` it answers (built and read by `esign_formats::seal`).
//!
//! The URL is the operator's own configuration, so unlike user-given URLs it may be
//! plain HTTP and on an internal address (most public authorities serve `http://`; the
//! token is signed, so the transport adds nothing).

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

    /// Sends `request` and gives the authority's answer; an error when there is none.
    pub async fn exchange(&self, request: &[u8]) -> anyhow::Result<Vec<u8>> {
        let resp = self
            .client
            .post(&self.url)
            .header("content-type", "application/timestamp-query")
            .body(request.to_vec())
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
        Ok(bytes.to_vec())
    }
}
