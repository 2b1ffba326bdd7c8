//! Outbound HTTPS: the one client the host uses to reach other servers (file downloads
//! now, webhook deliveries later). It verifies TLS against the system roots plus an
//! optional extra CA, never follows redirects, and refuses targets that resolve to
//! loopback, private, link-local or otherwise internal addresses unless told to allow
//! them (tests, private deployments).

use anyhow::Context;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How outbound requests behave; fixed for the process.
#[derive(Clone, Debug, Default)]
pub struct OutboundConfig {
    /// An extra PEM CA certificate trusted beside the system roots.
    pub ca_file: Option<std::path::PathBuf>,
    /// Allow targets on loopback, private and link-local addresses.
    pub allow_private: bool,
}

/// Whether `ip` is an address a public HTTPS target may have: not loopback, private,
/// link-local, unspecified, multicast, documentation, shared (CGNAT) or benchmarking
/// space, nor an IPv6 unique-local or local-use NAT64 address, nor one that embeds an
/// internal IPv4 address (mapped, compatible, translated, NAT64, 6to4).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64) // 100.64.0.0/10
                || (o[0] == 198 && (o[1] & 0xfe) == 18) // 198.18.0.0/15
                || o[0] >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let seg = v6.segments();
            let o = v6.octets();
            let embedded =
                |a: usize| IpAddr::V4(std::net::Ipv4Addr::new(o[a], o[a + 1], o[a + 2], o[a + 3]));
            // Forms that carry an IPv4 address: IPv4-compatible (::a.b.c.d),
            // IPv4-translated (::ffff:0:a.b.c.d, RFC 2765), NAT64 (64:ff9b::/96) and
            // 6to4 (2002::/16) must be judged by that address.
            if seg[..6] == [0; 6] && !v6.is_loopback() && !v6.is_unspecified() {
                return is_public(embedded(12));
            }
            if seg[..4] == [0; 4] && seg[4] == 0xffff && seg[5] == 0 {
                return is_public(embedded(12));
            }
            // Local-use NAT64 (64:ff9b:1::/48, RFC 8215) translates into a network of
            // the operator's own, wherever in the address it puts the IPv4 one.
            if seg[0] == 0x64 && seg[1] == 0xff9b && seg[2] == 1 {
                return false;
            }
            if seg[0] == 0x64 && seg[1] == 0xff9b && seg[2..6] == [0; 4] {
                return is_public(embedded(12));
            }
            if seg[0] == 0x2002 {
                return is_public(embedded(2));
            }
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (seg[0] & 0xfe00) == 0xfc00 // unique local
                || (seg[0] & 0xffc0) == 0xfe80 // link-local
                || (seg[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
                || seg[0] == 0x2001 && seg[1] == 0x0db8) // documentation
        }
    }
}

/// A DNS resolver that drops internal addresses (unless allowed).
struct GuardedResolver {
    allow_private: bool,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow_private = self.allow_private;
        Box::pin(async move {
            let host = name.as_str().to_string();
            // A name that does not resolve and one that resolves only to internal
            // addresses get the same answer: a caller learns nothing of the network.
            let refused = || format!("{host} does not resolve to a public address").into();
            let addrs: Vec<SocketAddr> = match tokio::net::lookup_host((host.as_str(), 0)).await {
                Ok(found) => found
                    .filter(|a| allow_private || is_public(a.ip()))
                    .collect(),
                Err(_) => Vec::new(),
            };
            if addrs.is_empty() {
                return Err(refused());
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The outbound client.
#[derive(Clone)]
pub struct Outbound {
    client: reqwest::Client,
    allow_private: bool,
}

impl Outbound {
    /// Builds the client. `timeout` bounds each whole request.
    pub fn new(config: &OutboundConfig, timeout: Duration) -> anyhow::Result<Outbound> {
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .https_only(true)
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .user_agent(concat!("esign/", env!("CARGO_PKG_VERSION")))
            // Never through a proxy from the environment (HTTPS_PROXY, ALL_PROXY): a
            // proxy resolves the name itself, past the address check below.
            .no_proxy()
            .dns_resolver(Arc::new(GuardedResolver {
                allow_private: config.allow_private,
            }));
        if let Some(path) = &config.ca_file {
            builder = builder.add_root_certificate(read_ca(path)?);
        }
        Ok(Outbound {
            client: builder.build()?,
            allow_private: config.allow_private,
        })
    }

    /// Checks a URL before use: `https://`, a host, and no internal IP literal.
    pub fn check_url(&self, url: &str) -> Result<reqwest::Url, String> {
        let parsed = reqwest::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
        if parsed.scheme() != "https" {
            return Err("only https:// URLs are fetched".into());
        }
        match parsed.host() {
            None => return Err("the URL has no host".into()),
            Some(url::Host::Ipv4(ip)) if !self.allow_private && !is_public(ip.into()) => {
                return Err(format!("{ip} is an internal address"));
            }
            Some(url::Host::Ipv6(ip)) if !self.allow_private && !is_public(ip.into()) => {
                return Err(format!("{ip} is an internal address"));
            }
            _ => {}
        }
        Ok(parsed)
    }

    /// Downloads `url` (at most `max_bytes`); the reason on failure is for a person.
    pub async fn download(&self, url: &str, max_bytes: usize) -> Result<Vec<u8>, String> {
        let parsed = self.check_url(url)?;
        let mut resp = self
            .client
            .get(parsed)
            .send()
            .await
            .map_err(|e| describe(&e))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(format!("the server answered {status}"));
        }
        if resp.content_length().is_some_and(|n| n > max_bytes as u64) {
            return Err(format!("the file is larger than {max_bytes} bytes"));
        }
        let mut out = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| describe(&e))? {
            if out.len() + chunk.len() > max_bytes {
                return Err(format!("the file is larger than {max_bytes} bytes"));
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }

    /// The underlying client (for deliveries that build their own requests).
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }
}

/// A reqwest error with its causes, for a person.
pub fn describe(e: &reqwest::Error) -> String {
    let mut text = if e.is_timeout() {
        "timed out".to_string()
    } else {
        e.to_string()
    };
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

fn read_ca(path: &Path) -> anyhow::Result<reqwest::Certificate> {
    let pem = std::fs::read(path)
        .with_context(|| format!("reading the CA certificate {}", path.display()))?;
    reqwest::Certificate::from_pem(&pem)
        .with_context(|| format!("parsing the CA certificate {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::dns::Resolve;

    /// What the guarded resolver answers for `host`: its error text, host replaced.
    async fn refusal(host: &str) -> String {
        let resolver = GuardedResolver {
            allow_private: false,
        };
        let name: reqwest::dns::Name = host.parse().unwrap();
        match resolver.resolve(name).await {
            Ok(_) => panic!("{host} resolved"),
            Err(e) => e.to_string().replace(host, "HOST"),
        }
    }

    #[tokio::test]
    async fn a_private_name_and_one_that_does_not_resolve_get_one_answer() {
        // `localhost` resolves (from /etc/hosts) to loopback only; a label longer than
        // DNS allows fails in the system resolver without a query.
        let private = refusal("localhost").await;
        let nowhere = refusal(&format!("{}.example", "a".repeat(64))).await;
        assert_eq!(private, "HOST does not resolve to a public address");
        assert_eq!(private, nowhere);
    }

    #[test]
    fn internal_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "fc00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "fec0::1",
            // Local-use NAT64 (RFC 8215) leads into a local network whatever it embeds.
            "64:ff9b:1::a00:1",
            "64:ff9b:1:5db8:d822::",
            "64:ff9b:1::5db8:d822",
            // IPv4-translated (RFC 2765) internal addresses.
            "::ffff:0:127.0.0.1",
            "::ffff:0:10.0.0.1",
            "::ffff:0:169.254.169.254",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700::1111",
            "64:ff9b::5db8:d822",
            "2002:5db8:d822::",
            "::ffff:0:93.184.216.34",
        ] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }
}
