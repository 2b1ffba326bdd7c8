//! SMS through an HTTP gateway (`--sms-gateway-url`, optional `--sms-gateway-token`):
//! `POST {"to": number, "text": message}` as JSON, with `Authorization: Bearer <token>`
//! when one is given. 2xx is delivered; 400, 404, 410 and 422 mean the number or the
//! message is refused for good (the recipient becomes hard-bounced); anything else,
//! including no answer within the timeout, is retried like mail. Redirects are not
//! followed. The gateway is the operator's own, so private addresses are allowed.

use crate::host_tables::mail::StoredMail;
use crate::mail::{Failure, Transport};
use std::time::Duration;

pub struct GatewayTransport {
    url: String,
    token: Option<String>,
    client: reqwest::Client,
    rt: tokio::runtime::Handle,
}

impl GatewayTransport {
    /// Must be called inside the tokio runtime the worker runs on. `extra_ca` (PEM) is
    /// trusted beside the system roots (`--outbound-ca-file`).
    pub fn new(
        url: &str,
        token: Option<String>,
        extra_ca: Option<&std::path::Path>,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let parsed =
            url::Url::parse(url).map_err(|e| anyhow::anyhow!("--sms-gateway-url {url:?}: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            anyhow::bail!("--sms-gateway-url must be an http:// or https:// URL");
        }
        let mut builder = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none());
        if let Some(path) = extra_ca {
            let pem = std::fs::read(path)
                .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
            builder = builder.add_root_certificate(reqwest::Certificate::from_pem(&pem)?);
        }
        let client = builder.build()?;
        Ok(GatewayTransport {
            url: url.to_string(),
            token,
            client,
            rt: tokio::runtime::Handle::current(),
        })
    }
}

impl Transport for GatewayTransport {
    /// Called from the worker's blocking thread, which may wait on the runtime.
    fn send(&self, sms: &StoredMail) -> Result<(), Failure> {
        let mut req = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .body(serde_json::json!({"to": sms.to, "text": sms.body}).to_string());
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let resp = self
            .rt
            .block_on(req.send())
            .map_err(|e| Failure::Transient(anyhow::anyhow!("SMS gateway: {e}")))?;
        let status = resp.status().as_u16();
        match status {
            200..=299 => Ok(()),
            400 | 404 | 410 | 422 => Err(Failure::Permanent(format!(
                "the SMS gateway refused the message ({status})"
            ))),
            _ => Err(Failure::Transient(anyhow::anyhow!(
                "the SMS gateway answered {status}"
            ))),
        }
    }
}
