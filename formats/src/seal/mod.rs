//! Seals: a final PDF signed as the service, a PAdES baseline signature (an incremental
//! update whose CMS signature covers the whole rendered file, `ETSI.CAdES.detached`),
//! timestamped per RFC 3161 when the host has a time stamping authority; and the check
//! of a PDF someone holds.
//!
//! - [`cms`]: the CMS SignedData and RFC 3161 requests and tokens;
//! - [`pades`]: the PDF side (incremental update, byte range) and the check of a file;
//! - [`keys`]: a host's key and certificate chain, from PEM or new.
//!
//! The key stays with the host: [`seal`] asks its [`SealHost`] for the certificate chain,
//! a signature over a digest, and the exchange with the authority. In the formats
//! component those are imports; the native host answers them itself.

pub mod cms;
pub mod keys;
pub mod pades;

use crate::digest::sha256_hex;
use anyhow::{Context, anyhow};
use cms::{DigestSigner, SignerRef};
use der::Decode;
pub use pades::{Metadata, PdfCheck};
use x509_cert::Certificate;

/// What a seal needs from its host.
pub trait SealHost {
    /// The certificate chain (DER), signer first.
    fn certificates(&self) -> Result<Vec<Vec<u8>>, String>;
    /// The DER ECDSA P-256 signature over a SHA-256 digest, deterministic (RFC 6979).
    fn sign(&self, digest: &[u8; 32]) -> Result<Vec<u8>, String>;
    /// Sends a DER TimeStampReq to the host's time stamping authority and gives its DER
    /// TimeStampResp; `None` when the host has no authority (the seal then carries no
    /// timestamp); an error when the authority does not answer.
    fn timestamp(&self, request: &[u8]) -> Result<Option<Vec<u8>>, String>;
}

/// How a sealed file was signed (the WIT's `seal-info`, shared with the engine).
pub use esign_work::SealInfo;

/// Why a seal was not made.
#[derive(Debug, Clone, PartialEq)]
pub enum SealError {
    /// The time stamping authority did not give a good token: worth retrying; a file is
    /// never sealed without the timestamp its host was told to add.
    TimestampUnavailable(String),
    /// Anything else (the key could not sign, the PDF could not be updated).
    Failed(String),
}

/// A [`SealHost`]'s signature as the CMS builder asks for it.
struct HostKey<'a>(&'a dyn SealHost);

impl DigestSigner for HostKey<'_> {
    fn sign_digest(&self, digest: &[u8; 32]) -> anyhow::Result<Vec<u8>> {
        self.0.sign(digest).map_err(|e| anyhow!("{e}"))
    }
}

/// Seals `pdf` for `meta` at `now_ms` (the signature's `/M`): the incremental update
/// with the signature and, when the host has an authority, its timestamp.
pub fn seal(
    pdf: &[u8],
    meta: &Metadata,
    now_ms: u64,
    host: &dyn SealHost,
) -> Result<(Vec<u8>, SealInfo), SealError> {
    let failed = |e: anyhow::Error| SealError::Failed(format!("{e:#}"));
    let certificates = host
        .certificates()
        .map_err(|e| SealError::Failed(format!("the signing certificates: {e}")))?;
    let chain = certificates
        .iter()
        .map(|der| Certificate::from_der(der).context("a signing certificate does not parse"))
        .collect::<anyhow::Result<Vec<_>>>()
        .map_err(failed)?;
    let first = chain
        .first()
        .ok_or_else(|| SealError::Failed("the signing certificate chain is empty".into()))?;
    let prepared = pades::prepare(pdf, meta, now_ms).map_err(failed)?;
    let digest = prepared.digest();
    let mut stamped: Option<u64> = None;
    let mut tsa_error: Option<String> = None;
    let mut timestamp = |signature: &[u8]| -> anyhow::Result<Option<Vec<u8>>> {
        let nonce = cms::timestamp_nonce(signature);
        let request = cms::timestamp_request(signature, nonce);
        let answer = host
            .timestamp(&request)
            .map_err(|e| anyhow!("{e}"))
            .and_then(|resp| match resp {
                None => Ok(None),
                Some(resp) => cms::timestamp_token(&resp, signature, nonce).map(Some),
            });
        match answer {
            Ok(None) => Ok(None),
            Ok(Some((token, at))) => {
                stamped = Some(at);
                Ok(Some(token))
            }
            Err(e) => {
                tsa_error = Some(format!("{e:#}"));
                Err(e)
            }
        }
    };
    let signer = SignerRef {
        chain: &chain,
        key: &HostKey(host),
    };
    let der = cms::sign_detached(signer, &digest, Some(&mut timestamp));
    let der = match (der, tsa_error) {
        (_, Some(why)) => {
            return Err(SealError::TimestampUnavailable(format!(
                "the time stamping authority failed: {why}"
            )));
        }
        (Err(e), None) => return Err(failed(e)),
        (Ok(der), None) => der,
    };
    let sealed = prepared.fill(&der).map_err(failed)?;
    Ok((
        sealed,
        SealInfo {
            signer: first.tbs_certificate.subject.to_string(),
            certificate_sha256: sha256_hex(&certificates[0]),
            signed_at_ms: now_ms,
            timestamp_ms: stamped,
        },
    ))
}

/// Checks the last signature of a PDF; `own_sha256` is the SHA-256 of the certificate
/// the checking host seals with (empty for none).
pub fn check(pdf: &[u8], own_sha256: &str) -> PdfCheck {
    let mut c = pades::check(pdf);
    c.by_this_service = !c.certificate_sha256.is_empty() && c.certificate_sha256 == own_sha256;
    c
}
