//! The host's tables beside the engine's data: the key layout, and one module per table
//! with its row type and the function that queues a row. The runtime's imports write
//! through these; the workers read them.

pub mod jobs;
pub mod keys;
pub mod mail;
pub mod webhooks;
