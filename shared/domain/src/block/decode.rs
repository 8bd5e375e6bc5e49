//! A block back into its columns or its readings, every part read and
//! checked: a damaged block is an error, never a panic.

use super::encode::thousandths;
use super::header::read_header;
use super::numbers::{unzigzag, Reader};
use super::prediction::{driven_by_power, Driver, Integrator, FROM_POWER, FROM_POWER_SUMMED};
use super::{corrupt, BlockError, DELTA, DELTA_OF_DELTA, RAW, VERSION, VERSION_5};
use crate::model::{DeviceId, Measurement, Quantity, Reading, RoomId, Timestamp};

/// Decodes a block of `device`'s readings.
pub fn decode(device: &DeviceId, bytes: &[u8]) -> Result<Vec<Reading>, BlockError> {
    decode_picked(device, bytes, |times| 0..times.len())
}

/// A block decoded into its columns, not yet into readings: what a fold
/// over many readings reads (a zone's days from computed hours) without
/// building a reading, and its allocations, for each.
#[derive(Debug, Clone, PartialEq)]
pub struct Columns {
    /// Every reading's time, in order.
    pub times: Vec<i64>,
    /// The rooms the readings name.
    pub rooms: Vec<RoomId>,
    /// Each reading's room: 0 for none, else its place in `rooms` plus one.
    pub room_index: Vec<u64>,
    /// Each reading's quantities, a bit per catalogue position.
    pub masks: Vec<u64>,
    /// Per quantity present, in catalogue order: the positions of the
    /// readings that have it (ascending) and their values.
    pub columns: Vec<(Quantity, Vec<usize>, Vec<f64>)>,
}

impl Columns {
    /// Reading `i`'s room.
    pub fn room(&self, i: usize) -> Option<&RoomId> {
        match self.room_index[i] {
            0 => None,
            k => self.rooms.get(k as usize - 1),
        }
    }
}

/// Decodes a block into its columns; every part is read and checked.
pub fn decode_columns(bytes: &[u8]) -> Result<Columns, BlockError> {
    let mut r = Reader::new(bytes);
    let (header, modes) = read_header(&mut r)?;
    let n = header.count as usize;

    let mut times = Vec::with_capacity(n);
    let mut t = header.first.millis();
    times.push(t);
    // Version 4 (whose streams are patched) writes the times' step first.
    let step = if r.patched {
        i64::try_from(r.unsigned()?)
            .ok()
            .filter(|s| *s >= 1)
            .ok_or_else(|| corrupt("a time step"))?
    } else {
        1
    };
    let mut delta = None::<i64>;
    for v in r.stream(n - 1, 1)? {
        let v = unzigzag(v);
        let d = match delta {
            None => v,
            Some(d) => d
                .checked_add(v)
                .ok_or_else(|| corrupt("a time delta overflows"))?,
        };
        t = d
            .checked_mul(step)
            .and_then(|d| t.checked_add(d))
            .ok_or_else(|| corrupt("a time overflows"))?;
        times.push(t);
        delta = Some(d);
    }
    if t != header.last.millis() {
        return Err(corrupt("the times do not end at the header's last"));
    }

    let room_count = r.unsigned()? as usize;
    let mut rooms = Vec::with_capacity(room_count.min(n));
    for _ in 0..room_count {
        let text = std::str::from_utf8(r.bytes()?).map_err(|e| corrupt(e.to_string()))?;
        rooms.push(RoomId::parse(text).map_err(|e| corrupt(format!("room {text:?}: {e}")))?);
    }
    let room_index = r.runs(n)?;
    let masks = r.runs(n)?;

    if room_index.iter().any(|&k| k as usize > rooms.len()) {
        return Err(corrupt("a room outside the dictionary"));
    }
    // Every column first: a counter predicted from the watts is read
    // before them (catalogue order) and resolved once they are.
    let predicts = [VERSION, VERSION_5].contains(&bytes[0]);
    let mut read = Vec::with_capacity(header.quantities.len());
    for (stats, mode) in header.quantities.iter().zip(modes) {
        let bit = 1u64 << stats.quantity.index();
        // Most columns are every reading's: their holders are counted out,
        // not filtered one by one, once the masks agree.
        let holders: Vec<usize> = if stats.count as usize == n && masks.iter().all(|m| m & bit != 0)
        {
            (0..n).collect()
        } else {
            let mut holders = Vec::with_capacity(n.min(stats.count as usize));
            holders.extend((0..n).filter(|&i| masks[i] & bit != 0));
            holders
        };
        if holders.len() != stats.count as usize {
            return Err(corrupt(format!(
                "{}: the masks say {} values, the header {}",
                stats.quantity.name(),
                holders.len(),
                stats.count
            )));
        }
        let column = read_column(&mut r, mode, holders.len(), predicts)?;
        read.push((stats.quantity, holders, column));
    }
    if !r.done() {
        return Err(corrupt("bytes after the last column"));
    }
    let mut predicted = Vec::with_capacity(read.len());
    for (quantity, holders, column) in &read {
        predicted.push(match column {
            ColumnRead::Values(_) => None,
            ColumnRead::Predicted {
                kind,
                scale,
                residuals,
            } => Some(energy_predicted(
                *quantity,
                holders,
                (*kind, *scale),
                residuals,
                &times,
                &read,
            )?),
        });
    }
    let columns = read
        .into_iter()
        .zip(predicted)
        .map(|((quantity, holders, column), predicted)| {
            let values = match (column, predicted) {
                (_, Some(values)) | (ColumnRead::Values(values), None) => values,
                (ColumnRead::Predicted { .. }, None) => unreachable!("resolved above"),
            };
            (quantity, holders, values)
        })
        .collect();
    Ok(Columns {
        times,
        rooms,
        room_index,
        masks,
        columns,
    })
}

/// Decodes the readings of a block that `pick` picks, given every time in
/// order: a range of their positions. Every part of the block is still read
/// and checked; only the picked readings are built (a page, or the latest).
pub fn decode_picked(
    device: &DeviceId,
    bytes: &[u8],
    pick: impl FnOnce(&[i64]) -> std::ops::Range<usize>,
) -> Result<Vec<Reading>, BlockError> {
    let Columns {
        times,
        rooms,
        room_index,
        masks,
        columns,
    } = decode_columns(bytes)?;
    let n = times.len();
    let picked = pick(&times);
    let picked = picked.start.min(n)..picked.end.min(n);
    // Each reading's values, allocated at their size: grown push by push,
    // every reading's first value went through the vector's growth path.
    let mut values: Vec<Vec<(Quantity, f64)>> = picked
        .clone()
        .map(|i| Vec::with_capacity(masks[i].count_ones() as usize))
        .collect();
    for (quantity, holders, column) in &columns {
        let from = holders.partition_point(|&i| i < picked.start);
        for (&i, v) in holders[from..].iter().zip(&column[from..]) {
            if i >= picked.end {
                break;
            }
            values[i - picked.start].push((*quantity, *v));
        }
    }

    let mut out = Vec::with_capacity(picked.len());
    for (i, vs) in picked.clone().zip(values) {
        let room = match room_index[i] {
            0 => None,
            k => Some(
                rooms
                    .get(k as usize - 1)
                    .cloned()
                    .ok_or_else(|| corrupt("a room outside the dictionary"))?,
            ),
        };
        let timestamp = Timestamp::from_millis(times[i]).map_err(|e| corrupt(e.to_string()))?;
        let measurement =
            Measurement::from_stored(room, vs).map_err(|p| corrupt(format!("reading {i}: {p}")))?;
        out.push(Reading {
            device_id: device.clone(),
            timestamp,
            measurement,
        });
    }
    Ok(out)
}

/// A column as read: its values, or a counter's steps less what the watts
/// predict, resolved once the watts are read.
pub(super) enum ColumnRead {
    Values(Vec<f64>),
    Predicted {
        kind: u8,
        scale: i64,
        residuals: Vec<i64>,
    },
}

pub(super) fn read_column(
    r: &mut Reader<'_>,
    mode: u8,
    n: usize,
    predicts: bool,
) -> Result<ColumnRead, BlockError> {
    if mode == RAW {
        return (0..n)
            .map(|_| r.float())
            .collect::<Result<_, _>>()
            .map(ColumnRead::Values);
    }
    let scale = i64::try_from(r.unsigned()?)
        .ok()
        .filter(|s| *s > 0)
        .ok_or_else(|| corrupt("a column's scale"))?;
    let kind = r.byte()?;
    if (kind == FROM_POWER || kind == FROM_POWER_SUMMED) && predicts {
        let residuals = r.stream(n, 1)?.into_iter().map(unzigzag).collect();
        return Ok(ColumnRead::Predicted {
            kind,
            scale,
            residuals,
        });
    }
    let mut out = Vec::with_capacity(n);
    let (mut value, mut delta) = (0i64, 0i64);
    let head = if kind == DELTA_OF_DELTA { 2 } else { 1 };
    for (i, x) in r.stream(n, head)?.into_iter().enumerate() {
        let x = unzigzag(x);
        let overflow = || corrupt("a value overflows");
        match (kind, i) {
            (_, 0) => value = x,
            (DELTA, _) => value = value.checked_add(x).ok_or_else(overflow)?,
            (DELTA_OF_DELTA, 1) => {
                delta = x;
                value = value.checked_add(delta).ok_or_else(overflow)?;
            }
            (DELTA_OF_DELTA, _) => {
                delta = delta.checked_add(x).ok_or_else(overflow)?;
                value = value.checked_add(delta).ok_or_else(overflow)?;
            }
            (other, _) => return Err(corrupt(format!("column encoding {other}"))),
        }
        out.push(from_units(value, scale)?);
    }
    Ok(ColumnRead::Values(out))
}

pub(super) fn from_units(value: i64, scale: i64) -> Result<f64, BlockError> {
    let thousandths = value
        .checked_mul(scale)
        .ok_or_else(|| corrupt("a value overflows"))?;
    Ok(thousandths as f64 / 1000.0)
}

/// A counter's values from its steps less what the watts of each of its
/// readings predict (`FROM_POWER`): the encoder's `drivers`, from the times
/// and the watts column as decoded.
pub(super) fn energy_predicted(
    quantity: Quantity,
    holders: &[usize],
    (kind, scale): (u8, i64),
    residuals: &[i64],
    times: &[i64],
    columns: &[(Quantity, Vec<usize>, ColumnRead)],
) -> Result<Vec<f64>, BlockError> {
    let no_watts = || corrupt(format!("{}: predicted without watts", quantity.name()));
    let sign = driven_by_power(quantity).ok_or_else(no_watts)?;
    let (power_holders, power) = columns
        .iter()
        .find_map(|(q, holders, column)| match column {
            ColumnRead::Values(values) if *q == Quantity::Power => Some((holders, values)),
            _ => None,
        })
        .ok_or_else(no_watts)?;
    let mut out = Vec::with_capacity(holders.len());
    let mut meter = Integrator::new(kind, scale);
    let (mut value, mut at_power) = (0i64, 0usize);
    for (j, (&i, &residual)) in holders.iter().zip(residuals).enumerate() {
        if j == 0 {
            value = residual;
        } else {
            // Both ascend: the watts of reading `i` are ahead in theirs.
            while power_holders.get(at_power).is_some_and(|&p| p < i) {
                at_power += 1;
            }
            if power_holders.get(at_power) != Some(&i) {
                return Err(no_watts());
            }
            let milliwatts = thousandths(power[at_power]).ok_or_else(no_watts)?;
            let driver = Driver {
                millis: times[i]
                    .checked_sub(times[holders[j - 1]])
                    .ok_or_else(|| corrupt("a time overflows"))?,
                milliwatts: (sign * milliwatts).max(0),
            };
            let step = meter
                .predict(driver)
                .checked_add(residual)
                .ok_or_else(|| corrupt("a value overflows"))?;
            meter.counted(step);
            value = value
                .checked_add(step)
                .ok_or_else(|| corrupt("a value overflows"))?;
        }
        out.push(from_units(value, scale)?);
    }
    Ok(out)
}
