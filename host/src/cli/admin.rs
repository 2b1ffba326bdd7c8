//! `esign admin`: entities, users and memberships, through the engine's admin routes.

use crate::admin_channel::{self, AdminRequest, admin_call, admin_request};
use crate::calls::Dispatcher;
use crate::cli::engine::{EngineArgs, open_on, open_store};
use crate::runtime;
use crate::store::sled::SledBackend;
use anyhow::Context;
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// `esign admin`'s arguments. The store's options (`--data-dir`, `--store`, ...) are
/// accepted before the subcommand and after it (`esign admin restore --from B
/// --data-dir NEW`).
pub struct AdminArgs {
    pub engine: EngineArgs,
    pub command: AdminCommand,
}

/// What clap derives; [`AdminArgs`] makes its own options global.
#[derive(Args)]
struct Parsed {
    #[command(flatten)]
    engine: EngineArgs,
    #[command(subcommand)]
    command: AdminCommand,
}

impl clap::FromArgMatches for AdminArgs {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let Parsed { engine, command } = Parsed::from_arg_matches(matches)?;
        Ok(AdminArgs { engine, command })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Args for AdminArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        Parsed::augment_args(cmd).mut_args(|a| a.global(true))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Parsed::augment_args_for_update(cmd).mut_args(|a| a.global(true))
    }
}

#[derive(Subcommand)]
pub enum AdminCommand {
    /// Entities (accounts).
    #[command(subcommand)]
    Entity(EntityCommand),
    /// Users.
    #[command(subcommand)]
    User(UserCommand),
    /// Memberships of users in entities.
    #[command(subcommand)]
    Member(MemberCommand),
    /// Copies a stopped sled data directory into an empty PostgreSQL database, then
    /// checks the counts of rows per table.
    Migrate {
        /// The sled data directory (its server must be stopped).
        #[arg(long)]
        from: PathBuf,
        /// postgres://user:password@host/database (empty, or created when missing).
        #[arg(long)]
        to: String,
    },
    /// Writes a consistent copy of the store (records, files, queues, the generated
    /// signing key) into a new directory, while the server keeps serving.
    Backup {
        /// The directory to create, or a tar file (a name ending in .tar) to write;
        /// it must not exist.
        #[arg(long)]
        to: PathBuf,
    },
    /// Verifies the store (trails, index keys, sealed files, file references, queue
    /// rows) and lists what is wrong; exits non-zero when something is.
    Check {
        /// Fix what the records determine (index keys; files nothing uses). Evidence
        /// is never touched.
        #[arg(long)]
        repair: bool,
    },
    /// Turns self sign-up (`POST /v1/register`: a new user with a new entity) on or
    /// off; it is off until turned on.
    Signup {
        #[arg(value_parser = ["on", "off"])]
        state: String,
    },
    /// Restores a backup into --data-dir, which must be new or empty.
    Restore {
        /// The backup directory or .tar file (written by `esign admin backup`).
        #[arg(long)]
        from: PathBuf,
    },
}

#[derive(Args)]
pub struct EntityFlags {
    #[arg(long)]
    pub saml: Option<bool>,
    #[arg(long)]
    pub api_access: Option<bool>,
    #[arg(long)]
    pub subscription_active: Option<bool>,
    #[arg(long)]
    pub quarantined: Option<bool>,
    #[arg(long)]
    pub marked_for_deletion: Option<bool>,
    /// Only admins may delete documents.
    #[arg(long)]
    pub delete_admin_only: Option<bool>,
}

#[derive(Subcommand)]
pub enum EntityCommand {
    /// Add an entity (defaults: API access, active subscription, no SAML).
    Add {
        #[arg(long)]
        name: String,
        /// Parent entity id.
        #[arg(long)]
        parent: Option<String>,
        #[command(flatten)]
        flags: EntityFlags,
    },
    /// Change an entity's name or flags.
    Set {
        id: String,
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        flags: EntityFlags,
    },
    /// List entities.
    List,
}

/// Where a password comes from: standard input or a file keep it out of the process
/// list, which every user of the machine can read.
#[derive(Args)]
#[group(multiple = false)]
pub struct PasswordArgs {
    /// The password on the command line: visible to other users of the machine (`ps`)
    /// and kept in shell history; prefer --password-stdin or --password-file.
    #[arg(long)]
    password: Option<String>,
    /// Read the password from standard input (its first line).
    #[arg(long)]
    password_stdin: bool,
    /// Read the password from this file (its first line).
    #[arg(long, value_name = "FILE")]
    password_file: Option<std::path::PathBuf>,
}

impl PasswordArgs {
    /// The password given, if any.
    fn read(&self) -> anyhow::Result<Option<String>> {
        let first_line = |text: String| text.lines().next().unwrap_or("").to_string();
        if self.password_stdin {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .context("reading the password from standard input")?;
            return Ok(Some(first_line(text)));
        }
        if let Some(path) = &self.password_file {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading the password from {}", path.display()))?;
            return Ok(Some(first_line(text)));
        }
        Ok(self.password.clone())
    }
}

#[derive(Subcommand)]
pub enum UserCommand {
    /// Add a user.
    Add {
        #[arg(long)]
        email: String,
        #[command(flatten)]
        password: PasswordArgs,
        #[arg(long, default_value = "")]
        first_name: String,
        #[arg(long, default_value = "")]
        last_name: String,
        #[arg(long)]
        active: Option<bool>,
    },
    /// Change a user's password or activity.
    Set {
        id: String,
        #[command(flatten)]
        password: PasswordArgs,
        #[arg(long)]
        active: Option<bool>,
    },
    /// List users.
    List,
}

#[derive(Subcommand)]
pub enum MemberCommand {
    /// Add (or replace) a user's membership of an entity.
    Add {
        #[arg(long)]
        user: String,
        #[arg(long)]
        entity: String,
        /// user, manager or admin.
        #[arg(long, default_value = "user")]
        role: String,
        /// pending, active or none.
        #[arg(long, default_value = "active")]
        profile: String,
        #[arg(long)]
        team: Option<String>,
    },
}

pub fn entity_flags(body: &mut serde_json::Value, f: &EntityFlags) {
    let pairs = [
        ("saml", f.saml),
        ("api_access", f.api_access),
        ("subscription_active", f.subscription_active),
        ("quarantined", f.quarantined),
        ("marked_for_deletion", f.marked_for_deletion),
        ("delete_admin_only", f.delete_admin_only),
    ];
    for (name, value) in pairs {
        if let Some(v) = value {
            body[name] = v.into();
        }
    }
}

/// Runs an admin command: through the running server's channel when one answers
/// (`admin_channel`), else on the store opened here.
pub fn admin(args: AdminArgs) -> anyhow::Result<()> {
    match &args.command {
        AdminCommand::Migrate { from, to } => return crate::migrate::sled_to_postgres(from, to),
        AdminCommand::Backup { to } => return backup(&args.engine, to),
        AdminCommand::Check { repair } => return check(&args.engine, *repair),
        AdminCommand::Restore { from } => {
            let m = crate::backup::restore(from, &args.engine.data_dir)?;
            println!("{}", serde_json::to_string_pretty(&m)?);
            eprintln!(
                "restored {} into {}: start esign serve --data-dir on it",
                from.display(),
                args.engine.data_dir.display()
            );
            return Ok(());
        }
        _ => {}
    }
    let req = request_of(args.command)?;
    let body = match admin_channel::call(&args.engine.data_dir, &req)? {
        Some(answer) => admin_channel::body_of(answer.status, answer.body)?,
        None => {
            let d = open_here(&args.engine)?;
            let body = admin_call(&d, admin_request(&req.method, &req.path, req.body))?;
            d.store().flush()?;
            body
        }
    };
    println!("{}", serde_json::to_string_pretty(&body)?);
    Ok(())
}

/// The engine over the store opened here (no server holds it).
fn open_here(engine: &EngineArgs) -> anyhow::Result<Dispatcher> {
    let store = open_store(engine)?;
    let mut settings = runtime::default_settings();
    settings.link_key =
        runtime::link_key::load(&engine.data_dir, engine.link_key_file.as_deref(), &store)?;
    let (d, _) = open_on(engine, store, settings, None, String::new(), 4, None)?;
    Ok(d)
}

/// `esign admin backup`: by the running server (which holds the store), or on the
/// store opened here.
fn backup(engine: &EngineArgs, to: &std::path::Path) -> anyhow::Result<()> {
    // The server may run elsewhere: it gets an absolute path.
    let to = std::path::absolute(to)?;
    let started = std::time::Instant::now();
    let manifest = match admin_channel::backup(&engine.data_dir, &to)? {
        Some(answer) => admin_channel::body_of(answer.status, answer.body)?,
        None => {
            let store = open_store(engine)?;
            let m = crate::backup::write(&store, &engine.data_dir, &to)?;
            serde_json::to_value(m)?
        }
    };
    println!("{}", serde_json::to_string_pretty(&manifest)?);
    eprintln!(
        "backed up into {} in {:.1} s (writes waited {} ms)",
        to.display(),
        started.elapsed().as_secs_f64(),
        manifest["write_pause_ms"]
    );
    Ok(())
}

/// `esign admin check`: by the running server, or on the store opened here. Prints
/// what it looked at and every problem; fails when one remains.
fn check(engine: &EngineArgs, repair: bool) -> anyhow::Result<()> {
    let report = match admin_channel::check_remote(&engine.data_dir, repair)? {
        Some(answer) => {
            let body = admin_channel::body_of(answer.status, answer.body)?;
            serde_json::from_value(body)?
        }
        None => {
            // A mistyped directory is not an empty store that checks clean.
            if engine.store.is_none() && !SledBackend::exists_in(&engine.data_dir) {
                anyhow::bail!("no esign store in {}", engine.data_dir.display());
            }
            let d = open_here(engine)?;
            let report = admin_channel::check(&d, repair)?;
            d.store().flush()?;
            report
        }
    };
    print_report(&report);
    if !report.clean() {
        std::process::exit(1);
    }
    Ok(())
}

fn print_report(r: &crate::check::Report) {
    for fixed in &r.repaired {
        println!("repaired: {fixed}");
    }
    for problem in &r.problems {
        println!("problem: {problem}");
    }
    if r.more_problems > 0 {
        println!("... and {} more problems", r.more_problems);
    }
    let found = r.problems.len() as u64 + r.more_problems;
    println!(
        "checked {} documents, {} index keys, {} file references, {} files and {} queue rows in {:.1} s: {}",
        r.documents,
        r.index_keys,
        r.blob_references,
        r.blobs,
        r.queue_rows,
        r.seconds,
        match (found, r.repaired.len()) {
            (0, 0) => "no problems".to_string(),
            (0, n) => format!("{n} repaired, no problems left"),
            (p, n) => format!("{p} problems ({n} repaired)"),
        }
    );
}

/// The engine request an admin command makes.
fn request_of(command: AdminCommand) -> anyhow::Result<AdminRequest> {
    use serde_json::json;
    let request = |method: &str, path: &str, body: serde_json::Value| AdminRequest {
        method: method.into(),
        path: path.into(),
        body,
    };
    Ok(match command {
        AdminCommand::Entity(EntityCommand::Add {
            name,
            parent,
            flags,
        }) => {
            let mut body = json!({ "name": name, "parent_id": parent });
            entity_flags(&mut body, &flags);
            request("POST", "/admin/entities", body)
        }
        AdminCommand::Entity(EntityCommand::Set { id, name, flags }) => {
            let mut body = json!({ "name": name });
            entity_flags(&mut body, &flags);
            request("PATCH", &format!("/admin/entities/{id}"), body)
        }
        AdminCommand::Entity(EntityCommand::List) => request("GET", "/admin/entities", json!({})),
        AdminCommand::User(UserCommand::Add {
            email,
            password,
            first_name,
            last_name,
            active,
        }) => {
            let password = password.read()?.context(
                "give the password with --password-stdin, --password-file FILE or --password",
            )?;
            request(
                "POST",
                "/admin/users",
                json!({ "email": email, "password": password, "first_name": first_name,
                        "last_name": last_name, "active": active }),
            )
        }
        AdminCommand::User(UserCommand::Set {
            id,
            password,
            active,
        }) => request(
            "PATCH",
            &format!("/admin/users/{id}"),
            json!({ "password": password.read()?, "active": active }),
        ),
        AdminCommand::User(UserCommand::List) => request("GET", "/admin/users", json!({})),
        AdminCommand::Signup { state } => {
            request("POST", "/admin/signup", json!({ "enabled": state == "on" }))
        }
        AdminCommand::Migrate { .. }
        | AdminCommand::Backup { .. }
        | AdminCommand::Check { .. }
        | AdminCommand::Restore { .. } => {
            unreachable!("handled above")
        }
        AdminCommand::Member(MemberCommand::Add {
            user,
            entity,
            role,
            profile,
            team,
        }) => request(
            "POST",
            "/admin/memberships",
            json!({ "user_id": user, "entity_id": entity, "role": role,
                    "profile": profile, "team_id": team }),
        ),
    })
}
