//! Bulk send (`domain::bulk_sends`): `POST /v1/templates/{id}/bulk-sends` (a `text/csv`
//! body, a multipart `file`, or JSON `rows`; an `Idempotency-Key` header) answers 202
//! `{id}`; `GET /v1/bulk-sends/{id}` its progress (its documents once done); and the `bulk.send` job, which makes
//! and sends each row's document through the body of a create (`create::parse_new`),
//! which is why it is here.

use crate::base::api::{self, Job, JobOutcome, Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult, Fields, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::iso8601;
use crate::domain::auth::{self, Principal};
use crate::domain::bulk_sends::{self, Batch};
use crate::domain::creation::{self, Created};
use crate::domain::templates::{self, Template};
use crate::domain::trail;
use crate::domain::uploads::Given;
use crate::handlers::documents::create;
use serde_json::{Map, Value, json};

/// The longest `Idempotency-Key`.
const MAX_KEY: usize = 255;
/// The rows a preview shows.
const PREVIEW_ROWS: usize = 10;

fn bad(text: impl Into<String>) -> ApiError {
    http::ApiError::bad_request("invalid_field", text)
}

/// The rows a request gives: a CSV body or file, or JSON `rows` (objects of text or
/// numbers).
fn given_rows(cx: &mut Cx, req: &Request) -> ApiResult<Vec<Map<String, Value>>> {
    if req.content_type() == "text/csv" {
        return bulk_sends::csv_rows(cx, Given::Bytes(req.body.clone()));
    }
    let f = req.body_fields()?;
    f.only(&["rows", "file"])?;
    if let Some(part) = f.files.iter().find(|p| p.name == "file") {
        let given = match &part.staged {
            Some(blob) => Given::Staged {
                blob: blob.clone(),
                head: part.data.clone(),
            },
            None => Given::Bytes(part.data.clone()),
        };
        return bulk_sends::csv_rows(cx, given);
    }
    let Some(rows) = f.map.get("rows") else {
        return Err(http::ApiError::bad_request(
            "missing_field",
            "give the rows as a CSV file (a text/csv body or a multipart `file`) or as JSON `rows`",
        ));
    };
    let rows = rows
        .as_array()
        .ok_or_else(|| bad("`rows` must be an array of objects"))?;
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            json_row(r)
                .ok_or_else(|| bad(format!("`rows[{i}]` must be an object of texts or numbers")))
        })
        .collect()
}

fn json_row(r: &Value) -> Option<Map<String, Value>> {
    let o = r.as_object()?;
    o.values()
        .all(|v| v.is_string() || v.is_number() || v.is_null())
        .then(|| o.clone())
}

/// `POST /v1/templates/{id}/bulk-sends`: 202 `{id}` (the same batch again for a key
/// already used).
pub fn start(cx: &mut Cx, pr: &Principal, req: &Request, template_id: &str) -> ApiResult<Response> {
    // The template first: a request for one that is not there is a 404 whatever its body.
    bulk_sends::template(cx, pr, template_id)?;
    let key = req
        .header("idempotency-key")
        .map(str::trim)
        .filter(|k| !k.is_empty());
    if key.is_some_and(|k| k.len() > MAX_KEY) {
        return Err(bad(format!(
            "`Idempotency-Key` may have at most {MAX_KEY} characters"
        )));
    }
    let rows = given_rows(cx, req)?;
    if req.query_param("preview").as_deref() == Some("true") {
        return preview(cx, pr, template_id, &rows);
    }
    let (b, _) = bulk_sends::start(cx, pr, template_id, rows, key)?;
    Ok(json(202, &json!({ "id": b.id })))
}

/// `?preview=true`: nothing is made; the number of rows and the first
/// [`PREVIEW_ROWS`], each with its recipients or why it would fail, as the job reads it.
fn preview(
    cx: &mut Cx,
    pr: &Principal,
    template_id: &str,
    rows: &[Map<String, Value>],
) -> ApiResult<Response> {
    let t = bulk_sends::checked(cx, pr, template_id, rows)?;
    let first: Vec<Value> = rows
        .iter()
        .take(PREVIEW_ROWS)
        .enumerate()
        .map(|(i, row)| {
            let checked = bulk_sends::create_body(&t, row).and_then(|body| {
                let f = Fields::of_json(body.clone());
                create::parse_new(cx, pr, &f, false).map_err(|e| e.description)?;
                Ok(body)
            });
            match checked {
                Ok(body) => json!({"row": i + 1, "recipients": body["recipients"], "custom_fields": body["custom_fields"]}),
                Err(why) => json!({"row": i + 1, "error": why}),
            }
        })
        .collect();
    Ok(json(200, &json!({"rows_total": rows.len(), "rows": first})))
}

/// `GET /v1/bulk-sends/{id}`: the batch's progress, its errors and its documents.
pub fn get(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let b = bulk_sends::find(cx, pr, id)?;
    let errors: Vec<Value> = bulk_sends::errors(cx, &b)
        .into_iter()
        .map(|(n, reason)| json!({"row": n, "reason": reason}))
        .collect();
    let docs = bulk_sends::documents(cx, &b);
    Ok(json(
        200,
        &json!({
            "id": b.id,
            "template_id": b.template_id,
            "status": if b.finished_ms.is_some() { "done" } else { "running" },
            "rows_total": b.rows_total,
            "rows_done": b.rows_done,
            "rows_failed": b.rows_failed,
            "errors": errors,
            "document_ids": docs,
            "created_at": iso8601(b.created_ms),
            "finished_at": b.finished_ms.map(iso8601),
        }),
    ))
}

/// One row's document, made and sent as `pr`: its id, or why not.
fn send_row(
    cx: &mut Cx,
    pr: &Principal,
    t: &Template,
    row: &Map<String, Value>,
) -> Result<String, String> {
    let f = Fields::of_json(bulk_sends::create_body(t, row)?);
    let new = create::parse_new(cx, pr, &f, false).map_err(|e| e.description)?;
    let actor = trail::Actor::user(pr, http::Client::default());
    match creation::create(cx, new, &actor).map_err(|e| e.description)? {
        Created::Draft(doc) => bulk_sends::send_draft(cx, *doc, &actor),
        // A Word template filled first: sent when its import is back.
        Created::Importing(id) => Ok(id),
        Created::PageLess(e, id) => Err(format!(
            "{} (the document {id} was left as a draft)",
            e.description
        )),
    }
}

/// Job `bulk.send` (payload: the batch id): the next rows, each made and sent or
/// failed, in this job's transaction; the next job is scheduled while rows are left.
pub fn send_job(cx: &mut Cx, job: &Job) -> JobOutcome {
    let id = String::from_utf8_lossy(&job.payload).into_owned();
    let Some((b, rows)) = bulk_sends::next_rows(cx, &id) else {
        return api::JobOutcome::Done;
    };
    let outcomes = match sender(cx, &b) {
        Ok((pr, t)) => rows
            .iter()
            .map(|(n, row)| (*n, send_row(cx, &pr, &t, row)))
            .collect(),
        Err(why) => rows
            .into_iter()
            .map(|(n, _)| (n, Err(why.clone())))
            .collect(),
    };
    bulk_sends::record(cx, b, outcomes);
    api::JobOutcome::Done
}

/// Who sends batch `b` and its template, while they still may.
fn sender(cx: &mut Cx, b: &Batch) -> Result<(Principal, Template), String> {
    let pr = auth::principal(cx, &b.user_id, &b.entity_id, String::new())
        .map_err(|e| format!("the sender can no longer send: {}", e.description))?;
    let t = templates::find(cx, &pr, &b.template_id).map_err(|e| e.description)?;
    Ok((pr, t))
}
