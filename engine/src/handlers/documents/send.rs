//! Sending a draft and what follows it out: send, seal, send to chosen recipients,
//! forward (or transfer signing rights), and revisions.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult, Fields, json, no_content};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::access::writable;
use crate::domain::auth::Principal;
use crate::domain::document::{Document, Sender, store_doc};
use crate::domain::document_states::{Move, may};
use crate::domain::sending::{self, ForwardTo, Forwarded, assign_links, send_batch, start_send};
use crate::domain::trail;
use crate::handlers::documents::input::recipient_ids;
use crate::handlers::shapes::{self, DetailOptions, detail_json, recipient_json};
use serde_json::{Value, json};

/// The sender named by `sender_id` or `sender_email`, or the document's owner
/// (`sending::sender`); plus the device (`User-Agent`) and the address the request came
/// from (never the client's own `CLIENT_IP`).
fn resolve_sender(
    cx: &mut Cx,
    pr: &Principal,
    doc: &Document,
    req: &Request,
    f: &Fields,
) -> ApiResult<Sender> {
    let by_id = f.optional_str("sender_id")?.filter(|s| !s.is_empty());
    let by_email = f.optional_str("sender_email")?.filter(|s| !s.is_empty());
    sending::sender(cx, pr, doc, (by_id, by_email), http::client_of(req))
}

/// `POST /v1/documents/{id}/send`.
pub fn send(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    may(&doc, Move::Send)?;
    let f = req.body_fields()?;
    let sender = resolve_sender(cx, pr, &doc, req, &f)?;
    let before = doc.clone();
    let actor = trail::Actor::user(pr, req.client());
    start_send(cx, &mut doc, &actor, sender)?;
    store_doc(cx, Some(&before), &mut doc);
    let o = DetailOptions {
        with_links: true,
        ..shapes::DetailOptions::default()
    };
    Ok(json(200, &detail_json(cx, &doc, o)))
}

/// `POST /v1/documents/{id}/seal`.
pub fn seal(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    may(&doc, Move::Seal)?;
    let f = req.body_fields()?;
    let sender = resolve_sender(cx, pr, &doc, req, &f)?;
    let before = doc.clone();
    let actor = trail::Actor::user(pr, req.client());
    sending::seal(cx, &mut doc, &actor, sender)?;
    store_doc(cx, Some(&before), &mut doc);
    let recipients: Vec<Value> = doc
        .recipients
        .iter()
        .map(|r| recipient_json(cx, &doc.id, r, true))
        .collect();
    Ok(json(200, &json!({ "recipients": recipients })))
}

/// `POST /v1/documents/{id}/recipients/send` (body `recipient_ids`).
pub fn send_to_recipients(
    cx: &mut Cx,
    pr: &Principal,
    req: &Request,
    id: &str,
) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    let f = req.body_fields()?;
    let ids = recipient_ids(&f)?;
    may(&doc, Move::SendToRecipients)?;
    if doc.flags.is_signing_order {
        return Err(bad(
            "signing_order",
            "with a signing order, recipients are sent the document in turn; they cannot be chosen",
        ));
    }
    sending::check_batch(&doc, &ids)?;
    let before = doc.clone();
    assign_links(cx, &mut doc);
    send_batch(
        cx,
        &mut doc,
        &ids,
        &trail::Actor::user(pr, req.client()),
        "recipients_sent",
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(no_content())
}

/// `POST /v1/documents/{id}/forward` (body `email`, `mobile`, `transfer`,
/// `recipient_id`, `first_name`, `last_name`, `message`).
pub fn forward(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    let f = req.body_fields()?;
    let to = forward_to(&f)?;
    let transfer = f.optional_bool("transfer")?.unwrap_or(false);
    may(&doc, Move::Forward)?;
    let rid = if transfer {
        may(&doc, Move::TransferRights)?;
        Some(f.required_str("recipient_id")?)
    } else {
        None
    };
    let from = sending::check_forward(&doc, &to, rid.as_deref())?;
    let new = Forwarded {
        to,
        first_name: f.optional_str("first_name")?.unwrap_or_default(),
        last_name: f.optional_str("last_name")?.unwrap_or_default(),
        message: f.optional_str("message")?.unwrap_or_default(),
    };
    let before = doc.clone();
    let actor = trail::Actor::user(pr, req.client());
    sending::forward(cx, &mut doc, &actor, new, from);
    store_doc(cx, Some(&before), &mut doc);
    Ok(no_content())
}

/// A forward's `email` and `mobile`: valid, and at least one.
fn forward_to(f: &Fields) -> ApiResult<ForwardTo> {
    let (email, mobile) = (f.optional_str("email")?, f.optional_str("mobile")?);
    ForwardTo::checked(email, mobile, "whom to forward to")
}

/// `POST /v1/documents/{id}/revisions` (body `send_document`, `message`).
pub fn revise(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    let f = req.body_fields()?;
    let message = match f.map.get("message") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(bad("invalid_field", "`message` must be a string")),
    };
    let send = f.optional_bool("send_document")?.unwrap_or(false);
    may(&doc, Move::Revise)?;
    let before = doc.clone();
    let actor = trail::Actor::user(pr, req.client());
    sending::revise(cx, &mut doc, &actor, message, send)?;
    store_doc(cx, Some(&before), &mut doc);
    Ok(no_content())
}

fn bad(code: &'static str, text: impl Into<String>) -> ApiError {
    ApiError::bad_request(code, text)
}
