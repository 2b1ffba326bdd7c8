//! Handlers never match on statuses (issue 49 item 1): a handler asks the state machines
//! (`engine/src/domain/document_states.rs` for a document, `recipient_states.rs` for a
//! recipient: `may`, `allowed`, `apply`) whether a move may happen and where it leads. No
//! handler names a status (`esign_tidy::status_refs`: `Status::…`, `RecipientStatus::…`,
//! any `…Status::`): the list of exceptions, 127 references when the rule came, has been
//! empty since issue 49. A new one fails here; ask the machine, or give it the row.
//!
//! `ESIGN_TIDY_ROOT=/path/to/checkout cargo test -p esign-tidy` checks another checkout.

use esign_tidy::shrinking::{Shrinking, per_file, root};
use esign_tidy::status_refs;
use std::collections::BTreeMap;

/// Today's handlers that name statuses (under `engine/src/handlers/`), and how often.
const STATUS_REFS_LEFT: &[(&str, usize)] = &[];

/// What this list counts and says.
const LIST: Shrinking = Shrinking {
    counts: "status references",
    instead: "a handler asks the state machines (domain/document_states.rs, domain/recipient_states.rs), which know the statuses",
    list_in: "tools/tidy/tests/statuses.rs",
};

#[test]
fn handlers_name_statuses_no_more_than_listed() {
    let found = per_file(&root().join("engine/src/handlers"), status_refs);
    let wrong = LIST.problems(&found, STATUS_REFS_LEFT);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_check_can_fail() {
    let found: BTreeMap<String, usize> = [("a.rs".to_string(), 2), ("new.rs".to_string(), 1)]
        .into_iter()
        .collect();
    let wrong = LIST.problems(&found, &[("a.rs", 3), ("gone.rs", 1)]);
    assert_eq!(wrong.len(), 3, "{wrong:#?}");
    assert!(wrong[0].contains("a.rs: 2 status references, the list says 3"));
    assert!(wrong[1].contains("new.rs: 1 status references, 0 allowed"));
    assert!(wrong[2].contains("gone.rs is gone"));
    let src = "use x::Status; // Status::Sent\nlet s = \"Status::Draft\"; a == document::Status::Lost || RecipientStatus::Added;";
    assert_eq!(status_refs(src), 2);
}
