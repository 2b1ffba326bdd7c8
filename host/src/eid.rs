//! eID providers: how a recipient proves who they are with an electronic ID. The engine
//! decides when a check is needed and records its result; a provider only starts a
//! check (where to send the person's browser) and finishes it (who they are), through
//! the WIT's `host.eid-start` / `host.eid-finish`.
//!
//! One provider is built in, `test` (`--eid-provider test`): its "identification" is a
//! page on this server where anyone types the name to be verified. It exists so that
//! the whole flow (redirect, return, cookie, `signing_methods`) runs in tests and
//! demos; never use it in production. Real providers (BankID, Freja, itsme, ...)
//! implement [`Provider`] in a file of their own.

use std::collections::HashMap;
use std::sync::Mutex;

/// Who a provider identified.
pub struct Identity {
    pub name: String,
    /// The provider's identifier of the person (personal number, ...); may be empty.
    pub subject: String,
}

pub trait Provider: Send + Sync + 'static {
    /// The name settings show (`test`, ...).
    fn name(&self) -> &str;
    /// Starts a check for `session`; the URL to send the browser to. The provider sends
    /// the browser back to `return_url` when the person is done.
    fn start(&self, session: &str, return_url: &str) -> Result<String, String>;
    /// The person identified in `session` (`query`: what the provider added to the
    /// return URL).
    fn finish(&self, session: &str, query: &str) -> Result<Identity, String>;
}

/// Builds the provider named on the command line.
pub fn provider(name: &str, base_url: &str) -> anyhow::Result<std::sync::Arc<dyn Provider>> {
    match name {
        "test" => Ok(std::sync::Arc::new(TestProvider::new(base_url))),
        other => anyhow::bail!("--eid-provider {other:?} is not known; the built-in one is `test`"),
    }
}

struct Pending {
    return_url: String,
    name: Option<String>,
}

/// The built-in stand-in provider (see the module docs). Its sessions live in memory.
pub struct TestProvider {
    base_url: String,
    sessions: Mutex<HashMap<String, Pending>>,
}

/// Sessions the test provider keeps at most (the oldest are not tracked: it is a test
/// tool, a restart forgets them all).
const MAX_SESSIONS: usize = 10_000;

impl TestProvider {
    pub fn new(base_url: &str) -> TestProvider {
        TestProvider {
            base_url: base_url.trim_end_matches('/').to_string(),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// `GET /eid/test/{session}`: the page where a name is typed.
    pub fn page(&self, session: &str) -> Option<String> {
        let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.get(session)?;
        Some(format!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>Test eID</title></head><body>\
             <main><h1>Test eID provider</h1>\
             <p>For tests and demos only: whatever name is typed here is taken as verified.</p>\
             <form method=\"post\" action=\"/eid/test/{session}\">\
             <label for=\"name\">Name to verify</label> <input id=\"name\" name=\"name\" required>\
             <button type=\"submit\">Identify</button></form></main></body></html>"
        ))
    }

    /// `POST /eid/test/{session}` with `name=...`: completes the session; the URL to
    /// send the browser back to.
    pub fn complete(&self, session: &str, form: &[u8]) -> Option<String> {
        let name = url::form_urlencoded::parse(form)
            .find(|(k, _)| k == "name")
            .map(|(_, v)| v.trim().to_string())
            .filter(|v| !v.is_empty())?;
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let p = sessions.get_mut(session)?;
        p.name = Some(name);
        Some(p.return_url.clone())
    }
}

impl Provider for TestProvider {
    fn name(&self) -> &str {
        "test"
    }

    fn start(&self, session: &str, return_url: &str) -> Result<String, String> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        if sessions.len() >= MAX_SESSIONS {
            sessions.clear();
        }
        sessions.insert(
            session.to_string(),
            Pending {
                return_url: return_url.to_string(),
                name: None,
            },
        );
        Ok(format!("{}/eid/test/{session}", self.base_url))
    }

    fn finish(&self, session: &str, _query: &str) -> Result<Identity, String> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        match sessions.remove(session) {
            Some(Pending {
                name: Some(name), ..
            }) => Ok(Identity {
                name,
                subject: String::new(),
            }),
            Some(_) => Err("the identification was not completed".into()),
            None => Err("unknown eID session".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_session_is_completed_with_a_typed_name_and_finished_once() {
        let p = TestProvider::new("http://127.0.0.1:1/");
        let url = p
            .start("s1", "http://127.0.0.1:1/v1/eid/return/s1")
            .unwrap();
        assert_eq!(url, "http://127.0.0.1:1/eid/test/s1");
        assert!(p.page("s1").unwrap().contains("Name to verify"));
        assert!(p.page("nope").is_none());
        assert!(p.finish("s1", "").is_err(), "not completed yet");
        let p2 = TestProvider::new("http://x");
        p2.start("s2", "http://x/back").unwrap();
        assert_eq!(
            p2.complete("s2", b"name=").as_deref(),
            None,
            "a name is needed"
        );
        assert_eq!(
            p2.complete("s2", b"name=Ada+Lovelace").as_deref(),
            Some("http://x/back")
        );
        assert_eq!(p2.finish("s2", "").unwrap().name, "Ada Lovelace");
        assert!(p2.finish("s2", "").is_err(), "used once");
    }
}
