//! Login throttling (spec §8's lock, and OWASP ASVS 5.0 V6.3: resist guessing and
//! credential stuffing without letting anyone lock an account at will). Everything here
//! is decided before argon2 runs, and alike for emails with and without an account, so
//! no answer and no timing tells which accounts exist.
//!
//! - **Per email and source address**: `login_max_failures` failed logins in a row
//!   (each less than `login_lock_secs` after the one before) lock that email *from that
//!   source* for `login_lock_secs`: 400 `login_locked`, even with the right password
//!   (spec §8). The right password from another source still signs in, so a stranger
//!   cannot keep the owner out.
//! - **Per source**: at most [`SOURCE_FAILURES_PER_MINUTE`] failed logins in the minute
//!   from the first of them, whatever the email, then 429 with `Retry-After` (the rest
//!   of that minute).
//! - **In total**: at most [`TOTAL_FAILURES_PER_MINUTE`] likewise, then 429.
//!
//! | key | value |
//! |---|---|
//! | `lfail/e/{sha256 of the email}/{source}` | [`Failures`] |
//! | `lfail/s/{source}` | [`Window`] |
//! | `lfail/all` | [`Window`] |
//! | `lfailx/{expiry ms, 20 digits}/{key}` | empty: when a record stops mattering |
//!
//! Each failure removes a few records whose time has passed, so the table stays the
//! size of recent failures.

use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult};
use crate::base::keyspace::{LFAIL, LFAILX};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records;
use crate::base::util::{key, normalize_email, sha256_hex};
use serde::{Deserialize, Serialize};

/// Failed logins one source address may make in a minute.
pub const SOURCE_FAILURES_PER_MINUTE: u32 = 30;
/// Failed logins all sources together may make in a minute.
pub const TOTAL_FAILURES_PER_MINUTE: u32 = 1000;
/// Expired records removed by each failure, at most.
const SWEEP: usize = 8;

/// Failures of one email from one source.
#[derive(Serialize, Deserialize, Default)]
struct Failures {
    /// Failures in a row since the last success or lock.
    count: u32,
    locked_until_ms: u64,
    /// When the record stops mattering (its `lfailx/` entry).
    expires_ms: u64,
}

/// Failures counted in the minute from the first of them (not a clock minute: a burst
/// across a minute's turn is counted whole).
#[derive(Serialize, Deserialize, Default)]
struct Window {
    start_ms: u64,
    count: u32,
    expires_ms: u64,
}

const WINDOW_MS: u64 = 60_000;

fn email_key(email: &str, source: &str) -> Vec<u8> {
    key(&[
        LFAIL,
        "e",
        &sha256_hex(normalize_email(email).as_bytes()),
        source,
    ])
}

fn source_key(source: &str) -> Vec<u8> {
    key(&[LFAIL, "s", source])
}

fn total_key() -> Vec<u8> {
    key(&[LFAIL, "all"])
}

fn expiry_key(expires_ms: u64, record: &[u8]) -> Vec<u8> {
    let mut k = format!("{LFAILX}/{expires_ms:020}/").into_bytes();
    k.extend_from_slice(record);
    k
}

/// Refuses a login before its password is checked: 400 `login_locked` while this email
/// is locked from this source, 429 while the source or everyone is over the minute's
/// failures.
pub fn refuse_early(cx: &mut Cx, email: &str, source: &str) -> ApiResult<()> {
    let now = cx.now();
    let f: Failures = cx.load(&email_key(email, source)).unwrap_or_default();
    if f.locked_until_ms > now {
        let secs = (f.locked_until_ms - now).div_ceil(1000);
        return Err(http::ApiError::bad_request(
            "login_locked",
            format!(
                "too many failed logins; signing in to this account from here is locked for {secs} more seconds"
            ),
        ));
    }
    // Over the limit: the seconds until that window ends.
    let over = |w: Window, max: u32| {
        let end = w.start_ms + WINDOW_MS;
        (end > now && w.count >= max).then(|| (end - now).div_ceil(1000))
    };
    let source_window: Window = cx.load(&source_key(source)).unwrap_or_default();
    let total: Window = cx.load(&total_key()).unwrap_or_default();
    let waits = [
        over(source_window, SOURCE_FAILURES_PER_MINUTE),
        over(total, TOTAL_FAILURES_PER_MINUTE),
    ];
    if let Some(wait) = waits.into_iter().flatten().max() {
        return Err(http::ApiError::new(
            429,
            "too_many_requests",
            format!("too many failed logins; try again in {wait} s"),
        )
        .with_header("retry-after", wait.to_string()));
    }
    Ok(())
}

/// Records a failed login; true when it locked this email from this source.
pub fn failed(cx: &mut Cx, email: &str, source: &str) -> bool {
    let now = cx.now();
    let (lock_ms, max) = {
        let s = cx.settings();
        (s.login_lock_secs * 1000, s.login_max_failures.max(1))
    };
    let k = email_key(email, source);
    let mut f: Failures = cx.load(&k).unwrap_or_default();
    if f.expires_ms <= now {
        f.count = 0; // the last failure is too long ago to count in a row
    }
    f.count += 1;
    let locked = f.count >= max;
    if locked {
        f.count = 0;
        f.locked_until_ms = now + lock_ms;
    }
    let expires = (now + lock_ms).max(f.locked_until_ms);
    reindex(cx, &k, f.expires_ms, expires);
    f.expires_ms = expires;
    cx.save(&k, &f);
    count_minute(cx, &source_key(source), now);
    count_minute(cx, &total_key(), now);
    sweep(cx, now);
    locked
}

/// A successful login forgets this email's failures from this source.
pub fn succeeded(cx: &mut Cx, email: &str, source: &str) {
    let k = email_key(email, source);
    if let Some(f) = cx.load::<Failures>(&k) {
        cx.p.delete(&expiry_key(f.expires_ms, &k));
        cx.p.delete(&k);
    }
}

fn count_minute(cx: &mut Cx, k: &[u8], now: u64) {
    let mut w: Window = cx.load(k).unwrap_or_default();
    if w.start_ms + WINDOW_MS <= now {
        w.start_ms = now;
        w.count = 0;
    }
    w.count += 1;
    let expires = w.start_ms + WINDOW_MS;
    reindex(cx, k, w.expires_ms, expires);
    w.expires_ms = expires;
    cx.save(k, &w);
}

/// Moves record `k`'s expiry entry from `old` to `new`.
fn reindex(cx: &mut Cx, k: &[u8], old: u64, new: u64) {
    if old != new {
        if old != 0 {
            cx.p.delete(&expiry_key(old, k));
        }
        cx.p.put(&expiry_key(new, k), &[]);
    }
}

/// Removes up to [`SWEEP`] records whose time has passed, oldest first.
fn sweep(cx: &mut Cx, now: u64) {
    let (start, _) = records::prefix_range(&format!("{LFAILX}/"));
    let end = format!("{LFAILX}/{now:020}/").into_bytes();
    for (entry, _) in cx.p.scan(&start, &end, SWEEP as u32, false) {
        let record = &entry[LFAILX.len() + 1 + 21..];
        cx.p.delete(record);
        cx.p.delete(&entry);
    }
}
