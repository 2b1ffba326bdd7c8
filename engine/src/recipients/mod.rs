//! Recipients: what the secret in a recipient's `document_url` allows. The signing page
//! (`page.rs`) calls it; it moves the recipient's and the document's statuses (spec §3)
//! and emits the recipient events (§6).
//!
//! | route | effect |
//! |---|---|
//! | `GET /v1/recipient/{secret}` | the document as this recipient sees it |
//! | `POST .../view` | first time: recipient and document `viewed`, `document.viewed` |
//! | `POST .../review` | read every page: `reviewed`, `document.reviewed` |
//! | `POST .../comment` (`text`) | `comment.created` and `document.commented` |
//! | `POST .../sign` (`signature`, `initials`, `fields`; see `signatures.rs`) | a signer signs: `document.partially_signed`, or `document.signed` when it completes the document |
//! | `POST .../verify/start`, `POST .../verify`, `GET /v1/eid/return/{session}` | identity checks (see `verify.rs`) |
//! | `POST .../approve` | an approver approves: `document.approved` (and `document.signed` when it completes the document) |
//! | `POST .../reject` (`reason`?) | recipient and document `rejected`, `document.rejected` |
//! | `GET .../download` | the PDF, `document.downloaded` |
//! | `POST .../print` | `document.printed` |
//!
//! An unknown link is 404; a document not out with recipients (recalled, lost, not yet
//! sent) is 410; an act the recipient's role or turn does not allow is 403; one the
//! state does not allow is 400.
//!
//! Files: this one routes and guards (the link, availability, Origin, rate limit);
//! `view.rs` is what the recipient reads, `acts.rs` what they do, `verify.rs` their
//! identity checks, `page.rs` the HTML page and its assets.

mod acts;
pub mod page;
pub mod verify;
mod view;

use crate::docs::load_doc;
use crate::docs::model::{Document, Status, link_key};
use crate::http::{ApiError, ApiResult, json};
#[allow(unused_imports)]
use crate::prelude::*;
use crate::router::method_not_allowed;
use crate::util::sha256_hex;
use crate::{Cx, Request, Response};
pub use acts::recipients_summary;
use acts::{Act, act, act_verified, comment, download};
use view::{comments, page_image, recipient_view};

fn link_not_found() -> ApiError {
    ApiError::not_found("link_not_found", "this link is not valid (any more)")
}

/// The document and the recipient's index behind a link secret.
fn by_secret(cx: &mut Cx, secret: &str) -> ApiResult<(Document, usize)> {
    let target =
        cx.p.get(&link_key(&sha256_hex(secret.as_bytes())))
            .and_then(|v| String::from_utf8(v).ok())
            .ok_or_else(link_not_found)?;
    let (doc_id, rid) = target.split_once('/').ok_or_else(link_not_found)?;
    let doc = load_doc(cx, doc_id).ok_or_else(link_not_found)?;
    let i = doc
        .recipients
        .iter()
        .position(|r| r.id == rid && r.secret.as_deref() == Some(secret))
        .ok_or_else(link_not_found)?;
    Ok((doc, i))
}

/// 410 unless the document is out with its recipients (or finished).
fn check_available(doc: &Document) -> ApiResult<()> {
    match doc.status {
        Status::Draft
        | Status::Importing
        | Status::Processing
        | Status::Scheduled
        | Status::Recalled
        | Status::Lost => Err(ApiError::new(
            410,
            "document_unavailable",
            format!("the document is not available ({})", doc.status.as_str()),
        )),
        _ => Ok(()),
    }
}

/// 400 unless the document can still be acted on (not signed, rejected or expired).
pub(super) fn check_open(doc: &Document) -> ApiResult<()> {
    if doc.status.is_active() {
        Ok(())
    } else {
        Err(ApiError::bad_request(
            "invalid_status",
            format!(
                "the document is {}; it can no longer be signed or changed",
                doc.status.as_str()
            ),
        ))
    }
}

/// `/s/{secret}`: the signing page for browsers, the recipient view (JSON) for others.
pub fn page_route(cx: &mut Cx, req: &Request, secret: &str) -> Response {
    let html = page::wants_html(req);
    if req.method != "GET" && req.method != "HEAD" {
        let mut r = method_not_allowed(&req.method, &["GET"]).into_response();
        page::safety_headers(&mut r.headers);
        return r;
    }
    let mut resp = match by_secret(cx, secret) {
        Err(_) if html => page::link_not_found(),
        Err(e) => e.into_response(),
        Ok((doc, i)) if html => {
            let view = recipient_view(cx, &doc, i, secret, req);
            match page::unavailable(&view) {
                Some(notice) => notice,
                None => page::page(&view, doc.expiration_ms),
            }
        }
        Ok((doc, i)) => match check_available(&doc) {
            Ok(()) => json(200, &recipient_view(cx, &doc, i, secret, req)),
            Err(e) => e.into_response(),
        },
    };
    page::safety_headers(&mut resp.headers);
    resp
}

/// `/v1/recipient/{secret}/...`
pub fn route(cx: &mut Cx, req: &Request, secret: &str, rest: &[&str]) -> ApiResult<Response> {
    let m = req.method.as_str();
    if m != "GET" {
        check_origin(cx, req)?;
    }
    let (doc, i) = by_secret(cx, secret)?;
    check_available(&doc)?;
    if m == "POST" {
        rate_limit(cx, &doc, i)?;
    }
    // Identity checks: the view says what is still to verify; everything else but the
    // verification itself waits for the checks set for opening.
    let (_, st) = verify::status(cx, &doc, i, req);
    match (m, rest) {
        ("GET", []) => return Ok(json(200, &recipient_view(cx, &doc, i, secret, req))),
        ("POST", ["verify", "start"]) => return Ok(json(200, &verify::start(cx, req, &doc, i)?)),
        ("POST", ["verify"]) => {
            let (body, cookie) = verify::verify(cx, req, &doc, i)?;
            let mut resp = json(200, &body);
            resp.headers.push(("set-cookie".into(), cookie));
            return Ok(resp);
        }
        _ if st.locked => {
            return Err(ApiError::forbidden(
                "verification_locked",
                "too many wrong attempts: this link is locked; ask the sender for help",
            ));
        }
        _ if !st.open_pending.is_empty() => {
            return Err(verify::required(verify::Stage::Open, &st.open_pending));
        }
        ("POST", ["sign" | "approve"]) if !st.sign_pending.is_empty() => {
            return Err(verify::required(verify::Stage::Sign, &st.sign_pending));
        }
        _ => {}
    }
    match (m, rest) {
        ("POST", ["view"]) => act(cx, req, doc, i, Act::View),
        ("POST", ["review"]) => act(cx, req, doc, i, Act::Review),
        ("POST", ["comment"]) => comment(cx, req, doc, i),
        ("POST", ["sign"]) => act_verified(cx, req, doc, i, Act::Sign, &st.passes),
        ("POST", ["approve"]) => act(cx, req, doc, i, Act::Approve),
        ("POST", ["reject"]) => act(cx, req, doc, i, Act::Reject),
        ("POST", ["print"]) => act(cx, req, doc, i, Act::Print),
        ("GET", ["download"]) => download(cx, req, doc, i),
        ("GET", ["pages", n]) => page_image(cx, &doc, n),
        ("GET", ["comments"]) => comments(cx, &doc),
        (_, [] | ["download"] | ["pages", _] | ["comments"]) => {
            Err(method_not_allowed(m, &["GET"]))
        }
        (
            _,
            ["view" | "review" | "comment" | "sign" | "approve" | "reject" | "print" | "verify"],
        )
        | (_, ["verify", "start"]) => Err(method_not_allowed(m, &["POST"])),
        _ => Err(ApiError::not_found("not_found", "no such endpoint")),
    }
}

/// Refuses a cross-site request: a browser always names the page's origin in `Origin`
/// on a POST, and it must be this service's (the base URL's, or the `Host` the request
/// came to). Clients that send no `Origin` (servers, scripts) are not browsers.
fn check_origin(cx: &mut Cx, req: &Request) -> ApiResult<()> {
    let Some(origin) = req.header("origin") else {
        return Ok(());
    };
    let origin = origin.trim_end_matches('/');
    let base = cx.settings().base_url.trim_end_matches('/').to_string();
    let base_origin = base
        .split_once("://")
        .map(|(scheme, rest)| format!("{scheme}://{}", rest.split('/').next().unwrap_or("")))
        .unwrap_or_default();
    let same_host = req.header("host").is_some_and(|h| {
        origin
            .split_once("://")
            .is_some_and(|(_, host)| host.eq_ignore_ascii_case(h))
    });
    if origin.eq_ignore_ascii_case(&base_origin) || same_host {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "cross_site_request",
            "requests from other sites are refused; open your link to act on the document",
        ))
    }
}

/// Acts one recipient may take per minute.
pub const ACTS_PER_MINUTE: u32 = 30;

/// At most [`ACTS_PER_MINUTE`] acts per recipient in a fixed one-minute window
/// (`rrate/{document}/{recipient}`), then 429 with `Retry-After`.
fn rate_limit(cx: &mut Cx, doc: &Document, i: usize) -> ApiResult<()> {
    let key = rate_key(&doc.id, &doc.recipients[i].id);
    let now = cx.now();
    let window = now / 60_000;
    let (w, n): (u64, u32) = cx.load(&key).unwrap_or((window, 0));
    let n = if w == window { n } else { 0 };
    if n >= ACTS_PER_MINUTE {
        let wait = ((window + 1) * 60_000 - now).div_ceil(1000);
        return Err(ApiError::new(
            429,
            "too_many_requests",
            format!("too many actions on this link; try again in {wait} s"),
        )
        .with_header("retry-after", wait.to_string()));
    }
    cx.save(&key, &(window, n + 1));
    Ok(())
}

fn rate_key(doc_id: &str, rid: &str) -> Vec<u8> {
    crate::util::key(&["rrate", doc_id, rid])
}

/// Forgets a deleted document's per-recipient counters.
pub fn erase(cx: &mut Cx, doc: &str) {
    let (start, end) = crate::model::prefix_range(&format!("rrate/{doc}/"));
    for (k, _) in cx.p.scan(&start, &end, 10_000, false) {
        cx.p.delete(&k);
    }
}
