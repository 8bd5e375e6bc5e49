//! A block's header, readable alone: the version, the count, the times and
//! each quantity's summary, so a block answers counts and box tests
//! without being decoded.

use super::numbers::{Reader, FRAME};
use super::{
    corrupt, BlockError, FREE_READINGS, RAW, THOUSANDTHS, VERSION, VERSION_1, VERSION_2, VERSION_3,
    VERSION_4, VERSION_5,
};
use crate::model::{Quantity, Timestamp};

/// One quantity's summary in a block's header.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuantityStats {
    pub quantity: Quantity,
    /// Readings of the block that have it.
    pub count: u32,
    pub min: f64,
    pub max: f64,
}

/// What a block says of itself without being decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockHeader {
    pub count: u32,
    pub first: Timestamp,
    pub last: Timestamp,
    /// In catalogue order.
    pub quantities: Vec<QuantityStats>,
}

/// The header alone: count, times and per-quantity statistics.
pub fn header(bytes: &[u8]) -> Result<BlockHeader, BlockError> {
    let mut r = Reader::new(bytes);
    read_header(&mut r).map(|(h, _)| h)
}

/// The count of readings alone, read and bounded as [`header`] reads it:
/// for counting a store's readings without the rest of each header.
pub fn count(bytes: &[u8]) -> Result<u32, BlockError> {
    read_count(&mut Reader::new(bytes))
}

/// The version and the count of readings, the header's first fields.
pub(super) fn read_count(r: &mut Reader<'_>) -> Result<u32, BlockError> {
    let version = r.byte()?;
    r.headless = version == VERSION_1;
    r.radix = [VERSION, VERSION_5, VERSION_4, VERSION_3].contains(&version);
    r.patched = [VERSION, VERSION_5, VERSION_4].contains(&version);
    r.tight = [VERSION, VERSION_5].contains(&version);
    if ![
        VERSION, VERSION_5, VERSION_4, VERSION_3, VERSION_2, VERSION_1,
    ]
    .contains(&version)
    {
        return Err(corrupt(format!(
            "version {version}; this build reads {VERSION}"
        )));
    }
    let count = u32::try_from(r.unsigned()?).map_err(|_| corrupt("count"))?;
    // In frames every reading takes at least a bit of the bytes that follow
    // (a frame of 32 times is at least a byte); radix mode may take none,
    // up to `FREE_READINGS`. A count past that is damage, and is refused
    // before anything is allocated for it.
    let bound = r.bytes.len().saturating_mul(FRAME);
    let bound = if r.radix {
        bound.max(FREE_READINGS)
    } else {
        bound
    };
    if count == 0 || count as usize > bound {
        return Err(corrupt(format!("a count of {count} readings")));
    }
    Ok(count)
}

pub(super) fn read_header(r: &mut Reader<'_>) -> Result<(BlockHeader, Vec<u8>), BlockError> {
    let compact = r.bytes.first() == Some(&VERSION);
    let count = read_count(r)?;
    let time = |ms: Option<i64>| {
        ms.ok_or_else(|| corrupt("a time overflows"))
            .and_then(|ms| Timestamp::from_millis(ms).map_err(|e| corrupt(e.to_string())))
    };
    let first_ms = r.signed()?;
    let first = time(Some(first_ms))?;
    let last = match compact {
        true => time(
            i64::try_from(r.unsigned()?)
                .ok()
                .and_then(|d| first_ms.checked_add(d)),
        )?,
        false => time(Some(r.signed()?))?,
    };
    let columns = r.unsigned()? as usize;
    if columns > Quantity::ALL.len() {
        return Err(corrupt("more columns than quantities"));
    }
    let mut quantities = Vec::with_capacity(columns);
    let mut modes = Vec::with_capacity(columns);
    for _ in 0..columns {
        let (index, mode) = match compact {
            true => {
                let b = r.byte()?;
                (b >> 1, b & 1)
            }
            false => (r.byte()?, 0),
        };
        let quantity = *Quantity::ALL
            .get(index as usize)
            .ok_or_else(|| corrupt("an unknown quantity"))?;
        if quantities
            .last()
            .is_some_and(|s: &QuantityStats| s.quantity.index() >= quantity.index())
        {
            return Err(corrupt("columns out of catalogue order"));
        }
        let stored = r.unsigned()?;
        let count = match compact {
            true => u32::try_from(stored)
                .ok()
                .and_then(|lacking| count.checked_sub(lacking)),
            false => u32::try_from(stored).ok(),
        }
        .ok_or_else(|| corrupt("a column's count"))?;
        let mode = if compact { mode } else { r.byte()? };
        let (min, max) = match (mode, compact) {
            (THOUSANDTHS, true) => {
                let min = r.signed()?;
                let span = r.unsigned()?;
                let max = i64::try_from(span)
                    .ok()
                    .and_then(|s| min.checked_add(s))
                    .ok_or_else(|| corrupt("a column's greatest value"))?;
                (min as f64 / 1000.0, max as f64 / 1000.0)
            }
            (THOUSANDTHS, false) => {
                let (min, max) = (r.signed()?, r.signed()?);
                r.signed()?; // the sum, which version 6 no longer keeps
                (min as f64 / 1000.0, max as f64 / 1000.0)
            }
            (RAW, _) => {
                let (min, max) = (r.float()?, r.float()?);
                if !compact {
                    r.float()?; // the sum
                }
                (min, max)
            }
            (other, _) => return Err(corrupt(format!("column mode {other}"))),
        };
        quantities.push(QuantityStats {
            quantity,
            count,
            min,
            max,
        });
        modes.push(mode);
    }
    Ok((
        BlockHeader {
            count,
            first,
            last,
            quantities,
        },
        modes,
    ))
}
