//! The identity checks a recipient passes through their link: a code sent and entered,
//! an answer, an eID round trip; the session cookie that remembers the passes (see
//! `domain::identity` for the checks themselves).

use crate::base::api::{Mail, Request, Sms};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult, Fields};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{new_secret, sha256_hex};
use crate::domain::document::{self, Document, Recipient};
use crate::domain::identity::{
    CODE_SPACING_MS, CODE_TTL_MS, Checks, MAX_CODES, MAX_FAILURES, MAX_SESSIONS, Pass,
    SESSION_TTL_MS, SIGN_PASS_TTL_MS, Session, Stage, load, normalize_answer, save,
};
use crate::domain::{identity, links, notify};
use serde_json::{Value, json};

/// The name of the verification cookie of the link `secret`.
fn cookie_name(secret: &str) -> String {
    format!("esv_{}", &sha256_hex(secret.as_bytes())[..16])
}

fn cookie_token(req: &Request, secret: &str) -> Option<String> {
    let name = cookie_name(secret);
    req.headers
        .iter()
        .filter(|(k, _)| k == "cookie")
        .flat_map(|(_, v)| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

/// The session the request's cookie names, if it is live.
fn session<'a>(c: &'a Checks, req: &Request, secret: &str, now: u64) -> Option<&'a Session> {
    let hash = sha256_hex(cookie_token(req, secret)?.as_bytes());
    c.sessions
        .iter()
        .find(|s| s.token_hash == hash && s.expires_ms > now)
}

fn code_kind(r: &Recipient) -> &'static str {
    if r.mobile.is_empty() { "email" } else { "sms" }
}

/// Whether a pass satisfies check `kind` (`code` is passed as `sms` or `email`).
fn satisfies(p: &Pass, kind: &str) -> bool {
    match kind {
        "code" => p.kind == "sms" || p.kind == "email",
        k => p.kind == k,
    }
}

/// What a request has verified, for a recipient with checks.
pub struct Status {
    /// Checks for opening still to pass.
    pub open_pending: Vec<&'static str>,
    /// Checks for signing still to pass (freshly).
    pub sign_pending: Vec<&'static str>,
    /// The passes of the request's session.
    pub passes: Vec<Pass>,
    pub locked: bool,
}

/// The state of the recipient's checks for this request (all passed when there are
/// none).
pub fn status(cx: &mut Cx, doc: &Document, i: usize, req: &Request) -> (Option<Checks>, Status) {
    let r = &doc.recipients[i];
    let secret = links::secret(cx, &doc.id, r).unwrap_or_default();
    let now = cx.now();
    let Some(c) = load(cx, &doc.id, &r.id) else {
        return (
            None,
            Status {
                open_pending: Vec::new(),
                sign_pending: Vec::new(),
                passes: Vec::new(),
                locked: false,
            },
        );
    };
    let passes = session(&c, req, &secret, now)
        .map(|s| s.passes.clone())
        .unwrap_or_default();
    let mut st = Status {
        open_pending: Vec::new(),
        sign_pending: Vec::new(),
        passes,
        locked: c.locked,
    };
    for (kind, w) in c.kinds() {
        if w.open && !st.passes.iter().any(|p| satisfies(p, kind)) {
            st.open_pending.push(kind);
        }
        let fresh = |p: &Pass| {
            satisfies(p, kind) && p.stage == Stage::Sign && p.at_ms + SIGN_PASS_TTL_MS > now
        };
        if w.sign && !st.passes.iter().any(fresh) {
            st.sign_pending.push(kind);
        }
    }
    (Some(c), st)
}

/// How the page shows a pending check: where a code goes, the question, the eID type.
fn describe(c: &Checks, r: &Recipient, kind: &str) -> Value {
    match kind {
        "code" if r.mobile.is_empty() => json!({"method": "email", "to": mask_email(&r.email)}),
        "code" => json!({"method": "sms", "to": mask_phone(&r.mobile)}),
        "qna" => json!({"method": "qna", "question": c.qna.as_ref().map(|q| q.1.clone())}),
        _ => json!({"method": "eid", "type": c.eid.as_ref().map(|e| e.1.clone())}),
    }
}

/// The `verification` member of the recipient view.
pub fn view_json(c: &Checks, st: &Status, r: &Recipient) -> Value {
    let list = |kinds: &[&'static str]| -> Vec<Value> {
        kinds.iter().map(|k| describe(c, r, k)).collect()
    };
    json!({
        "open": list(&st.open_pending),
        "sign": list(&st.sign_pending),
        "locked": st.locked,
        "tries_left": MAX_FAILURES.saturating_sub(c.failures),
        "passed": st.passes.iter().map(|p| p.kind.clone()).collect::<Vec<_>>(),
    })
}

/// 403 `verification_required` naming what is missing.
pub fn required(stage: Stage, pending: &[&str]) -> ApiError {
    http::ApiError::forbidden(
        "verification_required",
        format!(
            "verify your identity before you {} ({})",
            if stage == Stage::Open {
                "open the document"
            } else {
                "sign"
            },
            pending.join(", ")
        ),
    )
}

fn locked_error() -> ApiError {
    http::ApiError::forbidden(
        "verification_locked",
        "too many wrong attempts: this link is locked. The sender has been told; ask them for help",
    )
}

fn mask_phone(p: &str) -> String {
    let digits: Vec<char> = p.chars().filter(char::is_ascii_digit).collect();
    let tail: String = digits[digits.len().saturating_sub(2)..].iter().collect();
    format!("•••• •• {tail}")
}

fn mask_email(e: &str) -> String {
    match e.split_once('@') {
        Some((local, domain)) => {
            format!("{}•••@{domain}", local.chars().next().unwrap_or('•'))
        }
        None => "•••".into(),
    }
}

fn stage_of(f: &Fields, st: &Status, kind: &str) -> ApiResult<Stage> {
    match f.optional_str("stage")?.as_deref() {
        Some("open") => Ok(Stage::Open),
        Some("sign") => Ok(Stage::Sign),
        Some(other) => Err(http::ApiError::bad_request(
            "invalid_field",
            format!("`stage` must be open or sign, not {other:?}"),
        )),
        None if st.open_pending.contains(&kind) => Ok(Stage::Open),
        None => Ok(Stage::Sign),
    }
}

/// 400 unless check `kind` is still to pass at `stage` (and, for signing, the
/// recipient can still sign): no codes are sent, and no tries spent, for nothing.
fn check_pending(doc: &Document, i: usize, st: &Status, kind: &str, stage: Stage) -> ApiResult<()> {
    let pending = match stage {
        Stage::Open => &st.open_pending,
        Stage::Sign => &st.sign_pending,
    };
    let can_sign = doc.status.is_active() && !doc.recipients[i].status.is_finished();
    if pending.contains(&kind) && (stage == Stage::Open || can_sign) {
        Ok(())
    } else {
        Err(http::ApiError::bad_request(
            "nothing_to_verify",
            format!(
                "there is no {kind} check to pass before you {}",
                if stage == Stage::Open {
                    "open the document"
                } else {
                    "sign"
                }
            ),
        ))
    }
}

fn method_kind(f: &Fields) -> ApiResult<&'static str> {
    match f.required_str("method")?.as_str() {
        "sms" | "email" | "code" => Ok("code"),
        "qna" => Ok("qna"),
        "eid" => Ok("eid"),
        other => Err(http::ApiError::bad_request(
            "invalid_field",
            format!("`method` must be sms, email, qna or eid, not {other:?}"),
        )),
    }
}

/// A verification request read and checked: its body, the check it is for (`code`,
/// `qna`, `eid`), the recipient's checks, and the stage.
struct Begun {
    f: Fields,
    kind: &'static str,
    c: Checks,
    stage: Stage,
}

/// What `start` and `verify` check first: the recipient has checks, is not locked out,
/// has this one, and still has it to pass at the stage.
fn begin(cx: &mut Cx, req: &Request, doc: &Document, i: usize) -> ApiResult<Begun> {
    let f = req.body_fields()?;
    let kind = method_kind(&f)?;
    let (Some(c), st) = status(cx, doc, i, req) else {
        return Err(http::ApiError::bad_request(
            "no_verification",
            "no identity check is set for you",
        ));
    };
    if c.locked {
        return Err(locked_error());
    }
    if !c.kinds().iter().any(|(k, _)| *k == kind) {
        return Err(http::ApiError::bad_request(
            "no_verification",
            format!("no {kind} check is set for you"),
        ));
    }
    let stage = stage_of(&f, &st, kind)?;
    check_pending(doc, i, &st, kind, stage)?;
    Ok(Begun { f, kind, c, stage })
}

/// `POST .../verify/start` (`method`, `stage`?): sends a code, or starts eID (answers
/// `redirect_url`).
pub fn start(cx: &mut Cx, req: &Request, doc: &Document, i: usize) -> ApiResult<Value> {
    let Begun {
        kind, mut c, stage, ..
    } = begin(cx, req, doc, i)?;
    let r = doc.recipients[i].clone();
    match kind {
        "code" => send_code(cx, doc, &r, c, stage),
        "eid" => {
            let session = new_secret(cx);
            let base = cx.settings().base_url.trim_end_matches('/').to_string();
            let return_url = format!("{base}/v1/eid/return/{session}");
            let redirect = cx.p.eid_start(&session, &return_url).map_err(|e| {
                http::ApiError::new(503, "eid_unavailable", format!("eID cannot start: {e}"))
            })?;
            identity::eid_started(cx, &doc.id, &r.id, &mut c, &session, stage);
            Ok(json!({"method": "eid", "redirect_url": redirect}))
        }
        _ => Err(http::ApiError::bad_request(
            "invalid_field",
            "a question needs no start: answer it with POST .../verify",
        )),
    }
}

/// Sends recipient `r` a code for `stage`, by SMS when they have a mobile number, else
/// by mail; 429 past [`MAX_CODES`] or within [`CODE_SPACING_MS`] of the last.
fn send_code(
    cx: &mut Cx,
    doc: &Document,
    r: &Recipient,
    mut c: Checks,
    stage: Stage,
) -> ApiResult<Value> {
    let now = cx.now();
    if c.codes_sent >= MAX_CODES {
        return Err(http::ApiError::new(
            429,
            "too_many_codes",
            "too many codes were sent for this link; ask the sender for help",
        ));
    }
    if c.last_code_ms + CODE_SPACING_MS > now {
        let wait = (c.last_code_ms + CODE_SPACING_MS - now).div_ceil(1000);
        return Err(http::ApiError::new(
            429,
            "too_many_requests",
            format!("a code was just sent; you can ask for a new one in {wait} s"),
        )
        .with_header("retry-after", wait.to_string()));
    }
    let mut n = [0u8; 4];
    cx.p.fill_random(&mut n);
    let code = format!("{:06}", u32::from_le_bytes(n) % 1_000_000);
    let salt = new_secret(cx);
    let hash = sha256_hex(format!("{salt}:{code}").as_bytes());
    c.code_state = Some((hash, salt, now + CODE_TTL_MS, stage));
    c.codes_sent += 1;
    c.last_code_ms = now;
    let words = cx.words(doc.language());
    let text = words.fill("mail.code", &[("document", &doc.name), ("code", &code)]);
    let tag = format!("recipient:{}:{}", doc.id, r.id);
    if code_kind(r) == "sms" {
        cx.p.send_sms(Sms {
            to: r.mobile.clone(),
            text,
            tag,
        });
    } else {
        let hello = words.fill("mail.hello", &[("name", &r.fullname())]);
        let body = format!("{hello}\n\n{text}\n");
        let html = notify::branded_html(cx, doc, &[hello, text], None, &[]);
        cx.p.send_mail(Mail {
            to: r.email.clone(),
            subject: words.fill("mail.code_subject", &[("document", &doc.name)]),
            body,
            tag,
            html,
            attachments: Vec::new(),
        });
    }
    save(cx, &doc.id, &r.id, &c);
    let d = describe(&c, r, "code");
    Ok(json!({"method": d["method"], "sent_to": d["to"], "expires_in": CODE_TTL_MS / 1000}))
}

/// A failed attempt: counted; the fifth locks the recipient out and tells the sender.
fn failed(cx: &mut Cx, doc: &Document, r: &Recipient, mut c: Checks, what: &str) -> ApiError {
    c.failures += 1;
    if c.failures >= MAX_FAILURES {
        c.locked = true;
        c.code_state = None;
        save(cx, &doc.id, &r.id, &c);
        notify::owner_notice(
            cx,
            doc,
            format!("{} was locked out of \"{}\"", r.fullname(), doc.name),
            format!(
                "{} ({}) gave {MAX_FAILURES} wrong identity answers or codes and can no longer open the document with their link.",
                r.fullname(),
                if r.email.is_empty() {
                    &r.mobile
                } else {
                    &r.email
                }
            ),
        );
        return locked_error();
    }
    save(cx, &doc.id, &r.id, &c);
    let left = MAX_FAILURES - c.failures;
    http::ApiError::bad_request(
        "verification_failed",
        format!(
            "the {what} is wrong; {left} {} left",
            if left == 1 { "try" } else { "tries" }
        ),
    )
}

/// Records a pass in the request's session (a new one when it has none) and returns the
/// `Set-Cookie` value that names the session.
fn record_pass(
    cx: &mut Cx,
    c: &mut Checks,
    req: Option<&Request>,
    secret: &str,
    pass: Pass,
) -> String {
    let now = cx.now();
    c.sessions.retain(|s| s.expires_ms > now);
    let existing = req.and_then(|req| {
        let hash = sha256_hex(cookie_token(req, secret)?.as_bytes());
        c.sessions.iter().position(|s| s.token_hash == hash)
    });
    let token = match existing {
        Some(i) => {
            c.sessions[i]
                .passes
                .retain(|p| p.kind != pass.kind || p.stage != pass.stage);
            c.sessions[i].passes.push(pass);
            c.sessions[i].expires_ms = now + SESSION_TTL_MS;
            cookie_token(req.expect("a session was found"), secret).unwrap_or_default()
        }
        None => {
            let token = new_secret(cx);
            c.sessions.push(Session {
                token_hash: sha256_hex(token.as_bytes()),
                expires_ms: now + SESSION_TTL_MS,
                passes: vec![pass],
            });
            if c.sessions.len() > MAX_SESSIONS {
                c.sessions.remove(0);
            }
            token
        }
    };
    let secure = if cx.settings().base_url.starts_with("https://") {
        "; Secure"
    } else {
        ""
    };
    format!(
        "{}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{secure}",
        cookie_name(secret),
        SESSION_TTL_MS / 1000
    )
}

/// `POST .../verify` (`method` sms|email|qna, `code` or `answer`, `stage`?): checks
/// it; on success answers `Set-Cookie` with the session.
pub fn verify(cx: &mut Cx, req: &Request, doc: &Document, i: usize) -> ApiResult<(Value, String)> {
    let Begun {
        f,
        kind,
        mut c,
        stage,
    } = begin(cx, req, doc, i)?;
    let r = doc.recipients[i].clone();
    let secret = links::secret(cx, &doc.id, &r).unwrap_or_default();
    let now = cx.now();
    let pass_kind = match kind {
        "code" => check_code(cx, doc, &r, &f, &mut c)?,
        "qna" => {
            let Some((_, _, hash, salt)) = c.qna.clone() else {
                return Err(http::ApiError::bad_request(
                    "no_verification",
                    "no question is set for you",
                ));
            };
            let answer = normalize_answer(&f.required_str("answer")?);
            if sha256_hex(format!("{salt}:{answer}").as_bytes()) != hash {
                return Err(failed(cx, doc, &r, c, "answer"));
            }
            "qna"
        }
        _ => {
            return Err(http::ApiError::bad_request(
                "invalid_field",
                "eID is verified by the provider: start it with POST .../verify/start",
            ));
        }
    };
    let to = match pass_kind {
        "sms" => r.mobile.clone(),
        "email" => r.email.clone(),
        _ => String::new(),
    };
    let pass = Pass {
        kind: pass_kind.into(),
        stage,
        at_ms: now,
        verified_name: String::new(),
        to,
    };
    let cookie = record_pass(cx, &mut c, Some(req), &secret, pass);
    save(cx, &doc.id, &r.id, &c);
    Ok((
        json!({"verified": pass_kind, "stage": stage.as_str()}),
        cookie,
    ))
}

/// The code of the form `f` checked against the one sent to `r`: the kind of pass it
/// gives (`sms` or `email`); a wrong code is a failed attempt.
fn check_code(
    cx: &mut Cx,
    doc: &Document,
    r: &Recipient,
    f: &Fields,
    c: &mut Checks,
) -> ApiResult<&'static str> {
    let now = cx.now();
    let given: String = f
        .required_str("code")?
        .chars()
        .filter(|ch| !ch.is_whitespace())
        .collect();
    let Some((hash, salt, expires, _)) = c.code_state.clone() else {
        return Err(http::ApiError::bad_request(
            "no_code",
            "ask for a code first (POST .../verify/start)",
        ));
    };
    if expires <= now {
        c.code_state = None;
        save(cx, &doc.id, &r.id, c);
        return Err(http::ApiError::bad_request(
            "code_expired",
            "the code has expired; ask for a new one",
        ));
    }
    if sha256_hex(format!("{salt}:{given}").as_bytes()) != hash {
        return Err(failed(cx, doc, r, c.clone(), "code"));
    }
    c.code_state = None;
    Ok(code_kind(r))
}

/// `GET /v1/eid/return/{session}?...`: the provider sent the person back. On success
/// the pass is recorded and the browser goes back to the page with its session cookie.
pub fn eid_return(cx: &mut Cx, req: &Request, session: &str) -> ApiResult<(String, String)> {
    let (doc_id, rid, stage) = identity::eid_target(cx, session)?;
    let (doc_id, rid) = (doc_id.as_str(), rid.as_str());
    let doc = document::load_doc(cx, doc_id).ok_or_else(|| {
        http::ApiError::not_found("eid_session_not_found", "the document is gone")
    })?;
    let r = doc.recipient(rid).cloned().ok_or_else(|| {
        http::ApiError::not_found("eid_session_not_found", "the recipient is gone")
    })?;
    let secret = links::secret(cx, doc_id, &r).unwrap_or_default();
    let mut c = load(cx, doc_id, rid).ok_or_else(|| {
        http::ApiError::not_found("eid_session_not_found", "no eID check is set for you")
    })?;
    identity::eid_returned(cx, &mut c, session);
    if c.locked {
        save(cx, doc_id, rid, &c);
        return Err(locked_error());
    }
    let identity = match cx.p.eid_finish(session, &req.query) {
        Ok(i) => i,
        Err(e) => {
            save(cx, doc_id, rid, &c);
            return Err(http::ApiError::bad_request(
                "eid_failed",
                format!("eID did not identify you: {e}"),
            ));
        }
    };
    let now = cx.now();
    let cookie = record_pass(
        cx,
        &mut c,
        Some(req),
        &secret,
        Pass {
            kind: "eid".into(),
            stage,
            at_ms: now,
            verified_name: identity.name,
            to: String::new(),
        },
    );
    save(cx, doc_id, rid, &c);
    Ok((format!("/s/{secret}"), cookie))
}
