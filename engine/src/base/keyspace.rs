//! Where every key of the engine lives: one constant per key *family*, the first part
//! of a key, and [`FAMILIES`], the table of them all.
//!
//! A key is text, its parts joined by `/` (`util::key(&[DOC, id])` is `doc/{id}`):
//! the family, then ids and sort parts. In the layouts below `{x}` is one part, `{t:x}`
//! a time in milliseconds as 16 hex digits (`document::hex`), so keys sort by time.
//! The family's name is spelled only here: code builds keys from these constants
//! (`key(&[DLOG, …])`, `format!("{DLOG}/{doc_id}/")`), and `tools/tidy/tests/keyspace.rs`
//! fails on a family spelled as a literal anywhere else in `engine/src`. A changed
//! byte in a key loses the data stored under the old one: a family is never renamed.
//!
//! The host stores every engine key under `d/` (`host/src/host_tables/keys.rs`), which the
//! engine never sees, beside its own tables (`e/` events, `j/` jobs, `m/` mail, `b/`
//! blobs, ...). On PostgreSQL the families marked [`Family::own_table`] (those a
//! document's calls write or look for) each get a table of their own, the rest share
//! `esign_kv` (`host/src/store/postgres.rs` `FAMILIES`, which a host test holds equal
//! to this list's): a new per-document family needs a schema step there.

// ---- A document and what belongs to it: each in a table of its own on PostgreSQL.

/// `doc/{id}` → a document record (`document::Document`, with its extensions);
/// `document::store_doc` is its one writer.
pub const DOC: &str = "doc";
/// `duid/{unique_id}` → a document's numeric `unique_id`, taken (`handlers/documents/create.rs`).
pub const DUID: &str = "duid";
/// `dx/{entity}/{scope}/{tag}/{sort}/{sort key}/{doc}` → nothing: the list index
/// (`document::index_keys`; scope `a` or `u{user}`, tag a status, `vod` or
/// `f{folder}`, sort a letter of `document::SortKey`).
pub const DX: &str = "dx";
/// `dext/{entity}/{external_id}/{t:x created}/{doc}` → nothing: lookup by `external_id`.
pub const DEXT: &str = "dext";
/// `dcli/{entity}/{external_client_id}/{t:x created}/{doc}` → nothing: lookup by
/// `external_client_id`.
pub const DCLI: &str = "dcli";
/// `drcp/{entity}/{recipient email}/{t:x created}/{doc}` → nothing: lookup by a
/// recipient's normalized email.
pub const DRCP: &str = "drcp";
/// `dexp/{entity}/{t:x expires}/{doc}` → nothing: the active documents by expiry.
pub const DEXP: &str = "dexp";
/// `dlog/{doc}/{t:x at}{seq: 8 hex}` → an audit trail entry, hash-chained
/// (`trail::log`, its one writer).
pub const DLOG: &str = "dlog";
/// `dcom/{doc}/{t:x at}{id}` → a comment (`document::Comment`).
pub const DCOM: &str = "dcom";
/// `dfld/{doc}` → the document's fields (`fields::Field`s).
pub const DFLD: &str = "dfld";
/// `dsig/{doc}/{recipient}` → what a signer gave (`signatures::Signature`).
pub const DSIG: &str = "dsig";
/// `dseal/{doc}` → the sealed file's record (`evidence::Seal`).
pub const DSEAL: &str = "dseal";
/// `dpimg/{doc}` → the page images of the final PDF (`pages::PageImages`).
pub const DPIMG: &str = "dpimg";
/// `dpv/{doc}` → the time recipients spent on each page (`page_views::PageViews`).
pub const DPV: &str = "dpv";
/// `dcd/{doc}/{id}` → a custom data value of a document (`custom_data::Value`).
pub const DCD: &str = "dcd";
/// `ddl/{SHA-256 of the secret}` → a ten-minute download link (`downloads::Link`).
pub const DDL: &str = "ddl";
/// `rlink/{SHA-256 of the secret}` → `{doc}/{recipient}`: a recipient's signing link.
pub const RLINK: &str = "rlink";
/// `rver/{doc}/{recipient}` → a recipient's identity checks (`identity::Checks`).
pub const RVER: &str = "rver";
/// `prev/{owner}` → the page pictures of a draft or template (`previews::Previews`).
pub const PREV: &str = "prev";
/// `bref/{blob}/{owner}` → nothing: `owner` (`doc:{id}`, `upload:{id}`, ...) holds
/// `blob`; the last release deletes it (`blobs`).
pub const BREF: &str = "bref";
/// `sub-ent/{entity}/{event}/{subscription}` → nothing: who gets an event, read at
/// every emit (`webhooks::emit`).
pub const SUB_ENT: &str = "sub-ent";

// ---- Recipients: per document, in `esign_kv`.

/// `rrate/{doc}/{recipient}` → a link's rate counter (`links`).
pub const RRATE: &str = "rrate";
/// `reid/{SHA-256 of the session}` → an eID check under way (`identity`).
pub const REID: &str = "reid";

// ---- Public signing links (`public_links`), in `esign_kv`.

/// `plink/{id}` → a published link (`public_links::PublicLink`).
pub const PLINK: &str = "plink";
/// `pslug/{slug}` → the id of the working link behind `/p/{slug}`.
pub const PSLUG: &str = "pslug";
/// `eplink/{entity}/{t:x created}/{id}` → nothing: an entity's links.
pub const EPLINK: &str = "eplink";
/// `pluse/{link}/{email}` → the document an email made through a one-per-email link.
pub const PLUSE: &str = "pluse";
/// `pcode/{link}/{SHA-256 of the email}` → an emailed code (salt, hash, until, tries).
pub const PCODE: &str = "pcode";
/// `prate/{SHA-256 of the source}` → a source's visits this minute.
pub const PRATE: &str = "prate";

// ---- Bulk sends (`bulk_sends`), in `esign_kv`.

/// `bulk/{id}` → a bulk send's batch (`bulk_sends::Batch`).
pub const BULK: &str = "bulk";
/// `bulkrow/{batch}/{n: 8 digits}` → a row of a batch: waiting, sent or failed.
pub const BULK_ROW: &str = "bulkrow";
/// `bulkkey/{user}/{SHA-256 of the Idempotency-Key}` → the batch that key started.
pub const BULK_KEY: &str = "bulkkey";
/// `bulkerr/{batch}/{n: 8 digits}` → why a row failed (read while the batch runs).
pub const BULK_ERR: &str = "bulkerr";

// ---- Reminder schedules (`reminder_schedules`), in `esign_kv`.

/// `rsch/{entity}` → an entity's reminder schedule.
pub const RSCH: &str = "rsch";
/// `drsch/{doc}` → a document's own reminder schedule and the rounds sent.
pub const DRSCH: &str = "drsch";

// ---- Accounts.

/// `ent/{id}` → an entity (`accounts::Entity`).
pub const ENT: &str = "ent";
/// `ent-mem/{entity}/{user}` → nothing: the members of an entity.
pub const ENT_MEM: &str = "ent-mem";
/// `ent-texts/{entity}` → the entity's default mail texts (`mail_templates::EntityTexts`).
pub const ENT_TEXTS: &str = "ent-texts";
/// `usr/{id}` → a user (`accounts::User`).
pub const USR: &str = "usr";
/// `usr-email/{normalized email}` → the id of the user with that email.
pub const USR_EMAIL: &str = "usr-email";
/// `usr-prof/{user}` → a user's mobile and title (`accounts::UserProfile`).
pub const USR_PROF: &str = "usr-prof";
/// `mem/{user}/{entity}` → a membership (`accounts::Membership`).
pub const MEM: &str = "mem";
/// `team/{entity}/{team}/{user}` → nothing: the members of a team.
pub const TEAM: &str = "team";
/// `inv/{user}/{entity}` → a pending invitation (`invitations::Invitation`).
pub const INV: &str = "inv";
/// `tok/{SHA-256 of the token}` → an API token (`accounts::Token`).
pub const TOK: &str = "tok";
/// `lfail/e/{SHA-256 of the email}/{source}`, `lfail/s/{source}`, `lfail/all` → failed
/// logins in a window (`logins`).
pub const LFAIL: &str = "lfail";
/// `lfailx/{expires ms: 20 digits}/{lfail key}` → nothing: when an `lfail/` record goes.
pub const LFAILX: &str = "lfailx";
/// `cfg/signup` → whether anyone may register (`signup::Config`).
pub const CFG: &str = "cfg";
/// `sgup/s/{source}`, `sgup/all` → sign-ups in the hour (`signup`).
pub const SGUP: &str = "sgup";

// ---- Agents: OAuth 2.1 and MCP.

/// `oac/{SHA-256 of the client id}` → an OAuth client (`oauth::Client`).
pub const OAC: &str = "oac";
/// `oaf/{id}` → a grant, the family of its tokens (`oauth::Family`).
pub const OAF: &str = "oaf";
/// `oafu/{user}/{grant}` → nothing: a user's grants.
pub const OAFU: &str = "oafu";
/// `oat/{SHA-256 of the token}` → an OAuth access token (`oauth::Grant`).
pub const OAT: &str = "oat";
/// `oart/{SHA-256 of the token}` → an OAuth refresh token (`oauth::Grant`).
pub const OART: &str = "oart";
/// `oacode/{SHA-256 of the code}` → an authorization code (`oauth::Code`).
pub const OACODE: &str = "oacode";
/// `oareq/{SHA-256 of the cookie}` → a pending `/authorize` (`handlers/agents/authorize.rs`).
pub const OAREQ: &str = "oareq";
/// `mcps/{SHA-256 of the session id}` → an MCP session (`handlers/agents/mcp.rs`).
pub const MCPS: &str = "mcps";

// ---- Webhooks.

/// `sub/{id}` → a subscription (`webhooks::Subscription`).
pub const SUB: &str = "sub";
/// `sub-err/{entity}/{t:x failed}{id}` → a dead letter (`webhooks::DeadLetter`).
pub const SUB_ERR: &str = "sub-err";
/// `sub-errb/{entity}/{t:x failed}{id}` → a dead letter's body, apart from it.
pub const SUB_ERRB: &str = "sub-errb";

// ---- Files, templates and an entity's other resources.

/// `upl/{id}` → an upload (`uploads::Upload`).
pub const UPL: &str = "upl";
/// `tpl/{id}` → a template (`templates::Template`, with its extension).
pub const TPL: &str = "tpl";
/// `tpl-ent/{entity}/{t:x created}{id}` → nothing: an entity's templates.
pub const TPL_ENT: &str = "tpl-ent";
/// `tfld/{template}` → a template's fields by page (`templates::PageFields`).
pub const TFLD: &str = "tfld";
/// `pubf/{SHA-256 of the secret}` → a blob served at `/v1/files/{secret}`
/// (`public_files::PublicFile`).
pub const PUBF: &str = "pubf";
/// `brand/{entity}` → an entity's colour and logo (`branding::Branding`).
pub const BRAND: &str = "brand";
/// `ccp/{entity}` → what the entity's parties get when a document is completed
/// (`completion::Copies`).
pub const CCP: &str = "ccp";
/// `ccpk/{entity}` → the kinds of party whose completion copies differ from `ccp`
/// (`completion::ByParty`).
pub const CCPK: &str = "ccpk";
/// `embo/{entity}` → the origins that may frame the entity's signing pages
/// (`embedding::Origins`).
pub const EMBO: &str = "embo";
/// `ecd/{entity}/{key}` → a custom data property (`custom_data::Property`).
pub const ECD: &str = "ecd";
/// `fold/{entity}/{id}` → a folder (`folders::Folder`).
pub const FOLD: &str = "fold";
/// `ctc/{entity}/{id}` → a contact (`contacts::Contact`).
pub const CTC: &str = "ctc";
/// `ctc-n/{entity}` → how many contacts the entity has.
pub const CTC_N: &str = "ctc-n";
/// `emt/{entity}/{id}` → an email template (`mail_templates::EmailTemplate`).
pub const EMT: &str = "emt";
/// `cmt/{entity}/{id}` → a communication template (`mail_templates::CommunicationTemplate`).
pub const CMT: &str = "cmt";
/// `att/{entity}/{id}` → a library attachment (`attachments::LibraryAttachment`).
pub const ATT: &str = "att";
/// `vid/{entity}/{id}` → a video (`videos::Video`).
pub const VID: &str = "vid";
/// `prod/{entity}/{t:x created}{id}` → a product (`handlers/products.rs`).
pub const PROD: &str = "prod";

/// One key family: its prefix, where PostgreSQL keeps it, what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Family {
    /// The key's first part, without the `/`.
    pub prefix: &'static str,
    /// A per-document family (a document's calls write or look for its keys), kept in
    /// a PostgreSQL table of its own (`host/src/store/postgres.rs` `FAMILIES`).
    pub own_table: bool,
    /// What a key of the family holds, in a line.
    pub holds: &'static str,
}

const fn own(prefix: &'static str, holds: &'static str) -> Family {
    Family {
        prefix,
        own_table: true,
        holds,
    }
}

const fn kv(prefix: &'static str, holds: &'static str) -> Family {
    Family {
        prefix,
        own_table: false,
        holds,
    }
}

/// Every key family of the engine. `own` rows have a PostgreSQL table of their own;
/// `kv` rows share `esign_kv`.
pub const FAMILIES: &[Family] = &[
    own(DOC, "a document"),
    own(DUID, "a document's unique_id, taken"),
    own(DX, "the document list index"),
    own(DEXT, "documents by external_id"),
    own(DCLI, "documents by external_client_id"),
    own(DRCP, "documents by recipient email"),
    own(DEXP, "active documents by expiry"),
    own(DLOG, "a document's audit trail"),
    own(DCOM, "a document's comments"),
    own(DFLD, "a document's fields"),
    own(DSIG, "a document's signatures"),
    own(DSEAL, "a document's seal"),
    own(DPIMG, "a document's page images"),
    own(DPV, "a document's page view times"),
    own(DCD, "a document's custom data values"),
    own(DDL, "ten-minute download links"),
    own(RLINK, "recipients' signing links"),
    own(RVER, "recipients' identity checks"),
    own(PREV, "a draft's or template's page pictures"),
    own(BREF, "blob references"),
    own(SUB_ENT, "the subscriptions of an entity's event"),
    kv(RRATE, "a link's rate counter"),
    kv(PLINK, "public signing links"),
    kv(PSLUG, "public links by slug"),
    kv(EPLINK, "an entity's public links"),
    kv(PLUSE, "a public link's emails used"),
    kv(PCODE, "a public link's emailed codes"),
    kv(PRATE, "public link visits per source"),
    kv(BULK, "bulk sends"),
    kv(BULK_ROW, "a bulk send's rows"),
    kv(BULK_KEY, "bulk sends by idempotency key"),
    kv(BULK_ERR, "a bulk send's failed rows"),
    kv(RSCH, "an entity's reminder schedule"),
    kv(DRSCH, "a document's reminder schedule and rounds"),
    kv(REID, "eID checks under way"),
    kv(ENT, "entities"),
    kv(ENT_MEM, "an entity's members"),
    kv(ENT_TEXTS, "an entity's default mail texts"),
    kv(USR, "users"),
    kv(USR_EMAIL, "users by email"),
    kv(USR_PROF, "a user's mobile and title"),
    kv(MEM, "memberships"),
    kv(TEAM, "a team's members"),
    kv(INV, "pending invitations"),
    kv(TOK, "API tokens"),
    kv(LFAIL, "failed logins"),
    kv(LFAILX, "failed logins by expiry"),
    kv(CFG, "the sign-up switch"),
    kv(SGUP, "sign-ups per hour"),
    kv(OAC, "OAuth clients"),
    kv(OAF, "OAuth grants"),
    kv(OAFU, "a user's OAuth grants"),
    kv(OAT, "OAuth access tokens"),
    kv(OART, "OAuth refresh tokens"),
    kv(OACODE, "OAuth authorization codes"),
    kv(OAREQ, "pending OAuth authorizations"),
    kv(MCPS, "MCP sessions"),
    kv(SUB, "webhook subscriptions"),
    kv(SUB_ERR, "webhook dead letters"),
    kv(SUB_ERRB, "webhook dead letters' bodies"),
    kv(UPL, "uploads"),
    kv(TPL, "templates"),
    kv(TPL_ENT, "an entity's templates"),
    kv(TFLD, "a template's fields"),
    kv(PUBF, "public files"),
    kv(BRAND, "an entity's branding"),
    kv(CCP, "an entity's choice of completion copies"),
    kv(CCPK, "an entity's completion copies per kind of party"),
    kv(EMBO, "the origins that may frame an entity's signing pages"),
    kv(ECD, "an entity's custom data properties"),
    kv(FOLD, "folders"),
    kv(CTC, "contacts"),
    kv(CTC_N, "an entity's number of contacts"),
    kv(EMT, "email templates"),
    kv(CMT, "communication templates"),
    kv(ATT, "library attachments"),
    kv(VID, "videos"),
    kv(PROD, "products"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::document::{self, SortKey};
    use crate::domain::{accounts, attachments, contacts, custom_data, downloads};
    use crate::domain::{evidence, folders, identity, invitations, mail_templates};
    use crate::domain::{oauth, templates, uploads, videos, webhooks};

    #[test]
    fn families_are_distinct_and_simple() {
        for (i, f) in FAMILIES.iter().enumerate() {
            assert!(
                f.prefix
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{}",
                f.prefix
            );
            assert!(
                FAMILIES[..i].iter().all(|g| g.prefix != f.prefix),
                "{} twice",
                f.prefix
            );
        }
    }

    #[test]
    fn every_constant_is_listed() {
        let source = include_str!("keyspace.rs");
        let consts: Vec<&str> = source
            .lines()
            .filter_map(|l| l.strip_prefix("pub const "))
            .filter_map(|l| l.split_once(": &str = \""))
            .map(|(_, v)| v.trim_end_matches("\";"))
            .collect();
        assert_eq!(consts.len(), FAMILIES.len());
        for c in consts {
            assert!(
                FAMILIES.iter().any(|f| f.prefix == c),
                "{c} not in FAMILIES"
            );
        }
    }

    /// The keys the domain builds, byte for byte as they were before the constants: a
    /// changed byte would lose the data stored under the old key.
    #[test]
    fn keys_keep_their_layout() {
        let hash = crate::base::util::sha256_hex(b"c");
        let cases: Vec<(Vec<u8>, String)> = vec![
            (document::doc_key("d"), "doc/d".into()),
            (document::link_key("h"), "rlink/h".into()),
            (document::unique_id_key(42), "duid/42".into()),
            (document::log_prefix("d").0, "dlog/d/".into()),
            (
                document::log_key("d", 255, 7),
                "dlog/d/00000000000000ff00000007".into(),
            ),
            (document::comments_prefix("d").0, "dcom/d/".into()),
            (
                document::comment_key("d", 255, "c"),
                "dcom/d/00000000000000ffc".into(),
            ),
            (
                document::index_prefix("e", "a", "sent", SortKey::Name).into_bytes(),
                "dx/e/a/sent/n/".into(),
            ),
            (accounts::user_profile_key("u"), "usr-prof/u".into()),
            (accounts::entity_key("e"), "ent/e".into()),
            (accounts::user_key("u"), "usr/u".into()),
            (accounts::user_email_key("a@b.c"), "usr-email/a@b.c".into()),
            (accounts::membership_key("u", "e"), "mem/u/e".into()),
            (accounts::memberships_of("u").0, "mem/u/".into()),
            (accounts::entity_member_key("e", "u"), "ent-mem/e/u".into()),
            (accounts::token_key("h"), "tok/h".into()),
            (accounts::team_key("e", "t", "u"), "team/e/t/u".into()),
            (attachments::key("e", "i"), "att/e/i".into()),
            (contacts::key("e", "i"), "ctc/e/i".into()),
            (custom_data::property_key("e", "k"), "ecd/e/k".into()),
            (custom_data::value_key("d", "i"), "dcd/d/i".into()),
            (custom_data::values_prefix("d").0, "dcd/d/".into()),
            (downloads::link_key("h"), "ddl/h".into()),
            (evidence::seal_key("d"), "dseal/d".into()),
            (folders::key("e", "i"), "fold/e/i".into()),
            (identity::key("d", "r"), "rver/d/r".into()),
            (identity::eid_key("h"), "reid/h".into()),
            (invitations::invitation_key("u", "e"), "inv/u/e".into()),
            (mail_templates::email_key("e", "i"), "emt/e/i".into()),
            (
                mail_templates::communication_key("e", "i"),
                "cmt/e/i".into(),
            ),
            (mail_templates::entity_texts_key("e"), "ent-texts/e".into()),
            (oauth::code_key("h"), "oacode/h".into()),
            (oauth::client_key("c"), format!("oac/{hash}")),
            (oauth::family_key("f"), "oaf/f".into()),
            (oauth::user_family_key("u", "f"), "oafu/u/f".into()),
            (oauth::access_key("h"), "oat/h".into()),
            (oauth::refresh_key("h"), "oart/h".into()),
            (templates::template_key("t"), "tpl/t".into()),
            (
                templates::entity_index_key("e", 255, "t"),
                "tpl-ent/e/00000000000000fft".into(),
            ),
            (templates::page_fields_key("t"), "tfld/t".into()),
            (uploads::upload_key("u"), "upl/u".into()),
            (videos::key("e", "i"), "vid/e/i".into()),
            (webhooks::dead_letter_key("e", "x"), "sub-err/e/x".into()),
            (webhooks::dead_body_key("e", "x"), "sub-errb/e/x".into()),
            (webhooks::sub_key("s"), "sub/s".into()),
            (webhooks::fanout_key("e", "k", "s"), "sub-ent/e/k/s".into()),
        ];
        for (built, want) in cases {
            assert_eq!(String::from_utf8(built).unwrap(), want);
        }
    }
}
