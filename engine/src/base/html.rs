//! HTML for the engine's pages: their security headers, escaping, and the page shell in
//! the signing page's style.

use crate::base::api::{Request, Response};
#[allow(unused_imports)]
use crate::base::prelude::*;

/// A hash of the assets, set by `build.rs`: their URLs change when they do.
pub const VERSION: &str = env!("ESIGN_ASSETS_VERSION");

/// The engine's pages' Content-Security-Policy (the signing page, the sender's app):
/// only this origin's scripts, styles, fonts and images (signatures are drawn into
/// `data:`/`blob:` images), never framed.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' data: blob:; media-src 'self'; font-src 'self'; connect-src 'self'; \
    frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// Headers every page and every recipient-facing response carries.
pub fn safety_headers(headers: &mut Vec<(String, String)>) {
    for (k, v) in [
        ("content-security-policy", CSP),
        ("referrer-policy", "no-referrer"),
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
    ] {
        if !headers.iter().any(|(n, _)| n == k) {
            headers.push((k.into(), v.into()));
        }
    }
    if !headers.iter().any(|(n, _)| n == "cache-control") {
        headers.push(("cache-control".into(), "no-store".into()));
    }
}

/// An embedded asset of a page (the signing page's, the sender app's): its URL carries
/// [`VERSION`], so it is cached for good.
pub fn asset_response(ctype: &str, body: &[u8]) -> Response {
    let mut headers = vec![
        ("content-type".to_string(), ctype.to_string()),
        (
            "cache-control".to_string(),
            "public, max-age=31536000, immutable".to_string(),
        ),
    ];
    safety_headers(&mut headers);
    Response {
        status: 200,
        headers,
        body: body.to_vec(),
    }
}

/// Text made safe inside HTML elements and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// An HTML page in the signing page's style, without security headers (the caller
/// adds its own policy, or [`safety_headers`]).
pub fn styled_page(status: u16, lang: &str, title: &str, body: &str, script: bool) -> Response {
    styled_page_with(
        status,
        lang,
        title,
        body,
        if script { "app.js" } else { "" },
    )
}

/// [`styled_page`] with the asset `script` of `/s/_/` (none when empty).
pub fn styled_page_with(
    status: u16,
    lang: &str,
    title: &str,
    body: &str,
    script: &str,
) -> Response {
    let script_tag = if script.is_empty() {
        String::new()
    } else {
        format!("<script src=\"/s/_/{script}?v={VERSION}\" defer></script>")
    };
    let html = format!(
        "<!doctype html>\n<html lang=\"{}\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"robots\" content=\"noindex\">\
         <title>{}</title>\
         <link rel=\"stylesheet\" href=\"/s/_/app.css?v={VERSION}\">{script_tag}</head>\
         <body>{body}</body></html>",
        esc(lang),
        esc(title)
    );
    Response {
        status,
        headers: vec![(
            "content-type".to_string(),
            "text/html; charset=utf-8".to_string(),
        )],
        body: html.into_bytes(),
    }
}

/// Whether the client asked for a page rather than JSON (a browser's `Accept`).
pub fn wants_html(req: &Request) -> bool {
    req.header("accept").is_some_and(|a| {
        let a = a.to_ascii_lowercase();
        a.contains("text/html") && !a.starts_with("application/json")
    })
}

/// A page that only says something (an unknown link, a withdrawn document, a public
/// link no longer offered), with the page's safety headers.
pub fn notice_page(status: u16, lang: &str, heading: &str, text: &str) -> Response {
    let body = format!(
        "<main class=\"notice\"><div class=\"brand\">esign</div><h1>{}</h1><p>{}</p></main>",
        esc(heading),
        esc(text)
    );
    let mut resp = styled_page(status, lang, heading, &body, false);
    safety_headers(&mut resp.headers);
    resp
}

/// [`safety_headers`], with `frame-ancestors` naming `origins` and no
/// `X-Frame-Options` (it cannot name origins) when `origins` are given: a page an
/// entity lets its sites frame (`page_csp` makes its policy).
pub fn framed_by(headers: &mut Vec<(String, String)>, page_csp: Option<String>) {
    safety_headers(headers);
    if let Some(csp) = page_csp {
        headers.retain(|(n, _)| n != "content-security-policy" && n != "x-frame-options");
        headers.push(("content-security-policy".into(), csp));
    }
}
