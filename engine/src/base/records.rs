//! How records are stored: a schema-version byte, then postcard; and key ranges.

#[allow(unused_imports)]
use crate::base::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;

const SCHEMA_V1: u8 = 1;

/// `[prefix, prefix + 0xff)`: every key that starts with `prefix`.
pub fn prefix_range(prefix: &str) -> (Vec<u8>, Vec<u8>) {
    let start = prefix.as_bytes().to_vec();
    let mut end = start.clone();
    end.push(0xff);
    (start, end)
}

/// Encodes a record with its schema-version byte.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = vec![SCHEMA_V1];
    out.extend(postcard::to_allocvec(value).expect("records always serialize"));
    out
}

/// Decodes a record written by [`encode`]. A record that does not decode is corruption
/// or a bug, never a client error: it panics, which traps the component, so the host
/// rolls the call back and answers 500 with a `trace_id`.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> T {
    match try_decode(bytes) {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

/// [`decode`] for the store check, which reports an unreadable record instead of
/// trapping.
pub fn try_decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    match bytes.split_first() {
        Some((&SCHEMA_V1, rest)) => {
            postcard::from_bytes(rest).map_err(|e| format!("a stored record is unreadable: {e}"))
        }
        _ => Err("a stored record has an unknown schema version".into()),
    }
}
