//! How the engines lay rollups down, and what an item or a row costs:
//! where both engines must agree on bytes, apart from the rules over them
//! (the domain's).
//!
//! - `rollup`: a rollup's stored shape and its earlier versions;
//! - `rollup_body`: the embedded store's compact rollup body;
//! - `billing`: the size rule DynamoDB bills by, over our items.

pub mod billing;
pub mod rollup;
pub mod rollup_body;
