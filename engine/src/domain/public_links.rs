//! Public signing links (issue 51 item 2): a template published as a link anyone may
//! open (`/p/{slug}`), or scan as a QR code. A visitor gives their name and email (and
//! an emailed code first when the link asks for one); a document is made from the
//! template for them in its signer role, sealed without an invitation mail, and they
//! sign on its link at once. The document is the entity's like any other, owned by
//! whoever published the link.
//!
//! Limits hold under concurrency because each visit is one call, one transaction: the
//! use count, the one-per-email mark and the document are written together, after every
//! check passed. A source may try [`VISITS_PER_MINUTE`] visits a minute (429 with
//! `Retry-After`); an email code allows [`CODE_TRIES`] wrong guesses.

use crate::base::cx::Cx;
use crate::base::http::{self, ApiError, ApiResult};
use crate::base::keyspace::{EPLINK, PCODE, PLINK, PLUSE, PRATE, PSLUG};
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::records;
use crate::base::util::{self, is_email, is_id, new_id, sha256_hex};
use crate::domain::access;
use crate::domain::auth::{self, Principal};
use crate::domain::creation::{self, Created, NewDocument};
use crate::domain::document::{Role, hex, store_doc};
use crate::domain::document_states::{self, Move as DocMove};
use crate::domain::templates::{self, Template, TemplateStatus};
use crate::domain::trail::Actor;
use crate::domain::{links, notify, sending};
use serde::{Deserialize, Serialize};

/// Visits (and code requests) one source may make per minute.
pub const VISITS_PER_MINUTE: u32 = 10;
/// Wrong guesses an emailed code allows before a new one must be asked for.
pub const CODE_TRIES: u32 = 5;
/// How long an emailed code works.
const CODE_MS: u64 = 10 * 60_000;
/// The links one entity may have.
pub const MAX_LINKS: usize = 1_000;

/// A published link (`plink/{id}`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PublicLink {
    pub id: String,
    /// The public part of its URL (`/p/{slug}`), an index `pslug/{slug}` while it works.
    pub slug: String,
    pub entity_id: String,
    /// Who published it: the owner of the documents it makes.
    pub user_id: String,
    pub template_id: String,
    /// At most this many documents; 0: no limit.
    pub max_uses: u32,
    pub expires_ms: Option<u64>,
    pub one_per_email: bool,
    pub require_email_code: bool,
    pub uses: u32,
    pub created_ms: u64,
}

/// What a publisher asks for.
#[derive(Debug, Default)]
pub struct Terms {
    pub max_uses: u32,
    pub expires_ms: Option<u64>,
    pub one_per_email: bool,
    pub require_email_code: bool,
}

/// Who a visitor says they are.
pub struct Visitor {
    pub first_name: String,
    pub last_name: String,
    pub email: String,
    pub code: String,
}

fn link_key(id: &str) -> Vec<u8> {
    util::key(&[PLINK, id])
}
fn slug_key(slug: &str) -> Vec<u8> {
    util::key(&[PSLUG, slug])
}
fn entity_key(entity: &str, created_ms: u64, id: &str) -> Vec<u8> {
    util::key(&[EPLINK, entity, &hex(created_ms), id])
}
fn use_key(id: &str, email: &str) -> Vec<u8> {
    util::key(&[PLUSE, id, &email.to_ascii_lowercase()])
}
fn code_key(id: &str, email: &str) -> Vec<u8> {
    util::key(&[
        PCODE,
        id,
        &sha256_hex(email.to_ascii_lowercase().as_bytes()),
    ])
}

fn not_found() -> ApiError {
    ApiError::not_found(
        "link_not_found",
        "no such public link, or it was unpublished",
    )
}

/// The template's role a visitor takes: its one signer role (`None`: a template without
/// roles, where the visitor is a plain signer). 409 when the template has other roles,
/// which no visitor could fill.
pub fn visitor_role(t: &Template) -> ApiResult<Option<String>> {
    match t.roles.as_slice() {
        [] => Ok(None),
        [r] if r.role == Role::Signer => Ok(Some(r.role_name.clone())),
        _ => Err(ApiError::new(
            409,
            "template_not_publishable",
            "a public link needs a template with one signer role and no other roles",
        )),
    }
}

/// Publishes template `template_id` as a link (the caller may change the template; it
/// is ready and has one signer role).
pub fn publish(
    cx: &mut Cx,
    pr: &Principal,
    template_id: &str,
    terms: Terms,
) -> ApiResult<PublicLink> {
    let t = templates::writable(cx, pr, template_id)?;
    if t.status != TemplateStatus::Ready {
        return Err(ApiError::new(
            409,
            "template_not_ready",
            format!(
                "the template is {}; publish it once it is ready",
                t.status.as_str()
            ),
        ));
    }
    visitor_role(&t)?;
    if list(cx, &pr.entity.id).len() >= MAX_LINKS {
        return Err(ApiError::new(
            409,
            "too_many_links",
            format!("an entity may have at most {MAX_LINKS} public links"),
        ));
    }
    let now = cx.now();
    let link = PublicLink {
        id: new_id(cx),
        slug: util::new_secret(cx)[..22].to_string(),
        entity_id: pr.entity.id.clone(),
        user_id: pr.user.id.clone(),
        template_id: t.id,
        max_uses: terms.max_uses,
        expires_ms: terms.expires_ms,
        one_per_email: terms.one_per_email,
        require_email_code: terms.require_email_code,
        uses: 0,
        created_ms: now,
    };
    cx.save(&link_key(&link.id), &link);
    cx.save(&slug_key(&link.slug), &link.id);
    cx.p.put(&entity_key(&link.entity_id, now, &link.id), b"");
    Ok(link)
}

/// The links of entity `entity`, newest first.
pub fn list(cx: &mut Cx, entity: &str) -> Vec<PublicLink> {
    let (start, end) = records::prefix_range(&format!("{EPLINK}/{entity}/"));
    let keys = cx.p.scan(&start, &end, MAX_LINKS as u32 + 1, true);
    keys.iter()
        .filter_map(|(k, _)| {
            let id = String::from_utf8_lossy(k).rsplit('/').next()?.to_string();
            cx.load::<PublicLink>(&link_key(&id))
        })
        .collect()
}

/// Unpublishes link `id` at once: its slug stops answering (404), its record goes; the
/// documents it made stay. The publisher, an admin or a manager of their team.
pub fn unpublish(cx: &mut Cx, pr: &Principal, id: &str) -> ApiResult<()> {
    let link = is_id(id)
        .then(|| cx.load::<PublicLink>(&link_key(id)))
        .flatten()
        .filter(|l| l.entity_id == pr.entity.id)
        .ok_or_else(not_found)?;
    if !access::owner_rule(cx, pr, &link.entity_id, &link.user_id) {
        return Err(access::change_denied("public link"));
    }
    cx.p.delete(&slug_key(&link.slug));
    cx.p.delete(&entity_key(&link.entity_id, link.created_ms, &link.id));
    cx.p.delete(&link_key(&link.id));
    let (start, end) = records::prefix_range(&format!("{PLUSE}/{}/", link.id));
    for (k, _) in cx.p.scan(&start, &end, 100_000, false) {
        cx.p.delete(&k);
    }
    Ok(())
}

/// The working link behind `slug` and its template: 404 when unknown or unpublished,
/// 410 when expired, used up, or its template or publisher is gone.
pub fn open(cx: &mut Cx, slug: &str) -> ApiResult<(PublicLink, Template)> {
    let id: String = (slug.len() <= 64)
        .then(|| cx.load(&slug_key(slug)))
        .flatten()
        .ok_or_else(not_found)?;
    let link: PublicLink = cx.load(&link_key(&id)).ok_or_else(not_found)?;
    let gone = |why: &str| ApiError::new(410, "link_unavailable", why.to_string());
    if link.expires_ms.is_some_and(|e| e <= cx.now()) {
        return Err(gone("this link has expired"));
    }
    if link.max_uses > 0 && link.uses >= link.max_uses {
        return Err(gone("this link has been used as often as it may be"));
    }
    let t = templates::load(cx, &link.template_id)
        .filter(|t| !t.trashed && t.status == TemplateStatus::Ready)
        .ok_or_else(|| gone("the document behind this link is no longer offered"))?;
    Ok((link, t))
}

/// Who acts for link `link`: its publisher, while they may still (else 410).
pub fn publisher(cx: &mut Cx, link: &PublicLink) -> ApiResult<Principal> {
    auth::principal(cx, &link.user_id, &link.entity_id, String::new()).map_err(|_| {
        ApiError::new(
            410,
            "link_unavailable",
            "the publisher of this link can no longer send documents",
        )
    })
}

/// At most [`VISITS_PER_MINUTE`] visits from `source` in a fixed minute, then 429.
pub fn rate_limit(cx: &mut Cx, source: &str) -> ApiResult<()> {
    let key = util::key(&[PRATE, &sha256_hex(source.as_bytes())]);
    links::per_minute(cx, &key, VISITS_PER_MINUTE, "visits from this address")
}

/// 400 `invalid_field` unless `email` is an email address.
pub fn check_email(email: &str) -> ApiResult<()> {
    if is_email(email) {
        return Ok(());
    }
    Err(http::ApiError::bad_request(
        "invalid_field",
        format!("`email`: {email:?} is not a valid email address"),
    ))
}

/// A new code for `email` on `link` (stored salted and hashed, valid ten minutes):
/// the code, for the mail the caller sends.
pub fn new_code(cx: &mut Cx, link: &PublicLink, email: &str) -> ApiResult<String> {
    check_email(email)?;
    let mut n = [0u8; 4];
    cx.p.fill_random(&mut n);
    let code = format!("{:06}", u32::from_le_bytes(n) % 1_000_000);
    let salt = new_id(cx);
    let hash = sha256_hex(format!("{salt}\n{code}").as_bytes());
    let until = cx.now() + CODE_MS;
    cx.save(&code_key(&link.id, email), &(salt, hash, until, 0u32));
    Ok(code)
}

/// Checks `code` for `email` on `link`; a right one is used up.
fn check_code(cx: &mut Cx, link: &PublicLink, email: &str, code: &str) -> ApiResult<()> {
    let key = code_key(&link.id, email);
    let wrong = |text: &str| ApiError::bad_request("invalid_code", text.to_string());
    let Some((salt, hash, until, tries)) = cx.load::<(String, String, u64, u32)>(&key) else {
        return Err(wrong("ask for a code first: it is sent to your email"));
    };
    if until <= cx.now() || tries >= CODE_TRIES {
        cx.p.delete(&key);
        return Err(wrong("the code has expired; ask for a new one"));
    }
    if sha256_hex(format!("{salt}\n{}", code.trim()).as_bytes()) != hash {
        cx.save(&key, &(salt, hash, until, tries + 1));
        return Err(wrong("the code is not right"));
    }
    cx.p.delete(&key);
    Ok(())
}

/// Checks a visit before anything is made: the visitor's email (and code, when the link
/// asks for one), and one document per email when the link says so (409).
pub fn admit(cx: &mut Cx, link: &PublicLink, v: &Visitor) -> ApiResult<()> {
    check_email(&v.email)?;
    if link.one_per_email && cx.p.get(&use_key(&link.id, &v.email)).is_some() {
        return Err(ApiError::new(
            409,
            "already_used",
            "this email address has already used this link",
        ));
    }
    if link.require_email_code {
        check_code(cx, link, &v.email, &v.code)?;
    }
    Ok(())
}

/// Counts a visit that made document `doc_id`, in the same transaction as the document.
pub fn count_use(cx: &mut Cx, mut link: PublicLink, email: &str, doc_id: &str) {
    link.uses += 1;
    cx.save(&link_key(&link.id), &link);
    if link.one_per_email {
        cx.p.put(&use_key(&link.id, email), doc_id.as_bytes());
    }
}

/// A visit's document: its id and the visitor's signing link.
pub struct Made {
    pub document_id: String,
    pub signing_url: String,
}

/// Makes the visit's document (`new`, a create for the visitor in the template's signer
/// role, as the publisher `pr`), seals it (links for all, no invitation mail) and counts
/// the use, in one transaction. A template that leaves the document without pages now
/// (one imported first) is refused with 409 and nothing is counted.
pub fn make(
    cx: &mut Cx,
    pr: &Principal,
    link: PublicLink,
    new: NewDocument,
    actor: &Actor,
    v: &Visitor,
) -> ApiResult<Made> {
    let mut doc = match creation::create(cx, new, actor)? {
        Created::Draft(doc) => *doc,
        Created::Importing(_) | Created::PageLess(..) => {
            return Err(ApiError::new(
                409,
                "template_not_publishable",
                "the link's template cannot make a document at once",
            ));
        }
    };
    let sender = sending::sender(
        cx,
        pr,
        &doc,
        (None, None),
        (actor.user_agent.clone(), actor.ip.clone()),
    )?;
    let before = doc.clone();
    document_states::may(&doc, DocMove::Seal)?;
    sending::seal(cx, &mut doc, actor, sender)?;
    store_doc(cx, Some(&before), &mut doc);
    count_use(cx, link, &v.email, &doc.id);
    let signing_url = notify::recipient_url(cx, &doc.id, &doc.recipients[0]).unwrap_or_default();
    Ok(Made {
        document_id: doc.id,
        signing_url,
    })
}
