//! `POST /v1/documents/{id}/reminders`: reminders now or at a time.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{ApiError, ApiResult, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{iso8601, parse_time};
use crate::domain::access::writable;
use crate::domain::auth::Principal;
use crate::domain::document::store_doc;
use crate::domain::document_states::{Move, may};
use crate::domain::sending;
use crate::domain::trail;
use crate::handlers::documents::input::recipient_ids;
use serde_json::json;

/// `POST /v1/documents/{id}/reminders` → 200 `{recipient_ids, send_at}`: `message` (or
/// GetAccept's `text`),
/// `recipient_ids`, `send_at`, and GetAccept's `type` (`email` or `sms`), `not_opened`
/// (only those who have not opened it) and `not_signed` (everyone still waiting, the
/// default). All optional.
pub fn reminders(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    let f = req.body_fields()?;
    may(&doc, Move::Remind)?;
    let sms = match f.optional_str("type")?.as_deref() {
        None | Some("" | "email") => false,
        Some("sms") => true,
        Some(other) => {
            return Err(bad(
                "invalid_field",
                format!(
                    "`type` must be email or sms, not {other:?} (video reminders are not offered)"
                ),
            ));
        }
    };
    let message = match f.optional_str("message")?.filter(|m| !m.is_empty()) {
        Some(m) => m,
        None => f.optional_str("text")?.unwrap_or_default(),
    };
    let only_unopened = f.optional_bool("not_opened")? == Some(true)
        && f.optional_bool("not_signed")? != Some(true);
    let chosen = if f.has("recipient_ids") {
        Some(recipient_ids(&f)?)
    } else {
        None
    };
    let who = sending::to_remind(&doc, sms, only_unopened, chosen.as_deref())?;
    let before = doc.clone();
    let actor = trail::Actor::user(pr, req.client());
    let ids: Vec<String> = who.iter().map(|r| r.id.clone()).collect();
    let mut send_at = None;
    match f.optional_str("send_at")?.filter(|s| !s.is_empty()) {
        Some(t) => {
            let at = parse_time(&t).filter(|at| *at > cx.now()).ok_or_else(|| {
                bad(
                    "invalid_field",
                    "`send_at` must be a future ISO 8601 timestamp",
                )
            })?;
            send_at = Some(iso8601(at));
            sending::schedule_reminder(cx, &mut doc, &actor, &ids, at, (&message, sms));
        }
        None => {
            sending::remind(cx, &mut doc, &who, &message, sms, &actor);
        }
    }
    store_doc(cx, Some(&before), &mut doc);
    // 200, as GetAccept answers it, saying whom and when.
    Ok(json(
        200,
        &json!({"recipient_ids": ids, "send_at": send_at}),
    ))
}

fn bad(code: &'static str, text: impl Into<String>) -> ApiError {
    ApiError::bad_request(code, text)
}
