//! Read units in answers (docs/cost.md): a request's reads add to a counter
//! scoped to the request's task (`metered`), so that the store methods keep
//! their signatures and reads outside a metered request cost nothing to
//! count. DynamoDB says what a read consumed in each response; the embedded
//! store computes it by `storage::format::billing`'s size rule.

use std::cell::Cell;
use std::future::Future;

tokio::task_local! {
    static READ_UNITS: Cell<f64>;
}

/// Runs `f` and returns what it returned with the read units its reads consumed.
pub async fn metered<F: Future>(f: F) -> (F::Output, f64) {
    READ_UNITS
        .scope(Cell::new(0.0), async {
            let out = f.await;
            (out, READ_UNITS.with(Cell::get))
        })
        .await
}

/// Whether this runs inside a metered request (computing units is wasted otherwise).
pub fn metering() -> bool {
    READ_UNITS.try_with(|_| ()).is_ok()
}

/// Counts `units` against the metered request this runs in, if any.
pub fn add_read_units(units: f64) {
    let _ = READ_UNITS.try_with(|c| c.set(c.get() + units));
}

tokio::task_local! {
    static WRITE_UNITS: Cell<f64>;
}

/// Runs `f` and returns what it returned with the write units its writes
/// consumed, as DynamoDB reported them (the cost test, `tests/tests/cost.rs`,
/// measures the stream functions this way; a failed conditional write
/// counts the 1 unit DynamoDB charges for it).
pub async fn metered_writes<F: Future>(f: F) -> (F::Output, f64) {
    WRITE_UNITS
        .scope(Cell::new(0.0), async {
            let out = f.await;
            (out, WRITE_UNITS.with(Cell::get))
        })
        .await
}

/// Counts `units` against the metered writes this runs in, if any.
pub fn add_write_units(units: f64) {
    let _ = WRITE_UNITS.try_with(|c| c.set(c.get() + units));
}
