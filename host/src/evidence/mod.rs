//! Evidence on this host: the key final PDFs are sealed with, the time stamping
//! authority, and the check of a PDF. The seal itself and the check are
//! `esign_formats::seal`, the same code the formats component runs; this module is its
//! [`SealHost`] here.
//!
//! - [`keys`]: the signing identity: given (`--signing-key`/`--signing-cert`, PEM, or
//!   `--signing-p12`) or generated at first start into `<data-dir>/signing/`.
//! - [`tsa`]: the RFC 3161 exchange with `--tsa-url`.
//!
//! The engine decides when a file is sealed and what it states; this module only signs
//! and checks bytes.

pub mod keys;
pub mod tsa;

use crate::bindings::PdfCheck;
use esign_formats::seal::cms::DigestSigner;
use esign_formats::seal::keys::LocalKey;
use esign_formats::seal::{self, SealHost};

/// Signs final PDFs: the identity, its certificate as served, and the optional TSA.
pub struct Sealer {
    key: LocalKey,
    chain_der: Vec<Vec<u8>>,
    /// The chain in PEM, signer first (served at `/v1/signing-certificate`).
    pub certificate_pem: String,
    /// Lower-case hex SHA-256 of the signer certificate's DER.
    pub certificate_sha256: String,
    /// The signer certificate's subject (RFC 4514).
    pub subject: String,
    tsa: Option<tsa::Tsa>,
}

impl Sealer {
    pub fn new(identity: keys::Identity, tsa: Option<tsa::Tsa>) -> anyhow::Result<Sealer> {
        let chain_der = identity.key.chain_der()?;
        let cert = identity
            .key
            .chain
            .first()
            .ok_or_else(|| anyhow::anyhow!("the signing certificate chain is empty"))?;
        Ok(Sealer {
            subject: cert.tbs_certificate.subject.to_string(),
            certificate_sha256: crate::ids::sha256_hex(&chain_der[0]),
            certificate_pem: identity.certificate_pem,
            key: identity.key,
            chain_der,
            tsa,
        })
    }

    /// Whether signatures are timestamped.
    pub fn has_tsa(&self) -> bool {
        self.tsa.is_some()
    }
}

/// The seal's key and authority on this host. The authority is asked from a blocking
/// thread inside the tokio runtime (the work runs on one).
impl SealHost for Sealer {
    fn certificates(&self) -> Result<Vec<Vec<u8>>, String> {
        Ok(self.chain_der.clone())
    }

    fn sign(&self, digest: &[u8; 32]) -> Result<Vec<u8>, String> {
        self.key.sign_digest(digest).map_err(|e| format!("{e:#}"))
    }

    fn timestamp(&self, request: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let Some(tsa) = &self.tsa else {
            return Ok(None);
        };
        let handle = tokio::runtime::Handle::current();
        handle
            .block_on(tsa.exchange(request))
            .map(Some)
            .map_err(|e| format!("{e:#}"))
    }
}

/// Checks the last signature of a PDF; `own_sha256` is this host's certificate.
pub fn check(pdf: &[u8], own_sha256: &str) -> PdfCheck {
    seal::check(pdf, own_sha256).into()
}
