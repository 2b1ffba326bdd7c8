//! How records are stored: a schema-version byte, then postcard; and key ranges.

#[allow(unused_imports)]
use crate::base::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;

const SCHEMA_V1: u8 = 1;

/// `[prefix, prefix + 0xff)`: every key that starts with `prefix`.
pub fn prefix_range(prefix: &str) -> (Vec<u8>, Vec<u8>) {
    let start = prefix.as_bytes().to_vec();
    let mut end = start.clone();
    end.push(0xff);
    (start, end)
}

/// Encodes a record with its schema-version byte.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = vec![SCHEMA_V1];
    out.extend(postcard::to_allocvec(value).expect("records always serialize"));
    out
}

/// Decodes a record written by [`encode`]. A record that does not decode is corruption
/// or a bug, never a client error: it panics, which traps the component, so the host
/// rolls the call back and answers 500 with a `trace_id`.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> T {
    match try_decode(bytes) {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

/// [`decode`] for the store check, which reports an unreadable record instead of
/// trapping.
pub fn try_decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    match bytes.split_first() {
        Some((&SCHEMA_V1, rest)) => {
            postcard::from_bytes(rest).map_err(|e| format!("a stored record is unreadable: {e}"))
        }
        _ => Err("a stored record has an unknown schema version".into()),
    }
}

/// Encodes a record followed by its extension: members added after the record's layout
/// was fixed (postcard has no optional trailing members). Records written before the
/// extension existed end where the record does and decode with the extension's
/// defaults ([`decode_ext`]); a later extension is appended after this one the same way.
pub fn encode_ext<T: Serialize, E: Serialize>(value: &T, ext: &E) -> Vec<u8> {
    let mut out = encode(value);
    out.extend(postcard::to_allocvec(ext).expect("records always serialize"));
    out
}

/// Decodes a record written by [`encode_ext`] (or by [`encode`], before it had an
/// extension: then the extension is `E::default()`). Traps like [`decode`] on corruption.
pub fn decode_ext<T: DeserializeOwned, E: DeserializeOwned + Default>(bytes: &[u8]) -> (T, E) {
    match try_decode_ext(bytes) {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

/// [`decode_ext`] for the store check.
pub fn try_decode_ext<T: DeserializeOwned, E: DeserializeOwned + Default>(
    bytes: &[u8],
) -> Result<(T, E), String> {
    let (value, rest) = take_record::<T>(bytes)?;
    Ok((value, take_ext::<E>(rest)?.0))
}

/// Encodes a record with two extensions: the second holds members added after the
/// first's layout was fixed ([`try_decode_ext2`]).
pub fn encode_ext2<T: Serialize, E: Serialize, F: Serialize>(
    value: &T,
    ext: &E,
    ext2: &F,
) -> Vec<u8> {
    let mut out = encode_ext(value, ext);
    out.extend(postcard::to_allocvec(ext2).expect("records always serialize"));
    out
}

/// Decodes a record written by [`encode_ext2`], [`encode_ext`] or [`encode`]: an
/// extension the record ends before is its `Default`.
pub fn try_decode_ext2<T, E, F>(bytes: &[u8]) -> Result<(T, E, F), String>
where
    T: DeserializeOwned,
    E: DeserializeOwned + Default,
    F: DeserializeOwned + Default,
{
    let (value, rest) = take_record::<T>(bytes)?;
    let (ext, rest) = take_ext::<E>(rest)?;
    Ok((value, ext, take_ext::<F>(rest)?.0))
}

fn unreadable(e: postcard::Error) -> String {
    format!("a stored record is unreadable: {e}")
}

/// The record after its schema-version byte, and the bytes after it.
fn take_record<T: DeserializeOwned>(bytes: &[u8]) -> Result<(T, &[u8]), String> {
    match bytes.split_first() {
        Some((&SCHEMA_V1, rest)) => postcard::take_from_bytes::<T>(rest).map_err(unreadable),
        _ => Err("a stored record has an unknown schema version".into()),
    }
}

/// An extension, or its default where the record ends before it.
fn take_ext<E: DeserializeOwned + Default>(rest: &[u8]) -> Result<(E, &[u8]), String> {
    if rest.is_empty() {
        Ok((E::default(), rest))
    } else {
        postcard::take_from_bytes::<E>(rest).map_err(unreadable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Serialize, Deserialize, Debug, PartialEq, Default)]
    struct Old {
        a: String,
        b: u32,
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq, Default)]
    struct Ext {
        folder: String,
        n: Option<u64>,
    }

    #[test]
    fn a_record_written_before_its_extension_reads_with_defaults() {
        let old = Old {
            a: "x".into(),
            b: 7,
        };
        let bytes = encode(&old);
        let (back, ext): (Old, Ext) = decode_ext(&bytes);
        assert_eq!((back, ext), (old, Ext::default()));
        let ext = Ext {
            folder: "f1".into(),
            n: Some(3),
        };
        let both = encode_ext(
            &Old {
                a: "y".into(),
                b: 1,
            },
            &ext,
        );
        let (rec, got): (Old, Ext) = decode_ext(&both);
        assert_eq!((rec.a.as_str(), got), ("y", ext));
        // Readers that know only the record still read it.
        assert_eq!(decode::<Old>(&both).b, 1);
        assert!(try_decode_ext::<Old, Ext>(&both[..both.len() - 1]).is_err());
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq, Default)]
    struct Ext2 {
        language: String,
    }

    #[test]
    fn a_record_written_before_its_second_extension_reads_with_defaults() {
        let old = Old {
            a: "x".into(),
            b: 7,
        };
        let ext = Ext {
            folder: "f".into(),
            n: None,
        };
        let (r, e, e2): (Old, Ext, Ext2) = try_decode_ext2(&encode(&old)).unwrap();
        assert_eq!((r, e, e2), (old, Ext::default(), Ext2::default()));
        let one = encode_ext(&Old::default(), &ext);
        let (_, e, e2): (Old, Ext, Ext2) = try_decode_ext2(&one).unwrap();
        assert_eq!((e, e2), (ext, Ext2::default()));
        let ext2 = Ext2 {
            language: "sv".into(),
        };
        let two = encode_ext2(&Old::default(), &Ext::default(), &ext2);
        let (_, e, got): (Old, Ext, Ext2) = try_decode_ext2(&two).unwrap();
        assert_eq!((e, got), (Ext::default(), ext2));
        // A reader that knows one extension still reads the record and the first.
        assert!(try_decode_ext::<Old, Ext>(&two).is_ok());
    }
}
