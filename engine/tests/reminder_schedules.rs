//! Reminder schedules (issue 51 item 6): the entity's and a document's own, in place of
//! the fixed 3 days × 5: the first after N days, then every M, at most K rounds, none at
//! or after the expiry, as a client sees them (the jobs' times, the mails, the detail).

mod common;

use common::*;
use esign_engine::memory::MemoryPlatform;
use serde_json::json;

const DAY: u64 = 24 * 3600 * 1000;

/// The due automatic reminder rounds: each run at its time, with the mails it sent;
/// the times relative to `start`, in days.
fn rounds(p: &mut MemoryPlatform, start: u64) -> Vec<(u64, usize)> {
    let mut out = Vec::new();
    for _ in 0..20 {
        let Some(job) = take_jobs(p, "doc.remind").pop() else {
            break;
        };
        p.now_ms = job.run_at_ms;
        let mails = p.mails.len();
        let outcome = run(p, &job, None);
        out.push(((job.run_at_ms - start) / DAY, p.mails.len() - mails));
        if let esign_engine::JobOutcome::RetryAt(at) = outcome {
            p.jobs.push(esign_engine::JobSpec {
                run_at_ms: at,
                ..job
            });
        }
    }
    out
}

#[test]
fn the_entity_s_schedule_and_a_document_s_own_decide_when_reminders_go() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    // The default is today's: after 3 days, every 3, 5 rounds.
    let (_, e) = api(&mut p, &t, "GET", "/v1/entity", None);
    assert_eq!(
        e["entity"]["reminder_schedule"],
        json!({"first_after_days": 3, "every_days": 3, "max": 5}),
        "{e}"
    );
    let sched = json!({"first_after_days": 1, "every_days": 2, "max": 2});
    let (s, b) = api(
        &mut p,
        &t,
        "PUT",
        "/v1/entity",
        Some(json!({"reminder_schedule": sched})),
    );
    assert_eq!(s / 100, 2, "{b}");
    let start = p.now_ms;
    let (id, _) = sent_doc(
        &mut p,
        &t,
        json!([{"email": "s@y.se", "first_name": "Sam"}]),
        json!({"is_reminder_sending": true}),
    );
    let (_, d) = api(&mut p, &t, "GET", &format!("/v1/documents/{id}"), None);
    assert_eq!(d["reminder_schedule"], sched, "{d}");
    assert_eq!(
        rounds(&mut p, start),
        [(1, 1), (3, 1)],
        "day 1, then 2 days later, then no more"
    );

    // A document's own schedule wins; none at or after its expiry.
    let own = json!({"first_after_days": 5, "every_days": 1, "max": 9});
    let expires = esign_engine::iso8601(p.now_ms + 6 * DAY);
    let start = p.now_ms;
    let (_, _) = sent_doc(
        &mut p,
        &t,
        json!([{"email": "s@y.se", "first_name": "Sam"}]),
        json!({"is_reminder_sending": true, "reminder_schedule": own, "expiration_date": expires}),
    );
    assert_eq!(
        rounds(&mut p, start),
        [(5, 1)],
        "day 5; day 6 is the expiry"
    );

    // No rounds: no reminder at all; a bad schedule is refused.
    let (id, _) = draft(
        &mut p,
        &t,
        json!([{"email": "s@y.se", "first_name": "Sam"}]),
        json!({"is_reminder_sending": true}),
    );
    let (s, b) = api(
        &mut p,
        &t,
        "PUT",
        &format!("/v1/documents/{id}"),
        Some(json!({"reminder_schedule": {"first_after_days": 2, "every_days": 2, "max": 0}})),
    );
    assert_eq!(s, 204, "{b}");
    let (s, b) = api(
        &mut p,
        &t,
        "POST",
        &format!("/v1/documents/{id}/send"),
        None,
    );
    assert_eq!(s, 200, "{b}");
    assert!(take_jobs(&mut p, "doc.remind").is_empty());
    for bad in [
        json!({"first_after_days": 0, "every_days": 1, "max": 1}),
        json!({"first_after_days": 1, "every_days": 1}),
        json!({"first_after_days": 1, "every_days": 1, "max": 51}),
        json!("weekly"),
    ] {
        let (s, b) = api(
            &mut p,
            &t,
            "PUT",
            "/v1/entity",
            Some(json!({"reminder_schedule": bad})),
        );
        assert_eq!(
            (s, b["error"].as_str()),
            (400, Some("invalid_field")),
            "{b}"
        );
    }
}
