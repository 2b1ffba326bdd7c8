//! The PDF side of a PAdES signature: an incremental update that adds a signature field,
//! its signature dictionary (`/SubFilter /ETSI.CAdES.detached`, `/M`, a `/ByteRange` and
//! a reserved `/Contents`) and the esign metadata, written with lopdf; then the CMS
//! signature ([`super::cms`]) over the byte range goes into the reserved space. And the
//! reverse: finding the last signature of a PDF and checking it.
//!
//! The signed file is the input file, byte for byte, followed by the update: anyone can
//! cut the update off and get the file as it was before sealing.

use super::cms;
use crate::digest::sha256_hex;
use anyhow::{Context, anyhow, bail};
use lopdf::{
    Dictionary, Document, IncrementalDocument, Object, ObjectId, StringFormat, dictionary,
};
use sha2::{Digest, Sha256};

/// What a check of a signed PDF found (the WIT's `pdf-check`, shared with the engine).
pub use esign_work::PdfCheck;

/// Bytes reserved for the DER signature (twice that in hex in the file): room for a
/// certificate chain of a few certificates and a timestamp token.
pub const RESERVED: usize = 24 * 1024;
/// The placeholder of each `/ByteRange` number until the real ones are known.
const PLACEHOLDER: i64 = 9_999_999_999;

/// What goes into the signed revision's document information dictionary.
pub struct Metadata<'a> {
    pub document_id: &'a str,
    pub log_head: &'a str,
}

/// A file with its signature dictionary in place and the signature value still zeros.
pub struct Prepared {
    pub pdf: Vec<u8>,
    /// `/ByteRange`: everything but the `<...>` of `/Contents`.
    pub byte_range: [usize; 4],
}

impl Prepared {
    /// SHA-256 of the bytes the byte range names.
    pub fn digest(&self) -> [u8; 32] {
        let [a, b, c, d] = self.byte_range;
        let mut h = Sha256::new();
        h.update(&self.pdf[a..a + b]);
        h.update(&self.pdf[c..c + d]);
        h.finalize().into()
    }

    /// Writes the DER signature into the reserved space.
    pub fn fill(mut self, der: &[u8]) -> anyhow::Result<Vec<u8>> {
        let start = self.byte_range[1] + 1;
        let room = self.byte_range[2] - 1 - start;
        let hex = hex_upper(der);
        if hex.len() > room {
            bail!(
                "the signature ({} bytes) does not fit the {} bytes reserved",
                der.len(),
                room / 2
            );
        }
        self.pdf[start..start + hex.len()].copy_from_slice(hex.as_bytes());
        Ok(self.pdf)
    }
}

/// `D:YYYYMMDDHHmmSSZ` for a time in ms since the epoch.
pub fn pdf_date(ms: u64) -> String {
    let t = chrono::DateTime::from_timestamp_millis(ms as i64).unwrap_or_default();
    t.format("D:%Y%m%d%H%M%SZ").to_string()
}

/// Parses the `/M` form we and most signers write (`D:YYYYMMDDHHmmSS` and an optional
/// `Z` or `+HH'mm'` offset); ms since the epoch.
fn parse_pdf_date(s: &str) -> Option<u64> {
    let s = s.strip_prefix("D:").unwrap_or(s);
    let digits = s.get(..14)?;
    let naive = chrono::NaiveDateTime::parse_from_str(digits, "%Y%m%d%H%M%S").ok()?;
    let rest = &s[14..];
    let offset_secs = match rest.chars().next() {
        Some(sign @ ('+' | '-')) => {
            let h: i64 = rest.get(1..3)?.parse().ok()?;
            let m: i64 = rest.get(4..6).and_then(|m| m.parse().ok()).unwrap_or(0);
            let secs = h * 3600 + m * 60;
            if sign == '+' { secs } else { -secs }
        }
        _ => 0,
    };
    let ms = (naive.and_utc().timestamp() - offset_secs) * 1000;
    u64::try_from(ms).ok()
}

/// Adds the signature field, dictionary and metadata to `pdf` as an incremental update.
pub fn prepare(pdf: &[u8], meta: &Metadata, signed_at_ms: u64) -> anyhow::Result<Prepared> {
    let mut inc = IncrementalDocument::load_from(pdf).context("reading the rendered PDF")?;
    let prev = inc.get_prev_documents();
    let root = prev
        .trailer
        .get(b"Root")
        .and_then(Object::as_reference)
        .context("the PDF has no catalog")?;
    let page = *prev
        .get_pages()
        .values()
        .next()
        .context("the PDF has no pages")?;
    let annots = prev
        .get_dictionary(page)
        .ok()
        .and_then(|d| d.get(b"Annots").ok().cloned());

    // Past every number the file uses, the previous cross-reference stream's included
    // (lopdf numbers it after `max_id` without counting it).
    let size = prev
        .trailer
        .get(b"Size")
        .and_then(Object::as_i64)
        .unwrap_or(0);
    let new = &mut inc.new_document;
    new.max_id = new
        .max_id
        .max(u32::try_from(size.saturating_sub(1)).unwrap_or(0));
    let sig: ObjectId = new.add_object(dictionary! {
        "Type" => "Sig",
        "Filter" => "Adobe.PPKLite",
        "SubFilter" => "ETSI.CAdES.detached",
        "ByteRange" => vec![Object::Integer(0), PLACEHOLDER.into(), PLACEHOLDER.into(), PLACEHOLDER.into()],
        "Contents" => Object::String(vec![0; RESERVED], StringFormat::Hexadecimal),
        "M" => Object::string_literal(pdf_date(signed_at_ms)),
        "Name" => Object::string_literal("esign"),
        "Reason" => Object::string_literal(format!("Sealed by esign: document {}, audit trail head {}", meta.document_id, meta.log_head)),
    });
    let field = new.add_object(dictionary! {
        "Type" => "Annot",
        "Subtype" => "Widget",
        "FT" => "Sig",
        "T" => Object::string_literal("esign seal"),
        "V" => sig,
        "F" => 132,
        "Rect" => vec![0.into(), 0.into(), 0.into(), 0.into()],
        "P" => page,
    });
    let info = new.add_object(dictionary! {
        "Producer" => Object::string_literal("esign"),
        "EsignDocumentId" => Object::string_literal(meta.document_id),
        "EsignLogHead" => Object::string_literal(meta.log_head),
    });
    new.trailer.set("Info", info);

    inc.opt_clone_object_to_new_document(root)?;
    let catalog = inc
        .new_document
        .get_object_mut(root)
        .and_then(Object::as_dict_mut)
        .context("the catalog is not a dictionary")?;
    catalog.set(
        "AcroForm",
        dictionary! { "Fields" => vec![Object::Reference(field)], "SigFlags" => 3 },
    );
    inc.opt_clone_object_to_new_document(page)?;
    match annots {
        Some(Object::Reference(list)) => {
            inc.opt_clone_object_to_new_document(list)?;
            if let Ok(Object::Array(a)) = inc.new_document.get_object_mut(list) {
                a.push(Object::Reference(field));
            }
        }
        other => {
            let mut list = match other {
                Some(Object::Array(a)) => a,
                _ => Vec::new(),
            };
            list.push(Object::Reference(field));
            let page_dict = inc
                .new_document
                .get_object_mut(page)
                .and_then(Object::as_dict_mut)
                .context("the first page is not a dictionary")?;
            page_dict.set("Annots", list);
        }
    }

    let mut out = Vec::with_capacity(pdf.len() + RESERVED * 2 + 4096);
    inc.save_to(&mut out)
        .context("writing the signature update")?;
    let byte_range = place_byte_range(&mut out, pdf.len(), sig)?;
    Ok(Prepared {
        pdf: out,
        byte_range,
    })
}

/// Finds the signature object in the update, computes its byte range around the
/// `/Contents` hex string and writes it over the placeholder (padded with spaces).
fn place_byte_range(out: &mut [u8], from: usize, sig: ObjectId) -> anyhow::Result<[usize; 4]> {
    let head = format!("\n{} {} obj", sig.0, sig.1);
    let obj_start = find(out, head.as_bytes(), from).context("the signature object")? + 1;
    let obj_end = find(out, b"endobj", obj_start).context("the end of the signature object")?;
    let contents = find(out, b"/Contents", obj_start)
        .filter(|&at| at < obj_end)
        .context("the signature's /Contents")?;
    let lt = find(out, b"<", contents).context("the signature's hex string")?;
    let gt = find(out, b">", lt).context("the end of the signature's hex string")?;
    let range = [0, lt, gt + 1, out.len() - (gt + 1)];
    let key = find(out, b"/ByteRange", obj_start)
        .filter(|&at| at < obj_end)
        .context("the signature's /ByteRange")?;
    let open = find(out, b"[", key).context("the /ByteRange array")?;
    let close = find(out, b"]", open).context("the end of the /ByteRange array")?;
    let text = format!("{} {} {} {}", range[0], range[1], range[2], range[3]);
    let slot = &mut out[open + 1..close];
    if text.len() > slot.len() {
        bail!("the byte range does not fit its placeholder");
    }
    slot.fill(b' ');
    slot[..text.len()].copy_from_slice(text.as_bytes());
    Ok(range)
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

fn hex_upper(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02X}");
            s
        })
}

/// Checks the last signature of `pdf` (the one whose byte range reaches furthest).
/// `by_this_service` is left false for the caller to decide.
pub fn check(pdf: &[u8]) -> PdfCheck {
    let mut found = PdfCheck::default();
    if let Err(e) = check_into(pdf, &mut found) {
        found.problems.push(format!("{e:#}"));
    }
    found
}

fn check_into(pdf: &[u8], found: &mut PdfCheck) -> anyhow::Result<()> {
    let doc = Document::load_mem(pdf).map_err(|e| anyhow!("not a readable PDF: {e}"))?;
    let Some(sig) = last_signature(&doc) else {
        found.problems.push("the file has no signature".into());
        return Ok(());
    };
    found.signed = true;
    let range: Vec<usize> = sig
        .get(b"ByteRange")
        .and_then(Object::as_array)
        .map_err(|_| anyhow!("the signature has no /ByteRange"))?
        .iter()
        .map(|o| o.as_i64().ok().and_then(|n| usize::try_from(n).ok()))
        .collect::<Option<Vec<_>>>()
        .context("the /ByteRange holds something other than offsets")?;
    let [a, b, c, d] =
        <[usize; 4]>::try_from(range).map_err(|_| anyhow!("the /ByteRange is not four numbers"))?;
    if a.checked_add(b).is_none_or(|e| e > pdf.len())
        || c.checked_add(d).is_none_or(|e| e > pdf.len())
        || a + b > c
    {
        bail!("the /ByteRange points outside the file");
    }
    let contents = match sig.get(b"Contents") {
        Ok(Object::String(bytes, _)) => bytes.clone(),
        _ => bail!("the signature has no /Contents"),
    };
    let der = first_tlv(&contents).context("the signature value is not DER")?;
    // Whole: the ranges start and end at the file's ends, and the one gap between them
    // is exactly this signature's `/Contents` as plain hex, the CMS followed by nothing
    // but zero padding (what pdfsig calls "total document signed").
    let gap_is_contents = pdf.get(b) == Some(&b'<')
        && c > b + 1
        && pdf.get(c - 1) == Some(&b'>')
        && pdf[b + 1..c - 1].eq_ignore_ascii_case(hex_upper(&contents).as_bytes())
        && contents[der.len()..].iter().all(|&z| z == 0);
    found.whole_file = a == 0 && c + d == pdf.len() && gap_is_contents;
    if !found.whole_file {
        found.problems.push(
            "the signature does not cover the whole file: it was changed or added to after signing"
                .into(),
        );
    }
    let mut h = Sha256::new();
    h.update(&pdf[a..a + b]);
    h.update(&pdf[c..c + d]);
    let digest: [u8; 32] = h.finalize().into();
    let checked = cms::check_detached(der, &digest)?;
    found.valid = checked.valid;
    found.signer = checked.subject;
    found.certificate_sha256 = sha256_hex(&checked.certificate_der);
    found.timestamp_ms = checked.timestamp_ms;
    found.timestamp_valid = checked.timestamp_valid;
    found.problems.extend(checked.problems);
    found.signed_at_ms = match sig.get(b"M") {
        Ok(Object::String(m, _)) => parse_pdf_date(&String::from_utf8_lossy(m)),
        _ => None,
    };
    // The metadata of the signed revision.
    let signed_rev = if found.whole_file {
        doc
    } else {
        Document::load_mem(&pdf[..c + d]).map_err(|e| anyhow!("the signed revision: {e}"))?
    };
    if let Ok(info) = signed_rev
        .trailer
        .get(b"Info")
        .and_then(Object::as_reference)
        .and_then(|id| signed_rev.get_dictionary(id))
    {
        found.document_id = text(info, b"EsignDocumentId");
        found.log_head = text(info, b"EsignLogHead");
    }
    Ok(())
}

fn text(d: &Dictionary, key: &[u8]) -> String {
    match d.get(key) {
        Ok(Object::String(s, _)) => String::from_utf8_lossy(s).into_owned(),
        _ => String::new(),
    }
}

/// The signature dictionary whose byte range ends last.
fn last_signature(doc: &Document) -> Option<&Dictionary> {
    doc.objects
        .values()
        .filter_map(|o| o.as_dict().ok())
        .filter(|d| d.has(b"ByteRange") && d.has(b"Contents"))
        .max_by_key(|d| {
            d.get(b"ByteRange")
                .and_then(Object::as_array)
                .ok()
                .and_then(|r| Some(r.get(2)?.as_i64().ok()? + r.get(3)?.as_i64().ok()?))
                .unwrap_or(0)
        })
}

/// The first DER value of `bytes` (the reserved space is padded with zeros after it).
fn first_tlv(bytes: &[u8]) -> anyhow::Result<&[u8]> {
    use der::{Decode, Encode};
    let mut reader = der::SliceReader::new(bytes)?;
    let header = der::Header::decode(&mut reader)?;
    let len = usize::try_from((header.encoded_len()? + header.length)?)?;
    bytes.get(..len).context("the signature value is cut short")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pdf_dates_round_trip_and_offsets_apply() {
        let ms = 1_795_000_000_000;
        assert_eq!(parse_pdf_date(&pdf_date(ms)), Some(ms));
        assert_eq!(
            parse_pdf_date("D:20260101120000+01'00'"),
            parse_pdf_date("D:20260101110000Z")
        );
    }
}
