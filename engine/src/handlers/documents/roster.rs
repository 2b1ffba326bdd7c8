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
use crate::domain::document::{self, RecipientStatus, Role, store_doc};
use crate::domain::trail::{self, log};
use crate::domain::{fields, links};

fn bad(code: &'static str, text: impl Into<String>) -> ApiError {
    http::ApiError::bad_request(code, text)
}

fn conflict(code: &'static str, text: impl Into<String>) -> ApiError {
    http::ApiError::new(409, code, text)
}

/// `PUT /v1/documents/{id}/recipients/{recipient}`: corrects a recipient who has not
/// been reached yet (status added or hardbounced): names, email, mobile.
#[expect(
    clippy::too_many_lines,
    reason = "older than the 70-line rule (issue 49)"
)]
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
    let r = doc
        .recipients
        .iter_mut()
        .find(|r| r.id == rid)
        .ok_or_else(|| {
            http::ApiError::not_found("recipient_not_found", format!("no recipient {rid}"))
        })?;
    if !matches!(
        r.status,
        document::RecipientStatus::Added | document::RecipientStatus::Hardbounced
    ) {
        return Err(bad(
            "invalid_recipient",
            format!(
                "the recipient is already {}; only added or hard-bounced recipients can be corrected",
                r.status.as_str()
            ),
        ));
    }
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
            *slot = v;
        }
    }
    log(
        cx,
        &mut doc,
        &trail::Actor::user(pr, Some(req)),
        "recipient_updated",
        format!("recipient {rid}"),
        None,
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(no_content())
}

/// Whether a recipient still has to sign or approve.
fn waiting(role: Role, status: RecipientStatus) -> bool {
    match role {
        document::Role::Signer => !matches!(
            status,
            document::RecipientStatus::Signed
                | document::RecipientStatus::SignedWithoutVerification
                | document::RecipientStatus::NotRequired
        ),
        document::Role::Approver | document::Role::ExternalApprover => !matches!(
            status,
            document::RecipientStatus::Approved | document::RecipientStatus::NotRequired
        ),
        document::Role::Cc => false,
    }
}

/// `DELETE /v1/documents/{id}/recipients/{recipient}` (GetAccept's "recall signer"):
/// removes a recipient who has not acted (added, sent, viewed or hard-bounced) from a
/// document that is not finished, with the fields assigned to them. Their link stops
/// working at once. Refused with 409
/// when the removal would finish the document (everyone else has signed: recall or
/// sign instead), or would stall a signing order (the recipient whose turn it is).
#[expect(
    clippy::too_many_lines,
    reason = "older than the 70-line rule (issue 49)"
)]
pub fn remove_recipient(
    cx: &mut Cx,
    pr: &Principal,
    req: &Request,
    id: &str,
    rid: &str,
) -> ApiResult<Response> {
    let mut doc = writable(cx, pr, id)?;
    let i = doc
        .recipients
        .iter()
        .position(|r| r.id == rid)
        .ok_or_else(|| {
            http::ApiError::not_found("recipient_not_found", format!("no recipient {rid}"))
        })?;
    let out = match doc.status {
        document::Status::Draft | document::Status::Importing => false,
        document::Status::Scheduled
        | document::Status::Sealed
        | document::Status::Sent
        | document::Status::Viewed
        | document::Status::Reviewed
        | document::Status::Hardbounced => true,
        document::Status::Processing => {
            return Err(conflict(
                "document_processing",
                "the document is being rendered; retry in a moment",
            ));
        }
        other => {
            return Err(conflict(
                "invalid_status",
                format!(
                    "recipients of a {} document cannot be removed",
                    other.as_str()
                ),
            ));
        }
    };
    let r = doc.recipients[i].clone();
    if !matches!(
        r.status,
        document::RecipientStatus::Added
            | document::RecipientStatus::Sent
            | document::RecipientStatus::Viewed
            | document::RecipientStatus::Hardbounced
    ) {
        return Err(conflict(
            "recipient_acted",
            format!(
                "the recipient is already {}; only a recipient who has not acted can be removed",
                r.status.as_str()
            ),
        ));
    }
    if out {
        if doc.flags.is_signing_order
            && r.status != document::RecipientStatus::Added
            && r.role != document::Role::Cc
        {
            return Err(conflict(
                "signing_order",
                "it is this recipient's turn in the signing order; recall the document to change its order",
            ));
        }
        let others_wait = doc
            .recipients
            .iter()
            .filter(|o| o.id != r.id)
            .any(|o| waiting(o.role, o.status));
        if waiting(r.role, r.status) && !others_wait {
            return Err(conflict(
                "last_recipient",
                "every other signer and approver has acted, so removing this one would finish the document; recall it instead",
            ));
        }
    }
    let before = doc.clone();
    doc.recipients.remove(i);
    // Their fields go with them: nobody else may fill them, and a required one would
    // stand unfilled on the final PDF.
    let mut fields = fields::load(cx, &doc.id);
    let count = fields.len();
    fields.retain(|f| f.recipient_id != r.id);
    if fields.len() != count {
        fields::save(cx, &doc.id, &fields);
    }
    if let Some(key) = links::key_of(cx, &doc.id, &r) {
        cx.p.delete(&key);
    }
    log(
        cx,
        &mut doc,
        &trail::Actor::user(pr, Some(req)),
        "recipient_removed",
        format!("recipient {} ({})", r.id, r.fullname()),
        None,
    );
    store_doc(cx, Some(&before), &mut doc);
    Ok(no_content())
}
