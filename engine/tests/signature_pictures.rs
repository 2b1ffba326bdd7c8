//! A signature or initials given as a picture (issue 50 item 4): a PNG or a JPEG in
//! `signature.image` / `initials.image`, `signature.type` `uploaded`. Accepted and
//! recorded as given; refused with 400 `invalid_image` naming the member when it is
//! neither PNG nor JPEG, too large in bytes or in pixels, or has no readable header.

mod common;

use base64::Engine as _;
use common::*;
use esign_engine::StampContent;
use esign_engine::memory::MemoryPlatform;
use serde_json::{Value, json};

/// A 16 x 8 baseline JPEG (written by Chromium's canvas).
const JPEG_16X8: &str = "/9j/4AAQSkZJRgABAQAAAQABAAD/4gHYSUNDX1BST0ZJTEUAAQEAAAHIAAAAAAQwAABtbnRyUkdCIFhZWiAH4AABAAEAAAAAAABhY3NwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAQAA9tYAAQAAAADTLQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAlkZXNjAAAA8AAAACRyWFlaAAABFAAAABRnWFlaAAABKAAAABRiWFlaAAABPAAAABR3dHB0AAABUAAAABRyVFJDAAABZAAAAChnVFJDAAABZAAAAChiVFJDAAABZAAAAChjcHJ0AAABjAAAADxtbHVjAAAAAAAAAAEAAAAMZW5VUwAAAAgAAAAcAHMAUgBHAEJYWVogAAAAAAAAb6IAADj1AAADkFhZWiAAAAAAAABimQAAt4UAABjaWFlaIAAAAAAAACSgAAAPhAAAts9YWVogAAAAAAAA9tYAAQAAAADTLXBhcmEAAAAAAAQAAAACZmYAAPKnAAANWQAAE9AAAApbAAAAAAAAAABtbHVjAAAAAAAAAAEAAAAMZW5VUwAAACAAAAAcAEcAbwBvAGcAbABlACAASQBuAGMALgAgADIAMAAxADb/2wBDAAYEBQYFBAYGBQYHBwYIChAKCgkJChQODwwQFxQYGBcUFhYaHSUfGhsjHBYWICwgIyYnKSopGR8tMC0oMCUoKSj/2wBDAQcHBwoIChMKChMoGhYaKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCj/wAARCAAIABADASIAAhEBAxEB/8QAFQABAQAAAAAAAAAAAAAAAAAAAAb/xAAhEAABAwQBBQAAAAAAAAAAAAABAgMEAAUGEQcSExQVIf/EABUBAQEAAAAAAAAAAAAAAAAAAAIE/8QAGhEAAgIDAAAAAAAAAAAAAAAAABIBAxEUkf/aAAwDAQACEQMRAD8Arsl425RnZHdZdszPxoEiW67HZ9rKR221LJSnpSnQ0CBofBTGuNuUYOR2qXc8z8mBHltOyGfayl9xtKwVJ6VJ0dgEaPw0pVm7Yq4jgEg//9k=";
const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn unb64(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
}

/// The JPEG with the frame header's (SOF0's) height and width set to `h` x `w`.
fn jpeg_sized(h: u16, w: u16) -> Vec<u8> {
    let mut bytes = unb64(JPEG_16X8);
    let at = bytes
        .windows(2)
        .position(|p| p == [0xFF, 0xC0])
        .expect("a baseline frame header");
    bytes[at + 5..at + 7].copy_from_slice(&h.to_be_bytes());
    bytes[at + 7..at + 9].copy_from_slice(&w.to_be_bytes());
    bytes
}

/// A sent document with one signer, who has a signature field and is asked for
/// initials; the signer's `sign` path.
fn signer(p: &mut MemoryPlatform) -> (String, String, String) {
    let t = token(p);
    let (id, doc) = draft(
        p,
        &t,
        json!([{"email": "a@y.se", "first_name": "Ann"}]),
        json!({"is_signing_initials": true}),
    );
    let ann = doc["recipients"][0]["id"].as_str().unwrap().to_string();
    let f = json!({"field_type": "signature", "page_num": 1, "field_left": 100, "field_top": 600,
                   "field_width": 200, "field_height": 40, "recipient_id": ann});
    let (s, b) = api(
        p,
        &t,
        "POST",
        &format!("/v1/documents/{id}/fields"),
        Some(f),
    );
    assert_eq!(s, 200, "{b}");
    let (s, sent) = api(p, &t, "POST", &format!("/v1/documents/{id}/send"), None);
    assert_eq!(s, 200, "{sent}");
    finish_render(p, 3);
    let secret = secret_of(&sent, 0);
    (t, id, secret)
}

#[test]
fn a_picture_that_is_not_a_bounded_png_or_jpeg_is_refused_naming_its_member() {
    let mut p = bootstrapped();
    let (_, _, secret) = signer(&mut p);
    let sign = format!("/v1/recipient/{secret}/sign");
    let jpeg = |bytes: &[u8]| format!("data:image/jpeg;base64,{}", b64(bytes));
    let too_many_bytes = {
        let mut b = unb64(JPEG_16X8);
        b.resize(256 * 1024 + 1, 0);
        b
    };
    let mut undecodable = unb64(JPEG_16X8);
    undecodable.truncate(20);
    let cases = [
        // Neither PNG nor JPEG: a GIF.
        (
            "data:image/gif;base64,R0lGODlhAQABAAAAACw=".to_string(),
            "PNG or a JPEG",
        ),
        (
            format!("data:image/jpeg;base64,{}", b64(b"GIF89a....")),
            "PNG or a JPEG",
        ),
        (jpeg(&too_many_bytes), "larger than 256 KiB"),
        (jpeg(&jpeg_sized(2001, 2001)), "2001×2001 pixels"),
        (jpeg(&undecodable), "cannot be read"),
        (jpeg(&jpeg_sized(0, 16)), "cannot be read"),
    ];
    for (member, text_member) in [("signature", "name"), ("initials", "text")] {
        for (image, says) in &cases {
            let mut body = json!({
                "signature": {"type": "typed", "name": "Ann"},
                "initials": {"text": "AL"},
            });
            body[member] = json!({"type": "uploaded", text_member: "Ann", "image": image});
            let (s, r) = recipient(&mut p, "POST", &sign, Some(body));
            let text = r["description"].as_str().unwrap_or("");
            assert_eq!(
                (s, r["error"].as_str().unwrap_or("")),
                (400, "invalid_image"),
                "{member}, {says}: {r}"
            );
            assert!(
                text.contains(&format!("`{member}.image`")) && text.contains(says),
                "{member}, {says}: {r}"
            );
        }
    }
    // An uploaded signature needs its picture.
    let (s, r) = recipient(
        &mut p,
        "POST",
        &sign,
        Some(json!({"signature": {"type": "uploaded", "name": "Ann"}, "initials": {"text": "AL"}})),
    );
    assert_eq!(
        (s, r["error"].as_str().unwrap()),
        (400, "missing_field"),
        "{r}"
    );
    assert!(
        r["description"]
            .as_str()
            .unwrap()
            .contains("`signature.image`")
    );
}

#[test]
fn an_uploaded_jpeg_signature_and_png_initials_are_recorded_and_drawn_as_given() {
    let mut p = bootstrapped();
    let (_, _, secret) = signer(&mut p);
    let blobs_before: Vec<String> = p.blobs.keys().cloned().collect();
    let (s, r) = recipient(
        &mut p,
        "POST",
        &format!("/v1/recipient/{secret}/sign"),
        Some(json!({
            "signature": {"type": "uploaded", "name": "Ann Tester", "image": format!("data:image/jpeg;base64,{JPEG_16X8}")},
            "initials": {"type": "uploaded", "text": "AT", "image": format!("data:image/png;base64,{PNG_1X1}")},
        })),
    );
    assert_eq!(s, 200, "{r}");
    // Both pictures are kept byte for byte.
    let new: Vec<&Vec<u8>> = p
        .blobs
        .iter()
        .filter(|(k, _)| !blobs_before.contains(k))
        .map(|(_, v)| v)
        .collect();
    assert!(
        new.contains(&&unb64(JPEG_16X8)),
        "the JPEG is stored as given"
    );
    assert!(new.contains(&&unb64(PNG_1X1)), "the PNG is stored as given");
    // The signer's view says how they signed.
    let (_, view) = recipient(&mut p, "GET", &format!("/v1/recipient/{secret}"), None);
    let signature: &Value = &view["signature"];
    assert_eq!(signature["type"], "uploaded", "{view}");
    assert_eq!(signature["name"], "Ann Tester");
    // The sealing render draws the JPEG at the signature field.
    let order = finish_render(&mut p, 3);
    let jpeg_blob = order.stamps.iter().find_map(|s| match &s.content {
        StampContent::Image(b) if p.blobs.get(b) == Some(&unb64(JPEG_16X8)) => Some(b),
        _ => None,
    });
    assert!(jpeg_blob.is_some(), "{:?}", order.stamps);
}
