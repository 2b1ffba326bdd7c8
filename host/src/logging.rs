//! The process's log: text by default, one JSON object per line with
//! `ESIGN_LOG_FORMAT=json`; the level from `ESIGN_LOG` (info by default). Secrets that
//! travel in paths (recipient links, download links, public files, eID sessions) are
//! never written: [`redact`] replaces them.

/// Sets up the log on standard error.
pub fn init() {
    let level = std::env::var("ESIGN_LOG")
        .ok()
        .and_then(|l| l.parse::<tracing::Level>().ok())
        .unwrap_or(tracing::Level::INFO);
    let json = std::env::var("ESIGN_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let builder = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr);
    if json {
        builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .init();
    } else {
        builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init();
    }
}

/// Path prefixes whose next segment is a secret (a credential by itself).
const SECRET_SEGMENT_AFTER: &[&str] = &[
    "/s/",
    "/v1/recipient/",
    "/v1/download/",
    "/v1/files/",
    "/v1/eid/return/",
    "/eid/test/",
];

/// `path` with its secret segment (if any) replaced by `***`.
pub fn redact(path: &str) -> std::borrow::Cow<'_, str> {
    for prefix in SECRET_SEGMENT_AFTER {
        if let Some(rest) = path.strip_prefix(prefix) {
            // The signing page's assets (`/s/_/...`) carry no secret.
            if rest.starts_with("_/") || rest.is_empty() {
                break;
            }
            let tail = rest.find('/').map_or("", |i| &rest[i..]);
            return format!("{prefix}***{tail}").into();
        }
    }
    path.into()
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn secret_segments_are_redacted_and_nothing_else() {
        assert_eq!(redact("/s/abcDEF123"), "/s/***");
        assert_eq!(
            redact("/v1/recipient/abc/pages/2"),
            "/v1/recipient/***/pages/2"
        );
        assert_eq!(redact("/v1/download/xyz"), "/v1/download/***");
        assert_eq!(redact("/v1/eid/return/sess"), "/v1/eid/return/***");
        assert_eq!(redact("/eid/test/sess"), "/eid/test/***");
        assert_eq!(redact("/v1/files/pubsecret"), "/v1/files/***");
        assert_eq!(redact("/s/_/sign.js"), "/s/_/sign.js");
        assert_eq!(redact("/v1/documents/abc"), "/v1/documents/abc");
    }
}
