//! What handlers of several families read from a request body the same way: a file
//! given inline (a multipart `file`, or base64 `file_content` with `file_name`), and the
//! file of a library upload (inline, or an upload's `file_id`), and a PNG image given as
//! a base64 data URL (a signature's, the entity's logo). The domain gets the typed value
//! ([`GivenFile`], [`FileSource`], the PNG's bytes).

use crate::base::api::FormPart;
use crate::base::http::{self, ApiResult, Fields};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::signatures::MAX_IMAGE_BYTES;
use crate::domain::uploads::{FileSource, Given, GivenFile};
use serde_json::Value;

/// The file a request carries inline, if any (multipart part or base64 content).
pub fn given_file(f: &Fields) -> ApiResult<Option<GivenFile>> {
    if f.files.len() > 1 {
        return Err(http::ApiError::bad_request(
            "too_many_files",
            "only one file may be uploaded in one request",
        ));
    }
    if let Some(part) = f.files.first() {
        // A JSON body's `file_content` the host decoded and staged (`Fields::files`).
        if !f.text && part.name == "file_content" {
            return Ok(Some(GivenFile {
                name: f.optional_str("file_name")?.unwrap_or_default(),
                content: staged_content(part),
            }));
        }
        if part.name != "file" {
            return Err(http::ApiError::bad_request(
                "invalid_field",
                format!("a file part must be named `file`, not `{}`", part.name),
            ));
        }
        let file = GivenFile {
            name: part.filename.clone().unwrap_or_default(),
            content: staged_content(part),
        };
        if file.size() == 0 {
            return Err(http::ApiError::bad_request(
                "invalid_field",
                "the uploaded file is empty",
            ));
        }
        return Ok(Some(file));
    }
    if let Some(content) = f.optional_str("file_content")? {
        let bytes = decode_base64("file_content", &content)?;
        let name = f.optional_str("file_name")?.unwrap_or_default();
        return Ok(Some(GivenFile {
            name,
            content: Given::Bytes(bytes),
        }));
    }
    Ok(None)
}

/// A file part's content: the host's staged bytes, or the part's own.
fn staged_content(part: &FormPart) -> Given {
    match &part.staged {
        Some(blob) => Given::Staged {
            blob: blob.clone(),
            head: part.data.clone(),
        },
        None => Given::Bytes(part.data.clone()),
    }
}

/// The file of a library upload (video or attachment): inline, or a finished upload's
/// (`file_id`); `uploads::library_file` finds the upload. A `file_url` is fetched by
/// `POST /v1/upload` first.
pub fn file_source(f: &Fields) -> ApiResult<FileSource> {
    // Every member is read (and type-checked) whichever source is used.
    let file_id = f.optional_str("file_id")?.filter(|i| !i.is_empty());
    let file_url = f.optional_str("file_url")?.filter(|u| !u.is_empty());
    f.optional_str("file_name")?;
    if let Some(file) = given_file(f)? {
        return Ok(FileSource::Given(file));
    }
    if let Some(id) = file_id {
        return Ok(FileSource::Upload(id));
    }
    if file_url.is_some() {
        return Err(http::ApiError::bad_request(
            "invalid_field",
            "a file_url is fetched by POST /v1/upload: send its file_id here once its file_status is ready",
        ));
    }
    Err(http::ApiError::bad_request(
        "missing_field",
        "send the file as a multipart part `file`, as base64 `file_content` with `file_name`, or as the `file_id` of an upload",
    ))
}

/// Decodes base64 (standard or URL-safe, padded or not) by `esign_work::base64_member`,
/// the rule a host that stages the member reads it by too.
pub fn decode_base64(field: &str, text: &str) -> ApiResult<Vec<u8>> {
    esign_work::base64_member::decode(text).ok_or_else(|| {
        http::ApiError::bad_request(
            "invalid_field",
            format!("the field `{field}` must be non-empty base64"),
        )
    })
}

/// The most pixels a drawn mark or a logo may have: what `formats` draws into the sealed
/// PDF (`formats::stamp::MAX_PIXELS`), so nothing accepted here is missing from it.
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

/// A JPEG's width and height, from its frame header, as `zune-jpeg` reads the headers
/// before the first scan (nothing is decoded); `None` when they cannot be read, or
/// for a CMYK or YCCK JPEG (drawn as it is into the PDF, only grey and colour JPEGs
/// look the same in every reader).
fn jpeg_size(bytes: &[u8]) -> Option<(u32, u32)> {
    use zune_jpeg::zune_core::{
        bytestream::ZCursor, colorspace::ColorSpace, options::DecoderOptions,
    };
    // The largest a JPEG can say, so that its size is answered, never a decoder limit.
    let options = DecoderOptions::default()
        .set_max_width(usize::from(u16::MAX))
        .set_max_height(usize::from(u16::MAX));
    let mut decoder = zune_jpeg::JpegDecoder::new_with_options(ZCursor::new(bytes), options);
    decoder.decode_headers().ok()?;
    match decoder.input_colorspace()? {
        ColorSpace::YCbCr | ColorSpace::RGB | ColorSpace::Luma => {}
        _ => return None,
    }
    let info = decoder.info()?;
    Some((u32::from(info.width), u32::from(info.height)))
}

/// Which pictures a member takes.
#[derive(Clone, Copy, PartialEq)]
enum Kinds {
    Png,
    PngOrJpeg,
}

/// A PNG given as a base64 `data:image/png;base64,...` URL (or bare base64) in `v`:
/// `None` for null or empty; 400 `invalid_image` for anything but a PNG within the
/// size limits ([`MAX_IMAGE_BYTES`], [`MAX_IMAGE_PIXELS`]): the logo in
/// `PUT /v1/entity`.
pub fn png_of(v: &Value, name: &str) -> ApiResult<Option<Vec<u8>>> {
    image_of(v, name, Kinds::Png)
}

/// A picture of a signature or initials in the `sign` body: as [`png_of`], or a JPEG
/// (`data:image/jpeg;base64,...`) within the same limits. Kept as given: the sealed
/// PDF draws a PNG with its transparency, a JPEG as it is (`formats::stamp`).
pub fn picture_of(v: &Value, name: &str) -> ApiResult<Option<Vec<u8>>> {
    image_of(v, name, Kinds::PngOrJpeg)
}

fn image_of(v: &Value, name: &str, kinds: Kinds) -> ApiResult<Option<Vec<u8>>> {
    use base64::Engine as _;
    let bad = http::ApiError::bad_request;
    let (what, readable) = match kinds {
        Kinds::Png => ("a PNG", "a PNG"),
        Kinds::PngOrJpeg => ("a PNG or a JPEG", "a PNG or a grey or colour JPEG"),
    };
    let s = match v {
        Value::Null => return Ok(None),
        Value::String(s) if s.is_empty() => return Ok(None),
        Value::String(s) => s,
        _ => return Err(bad("invalid_field", format!("`{name}` must be a string"))),
    };
    let data = ["data:image/png;base64,", "data:image/jpeg;base64,"]
        .iter()
        .find_map(|p| s.strip_prefix(p))
        .unwrap_or(s);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|_| {
            bad(
                "invalid_image",
                format!("`{name}` must be {what} as a base64 data URL"),
            )
        })?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(bad(
            "invalid_image",
            format!("`{name}` is larger than {} KiB", MAX_IMAGE_BYTES / 1024),
        ));
    }
    let size = if bytes.starts_with(b"\x89PNG") {
        png_size(&bytes)
    } else if kinds == Kinds::PngOrJpeg && bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        jpeg_size(&bytes)
    } else {
        return Err(bad(
            "invalid_image",
            format!("`{name}` is not {what} image"),
        ));
    };
    let Some((w, h)) = size.filter(|&(w, h)| w > 0 && h > 0) else {
        return Err(bad(
            "invalid_image",
            format!("`{name}` cannot be read as {readable}"),
        ));
    };
    if u64::from(w) * u64::from(h) > MAX_IMAGE_PIXELS {
        return Err(bad(
            "invalid_image",
            format!(
                "`{name}` is {w}×{h} pixels; an image here may have at most {MAX_IMAGE_PIXELS} pixels"
            ),
        ));
    }
    Ok(Some(bytes))
}
