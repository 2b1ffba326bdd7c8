//! The HTTP front: hyper 1 serving HTTP/1.1 and HTTP/2 (ALPN over TLS, prior knowledge
//! in clear), TLS through rustls, body size limits, and graceful shutdown. Each request
//! becomes one engine call through the [`Dispatcher`].

use crate::bindings::{Origin, Request, Response};
use crate::calls::{Dispatcher, error_response};
use crate::runtime::Faults;
use crate::staged_parts::Staging;
use anyhow::Context;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// A body over this (or of unknown length) needs a [`FrontConfig::large_bodies`] permit.
pub const LARGE_BODY: u64 = 1 << 20;

/// HTTP/2 streams one connection may have open at once.
const H2_MAX_STREAMS: u32 = 128;
/// HTTP/2 pings an idle connection this often, and drops it when a ping goes unanswered
/// this long.
const H2_KEEP_ALIVE: (Duration, Duration) = (Duration::from_secs(30), Duration::from_secs(20));

/// How the front behaves; fixed for the process.
#[derive(Clone)]
pub struct FrontConfig {
    pub max_body_bytes: usize,
    /// Open connections at most: past it, the accept loop waits for one to close, so
    /// further clients wait in the kernel's backlog instead of costing memory and file
    /// descriptors.
    pub max_connections: usize,
    /// What a client has for each of the TLS handshake, the request headers (slowloris)
    /// and the body (a trickled body gets 408).
    pub read_timeout: Duration,
    /// Requests with a large body (over [`LARGE_BODY`], or of unknown length) that may be
    /// read and handled at once: a permit is taken before the body is buffered and held
    /// until the answer, so their memory is bounded however many clients upload.
    pub large_bodies: Arc<tokio::sync::Semaphore>,
    /// Honour `x-esign-test-fault` request headers (test builds of the suite only).
    pub test_faults: bool,
    /// The built-in test eID provider, whose pages (`/eid/test/...`) this front serves.
    pub eid_test: Option<Arc<crate::eid::TestProvider>>,
    /// A proxy in front adds the client's address to `X-Forwarded-For`: the last entry
    /// is the address requests come from (login throttling counts per address).
    pub behind_proxy: bool,
    /// Serving HTTPS: answers carry `Strict-Transport-Security`.
    pub tls: bool,
    /// The workers `/readyz` watches.
    pub health: Arc<crate::health::Health>,
}

/// Builds a rustls acceptor from PEM files, offering h2 and http/1.1.
pub fn tls_acceptor(cert: &Path, key: &Path) -> anyhow::Result<TlsAcceptor> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("reading the certificate {}", cert.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("parsing the certificate {}", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("reading the private key {}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("the TLS certificate and key do not fit together")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Connections the kernel completes and queues for accepting: the kernel caps it at
/// `net.core.somaxconn` (4096 on current Linux). The default of 128 drops the SYNs of a
/// burst the moment the accept loop is a few milliseconds behind, and each dropped
/// client waits a second to retry.
const LISTEN_BACKLOG: u32 = 4096;

/// Binds the listening socket (with `SO_REUSEADDR` and a deep backlog). Needs a tokio
/// runtime context.
pub fn listen(addr: std::net::SocketAddr) -> anyhow::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket
        .bind(addr)
        .with_context(|| format!("cannot listen on {addr}"))?;
    Ok(socket.listen(LISTEN_BACKLOG)?)
}

/// Accepts connections until `shutdown` resolves, then lets open requests finish (at
/// most `grace`).
pub async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    dispatcher: Dispatcher,
    front: FrontConfig,
    shutdown: impl std::future::Future<Output = ()>,
    grace: Duration,
) -> anyhow::Result<()> {
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(front.read_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(H2_MAX_STREAMS)
        .keep_alive_interval(H2_KEEP_ALIVE.0)
        .keep_alive_timeout(H2_KEEP_ALIVE.1);
    let builder = Arc::new(builder);
    let connections = Arc::new(tokio::sync::Semaphore::new(front.max_connections));
    tokio::pin!(shutdown);
    loop {
        // A connection slot first: at the limit, accept nothing until one closes.
        let slot = tokio::select! {
            slot = connections.clone().acquire_owned() => match slot {
                Ok(s) => s,
                Err(_) => break,
            },
            _ = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let d = dispatcher.clone();
        let f = front.clone();
        let svc = service_fn(move |req| {
            let (d, f) = (d.clone(), f.clone());
            async move { Ok::<_, Infallible>(respond(&d, &f, peer, req).await) }
        });
        let watcher = graceful.watcher();
        let builder = builder.clone();
        let tls = tls.clone();
        let handshake = front.read_timeout;
        tokio::spawn(async move {
            let _slot = slot; // held until the connection ends
            let result = match tls {
                Some(acceptor) => {
                    match tokio::time::timeout(handshake, acceptor.accept(stream)).await {
                        Ok(Ok(s)) => {
                            let conn = builder.serve_connection(TokioIo::new(s), svc).into_owned();
                            watcher.watch(conn).await
                        }
                        Ok(Err(e)) => {
                            tracing::debug!(%peer, "TLS handshake failed: {e}");
                            return;
                        }
                        Err(_) => {
                            tracing::debug!(%peer, "TLS handshake not done in {handshake:?}");
                            return;
                        }
                    }
                }
                None => {
                    let conn = builder
                        .serve_connection(TokioIo::new(stream), svc)
                        .into_owned();
                    watcher.watch(conn).await
                }
            };
            if let Err(e) = result {
                tracing::debug!(%peer, "connection ended with an error: {e}");
            }
        });
    }
    drop(listener);
    tracing::info!(
        "shutting down: waiting for {} open connection(s)",
        graceful.count()
    );
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(grace) => tracing::warn!("gave up waiting for open connections"),
    }
    Ok(())
}

/// HSTS for a year, on every answer over TLS.
const HSTS: &str = "max-age=31536000";

fn to_hyper(resp: Response) -> hyper::Response<Full<Bytes>> {
    let mut builder = hyper::Response::builder().status(resp.status);
    for (name, value) in &resp.headers {
        builder = builder.header(name, value);
    }
    builder
        .body(Full::new(Bytes::from(resp.body)))
        .unwrap_or_else(|e| {
            tracing::error!("engine produced an invalid response: {e}");
            let mut r = hyper::Response::new(Full::new(Bytes::new()));
            *r.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
            r
        })
}

fn too_large(max: usize) -> Response {
    error_response(
        413,
        "payload_too_large",
        &format!("the request body is larger than the limit of {max} bytes"),
    )
}

/// Answers one request, and counts and logs it (by route template, with secrets in
/// the path redacted).
async fn respond(
    d: &Dispatcher,
    front: &FrontConfig,
    peer: SocketAddr,
    req: hyper::Request<Incoming>,
) -> hyper::Response<Full<Bytes>> {
    let started = Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let mut resp = answer(d, front, peer, req).await;
    let route = take_route(&mut resp, &path);
    finish_headers(&mut resp, front.tls);
    let took = started.elapsed();
    crate::metrics::request(&route, method.as_str(), resp.status, took);
    tracing::debug!(
        trace_id = trace_id_of(&resp),
        route,
        method = method.as_str(),
        path = %crate::logging::redact(&path),
        status = resp.status,
        duration_ms = took.as_secs_f64() * 1000.0,
        "{} {} -> {} in {took:?}",
        method,
        crate::logging::redact(&path),
        resp.status,
    );
    to_hyper(resp)
}

/// The route template the engine named (see the engine's `router::ROUTE_HEADER`),
/// removed from the answer; the front's own paths by themselves, `unmatched` for the
/// rest.
fn take_route(resp: &mut Response, path: &str) -> String {
    let at = resp.headers.iter().position(|(n, _)| n == "x-esign-route");
    match at {
        Some(i) => resp.headers.remove(i).1,
        None if matches!(path, "/healthz" | "/readyz") => path.to_string(),
        None if path.starts_with("/eid/test/") => "/eid/test/{session}".into(),
        None => "unmatched".into(),
    }
}

/// What every answer carries: `nosniff`, and HSTS over TLS.
fn finish_headers(resp: &mut Response, tls: bool) {
    let has = |resp: &Response, name: &str| {
        resp.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    if !has(resp, "x-content-type-options") {
        resp.headers
            .push(("x-content-type-options".into(), "nosniff".into()));
    }
    if tls && !has(resp, "strict-transport-security") {
        resp.headers
            .push(("strict-transport-security".into(), HSTS.into()));
    }
}

/// The `trace_id` of a 500's body (so the request's log line and the error's share
/// it), or a fresh one.
fn trace_id_of(resp: &Response) -> String {
    let said = (resp.status == 500)
        .then(|| serde_json::from_slice::<serde_json::Value>(&resp.body).ok())
        .flatten()
        .and_then(|v| v["trace_id"].as_str().map(str::to_string));
    said.unwrap_or_else(crate::ids::random_id)
}

/// The address a request comes from: the peer, or behind a proxy the last entry of
/// `X-Forwarded-For` (the one the proxy added; earlier entries are the client's say).
fn source_of(front: &FrontConfig, peer: SocketAddr, headers: &hyper::HeaderMap) -> String {
    let forwarded = front
        .behind_proxy
        .then(|| headers.get_all("x-forwarded-for").iter().next_back())
        .flatten()
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.rsplit(',').next())
        .map(str::trim)
        .and_then(|v| v.parse::<std::net::IpAddr>().ok());
    forwarded.unwrap_or(peer.ip()).to_string()
}

async fn answer(
    d: &Dispatcher,
    front: &FrontConfig,
    peer: SocketAddr,
    req: hyper::Request<Incoming>,
) -> Response {
    if req.method() == hyper::Method::GET {
        match req.uri().path() {
            "/healthz" => return crate::health::healthz(),
            "/readyz" => return crate::health::readyz(d.store(), &front.health).await,
            _ => {}
        }
    }
    let (parts, body) = req.into_parts();
    let declared = parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    // A large body waits for its permit before a byte of it is buffered; so does one of
    // unknown length (chunked, or HTTP/2 without content-length) that is not already
    // known to be empty.
    let has_body = !hyper::body::Body::is_end_stream(&body);
    let _large = if has_body && declared.is_none_or(|n| n > LARGE_BODY) {
        front.large_bodies.clone().acquire_owned().await.ok()
    } else {
        None
    };
    if declared.is_some_and(|n| n > front.max_body_bytes as u64) {
        return too_large(front.max_body_bytes);
    }
    let ctype = parts
        .headers
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    // A form's file parts stay here, out of the engine, until the request is answered.
    let mut staging = Staging::default();
    let (body, form_parts) = if ctype
        .to_ascii_lowercase()
        .starts_with("multipart/form-data")
    {
        match read_form(front, &ctype, body, &mut staging).await {
            Ok(form) => (Bytes::new(), form),
            Err(resp) => return resp,
        }
    } else {
        match read_body(front, declared, body).await {
            Ok(body) => stage_file_member(&ctype, body, &mut staging),
            Err(resp) => return resp,
        }
    };
    if let (Some(provider), Some(session)) =
        (&front.eid_test, parts.uri.path().strip_prefix("/eid/test/"))
    {
        return test_eid(provider, parts.method.as_str(), session, &body);
    }
    let faults = if front.test_faults {
        test_faults(&parts.headers)
    } else {
        Faults::default()
    };
    let request = Request {
        method: parts.method.as_str().to_string(),
        path: parts.uri.path().to_string(),
        query: parts.uri.query().unwrap_or("").to_string(),
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        // Without a copy when the body is the only owner of its buffer.
        body: Vec::from(body),
        parts: form_parts,
        origin: Origin::Http,
        remote_addr: source_of(front, peer, &parts.headers),
    };
    let resp = d.handle(request, faults).await;
    drop(staging);
    send_blob(d, resp)
}

/// The header by which the engine names a blob for the server to send as the body
/// (WIT `settings.blob-responses`, set by `esign serve`).
const BLOB_HEADER: &str = "esign-blob";

/// A response that names a blob gets the blob's bytes, read from storage here (off
/// the worker): a download never passes through the engine's memory. 404
/// `file_not_found` when the blob is gone, 503 when storage fails.
fn send_blob(d: &Dispatcher, mut resp: Response) -> Response {
    let Some(at) = resp.headers.iter().position(|(n, _)| n == BLOB_HEADER) else {
        return resp;
    };
    let (_, id) = resp.headers.remove(at);
    let read = crate::runtime::offload(|| {
        d.store()
            .begin_read_only()
            .get_blob(&crate::host_tables::keys::blob(&id))
    });
    match read {
        Ok(Some(bytes)) => {
            resp.body = bytes;
            resp
        }
        Ok(None) => error_response(404, "file_not_found", "the file is not stored any more"),
        Err(e) => {
            tracing::error!(blob = id, "reading a blob to send: {e:#}");
            error_response(
                503,
                "storage_unavailable",
                "file storage is unavailable; retry later",
            )
        }
    }
}

/// 408 `request_timeout`: the body took longer than the read timeout.
fn read_timed_out(front: &FrontConfig) -> Response {
    let mut resp = error_response(
        408,
        "request_timeout",
        &format!(
            "the body did not arrive within {} s",
            front.read_timeout.as_secs()
        ),
    );
    resp.headers.push(("connection".into(), "close".into()));
    resp
}

/// Why reading a body failed, as the answer: 413 past the limit, else 400.
fn unreadable(
    front: &FrontConfig,
    e: &(dyn std::error::Error + Send + Sync + 'static),
) -> Response {
    if e.downcast_ref::<LengthLimitError>().is_some() {
        too_large(front.max_body_bytes)
    } else {
        error_response(
            400,
            "invalid_body",
            &format!("could not read the body: {e}"),
        )
    }
}

/// The whole body, within the size limit and the read timeout, gathered into one
/// buffer of its declared length as it arrives (not collected in chunks and then
/// copied whole).
async fn read_body(
    front: &FrontConfig,
    declared: Option<u64>,
    body: Incoming,
) -> Result<Bytes, Response> {
    let read = async {
        let room = declared.unwrap_or(0).min(front.max_body_bytes as u64) as usize;
        let mut buf = bytes::BytesMut::with_capacity(room);
        let mut body = Limited::new(body, front.max_body_bytes);
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame?.into_data() {
                buf.extend_from_slice(&data);
            }
        }
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(buf.freeze())
    };
    match tokio::time::timeout(front.read_timeout, read).await {
        Err(_) => Err(read_timed_out(front)),
        Ok(Err(e)) => Err(unreadable(front, e.as_ref())),
        Ok(Ok(body)) => Ok(body),
    }
}

/// A large JSON body's base64 `file_content` decoded and staged out of it
/// ([`Staging::stage_json_member`]), so the file is held once, decoded, and never in
/// the engine; any other body as it is.
fn stage_file_member(
    ctype: &str,
    body: Bytes,
    staging: &mut Staging,
) -> (Bytes, Vec<crate::bindings::FormPart>) {
    let json = ctype.to_ascii_lowercase().starts_with("application/json");
    if !json || body.len() < crate::staged_parts::JSON_MEMBER_FROM {
        return (body, Vec::new());
    }
    // Decoding and hashing megabytes leaves the worker.
    match crate::runtime::offload(|| staging.stage_json_member(&body)) {
        Some((rest, part)) => (Bytes::from(rest), vec![part]),
        None => (body, Vec::new()),
    }
}

/// A `multipart/form-data` body decoded as it arrives (within the size limit and the
/// read timeout), each part's bytes gathered once; its file parts staged
/// ([`crate::staged_parts`]), the engine getting their heads.
async fn read_form(
    front: &FrontConfig,
    ctype: &str,
    body: Incoming,
    staging: &mut Staging,
) -> Result<Vec<crate::bindings::FormPart>, Response> {
    use esign_formats::multipart::{self, ReadError};
    let stream = http_body_util::BodyDataStream::new(Limited::new(body, front.max_body_bytes));
    let parts = match tokio::time::timeout(front.read_timeout, multipart::read(ctype, stream)).await
    {
        Err(_) => return Err(read_timed_out(front)),
        Ok(Err(ReadError::Body(e))) => return Err(unreadable(front, e.as_ref())),
        Ok(Err(ReadError::Malformed(e))) => {
            return Err(error_response(
                400,
                "invalid_multipart",
                &format!("the multipart/form-data body is malformed: {e}"),
            ));
        }
        Ok(Ok(parts)) => parts,
    };
    // Hashing a file of megabytes leaves the worker.
    Ok(crate::runtime::offload(|| {
        parts
            .into_iter()
            .map(|p| match p.filename {
                Some(filename) => staging.stage(p.name, Some(filename), p.content_type, p.data),
                None => crate::bindings::FormPart {
                    name: p.name,
                    filename: None,
                    content_type: p.content_type,
                    data: p.data.to_vec(),
                    staged: None,
                },
            })
            .collect()
    }))
}

/// The test eID provider's page (GET) and its form (POST), outside the engine: it
/// stands for another site.
fn test_eid(p: &crate::eid::TestProvider, method: &str, session: &str, body: &[u8]) -> Response {
    let (status, headers, body) = match method {
        "GET" => match p.page(session) {
            Some(html) => (
                200,
                vec![("content-type".into(), "text/html; charset=utf-8".into())],
                html.into_bytes(),
            ),
            None => (404, Vec::new(), b"unknown eID session".to_vec()),
        },
        "POST" => match p.complete(session, body) {
            Some(back) => (303, vec![("location".into(), back)], Vec::new()),
            None => (400, Vec::new(), b"type a name to verify".to_vec()),
        },
        _ => (405, vec![("allow".into(), "GET, POST".into())], Vec::new()),
    };
    let mut headers: Vec<(String, String)> = headers;
    headers.push(("cache-control".into(), "no-store".into()));
    Response {
        status,
        headers,
        body,
    }
}

/// Parses `x-esign-test-fault: trap-on-put=N` and `x-esign-test-fault: blobs-unavailable`.
fn test_faults(headers: &hyper::HeaderMap) -> Faults {
    let mut faults = Faults::default();
    for value in headers.get_all("x-esign-test-fault") {
        let Ok(v) = value.to_str() else { continue };
        if let Some(n) = v.strip_prefix("trap-on-put=") {
            faults.trap_on_put = n.parse().ok();
        } else if v == "blobs-unavailable" {
            faults.blobs_unavailable = true;
        }
    }
    faults
}
