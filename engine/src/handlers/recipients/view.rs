//! What a recipient reads: their view of the document (pages, their fields, whom they
//! wait for, the identity checks still to pass), page images, and the comment thread.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, iso8601};
use crate::domain::document::{self, Document, Recipient};
use crate::domain::downloads::current_pdf;
use crate::domain::{branding, comments, fields, pages, recipient_states, signatures, videos};
use crate::handlers::recipients::verify;
use crate::handlers::shapes;
use serde_json::{Value, json};

/// `GET .../pages/{n}`: page `n` (1-based) of the PDF the recipient sees, as a PNG.
pub(super) fn page_image(cx: &mut Cx, doc: &Document, n: &str) -> ApiResult<Response> {
    let missing = || http::ApiError::not_found("page_not_found", "no such page image");
    let n: usize = n.parse().map_err(|_| missing())?;
    let (blob, bytes) = pages::image(cx, &doc.id, n).ok_or_else(missing)?;
    Ok(Response {
        status: 200,
        headers: vec![
            ("content-type".into(), "image/png".into()),
            // The URL names a page of the current PDF; a new render changes the blob.
            ("cache-control".into(), "private, no-cache".into()),
            ("etag".into(), format!("\"{blob}\"")),
        ],
        body: bytes,
    })
}

/// `GET .../comments`: the comment thread the recipient sees (not internal ones), as
/// `{id, text, author_name, created_at}`.
pub(super) fn comments(cx: &mut Cx, doc: &Document) -> ApiResult<Response> {
    let list: Vec<Value> = comments::visible(cx, &doc.id)
        .into_iter()
        // Names only: recipients do not see each other's addresses.
        .map(|c| {
            json!({"id": c.id, "text": c.text, "author_name": c.author_name,
                    "created_at": iso8601(c.created_ms)})
        })
        .collect();
    Ok(json(200, &json!({"comments": list})))
}

pub(super) fn recipient_view(
    cx: &mut Cx,
    doc: &Document,
    i: usize,
    secret: &str,
    req: &Request,
) -> Value {
    let r = &doc.recipients[i];
    let (checks, st) = verify::status(cx, doc, i, req);
    let verification = checks.as_ref().map(|c| verify::view_json(c, &st, r));
    // The sender's colour and logo (before the checks too: they say who asks).
    let brand = shapes::branding_json(&branding::load(cx, &doc.entity_id));
    if !st.open_pending.is_empty() || st.locked {
        // Nothing of the document's content before the checks for opening pass.
        return closed_view(doc, r, secret, verification, brand);
    }
    let me = util::normalize_email(&r.email);
    // The sender's video, when the document has one (`video_id`), at its public address.
    let video = doc
        .video_id
        .as_ref()
        .and_then(|id| videos::find(cx, &doc.entity_id, id).ok())
        .map(|v| {
            json!({"url": format!("/v1/files/{}", v.secret), "title": v.title,
                   "poster": "/s/_/video.svg"})
        });
    let pages = pages_json(cx, doc, secret);
    let sigs = signatures::load_all(cx, &doc.id);
    let field_list = fields_json(&fields::load(cx, &doc.id), r);
    let waiting_for = waiting_for(doc, i);
    let mine = sigs.iter().find(|s| s.recipient_id == r.id);
    json!({
        "document": {
            "id": doc.id, "name": doc.name, "status": doc.status.as_str(), "value": util::money(doc.value),
            "sender_name": doc.sender.name, "sender_email": doc.sender.email,
            "expiration_date": iso8601(doc.expiration_ms), "page_count": doc.page_count(),
            "is_signing": doc.flags.is_signing, "is_signing_order": doc.flags.is_signing_order,
            "is_signing_initials": doc.flags.is_signing_initials,
            "is_signing_forward": doc.flags.is_signing_forward,
            "rejection_reason": doc.rejection_reason,
            "language": doc.language(),
            "pricing_tables": shapes::pricing_tables_json(&doc.pricing_tables),
            "attachments": doc.attachments.iter()
                .filter(|a| a.restricted_to.as_ref().is_none_or(|to| *to == me))
                .map(|a| json!({"id": a.id, "name": a.name, "size": a.size}))
                .collect::<Vec<_>>(),
            "has_pdf": current_pdf(doc).is_some(),
            "video": video,
            // The signed PDF is ready: signed, and no render is still running.
            "final_ready": doc.status.is_signed() && doc.pending.is_none() && doc.final_pdf.is_some(),
        },
        "recipient": shapes::recipient_json(cx, &doc.id, r, false),
        "recipients": doc.recipients.iter()
            .map(|o| json!({"fullname": o.fullname(), "role": o.role.as_str(), "status": o.status.as_str(), "order_num": o.order_num.to_string()}))
            .collect::<Vec<_>>(),
        "pages": pages,
        "fields": field_list,
        "waiting_for": waiting_for,
        "verification": verification,
        "brand": brand,
        "signature": mine.map(|s| json!({"type": s.signature.kind, "name": s.signature.text, "signed_at": iso8601(s.signed_ms)})),
        "links": {
            "api": format!("/v1/recipient/{secret}"),
            "download": format!("/v1/recipient/{secret}/download"),
        },
    })
}

/// The view before the checks for opening pass: who asks, and nothing of the content.
fn closed_view(
    doc: &Document,
    r: &Recipient,
    secret: &str,
    verification: Option<Value>,
    brand: Value,
) -> Value {
    json!({
        "document": {
            "id": doc.id, "name": doc.name, "status": doc.status.as_str(),
            "sender_name": doc.sender.name, "sender_email": doc.sender.email,
            "expiration_date": iso8601(doc.expiration_ms),
            "rejection_reason": doc.rejection_reason,
            "language": doc.language(),
        },
        "recipient": {"id": r.id, "fullname": r.fullname(), "role": r.role.as_str(), "status": r.status.as_str()},
        "verification": verification,
        "brand": brand,
        "pages": [], "fields": [], "waiting_for": [],
        "links": {
            "api": format!("/v1/recipient/{secret}"),
            "download": format!("/v1/recipient/{secret}/download"),
        },
    })
}

/// The page images of the PDF the recipient sees, with each content page's size.
fn pages_json(cx: &mut Cx, doc: &Document, secret: &str) -> Vec<Value> {
    let images = pages::load(cx, &doc.id);
    let content_pages: Vec<(f32, f32)> = doc.files.iter().flat_map(|f| f.pages.clone()).collect();
    images
        .pages
        .iter()
        .enumerate()
        .map(|(n, (_, w, h, _))| {
            let mut p = json!({
                "num": n + 1,
                "image": format!("/v1/recipient/{secret}/pages/{}", n + 1),
                "width": w, "height": h,
            });
            if let Some((pw, ph)) = content_pages.get(n) {
                p["points"] = json!([pw, ph]);
            }
            p
        })
        .collect()
}

/// The fields recipient `r` sees: theirs and the shared ones.
fn fields_json(fields: &[fields::Field], r: &Recipient) -> Vec<Value> {
    fields
        .iter()
        .filter(|f| f.recipient_id.is_empty() || f.recipient_id == r.id)
        .map(|f| {
            json!({
                "id": f.id, "type": f.kind.as_str(), "page_num": f.page_num,
                "left": f.left, "top": f.top, "width": f.width, "height": f.height,
                "required": f.required, "label": f.label,
                // A merge field shows what signing will put in it.
                "value": match f.kind.merged(r) {
                    Some(v) if f.recipient_id == r.id && f.value.is_empty() => v,
                    _ => f.value.clone(),
                },
                "mine": f.recipient_id == r.id,
            })
        })
        .collect()
}

/// Whom recipient `i` waits for under a signing order, when it is not their turn.
fn waiting_for(doc: &Document, i: usize) -> Vec<String> {
    let r = &doc.recipients[i];
    if doc.flags.is_signing_order && !recipient_states::in_turn(doc, i) {
        doc.recipients
            .iter()
            .filter(|o| {
                o.role != document::Role::Cc && o.order_num < r.order_num && !o.status.is_finished()
            })
            .map(|o| o.fullname())
            .collect()
    } else {
        Vec::new()
    }
}
