//! The default SMS transport: each message becomes a text file in a folder
//! (`<data-dir>/sms` unless told otherwise), written atomically and named after the
//! message, so a retry rewrites the same file. A person (or a test) reads the codes
//! there.

use crate::host_tables::mail::StoredMail;
use crate::mail::{Failure, Transport};
use std::path::PathBuf;

pub struct FolderTransport {
    dir: PathBuf,
}

impl FolderTransport {
    pub fn new(dir: PathBuf) -> FolderTransport {
        FolderTransport { dir }
    }
}

impl Transport for FolderTransport {
    fn send(&self, sms: &StoredMail) -> Result<(), Failure> {
        std::fs::create_dir_all(&self.dir)?;
        let date = chrono::DateTime::from_timestamp_millis(sms.created_ms as i64)
            .unwrap_or_default()
            .to_rfc3339();
        let text = format!(
            "To: {}\nDate: {date}\n\n{}\n",
            sms.to.replace(['\r', '\n'], " "),
            sms.body
        );
        let name = format!("{}-{}.txt", sms.created_ms, sms.id);
        let tmp = self.dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, self.dir.join(name))?;
        Ok(())
    }
}
