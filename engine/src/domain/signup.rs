//! Self sign-up (`POST /v1/register`, which GetAccept's own apps call): a new user
//! with a new entity of which they are the admin. Off unless the operator turns it on
//! (`esign admin signup on`); then at most [`PER_SOURCE_PER_HOUR`] sign-ups from one
//! source address and [`TOTAL_PER_HOUR`] in all, each in the hour from the first of
//! them (429 with `Retry-After` past that).
//!
//! | key | value |
//! |---|---|
//! | `cfg/signup` | [`Config`] |
//! | `sgup/s/{source}` | [`Window`]: sign-ups from one source (one record per address that signed up) |
//! | `sgup/all` | [`Window`] |

use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult};
use crate::base::keyspace::{CFG, SGUP};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::key;
use serde::{Deserialize, Serialize};

pub const PER_SOURCE_PER_HOUR: u32 = 5;
pub const TOTAL_PER_HOUR: u32 = 100;
const HOUR_MS: u64 = 3_600_000;

fn config_key() -> Vec<u8> {
    key(&[CFG, "signup"])
}

fn total_key() -> Vec<u8> {
    key(&[SGUP, "all"])
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Config {
    pub enabled: bool,
}

#[derive(Serialize, Deserialize, Default)]
struct Window {
    start_ms: u64,
    count: u32,
}

pub fn config(cx: &mut Cx) -> Config {
    cx.load(&config_key()).unwrap_or_default()
}

pub fn set_config(cx: &mut Cx, c: &Config) {
    cx.save(&config_key(), c);
}

/// Counts one sign-up from `source`; 429 (nothing counted) when the source or everyone
/// is over the hour's sign-ups.
pub fn count(cx: &mut Cx, source: &str) -> ApiResult<()> {
    let now = cx.now();
    let source_key = key(&[SGUP, "s", source]);
    let mut windows = Vec::new();
    for (k, max) in [
        (source_key, PER_SOURCE_PER_HOUR),
        (total_key(), TOTAL_PER_HOUR),
    ] {
        let mut w: Window = cx.load(&k).unwrap_or_default();
        if now >= w.start_ms + HOUR_MS {
            w = Window {
                start_ms: now,
                count: 0,
            };
        }
        if w.count >= max {
            let secs = (w.start_ms + HOUR_MS - now).div_ceil(1000).max(1);
            return Err(http::ApiError::new(
                429,
                "too_many_requests",
                format!("too many sign-ups; try again in {secs} s"),
            )
            .with_header("retry-after", secs.to_string()));
        }
        w.count += 1;
        windows.push((k, w));
    }
    for (k, w) in windows {
        cx.save(&k, &w);
    }
    Ok(())
}
