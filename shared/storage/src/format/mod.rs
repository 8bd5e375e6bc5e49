//! How the engines lay readings and rollups down, where both must agree:
//! what an item or a row costs (`billing`).

pub mod billing;
