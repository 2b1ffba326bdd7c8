//! The sender's web app (`/app`): one HTML shell for every view, and its two assets.
//!
//! The app is drawn in the browser by `assets/sender.js` and acts only through the
//! documented `/v1` API with the access token it keeps in memory (see the script's
//! header), so everything the app can do, a client of the API can do too. The engine
//! serves it, so every host and every embedding of the component serves the same app.
//!
//! Each view has its own URL (`/app/documents`, `/app/documents/{id}`,
//! `/app/documents/{id}/fields`, `/app/documents/new`, `/app/templates`,
//! `/app/templates/{id}/fields`,
//! `/app/settings`, `/app/sign-in`): the shell answers 200 for those and 404 for any
//! other path under `/app`, and the script draws the view the URL names, so Back and a
//! reload keep it. Assets are versioned by a hash of their bytes (`base::html`), cached
//! for good; the shell never is. The Content-Security-Policy is the signing page's:
//! no inline script or style, nothing from another origin, never framed.

use crate::base::api::{Request, Response};
use crate::base::html::{VERSION, asset_response, safety_headers};
use crate::base::messages;
#[allow(unused_imports)]
use crate::base::prelude::*;

const SENDER_JS: &[u8] = include_bytes!("../../assets/sender.js");
const SENDER_CSS: &[u8] = include_bytes!("../../assets/sender.css");

/// `GET /app/_/{name}`: an asset of the app.
pub fn asset(name: &str) -> Option<Response> {
    let (ctype, body) = match name {
        "sender.js" => ("text/javascript; charset=utf-8", SENDER_JS),
        "sender.css" => ("text/css; charset=utf-8", SENDER_CSS),
        _ => ("application/json", messages::asset(name)?),
    };
    Some(asset_response(ctype, body))
}

/// Whether `views` (the path's segments after `app`) names a view of the app.
fn is_view(views: &[&str]) -> bool {
    match views {
        [] | ["documents" | "templates" | "settings" | "sign-in"] => true,
        ["documents", id] => !id.is_empty(),
        ["documents" | "templates", id, "fields"] => !id.is_empty() && *id != "new",
        _ => false,
    }
}

/// `GET /app/...`: the shell the script draws the view into; 404 (the same shell,
/// which says so) for a path that names no view.
pub fn shell(_req: &Request, views: &[&str]) -> Response {
    let status = if is_view(views) { 200 } else { 404 };
    let html = format!(
        "<!doctype html>\n<html lang=\"en\" data-assets=\"{VERSION}\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"robots\" content=\"noindex\">\
         <title>esign</title>\
         <link rel=\"stylesheet\" href=\"/app/_/sender.css?v={VERSION}\">\
         <script src=\"/app/_/sender.js?v={VERSION}\" defer></script></head>\
         <body><div id=\"app\"><main id=\"main\"><h1>esign</h1>\
         <noscript><p>The esign app needs JavaScript. Everything it does can also be done \
         through the API: see /v1/openapi.json.</p></noscript></main></div>\
         <div id=\"live\" class=\"visually-hidden\" aria-live=\"polite\" role=\"status\"></div>\
         </body></html>"
    );
    let mut headers = vec![(
        "content-type".to_string(),
        "text/html; charset=utf-8".to_string(),
    )];
    safety_headers(&mut headers);
    Response {
        status,
        headers,
        body: html.into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The budget: all of the app's JS and CSS at most 80 KB compressed.
    #[test]
    fn the_app_s_script_and_style_fit_in_80_kb_compressed() {
        let total: usize = [SENDER_JS, SENDER_CSS]
            .iter()
            .map(|b| miniz_oxide::deflate::compress_to_vec(b, 9).len())
            .sum();
        assert!(total <= 80 * 1024, "{total} bytes compressed");
    }

    #[test]
    fn views_have_urls_and_other_paths_do_not() {
        for ok in [
            &[][..],
            &["documents"],
            &["documents", "new"],
            &["documents", "abc"],
            &["documents", "abc", "fields"],
            &["templates"],
            &["templates", "abc", "fields"],
            &["settings"],
            &["sign-in"],
        ] {
            assert!(is_view(ok), "{ok:?}");
        }
        for bad in [
            &["nothing"][..],
            &["documents", "abc", "other"],
            &["documents", "new", "fields"],
            &["templates", "x", "y"],
        ] {
            assert!(!is_view(bad), "{bad:?}");
        }
    }
}
