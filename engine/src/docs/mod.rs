//! Documents (spec §2–§4, §8): create, read, list, update, seal, send, and everything
//! after sending; with uploads, templates, products and pricing tables.
//!
//! Submodules: [`model`] (records and keys), [`create`], [`read`] (detail, list items,
//! the reads), [`list`], [`lifecycle`] (state changes after create), [`jobs`] (import,
//! render, schedule, expire, erase), [`pricing`], [`uploads`], [`templates`],
//! [`products`], [`notify`] (mail texts), [`blobs`] (blob references).

pub mod blobs;
pub mod create;
pub mod custom_data;
pub mod download;
pub mod evidence;
pub mod fields;
pub mod jobs;
pub mod lifecycle;
pub mod list;
pub mod model;
pub mod notify;
pub mod pages;
pub mod pricing;
pub mod products;
pub mod read;
pub mod roster;
pub mod signatures;
pub mod templates;
pub mod trail;
pub mod uploads;

use crate::auth::{Principal, authenticate};
use crate::http::{ApiError, ApiResult};
use crate::model::{Membership, Role as UserRole, membership_key};
#[allow(unused_imports)]
use crate::prelude::*;
use crate::{Cx, Request, Response};
use model::{Document, LogEntry, doc_key, index_keys};
use serde_json::{Value, json};

/// `/v1/documents/...`. The router has already answered 404 and 405 from its route
/// table, so only the table's methods arrive here.
pub fn route(cx: &mut Cx, req: &Request, rest: &[&str]) -> ApiResult<Response> {
    let m = req.method.as_str();
    let pr = authenticate(cx, req)?;
    match (m, rest) {
        ("GET", []) => list::list(cx, &pr, req),
        ("POST", []) => create::create(cx, &pr, req),
        ("GET", ["latest"]) => read::latest(cx, &pr, req),
        ("GET", ["external", ext]) => read::external(cx, &pr, req, ext),
        ("GET", [id]) => read::get(cx, &pr, req, id),
        ("PUT", [id]) => lifecycle::update(cx, &pr, req, id),
        ("DELETE", [id]) => lifecycle::delete(cx, &pr, id),
        ("GET", [id, "status"]) => read::status(cx, &pr, id),
        ("GET", [id, "recipients"]) => read::recipients(cx, &pr, id),
        ("GET", [id, "pages"]) => read::pages(cx, &pr, id),
        ("GET", [id, "download"]) => download::download(cx, &pr, req, id),
        ("GET", [id, "log"]) => read::log(cx, &pr, id),
        ("GET", [id, "attachments"]) => read::attachments(cx, &pr, id),
        (_, [id, "custom-data", rest @ ..]) => custom_data::document_route(cx, &pr, req, id, rest),
        ("GET", [id, "comments"]) => read::comments(cx, &pr, id),
        ("POST", [id, "comments"]) => lifecycle::comment(cx, &pr, req, id),
        ("POST", [id, "comments", cid, "resolve"]) => lifecycle::resolve_comment(cx, &pr, id, cid),
        ("GET", [id, "pricing-tables"]) => read::pricing_tables(cx, &pr, id),
        ("PUT", [id, "pricing-tables"]) => lifecycle::put_pricing_tables(cx, &pr, req, id),
        ("GET", [id, "revisions"]) => read::revisions(cx, &pr, id),
        (_, [id, "fields"]) => fields::route(cx, &pr, req, id),
        ("PUT", [id, "recipients", rid]) => roster::update_recipient(cx, &pr, req, id, rid),
        ("DELETE", [id, "recipients", rid]) => roster::remove_recipient(cx, &pr, req, id, rid),
        ("POST", [id, "revisions"]) => lifecycle::revise(cx, &pr, req, id),
        ("POST", [id, "seal"]) => lifecycle::seal(cx, &pr, req, id),
        ("POST", [id, "send"]) => lifecycle::send(cx, &pr, req, id),
        ("POST", [id, "recipients", "send"]) => lifecycle::send_to_recipients(cx, &pr, req, id),
        ("POST", [id, "forward"]) => lifecycle::forward(cx, &pr, req, id),
        ("POST", [id, "expiration"]) => lifecycle::expiration(cx, &pr, req, id),
        ("POST", [id, "manually-sign"]) => lifecycle::manually_sign(cx, &pr, req, id),
        ("POST", [id, "lost"]) => lifecycle::lost(cx, &pr, id),
        ("POST", [id, "reminders"]) => lifecycle::reminders(cx, &pr, req, id),
        _ => Err(ApiError::not_found(
            "not_found",
            format!("no such endpoint: {} {}", req.method, req.path),
        )),
    }
}

pub fn doc_not_found(id: &str) -> ApiError {
    ApiError::not_found("document_not_found", format!("no document {id}"))
}

/// What the caller may do with a document.
pub struct Access {
    pub read: bool,
    pub write: bool,
    /// The owner or an entity admin (permanent delete, manual signing).
    pub owner_or_admin: bool,
}

/// Access rules: members of the document's entity read its non-private documents; the
/// owner, admins, and managers of the owner's team read and change it; private
/// documents are for those three only.
pub fn access(cx: &mut Cx, pr: &Principal, doc: &Document) -> Access {
    if doc.entity_id != pr.entity.id {
        return Access {
            read: false,
            write: false,
            owner_or_admin: false,
        };
    }
    let owner = doc.user_id == pr.user.id;
    let admin = pr.membership.role == UserRole::Admin;
    let manager = pr.membership.role == UserRole::Manager
        && pr.membership.team_id.is_some()
        && cx
            .load::<Membership>(&membership_key(&doc.user_id, &doc.entity_id))
            .is_some_and(|m| m.team_id == pr.membership.team_id);
    let write = owner || admin || manager;
    Access {
        read: write || !doc.flags.is_private,
        write,
        owner_or_admin: owner || admin,
    }
}

/// See [`crate::check_invariants`].
pub fn invariants(cx: &mut Cx) -> Vec<String> {
    use alloc::collections::BTreeSet;
    let mut problems = Vec::new();
    let (start, end) = crate::model::prefix_range("doc/");
    let mut expected = BTreeSet::new();
    for (_, value) in cx.p.scan(&start, &end, u32::MAX, false) {
        let doc: Document = crate::model::decode(&value);
        expected.extend(model::index_keys(&doc));
    }
    let mut actual = BTreeSet::new();
    for prefix in ["dx/", "dext/", "dcli/", "drcp/", "dexp/"] {
        let (start, end) = crate::model::prefix_range(prefix);
        actual.extend(
            cx.p.scan(&start, &end, u32::MAX, false)
                .into_iter()
                .map(|(k, _)| k),
        );
    }
    let text = |k: &Vec<u8>| String::from_utf8_lossy(k).into_owned();
    for k in expected.difference(&actual).take(5) {
        problems.push(format!("index key missing: {}", text(k)));
    }
    for k in actual.difference(&expected).take(5) {
        problems.push(format!("index key without its document: {}", text(k)));
    }
    let (start, end) = crate::model::prefix_range("bref/");
    for (key, _) in cx.p.scan(&start, &end, u32::MAX, false) {
        let key = text(&key);
        let blob = key["bref/".len()..]
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string();
        if cx.p.get_blob(&blob).is_none() {
            problems.push(format!("a reference to a blob that is gone: {key}"));
        }
    }
    problems
}

pub fn load_doc(cx: &mut Cx, id: &str) -> Option<Document> {
    if !crate::util::is_id(id) {
        return None;
    }
    cx.load::<Document>(&doc_key(id))
}

/// The document if the caller may read it; 404 otherwise.
pub fn readable(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Document> {
    let doc = load_doc(cx, id).ok_or_else(|| doc_not_found(id))?;
    if !access(cx, pr, &doc).read {
        return Err(doc_not_found(id));
    }
    Ok(doc)
}

/// The document if the caller may change it; 404 when it may not even read it, 403
/// when it may only read it.
pub fn writable(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Document> {
    let doc = load_doc(cx, id).ok_or_else(|| doc_not_found(id))?;
    let a = access(cx, pr, &doc);
    if !a.read {
        return Err(doc_not_found(id));
    }
    if !a.write {
        return Err(ApiError::forbidden(
            "access_denied",
            "only the document's owner, an admin or the owner's team manager may change it",
        ));
    }
    Ok(doc)
}

/// Writes `doc` and brings its index keys from `before`'s to its own.
pub fn store_doc(cx: &mut Cx, before: Option<&Document>, doc: &mut Document) {
    doc.updated_ms = cx.now();
    let new_keys = index_keys(doc);
    if let Some(before) = before {
        for k in index_keys(before) {
            if !new_keys.contains(&k) {
                cx.p.delete(&k);
            }
        }
        let old_keys = index_keys(before);
        for k in &new_keys {
            if !old_keys.contains(k) {
                cx.p.put(k, b"");
            }
        }
    } else {
        for k in &new_keys {
            cx.p.put(k, b"");
        }
    }
    cx.save(&doc_key(&doc.id), doc);
}

/// Removes a document and its index keys (its other data is erased by a job).
pub fn remove_doc(cx: &mut Cx, doc: &Document) {
    for k in index_keys(doc) {
        cx.p.delete(&k);
    }
    cx.p.delete(&doc_key(&doc.id));
    cx.p.delete(&model::unique_id_key(doc.unique_id));
}

/// Who did something, for the audit trail.
#[derive(Clone)]
pub struct Actor {
    pub kind: &'static str,
    pub id: String,
    pub name: String,
    pub ip: String,
    pub user_agent: String,
}

/// The client's device and address: (`User-Agent`, `CLIENT_IP` when given, else the
/// peer's address).
pub fn client_of(req: &Request) -> (String, String) {
    (
        req.header("user-agent").unwrap_or("").to_string(),
        req.header("client_ip")
            .or(req.header("client-ip"))
            .unwrap_or(&req.remote_addr)
            .to_string(),
    )
}

impl Actor {
    pub fn user(pr: &Principal, req: Option<&Request>) -> Actor {
        let (user_agent, ip) = req.map(client_of).unwrap_or_default();
        Actor {
            kind: "user",
            id: pr.user.id.clone(),
            name: crate::docs::read::user_name(&pr.user),
            ip,
            user_agent,
        }
    }

    pub fn system() -> Actor {
        Actor {
            kind: "system",
            id: String::new(),
            name: "esign".into(),
            ip: String::new(),
            user_agent: String::new(),
        }
    }
}

/// Appends an entry to the document's audit trail (the document must be saved after).
pub fn log(
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
    };
    trail::append(cx, &doc.id, doc.log_seq, entry);
}

/// The document members of an event payload.
pub fn event_document(doc: &Document) -> Value {
    json!({
        "id": doc.id,
        "name": doc.name,
        "status": doc.status.as_str(),
        "value": crate::util::money(doc.value),
        "external_id": doc.external_id,
        "external_client_id": doc.external_client_id,
        "send_date": doc.send_ms.map(crate::util::iso8601),
        "sign_date": doc.sign_ms.map(crate::util::iso8601),
        "expiration_date": crate::util::iso8601(doc.expiration_ms),
        "user_id": doc.user_id,
        "sender_name": doc.sender.name,
        "sender_email": doc.sender.email,
    })
}

/// The common members of an event's payload (spec §6): `event`, `event_type`,
/// `event_action`, the document, the entity and the custom fields.
pub fn event_payload(cx: &mut Cx, doc: &Document, kind: &str) -> Value {
    let (event_type, event_action) = kind.split_once('.').unwrap_or((kind, ""));
    let entity_name = cx
        .load::<crate::model::Entity>(&crate::model::entity_key(&doc.entity_id))
        .map(|e| e.name)
        .unwrap_or_default();
    json!({
        "event": kind,
        "event_type": event_type,
        "event_action": event_action,
        "document": event_document(doc),
        "entity": {"id": doc.entity_id, "name": entity_name},
        "custom_fields": doc.custom_fields.iter()
            .map(|f| json!({"name": f.name, "value": f.value}))
            .collect::<Vec<_>>(),
    })
}

/// A recipient as event payloads show it (spec §6).
pub fn event_recipient(r: &model::Recipient) -> Value {
    json!({
        "id": r.id,
        "fullname": r.fullname(),
        "email": r.email,
        "mobile": r.mobile,
        "role": r.role.as_str(),
        "status": r.status.as_str(),
        "order_num": r.order_num.to_string(),
    })
}

/// Records event `kind` (`document.sent`, ...) with the common payload members plus
/// `extra` (its members replace common ones of the same name), queues its webhook
/// deliveries, and logs the change with the event's id. The document must be saved
/// after.
pub fn emit_and_log(
    cx: &mut Cx,
    doc: &mut Document,
    actor: &Actor,
    kind: &str,
    action: &str,
    detail: impl Into<String>,
    extra: Value,
) {
    let mut payload = event_payload(cx, doc, kind);
    if let (Value::Object(p), Value::Object(x)) = (&mut payload, extra) {
        for (k, v) in x {
            p.insert(k, v);
        }
    }
    let id = crate::hooks::emit(cx, kind, &doc.entity_id, &doc.user_id, payload);
    log(cx, doc, actor, action, detail, Some((kind.into(), id)));
}
