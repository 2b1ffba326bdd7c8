//! Any upload: inspected as a PDF (page sizes, encryption, damage) or refused with a
//! reason, never a crash or a hang. Panics inside lopdf are caught by `inspect` itself
//! (it answers `invalid-pdf`); only what escapes counts as a crash here.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = esign_formats::pdf::inspect(data);
});
