//! The signing page: what a person sees behind their `document_url` (`/s/{secret}`).
//!
//! A browser (one that accepts `text/html`) gets an HTML page: the document's header is
//! written here, the rest is drawn by `assets/app.js` from the recipient view embedded as
//! JSON, and every act goes through the recipient API (`/v1/recipient/{secret}/...`).
//! Other clients get that JSON view as before. Documents that can no longer be acted on
//! (expired, recalled, rejected, deleted) get a plain page saying so, with 404 or 410.
//!
//! The assets are part of the engine (`engine/assets/`, served at `/s/_/{name}`), so
//! every host that embeds the component serves the same page. They are versioned by a
//! hash of their bytes, so they are cached for good and the HTML never is.
//!
//! Every response carries a Content-Security-Policy without inline script,
//! `frame-ancestors 'none'`, `Referrer-Policy: no-referrer` and `Cache-Control:
//! no-store` (assets: immutable). Embedded signing (`domain::embedding`): the page of a
//! document opened with `?embed=1` lets the entity's `embed_origins` frame it
//! (`frame-ancestors` names exactly them, no `X-Frame-Options`; none named: `'none'` as
//! ever), embeds them as `#esign-embed` for `app.js` to post its events to the parent
//! on one of them, and `&hide_header=1` leaves the header out. `/embed.js` mounts it.

use crate::base::api::{Request, Response};
use crate::base::html::{asset_response, esc, styled_page};
use crate::base::messages::{self, Words, from_accept_language};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::iso8601;
use serde_json::Value;

const APP_JS: &[u8] = include_bytes!("../../../assets/app.js");
const APP_CSS: &[u8] = include_bytes!("../../../assets/app.css");
const FONT: &[u8] = include_bytes!("../../../assets/dancing-script-latin-400.woff2");
const FONT_LICENSE: &[u8] = include_bytes!("../../../assets/dancing-script-OFL.txt");
const VIDEO_POSTER: &[u8] = include_bytes!("../../../assets/video.svg");
const EMBED_JS: &[u8] = include_bytes!("../../../assets/embed.js");
const PUBLIC_JS: &[u8] = include_bytes!("../../../assets/public.js");

pub use crate::base::html::{safety_headers, wants_html};

/// A signing page opened to be framed (`?embed=1`): the origins that may frame it (the
/// entity's `embed_origins`) and whether to leave its header out (`&hide_header=1`).
pub struct Embed {
    pub origins: Vec<String>,
    pub hide_header: bool,
}

impl Embed {
    /// `Some(hide_header)` when the page was opened with `?embed=1`.
    pub fn asked(req: &Request) -> Option<bool> {
        (req.query_param("embed").as_deref() == Some("1"))
            .then(|| req.query_param("hide_header").as_deref() == Some("1"))
    }
}

/// The framing headers of a document's page: with `?embed=1` and origins named,
/// `frame-ancestors` names them and there is no `X-Frame-Options` (it cannot name
/// origins); else [`safety_headers`] as every page (`frame-ancestors 'none'`, `DENY`).
pub fn frame_headers(headers: &mut Vec<(String, String)>, embed: Option<&Embed>) {
    let csp = embed
        .filter(|e| !e.origins.is_empty())
        .map(|e| crate::domain::embedding::page_csp(&e.origins));
    crate::base::html::framed_by(headers, csp);
}

/// `GET /embed.js`: the script a site includes to frame a signing page
/// (`esign.mount(element, url)`); not versioned, so cached for a few minutes only.
pub fn embed_script() -> Response {
    let mut resp = asset_response("text/javascript; charset=utf-8", EMBED_JS);
    resp.headers.retain(|(n, _)| n != "cache-control");
    resp.headers
        .push(("cache-control".into(), "public, max-age=300".into()));
    resp
}

/// `GET /s/_/{name}`: an embedded asset (the catalogues of words too, for the page's
/// language switch).
pub fn asset(name: &str) -> Option<Response> {
    let (ctype, body) = match name {
        "app.js" => ("text/javascript; charset=utf-8", APP_JS),
        "app.css" => ("text/css; charset=utf-8", APP_CSS),
        "dancing-script.woff2" => ("font/woff2", FONT),
        "dancing-script-OFL.txt" => ("text/plain; charset=utf-8", FONT_LICENSE),
        "video.svg" => ("image/svg+xml", VIDEO_POSTER),
        "embed.js" => ("text/javascript; charset=utf-8", EMBED_JS),
        "public.js" => ("text/javascript; charset=utf-8", PUBLIC_JS),
        _ => ("application/json", messages::asset(name)?),
    };
    Some(asset_response(ctype, body))
}

fn shell(status: u16, lang: &str, title: &str, body: &str, script: bool) -> Response {
    let mut resp = styled_page(status, lang, title, body, script);
    safety_headers(&mut resp.headers);
    resp
}

/// A page that only says something (an unknown link, a withdrawn document).
pub fn notice(status: u16, words: &Words, heading: &str, text: &str) -> Response {
    crate::base::html::notice_page(status, words.lang(), heading, text)
}

/// The page for an unknown link, in the first of the browser's languages that esign
/// has (there is no document to take one from).
pub fn link_not_found(req: &Request) -> Response {
    let words = Words::new(from_accept_language(req.header("accept-language")));
    notice(
        404,
        &words,
        &words.get("sign.link_broken"),
        &words.get("sign.link_broken_text"),
    )
}

/// The words of the document's language.
fn words_of(view: &Value) -> Words {
    Words::new(view["document"]["language"].as_str().unwrap_or("en"))
}

/// The notice for a document that can no longer be opened or acted on, if it is one.
pub fn unavailable(view: &Value) -> Option<Response> {
    let d = &view["document"];
    let key = match d["status"].as_str().unwrap_or("") {
        "recalled" | "draft" | "importing" | "processing" | "scheduled" => "sign.withdrawn",
        "lost" => "sign.lost",
        "expired" => "sign.expired",
        "rejected" => "sign.rejected",
        _ => return None,
    };
    // Read only for a notice: a page the document can still be acted on reads its own.
    let words = words_of(view);
    let the_sender = words.get("sign.the_sender");
    let sender = d["sender_name"].as_str().unwrap_or(&the_sender);
    let name = d["name"].as_str().unwrap_or("");
    let date = d["expiration_date"].as_str().unwrap_or("");
    let vars = [("sender", sender), ("document", name), ("date", date)];
    let mut text = words.fill(&format!("{key}_text"), &vars);
    let reason = d["rejection_reason"].as_str().unwrap_or("");
    if key == "sign.rejected" && !reason.is_empty() {
        text.push(' ');
        text.push_str(&words.fill("sign.rejected_reason", &[("reason", reason)]));
    }
    Some(notice(410, &words, &words.get(key), &text))
}

fn money(v: f64) -> String {
    if v == 0.0 {
        return String::new();
    }
    // `f64::round` needs std; the engine is no_std.
    let cents = (v * 100.0 + if v < 0.0 { -0.5 } else { 0.5 }) as i64;
    let (whole, frac) = (cents / 100, (cents % 100).abs());
    let digits = whole.abs().to_string();
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let sign = if whole < 0 { "-" } else { "" };
    if frac == 0 {
        format!("{sign}{grouped}")
    } else {
        format!("{sign}{grouped}.{frac:02}")
    }
}

/// `v` as JSON inside a script element: `<` would end the element, so it is escaped
/// (JSON allows \u003c).
fn script_json(v: &Value) -> String {
    serde_json::to_string(v)
        .unwrap_or_default()
        .replace('<', "\\u003c")
}

/// What `page` adds when framed: the origins `app.js` may post its events to (none:
/// it posts nothing), and the header's `hidden` attribute (`&hide_header=1`).
fn embed_parts(embed: Option<&Embed>) -> (String, &'static str) {
    let Some(e) = embed.filter(|e| !e.origins.is_empty()) else {
        return (String::new(), "");
    };
    let script = format!(
        "<script type=\"application/json\" id=\"esign-embed\">{}</script>",
        script_json(&serde_json::json!({"origins": e.origins}))
    );
    (script, if e.hide_header { " hidden" } else { "" })
}

/// The signing page for a document that is out with its recipients (or finished), in
/// the document's language: the header is written here, and the page's script gets the
/// words it shows (`sign.*`) with the view.
pub fn page(view: &Value, expiration_ms: u64, embed: Option<&Embed>) -> Response {
    let d = &view["document"];
    let words = words_of(view);
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let name = s(&d["name"]);
    let mut facts = format!(
        "<p class=\"from\">{} <strong>{}</strong> <span class=\"muted\">{}</span></p>",
        esc(&words.get("sign.from")),
        esc(&s(&d["sender_name"])),
        esc(&s(&d["sender_email"]))
    );
    // Before the identity checks for opening pass, only who sent what.
    let gated = view["verification"]["open"]
        .as_array()
        .is_some_and(|a| !a.is_empty())
        || view["verification"]["locked"] == true;
    facts.push_str("<dl class=\"facts\">");
    let value = if gated {
        String::new()
    } else {
        money(d["value"].as_f64().unwrap_or(0.0))
    };
    if !value.is_empty() {
        facts.push_str(&format!(
            "<div><dt>{}</dt><dd>{}</dd></div>",
            esc(&words.get("sign.value")),
            esc(&value)
        ));
    }
    let date = iso8601(expiration_ms);
    facts.push_str(&format!(
        "<div><dt>{}</dt><dd><time datetime=\"{}\">{}</time></dd></div>",
        esc(&words.get("sign.expires")),
        esc(&date),
        esc(date.get(..10).unwrap_or(&date))
    ));
    if !gated {
        facts.push_str(&format!(
            "<div><dt>{}</dt><dd>{}</dd></div>",
            esc(&words.get("sign.page_count")),
            view["pages"].as_array().map_or(0, Vec::len)
        ));
    }
    facts.push_str("</dl>");
    let data = script_json(view);
    let page_words = script_json(&words.with_prefix("sign."));
    // The sender's logo where they gave one (a PNG on this service), else esign's name.
    let logo = view["brand"]["logo_url"].as_str().unwrap_or("");
    let brand = if logo.starts_with("/v1/files/") {
        format!(
            "<img class=\"logo\" src=\"{}\" alt=\"{}\">",
            esc(logo),
            esc(&s(&d["sender_name"]))
        )
    } else {
        "esign".to_string()
    };
    let (embedded, hidden) = embed_parts(embed);
    let body = format!(
        "<header class=\"top\"{hidden}><div class=\"brand\">{brand}</div><h1>{}</h1>{facts}</header>\
         <main id=\"app\" aria-live=\"polite\"><p class=\"next\" id=\"next\">{}</p></main>\
         <noscript><p class=\"notice\">{}</p></noscript>\
         <script type=\"application/json\" id=\"esign-data\">{data}</script>\
         <script type=\"application/json\" id=\"esign-words\">{page_words}</script>{embedded}",
        esc(&name),
        esc(&words.get("sign.loading")),
        esc(&words.get("sign.noscript")),
    );
    shell(200, words.lang(), &format!("{name} – esign"), &body, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_formats_money() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(money(0.0), "");
        assert_eq!(money(1234567.5), "1,234,567.50");
        assert_eq!(money(999.0), "999");
        assert_eq!(money(-1000.0), "-1,000");
    }

    #[test]
    fn embedded_json_cannot_close_the_script_element() {
        let view = serde_json::json!({"document": {"name": "</script><script>alert(1)</script>"}, "pages": []});
        let r = page(&view, 0, None);
        let html = String::from_utf8(r.body).unwrap();
        assert_eq!(html.matches("</script>").count(), 3, "{html}");
        assert!(
            r.headers
                .iter()
                .any(|(k, v)| k == "content-security-policy" && !v.contains("unsafe-inline"))
        );
    }
}
