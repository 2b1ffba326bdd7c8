//! Request parsing and response building: the error shape of DESIGN.md §4, body
//! decoding (JSON and form-urlencoded), typed field access, and the client a request
//! came from.

use crate::base::api::{BLOB_HEADER, FormPart, Request, Response};
use crate::base::cx::Cx;
#[allow(unused_imports)]
use crate::base::prelude::*;
use serde_json::{Map, Value};

/// A client-visible failure: its status, a stable machine code and a sentence for a
/// person. Renders as `{"error": code, "description": text, "status": status}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: u16,
    pub code: &'static str,
    pub description: String,
    /// Extra response headers (`WWW-Authenticate`, `Retry-After`, `Allow`).
    pub headers: Vec<(String, String)>,
}

impl ApiError {
    pub fn new(status: u16, code: &'static str, description: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            description: description.into(),
            headers: Vec::new(),
        }
    }

    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn bad_request(code: &'static str, description: impl Into<String>) -> Self {
        Self::new(400, code, description)
    }

    pub fn forbidden(code: &'static str, description: impl Into<String>) -> Self {
        Self::new(403, code, description)
    }

    pub fn not_found(code: &'static str, description: impl Into<String>) -> Self {
        Self::new(404, code, description)
    }

    /// 401 with `WWW-Authenticate: Bearer error="invalid_token"`.
    pub fn unauthorized(description: impl Into<String>) -> Self {
        let description = description.into();
        let challenge = format!(
            "Bearer realm=\"esign\", error=\"invalid_token\", error_description=\"{}\"",
            description.replace('"', "'")
        );
        Self::new(401, "invalid_token", description).with_header("www-authenticate", challenge)
    }

    pub fn into_response(self) -> Response {
        let body = serde_json::json!({
            "error": self.code,
            "description": self.description,
            "status": self.status,
        });
        let mut resp = json(self.status, &body);
        resp.headers.extend(self.headers);
        resp
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

/// A file a response carries: its bytes, or the blob a host that sends files itself
/// puts in the body (`Settings::blob_responses`, the header [`BLOB_HEADER`]).
pub enum FileBody {
    Bytes(Vec<u8>),
    Blob(String),
}

impl FileBody {
    /// A response with this file as its body and `headers`.
    pub fn response(self, status: u16, mut headers: Vec<(String, String)>) -> Response {
        let body = match self {
            FileBody::Bytes(bytes) => bytes,
            FileBody::Blob(id) => {
                headers.push((BLOB_HEADER.into(), id));
                Vec::new()
            }
        };
        Response {
            status,
            headers,
            body,
        }
    }
}

/// A JSON response.
pub fn json(status: u16, value: &Value) -> Response {
    json_of(status, value)
}

/// A JSON response of a serializable value: for hot answers, where building a
/// [`Value`] first (a map, a copy of every string) is most of the work.
pub fn json_of<T: serde::Serialize>(status: u16, value: &T) -> Response {
    Response {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: serde_json::to_vec(value).expect("values and plain records always serialize"),
    }
}

/// An empty 204 response.
pub fn no_content() -> Response {
    Response {
        status: 204,
        headers: Vec::new(),
        body: Vec::new(),
    }
}

/// The client a request came from, as the audit trail records it.
#[derive(Debug, Clone, Default)]
pub struct Client {
    /// `User-Agent`.
    pub user_agent: String,
    /// The peer's address as the host gives it.
    pub ip: String,
    /// The address the client asserts itself ([`asserted_ip`]), or empty.
    pub asserted_ip: String,
}

/// The client's device and address: (`User-Agent`, the peer's address as the host
/// gives it). A client's own claim of its address is [`asserted_ip`], never this.
pub fn client_of(req: &Request) -> (String, String) {
    (
        req.header("user-agent").unwrap_or("").to_string(),
        req.remote_addr.clone(),
    )
}

/// The address a client asserts itself in GetAccept's `CLIENT_IP` header (as
/// `client_ip` or `client-ip`), or empty: recorded beside the peer's, never trusted.
pub fn asserted_ip(req: &Request) -> String {
    req.header("client_ip")
        .or(req.header("client-ip"))
        .unwrap_or("")
        .trim()
        .to_string()
}

impl Request {
    /// The client this request came from ([`client_of`], [`asserted_ip`]).
    pub fn client(&self) -> Client {
        let (user_agent, ip) = client_of(self);
        Client {
            user_agent,
            ip,
            asserted_ip: asserted_ip(self),
        }
    }

    /// The first value of a header (names are lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The first value of a query parameter, percent-decoded.
    pub fn query_param(&self, name: &str) -> Option<String> {
        form_urlencoded::parse(self.query.as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    }

    /// The media type of the body, lower case without parameters ("" when none).
    pub fn content_type(&self) -> String {
        self.header("content-type")
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    }

    /// Decodes the body into fields. JSON bodies must be an object; form-urlencoded
    /// fields and multipart text parts become strings (a text body), multipart parts sent
    /// as `application/json` become JSON values, and multipart parts with a file name
    /// are kept as files. An empty body is an empty object. Any other content type is a
    /// 400, and so is a text member longer than its limit (`base::limits`).
    pub fn body_fields(&self) -> ApiResult<Fields> {
        let fields = self.decode_fields()?;
        match crate::base::limits::too_long(&fields.map) {
            Some((path, max)) => Err(invalid(&path, &format!("at most {max} characters"))),
            None => Ok(fields),
        }
    }

    fn decode_fields(&self) -> ApiResult<Fields> {
        let ctype = self.content_type();
        let empty = self.body.iter().all(u8::is_ascii_whitespace) && self.parts.is_empty();
        if empty && (ctype.is_empty() || ctype == "application/json") {
            return Ok(Fields::default());
        }
        match ctype.as_str() {
            "application/json" => match parse_json(&self.body) {
                Ok(Value::Object(map)) => Ok(Fields {
                    map,
                    // A member the host took out of the body and staged (`file_content`).
                    files: self
                        .parts
                        .iter()
                        .filter(|p| p.staged.is_some())
                        .cloned()
                        .collect(),
                    ..Fields::default()
                }),
                Ok(_) => Err(ApiError::bad_request(
                    "invalid_body",
                    "the JSON body must be an object",
                )),
                Err(e) if e.status == 400 => Err(ApiError::bad_request(
                    "invalid_json",
                    format!("the body {}", e.description),
                )),
                Err(e) => Err(e),
            },
            "application/x-www-form-urlencoded" => {
                // Counted before they are collected, as JSON values are.
                if form_urlencoded::parse(&self.body).count() > MAX_JSON_VALUES {
                    return Err(too_complex());
                }
                let map = form_urlencoded::parse(&self.body)
                    .map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())))
                    .collect();
                Ok(Fields {
                    map,
                    text: true,
                    files: Vec::new(),
                })
            }
            "multipart/form-data" => multipart_fields(&self.parts),
            "" => Err(ApiError::bad_request(
                "invalid_content_type",
                "a request body needs a Content-Type: application/json, multipart/form-data or application/x-www-form-urlencoded",
            )),
            other => Err(ApiError::bad_request(
                "invalid_content_type",
                format!(
                    "Content-Type {other} is not accepted here; send application/json, multipart/form-data or application/x-www-form-urlencoded"
                ),
            )),
        }
    }
}

/// How many JSON values (scalars, arrays, objects), form fields or multipart parts one
/// body may hold: far more than any
/// request needs (a document with a thousand recipients is some 20 000), and few enough
/// that their tree fits an engine instance's memory however the 25 MiB are spent.
pub const MAX_JSON_VALUES: usize = 200_000;

/// Parses JSON after counting its values without building them (serde_json's own
/// parser, with a visitor that stops at [`MAX_JSON_VALUES`]): 413 `body_too_complex`
/// above it, 400 `invalid_json` for JSON that does not parse.
fn parse_json(bytes: &[u8]) -> ApiResult<Value> {
    use serde::de::DeserializeSeed;
    let left = core::cell::Cell::new(MAX_JSON_VALUES);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    if Budget(&left).deserialize(&mut de).is_err() && left.get() == 0 {
        return Err(too_complex());
    }
    serde_json::from_slice::<Value>(bytes)
        .map_err(|e| ApiError::bad_request("invalid_json", format!("is not valid JSON: {e}")))
}

fn too_complex() -> ApiError {
    ApiError::new(
        413,
        "body_too_complex",
        format!("the body holds more than {MAX_JSON_VALUES} values or fields"),
    )
}

/// Counts JSON values down from what is left; an error once none is.
struct Budget<'a>(&'a core::cell::Cell<usize>);

impl Budget<'_> {
    fn take<E: serde::de::Error>(&self) -> Result<(), E> {
        match self.0.get() {
            0 => Err(E::custom("too many values")),
            n => {
                self.0.set(n - 1);
                Ok(())
            }
        }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Budget<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Budget<'_> {
    type Value = ();
    fn expecting(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        self.take()
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        self.take()
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        self.take()
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        self.take()
    }
    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        self.take()
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.take()
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.take()?;
        while seq.next_element_seed(Budget(self.0))?.is_some() {}
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.take()?;
        while map.next_key::<serde::de::IgnoredAny>()?.is_some() {
            map.next_value_seed(Budget(self.0))?;
        }
        Ok(())
    }
}

fn multipart_fields(parts: &[FormPart]) -> ApiResult<Fields> {
    if parts.len() > MAX_JSON_VALUES {
        return Err(too_complex());
    }
    let mut fields = Fields {
        text: true,
        ..Fields::default()
    };
    for part in parts {
        if part.filename.is_some() {
            fields.files.push(part.clone());
            continue;
        }
        let value = if part.content_type == "application/json" {
            parse_json(&part.data).map_err(|e| {
                if e.status == 400 {
                    ApiError::bad_request(
                        "invalid_json",
                        format!("the multipart part `{}` {}", part.name, e.description),
                    )
                } else {
                    e
                }
            })?
        } else {
            match core::str::from_utf8(&part.data) {
                Ok(text) => Value::String(text.to_string()),
                Err(_) => {
                    return Err(ApiError::bad_request(
                        "invalid_field",
                        format!(
                            "the multipart part `{}` is not UTF-8 text; send files with a filename",
                            part.name
                        ),
                    ));
                }
            }
        };
        fields.map.insert(part.name.clone(), value);
    }
    Ok(fields)
}

/// The fields of a decoded body, with typed accessors that produce 400s naming the field.
///
/// A *text* body (form-urlencoded or multipart) follows the rules of spec §4.2: booleans
/// are `1`/`0` and any other non-empty text (even `false`) counts as true; arrays and
/// objects come only from multipart parts sent as `application/json`.
#[derive(Default)]
pub struct Fields {
    pub map: Map<String, Value>,
    /// Whether the body was text fields (form-urlencoded or multipart).
    pub text: bool,
    /// Multipart parts that carried a file name; for a JSON body, the members a host
    /// took out of it and staged (`file_content`, WIT `form-part.staged`).
    pub files: Vec<FormPart>,
}

/// The text of member `key` of a JSON object: a string (trimmed) or a number's text;
/// empty for anything else.
pub fn member_text(o: &Map<String, Value>, key: &str) -> String {
    match o.get(key) {
        Some(Value::String(s)) => s.trim().to_string(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

fn invalid(name: &str, what: &str) -> ApiError {
    ApiError::bad_request(
        "invalid_field",
        format!("the field `{name}` must be {what}"),
    )
}

impl Fields {
    /// The members of a JSON object (a body the engine builds itself, as a create's for
    /// a visit or a bulk row); nothing for another value.
    pub fn of_json(body: Value) -> Fields {
        Fields {
            map: match body {
                Value::Object(map) => map,
                _ => Map::new(),
            },
            text: false,
            files: Vec::new(),
        }
    }

    /// Whether the field is present and not null.
    pub fn has(&self, name: &str) -> bool {
        !matches!(self.map.get(name), None | Some(Value::Null))
    }

    /// A required, non-empty string field.
    pub fn required_str(&self, name: &str) -> ApiResult<String> {
        match self.optional_str(name)? {
            Some(s) if !s.trim().is_empty() => Ok(s),
            _ => Err(ApiError::bad_request(
                "missing_field",
                format!("the field `{name}` is required"),
            )),
        }
    }

    /// A string field that may be absent or null.
    pub fn optional_str(&self, name: &str) -> ApiResult<Option<String>> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(invalid(name, "a string")),
        }
    }

    /// A boolean field. JSON: `true`/`false`, `1`/`0`, or the strings `true`, `false`,
    /// `1`, `0`. Text bodies: `0` and the empty text are false, any other text is true.
    pub fn optional_bool(&self, name: &str) -> ApiResult<Option<bool>> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if self.text => Ok(Some(!(s.trim() == "0" || s.is_empty()))),
            Some(Value::String(s)) => match s.as_str() {
                "1" | "true" => Ok(Some(true)),
                "0" | "false" => Ok(Some(false)),
                _ => Err(invalid(name, "a boolean")),
            },
            Some(Value::Number(n)) => match n.as_f64() {
                Some(0.0) => Ok(Some(false)),
                Some(1.0) => Ok(Some(true)),
                _ => Err(invalid(name, "a boolean")),
            },
            Some(_) => Err(invalid(name, "a boolean")),
        }
    }

    /// A number field: a JSON number, or text holding one.
    pub fn optional_number(&self, name: &str) -> ApiResult<Option<f64>> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n
                .as_f64()
                .map(Some)
                .ok_or_else(|| invalid(name, "a number")),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => match s.trim().parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(Some(v)),
                _ => Err(invalid(name, "a number")),
            },
            Some(_) => Err(invalid(name, "a number")),
        }
    }

    /// An array or object field. In a text body it must come from a multipart part sent
    /// as `application/json`; plain text is a 400 that says so.
    pub fn optional_json(&self, name: &str) -> ApiResult<Option<&Value>> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(_)) if self.text => Err(ApiError::bad_request(
                "invalid_field",
                format!(
                    "the field `{name}` is structured: send it as a multipart/form-data part with Content-Type: application/json (form-encoded bodies cannot carry it)"
                ),
            )),
            Some(v) => Ok(Some(v)),
        }
    }

    /// An array field (see [`Fields::optional_json`]).
    pub fn optional_array(&self, name: &str) -> ApiResult<Option<&Vec<Value>>> {
        match self.optional_json(name)? {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a)),
            Some(_) => Err(invalid(name, "an array")),
        }
    }

    /// The elements of the array field `name`, each of which must be an object, with
    /// their paths (`name[i]`) for error messages. Absent or null: none.
    pub fn objects(&self, name: &str) -> ApiResult<Vec<(String, &Map<String, Value>)>> {
        let mut out = Vec::new();
        for (i, v) in self.optional_array(name)?.into_iter().flatten().enumerate() {
            let path = format!("{name}[{i}]");
            let o = v.as_object().ok_or_else(|| invalid(&path, "an object"))?;
            out.push((path, o));
        }
        Ok(out)
    }

    /// Fails with 400 naming the first field not in `allowed`.
    pub fn only(&self, allowed: &[&str]) -> ApiResult<()> {
        // A JSON body's staged members count as its members.
        let staged = self.files.iter().filter(|_| !self.text).map(|p| &p.name);
        match self
            .map
            .keys()
            .chain(staged)
            .find(|k| !allowed.contains(&k.as_str()))
        {
            Some(k) => Err(ApiError::bad_request(
                "unknown_field",
                format!("the field `{k}` is not accepted here"),
            )),
            None => Ok(()),
        }
    }
}

/// The router's signature: what an MCP tool hands its REST request to (the router is
/// above the handlers, so it is passed in rather than imported).
pub type Router = fn(&mut Cx, &Request) -> ApiResult<Response>;

pub(crate) fn method_not_allowed(method: &str, allowed: &[&str]) -> ApiError {
    ApiError::new(
        405,
        "method_not_allowed",
        format!("{method} is not allowed here; use {}", allowed.join(" or ")),
    )
    .with_header("allow", allowed.join(", "))
}
