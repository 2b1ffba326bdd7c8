//! Reminder schedules (issue 51 item 6): when the automatic reminders of a document
//! sent with `is_reminder_sending` go out: the first after `first_after_days`, then
//! every `every_days`, at most `max` rounds, none at or after the document's expiry.
//! Per entity (`rsch/{entity}`, `reminder_schedule` on `/v1/entity`) and per document
//! (`drsch/{doc}`, `reminder_schedule` on create and `PUT /v1/documents/{id}`), which
//! wins; without either, [`Schedule::default`] (3 days, every 3 days, 5 rounds: what
//! every document had before). A schedule changed while a reminder is already set
//! applies from that reminder on.

use crate::base::cx::Cx;
use crate::base::http::{ApiError, ApiResult};
use crate::base::keyspace::{DRSCH, RSCH};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util;
use crate::domain::document::Document;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const DAY_MS: u64 = 24 * 3600 * 1000;
/// The longest wait a schedule may name, in days.
pub const MAX_DAYS: u64 = 365;
/// The most rounds a schedule may name.
pub const MAX_ROUNDS: u64 = 50;

/// A reminder schedule.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Schedule {
    pub first_after_days: u32,
    pub every_days: u32,
    /// Rounds at most; 0: no automatic reminders.
    pub max: u32,
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule {
            first_after_days: 3,
            every_days: 3,
            max: 5,
        }
    }
}

/// A document's own schedule, if any, and the rounds sent so far.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
struct DocReminders {
    schedule: Option<Schedule>,
    rounds: u32,
}

fn entity_key(entity: &str) -> Vec<u8> {
    util::key(&[RSCH, entity])
}
fn doc_key(doc: &str) -> Vec<u8> {
    util::key(&[DRSCH, doc])
}

/// `name` (`{first_after_days, every_days, max}`, each a whole number: days 1 to
/// [`MAX_DAYS`], rounds 0 to [`MAX_ROUNDS`]) as a schedule; 400 otherwise.
pub fn parse(v: &Value, name: &str) -> ApiResult<Schedule> {
    let bad = || {
        ApiError::bad_request(
            "invalid_field",
            format!(
                "`{name}` must be {{first_after_days, every_days, max}}: days from 1 to {MAX_DAYS}, rounds from 0 to {MAX_ROUNDS}"
            ),
        )
    };
    let o = v.as_object().ok_or_else(bad)?;
    if o.keys()
        .any(|k| !["first_after_days", "every_days", "max"].contains(&k.as_str()))
    {
        return Err(bad());
    }
    let get = |k: &str, lo: u64, hi: u64| {
        o.get(k)
            .and_then(Value::as_u64)
            .filter(|n| (lo..=hi).contains(n))
            .map(|n| n as u32)
            .ok_or_else(bad)
    };
    Ok(Schedule {
        first_after_days: get("first_after_days", 1, MAX_DAYS)?,
        every_days: get("every_days", 1, MAX_DAYS)?,
        max: get("max", 0, MAX_ROUNDS)?,
    })
}

pub fn to_json(s: &Schedule) -> Value {
    json!({"first_after_days": s.first_after_days, "every_days": s.every_days, "max": s.max})
}

/// The entity's schedule (the default when it set none).
pub fn of_entity(cx: &mut Cx, entity: &str) -> Schedule {
    cx.load(&entity_key(entity)).unwrap_or_default()
}

pub fn set_entity(cx: &mut Cx, entity: &str, s: Schedule) {
    cx.save(&entity_key(entity), &s);
}

/// The schedule document `doc` follows: its own, else its entity's.
pub fn of_doc(cx: &mut Cx, doc: &Document) -> Schedule {
    let own = cx
        .load::<DocReminders>(&doc_key(&doc.id))
        .and_then(|d| d.schedule);
    own.unwrap_or_else(|| of_entity(cx, &doc.entity_id))
}

/// Gives document `doc_id` its own schedule.
pub fn set_doc(cx: &mut Cx, doc_id: &str, s: Schedule) {
    let mut d: DocReminders = cx.load(&doc_key(doc_id)).unwrap_or_default();
    d.schedule = Some(s);
    cx.save(&doc_key(doc_id), &d);
}

/// `at` unless it is at or after the document's expiry.
fn before_expiry(doc: &Document, at: u64) -> Option<u64> {
    (doc.expiration_ms == 0 || at < doc.expiration_ms).then_some(at)
}

/// When the first automatic reminder of `doc`, sent at `now`, goes out (none when its
/// schedule has no rounds or it would come at or after the expiry).
pub fn first_at(cx: &mut Cx, doc: &Document, now: u64) -> Option<u64> {
    let s = of_doc(cx, doc);
    if s.max == 0 {
        return None;
    }
    before_expiry(doc, now + u64::from(s.first_after_days) * DAY_MS)
}

/// A round of automatic reminders went out at `now`: counted; when the next is due
/// (none once `max` rounds have gone, or at or after the expiry).
pub fn after_round(cx: &mut Cx, doc: &Document, now: u64) -> Option<u64> {
    let s = of_doc(cx, doc);
    let mut d: DocReminders = cx.load(&doc_key(&doc.id)).unwrap_or_default();
    d.rounds += 1;
    cx.save(&doc_key(&doc.id), &d);
    if d.rounds >= s.max {
        return None;
    }
    before_expiry(doc, now + u64::from(s.every_days) * DAY_MS)
}

/// Forgets a deleted document's schedule and rounds.
pub fn erase(cx: &mut Cx, doc_id: &str) {
    cx.p.delete(&doc_key(doc_id));
}
