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
//! | `POST .../sign` (`signature`, `initials`, `fields`; see `domain::signatures`) | a signer signs: `document.partially_signed`, or `document.signed` when it completes the document |
//! | `POST .../verify/start`, `POST .../verify`, `GET /v1/eid/return/{session}` | identity checks (see `verify.rs` and `domain::identity`) |
//! | `POST .../approve` | an approver approves: `document.approved` (and `document.signed` when it completes the document) |
//! | `POST .../reject` (`reason`?) | recipient and document `rejected`, `document.rejected` |
//! | `GET .../download` | the PDF, `document.downloaded` |
//! | `POST .../print` | `document.printed` |
//! | `POST .../page-views` (`pages`: `page_num`, `seconds`) | time on each page, added to the document's page view times (`domain::page_views`); no event |
//!
//! An unknown link is 404; a document not out with recipients (recalled, lost, not yet
//! sent) is 410; an act the recipient's role or turn does not allow is 403; one the
//! state does not allow is 400.
//!
//! Files: this one routes and guards (the link, availability, Origin, rate limit);
//! `view.rs` is what the recipient reads, `acts.rs` what they do, `verify.rs` their
//! identity checks, `page.rs` the HTML page and its assets. The link itself (lookup,
//! availability, rate limit) is `domain::links`.

mod acts;
pub mod page;
pub mod verify;
mod view;

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http;
use crate::base::http::{ApiResult, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::links::by_secret;
use crate::domain::links::check_available;
use crate::domain::links::rate_limit;
use crate::domain::{identity, page_views};
use crate::handlers::recipients::acts::{act, act_verified, comment, download};
use crate::handlers::recipients::view::{comments, page_image, recipient_view};

/// `/s/{secret}`: the signing page for browsers, the recipient view (JSON) for others.
pub fn page_route(cx: &mut Cx, req: &Request, secret: &str) -> Response {
    let html = page::wants_html(req);
    let mut resp = match by_secret(cx, secret) {
        Err(_) if html => page::link_not_found(req),
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
            return Err(http::ApiError::forbidden(
                "verification_locked",
                "too many wrong attempts: this link is locked; ask the sender for help",
            ));
        }
        _ if !st.open_pending.is_empty() => {
            return Err(verify::required(identity::Stage::Open, &st.open_pending));
        }
        ("POST", ["sign" | "approve"]) if !st.sign_pending.is_empty() => {
            return Err(verify::required(identity::Stage::Sign, &st.sign_pending));
        }
        _ => {}
    }
    match (m, rest) {
        ("POST", ["view"]) => act(cx, req, doc, i, acts::Act::View),
        ("POST", ["review"]) => act(cx, req, doc, i, acts::Act::Review),
        ("POST", ["comment"]) => comment(cx, req, doc, i),
        ("POST", ["sign"]) => act_verified(cx, req, doc, i, acts::Act::Sign, &st.passes),
        ("POST", ["approve"]) => act(cx, req, doc, i, acts::Act::Approve),
        ("POST", ["reject"]) => act(cx, req, doc, i, acts::Act::Reject),
        ("POST", ["print"]) => act(cx, req, doc, i, acts::Act::Print),
        ("POST", ["page-views"]) => {
            page_views::record(cx, &doc, &req.body_fields()?)?;
            Ok(http::no_content())
        }
        ("GET", ["download"]) => download(cx, req, doc, i),
        ("GET", ["pages", n]) => page_image(cx, &doc, n),
        ("GET", ["comments"]) => comments(cx, &doc),
        _ => Err(http::ApiError::not_found("not_found", "no such endpoint")),
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
        Err(http::ApiError::forbidden(
            "cross_site_request",
            "requests from other sites are refused; open your link to act on the document",
        ))
    }
}
