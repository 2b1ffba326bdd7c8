//! Handlers translate (ARCHITECTURE.md, "Layers"; issue 49 item 2): a handler reads the
//! request (its query, headers and body) into typed values and shapes the answer; the
//! domain gets those values and gives back records and outcomes. No file of the domain
//! names a request, its decoded body, an answer or a query parameter
//! (`esign_tidy::http_names`: `Request`, `Fields`, `Response`, `query_param`). The files
//! that still do are listed here with their number of names. The list may only shrink: a
//! file not in it may name none, a listed one no more than its number, and a number must
//! come down (or its line go) as the reading moves into the handlers or `base/`.
//!
//! `ESIGN_TIDY_ROOT=/path/to/checkout cargo test -p esign-tidy` checks another checkout.

use esign_tidy::http_names;
use esign_tidy::shrinking::Shrinking;

/// Today's domain files (under `engine/src/domain/`) that name the request or the
/// answer, and how often, each with its reason.
const HTTP_NAMES_LEFT: &[(&str, usize)] = &[
    // `authenticate(cx, req)`: the bearer check reads the request's headers.
    ("auth.rs", 2),
];

/// What this list counts and says.
const LIST: Shrinking = Shrinking {
    counts: "HTTP names (Request, Fields, Response, query_param)",
    instead: "a handler reads the request into typed values (shared readers in base/http.rs, \
              base/query.rs, handlers/inputs.rs) and shapes the answer; the domain takes \
              and gives typed values",
    list_in: "tools/tidy/tests/domain_http.rs",
};

#[test]
fn the_domain_names_requests_and_answers_no_more_than_listed() {
    LIST.assert_holds("engine/src/domain", http_names, HTTP_NAMES_LEFT);
}

#[test]
fn the_check_can_fail() {
    LIST.assert_can_fail();
    let src = "fn f(req: &Request) -> Response { req.query_param(\"x\") } // Fields\n\
               #[cfg(test)]\nmod tests { fn t(f: &Fields) {} }";
    assert_eq!(http_names(src), 3);
}
