//! The IoT reading ingester's library: everything but the thin Lambda `main`s.
//!
//! Data flows one way: `api`/`stream` (edge) → `ingest`/`query`/`registry`
//! (use cases) → `store` (trait + adapters); `keys` is the one place that
//! formats keys and cursors; `model` holds the validated domain types.

pub mod keys;
pub mod model;
pub mod store;
