//! Signatures: what a signer gives when they sign (a typed name, or a drawn signature,
//! and initials when asked), kept under `dsig/{document}/{recipient}` beside the
//! document. Images are PNG blobs held by the document (`bref`), drawn at the signer's
//! signature fields or, without any, on the summary page.
//!
//! The `sign` body:
//!
//! ```json
//! {"signature": {"type": "typed" | "drawn", "name": "Ada Lovelace", "image": "data:image/png;base64,..."},
//!  "initials":  {"text": "AL", "image": "data:image/png;base64,..."},
//!  "fields":    {"<field id>": "value", ...}}
//! ```
//!
//! A typed signature needs `name` (the page also sends the name drawn in a handwriting
//! font as `image`); a drawn one needs `image`.

use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult, Fields};
use crate::base::keyspace::DSIG;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records::{self, prefix_range};
use crate::base::util::{self, iso8601};
use crate::base::work::{self, Block, SignatureBlock, StampContent};
use crate::domain::document::{Document, Recipient};
use crate::domain::fields::{self, Field, FieldType};
use crate::domain::{blobs, identity};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Largest signature or initials image accepted (decoded bytes).
pub const MAX_IMAGE_BYTES: usize = 256 * 1024;
/// Longest typed name or initials.
const MAX_NAME: usize = 100;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Mark {
    /// `typed` or `drawn`.
    pub kind: String,
    /// The typed name (or initials); for a drawn mark, the signer's name.
    pub text: String,
    /// A PNG blob.
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

/// A `data:image/png;base64,...` URL (or bare base64) holding a PNG.
/// The most pixels a drawn mark may have: what `formats` draws into the sealed PDF
/// (`formats::stamp::MAX_PIXELS`), so nothing accepted here is missing from it.
const MAX_IMAGE_PIXELS: u64 = 4_000_000;

/// A PNG's width and height, from its signature and its first chunk, which the PNG
/// specification fixes as `IHDR` (§5.2, §11.2.2: width and height as big-endian u32 at
/// offsets 16 and 20); `None` for anything else.
fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    let header = bytes.get(..24)?;
    if &header[..8] != b"\x89PNG\r\n\x1a\n" || &header[12..16] != b"IHDR" {
        return None;
    }
    let be = |at: usize| {
        u32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    Some((be(16), be(20)))
}

/// A PNG given as a base64 `data:image/png;base64,...` URL (or bare base64) in `v`:
/// `None` for null or empty; 400 `invalid_image` for anything but a PNG within the
/// size limits (signatures here, logos in `PUT /v1/entity`).
pub fn png_of(v: &Value, name: &str) -> ApiResult<Option<Vec<u8>>> {
    let s = match v {
        Value::Null => return Ok(None),
        Value::String(s) if s.is_empty() => return Ok(None),
        Value::String(s) => s,
        _ => return Err(bad("invalid_field", format!("`{name}` must be a string"))),
    };
    let data = s.strip_prefix("data:image/png;base64,").unwrap_or(s);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|_| {
            bad(
                "invalid_image",
                format!("`{name}` must be a PNG as a base64 data URL"),
            )
        })?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(bad(
            "invalid_image",
            format!("`{name}` is larger than {} KiB", MAX_IMAGE_BYTES / 1024),
        ));
    }
    let Some((w, h)) = png_size(&bytes) else {
        return Err(bad("invalid_image", format!("`{name}` is not a PNG image")));
    };
    if w == 0 || h == 0 || u64::from(w) * u64::from(h) > MAX_IMAGE_PIXELS {
        return Err(bad(
            "invalid_image",
            format!(
                "`{name}` is {w}×{h} pixels; an image here may have at most {MAX_IMAGE_PIXELS} pixels"
            ),
        ));
    }
    Ok(Some(bytes))
}

/// A mark as the request gives it, its image not stored yet.
struct MarkIn {
    kind: String,
    text: String,
    image: Option<Vec<u8>>,
}

/// A mark given as `{type?, name|text, image?}`; `None` when the member is absent.
fn mark_of(
    f: &Fields,
    member: &str,
    text_member: &str,
    default_text: &str,
) -> ApiResult<Option<MarkIn>> {
    let Some(v) = f.optional_json(member)? else {
        return Ok(None);
    };
    let o = v
        .as_object()
        .ok_or_else(|| bad("invalid_field", format!("`{member}` must be an object")))?;
    let image = png_of(
        o.get("image").unwrap_or(&Value::Null),
        &format!("{member}.image"),
    )?;
    let text = o
        .get(text_member)
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_string();
    if text.chars().count() > MAX_NAME {
        return Err(bad(
            "invalid_field",
            format!("`{member}.{text_member}` must be at most {MAX_NAME} characters"),
        ));
    }
    let kind = match o.get("type") {
        None | Some(Value::Null) if text.is_empty() => "drawn",
        None | Some(Value::Null) => "typed",
        Some(Value::String(s)) if s == "typed" => "typed",
        Some(Value::String(s)) if s == "drawn" => "drawn",
        Some(_) => {
            return Err(bad(
                "invalid_field",
                format!("`{member}.type` must be typed or drawn"),
            ));
        }
    };
    if kind == "typed" && text.is_empty() {
        return Err(bad(
            "missing_field",
            format!("a typed `{member}` needs `{member}.{text_member}`"),
        ));
    }
    if kind == "drawn" && image.is_none() {
        return Err(bad(
            "missing_field",
            format!("a drawn `{member}` needs `{member}.image`"),
        ));
    }
    let text = if text.is_empty() {
        default_text.to_string()
    } else {
        text
    };
    Ok(Some(MarkIn {
        kind: kind.to_string(),
        text,
        image,
    }))
}

/// What a signer's `sign` request gives, checked against their fields, ready to store.
pub struct Given {
    pub signature: Signature,
    /// The fields with this signer's values filled in.
    pub fields: Vec<Field>,
    /// New image blobs, to be held by the document.
    pub new_blobs: Vec<String>,
}

/// Reads the `sign` body of recipient `r`: their signature, initials and field values.
/// Fails with 400 when a required field, the signature or the initials are missing.
/// `verified` are the identity checks the signer passed.
#[expect(
    clippy::too_many_lines,
    reason = "older than the 70-line rule (issue 49)"
)]
pub fn read_sign_body(
    cx: &mut Cx,
    doc: &Document,
    r: &Recipient,
    f: &Fields,
    verified: &[identity::Pass],
) -> ApiResult<Given> {
    let mut all = fields::load(cx, &doc.id);
    // Values for this signer's own input fields.
    if let Some(v) = f.optional_json("fields")? {
        let o = v.as_object().ok_or_else(|| {
            bad(
                "invalid_field",
                "`fields` must be an object of field id to value",
            )
        })?;
        for (id, value) in o {
            let field = all
                .iter_mut()
                .find(|x| x.id == *id && x.recipient_id == r.id && x.kind.is_input())
                .ok_or_else(|| {
                    bad(
                        "unknown_field",
                        format!("`fields.{id}` is not a field you fill"),
                    )
                })?;
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Bool(b) => (if *b { "1" } else { "" }).into(),
                Value::Number(n) => n.to_string(),
                Value::Null => String::new(),
                _ => return Err(bad("invalid_field", format!("`fields.{id}` must be text"))),
            };
            field.value = fields::checked_value(field.kind, text, &format!("fields.{id}"))?;
        }
    }
    // Merge fields (name, email, company, title) take the signer's data as it is now.
    for x in all.iter_mut().filter(|x| x.recipient_id == r.id) {
        if let Some(v) = x.kind.merged(r) {
            x.value = v;
        }
    }
    let mine: Vec<&Field> = all.iter().filter(|x| x.recipient_id == r.id).collect();
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
    if !missing.is_empty() {
        return Err(bad(
            "required_fields_missing",
            format!("fill in every required field first: {}", missing.join(", ")),
        ));
    }
    let has = |k: FieldType| mine.iter().any(|x| x.kind == k);
    let fullname = r.fullname();
    let signature = mark_of(f, "signature", "name", &fullname)?;
    if signature.is_none() && has(fields::FieldType::Signature) {
        return Err(bad(
            "signature_required",
            "sign with a typed name or a drawn signature (`signature`)",
        ));
    }
    let initials = mark_of(f, "initials", "text", "")?;
    if initials.is_none() && (doc.flags.is_signing_initials || has(fields::FieldType::Initials)) {
        return Err(bad(
            "initials_required",
            "this document asks for your initials (`initials`)",
        ));
    }
    let mut new_blobs = Vec::new();
    let mut store = |cx: &mut Cx, MarkIn { kind, text, image }: MarkIn| -> ApiResult<Mark> {
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
    };
    let signature = match signature {
        Some(m) => store(cx, m)?,
        None => Mark {
            kind: "typed".into(),
            text: fullname,
            image: None,
        },
    };
    let initials = match initials {
        Some(m) => Some(store(cx, m)?),
        None => None,
    };
    let now = cx.now();
    Ok(Given {
        signature: Signature {
            recipient_id: r.id.clone(),
            signature,
            initials,
            signed_ms: now,
            verified: verified.to_vec(),
        },
        fields: all,
        new_blobs,
    })
}

/// Stores what [`read_sign_body`] read.
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
        Some(blob) => work::StampContent::Image(blob.clone()),
        None => work::StampContent::Text(mark.text.clone()),
    })
}

/// The summary page's signatures of signers who have no signature field to sign in.
pub fn summary_blocks(doc: &Document, fields: &[Field], sigs: &[Signature]) -> Vec<Block> {
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
            out.push(work::Block::Rule);
            out.push(work::Block::Heading("Signatures".into()));
        }
        let contact = if r.email.is_empty() {
            &r.mobile
        } else {
            &r.email
        };
        out.push(work::Block::Signature(SignatureBlock {
            image: s.signature.image.clone(),
            text: s.signature.text.clone(),
            caption: format!(
                "{} ({contact}), signed {}",
                r.fullname(),
                iso8601(s.signed_ms)
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
