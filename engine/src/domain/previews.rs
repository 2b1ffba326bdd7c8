//! Page previews: pictures of the pages of a document's or template's file, made when
//! the file is imported, for what GetAccept's clients show in `<img>` elements (the
//! `thumb_url` of a document, a page and a template; a document's `preview_url`).
//!
//! The engine asks for them with the work it already has: a render of the imported
//! files with nothing drawn on them (`work::RenderOrder` without stamps or seal), whose
//! page images of the content pages are kept (held by the owner, like its files) and
//! whose PDF and summary page are dropped. Each kept picture is published at an
//! unguessable address (`public_files`). A newer set replaces an older one; the owner's
//! deletion erases them ([`erase`]).
//!
//! | key | value |
//! |---|---|
//! | `prev/{owner}` | [`Previews`] (owner: `doc:{id}` or `template:{id}`) |

use crate::base::api::JobSpec;
use crate::base::cx::Cx;
use crate::base::job_kinds;
use crate::base::keyspace::PREV;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util;
use crate::base::work_orders::{RenderOrder, RenderedFile, WorkOrder};
use crate::domain::blobs;
use crate::domain::public_files::{self, PublicFile};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Preview {
    pub blob: String,
    pub width: u32,
    pub height: u32,
    /// The secret of its public address.
    pub secret: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Previews {
    pub pages: Vec<Preview>,
}

fn key(owner: &str) -> Vec<u8> {
    util::key(&[PREV, owner])
}

pub fn load(cx: &mut Cx, owner: &str) -> Previews {
    cx.load(&key(owner)).unwrap_or_default()
}

/// The public address of page `n` (1-based) of `owner`'s previews, if made.
pub fn page_url(cx: &mut Cx, owner: &str, n: usize) -> Option<String> {
    let p = load(cx, owner).pages.into_iter().nth(n.checked_sub(1)?)?;
    Some(public_files::url(cx, &p.secret))
}

/// Asks the host to make previews of `sources` (PDF blobs) for `owner`, whose work
/// counts against `entity`.
pub fn request(cx: &mut Cx, owner: &str, entity: &str, sources: Vec<String>) {
    if sources.is_empty() {
        return;
    }
    let now = cx.now();
    cx.p.schedule_job(JobSpec {
        kind: job_kinds::PREVIEWS.into(),
        payload: owner.as_bytes().to_vec(),
        run_at_ms: now,
        work: Some(WorkOrder::Render(RenderOrder {
            sources,
            stamps: Vec::new(),
            appendix: Vec::new(),
            summary: Vec::new(),
            seal: None,
        })),
        scope: entity.to_string(),
    });
}

/// Keeps the pictures of the first `pages` pages of `file` as `owner`'s previews
/// (replacing older ones) and drops the rest of what the render made; with `pages`
/// `None` (the owner is gone) drops it all.
pub fn record(cx: &mut Cx, owner: &str, file: &RenderedFile, pages: Option<usize>) {
    cx.p.delete_blob(&file.blob);
    let keep = pages.unwrap_or(0);
    for img in file.page_images.iter().skip(keep) {
        cx.p.delete_blob(&img.blob);
    }
    if pages.is_none() {
        return;
    }
    erase(cx, owner);
    let mut kept = Previews::default();
    for img in file.page_images.iter().take(keep) {
        blobs::hold(cx, &img.blob, owner);
        let secret = public_files::publish(
            cx,
            &PublicFile {
                blob: img.blob.clone(),
                content_type: "image/png".into(),
                file_name: "page.png".into(),
            },
        );
        kept.pages.push(Preview {
            blob: img.blob.clone(),
            width: img.width,
            height: img.height,
            secret,
        });
    }
    cx.save(&key(owner), &kept);
}

/// Removes `owner`'s previews: their addresses stop answering and their pictures are
/// released.
pub fn erase(cx: &mut Cx, owner: &str) {
    let old = load(cx, owner);
    if old.pages.is_empty() {
        return;
    }
    for p in &old.pages {
        public_files::unpublish(cx, &p.secret);
        blobs::release(cx, &p.blob, owner);
    }
    cx.p.delete(&key(owner));
}
