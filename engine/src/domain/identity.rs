//! Identity checks per recipient (spec §1): a one-time code (by SMS to the recipient's
//! mobile, or by email when they have none), a question and answer, or eID, each asked
//! before opening the document and/or before signing, as the sender set them with
//! GetAccept's names (`verify_sms[_open|_sign]`, `verify_qna[_question|_answer|_open|_sign]`,
//! `verify_eid[_type|_open|_sign]`).
//!
//! Codes are 6 digits, valid 10 minutes, stored only as a salted SHA-256; answers are
//! compared ignoring case and surrounding spaces, also stored hashed. Five wrong codes or
//! answers in all lock the recipient out, and the sender is mailed.
//!
//! Passing a check starts (or extends) a verification session: a random token in an
//! HttpOnly, SameSite=Lax cookie (Lax: it must come back with the eID provider's redirect)
//! named after the link, stored only hashed. A check
//! for opening is satisfied by any pass of it in the session; a check for signing needs
//! a pass made for signing in the last 10 minutes. The passes become the
//! `signing_methods` of the signature.
//!
//! Record: `rver/{document}/{recipient}` → [`Checks`]; `reid/{sha256 of eID session}` →
//! `{document}/{recipient}/{stage}` while an eID check runs.

use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, member_text};
use crate::base::keyspace::{REID, RVER};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::{self, prefix_range};
use crate::base::util::{self, iso8601, new_secret, sha256_hex};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// How long a one-time code is valid.
pub const CODE_TTL_MS: u64 = 10 * 60 * 1000;
/// Wrong codes or answers (in all) before the recipient is locked out.
pub const MAX_FAILURES: u32 = 5;
/// Shortest wait between two codes, and most codes per recipient.
pub const CODE_SPACING_MS: u64 = 30_000;
pub const MAX_CODES: u32 = 10;
/// How long a verification session lasts, and how fresh a pass for signing must be.
pub const SESSION_TTL_MS: u64 = 12 * 3600 * 1000;
pub const SIGN_PASS_TTL_MS: u64 = 10 * 60 * 1000;
/// Sessions kept per recipient (the oldest is dropped).
pub const MAX_SESSIONS: usize = 5;

/// When a check is asked.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
pub struct When {
    pub open: bool,
    pub sign: bool,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum Stage {
    Open,
    Sign,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Open => "open",
            Stage::Sign => "sign",
        }
    }
}

/// A check passed in a session.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Pass {
    /// `sms`, `email`, `qna` or `eid`.
    pub kind: String,
    pub stage: Stage,
    pub at_ms: u64,
    /// The name an eID provider verified.
    pub verified_name: String,
    /// Where a code was sent.
    pub to: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Session {
    pub token_hash: String,
    pub expires_ms: u64,
    pub passes: Vec<Pass>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Checks {
    /// A one-time code, by SMS to the mobile number or else by email.
    pub code: Option<When>,
    /// Question, salted hash of the normalized answer, salt.
    pub qna: Option<(When, String, String, String)>,
    /// The eID type the sender asked for (`bankid`, ...; informational).
    pub eid: Option<(When, String)>,
    /// The current code: salted hash, salt, expiry, stage.
    pub code_state: Option<(String, String, u64, Stage)>,
    pub codes_sent: u32,
    pub last_code_ms: u64,
    pub failures: u32,
    pub locked: bool,
    pub sessions: Vec<Session>,
    /// eID checks started and not returned yet (hashes of their sessions).
    pub eid_pending: Vec<String>,
}

impl Checks {
    pub fn kinds(&self) -> Vec<(&'static str, When)> {
        let mut out = Vec::new();
        if let Some(w) = self.code {
            out.push(("code", w));
        }
        if let Some((w, ..)) = &self.qna {
            out.push(("qna", *w));
        }
        if let Some((w, _)) = &self.eid {
            out.push(("eid", *w));
        }
        out
    }
}

pub fn key(doc_id: &str, rid: &str) -> Vec<u8> {
    util::key(&[RVER, doc_id, rid])
}

pub fn load(cx: &mut Cx, doc_id: &str, rid: &str) -> Option<Checks> {
    cx.load(&key(doc_id, rid))
}

/// Stores a recipient's checks (those a create request set, or their new state).
pub fn save(cx: &mut Cx, doc_id: &str, rid: &str, c: &Checks) {
    cx.save(&key(doc_id, rid), c);
}

/// Forgets a deleted document's checks, sessions and unfinished eID checks.
pub fn erase(cx: &mut Cx, doc_id: &str) {
    let (start, end) = prefix_range(&format!("{RVER}/{doc_id}/"));
    for (k, v) in cx.p.scan(&start, &end, 10_000, false) {
        let c: Checks = records::decode(&v);
        for h in &c.eid_pending {
            cx.p.delete(&eid_key(h));
        }
        cx.p.delete(&k);
    }
}

pub fn flag(o: &Map<String, Value>, path: &str, name: &str) -> ApiResult<bool> {
    match o.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::Number(n)) => Ok(n.as_f64() != Some(0.0)),
        Some(Value::String(s)) => match s.trim() {
            "1" | "true" => Ok(true),
            "0" | "false" | "" => Ok(false),
            _ => Err(http::ApiError::bad_request(
                "invalid_recipient",
                format!("`{path}.{name}` must be a boolean"),
            )),
        },
        Some(_) => Err(http::ApiError::bad_request(
            "invalid_recipient",
            format!("`{path}.{name}` must be a boolean"),
        )),
    }
}

/// `verify_X` turns the check on; `verify_X_open` / `verify_X_sign` say when (either
/// also turns it on). On without a when: before signing.
pub fn when(o: &Map<String, Value>, path: &str, x: &str) -> ApiResult<Option<When>> {
    let on = flag(o, path, &format!("verify_{x}"))?;
    let open = flag(o, path, &format!("verify_{x}_open"))?;
    let sign = flag(o, path, &format!("verify_{x}_sign"))?;
    Ok(match (on || open || sign, open || sign) {
        (false, _) => None,
        (true, false) => Some(When {
            open: false,
            sign: true,
        }),
        (true, true) => Some(When { open, sign }),
    })
}

pub fn normalize_answer(s: &str) -> String {
    s.trim().to_lowercase()
}

/// The checks a recipient object of a create request asks for; `None` for none.
pub fn parse(cx: &mut Cx, o: &Map<String, Value>, path: &str) -> ApiResult<Option<Checks>> {
    let mut c = Checks {
        code: when(o, path, "sms")?,
        ..Checks::default()
    };
    if let Some(w) = when(o, path, "qna")? {
        let question = member_text(o, "verify_qna_question");
        let answer = member_text(o, "verify_qna_answer");
        if question.is_empty() || normalize_answer(&answer).is_empty() {
            return Err(http::ApiError::bad_request(
                "invalid_recipient",
                format!(
                    "`{path}`: a question-and-answer check needs `verify_qna_question` and `verify_qna_answer`"
                ),
            ));
        }
        if question.chars().count() > 500 || answer.chars().count() > 200 {
            return Err(http::ApiError::bad_request(
                "invalid_recipient",
                format!("`{path}`: the question (500) or the answer (200 characters) is too long"),
            ));
        }
        let salt = new_secret(cx);
        let hash = sha256_hex(format!("{salt}:{}", normalize_answer(&answer)).as_bytes());
        c.qna = Some((w, question, hash, salt));
    }
    if let Some(w) = when(o, path, "eid")? {
        if cx.settings().eid_provider.is_empty() {
            return Err(http::ApiError::bad_request(
                "eid_unavailable",
                format!("`{path}.verify_eid`: this server has no eID provider configured"),
            ));
        }
        c.eid = Some((w, member_text(o, "verify_eid_type")));
    }
    Ok((c.code.is_some() || c.qna.is_some() || c.eid.is_some()).then_some(c))
}

pub fn eid_key(session_hash: &str) -> Vec<u8> {
    util::key(&[REID, session_hash])
}

/// The `signing_methods` entries of the passes a signature was made with.
pub fn methods(passes: &[Pass]) -> Vec<Value> {
    passes
        .iter()
        .map(|p| {
            let mut m = json!({"type": p.kind, "signed_at": iso8601(p.at_ms), "verified_name": p.verified_name});
            if p.kind == "sms" {
                m["verified_phone"] = p.to.clone().into();
            }
            m
        })
        .collect()
}

/// How many unfinished eID checks a recipient keeps; starting another drops the oldest.
const EID_PENDING: usize = 3;

/// An eID check of recipient `rid` of `doc_id` at `stage` started with the provider's
/// `session`: remembered (`reid/`) until the person returns, and the checks `c` saved.
pub fn eid_started(
    cx: &mut Cx,
    doc_id: &str,
    rid: &str,
    c: &mut Checks,
    session: &str,
    stage: Stage,
) {
    let target = format!("{doc_id}/{rid}/{}", stage.as_str());
    let hash = sha256_hex(session.as_bytes());
    cx.p.put(&eid_key(&hash), target.as_bytes());
    c.eid_pending.push(hash);
    if c.eid_pending.len() > EID_PENDING {
        let old = c.eid_pending.remove(0);
        cx.p.delete(&eid_key(&old));
    }
    save(cx, doc_id, rid, c);
}

/// The document, recipient and stage of the unfinished eID check `session`.
pub fn eid_target(cx: &mut Cx, session: &str) -> ApiResult<(String, String, Stage)> {
    let target =
        cx.p.get(&eid_key(&sha256_hex(session.as_bytes())))
            .and_then(|v| String::from_utf8(v).ok())
            .ok_or_else(|| {
                http::ApiError::not_found(
                    "eid_session_not_found",
                    "this eID check is unknown or finished",
                )
            })?;
    let mut parts = target.split('/');
    let (Some(doc_id), Some(rid), Some(stage)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(http::ApiError::not_found(
            "eid_session_not_found",
            "this eID check is unknown",
        ));
    };
    let stage = if stage == "open" {
        Stage::Open
    } else {
        Stage::Sign
    };
    Ok((doc_id.to_string(), rid.to_string(), stage))
}

/// The person came back from the eID check `session`: it is no longer unfinished (the
/// caller saves `c`).
pub fn eid_returned(cx: &mut Cx, c: &mut Checks, session: &str) {
    let hash = sha256_hex(session.as_bytes());
    cx.p.delete(&eid_key(&hash));
    c.eid_pending.retain(|h| *h != hash);
}
