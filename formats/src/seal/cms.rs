//! The CMS (RFC 5652) part of a PAdES baseline signature, and RFC 3161 timestamps, with
//! RustCrypto's `cms`, `x509-cert`, `x509-tsp` and `der`. What they lack is declared here
//! with `der`'s derive macros: ESS SigningCertificateV2 (RFC 5035), and a TSTInfo whose
//! genTime may carry fractional seconds (`der`'s `GeneralizedTime` rejects them).

use anyhow::{Context, Result, anyhow, ensure};
use cms::builder::{create_content_type_attribute, create_message_digest_attribute};
use cms::cert::{CertificateChoices, IssuerAndSerialNumber};
use cms::content_info::{CmsVersion, ContentInfo};
use cms::signed_data::{CertificateSet, EncapsulatedContentInfo, SignedData};
use cms::signed_data::{SignerIdentifier, SignerInfo, SignerInfos};
use const_oid::db::{DB, rfc5911, rfc5912};
use der::asn1::{Int, ObjectIdentifier, OctetString, SetOfVec, Uint};
use der::{Any, Decode, Encode, Sequence, Tag, Tagged};
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{DerSignature, VerifyingKey};
use p256::pkcs8::DecodePublicKey;
use sha2::{Digest, Sha256};
use spki::{AlgorithmIdentifier, AlgorithmIdentifierOwned};
use x509_cert::Certificate;
use x509_cert::attr::{Attribute, Attributes};
use x509_cert::ext::{Extensions, pkix::SubjectKeyIdentifier, pkix::name::GeneralName};
use x509_tsp::{Accuracy, MessageImprint, TimeStampReq, TimeStampResp, TspVersion};

/// id-ct-TSTInfo (RFC 3161).
const ID_CT_TST_INFO: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.1.4");
/// id-aa-signatureTimeStampToken (RFC 3161 appendix A).
const ID_AA_SIGNATURE_TIME_STAMP_TOKEN: ObjectIdentifier =
    ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.2.14");

/// ESSCertIDv2 (RFC 5035); an absent `hash_algorithm` means SHA-256.
#[derive(Clone, Debug, Eq, PartialEq, Sequence)]
struct EssCertIdV2 {
    #[asn1(optional = "true")]
    hash_algorithm: Option<AlgorithmIdentifierOwned>,
    cert_hash: OctetString,
    #[asn1(optional = "true")]
    issuer_serial: Option<Any>,
}

/// SigningCertificateV2 (RFC 5035); the first ESSCertIDv2 names the signer's certificate.
#[derive(Clone, Debug, Eq, PartialEq, Sequence)]
struct SigningCertificateV2 {
    certs: Vec<EssCertIdV2>,
    #[asn1(optional = "true")]
    policies: Option<Any>,
}

/// TSTInfo (RFC 3161) as `x509_tsp::TstInfo`, but with genTime as `Any`.
#[derive(Clone, Debug, Eq, PartialEq, Sequence)]
struct TstInfo {
    version: TspVersion,
    policy: ObjectIdentifier,
    message_imprint: MessageImprint,
    serial_number: Int,
    gen_time: Any,
    #[asn1(optional = "true")]
    accuracy: Option<Accuracy>,
    #[asn1(default = "Default::default")]
    ordering: bool,
    #[asn1(optional = "true")]
    nonce: Option<Int>,
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT", optional = "true")]
    tsa: Option<GeneralName>,
    #[asn1(context_specific = "1", tag_mode = "IMPLICIT", optional = "true")]
    extensions: Option<Extensions>,
}

fn alg(oid: ObjectIdentifier) -> AlgorithmIdentifierOwned {
    let parameters = None;
    AlgorithmIdentifier { oid, parameters }
}

fn attribute(oid: ObjectIdentifier, value: Any) -> Result<Attribute> {
    let values = SetOfVec::try_from(vec![value])?;
    Ok(Attribute { oid, values })
}

fn sid(cert: &Certificate) -> SignerIdentifier {
    let issuer = cert.tbs_certificate.issuer.clone();
    let serial_number = cert.tbs_certificate.serial_number.clone();
    SignerIdentifier::IssuerAndSerialNumber(IssuerAndSerialNumber {
        issuer,
        serial_number,
    })
}

/// A key that signs SHA-256 digests: the DER ECDSA P-256 signature, deterministic (RFC
/// 6979). In a component it is an import: the host keeps the key.
pub trait DigestSigner {
    fn sign_digest(&self, digest: &[u8; 32]) -> Result<Vec<u8>>;
}

/// What signs a SignedData: the certificate chain (signer first; all of it goes in the
/// CMS) and the key, which only ever sees the digest of the signed attributes.
#[derive(Clone, Copy)]
pub struct SignerRef<'a> {
    pub chain: &'a [Certificate],
    pub key: &'a dyn DigestSigner,
}

/// What timestamps a signature: called with the raw signature value; the DER
/// TimeStampToken, or `None` when there is no time stamping authority (the signature
/// then carries no timestamp). An error fails the signature.
pub type Timestamper<'a> = &'a mut dyn FnMut(&[u8]) -> Result<Option<Vec<u8>>>;

/// A SignedData ContentInfo by `signer`: one SignerInfo (issuer+serial, SHA-256,
/// ecdsa-with-SHA256) whose signed attributes are exactly content-type, message-digest
/// (`digest`) and signing-certificate-v2, plus the timestamp from `timestamp`, if any.
/// (`cms::builder::SignerInfoBuilder` wants the key itself, which a component does not
/// have: the SignerInfo is assembled here around a signature of the attributes' digest.)
fn signed_data(
    signer: SignerRef,
    (econtent_type, econtent): (ObjectIdentifier, Option<Any>),
    digest: &[u8],
    timestamp: Option<Timestamper>,
) -> Result<ContentInfo> {
    let cert = signer.chain.first().context("no certificate")?;
    let cert_hash = OctetString::new(Sha256::digest(cert.to_der()?).to_vec())?;
    let (hash_algorithm, issuer_serial) = (None, None);
    let certs = vec![EssCertIdV2 {
        hash_algorithm,
        cert_hash,
        issuer_serial,
    }];
    let ess = Any::encode_from(&SigningCertificateV2 {
        certs,
        policies: None,
    })?;
    let err = |e: cms::builder::Error| anyhow!("{e}");
    let signed_attrs: Attributes = SetOfVec::try_from(vec![
        create_content_type_attribute(econtent_type).map_err(err)?,
        create_message_digest_attribute(digest).map_err(err)?,
        attribute(rfc5911::ID_AA_SIGNING_CERTIFICATE_V_2, ess)?,
    ])?;
    let attrs_digest: [u8; 32] = Sha256::digest(signed_attrs.to_der()?).into();
    let signature = signer
        .key
        .sign_digest(&attrs_digest)
        .context("signing failed")?;
    DerSignature::from_bytes(&signature).context("the signature is not a DER ECDSA signature")?;
    let mut unsigned_attrs = None;
    if let Some(timestamp) = timestamp
        && let Some(token) = timestamp(&signature).context("timestamping failed")?
    {
        let token = Any::from_der(&token).context("the timestamp token is not DER")?;
        let info: Result<ContentInfo, _> = token.decode_as();
        info.context("the timestamp token is not a ContentInfo")?;
        let attr = attribute(ID_AA_SIGNATURE_TIME_STAMP_TOKEN, token)?;
        unsigned_attrs = Some(SetOfVec::try_from(vec![attr])?);
    }
    let info = SignerInfo {
        version: CmsVersion::V1,
        sid: sid(cert),
        digest_alg: alg(rfc5912::ID_SHA_256),
        signed_attrs: Some(signed_attrs),
        signature_algorithm: alg(rfc5912::ECDSA_WITH_SHA_256),
        signature: OctetString::new(signature)?,
        unsigned_attrs,
    };
    let mut certs = Vec::new();
    for c in signer.chain {
        let c = CertificateChoices::Certificate(c.clone());
        if !certs.contains(&c) {
            certs.push(c);
        }
    }
    // RFC 5652 5.1: version 3 when the content type is not id-data.
    let id_data = econtent_type == rfc5911::ID_DATA;
    let signed_data = SignedData {
        version: [CmsVersion::V3, CmsVersion::V1][id_data as usize],
        digest_algorithms: SetOfVec::try_from(vec![alg(rfc5912::ID_SHA_256)])?,
        encap_content_info: EncapsulatedContentInfo {
            econtent_type,
            econtent,
        },
        certificates: Some(CertificateSet(SetOfVec::try_from(certs)?)),
        crls: None,
        signer_infos: SignerInfos(SetOfVec::try_from(vec![info])?),
    };
    let (content_type, content) = (rfc5911::ID_SIGNED_DATA, Any::encode_from(&signed_data)?);
    Ok(ContentInfo {
        content_type,
        content,
    })
}

/// Builds a DER `ContentInfo` of a detached CMS SignedData over content whose SHA-256 is
/// `content_digest`: digest SHA-256, signature ecdsa-with-SHA256 (DER-encoded), the signer
/// identified by issuer+serial, the whole chain in `certificates`, and signed attributes
/// exactly content-type (id-data), message-digest and signing-certificate-v2 (RFC 5035,
/// SHA-256 of the signer certificate, hashAlgorithm omitted) — no signing-time, which
/// PAdES forbids. When `timestamp` is given it is called with the raw signature value
/// bytes and returns a DER TimeStampToken (or `None`), which is added as the unsigned
/// attribute id-aa-signatureTimeStampToken.
pub fn sign_detached(
    signer: SignerRef,
    content_digest: &[u8; 32],
    timestamp: Option<Timestamper>,
) -> anyhow::Result<Vec<u8>> {
    let content = (rfc5911::ID_DATA, None);
    Ok(signed_data(signer, content, content_digest, timestamp)?.to_der()?)
}

fn nonce_int(nonce: u64) -> Int {
    Int::from(Uint::new(&nonce.to_be_bytes()).expect("eight bytes are an INTEGER"))
}

/// The nonce of a timestamp request over `data`: the first eight bytes of its SHA-256.
/// Derived, not random, so that the same signature always asks the same question (the
/// work is deterministic, and a component needs no randomness); `data` is a signature
/// value, unique to the signed content and attributes.
pub fn timestamp_nonce(data: &[u8]) -> u64 {
    let h = Sha256::digest(data);
    u64::from_be_bytes(h[..8].try_into().expect("eight bytes"))
}

/// DER TimeStampReq (RFC 3161) for `data` (SHA-256 imprint), certReq true, with `nonce`.
pub fn timestamp_request(data: &[u8], nonce: u64) -> Vec<u8> {
    let hashed_message = OctetString::new(Sha256::digest(data).to_vec()).expect("32 bytes");
    let (oid, parameters) = (rfc5912::ID_SHA_256, Some(Any::null()));
    let hash_algorithm = AlgorithmIdentifier { oid, parameters };
    TimeStampReq {
        version: TspVersion::V1,
        message_imprint: MessageImprint {
            hash_algorithm,
            hashed_message,
        },
        req_policy: None,
        nonce: Some(nonce_int(nonce)),
        cert_req: true,
        extensions: None,
    }
    .to_der()
    .expect("a TimeStampReq encodes")
}

/// The SignedData of a TimeStampToken, its TSTInfo, and the TSTInfo's DER.
fn tst_info(token: &ContentInfo) -> Result<(SignedData, TstInfo, Vec<u8>)> {
    let signed = token.content_type == rfc5911::ID_SIGNED_DATA;
    ensure!(signed, "the token is not a SignedData");
    let sd: SignedData = token.content.decode_as().context("bad token SignedData")?;
    let encap = &sd.encap_content_info;
    let tst_info = encap.econtent_type == ID_CT_TST_INFO;
    ensure!(tst_info, "the token does not hold a TSTInfo");
    let econtent = encap.econtent.as_ref();
    let econtent = econtent.filter(|e| e.tag() == Tag::OctetString);
    let der = econtent
        .context("no TSTInfo OCTET STRING")?
        .value()
        .to_vec();
    let tst = TstInfo::from_der(&der).context("bad TSTInfo")?;
    Ok((sd, tst, der))
}

fn imprint_matches(imprint: &MessageImprint, data: &[u8]) -> bool {
    imprint.hash_algorithm.oid == rfc5912::ID_SHA_256
        && imprint.hashed_message.as_bytes() == Sha256::digest(data).as_slice()
}

/// genTime (`YYYYMMDDHHMMSS[.f*]Z`) as milliseconds since the epoch.
fn gen_time_ms(t: &Any) -> Result<u64> {
    let s = std::str::from_utf8(t.value()).ok();
    let s = s.filter(|_| t.tag() == Tag::GeneralizedTime);
    let s = s.and_then(|s| s.strip_suffix('Z'));
    let s = s.context("genTime is not a UTC GeneralizedTime")?;
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let ok = whole.len() == 14 && digits(whole) && digits(frac);
    ensure!(ok, "malformed genTime {s:?}");
    let n = |i: usize, len: usize| whole[i..i + len].parse::<u16>().expect("digits");
    let [mo, d, h, mi, se] = [4, 6, 8, 10, 12].map(|i| n(i, 2) as u8);
    let time = der::DateTime::new(n(0, 4), mo, d, h, mi, se).context("bad genTime")?;
    let ms: String = frac.chars().chain("000".chars()).take(3).collect();
    Ok(time.unix_duration().as_millis() as u64 + ms.parse::<u64>().expect("digits"))
}

/// The TimeStampToken (DER ContentInfo) from a DER TimeStampResp: error unless the status
/// is granted(0) or grantedWithMods(1), a token is present, its TSTInfo message imprint is
/// SHA-256 of `data`, and its nonce equals `nonce`. Returns (token DER, genTime as ms since
/// the epoch). The token's own signature is not checked here (see [`check_detached`]).
pub fn timestamp_token(resp: &[u8], data: &[u8], nonce: u64) -> Result<(Vec<u8>, u64)> {
    let resp = TimeStampResp::from_der(resp).context("not a DER TimeStampResp")?;
    let status = resp.status;
    ensure!(status.status as u8 <= 1, "the TSA refused: {status:?}");
    let token = resp.time_stamp_token.context("no timestamp token")?;
    let (_, tst, _) = tst_info(&token)?;
    let over_data = imprint_matches(&tst.message_imprint, data);
    ensure!(over_data, "the timestamp is not over the data");
    let nonce_ok = tst.nonce == Some(nonce_int(nonce));
    ensure!(nonce_ok, "the timestamp nonce is not the request's");
    Ok((token.to_der()?, gen_time_ms(&tst.gen_time)?))
}

/// What a check of a CMS signature found.
#[derive(Clone, Debug, Default)]
pub struct Checked {
    /// The signer's certificate (DER) and its subject as an RFC 4514 string (both empty
    /// when the SignedData does not include the signer's certificate).
    pub certificate_der: Vec<u8>,
    pub subject: String,
    /// message-digest matches `content_digest` and the ECDSA P-256 signature over the DER
    /// SET OF signed attributes verifies with the certificate's public key.
    pub valid: bool,
    /// signing-certificate-v2 is present and names this certificate.
    pub signing_certificate_v2: bool,
    /// genTime of the signature timestamp token in ms since the epoch, when present, and
    /// whether its imprint is SHA-256 of the signature value AND the token's own CMS
    /// signature verifies (only P-256 TSA keys are supported: others give
    /// timestamp_valid=false with a problem).
    pub timestamp_ms: Option<u64>,
    pub timestamp_valid: bool,
    /// Human-readable reasons something did not check out (empty when all is well; a
    /// missing timestamp is not a problem).
    pub problems: Vec<String>,
}

/// The only value of the attribute `oid`, if present.
fn attr(attrs: &Attributes, oid: ObjectIdentifier) -> Result<Option<&Any>> {
    let attrs = attrs.iter().filter(|a| a.oid == oid);
    let mut values = attrs.flat_map(|a| a.values.iter());
    let (value, single) = (values.next(), values.next().is_none());
    ensure!(single, "attribute {oid} has several values");
    Ok(value)
}

/// The certificate in `sd` that `info` names, by issuer+serial or subject key identifier.
fn signer_cert(sd: &SignedData, info: &SignerInfo) -> Option<Certificate> {
    let names = |c: &Certificate| {
        let ski = c.tbs_certificate.get::<SubjectKeyIdentifier>();
        let ski = ski.ok().flatten().map(|(_, ski)| ski);
        let by_ski = ski.map(SignerIdentifier::SubjectKeyIdentifier);
        info.sid == sid(c) || by_ski.as_ref() == Some(&info.sid)
    };
    sd.certificates.as_ref()?.0.iter().find_map(|c| match c {
        CertificateChoices::Certificate(c) if names(c) => Some(c.clone()),
        _ => None,
    })
}

/// Whether `info` signs content of `content_type` with SHA-256 `digest`: the attributes,
/// and the ECDSA P-256/SHA-256 signature with the certificate's key.
fn verify_signer(
    info: &SignerInfo,
    cert: &Certificate,
    digest: &[u8],
    content_type: ObjectIdentifier,
) -> Result<()> {
    let digest_alg = info.digest_alg.oid;
    let sha256 = digest_alg == rfc5912::ID_SHA_256;
    ensure!(sha256, "digest algorithm {digest_alg} is not SHA-256");
    let attrs = info.signed_attrs.as_ref().context("no signed attributes")?;
    let ct = attr(attrs, rfc5911::ID_CONTENT_TYPE)?.context("no content-type")?;
    let ct_ok = ct.decode_as().ok() == Some(content_type);
    ensure!(ct_ok, "the content-type attribute is wrong");
    let md = attr(attrs, rfc5911::ID_MESSAGE_DIGEST)?.context("no message-digest")?;
    let md: Option<OctetString> = md.decode_as().ok();
    let md_ok = md.is_some_and(|md| md.as_bytes() == digest);
    ensure!(md_ok, "the message digest does not match");
    let alg = info.signature_algorithm.oid;
    let spki = cert.tbs_certificate.subject_public_key_info.to_der()?;
    // RSA (PKCS #1 v1.5) for time stamping authorities, most of which use it; our own
    // seals are always ECDSA P-256.
    if [
        rfc5912::SHA_256_WITH_RSA_ENCRYPTION,
        rfc5912::RSA_ENCRYPTION,
    ]
    .contains(&alg)
    {
        use rsa::pkcs8::DecodePublicKey;
        let key = rsa::RsaPublicKey::from_public_key_der(&spki)
            .context("the certificate key is not an RSA key")?;
        let key = rsa::pkcs1v15::VerifyingKey::<Sha256>::new(key);
        let sig = rsa::pkcs1v15::Signature::try_from(info.signature.as_bytes())?;
        let verifies = key.verify(&attrs.to_der()?, &sig).is_ok();
        ensure!(verifies, "the signature does not verify");
        return Ok(());
    }
    let ecdsa = [rfc5912::ECDSA_WITH_SHA_256, rfc5912::ID_EC_PUBLIC_KEY].contains(&alg);
    let name = DB.by_oid(&alg).unwrap_or("?");
    ensure!(ecdsa, "signature algorithm {name} ({alg}) is not supported");
    let key = VerifyingKey::from_public_key_der(&spki).ok();
    let key = key.context("the certificate key is not an ECDSA P-256 key")?;
    let sig = DerSignature::from_bytes(info.signature.as_bytes())?;
    let verifies = key.verify(&attrs.to_der()?, &sig).is_ok();
    ensure!(verifies, "the signature does not verify");
    Ok(())
}

/// Whether the signing-certificate-v2 attribute is present and names `cert`.
fn names_certificate(info: &SignerInfo, cert: &Certificate) -> Result<()> {
    let attrs = info.signed_attrs.as_ref().context("no signed attributes")?;
    let value = attr(attrs, rfc5911::ID_AA_SIGNING_CERTIFICATE_V_2)?;
    let scv2: SigningCertificateV2 = value.context("it is absent")?.decode_as()?;
    let id = scv2.certs.first().context("it is empty")?;
    let hash_alg = id.hash_algorithm.as_ref().map(|a| a.oid);
    let sha256 = hash_alg.is_none_or(|oid| oid == rfc5912::ID_SHA_256);
    ensure!(sha256, "it uses a hash other than SHA-256");
    let hash = Sha256::digest(cert.to_der()?);
    let same = id.cert_hash.as_bytes() == &hash[..];
    ensure!(same, "it names another certificate");
    Ok(())
}

/// The signature timestamp of `info`, if any: its genTime and whether it checks out.
fn timestamp_of(info: &SignerInfo) -> Option<(Option<u64>, Result<()>)> {
    let attrs = info.unsigned_attrs.as_ref()?;
    let token = attr(attrs, ID_AA_SIGNATURE_TIME_STAMP_TOKEN).transpose()?;
    let (sd, tst, tst_der) = match token.and_then(|t| tst_info(&t.decode_as()?)) {
        Ok(parsed) => parsed,
        Err(e) => return Some((None, Err(e))),
    };
    let ms = gen_time_ms(&tst.gen_time);
    let check = || {
        ms.as_ref().map_err(|e| anyhow!("{e:#}"))?;
        let imprint = &tst.message_imprint;
        let over_signature = imprint_matches(imprint, info.signature.as_bytes());
        ensure!(over_signature, "its imprint is not over the signature");
        let tsa = sd.signer_infos.0.iter().next().context("no signer")?;
        let cert = signer_cert(&sd, tsa).context("no TSA certificate")?;
        verify_signer(tsa, &cert, &Sha256::digest(&tst_der), ID_CT_TST_INFO)
    };
    let check = check();
    Some((ms.ok(), check))
}

/// Whether `result` is Ok; its error, if any, goes to `problems` as "`what`: error".
fn ok(problems: &mut Vec<String>, what: &str, result: Result<()>) -> bool {
    let error = result.as_ref().err().map(|e| format!("{what}: {e:#}"));
    problems.extend(error);
    result.is_ok()
}

/// Parses and checks a DER ContentInfo SignedData against `content_digest` (see
/// [`Checked`]). Errors only when the bytes are not a CMS SignedData at all; everything
/// else is reported in the result.
pub fn check_detached(cms_der: &[u8], content_digest: &[u8; 32]) -> Result<Checked> {
    let ci = ContentInfo::from_der(cms_der).context("not a DER CMS ContentInfo")?;
    let content_type = ci.content_type;
    let signed = content_type == rfc5911::ID_SIGNED_DATA;
    ensure!(signed, "the CMS content is {content_type}, not SignedData");
    let sd: SignedData = ci.content.decode_as().context("not a DER CMS SignedData")?;
    let mut c = Checked::default();
    if sd.encap_content_info.econtent.is_some() {
        c.problems
            .push("the content is encapsulated, not detached".into());
    }
    let infos = &sd.signer_infos.0;
    if infos.len() != 1 {
        c.problems.push("there is not exactly one signer".into());
    }
    let Some(info) = infos.iter().next() else {
        return Ok(c);
    };
    if let Some(cert) = signer_cert(&sd, info) {
        c.certificate_der = cert.to_der()?;
        c.subject = cert.tbs_certificate.subject.to_string();
        let valid = verify_signer(info, &cert, content_digest, rfc5911::ID_DATA);
        c.valid = ok(&mut c.problems, "signature", valid);
        let names = names_certificate(info, &cert);
        c.signing_certificate_v2 = ok(&mut c.problems, "signing-certificate-v2", names);
    } else {
        c.problems.push("no signer certificate".into());
    }
    if let Some((ms, check)) = timestamp_of(info) {
        c.timestamp_ms = ms;
        c.timestamp_valid = ok(&mut c.problems, "timestamp", check);
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seal::keys::LocalKey;
    use std::{path::PathBuf, process::Command, sync::atomic};

    fn signer(key: &LocalKey) -> SignerRef<'_> {
        SignerRef {
            chain: &key.chain,
            key,
        }
    }

    /// A self-signed P-256 identity from rcgen and its certificate PEM; a TSA gets the
    /// critical extendedKeyUsage timeStamping that `openssl ts -verify` insists on.
    fn identity(cn: &str, tsa: bool) -> (LocalKey, String) {
        let kp = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = rcgen::CertificateParams::new(vec![]).unwrap();
        let dn = &mut params.distinguished_name;
        dn.push(rcgen::DnType::CommonName, cn);
        if tsa {
            let eku = x509_cert::ext::pkix::ExtendedKeyUsage(vec![rfc5912::ID_KP_TIME_STAMPING]);
            let eku = eku.to_der().unwrap();
            let mut ext = rcgen::CustomExtension::from_oid_content(&[2, 5, 29, 37], eku);
            ext.set_criticality(true);
            params.custom_extensions.push(ext);
        }
        let cert = params.self_signed(&kp).unwrap().pem();
        (
            LocalKey::from_pem(&kp.serialize_pem(), &cert).unwrap(),
            cert,
        )
    }

    #[derive(Sequence)]
    struct FakeStatus {
        status: u8,
    }

    /// TimeStampResp with a bare PKIStatusInfo (x509-tsp's comes from cmpv2).
    #[derive(Sequence)]
    struct FakeResp {
        status: FakeStatus,
        #[asn1(optional = "true")]
        token: Option<ContentInfo>,
    }

    const GEN_TIME_MS: u64 = 1_704_164_645_678; // 2024-01-02T03:04:05.678Z

    /// A fake TSA: answers `req` with `status` and a TSTInfo signed by `tsa`.
    fn tsa_response(tsa: &LocalKey, req: &[u8], status: u8) -> Vec<u8> {
        let req = TimeStampReq::from_der(req).unwrap();
        let tst = TstInfo {
            version: TspVersion::V1,
            policy: ObjectIdentifier::new_unwrap("1.2.3.4.1"),
            message_imprint: req.message_imprint,
            serial_number: Int::new(&[7]).unwrap(),
            gen_time: Any::new(Tag::GeneralizedTime, &b"20240102030405.678Z"[..]).unwrap(),
            accuracy: None,
            ordering: false,
            nonce: req.nonce,
            tsa: None,
            extensions: None,
        };
        let tst = tst.to_der().unwrap();
        let econtent = Some(Any::new(Tag::OctetString, tst.clone()).unwrap());
        let digest = Sha256::digest(&tst);
        let token = signed_data(signer(tsa), (ID_CT_TST_INFO, econtent), &digest, None).unwrap();
        let (status, token) = (FakeStatus { status }, Some(token).filter(|_| status < 2));
        FakeResp { status, token }.to_der().unwrap()
    }

    /// Runs /usr/bin/openssl with `args` (`@name`: a temporary file holding `files[name]`)
    /// and asserts success; None (test skipped) when openssl is not installed.
    fn openssl(args: &str, files: &[(&str, &[u8])]) -> Option<String> {
        static RUNS: atomic::AtomicUsize = atomic::AtomicUsize::new(0);
        let openssl = std::path::Path::new("/usr/bin/openssl");
        if !openssl.exists() {
            return None;
        }
        let run = RUNS.fetch_add(1, atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("cms-test-{}-{run}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in files {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
        let arg = |a: &str| a.strip_prefix('@').map(|f| dir.join(f));
        let args_ = args.split(' ').map(|a| arg(a).unwrap_or(PathBuf::from(a)));
        let out = Command::new(openssl).args(args_).output();
        std::fs::remove_dir_all(&dir).unwrap();
        let out = out.unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "openssl {args}: {stderr}");
        Some(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `openssl cms -verify` (which also checks the ESS signing-certificate-v2 attribute).
    fn openssl_verifies(der: &[u8], content: &[u8], cert_pem: &str) {
        let args = "cms -verify -inform DER -in @sig -binary -content @data -CAfile @ca";
        let files = [("sig", der), ("data", content), ("ca", cert_pem.as_bytes())];
        openssl(&format!("{args} -purpose any"), &files);
    }

    #[test]
    fn sign_and_check() {
        let (key, cert_pem) = identity("Signer One", false);
        let content = b"%PDF-1.7 pretend byte ranges";
        let digest: [u8; 32] = Sha256::digest(content).into();
        let der = sign_detached(signer(&key), &digest, None).unwrap();
        let c = check_detached(&der, &digest).unwrap();
        let all_good = c.valid && c.signing_certificate_v2 && c.problems.is_empty();
        assert!(all_good && c.timestamp_ms.is_none(), "{c:?}");
        assert_eq!(c.subject, "CN=Signer One");
        assert_eq!(c.certificate_der, key.chain[0].to_der().unwrap());
        // Exactly the three signed attributes (no signing-time), no unsigned ones, detached.
        let ci = ContentInfo::from_der(&der).unwrap();
        let sd: SignedData = ci.content.decode_as().unwrap();
        let info = sd.signer_infos.0.iter().next().unwrap();
        let attrs = info.signed_attrs.as_ref().unwrap();
        let mut oids: Vec<_> = attrs.iter().map(|a| a.oid).collect();
        oids.sort();
        let mut want = vec![rfc5911::ID_CONTENT_TYPE, rfc5911::ID_MESSAGE_DIGEST];
        want.push(rfc5911::ID_AA_SIGNING_CERTIFICATE_V_2);
        want.sort();
        assert_eq!(oids, want);
        assert!(info.unsigned_attrs.is_none() && sd.encap_content_info.econtent.is_none());
        assert_eq!(info.signature_algorithm.oid, rfc5912::ECDSA_WITH_SHA_256);
        openssl_verifies(&der, content, &cert_pem);
        let mut other = digest;
        other[0] ^= 1;
        let c = check_detached(&der, &other).unwrap();
        assert!(!c.valid && c.signing_certificate_v2 && c.problems[0].contains("digest"));
        assert!(check_detached(b"not cms", &digest).is_err());
    }

    #[test]
    fn timestamp_request_parses() {
        let req = timestamp_request(b"signature", 0x8000_0000_0000_0001);
        let parsed = TimeStampReq::from_der(&req).unwrap();
        assert!(parsed.cert_req && imprint_matches(&parsed.message_imprint, b"signature"));
        assert_eq!(parsed.nonce, Some(nonce_int(0x8000_0000_0000_0001)));
        let text = openssl("ts -query -in @req -text", &[("req", &req)]);
        let Some(text) = text else { return };
        assert!(text.contains("Hash Algorithm: sha256"), "{text}");
        assert!(text.contains("Certificate required: yes"), "{text}");
        assert!(text.contains("Nonce: 0x8000000000000001"), "{text}");
    }

    #[test]
    fn timestamp_tokens() {
        let (tsa, tsa_pem) = identity("Test TSA", true);
        let req = timestamp_request(b"sig", 99);
        let resp = tsa_response(&tsa, &req, 0);
        let (token, ms) = timestamp_token(&resp, b"sig", 99).unwrap();
        assert!(ms == GEN_TIME_MS && ContentInfo::from_der(&token).is_ok());
        assert!(timestamp_token(&resp, b"other", 99).is_err());
        assert!(timestamp_token(&resp, b"sig", 98).is_err());
        assert!(timestamp_token(&tsa_response(&tsa, &req, 1), b"sig", 99).is_ok());
        assert!(timestamp_token(&tsa_response(&tsa, &req, 2), b"sig", 99).is_err());
        // An independent check of the fake TSA (ESS attribute, imprint, nonce, signature).
        let files = [
            ("resp", &resp[..]),
            ("req", &req),
            ("ca", tsa_pem.as_bytes()),
        ];
        openssl("ts -verify -in @resp -queryfile @req -CAfile @ca", &files);
    }

    #[test]
    fn check_with_timestamp() {
        let (key, cert_pem) = identity("Signer Two", false);
        let (tsa, _) = identity("Test TSA", true);
        let content = b"more pdf bytes";
        let digest: [u8; 32] = Sha256::digest(content).into();
        let stamp = |over_signature: bool| {
            let mut ts = |sig: &[u8]| {
                let data = if over_signature { sig } else { b"else" };
                let resp = tsa_response(&tsa, &timestamp_request(data, 1), 0);
                Ok(Some(timestamp_token(&resp, data, 1)?.0))
            };
            let der = sign_detached(signer(&key), &digest, Some(&mut ts)).unwrap();
            (check_detached(&der, &digest).unwrap(), der)
        };
        let (c, der) = stamp(true);
        let all_good = c.valid && c.signing_certificate_v2 && c.timestamp_valid;
        assert!(all_good && c.problems.is_empty(), "{c:?}");
        assert_eq!(c.timestamp_ms, Some(GEN_TIME_MS));
        openssl_verifies(&der, content, &cert_pem);
        let (c, _) = stamp(false);
        assert!(c.valid && !c.timestamp_valid && c.timestamp_ms == Some(GEN_TIME_MS));
        assert!(c.problems[0].contains("imprint"), "{c:?}");
    }
}
