//! What a recipient does: view, review, comment, sign, approve, reject, download,
//! print. The statuses the acts move, and the events they emit, are the recipient
//! state machine's (`domain::recipient_states`) and `domain::recipient_acts`'.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, client_of, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::document::{Document, store_doc};
use crate::domain::recipient_states::{self as states, Move};
use crate::domain::trail::Actor;
use crate::domain::{hand_over, identity, recipient_acts, signatures};
use crate::handlers::recipients::sign_body;
use crate::handlers::shapes::comment_json;
use serde_json::json;

/// The actor behind a link.
/// The recorded address is the peer's; a recipient's `CLIENT_IP` is not recorded at
/// all (a member's is, beside the peer's: `http::asserted_ip`).
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
        let input = sign_body::read(&f);
        given.signature = Some(signatures::given(cx, &doc, r, input, passes)?);
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
    let actor = recipient_actor(&doc, i, req);
    let c = recipient_acts::comment(cx, &mut doc, i, &actor, text);
    Ok(json(200, &comment_json(&c)))
}

pub(super) fn download(
    cx: &mut Cx,
    req: &Request,
    mut doc: Document,
    i: usize,
) -> ApiResult<Response> {
    let actor = recipient_actor(&doc, i, req);
    let body = recipient_acts::download(cx, &mut doc, i, &actor)?;
    Ok(body.response(200, vec![("content-type".into(), "application/pdf".into())]))
}

/// `POST .../transfer` (`{first_name, last_name, email, mobile, message}`): the signer
/// hands their part to someone else, when the sender allows it (`domain::hand_over`).
pub fn transfer(cx: &mut Cx, req: &Request, mut doc: Document, i: usize) -> ApiResult<Response> {
    let f = req.body_fields()?;
    f.only(&["first_name", "last_name", "email", "mobile", "message"])?;
    let text = |k: &str| -> ApiResult<String> { Ok(f.optional_str(k)?.unwrap_or_default()) };
    let n = hand_over::NewSigner {
        first_name: text("first_name")?,
        last_name: text("last_name")?,
        email: text("email")?,
        mobile: text("mobile")?,
        message: text("message")?,
    };
    let before = doc.clone();
    let actor = recipient_actor(&doc, i, req);
    hand_over::hand_over(cx, &mut doc, i, &actor, n)?;
    store_doc(cx, Some(&before), &mut doc);
    Ok(json(
        200,
        &json!({"status": doc.status.as_str(), "recipient_status": doc.recipients[i].status.as_str()}),
    ))
}
