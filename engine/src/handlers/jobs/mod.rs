//! Job handlers: each reads a due job's payload (and its work outcome) and makes the
//! domain calls it stands for. `crate::job_table::JOBS` maps every kind to one of these.

pub mod accounts;
pub mod documents;
pub mod templates;
pub mod uploads;
pub mod webhooks;
