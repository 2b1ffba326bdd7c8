//! The answers a load balancer polls: `GET /healthz` (the process serves) and
//! `GET /readyz` (the store answers and every worker runs), outside `/v1`, without a
//! token, and without an engine call.

use crate::bindings::Response;
use crate::calls::error_response;
use crate::store::Store;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Longest the store may take to answer `/readyz`'s read.
const STORE_DEADLINE: Duration = Duration::from_secs(2);

/// The workers of the process, and whether each still runs.
#[derive(Default)]
pub struct Health {
    workers: Mutex<Vec<(&'static str, Arc<AtomicBool>)>>,
}

/// Held by a running worker: marks it stopped when dropped (when the task ends,
/// returns or panics).
struct Running(Arc<AtomicBool>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Health {
    /// Spawns the worker `work`, watched under `name`: `/readyz` fails once it has
    /// ended (returned or panicked).
    pub fn spawn_watched<F>(
        &self,
        name: &'static str,
        work: F,
    ) -> tokio::task::JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let flag = Arc::new(AtomicBool::new(true));
        self.workers.lock().unwrap().push((name, flag.clone()));
        let running = Running(flag);
        tokio::spawn(async move {
            let _running = running;
            work.await
        })
    }

    /// The workers that have stopped.
    fn stopped(&self) -> Vec<&'static str> {
        let workers = self.workers.lock().unwrap();
        workers
            .iter()
            .filter(|(_, running)| !running.load(Ordering::Acquire))
            .map(|(name, _)| *name)
            .collect()
    }
}

/// `GET /healthz`: 200 while the process serves.
pub fn healthz() -> Response {
    status_answer(200, serde_json::json!({ "status": "ok" }))
}

/// `GET /readyz`: 200 when a read of the store answers within two seconds and every
/// worker runs (the store's migrations are applied before the server listens); 503
/// with the reason otherwise.
pub async fn readyz(store: &Arc<Store>, health: &Health) -> Response {
    let store = store.clone();
    let read = tokio::task::spawn_blocking(move || store.get_committed(b"d/readyz"));
    let store_problem = match tokio::time::timeout(STORE_DEADLINE, read).await {
        Ok(Ok(Ok(_))) => None,
        Ok(Ok(Err(e))) => Some(format!("the store does not answer: {e:#}")),
        Ok(Err(e)) => Some(format!("the store check failed: {e}")),
        Err(_) => Some(format!(
            "the store did not answer within {} s",
            STORE_DEADLINE.as_secs()
        )),
    };
    let stopped = health.stopped();
    let mut problems: Vec<String> = store_problem.into_iter().collect();
    if !stopped.is_empty() {
        problems.push(format!("workers stopped: {}", stopped.join(", ")));
    }
    if problems.is_empty() {
        return status_answer(200, serde_json::json!({ "status": "ready" }));
    }
    let mut resp = error_response(503, "not_ready", &problems.join("; "));
    resp.headers.push(("retry-after".into(), "1".into()));
    resp.headers
        .push(("cache-control".into(), "no-store".into()));
    resp
}

fn status_answer(status: u16, body: serde_json::Value) -> Response {
    Response {
        status,
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("cache-control".into(), "no-store".into()),
        ],
        body: serde_json::to_vec(&body).expect("JSON"),
    }
}
