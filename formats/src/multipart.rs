//! `multipart/form-data` bodies, decoded with `multer` (the parser axum uses): from a
//! body already in memory ([`decode`]), or as it streams in ([`read`]).

use bytes::Bytes;
use futures_util::FutureExt;

/// Most parts accepted in one body.
pub const MAX_PARTS: usize = 200;

/// One part of a body.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// The part's field name (empty when it has none).
    pub name: String,
    /// The file name, for file parts.
    pub filename: Option<String>,
    /// The media type, lower case and without parameters; empty when none was given.
    pub content_type: String,
    /// A slice of the body's buffer (no copy).
    pub data: Bytes,
}

/// Decodes `body` as sent with `content_type` (which carries the boundary). An error
/// says what is wrong, for a 400.
pub fn decode(content_type: &str, body: Bytes) -> Result<Vec<Part>, String> {
    let stream = futures_util::stream::once(async move { Ok::<_, std::io::Error>(body) });
    // The body is in memory, so no step ever waits: the future completes at once.
    read(content_type, stream)
        .now_or_never()
        .unwrap_or_else(|| Err(ReadError::Malformed("the body ended early".into())))
        .map_err(|e| match e {
            ReadError::Body(e) => e.to_string(),
            ReadError::Malformed(e) => e,
        })
}

/// Why a streamed body could not be decoded.
#[derive(Debug)]
pub enum ReadError<E> {
    /// Reading the body failed: the stream's own error (a length limit, a reset).
    Body(E),
    /// The body is not well-formed `multipart/form-data`: what is wrong, for a 400.
    Malformed(String),
}

/// Decodes a body as it streams in: each part's bytes are gathered once, from the
/// stream's chunks (no copy of the whole body beside them).
pub async fn read<S, E>(
    content_type: &str,
    body: S,
) -> Result<Vec<Part>, ReadError<Box<dyn std::error::Error + Send + Sync>>>
where
    S: futures_util::Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let malformed = |e: multer::Error| match e {
        multer::Error::StreamReadFailed(e) => ReadError::Body(e),
        e => ReadError::Malformed(e.to_string()),
    };
    let boundary =
        multer::parse_boundary(content_type).map_err(|e| ReadError::Malformed(e.to_string()))?;
    let constraints = multer::Constraints::new().size_limit(multer::SizeLimit::new());
    let mut multipart = multer::Multipart::with_constraints(body, boundary, constraints);
    let mut parts = Vec::new();
    while let Some(field) = multipart.next_field().await.map_err(malformed)? {
        if parts.len() >= MAX_PARTS {
            return Err(ReadError::Malformed(format!("more than {MAX_PARTS} parts")));
        }
        let name = field.name().unwrap_or("").to_string();
        let filename = field.file_name().map(str::to_string);
        let content_type = field
            .content_type()
            .map(|m| m.essence_str().to_ascii_lowercase())
            .unwrap_or_default();
        let data = field.bytes().await.map_err(malformed)?;
        parts.push(Part {
            name,
            filename,
            content_type,
            data,
        });
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_decoded_and_bad_bodies_are_errors() {
        let body = "--b\r\ncontent-disposition: form-data; name=\"name\"\r\n\r\nOffer\r\n--b\r\ncontent-disposition: form-data; name=\"file\"; filename=\"a.pdf\"\r\ncontent-type: Application/PDF\r\n\r\n%PDF\r\n--b--\r\n";
        let parts = decode("multipart/form-data; boundary=b", Bytes::from(body)).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(
            (parts[0].name.as_str(), &parts[0].data[..]),
            ("name", &b"Offer"[..])
        );
        assert_eq!(parts[1].filename.as_deref(), Some("a.pdf"));
        assert_eq!(parts[1].content_type, "application/pdf");
        assert!(decode("multipart/form-data", Bytes::from(body)).is_err());
        assert!(
            decode(
                "multipart/form-data; boundary=b",
                Bytes::from("--b\r\nbroken")
            )
            .is_err()
        );
        let many: String = (0..=MAX_PARTS)
            .map(|i| format!("--b\r\ncontent-disposition: form-data; name=\"f{i}\"\r\n\r\nx\r\n"))
            .collect::<String>()
            + "--b--\r\n";
        assert!(decode("multipart/form-data; boundary=b", Bytes::from(many)).is_err());
    }
}
