//! Several `esign` hosts on one PostgreSQL database, black-box: a draft sent on two
//! hosts at once is sent once; jobs and mail queued by a host that dies are run once
//! by the others; 1 000 events reach their subscriber, each under its own
//! `webhook-id`, while a host is SIGKILLed mid-way; a token issued by one host works
//! on the others; failed logins counted on two hosts at once are all counted; and a
//! sled store copied by `esign admin migrate` answers the same on PostgreSQL. The
//! schema is migrated once by hosts that start together, again over existing tables
//! from the previous version, and refused when a newer esign wrote it. TLS to the
//! database verifies the server. Work queued on a host that runs no workers starts on
//! another host that (almost) never polls, because the database wakes it, also after
//! its wake-up connection was cut.
//!
//! They need `ESIGN_TEST_STORE` (a `postgres://.../` URL, see `.ci/run`); without it
//! they are skipped, or fail with `ESIGN_REQUIRE_POSTGRES=1`.

mod common;

use common::*;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// A database URL for the test, or `None` (skip).
fn database() -> Option<String> {
    let url = test_store();
    if url.is_none() {
        assert!(
            std::env::var("ESIGN_REQUIRE_POSTGRES").is_err(),
            "ESIGN_REQUIRE_POSTGRES is set but ESIGN_TEST_STORE is not"
        );
        eprintln!("skipped: no ESIGN_TEST_STORE (a PostgreSQL server for the test)");
    }
    url
}

/// `n` hosts on the database `url`, each with its own data directory, plus `args`.
fn hosts(url: &str, n: usize, args: &[&str]) -> Vec<Server> {
    let mut all = vec!["--token-min-interval-ms", "0"];
    all.extend_from_slice(args);
    (0..n)
        .map(|_| Server::start_with(&all, &[("ESIGN_STORE", url)]))
        .collect()
}

fn count(log: &[String], event: &str) -> usize {
    log.iter().filter(|e| *e == event).count()
}

#[test]
fn a_token_from_one_host_works_on_the_others_and_a_draft_sent_on_two_is_sent_once() {
    let Some(url) = database() else { return };
    let h = hosts(&url, 3, &[]);
    let t = h[0].admin_token();
    for s in &h {
        let (status, body) = s.get_as(&t, "/v1/test");
        assert_eq!(status, 200, "{}: {body}", s.base);
    }
    for round in 0..6 {
        let doc = h[round % 3].create_doc(
            &t,
            &json!({"name": format!("race {round}"),
                "recipients": [{"first_name": "A", "last_name": "B",
                                "email": format!("race{round}@example.com")}]}),
        );
        let id = doc["id"].as_str().unwrap().to_string();
        let barrier = std::sync::Barrier::new(2);
        let answers: Vec<(u16, Value)> = std::thread::scope(|scope| {
            let handles: Vec<_> = [&h[0], &h[1]]
                .into_iter()
                .map(|s| {
                    let (t, id, barrier) = (&t, &id, &barrier);
                    scope.spawn(move || {
                        barrier.wait();
                        s.post_json(t, &format!("/v1/documents/{id}/send"), &json!({}))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let ok = answers.iter().filter(|(s, _)| *s == 200).count();
        assert_eq!(ok, 1, "exactly one send succeeds: {answers:?}");
        let (refused, body) = answers.iter().find(|(s, _)| *s != 200).unwrap();
        assert!(
            (400..500).contains(refused),
            "the other is refused: {refused} {body}"
        );
        assert_error(*refused, body, *refused);
        h[2].wait_status(&t, &id, "sent");
        h[2].wait_until_event(&t, &id, "document.sent");
        assert_eq!(count(&h[1].events(&t, &id), "document.sent"), 1);
    }
}

#[test]
fn failed_logins_counted_on_two_hosts_at_once_are_all_counted() {
    let Some(url) = database() else { return };
    const N: usize = 10;
    let h = hosts(&url, 2, &["--login-max-failures", &N.to_string()]);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..N - 1)
            .map(|i| {
                let s = &h[i % 2];
                scope.spawn(move || {
                    s.login(ADMIN_EMAIL, "wrong-password", None)
                        .status()
                        .as_u16()
                })
            })
            .collect();
        for handle in handles {
            assert_eq!(handle.join().unwrap(), 400);
        }
    });
    // N-1 failures are on record whichever host counted them: the N-th locks.
    assert_eq!(
        h[1].login(ADMIN_EMAIL, "wrong-password", None).status(),
        400
    );
    for s in &h {
        let (status, body) = call(
            s.post("/v1/auth")
                .json(&json!({"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD})),
        );
        assert_eq!(
            assert_error(status, &body, 400),
            "login_locked",
            "{}",
            s.base
        );
    }
}

#[test]
fn work_queued_by_a_host_that_dies_is_done_once_by_the_others() {
    let Some(url) = database() else { return };
    // Host 0 cannot reach its mail server: its invitations fail and are queued again
    // for a few seconds later. Then it dies, and hosts 1 and 2, which poll the same
    // queue, race for every one of them at the moment it is due.
    let mut h = vec![Server::start_with(
        &[
            "--token-min-interval-ms",
            "0",
            "--smtp-url",
            "smtp://127.0.0.1:9",
        ],
        &[("ESIGN_STORE", &url)],
    )];
    h.extend(hosts(&url, 2, &[]));
    let t = h[0].admin_token();
    let mut ids = Vec::new();
    for i in 0..10 {
        let doc = h[0].create_doc(
            &t,
            &json!({"name": format!("orphan {i}"),
                "recipients": [{"first_name": "A", "last_name": "B",
                                "email": format!("orphan{i}@example.com")}]}),
        );
        let id = doc["id"].as_str().unwrap().to_string();
        let (status, body) = h[0].post_json(&t, &format!("/v1/documents/{id}/send"), &json!({}));
        assert_eq!(status, 200, "{body}");
        ids.push(id);
    }
    std::thread::sleep(Duration::from_millis(500));
    h[0].kill();
    for id in &ids {
        h[1].wait_status(&t, id, "sent");
        let log = h[2].events(&t, id);
        assert_eq!(count(&log, "document.sent"), 1, "{id}: {log:?}");
    }
    // One invitation per document in all the hosts' mail folders together.
    let all_mail = || {
        let mut m = h[0].mails();
        m.extend(h[1].mails());
        m.extend(h[2].mails());
        m
    };
    wait_until(60, "an invitation for every document", || {
        let mails = all_mail();
        (0..10)
            .all(|i| {
                let to = format!("To: orphan{i}@example.com");
                mails.iter().any(|m| m.contains(&to))
            })
            .then_some(())
    });
    // A second sender would have sent by now: past a lease (3 s) and two polls.
    std::thread::sleep(Duration::from_secs(7));
    let mails = all_mail();
    for i in 0..10 {
        let to = format!("To: orphan{i}@example.com");
        let n = mails.iter().filter(|m| m.contains(&to)).count();
        assert_eq!(n, 1, "orphan{i}: {n} invitations");
    }
}

#[test]
fn a_thousand_events_arrive_under_distinct_ids_while_a_host_is_killed() {
    let Some(url) = database() else { return };
    // A receiver that takes a moment, so the killed host has attempts in flight whose
    // rows it holds leases on: the other hosts take them over when the leases expire.
    let rx = HttpsServer::start(|_| {
        std::thread::sleep(Duration::from_millis(20));
        Canned::status(200)
    });
    let ca = rx.ca_file.display().to_string();
    let mut h = hosts(
        &url,
        3,
        &[
            "--outbound-ca-file",
            &ca,
            "--outbound-allow-private",
            "--webhook-retry-schedule",
            "1s",
            "--webhook-timeout-secs",
            "5",
        ],
    );
    let t = h[0].admin_token();
    subscribe(
        &h[0],
        &t,
        "document.created",
        &rx.url("/created"),
        json!({}),
    );
    const N: usize = 1000;
    let bases: Vec<String> = h.iter().map(|s| s.base.clone()).collect();
    let created = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for w in 0..4 {
            let (bases, t, created) = (&bases, &t, &created);
            scope.spawn(move || {
                let c = client();
                for i in (w..N).step_by(4) {
                    // Host 0 is killed mid-way: a create it cannot answer goes to the
                    // next host (a create is acknowledged once only: retried only when
                    // the connection was refused or cut).
                    let mut id = None;
                    for k in 0..3 {
                        let base = &bases[(i + k) % 3];
                        let Ok(r) = c
                            .post(format!("{base}/v1/documents"))
                            .bearer_auth(t)
                            .json(&json!({"name": format!("e{i}")}))
                            .send()
                        else {
                            continue;
                        };
                        assert_eq!(r.status(), 200);
                        let b: Value = r.json().unwrap();
                        id = Some(b["id"].as_str().unwrap().to_string());
                        break;
                    }
                    created.lock().unwrap().push(id.expect("a host answered"));
                }
            });
        }
        // Kill host 0 once a third of the deliveries arrived (its queue is in flight).
        wait_until(120, "a third of the events delivered", || {
            (rx.received("/created").len() >= N / 3).then_some(())
        });
        h[0].kill();
    });
    let created = created.into_inner().unwrap();
    assert_eq!(created.len(), N);
    let doc_of = |r: &Incoming| {
        r.json()["document"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    // Every acknowledged document's event arrives (a create cut off by the kill may
    // have committed unacknowledged: its event comes too).
    let received = wait_until(180, "every event delivered", || {
        let got = rx.received("/created");
        let documents: HashSet<String> = got.iter().map(doc_of).collect();
        created
            .iter()
            .all(|id| documents.contains(id))
            .then_some(got)
    });
    let mut ids_of: HashMap<String, HashSet<String>> = HashMap::new();
    let mut per_id: HashMap<String, usize> = HashMap::new();
    for r in &received {
        let id = r.headers["webhook-id"].clone();
        ids_of.entry(doc_of(r)).or_default().insert(id.clone());
        *per_id.entry(id).or_default() += 1;
    }
    for (doc, ids) in &ids_of {
        assert_eq!(ids.len(), 1, "{doc}: one event, one webhook-id: {ids:?}");
    }
    assert_eq!(
        per_id.len(),
        ids_of.len(),
        "no two events share a webhook-id"
    );
    assert!(
        per_id.len() >= N && per_id.len() <= N + 4,
        "{} events",
        per_id.len()
    );
    // At least once: only attempts in flight on the killed host may come twice.
    let repeated: usize = per_id.values().map(|n| n - 1).sum();
    eprintln!(
        "{} deliveries for {N} events ({repeated} repeated after the kill)",
        received.len()
    );
    assert!(repeated <= 64, "{repeated} repeats");
}

#[test]
fn a_sled_store_migrated_to_postgres_answers_the_same() {
    let Some(url) = database() else { return };
    // On sled (ESIGN_STORE unset), with mail and webhooks that cannot be delivered, so
    // both stay queued.
    let mut s = Server::start_with(
        &[
            "--token-min-interval-ms",
            "0",
            "--smtp-url",
            "smtp://127.0.0.1:9",
            "--webhook-retry-schedule",
            "1h",
            "--outbound-allow-private",
        ],
        &[("ESIGN_STORE", ""), ("ESIGN_WORKER_LEASE_MS", "")],
    );
    let t = s.admin_token();
    subscribe(
        &s,
        &t,
        "document.created",
        "https://127.0.0.1:9/hook",
        json!({}),
    );
    let pdf = esign_host::pdf::sample_pdf(2);
    let mut ids = HashMap::new();
    for status in ["draft", "sent", "signed", "rejected", "recalled", "lost"] {
        let mut body = json!({"name": status,
            "recipients": [{"first_name": "A", "last_name": "B",
                            "email": format!("{status}@example.com")}]});
        if status == "draft" {
            let file_id = s.upload(&t, &pdf, "two-pages.pdf");
            body["file_ids"] = json!(file_id);
        }
        let doc = s.create_doc(&t, &body);
        let id = doc["id"].as_str().unwrap().to_string();
        if !matches!(status, "draft" | "lost") {
            let (code, b) = s.post_json(&t, &format!("/v1/documents/{id}/send"), &json!({}));
            assert_eq!(code, 200, "{b}");
            s.wait_status(&t, &id, "sent");
        }
        match status {
            "signed" | "rejected" => {
                let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
                let secret = link(&d, 0);
                let act = if status == "signed" { "sign" } else { "reject" };
                let (code, b) = call(
                    s.post(&format!("/v1/recipient/{secret}/{act}"))
                        .header("origin", s.base.as_str())
                        .json(&json!({})),
                );
                assert_eq!(code, 200, "{act}: {b}");
            }
            // Deleting a sent document recalls it (its data is kept).
            "recalled" => assert_eq!(s.delete_as(&t, &format!("/v1/documents/{id}")).0, 204),
            "lost" => {
                let (code, _) = call(s.post(&format!("/v1/documents/{id}/lost")).bearer_auth(&t));
                assert_eq!(code, 204);
            }
            _ => {}
        }
        s.wait_status(&t, &id, status);
        ids.insert(status, id);
    }
    // A contract signed elsewhere, archived with its file.
    let (code, archived) = s.post_json(
        &t,
        "/v1/upload/archive",
        &json!({"name": "Old lease", "file_content": b64(&pdf),
                "file_name": "lease.pdf", "sign_date": "2024-05-01T10:00:00+00:00"}),
    );
    assert_eq!(code, 200, "{archived}");
    let archived = archived["id"].as_str().unwrap().to_string();
    s.wait_status(&t, &archived, "archived");
    ids.insert("archived", archived);
    // The page previews of the two files come after their import (a job of their own):
    // the answers compared below must not be taken before them.
    wait_until(60, "the page previews", || {
        ["draft", "archived"]
            .iter()
            .all(|k| {
                let (_, d) = s.get_as(&t, &format!("/v1/documents/{}", ids[k]));
                d["thumb_url"].as_str().is_some_and(|u| !u.is_empty())
            })
            .then_some(())
    });
    // The sealed file of the signed document, once its seal landed.
    let sealed_path = format!("/v1/documents/{}/download?direct=true", ids["signed"]);
    let download = |s: &Server| {
        wait_until(60, "the sealed file", || {
            let resp = s.get(&sealed_path).bearer_auth(&t).send().unwrap();
            (resp.status() == 200).then(|| resp.bytes().unwrap().to_vec())
        })
    };
    let sealed = download(&s);
    let certificate = |s: &Server| {
        s.get("/v1/signing-certificate")
            .send()
            .unwrap()
            .text()
            .unwrap()
    };
    let seal_certificate = certificate(&s);
    assert!(
        seal_certificate.contains("BEGIN CERTIFICATE"),
        "{seal_certificate}"
    );
    let paths: Vec<String> = ["/v1/documents", "/v1/subscriptions", "/v1/users"]
        .into_iter()
        .map(String::from)
        .chain(ids.values().flat_map(|id| {
            [
                format!("/v1/documents/{id}"),
                format!("/v1/documents/{id}/status"),
                format!("/v1/documents/{id}/recipients"),
            ]
        }))
        .collect();
    let before: Vec<(u16, Value)> = paths.iter().map(|p| s.get_as(&t, p)).collect();
    s.stop();

    let from = s.data_dir.display().to_string();
    let migrate = || {
        run_admin_env(
            &s.data_dir,
            &[],
            &["migrate", "--from", &from, "--to", &url],
        )
    };
    let (ok, out, err) = migrate();
    assert!(ok, "migrate failed: {err}");
    let rows = |table: &str| -> i64 {
        let line = out
            .lines()
            .find(|l| l.starts_with(table))
            .unwrap_or_else(|| panic!("{out}"));
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    assert!(rows("esign_kv") > 0 && rows("esign_blobs") > 0, "{out}");
    assert!(rows("esign_mail") > 0, "queued mail was copied: {out}");
    assert!(
        rows("esign_deliveries") > 0,
        "queued deliveries were copied: {out}"
    );
    // A second copy into the same database is refused.
    let (ok, _, err) = migrate();
    assert!(!ok && err.contains("empty database"), "{err}");

    // The same answers on PostgreSQL, with the old token; the queued mail goes out.
    let p = Server::start_with(&["--token-min-interval-ms", "0"], &[("ESIGN_STORE", &url)]);
    for (path, (code, body)) in paths.iter().zip(&before) {
        let (now_code, now_body) = p.get_as(&t, path);
        assert_eq!(*code, now_code, "{path}");
        // Links name the host that answered.
        let was = body.to_string().replace(&s.base, &p.base);
        assert_eq!(was, now_body.to_string(), "{path}");
    }
    assert_eq!(download(&p), sealed, "the sealed file, byte for byte");
    // The signing key went along: new seals carry the same certificate.
    assert_eq!(certificate(&p), seal_certificate);
    // Their retries were due up to a minute after the sled phase (2^n s backoff).
    wait_until(180, "the queued invitations delivered", || {
        let mails = p.mails();
        (mails.len() >= 3).then_some(())
    });
}

/// Runs `sql` on the database `url` (a short-lived connection); the first column of
/// the rows as text.
/// The tables of the engine's per-document key families (schema step 2).
const FAMILY_TABLES: [&str; 21] = [
    "esign_d_bref",
    "esign_d_dcd",
    "esign_d_dcli",
    "esign_d_dcom",
    "esign_d_ddl",
    "esign_d_dexp",
    "esign_d_dext",
    "esign_d_dfld",
    "esign_d_dlog",
    "esign_d_doc",
    "esign_d_dpimg",
    "esign_d_dpv",
    "esign_d_drcp",
    "esign_d_dseal",
    "esign_d_dsig",
    "esign_d_duid",
    "esign_d_dx",
    "esign_d_prev",
    "esign_d_rlink",
    "esign_d_rver",
    "esign_d_sub_ent",
];

fn sql(url: &str, sql: &str) -> Vec<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(conn);
        client
            .simple_query(sql)
            .await
            .expect(sql)
            .into_iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
                _ => None,
            })
            .collect()
    })
}

#[test]
fn the_schema_is_migrated_once_by_hosts_starting_together_and_a_newer_one_is_refused() {
    let Some(url) = database() else { return };
    // Three hosts start at once on an empty (not yet created) database.
    let h: Vec<Server> = std::thread::scope(|scope| {
        let started: Vec<_> = (0..3)
            .map(|_| {
                let url = &url;
                scope.spawn(move || {
                    Server::start_with(&["--token-min-interval-ms", "0"], &[("ESIGN_STORE", url)])
                })
            })
            .collect();
        started.into_iter().map(|s| s.join().unwrap()).collect()
    });
    assert_eq!(sql(&url, "SELECT version FROM esign_schema"), ["2"]);
    let tables = sql(
        &url,
        "SELECT tablename FROM pg_tables WHERE tablename LIKE 'esign_%' ORDER BY 1",
    );
    let mut want = vec![
        "esign_blobs",
        "esign_deliveries",
        "esign_events",
        "esign_jobs",
        "esign_kv",
        "esign_mail",
        "esign_schema",
    ];
    want.extend(FAMILY_TABLES);
    want.sort();
    assert_eq!(tables, want);
    // One first run among the three: one admin, one entity.
    let t = h[0].admin_token();
    let (_, users) = h[2].get_as(&t, "/v1/users");
    assert_eq!(users["users"].as_array().map(Vec::len), Some(1), "{users}");
    let doc = h[1].create_doc(&t, &json!({"name": "kept"}));
    let id = doc["id"].as_str().unwrap().to_string();
    drop(h);

    // Written by schema 1, where every engine key was in esign_kv: step 2 moves the
    // document's rows into their families' tables, and it answers as before.
    for table in FAMILY_TABLES {
        sql(
            &url,
            &format!("INSERT INTO esign_kv SELECT k, v FROM {table}; DROP TABLE {table}"),
        );
    }
    sql(&url, "UPDATE esign_schema SET version = 1");
    let s = Server::start_with(&["--token-min-interval-ms", "0"], &[("ESIGN_STORE", &url)]);
    assert_eq!(sql(&url, "SELECT version FROM esign_schema"), ["2"]);
    assert_eq!(
        sql(
            &url,
            "SELECT count(*) FROM esign_kv WHERE k >= 'd/doc/'::bytea AND k < 'd/doc0'::bytea"
        ),
        ["0"]
    );
    assert_eq!(sql(&url, "SELECT count(*) FROM esign_d_doc"), ["1"]);
    let (status, _) = s.get_as(&t, &format!("/v1/documents/{id}"));
    assert_eq!(status, 200);
    let (status, list) = s.get_as(&t, "/v1/documents");
    assert_eq!(status, 200);
    assert_eq!(list[0]["id"], id.as_str(), "{list}");
    drop(s);

    // From the previous version (nothing recorded): the steps apply again over the
    // existing tables, and the data stays.
    sql(&url, "UPDATE esign_schema SET version = 0");
    let s = Server::start_with(&["--token-min-interval-ms", "0"], &[("ESIGN_STORE", &url)]);
    assert_eq!(sql(&url, "SELECT version FROM esign_schema"), ["2"]);
    let (status, _) = s.get_as(&t, &format!("/v1/documents/{id}"));
    assert_eq!(status, 200);
    drop(s);

    // Written by a newer esign: refused with a reason, nothing changed.
    sql(&url, "UPDATE esign_schema SET version = 99");
    let dir = fresh_dir("newer");
    let (ok, _, err) = run_admin_env(
        &dir,
        &[("ESIGN_STORE".to_string(), url.clone())],
        &["entity", "list"],
    );
    assert!(!ok && err.contains("newer"), "{err}");
    assert_eq!(sql(&url, "SELECT version FROM esign_schema"), ["99"]);
}

#[test]
fn tls_to_the_database_verifies_the_server() {
    let Some(url) = database() else { return };
    let Ok(ca) = std::env::var("ESIGN_TEST_STORE_CA") else {
        assert!(
            std::env::var("ESIGN_REQUIRE_POSTGRES").is_err(),
            "ESIGN_REQUIRE_POSTGRES is set but ESIGN_TEST_STORE_CA is not"
        );
        eprintln!("skipped: no ESIGN_TEST_STORE_CA (the test cluster's CA)");
        return;
    };
    // Verified against the cluster's CA: it serves, over TLS.
    let tls = format!("{url}?sslmode=verify-full&sslrootcert={ca}");
    let s = Server::start_with(&["--token-min-interval-ms", "0"], &[("ESIGN_STORE", &tls)]);
    let t = s.admin_token();
    let (status, _) = s.get_as(&t, "/v1/test");
    assert_eq!(status, 200);
    let db = url.rsplit('/').next().unwrap();
    let encrypted = sql(
        &url,
        &format!(
            "SELECT bool_and(s.ssl)::text FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
             WHERE a.datname = '{db}' AND a.application_name = 'esign'"
        ),
    );
    assert_eq!(
        encrypted,
        ["true"],
        "every connection of esign is encrypted"
    );
    // Against the system roots, which do not know the test CA: refused, with a reason.
    let dir = fresh_dir("tls");
    let (ok, _, err) = run_admin_env(
        &dir,
        &[(
            "ESIGN_STORE".to_string(),
            format!("{url}?sslmode=verify-full"),
        )],
        &["entity", "list"],
    );
    assert!(!ok, "an unverifiable server was accepted");
    assert!(
        err.contains("certificate") || err.contains("Certificate"),
        "{err}"
    );
}

/// The database's wake-up listeners of this test's database.
fn listeners(url: &str) -> usize {
    sql(
        url,
        "SELECT pid::text FROM pg_stat_activity
         WHERE datname = current_database() AND query = 'LISTEN esign_wake'",
    )
    .len()
}

#[test]
fn work_queued_on_one_host_is_started_by_another_woken_by_the_database() {
    let Some(url) = database() else { return };
    // Host A serves requests and runs no workers; host B polls every ten minutes. Only
    // a wake-up from the database makes B import and send what A queued within the
    // tests' waits.
    let a = Server::start_with(
        &["--token-min-interval-ms", "0"],
        &[("ESIGN_STORE", &url), ("ESIGN_TEST_NO_WORKERS", "true")],
    );
    let b = Server::start_with(
        &["--token-min-interval-ms", "0"],
        &[("ESIGN_STORE", &url), ("ESIGN_SHARED_POLL_MS", "600000")],
    );
    let t = a.admin_token();
    wait_until(30, "B listening", || (listeners(&url) == 1).then_some(()));
    let send = |name: &str| {
        let id = pdf_draft(
            &a,
            &t,
            name,
            json!([signer("woken@example.com")]),
            json!({}),
        );
        a.act_ok(&t, &id, "send");
        a.wait_status(&t, &id, "sent");
    };
    send("Woken");
    // The wake-up connection is cut: B opens it again and is woken as before.
    let cut = sql(
        &url,
        "SELECT pg_terminate_backend(pid)::text FROM pg_stat_activity
         WHERE datname = current_database() AND query = 'LISTEN esign_wake'",
    );
    assert_eq!(cut, ["true"]);
    wait_until(30, "B listening again", || {
        (listeners(&url) == 1).then_some(())
    });
    send("Woken again");
    drop(b);
}
