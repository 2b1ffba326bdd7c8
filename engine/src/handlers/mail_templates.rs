//! `/v1/email/templates` and `/v1/communication-templates` (GetAccept's shapes): the
//! texts of the mails to recipients an entity keeps (`domain::mail_templates` says which
//! one a mail uses). Every member reads them; managers and admins write them.

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult, Fields, json, no_content};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::query;
use crate::base::util::{self, new_id};
use crate::domain::accounts;
use crate::domain::auth::Principal;
use crate::domain::mail_templates::{
    self, CommunicationTemplate, ConversationTexts, EmailTemplate, MAX_TEMPLATES, MailTexts,
};
use serde_json::{Map, Value, json};

fn may_write(pr: &Principal) -> ApiResult<()> {
    if pr.membership.role == accounts::Role::User {
        return Err(http::ApiError::forbidden(
            "forbidden",
            "only managers and admins change the account's mail templates",
        ));
    }
    Ok(())
}

fn full(table: &str) -> ApiError {
    http::ApiError::new(
        409,
        "limit_reached",
        format!("an account keeps at most {MAX_TEMPLATES} {table}"),
    )
}

fn nonempty(_f: &Fields, name: &str, v: String) -> ApiResult<String> {
    if v.trim().is_empty() {
        return Err(http::ApiError::bad_request(
            "invalid_field",
            format!("the field `{name}` cannot be empty"),
        ));
    }
    Ok(v)
}

fn email_kind(f: &Fields) -> ApiResult<Option<String>> {
    match f.optional_str("type")?.as_deref() {
        None => Ok(None),
        Some(k @ ("sendout" | "reminder")) => Ok(Some(k.to_string())),
        Some(other) => Err(http::ApiError::bad_request(
            "invalid_field",
            format!("the field `type` must be sendout or reminder, not {other:?}"),
        )),
    }
}

fn email_json(t: &EmailTemplate) -> Value {
    json!({
        "id": t.id, "name": t.name, "code": t.code, "type": t.kind,
        "entity_id": t.entity_id,
    })
}

const COMMUNICATION_MEMBERS: &[&str] = &[
    "name",
    "language",
    "status",
    "tags",
    "email_sendout_template",
    "email_sendout_reminder_template",
    "signed_sendout_template",
    "conversation_sendout_template",
];

/// The members of a create or update besides `name` and `language`.
fn apply_communication(f: &Fields, t: &mut CommunicationTemplate) -> ApiResult<()> {
    f.only(COMMUNICATION_MEMBERS)?;
    match f.optional_str("status")?.as_deref() {
        None => {}
        Some(s @ ("published" | "draft")) => t.status = s.to_string(),
        Some(other) => {
            return Err(http::ApiError::bad_request(
                "invalid_field",
                format!("the field `status` must be published or draft, not {other:?}"),
            ));
        }
    }
    if let Some(tags) = f.optional_array("tags")? {
        t.tags = tags
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                http::ApiError::bad_request("invalid_field", "the field `tags` must be strings")
            })?;
    }
    for (member, texts) in [
        ("email_sendout_template", &mut t.sendout),
        ("email_sendout_reminder_template", &mut t.reminder),
        ("signed_sendout_template", &mut t.signed),
    ] {
        if let Some(o) = object(f, member)? {
            *texts = mail_texts(member, o)?;
        }
    }
    if let Some(o) = object(f, "conversation_sendout_template")? {
        let path = "conversation_sendout_template";
        only_members(
            path,
            o,
            &[
                "conversation_starter",
                "reminder_message",
                "automatic_message",
                "automatic_reminder_message",
            ],
        )?;
        t.conversation = ConversationTexts {
            conversation_starter: text(path, o, "conversation_starter")?,
            reminder_message: text(path, o, "reminder_message")?,
            automatic_message: flag(path, o, "automatic_message")?,
            automatic_reminder_message: flag(path, o, "automatic_reminder_message")?,
        };
    }
    Ok(())
}

fn object<'a>(f: &'a Fields, name: &str) -> ApiResult<Option<&'a Map<String, Value>>> {
    match f.optional_json(name)? {
        None => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(_) => Err(http::ApiError::bad_request(
            "invalid_field",
            format!("the field `{name}` must be an object"),
        )),
    }
}

fn only_members(path: &str, o: &Map<String, Value>, allowed: &[&str]) -> ApiResult<()> {
    match o.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(http::ApiError::bad_request(
            "unknown_field",
            format!("`{path}.{k}` is not accepted here"),
        )),
        None => Ok(()),
    }
}

fn text(path: &str, o: &Map<String, Value>, key: &str) -> ApiResult<String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(http::ApiError::bad_request(
            "invalid_field",
            format!("`{path}.{key}` must be a string"),
        )),
    }
}

fn flag(path: &str, o: &Map<String, Value>, key: &str) -> ApiResult<bool> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(http::ApiError::bad_request(
            "invalid_field",
            format!("`{path}.{key}` must be a boolean"),
        )),
    }
}

fn mail_texts(path: &str, o: &Map<String, Value>) -> ApiResult<MailTexts> {
    only_members(
        path,
        o,
        &[
            "email_subject",
            "message",
            "button_text",
            "footer",
            "sms_message",
            "automatic_message",
        ],
    )?;
    Ok(MailTexts {
        email_subject: text(path, o, "email_subject")?,
        message: text(path, o, "message")?,
        button_text: text(path, o, "button_text")?,
        footer: text(path, o, "footer")?,
        sms_message: text(path, o, "sms_message")?,
        automatic_message: flag(path, o, "automatic_message")?,
    })
}

fn mail_texts_json(t: &MailTexts, with_sms: bool) -> Value {
    let mut v = json!({
        "email_subject": t.email_subject, "message": t.message,
        "button_text": t.button_text, "footer": t.footer,
    });
    if with_sms {
        v["sms_message"] = json!(t.sms_message);
        v["automatic_message"] = json!(t.automatic_message);
    }
    v
}

fn communication_json(t: &CommunicationTemplate) -> Value {
    let c = &t.conversation;
    json!({
        "id": t.id,
        "entity_id": t.entity_id,
        "name": t.name,
        "language": t.language,
        "status": t.status,
        "type": "communication",
        "tags": t.tags,
        "email_sendout_template": mail_texts_json(&t.sendout, true),
        "email_sendout_reminder_template": mail_texts_json(&t.reminder, true),
        "signed_sendout_template": mail_texts_json(&t.signed, false),
        "conversation_sendout_template": {
            "conversation_starter": c.conversation_starter,
            "reminder_message": c.reminder_message,
            "automatic_message": c.automatic_message,
            "automatic_reminder_message": c.automatic_reminder_message,
        },
        "created_by": t.created_by,
        "updated_by": t.updated_by,
        "created_at": util::iso8601(t.created_ms),
        "updated_at": util::iso8601(t.updated_ms),
    })
}

/// `GET /v1/email/templates`: the entity's mail templates by kind.
pub fn list_email(cx: &mut Cx, pr: &Principal) -> ApiResult<Response> {
    let entity = pr.entity.id.clone();
    let mut groups: Map<String, Value> = Map::new();
    for kind in ["sendout", "reminder"] {
        groups.insert(kind.into(), Value::Array(Vec::new()));
    }
    let all: Vec<EmailTemplate> = mail_templates::all_email(cx, &entity);
    for t in &all {
        if let Some(Value::Array(items)) = groups.get_mut(&t.kind) {
            items.push(json!({"id": t.id, "name": t.name, "type": t.kind}));
        }
    }
    Ok(json(200, &Value::Object(groups)))
}

/// `POST /v1/email/templates`.
pub fn create_email(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    let entity = pr.entity.id.clone();
    may_write(pr)?;
    let f = req.body_fields()?;
    f.only(&["name", "code", "type"])?;
    if mail_templates::all_email(cx, &entity).len() >= MAX_TEMPLATES {
        return Err(full("email templates"));
    }
    let now = cx.now();
    let t = EmailTemplate {
        id: new_id(cx),
        entity_id: entity.clone(),
        user_id: pr.user.id.clone(),
        name: f.required_str("name")?,
        kind: email_kind(&f)?.unwrap_or_else(|| "sendout".into()),
        code: f.required_str("code")?,
        created_ms: now,
        updated_ms: now,
    };
    mail_templates::store_email(cx, &entity, &t);
    Ok(json(200, &email_json(&t)))
}

/// `GET /v1/email/templates/{id}`.
pub fn get_email(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let entity = pr.entity.id.clone();
    let t = mail_templates::find_email(cx, &entity, id)?;
    Ok(json(200, &email_json(&t)))
}

/// `PUT /v1/email/templates/{id}`.
pub fn update_email(cx: &mut Cx, pr: &Principal, req: &Request, id: &str) -> ApiResult<Response> {
    let entity = pr.entity.id.clone();
    let mut t = mail_templates::find_email(cx, &entity, id)?;
    may_write(pr)?;
    let f = req.body_fields()?;
    f.only(&["name", "code", "type"])?;
    if let Some(name) = f.optional_str("name")? {
        t.name = nonempty(&f, "name", name)?;
    }
    if let Some(code) = f.optional_str("code")? {
        t.code = nonempty(&f, "code", code)?;
    }
    if let Some(kind) = email_kind(&f)? {
        t.kind = kind;
    }
    t.updated_ms = cx.now();
    mail_templates::store_email(cx, &entity, &t);
    Ok(no_content())
}

/// `GET /v1/communication-templates`.
pub fn list_communication(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    let entity = pr.entity.id.clone();
    let status = req.query_param("statuses").filter(|s| !s.is_empty());
    if let Some(s) = &status
        && s != "published"
        && s != "draft"
    {
        return Err(http::ApiError::bad_request(
            "invalid_parameter",
            format!("`statuses` must be published or draft, not {s:?}"),
        ));
    }
    let offset = query::parse_int(req, "offset")?.unwrap_or(0).max(0) as usize;
    let limit = match query::parse_int(req, "limit")? {
        Some(n) if n > 0 => (n as usize).min(MAX_TEMPLATES),
        _ => 20,
    };
    let mut all: Vec<CommunicationTemplate> = mail_templates::all_communication(cx, &entity);
    all.sort_by_key(|t| core::cmp::Reverse(t.created_ms));
    let items: Vec<Value> = all
        .iter()
        .filter(|t| status.as_ref().is_none_or(|s| &t.status == s))
        .skip(offset)
        .take(limit)
        .map(communication_json)
        .collect();
    Ok(json(200, &json!({ "communication_templates": items })))
}

/// `POST /v1/communication-templates`.
pub fn create_communication(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    let entity = pr.entity.id.clone();
    may_write(pr)?;
    let f = req.body_fields()?;
    let now = cx.now();
    let mut t = CommunicationTemplate {
        id: new_id(cx),
        entity_id: entity.clone(),
        name: f.required_str("name")?,
        language: f.required_str("language")?,
        status: "draft".into(),
        tags: Vec::new(),
        sendout: MailTexts::default(),
        reminder: MailTexts::default(),
        signed: MailTexts::default(),
        conversation: ConversationTexts::default(),
        created_by: pr.user.id.clone(),
        updated_by: pr.user.id.clone(),
        created_ms: now,
        updated_ms: now,
    };
    apply_communication(&f, &mut t)?;
    if mail_templates::all_communication(cx, &entity).len() >= MAX_TEMPLATES {
        return Err(full("communication templates"));
    }
    mail_templates::store_communication(cx, &entity, &t);
    Ok(json(200, &communication_json(&t)))
}

/// `GET /v1/communication-templates/{id}`.
pub fn get_communication(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<Response> {
    let entity = pr.entity.id.clone();
    let t = mail_templates::find_communication(cx, &entity, id)?;
    Ok(json(200, &communication_json(&t)))
}

/// `PUT /v1/communication-templates/{id}`.
pub fn update_communication(
    cx: &mut Cx,
    pr: &Principal,
    req: &Request,
    id: &str,
) -> ApiResult<Response> {
    let entity = pr.entity.id.clone();
    let mut t = mail_templates::find_communication(cx, &entity, id)?;
    may_write(pr)?;
    let f = req.body_fields()?;
    if let Some(name) = f.optional_str("name")? {
        t.name = nonempty(&f, "name", name)?;
    }
    if let Some(language) = f.optional_str("language")? {
        t.language = nonempty(&f, "language", language)?;
    }
    apply_communication(&f, &mut t)?;
    t.updated_by = pr.user.id.clone();
    t.updated_ms = cx.now();
    mail_templates::store_communication(cx, &entity, &t);
    Ok(no_content())
}
