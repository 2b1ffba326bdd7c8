//! Evidence: sealing final PDFs with the service's key and checking sealed files.
//!
//! - [`keys`]: the signing identity: given (`--signing-key`/`--signing-cert`, PEM) or
//!   generated at first start into `<data-dir>/signing/`.
//! - [`cms`]: the CMS SignedData of a PAdES signature and RFC 3161 token handling.
//! - [`pades`]: the PDF side (incremental update, byte range) and the check of a file.
//! - [`tsa`]: the RFC 3161 client for `--tsa-url`.
//!
//! The engine decides when a file is sealed and what it states; this module only signs
//! and checks bytes.

pub mod cms;
pub mod keys;
pub mod pades;
pub mod tsa;

use crate::bindings::{PdfCheck, SealInfo, WorkFailure};

/// Signs final PDFs: the identity, its certificate as served, and the optional TSA.
pub struct Sealer {
    signer: cms::Signer,
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
        use der::Encode;
        let cert = identity
            .signer
            .chain
            .first()
            .ok_or_else(|| anyhow::anyhow!("the signing certificate chain is empty"))?;
        let der = cert.to_der()?;
        Ok(Sealer {
            subject: cert.tbs_certificate.subject.to_string(),
            certificate_sha256: crate::ids::sha256_hex(&der),
            certificate_pem: identity.certificate_pem,
            signer: identity.signer,
            tsa,
        })
    }

    /// Whether signatures are timestamped.
    pub fn has_tsa(&self) -> bool {
        self.tsa.is_some()
    }

    /// Seals `pdf` for `meta`: an incremental update with the signature (and, with a
    /// TSA, its timestamp). Blocks on the TSA's answer: call it off the async threads,
    /// inside a tokio runtime. Fails with `timestamp-unavailable` when the TSA does not
    /// give a good token, `seal-failed` for anything else; never returns an untimestamped
    /// file when a TSA is configured.
    pub fn seal(
        &self,
        pdf: &[u8],
        meta: &pades::Metadata,
    ) -> Result<(Vec<u8>, SealInfo), WorkFailure> {
        let seal_failed = |e: anyhow::Error| WorkFailure {
            code: "seal-failed".into(),
            message: format!("{e:#}"),
        };
        let now = crate::clock::now_ms();
        let prepared = pades::prepare(pdf, meta, now).map_err(seal_failed)?;
        let digest = prepared.digest();
        let mut stamped: Option<u64> = None;
        let mut tsa_error: Option<String> = None;
        let der = match &self.tsa {
            None => cms::sign_detached(&self.signer, &digest, None),
            Some(tsa) => {
                let handle = tokio::runtime::Handle::current();
                let mut ask = |signature: &[u8]| -> anyhow::Result<Vec<u8>> {
                    match handle.block_on(tsa.stamp(signature)) {
                        Ok((token, at)) => {
                            stamped = Some(at);
                            Ok(token)
                        }
                        Err(e) => {
                            tsa_error = Some(format!("{e:#}"));
                            Err(e)
                        }
                    }
                };
                cms::sign_detached(&self.signer, &digest, Some(&mut ask))
            }
        };
        let der = match (der, tsa_error) {
            (_, Some(why)) => {
                tracing::warn!(
                    "sealing {} waits: the time stamping authority failed: {why}",
                    meta.document_id
                );
                return Err(WorkFailure {
                    code: "timestamp-unavailable".into(),
                    message: format!("the time stamping authority failed: {why}"),
                });
            }
            (Err(e), None) => return Err(seal_failed(e)),
            (Ok(der), None) => der,
        };
        let sealed = prepared.fill(&der).map_err(seal_failed)?;
        Ok((
            sealed,
            SealInfo {
                signer: self.subject.clone(),
                certificate_sha256: self.certificate_sha256.clone(),
                signed_at_ms: now,
                timestamp_ms: stamped,
            },
        ))
    }
}

/// Checks the last signature of a PDF; `own_sha256` is this host's certificate.
pub fn check(pdf: &[u8], own_sha256: &str) -> PdfCheck {
    let mut c = pades::check(pdf);
    c.by_this_service = !c.certificate_sha256.is_empty() && c.certificate_sha256 == own_sha256;
    c
}
