//! What happens when one of a document's dates comes: its scheduled send (job
//! `doc.scheduled-send`), its expiry (job `doc.expire`, the state machine's
//! [`Move::Expire`]) and its reminders, scheduled or automatic (job `doc.remind`).

use crate::base::cx::Cx;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::iso8601;
use crate::domain::document::{self, RenderPurpose, load_doc, store_doc};
use crate::domain::document_states::{self, Move};
use crate::domain::events::emit_and_log;
use crate::domain::rendering::request_render;
use crate::domain::trail::{self, log};
use crate::domain::{notify, reminder_schedules, sending};
use serde_json::json;

/// Job `doc.scheduled-send`: a scheduled document's time has come, and its send's
/// render is asked for; `Some(at)` when the time moved later (the job runs again then).
pub fn scheduled_send(cx: &mut Cx, id: &str) -> Option<u64> {
    let mut doc = load_doc(cx, id).filter(|d| d.status == document::Status::Scheduled)?;
    if let Some(at) = doc.scheduled_sending_ms
        && at > cx.now()
    {
        return Some(at);
    }
    let before = doc.clone();
    request_render(cx, &mut doc, RenderPurpose::Send, String::new());
    log(
        cx,
        &mut doc,
        &trail::Actor::system(),
        "scheduled_send",
        "the scheduled time has come",
        None,
    );
    store_doc(cx, Some(&before), &mut doc);
    None
}

/// Job `doc.expire`: an active document past its expiration date becomes `expired`
/// (`document.expired`, the owner told). A date moved later has a job of its own.
pub fn expire(cx: &mut Cx, id: &str) {
    let Some(mut doc) = load_doc(cx, id).filter(|d| document_states::allowed(d, Move::Expire))
    else {
        return;
    };
    if doc.expiration_ms > cx.now() {
        return;
    }
    let before = doc.clone();
    doc.status_before_expiry = Some(doc.status);
    document_states::apply(&mut doc, Move::Expire);
    let detail = format!("expired at {}", iso8601(doc.expiration_ms));
    emit_and_log(
        cx,
        &mut doc,
        &trail::Actor::system(),
        document_states::event(Move::Expire).unwrap_or("document.expired"),
        "expired",
        detail,
        json!({}),
    );
    notify::owner_notice(
        cx,
        &doc,
        format!("\"{}\" has expired", doc.name),
        format!(
            "It expired on {} before everyone had finished with it. A new expiration date brings it back.",
            iso8601(doc.expiration_ms)
        ),
    );
    store_doc(cx, Some(&before), &mut doc);
}

/// Job `doc.remind`, its payload read.
pub struct Reminder {
    pub doc: String,
    /// Automatic reminders: everyone waited on, again every few days.
    pub auto: bool,
    /// Scheduled: the recipients to remind.
    pub ids: Vec<String>,
    pub message: String,
    pub sms: bool,
}

/// Job `doc.remind`: reminds those of an active document still waited on (all of them
/// for automatic reminders, else those named); `Some(at)` for the next automatic round
/// while fewer than the most have gone out.
pub fn remind(cx: &mut Cx, r: Reminder) -> Option<u64> {
    let mut doc = load_doc(cx, &r.doc).filter(|d| d.status.is_active())?;
    let mut who = sending::waiting(&doc);
    who.retain(|w| r.auto || r.ids.contains(&w.id));
    if who.is_empty() {
        return None;
    }
    let before = doc.clone();
    sending::remind(
        cx,
        &mut doc,
        &who,
        &r.message,
        r.sms,
        &trail::Actor::system(),
    );
    store_doc(cx, Some(&before), &mut doc);
    if r.auto {
        let now = cx.now();
        return reminder_schedules::after_round(cx, &doc, now);
    }
    None
}
