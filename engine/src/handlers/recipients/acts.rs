//! What a recipient does: view, review, comment, sign, approve, reject, download,
//! print. The statuses the acts move, and the events they emit, are the recipient
//! state machine's (`domain::recipient_states`) and `domain::recipient_acts`'.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{iso8601, new_id};
use crate::domain::document::{Comment, Document, comment_key, store_doc};
use crate::domain::downloads::current_pdf;
use crate::domain::events::{emit_and_log, event_recipient};
use crate::domain::recipient_states::{self as states, Move};
use crate::domain::trail::{Actor, client_of};
use crate::domain::{evidence, identity, recipient_acts, signatures};
use crate::handlers::shapes::comment_json;
use serde_json::json;

/// The actor behind a link.
/// The recorded address is the peer's; a recipient's `CLIENT_IP` is not recorded at
/// all (a member's is, beside the peer's: `trail::asserted_ip`).
fn recipient_actor(doc: &Document, i: usize, req: &Request) -> Actor {
    let r = &doc.recipients[i];
    let (user_agent, ip) = client_of(req);
    Actor {
        kind: "recipient",
        id: r.id.clone(),
        name: r.fullname(),
        ip,
        client_asserted_ip: String::new(),
        user_agent,
    }
}

pub(super) fn act(
    cx: &mut Cx,
    req: &Request,
    doc: Document,
    i: usize,
    what: Move,
) -> ApiResult<Response> {
    act_verified(cx, req, doc, i, what, &[])
}

/// An act (view, review, sign, approve, reject, print), with the identity checks the
/// request passed (recorded with a signature): the recipient state machine says whether
/// it may happen, `recipient_acts::act` makes it.
pub(super) fn act_verified(
    cx: &mut Cx,
    req: &Request,
    mut doc: Document,
    i: usize,
    what: Move,
    passes: &[identity::Pass],
) -> ApiResult<Response> {
    let f = req.body_fields()?;
    if f.has("signing_method") || f.has("verified_name") {
        return Err(http::ApiError::bad_request(
            "unknown_field",
            "`signing_method` and `verified_name` are not given by the signer: they come from the identity checks passed",
        ));
    }
    states::may(&doc, i, what)?;
    let mut given = recipient_acts::Given::default();
    if what == Move::Sign {
        let r = &doc.recipients[i];
        given.signature = Some(signatures::read_sign_body(cx, &doc, r, &f, passes)?);
    }
    if what == Move::Reject {
        given.reason = f.optional_str("reason")?.filter(|s| !s.trim().is_empty());
    }
    let before = doc.clone();
    let actor = recipient_actor(&doc, i, req);
    recipient_acts::act(cx, &mut doc, i, &actor, what, given);
    store_doc(cx, Some(&before), &mut doc);
    Ok(json(
        200,
        &json!({"status": doc.status.as_str(), "recipient_status": doc.recipients[i].status.as_str()}),
    ))
}

pub(super) fn comment(
    cx: &mut Cx,
    req: &Request,
    mut doc: Document,
    i: usize,
) -> ApiResult<Response> {
    // `text` is at most 4000 characters (`base::limits`): 400 `invalid_field` beyond.
    let f = req.body_fields()?;
    let text = f.required_str("text")?;
    let r = doc.recipients[i].clone();
    let c = Comment {
        id: new_id(cx),
        text,
        author_type: "recipient".into(),
        author_id: r.id.clone(),
        author_name: r.fullname(),
        author_email: r.email.clone(),
        created_ms: cx.now(),
        internal: false,
        suggestion: false,
        resolved: false,
    };
    cx.save(&comment_key(&doc.id, c.created_ms, &c.id), &c);
    let before = doc.clone();
    let actor = recipient_actor(&doc, i, req);
    let meta = json!({"comment_id": c.id, "created_by": c.author_name, "created_at": iso8601(c.created_ms), "text": c.text});
    let extra = json!({"event_meta": meta, "recipient": event_recipient(&r)});
    emit_and_log(
        cx,
        &mut doc,
        &actor,
        "comment.created",
        "commented",
        "comment by the recipient",
        extra.clone(),
    );
    emit_and_log(
        cx,
        &mut doc,
        &actor,
        "document.commented",
        "commented",
        "comment by the recipient",
        extra,
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(json(200, &comment_json(&c)))
}

pub(super) fn download(
    cx: &mut Cx,
    req: &Request,
    mut doc: Document,
    i: usize,
) -> ApiResult<Response> {
    if evidence::sealing(&doc) {
        return Err(evidence::sealing_error());
    }
    let (blob, _) = current_pdf(&doc)
        .ok_or_else(|| http::ApiError::not_found("pdf_not_ready", "the document has no PDF yet"))?;
    let bytes = cx.p.get_blob(&blob).ok_or_else(|| {
        http::ApiError::not_found("pdf_not_ready", "the document's PDF is not stored any more")
    })?;
    let before = doc.clone();
    let actor = recipient_actor(&doc, i, req);
    let base = cx.settings().base_url.trim_end_matches('/').to_string();
    let r = &doc.recipients[i];
    let extra = json!({
        "document": {"id": doc.id, "name": doc.name, "status": doc.status.as_str(),
                     "download_url": format!("{base}/v1/documents/{}/download", doc.id)},
        "recipient": {"fullname": r.fullname(), "email": r.email, "role": r.role.as_str()},
    });
    emit_and_log(
        cx,
        &mut doc,
        &actor,
        "document.downloaded",
        "downloaded",
        "PDF downloaded by the recipient",
        extra,
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(Response {
        status: 200,
        headers: vec![("content-type".into(), "application/pdf".into())],
        body: bytes,
    })
}
