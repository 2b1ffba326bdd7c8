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

/// From now on, what this process creates is its user's alone: directories 0700, files
/// 0600, whatever the umask it was started with. The data directory holds the
/// database (recipient links, password hashes), the sealing key, mail and backups.
pub fn restrict_new_files() {
    // SAFETY: umask only sets the process's file mode creation mask; it cannot fail.
    unsafe {
        libc::umask(0o077);
    }
}

/// Makes an existing data directory (and everything in it) its user's alone, saying
/// so in the log when it was readable or writable by others; creates it (0700) when
/// missing. A directory that is already its user's alone is not walked: nothing in it
/// can be reached by others, and what this process creates is private (the umask), so
/// a start or an admin command pays one `stat`.
pub fn restrict_data_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if !dir.exists() {
        std::fs::create_dir_all(dir)?;
        return std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    }
    if std::fs::metadata(dir)?.permissions().mode() & 0o077 == 0 {
        return Ok(());
    }
    let mut opened = 0usize;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        let meta = std::fs::symlink_metadata(&path)?;
        if meta.file_type().is_symlink() {
            continue;
        }
        let mode = meta.permissions().mode();
        if mode & 0o077 != 0 {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode & 0o7700))?;
            opened += 1;
        }
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                stack.push(entry?.path());
            }
        }
    }
    if opened > 0 {
        tracing::warn!(
            "the data directory {} had {opened} files or folders others could read; \
             they are now its owner's alone (0700/0600)",
            dir.display()
        );
    }
    Ok(())
}
