//! Handlers never match on statuses (issue 49 item 1): a handler asks the state machines
//! (`engine/src/domain/document_states.rs` for a document, `recipient_states.rs` for a
//! recipient: `may`, `allowed`, `apply`) whether a move may happen and where it leads. No
//! handler names a status (`esign_tidy::status_refs`: `Status::…`, `RecipientStatus::…`,
//! any `…Status::`): the list of exceptions, 127 references when the rule came, has been
//! empty since issue 49. A new one fails here; ask the machine, or give it the row.
//!
//! `ESIGN_TIDY_ROOT=/path/to/checkout cargo test -p esign-tidy` checks another checkout.

use esign_tidy::shrinking::Shrinking;
use esign_tidy::status_refs;

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
    LIST.assert_holds("engine/src/handlers", status_refs, STATUS_REFS_LEFT);
}

#[test]
fn the_check_can_fail() {
    LIST.assert_can_fail();
    let src = "use x::Status; // Status::Sent\nlet s = \"Status::Draft\"; a == document::Status::Lost || RecipientStatus::Added;";
    assert_eq!(status_refs(src), 2);
}
