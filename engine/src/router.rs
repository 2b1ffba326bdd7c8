//! Maps (origin, method, path) to a handler. Unknown paths answer 404; a known path
//! with another method answers 405 with `Allow`.

use crate::base::api::{self, Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, method_not_allowed, only};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::public_files;
use crate::handlers::documents::{self, create, custom_data, download};
use crate::handlers::recipients::{self, page, verify};
use crate::handlers::{
    admin, agents, app, attachments, auth, contacts, entity, evidence, folders, mail_templates,
    notifications, products, subscriptions, templates, uploads, users, videos,
};

/// Every public route: a path template (`{name}` matches one segment) and the methods it
/// answers. [`route`] answers 404 and 405 from this table before it dispatches, so a
/// route missing here cannot be reached, and `openapi.json` documents exactly these (a
/// test compares the two). Admin routes (the CLI's origin) are not public and not here.
pub const ROUTES: &[(&str, &[&str])] = &[
    ("/.well-known/oauth-protected-resource", &["GET"]),
    ("/.well-known/oauth-protected-resource/mcp", &["GET"]),
    ("/.well-known/oauth-authorization-server", &["GET"]),
    ("/.well-known/oauth-authorization-server/mcp", &["GET"]),
    ("/.well-known/openid-configuration", &["GET"]),
    ("/register", &["POST"]),
    ("/authorize", &["GET", "POST"]),
    ("/token", &["POST"]),
    ("/revoke", &["POST"]),
    ("/mcp", &["GET", "POST", "DELETE"]),
    ("/v1/auth", &["POST"]),
    ("/v1/refresh", &["GET"]),
    ("/v1/refresh/{entity_id}", &["GET"]),
    ("/v1/test", &["GET"]),
    ("/v1/openapi.json", &["GET"]),
    ("/v1/signing-certificate", &["GET"]),
    ("/v1/verify", &["POST"]),
    ("/v1/users/me", &["GET"]),
    ("/v1/users", &["GET", "POST"]),
    ("/v1/users/{user_id}", &["GET", "PUT", "DELETE"]),
    ("/v1/users/{user_id}/statistics", &["GET"]),
    ("/v1/entity", &["GET", "PUT"]),
    ("/v1/register", &["POST"]),
    ("/v1/notifications", &["GET"]),
    ("/v1/folders", &["GET", "POST"]),
    ("/v1/folders/{folder_id}", &["GET", "DELETE"]),
    ("/v1/contacts", &["GET", "POST"]),
    ("/v1/contacts/{contact_id}", &["DELETE"]),
    ("/v1/email/templates", &["GET", "POST"]),
    ("/v1/email/templates/{email_template_id}", &["GET", "PUT"]),
    ("/v1/communication-templates", &["GET", "POST"]),
    (
        "/v1/communication-templates/{communication_template_id}",
        &["GET", "PUT"],
    ),
    ("/v1/attachments", &["GET"]),
    ("/v1/upload/attachment", &["POST"]),
    ("/v1/upload/video", &["POST"]),
    ("/v1/videos", &["GET"]),
    ("/v1/videos/{video_id}", &["GET"]),
    ("/v1/video/job/{video_id}", &["GET"]),
    ("/v1/files/{secret}", &["GET"]),
    ("/v1/teams", &["GET"]),
    ("/v1/users/me/connections", &["GET"]),
    ("/v1/users/me/connections/{client_id}", &["DELETE"]),
    ("/v1/revoke", &["GET"]),
    ("/v1/documents", &["GET", "POST"]),
    ("/v1/documents/latest", &["GET"]),
    ("/v1/documents/external/{external_id}", &["GET"]),
    ("/v1/documents/{id}", &["GET", "PUT", "DELETE"]),
    ("/v1/documents/{id}/status", &["GET"]),
    ("/v1/documents/{id}/recipients", &["GET"]),
    ("/v1/documents/{id}/pages", &["GET"]),
    ("/v1/documents/{id}/download", &["GET"]),
    ("/v1/documents/{id}/log", &["GET"]),
    ("/v1/documents/{id}/attachments", &["GET"]),
    (
        "/v1/documents/{id}/attachments/{attachment_id}/upload",
        &["POST"],
    ),
    ("/v1/documents/{id}/events", &["GET"]),
    ("/v1/documents/{id}/preview", &["POST"]),
    ("/v1/documents/{id}/custom-data", &["GET", "POST"]),
    (
        "/v1/documents/{id}/custom-data/{custom_data_id}",
        &["GET", "PUT", "DELETE"],
    ),
    ("/v1/custom-data/entity", &["GET", "POST"]),
    ("/v1/custom-data/entity/{key}", &["DELETE"]),
    ("/v1/documents/{id}/comments", &["GET", "POST"]),
    (
        "/v1/documents/{id}/comments/{comment_id}/resolve",
        &["POST"],
    ),
    ("/v1/documents/{id}/pricing-tables", &["GET", "PUT"]),
    ("/v1/documents/{id}/revisions", &["GET", "POST"]),
    ("/v1/documents/{id}/fields", &["GET", "POST", "PUT"]),
    (
        "/v1/documents/{id}/recipients/{recipient_id}",
        &["PUT", "DELETE"],
    ),
    ("/v1/documents/{id}/recipients/send", &["POST"]),
    ("/v1/documents/{id}/seal", &["POST"]),
    ("/v1/documents/{id}/send", &["POST"]),
    ("/v1/documents/{id}/forward", &["POST"]),
    ("/v1/documents/{id}/expiration", &["POST"]),
    ("/v1/documents/{id}/manually-sign", &["POST"]),
    ("/v1/documents/{id}/lost", &["POST"]),
    ("/v1/documents/{id}/reminders", &["POST"]),
    ("/v1/download/{secret}", &["GET"]),
    ("/v1/upload", &["POST"]),
    ("/v1/upload/archive", &["POST"]),
    ("/v1/upload/{id}", &["GET"]),
    ("/v1/templates", &["GET", "POST"]),
    ("/v1/templates/{id}", &["GET", "PUT", "DELETE"]),
    ("/v1/templates/{id}/fields", &["GET"]),
    ("/v1/templates/{id}/roles", &["GET"]),
    ("/v1/templates/{id}/fields_roles", &["GET"]),
    ("/v1/templates/{id}/pricing-tables", &["GET"]),
    ("/v1/templates/{id}/custom-images", &["GET"]),
    ("/v1/products", &["GET", "POST"]),
    ("/v1/subscriptions", &["GET", "POST"]),
    ("/v1/subscriptions/events", &["GET"]),
    ("/v1/subscriptions/errors", &["GET"]),
    ("/v1/subscriptions/errors/{id}/retry", &["POST"]),
    ("/v1/subscriptions/test", &["POST"]),
    ("/v1/subscriptions/events/signed", &["POST"]),
    ("/v1/subscriptions/events/rejected", &["POST"]),
    ("/v1/subscriptions/events/reviewed", &["POST"]),
    ("/v1/subscriptions/{id}", &["GET", "DELETE"]),
    ("/v1/subscriptions/{id}/secret", &["POST"]),
    ("/v1/subscriptions/{id}/deliveries", &["GET"]),
    ("/s/_/{name}", &["GET"]),
    ("/app", &["GET", "HEAD"]),
    ("/app/_/{name}", &["GET"]),
    ("/app/{view}", &["GET", "HEAD"]),
    ("/app/{view}/{id}", &["GET", "HEAD"]),
    ("/app/{view}/{id}/{part}", &["GET", "HEAD"]),
    ("/s/{secret}", &["GET", "HEAD"]),
    ("/v1/recipient/{secret}", &["GET"]),
    ("/v1/recipient/{secret}/verify/start", &["POST"]),
    ("/v1/recipient/{secret}/verify", &["POST"]),
    ("/v1/recipient/{secret}/view", &["POST"]),
    ("/v1/recipient/{secret}/review", &["POST"]),
    ("/v1/recipient/{secret}/comment", &["POST"]),
    ("/v1/recipient/{secret}/sign", &["POST"]),
    ("/v1/recipient/{secret}/approve", &["POST"]),
    ("/v1/recipient/{secret}/reject", &["POST"]),
    ("/v1/recipient/{secret}/print", &["POST"]),
    ("/v1/recipient/{secret}/page-views", &["POST"]),
    ("/v1/recipient/{secret}/download", &["GET"]),
    ("/v1/recipient/{secret}/pages/{n}", &["GET"]),
    ("/v1/recipient/{secret}/comments", &["GET"]),
    ("/v1/eid/return/{session}", &["GET"]),
];

/// The routes that take files (base64 `file_content`, multipart files, a drawn
/// signature, an agent's `create_document`): their bodies may be as large as the host
/// allows. Every other route takes at most [`SMALL_BODY`] (413 `payload_too_large`).
pub const FILE_ROUTES: &[&str] = &[
    "/v1/documents",
    "/v1/upload",
    "/v1/upload/archive",
    "/v1/upload/attachment",
    "/v1/upload/video",
    "/v1/documents/{id}/attachments/{attachment_id}/upload",
    "/v1/templates",
    "/v1/verify",
    "/v1/recipient/{secret}/sign",
    "/mcp",
];

/// The largest body of a route that takes no files: 1 MiB.
pub const SMALL_BODY: usize = 1 << 20;

/// The methods of the table's route for `segments`: the template whose literal segments
/// match most of them, so `/v1/documents/latest` is not taken for `/v1/documents/{id}`.
pub fn allowed_methods(segments: &[&str]) -> Option<&'static [&'static str]> {
    table_route(segments).map(|(_, methods)| methods)
}

/// The table's route for `segments`: its template and methods (see [`allowed_methods`]).
fn table_route(segments: &[&str]) -> Option<(&'static str, &'static [&'static str])> {
    let mut best: Option<(usize, &'static str, &'static [&'static str])> = None;
    for ((template, methods), &n) in ROUTES.iter().zip(SEGMENT_COUNTS.iter()) {
        if usize::from(n) == segments.len()
            && let Some(literals) = template_fits(template, segments)
            && best.is_none_or(|(n, _, _)| literals > n)
        {
            best = Some((literals, template, methods));
        }
    }
    best.map(|(_, t, m)| (t, m))
}

/// How many segments each template of [`ROUTES`] has, counted at compile time: a
/// request is only compared with the templates of its own length.
const SEGMENT_COUNTS: [u8; ROUTES.len()] = {
    let mut counts = [0u8; ROUTES.len()];
    let mut r = 0;
    while r < ROUTES.len() {
        let bytes = ROUTES[r].0.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'/' {
                counts[r] += 1;
            }
            i += 1;
        }
        r += 1;
    }
    counts
};

/// Whether `segments` fit `template` (a literal segment equal, a `{param}` non-empty), and
/// then how many literal segments it has. One pass over the template's bytes that stops
/// at the first difference: this runs for every route of the table on every request,
/// and splitting each template into an iterator was a quarter of a small call's time in
/// wasm.
fn template_fits(template: &str, segments: &[&str]) -> Option<usize> {
    let t = template.as_bytes();
    let mut i = 0;
    let mut literals = 0;
    for s in segments {
        if t.get(i) != Some(&b'/') {
            return None;
        }
        i += 1;
        if t.get(i) == Some(&b'{') {
            if s.is_empty() {
                return None;
            }
            i += t[i..]
                .iter()
                .position(|&b| b == b'/')
                .unwrap_or(t.len() - i);
        } else {
            let s = s.as_bytes();
            // The first byte alone rules out most templates, without a call to `bcmp`.
            if t.get(i) != s.first() || !t[i..].starts_with(s) {
                return None;
            }
            i += s.len();
            if i < t.len() && t[i] != b'/' {
                return None;
            }
            literals += 1;
        }
    }
    (i == t.len()).then_some(literals)
}

/// Dispatches one request.
pub(crate) fn route(cx: &mut Cx, req: &Request) -> ApiResult<Response> {
    route_named(cx, req).0
}

/// Dispatches one request; also gives the template of [`ROUTES`] it matched (what
/// hosts count and log requests by, see [`ROUTE_HEADER`]).
pub(crate) fn route_named(
    cx: &mut Cx,
    req: &Request,
) -> (ApiResult<Response>, Option<&'static str>) {
    let path = req.path.strip_suffix('/').unwrap_or(&req.path);
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let table = table_route(&segments);
    (dispatch(cx, req, &segments, table), table.map(|(t, _)| t))
}

/// The answer header that names the route template a request matched, for the host's
/// metrics and logs: a host removes it before answering (it is public anyway: the
/// templates are `openapi.json`'s paths).
pub const ROUTE_HEADER: &str = "x-esign-route";

/// The route of [`ROUTES`] a request matched: its template and methods.
type TableRoute = Option<(&'static str, &'static [&'static str])>;

#[expect(
    clippy::too_many_lines,
    reason = "older than the 70-line rule (issue 49)"
)]
fn dispatch(
    cx: &mut Cx,
    req: &Request,
    segments: &[&str],
    table: TableRoute,
) -> ApiResult<Response> {
    let method = req.method.as_str();
    if !(req.origin == api::Origin::Admin && segments.first() == Some(&"admin")) {
        match table {
            None => {
                return Err(http::ApiError::not_found(
                    "not_found",
                    format!("no such endpoint: {} {}", req.method, req.path),
                ));
            }
            Some((_, allowed)) if !allowed.contains(&method) => {
                return Err(method_not_allowed(method, allowed));
            }
            Some((template, _)) => {
                let size = req.body.len() + req.parts.iter().map(|p| p.data.len()).sum::<usize>();
                if size > SMALL_BODY && !FILE_ROUTES.contains(&template) {
                    return Err(http::ApiError::new(
                        413,
                        "payload_too_large",
                        format!(
                            "{template} takes bodies of at most {SMALL_BODY} bytes; files go to POST /v1/upload"
                        ),
                    ));
                }
            }
        }
    }
    if let Some(answer) = agents::route(cx, req, segments, route) {
        return answer;
    }
    match (req.origin, segments) {
        (_, ["v1", "auth"]) => only(method, "POST", || auth::login(cx, req)),
        (_, ["v1", "refresh"]) => only(method, "GET", || auth::refresh(cx, req)),
        (_, ["v1", "refresh", entity]) => {
            only(method, "GET", || auth::refresh_entity(cx, req, entity))
        }
        (_, ["v1", "test"]) => only(method, "GET", || auth::test(cx, req)),
        (_, ["v1", "openapi.json"]) => only(method, "GET", || Ok(openapi())),
        (_, ["v1", "signing-certificate"]) => {
            only(method, "GET", || evidence::signing_certificate(cx))
        }
        (_, ["v1", "verify"]) => only(method, "POST", || evidence::verify(cx, req)),
        (_, ["v1", "users", "me"]) => only(method, "GET", || auth::me(cx, req)),
        (_, ["v1", "entity"]) => entity::route(cx, req),
        (_, ["v1", "register"]) => only(method, "POST", || auth::register(cx, req)),
        (_, ["v1", "notifications"]) => only(method, "GET", || notifications::list(cx, req)),
        (_, ["v1", "folders", rest @ ..]) => folders::route(cx, req, rest),
        (_, ["v1", "contacts", rest @ ..]) => contacts::route(cx, req, rest),
        (_, ["v1", "email", "templates", rest @ ..]) => mail_templates::email_route(cx, req, rest),
        (_, ["v1", "communication-templates", rest @ ..]) => {
            mail_templates::communication_route(cx, req, rest)
        }
        (_, ["v1", "attachments"]) => only(method, "GET", || attachments::list(cx, req)),
        (_, ["v1", "upload", "attachment"]) => {
            only(method, "POST", || attachments::upload(cx, req))
        }
        (_, ["v1", "upload", "video"]) => only(method, "POST", || videos::upload(cx, req)),
        (_, ["v1", "videos"]) => only(method, "GET", || videos::list_videos(cx, req)),
        (_, ["v1", "videos", id]) => only(method, "GET", || videos::get(cx, req, id)),
        (_, ["v1", "video", "job", id]) => only(method, "GET", || videos::job(cx, req, id)),
        (_, ["v1", "files", secret]) => only(method, "GET", || {
            public_files::serve(cx, secret).ok_or_else(|| {
                http::ApiError::not_found("file_not_found", "nothing is published here (any more)")
            })
        }),
        (_, ["v1", "users", rest @ ..]) => users::route(cx, req, rest),
        (_, ["v1", "teams"]) => only(method, "GET", || users::teams(cx, req)),
        (_, ["v1", "revoke"]) => only(method, "GET", || auth::revoke(cx, req)),
        (_, ["v1", "documents", rest @ ..]) => documents::route(cx, req, rest),
        (_, ["v1", "upload"]) => only(method, "POST", || uploads::create(cx, req)),
        (_, ["v1", "download", secret]) => only(method, "GET", || download::by_link(cx, secret)),
        (_, ["v1", "upload", "archive"]) => only(method, "POST", || create::archive(cx, req)),
        (_, ["v1", "upload", id]) => only(method, "GET", || uploads::get(cx, req, id)),
        (_, ["v1", "custom-data", "entity", rest @ ..]) => custom_data::entity_route(cx, req, rest),
        (_, ["v1", "templates", rest @ ..]) => templates::route(cx, req, rest),
        (_, ["v1", "products"]) => products::route(cx, req),
        (_, ["v1", "subscriptions", rest @ ..]) => subscriptions::route(cx, req, rest),
        // The signing page's assets, and the page behind each recipient's mailed link.
        (_, ["s", "_", name]) => only(method, "GET", || {
            page::asset(name)
                .ok_or_else(|| http::ApiError::not_found("asset_not_found", "no such asset"))
        }),
        (_, ["s", secret]) => Ok(recipients::page_route(cx, req, secret)),
        // The sender's web app: its assets, and the shell of every view.
        (_, ["app", "_", name]) => only(method, "GET", || {
            app::asset(name)
                .ok_or_else(|| http::ApiError::not_found("asset_not_found", "no such asset"))
        }),
        (_, ["app", views @ ..]) => Ok(app::shell(req, views)),
        (_, ["v1", "recipient", secret, rest @ ..]) => {
            let mut resp = match recipients::route(cx, req, secret, rest) {
                Ok(r) => r,
                Err(e) => e.into_response(),
            };
            page::safety_headers(&mut resp.headers);
            Ok(resp)
        }
        (_, ["v1", "eid", "return", session]) => only(method, "GET", || {
            let (location, cookie) = verify::eid_return(cx, req, session)?;
            let mut resp = Response {
                status: 303,
                headers: vec![("location".into(), location), ("set-cookie".into(), cookie)],
                body: Vec::new(),
            };
            page::safety_headers(&mut resp.headers);
            Ok(resp)
        }),
        (api::Origin::Admin, ["admin", rest @ ..]) => admin::route(cx, req, rest),
        _ => Err(http::ApiError::not_found(
            "not_found",
            format!("no such endpoint: {} {}", req.method, req.path),
        )),
    }
}

/// The OpenAPI 3.1 document of the public API, deflated by `build.rs`: 30 KB of the
/// component's data instead of 392 KB. Every instance's memory is reset after its call
/// by a walk of its page table, so the six 64 KiB pages this saves cost every call
/// (about 1 µs); the document, rarely read and cached for an hour, is inflated when it
/// is (about a millisecond).
const OPENAPI_DEFLATED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/openapi.json.deflate"));

/// `GET /v1/openapi.json`: the document as it is in the repository.
fn openapi() -> Response {
    let body = miniz_oxide::inflate::decompress_to_vec(OPENAPI_DEFLATED)
        .expect("build.rs deflated the document");
    Response {
        status: 200,
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("cache-control".into(), "public, max-age=3600".into()),
        ],
        body,
    }
}
