//! Readings into a block: each quantity's column in the smallest of its
//! modes, the times and rooms, then the header.

use super::numbers::{stream_plan, zigzag, Writer, FRAME};
use super::prediction::{drivers, Driver, Integrator, FROM_POWER, FROM_POWER_SUMMED};
use super::{
    BlockError, DELTA, DELTA_OF_DELTA, FREE_READINGS, MAX_THOUSANDTHS, RAW, THOUSANDTHS, VERSION,
};
use crate::model::{Quantity, Reading, RoomId};
use std::borrow::Borrow;

/// A batch made fit for a block: in time order, the last reading of each
/// time kept (as a write of the same key replaces the one before). The
/// readings may be borrowed (`&Reading`): a batch appended to a sealed day
/// is encoded from the request's readings, not from copies of them.
pub fn normalize<R: Borrow<Reading>>(mut readings: Vec<R>) -> Vec<R> {
    // A stable sort keeps the batch's order among equal times: the last wins.
    readings.sort_by_key(|r| r.borrow().timestamp);
    let mut out: Vec<R> = Vec::with_capacity(readings.len());
    for r in readings {
        match out.last_mut() {
            Some(last) if (*last).borrow().timestamp == r.borrow().timestamp => *last = r,
            _ => out.push(r),
        }
    }
    out
}

/// Encodes one device's readings (owned or borrowed), in strictly increasing time.
pub fn encode<R: Borrow<Reading>>(readings: &[R]) -> Result<Vec<u8>, BlockError> {
    let bytes = encode_with(readings, Writer::default())?;
    if readings.len() <= FREE_READINGS || readings.len() <= bytes.len() * FRAME {
        return Ok(bytes);
    }
    // Very many readings in few bytes: frames only, which the decoder's
    // bound on the count (a byte per `FRAME` readings) always admits.
    encode_with(
        readings,
        Writer {
            bytes: Vec::new(),
            frames_only: true,
        },
    )
}

pub(super) fn encode_with<R: Borrow<Reading>>(
    readings: &[R],
    mut out: Writer,
) -> Result<Vec<u8>, BlockError> {
    let (first, last) = match (readings.first(), readings.last()) {
        (Some(f), Some(l)) => (f.borrow(), l.borrow()),
        _ => return Err(BlockError::Empty),
    };
    for (i, pair) in readings.windows(2).enumerate() {
        let (a, b) = (pair[0].borrow(), pair[1].borrow());
        if b.timestamp <= a.timestamp || b.device_id != a.device_id {
            return Err(BlockError::NotInOrder(i + 1));
        }
    }
    let readings = readings.iter().map(Borrow::borrow);
    // Every column in one pass over the readings (not one per quantity).
    let mut values: Vec<Vec<f64>> = vec![Vec::new(); Quantity::ALL.len()];
    for r in readings.clone() {
        for (q, v) in r.measurement.values() {
            values[q.index()].push(*v);
        }
    }
    let mut columns: Vec<Column> = Quantity::ALL
        .iter()
        .zip(values)
        .filter_map(|(q, values)| Column::of(*q, values))
        .collect();
    let watts = columns
        .iter()
        .position(|c| c.quantity == Quantity::Power && c.ints.is_some());
    if let Some(watts) = watts {
        for i in 0..columns.len() {
            let c = &columns[i];
            // A counter that stands still (the sold counter of a meter that
            // feeds nothing in) costs nothing in deltas already.
            let moves = c
                .ints
                .as_ref()
                .is_some_and(|ints| ints.iter().any(|v| *v != ints[0]));
            if !moves {
                continue;
            }
            let watts = columns[watts].ints.as_deref().unwrap_or_default();
            columns[i].drivers = drivers(c.quantity, readings.clone(), c.values.len(), watts);
        }
    }

    out.byte(VERSION);
    out.unsigned(readings.len() as u64);
    out.signed(first.timestamp.millis());
    out.unsigned((last.timestamp.millis() - first.timestamp.millis()) as u64);
    out.unsigned(columns.len() as u64);
    for c in &columns {
        c.write_header(&mut out, readings.len());
    }

    // Times: their step (the greatest common divisor of the deltas: a
    // minute for a sensor that sends on the minute, whenever it sends),
    // then in steps the first delta and the deltas of deltas.
    let step = readings
        .clone()
        .zip(readings.clone().skip(1))
        .fold(0u64, |g, (a, b)| {
            let delta = (b.timestamp.millis() - a.timestamp.millis()) as u64;
            // Most deltas are the step again: one division, no recursion.
            if g != 0 && delta.is_multiple_of(g) {
                g
            } else {
                gcd(g, delta)
            }
        })
        .max(1);
    out.unsigned(step);
    let mut previous = (first.timestamp.millis(), None::<i64>);
    let mut times = Vec::with_capacity(readings.len() - 1);
    for r in readings.clone().skip(1) {
        let t = r.timestamp.millis();
        let delta = (t - previous.0) / step as i64;
        times.push(zigzag(previous.1.map_or(delta, |d| delta - d)));
        previous = (t, Some(delta));
    }
    out.stream(&times, 1);

    // Rooms: a dictionary in order of appearance, then runs.
    let mut rooms: Vec<&RoomId> = Vec::new();
    let room_index: Vec<u64> = readings
        .clone()
        .map(|r| match r.room() {
            None => 0,
            Some(room) => match rooms.iter().position(|known| *known == room) {
                Some(i) => i as u64 + 1,
                None => {
                    rooms.push(room);
                    rooms.len() as u64
                }
            },
        })
        .collect();
    out.unsigned(rooms.len() as u64);
    for room in &rooms {
        out.bytes(room.as_str().as_bytes());
    }
    out.runs(&room_index);

    // Which quantities each reading has.
    let masks: Vec<u64> = readings.map(mask).collect();
    out.runs(&masks);

    for c in &columns {
        c.write_body(&mut out);
    }
    Ok(out.bytes)
}

pub(super) fn mask(r: &Reading) -> u64 {
    r.measurement
        .values()
        .iter()
        .fold(0, |m, (q, _)| m | 1 << q.index())
}

/// The value as a whole number of thousandths, when it is exactly one.
pub(super) fn thousandths(v: f64) -> Option<i64> {
    let m = (v * 1000.0).round();
    (m.abs() <= MAX_THOUSANDTHS && (m / 1000.0).to_bits() == v.to_bits()).then_some(m as i64)
}

/// One quantity's values, in time order, ready to write.
pub(super) struct Column {
    pub(super) quantity: Quantity,
    pub(super) values: Vec<f64>,
    /// The values in thousandths, when every one is exact.
    pub(super) ints: Option<Vec<i64>>,
    /// A counter's [`Driver`] at each of its values, when every reading that
    /// has it has exact watts too.
    pub(super) drivers: Option<Vec<Driver>>,
}

pub(super) fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Column {
    /// A column of `values`, a quantity's in time order (none: no column).
    pub(super) fn of(quantity: Quantity, values: Vec<f64>) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        let ints = values
            .iter()
            .map(|v| thousandths(*v))
            .collect::<Option<Vec<i64>>>();
        Some(Self {
            quantity,
            values,
            ints,
            drivers: None,
        })
    }

    /// Its quantity and mode in one byte; how many of the block's `n`
    /// readings lack it; its least value and (in thousandths) the span to
    /// its greatest (version 6: version 5 wrote the mode in a byte of its
    /// own, the count itself, the greatest value itself and the sum).
    fn write_header(&self, out: &mut Writer, n: usize) {
        let mode = if self.ints.is_some() {
            THOUSANDTHS
        } else {
            RAW
        };
        out.byte((self.quantity.index() as u8) << 1 | mode);
        out.unsigned((n - self.values.len()) as u64);
        match &self.ints {
            Some(ints) => {
                let (min, max) = ints
                    .iter()
                    .fold((i64::MAX, i64::MIN), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
                out.signed(min);
                out.unsigned(max.abs_diff(min));
            }
            None => {
                let min = self.values.iter().copied().fold(f64::INFINITY, f64::min);
                let max = self
                    .values
                    .iter()
                    .copied()
                    .fold(f64::NEG_INFINITY, f64::max);
                out.float(min);
                out.float(max);
            }
        }
    }

    pub(super) fn write_body(&self, out: &mut Writer) {
        let Some(ints) = &self.ints else {
            for v in &self.values {
                out.float(*v);
            }
            return;
        };
        // The column's resolution, in thousandths (1 when all are zero).
        let scale = ints
            .iter()
            .fold(0u64, |g, v| gcd(g, v.unsigned_abs()))
            .max(1);
        out.unsigned(scale);
        let units: Vec<i64> = ints.iter().map(|v| v / scale as i64).collect();
        let deltas: Vec<i64> = std::iter::once(units[0])
            .chain(units.windows(2).map(|w| w[1] - w[0]))
            .collect();
        let dods: Vec<i64> = deltas
            .iter()
            .take(2)
            .copied()
            .chain(deltas.windows(2).skip(1).map(|w| w[1] - w[0]))
            .collect();
        // A counter's steps less what its watts predict: a meter whose
        // counter grows by its watts is left with its rounding. Of the two
        // predictions, the one whose residuals are smaller in sum is
        // planned (planning a stream is most of its cost).
        let prediction = self.drivers.as_ref().and_then(|drivers| {
            let predicted = |kind| {
                let residuals = Integrator::residuals(kind, scale as i64, &deltas, drivers)?;
                let size = residuals[1..]
                    .iter()
                    .fold(0u64, |sum, r| sum.saturating_add(r.unsigned_abs()));
                Some((size, kind, residuals))
            };
            let summed = predicted(FROM_POWER_SUMMED);
            // Off by a unit at most one step in four: rounding would not
            // do better by enough to pay for trying.
            if summed
                .as_ref()
                .is_some_and(|(size, ..)| *size as usize <= deltas.len() / 4)
            {
                return summed;
            }
            [summed, predicted(FROM_POWER)]
                .into_iter()
                .flatten()
                .min_by_key(|(size, ..)| *size)
        });
        let zig = |xs: Vec<i64>| xs.into_iter().map(zigzag).collect::<Vec<u64>>();
        let (deltas, dods) = (zig(deltas), zig(dods));
        let (by_dods, by_deltas) = (stream_plan(&dods, 2), stream_plan(&deltas, 1));
        let (mut kind, mut head, mut chosen, mut plan) = if by_dods.0 < by_deltas.0 {
            (DELTA_OF_DELTA, 2, dods, by_dods)
        } else {
            (DELTA, 1, deltas, by_deltas)
        };
        if let Some((_, predicted, residuals)) = prediction {
            let residuals = zig(residuals);
            let by_residuals = stream_plan(&residuals, 1);
            if by_residuals.0 < plan.0 {
                (kind, head, chosen, plan) = (predicted, 1, residuals, by_residuals);
            }
        }
        out.byte(kind);
        out.planned(&chosen, head, plan.1);
    }
}
