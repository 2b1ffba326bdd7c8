//! The local channel `esign admin` reaches a running server through: a Unix socket,
//! `<data-dir>/admin.sock`, that only the service's own user can open (mode 0600 in the
//! data directory). One JSON request per connection, `{"method", "path", "body"}`,
//! answered with `{"status", "body"}`; the server runs it as an engine call of the
//! admin origin, so the admin routes stay unreachable over HTTP. A backup or a store
//! check runs in the server the same way. Without a server on
//! the other end, the CLI opens the store itself.

use crate::bindings::{Origin, Request};
use crate::calls::Dispatcher;
use crate::runtime::Faults;
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The largest request or answer on the channel.
const MAX_MESSAGE: u64 = 16 << 20;
/// What a peer has to send its request or read its answer.
const TIMEOUT: Duration = Duration::from_secs(60);
/// How long the CLI waits for work that may take long (a backup, a check).
const LONG_WAIT: Duration = Duration::from_secs(24 * 3600);

/// What travels to the server: an engine request, or a backup the server writes.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AdminMessage {
    Engine(AdminRequest),
    Backup { to: PathBuf },
    Check { repair: bool },
}

/// An admin request as it travels.
#[derive(Serialize, Deserialize)]
pub struct AdminRequest {
    pub method: String,
    pub path: String,
    pub body: serde_json::Value,
}

/// The engine's answer as it travels.
#[derive(Serialize, Deserialize)]
pub struct AdminAnswer {
    pub status: u16,
    pub body: serde_json::Value,
}

/// A request from the local administrator.
pub fn admin_request(method: &str, path: &str, body: serde_json::Value) -> Request {
    Request {
        method: method.into(),
        path: path.into(),
        query: String::new(),
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.to_string().into_bytes(),
        parts: Vec::new(),
        origin: Origin::Admin,
        remote_addr: "local".into(),
    }
}

/// Runs an admin request; the JSON body on success, the engine's error otherwise.
pub fn admin_call(d: &Dispatcher, req: Request) -> anyhow::Result<serde_json::Value> {
    let resp = d.handle_blocking(&req, Faults::default());
    body_of(
        resp.status,
        serde_json::from_slice(&resp.body).unwrap_or_default(),
    )
}

/// An admin answer's body: the JSON on success, the engine's error otherwise.
pub fn body_of(status: u16, body: serde_json::Value) -> anyhow::Result<serde_json::Value> {
    if status >= 400 {
        anyhow::bail!(
            "{} ({status})",
            body["description"].as_str().unwrap_or("failed"),
        );
    }
    Ok(body)
}

/// `esign admin check` on the store `d` runs on, its engine pages as admin calls.
pub fn check(d: &Dispatcher, repair: bool) -> anyhow::Result<crate::check::Report> {
    let mut call =
        |path: &str, body: serde_json::Value| admin_call(d, admin_request("POST", path, body));
    crate::check::run(d.store(), &mut call, repair)
}

/// The channel of the server that uses `data_dir`.
pub fn socket_path(data_dir: &Path) -> PathBuf {
    data_dir.join("admin.sock")
}

/// Binds the channel at `path` (0600), taking over a socket a dead server left. Done
/// before the server says it listens, so a client that saw that finds the channel.
/// Needs a tokio runtime context.
#[cfg(unix)]
pub fn bind(path: &Path) -> anyhow::Result<tokio::net::UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    // A socket left by a server that died: nobody answers on it.
    if path.exists() && std::os::unix::net::UnixStream::connect(path).is_err() {
        let _ = std::fs::remove_file(path);
    }
    let listener = tokio::net::UnixListener::bind(path)
        .with_context(|| format!("listening on {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    tracing::info!(
        "admin commands reach this server through {}",
        path.display()
    );
    Ok(listener)
}

/// Serves the channel on `listener` (bound at `path`) until `stop` turns true; the
/// socket file goes with it.
#[cfg(unix)]
pub async fn serve(
    listener: tokio::net::UnixListener,
    path: PathBuf,
    data_dir: PathBuf,
    dispatcher: Dispatcher,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((s, _)) => s,
                Err(e) => {
                    tracing::warn!("admin channel: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stop.changed() => break,
        };
        let d = dispatcher.clone();
        let dir = data_dir.clone();
        tokio::spawn(async move {
            if let Err(e) = answer(stream, d, dir).await {
                tracing::warn!("admin channel: {e:#}");
            }
        });
    }
    let _ = std::fs::remove_file(&path);
}

#[cfg(unix)]
async fn answer(
    stream: tokio::net::UnixStream,
    d: Dispatcher,
    data_dir: PathBuf,
) -> anyhow::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (read, mut write) = stream.into_split();
    let mut text = Vec::new();
    tokio::time::timeout(TIMEOUT, read.take(MAX_MESSAGE).read_to_end(&mut text)).await??;
    let answer = match serde_json::from_slice::<AdminMessage>(&text) {
        Ok(AdminMessage::Engine(req)) => {
            let request = admin_request(&req.method, &req.path, req.body);
            let resp =
                tokio::task::spawn_blocking(move || d.handle_blocking(&request, Faults::default()))
                    .await?;
            AdminAnswer {
                status: resp.status,
                body: serde_json::from_slice(&resp.body).unwrap_or_default(),
            }
        }
        Ok(AdminMessage::Backup { to }) => {
            let store = d.store().clone();
            let written =
                tokio::task::spawn_blocking(move || crate::backup::write(&store, &data_dir, &to))
                    .await?;
            answered(written, "backup_failed")?
        }
        Ok(AdminMessage::Check { repair }) => {
            let report = tokio::task::spawn_blocking(move || check(&d, repair)).await?;
            answered(report, "check_failed")?
        }
        Err(e) => failed(400, "invalid_request", format!("not an admin request: {e}")),
    };
    write.write_all(&serde_json::to_vec(&answer)?).await?;
    write.shutdown().await?;
    Ok(())
}

/// An error answer in the API's error shape.
#[cfg(unix)]
fn failed(status: u16, error: &str, description: String) -> AdminAnswer {
    AdminAnswer {
        status,
        body: serde_json::json!({"error": error, "status": status, "description": description}),
    }
}

/// The answer to work the server did itself (a backup, a check): its result as JSON,
/// or a 500 named `error`.
#[cfg(unix)]
fn answered<T: Serialize>(result: anyhow::Result<T>, error: &str) -> anyhow::Result<AdminAnswer> {
    Ok(match result {
        Ok(value) => AdminAnswer {
            status: 200,
            body: serde_json::to_value(value)?,
        },
        Err(e) => failed(500, error, format!("{e:#}")),
    })
}

/// Sends `req` to the server that uses `data_dir`; `None` when no server answers
/// there (no socket, or nobody listening), so the caller opens the store itself.
pub fn call(data_dir: &Path, req: &AdminRequest) -> anyhow::Result<Option<AdminAnswer>> {
    send(
        data_dir,
        &AdminMessage::Engine(AdminRequest {
            method: req.method.clone(),
            path: req.path.clone(),
            body: req.body.clone(),
        }),
        TIMEOUT,
    )
}

/// Asks the server that uses `data_dir` to write a backup to `to`; `None` when no
/// server answers there.
pub fn backup(data_dir: &Path, to: &Path) -> anyhow::Result<Option<AdminAnswer>> {
    let message = AdminMessage::Backup {
        to: to.to_path_buf(),
    };
    send(data_dir, &message, LONG_WAIT)
}

/// Asks the server that uses `data_dir` to check its store; `None` when no server
/// answers there.
pub fn check_remote(data_dir: &Path, repair: bool) -> anyhow::Result<Option<AdminAnswer>> {
    send(data_dir, &AdminMessage::Check { repair }, LONG_WAIT)
}

#[cfg(unix)]
fn send(
    data_dir: &Path,
    message: &AdminMessage,
    wait: Duration,
) -> anyhow::Result<Option<AdminAnswer>> {
    use std::io::{Read, Write};
    let path = socket_path(data_dir);
    let mut stream = match std::os::unix::net::UnixStream::connect(&path) {
        Ok(s) => s,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) =>
        {
            return Ok(None);
        }
        Err(e) => return Err(e).with_context(|| format!("connecting to {}", path.display())),
    };
    stream.set_read_timeout(Some(wait))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    stream.write_all(&serde_json::to_vec(message)?)?;
    stream.shutdown(std::net::Shutdown::Write)?;
    let mut text = Vec::new();
    stream.take(MAX_MESSAGE).read_to_end(&mut text)?;
    let answer = serde_json::from_slice(&text)
        .with_context(|| format!("reading the server's answer on {}", path.display()))?;
    Ok(Some(answer))
}

/// No Unix sockets here: the CLI always opens the store itself.
#[cfg(not(unix))]
fn send(_: &Path, _: &AdminMessage, _: Duration) -> anyhow::Result<Option<AdminAnswer>> {
    Ok(None)
}
