//! The base layer: what every other module may use and which uses nothing above it.
//! The engine's interface types and [`cx::Cx`], records and keys, the HTTP error shape
//! and body decoding, the query parameters of lists (`query`), HTML escaping, the work
//! order types (`work_orders`), job kinds, the key families (`keyspace`), the policy defaults
//! (`policy`), the calendar (`calendar`), small helpers.

pub mod api;
pub mod calendar;
pub mod csv_rows;
pub mod cx;
pub mod fresh;
pub mod html;
pub mod http;
pub mod job_kinds;
pub mod keyspace;
pub mod limits;
pub mod messages;
pub mod policy;
#[allow(unused_imports)]
pub mod prelude;
pub mod qr_code;
pub mod query;
pub mod records;
pub mod util;
pub mod work_orders;
