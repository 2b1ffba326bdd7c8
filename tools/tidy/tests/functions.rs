//! Short functions (issue 49): no function of the engine over 70 lines. Clippy measures
//! (`clippy::too_many_lines`, lines of code without blanks and comments), switched on for
//! the engine in `engine/src/lib.rs` with the threshold in `clippy.toml`, and CI denies
//! its warnings. The functions older than the rule carried
//! `#[expect(clippy::too_many_lines, reason = …)]`, which fails as soon as one is short
//! enough; this test holds their number to [`LONG_FUNCTIONS_LEFT`], which may only come
//! down, and is now 0: a function over 70 lines is split, not let through.
//!
//! `ESIGN_TIDY_ROOT=/path/to/checkout cargo test -p esign-tidy` checks another checkout.

use esign_tidy::shrinking::root;
use std::path::Path;

/// Functions of the engine over 70 lines, each marked: 35 when the rule came, 33 once the route table replaced the families' routers, 32 once the document state machine took the revision's status check, 31 once `/token`'s code exchange became a domain verb (`oauth::exchange_code`), 28 once the recipient state machine (`domain/recipient_states.rs`) took `act_verified`'s moves and the roster's checks, 26 once creating a template and an upload became domain verbs (`templates::create`, `uploads::create`), 21 once the agents' handlers called domain verbs (`/authorize`'s GET and POST, `/register`, and `/mcp`'s two revisions split), 16 once the list queries, pricing tables, contact list and agent tools were split, 13 once the document jobs became domain verbs (`imports::imported`, `rendered::rendered` and its seal), 8 once creating a document, forwarding it and signing it manually became domain verbs (`creation::create`, `sending::forward`, `manual_signing::manually_sign`) and the create's parsing was split, 5 once the recipients' handlers called domain verbs (`verify::start`, `verify::verify` and the recipient's view split), 3 once the reminders and the expiration became domain verbs (`sending::to_remind`, `schedule_reminder`, `change_expiration`) and `PUT /v1/documents/{id}` was split, 2 once the `sign` body's reading moved to the handlers (`handlers/recipients/sign_body.rs`; the signer's checks are `signatures::given`), 0 once the audit certificate (`evidence::certificate`) and the document's detail (`shapes::detail_json`) were split into named parts.
const LONG_FUNCTIONS_LEFT: usize = 0;

/// The marks under `dir`, and the ones without a reason (file paths).
fn marks(dir: &Path) -> (usize, Vec<String>) {
    let (mut n, mut bare) = (0, Vec::new());
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                // An attribute as rustfmt lays it out: on one line or several.
                for (at, _) in text.match_indices("#[expect(") {
                    let attr = &text[at..at + text[at..].find(")]").unwrap_or(0)];
                    if attr.contains("clippy::too_many_lines") {
                        n += 1;
                        if !attr.contains("reason") {
                            bare.push(path.display().to_string());
                        }
                    }
                }
            }
        }
    }
    (n, bare)
}

fn problems(root: &Path, left: usize) -> Vec<String> {
    let mut out = Vec::new();
    let lib = std::fs::read_to_string(root.join("engine/src/lib.rs")).unwrap();
    if !lib.contains("#![warn(clippy::too_many_lines)]") {
        out.push("engine/src/lib.rs no longer switches clippy::too_many_lines on".into());
    }
    let config = std::fs::read_to_string(root.join("clippy.toml")).unwrap_or_default();
    if !config.contains("too-many-lines-threshold = 70") {
        out.push("clippy.toml no longer sets too-many-lines-threshold = 70".into());
    }
    let (n, bare) = marks(&root.join("engine/src"));
    if n > left {
        out.push(format!(
            "{n} functions over 70 lines are let through, {left} allowed: split the new one (a domain verb and a thin handler)"
        ));
    } else if n < left {
        out.push(format!(
            "{n} functions over 70 lines are left: lower LONG_FUNCTIONS_LEFT in tools/tidy/tests/functions.rs to {n}"
        ));
    }
    out.extend(
        bare.into_iter()
            .map(|f| format!("{f}: a long function let through without a reason")),
    );
    out
}

#[test]
fn no_new_function_of_the_engine_is_over_70_lines() {
    let wrong = problems(&root(), LONG_FUNCTIONS_LEFT);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_check_can_fail() {
    let dir = std::env::temp_dir().join(format!("esign-tidy-functions-{}", std::process::id()));
    let src = dir.join("engine/src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("lib.rs"),
        "#[expect(\n    clippy::too_many_lines,\n    reason = \"old\"\n)]\nfn a() {}\n\
         #[expect(clippy::too_many_lines)]\nfn b() {}\n#[expect(dead_code)]\nfn c() {}\n",
    )
    .unwrap();
    let wrong = problems(&dir, 1);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(wrong.len(), 4, "{wrong:#?}");
    assert!(wrong[0].contains("switches clippy::too_many_lines on"));
    assert!(wrong[1].contains("too-many-lines-threshold"));
    assert!(wrong[2].contains("2 functions over 70 lines are let through, 1 allowed"));
    assert!(wrong[3].contains("without a reason"));
}
