//! Crashes under load, black-box: clients create, send and sign documents through the
//! API and the recipient API while the host is SIGKILLed five times at random moments
//! and started again. Afterwards every acknowledged write is there, every event of it
//! reached the webhook receiver at least once, every job with an effect that must
//! happen once happened once, and no mail was lost.

mod common;

use common::*;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the server acknowledged (answered 2xx to).
#[derive(Default)]
struct Acked {
    created: Vec<String>,
    sent: Vec<String>,
    signed: Vec<String>,
    subscriptions: Vec<String>,
    /// The recipient of each document.
    recipient: HashMap<String, String>,
}

fn try_call(req: reqwest::blocking::RequestBuilder) -> Option<(u16, Value)> {
    let resp = req.timeout(Duration::from_secs(10)).send().ok()?;
    let status = resp.status().as_u16();
    let body = resp.json().unwrap_or(Value::Null);
    Some((status, body))
}

/// One client's loop: create, send, wait until sent, sign; anything refused or cut off
/// by a crash is left as it is and the next document started.
fn drive(
    worker: usize,
    base: String,
    hooks: String,
    token: String,
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<Acked>>,
) {
    let c = client();
    let mut i = 0;
    while !stop.load(Ordering::SeqCst) {
        i += 1;
        if i % 5 == 0 {
            let sub = json!({"event": "document.viewed",
                "target_url": format!("{hooks}/viewed-w{worker}-{i}")});
            if let Some((200, b)) = try_call(
                c.post(format!("{base}/v1/subscriptions"))
                    .bearer_auth(&token)
                    .json(&sub),
            ) {
                acked
                    .lock()
                    .unwrap()
                    .subscriptions
                    .push(b["id"].as_str().unwrap().to_string());
            }
        }
        let email = format!("w{worker}-{i}@example.com");
        let create = json!({"name": format!("w{worker}-{i}"),
            "recipients": [{"first_name": "Sig", "last_name": "Ner", "email": email}]});
        let Some((200, doc)) = try_call(
            c.post(format!("{base}/v1/documents"))
                .bearer_auth(&token)
                .json(&create),
        ) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        let id = doc["id"].as_str().unwrap().to_string();
        {
            let mut a = acked.lock().unwrap();
            a.created.push(id.clone());
            a.recipient.insert(id.clone(), email.clone());
        }
        let Some((200, _)) = try_call(
            c.post(format!("{base}/v1/documents/{id}/send"))
                .bearer_auth(&token)
                .json(&json!({})),
        ) else {
            continue;
        };
        acked.lock().unwrap().sent.push(id.clone());
        // Sent once its render job has run (it survives a crash).
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut detail = None;
        while Instant::now() < deadline && !stop.load(Ordering::SeqCst) {
            if let Some((200, d)) = try_call(
                c.get(format!("{base}/v1/documents/{id}"))
                    .bearer_auth(&token),
            ) && d["status"] == "sent"
            {
                detail = Some(d);
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let Some(d) = detail else { continue };
        let secret = link(&d, 0);
        let sign = c
            .post(format!("{base}/v1/recipient/{secret}/sign"))
            .header("origin", base.as_str())
            .json(&json!({}));
        if let Some((200, _)) = try_call(sign) {
            acked.lock().unwrap().signed.push(id);
        }
    }
}

#[test]
fn acknowledged_work_survives_five_kills_under_load() {
    let rx = HttpsServer::start(|_| Canned::status(200));
    let mut s = server_for(&rx, "1s");
    let t = s.admin_token();
    for event in ["document.created", "document.sent", "document.signed"] {
        subscribe(&s, &t, event, &rx.url(&format!("/{event}")), json!({}));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(Acked::default()));
    let workers: Vec<_> = (0..3)
        .map(|w| {
            let (base, hooks) = (s.base.clone(), rx.url(""));
            let (t, stop, acked) = (t.clone(), stop.clone(), acked.clone());
            std::thread::spawn(move || drive(w, base, hooks, t, stop, acked))
        })
        .collect();
    // Five kills, each after 1 to 3 s of load (a different moment in every run).
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64;
    for _ in 0..5 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        std::thread::sleep(Duration::from_millis(1000 + (seed >> 33) % 2000));
        s.kill();
        s.launch();
    }
    std::thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::SeqCst);
    for w in workers {
        w.join().unwrap();
    }
    let a = acked.lock().unwrap();
    eprintln!(
        "acknowledged across 5 kills: {} created, {} sent, {} signed, {} subscriptions",
        a.created.len(),
        a.sent.len(),
        a.signed.len(),
        a.subscriptions.len()
    );
    assert!(!a.signed.is_empty(), "the load reached signing");

    // Every acknowledged write is there.
    for id in &a.created {
        let (status, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
        assert_eq!(status, 200, "{id} was acknowledged: {d}");
    }
    for id in &a.subscriptions {
        let (status, b) = s.get_as(&t, &format!("/v1/subscriptions/{id}"));
        assert_eq!(status, 200, "subscription {id} was acknowledged: {b}");
    }
    for id in &a.sent {
        wait_until(60, &format!("{id} sent"), || {
            let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}/status"));
            (d["status"] != "draft").then_some(())
        });
    }
    for id in &a.signed {
        s.wait_status(&t, id, "signed");
    }
    // Effects that must happen once happened once; the invitations were not lost.
    let mut by_kind: HashMap<&str, usize> = HashMap::new();
    for id in &a.sent {
        let log = s.events(&t, id);
        let count = |e: &str| log.iter().filter(|x| *x == e).count();
        assert_eq!(count("document.sent"), 1, "{id}: {log:?}");
        *by_kind.entry("sent").or_default() += 1;
        if a.signed.contains(id) {
            assert_eq!(count("document.signed"), 1, "{id}: {log:?}");
            *by_kind.entry("signed").or_default() += 1;
        }
    }
    let mails = wait_until(60, "an invitation for every sent document", || {
        let mails = s.mails();
        a.sent
            .iter()
            .all(|id| {
                let to = format!("To: {}", a.recipient[id]);
                mails.iter().any(|m| m.contains(&to))
            })
            .then_some(mails)
    });
    // Every event of an acknowledged write reached the receiver at least once.
    let arrived = |event: &str, ids: &[String]| {
        wait_until(90, &format!("every {event} delivered"), || {
            let got: HashSet<String> = rx
                .received(&format!("/{event}"))
                .iter()
                .filter_map(|r| r.json()["document"]["id"].as_str().map(str::to_string))
                .collect();
            ids.iter().all(|id| got.contains(id)).then_some(got.len())
        })
    };
    let created = arrived("document.created", &a.created);
    let sent = arrived("document.sent", &a.sent);
    let signed = arrived("document.signed", &a.signed);
    let duplicates = rx.received("/document.created").len() - created;
    eprintln!(
        "after the kills: {} mails; webhooks received for {created} created, {sent} sent, {signed} signed documents ({duplicates} repeated document.created deliveries); logs checked: {by_kind:?}",
        mails.len()
    );
}

/// `POST /v1/templates/{tid}/bulk-sends` with `csv` and an `Idempotency-Key`.
fn bulk_csv(s: &Server, t: &str, tid: &str, csv: &str) -> (u16, Value) {
    call(
        s.post(&format!("/v1/templates/{tid}/bulk-sends"))
            .bearer_auth(t)
            .header("content-type", "text/csv")
            .header("idempotency-key", "mailing-2026-11")
            .body(csv.to_string()),
    )
}

#[test]
fn a_bulk_send_killed_mid_batch_finishes_after_restart_without_a_duplicate() {
    let mut s = Server::start(&[]);
    let t = s.admin_token();
    let tid = signer_template(&s, &t, "Offer", "Client");
    let bad = [41, 250, 499];
    let mut csv = String::from("first_name,last_name,email\n");
    for i in 1..=500 {
        let email = if bad.contains(&i) {
            format!("row{i}-without-at")
        } else {
            format!("p{i}@example.com")
        };
        csv.push_str(&format!("Per,Son {i},{email}\n"));
    }
    let (st, b) = bulk_csv(&s, &t, &tid, &csv);
    assert_eq!(st, 202, "{b}");
    let id = b["id"].as_str().unwrap().to_string();
    let progress = |s: &Server| {
        let (_, p) = s.get_as(&t, &format!("/v1/bulk-sends/{id}"));
        p
    };
    // Killed once some rows are done and others are not.
    let seen = wait_until(120, "the batch under way", || {
        let p = progress(&s);
        let n = p["rows_done"].as_u64()? + p["rows_failed"].as_u64()?;
        (n > 0).then_some(p)
    });
    s.kill();
    assert_eq!(seen["status"], "running", "killed mid-batch: {seen}");
    s.launch();
    let done = wait_until(300, "the batch done after the restart", || {
        let p = progress(&s);
        (p["status"] == "done").then_some(p)
    });
    assert_eq!(
        (done["rows_done"].as_u64(), done["rows_failed"].as_u64()),
        (Some(497), Some(3)),
        "{done}"
    );
    let rows: Vec<u64> = done["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["row"].as_u64().unwrap())
        .collect();
    assert_eq!(rows, bad, "{done}");
    let ids: HashSet<&str> = done["document_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 497);
    // No row made two documents: the entity has exactly 497, one per good row.
    let (_, list) = s.get_as(&t, "/v1/documents?limit=1000");
    let emails: HashSet<String> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            d["recipients"][0]["email"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!((list.as_array().unwrap().len(), emails.len()), (497, 497));
    // The same request again with its key makes nothing new.
    let (st, again) = bulk_csv(&s, &t, &tid, &csv);
    assert_eq!((st, &again["id"]), (202, &b["id"]), "{again}");
    let (_, list) = s.get_as(&t, "/v1/documents?limit=1000");
    assert_eq!(list.as_array().unwrap().len(), 497);
}
