//! Host work: what a job's work order asks for (download, import, Word conversion,
//! rendering with page images, the seal), done outside any transaction before the
//! engine runs the job. The work itself is `esign_formats::work`, the code the formats
//! component runs too; this module is its [`WorkIo`] on this host (the store's blobs,
//! the outbound client, LibreOffice, the [`Sealer`]). The result ([`Prepared`]) holds
//! the outcome for the engine and the new blobs, which the job's transaction writes
//! together with the engine's changes: a crash before that commit loses nothing but the
//! work, which is done again.

use crate::bindings::{ImportResult, WorkFailure, WorkOrder, WorkOutcome};
use crate::clock::now_ms;
use crate::evidence::Sealer;
use crate::host_tables::keys;
use crate::ids::{random_id, sha256_hex};
use crate::outbound::Outbound;
use crate::sandbox::{Sandbox, Stopped};
use crate::store::Store;
use esign_formats::office;
use esign_formats::seal::SealHost;
use esign_formats::work::{self as shared, WorkIo};
use std::sync::Arc;
use std::time::Duration;

/// What a work order produced.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub outcome: WorkOutcome,
    /// New blobs (id, bytes) that the outcome names.
    pub blobs: Vec<(String, Vec<u8>)>,
}

/// What the work needs from the process.
#[derive(Clone)]
pub struct WorkContext {
    pub store: Arc<Store>,
    pub outbound: Outbound,
    /// Largest file downloaded from a URL.
    pub max_download_bytes: usize,
    /// The LibreOffice binary, when Word conversion is available.
    pub soffice: Option<String>,
    pub convert_timeout: Duration,
    /// Seals the final PDFs of completed documents.
    pub sealer: Arc<Sealer>,
    /// Where the work runs: the formats component, with its memory cap and deadline.
    pub sandbox: Arc<Sandbox<NativeIo>>,
    /// Pages an imported file may have (`--max-pages`).
    pub max_pages: usize,
}

/// Finds LibreOffice: `configured` if given, else `soffice` or `libreoffice` on PATH.
/// `None` when none of them runs.
pub fn find_soffice(configured: Option<&str>) -> Option<String> {
    let candidates: Vec<&str> = match configured {
        Some(c) => vec![c],
        None => vec!["soffice", "libreoffice"],
    };
    candidates.into_iter().map(str::to_string).find(|c| {
        std::process::Command::new(c)
            .arg("--version")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// What [`perform`] did with a work order.
#[derive(Debug)]
pub enum Performed {
    /// An outcome for the engine (a failure among them: a file over a budget fails).
    Done(Box<Prepared>),
    /// The server is shutting down: the job stays, to run again at the next start.
    Stopped,
}

/// Does the work of `order` in the sandbox (the formats component, with its memory cap
/// and deadline), on a blocking thread; downloads and the time stamping authority are
/// awaited from there. A file over a budget (memory, time, pages) gets a failure
/// outcome, so its document fails with the reason in its trail.
pub async fn perform(cx: &WorkContext, order: &WorkOrder) -> Performed {
    let timed = match order {
        WorkOrder::ImportFiles(_) => "import",
        WorkOrder::Render(r) if r.seal.is_some() => "seal",
        WorkOrder::Render(_) => "render",
        WorkOrder::Fetch(_) => "fetch",
    };
    let started = std::time::Instant::now();
    let (sandbox, max_pages, owned) = (cx.sandbox.clone(), cx.max_pages, order.clone());
    let io = NativeIo {
        cx: cx.clone(),
        handle: tokio::runtime::Handle::current(),
        blobs: Vec::new(),
    };
    let done = tokio::task::spawn_blocking(move || {
        let (result, io) = sandbox.perform(&owned, now_ms(), io);
        match result {
            Ok(outcome) => Some(limit_pages(outcome, max_pages, io.blobs)),
            Err(Stopped::Shutdown) => None,
            Err(why) => {
                tracing::warn!(work = timed, "work order stopped: {}", why.reason());
                Some(Prepared {
                    outcome: failed_outcome(&owned, &why.reason()),
                    blobs: Vec::new(),
                })
            }
        }
    })
    .await;
    crate::metrics::get()
        .work_seconds
        .get_or_create(&crate::metrics::KindLabel { kind: timed.into() })
        .observe(started.elapsed().as_secs_f64());
    match done {
        Ok(Some(prepared)) => Performed::Done(Box::new(prepared)),
        Ok(None) => Performed::Stopped,
        Err(e) => Performed::Done(Box::new(Prepared {
            outcome: failed_outcome(order, &format!("the work failed: {e}")),
            blobs: Vec::new(),
        })),
    }
}

/// An imported file of more than `max_pages` pages fails (`invalid-pdf`, with the
/// count and the limit): its page images would be the work of minutes. The blobs its
/// import made (a converted PDF, a download) are not written: no outcome names them.
fn limit_pages(outcome: WorkOutcome, max_pages: usize, blobs: Vec<(String, Vec<u8>)>) -> Prepared {
    let WorkOutcome::ImportFiles(results) = outcome else {
        return Prepared { outcome, blobs };
    };
    let mut refused = Vec::new();
    let results = results
        .into_iter()
        .map(|r| match r {
            ImportResult::Ok(f) if f.pages.len() > max_pages => {
                refused.push(f.blob);
                refused.extend(f.downloaded.map(|d| d.id));
                ImportResult::Failed(failure(
                    "invalid-pdf",
                    format!(
                        "the file has {} pages; this server takes at most {max_pages} pages \
                         per file (--max-pages)",
                        f.pages.len()
                    ),
                ))
            }
            other => other,
        })
        .collect();
    Prepared {
        outcome: WorkOutcome::ImportFiles(results),
        blobs: blobs
            .into_iter()
            .filter(|(id, _)| !refused.contains(id))
            .collect(),
    }
}

/// The failure outcome of `order`, every file of an import failing with `why`.
fn failed_outcome(order: &WorkOrder, why: &str) -> WorkOutcome {
    match order {
        WorkOrder::ImportFiles(sources) => WorkOutcome::ImportFiles(
            sources
                .iter()
                .map(|_| ImportResult::Failed(failure("invalid-pdf", why)))
                .collect(),
        ),
        WorkOrder::Render(_) => WorkOutcome::Render(Err(failure("render-failed", why))),
        WorkOrder::Fetch(_) => WorkOutcome::Fetch(Err(failure("download-failed", why))),
    }
}

/// The work's [`WorkIo`] on this host.
pub struct NativeIo {
    cx: WorkContext,
    handle: tokio::runtime::Handle,
    /// What the work put, to be written with the outcome.
    blobs: Vec<(String, Vec<u8>)>,
}

impl SealHost for NativeIo {
    fn certificates(&self) -> Result<Vec<Vec<u8>>, String> {
        self.cx.sealer.certificates()
    }

    fn sign(&self, digest: &[u8; 32]) -> Result<Vec<u8>, String> {
        self.cx.sealer.sign(digest)
    }

    fn timestamp(&self, request: &[u8]) -> Result<Option<Vec<u8>>, String> {
        self.cx.sealer.timestamp(request)
    }
}

impl WorkIo for NativeIo {
    fn blob(&mut self, id: &str) -> Result<Option<Vec<u8>>, String> {
        self.cx
            .store
            .get_committed(&keys::blob(id))
            .map_err(|e| format!("{e:#}"))
    }

    fn put(&mut self, data: Vec<u8>) -> shared::BlobInfo {
        let info = shared::BlobInfo {
            id: random_id(),
            size: data.len() as u64,
            sha256: sha256_hex(&data),
        };
        self.blobs.push((info.id.clone(), data));
        info
    }

    fn download(&mut self, url: &str) -> Result<Vec<u8>, String> {
        self.handle
            .block_on(self.cx.outbound.download(url, self.cx.max_download_bytes))
    }

    fn convert_docx(&mut self, docx: Vec<u8>) -> Result<Vec<u8>, shared::WorkFailure> {
        let shared_failure = |code: &str, message: String| shared::WorkFailure {
            code: code.into(),
            message,
        };
        let Some(soffice) = &self.cx.soffice else {
            return Err(shared_failure(
                "conversion-unavailable",
                "Word files cannot be converted here: LibreOffice (soffice) is not installed"
                    .into(),
            ));
        };
        office::convert_docx_to_pdf(&docx, soffice, self.cx.convert_timeout).map_err(|e| match e {
            office::ConvertError::Unavailable(why) => shared_failure(
                "conversion-unavailable",
                format!("LibreOffice could not be started: {why}"),
            ),
            office::ConvertError::Failed(why) => shared_failure(
                "conversion-failed",
                format!("LibreOffice could not convert the Word file: {why}"),
            ),
        })
    }

    fn warn(&mut self, message: &str) {
        tracing::warn!("{message}");
    }
}

fn failure(code: &str, message: impl Into<String>) -> WorkFailure {
    WorkFailure {
        code: code.into(),
        message: message.into(),
    }
}
