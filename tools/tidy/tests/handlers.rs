//! Handlers translate, the domain decides (ARCHITECTURE.md, "Layers"; issue 49): a handler
//! parses the request, calls a domain verb and shapes the answer; reading and writing the
//! store is the domain's. No handler makes a store call (`esign_tidy::store_calls`): the
//! list of exceptions, 145 calls in 30 files when the rule came, has been empty since
//! issue 49 moved them into domain verbs. A new one fails here; move it into a verb.
//!
//! `ESIGN_TIDY_ROOT=/path/to/checkout cargo test -p esign-tidy` checks another checkout.

use esign_tidy::shrinking::{Shrinking, per_file, root};
use esign_tidy::store_calls;
use std::collections::BTreeMap;

/// Today's handlers with store calls (under `engine/src/handlers/`), and how many.
const STORE_CALLS_LEFT: &[(&str, usize)] = &[];

/// What this list counts and says.
const LIST: Shrinking = Shrinking {
    counts: "store calls",
    instead: "a handler asks a domain verb, which reads and writes the store",
    list_in: "tools/tidy/tests/handlers.rs",
};

#[test]
fn handlers_reach_the_store_no_more_than_listed() {
    let found = per_file(&root().join("engine/src/handlers"), store_calls);
    let wrong = LIST.problems(&found, STORE_CALLS_LEFT);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_check_can_fail() {
    let found: BTreeMap<String, usize> = [("a.rs".to_string(), 2), ("new.rs".to_string(), 1)]
        .into_iter()
        .collect();
    let wrong = LIST.problems(&found, &[("a.rs", 3), ("gone.rs", 1)]);
    assert_eq!(wrong.len(), 3, "{wrong:#?}");
    assert!(wrong[0].contains("a.rs: 2 store calls, the list says 3"));
    assert!(wrong[1].contains("new.rs: 1 store calls, 0 allowed"));
    assert!(wrong[2].contains("gone.rs is gone"));
}
