//! The esign engine as a WASI component: implements the `esign:engine/esign` world of
//! `wit/esign.wit` by converting between the generated WIT types and `esign-engine`'s
//! own, and by implementing [`esign_engine::Platform`] with the world's imports. Clock
//! and randomness come from WASI, so the embedding host controls them.

// The generated bindings take one argument per field of a flattened record.
#![allow(clippy::too_many_arguments)]

wit_bindgen::generate!({
    world: "esign",
    path: "../../wit",
});

use esign::engine::{effects, host, store, types};
use esign_engine as core;

struct Component;

impl Guest for Component {
    fn handle(req: types::Request) -> types::Response {
        let req = core::Request {
            method: req.method,
            path: req.path,
            query: req.query,
            headers: req.headers,
            body: req.body,
            origin: match req.origin {
                types::Origin::Http => core::Origin::Http,
                types::Origin::Admin => core::Origin::Admin,
            },
            remote_addr: req.remote_addr,
        };
        let resp = core::handle(&mut Imports, &req);
        types::Response {
            status: resp.status,
            headers: resp.headers,
            body: resp.body,
        }
    }

    fn run_job(job: types::Job) -> types::JobOutcome {
        let job = core::Job {
            id: job.id,
            kind: job.kind,
            payload: job.payload,
            attempt: job.attempt,
        };
        match core::run_job(&mut Imports, &job) {
            core::JobOutcome::Done => types::JobOutcome::Done,
            core::JobOutcome::RetryAt(ms) => types::JobOutcome::RetryAt(ms),
            core::JobOutcome::Failed(why) => types::JobOutcome::Failed(why),
        }
    }
}

/// [`core::Platform`] over the world's imports.
struct Imports;

impl core::Platform for Imports {
    fn get(&mut self, key: &[u8]) -> Option<Vec<u8>> {
        store::get(key)
    }

    fn put(&mut self, key: &[u8], value: &[u8]) {
        store::put(key, value)
    }

    fn delete(&mut self, key: &[u8]) {
        store::delete(key)
    }

    fn scan(
        &mut self,
        start: &[u8],
        end: &[u8],
        limit: u32,
        reverse: bool,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        store::scan(start, end, limit, reverse)
    }

    fn emit_event(&mut self, e: core::Event) -> String {
        effects::emit_event(&effects::Event {
            kind: e.kind,
            entity_id: e.entity_id,
            user_id: e.user_id,
            payload: e.payload,
        })
    }

    fn schedule_job(&mut self, j: core::JobSpec) -> String {
        effects::schedule_job(&effects::JobSpec {
            kind: j.kind,
            payload: j.payload,
            run_at_ms: j.run_at_ms,
        })
    }

    fn send_mail(&mut self, m: core::Mail) {
        effects::send_mail(&effects::Mail {
            to: m.to,
            subject: m.subject,
            body: m.body,
        })
    }

    fn settings(&mut self) -> core::Settings {
        let s = host::get_settings();
        core::Settings {
            token_ttl_secs: s.token_ttl_secs,
            login_max_failures: s.login_max_failures,
            login_lock_secs: s.login_lock_secs,
            token_min_interval_ms: s.token_min_interval_ms,
            base_url: s.base_url,
        }
    }

    fn hash_password(&mut self, password: &str) -> String {
        host::hash_password(password)
    }

    fn verify_password(&mut self, password: &str, hash: &str) -> bool {
        host::verify_password(password, hash)
    }

    fn now_ms(&mut self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }

    fn fill_random(&mut self, buf: &mut [u8]) {
        getrandom::fill(buf).expect("WASI random is always available");
    }
}

export!(Component);
