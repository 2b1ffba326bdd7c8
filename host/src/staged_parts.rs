//! File parts kept out of the engine (WIT `form-part.staged`, esign:engine 0.5.0).
//!
//! A multipart file part can be megabytes. Passed whole it was copied into the
//! instance, copied again by the engine's parsing and copied out when stored. The
//! server instead keeps each file part's bytes here while its request is answered
//! ([`Staging`]), and the engine sees only the part's first bytes and the blob it
//! becomes (a fresh id, its size and SHA-256). When the engine stores the file,
//! `files.keep` moves these bytes into the call's transaction; when it does not (a 4xx,
//! a route that takes no file), they are dropped with the request.
//!
//! Ids are random (128 bits), drawn by the host and known only to the request's own
//! calls, so a call cannot keep another request's part.

use crate::bindings::{BlobInfo, FormPart};
use crate::ids::{random_id, sha256_hex};
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

/// At most how many first bytes of a staged part the engine sees (`STAGED_HEAD` in
/// the engine: enough to tell a file's kind).
pub const HEAD: usize = 1024;

/// The staged parts of every request being answered, by blob id, with what they
/// become.
static STAGED: LazyLock<Mutex<HashMap<String, (Bytes, BlobInfo)>>> =
    LazyLock::new(Default::default);

/// The staged parts of one request: dropped (and their bytes freed) with it.
#[derive(Default)]
pub struct Staging {
    ids: Vec<String>,
}

impl Staging {
    /// A file part staged: the bytes stay here, the part the engine gets carries their
    /// head and the blob they become.
    pub fn stage(
        &mut self,
        name: String,
        filename: Option<String>,
        content_type: String,
        data: Bytes,
    ) -> FormPart {
        let id = random_id();
        let info = BlobInfo {
            id: id.clone(),
            size: data.len() as u64,
            sha256: sha256_hex(&data),
        };
        let head = data[..data.len().min(HEAD)].to_vec();
        STAGED
            .lock()
            .expect("never poisoned")
            .insert(id.clone(), (data, info.clone()));
        self.ids.push(id);
        FormPart {
            name,
            filename,
            content_type,
            data: head,
            staged: Some(info),
        }
    }
}

/// JSON bodies of at least this size have their `file_content` member staged
/// ([`Staging::stage_json_member`]); smaller ones reach the engine as they are.
pub const JSON_MEMBER_FROM: usize = 64 << 10;

impl Staging {
    /// A JSON object body's base64 `file_content` member (read as the engine reads it,
    /// `esign_work::base64_member`) taken out of the body and staged as a part of that
    /// name: the body without it, and the part. `None` leaves the body as it is (not an
    /// object, no such member, not base64: the engine answers it as before).
    pub fn stage_json_member(&mut self, body: &[u8]) -> Option<(Vec<u8>, FormPart)> {
        use serde_json::value::RawValue;
        let mut members: std::collections::BTreeMap<String, &RawValue> =
            serde_json::from_slice(body).ok()?;
        let raw = members.remove("file_content")?;
        // Borrowed when it has no escapes (base64 needs none), else read whole.
        let bytes = match serde_json::from_str::<&str>(raw.get()) {
            Ok(text) => esign_work::base64_member::decode(text),
            Err(_) => {
                esign_work::base64_member::decode(&serde_json::from_str::<String>(raw.get()).ok()?)
            }
        }?;
        let rest = serde_json::to_vec(&members).ok()?;
        let part = self.stage(
            "file_content".into(),
            None,
            String::new(),
            Bytes::from(bytes),
        );
        Some((rest, part))
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let mut staged = STAGED.lock().expect("never poisoned");
        for id in &self.ids {
            staged.remove(id);
        }
    }
}

/// The bytes of the staged part `id` and the blob they become, while its request is
/// being answered.
pub fn get(id: &str) -> Option<(Bytes, BlobInfo)> {
    STAGED.lock().expect("never poisoned").get(id).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_staged_part_lives_as_long_as_its_request() {
        let mut staging = Staging::default();
        let part = staging.stage(
            "file".into(),
            Some("a.pdf".into()),
            "application/pdf".into(),
            Bytes::from(vec![7u8; 3000]),
        );
        let info = part.staged.clone().unwrap();
        assert_eq!((info.size, part.data.len()), (3000, HEAD));
        assert_eq!(info.sha256, sha256_hex(&[7u8; 3000]));
        assert_eq!(get(&info.id).unwrap().0.len(), 3000);
        drop(staging);
        assert!(get(&info.id).is_none());
    }

    #[test]
    fn a_base64_member_is_taken_out_of_a_json_body() {
        let mut staging = Staging::default();
        // `\/` escapes the slash of base64's alphabet: "P/8=" is bytes 3f ff.
        let body = br#"{"name": "N", "file_content": "data:application/pdf;base64,P\/8=", "file_name": "a.pdf"}"#;
        let (rest, part) = staging.stage_json_member(body).unwrap();
        let rest: serde_json::Value = serde_json::from_slice(&rest).unwrap();
        assert_eq!(rest, serde_json::json!({"name": "N", "file_name": "a.pdf"}));
        assert_eq!((part.name.as_str(), part.filename), ("file_content", None));
        let (bytes, info) = get(&part.staged.unwrap().id).unwrap();
        assert_eq!((&bytes[..], info.size), (&[0x3f, 0xff][..], 2));
        // Left to the engine: no member, not base64, not a string, not an object.
        assert!(staging.stage_json_member(br#"{"name": "N"}"#).is_none());
        assert!(
            staging
                .stage_json_member(br#"{"file_content": "%%%"}"#)
                .is_none()
        );
        assert!(
            staging
                .stage_json_member(br#"{"file_content": 5}"#)
                .is_none()
        );
        assert!(staging.stage_json_member(b"[1]").is_none());
    }
}
