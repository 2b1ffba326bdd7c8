//! The signing identity final PDFs are sealed with: a P-256 key and its certificate
//! chain, given by the operator in PEM or generated once at first start.

use anyhow::{Context, bail};
use esign_formats::seal::keys::{self as seal_keys, LocalKey};
use std::path::{Path, PathBuf};

/// A loaded identity and its certificate chain as PEM text.
pub struct Identity {
    pub key: LocalKey,
    pub certificate_pem: String,
    /// Where it came from, for the start-up log.
    pub source: String,
}

/// Where the operator's identity is, if they gave one.
pub enum Given<'a> {
    /// Generate one into the data directory on first use.
    None,
    /// A PEM key and a PEM certificate (chain) file.
    Pem { key: &'a Path, cert: &'a Path },
    /// A PKCS #12 file and its password.
    Pkcs12 { file: &'a Path, password: &'a str },
}

/// The identity `given`, or else the one in `<data_dir>/signing/`, generated on first
/// use: a P-256 key (`key.pem`, readable by the owner only) and a self-signed
/// certificate (`cert.pem`, ten years).
pub fn load_given(data_dir: &Path, given: Given) -> anyhow::Result<Identity> {
    match given {
        Given::None => load_or_create(data_dir, None, None),
        Given::Pem { key, cert } => load(key, cert),
        Given::Pkcs12 { file, password } => load_pkcs12(file, password),
    }
}

/// A PKCS #12 file's private key and its certificate chain (the key must be P-256).
/// Read with `p12-keystore` (pure Rust; PBES2/AES and the legacy 3DES/RC4 schemes).
fn load_pkcs12(file: &Path, password: &str) -> anyhow::Result<Identity> {
    use der::pem::LineEnding;
    let data = std::fs::read(file)
        .with_context(|| format!("reading the PKCS #12 file {}", file.display()))?;
    let store = p12_keystore::KeyStore::from_pkcs12(
        &data,
        password,
        p12_keystore::Pkcs12ImportPolicy::Strict,
    )
    .map_err(|e| {
        anyhow::anyhow!(
            "{}: not a readable PKCS #12 file (or a wrong password): {e}",
            file.display()
        )
    })?;
    let (_, chain) = store
        .private_key_chain()
        .with_context(|| format!("{} holds no private key", file.display()))?;
    let key_pem = der::pem::encode_string("PRIVATE KEY", LineEnding::LF, chain.key().as_der())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut cert_pem = String::new();
    for c in chain.certs() {
        cert_pem.push_str(
            &der::pem::encode_string("CERTIFICATE", LineEnding::LF, c.as_der())
                .map_err(|e| anyhow::anyhow!("{e}"))?,
        );
    }
    let key = LocalKey::from_pem(&key_pem, &cert_pem)
        .with_context(|| format!("the key in {}", file.display()))?;
    Ok(Identity {
        key,
        certificate_pem: cert_pem,
        source: file.display().to_string(),
    })
}

/// Loads `key` and `cert` (PEM; the certificate file may hold a chain, signer first)
/// when given; else the identity in `<data_dir>/signing/` (see [`load_given`]).
pub fn load_or_create(
    data_dir: &Path,
    key: Option<&Path>,
    cert: Option<&Path>,
) -> anyhow::Result<Identity> {
    match (key, cert) {
        (Some(k), Some(c)) => load(k, c),
        (None, None) => {
            let dir = data_dir.join("signing");
            let (k, c) = (dir.join("key.pem"), dir.join("cert.pem"));
            if !k.exists() || !c.exists() {
                generate(&dir, &k, &c)?;
            }
            load(&k, &c)
        }
        _ => bail!("give both --signing-key and --signing-cert, or neither"),
    }
}

fn load(key: &Path, cert: &Path) -> anyhow::Result<Identity> {
    let key_pem = std::fs::read_to_string(key)
        .with_context(|| format!("reading the signing key {}", key.display()))?;
    let cert_pem = std::fs::read_to_string(cert)
        .with_context(|| format!("reading the signing certificate {}", cert.display()))?;
    let signer = LocalKey::from_pem(&key_pem, &cert_pem)
        .with_context(|| format!("the signing key {}", key.display()))?;
    Ok(Identity {
        key: signer,
        certificate_pem: cert_pem,
        source: format!("{} ({})", cert.display(), key.display()),
    })
}

/// Writes a new key and self-signed certificate (each through a temporary file, so a
/// crash leaves either nothing or a whole file).
fn generate(dir: &Path, key: &Path, cert: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let (key_pem, cert_pem) = new_identity()?;
    write_new(key, key_pem.as_bytes(), 0o600)?;
    write_new(cert, cert_pem.as_bytes(), 0o644)?;
    tracing::info!(
        "generated a signing key and a self-signed certificate in {}",
        dir.display()
    );
    Ok(())
}

/// Where a shared store keeps the generated identity (a host table, outside `d/`).
const STORED_IDENTITY: &[u8] = b"hk/signing";

/// The generated identity as a shared store keeps it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Stored {
    key_pem: String,
    cert_pem: String,
}

/// The identity generated into `<data_dir>/signing/` as the record a shared store
/// keeps (key, value), when there is one: `esign admin migrate` copies it, so the
/// hosts go on sealing with the same key.
pub fn stored_from_data_dir(data_dir: &Path) -> anyhow::Result<Option<(Vec<u8>, Vec<u8>)>> {
    let dir = data_dir.join("signing");
    let (k, c) = (dir.join("key.pem"), dir.join("cert.pem"));
    if !k.exists() || !c.exists() {
        return Ok(None);
    }
    let stored = Stored {
        key_pem: std::fs::read_to_string(&k).with_context(|| format!("reading {}", k.display()))?,
        cert_pem: std::fs::read_to_string(&c)
            .with_context(|| format!("reading {}", c.display()))?,
    };
    Ok(Some((
        STORED_IDENTITY.to_vec(),
        serde_json::to_vec(&stored)?,
    )))
}

/// The identity generated on first use and kept in a shared store (PostgreSQL), so
/// that every host seals with the same key. The first host to start writes it; the
/// others read it (a concurrent first start conflicts and re-reads).
pub fn load_or_create_stored(
    store: &std::sync::Arc<crate::store::Store>,
) -> anyhow::Result<Identity> {
    for _ in 0..16 {
        let mut txn = store.begin();
        let stored = match txn.get(STORED_IDENTITY) {
            Ok(Some(bytes)) => serde_json::from_slice::<Stored>(&bytes)?,
            Ok(None) => {
                let (key_pem, cert_pem) = new_identity()?;
                let stored = Stored { key_pem, cert_pem };
                txn.put(STORED_IDENTITY, &serde_json::to_vec(&stored)?);
                match txn.commit() {
                    Ok(()) => tracing::info!(
                        "generated a signing key and a self-signed certificate in the database"
                    ),
                    Err(crate::store::CommitError::Conflict(_)) => continue,
                    Err(e) => return Err(e.into_error()),
                }
                stored
            }
            Err(_) if txn.conflicted() => continue,
            Err(e) => return Err(e),
        };
        let key = LocalKey::from_pem(&stored.key_pem, &stored.cert_pem)
            .context("the signing key stored in the database")?;
        return Ok(Identity {
            key,
            certificate_pem: stored.cert_pem,
            source: "the database".into(),
        });
    }
    bail!("storing the signing identity kept conflicting")
}

/// A new P-256 key and a self-signed certificate for it (ten years), as PEM.
fn new_identity() -> anyhow::Result<(String, String)> {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(|e| anyhow::anyhow!("OS randomness: {e}"))?;
    seal_keys::generate(&secret, crate::clock::now_ms())
}

fn write_new(path: &Path, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    use std::io::Write;
    let tmp: PathBuf = path.with_extension("tmp");
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(mode);
    }
    let mut f = opts
        .open(&tmp)
        .with_context(|| format!("writing {}", tmp.display()))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
