//! Time: the wall clock in milliseconds, and the backoff of retried work.

/// Retry delay after `attempt` failures: 2^attempt seconds, at most about 68 minutes.
pub fn backoff_ms(attempt: u32) -> u64 {
    1000u64.saturating_mul(1 << attempt.min(12))
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
