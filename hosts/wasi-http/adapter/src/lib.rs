//! Serves the esign engine as `wasi:http/incoming-handler` (see
//! `hosts/wasi-http/wit/wasi-http.wit`): each incoming request becomes one engine call
//! in one transaction of the `store` component; then, on a second engine instance,
//! either the first-run bootstrap (before the request) or one due job (after the
//! answer is sent), whose work order the formats component does first.
//!
//! Bodies are read up to 25 MiB (413 beyond). `multipart/form-data` bodies are decoded
//! into the request's parts, as the native host does (`esign_formats::multipart`); a
//! malformed one is 400 `invalid_multipart`. The peer's address is not known to a
//! `wasi:http` handler; the engine sees `0.0.0.0`.

use std::io::Write;

use wasip2::http::types::{
    Fields, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam,
};
use wasip2::io::streams::StreamError;

wit_bindgen::generate!({
    path: ["../../../wit", "../../../wit/formats", "../wit"],
    world: "esign:wasi-http/adapter",
    generate_all,
});

use esign::engine::types::{FormPart, Origin};
use esign::formats::work;
use esign::wasi_http::calls;

const MAX_BODY: usize = 25 << 20;

struct Adapter;
wasip2::http::proxy::export!(Adapter);

impl wasip2::exports::http::incoming_handler::Guest for Adapter {
    fn handle(request: IncomingRequest, out: ResponseOutparam) {
        if calls::is_empty() {
            bootstrap();
        }
        let response = match read(&request) {
            Ok(req) => call(req),
            Err(answer) => answer,
        };
        send(out, response);
        run_one_job();
    }
}

/// One engine call in one transaction; a conflict with another request's commit
/// answers 503, as an engine 503 does: nothing was done.
fn call(req: Request) -> Response {
    if let Err(e) = calls::begin() {
        return error(503, "unavailable", &format!("the data cannot be read: {e}"));
    }
    let response = handle(&req);
    if response.status == 503 {
        return response;
    }
    match calls::commit() {
        Ok(true) => response,
        Ok(false) => {
            let mut r = error(
                503,
                "conflict",
                "another request changed the data at the same time; nothing was done, try again",
            );
            r.headers.push(("retry-after".into(), "1".into()));
            r
        }
        Err(e) => error(
            503,
            "unavailable",
            &format!("the data cannot be written: {e}"),
        ),
    }
}

/// The first-run setup of `esign serve`: an entity and an admin from
/// `ESIGN_ADMIN_EMAIL` / `ESIGN_ADMIN_PASSWORD` / `ESIGN_ADMIN_ENTITY`.
fn bootstrap() {
    let var = |name: &str| std::env::var(name).ok();
    let mut body = serde_json::json!({
        "email": var("ESIGN_ADMIN_EMAIL").unwrap_or_else(|| "admin@esign.local".into())
    });
    if let Some(p) = var("ESIGN_ADMIN_PASSWORD") {
        body["password"] = p.into();
    }
    if let Some(n) = var("ESIGN_ADMIN_ENTITY") {
        body["entity_name"] = n.into();
    }
    let req = Request {
        method: "POST".into(),
        path: "/admin/bootstrap".into(),
        query: String::new(),
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.to_string().into_bytes(),
        parts: Vec::new(),
        origin: Origin::Admin,
        remote_addr: "0.0.0.0".into(),
    };
    if calls::begin().is_err() {
        return;
    }
    let answer = background_handle(&req);
    match calls::commit() {
        Ok(true) if answer.status < 300 => {
            eprintln!("first run: {}", String::from_utf8_lossy(&answer.body))
        }
        Ok(true) => eprintln!(
            "first-run setup failed ({}): {}",
            answer.status,
            String::from_utf8_lossy(&answer.body)
        ),
        // Another request set up at the same time.
        Ok(false) => {}
        Err(e) => eprintln!("first-run setup could not be written: {e}"),
    }
}

/// Runs the job that is due first, if any, in its own transaction; its work order, if
/// it has one, is done by the formats component first, and the blobs the work makes
/// commit with the job's call.
fn run_one_job() {
    if calls::begin().is_err() {
        return;
    }
    let Some((mut job, order)) = calls::due_job() else {
        return;
    };
    if let Some(order) = order {
        job.outcome = Some(work::perform(&order, now_ms()));
    }
    let id = job.id.clone();
    let outcome = background_run_job(&job);
    calls::finish_job(&id, &outcome);
    // A conflict leaves the job due: the next request runs it again.
    let _ = calls::commit();
}

fn read(request: &IncomingRequest) -> Result<Request, Response> {
    let method = match request.method() {
        Method::Get => "GET".to_string(),
        Method::Head => "HEAD".into(),
        Method::Post => "POST".into(),
        Method::Put => "PUT".into(),
        Method::Delete => "DELETE".into(),
        Method::Connect => "CONNECT".into(),
        Method::Options => "OPTIONS".into(),
        Method::Trace => "TRACE".into(),
        Method::Patch => "PATCH".into(),
        Method::Other(m) => m.to_ascii_uppercase(),
    };
    let target = request.path_with_query().unwrap_or_else(|| "/".into());
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_string(), q.to_string()),
        None => (target, String::new()),
    };
    let headers: Vec<(String, String)> = request
        .headers()
        .entries()
        .into_iter()
        .map(|(k, v)| {
            (
                k.to_ascii_lowercase(),
                String::from_utf8_lossy(&v).into_owned(),
            )
        })
        .collect();
    let multipart = headers.iter().any(|(k, v)| {
        k == "content-type" && v.to_ascii_lowercase().starts_with("multipart/form-data")
    });
    // The body is read before any answer: a server that answers and closes while the
    // client still sends makes the client see a broken connection, not the answer.
    let mut body = read_body(request)?;
    let mut parts = Vec::new();
    if multipart {
        let ctype = headers
            .iter()
            .find(|(k, _)| k == "content-type")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        parts = esign_formats::multipart::decode(&ctype, std::mem::take(&mut body).into())
            .map_err(|e| {
                error(
                    400,
                    "invalid_multipart",
                    &format!("the multipart/form-data body is malformed: {e}"),
                )
            })?
            .into_iter()
            .map(|p| FormPart {
                name: p.name,
                filename: p.filename,
                content_type: p.content_type,
                data: p.data.to_vec(),
                // Every part travels whole: this host stages nothing outside the engine.
                staged: None,
            })
            .collect();
    }
    Ok(Request {
        method,
        path,
        query,
        headers,
        body,
        parts,
        origin: Origin::Http,
        remote_addr: "0.0.0.0".into(),
    })
}

fn read_body(request: &IncomingRequest) -> Result<Vec<u8>, Response> {
    let unreadable = || error(400, "invalid_body", "the request body could not be read");
    let body = request.consume().map_err(|()| unreadable())?;
    let stream = body.stream().map_err(|()| unreadable())?;
    let mut data = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                data.extend_from_slice(&chunk);
                if data.len() > MAX_BODY {
                    return Err(error(
                        413,
                        "payload_too_large",
                        "the request body is larger than 25 MiB",
                    ));
                }
            }
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(_)) => return Err(unreadable()),
        }
    }
    Ok(data)
}

fn send(out: ResponseOutparam, response: Response) {
    // `x-esign-route` names the route template for a host's metrics; not for clients.
    let fields: Vec<(String, Vec<u8>)> = response
        .headers
        .into_iter()
        .filter(|(k, _)| k != "x-esign-route")
        .map(|(k, v)| (k, v.into_bytes()))
        .chain([(
            "content-length".to_string(),
            response.body.len().to_string().into_bytes(),
        )])
        .collect();
    let headers = Fields::from_list(&fields).unwrap_or_else(|_| Fields::new());
    let outgoing = OutgoingResponse::new(headers);
    let _ = outgoing.set_status_code(response.status);
    let body = outgoing.body().expect("a new response has a body");
    ResponseOutparam::set(out, Ok(outgoing));
    if let Ok(mut stream) = body.write() {
        // `write_all` over `blocking-write-and-flush`, 4 KiB at a time.
        let _ = stream.write_all(&response.body);
        let _ = stream.flush();
    }
    let _ = OutgoingBody::finish(body, None);
}

/// An error in the shape of every esign error (DESIGN.md §4).
fn error(status: u16, code: &str, description: &str) -> Response {
    let body = serde_json::json!({"description": description, "error": code, "status": status})
        .to_string();
    Response {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.into_bytes(),
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
