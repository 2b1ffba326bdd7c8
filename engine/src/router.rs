//! The route table ([`ROUTES`]): each public route's method, path template and
//! handler, declared once. Unknown paths answer 404; a known path with another method
//! answers 405 with `Allow`; a body too large for its route 413. Admin requests (the
//! CLI's origin) go to `handlers::admin`.

use crate::base::api::{self, Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, method_not_allowed};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::auth::{Principal, authenticate};
use crate::handlers::documents::{
    self, bulk_sends, comments, create, custom_data, delete, download, fields, public_links, read,
    reminders, roster, send, signing, update,
};
use crate::handlers::recipients::{self, Gate, LinkAct, link, page};
use crate::handlers::{
    admin, agents, app, attachments, auth, contacts, entity, evidence, folders, mail_templates,
    notifications, products, public_files, subscriptions, templates, uploads, users, videos,
};

/// What a route runs once the table matched it. The values of the template's `{…}`
/// segments come in order.
#[derive(Clone, Copy)]
pub(crate) enum Handler {
    /// Anyone may call it (a handler that needs a token or a link checks it itself).
    Open(fn(&mut Cx, &Request, &[&str]) -> ApiResult<Response>),
    /// A member with a bearer token: the router authenticates before it runs.
    Member(fn(&mut Cx, &Principal, &Request, &[&str]) -> ApiResult<Response>),
    /// A recipient's link (the first parameter): `recipients::link` checks it, and the
    /// identity checks the gate names, before the act runs.
    Link(Gate, LinkAct),
}

/// One route: a method, a path template (`{name}` matches one segment), whether its
/// body may carry files, and its handler.
pub struct Route {
    pub method: &'static str,
    pub path: &'static str,
    /// Files come in its body (base64 `file_content`, multipart files, a drawn
    /// signature, an agent's `create_document`): it may be as large as the host allows.
    /// Every other route takes at most [`SMALL_BODY`] (413 `payload_too_large`).
    pub takes_files: bool,
    pub(crate) handler: Handler,
}

impl Route {
    const fn open(
        method: &'static str,
        path: &'static str,
        f: fn(&mut Cx, &Request, &[&str]) -> ApiResult<Response>,
    ) -> Route {
        Route {
            method,
            path,
            takes_files: false,
            handler: Handler::Open(f),
        }
    }

    const fn member(
        method: &'static str,
        path: &'static str,
        f: fn(&mut Cx, &Principal, &Request, &[&str]) -> ApiResult<Response>,
    ) -> Route {
        Route {
            method,
            path,
            takes_files: false,
            handler: Handler::Member(f),
        }
    }

    const fn link(method: &'static str, path: &'static str, gate: Gate, act: LinkAct) -> Route {
        Route {
            method,
            path,
            takes_files: false,
            handler: Handler::Link(gate, act),
        }
    }

    /// The same route, taking files.
    const fn files(self) -> Route {
        Route {
            takes_files: true,
            ..self
        }
    }
}

/// Every public route, the one place each is declared: [`route`] answers 404, 405 and
/// 413 from this table and runs the handler it names; hosts count requests by its
/// templates ([`ROUTE_HEADER`]); `openapi.json` documents exactly these (a test compares
/// the two). Admin routes (the CLI's origin) are not public and not here. One line
/// per route, so the table reads as one.
#[rustfmt::skip]
pub const ROUTES: &[Route] = &[
    // OAuth 2.1 for agents, and MCP (`handlers::agents`).
    Route::open("GET", "/.well-known/oauth-protected-resource", |cx, _, _| agents::resource_metadata(cx)),
    Route::open("GET", "/.well-known/oauth-protected-resource/mcp", |cx, _, _| agents::resource_metadata(cx)),
    Route::open("GET", "/.well-known/oauth-authorization-server", |cx, _, _| agents::server_metadata(cx)),
    Route::open("GET", "/.well-known/oauth-authorization-server/mcp", |cx, _, _| agents::server_metadata(cx)),
    Route::open("GET", "/.well-known/openid-configuration", |cx, _, _| agents::server_metadata(cx)),
    Route::open("POST", "/register", |cx, req, _| agents::register(cx, req)),
    Route::open("GET", "/authorize", |cx, req, _| Ok(agents::authorize(cx, req))),
    Route::open("POST", "/authorize", |cx, req, _| Ok(agents::authorize(cx, req))),
    Route::open("POST", "/token", |cx, req, _| Ok(agents::token(cx, req))),
    Route::open("POST", "/revoke", |cx, req, _| Ok(agents::revoke(cx, req))),
    Route::open("GET", "/mcp", |cx, req, _| Ok(agents::mcp(cx, req, route))).files(),
    Route::open("POST", "/mcp", |cx, req, _| Ok(agents::mcp(cx, req, route))).files(),
    Route::open("DELETE", "/mcp", |cx, req, _| Ok(agents::mcp(cx, req, route)))
    .files(),
    // Signing in, tokens, the account (`handlers::auth`, `users`, `entity`).
    Route::open("POST", "/v1/auth", |cx, req, _| auth::login(cx, req)),
    Route::open("GET", "/v1/refresh", |cx, req, _| auth::refresh(cx, req)),
    Route::open("GET", "/v1/refresh/{entity_id}", |cx, req, p| auth::refresh_entity(cx, req, p[0])),
    Route::open("GET", "/v1/test", |cx, req, _| auth::test(cx, req)),
    Route::open("GET", "/v1/openapi.json", |_, _, _| Ok(openapi())),
    Route::open("GET", "/v1/signing-certificate", |cx, _, _| evidence::signing_certificate(cx)),
    Route::open("POST", "/v1/verify", |cx, req, _| evidence::verify(cx, req)).files(),
    Route::open("GET", "/v1/users/me", |cx, req, _| auth::me(cx, req)),
    Route::member("GET", "/v1/users", |cx, pr, _, _| users::list(cx, pr)),
    Route::member("POST", "/v1/users", |cx, pr, req, _| users::create(cx, pr, req)),
    Route::member("GET", "/v1/users/{user_id}", |cx, pr, _, p| users::get(cx, pr, p[0])),
    Route::member("PUT", "/v1/users/{user_id}", |cx, pr, req, p| users::update(cx, pr, req, p[0])),
    Route::member("DELETE", "/v1/users/{user_id}", |cx, pr, _, p| users::remove(cx, pr, p[0])),
    Route::member("GET", "/v1/users/{user_id}/statistics", |cx, pr, req, p| users::statistics(cx, pr, req, p[0])),
    Route::member("GET", "/v1/entity", |cx, pr, _, _| entity::get(cx, pr)),
    Route::member("PUT", "/v1/entity", |cx, pr, req, _| entity::update(cx, pr, req)),
    Route::open("POST", "/v1/register", |cx, req, _| auth::register(cx, req)),
    Route::open("GET", "/v1/notifications", |cx, req, _| notifications::list(cx, req)),
    // GetAccept's other resources.
    Route::member("GET", "/v1/folders", |cx, pr, req, _| folders::list(cx, pr, req)),
    Route::member("POST", "/v1/folders", |cx, pr, req, _| folders::create(cx, pr, req)),
    Route::member("GET", "/v1/folders/{folder_id}", |cx, pr, _, p| folders::get(cx, pr, p[0])),
    Route::member("DELETE", "/v1/folders/{folder_id}", |cx, pr, _, p| folders::delete(cx, pr, p[0])),
    Route::member("GET", "/v1/contacts", |cx, pr, req, _| contacts::list_contacts(cx, pr, req)),
    Route::member("POST", "/v1/contacts", |cx, pr, req, _| contacts::create(cx, pr, req)),
    Route::member("DELETE", "/v1/contacts/{contact_id}", |cx, pr, _, p| contacts::delete(cx, pr, p[0])),
    Route::member("GET", "/v1/email/templates", |cx, pr, _, _| mail_templates::list_email(cx, pr)),
    Route::member("POST", "/v1/email/templates", |cx, pr, req, _| mail_templates::create_email(cx, pr, req)),
    Route::member("GET", "/v1/email/templates/{email_template_id}", |cx, pr, _, p| mail_templates::get_email(cx, pr, p[0])),
    Route::member("PUT", "/v1/email/templates/{email_template_id}", |cx, pr, req, p| mail_templates::update_email(cx, pr, req, p[0])),
    Route::member("GET", "/v1/communication-templates", |cx, pr, req, _| mail_templates::list_communication(cx, pr, req)),
    Route::member("POST", "/v1/communication-templates", |cx, pr, req, _| mail_templates::create_communication(cx, pr, req)),
    Route::member("GET", "/v1/communication-templates/{communication_template_id}", |cx, pr, _, p| mail_templates::get_communication(cx, pr, p[0])),
    Route::member("PUT", "/v1/communication-templates/{communication_template_id}", |cx, pr, req, p| mail_templates::update_communication(cx, pr, req, p[0])),
    Route::open("GET", "/v1/attachments", |cx, req, _| attachments::list(cx, req)),
    Route::open("POST", "/v1/upload/attachment", |cx, req, _| attachments::upload(cx, req))
    .files(),
    Route::open("POST", "/v1/upload/video", |cx, req, _| videos::upload(cx, req))
    .files(),
    Route::open("GET", "/v1/videos", |cx, req, _| videos::list_videos(cx, req)),
    Route::open("GET", "/v1/videos/{video_id}", |cx, req, p| videos::get(cx, req, p[0])),
    Route::open("GET", "/v1/video/job/{video_id}", |cx, req, p| videos::job(cx, req, p[0])),
    Route::open("GET", "/v1/files/{secret}", |cx, _, p| public_files::serve(cx, p[0])),
    Route::open("GET", "/v1/teams", |cx, req, _| users::teams(cx, req)),
    Route::open("GET", "/v1/users/me/connections", |cx, req, _| agents::connections(cx, req)),
    Route::open("DELETE", "/v1/users/me/connections/{client_id}", |cx, req, p| agents::disconnect(cx, req, p[0])),
    Route::open("GET", "/v1/revoke", |cx, req, _| auth::revoke(cx, req)),
    // Documents (`handlers::documents`).
    Route::member("GET", "/v1/documents", |cx, pr, req, _| documents::list::list(cx, pr, req))
    .files(),
    Route::member("POST", "/v1/documents", |cx, pr, req, _| create::create(cx, pr, req))
    .files(),
    Route::member("GET", "/v1/documents/latest", |cx, pr, req, _| read::latest(cx, pr, req)),
    Route::member("GET", "/v1/documents/external/{external_id}", |cx, pr, req, p| read::external(cx, pr, req, p[0])),
    Route::member("GET", "/v1/documents/{id}", |cx, pr, req, p| read::get(cx, pr, req, p[0])),
    Route::member("PUT", "/v1/documents/{id}", |cx, pr, req, p| update::update(cx, pr, req, p[0])),
    Route::member("DELETE", "/v1/documents/{id}", |cx, pr, _, p| delete::delete(cx, pr, p[0])),
    Route::member("GET", "/v1/documents/{id}/status", |cx, pr, _, p| read::status(cx, pr, p[0])),
    Route::member("GET", "/v1/documents/{id}/recipients", |cx, pr, _, p| read::recipients(cx, pr, p[0])),
    Route::member("GET", "/v1/documents/{id}/pages", |cx, pr, _, p| read::pages(cx, pr, p[0])),
    Route::member("GET", "/v1/documents/{id}/download", |cx, pr, req, p| download::download(cx, pr, req, p[0])),
    Route::member("GET", "/v1/documents/{id}/log", |cx, pr, _, p| read::log(cx, pr, p[0])),
    Route::member("GET", "/v1/documents/{id}/attachments", |cx, pr, _, p| read::attachments(cx, pr, p[0])),
    Route::member("POST", "/v1/documents/{id}/attachments/{attachment_id}/upload", |cx, pr, req, p| update::upload_attachment(cx, pr, req, p[0], p[1]))
    .files(),
    Route::member("GET", "/v1/documents/{id}/events", |cx, pr, _, p| read::events(cx, pr, p[0])),
    Route::member("POST", "/v1/documents/{id}/preview", |cx, pr, req, p| download::preview(cx, pr, req, p[0])),
    Route::member("GET", "/v1/documents/{id}/custom-data", |cx, pr, req, p| custom_data::list(cx, pr, req, p[0])),
    Route::member("POST", "/v1/documents/{id}/custom-data", |cx, pr, req, p| custom_data::add_value(cx, pr, req, p[0])),
    Route::member("GET", "/v1/documents/{id}/custom-data/{custom_data_id}", |cx, pr, _, p| custom_data::get_value(cx, pr, p[0], p[1])),
    Route::member("PUT", "/v1/documents/{id}/custom-data/{custom_data_id}", |cx, pr, req, p| custom_data::update_value(cx, pr, req, p[0], p[1])),
    Route::member("DELETE", "/v1/documents/{id}/custom-data/{custom_data_id}", |cx, pr, _, p| custom_data::delete_value(cx, pr, p[0], p[1])),
    Route::member("GET", "/v1/custom-data/entity", |cx, pr, _, _| custom_data::list_properties(cx, pr)),
    Route::member("POST", "/v1/custom-data/entity", |cx, pr, req, _| custom_data::add_property(cx, pr, req)),
    Route::member("DELETE", "/v1/custom-data/entity/{key}", |cx, pr, _, p| custom_data::delete_property(cx, pr, p[0])),
    Route::member("GET", "/v1/documents/{id}/comments", |cx, pr, _, p| read::comments(cx, pr, p[0])),
    Route::member("POST", "/v1/documents/{id}/comments", |cx, pr, req, p| comments::comment(cx, pr, req, p[0])),
    Route::member("POST", "/v1/documents/{id}/comments/{comment_id}/resolve", |cx, pr, _, p| comments::resolve_comment(cx, pr, p[0], p[1])),
    Route::member("GET", "/v1/documents/{id}/pricing-tables", |cx, pr, _, p| read::pricing_tables(cx, pr, p[0])),
    Route::member("PUT", "/v1/documents/{id}/pricing-tables", |cx, pr, req, p| update::put_pricing_tables(cx, pr, req, p[0])),
    Route::member("GET", "/v1/documents/{id}/revisions", |cx, pr, _, p| read::revisions(cx, pr, p[0])),
    Route::member("POST", "/v1/documents/{id}/revisions", |cx, pr, req, p| send::revise(cx, pr, req, p[0])),
    Route::member("GET", "/v1/documents/{id}/fields", |cx, pr, _, p| fields::list(cx, pr, p[0])),
    Route::member("POST", "/v1/documents/{id}/fields", |cx, pr, req, p| fields::add(cx, pr, req, p[0])),
    Route::member("PUT", "/v1/documents/{id}/fields", |cx, pr, req, p| fields::replace(cx, pr, req, p[0])),
    Route::member("PUT", "/v1/documents/{id}/recipients/{recipient_id}", |cx, pr, req, p| roster::update_recipient(cx, pr, req, p[0], p[1])),
    Route::member("DELETE", "/v1/documents/{id}/recipients/{recipient_id}", |cx, pr, req, p| roster::remove_recipient(cx, pr, req, p[0], p[1])),
    Route::member("POST", "/v1/documents/{id}/recipients/{recipient_id}/in-person", |cx, pr, req, p| roster::in_person(cx, pr, req, p[0], p[1])),
    Route::member("POST", "/v1/documents/{id}/self-sign", |cx, pr, req, p| roster::self_sign(cx, pr, req, p[0])),
    Route::member("POST", "/v1/documents/{id}/recipients/send", |cx, pr, req, p| send::send_to_recipients(cx, pr, req, p[0])),
    Route::member("POST", "/v1/documents/{id}/seal", |cx, pr, req, p| send::seal(cx, pr, req, p[0])),
    Route::member("POST", "/v1/documents/{id}/send", |cx, pr, req, p| send::send(cx, pr, req, p[0])),
    Route::member("POST", "/v1/documents/{id}/forward", |cx, pr, req, p| send::forward(cx, pr, req, p[0])),
    Route::member("POST", "/v1/documents/{id}/expiration", |cx, pr, req, p| update::expiration(cx, pr, req, p[0])),
    Route::member("POST", "/v1/documents/{id}/manually-sign", |cx, pr, req, p| signing::manually_sign(cx, pr, req, p[0])),
    Route::member("POST", "/v1/documents/{id}/lost", |cx, pr, _, p| delete::lost(cx, pr, p[0])),
    Route::member("POST", "/v1/documents/{id}/reminders", |cx, pr, req, p| reminders::reminders(cx, pr, req, p[0])),
    Route::open("GET", "/v1/download/{secret}", |cx, req, p| download::by_link(cx, req, p[0])),
    Route::open("POST", "/v1/upload", |cx, req, _| uploads::create(cx, req)).files(),
    Route::open("POST", "/v1/upload/archive", |cx, req, _| create::archive(cx, req))
    .files(),
    Route::open("GET", "/v1/upload/{id}", |cx, req, p| uploads::get(cx, req, p[0])),
    // Templates and products.
    Route::member("GET", "/v1/templates", |cx, pr, req, _| templates::list(cx, pr, req))
    .files(),
    Route::member("POST", "/v1/templates", |cx, pr, req, _| templates::create(cx, pr, req))
    .files(),
    Route::member("GET", "/v1/templates/{id}", |cx, pr, _, p| templates::get(cx, pr, p[0])),
    Route::member("PUT", "/v1/templates/{id}", |cx, pr, req, p| templates::update(cx, pr, req, p[0])),
    Route::member("DELETE", "/v1/templates/{id}", |cx, pr, _, p| templates::delete(cx, pr, p[0])),
    Route::member("GET", "/v1/templates/{id}/fields", |cx, pr, _, p| templates::fields(cx, pr, p[0])),
    Route::member("GET", "/v1/templates/{id}/roles", |cx, pr, _, p| templates::roles(cx, pr, p[0])),
    Route::member("POST", "/v1/templates/{id}/public-links", |cx, pr, req, p| public_links::publish(cx, pr, req, p[0])),
    Route::member("GET", "/v1/public-links", |cx, pr, _, _| public_links::list(cx, pr)),
    Route::member("DELETE", "/v1/public-links/{id}", |cx, pr, _, p| public_links::unpublish(cx, pr, p[0])),
    Route::member("POST", "/v1/templates/{id}/bulk-sends", |cx, pr, req, p| bulk_sends::start(cx, pr, req, p[0])).files(),
    Route::member("GET", "/v1/bulk-sends/{id}", |cx, pr, _, p| bulk_sends::get(cx, pr, p[0])),
    Route::member("GET", "/v1/templates/{id}/fields_roles", |cx, pr, _, p| templates::fields_roles(cx, pr, p[0])),
    Route::member("GET", "/v1/templates/{id}/pricing-tables", |cx, pr, _, p| templates::pricing_tables(cx, pr, p[0])),
    Route::member("GET", "/v1/templates/{id}/custom-images", |cx, pr, _, p| templates::custom_images(cx, pr, p[0])),
    Route::member("GET", "/v1/products", |cx, pr, req, _| products::list(cx, pr, req)),
    Route::member("POST", "/v1/products", |cx, pr, req, _| products::create(cx, pr, req)),
    // Webhooks (`handlers::subscriptions`).
    Route::member("GET", "/v1/subscriptions", |cx, pr, _, _| subscriptions::list_json(cx, pr)),
    Route::member("POST", "/v1/subscriptions", |cx, pr, req, _| subscriptions::create(cx, pr, req, None)),
    Route::member("GET", "/v1/subscriptions/events", |_, _, _, _| Ok(subscriptions::events())),
    Route::member("GET", "/v1/subscriptions/errors", |cx, pr, _, _| subscriptions::errors(cx, pr)),
    Route::member("POST", "/v1/subscriptions/errors/{id}/retry", |cx, pr, _, p| subscriptions::retry(cx, pr, p[0])),
    Route::member("POST", "/v1/subscriptions/test", |cx, pr, req, _| subscriptions::test(cx, pr, req)),
    Route::member("POST", "/v1/subscriptions/events/signed", |cx, pr, req, _| subscriptions::create(cx, pr, req, Some("signed"))),
    Route::member("POST", "/v1/subscriptions/events/rejected", |cx, pr, req, _| subscriptions::create(cx, pr, req, Some("rejected"))),
    Route::member("POST", "/v1/subscriptions/events/reviewed", |cx, pr, req, _| subscriptions::create(cx, pr, req, Some("reviewed"))),
    Route::member("GET", "/v1/subscriptions/{id}", |cx, pr, _, p| subscriptions::get(cx, pr, p[0])),
    Route::member("DELETE", "/v1/subscriptions/{id}", |cx, pr, _, p| subscriptions::delete(cx, pr, p[0])),
    Route::member("POST", "/v1/subscriptions/{id}/secret", |cx, pr, _, p| subscriptions::rotate_secret(cx, pr, p[0])),
    Route::member("GET", "/v1/subscriptions/{id}/deliveries", |cx, pr, _, p| subscriptions::deliveries(cx, pr, p[0])),
    // The signing page's assets, and the page behind each recipient's mailed link.
    Route::open("GET", "/s/_/{name}", |_, _, p| asset(page::asset(p[0]))),
    // The script a site includes to frame a signing page (embedded signing).
    Route::open("GET", "/embed.js", |_, _, _| Ok(page::embed_script())),
    // The sender's web app: its assets, and the shell of every view.
    Route::open("GET", "/app", |_, req, p| Ok(app::shell(req, p))),
    Route::open("HEAD", "/app", |_, req, p| Ok(app::shell(req, p))),
    Route::open("GET", "/app/_/{name}", |_, _, p| asset(app::asset(p[0]))),
    Route::open("GET", "/app/{view}", |_, req, p| Ok(app::shell(req, p))),
    Route::open("HEAD", "/app/{view}", |_, req, p| Ok(app::shell(req, p))),
    Route::open("GET", "/app/{view}/{id}", |_, req, p| Ok(app::shell(req, p))),
    Route::open("HEAD", "/app/{view}/{id}", |_, req, p| Ok(app::shell(req, p))),
    Route::open("GET", "/app/{view}/{id}/{part}", |_, req, p| Ok(app::shell(req, p))),
    Route::open("HEAD", "/app/{view}/{id}/{part}", |_, req, p| Ok(app::shell(req, p))),
    Route::open("GET", "/s/{secret}", |cx, req, p| Ok(recipients::page_route(cx, req, p[0]))),
    Route::open("GET", "/p/{slug}", |cx, req, p| public_links::page(cx, req, p[0])),
    Route::open("HEAD", "/p/{slug}", |cx, req, p| public_links::page(cx, req, p[0])),
    Route::open("POST", "/p/{slug}", |cx, req, p| public_links::visit(cx, req, p[0])),
    Route::open("GET", "/p/{slug}/qr.png", |cx, _, p| public_links::qr(cx, p[0])),
    Route::open("POST", "/p/{slug}/code", |cx, req, p| public_links::code(cx, req, p[0])),
    Route::open("HEAD", "/s/{secret}", |cx, req, p| Ok(recipients::page_route(cx, req, p[0]))),
    // What a recipient's link allows (`handlers::recipients`).
    Route::link("GET", "/v1/recipient/{secret}", Gate::None, recipients::get),
    Route::link("POST", "/v1/recipient/{secret}/verify/start", Gate::None, recipients::verify_start),
    Route::link("POST", "/v1/recipient/{secret}/verify", Gate::None, recipients::verify),
    Route::link("POST", "/v1/recipient/{secret}/view", Gate::Open, recipients::view),
    Route::link("POST", "/v1/recipient/{secret}/review", Gate::Open, recipients::review),
    Route::link("POST", "/v1/recipient/{secret}/comment", Gate::Open, recipients::comment),
    Route::link("POST", "/v1/recipient/{secret}/sign", Gate::Sign, recipients::sign).files(),
    Route::link("POST", "/v1/recipient/{secret}/approve", Gate::Sign, recipients::approve),
    Route::link("POST", "/v1/recipient/{secret}/reject", Gate::Open, recipients::reject),
    Route::link("POST", "/v1/recipient/{secret}/transfer", Gate::Sign, recipients::transfer),
    Route::link("POST", "/v1/recipient/{secret}/print", Gate::Open, recipients::print),
    Route::link("POST", "/v1/recipient/{secret}/page-views", Gate::Open, recipients::page_views),
    Route::link("GET", "/v1/recipient/{secret}/download", Gate::Open, recipients::download),
    Route::link("GET", "/v1/recipient/{secret}/pages/{n}", Gate::Open, recipients::page_image),
    Route::link("GET", "/v1/recipient/{secret}/comments", Gate::Open, recipients::comments),
    Route::open("GET", "/v1/eid/return/{session}", |cx, req, p| recipients::eid_return(cx, req, p[0])),
];

/// The local administrator's routes (origin `admin`, under `/admin`; never reachable over
/// HTTP and not in `openapi.json`): what `esign admin` drives (`handlers::admin`).
/// Matched like [`ROUTES`], with 404 and 405 from the table; no body limit of their own.
#[rustfmt::skip]
pub const ADMIN_ROUTES: &[Route] = &[
    Route::open("POST", "/admin/bootstrap", |cx, req, _| admin::bootstrap(cx, req)),
    Route::open("GET", "/admin/entities", |cx, _, _| Ok(admin::entities(cx))),
    Route::open("POST", "/admin/entities", |cx, req, _| admin::create_entity(cx, req)),
    Route::open("PATCH", "/admin/entities/{id}", |cx, req, p| admin::update_entity(cx, req, p[0])),
    Route::open("GET", "/admin/users", |cx, _, _| Ok(admin::users(cx))),
    Route::open("POST", "/admin/users", |cx, req, _| admin::create_user(cx, req)),
    Route::open("PATCH", "/admin/users/{id}", |cx, req, p| admin::update_user(cx, req, p[0])),
    Route::open("POST", "/admin/memberships", |cx, req, _| admin::put_membership(cx, req)),
    Route::open("POST", "/admin/check/{phase}", |cx, req, p| admin::check(cx, req, p[0])),
    Route::open("POST", "/admin/signup", |cx, req, _| admin::set_signup(cx, req)),
];

/// Every template of [`ROUTES`] with its methods, in the table's order: what
/// `openapi.json` lists, and what tests walk.
pub fn templates() -> Vec<(&'static str, Vec<&'static str>)> {
    let mut out: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for r in ROUTES {
        match out.iter_mut().find(|(t, _)| *t == r.path) {
            Some((_, methods)) => methods.push(r.method),
            None => out.push((r.path, vec![r.method])),
        }
    }
    out
}

/// An asset of a page, or 404.
fn asset(found: Option<Response>) -> ApiResult<Response> {
    found.ok_or_else(|| http::ApiError::not_found("asset_not_found", "no such asset"))
}

/// The largest body of a route that takes no files: 1 MiB.
pub const SMALL_BODY: usize = 1 << 20;

/// The template of [`ROUTES`] that `segments` fit best: the one whose literal segments
/// match most of them, so `/v1/documents/latest` is not taken for `/v1/documents/{id}`.
fn best_template(segments: &[&str]) -> Option<&'static str> {
    let mut best: Option<(usize, &'static str)> = None;
    let mut last = "";
    for (r, &n) in ROUTES.iter().zip(SEGMENT_COUNTS.iter()) {
        // A template's methods are neighbours: it is looked at once.
        if usize::from(n) != segments.len() || r.path == last {
            continue;
        }
        last = r.path;
        if let Some(literals) = template_fits(r.path, segments)
            && best.is_none_or(|(n, _)| literals > n)
        {
            best = Some((literals, r.path));
        }
    }
    best.map(|(_, t)| t)
}

/// How many segments each template of [`ROUTES`] has, counted at compile time: a
/// request is only compared with the templates of its own length.
const SEGMENT_COUNTS: [u8; ROUTES.len()] = {
    let mut counts = [0u8; ROUTES.len()];
    let mut r = 0;
    while r < ROUTES.len() {
        let bytes = ROUTES[r].path.as_bytes();
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
/// at the first difference: this runs for every template of the table on every request,
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

/// The values of `template`'s `{…}` segments in `segments` (which fit it), in order.
fn params<'a>(template: &str, segments: &[&'a str]) -> Vec<&'a str> {
    template
        .split('/')
        .skip(1)
        .zip(segments)
        .filter(|(t, _)| t.starts_with('{'))
        .map(|(_, s)| *s)
        .collect()
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
    if req.origin == api::Origin::Admin && segments.first() == Some(&"admin") {
        return (dispatch_admin(cx, req, &segments), None);
    }
    let template = best_template(&segments);
    (dispatch(cx, req, &segments, template), template)
}

/// The answer header that names the route template a request matched, for the host's
/// metrics and logs: a host removes it before answering (it is public anyway: the
/// templates are `openapi.json`'s paths).
pub const ROUTE_HEADER: &str = "x-esign-route";

/// 404 for a path no template fits, 405 for a method its template has not, 413 for a
/// body too large for the route; otherwise the route's handler, after authentication
/// for a member's route.
fn dispatch(
    cx: &mut Cx,
    req: &Request,
    segments: &[&str],
    template: Option<&'static str>,
) -> ApiResult<Response> {
    let Some(template) = template else {
        return Err(http::ApiError::not_found(
            "not_found",
            format!("no such endpoint: {} {}", req.method, req.path),
        ));
    };
    let method = req.method.as_str();
    let same = || ROUTES.iter().filter(|r| r.path == template);
    let Some(route) = same().find(|r| r.method == method) else {
        let allowed: Vec<&str> = same().map(|r| r.method).collect();
        return Err(method_not_allowed(method, &allowed));
    };
    let size = req.body.len()
        + req
            .parts
            .iter()
            .map(|p| p.staged.as_ref().map_or(p.data.len(), |b| b.size as usize))
            .sum::<usize>();
    if size > SMALL_BODY && !route.takes_files {
        return Err(http::ApiError::new(
            413,
            "payload_too_large",
            format!(
                "{template} takes bodies of at most {SMALL_BODY} bytes; files go to POST /v1/upload"
            ),
        ));
    }
    run(cx, req, route, &params(template, segments))
}

/// A route's handler, after authentication for a member's route.
fn run(cx: &mut Cx, req: &Request, route: &Route, params: &[&str]) -> ApiResult<Response> {
    match route.handler {
        Handler::Open(f) => f(cx, req, params),
        Handler::Member(f) => {
            let pr = authenticate(cx, req)?;
            f(cx, &pr, req, params)
        }
        Handler::Link(gate, act) => link(cx, req, params, gate, act),
    }
}

/// A request of the local administrator: 404 for a path no template of
/// [`ADMIN_ROUTES`] fits, 405 for a method its template has not, else its handler.
fn dispatch_admin(cx: &mut Cx, req: &Request, segments: &[&str]) -> ApiResult<Response> {
    let template = ADMIN_ROUTES
        .iter()
        .filter_map(|r| template_fits(r.path, segments).map(|literals| (literals, r.path)))
        .max_by_key(|(literals, _)| *literals)
        .map(|(_, t)| t)
        .ok_or_else(|| http::ApiError::not_found("not_found", "no such admin endpoint"))?;
    let method = req.method.as_str();
    let same = || ADMIN_ROUTES.iter().filter(|r| r.path == template);
    let Some(route) = same().find(|r| r.method == method) else {
        let allowed: Vec<&str> = same().map(|r| r.method).collect();
        return Err(method_not_allowed(method, &allowed));
    };
    run(cx, req, route, &params(template, segments))
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
