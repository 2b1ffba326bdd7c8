//! `esign verify FILE`: the check of a sealed PDF's signature.

use crate::evidence;
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct VerifyArgs {
    /// The PDF to check.
    pub file: PathBuf,
    /// The certificate (PEM, e.g. from GET /v1/signing-certificate) the file must be
    /// signed with.
    #[arg(long)]
    pub cert: Option<PathBuf>,
}

/// `esign verify FILE [--cert PEM]`.
pub fn verify(args: VerifyArgs) -> anyhow::Result<()> {
    let pdf =
        std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let wanted: Option<Vec<String>> = match &args.cert {
        None => None,
        Some(path) => {
            let pem = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            let chain = x509_cert::Certificate::load_pem_chain(&pem)
                .map_err(|e| anyhow::anyhow!("{}: not a PEM certificate: {e}", path.display()))?;
            Some(
                chain
                    .iter()
                    .map(|c| {
                        use der::Encode;
                        let der = c.to_der().unwrap_or_default();
                        crate::ids::sha256_hex(&der)
                    })
                    .collect(),
            )
        }
    };
    let c = evidence::check(&pdf, "");
    let by_cert = wanted.as_ref().map(|w| w.contains(&c.certificate_sha256));
    let yes = |b: bool| if b { "yes" } else { "NO" };
    println!("file:               {}", args.file.display());
    println!("signed:             {}", yes(c.signed));
    println!("signature valid:    {}", yes(c.valid));
    println!("covers whole file:  {}", yes(c.whole_file));
    println!("signer:             {}", c.signer);
    println!("certificate sha256: {}", c.certificate_sha256);
    if let Some(ok) = by_cert {
        println!("is --cert:          {}", yes(ok));
    }
    let when = |ms: Option<u64>| {
        ms.and_then(|m| chrono::DateTime::from_timestamp_millis(m as i64))
            .map(|t| t.to_rfc3339())
            .unwrap_or_else(|| "-".into())
    };
    println!("signed at:          {}", when(c.signed_at_ms));
    match c.timestamp_ms {
        Some(_) => println!(
            "timestamp:          {} (valid: {})",
            when(c.timestamp_ms),
            yes(c.timestamp_valid)
        ),
        None => println!("timestamp:          none"),
    }
    println!("document id:        {}", c.document_id);
    println!("audit trail head:   {}", c.log_head);
    for p in &c.problems {
        println!("problem:            {p}");
    }
    let ok = c.signed
        && c.valid
        && c.whole_file
        && by_cert.unwrap_or(true)
        && (c.timestamp_ms.is_none() || c.timestamp_valid);
    println!(
        "result:             {}",
        if ok { "VALID" } else { "NOT VALID" }
    );
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
