//! `/v1/documents/...` (spec §2–§4, §8): the routes of one document and of the list.
//!
//! Files: [`create`], [`read`] (the reads), [`list`], [`update`] (properties, expiry,
//! pricing), [`send`] (send, seal, send to recipients, forward, revisions), [`signing`]
//! (manual signing), [`comments`], [`reminders`], [`delete`] (recall, delete, lost),
//! [`roster`] (correcting and removing a recipient), [`fields`], [`custom_data`],
//! [`download`]; [`input`] reads request members several of them take.

pub mod comments;
pub mod create;
pub mod custom_data;
pub mod delete;
pub mod download;
pub mod fields;
pub mod input;
pub mod list;
pub mod read;
pub mod reminders;
pub mod roster;
pub mod send;
pub mod signing;
pub mod update;

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http;
use crate::base::http::ApiResult;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::auth::authenticate;

/// `/v1/documents/...`. The router has already answered 404 and 405 from its route
/// table, so only the table's methods arrive here.
pub fn route(cx: &mut Cx, req: &Request, rest: &[&str]) -> ApiResult<Response> {
    let m = req.method.as_str();
    let pr = authenticate(cx, req)?;
    match (m, rest) {
        ("GET", []) => list::list(cx, &pr, req),
        ("POST", []) => create::create(cx, &pr, req),
        ("GET", ["latest"]) => read::latest(cx, &pr, req),
        ("GET", ["external", ext]) => read::external(cx, &pr, req, ext),
        ("GET", [id]) => read::get(cx, &pr, req, id),
        ("PUT", [id]) => update::update(cx, &pr, req, id),
        ("DELETE", [id]) => delete::delete(cx, &pr, id),
        ("GET", [id, "status"]) => read::status(cx, &pr, id),
        ("GET", [id, "recipients"]) => read::recipients(cx, &pr, id),
        ("GET", [id, "pages"]) => read::pages(cx, &pr, id),
        ("GET", [id, "download"]) => download::download(cx, &pr, req, id),
        ("GET", [id, "log"]) => read::log(cx, &pr, id),
        ("GET", [id, "attachments"]) => read::attachments(cx, &pr, id),
        ("POST", [id, "attachments", aid, "upload"]) => {
            update::upload_attachment(cx, &pr, req, id, aid)
        }
        ("GET", [id, "events"]) => read::events(cx, &pr, id),
        ("POST", [id, "preview"]) => download::preview(cx, &pr, req, id),
        (_, [id, "custom-data", rest @ ..]) => custom_data::document_route(cx, &pr, req, id, rest),
        ("GET", [id, "comments"]) => read::comments(cx, &pr, id),
        ("POST", [id, "comments"]) => comments::comment(cx, &pr, req, id),
        ("POST", [id, "comments", cid, "resolve"]) => comments::resolve_comment(cx, &pr, id, cid),
        ("GET", [id, "pricing-tables"]) => read::pricing_tables(cx, &pr, id),
        ("PUT", [id, "pricing-tables"]) => update::put_pricing_tables(cx, &pr, req, id),
        ("GET", [id, "revisions"]) => read::revisions(cx, &pr, id),
        (_, [id, "fields"]) => fields::route(cx, &pr, req, id),
        ("PUT", [id, "recipients", rid]) => roster::update_recipient(cx, &pr, req, id, rid),
        ("DELETE", [id, "recipients", rid]) => roster::remove_recipient(cx, &pr, req, id, rid),
        ("POST", [id, "revisions"]) => send::revise(cx, &pr, req, id),
        ("POST", [id, "seal"]) => send::seal(cx, &pr, req, id),
        ("POST", [id, "send"]) => send::send(cx, &pr, req, id),
        ("POST", [id, "recipients", "send"]) => send::send_to_recipients(cx, &pr, req, id),
        ("POST", [id, "forward"]) => send::forward(cx, &pr, req, id),
        ("POST", [id, "expiration"]) => update::expiration(cx, &pr, req, id),
        ("POST", [id, "manually-sign"]) => signing::manually_sign(cx, &pr, req, id),
        ("POST", [id, "lost"]) => delete::lost(cx, &pr, id),
        ("POST", [id, "reminders"]) => reminders::reminders(cx, &pr, req, id),
        _ => Err(http::ApiError::not_found(
            "not_found",
            format!("no such endpoint: {} {}", req.method, req.path),
        )),
    }
}
