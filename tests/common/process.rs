//! Child processes that can neither hang the suite nor outlive a failed test (shared
//! with `host/examples/signing_bench.rs`).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A child process killed (and reaped) when dropped, so a failing test never leaves it
/// running.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether `cmd` exists and exits successfully (a probe for an optional tool). It has
/// 60 s; past that it is killed and the test fails, rather than hang the suite.
pub fn succeeds(cmd: &mut Command) -> bool {
    let Ok(child) = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn() else {
        return false;
    };
    let mut child = KillOnDrop(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            return status.success();
        }
        assert!(
            Instant::now() < deadline,
            "{cmd:?} did not finish within 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
