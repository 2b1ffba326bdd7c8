//! Request parsing and response building: the error shape of DESIGN.md §4, body
//! decoding (JSON and form-urlencoded) and typed field access.

#[allow(unused_imports)]
use crate::prelude::*;
use crate::{Request, Response};
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

/// A JSON response.
pub fn json(status: u16, value: &Value) -> Response {
    Response {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: serde_json::to_vec(value).expect("a JSON value always serializes"),
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

impl Request {
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

    /// Decodes the body into an object of fields. JSON bodies must be an object;
    /// form-urlencoded fields become strings. An empty body is an empty object. Any other
    /// content type is a 400.
    pub fn body_fields(&self) -> ApiResult<Fields> {
        let ctype = self
            .header("content-type")
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if self.body.iter().all(u8::is_ascii_whitespace) && ctype.is_empty() {
            return Ok(Fields(Map::new()));
        }
        match ctype.as_str() {
            "application/json" => match serde_json::from_slice::<Value>(&self.body) {
                Ok(Value::Object(map)) => Ok(Fields(map)),
                Ok(_) => Err(ApiError::bad_request(
                    "invalid_body",
                    "the JSON body must be an object",
                )),
                Err(e) => Err(ApiError::bad_request(
                    "invalid_json",
                    format!("the body is not valid JSON: {e}"),
                )),
            },
            "application/x-www-form-urlencoded" => {
                let map = form_urlencoded::parse(&self.body)
                    .map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())))
                    .collect();
                Ok(Fields(map))
            }
            "" => Err(ApiError::bad_request(
                "invalid_content_type",
                "a request body needs a Content-Type: application/json or application/x-www-form-urlencoded",
            )),
            other => Err(ApiError::bad_request(
                "invalid_content_type",
                format!(
                    "Content-Type {other} is not accepted here; send application/json or application/x-www-form-urlencoded"
                ),
            )),
        }
    }
}

/// The fields of a decoded body, with typed accessors that produce 400s naming the field.
pub struct Fields(pub Map<String, Value>);

impl Fields {
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
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(ApiError::bad_request(
                "invalid_field",
                format!("the field `{name}` must be a string"),
            )),
        }
    }

    /// A boolean field: JSON booleans, or the texts `1`/`0`/`true`/`false` from forms.
    pub fn optional_bool(&self, name: &str) -> ApiResult<Option<bool>> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) => match s.as_str() {
                "1" | "true" => Ok(Some(true)),
                "0" | "false" => Ok(Some(false)),
                _ => Err(ApiError::bad_request(
                    "invalid_field",
                    format!("the field `{name}` must be a boolean"),
                )),
            },
            Some(_) => Err(ApiError::bad_request(
                "invalid_field",
                format!("the field `{name}` must be a boolean"),
            )),
        }
    }
}
