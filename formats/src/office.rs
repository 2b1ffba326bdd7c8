//! Word (.docx) templates for esign: finding and filling `{{name}}` placeholders, and
//! converting a .docx to PDF with LibreOffice.
//!
//! Placeholders are looked for in the main document (`word/document.xml`) and in the page
//! headers and footers (`word/header*.xml`, `word/footer*.xml`). Word splits the text of a
//! paragraph into runs (`<w:r><w:t>…</w:t></w:r>`) wherever formatting, spell-checking or
//! editing history changes, so a placeholder may be spread over several `<w:t>` elements;
//! it is matched on the joined text of each paragraph. A placeholder never spans two
//! paragraphs. Whitespace just inside the braces is ignored: `{{ client }}` is `client`.
//!
//! (Over 800 lines with its tests: the code is about 750, one concern, the .docx format;
//! the rest are the tests of its many shapes of Word XML.)

use std::collections::HashMap;
use std::io::{Cursor, Read, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, anyhow, bail};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipArchive, ZipWriter};

/// Largest XML part (uncompressed) that is read from a .docx, against zip bombs.
const MAX_PART_SIZE: u64 = 64 * 1024 * 1024;
/// Longest placeholder name accepted, in characters.
const MAX_NAME_LEN: usize = 200;

/// Placeholders `{{name}}` found in the text of a .docx, in order of first appearance,
/// without duplicates (see the module documentation for where and how they are found).
///
/// Errors when the bytes are not a readable .docx.
pub fn docx_placeholders(docx: &[u8]) -> anyhow::Result<Vec<String>> {
    guarded(|| {
        let mut archive = open(docx)?;
        let mut names: Vec<String> = Vec::new();
        for part in template_parts(&archive) {
            let xml = read_part(&mut archive, &part)?;
            for name in scan_placeholders(&xml).with_context(|| format!("cannot read {part}"))? {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        Ok(names)
    })
}

/// A copy of the .docx with every `{{name}}` replaced by its value, XML-escaped; a
/// newline in a value becomes a line break and a tab a tab stop. Unknown placeholders
/// are left as they are. When a name appears twice in `values`, the first value wins.
/// Parts without placeholders are copied unchanged (byte for byte, still compressed).
///
/// Errors when the bytes are not a readable .docx.
pub fn fill_docx(docx: &[u8], values: &[(String, String)]) -> anyhow::Result<Vec<u8>> {
    guarded(|| {
        let mut lookup: HashMap<&str, &str> = HashMap::new();
        for (name, value) in values {
            lookup.entry(name.trim()).or_insert(value.as_str());
        }
        let mut archive = open(docx)?;
        let mut replaced: HashMap<String, String> = HashMap::new();
        for part in template_parts(&archive) {
            let xml = read_part(&mut archive, &part)?;
            if let Some(filled) =
                fill_xml(&xml, &lookup).with_context(|| format!("cannot read {part}"))?
            {
                replaced.insert(part, filled);
            }
        }

        rewrite(&mut archive, &replaced)
    })
}

/// A copy of the archive with the parts in `replaced` replaced (deflated) and every other
/// part copied as it is.
fn rewrite(
    archive: &mut ZipArchive<Cursor<&[u8]>>,
    replaced: &HashMap<String, String>,
) -> anyhow::Result<Vec<u8>> {
    let mut writer = ZipWriter::new(Cursor::new(Vec::new()));
    for index in 0..archive.len() {
        let name = archive
            .name_for_index(index)
            .context("bad zip entry")?
            .context("bad zip entry name")?
            .into_owned();
        match replaced.get(&name) {
            Some(xml) => {
                let modified = archive
                    .by_index_raw(index)?
                    .last_modified()
                    .unwrap_or_default();
                let options = SimpleFileOptions::default()
                    .compression_method(CompressionMethod::Deflated)
                    .last_modified_time(modified);
                writer.start_file(name.as_str(), options)?;
                writer.write_all(xml.as_bytes())?;
            }
            None => writer.raw_copy_file(archive.by_index_raw(index)?)?,
        }
    }
    Ok(writer.finish()?.into_inner())
}

/// A copy of the .docx without external relationships (linked images, linked OLE
/// objects, external templates: anything LibreOffice might fetch while converting),
/// except hyperlinks, which are only written into the PDF. Converting an uploaded file
/// must not make the server reach other hosts or read local files.
pub fn strip_external_links(docx: &[u8]) -> anyhow::Result<Vec<u8>> {
    guarded(|| {
        let mut archive = open(docx)?;
        let rels: Vec<String> = archive
            .file_names()
            .filter_map(Result::ok)
            .filter(|n| n.ends_with(".rels"))
            .map(|n| n.into_owned())
            .collect();
        let mut replaced = HashMap::new();
        for part in rels {
            let xml = read_part(&mut archive, &part)?;
            if let Some(clean) = drop_external(&xml) {
                replaced.insert(part, clean);
            }
        }
        if replaced.is_empty() {
            return Ok(docx.to_vec());
        }
        rewrite(&mut archive, &replaced)
    })
}

/// `xml` (a relationships part) without its external, non-hyperlink `<Relationship/>`
/// elements; `None` when there are none.
fn drop_external(xml: &str) -> Option<String> {
    let mut out = String::with_capacity(xml.len());
    let mut rest = xml;
    let mut dropped = false;
    while let Some(start) = rest.find("<Relationship ") {
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        let end = tail.find('>').map_or(tail.len(), |e| e + 1);
        let element = &tail[..end];
        let external = element.contains("TargetMode=\"External\"")
            || element.contains("TargetMode='External'");
        let hyperlink = element.contains("/hyperlink\"") || element.contains("/hyperlink'");
        if external && !hyperlink {
            dropped = true;
        } else {
            out.push_str(element);
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    dropped.then_some(out)
}

/// Whether bytes look like a .docx: a readable zip archive containing `word/document.xml`.
pub fn is_docx(bytes: &[u8]) -> bool {
    bytes.starts_with(b"PK")
        && catch_unwind(AssertUnwindSafe(|| {
            ZipArchive::new(Cursor::new(bytes))
                .map(|a| a.index_for_name("word/document.xml").is_some())
                .unwrap_or(false)
        }))
        .unwrap_or(false)
}

/// Why [`convert_docx_to_pdf`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConvertError {
    /// `soffice` is not installed or cannot be started.
    Unavailable(String),
    /// LibreOffice ran but did not produce a PDF (bad input, crash, or timeout).
    Failed(String),
}

impl std::fmt::Display for ConvertError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConvertError::Unavailable(reason) => write!(f, "LibreOffice is unavailable: {reason}"),
            ConvertError::Failed(reason) => write!(f, "conversion to PDF failed: {reason}"),
        }
    }
}

impl std::error::Error for ConvertError {}

/// Converts a .docx to PDF with LibreOffice headless
/// (`soffice --headless --convert-to pdf --outdir DIR FILE`).
///
/// Each call works in a fresh temporary directory with its own LibreOffice profile
/// (`-env:UserInstallation=file:///…`), so concurrent conversions do not collide; the
/// directory is removed afterwards. `soffice` is used as given: a path, or a name looked
/// up on `PATH`. LibreOffice is killed (with its whole process group on Unix) when it
/// runs longer than `timeout`, which gives [`ConvertError::Failed`]. A program that
/// cannot be started gives [`ConvertError::Unavailable`].
pub fn convert_docx_to_pdf(
    docx: &[u8],
    soffice: &str,
    timeout: Duration,
) -> Result<Vec<u8>, ConvertError> {
    if !is_docx(docx) {
        return Err(ConvertError::Failed("the input is not a .docx file".into()));
    }
    let failed = |context: &str, e: std::io::Error| ConvertError::Failed(format!("{context}: {e}"));
    let work = TempDir::new().map_err(|e| failed("cannot create a temporary directory", e))?;
    let input = work.path().join("document.docx");
    let out_dir = work.path().join("out");
    let profile = work.path().join("profile");
    std::fs::write(&input, docx).map_err(|e| failed("cannot write the input file", e))?;
    std::fs::create_dir(&out_dir).map_err(|e| failed("cannot create the output directory", e))?;
    let log_path = work.path().join("soffice.log");
    let log =
        std::fs::File::create(&log_path).map_err(|e| failed("cannot create a log file", e))?;
    let log_err = log
        .try_clone()
        .map_err(|e| failed("cannot create a log file", e))?;

    let mut command = Command::new(soffice);
    command
        .arg(format!("-env:UserInstallation={}", file_url(&profile)))
        .args(["--headless", "--invisible", "--norestore", "--nologo"])
        .args([
            "--nodefault",
            "--nolockcheck",
            "--convert-to",
            "pdf",
            "--outdir",
        ])
        .arg(&out_dir)
        .arg(&input)
        .current_dir(work.path())
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    let mut child = command.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => {
            ConvertError::Unavailable(format!("cannot run {soffice}: {e}"))
        }
        _ => ConvertError::Failed(format!("cannot start {soffice}: {e}")),
    })?;

    let started = Instant::now();
    let status: ExitStatus = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() >= timeout => {
                kill_tree(&mut child);
                return Err(ConvertError::Failed(format!(
                    "LibreOffice did not finish within {timeout:?} and was killed"
                )));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                kill_tree(&mut child);
                return Err(failed("cannot wait for LibreOffice", e));
            }
        }
    };
    let output = read_log(&log_path);
    if !status.success() {
        return Err(ConvertError::Failed(format!(
            "LibreOffice exited with {status}: {output}"
        )));
    }
    match std::fs::read(out_dir.join("document.pdf")) {
        Ok(pdf) if pdf.starts_with(b"%PDF-") => Ok(pdf),
        Ok(_) => Err(ConvertError::Failed(format!(
            "LibreOffice wrote something that is not a PDF: {output}"
        ))),
        Err(_) => Err(ConvertError::Failed(format!(
            "LibreOffice produced no PDF: {output}"
        ))),
    }
}

/// A minimal valid .docx (A4 page) whose body has one paragraph per entry of
/// `paragraphs`, for tests: `[Content_Types].xml`, `_rels/.rels`, `word/document.xml`
/// and `word/_rels/document.xml.rels`. Word and LibreOffice open it.
pub fn sample_docx(paragraphs: &[&str]) -> Vec<u8> {
    let body: String = paragraphs
        .iter()
        .map(|p| {
            format!(
                r#"<w:p><w:r><w:t xml:space="preserve">{}</w:t></w:r></w:p>"#,
                escape(p)
            )
        })
        .collect();
    docx_with_body(&body, &[])
}

/// A .docx whose `<w:body>` holds `body` (raw WordprocessingML) followed by an A4 section,
/// plus the given extra `(name, content)` parts.
fn docx_with_body(body: &str, extra_parts: &[(&str, &str)]) -> Vec<u8> {
    const CONTENT_TYPES: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#;
    const RELS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#;
    const DOCUMENT_RELS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"></Relationships>"#;
    let document = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><w:body>{body}<w:sectPr><w:pgSz w:w="11906" w:h="16838"/><w:pgMar w:top="1440" w:right="1440" w:bottom="1440" w:left="1440" w:header="708" w:footer="708" w:gutter="0"/></w:sectPr></w:body></w:document>"#
    );
    let mut writer = ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        .last_modified_time(DateTime::default());
    for (name, content) in [
        ("[Content_Types].xml", CONTENT_TYPES),
        ("_rels/.rels", RELS),
        ("word/document.xml", document.as_str()),
        ("word/_rels/document.xml.rels", DOCUMENT_RELS),
    ]
    .into_iter()
    .chain(extra_parts.iter().copied())
    {
        // Writing to an in-memory buffer with valid, distinct names cannot fail.
        let _ = writer.start_file(name, options);
        let _ = writer.write_all(content.as_bytes());
    }
    writer.finish().map(Cursor::into_inner).unwrap_or_default()
}

// ---------------------------------------------------------------------------
// Zip helpers
// ---------------------------------------------------------------------------

/// Runs `f`, turning a panic inside it (from a parser) into an error.
fn guarded<T>(f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
    catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err(anyhow!("the .docx could not be read")))
}

fn open(docx: &[u8]) -> anyhow::Result<ZipArchive<Cursor<&[u8]>>> {
    let archive =
        ZipArchive::new(Cursor::new(docx)).context("not a .docx file (not a zip archive)")?;
    if archive.index_for_name("word/document.xml").is_none() {
        bail!("not a .docx file (no word/document.xml)");
    }
    Ok(archive)
}

/// The parts that may hold placeholders: the main document first, then headers and
/// footers in archive order.
fn template_parts(archive: &ZipArchive<Cursor<&[u8]>>) -> Vec<String> {
    let mut parts = vec!["word/document.xml".to_string()];
    for name in archive.file_names() {
        let Ok(name) = name else { continue };
        let is_header_footer = (name.starts_with("word/header") || name.starts_with("word/footer"))
            && name.ends_with(".xml")
            && !name[5..].contains('/');
        if is_header_footer {
            parts.push(name.into_owned());
        }
    }
    parts
}

fn read_part(archive: &mut ZipArchive<Cursor<&[u8]>>, name: &str) -> anyhow::Result<String> {
    let file = archive
        .by_name(name)
        .with_context(|| format!("cannot open {name}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_PART_SIZE + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {name}"))?;
    if bytes.len() as u64 > MAX_PART_SIZE {
        bail!("{name} is too large");
    }
    String::from_utf8(bytes).with_context(|| format!("{name} is not UTF-8"))
}

// ---------------------------------------------------------------------------
// Placeholder scanning in WordprocessingML
// ---------------------------------------------------------------------------

/// A `<w:t>` element with text.
struct TextNode {
    /// Byte range of the start tag `<w:t …>`.
    tag: std::ops::Range<usize>,
    /// Byte range of the (escaped) content.
    content: std::ops::Range<usize>,
    /// The unescaped text.
    text: String,
}

/// The `<w:t>` elements of a part, grouped by paragraph.
fn paragraphs(xml: &str) -> anyhow::Result<Vec<Vec<TextNode>>> {
    let bytes = xml.as_bytes();
    let mut groups: Vec<Vec<TextNode>> = vec![Vec::new()];
    let mut i = 0;
    while let Some(offset) = xml[i..].find('<') {
        let lt = i + offset;
        let rest = &xml[lt..];
        let skip_to = |end: &str| {
            rest.find(end)
                .map(|p| lt + p + end.len())
                .ok_or_else(|| anyhow!("unterminated markup"))
        };
        if rest.starts_with("<!--") {
            i = skip_to("-->")?;
            continue;
        }
        if rest.starts_with("<![CDATA[") {
            i = skip_to("]]>")?;
            continue;
        }
        if rest.starts_with("<?") {
            i = skip_to("?>")?;
            continue;
        }
        // Find the end of the tag, skipping quoted attribute values.
        let mut quote = None;
        let mut gt = None;
        for (k, &b) in bytes[lt + 1..].iter().enumerate() {
            match (quote, b) {
                (None, b'"' | b'\'') => quote = Some(b),
                (Some(q), _) if b == q => quote = None,
                (None, b'>') => {
                    gt = Some(lt + 1 + k);
                    break;
                }
                _ => {}
            }
        }
        let gt = gt.ok_or_else(|| anyhow!("unterminated tag"))?;
        let inner = &xml[lt + 1..gt];
        let closing = inner.starts_with('/');
        let self_closing = inner.ends_with('/');
        let name_start = usize::from(closing);
        let name: &str = inner[name_start..]
            .split(|c: char| c.is_whitespace() || c == '/')
            .next()
            .unwrap_or("");
        i = gt + 1;
        match name {
            "w:p" if groups.last().is_some_and(|g| !g.is_empty()) => groups.push(Vec::new()),
            "w:t" if !closing && !self_closing => {
                let end = xml[i..]
                    .find('<')
                    .map(|p| i + p)
                    .ok_or_else(|| anyhow!("unterminated w:t"))?;
                if !xml[end..].starts_with("</w:t") {
                    bail!("unexpected markup inside a w:t element");
                }
                let content = i..end;
                let text = unescape(&xml[content.clone()]);
                if let Some(group) = groups.last_mut() {
                    group.push(TextNode {
                        tag: lt..gt + 1,
                        content,
                        text,
                    });
                }
                i = end;
            }
            _ => {}
        }
    }
    Ok(groups)
}

/// A placeholder found in a paragraph: char positions in the joined text, and its name.
struct Found {
    start: usize,
    end: usize,
    name: String,
}

/// Placeholders in a string of text, by char index.
fn find_placeholders(chars: &[char]) -> Vec<Found> {
    let mut found = Vec::new();
    let mut i = 0;
    while i + 1 < chars.len() {
        if chars[i] != '{' || chars[i + 1] != '{' {
            i += 1;
            continue;
        }
        let mut k = i + 2;
        let mut end = None;
        while k < chars.len() {
            match chars[k] {
                '}' if chars.get(k + 1) == Some(&'}') => {
                    end = Some(k + 2);
                    break;
                }
                '{' | '}' | '\n' => break,
                _ => k += 1,
            }
        }
        match end {
            Some(end) => {
                let name: String = chars[i + 2..end - 2].iter().collect();
                let name = name.trim();
                if name.is_empty() || name.chars().count() > MAX_NAME_LEN {
                    i += 1;
                } else {
                    found.push(Found {
                        start: i,
                        end,
                        name: name.to_string(),
                    });
                    i = end;
                }
            }
            None => i += 1,
        }
    }
    found
}

fn scan_placeholders(xml: &str) -> anyhow::Result<Vec<String>> {
    let mut names = Vec::new();
    for group in paragraphs(xml)? {
        let chars: Vec<char> = group.iter().flat_map(|n| n.text.chars()).collect();
        names.extend(find_placeholders(&chars).into_iter().map(|f| f.name));
    }
    Ok(names)
}

/// The part with known placeholders replaced, or `None` when nothing changed.
fn fill_xml(xml: &str, values: &HashMap<&str, &str>) -> anyhow::Result<Option<String>> {
    // (byte range in `xml`, replacement) pairs, in document order.
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for group in paragraphs(xml)? {
        // For each char of the joined text: the node it belongs to.
        let owners: Vec<usize> = group
            .iter()
            .enumerate()
            .flat_map(|(n, node)| std::iter::repeat_n(n, node.text.chars().count()))
            .collect();
        let chars: Vec<char> = group.iter().flat_map(|n| n.text.chars()).collect();
        let matches: Vec<(Found, &str)> = find_placeholders(&chars)
            .into_iter()
            .filter_map(|f| values.get(f.name.as_str()).map(|v| (f, *v)))
            .collect();
        if matches.is_empty() {
            continue;
        }
        let mut contents: Vec<String> = vec![String::new(); group.len()];
        let mut next = matches.iter().peekable();
        let mut p = 0;
        while p < chars.len() {
            if let Some((found, value)) = next.next_if(|(f, _)| f.start == p) {
                // The value goes where the placeholder starts; the rest of it is removed.
                contents[owners[p]].push_str(&value_xml(value));
                p = found.end;
            } else {
                contents[owners[p]].push_str(&escape(&chars[p].to_string()));
                p += 1;
            }
        }
        for (node, content) in group.iter().zip(contents) {
            if unescape(&content) == node.text && !content.contains('<') {
                continue;
            }
            let tag = &xml[node.tag.clone()];
            if !tag.contains("xml:space") {
                edits.push((
                    node.tag.clone(),
                    r#"<w:t xml:space="preserve">"#.to_string(),
                ));
            }
            edits.push((node.content.clone(), content));
        }
    }
    if edits.is_empty() {
        return Ok(None);
    }
    let mut out = String::with_capacity(xml.len() + 256);
    let mut at = 0;
    for (range, replacement) in edits {
        out.push_str(&xml[at..range.start]);
        out.push_str(&replacement);
        at = range.end;
    }
    out.push_str(&xml[at..]);
    Ok(Some(out))
}

/// A value as the content of a `<w:t>`: escaped, line breaks and tabs as Word elements,
/// characters XML 1.0 forbids dropped.
fn value_xml(value: &str) -> String {
    let normalized = value.replace("\r\n", "\n").replace('\r', "\n");
    let mut out = String::with_capacity(normalized.len());
    for c in normalized.chars() {
        match c {
            '\n' => out.push_str(r#"</w:t><w:br/><w:t xml:space="preserve">"#),
            '\t' => out.push_str(r#"</w:t><w:tab/><w:t xml:space="preserve">"#),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => out.push(c),
        }
    }
    out
}

/// XML-escapes text (and drops characters XML 1.0 forbids).
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => out.push(c),
        }
    }
    out
}

/// Decodes XML character and entity references; unknown ones are kept as written.
fn unescape(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let decoded = rest.find(';').filter(|&semi| semi <= 12).and_then(|semi| {
            let entity = &rest[1..semi];
            let c = match entity {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                _ => entity
                    .strip_prefix("#x")
                    .or_else(|| entity.strip_prefix("#X"))
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                    .and_then(char::from_u32),
            };
            c.map(|c| (c, semi + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

// ---------------------------------------------------------------------------
// LibreOffice process helpers
// ---------------------------------------------------------------------------

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> std::io::Result<Self> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let mut last_error = None;
        for _ in 0..16 {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = std::env::temp_dir()
                .join(format!("esign-soffice-{}-{nanos}-{n}", std::process::id()));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(TempDir(path)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last_error = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last_error.unwrap_or_else(|| std::io::Error::other("no free temporary directory name")))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A `file://` URL for an absolute path, percent-encoding everything but unreserved
/// characters and `/`.
fn file_url(path: &Path) -> String {
    let mut url = String::from("file://");
    let text = path.to_string_lossy();
    if !text.starts_with('/') {
        url.push('/');
    }
    for &b in text.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            url.push(char::from(b));
        } else if b == b'\\' {
            url.push('/');
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url
}

/// Kills the child and, on Unix, every process in its process group (LibreOffice's
/// launcher starts `soffice.bin` as a child), then reaps the child.
fn kill_tree(child: &mut std::process::Child) {
    #[cfg(unix)]
    {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", child.id())])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The end of LibreOffice's output, for error messages.
fn read_log(path: &Path) -> String {
    let text = std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let text = text.trim();
    let chars: Vec<char> = text.chars().collect();
    let tail: String = chars[chars.len().saturating_sub(2000)..].iter().collect();
    if tail.is_empty() {
        "(no output)".to_string()
    } else {
        tail
    }
}

#[cfg(test)]
mod link_tests {
    use super::*;

    #[test]
    fn external_links_are_dropped_and_hyperlinks_kept() {
        let rels = r#"<?xml version="1.0"?><Relationships xmlns="x"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="http://169.254.169.254/latest" TargetMode="External"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink" Target="https://example.com" TargetMode="External"/><Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/></Relationships>"#;
        let clean = drop_external(rels).unwrap();
        assert!(!clean.contains("169.254"), "{clean}");
        assert!(clean.contains("https://example.com") && clean.contains("styles.xml"));
        assert_eq!(drop_external(&clean), None, "nothing left to drop");
        let docx = docx_with_body("<w:p/>", &[("word/_rels/header1.xml.rels", rels)]);
        let stripped = strip_external_links(&docx).unwrap();
        let mut archive = open(&stripped).unwrap();
        let part = read_part(&mut archive, "word/_rels/header1.xml.rels").unwrap();
        assert!(!part.contains("169.254") && part.contains("example.com"));
        assert!(is_docx(&stripped));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdf;

    fn part(docx: &[u8], name: &str) -> String {
        let mut archive = ZipArchive::new(Cursor::new(docx)).unwrap();
        read_part(&mut archive, name).unwrap()
    }

    fn values(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// A paragraph as Word often saves it: `Hello {{client}}!` split over three runs with
    /// different formatting and a proofing mark, then `{{amount}}` split after the braces.
    const SPLIT_BODY: &str = concat!(
        r#"<w:p><w:r><w:t xml:space="preserve">Hello {{cli</w:t></w:r><w:proofErr w:type="spellStart"/>"#,
        r#"<w:r><w:rPr><w:b/></w:rPr><w:t>ent</w:t></w:r><w:proofErr w:type="spellEnd"/>"#,
        r#"<w:r><w:t>}}!</w:t></w:r></w:p>"#,
        r#"<w:p><w:r><w:t xml:space="preserve">Total &amp; tax: {{</w:t></w:r><w:r><w:t>amount}}</w:t></w:r>"#,
        r#"<w:r><w:t xml:space="preserve"> due {{unknown}}</w:t></w:r></w:p>"#,
        r#"<w:p><w:r><w:t>{{not</w:t></w:r></w:p><w:p><w:r><w:t>across}}</w:t></w:r></w:p>"#,
    );

    #[test]
    fn placeholders_in_sample_docx_in_order_without_duplicates() {
        let docx = sample_docx(&[
            "Hello {{client}}",
            "Dear {{ client }}, you owe {{amount}}.",
            "{{}} {x} {{a{b}}",
        ]);
        assert!(is_docx(&docx));
        assert_eq!(docx_placeholders(&docx).unwrap(), vec!["client", "amount"]);
    }

    #[test]
    fn placeholders_split_across_runs_are_found_and_filled() {
        let docx = docx_with_body(SPLIT_BODY, &[]);
        assert_eq!(
            docx_placeholders(&docx).unwrap(),
            vec!["client", "amount", "unknown"]
        );

        let filled =
            fill_docx(&docx, &values(&[("client", "ACME"), ("amount", "<1 & 2>")])).unwrap();
        assert!(is_docx(&filled));
        let xml = part(&filled, "word/document.xml");
        let joined: Vec<String> = paragraphs(&xml)
            .unwrap()
            .into_iter()
            .filter(|g| !g.is_empty())
            .map(|g| g.iter().map(|n| n.text.as_str()).collect())
            .collect();
        assert_eq!(
            joined,
            vec![
                "Hello ACME!",
                "Total & tax: <1 & 2> due {{unknown}}",
                "{{not",
                "across}}"
            ]
        );
        assert!(xml.contains("&lt;1 &amp; 2&gt;"));
        // The bold run lost its part of the placeholder but kept its formatting.
        assert!(xml.contains(r#"<w:rPr><w:b/></w:rPr><w:t xml:space="preserve"></w:t>"#));
        assert_eq!(docx_placeholders(&filled).unwrap(), vec!["unknown"]);
    }

    #[test]
    fn fill_handles_newlines_tabs_and_forbidden_characters() {
        let docx = sample_docx(&["Address: {{address}}."]);
        let filled = fill_docx(
            &docx,
            &values(&[("address", "1 Main St\r\nSpringfield\tUSA\u{1}")]),
        )
        .unwrap();
        let xml = part(&filled, "word/document.xml");
        assert!(xml.contains(
            r#"Address: 1 Main St</w:t><w:br/><w:t xml:space="preserve">Springfield</w:t><w:tab/><w:t xml:space="preserve">USA.</w:t>"#
        ), "{xml}");
    }

    #[test]
    fn fill_keeps_untouched_parts_and_first_value_wins() {
        let header = r#"<?xml version="1.0"?><w:hdr xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:p><w:r><w:t>Ref {{ref}}</w:t></w:r></w:p></w:hdr>"#;
        let docx = docx_with_body(
            r#"<w:p><w:r><w:t>{{a}} {{ref}}</w:t></w:r></w:p>"#,
            &[
                ("word/header1.xml", header),
                ("word/media/notes.txt", "{{a}} stays"),
            ],
        );
        assert_eq!(docx_placeholders(&docx).unwrap(), vec!["a", "ref"]);
        let filled = fill_docx(
            &docx,
            &values(&[("a", "first"), ("a", "second"), ("ref", "R-1")]),
        )
        .unwrap();
        assert!(part(&filled, "word/document.xml").contains(">first R-1<"));
        assert!(part(&filled, "word/header1.xml").contains(">Ref R-1<"));
        let mut before = ZipArchive::new(Cursor::new(&docx[..])).unwrap();
        let mut after = ZipArchive::new(Cursor::new(&filled[..])).unwrap();
        assert_eq!(before.len(), after.len());
        for i in 0..before.len() {
            let name = before.name_for_index(i).unwrap().unwrap().into_owned();
            assert_eq!(after.name_for_index(i).unwrap().unwrap(), name);
            let (mut x, mut y) = (Vec::new(), Vec::new());
            before.by_index(i).unwrap().read_to_end(&mut x).unwrap();
            after.by_index(i).unwrap().read_to_end(&mut y).unwrap();
            if name != "word/document.xml" && name != "word/header1.xml" {
                assert_eq!(x, y, "{name}");
            }
        }
        // Nothing to replace: same content.
        let same = fill_docx(&docx, &values(&[("other", "x")])).unwrap();
        assert_eq!(
            part(&same, "word/document.xml"),
            part(&docx, "word/document.xml")
        );
    }

    #[test]
    fn non_docx_input_is_rejected() {
        let mut plain_zip = ZipWriter::new(Cursor::new(Vec::new()));
        plain_zip
            .start_file("hello.txt", SimpleFileOptions::default())
            .unwrap();
        plain_zip.write_all(b"hi").unwrap();
        let plain_zip = plain_zip.finish().unwrap().into_inner();
        let docx = sample_docx(&["x"]);
        for bad in [
            &b""[..],
            b"PK\x03\x04garbage",
            &pdf::sample_pdf(1),
            &plain_zip,
            &docx[..docx.len() / 2],
        ] {
            assert!(!is_docx(bad));
            assert!(docx_placeholders(bad).is_err());
            assert!(fill_docx(bad, &[]).is_err());
        }
        assert_eq!(
            convert_docx_to_pdf(b"nope", "soffice", Duration::from_secs(5)),
            Err(ConvertError::Failed("the input is not a .docx file".into()))
        );
    }

    #[test]
    fn xml_helpers() {
        assert_eq!(unescape("a&amp;b&lt;&#65;&#x42;&bogus;&"), "a&b<AB&bogus;&");
        assert_eq!(escape("<a & \"b\">\u{0}"), "&lt;a &amp; &quot;b&quot;&gt;");
        assert_eq!(
            file_url(Path::new("/tmp/a b/ü")),
            "file:///tmp/a%20b/%C3%BC"
        );
    }

    #[test]
    fn missing_soffice_is_unavailable() {
        let docx = sample_docx(&["x"]);
        let result = convert_docx_to_pdf(&docx, "/nonexistent/soffice", Duration::from_secs(5));
        assert!(
            matches!(result, Err(ConvertError::Unavailable(_))),
            "{result:?}"
        );
    }

    /// Whether `soffice` can be found on PATH; tests that need it skip otherwise.
    /// Whether LibreOffice is here to run the conversion tests. Without it they skip,
    /// unless `ESIGN_REQUIRE_SOFFICE=1` (CI), which makes its absence a failure.
    fn soffice_available() -> bool {
        let found = std::env::var_os("PATH").is_some_and(|path| {
            std::env::split_paths(&path).any(|dir| dir.join("soffice").is_file())
        });
        if !found {
            assert_ne!(
                std::env::var("ESIGN_REQUIRE_SOFFICE").as_deref(),
                Ok("1"),
                "ESIGN_REQUIRE_SOFFICE=1 but soffice is not installed"
            );
            println!("note: soffice not installed, skipping LibreOffice test");
        }
        found
    }

    #[test]
    fn filled_docx_converts_to_pdf_with_libreoffice() {
        if !soffice_available() {
            return;
        }
        let docx = sample_docx(&["Hello {{client}}"]);
        let filled = fill_docx(&docx, &values(&[("client", "ACME")])).unwrap();
        let started = Instant::now();
        let pdf_bytes = convert_docx_to_pdf(&filled, "soffice", Duration::from_secs(120)).unwrap();
        println!(
            "TIMING soffice conversion (1 paragraph): {:?}",
            started.elapsed()
        );
        let text = pdf::extract_text(&pdf_bytes).unwrap();
        assert!(text.contains("Hello ACME"), "{text:?}");
        assert_eq!(pdf::inspect(&pdf_bytes).unwrap().pages.len(), 1);

        let split = fill_docx(
            &docx_with_body(SPLIT_BODY, &[]),
            &values(&[("client", "ACME")]),
        )
        .unwrap();
        let pdf_bytes = convert_docx_to_pdf(&split, "soffice", Duration::from_secs(120)).unwrap();
        let text = pdf::extract_text(&pdf_bytes).unwrap();
        assert!(text.contains("Hello ACME!"), "{text:?}");
        assert!(text.contains("{{amount}}"), "{text:?}");
    }

    #[test]
    fn libreoffice_pdf_of_20_pages_renders_and_two_conversions_run_at_once() {
        if !soffice_available() {
            return;
        }
        let mut body = String::new();
        for page in 1..=20 {
            body.push_str(&format!(
                r#"<w:p><w:r><w:t>Contract page {page} for {{{{client}}}}</w:t></w:r></w:p><w:p><w:r><w:t>{}</w:t></w:r></w:p>"#,
                "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(12)
            ));
            if page < 20 {
                body.push_str(r#"<w:p><w:r><w:br w:type="page"/></w:r></w:p>"#);
            }
        }
        let docx = fill_docx(&docx_with_body(&body, &[]), &values(&[("client", "ACME")])).unwrap();
        let started = Instant::now();
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(|| convert_docx_to_pdf(&docx, "soffice", Duration::from_secs(180)));
            let b = s.spawn(|| convert_docx_to_pdf(&docx, "soffice", Duration::from_secs(180)));
            (a.join().unwrap(), b.join().unwrap())
        });
        println!(
            "TIMING two concurrent soffice conversions (20 pages each): {:?}",
            started.elapsed()
        );
        let source = a.unwrap();
        assert_eq!(b.unwrap().len(), source.len());

        let runs = 10;
        let started = Instant::now();
        for _ in 0..runs {
            assert_eq!(pdf::inspect(&source).unwrap().pages.len(), 20);
        }
        let inspect_time = started.elapsed() / runs;
        let appendix = vec![pdf::Block::Row(vec!["Widget".into(), "2 x 10.00".into()])];
        let summary = vec![pdf::Block::Text("Signed by Alice".into())];
        let started = Instant::now();
        let mut out = None;
        for _ in 0..runs {
            out = Some(
                pdf::render(&[&source], &[], &Default::default(), &appendix, &summary).unwrap(),
            );
        }
        let render_time = started.elapsed() / runs;
        let out = out.unwrap();
        println!(
            "TIMING LibreOffice 20-page PDF ({} bytes): inspect {inspect_time:?}, render {render_time:?}",
            source.len()
        );
        assert_eq!(out.page_count, 22);
        let text = pdf::extract_text(&out.pdf).unwrap();
        assert!(text.contains("Contract page 20 for ACME"), "{text}");
        assert!(text.contains("Widget 2 x 10.00"));
        assert!(text.contains(&out.content_sha256));
    }

    #[test]
    fn conversion_is_killed_after_timeout() {
        if !soffice_available() {
            return;
        }
        // The conversion itself takes seconds: being told "killed" is the proof that the
        // timeout ended it (how long that took is no test's business on a busy machine).
        let docx = sample_docx(&["slow"]);
        let result = convert_docx_to_pdf(&docx, "soffice", Duration::from_millis(100));
        assert!(
            matches!(result, Err(ConvertError::Failed(ref m)) if m.contains("killed")),
            "{result:?}"
        );
    }
}
