//! The two WASI interfaces the engine imports (wall clock, random), implemented here so
//! that no WASI context is built per call; and the `types` interface (types only).

use super::CallState;
use crate::bindings::{random, types, wall_clock};

impl types::Host for CallState {}

impl wall_clock::Host for CallState {
    fn now(&mut self) -> wasmtime::Result<wall_clock::Datetime> {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Ok(wall_clock::Datetime {
            seconds: d.as_secs(),
            nanoseconds: d.subsec_nanos(),
        })
    }

    fn resolution(&mut self) -> wasmtime::Result<wall_clock::Datetime> {
        Ok(wall_clock::Datetime {
            seconds: 0,
            nanoseconds: 1,
        })
    }
}

impl random::Host for CallState {
    fn get_random_bytes(&mut self, len: u64) -> wasmtime::Result<Vec<u8>> {
        if len > 1 << 20 {
            wasmtime::bail!("random bytes requested: {len}, more than 1 MiB");
        }
        let mut buf = vec![0u8; len as usize];
        getrandom::fill(&mut buf).map_err(|e| wasmtime::format_err!("OS randomness: {e}"))?;
        Ok(buf)
    }

    fn get_random_u64(&mut self) -> wasmtime::Result<u64> {
        let mut buf = [0u8; 8];
        getrandom::fill(&mut buf).map_err(|e| wasmtime::format_err!("OS randomness: {e}"))?;
        Ok(u64::from_le_bytes(buf))
    }
}
