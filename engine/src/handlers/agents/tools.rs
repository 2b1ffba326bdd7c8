//! The MCP tools: each is one REST operation (or, for `recall_document`, a read and
//! the operation) run in the same engine call with the grant's user and entity, so a
//! tool has exactly the rules, statuses and errors of the REST API.

use crate::base::api::{self, Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, Router};
#[allow(unused_imports)]
use crate::base::prelude::*;
use serde_json::{Map, Value, json};

/// How a tool's arguments become a REST request.
#[derive(Clone, Copy)]
enum Call {
    /// `GET path`; the listed arguments become query parameters.
    Get(&'static str, &'static [&'static str]),
    /// A JSON body of every argument but `document_id`.
    Body(&'static str, &'static str),
    /// No body.
    Bare(&'static str, &'static str),
    /// `DELETE` of a document that has been sent (refused for drafts).
    Recall,
}

struct Tool {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    /// Input properties besides `document_id` (JSON Schema, as JSON text).
    properties: &'static str,
    required: &'static [&'static str],
    /// Whether the tool takes `document_id`.
    document: bool,
    read_only: bool,
    destructive: bool,
    call: Call,
}

const TOOLS: &[Tool] = &[
    Tool {
        name: "list_documents",
        title: "List documents",
        description: "Lists the documents of the entity the person chose, newest first. Filter by status with `filter` (draft, sent, viewed, reviewed, signed, recalled, expired, lost, rejected ...).",
        properties: r#""filter": {"type": "string"}, "sort_by": {"type": "string", "enum": ["created", "name", "value", "expiration"]}, "sort_order": {"type": "string", "enum": ["asc", "desc"]}, "limit": {"type": "integer", "minimum": 1, "maximum": 100}, "offset": {"type": "integer", "minimum": 0}, "external_id": {"type": "string"}, "showteam": {"type": "boolean"}, "showall": {"type": "boolean"}"#,
        required: &[],
        document: false,
        read_only: true,
        destructive: false,
        call: Call::Get(
            "/v1/documents",
            &[
                "filter",
                "sort_by",
                "sort_order",
                "limit",
                "offset",
                "external_id",
                "showteam",
                "showall",
            ],
        ),
    },
    Tool {
        name: "get_document",
        title: "Get a document",
        description: "Reads one document: its fields, recipients, status and evidence.",
        properties: "",
        required: &[],
        document: true,
        read_only: true,
        destructive: false,
        call: Call::Get("/v1/documents/{id}", &[]),
    },
    Tool {
        name: "get_document_status",
        title: "Get a document's status",
        description: "Reads only the status of a document.",
        properties: "",
        required: &[],
        document: true,
        read_only: true,
        destructive: false,
        call: Call::Get("/v1/documents/{id}/status", &[]),
    },
    Tool {
        name: "create_document",
        title: "Create a document",
        description: "Creates a document from base64 PDF content (`file_content` + `file_name`), an upload (`file_ids`) or a template (`template_id`), with recipients. Set `is_automatic_sending` to send it once it is ready. The members are those of POST /v1/documents.",
        properties: concat!(
            r#""name": {"type": "string"}, "file_content": {"type": "string", "description": "base64 of a PDF or .docx"}, "file_name": {"type": "string"}, "file_ids": {"type": "string", "description": "an upload id"}, "template_id": {"type": "string"}, "external_id": {"type": "string"}, "value": {"type": "number"}, "expiration_date": {"type": "string"}, "is_automatic_sending": {"type": "boolean"}, "is_signing": {"type": "boolean"}, "custom_fields": {"type": "object"}, "#,
            r#""recipients": {"type": "array", "description": "People who receive the document", "items": {"type": "object", "properties": {"email": {"type": "string"}, "first_name": {"type": "string"}, "last_name": {"type": "string"}, "mobile": {"type": "string"}, "role": {"type": "string", "enum": ["signer", "approver", "internalApprover", "externalApprover", "cc"]}, "order_num": {"type": "integer"}}, "additionalProperties": true}}"#
        ),
        required: &["name"],
        document: false,
        read_only: false,
        destructive: false,
        call: Call::Body("POST", "/v1/documents"),
    },
    Tool {
        name: "update_document",
        title: "Update a document",
        description: "Changes a document's properties (name, value, external_id, ...) as PUT /v1/documents/{id} allows for its status.",
        properties: r#""name": {"type": "string"}, "value": {"type": "number"}, "external_id": {"type": "string"}"#,
        required: &[],
        document: true,
        read_only: false,
        destructive: false,
        call: Call::Body("PUT", "/v1/documents/{id}"),
    },
    Tool {
        name: "seal_document",
        title: "Seal a document",
        description: "Seals a draft: its content is fixed and signing links exist, without mailing anyone.",
        properties: "",
        required: &[],
        document: true,
        read_only: false,
        destructive: false,
        call: Call::Body("POST", "/v1/documents/{id}/seal"),
    },
    Tool {
        name: "send_document",
        title: "Send a document",
        description: "Sends a document to its recipients (mails them their links), optionally with `message`, or at `scheduled_sending_time`.",
        properties: r#""message": {"type": "string"}, "subject": {"type": "string"}, "scheduled_sending_time": {"type": "string"}"#,
        required: &[],
        document: true,
        read_only: false,
        destructive: false,
        call: Call::Body("POST", "/v1/documents/{id}/send"),
    },
    Tool {
        name: "send_to_recipients",
        title: "Send to some recipients",
        description: "Sends a sealed or sent document to the listed recipients only.",
        properties: r#""recipients": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}}}}, "message": {"type": "string"}"#,
        required: &["recipients"],
        document: true,
        read_only: false,
        destructive: false,
        call: Call::Body("POST", "/v1/documents/{id}/recipients/send"),
    },
    Tool {
        name: "list_recipients",
        title: "List recipients",
        description: "Lists a document's recipients with their status.",
        properties: "",
        required: &[],
        document: true,
        read_only: true,
        destructive: false,
        call: Call::Get("/v1/documents/{id}/recipients", &[]),
    },
    Tool {
        name: "forward_document",
        title: "Forward a document",
        description: "Forwards a recipient's part to another person (the members of POST /v1/documents/{id}/forward).",
        properties: r#""recipient_id": {"type": "string"}, "email": {"type": "string"}, "first_name": {"type": "string"}, "last_name": {"type": "string"}, "message": {"type": "string"}"#,
        required: &[],
        document: true,
        read_only: false,
        destructive: false,
        call: Call::Body("POST", "/v1/documents/{id}/forward"),
    },
    Tool {
        name: "set_expiration",
        title: "Set the expiration date",
        description: "Gives a document a new expiration date (`expiration_date`, RFC 3339).",
        properties: r#""expiration_date": {"type": "string"}"#,
        required: &["expiration_date"],
        document: true,
        read_only: false,
        destructive: false,
        call: Call::Body("POST", "/v1/documents/{id}/expiration"),
    },
    Tool {
        name: "send_reminder",
        title: "Send a reminder",
        description: "Reminds recipients who have not yet acted: by email, or by SMS with type sms; only those who have not opened it with not_opened.",
        properties: r#""message": {"type": "string"}, "text": {"type": "string"}, "type": {"type": "string", "enum": ["email", "sms"]}, "not_opened": {"type": "boolean"}, "not_signed": {"type": "boolean"}"#,
        required: &[],
        document: true,
        read_only: false,
        destructive: false,
        call: Call::Body("POST", "/v1/documents/{id}/reminders"),
    },
    Tool {
        name: "recall_document",
        title: "Recall a document",
        description: "Recalls a sent document: its links stop working and recipients can no longer sign. Refused for drafts.",
        properties: "",
        required: &[],
        document: true,
        read_only: false,
        destructive: true,
        call: Call::Recall,
    },
    Tool {
        name: "delete_document",
        title: "Delete a document",
        description: "Deletes a draft or recalled document for good; a sent one is recalled instead (as DELETE /v1/documents/{id}).",
        properties: "",
        required: &[],
        document: true,
        read_only: false,
        destructive: true,
        call: Call::Bare("DELETE", "/v1/documents/{id}"),
    },
    Tool {
        name: "mark_lost",
        title: "Mark a document lost",
        description: "Marks a document as lost (the deal did not happen).",
        properties: "",
        required: &[],
        document: true,
        read_only: false,
        destructive: true,
        call: Call::Bare("POST", "/v1/documents/{id}/lost"),
    },
    Tool {
        name: "get_pricing_tables",
        title: "Get pricing tables",
        description: "Reads a document's pricing tables.",
        properties: "",
        required: &[],
        document: true,
        read_only: true,
        destructive: false,
        call: Call::Get("/v1/documents/{id}/pricing-tables", &[]),
    },
    Tool {
        name: "set_pricing_tables",
        title: "Set pricing tables",
        description: "Replaces a document's pricing tables (the body of PUT /v1/documents/{id}/pricing-tables).",
        properties: r#""pricing_tables": {"type": "array", "items": {"type": "object"}}"#,
        required: &["pricing_tables"],
        document: true,
        read_only: false,
        destructive: false,
        call: Call::Body("PUT", "/v1/documents/{id}/pricing-tables"),
    },
    Tool {
        name: "list_templates",
        title: "List templates",
        description: "Lists the entity's templates.",
        properties: "",
        required: &[],
        document: false,
        read_only: true,
        destructive: false,
        call: Call::Get("/v1/templates", &[]),
    },
    Tool {
        name: "list_comments",
        title: "List comments",
        description: "Lists the comments on a document.",
        properties: "",
        required: &[],
        document: true,
        read_only: true,
        destructive: false,
        call: Call::Get("/v1/documents/{id}/comments", &[]),
    },
    Tool {
        name: "add_comment",
        title: "Add a comment",
        description: "Leaves a comment on a document.",
        properties: r#""text": {"type": "string"}"#,
        required: &["text"],
        document: true,
        read_only: false,
        destructive: false,
        call: Call::Body("POST", "/v1/documents/{id}/comments"),
    },
    Tool {
        name: "get_audit_log",
        title: "Get the audit log",
        description: "Reads a document's hash-chained audit trail.",
        properties: "",
        required: &[],
        document: true,
        read_only: true,
        destructive: false,
        call: Call::Get("/v1/documents/{id}/log", &[]),
    },
    Tool {
        name: "list_subscriptions",
        title: "List webhook subscriptions",
        description: "Lists the entity's webhook subscriptions.",
        properties: "",
        required: &[],
        document: false,
        read_only: true,
        destructive: false,
        call: Call::Get("/v1/subscriptions", &[]),
    },
];

/// The `tools` array of `tools/list`.
pub fn list() -> Value {
    Value::Array(TOOLS.iter().map(describe).collect())
}

fn describe(t: &Tool) -> Value {
    let mut props: Map<String, Value> = if t.properties.is_empty() {
        Map::new()
    } else {
        match serde_json::from_str(&format!("{{{}}}", t.properties)) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        }
    };
    let mut required: Vec<&str> = t.required.to_vec();
    if t.document {
        props.insert(
            "document_id".into(),
            json!({"type": "string", "description": "The document's id"}),
        );
        required.insert(0, "document_id");
    }
    json!({
        "name": t.name,
        "title": t.title,
        "description": t.description,
        "inputSchema": {
            "type": "object",
            "properties": props,
            "required": required,
            "additionalProperties": !matches!(t.call, Call::Get(..) | Call::Bare(..) | Call::Recall),
        },
        "outputSchema": {
            "type": "object",
            "description": "The REST answer's JSON: an object as is, an array as `items`, an empty answer as `{\"ok\": true}`.",
            "additionalProperties": true,
        },
        "annotations": {
            "title": t.title,
            "readOnlyHint": t.read_only,
            "destructiveHint": t.destructive,
            "idempotentHint": t.read_only,
            "openWorldHint": false,
        },
    })
}

/// Runs tool `name` with `args` for the grant in `cx.agent`; the `tools/call` result,
/// serialized (a JSON object). `None` when there is no such tool.
pub fn call(
    cx: &mut Cx,
    outer: &Request,
    name: &str,
    args: &Map<String, Value>,
    router: Router,
) -> Option<String> {
    let tool = TOOLS.iter().find(|t| t.name == name)?;
    Some(match run(cx, outer, tool, args, router) {
        Ok(resp) => result(&resp),
        Err(message) => error_result(400, "invalid_arguments", &message),
    })
}

/// The document id a tool names (when it acts on a document), after checking that
/// every required argument is there.
fn tool_document(t: &Tool, args: &Map<String, Value>) -> Result<String, String> {
    let mut id = String::new();
    if t.document {
        match args.get("document_id") {
            Some(Value::String(s)) if !s.is_empty() => id = s.clone(),
            _ => return Err("document_id is required (a string)".into()),
        }
    }
    for r in t.required {
        if !args.contains_key(*r) {
            return Err(format!("{r} is required"));
        }
    }
    Ok(id)
}

/// The query string of a `GET` tool: its arguments but `document_id`, each one it
/// allows, as text (booleans as `1`/`0`).
fn tool_query(args: &Map<String, Value>, allowed: &[&str]) -> Result<String, String> {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (k, v) in args {
        if k == "document_id" {
            continue;
        }
        if !allowed.contains(&k.as_str()) {
            return Err(format!("unknown argument {k}"));
        }
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Bool(true) => "1".into(),
            Value::Bool(false) => "0".into(),
            Value::Number(n) => n.to_string(),
            _ => return Err(format!("{k} must be a string, number or boolean")),
        };
        query.append_pair(k, &text);
    }
    Ok(query.finish())
}

/// What a draft or an already recalled document answers to `recall_document`, read
/// from the status answer; `None` when the recall may go ahead.
fn refused_recall(status: &Response) -> Option<Response> {
    let now: Value = serde_json::from_slice(&status.body).unwrap_or(Value::Null);
    let (code, text) = match now["status"].as_str() {
        Some("draft") => (
            "not_sent",
            "a draft has not been sent, so it cannot be recalled; delete_document deletes it",
        ),
        Some("recalled") => ("already_recalled", "the document is already recalled"),
        _ => return None,
    };
    Some(http::ApiError::bad_request(code, text).into_response())
}

fn run(
    cx: &mut Cx,
    outer: &Request,
    t: &Tool,
    args: &Map<String, Value>,
    router: Router,
) -> Result<Response, String> {
    let id = tool_document(t, args)?;
    let path = |p: &str| p.replace("{id}", &percent(&id));
    let req = |method: &str, path: String, query: String, body: Option<Value>| Request {
        method: method.into(),
        path,
        query,
        headers: match body {
            Some(_) => vec![("content-type".into(), "application/json".into())],
            None => Vec::new(),
        },
        body: body
            .map(|b| serde_json::to_vec(&b).unwrap_or_default())
            .unwrap_or_default(),
        parts: Vec::new(),
        origin: api::Origin::Http,
        remote_addr: outer.remote_addr.clone(),
    };
    let route = |cx: &mut Cx, r: Request| match router(cx, &r) {
        Ok(resp) => resp,
        Err(e) => e.into_response(),
    };
    Ok(match t.call {
        Call::Get(p, allowed) => {
            let query = tool_query(args, allowed)?;
            route(cx, req("GET", path(p), query, None))
        }
        Call::Body(method, p) => {
            let mut body = args.clone();
            body.remove("document_id");
            let body = Some(Value::Object(body));
            route(cx, req(method, path(p), String::new(), body))
        }
        Call::Bare(method, p) => {
            if let Some(k) = args.keys().find(|k| *k != "document_id") {
                return Err(format!("unknown argument {k}"));
            }
            route(cx, req(method, path(p), String::new(), None))
        }
        Call::Recall => {
            let status_path = path("/v1/documents/{id}/status");
            let status = route(cx, req("GET", status_path, String::new(), None));
            if status.status != 200 {
                return Ok(status);
            }
            if let Some(refused) = refused_recall(&status) {
                return Ok(refused);
            }
            let delete = req("DELETE", path("/v1/documents/{id}"), String::new(), None);
            route(cx, delete)
        }
    })
}

fn percent(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A REST answer as a tool result: the body as text, its JSON as `structuredContent`,
/// and `isError` for a 4xx/5xx.
fn result(resp: &Response) -> String {
    let is_error = resp.status >= 400;
    let is_json = resp
        .headers
        .iter()
        .any(|(n, v)| n == "content-type" && v.starts_with("application/json"));
    let body = String::from_utf8_lossy(&resp.body);
    let first = body.trim_start().bytes().next();
    // The REST answer's JSON goes into the result as it is: never parsed and
    // written again (most of a tool call's cost in the engine was exactly that).
    let structured = match (is_json, first) {
        (true, Some(b'{')) => body.to_string(),
        (true, Some(b'[')) => format!("{{\"items\":{body}}}"),
        (_, None) => format!("{{\"ok\":true,\"status\":{}}}", resp.status),
        _ => format!("{{\"status\":{}}}", resp.status),
    };
    let text = if first.is_none() { &structured } else { &*body };
    let mut out = String::with_capacity(text.len() + structured.len() + 96);
    out.push_str("{\"content\":[{\"type\":\"text\",\"text\":");
    out.push_str(&serde_json::to_string(text).unwrap_or_default());
    out.push_str("}],\"isError\":");
    out.push_str(if is_error { "true" } else { "false" });
    if !is_error {
        out.push_str(",\"structuredContent\":");
        out.push_str(&structured);
    }
    out.push('}');
    out
}

fn error_result(status: u16, code: &str, description: &str) -> String {
    let body = json!({ "error": code, "description": description, "status": status });
    json!({
        "content": [{ "type": "text", "text": body.to_string() }],
        "isError": true,
    })
    .to_string()
}
