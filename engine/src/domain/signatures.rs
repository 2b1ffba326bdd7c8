//! Signatures: what a signer gives when they sign (a typed name, a drawn signature or an
//! uploaded picture of one, and initials when asked), kept under
//! `dsig/{document}/{recipient}` beside the document. Images are PNG or JPEG blobs held
//! by the document (`bref`), drawn at the signer's signature fields or, without any, on
//! the summary page.
//!
//! The `sign` body is read in `handlers/recipients/sign_body.rs` into a [`SignInput`];
//! [`given`] decides with it which fields the signer fills, whether every required field,
//! the signature and the initials are there, and stores the images. The longest name
//! ([`MAX_NAME`]) and the largest image ([`MAX_IMAGE_BYTES`]) are here; a given image is
//! decoded and checked by `handlers/inputs.rs` (`picture_of`).

use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult};
use crate::base::keyspace::DSIG;
use crate::base::messages::Words;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::{self, prefix_range};
use crate::base::util::{self, iso8601};
use crate::base::work_orders::{self, Block, SignatureBlock, StampContent};
use crate::domain::document::{Document, Recipient};
use crate::domain::fields::{self, Field, FieldType};
use crate::domain::{blobs, identity};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Largest signature or initials image accepted (decoded bytes).
pub const MAX_IMAGE_BYTES: usize = 256 * 1024;
/// Longest typed name or initials.
pub const MAX_NAME: usize = 100;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Mark {
    /// `typed`, `drawn` or `uploaded` (a picture of a signature).
    pub kind: String,
    /// The typed name (or initials); for a drawn mark, the signer's name.
    pub text: String,
    /// A PNG or JPEG blob.
    pub image: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Signature {
    pub recipient_id: String,
    pub signature: Mark,
    pub initials: Option<Mark>,
    pub signed_ms: u64,
    /// The identity checks the signer had passed.
    pub verified: Vec<identity::Pass>,
}

fn key(doc_id: &str, rid: &str) -> Vec<u8> {
    util::key(&[DSIG, doc_id, rid])
}

/// Every signature given on a document.
pub fn load_all(cx: &mut Cx, doc_id: &str) -> Vec<Signature> {
    let (start, end) = prefix_range(&format!("{DSIG}/{doc_id}/"));
    cx.p.scan(&start, &end, 10_000, false)
        .into_iter()
        .map(|(_, v)| records::decode(&v))
        .collect()
}

/// The image blobs of a document's signatures.
pub fn blobs(cx: &mut Cx, doc_id: &str) -> Vec<String> {
    load_all(cx, doc_id)
        .into_iter()
        .flat_map(|s| {
            let initials = s.initials.and_then(|m| m.image);
            s.signature.image.into_iter().chain(initials)
        })
        .collect()
}

/// Forgets a deleted document's signatures (their blobs are released by the caller).
pub fn erase(cx: &mut Cx, doc_id: &str) {
    let (start, end) = prefix_range(&format!("{DSIG}/{doc_id}/"));
    for (k, _) in cx.p.scan(&start, &end, 10_000, false) {
        cx.p.delete(&k);
    }
}

fn bad(code: &'static str, text: impl Into<String>) -> ApiError {
    http::ApiError::bad_request(code, text)
}

/// A mark as the signer gives it (`{type?, name|text, image?}`, read by the `sign`
/// body's reader in `handlers/recipients/sign_body.rs`), its image not stored yet.
pub struct MarkIn {
    /// `typed`, `drawn` or `uploaded`.
    pub kind: String,
    /// The typed name or initials; empty for a drawn mark given without one.
    pub text: String,
    /// The PNG's or JPEG's bytes.
    pub image: Option<Vec<u8>>,
}

/// What a signer's `sign` request gives, as read from its body. Each member keeps the
/// result of its own reading, so that [`given`] answers a request with several faults
/// with the first of them in one fixed order: `fields` not an object, a field the signer
/// does not fill or a bad value (in field id order); a required field left empty; a bad
/// `signature`; no signature where one is asked; bad `initials`; no initials where they
/// are asked.
pub struct SignInput {
    /// The `fields` member: each field id with its value as text, in field id order
    /// (empty when the member is absent); `Err` when it is not an object.
    pub values: ApiResult<Vec<(String, ApiResult<String>)>>,
    /// The `signature` member; `None` when absent.
    pub signature: ApiResult<Option<MarkIn>>,
    /// The `initials` member; `None` when absent.
    pub initials: ApiResult<Option<MarkIn>>,
}

/// What a signer's `sign` request gives, checked against their fields, ready to store.
pub struct Given {
    pub signature: Signature,
    /// The fields with this signer's values filled in.
    pub fields: Vec<Field>,
    /// New image blobs, to be held by the document.
    pub new_blobs: Vec<String>,
}

/// Fills in the values recipient `r` gave for their own input fields: 400
/// `unknown_field` for a field that is not one of them.
fn fill(
    all: &mut [Field],
    r: &Recipient,
    values: Vec<(String, ApiResult<String>)>,
) -> ApiResult<()> {
    for (id, text) in values {
        let field = all
            .iter_mut()
            .find(|x| x.id == id && x.recipient_id == r.id && x.kind.is_input())
            .ok_or_else(|| {
                bad(
                    "unknown_field",
                    format!("`fields.{id}` is not a field you fill"),
                )
            })?;
        field.value = fields::checked_value(field.kind, text?, &format!("fields.{id}"))?;
    }
    Ok(())
}

/// 400 `required_fields_missing` when one of `mine`, a signer's fields, is a required
/// input field left empty.
fn required_filled(mine: &[&Field]) -> ApiResult<()> {
    let missing: Vec<String> = mine
        .iter()
        .filter(|x| x.kind.is_input() && x.required && !x.is_filled())
        .map(|x| {
            if x.label.is_empty() {
                format!("{} field on page {}", x.kind.as_str(), x.page_num)
            } else {
                x.label.clone()
            }
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(bad(
        "required_fields_missing",
        format!("fill in every required field first: {}", missing.join(", ")),
    ))
}

/// Stores a mark's image as a blob (added to `new_blobs`).
fn store_mark(
    cx: &mut Cx,
    MarkIn { kind, text, image }: MarkIn,
    new_blobs: &mut Vec<String>,
) -> ApiResult<Mark> {
    let image = match image {
        Some(bytes) => {
            let info = cx.p.put_blob(&bytes).map_err(|e| {
                http::ApiError::new(
                    503,
                    "storage_unavailable",
                    format!("the signature could not be stored: {e}"),
                )
            })?;
            new_blobs.push(info.id.clone());
            Some(info.id)
        }
        None => None,
    };
    Ok(Mark { kind, text, image })
}

/// What recipient `r` gives when they sign with `input`: their field values (and the
/// merge fields' values), their signature and their initials, the images stored. Fails
/// with 400 when a required field, the signature or the initials are missing, with the
/// first fault in [`SignInput`]'s order. `verified` are the identity checks the signer
/// passed.
pub fn given(
    cx: &mut Cx,
    doc: &Document,
    r: &Recipient,
    input: SignInput,
    verified: &[identity::Pass],
) -> ApiResult<Given> {
    let mut all = fields::load(cx, &doc.id);
    fill(&mut all, r, input.values?)?;
    // Merge fields (name, email, company, title) take the signer's data as it is now.
    for x in all.iter_mut().filter(|x| x.recipient_id == r.id) {
        if let Some(v) = x.kind.merged(r) {
            x.value = v;
        }
    }
    let mine: Vec<&Field> = all.iter().filter(|x| x.recipient_id == r.id).collect();
    required_filled(&mine)?;
    let has = |k: FieldType| mine.iter().any(|x| x.kind == k);
    let fullname = r.fullname();
    let signature = input.signature?;
    if signature.is_none() && has(fields::FieldType::Signature) {
        return Err(bad(
            "signature_required",
            "sign with a typed name, a drawn signature or a picture of it (`signature`)",
        ));
    }
    let initials = input.initials?;
    if initials.is_none() && (doc.flags.is_signing_initials || has(fields::FieldType::Initials)) {
        return Err(bad(
            "initials_required",
            "this document asks for your initials (`initials`)",
        ));
    }
    let mut new_blobs = Vec::new();
    let signature = match signature {
        Some(mut m) => {
            if m.text.is_empty() {
                m.text.clone_from(&fullname);
            }
            store_mark(cx, m, &mut new_blobs)?
        }
        None => Mark {
            kind: "typed".into(),
            text: fullname,
            image: None,
        },
    };
    let initials = match initials {
        Some(m) => Some(store_mark(cx, m, &mut new_blobs)?),
        None => None,
    };
    Ok(Given {
        signature: Signature {
            recipient_id: r.id.clone(),
            signature,
            initials,
            signed_ms: cx.now(),
            verified: verified.to_vec(),
        },
        fields: all,
        new_blobs,
    })
}

/// Stores what [`given`] checked.
pub fn store(cx: &mut Cx, doc: &Document, given: &Given) {
    for b in &given.new_blobs {
        blobs::hold(cx, b, &blobs::owner_of(&doc.id));
    }
    fields::save(cx, &doc.id, &given.fields);
    cx.save(
        &key(&doc.id, &given.signature.recipient_id),
        &given.signature,
    );
}

/// The content drawn for signer `rid`'s field of `kind`, once they signed.
pub fn stamp_content(sigs: &[Signature], rid: &str, kind: FieldType) -> Option<StampContent> {
    let s = sigs.iter().find(|s| s.recipient_id == rid)?;
    let mark = match kind {
        fields::FieldType::Initials => s.initials.as_ref()?,
        _ => &s.signature,
    };
    Some(match &mark.image {
        Some(blob) => work_orders::StampContent::Image(blob.clone()),
        None => work_orders::StampContent::Text(mark.text.clone()),
    })
}

/// The summary page's signatures of signers who have no signature field to sign in.
pub fn summary_blocks(
    doc: &Document,
    w: &Words,
    fields: &[Field],
    sigs: &[Signature],
) -> Vec<Block> {
    let mut out = Vec::new();
    for s in sigs {
        let placed = fields
            .iter()
            .any(|f| f.kind == fields::FieldType::Signature && f.recipient_id == s.recipient_id);
        let Some(r) = doc.recipient(&s.recipient_id) else {
            continue;
        };
        if placed {
            continue;
        }
        if out.is_empty() {
            out.push(work_orders::Block::Rule);
            out.push(work_orders::Block::Heading(w.get("cert.signatures")));
        }
        let who = format!("{} ({})", r.fullname(), r.contact());
        out.push(work_orders::Block::Signature(SignatureBlock {
            image: s.signature.image.clone(),
            text: s.signature.text.clone(),
            caption: w.fill(
                "cert.signed_at",
                &[("name", &who), ("time", &w.time(s.signed_ms))],
            ),
        }));
    }
    out
}

/// The `signing_methods` entries of a signature (GetAccept's `SigningMethod` types):
/// the identity checks passed, then the signature and the initials.
pub fn methods(s: &Signature) -> Vec<Value> {
    let at = iso8601(s.signed_ms);
    let mut out = identity::methods(&s.verified);
    out.push(serde_json::json!({"type": "signature", "signed_at": at, "verified_name": ""}));
    if s.initials.is_some() {
        out.push(serde_json::json!({"type": "initials", "signed_at": at, "verified_name": ""}));
    }
    out
}
