//! Handlers translate, the domain decides (ARCHITECTURE.md, "Layers"; issue 49): a handler
//! parses the request, calls a domain verb and shapes the answer; reading and writing the
//! store is the domain's. No handler makes a store call (`esign_tidy::store_calls`): the
//! list of exceptions, 145 calls in 30 files when the rule came, has been empty since
//! issue 49 moved them into domain verbs. A new one fails here; move it into a verb.
//!
//! `ESIGN_TIDY_ROOT=/path/to/checkout cargo test -p esign-tidy` checks another checkout.

use esign_tidy::shrinking::Shrinking;
use esign_tidy::store_calls;

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
    LIST.assert_holds("engine/src/handlers", store_calls, STORE_CALLS_LEFT);
}

#[test]
fn the_check_can_fail() {
    LIST.assert_can_fail();
}
