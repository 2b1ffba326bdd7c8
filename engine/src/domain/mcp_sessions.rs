//! MCP sessions of the handshake wire revisions (2025-11-25 and earlier): `initialize`
//! opens one, bound to the grant (the OAuth family) it was opened with; every later
//! request names it by its `Mcp-Session-Id`, and `DELETE /mcp` ends it. The 2026-07-28
//! revision is stateless and has none.
//!
//! | key | value |
//! |---|---|
//! | `mcps/{sha256(session id)}` | [`Session`], removed a day after it opened |

use crate::base::cx::Cx;
use crate::base::keyspace::MCPS;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, new_secret, sha256_hex};
use crate::domain::oauth;
use serde::{Deserialize, Serialize};

/// A session: the grant it belongs to and when it opened.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Session {
    pub family: String,
    pub created_ms: u64,
}

/// How long a session lives; then the client initializes again.
const SESSION_TTL_MS: u64 = 24 * 3600 * 1000;

fn session_key(id: &str) -> Vec<u8> {
    util::key(&[MCPS, &sha256_hex(id.as_bytes())])
}

/// Opens a session for the grant `family`; its id.
pub fn open(cx: &mut Cx, family: &str) -> String {
    let sid = new_secret(cx);
    let now = cx.now();
    cx.save(
        &session_key(&sid),
        &Session {
            family: family.to_string(),
            created_ms: now,
        },
    );
    oauth::forget_at(cx, session_key(&sid), now + SESSION_TTL_MS);
    sid
}

/// Whether `sid` names an unexpired session of the grant `family`.
pub fn is_live(cx: &mut Cx, sid: &str, family: &str) -> bool {
    let now = cx.now();
    cx.load::<Session>(&session_key(sid))
        .is_some_and(|s| s.family == family && s.created_ms + SESSION_TTL_MS > now)
}

/// Ends the session `sid` of the grant `family`; false when the grant has no such
/// session (expired ones included, until they are removed).
pub fn end(cx: &mut Cx, sid: &str, family: &str) -> bool {
    let key = session_key(sid);
    match cx.load::<Session>(&key) {
        Some(s) if s.family == family => {
            cx.p.delete(&key);
            true
        }
        _ => false,
    }
}
