//! The job of templates: a template's file is imported.

use crate::base::api::{self, Job, JobOutcome};
use crate::base::cx::Cx;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util::new_id;
use crate::base::work;
use crate::domain::document::DocFile;
use crate::domain::templates::{self, FieldKind, TemplateField, TemplateStatus, page_fields};
use crate::domain::{blobs, fields, previews};

/// Job [`job_kinds::TEMPLATE_IMPORT`].
pub fn imported(cx: &mut Cx, job: &Job) -> JobOutcome {
    let id = String::from_utf8_lossy(&job.payload).into_owned();
    let Some(mut t) = templates::load(cx, &id) else {
        return api::JobOutcome::Done;
    };
    match &job.outcome {
        Some(work::WorkOutcome::Import(results)) => match results.first() {
            Some(Ok(file)) => {
                for name in &file.placeholders {
                    if !t.fields.iter().any(|f| &f.name == name) {
                        t.fields.push(TemplateField {
                            name: name.clone(),
                            kind: FieldKind::Text,
                            options: Vec::new(),
                            min: None,
                            max: None,
                            required: false,
                            default: String::new(),
                        });
                    }
                }
                if file.blob != t.source_blob {
                    blobs::hold(cx, &file.blob, &templates::blob_owner(&id));
                }
                t.file = Some(DocFile {
                    id: new_id(cx),
                    name: t.source_name.clone(),
                    blob: file.blob.clone(),
                    size: file.size,
                    sha256: file.sha256.clone(),
                    pages: file.pages.iter().map(|p| (p.width, p.height)).collect(),
                });
                t.status = TemplateStatus::Ready;
                // The page fields must lie on the pages the file turned out to have.
                for (i, (_, field)) in page_fields(cx, &id).iter().enumerate() {
                    let path = format!("page_fields[{i}]");
                    let fit = match file.pages.get(field.page_num as usize - 1) {
                        Some(p) => fields::check_fit(field, p.width, p.height, &path)
                            .map_err(|e| e.description),
                        None => Err(format!(
                            "`{path}` is on page {}, but the file has {} pages",
                            field.page_num,
                            file.pages.len()
                        )),
                    };
                    if let Err(why) = fit {
                        t.status = TemplateStatus::Failed;
                        t.failure = Some(why);
                        break;
                    }
                }
            }
            Some(Err(f)) => {
                t.status = TemplateStatus::Failed;
                t.failure = Some(f.message.clone());
            }
            None => return api::JobOutcome::Failed("import outcome without results".into()),
        },
        _ => return api::JobOutcome::Failed("template import without an import outcome".into()),
    }
    if t.status == TemplateStatus::Ready
        && let Some(file) = &t.file
    {
        let owner = templates::blob_owner(&id);
        previews::request(cx, &owner, &t.entity_id, vec![file.blob.clone()]);
    }
    templates::save(cx, &t);
    api::JobOutcome::Done
}
