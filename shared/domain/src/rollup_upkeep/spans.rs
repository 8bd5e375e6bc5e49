//! The primitives rollup upkeep runs on: one device's readings and
//! rollups, read, put and deleted. Each engine implements them over its own
//! items and rows (its `Error` is the store's); neither decides what to
//! recompute, in which order, or with which counter chain: that is this
//! module's rule, written once for both.

use crate::aggregate::rollup::Rollup;
use crate::model::{Reading, Span, TimeRange, Timestamp};
use std::collections::BTreeSet;

/// How an engine keeps a device's rollups (docs/rollups.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keeping {
    /// Day rollups, kept in the readings' own write transaction; an hour
    /// is folded from its day's readings when read (the embedded store).
    DaysInTheWrite,
    /// Hour items (the hour's block and the chain it entered with) and day
    /// rollups, kept by a stream function behind the writes, from the hour
    /// a marker names (DynamoDB).
    HoursAndDaysBehind,
}

impl Keeping {
    /// The spans stored, finest first.
    pub fn stored(self) -> &'static [Span] {
        match self {
            Keeping::DaysInTheWrite => &[Span::Day],
            Keeping::HoursAndDaysBehind => &[Span::Hour, Span::Day],
        }
    }
}

/// What a device's rollup marker says, where rollups are kept behind the writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marker {
    /// From this hour on, every hour with readings has its hour item.
    pub since: Timestamp,
    /// From this day on, day items may lag behind their hours (`None`: a
    /// marker from before open days, whose day items were all kept whole).
    pub open_day: Option<Timestamp>,
}

/// One device's rollups and readings, as the rollups use case reads and
/// writes them. Reads are strongly consistent and see readings past their
/// expiry that are still stored (rollups outlive readings).
///
/// Not `Send`-bound: the embedded store answers inside a transaction on the
/// calling thread; DynamoDB's primitives are `Send` where their type is known.
#[allow(async_fn_in_trait)]
pub trait RollupSpans {
    /// The engine's error (the store's).
    type Error;
    fn keeping(&self) -> Keeping;
    /// Hours starting before this are not recomputed: their readings may be
    /// gone to TTL, and a rollup outlives them.
    fn floor(&self) -> Timestamp {
        Timestamp::MIN
    }
    /// The device's readings in `range`, oldest first, one per time (a
    /// later write of a time wins).
    async fn readings(&mut self, range: &TimeRange) -> Result<Vec<Reading>, Self::Error>;
    /// The times of the first and the last reading in `range`.
    async fn reading_times(
        &mut self,
        range: &TimeRange,
    ) -> Result<Option<(Timestamp, Timestamp)>, Self::Error>;
    /// The time of the device's first reading, if it is before `t`.
    async fn first_reading_before(
        &mut self,
        t: Timestamp,
    ) -> Result<Option<Timestamp>, Self::Error>;
    /// The start of every hour with readings from `from` on.
    async fn hours_with_readings(
        &mut self,
        from: Timestamp,
    ) -> Result<BTreeSet<Timestamp>, Self::Error>;
    /// The newest stored rollup of `span` starting before `start`.
    async fn before(&mut self, span: Span, start: Timestamp)
        -> Result<Option<Rollup>, Self::Error>;
    /// The first stored rollup of `span` after the one at `start`.
    async fn after(&mut self, span: Span, start: Timestamp) -> Result<Option<Rollup>, Self::Error>;
    /// The stored rollups of `span` lying wholly inside `range`, oldest first.
    async fn within(&mut self, span: Span, range: &TimeRange) -> Result<Vec<Rollup>, Self::Error>;
    /// The starts of the stored rollups of `span` inside `range`.
    async fn starts(
        &mut self,
        span: Span,
        range: &TimeRange,
    ) -> Result<BTreeSet<Timestamp>, Self::Error>;
    /// Stores a rollup made from `readings`, the span's own (an engine that
    /// keeps an hour's readings beside its rollup stores them). Returns the
    /// write units spent, `None` when what is stored was already that.
    async fn put(
        &mut self,
        rollup: &Rollup,
        readings: &[Reading],
    ) -> Result<Option<f64>, Self::Error>;
    /// Stores many rollups, each with its span's readings, as the engine
    /// writes them best (DynamoDB: in batches).
    async fn put_all(&mut self, rollups: &[(Rollup, &[Reading])]) -> Result<(), Self::Error> {
        for (rollup, readings) in rollups {
            self.put(rollup, readings).await?;
        }
        Ok(())
    }
    /// Deletes the rollup of `span` at `start`. Returns the write units
    /// spent, `None` when there was none.
    async fn delete(&mut self, span: Span, start: Timestamp) -> Result<Option<f64>, Self::Error>;
    /// The device's marker (`Keeping::HoursAndDaysBehind`).
    async fn marker(&mut self) -> Result<Option<Marker>, Self::Error> {
        Ok(None)
    }
    async fn set_marker(&mut self, _marker: Marker) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// What refreshing rollups wrote (reported per stream batch).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct RollupWrites {
    /// Hour items put or deleted.
    pub hours: usize,
    /// Day items put or deleted.
    pub days: usize,
    /// Write units the engine reported for them (DynamoDB's `ConsumedCapacity`).
    pub write_units: f64,
}

impl std::ops::AddAssign for RollupWrites {
    fn add_assign(&mut self, o: Self) {
        self.hours += o.hours;
        self.days += o.days;
        self.write_units += o.write_units;
    }
}
