//! A document's recipients after create: `PUT /v1/documents/{id}/recipients/{rid}`
//! corrects one who has not been reached, `DELETE` removes one who has not acted.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult, no_content};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, is_email};
use crate::domain::access::writable;
use crate::domain::auth::Principal;
use crate::domain::document::store_doc;
use crate::domain::recipient_states::{Move, may};
use crate::domain::roster;
use crate::domain::trail::{self, log};

fn bad(code: &'static str, text: impl Into<String>) -> ApiError {
    http::ApiError::bad_request(code, text)
}

/// `PUT /v1/documents/{id}/recipients/{recipient}`: corrects a recipient who has not
/// been reached yet (status added or hardbounced): names, email, mobile.
pub fn update_recipient(
    cx: &mut Cx,
    pr: &Principal,
    req: &Request,
    id: &str,
    rid: &str,
) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    let f = req.body_fields()?;
    f.only(&[
        "first_name",
        "last_name",
        "email",
        "mobile",
        "phone",
        "title",
        "company_name",
    ])?;
    let before = doc.clone();
    let i = roster::position(&doc, rid)?;
    may(&doc, i, Move::Correct)?;
    let r = &mut doc.recipients[i];
    if let Some(e) = f.optional_str("email")? {
        if !e.is_empty() && !is_email(&e) {
            return Err(bad(
                "invalid_field",
                format!("{e:?} is not a valid email address"),
            ));
        }
        r.email = e;
    }
    if let Some(m) = f.optional_str("mobile")? {
        if !m.is_empty() && !util::is_mobile(&m) {
            return Err(bad(
                "invalid_field",
                format!("{m:?} is not a valid mobile number"),
            ));
        }
        r.mobile = m;
    }
    if r.email.is_empty() && r.mobile.is_empty() {
        return Err(bad(
            "invalid_recipient",
            "a recipient needs a valid email or a mobile number",
        ));
    }
    for (k, slot) in [
        ("first_name", &mut r.first_name),
        ("last_name", &mut r.last_name),
        ("phone", &mut r.phone),
        ("title", &mut r.title),
        ("company_name", &mut r.company_name),
    ] {
        if let Some(v) = f.optional_str(k)? {
            crate::domain::drawable::drawable(k, &v)?;
            *slot = v;
        }
    }
    log(
        cx,
        &mut doc,
        &trail::Actor::user(pr, req.client()),
        "recipient_updated",
        format!("recipient {rid}"),
        None,
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(no_content())
}

/// `POST /v1/documents/{id}/recipients/{recipient}/in-person`: the owner or an admin
/// hands their own device to the recipient; answers the link they sign on there.
pub fn in_person(
    cx: &mut Cx,
    pr: &Principal,
    req: &Request,
    id: &str,
    rid: &str,
) -> ApiResult<Response> {
    req.body_fields()?.only(&[])?;
    let r = crate::domain::in_person::host(cx, pr, req.client(), id, rid)?;
    let url = crate::domain::notify::recipient_url(cx, id, &r).unwrap_or_default();
    Ok(http::json(200, &serde_json::json!({ "signing_url": url })))
}

/// `POST /v1/documents/{id}/self-sign`: the owner or an admin who is a signer or
/// approver of the document opens their own signing page in the app; answers
/// `{recipient_id, signing_url}`.
pub fn self_sign(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    req.body_fields()?.only(&[])?;
    let r = crate::domain::in_person::self_sign(cx, pr, req.client(), id)?;
    let url = crate::domain::notify::recipient_url(cx, id, &r).unwrap_or_default();
    Ok(http::json(
        200,
        &serde_json::json!({ "recipient_id": r.id, "signing_url": url }),
    ))
}

/// `DELETE /v1/documents/{id}/recipients/{recipient}` (GetAccept's "recall signer"):
/// removes a recipient who has not acted (added, sent, viewed or hard-bounced) from a
/// document that is not finished, with the fields assigned to them. Their link stops
/// working at once. Refused with 409
/// when the removal would finish the document (everyone else has signed: recall or
/// sign instead), or would stall a signing order (the recipient whose turn it is).
pub fn remove_recipient(
    cx: &mut Cx,
    pr: &Principal,
    req: &Request,
    id: &str,
    rid: &str,
) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    let i = roster::position(&doc, rid)?;
    may(&doc, i, Move::Remove)?;
    let before = doc.clone();
    roster::remove(cx, &mut doc, i, &trail::Actor::user(pr, req.client()));
    store_doc(cx, Some(&before), &mut doc);
    Ok(no_content())
}
