//! The signing key on a host: a P-256 key and its certificate chain, read from PEM, or a
//! new one with a self-signed certificate. A component never holds one: it signs
//! through its host's `signing` import (see `crate::seal`).

use super::cms::DigestSigner;
use anyhow::{Context, Result, anyhow, bail, ensure};
use const_oid::db::{DB, rfc5912};
use der::{Decode, Encode};
use p256::ecdsa::signature::hazmat::PrehashSigner;
use p256::ecdsa::{DerSignature, SigningKey, VerifyingKey};
use p256::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey};
use spki::AlgorithmIdentifierRef;
use std::str::FromStr;
use std::time::Duration;
use x509_cert::Certificate;
use x509_cert::builder::{Builder, CertificateBuilder, Profile};
use x509_cert::ext::pkix::{KeyUsage, KeyUsages};
use x509_cert::name::Name;
use x509_cert::serial_number::SerialNumber;
use x509_cert::time::{Time, Validity};

/// A signing key and its certificate chain (signer first).
pub struct LocalKey {
    pub key: SigningKey,
    pub chain: Vec<Certificate>,
}

impl DigestSigner for LocalKey {
    fn sign_digest(&self, digest: &[u8; 32]) -> Result<Vec<u8>> {
        let signature: DerSignature = self.key.sign_prehash(digest)?;
        Ok(signature.as_bytes().to_vec())
    }
}

impl LocalKey {
    /// The certificates as DER, signer first.
    pub fn chain_der(&self) -> Result<Vec<Vec<u8>>> {
        self.chain.iter().map(|c| Ok(c.to_der()?)).collect()
    }
}

/// A new P-256 key from `secret` (32 random bytes) and a self-signed certificate for it,
/// valid from a day before `now_ms` for ten years, as PEM (PKCS#8 key, certificate):
/// subject "CN=esign document seal, O=esign", key usage digitalSignature and
/// nonRepudiation, serial from the key.
pub fn generate(secret: &[u8; 32], now_ms: u64) -> Result<(String, String)> {
    let key = SigningKey::from_slice(secret).context("the random bytes are not a P-256 key")?;
    let spki = spki::SubjectPublicKeyInfoOwned::from_key(*key.verifying_key())
        .map_err(|e| anyhow!("the public key: {e}"))?;
    let subject = Name::from_str("CN=esign document seal,O=esign")?;
    let day = Duration::from_secs(24 * 3600);
    let start = Duration::from_millis(now_ms).saturating_sub(day);
    let validity = Validity {
        not_before: Time::try_from(std::time::UNIX_EPOCH + start)?,
        not_after: Time::try_from(std::time::UNIX_EPOCH + start + day * 3651)?,
    };
    let serial: [u8; 16] = sha2::Digest::finalize(<sha2::Sha256 as sha2::Digest>::new_with_prefix(
        spki.to_der()?,
    ))[..16]
        .try_into()
        .expect("16 bytes");
    let mut serial = serial;
    serial[0] &= 0x7f; // positive
    let mut builder = CertificateBuilder::new(
        Profile::Manual { issuer: None },
        SerialNumber::new(&serial)?,
        validity,
        subject,
        spki,
        &key,
    )?;
    builder.add_extension(&KeyUsage(
        KeyUsages::DigitalSignature | KeyUsages::NonRepudiation,
    ))?;
    let cert = builder.build::<DerSignature>()?;
    let cert_pem =
        der::pem::encode_string("CERTIFICATE", der::pem::LineEnding::LF, &cert.to_der()?)
            .map_err(|e| anyhow!("{e}"))?;
    let key_pem = key
        .to_pkcs8_pem(der::pem::LineEnding::LF)
        .map_err(|e| anyhow!("{e}"))?
        .to_string();
    Ok((key_pem, cert_pem))
}

/// The (label, DER) of every PEM block in `text`, in order.
fn pem_blocks(text: &str) -> Result<Vec<(String, Vec<u8>)>> {
    let (mut blocks, mut rest) = (Vec::new(), text);
    while let Some(start) = rest.find("-----BEGIN ") {
        let block = &rest[start..];
        let end = block.find("-----END ").context("no PEM END line")?;
        let close = block[end + 9..].find("-----").context("bad PEM END line")?;
        let (block, tail) = block.split_at(end + 9 + close + 5);
        let decoded = der::pem::decode_vec(block.as_bytes());
        let (label, der) = decoded.map_err(|e| anyhow!("PEM: {e}"))?;
        blocks.push((label.to_string(), der));
        rest = tail;
    }
    Ok(blocks)
}

/// The error for a PKCS#8 key that is not P-256, naming its algorithm or curve.
fn not_p256(der: &[u8], e: p256::pkcs8::Error) -> anyhow::Error {
    let alg = p256::pkcs8::PrivateKeyInfo::try_from(der).map(|info| info.algorithm);
    let ec = |a: &AlgorithmIdentifierRef| a.oid == rfc5912::ID_EC_PUBLIC_KEY;
    let oid = alg.map(|a| a.parameters_oid().ok().filter(|_| ec(&a)).unwrap_or(a.oid));
    let name = oid.map(|oid| format!("{} ({oid})", DB.by_oid(&oid).unwrap_or("?")));
    let name = name.unwrap_or_else(|_| "unreadable".into());
    anyhow!("the key is {name}; only ECDSA P-256 (secp256r1) is supported: {e}")
}

impl LocalKey {
    /// Loads a key from PEM text: a PKCS#8 ("PRIVATE KEY") or SEC1 ("EC PRIVATE KEY")
    /// P-256 key (other blocks such as "EC PARAMETERS" are skipped), and one or more
    /// CERTIFICATE blocks, signer first. Errors, naming the algorithm, for keys other than
    /// ECDSA P-256, for encrypted keys, and when the first certificate is not the key's.
    pub fn from_pem(key_pem: &str, certs_pem: &str) -> Result<LocalKey> {
        let blocks = pem_blocks(key_pem).context("the key is not valid PEM")?;
        let mut blocks = blocks.iter();
        let block = blocks.find(|(label, _)| label.ends_with("PRIVATE KEY"));
        let (label, der) = block.context("no PRIVATE KEY block in the key PEM")?;
        let key = match label.as_str() {
            "PRIVATE KEY" => SigningKey::from_pkcs8_der(der).map_err(|e| not_p256(der, e))?,
            "EC PRIVATE KEY" => match p256::SecretKey::from_sec1_der(der) {
                Ok(key) => SigningKey::from(key),
                Err(e) => {
                    bail!("the EC key is not P-256 (secp256r1), the only curve supported: {e}")
                }
            },
            _ => bail!("{label} keys are not supported; an unencrypted ECDSA P-256 key is needed"),
        };
        let mut chain = Vec::new();
        for (label, der) in pem_blocks(certs_pem).context("the certificates are not valid PEM")? {
            if label == "CERTIFICATE" {
                chain.push(Certificate::from_der(&der).context("a certificate does not parse")?);
            }
        }
        let first = chain.first().context("no CERTIFICATE block")?;
        let spki = first.tbs_certificate.subject_public_key_info.to_der()?;
        let cert_key = VerifyingKey::from_public_key_der(&spki).ok();
        let same = cert_key.as_ref() == Some(key.verifying_key());
        ensure!(same, "the first certificate is not the key's");
        Ok(LocalKey { key, chain })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_from_pem() {
        let kp = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let params = rcgen::CertificateParams::new(vec![]).unwrap();
        let cert = params.self_signed(&kp).unwrap().pem();
        let key = SigningKey::from_pkcs8_der(&kp.serialize_der()).unwrap();
        let sec1 = p256::SecretKey::from(key.as_nonzero_scalar());
        let sec1 = sec1.to_sec1_pem(Default::default()).unwrap();
        // As `openssl ecparam -genkey` writes it: EC PARAMETERS (the curve OID) first.
        let curve = rfc5912::SECP_256_R_1.to_der().unwrap();
        let params = der::pem::encode_string("EC PARAMETERS", Default::default(), &curve);
        let sec1 = format!("{}{}", params.unwrap(), *sec1);
        assert_eq!(LocalKey::from_pem(&sec1, &cert).unwrap().key, key);
        let error =
            |key: &str, cert: &str| LocalKey::from_pem(key, cert).err().unwrap().to_string();
        let other = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        assert!(error(&other.serialize_pem(), &cert).contains("not the key's"));
        let p384 = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384).unwrap();
        assert!(error(&p384.serialize_pem(), &cert).contains("secp384r1"));
        let rsa = "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n";
        assert!(error(rsa, &cert).contains("RSA PRIVATE KEY keys are not supported"));
        assert!(error(&kp.serialize_pem(), "").contains("no CERTIFICATE"));
    }

    #[test]
    fn generated_keys_load_and_are_self_signed() {
        let (key_pem, cert_pem) = generate(&[7; 32], 1_800_000_000_000).unwrap();
        let key = LocalKey::from_pem(&key_pem, &cert_pem).unwrap();
        let cert = &key.chain[0];
        assert_eq!(
            cert.tbs_certificate.subject.to_string(),
            "CN=esign document seal,O=esign"
        );
        assert_eq!(cert.tbs_certificate.issuer, cert.tbs_certificate.subject);
        // The same secret and time make the same certificate.
        assert_eq!(generate(&[7; 32], 1_800_000_000_000).unwrap().1, cert_pem);
    }
}
