//! Files written whole or not at all.

use crate::ids::random_id;
use std::path::Path;

/// Writes `bytes` to `path` whole or not at all: into a temporary file beside it, then
/// renamed over it; the temporary file is removed when either step fails.
pub fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", random_id()));
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}
