//! The engine's policy defaults (issue 49 item 5): token and login lifetimes, the login
//! lock, the spacing of token issuances, how long an unused upload is kept, and what a
//! completion mail attaches and how long its link works. They live
//! here once; a host passes only what its operator overrides (the `option`s of the WIT
//! `settings` record, `esign:engine@0.5.0`), and [`Overrides::resolve`] fills in the rest.
//! DESIGN.md §4 (`docs/DESIGN.md`) gives the reasons for the figures.

/// Lifetime of an access token from `POST /v1/auth`: 60 days.
pub const TOKEN_TTL_SECS: u64 = 60 * 86_400;
/// Failed logins in a row that lock an email (per source address, `domain::logins`).
pub const LOGIN_MAX_FAILURES: u32 = 5;
/// How long a locked login stays locked: 15 minutes.
pub const LOGIN_LOCK_SECS: u64 = 15 * 60;
/// Minimum spacing of two token issuances for one user: one second (429 below it).
pub const TOKEN_MIN_INTERVAL_MS: u64 = 1000;
/// How long an unused upload is kept: 48 hours.
pub const UPLOAD_TTL_SECS: u64 = 48 * 3600;
/// Lifetime of an OAuth access token for `/mcp`: one hour (refresh tokens live 30 days).
pub const OAUTH_ACCESS_TTL_SECS: u64 = 3600;
/// The largest sealed PDF a completion mail carries attached (`domain::completion`):
/// 10 MiB; a larger one goes as a link.
pub const COMPLETION_ATTACHMENT_MAX_BYTES: u64 = 10 << 20;
/// How long the link of a completion mail works: 30 days.
pub const COMPLETION_LINK_DAYS: u64 = 30;

/// What an operator set; `None` takes the default above. Every host converts its WIT
/// `settings` into this once (the component adapter in `components/engine`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Overrides {
    pub token_ttl_secs: Option<u64>,
    pub login_max_failures: Option<u32>,
    pub login_lock_secs: Option<u64>,
    pub token_min_interval_ms: Option<u64>,
    pub upload_ttl_secs: Option<u64>,
    pub oauth_access_ttl_secs: Option<u64>,
    pub completion_attachment_max_bytes: Option<u64>,
    pub completion_link_days: Option<u64>,
}

/// The policy in force: every value set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub token_ttl_secs: u64,
    pub login_max_failures: u32,
    pub login_lock_secs: u64,
    pub token_min_interval_ms: u64,
    pub upload_ttl_secs: u64,
    pub oauth_access_ttl_secs: u64,
    pub completion_attachment_max_bytes: u64,
    pub completion_link_days: u64,
}

impl Overrides {
    /// The operator's values where set, the defaults elsewhere.
    pub fn resolve(self) -> Policy {
        Policy {
            token_ttl_secs: self.token_ttl_secs.unwrap_or(TOKEN_TTL_SECS),
            login_max_failures: self.login_max_failures.unwrap_or(LOGIN_MAX_FAILURES),
            login_lock_secs: self.login_lock_secs.unwrap_or(LOGIN_LOCK_SECS),
            token_min_interval_ms: self.token_min_interval_ms.unwrap_or(TOKEN_MIN_INTERVAL_MS),
            upload_ttl_secs: self.upload_ttl_secs.unwrap_or(UPLOAD_TTL_SECS),
            oauth_access_ttl_secs: self.oauth_access_ttl_secs.unwrap_or(OAUTH_ACCESS_TTL_SECS),
            completion_attachment_max_bytes: self
                .completion_attachment_max_bytes
                .unwrap_or(COMPLETION_ATTACHMENT_MAX_BYTES),
            completion_link_days: self.completion_link_days.unwrap_or(COMPLETION_LINK_DAYS),
        }
    }
}

impl Default for Policy {
    fn default() -> Self {
        Overrides::default().resolve()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_override_wins_and_the_rest_are_the_defaults() {
        let p = Overrides {
            token_ttl_secs: Some(8),
            token_min_interval_ms: Some(0),
            ..Overrides::default()
        }
        .resolve();
        assert_eq!(p.token_ttl_secs, 8);
        assert_eq!(p.token_min_interval_ms, 0);
        assert_eq!(p.login_max_failures, 5);
        assert_eq!(p.login_lock_secs, 900);
        assert_eq!(p.upload_ttl_secs, 172_800);
        assert_eq!(p.oauth_access_ttl_secs, 3600);
        assert_eq!(Policy::default().token_ttl_secs, 5_184_000);
    }

    /// The hosts' help points at docs/operating.md for the figures: its table says these.
    #[test]
    fn the_operators_manual_gives_these_defaults() {
        let manual = include_str!("../../../docs/operating.md");
        for (flag, value) in [
            ("--token-ttl-secs", TOKEN_TTL_SECS),
            ("--login-max-failures", LOGIN_MAX_FAILURES.into()),
            ("--login-lock-secs", LOGIN_LOCK_SECS),
            ("--token-min-interval-ms", TOKEN_MIN_INTERVAL_MS),
            ("--upload-ttl-secs", UPLOAD_TTL_SECS),
            ("--oauth-access-ttl-secs", OAUTH_ACCESS_TTL_SECS),
            (
                "--completion-attachment-max-bytes",
                COMPLETION_ATTACHMENT_MAX_BYTES,
            ),
            ("--completion-link-days", COMPLETION_LINK_DAYS),
        ] {
            let row = manual
                .lines()
                .find(|l| l.starts_with(&format!("| `{flag}` |")))
                .unwrap_or_else(|| panic!("docs/operating.md has no row for {flag}"));
            let default = row.split('|').nth(3).unwrap_or_default().trim();
            assert!(
                default.starts_with(&value.to_string()),
                "docs/operating.md gives {flag} the default {default:?}, the engine {value}"
            );
        }
    }
}
