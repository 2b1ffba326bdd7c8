//! The default mail transport: each mail becomes an RFC 5322 `.eml` file in a folder
//! (`<data-dir>/mail` unless told otherwise), written atomically and named after the
//! mail, so a retry rewrites the same file instead of adding a second. A mail with HTML
//! is `multipart/alternative`: its plain text, then its HTML. A mail with files is
//! `multipart/mixed`: that text, then each file in base64.

use super::{Failure, Transport};
use crate::host_tables::mail::StoredMail;
use std::path::PathBuf;

pub struct FolderTransport {
    dir: PathBuf,
    from: String,
}

impl FolderTransport {
    pub fn new(dir: PathBuf, from: String) -> FolderTransport {
        FolderTransport { dir, from }
    }
}

/// Header values cannot span lines.
fn one_line(s: &str) -> String {
    s.replace(['\r', '\n'], " ")
}

/// `content` (headers and body of the text) followed by the mail's files, as
/// `multipart/mixed` (RFC 2046), each file base64 in lines of 76; `content` itself when
/// there are none.
fn with_files(mail: &StoredMail, content: String) -> String {
    use base64::Engine as _;
    if mail.files.is_empty() {
        return content;
    }
    let b = format!("esign-mixed-{}", mail.id);
    let mut out =
        format!("Content-Type: multipart/mixed; boundary=\"{b}\"\r\n\r\n--{b}\r\n{content}\r\n");
    for (a, bytes) in &mail.files {
        let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
        let lines: Vec<&str> = encoded
            .as_bytes()
            .chunks(76)
            .map(|c| std::str::from_utf8(c).expect("base64 is ASCII"))
            .collect();
        let name: String = one_line(&a.name).replace(['"', '\\'], "_");
        out.push_str(&format!(
            "--{b}\r\nContent-Type: {}; name=\"{name}\"\r\nContent-Disposition: attachment; filename=\"{name}\"\r\n\
             Content-Transfer-Encoding: base64\r\n\r\n{}\r\n",
            one_line(&a.content_type),
            lines.join("\r\n"),
        ));
    }
    out.push_str(&format!("--{b}--\r\n"));
    out
}

impl Transport for FolderTransport {
    fn send(&self, mail: &StoredMail) -> Result<(), Failure> {
        std::fs::create_dir_all(&self.dir)?;
        let date = chrono::DateTime::from_timestamp_millis(mail.created_ms as i64)
            .unwrap_or_default()
            .to_rfc2822();
        let crlf = |s: &str| s.replace("\r\n", "\n").replace('\n', "\r\n");
        let plain =
            "Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n";
        // With HTML, the two as alternatives (RFC 2046), the plain text first; the
        // boundary names the mail, whose random id no text contains by chance.
        let content = if mail.html.is_empty() {
            format!("{plain}\r\n{}", crlf(&mail.body))
        } else {
            let b = format!("esign-alternative-{}", mail.id);
            format!(
                "Content-Type: multipart/alternative; boundary=\"{b}\"\r\n\r\n\
                 --{b}\r\n{plain}\r\n{}\r\n\
                 --{b}\r\nContent-Type: text/html; charset=utf-8\r\n\
                 Content-Transfer-Encoding: 8bit\r\n\r\n{}\r\n--{b}--\r\n",
                crlf(&mail.body),
                crlf(&mail.html),
            )
        };
        let content = with_files(mail, content);
        let text = format!(
            "From: {}\r\nTo: {}\r\nSubject: {}\r\nDate: {date}\r\nMessage-ID: <{}@esign>\r\n\
             MIME-Version: 1.0\r\n{content}",
            one_line(&self.from),
            one_line(&mail.to),
            one_line(&mail.subject),
            mail.id,
        );
        let name = format!("{}-{}.eml", mail.created_ms, mail.id);
        let tmp = self.dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, self.dir.join(name))?;
        Ok(())
    }
}
