//! Page view times: how long recipients looked at each content page of a document,
//! reported by the signing page (`POST /v1/recipient/{secret}/page-views`, when the
//! page is hidden or left) and kept under `dpv/{document}` beside the document as a
//! total per page: milliseconds and the number of reports that named it. Answered as
//! GetAccept's `page_time` and `view_duration_seconds` of each page (`with_pages`,
//! `/pages`) and under `with_stats`. Nothing of it goes into the audit trail: it is
//! what a browser says, not an act.
//!
//! The report:
//!
//! ```json
//! {"pages": [{"page_num": 1, "seconds": 12.5}, {"page_num": 2, "seconds": 3}]}
//! ```
//!
//! `page_num` is a content page (1 to the document's `page_count`), `seconds` more
//! than 0 and at most [`MAX_REPORT_SECONDS`]; at most one entry per page. The handler
//! (`handlers/recipients/mod.rs`) reads and checks it; [`record`] adds it.

use crate::base::cx::Cx;
use crate::base::keyspace::DPV;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util;
use crate::domain::document::Document;
use serde::{Deserialize, Serialize};

/// The longest time one report may give a page: the signing page reports when it is
/// hidden, so an hour on one page in one sitting is already generous.
pub const MAX_REPORT_SECONDS: f64 = 3600.0;

/// One page's totals.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
pub struct PageTotal {
    /// Time on the page, summed over reports, in milliseconds.
    pub millis: u64,
    /// Reports that named the page.
    pub views: u32,
}

/// Totals per content page, in page order (shorter when later pages were never seen).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct PageViews {
    pub pages: Vec<PageTotal>,
}

impl PageViews {
    /// The totals of page `num` (1-based); zero when never reported.
    pub fn page(&self, num: usize) -> PageTotal {
        num.checked_sub(1)
            .and_then(|i| self.pages.get(i))
            .copied()
            .unwrap_or_default()
    }

    /// Seconds on every page together.
    pub fn total_seconds(&self) -> f64 {
        self.pages.iter().map(|p| p.millis).sum::<u64>() as f64 / 1000.0
    }
}

fn key(doc_id: &str) -> Vec<u8> {
    util::key(&[DPV, doc_id])
}

pub fn load(cx: &mut Cx, doc_id: &str) -> PageViews {
    cx.load(&key(doc_id)).unwrap_or_default()
}

/// Adds a report's (page number, milliseconds) pairs to `doc`'s totals: each page a
/// content page of `doc`, named once (read and checked in `handlers/recipients/mod.rs`).
pub fn record(cx: &mut Cx, doc: &Document, report: &[(usize, u64)]) {
    let mut views = load(cx, &doc.id);
    for &(num, millis) in report {
        if views.pages.len() < num {
            views.pages.resize(num, PageTotal::default());
        }
        let p = &mut views.pages[num - 1];
        p.millis = p.millis.saturating_add(millis);
        p.views = p.views.saturating_add(1);
    }
    cx.save(&key(&doc.id), &views);
}

/// Seconds on page `num` over all recipients: GetAccept's `page_time` and
/// `view_duration_seconds` of a page.
pub fn page_seconds(views: &PageViews, num: usize) -> f64 {
    views.page(num).millis as f64 / 1000.0
}

/// Forgets a deleted document's view times.
pub fn erase(cx: &mut Cx, doc_id: &str) {
    cx.p.delete(&key(doc_id));
}
