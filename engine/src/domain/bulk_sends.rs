//! Bulk send (issue 51 item 3): one template sent to many people, one document per row
//! of a CSV file or of JSON `rows`.
//!
//! A batch (`bulk/{id}`) keeps its counters and the next row to do; each row
//! (`bulkrow/{id}/{n}`) is waiting (its columns), sent (its document) or failed (why).
//! The rows are sent by `bulk.send` jobs, [`ROWS_PER_JOB`] at a time, each job one
//! transaction: its documents, its rows' outcomes and the batch's counters commit
//! together, so a host that stops mid-batch goes on after a restart from the first row
//! not done, and no row makes two documents. A row that fails does not stop the rest.
//! An `Idempotency-Key` (per user, `bulkkey/`) makes a repeated request answer the same
//! batch.
//!
//! Columns: `{role}.first_name`, `{role}.last_name`, `{role}.email`, `{role}.mobile` for
//! each role of the template (the plain names for a template with one role or none),
//! and the template's custom fields by name. Rows are numbered from 1, the header not
//! counted.

use crate::base::cx::Cx;
use crate::base::http::{ApiError, ApiResult};
use crate::base::job_kinds::BULK_SEND;
use crate::base::keyspace::{BULK, BULK_ERR, BULK_KEY, BULK_ROW};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records;
use crate::base::util::{self, is_id, new_id, sha256_hex};
use crate::domain::access;
use crate::domain::auth::Principal;
use crate::domain::document::{Document, store_doc};
use crate::domain::document_states::{self, Move as DocMove};
use crate::domain::sending;
use crate::domain::templates::{self, Template, TemplateStatus};
use crate::domain::trail::Actor;
use crate::domain::uploads::Given;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The most rows a batch may have.
pub const MAX_ROWS: usize = 10_000;
/// Rows one job sends.
pub const ROWS_PER_JOB: u32 = 25;
/// The members of a person a column may name.
const PERSON: [&str; 4] = ["first_name", "last_name", "email", "mobile"];

/// A row's columns: `{column: value}`.
pub type Columns = Map<String, Value>;

/// A batch (`bulk/{id}`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Batch {
    pub id: String,
    pub entity_id: String,
    pub user_id: String,
    pub template_id: String,
    pub rows_total: u32,
    pub rows_done: u32,
    pub rows_failed: u32,
    /// The first row (from 1) no job has done yet; past `rows_total` when finished.
    pub next_row: u32,
    pub created_ms: u64,
    pub finished_ms: Option<u64>,
}

/// A row of a batch (`bulkrow/{id}/{n}`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub enum Row {
    /// Not done yet: its columns as JSON (`{column: value}`).
    Waiting(String),
    /// Sent: its document.
    Sent(String),
    /// Failed: why.
    Failed(String),
}

fn batch_key(id: &str) -> Vec<u8> {
    util::key(&[BULK, id])
}
fn row_key(id: &str, n: u32) -> Vec<u8> {
    util::key(&[BULK_ROW, id, &format!("{n:08}")])
}
fn idem_key(user: &str, key: &str) -> Vec<u8> {
    util::key(&[BULK_KEY, user, &sha256_hex(key.as_bytes())])
}

fn bad(text: String) -> ApiError {
    ApiError::bad_request("invalid_field", text)
}

/// The rows of a CSV file given as `given`: the header names the columns.
pub fn csv_rows(cx: &mut Cx, given: Given) -> ApiResult<Vec<Map<String, Value>>> {
    let bytes = match given {
        Given::Bytes(b) => b,
        Given::Staged { blob, .. } => cx.p.get_blob(&blob.id).ok_or_else(|| {
            ApiError::bad_request("invalid_file", "the CSV file could not be read")
        })?,
    };
    let mut rows =
        crate::base::csv_rows::rows(&bytes).map_err(|e| bad(format!("the CSV file: {e}")))?;
    if rows.is_empty() {
        return Err(bad(
            "the CSV file is empty: it needs a header and a row".into()
        ));
    }
    let header: Vec<String> = rows
        .remove(0)
        .into_iter()
        .map(|h| h.trim().to_string())
        .collect();
    Ok(rows
        .into_iter()
        .map(|r| {
            header
                .iter()
                .zip(r)
                .filter(|(h, _)| !h.is_empty())
                .map(|(h, v)| (h.clone(), Value::String(v.trim().to_string())))
                .collect()
        })
        .collect())
}

/// The person member (and role) column `column` names for template `t`, if any.
fn person_column<'a>(t: &'a Template, column: &'a str) -> Option<(Option<&'a str>, &'a str)> {
    let plain = t.roles.len() <= 1;
    if let Some(m) = PERSON.iter().find(|m| column.eq_ignore_ascii_case(m)) {
        return plain.then(|| (t.roles.first().map(|r| r.role_name.as_str()), *m));
    }
    let (role, member) = column.rsplit_once('.')?;
    let member = PERSON.iter().find(|m| member.eq_ignore_ascii_case(m))?;
    let role = t
        .roles
        .iter()
        .find(|r| r.role_name.eq_ignore_ascii_case(role))?;
    Some((Some(role.role_name.as_str()), member))
}

/// 400 unless every column names a person member of one of `t`'s roles or one of its
/// custom fields.
fn check_columns(t: &Template, rows: &[Map<String, Value>]) -> ApiResult<()> {
    for (i, row) in rows.iter().enumerate() {
        for column in row.keys() {
            let field = t.fields.iter().any(|f| f.name == *column);
            if person_column(t, column).is_none() && !field {
                return Err(ApiError::new(
                    422,
                    "invalid_field",
                    format!(
                        "row {}: the column {column:?} names no role's first_name, last_name, email or mobile and no field of the template",
                        i + 1
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The template a bulk send uses: the caller's entity's (404), ready (409).
pub fn template(cx: &mut Cx, pr: &Principal, template_id: &str) -> ApiResult<Template> {
    let t = templates::find(cx, pr, template_id)?;
    if t.status != TemplateStatus::Ready {
        return Err(ApiError::new(
            409,
            "template_not_ready",
            format!(
                "the template is {}; send it once it is ready",
                t.status.as_str()
            ),
        ));
    }
    Ok(t)
}

/// The template of a bulk send of `rows`, when they may be sent: 1 to [`MAX_ROWS`] of
/// them (400), each column one the template knows (422).
pub fn checked(
    cx: &mut Cx,
    pr: &Principal,
    template_id: &str,
    rows: &[Map<String, Value>],
) -> ApiResult<Template> {
    let t = template(cx, pr, template_id)?;
    if rows.is_empty() || rows.len() > MAX_ROWS {
        return Err(bad(format!(
            "a bulk send takes 1 to {MAX_ROWS} rows; this has {}",
            rows.len()
        )));
    }
    check_columns(&t, rows)?;
    Ok(t)
}

/// Starts a batch of `rows` from template `template_id` as `pr` (any member who may use
/// the template); with `idempotency_key`, a batch the same user started with that key
/// answers instead. Answers the batch and whether it is new.
pub fn start(
    cx: &mut Cx,
    pr: &Principal,
    template_id: &str,
    rows: Vec<Map<String, Value>>,
    idempotency_key: Option<&str>,
) -> ApiResult<(Batch, bool)> {
    if let Some(k) = idempotency_key
        && let Some(id) = cx.load::<String>(&idem_key(&pr.user.id, k))
        && let Some(b) = cx.load::<Batch>(&batch_key(&id))
    {
        return Ok((b, false));
    }
    let t = checked(cx, pr, template_id, &rows)?;
    let now = cx.now();
    let b = Batch {
        id: new_id(cx),
        entity_id: pr.entity.id.clone(),
        user_id: pr.user.id.clone(),
        template_id: t.id,
        rows_total: rows.len() as u32,
        rows_done: 0,
        rows_failed: 0,
        next_row: 1,
        created_ms: now,
        finished_ms: None,
    };
    for (i, row) in rows.into_iter().enumerate() {
        let text = Value::Object(row).to_string();
        cx.save(&row_key(&b.id, i as u32 + 1), &Row::Waiting(text));
    }
    cx.save(&batch_key(&b.id), &b);
    if let Some(k) = idempotency_key {
        cx.save(&idem_key(&pr.user.id, k), &b.id);
    }
    cx.schedule_at(BULK_SEND, b.id.as_bytes().to_vec(), now);
    Ok((b, true))
}

/// Batch `id` as `pr` may read it (who started it, an admin, or a manager of their
/// team); 404 otherwise.
pub fn find(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Batch> {
    let not_found = || ApiError::not_found("bulk_send_not_found", format!("no bulk send {id}"));
    let b = is_id(id)
        .then(|| cx.load::<Batch>(&batch_key(id)))
        .flatten()
        .filter(|b| b.entity_id == pr.entity.id)
        .ok_or_else(not_found)?;
    if !access::owner_rule(cx, pr, &b.entity_id, &b.user_id) {
        return Err(not_found());
    }
    Ok(b)
}

/// The entries of `family` for batch `b`, in row order, each with its row number.
fn by_row<T: serde::de::DeserializeOwned>(cx: &mut Cx, family: &str, b: &Batch) -> Vec<(u32, T)> {
    let (start, end) = records::prefix_range(&format!("{family}/{}/", b.id));
    cx.p.scan(&start, &end, MAX_ROWS as u32 + 1, false)
        .into_iter()
        .filter_map(|(k, v)| {
            let n = String::from_utf8_lossy(&k)
                .rsplit('/')
                .next()?
                .parse()
                .ok()?;
            Some((n, records::decode::<T>(&v)))
        })
        .collect()
}

/// The rows of batch `b` that failed, and why (`bulkerr/`: a few keys to read while
/// the batch runs, which a progress read does often).
pub fn errors(cx: &mut Cx, b: &Batch) -> Vec<(u32, String)> {
    by_row(cx, BULK_ERR, b)
}

/// The documents of batch `b`, in row order, once it is done (reading every row while
/// jobs write them would keep a progress read conflicting with them); empty before.
pub fn documents(cx: &mut Cx, b: &Batch) -> Vec<String> {
    if b.finished_ms.is_none() {
        return Vec::new();
    }
    by_row::<Row>(cx, BULK_ROW, b)
        .into_iter()
        .filter_map(|(_, r)| match r {
            Row::Sent(doc) => Some(doc),
            _ => None,
        })
        .collect()
}

/// The next rows of batch `id` a job sends, with the batch: the waiting rows from its
/// `next_row`, at most [`ROWS_PER_JOB`]. `None` when the batch is gone or finished.
pub fn next_rows(cx: &mut Cx, id: &str) -> Option<(Batch, Vec<(u32, Columns)>)> {
    let b = cx
        .load::<Batch>(&batch_key(id))
        .filter(|b| b.finished_ms.is_none())?;
    let last = b.rows_total.min(b.next_row + ROWS_PER_JOB - 1);
    let mut out = Vec::new();
    for n in b.next_row..=last {
        if let Some(Row::Waiting(text)) = cx.load::<Row>(&row_key(&b.id, n)) {
            let row = serde_json::from_str::<Map<String, Value>>(&text).unwrap_or_default();
            out.push((n, row));
        }
    }
    Some((b, out))
}

/// What the batch's rows came to: each row's outcome is kept, the counters move on, and
/// another job is scheduled while rows are left (else the batch is finished).
pub fn record(cx: &mut Cx, mut b: Batch, outcomes: Vec<(u32, Result<String, String>)>) {
    for (n, outcome) in outcomes {
        let row = match outcome {
            Ok(doc) => {
                b.rows_done += 1;
                Row::Sent(doc)
            }
            Err(why) => {
                b.rows_failed += 1;
                cx.save(&util::key(&[BULK_ERR, &b.id, &format!("{n:08}")]), &why);
                Row::Failed(why)
            }
        };
        cx.save(&row_key(&b.id, n), &row);
    }
    b.next_row = b.rows_total.min(b.next_row + ROWS_PER_JOB - 1) + 1;
    let now = cx.now();
    if b.next_row > b.rows_total {
        b.finished_ms = Some(now);
    } else {
        cx.schedule_at(BULK_SEND, b.id.as_bytes().to_vec(), now);
    }
    cx.save(&batch_key(&b.id), &b);
}

/// A row's value of `column` as text (a number as written).
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The create body (`POST /v1/documents`) of a row: the template, a recipient for each
/// of its roles (or one signer for a template without roles), the custom fields the row
/// fills, and a name that tells the documents apart; `Err` says why the row cannot be.
pub fn create_body(t: &Template, row: &Map<String, Value>) -> Result<Value, String> {
    let roles: Vec<Option<&str>> = if t.roles.is_empty() {
        vec![None]
    } else {
        t.roles.iter().map(|r| Some(r.role_name.as_str())).collect()
    };
    let mut recipients = Vec::new();
    for role in roles {
        let mut r = Map::new();
        for (column, v) in row {
            if let Some((of, member)) = person_column(t, column)
                && of == role
                && !text(v).is_empty()
            {
                r.insert(member.into(), text(v).into());
            }
        }
        if !r.contains_key("email") && !r.contains_key("mobile") {
            let who = role.map_or(String::new(), |r| format!(" for the role {r:?}"));
            return Err(format!("no email or mobile{who}"));
        }
        if let Some(role) = role {
            r.insert("role_name".into(), role.into());
        }
        recipients.push(Value::Object(r));
    }
    let fields: Vec<Value> = t
        .fields
        .iter()
        .filter_map(|f| {
            row.get(&f.name)
                .map(|v| json!({"name": f.name, "value": text(v)}))
        })
        .collect();
    let first = &recipients[0];
    let who = [&first["first_name"], &first["last_name"]]
        .iter()
        .filter_map(|v| v.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let who = if who.is_empty() {
        text(&first["email"])
    } else {
        who
    };
    let imports = t.is_word && !fields.is_empty();
    Ok(json!({
        "template_id": t.id,
        "name": format!("{} – {who}", t.name),
        "recipients": recipients,
        "custom_fields": fields,
        "is_automatic_sending": imports,
    }))
}

/// Sends a row's new draft `doc` as its owner; its id, or why it stays a draft.
pub fn send_draft(cx: &mut Cx, mut doc: Document, actor: &Actor) -> Result<String, String> {
    let before = doc.clone();
    let sender = doc.sender.clone();
    let sent = document_states::may(&doc, DocMove::Send)
        .and_then(|()| sending::start_send(cx, &mut doc, actor, sender));
    match sent {
        Ok(()) => {
            store_doc(cx, Some(&before), &mut doc);
            Ok(doc.id)
        }
        Err(e) => Err(format!(
            "the document {} was made but not sent: {}",
            before.id, e.description
        )),
    }
}
