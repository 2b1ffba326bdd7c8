//! The pages of `/authorize`: sign-in, consent and errors. Plain HTML forms (no
//! script), in the signing page's stylesheet, readable on a phone.

use crate::base::api::Response;
use crate::base::html::{esc, styled_page};
#[allow(unused_imports)]
use crate::base::prelude::*;

/// The policy of these pages: this origin's stylesheet only, never framed, and forms
/// that post here (plus, on the consent page, the redirect back to the client, which
/// browsers check against `form-action` too).
fn policy(form_target: &str) -> String {
    format!(
        "default-src 'none'; style-src 'self'; font-src 'self'; img-src 'self'; \
         frame-ancestors 'none'; base-uri 'none'; form-action 'self'{}{}",
        if form_target.is_empty() { "" } else { " " },
        form_target
    )
}

fn finish(mut resp: Response, form_target: &str, cookie: Option<String>) -> Response {
    for (k, v) in [
        ("content-security-policy", policy(form_target)),
        // `same-origin`, not `no-referrer`: with no referrer policy a browser sends
        // `Origin: null` on the form posts, and the posts are checked by their Origin.
        ("referrer-policy", "same-origin".into()),
        ("x-content-type-options", "nosniff".into()),
        ("x-frame-options", "DENY".into()),
        ("cache-control", "no-store".into()),
    ] {
        resp.headers.push((k.into(), v));
    }
    if let Some(c) = cookie {
        resp.headers.push(("set-cookie".into(), c));
    }
    resp
}

fn alert(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!("<p class=\"alert\" role=\"alert\">{}</p>", esc(message))
    }
}

/// The sign-in form. `message` (may be empty) says why the last try failed.
pub fn sign_in(
    status: u16,
    client_name: &str,
    csrf: &str,
    email: &str,
    message: &str,
    cookie: Option<String>,
) -> Response {
    let body = format!(
        "<main class=\"notice\"><div class=\"brand\">esign</div>\
         <h1>Sign in</h1>\
         <p><strong>{client}</strong> wants to work with your esign documents. \
         Sign in to continue.</p>{alert}\
         <form method=\"post\" action=\"/authorize\">\
         <input type=\"hidden\" name=\"action\" value=\"signin\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
         <label for=\"email\">Email</label>\
         <input type=\"email\" id=\"email\" name=\"email\" autocomplete=\"username\" required value=\"{email}\">\
         <label for=\"password\">Password</label>\
         <input type=\"password\" id=\"password\" name=\"password\" autocomplete=\"current-password\" required>\
         <p><button class=\"primary\" type=\"submit\">Sign in</button></p>\
         </form></main>",
        client = esc(client_name),
        alert = alert(message),
        csrf = esc(csrf),
        email = esc(email),
    );
    finish(
        styled_page(status, "en", "Sign in", &body, false),
        "",
        cookie,
    )
}

/// One entity the person may choose on the consent page.
pub struct Choice {
    pub id: String,
    pub name: String,
}

/// The consent page: who asks, where the answer goes, what it may do, and in which
/// entity.
pub fn consent(
    client_name: &str,
    redirect_host: &str,
    redirect_origin: &str,
    csrf: &str,
    user_email: &str,
    entities: &[Choice],
    message: &str,
) -> Response {
    let entity_field = match entities {
        [only] => format!(
            "<p>Entity: <strong>{}</strong></p>\
             <input type=\"hidden\" name=\"entity_id\" value=\"{}\">",
            esc(&only.name),
            esc(&only.id)
        ),
        many => {
            let options: String = many
                .iter()
                .map(|c| format!("<option value=\"{}\">{}</option>", esc(&c.id), esc(&c.name)))
                .collect();
            format!(
                "<label for=\"entity_id\">Entity</label>\
                 <select id=\"entity_id\" name=\"entity_id\">{options}</select>"
            )
        }
    };
    let body = format!(
        "<main class=\"notice\"><div class=\"brand\">esign</div>\
         <h1>Allow {client}?</h1>{alert}\
         <p><strong>{client}</strong> asks to act for <strong>{email}</strong>: to list, \
         create, send, remind, recall and delete documents, and to read their status, \
         comments and audit log, with the rights you have in the entity you choose \
         (scope <code>basic</code>).</p>\
         <p class=\"muted\">After you answer you are sent back to <strong>{host}</strong>. \
         You can disconnect it at any time; its access ends at once.</p>\
         <form method=\"post\" action=\"/authorize\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">{entity_field}\
         <p><button class=\"primary\" type=\"submit\" name=\"action\" value=\"approve\">Allow</button> \
         <button type=\"submit\" name=\"action\" value=\"deny\">Deny</button></p>\
         </form></main>",
        client = esc(client_name),
        alert = alert(message),
        email = esc(user_email),
        host = esc(redirect_host),
        csrf = esc(csrf),
    );
    finish(
        styled_page(200, "en", "Allow access", &body, false),
        redirect_origin,
        None,
    )
}

/// A page that stops the flow without going back to the client (unknown client, a
/// redirect URI that is not registered, an expired or forged form).
pub fn error(status: u16, heading: &str, text: &str) -> Response {
    let body = format!(
        "<main class=\"notice\"><div class=\"brand\">esign</div><h1>{}</h1><p>{}</p></main>",
        esc(heading),
        esc(text)
    );
    finish(styled_page(status, "en", heading, &body, false), "", None)
}
