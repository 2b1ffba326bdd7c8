//! Any body with any boundary: parts or an error, never a panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (String, Vec<u8>)| {
    let (boundary, body) = input;
    let content_type = format!("multipart/form-data; boundary={boundary}");
    if let Ok(parts) = esign_formats::multipart::decode(&content_type, bytes::Bytes::from(body)) {
        assert!(parts.len() <= esign_formats::multipart::MAX_PARTS);
    }
});
