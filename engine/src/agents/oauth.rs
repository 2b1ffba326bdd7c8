//! What the OAuth parts share: codes, the error body of RFC 6749 §5.2 / RFC 7591, and the
//! job that forgets expired records. The parts: [`super::clients`] (who may ask),
//! [`super::authorize`] (the person's sign-in and consent), [`super::tokens`] (codes
//! and refresh tokens for access tokens, revocation, connections).
//!
//! Records (all values [`crate::model`]-encoded):
//!
//! | key | value |
//! |---|---|
//! | `oac/{sha256(client_id)}` | [`super::Client`] (registered, or a cached metadata document) |
//! | `oareq/{sha256(cookie)}` | [`super::authorize::AuthRequest`]: one browser's pending authorization |
//! | `oacode/{sha256(code)}` | [`Code`] |
//! | `oaf/{family}`, `oafu/{user}/{family}` | [`super::Family`] and its index |
//! | `oat/{sha256}`, `oart/{sha256}` | [`super::Grant`]: access and refresh tokens |

use crate::http::json;
#[allow(unused_imports)]
use crate::prelude::*;
use crate::{Cx, JobOutcome, JobSpec, Response};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Job that deletes an OAuth record (payload: its key) once it has expired.
pub const FORGET_JOB: &str = "oauth.forget";

/// How long a pending authorization and an unused code live: 10 minutes.
pub(super) const CODE_TTL_MS: u64 = 10 * 60 * 1000;

/// An issued authorization code.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Code {
    pub client_id: String,
    pub redirect_uri: String,
    pub challenge: String,
    pub user_id: String,
    pub entity_id: String,
    pub expires_ms: u64,
    /// The family its exchange created; non-empty once used.
    pub family: String,
}

pub(super) fn code_key(hash: &str) -> Vec<u8> {
    crate::util::key(&["oacode", hash])
}

/// An RFC 6749 §5.2 / RFC 7591 §3.2.2 error: `{"error", "error_description"}`.
pub(super) fn oauth_error(status: u16, error: &str, description: impl Into<String>) -> Response {
    let mut resp = json(
        status,
        &json!({ "error": error, "error_description": description.into() }),
    );
    resp.headers
        .push(("cache-control".into(), "no-store".into()));
    resp
}

pub(super) fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub(super) fn forget_at(cx: &mut Cx, key: Vec<u8>, at_ms: u64) {
    cx.p.schedule_job(JobSpec {
        kind: FORGET_JOB.into(),
        payload: key,
        run_at_ms: at_ms,
        work: None,
        scope: String::new(),
    });
}

/// Job [`FORGET_JOB`]: deletes an expired OAuth record.
pub fn forget(cx: &mut Cx, payload: &[u8]) -> JobOutcome {
    let allowed = [&b"oareq/"[..], b"oacode/", b"oat/", b"oart/", b"mcps/"];
    if allowed.iter().any(|p| payload.starts_with(p)) {
        cx.p.delete(payload);
        JobOutcome::Done
    } else {
        JobOutcome::Failed("not an OAuth record key".into())
    }
}
