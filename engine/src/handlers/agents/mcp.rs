//! MCP over streamable HTTP at `/mcp`, with JSON responses (no SSE), serving both wire
//! revisions:
//!
//! - **2025-11-25** (and the earlier handshake revisions): `initialize` opens a session
//!   (`Mcp-Session-Id`, a `domain::mcp_sessions` session bound to the grant), every later
//!   request names it and may carry `MCP-Protocol-Version`; `DELETE` ends it.
//! - **2026-07-28**: stateless. `server/discover` says what is served; every request
//!   carries its protocol version in `_meta`, and the `Mcp-Method` / `Mcp-Name` headers
//!   must agree with the body. Results carry `resultType`.
//!
//! Before any of that: the `Origin` (when a browser sends one) must be this server's
//! (DNS-rebinding protection), and the bearer token must be an access token of a live
//! grant, else 401 with the `WWW-Authenticate` challenge of spec §5.2.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, Router, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::domain::oauth::{self, Family, SCOPE, base, is_our_origin, resource_metadata_url};
use crate::domain::{auth, mcp_sessions};
use crate::handlers::agents::tools;
use serde_json::{Map, Value, json};

/// The revision with `server/discover`.
pub const MODERN: &str = "2026-07-28";
/// Handshake revisions, newest first.
const HANDSHAKE: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];
const VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const UNSUPPORTED_VERSION: i64 = -32022;
/// 2026-07-28: a header disagrees with the body.
const HEADER_MISMATCH: i64 = -32020;
const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";
const CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";
const INSTRUCTIONS: &str = "esign: electronic proposals and contracts. Create a document \
    (create_document with base64 PDF content and recipients), send it (send_document), \
    and follow it (get_document_status, list_recipients, get_audit_log). Every tool acts \
    with the rights of the person who connected you, in the entity they chose.";

/// A JSON-RPC error: code, message and optional data.
type RpcError = (i64, String, Option<Value>);
/// What a method answers: a result, or a JSON-RPC error.
type RpcResult = Result<Value, RpcError>;

/// A JSON response (a JSON-RPC message).
fn json_of(status: u16, body: Value) -> Response {
    json(status, &body)
}

fn rpc_error(id: &Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut error = json!({ "code": code, "message": message });
    if let Some(d) = data {
        error["data"] = d;
    }
    json!({ "jsonrpc": "2.0", "id": id, "error": error })
}

fn empty(status: u16) -> Response {
    Response {
        status,
        headers: Vec::new(),
        body: Vec::new(),
    }
}

/// The 401 of spec §5.2: where the resource's metadata is, and the scope to ask for.
fn challenge(cx: &mut Cx, error: Option<&str>) -> Response {
    let mut value = format!(
        "Bearer resource_metadata=\"{}\", scope=\"{SCOPE}\"",
        resource_metadata_url(cx)
    );
    if let Some(e) = error {
        value.push_str(&format!(
            ", error=\"invalid_token\", error_description=\"{e}\""
        ));
    }
    http::ApiError::new(
        401,
        "invalid_token",
        error.unwrap_or("an access token is required: authorize with OAuth (see WWW-Authenticate)"),
    )
    .with_header("www-authenticate", value)
    .into_response()
}

/// The grant behind the request's bearer token. Who it acts for is checked here, once
/// per call, and kept in [`Cx::agent`] for the tool's REST operation.
fn grant(cx: &mut Cx, req: &Request) -> Result<Family, Response> {
    let family = live_family(cx, req)?;
    match auth::principal(cx, &family.user_id, &family.entity_id, String::new()) {
        Ok(pr) => {
            auth::act_as(cx, pr);
            Ok(family)
        }
        Err(e) if e.status == 401 => Err(challenge(cx, Some("the grant's user no longer exists"))),
        Err(e) => Err(e.into_response()),
    }
}

/// The unexpired, unrevoked grant of the request's access token.
fn live_family(cx: &mut Cx, req: &Request) -> Result<Family, Response> {
    let Some(header) = req.header("authorization") else {
        let test_user = cx.settings().mcp_test_user.clone();
        if !test_user.is_empty()
            && let Some(family) = oauth::test_grant(cx, &test_user)
        {
            return Ok(family);
        }
        return Err(challenge(cx, None));
    };
    let Some(secret) = auth::bearer_secret(header) else {
        return Err(challenge(
            cx,
            Some("the Authorization header must be Bearer <token>"),
        ));
    };
    oauth::access_grant(cx, secret).map_err(|why| challenge(cx, Some(why)))
}

/// Whether `host` (a `Host` header) may reach the server at `base`. DNS rebinding
/// turns a page's own name into a loopback address, so a server whose base URL is on
/// loopback answers only its own loopback names and port. A public server is reached
/// over TLS, where a rebound name fails the certificate check, and its proxy may
/// rewrite `Host`; it is not checked.
fn host_is_ours(base: &str, host: &str) -> bool {
    // The common case, the base's own authority, without parsing.
    let authority = base.split_once("://").map_or(base, |(_, rest)| rest);
    if authority.eq_ignore_ascii_case(host) {
        return true;
    }
    let Ok(url) = url::Url::parse(base) else {
        return true;
    };
    if !oauth::is_loopback(&url) {
        return true;
    }
    let Ok(given) = url::Url::parse(&format!("{}://{host}", url.scheme())) else {
        return false;
    };
    given.port_or_known_default() == url.port_or_known_default() && oauth::is_loopback(&given)
}

/// `/mcp`.
pub fn handle(cx: &mut Cx, req: &Request, router: Router) -> Response {
    // DNS rebinding: a page on another origin, or a name that resolves here but is not
    // ours, must not reach a local server.
    if let Some(origin) = req.header("origin")
        && !is_our_origin(cx, origin)
    {
        return http::ApiError::forbidden(
            "forbidden_origin",
            "requests from this Origin are not accepted",
        )
        .into_response();
    }
    if let Some(host) = req.header("host")
        && !host_is_ours(&base(cx), host)
    {
        return http::ApiError::forbidden("forbidden_host", "this Host is not the server's")
            .into_response();
    }
    let family = match grant(cx, req) {
        Ok(f) => f,
        Err(resp) => return resp,
    };
    match req.method.as_str() {
        "POST" => post(cx, req, &family, router),
        "DELETE" => {
            let Some(id) = req.header("mcp-session-id") else {
                return http::ApiError::bad_request(
                    "missing_session",
                    "DELETE needs an Mcp-Session-Id",
                )
                .into_response();
            };
            if mcp_sessions::end(cx, id, &family.id) {
                empty(204)
            } else {
                http::ApiError::not_found("session_not_found", "no such session").into_response()
            }
        }
        "GET" => http::ApiError::new(
            405,
            "method_not_allowed",
            "this server sends no server-initiated stream; POST requests",
        )
        .with_header("allow", "POST, DELETE")
        .into_response(),
        m => http::method_not_allowed(m, &["POST", "DELETE"]).into_response(),
    }
}

fn post(cx: &mut Cx, req: &Request, family: &Family, router: Router) -> Response {
    if let Some(accept) = req.header("accept") {
        let a = accept.to_ascii_lowercase();
        if !(a.contains("application/json") || a.contains("*/*") || a.contains("application/*")) {
            return json_of(
                406,
                rpc_error(
                    &Value::Null,
                    INVALID_REQUEST,
                    "Accept must include application/json",
                    None,
                ),
            );
        }
    }
    if req.content_type() != "application/json" {
        return json_of(
            415,
            rpc_error(
                &Value::Null,
                INVALID_REQUEST,
                "Content-Type must be application/json",
                None,
            ),
        );
    }
    let message: Value = match serde_json::from_slice(&req.body) {
        Ok(v) => v,
        Err(e) => {
            return json_of(
                400,
                rpc_error(
                    &Value::Null,
                    PARSE_ERROR,
                    &format!("parse error: {e}"),
                    None,
                ),
            );
        }
    };
    let Value::Object(mut msg) = message else {
        return json_of(
            400,
            rpc_error(
                &Value::Null,
                INVALID_REQUEST,
                "a message must be one JSON-RPC object (batches are not supported)",
                None,
            ),
        );
    };
    if msg.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        return json_of(
            400,
            rpc_error(&id, INVALID_REQUEST, "jsonrpc must be \"2.0\"", None),
        );
    }
    let Some(method) = msg
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        // A response or an error from the client: nothing asked it for one.
        if msg.contains_key("result") || msg.contains_key("error") {
            return empty(202);
        }
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        return json_of(
            400,
            rpc_error(&id, INVALID_REQUEST, "method is required", None),
        );
    };
    let params = match msg.remove("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(p)) => p,
        Some(_) => {
            let id = msg.get("id").cloned().unwrap_or(Value::Null);
            return json_of(
                400,
                rpc_error(&id, INVALID_REQUEST, "params must be an object", None),
            );
        }
    };
    let Some(id) = msg.get("id").cloned() else {
        // A notification (`notifications/initialized`, cancellations): accepted.
        return empty(202);
    };
    if !(id.is_string() || id.is_i64() || id.is_u64()) {
        return json_of(
            400,
            rpc_error(
                &Value::Null,
                INVALID_REQUEST,
                "id must be a string or an integer",
                None,
            ),
        );
    }
    let meta_version = params
        .get("_meta")
        .and_then(|m| m.get(VERSION_META))
        .and_then(Value::as_str)
        .map(str::to_string);
    if method == "server/discover"
        || meta_version.is_some()
        || req.header("mcp-protocol-version") == Some(MODERN)
    {
        modern(
            cx,
            req,
            &id,
            &method,
            &params,
            meta_version.as_deref(),
            router,
        )
    } else {
        legacy(cx, req, &id, &method, &params, family, router)
    }
}

/// What is served: tools, and (empty) resource and prompt lists, so that generic
/// clients that list them get an answer; logging levels on the handshake revisions.
fn capabilities(legacy: bool) -> Value {
    let mut c = json!({
        "tools": { "listChanged": false },
        "resources": { "listChanged": false },
        "prompts": { "listChanged": false },
    });
    if legacy {
        c["logging"] = json!({});
    }
    c
}

/// The methods both revisions share; `None` for an unknown method.
fn common(method: &str, params: &Map<String, Value>) -> Option<RpcResult> {
    Some(match method {
        "tools/list" => Ok(json!({ "tools": tools::list() })),
        "resources/list" => Ok(json!({ "resources": [] })),
        "resources/templates/list" => Ok(json!({ "resourceTemplates": [] })),
        "prompts/list" => Ok(json!({ "prompts": [] })),
        "resources/read" => {
            let uri = params.get("uri").cloned().unwrap_or(Value::Null);
            Err((
                INVALID_PARAMS,
                "resource not found".into(),
                Some(json!({ "uri": uri })),
            ))
        }
        "prompts/get" => Err((INVALID_PARAMS, "prompt not found".into(), None)),
        _ => return None,
    })
}

fn server_info() -> Value {
    json!({ "name": "esign", "title": "esign", "version": env!("CARGO_PKG_VERSION") })
}

fn legacy(
    cx: &mut Cx,
    req: &Request,
    id: &Value,
    method: &str,
    params: &Map<String, Value>,
    family: &Family,
    router: Router,
) -> Response {
    if method == "initialize" {
        return initialize(cx, id, params, family);
    }
    let Some(sid) = req.header("mcp-session-id") else {
        return json_of(
            400,
            rpc_error(
                id,
                INVALID_REQUEST,
                "send initialize first, then the Mcp-Session-Id it returned (or use server/discover with 2026-07-28)",
                None,
            ),
        );
    };
    if !mcp_sessions::is_live(cx, sid, &family.id) {
        return json_of(
            404,
            rpc_error(
                id,
                INVALID_REQUEST,
                "the session is unknown or ended; initialize again",
                None,
            ),
        );
    }
    if let Some(v) = req.header("mcp-protocol-version")
        && !HANDSHAKE.contains(&v)
    {
        return json_of(
            400,
            rpc_error(
                id,
                INVALID_REQUEST,
                &format!("unsupported MCP-Protocol-Version {v}"),
                None,
            ),
        );
    }
    if method == "tools/call" {
        return tool_answer(cx, req, id, params, false, router);
    }
    let result = match method {
        "ping" | "logging/setLevel" => Ok(json!({})),
        _ => common(method, params).unwrap_or_else(|| {
            Err((
                METHOD_NOT_FOUND,
                format!("method {method} is not supported"),
                None,
            ))
        }),
    };
    answer(id, result, false)
}

/// `initialize` (the handshake revisions): the version both speak, and a new session.
fn initialize(cx: &mut Cx, id: &Value, params: &Map<String, Value>, family: &Family) -> Response {
    let asked = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let version = if HANDSHAKE.contains(&asked) {
        asked
    } else {
        HANDSHAKE[0]
    };
    let sid = mcp_sessions::open(cx, &family.id);
    let mut resp = json_of(
        200,
        json!({
            "jsonrpc": "2.0",
            "id": id,
            "result": {
                "protocolVersion": version,
                "capabilities": capabilities(true),
                "serverInfo": server_info(),
                "instructions": INSTRUCTIONS,
            },
        }),
    );
    resp.headers.push(("mcp-session-id".into(), sid));
    resp
}

/// A JSON-RPC answer; on 2026-07-28 (`modern`) results carry `resultType`, list
/// results the cache hints, and every result names the server in `_meta`.
fn answer(id: &Value, result: RpcResult, modern: bool) -> Response {
    match result {
        Ok(mut r) => {
            if modern && let Value::Object(m) = &mut r {
                m.insert("resultType".into(), json!("complete"));
                if m.contains_key("tools")
                    || m.contains_key("resources")
                    || m.contains_key("prompts")
                    || m.contains_key("resourceTemplates")
                    || m.contains_key("supportedVersions")
                {
                    m.insert("ttlMs".into(), json!(0));
                    m.insert("cacheScope".into(), json!("private"));
                }
                m.insert("_meta".into(), json!({ SERVER_INFO_META: server_info() }));
            }
            json_of(200, json!({ "jsonrpc": "2.0", "id": id, "result": r }))
        }
        Err((code, message, data)) => json_of(200, rpc_error(id, code, &message, data)),
    }
}

/// The answer to `tools/call`. The tool's result comes serialized (it embeds the REST
/// answer as it is), so the envelope is written around it; on 2026-07-28 the result
/// gets `resultType` and the server's name like every other result.
fn tool_answer(
    cx: &mut Cx,
    req: &Request,
    id: &Value,
    params: &Map<String, Value>,
    modern: bool,
    router: Router,
) -> Response {
    let raw = match call_tool(cx, req, params, router) {
        Ok(raw) => raw,
        Err(e) => return answer(id, Err(e), modern),
    };
    let mut body = String::with_capacity(raw.len() + 192);
    body.push_str("{\"jsonrpc\":\"2.0\",\"id\":");
    body.push_str(&id.to_string());
    body.push_str(",\"result\":");
    match raw.strip_suffix('}') {
        Some(open) if modern => {
            body.push_str(open);
            body.push_str(",\"resultType\":\"complete\",\"_meta\":");
            body.push_str(&json!({ SERVER_INFO_META: server_info() }).to_string());
            body.push('}');
        }
        _ => body.push_str(&raw),
    }
    body.push('}');
    Response {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.into_bytes(),
    }
}

fn call_tool(
    cx: &mut Cx,
    req: &Request,
    params: &Map<String, Value>,
    router: Router,
) -> Result<String, RpcError> {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Err((INVALID_PARAMS, "params.name is required".into(), None));
    };
    let no_args = Map::new();
    let args = match params.get("arguments") {
        None | Some(Value::Null) => &no_args,
        Some(Value::Object(a)) => a,
        Some(_) => {
            return Err((
                INVALID_PARAMS,
                "params.arguments must be an object".into(),
                None,
            ));
        }
    };
    tools::call(cx, req, name, args, router)
        .ok_or_else(|| (INVALID_PARAMS, format!("unknown tool {name}"), None))
}

/// The revisions served, newest first.
fn supported() -> Value {
    json!([MODERN, HANDSHAKE[0], HANDSHAKE[1], HANDSHAKE[2]])
}

fn modern(
    cx: &mut Cx,
    req: &Request,
    id: &Value,
    method: &str,
    params: &Map<String, Value>,
    version: Option<&str>,
    router: Router,
) -> Response {
    if let Err((code, message, data)) = modern_checks(req, method, params, version) {
        return json_of(400, rpc_error(id, code, &message, data));
    }
    if method == "tools/call" {
        return tool_answer(cx, req, id, params, true, router);
    }
    let result = match method {
        "server/discover" => Ok(json!({
            "supportedVersions": supported(),
            "capabilities": capabilities(false),
            "instructions": INSTRUCTIONS,
        })),
        _ => match common(method, params) {
            Some(r) => r,
            None => {
                return json_of(
                    404,
                    rpc_error(
                        id,
                        METHOD_NOT_FOUND,
                        &format!("method {method} is not supported on {MODERN}"),
                        None,
                    ),
                );
            }
        },
    };
    answer(id, result, true)
}

/// What a 2026-07-28 request must carry: its version in `_meta` (and the same in the
/// header, if sent), the client's capabilities, and `Mcp-Method` (and, for a tool,
/// `Mcp-Name`) agreeing with the body; else the error, in that order.
fn modern_checks(
    req: &Request,
    method: &str,
    params: &Map<String, Value>,
    version: Option<&str>,
) -> Result<(), RpcError> {
    let meta = params.get("_meta").and_then(Value::as_object);
    let Some(version) = version else {
        return Err((
            INVALID_PARAMS,
            format!("params._meta[\"{VERSION_META}\"] is required on {MODERN}"),
            None,
        ));
    };
    if let Some(h) = req.header("mcp-protocol-version")
        && h != version
    {
        return Err((
            HEADER_MISMATCH,
            format!("the MCP-Protocol-Version header ({h}) differs from _meta ({version})"),
            None,
        ));
    }
    if version != MODERN {
        return Err((
            UNSUPPORTED_VERSION,
            format!("unsupported protocol version {version}"),
            Some(json!({ "supported": supported(), "requested": version })),
        ));
    }
    if !meta.is_some_and(|m| m.get(CAPABILITIES_META).is_some_and(Value::is_object)) {
        return Err((
            INVALID_PARAMS,
            format!("params._meta[\"{CAPABILITIES_META}\"] is required on {MODERN}"),
            None,
        ));
    }
    match req.header("mcp-method") {
        Some(h) if h == method => {}
        Some(h) => {
            return Err((
                HEADER_MISMATCH,
                format!("the Mcp-Method header ({h}) differs from the body's method ({method})"),
                None,
            ));
        }
        None => {
            return Err((
                HEADER_MISMATCH,
                format!("{MODERN} requests carry the Mcp-Method header"),
                None,
            ));
        }
    }
    if method != "tools/call" {
        return Ok(());
    }
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    match req.header("mcp-name") {
        Some(h) if h == name => Ok(()),
        Some(h) => Err((
            HEADER_MISMATCH,
            format!("the Mcp-Name header ({h}) differs from params.name ({name})"),
            None,
        )),
        None => Err((
            HEADER_MISMATCH,
            "tools/call needs the Mcp-Name header".into(),
            None,
        )),
    }
}
