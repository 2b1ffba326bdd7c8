//! A deterministic simulation of the engine, in the manner of FoundationDB's simulator
//! and TigerBeetle's VOPR: the engine is a pure state machine over its platform, so a
//! seeded random sequence of API calls, recipient acts, due jobs run in random order,
//! clock jumps and aborted transactions replays exactly from its seed. After every step
//! the invariants are checked:
//!
//! - the store's derived data matches its records (`esign_engine::check_invariants`:
//!   every document's list, lookup and expiry index keys, no index key without its
//!   document, no blob reference without its blob);
//! - a list shows an entity only its own documents;
//! - a document's status only takes the moves of the spec's state machine (§3.3, with
//!   the moves it leaves unshown kept forward-only: [`reachable`]) and a deleted
//!   document stays deleted;
//! - every status change a committed call made has its event (`document.sent` only
//!   for a send, none for a sealed document's batches), no event is emitted twice
//!   where the spec promises once (`sent`, `signed`, `recalled`), and marking a lost
//!   document lost again emits nothing; a send mails the invitation;
//! - each committed event reaches exactly the subscriptions that were live, of its
//!   entity and kind, when it happened (one delivery each), and nothing else does;
//! - an aborted call (its writes and effects dropped, as the host drops a transaction
//!   that conflicts or traps) leaves no trace;
//! - at the end, once every document, upload and template is deleted and their jobs
//!   have run, no blob and no document key is left (nothing orphaned, nothing lost
//!   before its last owner let go).
//!
//! `cargo test -p esign-engine --test simulation` runs the fixed seeds (CI);
//! `ESIGN_SIM_SEEDS=N` runs seeds 1..=N, `ESIGN_SIM_SEED=S` replays one (`just
//! simulate N`). A failure prints its seed and step.

mod common;

use common::*;
use esign_engine::memory::MemoryPlatform;
use esign_engine::{
    Job, JobOutcome, JobSpec, WorkFailure, WorkOrder, WorkOutcome, check_invariants, run_job,
};
use serde_json::{Value, json};
use std::collections::HashMap;

/// splitmix64: a small seeded generator (test input only, nothing secret).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e3779b97f4a7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

struct Doc {
    id: String,
    entity: usize,
    token: String,
    status: String,
    links: Vec<String>,
    /// Its `document.lost` events at the last check.
    lost_events: usize,
}

/// A webhook subscription, from the event (an index into the platform's event list)
/// at which it began.
struct Sub {
    id: String,
    entity: usize,
    /// The subscriber, for `DELETE`, and its user id (non-global subscriptions cover
    /// only its documents).
    token: String,
    user_id: String,
    global: bool,
    event: String,
    from: usize,
    deleted: bool,
}

struct Sim {
    p: MemoryPlatform,
    rng: Rng,
    /// Per entity: (admin token, user token).
    tokens: Vec<(String, String)>,
    /// Entity ids, by the index used in `tokens`.
    entities: Vec<String>,
    /// The user id behind each token.
    users: HashMap<String, String>,
    docs: Vec<Doc>,
    /// Uploads and templates: (entity, token, id).
    uploads: Vec<(usize, String, String)>,
    templates: Vec<(usize, String, String)>,
    subs: Vec<Sub>,
    /// Scheduled jobs not yet run, with their attempt.
    queue: Vec<(JobSpec, u32)>,
    steps: usize,
}

/// The direct moves of a document's status: the spec's table (§3.3), plus the moves it
/// leaves unshown, which only go forward (a recipient's view, review, signature or
/// rejection, expiry, a hard bounce). `deleted` stands for "answers 404".
fn moves(from: &str) -> &'static [&'static str] {
    const SENT: &[&str] = &[
        "viewed",
        "reviewed",
        "signed",
        "signedwithoutverification",
        "rejected",
        "expired",
        "hardbounced",
        "recalled",
        "lost",
    ];
    match from {
        "importing" => &["draft", "deleted"],
        // Send (via processing or scheduled), seal, a draft never sent is removed.
        "draft" => &[
            "processing",
            "scheduled",
            "sent",
            "sealed",
            "lost",
            "deleted",
        ],
        "processing" | "scheduled" => &["draft", "sent", "lost", "deleted"],
        // Sending to recipients; what recipients do follows from `sent`.
        "sealed" => &["sent"],
        "sent" | "viewed" | "reviewed" | "hardbounced" => SENT,
        "expired" => &["signed", "signedwithoutverification", "recalled", "lost"],
        "rejected" => &["signed", "signedwithoutverification", "recalled", "lost"],
        "recalled" => &["lost", "deleted"],
        // A delete recalls any document that went out (spec §3.3: "sent, not recalled").
        "signed" | "signedwithoutverification" => &["recalled", "lost", "deleted"],
        // A lost document that had gone out is recalled by a delete, like a sent one.
        "lost" => &["recalled", "deleted"],
        "deleted" => &[],
        other => panic!("unknown status {other}"),
    }
}

/// Whether `to` can follow `from` through one or more moves (one step of the
/// simulation may run several jobs).
fn reachable(from: &str, to: &str) -> bool {
    let mut seen = vec![from];
    let mut i = 0;
    while i < seen.len() {
        if seen[i] == to {
            return true;
        }
        for next in moves(seen[i]) {
            if !seen.contains(next) {
                seen.push(next);
            }
        }
        i += 1;
    }
    false
}

impl Sim {
    fn new(seed: u64) -> Sim {
        let mut p = bootstrapped();
        // The clock jumps by days: tokens must outlive the run.
        p.settings.token_ttl_secs = 100 * 365 * 86_400;
        let admin = token(&mut p);
        let home = entity_of(&mut p, &admin);
        let mut tokens = Vec::new();
        let mut entities = Vec::new();
        let mut users = HashMap::new();
        for (e, entity) in [Some(home), None].into_iter().enumerate() {
            let entity = entity.unwrap_or_else(|| new_entity(&mut p, "Second", json!({})));
            let mut pair = Vec::new();
            for role in ["admin", "user"] {
                let email = format!("{role}{e}@sim.example");
                let user = add_member(&mut p, &email, &entity, role, None);
                let token = login(&mut p, &email, Some(&entity));
                users.insert(token.clone(), user);
                pair.push(token);
            }
            tokens.push((pair[0].clone(), pair[1].clone()));
            entities.push(entity);
        }
        let mut sim = Sim {
            p,
            rng: Rng(seed),
            tokens,
            entities,
            users,
            docs: Vec::new(),
            uploads: Vec::new(),
            templates: Vec::new(),
            subs: Vec::new(),
            queue: Vec::new(),
            steps: 0,
        };
        sim.collect_jobs();
        sim
    }

    fn collect_jobs(&mut self) {
        for j in self.p.jobs.drain(..) {
            self.queue.push((j, 1));
        }
    }

    /// Runs `f` as one engine call that the host may abort after it ran (a conflict,
    /// a trap): one in ten is, and then everything it wrote and recorded is dropped
    /// (`None`). Otherwise its scheduled jobs join the queue.
    fn maybe_aborted<R>(&mut self, f: impl FnOnce(&mut MemoryPlatform) -> R) -> Option<R> {
        let abort = self.rng.chance(10);
        let p = &self.p;
        // Effects are appended, except that cancelled deliveries leave the queue: the
        // queue is kept whole.
        let before = abort.then(|| {
            (
                p.data.clone(),
                p.blobs.clone(),
                p.deliveries.clone(),
                [p.events.len(), p.mails.len(), p.sms.len(), p.jobs.len()],
            )
        });
        let result = f(&mut self.p);
        if let Some((data, blobs, deliveries, [events, mails, sms, jobs])) = before {
            self.p.data = data;
            self.p.blobs = blobs;
            self.p.deliveries = deliveries;
            self.p.events.truncate(events);
            self.p.mails.truncate(mails);
            self.p.sms.truncate(sms);
            self.p.jobs.truncate(jobs);
            return None;
        }
        self.collect_jobs();
        Some(result)
    }

    fn call(
        &mut self,
        token: &str,
        method: &str,
        path: &str,
        b: Option<Value>,
    ) -> Option<(u16, Value)> {
        self.maybe_aborted(|p| api(p, token, method, path, b))
    }

    fn act(&mut self, secret: &str, what: &str) {
        let path = format!("/v1/recipient/{secret}/{what}");
        self.maybe_aborted(|p| recipient(p, "POST", &path, Some(json!({}))));
    }

    /// Runs a job as the host does: its work's new blobs are written in the job's own
    /// transaction, so an aborted run drops them with the engine's changes.
    fn run(&mut self, spec: &JobSpec, attempt: u32, abortable: bool) -> Option<JobOutcome> {
        let go = |p: &mut MemoryPlatform| {
            let outcome = outcome(p, &spec.work);
            let job = Job {
                id: "sim".into(),
                kind: spec.kind.clone(),
                payload: spec.payload.clone(),
                attempt,
                outcome,
            };
            run_job(p, &job)
        };
        if abortable {
            self.maybe_aborted(go)
        } else {
            let result = go(&mut self.p);
            self.collect_jobs();
            Some(result)
        }
    }

    /// Runs a random selection of the due jobs, in random order (like several hosts'
    /// runners would), with retries rescheduled as the host does.
    fn run_due_jobs(&mut self) {
        let now = self.p.now_ms;
        let mut due: Vec<(JobSpec, u32)> = Vec::new();
        let mut later = Vec::new();
        for j in self.queue.drain(..) {
            if j.0.run_at_ms <= now {
                due.push(j)
            } else {
                later.push(j)
            }
        }
        self.queue = later;
        while !due.is_empty() {
            let (spec, attempt) = due.remove(self.rng.below(due.len()));
            if self.rng.chance(20) {
                self.queue.push((spec, attempt)); // not this time
                continue;
            }
            let Some(result) = self.run(&spec, attempt, true) else {
                self.queue.push((spec, attempt)); // the job stays, as in the host
                continue;
            };
            self.retry_if_asked(spec, attempt, result);
        }
    }

    /// Queues the job's next attempt when its run asked for one, as the host does.
    fn retry_if_asked(&mut self, spec: JobSpec, attempt: u32, result: JobOutcome) {
        if let JobOutcome::RetryAt(at) = result {
            self.queue.push((
                JobSpec {
                    run_at_ms: at,
                    ..spec
                },
                attempt + 1,
            ));
        }
    }

    /// Creates a document (with no file, an inline file, an upload shared with other
    /// documents, or a template) and follows it when the call committed.
    fn create(&mut self, e: usize, token: String) {
        let n = self.steps;
        let mut b = json!({"name": format!("doc {n}"), "value": self.rng.below(1000),
            "recipients": [{"email": format!("r{n}@sim.example"), "first_name": "R", "last_name": "S"}]});
        let uploads: Vec<String> = self
            .uploads
            .iter()
            .filter(|u| u.0 == e)
            .map(|u| u.2.clone())
            .collect();
        let templates: Vec<String> = self
            .templates
            .iter()
            .filter(|t| t.0 == e)
            .map(|t| t.2.clone())
            .collect();
        match self.rng.below(4) {
            0 => {}
            1 => {
                b["file_content"] = json!("JVBERi0xLjQKZmFrZQ==");
                b["file_name"] = json!("f.pdf");
            }
            2 if !uploads.is_empty() => {
                b["file_ids"] = uploads[self.rng.below(uploads.len())].clone().into();
            }
            3 if !templates.is_empty() => {
                b["template_id"] = templates[self.rng.below(templates.len())].clone().into();
            }
            _ => {}
        }
        // A document exists after a 200, and after the errors that leave a draft behind
        // (an unknown or expired upload, a template that cannot be applied), which
        // name it.
        let Some((status, doc)) = self.call(&token, "POST", "/v1/documents", Some(b)) else {
            return;
        };
        let id = match status {
            200 => doc["id"].as_str(),
            _ => doc["document_id"].as_str(),
        };
        if let Some(id) = id {
            self.docs.push(Doc {
                id: id.into(),
                entity: e,
                token,
                status: doc["status"].as_str().unwrap_or("draft").into(),
                links: Vec::new(),
                lost_events: 0,
            });
        }
    }

    /// An owner's act on a document: `POST /v1/documents/{id}/{act}` or a change.
    fn change(&mut self, i: usize) {
        let (id, t) = (self.docs[i].id.clone(), self.docs[i].token.clone());
        let doc = format!("/v1/documents/{id}");
        match self.rng.below(9) {
            0..=2 => {
                self.call(&t, "POST", &format!("{doc}/send"), Some(json!({})));
            }
            3 => {
                self.call(&t, "POST", &format!("{doc}/seal"), Some(json!({})));
            }
            4 => {
                let v = self.rng.below(100_000);
                let b = json!({"name": format!("renamed {v}"), "value": v,
                               "external_id": format!("ext-{}", v % 7)});
                self.call(&t, "PUT", &doc, Some(b));
            }
            5 => {
                let send = self.rng.chance(50);
                self.call(
                    &t,
                    "POST",
                    &format!("{doc}/revisions"),
                    Some(json!({"send_document": send})),
                );
            }
            6 => {
                self.call(&t, "POST", &format!("{doc}/lost"), Some(json!({})));
            }
            7 => {
                // A recipient's address changes (their list key moves).
                let Some((200, d)) = self.call(&t, "GET", &doc, None) else {
                    return;
                };
                if let Some(r) = d["recipients"][0]["id"].as_str() {
                    let v = self.rng.below(5);
                    self.call(
                        &t,
                        "PUT",
                        &format!("{doc}/recipients/{r}"),
                        Some(json!({"email": format!("moved{v}@sim.example")})),
                    );
                }
            }
            _ => {
                self.call(&t, "DELETE", &doc, None);
            }
        }
    }

    fn step(&mut self) {
        self.steps += 1;
        let e = self.rng.below(self.tokens.len());
        let token = if self.rng.chance(50) {
            self.tokens[e].0.clone()
        } else {
            self.tokens[e].1.clone()
        };
        let pick = |sim: &mut Sim| (!sim.docs.is_empty()).then(|| sim.rng.below(sim.docs.len()));
        match self.rng.below(16) {
            0..=2 => self.create(e, token),
            3..=6 => {
                if let Some(i) = pick(self) {
                    self.change(i);
                }
            }
            7 | 8 => {
                if let Some(i) = pick(self)
                    && let Some(secret) = self.docs[i].links.first().cloned()
                {
                    let what = match self.rng.below(10) {
                        0 => "reject",
                        1 | 2 => "view",
                        _ => "sign",
                    };
                    self.act(&secret, what);
                }
            }
            9 => {
                let b = json!({"file_content": "JVBERi0xLjQKZmFrZQ==", "file_name": "u.pdf"});
                if let Some((200, up)) = self.call(&token, "POST", "/v1/upload", Some(b)) {
                    let id = up["file_id"].as_str().unwrap().to_string();
                    self.uploads.push((e, token, id));
                }
            }
            10 => {
                if self.templates.is_empty() || self.rng.chance(60) {
                    let b = json!({"name": "T", "file_content": "JVBERi0xLjQKZmFrZQ==",
                                   "file_name": "t.pdf"});
                    if let Some((200, tpl)) = self.call(&token, "POST", "/v1/templates", Some(b)) {
                        let id = tpl["id"].as_str().unwrap().to_string();
                        self.templates.push((e, token, id));
                    }
                } else {
                    let (_, t, id) = self.templates[self.rng.below(self.templates.len())].clone();
                    self.call(&t, "DELETE", &format!("/v1/templates/{id}"), None);
                }
            }
            11 => self.subscribe(e, token),
            12 | 13 => self.run_due_jobs(),
            _ => {
                // Time passes: seconds, or days (expiry, erasure, uploads' end).
                self.p.now_ms += if self.rng.chance(80) {
                    1 + self.rng.below(60_000) as u64
                } else {
                    self.rng.below(40 * 86_400_000) as u64
                };
            }
        }
    }

    /// Subscribes to an event (some global), or ends a subscription.
    fn subscribe(&mut self, e: usize, token: String) {
        let live: Vec<usize> = (0..self.subs.len())
            .filter(|&i| !self.subs[i].deleted)
            .collect();
        if !live.is_empty() && self.rng.chance(30) {
            let i = live[self.rng.below(live.len())];
            let (t, id) = (self.subs[i].token.clone(), self.subs[i].id.clone());
            if let Some((204 | 200, _)) =
                self.call(&t, "DELETE", &format!("/v1/subscriptions/{id}"), None)
            {
                self.subs[i].deleted = true;
            }
            return;
        }
        const KINDS: [&str; 8] = [
            "document.created",
            "document.sent",
            "document.signed",
            "document.rejected",
            "document.recalled",
            "document.viewed",
            "document.expired",
            "document.lost",
        ];
        let event = KINDS[self.rng.below(KINDS.len())];
        let global = token == self.tokens[e].0 && self.rng.chance(50);
        let b = json!({"event": event, "target_url": "https://hooks.sim.example/in",
                       "global": global});
        if let Some((200, sub)) = self.call(&token, "POST", "/v1/subscriptions", Some(b)) {
            self.subs.push(Sub {
                id: sub["id"].as_str().unwrap().into(),
                entity: e,
                user_id: self.users[&token].clone(),
                token,
                global,
                event: event.into(),
                from: self.p.events.len(),
                deleted: false,
            });
        }
    }

    /// Checks every invariant; `Err` says what broke.
    fn check(&mut self) -> Result<(), String> {
        let problems = check_invariants(&mut self.p);
        if !problems.is_empty() {
            return Err(problems.join("; "));
        }
        // Lists show an entity only its own documents.
        let owner: HashMap<String, usize> =
            self.docs.iter().map(|d| (d.id.clone(), d.entity)).collect();
        for e in 0..self.tokens.len() {
            let t = self.tokens[e].0.clone();
            let (status, list) = api(
                &mut self.p,
                &t,
                "GET",
                "/v1/documents?showall=true&limit=100",
                None,
            );
            if status != 200 {
                return Err(format!("the list answered {status}: {list}"));
            }
            for d in list.as_array().unwrap() {
                let id = d["id"].as_str().unwrap();
                if owner.get(id) != Some(&e) {
                    return Err(format!("entity {e} lists {id}, which is not its own"));
                }
            }
        }
        // Each document's events, by kind.
        let mut events: HashMap<(String, String), usize> = HashMap::new();
        for ev in &self.p.events {
            let payload: Value = serde_json::from_str(&ev.payload).unwrap();
            if let Some(doc) = payload["document"]["id"].as_str() {
                *events
                    .entry((doc.to_string(), ev.kind.clone()))
                    .or_default() += 1;
            }
        }
        let count = |id: &str, kind: &str| {
            events
                .get(&(id.to_string(), kind.to_string()))
                .copied()
                .unwrap_or(0)
        };
        // Statuses take only the state machine's moves, each with its event; links are
        // learnt when a document is sent.
        for i in 0..self.docs.len() {
            let (id, t) = (self.docs[i].id.clone(), self.docs[i].token.clone());
            let (status, d) = api(&mut self.p, &t, "GET", &format!("/v1/documents/{id}"), None);
            let now = match status {
                200 => d["status"].as_str().unwrap().to_string(),
                404 => "deleted".to_string(),
                s => return Err(format!("{id} answered {s}: {d}")),
            };
            let was = self.docs[i].status.clone();
            if !reachable(&was, &now) {
                return Err(format!("{id} went from {was} to {now}"));
            }
            // Marking a lost document lost again has no effect and no event.
            let lost = count(&id, "document.lost");
            if was == "lost" && now == "lost" && lost > self.docs[i].lost_events {
                return Err(format!(
                    "{id} was already lost and got another document.lost"
                ));
            }
            self.docs[i].lost_events = lost;
            for once in ["document.sent", "document.signed", "document.recalled"] {
                if count(&id, once) > 1 {
                    return Err(format!("{id} has {} {once} events", count(&id, once)));
                }
            }
            let needs = match now.as_str() {
                _ if now == was => None,
                // A send emits it; a sealed document's batches do not.
                "sent" if was != "sealed" => Some("document.sent"),
                "sealed" => Some("document.sealed"),
                "signed" => Some("document.signed"),
                "recalled" => Some("document.recalled"),
                "rejected" => Some("document.rejected"),
                "lost" => Some("document.lost"),
                "expired" => Some("document.expired"),
                _ => None,
            };
            if let Some(kind) = needs
                && count(&id, kind) == 0
            {
                return Err(format!("{id} went from {was} to {now} without {kind}"));
            }
            // A send invites the recipient by mail.
            let tag = format!("recipient:{id}:");
            if now == "sent"
                && was != "sent"
                && was != "sealed"
                && !self.p.mails.iter().any(|m| m.tag.starts_with(&tag))
            {
                return Err(format!("{id} was sent without an invitation mail"));
            }
            if was != "sealed" && count(&id, "document.sent") == 1 && !went_out(&now) {
                return Err(format!("{id} is {now} but has a document.sent event"));
            }
            if self.docs[i].links.is_empty()
                && status == 200
                && let Some(url) = d["recipients"][0]["document_url"]
                    .as_str()
                    .filter(|u| !u.is_empty())
            {
                self.docs[i]
                    .links
                    .push(url.rsplit('/').next().unwrap().to_string());
            }
            self.docs[i].status = now;
        }
        self.check_deliveries()?;
        self.check_a_list()
    }

    /// One random list query (scope, filter, sort, lookup by external id or recipient
    /// address, page) against a model built from every document's detail: the same
    /// documents, in the order the sort promises, and pages that are slices of the
    /// whole.
    fn check_a_list(&mut self) -> Result<(), String> {
        let e = self.rng.below(self.tokens.len());
        let token = if self.rng.chance(50) {
            self.tokens[e].0.clone()
        } else {
            self.tokens[e].1.clone()
        };
        let me = self.users[&token].clone();
        let mut all = Vec::new();
        for d in self.docs.iter().filter(|d| d.entity == e) {
            let (status, detail) = api(
                &mut self.p,
                &d.token,
                "GET",
                &format!("/v1/documents/{}", d.id),
                None,
            );
            if status == 200 {
                all.push(detail);
            }
        }
        const FILTERS: [&str; 13] = [
            "",
            "archive",
            "won",
            "signed",
            "active",
            "expired",
            "expiring",
            "hot",
            "lost",
            "recalled",
            "draft",
            "sent, viewed",
            "nonsense",
        ];
        let filter = FILTERS[self.rng.below(FILTERS.len())];
        let statuses: Option<&[&str]> = match filter {
            "" => None,
            "archive" => Some(&["archived"]),
            "won" | "signed" => Some(&["signed", "signedwithoutverification"]),
            "active" | "expiring" => Some(&["sealed", "sent", "viewed", "reviewed", "hardbounced"]),
            "expired" => Some(&["expired"]),
            "hot" => Some(&["viewed", "reviewed"]),
            "lost" => Some(&["lost"]),
            "recalled" => Some(&["recalled"]),
            "draft" => Some(&["draft"]),
            "sent, viewed" => Some(&["sent", "viewed"]),
            _ => Some(&[]),
        };
        let showall = self.rng.chance(50);
        let lookup = match self.rng.below(4) {
            0 => Some(format!("ext-{}", self.rng.below(7))),
            1 => Some(format!("moved{}@sim.example", self.rng.below(5))),
            _ => None,
        };
        let sorts = ["", "name", "value", "created", "status"];
        let sort = sorts[self.rng.below(sorts.len())];
        let desc = self.rng.chance(50);
        let now = self.p.now_ms;
        let week = 7 * 86_400_000;
        let want: Vec<&Value> = all
            .iter()
            .filter(|d| showall || d["user_id"] == me.as_str())
            .filter(|d| statuses.is_none_or(|s| s.contains(&d["status"].as_str().unwrap())))
            .filter(|d| {
                filter != "expiring"
                    || d["expiration_date"]
                        .as_str()
                        .and_then(esign_engine::parse_time)
                        .is_some_and(|at| at >= now && at < now + week)
            })
            .filter(|d| match &lookup {
                None => true,
                Some(v) if v.contains('@') => d["recipients"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|r| r["email"] == v.as_str()),
                Some(v) => d["external_id"] == v.as_str(),
            })
            .collect();
        let mut query = format!("filter={filter}&limit=1000");
        if showall {
            query.push_str("&showall=true");
        }
        if let Some(v) = &lookup {
            query.push_str(&format!("&external_id={v}"));
        }
        if !sort.is_empty() {
            query.push_str(&format!(
                "&sort_by={sort}&sort_order={}",
                if desc { "desc" } else { "asc" }
            ));
        }
        let path = format!("/v1/documents?{query}");
        let (status, got) = api(&mut self.p, &token, "GET", &path, None);
        if status != 200 {
            return Err(format!("{path} answered {status}: {got}"));
        }
        let got = got.as_array().unwrap().clone();
        let ids = |v: &[&Value]| {
            let mut ids: Vec<String> = v
                .iter()
                .map(|d| d["id"].as_str().unwrap().to_string())
                .collect();
            ids.sort();
            ids
        };
        let got_refs: Vec<&Value> = got.iter().collect();
        if ids(&got_refs) != ids(&want) {
            return Err(format!(
                "{path} as user {me} lists {:?}, the model {:?}",
                ids(&got_refs),
                ids(&want)
            ));
        }
        if lookup.is_some() || filter == "expiring" {
            return Ok(()); // a lookup's order is not the sort's
        }
        // The sort's order (ties in any order).
        let key = |d: &Value| -> (String, f64) {
            match sort {
                "name" => (d["name"].as_str().unwrap().trim().to_lowercase(), 0.0),
                "value" => (String::new(), d["value"].as_f64().unwrap()),
                "status" => (d["status"].as_str().unwrap().to_string(), 0.0),
                // Signed documents sorted by "created" are sorted by their signing.
                "created" if filter == "signed" => {
                    (d["sign_date"].as_str().unwrap_or("").to_string(), 0.0)
                }
                _ => (d["created_at"].as_str().unwrap().to_string(), 0.0),
            }
        };
        let descending = if sort.is_empty() { true } else { desc };
        for pair in got.windows(2) {
            let (a, b) = (key(&pair[0]), key(&pair[1]));
            let ordered = match a.partial_cmp(&b).unwrap() {
                std::cmp::Ordering::Equal => true,
                std::cmp::Ordering::Less => !descending,
                std::cmp::Ordering::Greater => descending,
            };
            if !ordered {
                return Err(format!("{path}: {a:?} before {b:?}"));
            }
        }
        // A page is a slice of the whole.
        let offset = self.rng.below(got.len() + 2);
        let limit = 1 + self.rng.below(5);
        let page_path = format!("{path}&offset={offset}&limit={limit}").replace("&limit=1000", "");
        let (status, page) = api(&mut self.p, &token, "GET", &page_path, None);
        let slice: Vec<Value> = got.iter().skip(offset).take(limit).cloned().collect();
        if status != 200 || page != Value::Array(slice.clone()) {
            return Err(format!(
                "{page_path} answered {status} {page}, not the slice {slice:?}"
            ));
        }
        Ok(())
    }

    /// Each committed event reached exactly the subscriptions live for it (and still
    /// live: the platform's queue is what has not been delivered yet, and deleting a
    /// subscription cancels what it had queued).
    fn check_deliveries(&self) -> Result<(), String> {
        let mut got: HashMap<(String, String), usize> = HashMap::new();
        for d in &self.p.deliveries {
            let body: Value = serde_json::from_str(&d.body).unwrap();
            let event = body["event_id"].as_str().unwrap_or_default().to_string();
            *got.entry((d.subscription_id.clone(), event)).or_default() += 1;
        }
        let mut want: HashMap<(String, String), usize> = HashMap::new();
        for (i, ev) in self.p.events.iter().enumerate() {
            for s in &self.subs {
                // A deleted subscription's queued deliveries are cancelled with it.
                if s.from <= i
                    && !s.deleted
                    && self.entities[s.entity] == ev.entity_id
                    && s.event == ev.kind
                    && (s.global || s.user_id == ev.user_id)
                {
                    want.insert((s.id.clone(), ev.id.clone()), 1);
                }
            }
        }
        if got != want {
            let missing: Vec<_> = want
                .keys()
                .filter(|k| !got.contains_key(*k))
                .take(3)
                .collect();
            let extra: Vec<_> = got
                .iter()
                .filter(|(k, n)| want.get(*k) != Some(n))
                .take(3)
                .collect();
            return Err(format!(
                "deliveries differ from the live subscriptions: missing {missing:?}, unexpected {extra:?}"
            ));
        }
        Ok(())
    }

    /// Deletes everything, lets the time of every retention pass, runs every job, and
    /// checks that nothing is left: no blob, no document key, no blob reference.
    fn drain(&mut self) -> Result<(), String> {
        for _ in 0..2 {
            for i in 0..self.docs.len() {
                let (id, t) = (self.docs[i].id.clone(), self.docs[i].token.clone());
                api(
                    &mut self.p,
                    &t,
                    "DELETE",
                    &format!("/v1/documents/{id}"),
                    None,
                );
            }
            for (_, t, id) in self.templates.clone() {
                api(
                    &mut self.p,
                    &t,
                    "DELETE",
                    &format!("/v1/templates/{id}"),
                    None,
                );
            }
            self.collect_jobs();
            for _ in 0..30 {
                self.p.now_ms += 60 * 86_400_000;
                let due: Vec<(JobSpec, u32)> = self.queue.drain(..).collect();
                for (spec, attempt) in due {
                    if let Some(result) = self.run(&spec, attempt, false) {
                        self.retry_if_asked(spec, attempt, result);
                    }
                }
                if self.queue.is_empty() {
                    break;
                }
            }
        }
        for d in &self.docs {
            let (status, body) = api(
                &mut self.p,
                &d.token,
                "GET",
                &format!("/v1/documents/{}", d.id),
                None,
            );
            if status != 404 {
                return Err(format!(
                    "{} was deleted twice and still answers {status}: {}",
                    d.id, body["status"]
                ));
            }
        }
        // Deleted templates stay in the trash with their files (the spec's 404 for a
        // "trashed template"); everything else must be gone.
        let keys: Vec<String> = self
            .p
            .data
            .keys()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect();
        let trashed: Vec<&str> = keys
            .iter()
            .filter_map(|k| k.strip_prefix("bref/"))
            .filter(|k| k.contains("/template:"))
            .map(|k| k.split('/').next().unwrap())
            .collect();
        let left: Vec<&String> = keys
            .iter()
            .filter(|k| {
                ["doc/", "bref/", "dx/", "drcp/", "dext/", "dexp/"]
                    .iter()
                    .any(|p| k.starts_with(p))
                    && !k.contains("/template:")
            })
            .take(5)
            .collect();
        if !left.is_empty() {
            return Err(format!("keys left after every document went: {left:?}"));
        }
        let blobs: Vec<&String> = self
            .p
            .blobs
            .keys()
            .filter(|b| !trashed.contains(&b.as_str()))
            .collect();
        if !blobs.is_empty() {
            return Err(format!(
                "{} blobs left after every owner went: {:?}",
                blobs.len(),
                &blobs[..blobs.len().min(5)]
            ));
        }
        if trashed.iter().any(|b| !self.p.blobs.contains_key(*b)) {
            return Err("a trashed template lost its file".into());
        }
        Ok(())
    }
}

/// What the host's work would produce for a job's order.
fn outcome(p: &mut MemoryPlatform, work: &Option<WorkOrder>) -> Option<WorkOutcome> {
    match work.as_ref()? {
        WorkOrder::Import(sources) => Some(WorkOutcome::Import(
            sources
                .iter()
                .map(|s| match &s.blob {
                    Some(b) if p.blobs.contains_key(b) => match imported_pages(b, 2) {
                        WorkOutcome::Import(mut v) => v.remove(0),
                        _ => unreachable!(),
                    },
                    _ => Err(WorkFailure {
                        code: "blob-missing".into(),
                        message: "gone".into(),
                    }),
                })
                .collect(),
        )),
        WorkOrder::Render(order) => Some(render_outcome(p, Some(order), 1, &"11".repeat(32))),
        WorkOrder::Fetch(_) => Some(WorkOutcome::Fetch(Err(WorkFailure {
            code: "download-failed".into(),
            message: "no network in the simulation".into(),
        }))),
    }
}

/// Whether a document in `status` has gone out (it may carry `document.sent`).
fn went_out(status: &str) -> bool {
    !matches!(
        status,
        "importing" | "draft" | "processing" | "scheduled" | "sealed"
    )
}

fn simulate(seed: u64, steps: usize) -> Result<(), String> {
    let mut sim = Sim::new(seed);
    let replay = format!(
        "replay: ESIGN_SIM_SEED={seed} cargo test -p esign-engine --test simulation -- --nocapture"
    );
    for step in 1..=steps {
        sim.step();
        sim.check()
            .map_err(|why| format!("seed {seed}, step {step}: {why}\n{replay}"))?;
    }
    sim.drain()
        .map_err(|why| format!("seed {seed}, after the last step: {why}\n{replay}"))
}

#[test]
fn seeded_runs_keep_every_invariant() {
    const STEPS: usize = 300;
    let seeds: Vec<u64> = match (
        std::env::var("ESIGN_SIM_SEED"),
        std::env::var("ESIGN_SIM_SEEDS"),
    ) {
        (Ok(one), _) => vec![one.parse().expect("ESIGN_SIM_SEED is a number")],
        (_, Ok(n)) => (1..=n.parse().expect("ESIGN_SIM_SEEDS is a number")).collect(),
        _ => (1..=10).collect(),
    };
    let started = std::time::Instant::now();
    // Seeds are independent runs: one thread per core takes every n-th of them (a run's
    // outcome depends on its seed alone, so the split changes nothing but the time).
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let failures: Vec<String> = std::thread::scope(|s| {
        let runs: Vec<_> = (0..threads)
            .map(|t| {
                let mine: Vec<u64> = seeds.iter().copied().skip(t).step_by(threads).collect();
                s.spawn(move || {
                    mine.into_iter()
                        .filter_map(|seed| simulate(seed, STEPS).err())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        runs.into_iter()
            .flat_map(|r| r.join().expect("a simulation thread panicked"))
            .collect()
    });
    if let Some(why) = failures.first() {
        panic!("{why}");
    }
    eprintln!(
        "simulation: {} seeds × {STEPS} steps in {:?}",
        seeds.len(),
        started.elapsed()
    );
}
