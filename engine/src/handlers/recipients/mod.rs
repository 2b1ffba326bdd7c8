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
//! | `POST .../sign` (`signature`, `initials`, `fields`; see `sign_body.rs` and `domain::signatures`) | a signer signs: `document.partially_signed`, or `document.signed` when it completes the document |
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
//! `view.rs` is what the recipient reads, `acts.rs` what they do (`sign_body.rs` reads
//! the `sign` body), `verify.rs` their identity checks, `page.rs` the HTML page and its
//! assets. The link itself (lookup, availability, rate limit) is `domain::links`.

mod acts;
pub mod page;
mod sign_body;
pub mod verify;
mod view;

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http;
use crate::base::http::{ApiError, ApiResult, Fields, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::document::Document;
use crate::domain::links::by_secret;
use crate::domain::links::check_available;
use crate::domain::links::rate_limit;
use crate::domain::page_views::MAX_REPORT_SECONDS;
use crate::domain::recipient_states::Move;
use crate::domain::{embedding, identity, page_views};
use crate::handlers::recipients::acts::{act, act_verified};
use crate::handlers::recipients::view::recipient_view;
use serde_json::Value;

/// `/s/{secret}`: the signing page for browsers, the recipient view (JSON) for others.
pub fn page_route(cx: &mut Cx, req: &Request, secret: &str) -> Response {
    let html = page::wants_html(req);
    let mut embed = None;
    let mut resp = match by_secret(cx, secret) {
        Err(_) if html => page::link_not_found(req),
        Err(e) => e.into_response(),
        Ok((doc, i)) if html => {
            let view = recipient_view(cx, &doc, i, secret, req);
            embed = page::Embed::asked(req).map(|hide_header| page::Embed {
                origins: embedding::origins(cx, &doc.entity_id),
                hide_header,
            });
            match page::unavailable(&view) {
                Some(notice) => notice,
                None => page::page(&view, doc.expiration_ms, embed.as_ref()),
            }
        }
        Ok((doc, i)) => match check_available(&doc) {
            Ok(()) => json(200, &recipient_view(cx, &doc, i, secret, req)),
            Err(e) => e.into_response(),
        },
    };
    page::frame_headers(&mut resp.headers, embed.as_ref());
    resp
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

/// Which identity checks an act on a link waits for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// None: reading the document, and the identity checks themselves.
    None,
    /// The checks set for opening (and no lock after too many wrong attempts).
    Open,
    /// Those, and the checks set for signing: signing and approving.
    Sign,
}

/// What an act on a recipient's link starts from: the document, the recipient's
/// index, and where their identity checks stand.
pub struct Visit {
    doc: Document,
    i: usize,
    st: verify::Status,
}

/// What a route does on a recipient's link, once [`link`] let it through.
pub type LinkAct = fn(&mut Cx, &Request, &[&str], Visit) -> ApiResult<Response>;

/// An act on the link in `p[0]` (the route's other parameters follow): the Origin, the
/// link, the document's availability, the rate limit and the checks `gate` names come
/// first; errors are answered with the page's safety headers like everything else.
pub fn link(
    cx: &mut Cx,
    req: &Request,
    p: &[&str],
    gate: Gate,
    act: LinkAct,
) -> ApiResult<Response> {
    let mut resp = match visit(cx, req, p[0], gate).and_then(|v| act(cx, req, p, v)) {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    page::safety_headers(&mut resp.headers);
    Ok(resp)
}

fn visit(cx: &mut Cx, req: &Request, secret: &str, gate: Gate) -> ApiResult<Visit> {
    let m = req.method.as_str();
    if m != "GET" {
        check_origin(cx, req)?;
    }
    let (doc, i) = by_secret(cx, secret)?;
    check_available(&doc)?;
    if m == "POST" {
        rate_limit(cx, &doc, i)?;
    }
    let (_, st) = verify::status(cx, &doc, i, req);
    if gate != Gate::None {
        if st.locked {
            return Err(http::ApiError::forbidden(
                "verification_locked",
                "too many wrong attempts: this link is locked; ask the sender for help",
            ));
        }
        if !st.open_pending.is_empty() {
            return Err(verify::required(identity::Stage::Open, &st.open_pending));
        }
        if gate == Gate::Sign && !st.sign_pending.is_empty() {
            return Err(verify::required(identity::Stage::Sign, &st.sign_pending));
        }
    }
    Ok(Visit { doc, i, st })
}

/// `GET /v1/recipient/{secret}`: the document as this recipient sees it.
pub fn get(cx: &mut Cx, req: &Request, p: &[&str], v: Visit) -> ApiResult<Response> {
    Ok(json(200, &recipient_view(cx, &v.doc, v.i, p[0], req)))
}

/// `POST .../verify/start`: an identity check begins.
pub fn verify_start(cx: &mut Cx, req: &Request, _: &[&str], v: Visit) -> ApiResult<Response> {
    Ok(json(200, &verify::start(cx, req, &v.doc, v.i)?))
}

/// `POST .../verify`: an identity check answered.
pub fn verify(cx: &mut Cx, req: &Request, _: &[&str], v: Visit) -> ApiResult<Response> {
    let (body, cookie) = verify::verify(cx, req, &v.doc, v.i)?;
    let mut resp = json(200, &body);
    resp.headers.push(("set-cookie".into(), cookie));
    Ok(resp)
}

/// `POST .../view`.
pub fn view(cx: &mut Cx, req: &Request, _: &[&str], v: Visit) -> ApiResult<Response> {
    act(cx, req, v.doc, v.i, Move::View)
}

/// `POST .../review`.
pub fn review(cx: &mut Cx, req: &Request, _: &[&str], v: Visit) -> ApiResult<Response> {
    act(cx, req, v.doc, v.i, Move::Review)
}

/// `POST .../comment`.
pub fn comment(cx: &mut Cx, req: &Request, _: &[&str], v: Visit) -> ApiResult<Response> {
    acts::comment(cx, req, v.doc, v.i)
}

/// `POST .../sign`.
pub fn sign(cx: &mut Cx, req: &Request, _: &[&str], v: Visit) -> ApiResult<Response> {
    act_verified(cx, req, v.doc, v.i, Move::Sign, &v.st.passes)
}

/// `POST .../approve`.
pub fn approve(cx: &mut Cx, req: &Request, _: &[&str], v: Visit) -> ApiResult<Response> {
    act(cx, req, v.doc, v.i, Move::Approve)
}

/// `POST .../reject`.
pub fn reject(cx: &mut Cx, req: &Request, _: &[&str], v: Visit) -> ApiResult<Response> {
    act(cx, req, v.doc, v.i, Move::Reject)
}

/// `POST .../transfer`: the signer hands their part to someone else.
pub fn transfer(cx: &mut Cx, req: &Request, _: &[&str], v: Visit) -> ApiResult<Response> {
    acts::transfer(cx, req, v.doc, v.i)
}

/// `POST .../print`.
pub fn print(cx: &mut Cx, req: &Request, _: &[&str], v: Visit) -> ApiResult<Response> {
    act(cx, req, v.doc, v.i, Move::Print)
}

/// `POST .../page-views`: time on each page.
pub fn page_views(cx: &mut Cx, req: &Request, _: &[&str], v: Visit) -> ApiResult<Response> {
    let f = req.body_fields()?;
    f.only(&["pages"])?;
    let report = page_report(&f, v.doc.page_count())?;
    page_views::record(cx, &v.doc, &report);
    Ok(http::no_content())
}

/// The page-view report's (page number, milliseconds) pairs (`domain::page_views`).
fn page_report(f: &Fields, page_count: usize) -> ApiResult<Vec<(usize, u64)>> {
    let bad = |path: &str, what: String| {
        ApiError::bad_request("invalid_field", format!("`{path}` must be {what}"))
    };
    let entries = f.objects("pages")?;
    if entries.is_empty() {
        return Err(ApiError::bad_request(
            "missing_field",
            "the field `pages` is required: one entry per page seen",
        ));
    }
    let mut out: Vec<(usize, u64)> = Vec::with_capacity(entries.len());
    for (path, o) in entries {
        if let Some(k) = o
            .keys()
            .find(|k| !matches!(k.as_str(), "page_num" | "seconds"))
        {
            return Err(bad(
                &format!("{path}.{k}"),
                "absent (not accepted here)".into(),
            ));
        }
        let num = o
            .get("page_num")
            .and_then(Value::as_u64)
            .filter(|n| (1..=page_count as u64).contains(n))
            .ok_or_else(|| {
                bad(
                    &format!("{path}.page_num"),
                    format!("a page of the document, 1 to {page_count}"),
                )
            })? as usize;
        if out.iter().any(|(n, _)| *n == num) {
            return Err(bad(
                &format!("{path}.page_num"),
                format!("named once per report (page {num} is named twice)"),
            ));
        }
        let seconds = o
            .get("seconds")
            .and_then(Value::as_f64)
            .filter(|s| *s > 0.0 && *s <= MAX_REPORT_SECONDS)
            .ok_or_else(|| {
                bad(
                    &format!("{path}.seconds"),
                    format!("a number of seconds above 0 and at most {MAX_REPORT_SECONDS}"),
                )
            })?;
        // Rounded to the millisecond (`as` truncates; the engine has no `f64::round`).
        out.push((num, (seconds * 1000.0 + 0.5) as u64));
    }
    Ok(out)
}

/// `GET .../download`.
pub fn download(cx: &mut Cx, req: &Request, _: &[&str], v: Visit) -> ApiResult<Response> {
    acts::download(cx, req, v.doc, v.i)
}

/// `GET .../pages/{n}`: a page's image.
pub fn page_image(cx: &mut Cx, _: &Request, p: &[&str], v: Visit) -> ApiResult<Response> {
    view::page_image(cx, &v.doc, p[1])
}

/// `GET .../comments`.
pub fn comments(cx: &mut Cx, _: &Request, _: &[&str], v: Visit) -> ApiResult<Response> {
    view::comments(cx, &v.doc)
}

/// `GET /v1/eid/return/{session}`: back from the eID provider, on to the signing page.
pub fn eid_return(cx: &mut Cx, req: &Request, session: &str) -> ApiResult<Response> {
    let (location, cookie) = verify::eid_return(cx, req, session)?;
    let mut resp = Response {
        status: 303,
        headers: vec![("location".into(), location), ("set-cookie".into(), cookie)],
        body: Vec::new(),
    };
    page::safety_headers(&mut resp.headers);
    Ok(resp)
}
