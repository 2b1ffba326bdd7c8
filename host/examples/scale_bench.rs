//! Create + send throughput against one or more running esign hosts (`just bench` starts
//! them on sled, then on one PostgreSQL database with 1, 2 and 3 hosts).
//!
//! `CLIENTS` client threads (default 16) each create a JSON document with one
//! recipient and send it, round-robin over the hosts, for `SECONDS`. Given several
//! tokens (comma-separated, one per entity), client `c` writes with token
//! `c % tokens`: the same load spread over that many entities. Prints documents
//! created and sent per second and the p50/p99 of the two requests (each one engine
//! call and one commit), plus how many answered 503 (conflicts past the retries). Then
//! it waits, untimed, until no draft is left (the sends' renders ran).
//!
//! Usage: `scale_bench TOKEN[,TOKEN...] SECONDS URL [URL...]`.

use reqwest::blocking::Client;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn pct(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

#[derive(Default)]
struct Tally {
    create: Vec<Duration>,
    send: Vec<Duration>,
    done: usize,
    busy: usize,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: scale_bench TOKEN[,TOKEN...] SECONDS URL [URL...]");
        std::process::exit(2);
    }
    let tokens: Vec<String> = args[0].split(',').map(str::to_string).collect();
    let seconds: u64 = args[1].parse().expect("SECONDS");
    let hosts: Vec<String> = args[2..].to_vec();
    let clients: usize = std::env::var("CLIENTS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(16);
    let tally = Arc::new(Mutex::new(Tally::default()));
    let start = Instant::now();
    let end = start + Duration::from_secs(seconds);
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let token = tokens[c % tokens.len()].clone();
            let (hosts, tally) = (hosts.clone(), tally.clone());
            std::thread::spawn(move || {
                let http = Client::builder()
                    .timeout(Duration::from_secs(60))
                    .build()
                    .unwrap();
                let mut i = c;
                while Instant::now() < end {
                    let base = &hosts[i % hosts.len()];
                    i += 1;
                    let t0 = Instant::now();
                    let r = http
                        .post(format!("{base}/v1/documents"))
                        .bearer_auth(&token)
                        .json(&json!({"name": format!("bench {c}-{i}"),
                            "recipients": [{"first_name": "A", "last_name": "B",
                                            "email": format!("b{c}-{i}@example.com")}]}))
                        .send()
                        .expect("create");
                    let created = t0.elapsed();
                    if r.status() == 503 {
                        tally.lock().unwrap().busy += 1;
                        continue;
                    }
                    assert_eq!(r.status(), 200, "create");
                    let doc: Value = r.json().unwrap();
                    let id = doc["id"].as_str().unwrap();
                    let t1 = Instant::now();
                    let r = http
                        .post(format!("{base}/v1/documents/{id}/send"))
                        .bearer_auth(&token)
                        .json(&json!({}))
                        .send()
                        .expect("send");
                    let sent = t1.elapsed();
                    let mut t = tally.lock().unwrap();
                    if r.status() == 503 {
                        t.busy += 1;
                        continue;
                    }
                    assert_eq!(r.status(), 200, "send");
                    t.create.push(created);
                    t.send.push(sent);
                    t.done += 1;
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let elapsed = start.elapsed().as_secs_f64();
    // Untimed: the renders the sends queued finish before the next row starts, so that
    // rows do not run against each other's background work.
    let drained = Instant::now();
    let http = Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let drafts_left = |token: &String| {
        let drafts: Value = http
            .get(format!("{}/v1/documents?filter=draft&limit=1", hosts[0]))
            .bearer_auth(token)
            .send()
            .and_then(|r| r.json())
            .expect("list drafts");
        !drafts.as_array().is_some_and(Vec::is_empty)
    };
    while drained.elapsed() < Duration::from_secs(900) && tokens.iter().any(drafts_left) {
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut t = tally.lock().unwrap();
    t.create.sort();
    t.send.sort();
    println!(
        "{} host(s), {clients} clients, {} entit{}: {:.0} documents created+sent/s; create p50 {:.1} ms p99 {:.1} ms; send p50 {:.1} ms p99 {:.1} ms; {} answered 503; renders drained {:.1} s later",
        hosts.len(),
        tokens.len(),
        if tokens.len() == 1 { "y" } else { "ies" },
        t.done as f64 / elapsed,
        pct(&t.create, 0.5),
        pct(&t.create, 0.99),
        pct(&t.send, 0.5),
        pct(&t.send, 0.99),
        t.busy,
        drained.elapsed().as_secs_f64()
    );
}
