//! `GET /v1/notifications` (GetAccept's): what happened lately to the caller's
//! documents that someone else did: the events of the audit trails of their
//! [`DOCUMENTS`] newest documents in the last [`DAYS`] days, newest first, at most
//! [`MAX_ITEMS`]. Read from the trails, so nothing is stored twice.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{ApiResult, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::auth::authenticate;
use crate::domain::list::{self, Query};
use crate::handlers::shapes::trail_events;
use serde_json::Value;

/// How many of the caller's newest documents are looked at.
pub const DOCUMENTS: usize = 20;
/// How far back.
pub const DAYS: u64 = 30;
/// The most notifications answered.
pub const MAX_ITEMS: usize = 100;

/// `GET /v1/notifications`.
pub fn list(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    let pr = authenticate(cx, req)?;
    let mut q = Query::own(&pr);
    q.limit = DOCUMENTS;
    let since = cx.now().saturating_sub(DAYS * 24 * 3600 * 1000);
    let mut items: Vec<Value> = Vec::new();
    for doc in list::run(cx, &pr, &q) {
        for mut e in trail_events(cx, &doc, since) {
            let by_caller = e["actor_type"] == "user" && e["actor_id"] == pr.user.id.as_str();
            if by_caller {
                continue;
            }
            e["id"] = e["event_id"].clone();
            e["is_read"] = false.into();
            items.push(e);
        }
    }
    items.sort_by(|a, b| {
        b["created_at"]
            .as_str()
            .cmp(&a["created_at"].as_str())
            .then(b["event_id"].as_str().cmp(&a["event_id"].as_str()))
    });
    items.truncate(MAX_ITEMS);
    Ok(json(200, &Value::Array(items)))
}
