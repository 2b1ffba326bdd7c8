//! Who may change what: one row per state-changing route family, as
//! `docs/permissions.md` tables it, called by each kind of caller in a fresh world:
//! the resource's owner (a plain user of team t1), an admin, a manager of the owner's
//! team, a manager of another team, another plain user of the owner's team, and the
//! admin of another entity. Each row states the exact status every caller gets.
//!
//! The last test keeps the table whole: every route of `ROUTES` that changes state
//! (`PUT`, `DELETE`, or `POST` on a path naming an object) has a row here or is listed
//! with the reason it needs none.

mod common;

use common::*;
use esign_engine::memory::MemoryPlatform;
use esign_engine::router::templates;
use esign_engine::{JobOutcome, WorkOrder};
use serde_json::{Value, json};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Actor {
    Owner,
    Admin,
    TeamManager,
    OtherManager,
    TeamUser,
    OtherTenant,
}

const ACTORS: [Actor; 6] = [
    Actor::Owner,
    Actor::Admin,
    Actor::TeamManager,
    Actor::OtherManager,
    Actor::TeamUser,
    Actor::OtherTenant,
];

/// A world and the ids of the owner's (and the entity's) objects.
struct World {
    p: MemoryPlatform,
    tokens: Vec<(Actor, String)>,
    ids: Vec<(&'static str, String)>,
}

impl World {
    fn token(&self, actor: Actor) -> String {
        self.tokens
            .iter()
            .find(|(a, _)| *a == actor)
            .unwrap()
            .1
            .clone()
    }

    /// `path` with each `{name}` replaced by the id of that object.
    fn path(&self, path: &str) -> String {
        let mut out = path.to_string();
        for (name, id) in &self.ids {
            out = out.replace(&format!("{{{name}}}"), id);
        }
        out
    }
}

/// A template from a 2-page PDF with a signer role, imported; its id.
fn ready_template(p: &mut MemoryPlatform, t: &str) -> String {
    let (s, b) = api(
        p,
        t,
        "POST",
        "/v1/templates",
        Some(
            json!({"name": "Tpl", "file_content": "JVBERi0xLjQKZmFrZQ==",
                    "file_name": "t.pdf",
                    "roles": [{"role_name": "Client", "role": "signer"}]}),
        ),
    );
    assert_eq!(s, 200, "{b}");
    let job = take_jobs(p, "template.import").remove(0);
    let Some(WorkOrder::Import(sources)) = &job.work else {
        panic!("an import carries its sources")
    };
    let blob = sources[0].blob.clone().unwrap();
    assert_eq!(
        run(p, &job, Some(imported_pages(&blob, 2))),
        JobOutcome::Done
    );
    b["id"].as_str().unwrap().to_string()
}

fn id_of(v: &Value) -> String {
    v["id"]
        .as_str()
        .or(v["contact_id"].as_str())
        .unwrap_or_else(|| panic!("no id in {v}"))
        .to_string()
}

/// The admin's entity with an owner (user, team t1), a manager of t1, a manager of t2,
/// another user of t1, and another entity's admin; the owner's draft, ready template,
/// folder, contact and subscription; the admin's mail templates and entity property.
fn world() -> World {
    let mut p = bootstrapped();
    let admin = token(&mut p);
    let entity = entity_of(&mut p, &admin);
    let mut tokens = vec![(Actor::Admin, admin.clone())];
    let mut ids = Vec::new();
    for (actor, email, role, team) in [
        (Actor::Owner, "owner@x.se", "user", "t1"),
        (Actor::TeamManager, "manager@x.se", "manager", "t1"),
        (Actor::OtherManager, "other@x.se", "manager", "t2"),
        (Actor::TeamUser, "peer@x.se", "user", "t1"),
    ] {
        let user = add_member(&mut p, email, &entity, role, Some(team));
        if actor == Actor::Owner {
            ids.push(("owner", user));
        } else if actor == Actor::TeamUser {
            ids.push(("peer", user));
        }
        tokens.push((actor, login(&mut p, email, None)));
    }
    let other = new_entity(&mut p, "Other", json!({}));
    add_member(&mut p, "b@y.se", &other, "admin", None);
    tokens.push((Actor::OtherTenant, login(&mut p, "b@y.se", None)));

    let owner = tokens[1].1.clone();
    let (doc, _) = draft(
        &mut p,
        &owner,
        json!([{"email": "r@x.se", "first_name": "R", "last_name": "S"}]),
        json!({}),
    );
    ids.push(("doc", doc));
    let tpl = ready_template(&mut p, &owner);
    let (s, link) = api(
        &mut p,
        &owner,
        "POST",
        &format!("/v1/templates/{tpl}/public-links"),
        Some(json!({})),
    );
    assert_eq!(s, 201, "{link}");
    ids.push(("tpl", tpl));
    ids.push(("plink", id_of(&link)));
    let mut made = |p: &mut MemoryPlatform, t: &str, name, path: &str, b: Value| {
        let (s, v) = api(p, t, "POST", path, Some(b));
        assert_eq!(s, 200, "{path}: {v}");
        ids.push((name, id_of(&v)));
    };
    made(
        &mut p,
        &owner,
        "folder",
        "/v1/folders",
        json!({"name": "Mine", "type": "archive"}),
    );
    made(
        &mut p,
        &owner,
        "contact",
        "/v1/contacts",
        json!({"first_name": "Ada", "email": "ada@c.se"}),
    );
    made(
        &mut p,
        &owner,
        "sub",
        "/v1/subscriptions",
        json!({"event": "document.sent", "target_url": "https://h.example/a"}),
    );
    made(
        &mut p,
        &admin,
        "emt",
        "/v1/email/templates",
        json!({"name": "Send", "code": "Hello", "type": "sendout"}),
    );
    made(
        &mut p,
        &admin,
        "cmt",
        "/v1/communication-templates",
        json!({"name": "Comm", "language": "en"}),
    );
    let (s, v) = api(
        &mut p,
        &admin,
        "POST",
        "/v1/custom-data/entity",
        Some(json!({"key": "crm", "label": "CRM", "value_type": "string"})),
    );
    assert_eq!(s, 200, "{v}");
    World { p, tokens, ids }
}

/// One row: a route, a body, and what each of [`ACTORS`] gets (`None`: the row does
/// not apply to that caller).
struct Row {
    method: &'static str,
    template: &'static str,
    path: &'static str,
    body: Option<Value>,
    want: [Option<u16>; 6],
}

fn row(
    method: &'static str,
    template: &'static str,
    path: &'static str,
    body: Option<Value>,
    want: [u16; 6],
) -> Row {
    Row {
        method,
        template,
        path,
        body,
        want: want.map(|w| (w != 0).then_some(w)),
    }
}

/// Runs each row for each caller, in a fresh world each time; the failures.
fn check(rows: &[Row]) {
    let mut failures = Vec::new();
    for r in rows {
        for (i, actor) in ACTORS.iter().enumerate() {
            let Some(want) = r.want[i] else { continue };
            let mut w = world();
            let t = w.token(*actor);
            let path = w.path(r.path);
            let (status, answer) = api(&mut w.p, &t, r.method, &path, r.body.clone());
            if status != want {
                failures.push(format!(
                    "{actor:?} {} {}: want {want}, got {status} {answer}",
                    r.method, r.template
                ));
            } else if status >= 400 && !(answer["error"].is_string() && answer["status"] == status)
            {
                failures.push(format!(
                    "{actor:?} {} {}: {status} not in the error shape: {answer}",
                    r.method, r.template
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} calls broke the table:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// Columns: Owner, Admin, TeamManager, OtherManager, TeamUser, OtherTenant; 0 = n/a.

#[test]
fn templates_are_changed_by_their_owner_an_admin_or_the_owners_team_manager() {
    check(&[
        row(
            "PUT",
            "/v1/templates/{id}",
            "/v1/templates/{tpl}",
            Some(json!({"name": "Renamed"})),
            [204, 204, 204, 403, 403, 404],
        ),
        row(
            "PUT",
            "/v1/templates/{id}",
            "/v1/templates/{tpl}",
            Some(json!({"roles": [{"role_name": "Client", "role": "cc"}]})),
            [204, 204, 204, 403, 403, 404],
        ),
        // Publishing a template as a public link is changing it; its link is stopped
        // by the same people.
        row(
            "POST",
            "/v1/templates/{id}/public-links",
            "/v1/templates/{tpl}/public-links",
            Some(json!({})),
            [201, 201, 201, 403, 403, 404],
        ),
        // Any member sends the entity's templates, as they make documents from them.
        row(
            "POST",
            "/v1/templates/{id}/bulk-sends",
            "/v1/templates/{tpl}/bulk-sends",
            Some(json!({"rows": [{"email": "bulk@x.se"}]})),
            [202, 202, 202, 202, 202, 404],
        ),
        row(
            "DELETE",
            "/v1/public-links/{id}",
            "/v1/public-links/{plink}",
            None,
            [204, 204, 204, 403, 403, 404],
        ),
        // Deleting is the owner's or an admin's, as a document's delete step.
        row(
            "DELETE",
            "/v1/templates/{id}",
            "/v1/templates/{tpl}",
            None,
            [204, 204, 404, 404, 404, 404],
        ),
    ]);
}

#[test]
fn a_refused_template_edit_changes_nothing() {
    let mut w = world();
    let peer = w.token(Actor::TeamUser);
    let owner = w.token(Actor::Owner);
    let path = w.path("/v1/templates/{tpl}");
    let (s, e) = api(
        &mut w.p,
        &peer,
        "PUT",
        &path,
        Some(json!({"name": "Hijacked", "roles": [{"role_name": "Client", "role": "cc"}]})),
    );
    assert_eq!(
        (s, e["error"].as_str()),
        (403, Some("access_denied")),
        "{e}"
    );
    let (s, t) = api(&mut w.p, &owner, "GET", &path, None);
    assert_eq!(s, 200);
    assert_eq!(t["name"], "Tpl");
    assert_eq!(t["roles"][0]["role"], "signer");
}

#[test]
fn documents_are_changed_by_their_owner_an_admin_or_the_owners_team_manager() {
    // Every document route × role is `roles.rs`; these are the table's rows.
    check(&[
        row(
            "PUT",
            "/v1/documents/{id}",
            "/v1/documents/{doc}",
            Some(json!({"value": 5})),
            [204, 204, 204, 403, 403, 404],
        ),
        row(
            "DELETE",
            "/v1/documents/{id}",
            "/v1/documents/{doc}",
            None,
            [204, 204, 404, 404, 404, 404],
        ),
        row(
            "POST",
            "/v1/documents/{id}/custom-data",
            "/v1/documents/{doc}/custom-data",
            Some(json!({"property": {"key": "crm", "value": "ACME"}})),
            [200, 200, 200, 403, 403, 404],
        ),
    ]);
}

#[test]
fn folders_are_deleted_by_their_maker_or_an_admin() {
    check(&[row(
        "DELETE",
        "/v1/folders/{folder_id}",
        "/v1/folders/{folder}",
        None,
        [204, 204, 403, 403, 403, 404],
    )]);
}

#[test]
fn contacts_are_deleted_by_their_owner_an_admin_or_the_owners_team_manager() {
    check(&[row(
        "DELETE",
        "/v1/contacts/{contact_id}",
        "/v1/contacts/{contact}",
        None,
        [204, 204, 204, 403, 403, 404],
    )]);
}

#[test]
fn subscriptions_are_changed_by_their_owner_or_an_admin() {
    check(&[
        row(
            "DELETE",
            "/v1/subscriptions/{id}",
            "/v1/subscriptions/{sub}",
            None,
            [204, 204, 404, 404, 404, 404],
        ),
        row(
            "POST",
            "/v1/subscriptions/{id}/secret",
            "/v1/subscriptions/{sub}/secret",
            None,
            [200, 200, 404, 404, 404, 404],
        ),
    ]);
}

#[test]
fn mail_templates_are_changed_by_managers_and_admins() {
    check(&[
        row(
            "PUT",
            "/v1/email/templates/{email_template_id}",
            "/v1/email/templates/{emt}",
            Some(json!({"name": "Renamed"})),
            [403, 204, 204, 204, 403, 404],
        ),
        row(
            "PUT",
            "/v1/communication-templates/{communication_template_id}",
            "/v1/communication-templates/{cmt}",
            Some(json!({"name": "Renamed"})),
            [403, 204, 204, 204, 403, 404],
        ),
    ]);
}

#[test]
fn members_are_managed_by_managers_and_admins() {
    check(&[
        row(
            "PUT",
            "/v1/users/{user_id}",
            "/v1/users/{peer}",
            Some(json!({"team_id": "t2"})),
            [403, 200, 200, 200, 403, 404],
        ),
        row(
            "DELETE",
            "/v1/users/{user_id}",
            "/v1/users/{peer}",
            None,
            [403, 204, 204, 204, 0, 404],
        ),
        row(
            "POST",
            "/v1/users",
            "/v1/users",
            Some(json!({"email": "new@x.se", "first_name": "N", "last_name": "U"})),
            [403, 200, 200, 200, 403, 0],
        ),
    ]);
}

#[test]
fn the_entity_and_its_properties_are_changed_by_admins() {
    check(&[
        row(
            "PUT",
            "/v1/entity",
            "/v1/entity",
            Some(json!({"name": "Renamed"})),
            [403, 200, 403, 403, 403, 0],
        ),
        row(
            "POST",
            "/v1/custom-data/entity",
            "/v1/custom-data/entity",
            Some(json!({"key": "erp", "label": "ERP", "value_type": "string"})),
            [403, 200, 403, 403, 403, 0],
        ),
        row(
            "DELETE",
            "/v1/custom-data/entity/{key}",
            "/v1/custom-data/entity/crm",
            None,
            [403, 204, 403, 403, 403, 404],
        ),
    ]);
}

/// The routes that change state, and why some need no row: each `PUT` and `DELETE`
/// and each `POST` on a path naming an object must be a row of a test above (its
/// template is named in this file) or be listed here.
const NO_ROW: &[(&str, &str)] = &[
    (
        "/v1/documents/{id}/",
        "every document route is in roles.rs (5 roles × public/private)",
    ),
    (
        "/v1/users/me/connections/{client_id}",
        "the caller's own connections only",
    ),
    (
        "/v1/subscriptions/errors/{id}/retry",
        "owner or admin, as the subscription (tests/webhooks.rs)",
    ),
    ("/v1/recipient/", "the link's secret is the credential"),
    (
        "/p/",
        "a public link: anyone may visit it (public_links.rs)",
    ),
    ("/v1/eid/", "the session is the credential"),
    ("/mcp", "the agent's token; each tool is a REST call"),
    ("/authorize", "OAuth: the user signs in"),
];

#[test]
fn every_state_changing_route_has_a_row() {
    let me: String = include_str!("permissions.rs")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let mut missing = Vec::new();
    for (template, methods) in &templates() {
        let names_object = template.contains('{');
        for m in methods.iter() {
            let changes = matches!(*m, "PUT" | "DELETE") || (*m == "POST" && names_object);
            if !changes || NO_ROW.iter().any(|(p, _)| template.starts_with(p)) {
                continue;
            }
            if !me.contains(&format!("\"{m}\",\"{template}\"")) {
                missing.push(format!("{m} {template}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "state-changing routes without a row in permissions.rs (or docs/permissions.md):\n{}",
        missing.join("\n")
    );
}
