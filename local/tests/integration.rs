//! Every test of the `ingester-local` binary, in one test binary: each
//! file of this folder is a module (as tests/tests/integration.rs does, for
//! CI's build time). Run one file's tests by its name: `cargo test -p
//! ingester-local rollups_catch_up::`.

mod alerts;
mod backup;
mod blocks_rebuild;
mod cli;
mod export;
mod migrate;
mod mqtt;
mod reindex;
mod rollups_catch_up;
mod rollups_dynamodb;
mod sealing;
mod stop;
