//! `GET /v1/entity` (what GetAccept's own apps read: the entity of the token, with its
//! default mail texts and its branding) and `PUT /v1/entity` (admins change its name,
//! those texts, which invitations then use: `domain::mail_templates`, and the colour and
//! logo its signing pages show: `domain::branding`; what every party gets when a document
//! is completed: `domain::completion`; the sites that may frame its signing pages:
//! `domain::embedding`; when automatic reminders go out: `domain::reminder_schedules`).

use crate::base::api::{Request, Response};
use crate::base::cx::Cx;
use crate::base::http::{self, ApiResult, json};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util;
use crate::domain::accounts::{self, Entity};
use crate::domain::auth::Principal;
use crate::domain::branding;
use crate::domain::completion::{self, Copies};
use crate::domain::embedding;
use crate::domain::mail_templates::{self, EntityTexts};
use crate::domain::reminder_schedules;
use crate::handlers::inputs;
use crate::handlers::shapes;
use serde_json::{Value, json};

/// The built-in subject and message of an invitation, as placeholders.
const DEFAULT_SUBJECT: &str = "{{sender_name}} sent you \"{{document_name}}\"";
const DEFAULT_MESSAGE: &str = "";

fn entity_json(cx: &mut Cx, pr: &Principal, e: &Entity) -> Value {
    let texts = mail_templates::entity_texts(cx, &e.id);
    let brand = shapes::branding_json(&branding::load(cx, &e.id));
    json!({"entity": {
        "id": e.id,
        "name": e.name,
        "parent_id": e.parent_id.clone().unwrap_or_default(),
        "email_send_subject": texts.email_send_subject,
        "default_email_send_subject": DEFAULT_SUBJECT,
        "email_send_message": texts.email_send_message,
        "default_email_send_message": DEFAULT_MESSAGE,
        "brand_color": brand["color"],
        "logo_url": brand["logo_url"],
        "completion_copies": completion::choice(cx, &e.id).as_str(),
        "completion_copies_by_party": completion::by_party(cx, &e.id)
            .into_iter()
            .map(|(k, c)| (k.as_str().to_string(), json!(c.as_str())))
            .collect::<serde_json::Map<String, serde_json::Value>>(),
        "embed_origins": embedding::origins(cx, &e.id),
        "reminder_schedule": reminder_schedules::to_json(&reminder_schedules::of_entity(cx, &e.id)),
        "role": pr.membership.role.as_str(),
        "api_access": e.api_access,
        "is_saml": e.saml,
        "created_at": util::iso8601(e.created_ms),
    }})
}

/// `GET /v1/entity`: the caller's entity.
pub fn get(cx: &mut Cx, pr: &Principal) -> ApiResult<Response> {
    let e = pr.entity.clone();
    Ok(json(200, &entity_json(cx, pr, &e)))
}

/// The entity's settings kept in their own records: `completion_copies` and
/// `embed_origins` (the origins stored only when every one is valid).
fn settings(cx: &mut Cx, entity_id: &str, f: &http::Fields) -> ApiResult<()> {
    let copies = match f.optional_str("completion_copies")? {
        None => None,
        Some(c) => Some(Copies::parse(c.trim()).ok_or_else(|| {
            http::ApiError::bad_request(
                "invalid_field",
                "`completion_copies` must be `attachment`, `link` or `none`",
            )
        })?),
    };
    let by_party = match f.optional_json("completion_copies_by_party")? {
        None => None,
        Some(v) => Some(copies_by_party(v)?),
    };
    let origins = match f.optional_array("embed_origins")? {
        None => None,
        Some(list) => Some(
            list.iter()
                .map(|v| {
                    v.as_str().map(str::to_string).ok_or_else(|| {
                        http::ApiError::bad_request(
                            "invalid_field",
                            "`embed_origins` must be an array of origins as strings",
                        )
                    })
                })
                .collect::<ApiResult<Vec<String>>>()?,
        ),
    };
    let reminders = match f.map.get("reminder_schedule") {
        Some(v) => Some(reminder_schedules::parse(v, "reminder_schedule")?),
        None => None,
    };
    if let Some(origins) = origins {
        embedding::set_origins(cx, entity_id, &origins)?;
    }
    if let Some(s) = reminders {
        reminder_schedules::set_entity(cx, entity_id, s);
    }
    if let Some(copies) = copies {
        completion::set_choice(cx, entity_id, copies);
    }
    if let Some(given) = by_party {
        completion::set_by_party(cx, entity_id, &given);
    }
    Ok(())
}

/// `completion_copies_by_party`: an object of kinds of party to `attachment`, `link`
/// or `none`.
fn copies_by_party(v: &serde_json::Value) -> ApiResult<Vec<(completion::Kind, Copies)>> {
    let bad = || {
        http::ApiError::bad_request(
            "invalid_field",
            "`completion_copies_by_party` must be an object of `signers`, `approvers`, `cc`, \
             `owner` or `copy_emails` to `attachment`, `link` or `none`",
        )
    };
    let o = v.as_object().ok_or_else(bad)?;
    o.iter()
        .map(|(k, c)| {
            let kind = completion::Kind::parse(k).ok_or_else(bad)?;
            let copies = c.as_str().and_then(Copies::parse).ok_or_else(bad)?;
            Ok((kind, copies))
        })
        .collect()
}

/// `PUT /v1/entity` (admins): its name, mail texts, colour and logo.
pub fn update(cx: &mut Cx, pr: &Principal, req: &Request) -> ApiResult<Response> {
    if pr.membership.role != accounts::Role::Admin {
        return Err(http::ApiError::forbidden(
            "forbidden",
            "only the account's admins change it",
        ));
    }
    let f = req.body_fields()?;
    f.only(&[
        "name",
        "email_send_subject",
        "email_send_message",
        "brand_color",
        "logo",
        "completion_copies",
        "completion_copies_by_party",
        "embed_origins",
        "reminder_schedule",
    ])?;
    settings(cx, &pr.entity.id, &f)?;
    let mut e = pr.entity.clone();
    if let Some(name) = f.optional_str("name")? {
        if name.trim().is_empty() {
            return Err(http::ApiError::bad_request(
                "invalid_field",
                "the field `name` cannot be empty",
            ));
        }
        e.name = name.trim().to_string();
        accounts::store_entity(cx, &e);
    }
    let mut texts: EntityTexts = mail_templates::entity_texts(cx, &e.id);
    if let Some(s) = f.optional_str("email_send_subject")? {
        texts.email_send_subject = s;
    }
    if let Some(m) = f.optional_str("email_send_message")? {
        texts.email_send_message = m;
    }
    mail_templates::store_entity_texts(cx, &e.id, &texts);
    let color = f.optional_str("brand_color")?;
    let color = color.as_deref().map(str::trim);
    if color.is_some_and(|c| !c.is_empty() && !branding::is_color(c)) {
        return Err(http::ApiError::bad_request(
            "invalid_field",
            "`brand_color` must be a colour as `#rrggbb`, or empty for none",
        ));
    }
    let logo = match f.map.get("logo") {
        Some(v) => Some(inputs::png_of(v, "logo")?),
        None => None,
    };
    if color.is_some() || logo.is_some() {
        branding::update(cx, &e.id, color, logo.as_ref().map(Option::as_deref))?;
    }
    Ok(json(200, &entity_json(cx, pr, &e)))
}
