//! Creating a document (`POST /v1/documents`, `POST /v1/upload/archive`; spec §4.2,
//! §3.3): the uploads a request names, the template applied, and the draft stored, with
//! its import or its automatic send. The handler parses the request into a
//! [`NewDocument`] (every 400, and the 404s of unknown files and templates, come from
//! the parsing); [`create`] then always leaves a document, whatever it answers
//! ([`Created`]).

use crate::base::api::JobSpec;
use crate::base::cx::Cx;
use crate::base::http::{ApiError, ApiResult};
use crate::base::job_kinds;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::{self, new_id};
use crate::base::work_orders::{self, ImportSource};
use crate::domain::auth::Principal;
use crate::domain::document::{
    Attachment, CustomField, DocFile, Document, PendingSource, Recipient, store_doc,
};
use crate::domain::events::emit_and_log;
use crate::domain::identity::{self, Checks};
use crate::domain::templates::{self, Template, TemplateStatus};
use crate::domain::trail::Actor;
use crate::domain::uploads::{self, FileKind, GivenFile, Upload, UploadStatus};
use crate::domain::{blobs, document_states, fields, previews, sending};
use serde_json::json;

/// The files a request names, as sources to import, and the first `file_ids` entry
/// that is an unknown upload or an expired Word upload (404, page-less draft).
#[derive(Default)]
pub struct Sources {
    /// In order; the inline file's entry has neither `blob` nor `url` until stored.
    pub sources: Vec<PendingSource>,
    /// A file sent inline (multipart `file` or `file_content`).
    pub inline: Option<GivenFile>,
    pub missing: Option<String>,
    /// Uploads used, to be marked as such once the request succeeds.
    pub used: Vec<Upload>,
}

impl Sources {
    /// The uploads of `file_ids`, in order: 400 `file_not_ready` for one still being
    /// downloaded, 400 `file_failed` for a failed one; an unknown one, or an expired
    /// Word upload, is [`Sources::missing`].
    pub fn from_uploads(cx: &mut Cx, pr: &Principal, ids: &[&str]) -> ApiResult<Sources> {
        let mut out = Sources::default();
        for &id in ids {
            match uploads::find(cx, pr, id) {
                None => {
                    out.missing.get_or_insert_with(|| id.to_string());
                }
                Some(u) if u.status == UploadStatus::Expired && u.kind == FileKind::Word => {
                    out.missing.get_or_insert_with(|| id.to_string());
                }
                Some(u) if u.status == UploadStatus::Pending => {
                    return Err(ApiError::bad_request(
                        "file_not_ready",
                        format!(
                            "the upload {id} is still being downloaded; wait until its file_status is ready"
                        ),
                    ));
                }
                Some(u) if u.status == UploadStatus::Failed => {
                    return Err(ApiError::bad_request(
                        "file_failed",
                        format!(
                            "the upload {id} failed: {}",
                            u.failure.as_deref().unwrap_or("unknown reason")
                        ),
                    ));
                }
                Some(u) => {
                    out.sources.push(PendingSource {
                        // An expired upload keeps its (released) blob id, so that the
                        // import fails with "the file is no longer stored".
                        blob: Some(
                            u.blob
                                .clone()
                                .unwrap_or_else(|| format!("expired-{}", u.id)),
                        ),
                        url: None,
                        name: u.name.clone(),
                        fill: Vec::new(),
                        upload_id: Some(u.id.clone()),
                    });
                    out.used.push(u);
                }
            }
        }
        Ok(out)
    }

    /// A file sent inline (named `document.pdf` when it has no name): stored only once
    /// the request is known to succeed ([`store_inline`]).
    pub fn add_inline(&mut self, file: GivenFile) {
        let name = if file.name.is_empty() {
            "document.pdf".into()
        } else {
            file.name.clone()
        };
        self.inline = Some(file);
        self.sources.push(PendingSource {
            blob: None,
            url: None,
            name,
            fill: Vec::new(),
            upload_id: None,
        });
    }

    /// A file to fetch from `url` (checked by the caller), named after its last segment.
    pub fn add_url(&mut self, url: String) {
        let name = url
            .rsplit('/')
            .next()
            .and_then(|n| n.split('?').next())
            .filter(|n| !n.is_empty())
            .unwrap_or("document.pdf")
            .to_string();
        self.sources.push(PendingSource {
            blob: None,
            url: Some(url),
            name,
            fill: Vec::new(),
            upload_id: None,
        });
    }
}

/// The caller's upload `file_id` as an attachment's file (`attachments`, or an image of
/// `custom_images` when `image`): 404 unless ready, 400 when an image is not one.
pub fn attachment_upload(
    cx: &mut Cx,
    pr: &Principal,
    file_id: &str,
    path: &str,
    image: bool,
) -> ApiResult<Upload> {
    let up = uploads::find(cx, pr, file_id)
        .filter(|u| u.status == UploadStatus::Ready)
        .ok_or_else(|| {
            ApiError::not_found(
                "file_not_found",
                format!("`{path}.file_id`: no usable upload {file_id:?}"),
            )
        })?;
    if image && up.kind != FileKind::Image {
        return Err(ApiError::bad_request(
            "invalid_field",
            format!("`{path}.file_id` is not an image (PNG, JPEG or GIF)"),
        ));
    }
    Ok(up)
}

/// A document to create, as the request gave it: the document's properties (its
/// recipients, attachments and custom fields still apart, as the template may add to
/// them), and what comes with it.
pub struct NewDocument {
    pub doc: Document,
    pub template: Option<Template>,
    pub recipients: Vec<Recipient>,
    pub attachments: Vec<Attachment>,
    /// The custom fields the request gave.
    pub given_fields: Vec<CustomField>,
    /// The identity checks asked of recipients (by recipient id).
    pub checks: Vec<(String, Checks)>,
    pub sources: Sources,
    /// Uploads used (attachments and sources), marked as used.
    pub used: Vec<Upload>,
    /// `POST /v1/upload/archive`: a contract signed elsewhere.
    pub archive: bool,
}

/// What a create left.
pub enum Created {
    /// A draft importing its files in the background.
    Importing(String),
    /// A draft (sent on when `is_automatic_sending`).
    Draft(Box<Document>),
    /// A page-less draft, and the answer that says why (404 or 422).
    PageLess(ApiError, String),
}

/// Creates the document: from here on it exists, whatever the answer.
pub fn create(cx: &mut Cx, new: NewDocument, actor: &Actor) -> ApiResult<Created> {
    let NewDocument {
        mut doc,
        template,
        mut recipients,
        mut attachments,
        given_fields,
        checks,
        sources,
        used,
        archive,
    } = new;
    document_states::created(&mut doc, false);
    doc.unique_id = new_unique_id(cx);
    for (rid, c) in &checks {
        identity::save(cx, &doc.id, rid, c);
    }
    for mut u in used {
        uploads::touch(cx, &mut u);
    }
    let id = doc.id.clone();
    if let Some(missing) = sources.missing {
        doc.recipients = recipients;
        doc.attachments = attachments;
        doc.import_error = Some(format!("the upload {missing} is unknown or has expired"));
        let detail = "created without pages: an upload in file_ids was not found";
        record_created(cx, &mut doc, actor, detail);
        let err = ApiError::not_found(
            "file_not_found",
            format!(
                "the upload {missing} in file_ids is unknown or has expired; the document {id} was left as a draft without pages"
            ),
        );
        return Ok(Created::PageLess(err, id));
    }
    let mut import: Vec<PendingSource> = sources.sources;
    if let Some(t) = &template {
        let applied = apply_template(t, &mut recipients, &mut attachments, &given_fields);
        match applied {
            Err(e) => {
                doc.recipients = recipients;
                doc.attachments = attachments;
                doc.import_error = Some(e.description.clone());
                let detail = "created without pages: the template could not be applied";
                record_created(cx, &mut doc, actor, detail);
                return Ok(Created::PageLess(e, id));
            }
            Ok(fields) => {
                doc.custom_fields = fields;
                use_template(cx, t, &mut doc, &recipients, &given_fields, &mut import);
            }
        }
    }
    doc.recipients = recipients;
    doc.attachments = attachments;
    // Only a create that goes on to import stores the inline file (a page-less draft
    // left by a 404 or 422 has no use for it).
    store_inline(cx, sources.inline, &mut import, &blobs::owner_of(&id))?;
    if !import.is_empty() {
        start_import(cx, &mut doc, import, archive, actor);
        return Ok(Created::Importing(id));
    }
    record_created(cx, &mut doc, actor, "created");
    if doc.flags.is_automatic_sending {
        let before = doc.clone();
        let sender = doc.sender.clone();
        if sending::start_send(cx, &mut doc, actor, sender).is_ok() {
            store_doc(cx, Some(&before), &mut doc);
        }
    }
    Ok(Created::Draft(Box::new(doc)))
}

/// Stores the new document with its `document.created` event; its attachments get ids
/// and are held for it.
fn record_created(cx: &mut Cx, doc: &mut Document, actor: &Actor, detail: &str) {
    for a in doc.attachments.iter_mut() {
        if a.id.is_empty() {
            a.id = new_id(cx);
        }
        blobs::hold(cx, &a.blob, &blobs::owner_of(&doc.id));
    }
    emit_and_log(
        cx,
        doc,
        actor,
        "document.created",
        "created",
        detail,
        json!({}),
    );
    store_doc(cx, None, doc);
}

/// An applied template's fields placed for the recipients, and its file: a Word
/// template with custom fields is imported first (filled), else its PDF is the
/// document's first file.
fn use_template(
    cx: &mut Cx,
    t: &Template,
    doc: &mut Document,
    recipients: &[Recipient],
    given_fields: &[CustomField],
    import: &mut Vec<PendingSource>,
) {
    let placed = templates::fields_for(cx, t, recipients);
    fields::save(cx, &doc.id, &placed);
    let fill: Vec<(String, String)> = doc
        .custom_fields
        .iter()
        .map(|c| (c.name.clone(), c.value.clone()))
        .collect();
    if t.is_word && !given_fields.is_empty() {
        import.insert(
            0,
            PendingSource {
                blob: Some(t.source_blob.clone()),
                url: None,
                name: t.source_name.clone(),
                fill,
                upload_id: None,
            },
        );
    } else if let Some(file) = &t.file {
        let owner = blobs::owner_of(&doc.id);
        blobs::hold(cx, &file.blob, &owner);
        doc.files.push(DocFile {
            id: new_id(cx),
            ..file.clone()
        });
        previews::request(cx, &owner, &doc.entity_id, vec![file.blob.clone()]);
    }
}

/// The document imports `import` in the background (`importing`), and is stored.
fn start_import(
    cx: &mut Cx,
    doc: &mut Document,
    import: Vec<PendingSource>,
    archive: bool,
    actor: &Actor,
) {
    document_states::created(doc, true);
    let order = import
        .iter()
        .map(|s| ImportSource {
            blob: s.blob.clone(),
            url: s.url.clone(),
            name: s.name.clone(),
            fill: s.fill.clone(),
        })
        .collect();
    doc.sources = import;
    let now = cx.now();
    cx.p.schedule_job(JobSpec {
        kind: if archive {
            job_kinds::DOC_IMPORT_ARCHIVE
        } else {
            job_kinds::DOC_IMPORT
        }
        .into(),
        payload: doc.id.clone().into_bytes(),
        run_at_ms: now,
        work: Some(work_orders::WorkOrder::Import(order)),
        scope: doc.entity_id.clone(),
    });
    let detail = if archive {
        "created for the archive; importing files"
    } else {
        "created; importing files"
    };
    record_created(cx, doc, actor, detail);
}

/// Stores the inline file (503 when blob storage is down), fills in its source, and
/// holds it for the document (`owner`) in the same transaction: until the import is
/// recorded nothing else refers to it, and the store check must not take it for unused.
/// The import releases it when it does not keep it.
fn store_inline(
    cx: &mut Cx,
    inline: Option<GivenFile>,
    import: &mut [PendingSource],
    owner: &str,
) -> ApiResult<()> {
    if let Some(file) = inline {
        let info = file.store(cx)?;
        blobs::hold(cx, &info.id, owner);
        if let Some(s) = import
            .iter_mut()
            .find(|s| s.blob.is_none() && s.url.is_none())
        {
            s.blob = Some(info.id);
        }
    }
    Ok(())
}

/// Applies a ready template to the request's recipients and attachments; the custom
/// fields of the document, or a 422.
fn apply_template(
    t: &Template,
    recipients: &mut [Recipient],
    attachments: &mut Vec<Attachment>,
    given: &[CustomField],
) -> ApiResult<Vec<CustomField>> {
    if t.status != TemplateStatus::Ready {
        return Err(ApiError::new(
            422,
            "template_not_applicable",
            format!(
                "the template {:?} is not ready ({})",
                t.name,
                t.failure.as_deref().unwrap_or("still importing")
            ),
        ));
    }
    for a in &t.attachments {
        let restricted_to = match &a.role_name {
            None => None,
            Some(role) => {
                let r = recipients.iter().find(|r| &r.role_name == role).ok_or_else(|| {
                    ApiError::new(
                        422,
                        "template_not_applicable",
                        format!(
                            "the template's attachment {:?} is restricted to the role {role:?}, which has no recipient",
                            a.name
                        ),
                    )
                })?;
                Some(util::normalize_email(&r.email))
            }
        };
        attachments.push(Attachment {
            id: String::new(),
            name: a.name.clone(),
            blob: a.blob.clone(),
            size: a.size,
            restricted_to,
        });
    }
    templates::apply_fields(t, given)
}

/// A new document's `unique_id`: 53 random bits (a JSON number every client reads
/// exactly), unique by chance as document ids are (80 bits), without a lookup. The
/// lookup it replaced (`duid/{n}` must be absent) made concurrent creates conflict on
/// PostgreSQL, which locks the index page a read finds empty, where the others were
/// inserting their own numbers; two documents in a million share a number with odds
/// of about 1 in 18 000. `duid/` keys of older documents are deleted with them.
fn new_unique_id(cx: &mut Cx) -> u64 {
    let mut b = [0u8; 8];
    cx.p.fill_random(&mut b[..7]);
    (u64::from_le_bytes(b) & ((1 << 53) - 1)).max(1)
}
