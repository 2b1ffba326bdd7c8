//! The recipient API: what the secret in a recipient's `document_url` allows. The
//! signing page calls it; it moves the recipient's and the document's statuses (spec §3)
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

use super::model::{
    Comment, Document, RecipientStatus, RenderPurpose, Role, Status, comment_key, link_key,
};
use super::page;
use super::read::{comment_json, current_pdf};
use super::{
    Actor, client_of, emit_and_log, event_recipient, load_doc, notify, signatures, store_doc,
    verify,
};
use crate::http::{ApiError, ApiResult, json};
#[allow(unused_imports)]
use crate::prelude::*;
use crate::router::method_not_allowed;
use crate::util::{iso8601, new_id, sha256_hex};
use crate::{Cx, Request, Response};
use serde_json::{Value, json};

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
fn check_open(doc: &Document) -> ApiResult<()> {
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
        Err(e) if html => {
            let _ = e;
            page::link_not_found()
        }
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
    format!("rrate/{doc_id}/{rid}").into_bytes()
}

/// Forgets a deleted document's per-recipient counters.
pub fn erase(cx: &mut Cx, doc: &str) {
    let (start, end) = crate::model::prefix_range(&format!("rrate/{doc}/"));
    for (k, _) in cx.p.scan(&start, &end, 10_000, false) {
        cx.p.delete(&k);
    }
}

/// `GET .../pages/{n}`: page `n` (1-based) of the PDF the recipient sees, as a PNG.
fn page_image(cx: &mut Cx, doc: &Document, n: &str) -> ApiResult<Response> {
    let missing = || ApiError::not_found("page_not_found", "no such page image");
    let n: usize = n.parse().map_err(|_| missing())?;
    let images = super::pages::load(cx, &doc.id);
    let (blob, ..) = images
        .pages
        .get(n.checked_sub(1).ok_or_else(missing)?)
        .ok_or_else(missing)?
        .clone();
    let bytes = cx.p.get_blob(&blob).ok_or_else(missing)?;
    Ok(Response {
        status: 200,
        headers: vec![
            ("content-type".into(), "image/png".into()),
            // The URL names a page of the current PDF; a new render changes the blob.
            ("cache-control".into(), "private, no-cache".into()),
            ("etag".into(), format!("\"{blob}\"")),
        ],
        body: bytes,
    })
}

/// `GET .../comments`: the comment thread the recipient sees (not internal ones), as
/// `{id, text, author_name, created_at}`.
fn comments(cx: &mut Cx, doc: &Document) -> ApiResult<Response> {
    let (start, end) = super::model::comments_prefix(&doc.id);
    let list: Vec<Value> =
        cx.p.scan(&start, &end, 1000, false)
            .into_iter()
            .map(|(_, v)| crate::model::decode::<Comment>(&v))
            .filter(|c| !c.internal)
            // Names only: recipients do not see each other's addresses.
            .map(|c| {
                json!({"id": c.id, "text": c.text, "author_name": c.author_name,
                        "created_at": iso8601(c.created_ms)})
            })
            .collect();
    Ok(json(200, &json!({"comments": list})))
}

fn recipient_view(cx: &mut Cx, doc: &Document, i: usize, secret: &str, req: &Request) -> Value {
    let r = &doc.recipients[i];
    let (checks, st) = verify::status(cx, doc, i, req);
    let verification = checks.as_ref().map(|c| verify::view_json(c, &st, r));
    if !st.open_pending.is_empty() || st.locked {
        // Nothing of the document's content before the checks for opening pass.
        return json!({
            "document": {
                "id": doc.id, "name": doc.name, "status": doc.status.as_str(),
                "sender_name": doc.sender.name, "sender_email": doc.sender.email,
                "expiration_date": iso8601(doc.expiration_ms),
                "rejection_reason": doc.rejection_reason,
            },
            "recipient": {"id": r.id, "fullname": r.fullname(), "role": r.role.as_str(), "status": r.status.as_str()},
            "verification": verification,
            "pages": [], "fields": [], "waiting_for": [],
            "links": {
                "api": format!("/v1/recipient/{secret}"),
                "download": format!("/v1/recipient/{secret}/download"),
            },
        });
    }
    let me = crate::util::normalize_email(&r.email);
    let fields = super::fields::load(cx, &doc.id);
    let images = super::pages::load(cx, &doc.id);
    let content_pages: Vec<(f32, f32)> = doc.files.iter().flat_map(|f| f.pages.clone()).collect();
    let pages: Vec<Value> = images
        .pages
        .iter()
        .enumerate()
        .map(|(n, (_, w, h, _))| {
            let mut p = json!({
                "num": n + 1,
                "image": format!("/v1/recipient/{secret}/pages/{}", n + 1),
                "width": w, "height": h,
            });
            if let Some((pw, ph)) = content_pages.get(n) {
                p["points"] = json!([pw, ph]);
            }
            p
        })
        .collect();
    let sigs = super::signatures::load_all(cx, &doc.id);
    let field_list: Vec<Value> = fields
        .iter()
        .filter(|f| f.recipient_id.is_empty() || f.recipient_id == r.id)
        .map(|f| {
            json!({
                "id": f.id, "type": f.kind.as_str(), "page_num": f.page_num,
                "left": f.left, "top": f.top, "width": f.width, "height": f.height,
                "required": f.required, "label": f.label, "value": f.value,
                "mine": f.recipient_id == r.id,
            })
        })
        .collect();
    let waiting_for: Vec<String> = if doc.flags.is_signing_order && check_turn(doc, i).is_err() {
        doc.recipients
            .iter()
            .filter(|o| o.role != Role::Cc && o.order_num < r.order_num && !o.status.is_finished())
            .map(|o| o.fullname())
            .collect()
    } else {
        Vec::new()
    };
    let mine = sigs.iter().find(|s| s.recipient_id == r.id);
    json!({
        "document": {
            "id": doc.id, "name": doc.name, "status": doc.status.as_str(), "value": doc.value,
            "sender_name": doc.sender.name, "sender_email": doc.sender.email,
            "expiration_date": iso8601(doc.expiration_ms), "page_count": doc.page_count(),
            "is_signing": doc.flags.is_signing, "is_signing_order": doc.flags.is_signing_order,
            "is_signing_initials": doc.flags.is_signing_initials,
            "rejection_reason": doc.rejection_reason,
            "pricing_tables": super::pricing::tables_json(&doc.pricing_tables),
            "attachments": doc.attachments.iter()
                .filter(|a| a.restricted_to.as_ref().is_none_or(|to| *to == me))
                .map(|a| json!({"id": a.id, "name": a.name, "size": a.size}))
                .collect::<Vec<_>>(),
            "has_pdf": current_pdf(doc).is_some(),
            // The signed PDF is ready: signed, and no render is still running.
            "final_ready": doc.status.is_signed() && doc.pending.is_none() && doc.final_pdf.is_some(),
        },
        "recipient": super::read::recipient_json(cx, r, false),
        "recipients": doc.recipients.iter()
            .map(|o| json!({"fullname": o.fullname(), "role": o.role.as_str(), "status": o.status.as_str(), "order_num": o.order_num.to_string()}))
            .collect::<Vec<_>>(),
        "pages": pages,
        "fields": field_list,
        "waiting_for": waiting_for,
        "verification": verification,
        "signature": mine.map(|s| json!({"type": s.signature.kind, "name": s.signature.text, "signed_at": iso8601(s.signed_ms)})),
        "links": {
            "api": format!("/v1/recipient/{secret}"),
            "download": format!("/v1/recipient/{secret}/download"),
        },
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Act {
    View,
    Review,
    Sign,
    Approve,
    Reject,
    Print,
}

fn forbidden(why: &str) -> ApiError {
    ApiError::forbidden("not_allowed", why.to_string())
}

/// The actor behind a link.
/// The recorded address is the peer's: a recipient cannot set it with `CLIENT_IP`,
/// which only the API's seal and send accept from the sender's own server.
fn recipient_actor(doc: &Document, i: usize, req: &Request) -> Actor {
    let r = &doc.recipients[i];
    let (user_agent, _) = client_of(req);
    let ip = req.remote_addr.clone();
    Actor {
        kind: "recipient",
        id: r.id.clone(),
        name: r.fullname(),
        ip,
        user_agent,
    }
}

/// Whether every signer has signed and every approver approved.
fn complete(doc: &Document) -> bool {
    doc.recipients.iter().all(|r| match r.role {
        Role::Signer => matches!(
            r.status,
            RecipientStatus::Signed
                | RecipientStatus::SignedWithoutVerification
                | RecipientStatus::NotRequired
        ),
        Role::Approver => matches!(
            r.status,
            RecipientStatus::Approved | RecipientStatus::NotRequired
        ),
        Role::Cc => true,
    })
}

/// With a signing order: 403 unless every signer and approver before `i` is done.
fn check_turn(doc: &Document, i: usize) -> ApiResult<()> {
    if !doc.flags.is_signing_order {
        return Ok(());
    }
    let mine = doc.recipients[i].order_num;
    let waiting = doc.recipients.iter().any(|r| {
        r.role != Role::Cc
            && r.order_num < mine
            && !r.status.has_signed_or_approved()
            && r.status != RecipientStatus::NotRequired
    });
    if waiting {
        return Err(forbidden(
            "it is not your turn yet: earlier recipients in the signing order have not finished",
        ));
    }
    Ok(())
}

fn act(cx: &mut Cx, req: &Request, doc: Document, i: usize, what: Act) -> ApiResult<Response> {
    act_verified(cx, req, doc, i, what, &[])
}

/// An act, with the identity checks the request passed (recorded with a signature).
fn act_verified(
    cx: &mut Cx,
    req: &Request,
    mut doc: Document,
    i: usize,
    what: Act,
    passes: &[verify::Pass],
) -> ApiResult<Response> {
    let f = req.body_fields()?;
    if f.has("signing_method") || f.has("verified_name") {
        return Err(ApiError::bad_request(
            "unknown_field",
            "`signing_method` and `verified_name` are not given by the signer: they come from the identity checks passed",
        ));
    }
    let before = doc.clone();
    let actor = recipient_actor(&doc, i, req);
    let now = cx.now();
    let r = doc.recipients[i].clone();
    let ev_recipient = |d: &Document| event_recipient(&d.recipients[i]);
    match what {
        Act::View => {
            doc.views += 1;
            if doc.recipients[i].viewed_ms.is_none() {
                doc.recipients[i].viewed_ms = Some(now);
                if matches!(r.status, RecipientStatus::Added | RecipientStatus::Sent) {
                    doc.recipients[i].status = RecipientStatus::Viewed;
                }
                if matches!(doc.status, Status::Sealed | Status::Sent) {
                    doc.status = Status::Viewed;
                }
                let extra = json!({"recipient": ev_recipient(&doc)});
                emit_and_log(
                    cx,
                    &mut doc,
                    &actor,
                    "document.viewed",
                    "viewed",
                    "opened by the recipient",
                    extra,
                );
            }
        }
        Act::Review => {
            check_open(&doc)?;
            if matches!(
                r.status,
                RecipientStatus::Added | RecipientStatus::Sent | RecipientStatus::Viewed
            ) {
                doc.recipients[i].status = RecipientStatus::Reviewed;
                doc.recipients[i].viewed_ms.get_or_insert(now);
                if matches!(doc.status, Status::Sealed | Status::Sent | Status::Viewed) {
                    doc.status = Status::Reviewed;
                }
                let extra = json!({"recipient": ev_recipient(&doc)});
                emit_and_log(
                    cx,
                    &mut doc,
                    &actor,
                    "document.reviewed",
                    "reviewed",
                    "every page read",
                    extra,
                );
            }
        }
        Act::Sign | Act::Approve => {
            check_open(&doc)?;
            let (role, done, word) = if what == Act::Sign {
                (Role::Signer, RecipientStatus::Signed, "sign")
            } else {
                (Role::Approver, RecipientStatus::Approved, "approve")
            };
            if r.role != role {
                return Err(forbidden(&format!(
                    "only a recipient with the role {} can {word}",
                    role.as_str()
                )));
            }
            if r.status.is_finished() {
                return Err(ApiError::bad_request(
                    "invalid_status",
                    format!("you are already {}", r.status.as_str()),
                ));
            }
            check_turn(&doc, i)?;
            if what == Act::Sign {
                let given = signatures::read_sign_body(cx, &doc, &r, &f, passes)?;
                signatures::store(cx, &doc, &given);
            }
            let rr = &mut doc.recipients[i];
            rr.status = done;
            rr.signed_ms = Some(now);
            rr.ip_address = actor.ip.clone();
            rr.viewed_ms.get_or_insert(now);
            finish_signature(cx, &mut doc, i, &actor, what == Act::Sign);
        }
        Act::Reject => {
            check_open(&doc)?;
            if r.role == Role::Cc {
                return Err(forbidden("a CC recipient cannot reject the document"));
            }
            if r.status.is_finished() {
                return Err(ApiError::bad_request(
                    "invalid_status",
                    format!(
                        "you are {}; there is nothing left to reject",
                        r.status.as_str()
                    ),
                ));
            }
            let reason = f.optional_str("reason")?.filter(|s| !s.trim().is_empty());
            doc.recipients[i].status = RecipientStatus::Rejected;
            doc.recipients[i].ip_address = actor.ip.clone();
            doc.status = Status::Rejected;
            doc.rejection_reason = reason.clone();
            let extra = json!({"recipient": ev_recipient(&doc), "rejection_reason": reason});
            emit_and_log(
                cx,
                &mut doc,
                &actor,
                "document.rejected",
                "rejected",
                "rejected by the recipient",
                extra,
            );
            notify::owner_notice(
                cx,
                &doc,
                format!("\"{}\" was rejected", doc.name),
                format!(
                    "{} rejected the document. Reason: {}",
                    r.fullname(),
                    reason.as_deref().unwrap_or("none given")
                ),
            );
        }
        Act::Print => {
            let extra = json!({"recipient": ev_recipient(&doc)});
            emit_and_log(
                cx,
                &mut doc,
                &actor,
                "document.printed",
                "printed",
                "printed by the recipient",
                extra,
            );
        }
    }
    store_doc(cx, Some(&before), &mut doc);
    Ok(json(
        200,
        &json!({"status": doc.status.as_str(), "recipient_status": doc.recipients[i].status.as_str()}),
    ))
}

/// After a signature or approval: `document.signed` when the document is complete (and
/// the PDF is rendered again with the signatures), else `document.partially_signed` /
/// `document.approved`, and with a signing order the next group is invited.
fn finish_signature(cx: &mut Cx, doc: &mut Document, i: usize, actor: &Actor, signed: bool) {
    let now = cx.now();
    let r = doc.recipients[i].clone();
    let mut rj = event_recipient(&r);
    rj["ip_address"] = r.ip_address.clone().into();
    let mut methods = match &r.signing_method {
        Some((kind, name)) => {
            vec![json!({"type": kind, "signed_at": iso8601(now), "verified_name": name})]
        }
        None => Vec::new(),
    };
    if signed {
        let sigs = signatures::load_all(cx, &doc.id);
        if let Some(s) = sigs.iter().find(|s| s.recipient_id == r.id) {
            methods.extend(signatures::methods(s));
        }
    }
    rj["signing_methods"] = methods.into();
    if !signed {
        let extra = json!({"recipient": rj.clone()});
        emit_and_log(
            cx,
            doc,
            actor,
            "document.approved",
            "approved",
            "approved by the recipient",
            extra,
        );
    }
    if complete(doc) {
        doc.status = Status::Signed;
        doc.sign_ms = Some(now);
        let extra = json!({
            "document": {"id": doc.id, "name": doc.name, "status": doc.status.as_str(), "sign_date": iso8601(now)},
            "recipient": rj,
            "recipients": recipients_summary(doc),
        });
        emit_and_log(
            cx,
            doc,
            actor,
            "document.signed",
            "signed",
            "signed by every signer",
            extra,
        );
        super::lifecycle::request_render(cx, doc, RenderPurpose::Refresh, String::new());
        notify::owner_notice(
            cx,
            doc,
            format!("\"{}\" is signed", doc.name),
            "Every signer has signed the document.".into(),
        );
        return;
    }
    if signed {
        let extra = json!({
            "recipient": rj,
            "recipients": recipients_summary(doc),
        });
        emit_and_log(
            cx,
            doc,
            actor,
            "document.partially_signed",
            "partially_signed",
            "signed by a recipient; others are still to sign",
            extra,
        );
    }
    if doc.flags.is_signing_order {
        invite_next_group(cx, doc);
    }
}

/// `recipients` of the signing events (spec §6): fullname, role, status of each.
pub fn recipients_summary(doc: &Document) -> Value {
    doc.recipients
        .iter()
        .map(|o| json!({"fullname": o.fullname(), "role": o.role.as_str(), "status": o.status.as_str()}))
        .collect()
}

/// With a signing order: invites the next group whose turn has come.
fn invite_next_group(cx: &mut Cx, doc: &mut Document) {
    let pending = |r: &super::model::Recipient| {
        r.role != Role::Cc
            && !r.status.has_signed_or_approved()
            && r.status != RecipientStatus::NotRequired
    };
    let Some(next) = doc
        .recipients
        .iter()
        .filter(|r| pending(r))
        .map(|r| r.order_num)
        .min()
    else {
        return;
    };
    let now = cx.now();
    for j in 0..doc.recipients.len() {
        let r = &doc.recipients[j];
        // Never invited yet (one who opened the link early is `viewed` but still waits
        // for the mail that says it is their turn).
        if pending(r) && r.order_num == next && r.sent_ms.is_none() {
            if r.status == RecipientStatus::Added {
                doc.recipients[j].status = RecipientStatus::Sent;
            }
            doc.recipients[j].sent_ms = Some(now);
            let r = doc.recipients[j].clone();
            notify::invitation(cx, doc, &r);
        }
    }
}

/// Longest comment a recipient may leave.
pub const MAX_COMMENT: usize = 4000;

fn comment(cx: &mut Cx, req: &Request, mut doc: Document, i: usize) -> ApiResult<Response> {
    let f = req.body_fields()?;
    let text = f.required_str("text")?;
    if text.chars().count() > MAX_COMMENT {
        return Err(ApiError::bad_request(
            "comment_too_long",
            format!("a comment can have at most {MAX_COMMENT} characters"),
        ));
    }
    let r = doc.recipients[i].clone();
    let c = Comment {
        id: new_id(cx),
        text,
        author_type: "recipient".into(),
        author_id: r.id.clone(),
        author_name: r.fullname(),
        author_email: r.email.clone(),
        created_ms: cx.now(),
        internal: false,
        suggestion: false,
        resolved: false,
    };
    cx.save(&comment_key(&doc.id, c.created_ms, &c.id), &c);
    let before = doc.clone();
    let actor = recipient_actor(&doc, i, req);
    let meta = json!({"comment_id": c.id, "created_by": c.author_name, "created_at": iso8601(c.created_ms), "text": c.text});
    let extra = json!({"event_meta": meta, "recipient": event_recipient(&r)});
    emit_and_log(
        cx,
        &mut doc,
        &actor,
        "comment.created",
        "commented",
        "comment by the recipient",
        extra.clone(),
    );
    emit_and_log(
        cx,
        &mut doc,
        &actor,
        "document.commented",
        "commented",
        "comment by the recipient",
        extra,
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(json(200, &comment_json(&c)))
}

fn download(cx: &mut Cx, req: &Request, mut doc: Document, i: usize) -> ApiResult<Response> {
    let (blob, _) = current_pdf(&doc)
        .ok_or_else(|| ApiError::not_found("pdf_not_ready", "the document has no PDF yet"))?;
    let bytes = cx.p.get_blob(&blob).ok_or_else(|| {
        ApiError::not_found("pdf_not_ready", "the document's PDF is not stored any more")
    })?;
    let before = doc.clone();
    let actor = recipient_actor(&doc, i, req);
    let base = cx.settings().base_url.trim_end_matches('/').to_string();
    let r = &doc.recipients[i];
    let extra = json!({
        "document": {"id": doc.id, "name": doc.name, "status": doc.status.as_str(),
                     "download_url": format!("{base}/v1/documents/{}/download", doc.id)},
        "recipient": {"fullname": r.fullname(), "email": r.email, "role": r.role.as_str()},
    });
    emit_and_log(
        cx,
        &mut doc,
        &actor,
        "document.downloaded",
        "downloaded",
        "PDF downloaded by the recipient",
        extra,
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(Response {
        status: 200,
        headers: vec![("content-type".into(), "application/pdf".into())],
        body: bytes,
    })
}
