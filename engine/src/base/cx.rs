//! The per-call context every engine function takes: the platform plus what a call reads
//! once (its time, the settings) and who an MCP tool call acts for.

use crate::base::api::{Platform, Settings};
use crate::base::messages::Words;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::{decode, encode};
use alloc::rc::Rc;
use core::any::Any;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The per-call context: the platform plus values read once per call.
pub(crate) struct Cx<'a> {
    pub p: &'a mut dyn Platform,
    now: Option<u64>,
    settings: Option<Settings>,
    /// The last catalogue of words read ([`Cx::words`]): a send mails every recipient
    /// in one call, and parsing a catalogue for each was most of a mail's cost.
    words: Option<Rc<Words>>,
    /// Inside an MCP tool call: who the agent's grant acts for (checked when the call
    /// began), which `domain::auth::authenticate` answers instead of reading a bearer
    /// token. Its type (`domain::auth::Principal`) belongs to the domain layer above this
    /// one, so it is kept here as `Any` and only `domain::auth` sets and reads it.
    pub agent: Option<Box<dyn Any>>,
    /// The audit trail heads this call wrote, per document id: the hash and time of the
    /// last entry (`domain::trail` reads its own head here instead of the store, so a
    /// call does not read the trail range other calls append to).
    pub trail_heads: alloc::collections::BTreeMap<String, (String, u64)>,
}

impl<'a> Cx<'a> {
    pub fn new(p: &'a mut dyn Platform) -> Self {
        Cx {
            p,
            now: None,
            settings: None,
            words: None,
            agent: None,
            trail_heads: Default::default(),
        }
    }

    /// The call's time, read once so that one call sees one instant.
    pub fn now(&mut self) -> u64 {
        *self.now.get_or_insert_with(|| self.p.now_ms())
    }

    pub fn settings(&mut self) -> &Settings {
        if self.settings.is_none() {
            self.settings = Some(self.p.settings());
        }
        self.settings.as_ref().unwrap()
    }

    /// The words of `lang` (`base::messages`), read once per call and language.
    pub fn words(&mut self, lang: &str) -> Rc<Words> {
        match &self.words {
            Some(w) if w.lang() == lang => w.clone(),
            _ => {
                let w = Rc::new(Words::new(lang));
                self.words = Some(w.clone());
                w
            }
        }
    }
}

impl Cx<'_> {
    /// Schedules a job of `kind` with `payload` at `at_ms`, with no host work and no
    /// scope: the engine's own timers (expiry, reminders, purges, erasure).
    pub fn schedule_at(&mut self, kind: &str, payload: Vec<u8>, at_ms: u64) {
        self.p.schedule_job(crate::base::api::JobSpec {
            kind: kind.into(),
            payload,
            run_at_ms: at_ms,
            work: None,
            scope: String::new(),
        });
    }

    /// Reads and decodes a record.
    pub fn load<T: DeserializeOwned>(&mut self, key: &[u8]) -> Option<T> {
        self.p.get(key).map(|bytes| decode(&bytes))
    }

    /// Encodes and writes a record.
    pub fn save<T: Serialize>(&mut self, key: &[u8], value: &T) {
        self.p.put(key, &encode(value));
    }
}
