//! Forgetting what has expired: a login token once its grace period is over, a
//! download link, an OAuth record (a pending `/authorize`, a code, an access or
//! refresh token, an MCP session). The jobs that do it are scheduled when the record
//! is made; each asks one of these verbs.

use crate::base::cx::Cx;
use crate::base::keyspace::{MCPS, OACODE, OAREQ, OART, OAT};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::accounts::{Token, token_key};
use crate::domain::auth::PURGE_GRACE_MS;
use crate::domain::downloads::link_key;

/// Forgets the token whose hash is `hash` once its grace period is over; `Some(at)`
/// when that is still to come (the job runs again then).
pub fn purge_token(cx: &mut Cx, hash: &str) -> Option<u64> {
    let key = token_key(hash);
    match cx.load::<Token>(&key) {
        Some(token) if token.expires_ms + PURGE_GRACE_MS > cx.now() => {
            Some(token.expires_ms + PURGE_GRACE_MS)
        }
        Some(_) => {
            cx.p.delete(&key);
            None
        }
        None => None,
    }
}

/// Forgets the download link whose hash is `hash`.
pub fn forget_link(cx: &mut Cx, hash: &str) {
    cx.p.delete(&link_key(hash));
}

/// The key families of the OAuth records [`forget_oauth`] deletes.
const OAUTH_FAMILIES: [&str; 5] = [OAREQ, OACODE, OAT, OART, MCPS];

/// Deletes the OAuth record at `key`; `false` (nothing deleted) when `key` is not in
/// one of the OAuth families.
pub fn forget_oauth(cx: &mut Cx, key: &[u8]) -> bool {
    let ours = OAUTH_FAMILIES.iter().any(|family| {
        key.strip_prefix(family.as_bytes())
            .is_some_and(|rest| rest.first() == Some(&b'/'))
    });
    if ours {
        cx.p.delete(key);
    }
    ours
}
