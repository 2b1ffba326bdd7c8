//! The audit trail of a document: append-only, hash-chained entries (`dlog/`).
//!
//! Each entry as `GET /v1/documents/{id}/log` serves it carries `prev_hash` (the `hash`
//! of the entry before it, empty for the first) and `hash` = SHA-256 over the bytes of
//! `prev_hash`, a newline, and the entry without `hash` in RFC 8785 canonical JSON. An
//! entry is written in the transaction of the change it records and never rewritten,
//! so changing, removing or reordering any stored entry breaks the chain from there on.

use crate::base::cx::Cx;
use crate::base::http::Client;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records;
use crate::base::util::{iso8601, sha256_hex};
use crate::domain::accounts;
use crate::domain::auth::Principal;
use crate::domain::document::{Document, LogEntry, log_key, log_prefix};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A stored entry: what happened, and its place in the chain.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Chained {
    pub entry: LogEntry,
    pub prev_hash: String,
    pub hash: String,
}

/// Schema byte of a chained entry. Entries written before the chain (schema 1, a bare
/// [`LogEntry`]) still read, with empty hashes.
const CHAINED: u8 = 2;
/// Schema byte of a chained entry followed by its [`EntryExt`] (an entry with a
/// client-asserted address). Entries without one are still written as [`CHAINED`].
const CHAINED_EXT: u8 = 3;

/// What an entry carries beyond its first layout, stored after it.
#[derive(Serialize, Deserialize, Default)]
struct EntryExt {
    client_asserted_ip: String,
}

pub fn encode(c: &Chained) -> Vec<u8> {
    let asserted = &c.entry.client_asserted_ip;
    let mut out = vec![if asserted.is_empty() {
        CHAINED
    } else {
        CHAINED_EXT
    }];
    out.extend(postcard::to_allocvec(c).expect("records always serialize"));
    if !asserted.is_empty() {
        let ext = EntryExt {
            client_asserted_ip: asserted.clone(),
        };
        out.extend(postcard::to_allocvec(&ext).expect("records always serialize"));
    }
    out
}

/// Decodes a stored entry; like [`crate::base::records::decode`], an unreadable one is
/// corruption and traps.
pub fn decode(bytes: &[u8]) -> Chained {
    match try_decode(bytes) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    }
}

/// [`decode`] for the store check, which reports an unreadable entry.
pub fn try_decode(bytes: &[u8]) -> Result<Chained, String> {
    let unreadable = |e: postcard::Error| format!("a stored log entry is unreadable: {e}");
    match bytes.split_first() {
        Some((&CHAINED, rest)) => postcard::from_bytes(rest).map_err(unreadable),
        Some((&CHAINED_EXT, rest)) => {
            let (mut c, rest): (Chained, _) =
                postcard::take_from_bytes(rest).map_err(unreadable)?;
            let ext: EntryExt = postcard::from_bytes(rest).map_err(unreadable)?;
            c.entry.client_asserted_ip = ext.client_asserted_ip;
            Ok(c)
        }
        _ => Ok(Chained {
            entry: records::try_decode(bytes)?,
            prev_hash: String::new(),
            hash: String::new(),
        }),
    }
}

/// The entry as clients see it, without `hash` (what the hash covers).
pub fn entry_json(e: &LogEntry, prev_hash: &str) -> Value {
    let mut v = json!({
        "at": iso8601(e.at_ms),
        "action": e.action,
        "actor": {"type": e.actor_type, "id": e.actor_id, "name": e.actor_name},
        "detail": e.detail,
        "event": e.event.as_ref().map(|(k, _)| k.clone()),
        "event_id": e.event.as_ref().map(|(_, i)| i.clone()),
        "ip": e.ip,
        "user_agent": e.user_agent,
        "prev_hash": prev_hash,
    });
    // Only entries with one have the member: the entries before it hash as they did.
    if !e.client_asserted_ip.is_empty() {
        v["client_asserted_ip"] = e.client_asserted_ip.clone().into();
    }
    v
}

/// The served form of a stored entry: [`entry_json`] plus `hash`.
pub fn served(c: &Chained) -> Value {
    let mut v = entry_json(&c.entry, &c.prev_hash);
    v["hash"] = c.hash.clone().into();
    v
}

/// `hash` of an entry that follows `prev_hash`.
pub fn hash_of(e: &LogEntry, prev_hash: &str) -> String {
    let mut bytes = Vec::with_capacity(512);
    bytes.extend_from_slice(prev_hash.as_bytes());
    bytes.push(b'\n');
    canonical(&entry_json(e, prev_hash), &mut bytes);
    sha256_hex(&bytes)
}

/// RFC 8785 (JCS) serialization of `v`. Object members are sorted by their UTF-16 code
/// units; strings use JSON's shortest escapes, which is what serde_json writes (`\"`,
/// `\\`, `\b \f \n \r \t`, other control characters as lower-case `\u00xx`, everything
/// else as itself). Numbers in log entries are never fractional; integers print as
/// ECMAScript does. Checked against the PyPI `rfc8785` package in the black-box tests.
pub fn canonical(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push(b'{');
            for (i, (k, v)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(k, out);
                out.push(b':');
                canonical(v, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical(v, out);
            }
            out.push(b']');
        }
        Value::String(s) => write_string(s, out),
        other => out.extend_from_slice(other.to_string().as_bytes()),
    }
}

fn write_string(s: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(serde_json::to_string(s).unwrap_or_default().as_bytes());
}

/// The last stored entry of a document's trail.
fn last(cx: &mut Cx, doc_id: &str) -> Option<Chained> {
    let (start, end) = log_prefix(doc_id);
    cx.p.scan(&start, &end, 1, true)
        .into_iter()
        .next()
        .map(|(_, v)| decode(&v))
}

/// The hash and time of the trail's head before entry number `seq`: none before the
/// first, the one this call wrote if it wrote one, else the last stored entry's. (Not
/// reading the store when the call knows the answer keeps the trail range, which every
/// call that logs appends to, out of the call's reads: on PostgreSQL such a read is a
/// predicate lock that concurrent appends to other documents conflict with.)
fn head(cx: &mut Cx, doc_id: &str, seq: u32) -> Option<(String, u64)> {
    if let Some(head) = cx.trail_heads.get(doc_id) {
        return Some(head.clone());
    }
    if seq <= 1 {
        return None;
    }
    last(cx, doc_id).map(|c| (c.hash, c.entry.at_ms))
}

/// Appends `entry` after the current head, as entry number `seq`. Its time is never
/// before the previous entry's, so key order stays chain order.
pub(crate) fn append(cx: &mut Cx, doc_id: &str, seq: u32, mut entry: LogEntry) {
    let prev = head(cx, doc_id, seq);
    if let Some((_, at)) = &prev {
        entry.at_ms = entry.at_ms.max(*at);
    }
    let prev_hash = prev.map(|(hash, _)| hash).unwrap_or_default();
    let hash = hash_of(&entry, &prev_hash);
    cx.trail_heads
        .insert(doc_id.to_string(), (hash.clone(), entry.at_ms));
    let key = log_key(doc_id, entry.at_ms, seq);
    cx.p.put(
        &key,
        &encode(&Chained {
            entry,
            prev_hash,
            hash,
        }),
    );
}

/// Every entry, oldest first.
pub(crate) fn entries(cx: &mut Cx, doc_id: &str) -> Vec<Chained> {
    let (start, end) = log_prefix(doc_id);
    cx.p.scan(&start, &end, u32::MAX, false)
        .into_iter()
        .map(|(_, v)| decode(&v))
        .collect()
}

/// Who did something, for the audit trail.
#[derive(Clone)]
pub struct Actor {
    pub kind: &'static str,
    pub id: String,
    pub name: String,
    /// The address the host saw the request come from.
    pub ip: String,
    /// An address the client asserted (`CLIENT_IP`), or empty.
    pub client_asserted_ip: String,
    pub user_agent: String,
}

impl Actor {
    /// A user acting from `client` (`Request::client`; empty when not from a request).
    pub fn user(pr: &Principal, client: Client) -> Actor {
        Actor {
            kind: "user",
            id: pr.user.id.clone(),
            name: accounts::user_name(&pr.user),
            ip: client.ip,
            client_asserted_ip: client.asserted_ip,
            user_agent: client.user_agent,
        }
    }

    /// A visitor of public link `link_id`, who gave `email`, from `client`.
    pub fn visitor(link_id: &str, email: &str, client: Client) -> Actor {
        Actor {
            kind: "visitor",
            id: link_id.to_string(),
            name: format!("{email} by public link"),
            ip: client.ip,
            client_asserted_ip: client.asserted_ip,
            user_agent: client.user_agent,
        }
    }

    pub fn system() -> Actor {
        Actor {
            kind: "system",
            id: String::new(),
            name: "esign".into(),
            ip: String::new(),
            client_asserted_ip: String::new(),
            user_agent: String::new(),
        }
    }
}

/// Appends an entry to the document's audit trail (the document must be saved after).
pub(crate) fn log(
    cx: &mut Cx,
    doc: &mut Document,
    actor: &Actor,
    action: &str,
    detail: impl Into<String>,
    event: Option<(String, String)>,
) {
    let at = cx.now();
    doc.log_seq += 1;
    let entry = LogEntry {
        at_ms: at,
        action: action.into(),
        actor_type: actor.kind.into(),
        actor_id: actor.id.clone(),
        actor_name: actor.name.clone(),
        detail: detail.into(),
        event,
        ip: actor.ip.clone(),
        user_agent: actor.user_agent.clone(),
        client_asserted_ip: actor.client_asserted_ip.clone(),
    };
    append(cx, &doc.id, doc.log_seq, entry);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_sorts_members_and_escapes_like_jcs() {
        let v =
            json!({"b": "\u{7f}é\u{1f}\n\"\\/", "a": [null, true, 12], "A": {"z": 1, "y": "x"}});
        let mut out = Vec::new();
        canonical(&v, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"A\":{\"y\":\"x\",\"z\":1},\"a\":[null,true,12],\"b\":\"\u{7f}é\\u001f\\n\\\"\\\\/\"}"
        );
    }

    #[test]
    fn utf16_order_differs_from_utf8_order_where_jcs_says() {
        // U+1F600 (surrogates 0xD83D 0xDE00) sorts before U+FF61 in UTF-16, after it in
        // UTF-8 (F0.. > EF..).
        let v = json!({"\u{1F600}": 1, "\u{FF61}": 2});
        let mut out = Vec::new();
        canonical(&v, &mut out);
        let s = String::from_utf8(out).unwrap();
        assert!(
            s.find('\u{1F600}').unwrap() < s.find('\u{FF61}').unwrap(),
            "{s}"
        );
    }

    #[test]
    fn an_asserted_address_is_stored_beside_and_old_entries_keep_their_form() {
        let mut e = LogEntry {
            at_ms: 1,
            action: "sent".into(),
            actor_type: "user".into(),
            actor_id: "u".into(),
            actor_name: "U".into(),
            detail: String::new(),
            event: None,
            ip: "10.0.0.1".into(),
            user_agent: "ua".into(),
            client_asserted_ip: String::new(),
        };
        let plain = Chained {
            entry: e.clone(),
            prev_hash: "p".into(),
            hash: hash_of(&e, "p"),
        };
        let bytes = encode(&plain);
        // Without an asserted address: the layout and the hashed members of before.
        assert_eq!(bytes[0], CHAINED);
        assert_eq!(decode(&bytes), plain);
        let mut members: Vec<String> = entry_json(&e, "p")
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        members.sort();
        assert_eq!(
            members,
            [
                "action",
                "actor",
                "at",
                "detail",
                "event",
                "event_id",
                "ip",
                "prev_hash",
                "user_agent"
            ]
        );
        e.client_asserted_ip = "1.2.3.4".into();
        let with = Chained {
            entry: e.clone(),
            prev_hash: "p".into(),
            hash: hash_of(&e, "p"),
        };
        let bytes = encode(&with);
        assert_eq!(bytes[0], CHAINED_EXT);
        assert_eq!(decode(&bytes), with);
        assert_eq!(entry_json(&e, "p")["client_asserted_ip"], "1.2.3.4");
        assert_eq!(entry_json(&e, "p")["ip"], "10.0.0.1");
        assert_ne!(with.hash, plain.hash);
    }
}
