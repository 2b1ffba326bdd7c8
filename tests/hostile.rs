//! Hostile files, black-box: what a member can upload never stops the service or
//! starves another tenant. An image that decodes to gigabytes, a file of thousands of
//! pages, a render past its memory cap or its deadline, two tenants' long renders
//! beside a third tenant's import, and a shutdown in the middle of a render.

mod common;

use common::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// A one-page PDF whose page draws one image of `width` × `height` pixels with
/// `components` colour components (1 grey, 3 RGB), every pixel zero, Flate-compressed:
/// a few hundred KB that decode to `width × height × components` bytes.
fn image_pdf(width: u64, height: u64, components: u64) -> Vec<u8> {
    let raw = vec![0u8; (width * height * components) as usize];
    let data = miniz_oxide::deflate::compress_to_vec_zlib(&raw, 1);
    drop(raw);
    one_image_pdf(width, height, components, "FlateDecode", data)
}

/// A one-page PDF whose page draws one baseline JPEG of `width` × `height` pixels in
/// colour, one grey level: some hundred KB that decode to `width × height × 3` bytes.
fn jpeg_pdf(width: u16, height: u16) -> Vec<u8> {
    let pixels = vec![200u8; usize::from(width) * usize::from(height) * 3];
    let mut jpeg = Vec::new();
    jpeg_encoder::Encoder::new(&mut jpeg, 80)
        .encode(&pixels, width, height, jpeg_encoder::ColorType::Rgb)
        .unwrap();
    one_image_pdf(width.into(), height.into(), 3, "DCTDecode", jpeg)
}

/// A one-page PDF whose page draws one image, its `data` encoded by `filter`.
fn one_image_pdf(width: u64, height: u64, components: u64, filter: &str, data: Vec<u8>) -> Vec<u8> {
    let space = if components == 1 {
        "/DeviceGray"
    } else {
        "/DeviceRGB"
    };
    let content = b"q 612 0 0 792 0 0 cm /Im0 Do Q".to_vec();
    let objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
           /Resources << /XObject << /Im0 5 0 R >> >> /Contents 4 0 R >>"
            .to_vec(),
        [
            format!("<< /Length {} >>\nstream\n", content.len()).into_bytes(),
            content,
            b"\nendstream".to_vec(),
        ]
        .concat(),
        [
            format!(
                "<< /Type /XObject /Subtype /Image /Width {width} /Height {height} \
                 /ColorSpace {space} /BitsPerComponent 8 /Filter /{filter} /Length {} >>\nstream\n",
                data.len()
            )
            .into_bytes(),
            data,
            b"\nendstream".to_vec(),
        ]
        .concat(),
    ];
    let mut pdf = b"%PDF-1.7\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(pdf.len());
        pdf.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        pdf.extend_from_slice(body);
        pdf.extend_from_slice(b"\nendobj\n");
    }
    let xref = pdf.len();
    pdf.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for o in offsets {
        pdf.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    pdf.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    pdf
}

/// Creates a document from `pdf` (inline) and waits for its import to end.
fn import(s: &Server, t: &str, name: &str, pdf: &[u8]) -> (String, Value) {
    let doc = s.create_doc(
        t,
        &json!({
            "name": name,
            "file_content": b64(pdf),
            "file_name": "file.pdf",
            "recipients": [signer("signer@example.com")],
        }),
    );
    let id = doc["id"].as_str().unwrap().to_string();
    s.wait_status(t, &id, "draft");
    let (status, d) = s.get_as(t, &format!("/v1/documents/{id}"));
    assert_eq!(status, 200, "{d}");
    (id, d)
}

fn pages(s: &Server, t: &str, id: &str) -> usize {
    let (status, p) = s.get_as(t, &format!("/v1/documents/{id}/pages"));
    assert_eq!(status, 200, "{p}");
    p["pages"].as_array().map_or(0, Vec::len)
}

/// The service still answers, and still imports and sends a small document.
fn still_serves(s: &Server, t: &str) {
    let (status, _) = s.get_as(t, "/v1/test");
    assert_eq!(status, 200);
    let id = pdf_draft(
        s,
        t,
        "After",
        json!([signer("after@example.com")]),
        json!({}),
    );
    let (status, sent) = s.post_json(t, &format!("/v1/documents/{id}/send"), &json!({}));
    assert_eq!(status, 200, "{sent}");
    s.wait_status(t, &id, "sent");
}

#[test]
fn an_image_of_400_million_pixels_fails_its_import_and_the_server_stays_small() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    let bomb = image_pdf(20_000, 20_000, 1);
    assert!(bomb.len() < 2 << 20, "a small file: {} bytes", bomb.len());
    let before = s.rss_bytes().unwrap();
    let (id, d) = import(&s, &t, "Bomb", &bomb);
    let error = d["import_error"].as_str().unwrap_or_default();
    assert!(error.contains("20000 × 20000 pixels"), "{d}");
    assert_eq!(pages(&s, &t, &id), 0);
    let after = s.rss_bytes().unwrap();
    eprintln!(
        "RSS {} MB before the bomb, {} MB after",
        before >> 20,
        after >> 20
    );
    assert!(
        after < before + (200 << 20),
        "RSS grew from {} MB to {} MB",
        before >> 20,
        after >> 20
    );
    still_serves(&s, &t);
}

#[test]
fn a_render_past_its_memory_cap_fails_with_the_reason_and_the_server_goes_on() {
    // 5 000 × 5 000 RGB is within the image budget, but its decoding needs more than
    // 64 MB: the sandbox stops it.
    let s = Server::start(&["--work-memory-mb", "64"]);
    let t = s.admin_token();
    let (id, d) = import(&s, &t, "Large image", &image_pdf(5_000, 5_000, 3));
    assert!(d["import_error"].is_null(), "{d}");
    let (status, sent) = s.post_json(&t, &format!("/v1/documents/{id}/send"), &json!({}));
    assert_eq!(status, 200, "{sent}");
    let mail = s.wait_mails(1, |m| m.contains("could not be prepared"));
    assert!(mail[0].contains("64 MB of memory"), "{}", mail[0]);
    s.wait_status(&t, &id, "draft");
    still_serves(&s, &t);
}

#[test]
fn a_large_jpeg_is_drawn_smaller_within_a_memory_cap_its_full_size_would_pass() {
    // 5 000 × 5 000 RGB decodes to 75 MB at full size, past a 64 MB cap (as the Flate
    // image above); a baseline JPEG is decoded at 1/4 of its size for the page images.
    let s = Server::start(&["--work-memory-mb", "64"]);
    let t = s.admin_token();
    let (id, d) = import(&s, &t, "Large photo", &jpeg_pdf(5_000, 5_000));
    assert!(d["import_error"].is_null(), "{d}");
    let (status, sent) = s.post_json(&t, &format!("/v1/documents/{id}/send"), &json!({}));
    assert_eq!(status, 200, "{sent}");
    s.wait_status(&t, &id, "sent");
    assert_eq!(pages(&s, &t, &id), 1);
    still_serves(&s, &t);
}

#[test]
fn files_over_the_page_limit_fail_their_import_with_the_limit_named() {
    // The default limit (500 pages) refuses a 5 000-page file.
    let s = Server::start(&[]);
    let t = s.admin_token();
    let (id, d) = import(&s, &t, "Five thousand", &esign_host::pdf::sample_pdf(5_000));
    let error = d["import_error"].as_str().unwrap_or_default();
    assert!(
        error.contains("5000 pages") && error.contains("--max-pages"),
        "{d}"
    );
    assert_eq!(pages(&s, &t, &id), 0);
    drop(s);
    // An operator's lower limit.
    let s = Server::start(&["--max-pages", "3"]);
    let t = s.admin_token();
    let (_, d) = import(&s, &t, "Four", &esign_host::pdf::sample_pdf(4));
    assert!(
        d["import_error"]
            .as_str()
            .unwrap_or_default()
            .contains("at most 3 pages"),
        "{d}"
    );
    let (id, d) = import(&s, &t, "Three", &esign_host::pdf::sample_pdf(3));
    assert!(d["import_error"].is_null(), "{d}");
    assert_eq!(pages(&s, &t, &id), 3);
}

#[test]
fn a_render_past_its_deadline_fails_with_the_reason() {
    let s = Server::start(&["--work-deadline-secs", "1"]);
    let t = s.admin_token();
    let (id, d) = import(&s, &t, "Long", &esign_host::pdf::sample_pdf(400));
    assert!(d["import_error"].is_null(), "{d}");
    let (status, sent) = s.post_json(&t, &format!("/v1/documents/{id}/send"), &json!({}));
    assert_eq!(status, 200, "{sent}");
    let mail = s.wait_mails(1, |m| m.contains("could not be prepared"));
    assert!(mail[0].contains("longer than 1 s"), "{}", mail[0]);
    s.wait_status(&t, &id, "draft");
}

/// Sends `id` and returns at once (its render runs in the background).
fn send(s: &Server, t: &str, id: &str) {
    let (status, sent) = s.post_json(t, &format!("/v1/documents/{id}/send"), &json!({}));
    assert_eq!(status, 200, "{sent}");
}

#[test]
fn two_tenants_long_renders_leave_a_slot_for_a_third_tenants_import() {
    let mut s = Server::start(&[]);
    let a = s.admin_token();
    s.stop();
    s.add_entity_with_admin("Bee", "bee@b.example");
    s.add_entity_with_admin("Sea", "sea@c.example");
    s.launch();
    let b = s.token("bee@b.example", USER_PASSWORD, None);
    let c = s.token("sea@c.example", USER_PASSWORD, None);
    let long = esign_host::pdf::sample_pdf(150);
    let mut long_docs = Vec::new();
    for (t, who) in [(&a, "a"), (&a, "a"), (&b, "b"), (&b, "b")] {
        let (id, d) = import(&s, t, &format!("Long of {who}"), &long);
        assert!(d["import_error"].is_null(), "{d}");
        long_docs.push((t.clone(), id));
    }
    // Their page previews (a render job after each import) are done first, so that
    // the four renders below are all the work there is.
    for (t, id) in &long_docs {
        wait_until(300, "the page previews", || {
            let (_, d) = s.get_as(t, &format!("/v1/documents/{id}"));
            d["thumb_url"]
                .as_str()
                .is_some_and(|u| !u.is_empty())
                .then_some(())
        });
    }
    // Four long renders of two tenants: as many as there are work slots.
    for (t, id) in &long_docs {
        send(&s, t, id);
    }
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    let doc = s.create_doc(
        &c,
        &json!({"name": "Short", "file_content": b64(&esign_host::pdf::sample_pdf(1)),
                "file_name": "short.pdf"}),
    );
    let id = doc["id"].as_str().unwrap();
    s.wait_status(&c, id, "draft");
    let took = started.elapsed();
    // An owner's send stays a draft until its render is done.
    let still_rendering = long_docs
        .iter()
        .filter(|(t, id)| s.status_of(t, id) == "draft")
        .count();
    eprintln!(
        "the third tenant's import took {took:?}, with {still_rendering} of the four long renders still running"
    );
    // Before, the four renders held every slot and the import waited for one to end.
    assert_eq!(
        still_rendering, 4,
        "the short import waited for a long render: {took:?}"
    );
    for (t, id) in &long_docs {
        wait_until(300, "the long renders to end", || {
            (s.status_of(t, id) == "sent").then_some(())
        });
    }
}

#[test]
fn shutdown_in_the_middle_of_a_render_is_prompt_and_the_render_resumes() {
    let mut s = Server::start(&[]);
    let t = s.admin_token();
    let (id, d) = import(&s, &t, "Long", &esign_host::pdf::sample_pdf(400));
    assert!(d["import_error"].is_null(), "{d}");
    send(&s, &t, &id);
    std::thread::sleep(Duration::from_secs(2));
    // An owner's send stays a draft until its render is done.
    assert_eq!(s.status_of(&t, &id), "draft", "still rendering");
    let started = Instant::now();
    assert!(s.stop().success());
    let took = started.elapsed();
    eprintln!("stopped {took:?} after SIGTERM in the middle of a render");
    assert!(took < Duration::from_secs(10), "{took:?}");
    s.launch();
    wait_until(300, "the render to resume and end", || {
        (s.status_of(&t, &id) == "sent").then_some(())
    });
}

/// Every file and folder under `dir` that others may read, write or enter.
fn open_to_others(dir: &std::path::Path) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let mut open = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        let meta = std::fs::symlink_metadata(&p).unwrap();
        if meta.permissions().mode() & 0o077 != 0 {
            open.push(format!(
                "{} {:o}",
                p.display(),
                meta.permissions().mode() & 0o777
            ));
        }
        if meta.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
        }
    }
    open
}

#[test]
fn secrets_at_rest_are_the_service_users_alone_under_umask_022() {
    use std::os::unix::fs::PermissionsExt;
    // The usual umask: files 0644 and folders 0755 unless the server restricts them.
    // SAFETY: umask(2) sets this test process's mask, which the server inherits.
    unsafe { libc::umask(0o022) };
    let s = Server::start(&[]);
    let t = s.admin_token();
    // A sealed document puts a key, blobs and mail on disk.
    pdf_draft(
        &s,
        &t,
        "Modes",
        json!([signer("modes@example.com")]),
        json!({}),
    );
    let backups = fresh_dir("modes-backups");
    let tar = backups.join("b.tar");
    let dir = backups.join("dir");
    for to in [&tar, &dir] {
        let (ok, _, err) = s.admin_raw(&["backup", "--to", to.to_str().unwrap()]);
        assert!(ok, "{err}");
    }
    assert_eq!(open_to_others(&s.data_dir), Vec::<String>::new());
    assert_eq!(open_to_others(&dir), Vec::<String>::new());
    let mode = std::fs::metadata(&tar).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the backup .tar is {mode:o}");

    // A data directory left readable by others is made private at start, with a
    // warning in the log.
    let mut s = s;
    s.stop();
    for p in [s.data_dir.to_path_buf(), s.data_dir.join("db")] {
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    assert!(!open_to_others(&s.data_dir).is_empty());
    s.launch();
    assert_eq!(open_to_others(&s.data_dir), Vec::<String>::new());
}

#[test]
fn memory_stays_flat_over_a_hundred_uploads() {
    let s = Server::start(&[]);
    let t = s.admin_token();
    // 5 MB files, each different (so nothing is shared between them).
    let file = |i: u8| {
        let mut pdf = esign_host::pdf::sample_pdf_of_size(1, 5 << 20);
        let at = pdf.windows(4).position(|w| w == b"xxxx").unwrap();
        pdf[at] = b'a' + i % 26;
        pdf[at + 1] = b'a' + i / 26;
        pdf
    };
    let mut rss = Vec::new();
    for i in 0..100u8 {
        s.upload(&t, &file(i), "big.pdf");
        if i % 20 == 19 {
            rss.push(s.rss_bytes().unwrap() >> 20);
        }
    }
    eprintln!("RSS after every 20 uploads of 5 MB, in MB: {rss:?}");
    // Flat: after the first 20 (caches filling), the last 80 uploads add little.
    let (first, last) = (rss[0], *rss.last().unwrap());
    assert!(
        last < first + 128,
        "RSS kept growing with uploads: {rss:?} MB"
    );
}

/// The server's peak resident memory since the last [`reset_peak`] (`VmHWM`).
fn peak_rss(s: &Server) -> u64 {
    let pid = s.pid();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 1024
}

/// Starts a new peak (Linux: `5` to `clear_refs` resets `VmHWM` to the current RSS).
fn reset_peak(s: &Server) {
    std::fs::write(format!("/proc/{}/clear_refs", s.pid()), "5").unwrap();
}

/// The peak RSS above the RSS before, while `upload` runs once.
fn peak_above(s: &Server, upload: impl FnOnce()) -> u64 {
    let before = s.rss_bytes().unwrap();
    reset_peak(s);
    upload();
    peak_rss(s).saturating_sub(before)
}

fn upload_form(s: &Server, t: &str, bytes: Vec<u8>) {
    let form = reqwest::blocking::multipart::Form::new().part(
        "file",
        reqwest::blocking::multipart::Part::bytes(bytes)
            .file_name("big.pdf")
            .mime_str("application/pdf")
            .unwrap(),
    );
    let resp = client()
        .post(s.url("/v1/upload"))
        .bearer_auth(t)
        .multipart(form)
        .send()
        .unwrap();
    assert_eq!(resp.status(), 200);
}

/// A file part is held once while its request is answered: the server keeps it out of
/// the engine (WIT 0.5.0 `form-part.staged`) and its store writes that buffer. The
/// audit measured about 135 MB for a 20 MB upload when the part was copied into the
/// engine, by its parsing, and out again; with the parts passed whole (and the body
/// already decoded as it streams) this measured 115 MiB, staged 36 MiB (the part, and
/// what the multipart parser buffers ahead of it: 19 to 44 MiB over runs). A JSON body's
/// base64 `file_content` is decoded by the server and staged the same way (16 MiB: as
/// base64 it is within the 25 MiB body limit): 117 MiB through the engine, staged 14 to
/// 38 MiB.
#[test]
fn an_upload_is_held_once_not_in_several_copies() {
    const SIZE: usize = 20 << 20;
    let s = Server::start(&[]);
    let t = s.admin_token();
    // Everything a first upload sets up (the pool's instances, the blob directory).
    upload_form(&s, &t, esign_host::pdf::sample_pdf_of_size(1, 64 << 10));
    s.upload(
        &t,
        &esign_host::pdf::sample_pdf_of_size(1, 128 << 10),
        "warm.pdf",
    );
    const JSON_SIZE: usize = 16 << 20;
    let file = esign_host::pdf::sample_pdf_of_size(1, SIZE);
    let multipart = peak_above(&s, || upload_form(&s, &t, file));
    let file = esign_host::pdf::sample_pdf_of_size(1, JSON_SIZE);
    let json = peak_above(&s, || {
        s.upload(&t, &file, "big.pdf");
    });
    eprintln!(
        "peak RSS above the RSS before: {} MiB for a {} MiB multipart upload, {} MiB for a {} MiB JSON base64 upload",
        multipart >> 20,
        SIZE >> 20,
        json >> 20,
        JSON_SIZE >> 20
    );
    // The part once, the parser's buffer, and room for the rest.
    assert!(
        multipart < 2 * SIZE as u64 + (16 << 20),
        "a multipart upload took {} MiB above the RSS before it",
        multipart >> 20
    );
    // The base64 body (4/3 of the file), the decoded file, and room for the rest.
    assert!(
        json < (JSON_SIZE as u64 * 4 / 3) + JSON_SIZE as u64 + (16 << 20),
        "a JSON upload took {} MiB above the RSS before it",
        json >> 20
    );
}

/// A download is sent from storage by the server (WIT `settings.blob-responses`): the
/// file is read once, never copied into the engine and out again. The same bytes come
/// back, and a blob gone from storage is the server's 404. (Read whole, not yet
/// streamed: issue 55.)
#[test]
fn a_download_is_sent_from_storage_not_through_the_engine() {
    const SIZE: usize = 16 << 20;
    let s = Server::start(&[]);
    let t = s.admin_token();
    let file = esign_host::pdf::sample_pdf_of_size(1, SIZE);
    let (id, _) = import(&s, &t, "Large", &file);
    // The import's previews are made after it (the file read again by the file work):
    // measured only once they are there, so the peak is the download's alone.
    let previews_done = |id: &str| {
        wait_until(60, "the previews", || {
            let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
            (d["thumb_url"].as_str().is_some_and(|u| !u.is_empty())).then_some(())
        })
    };
    previews_done(&id);
    let download = || {
        let resp = s
            .get(&format!("/v1/documents/{id}/download?direct=true"))
            .bearer_auth(&t)
            .send()
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert!(
            resp.headers().get("esign-blob").is_none(),
            "the header stays inside"
        );
        resp.bytes().unwrap().to_vec()
    };
    // Everything a first download of anything sets up (not of this file).
    let small = esign_host::pdf::sample_pdf(1);
    let (small_id, _) = import(&s, &t, "Small", &small);
    previews_done(&small_id);
    let resp = s
        .get(&format!("/v1/documents/{small_id}/download?direct=true"))
        .bearer_auth(&t)
        .send()
        .unwrap();
    assert_eq!(resp.bytes().unwrap().to_vec(), small);
    let grew = peak_above(&s, || {
        assert!(download() == file, "the download is the file");
    });
    eprintln!(
        "a {} MiB download: peak RSS {} MiB above the RSS before",
        SIZE >> 20,
        grew >> 20
    );
    // The file read from storage, what writing it out holds, and room for the rest
    // (measured 15-16 MiB; RSS alone does not tell the paths apart: through the engine
    // it measured 15-32 MiB).
    assert!(
        grew < 2 * SIZE as u64 + (8 << 20),
        "a download took {} MiB above the RSS before it",
        grew >> 20
    );
    // Who read the file: with its blob gone from storage, the server answers for it
    // (`file_not_found`), where the engine would say `pdf_not_ready`.
    let blob = blob_files(&s.data_dir.join("blobs"))
        .into_iter()
        .find(|p| std::fs::read(p).is_ok_and(|b| b == file))
        .expect("the file is stored as a blob file");
    std::fs::remove_file(blob).unwrap();
    let (status, body) = call(
        s.get(&format!("/v1/documents/{id}/download?direct=true"))
            .bearer_auth(&t),
    );
    assert_eq!(assert_error(status, &body, 404), "file_not_found");
}

/// Every file below `dir`.
fn blob_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(blob_files(&path));
        } else {
            out.push(path);
        }
    }
    out
}
