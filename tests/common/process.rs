//! Child processes and scratch directories that can neither hang the suite nor outlive
//! a failed test (shared with `host/examples/signing_bench.rs`).

use std::path::{Path, PathBuf};
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

/// A directory that is removed, with what it holds, when dropped (also while a failed
/// test unwinds).
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates `path` (and its parents) and guards it.
    pub fn create(path: PathBuf) -> TempDir {
        std::fs::create_dir_all(&path).unwrap();
        // Private, as the server keeps its data directories (it warns at start about
        // one that others could read).
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .unwrap();
        TempDir(path)
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TempDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
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
