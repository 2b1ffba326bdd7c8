//! Any file claimed to be Word: its placeholders listed and filled, or an error, never
//! a crash or a hang. Starts from a real .docx half of the time so the zip and XML
//! layers are reached.
#![no_main]

use arbitrary::Arbitrary;
use esign_formats::office;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    /// Paragraphs of a generated .docx, or raw bytes when `raw` is set.
    paragraphs: Vec<String>,
    raw: Option<Vec<u8>>,
    values: Vec<(String, String)>,
}

fuzz_target!(|input: Input| {
    let docx = match input.raw {
        Some(raw) => raw,
        None => {
            let paragraphs: Vec<&str> = input.paragraphs.iter().map(String::as_str).collect();
            office::sample_docx(&paragraphs)
        }
    };
    let _ = office::is_docx(&docx);
    let _ = office::docx_placeholders(&docx);
    if let Ok(filled) = office::fill_docx(&docx, &input.values) {
        let _ = office::docx_placeholders(&filled);
    }
    let _ = office::strip_external_links(&docx);
});
