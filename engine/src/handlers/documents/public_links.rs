//! Public signing links (`domain::public_links`): `POST /v1/templates/{id}/public-links`,
//! `GET /v1/public-links`, `DELETE /v1/public-links/{id}`; and what a visitor meets:
//! `GET /p/{slug}` (the page), `GET /p/{slug}/qr.png`, `POST /p/{slug}/code` (an emailed
//! code) and `POST /p/{slug}` (`{first_name, last_name, email, code}` →
//! `{document_id, signing_url}`). Here because a visit makes a document from the body
//! of a create (`create::parse_new`).

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::html::{
    asset_response, esc, framed_by, notice_page, styled_page_with, wants_html,
};
use crate::base::http::{self, ApiError, ApiResult, Fields, json, no_content};
use crate::base::messages::{Words, from_accept_language};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::qr_code;
use crate::base::util::{iso8601, parse_time};
use crate::domain::auth::Principal;
use crate::domain::public_links::{self, PublicLink, Terms, Visitor};
use crate::domain::{embedding, notify, trail};
use crate::handlers::documents::create;
use serde_json::{Value, json};

/// The most uses a link may be given.
const MAX_USES: f64 = 1_000_000.0;

/// The public URL of `link`'s page.
fn page_url(cx: &mut Cx, link: &PublicLink) -> String {
    let base = cx.settings().base_url.trim_end_matches('/').to_string();
    format!("{base}/p/{}", link.slug)
}

fn link_json(cx: &mut Cx, link: &PublicLink) -> Value {
    let url = page_url(cx, link);
    json!({
        "id": link.id,
        "url": url,
        "qr_url": format!("{url}/qr.png"),
        "template_id": link.template_id,
        "max_uses": link.max_uses,
        "uses": link.uses,
        "expires_at": link.expires_ms.map(iso8601),
        "one_per_email": link.one_per_email,
        "require_email_code": link.require_email_code,
        "created_at": iso8601(link.created_ms),
    })
}

fn bad(text: String) -> ApiError {
    http::ApiError::bad_request("invalid_field", text)
}

/// The terms of a publish request.
fn terms(cx: &mut Cx, f: &Fields) -> ApiResult<Terms> {
    f.only(&[
        "max_uses",
        "expires_at",
        "one_per_email",
        "require_email_code",
    ])?;
    let max_uses = match f.optional_number("max_uses")? {
        None => 0,
        Some(n) if (1.0..=MAX_USES).contains(&n) && n == (n as u32) as f64 => n as u32,
        Some(_) => {
            return Err(bad(format!(
                "`max_uses` must be a whole number from 1 to {MAX_USES}"
            )));
        }
    };
    let expires_ms = match f.optional_str("expires_at")?.filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => match parse_time(&s) {
            Some(ms) if ms > cx.now() => Some(ms),
            Some(_) => {
                return Err(ApiError::new(
                    422,
                    "invalid_field",
                    "`expires_at` must be in the future",
                ));
            }
            None => {
                return Err(bad(
                    "`expires_at` must be an ISO 8601 timestamp, e.g. 2026-12-24T12:00:00Z".into(),
                ));
            }
        },
    };
    Ok(Terms {
        max_uses,
        expires_ms,
        one_per_email: f.optional_bool("one_per_email")?.unwrap_or(false),
        require_email_code: f.optional_bool("require_email_code")?.unwrap_or(false),
    })
}

/// `POST /v1/templates/{id}/public-links`: 201 with the link.
pub fn publish(
    cx: &mut Cx,
    pr: &Principal,
    req: &Request,
    template_id: &str,
) -> ApiResult<Response> {
    // The template first: a request for one that is not there is a 404 whatever its body.
    crate::domain::templates::writable(cx, pr, template_id)?;
    let f = req.body_fields()?;
    let terms = terms(cx, &f)?;
    let link = public_links::publish(cx, pr, template_id, terms)?;
    Ok(json(201, &link_json(cx, &link)))
}

/// `GET /v1/public-links`: the entity's links, newest first.
pub fn list(cx: &mut Cx, pr: &Principal) -> ApiResult<Response> {
    let links = public_links::list(cx, &pr.entity.id);
    let out: Vec<Value> = links.iter().map(|l| link_json(cx, l)).collect();
    Ok(json(200, &json!({ "public_links": out })))
}

/// `DELETE /v1/public-links/{id}`: 204; the link stops at once.
pub fn unpublish(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    public_links::unpublish(cx, pr, id)?;
    Ok(no_content())
}

/// `GET /p/{slug}/qr.png`: the page's URL as a QR code.
pub fn qr(cx: &mut Cx, slug: &str) -> ApiResult<Response> {
    let (link, _) = public_links::open(cx, slug)?;
    let url = page_url(cx, &link);
    let png = qr_code::png(&url).ok_or_else(|| ApiError::new(500, "internal", "no QR code"))?;
    let mut resp = asset_response("image/png", &png);
    resp.headers.retain(|(n, _)| n != "cache-control");
    resp.headers
        .push(("cache-control".into(), "no-store".into()));
    Ok(resp)
}

/// A notice page for a link that does not work (`err` says why).
fn notice(words: &Words, err: &ApiError) -> Response {
    notice_page(
        err.status,
        words.lang(),
        &words.get("pub.unavailable"),
        &err.description,
    )
}

/// `GET /p/{slug}`: the visitor's form, in the first of the browser's languages esign
/// has; a client that asks for JSON gets what the form needs (`{name,
/// require_email_code}`) or the error.
pub fn page(cx: &mut Cx, req: &Request, slug: &str) -> ApiResult<Response> {
    let words = Words::new(from_accept_language(req.header("accept-language")));
    let (link, t) = match public_links::open(cx, slug) {
        Ok(found) => found,
        Err(e) if wants_html(req) => return Ok(notice(&words, &e)),
        Err(e) => return Err(e),
    };
    if !wants_html(req) {
        let answer = json!({"name": t.name, "require_email_code": link.require_email_code});
        return Ok(json(200, &answer));
    }
    let w = |k: &str| esc(&words.get(k));
    let field = |id: &str, name: &str, label: &str, extra: &str| {
        format!(
            "<div class=\"row\"><label for=\"{id}\">{}</label><input id=\"{id}\" name=\"{name}\" {extra}></div>",
            w(label)
        )
    };
    let code = if link.require_email_code {
        format!(
            "<div class=\"row\" id=\"codebox\" hidden><label for=\"pc\">{}</label><input id=\"pc\" type=\"text\" name=\"code\" inputmode=\"numeric\" autocomplete=\"one-time-code\" maxlength=\"6\"></div>",
            w("pub.code")
        )
    } else {
        String::new()
    };
    let body = format!(
        "<main class=\"public\"><div class=\"brand\">esign</div><h1>{name}</h1><p>{intro}</p>\
         <form id=\"visit\" novalidate data-slug=\"{slug}\" data-code=\"{needs}\" data-codesent=\"{sent}\" data-preparing=\"{prep}\" data-failed=\"{failed}\" data-continue=\"{cont}\" data-embed=\"{embed}\">\
         <p class=\"alert\" role=\"alert\" hidden></p>{first}{last}{mail}{code}\
         <button type=\"submit\" class=\"primary\">{go}</button><p class=\"next\" role=\"status\"></p></form></main>",
        name = esc(&t.name),
        intro = w("pub.intro"),
        slug = esc(slug),
        needs = u8::from(link.require_email_code),
        sent = w("pub.codesent"),
        prep = w("pub.preparing"),
        failed = w("sign.err_server"),
        cont = w("pub.continue"),
        embed = embed_query(req),
        first = field(
            "pf",
            "first_name",
            "r.first",
            "type=\"text\" autocomplete=\"given-name\" maxlength=\"100\" required"
        ),
        last = field(
            "pl",
            "last_name",
            "r.last",
            "type=\"text\" autocomplete=\"family-name\" maxlength=\"100\" required"
        ),
        mail = field(
            "pe",
            "email",
            "r.email",
            "type=\"email\" autocomplete=\"email\" maxlength=\"254\" required"
        ),
        go = w(if link.require_email_code {
            "pub.sendcode"
        } else {
            "pub.continue"
        }),
    );
    let mut resp = styled_page_with(200, words.lang(), &t.name, &body, "public.js");
    frame_for(cx, req, &link, &mut resp.headers);
    Ok(resp)
}

/// The page opened with `?embed=1` may be framed by the entity's `embed_origins` (as a
/// signing page: `domain::embedding`), and leads to a signing page opened the same way;
/// else it is never framed.
fn frame_for(cx: &mut Cx, req: &Request, link: &PublicLink, headers: &mut Vec<(String, String)>) {
    let csp = (req.query_param("embed").as_deref() == Some("1"))
        .then(|| embedding::origins(cx, &link.entity_id))
        .filter(|origins| !origins.is_empty())
        .map(|origins| embedding::page_csp(&origins));
    framed_by(headers, csp);
}

/// What the signing page's URL takes after a visit from an embedded page.
fn embed_query(req: &Request) -> &'static str {
    match (
        req.query_param("embed").as_deref(),
        req.query_param("hide_header").as_deref(),
    ) {
        (Some("1"), Some("1")) => "?embed=1&hide_header=1",
        (Some("1"), _) => "?embed=1",
        _ => "",
    }
}

/// The visitor a body names.
fn visitor(f: &Fields) -> ApiResult<Visitor> {
    f.only(&["first_name", "last_name", "email", "code"])?;
    let text = |k: &str| -> ApiResult<String> {
        Ok(f.optional_str(k)?.unwrap_or_default().trim().to_string())
    };
    let v = Visitor {
        first_name: text("first_name")?,
        last_name: text("last_name")?,
        email: text("email")?,
        code: text("code")?,
    };
    if f.optional_str("first_name")?.unwrap_or_default().is_empty() {
        return Err(bad("`first_name` is needed".into()));
    }
    Ok(v)
}

/// `POST /p/{slug}/code` (`{email}`): mails a code the visit then gives. 202.
pub fn code(cx: &mut Cx, req: &Request, slug: &str) -> ApiResult<Response> {
    let f = req.body_fields()?;
    public_links::rate_limit(cx, &req.client().ip)?;
    let (link, t) = public_links::open(cx, slug)?;
    f.only(&["email"])?;
    let email = f.required_str("email")?.trim().to_string();
    let words = Words::new(from_accept_language(req.header("accept-language")));
    let code = public_links::new_code(cx, &link, &email)?;
    notify::public_link_code(cx, &words, &email, &t.name, &code);
    Ok(json(202, &json!({ "sent_to": email })))
}

/// The body of a create that makes `visitor` the signer of a document from `t`.
fn create_body(
    t: &crate::domain::templates::Template,
    v: &Visitor,
    role: Option<String>,
) -> Fields {
    let mut r = json!({"first_name": v.first_name, "last_name": v.last_name, "email": v.email});
    if let Some(role) = role {
        r["role_name"] = role.into();
    }
    Fields::of_json(json!({"template_id": t.id, "name": t.name, "recipients": [r]}))
}

/// `POST /p/{slug}`: a document from the link's template for the visitor, sealed;
/// `{document_id, signing_url}` (the link works once the seal's render is back: a few
/// seconds, until then 410).
pub fn visit(cx: &mut Cx, req: &Request, slug: &str) -> ApiResult<Response> {
    let f = req.body_fields()?;
    public_links::rate_limit(cx, &req.client().ip)?;
    let (link, t) = public_links::open(cx, slug)?;
    let v = visitor(&f)?;
    public_links::check_email(&v.email)?;
    let pr = public_links::publisher(cx, &link)?;
    let role = public_links::visitor_role(&t)?;
    let new = create::parse_new(cx, &pr, &create_body(&t, &v, role), false)?;
    public_links::admit(cx, &link, &v)?;
    let actor = trail::Actor::visitor(&link.id, &v.email, req.client());
    let made = public_links::make(cx, &pr, link, new, &actor, &v)?;
    Ok(json(
        200,
        &json!({ "document_id": made.document_id, "signing_url": made.signing_url }),
    ))
}
