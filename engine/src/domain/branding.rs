//! An entity's branding: its colour and its logo, shown on the signing page of its
//! documents (`handlers::recipients`). The logo is a PNG published as a public file
//! (`public_files`, `GET /v1/files/{secret}`), its blob held by `brand:{entity}`.
//!
//! | key | value |
//! |---|---|
//! | `brand/{entity}` | [`Branding`] |

use crate::base::cx::Cx;
use crate::base::http::ApiResult;
use crate::base::keyspace::BRAND;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::util;
use crate::domain::{blobs, public_files};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Branding {
    /// `#rrggbb`, or empty for esign's own.
    pub color: String,
    /// The logo's blob and the secret of its public address; empty without a logo.
    pub logo_blob: String,
    pub logo_secret: String,
}

fn key(entity: &str) -> Vec<u8> {
    util::key(&[BRAND, entity])
}

fn owner(entity: &str) -> String {
    format!("brand:{entity}")
}

pub fn load(cx: &mut Cx, entity: &str) -> Branding {
    cx.load(&key(entity)).unwrap_or_default()
}

/// Whether `s` is a colour as branding keeps it: `#` and six hex digits.
pub fn is_color(s: &str) -> bool {
    s.len() == 7 && s.starts_with('#') && s[1..].chars().all(|c| c.is_ascii_hexdigit())
}

/// Changes the colour (`#rrggbb`, checked by the caller; empty clears it) and the logo
/// (`Some(Some(png))`, checked by the caller, replaces it; `Some(None)` removes it),
/// each only when given. A replaced logo stops being served and its blob is let go.
pub fn update(
    cx: &mut Cx,
    entity: &str,
    color: Option<&str>,
    logo: Option<Option<&[u8]>>,
) -> ApiResult<()> {
    let mut b = load(cx, entity);
    if let Some(color) = color {
        b.color = color.to_ascii_lowercase();
    }
    if let Some(png) = logo {
        if !b.logo_secret.is_empty() {
            public_files::unpublish(cx, &b.logo_secret);
            blobs::release(cx, &b.logo_blob, &owner(entity));
        }
        b.logo_blob.clear();
        b.logo_secret.clear();
        if let Some(bytes) = png {
            let (info, secret) =
                public_files::store(cx, &owner(entity), bytes, "image/png", "logo.png")?;
            b.logo_blob = info.id;
            b.logo_secret = secret;
        }
    }
    cx.save(&key(entity), &b);
    Ok(())
}

/// Where the logo is served: a path on this service, empty without a logo.
pub fn logo_path(b: &Branding) -> String {
    if b.logo_secret.is_empty() {
        String::new()
    } else {
        format!("/v1/files/{}", b.logo_secret)
    }
}
