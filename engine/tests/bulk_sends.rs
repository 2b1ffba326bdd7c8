//! Bulk send (issue 51 item 3), as a client sees it: a CSV or JSON rows against a
//! template make one sent document per good row and an error per bad one (with its
//! row number), progress readable between jobs, and an `Idempotency-Key` that makes a
//! repeated request answer the same batch. (A host killed mid-batch: the host's
//! `tests/crash.rs`.)

mod common;

use common::*;
use esign_engine::memory::MemoryPlatform;
use esign_engine::{JobOutcome, Origin, WorkOrder, handle};
use serde_json::{Value, json};

/// A ready template with one `Client` signer role, a signature field for it and a
/// `plan` custom field; its id.
fn template(p: &mut MemoryPlatform, t: &str, roles: Value) -> String {
    let (s, b) = api(
        p,
        t,
        "POST",
        "/v1/templates",
        Some(
            json!({"name": "Offer", "file_content": "JVBERi0xLjQKZmFrZQ==", "file_name": "t.pdf",
                    "roles": roles, "fields": [{"name": "plan", "type": "text"}]}),
        ),
    );
    assert_eq!(s, 200, "{b}");
    let job = take_jobs(p, "template.import").remove(0);
    let blob = p.blobs.keys().last().unwrap().clone();
    assert_eq!(
        run(p, &job, Some(imported_pages(&blob, 2))),
        JobOutcome::Done
    );
    b["id"].as_str().unwrap().to_string()
}

/// `POST /v1/templates/{tid}/bulk-sends` with a CSV body (and an idempotency key).
fn post_csv(
    p: &mut MemoryPlatform,
    t: &str,
    tid: &str,
    csv: &str,
    key: Option<&str>,
) -> (u16, Value) {
    let mut req = request(
        Origin::Http,
        "POST",
        &format!("/v1/templates/{tid}/bulk-sends"),
        None,
    );
    req.headers
        .push(("authorization".into(), format!("Bearer {t}")));
    req.headers.push(("content-type".into(), "text/csv".into()));
    if let Some(k) = key {
        req.headers.push(("idempotency-key".into(), k.into()));
    }
    req.body = csv.as_bytes().to_vec();
    let resp = handle(p, &req);
    (resp.status, body(&resp))
}

/// Runs the batch's due jobs once; whether one ran.
fn step(p: &mut MemoryPlatform) -> bool {
    let jobs = take_jobs(p, "bulk.send");
    for j in &jobs {
        assert_eq!(run(p, j, None), JobOutcome::Done);
    }
    !jobs.is_empty()
}

#[test]
fn a_csv_makes_a_sent_document_per_good_row_and_names_the_bad_ones() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let tid = template(
        &mut p,
        &t,
        json!([{"role_name": "Client", "role": "signer"}]),
    );
    let mut csv = String::from("first_name;last_name;email;plan\r\n");
    for i in 1..=40 {
        let email = match i {
            7 => String::new(),
            19 => "not-an-email".into(),
            33 => "x@y".into(),
            _ => format!("p{i}@example.com"),
        };
        csv.push_str(&format!("Per;Son {i};{email};\"pro; yearly\"\r\n"));
    }
    let (s, b) = post_csv(&mut p, &t, &tid, &csv, None);
    assert_eq!(s, 202, "{b}");
    let id = b["id"].as_str().unwrap().to_string();
    let path = format!("/v1/bulk-sends/{id}");
    let (_, st) = api(&mut p, &t, "GET", &path, None);
    assert_eq!(
        (
            st["status"].as_str(),
            st["rows_total"].as_u64(),
            st["rows_done"].as_u64()
        ),
        (Some("running"), Some(40), Some(0)),
        "{st}"
    );
    // One job: 25 rows; progress is readable in between.
    assert!(step(&mut p));
    let (_, st) = api(&mut p, &t, "GET", &path, None);
    assert_eq!(
        st["rows_done"].as_u64().unwrap() + st["rows_failed"].as_u64().unwrap(),
        25,
        "{st}"
    );
    assert_eq!(st["status"], "running", "{st}");
    // While it runs: the errors so far; the documents once it is done.
    assert_eq!(st["errors"].as_array().map(Vec::len), Some(2), "{st}");
    assert_eq!(st["document_ids"], json!([]), "{st}");
    while step(&mut p) {}
    let (_, st) = api(&mut p, &t, "GET", &path, None);
    assert_eq!(
        (
            st["status"].as_str(),
            st["rows_done"].as_u64(),
            st["rows_failed"].as_u64()
        ),
        (Some("done"), Some(37), Some(3)),
        "{st}"
    );
    let rows: Vec<u64> = st["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["row"].as_u64().unwrap())
        .collect();
    assert_eq!(rows, [7, 19, 33], "{st}");
    let docs = st["document_ids"].as_array().unwrap();
    assert_eq!(docs.len(), 37);
    // Each document is the template's, sent to its row's person, its field filled.
    let renders = take_jobs(&mut p, "doc.render");
    assert_eq!(renders.len(), 37, "each sent document is rendered");
    for job in &renders {
        let Some(WorkOrder::Render(order)) = job.work.clone() else {
            panic!("a render order")
        };
        let outcome = render_outcome(&mut p, Some(&order), 2, &"11".repeat(32));
        assert_eq!(run(&mut p, job, Some(outcome)), JobOutcome::Done);
    }
    let d0 = docs[0].as_str().unwrap();
    let (_, d) = api(&mut p, &t, "GET", &format!("/v1/documents/{d0}"), None);
    assert_eq!(d["recipients"][0]["email"], "p1@example.com", "{d}");
    assert_eq!(d["recipients"][0]["role_name"], "Client", "{d}");
    assert_eq!(d["status"], "sent", "{d}");
    assert_eq!(d["custom_fields"][0]["value"], "pro; yearly", "{d}");
    let (_, list) = api(&mut p, &t, "GET", "/v1/documents?limit=100", None);
    assert_eq!(list.as_array().map(Vec::len), Some(37), "{list}");
}

#[test]
fn the_same_key_answers_the_same_batch_and_json_rows_work_too() {
    let mut p = bootstrapped();
    let t = token(&mut p);
    let tid = template(
        &mut p,
        &t,
        json!([{"role_name": "Buyer", "role": "signer"}, {"role_name": "Legal", "role": "approver"}]),
    );
    let csv = "Buyer.email,Buyer.first_name,Legal.email\nb@x.se,Bo,l@x.se\n";
    let (s, a) = post_csv(&mut p, &t, &tid, csv, Some("order-42"));
    assert_eq!(s, 202, "{a}");
    let (s, again) = post_csv(&mut p, &t, &tid, csv, Some("order-42"));
    assert_eq!((s, &again["id"]), (202, &a["id"]), "{again}");
    assert_eq!(
        take_jobs(&mut p, "bulk.send").len(),
        1,
        "one batch, one job"
    );
    // A preview makes nothing and shows the first rows as they would be sent.
    let preview = format!("/v1/templates/{tid}/bulk-sends?preview=true");
    let two = json!({"rows": [{"Buyer.email": "c@x.se", "Legal.email": "m@x.se"}, {"Buyer.email": "bad", "Legal.email": "m@x.se"}]});
    let mut req = request(Origin::Http, "POST", &preview, Some(two));
    req.headers
        .push(("authorization".into(), format!("Bearer {t}")));
    req.query = "preview=true".into();
    req.path = format!("/v1/templates/{tid}/bulk-sends");
    let resp = handle(&mut p, &req);
    let b = body(&resp);
    assert_eq!(resp.status, 200, "{b}");
    assert_eq!(b["rows_total"], 2, "{b}");
    assert_eq!(b["rows"][0]["recipients"][1]["role_name"], "Legal", "{b}");
    assert!(
        b["rows"][1]["error"].as_str().unwrap().contains("bad"),
        "{b}"
    );
    assert!(
        take_jobs(&mut p, "bulk.send").is_empty(),
        "a preview starts nothing"
    );
    // JSON rows; an unknown column is refused before anything is made.
    let path = format!("/v1/templates/{tid}/bulk-sends");
    let rows = json!({"rows": [{"Buyer.email": "c@x.se", "Legal.email": "m@x.se", "plan": 3}]});
    let (s, b) = api(&mut p, &t, "POST", &path, Some(rows));
    assert_eq!(s, 202, "{b}");
    let (s, b) = api(
        &mut p,
        &t,
        "POST",
        &path,
        Some(json!({"rows": [{"Boss.email": "c@x.se"}]})),
    );
    assert_eq!(
        (s, b["error"].as_str()),
        (422, Some("invalid_field")),
        "{b}"
    );
    assert!(
        b["description"].as_str().unwrap().contains("Boss.email"),
        "{b}"
    );
    for bad in [json!({}), json!({"rows": []}), json!({"rows": [1]})] {
        let (s, b) = api(&mut p, &t, "POST", &path, Some(bad));
        assert_eq!(s, 400, "{b}");
    }
    let (s, b) = post_csv(&mut p, &t, &tid, "", None);
    assert_eq!(s, 400, "{b}");
    // Another entity's admin sees no batch.
    let (s, _) = api(&mut p, &t, "GET", "/v1/bulk-sends/nobatch000000000", None);
    assert_eq!(s, 404);
}
