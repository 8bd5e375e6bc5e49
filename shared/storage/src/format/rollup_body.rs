//! A day rollup's body as the embedded store keeps it (version 4): the
//! fields of [`Stored`], each number in its shortest exact form. A stored
//! rollup is mostly numbers, which postcard writes as 8-byte floats, and
//! quantity names, which it writes out: 239 bytes for a meter's day, 90 for
//! a room sensor's, a fifth of a year's file (docs/BENCHMARKS.md). Here:
//!
//! - a quantity is its catalogue position (one byte), as in a block's header;
//! - a number is a varint: exact thousandths (what sensors and meters
//!   report) as themselves; a sum that a float's rounding took a few units
//!   off thousandths as those thousandths and the units (its bits' distance
//!   from them); anything else as its 8 bytes;
//! - a time is its distance from the rollup's start;
//! - (version 4) a number is written from one it is near: a field's
//!   greatest value from its least, its sum from its count times its least,
//!   a counter's marks from its field's least; a field's count as how many
//!   readings lack it. A room sensor's day is 40 bytes where version 3
//!   took 44, a meter's 84 where it took 107 (docs/BENCHMARKS.md).
//!
//! - (version 5) a rollup with a gas or water counter, or a mark kept by
//!   one, has them after the electricity counters' marks, as those are
//!   written; a rollup without either is written as version 4, byte for
//!   byte as before.
//!
//! - (version 6) a rollup with a tariff counter, or a mark kept by one,
//!   has a byte after the electricity counters' marks that says what
//!   follows (1: gas and water, 2: the tariffs), then gas and water as
//!   version 5 writes them, then bought's tariffs and sold's as pairs of
//!   counters; a rollup without one is written as version 4 or 5.
//!
//! Version 3 bodies (each number alone) are still read.
//! Bodies of versions 1 and 2 (postcard) are still read; a version-2 body is
//! what the shape's DynamoDB item holds, and what `size` meters.

use super::rollup::{
    Stored, StoredCounter, StoredCounters, StoredField, StoredMark, StoredRoom, StoredTariffs,
    StoredVolumes, STORED_VERSION,
};
use domain::aggregate::counter::{Counter, Counters};
use domain::aggregate::rollup::Tally;
use domain::aggregate::stats_map::QuantityStats;
use domain::aggregate::FieldStats;
use domain::block::numbers::{unzigzag, zigzag, Reader, Writer};
use domain::model::Quantity;

/// The body's first byte (versions 1 and 2 are postcard's), for a rollup
/// without gas or water.
pub const VERSION: u8 = 4;
/// Version 3, still read: every count and number stood alone.
const VERSION_3: u8 = 3;
/// A rollup with gas or water (`Stored::x`): version 4 and its volumes.
pub const VERSION_5: u8 = 5;
/// A rollup with a tariff counter (`Stored::t`): version 4, which of the
/// volumes and the tariffs follow, and those.
pub const VERSION_6: u8 = 6;

/// Whether a body whose first byte is `version` is one of this module's
/// (else it is postcard's, versions 1 and 2).
pub fn reads(version: u8) -> bool {
    (VERSION_3..=VERSION_6).contains(&version)
}

/// What a body's version says of its form.
#[derive(Debug, Clone, Copy)]
struct Form {
    /// Its numbers are written from what comes before them (version 4 on).
    relative: bool,
    /// It has gas and water after the electricity counters (version 5).
    volumes: bool,
    /// It says which of gas and water and the tariffs follow (version 6).
    extensions: bool,
}

/// Version 6's byte of what follows the electricity counters.
const WITH_VOLUMES: u8 = 1;
const WITH_TARIFFS: u8 = 2;

/// A number's form, in its head's low two bits.
const EXACT: u64 = 0;
const NEAR: u64 = 1;
const RAW: u64 = 2;
/// Most units a `NEAR` number may be from its thousandths.
const NEAREST: u64 = 1 << 20;
/// Largest thousandths a number's base may be: its distance from another
/// such number then fits the head with room to spare.
const MOST_BASE: i64 = 9_000_000_000_000_000;

/// The body of `stored`, a rollup starting at `start_ms`; `None` where a
/// field has no catalogue quantity (postcard keeps any name).
pub fn encode<S: AsRef<str>>(stored: &Stored<S>, start_ms: i64) -> Option<Vec<u8>> {
    let mut out = Writer::default();
    out.byte(match (&stored.x, &stored.t) {
        (_, Some(_)) => VERSION_6,
        (Some(_), None) => VERSION_5,
        (None, None) => VERSION,
    });
    out.unsigned(stored.n);
    fields(&mut out, &stored.f, stored.n)?;
    out.unsigned(stored.r.len() as u64);
    for (room, tally) in &stored.r {
        out.bytes(room.as_ref().as_bytes());
        match tally {
            None => out.byte(0),
            Some((count, f)) => {
                out.byte(1);
                out.unsigned(*count);
                fields(&mut out, f, *count)?;
            }
        }
    }
    let base = |q: Quantity| counter_base(&stored.f, q);
    pair(
        &mut out,
        [&stored.b, &stored.s],
        &stored.k,
        start_ms,
        [Quantity::EnergyBought, Quantity::EnergySold].map(base),
    );
    if stored.t.is_some() {
        out.byte((u8::from(stored.x.is_some()) * WITH_VOLUMES) | WITH_TARIFFS);
    }
    if let Some(x) = &stored.x {
        pair(
            &mut out,
            [&x.g, &x.w],
            &x.k,
            start_ms,
            [Quantity::Gas, Quantity::Water].map(base),
        );
    }
    if let Some(t) = &stored.t {
        let [p1, p2, n1, n2] = &t.c;
        let [kp1, kp2, kn1, kn2] = t.k;
        pair(
            &mut out,
            [p1, p2],
            &(kp1, kp2),
            start_ms,
            [Quantity::EnergyBoughtT1, Quantity::EnergyBoughtT2].map(base),
        );
        pair(
            &mut out,
            [n1, n2],
            &(kn1, kn2),
            start_ms,
            [Quantity::EnergySoldT1, Quantity::EnergySoldT2].map(base),
        );
    }
    Some(out.bytes)
}

/// Two counters (which there are, then each, its marks from `from`) and
/// the marks kept by them.
fn pair(
    out: &mut Writer,
    counters: [&Option<StoredCounter>; 2],
    k: &(Option<StoredMark>, Option<StoredMark>),
    start_ms: i64,
    from: [i64; 2],
) {
    out.byte(u8::from(counters[0].is_some()) | u8::from(counters[1].is_some()) << 1);
    for (c, from) in counters.into_iter().zip(from) {
        if let Some(c) = c {
            counter(out, c, start_ms, from);
        }
    }
    kept(out, k, start_ms);
}

/// A pair of counters' kept marks: which there are, then each.
fn kept(out: &mut Writer, k: &(Option<StoredMark>, Option<StoredMark>), start_ms: i64) {
    out.byte(u8::from(k.0.is_some()) | u8::from(k.1.is_some()) << 1);
    for m in [&k.0, &k.1].into_iter().flatten() {
        mark(out, m, start_ms, 0);
    }
}

/// Version 4 writes a field's count as how many of its scope's `n`
/// readings lack it (none, usually), its greatest value from its least,
/// and its sum from `count` times its least: a day's values are close to
/// each other, and so a byte or two shorter apart than whole.
fn fields<S: AsRef<str>>(out: &mut Writer, f: &[StoredField<S>], n: u64) -> Option<()> {
    out.unsigned(f.len() as u64);
    for (name, count, min, max, sum) in f {
        out.byte(Quantity::parse(name.as_ref())?.index() as u8);
        out.unsigned(n.wrapping_sub(*count));
        number(out, *min, 0);
        number(out, *max, base(*min));
        number(out, *sum, sum_base(*min, *count));
    }
    Some(())
}

/// The thousandths a number is written from: `v`'s, when it is near a
/// whole number of them (else nothing: 0).
fn base(v: f64) -> i64 {
    let t = (v * 1000.0).round();
    if v.is_finite() && t.abs() < MOST_BASE as f64 {
        t as i64
    } else {
        0
    }
}

/// The base of a sum of `count` values whose least is `min`.
fn sum_base(min: f64, count: u64) -> i64 {
    i64::try_from(count)
        .ok()
        .and_then(|c| base(min).checked_mul(c))
        .filter(|b| b.abs() < MOST_BASE)
        .unwrap_or(0)
}

/// A counter's marks are written from its field's least value (its first
/// reading's), which they are near.
fn counter_base<S: AsRef<str>>(f: &[StoredField<S>], q: Quantity) -> i64 {
    f.iter()
        .find(|(name, ..)| name.as_ref() == q.name())
        .map_or(0, |(_, _, min, ..)| base(*min))
}

fn counter(out: &mut Writer, c: &StoredCounter, start_ms: i64, from: i64) {
    out.byte(u8::from(c.e.is_some()) | u8::from(c.g.is_some()) << 1);
    if let Some(e) = &c.e {
        mark(out, e, start_ms, from);
    }
    if let Some((kwh, resets)) = c.g {
        number(out, kwh, 0);
        out.unsigned(resets.into());
    }
    out.signed(c.first.wrapping_sub(start_ms));
    number(out, c.i.0, 0);
    out.unsigned(c.i.1.into());
    mark(out, &c.l, start_ms, from);
}

fn mark(out: &mut Writer, (at, reference): &StoredMark, start_ms: i64, from: i64) {
    out.signed(at.wrapping_sub(start_ms));
    number(out, *reference, from);
}

/// `v` in its shortest exact form, its thousandths written from `from`.
fn number(out: &mut Writer, v: f64, from: i64) {
    let t = (v * 1000.0).round();
    if v.is_finite() && t.abs() < 9.0e15 {
        let thousandths = t as i64;
        let near = thousandths as f64 / 1000.0;
        let head = zigzag(thousandths.wrapping_sub(from)) << 2;
        if near.to_bits() == v.to_bits() {
            out.unsigned(head | EXACT);
            return;
        }
        let units = (v.to_bits() as i64).wrapping_sub(near.to_bits() as i64);
        if near.is_sign_negative() == v.is_sign_negative() && units.unsigned_abs() < NEAREST {
            out.unsigned(head | NEAR);
            out.signed(units);
            return;
        }
    }
    out.unsigned(RAW);
    out.float(v);
}

/// The rollup starting at `start_ms` that `body` (version 3 to 6)
/// holds; room names are borrowed from it. An error says what does not
/// decode.
pub fn decode(body: &[u8], start_ms: i64) -> Result<Stored<&str>, String> {
    let mut r = Reader::new(body);
    let e = |e: domain::block::BlockError| e.to_string();
    let (form, n) = read_head(&mut r)?;
    let relative = form.relative;
    let f = read_fields(&mut r, relative, n)?;
    let rooms = r.unsigned().map_err(e)?;
    let mut rs: Vec<StoredRoom<&str>> = Vec::new();
    for _ in 0..rooms {
        let name = std::str::from_utf8(r.bytes().map_err(e)?)
            .map_err(|_| "a room's name is not UTF-8".to_string())?;
        let tally = match r.byte().map_err(e)? {
            0 => None,
            1 => {
                let count = r.unsigned().map_err(e)?;
                Some((count, read_fields(&mut r, relative, count)?))
            }
            other => return Err(format!("a room's tally flag {other}")),
        };
        rs.push((name, tally));
    }
    let from = Counters::from_fn(|c| match relative {
        true => counter_base(&f, c.quantity()),
        false => 0,
    });
    let tail = read_tail(&mut r, start_ms, form, from)?;
    Ok(Stored {
        v: STORED_VERSION,
        n,
        f,
        r: rs,
        b: tail.b,
        s: tail.s,
        k: tail.k,
        x: tail.x,
        t: tail.t,
    })
}

/// The counters that `body` (version 3 to 6) holds, read past its
/// tallies and rooms without building them (`RollupCounters`: what an
/// energy answer folds).
pub fn counters(body: &[u8], start_ms: i64) -> Result<StoredCounters, String> {
    let e = |e: domain::block::BlockError| e.to_string();
    let mut r = Reader::new(body);
    let (form, n) = read_head(&mut r)?;
    let relative = form.relative;
    // Each counter's readings, and its marks' base (`counter_base`).
    let (mut read, mut from) = (Counters::<u64>::default(), Counters::<i64>::default());
    for _ in 0..read_field_count(&mut r)? {
        let (q, f) = read_field(&mut r, relative, n)?;
        if let Some(c) = Counter::of_quantity(q) {
            *read.get_mut(c) = f.count;
            *from.get_mut(c) = if relative { base(f.min) } else { 0 };
        }
    }
    for _ in 0..r.unsigned().map_err(e)? {
        r.bytes().map_err(e)?;
        match r.byte().map_err(e)? {
            0 => {}
            1 => {
                let count = r.unsigned().map_err(e)?;
                for _ in 0..read_field_count(&mut r)? {
                    read_field(&mut r, relative, count)?;
                }
            }
            other => return Err(format!("a room's tally flag {other}")),
        }
    }
    let tail = read_tail(&mut r, start_ms, form, from)?;
    Ok(StoredCounters {
        b: tail.b,
        s: tail.s,
        k: tail.k,
        x: tail.x,
        t: tail.t,
        read,
    })
}

/// What a body holds after its tallies and rooms: its counters and kept
/// marks.
struct Tail {
    b: Option<StoredCounter>,
    s: Option<StoredCounter>,
    k: (Option<StoredMark>, Option<StoredMark>),
    x: Option<StoredVolumes>,
    t: Option<StoredTariffs>,
}

/// A pair of counters and the marks kept by them.
type Pair = (
    Option<StoredCounter>,
    Option<StoredCounter>,
    (Option<StoredMark>, Option<StoredMark>),
);

/// A body's counters (each one's marks written from its `from`) and kept
/// marks, to its end: the electricity counters', then (version 5) gas and
/// water's.
fn read_tail(
    r: &mut Reader,
    start_ms: i64,
    form: Form,
    from: Counters<i64>,
) -> Result<Tail, String> {
    let (b, s, k) = read_pair(r, start_ms, (from.bought, from.sold))?;
    let (volumes, tariffs) = match (form.extensions, form.volumes) {
        (true, _) => match r.byte().map_err(|e| e.to_string())? {
            f if f & !(WITH_VOLUMES | WITH_TARIFFS) == 0 => {
                (f & WITH_VOLUMES != 0, f & WITH_TARIFFS != 0)
            }
            f => return Err(format!("extensions {f}")),
        },
        (false, volumes) => (volumes, false),
    };
    let x = match volumes {
        true => {
            let (g, w, k) = read_pair(r, start_ms, (from.gas, from.water))?;
            Some(StoredVolumes { g, w, k })
        }
        false => None,
    };
    let t = match tariffs {
        true => {
            let (p1, p2, (kp1, kp2)) = read_pair(r, start_ms, (from.bought_t1, from.bought_t2))?;
            let (n1, n2, (kn1, kn2)) = read_pair(r, start_ms, (from.sold_t1, from.sold_t2))?;
            Some(StoredTariffs {
                c: [p1, p2, n1, n2],
                k: [kp1, kp2, kn1, kn2],
            })
        }
        false => None,
    };
    if !r.done() {
        return Err("bytes after the rollup".into());
    }
    Ok(Tail { b, s, k, x, t })
}

/// Two counters (their marks written from `from`) and the marks they keep.
fn read_pair(r: &mut Reader, start_ms: i64, from: (i64, i64)) -> Result<Pair, String> {
    let counters = flags(r)?;
    let first = (counters & 1 != 0)
        .then(|| read_counter(r, start_ms, from.0))
        .transpose()?;
    let second = (counters & 2 != 0)
        .then(|| read_counter(r, start_ms, from.1))
        .transpose()?;
    let kept = flags(r)?;
    let k0 = (kept & 1 != 0)
        .then(|| read_mark(r, start_ms, 0))
        .transpose()?;
    let k1 = (kept & 2 != 0)
        .then(|| read_mark(r, start_ms, 0))
        .transpose()?;
    Ok((first, second, (k0, k1)))
}

/// A body's version, as the form it says, and its count of readings.
fn read_head(r: &mut Reader) -> Result<(Form, u64), String> {
    let e = |e: domain::block::BlockError| e.to_string();
    let form = match r.byte().map_err(e)? {
        VERSION_6 => Form {
            relative: true,
            volumes: false,
            extensions: true,
        },
        VERSION_5 => Form {
            relative: true,
            volumes: true,
            extensions: false,
        },
        VERSION => Form {
            relative: true,
            volumes: false,
            extensions: false,
        },
        VERSION_3 => Form {
            relative: false,
            volumes: false,
            extensions: false,
        },
        _ => return Err("not a version 3 to 6 rollup".into()),
    };
    Ok((form, r.unsigned().map_err(e)?))
}

fn flags(r: &mut Reader) -> Result<u8, String> {
    match r.byte().map_err(|e| e.to_string())? {
        f if f < 4 => Ok(f),
        f => Err(format!("flags {f}")),
    }
}

fn read_fields<'a>(
    r: &mut Reader,
    relative: bool,
    n: u64,
) -> Result<Vec<StoredField<&'a str>>, String> {
    let len = read_field_count(r)?;
    let mut out = Vec::with_capacity(len);
    for _ in 0..len {
        let (q, f) = read_field(r, relative, n)?;
        out.push((q.name(), f.count, f.min, f.max, f.sum));
    }
    Ok(out)
}

/// How many fields follow.
fn read_field_count(r: &mut Reader) -> Result<usize, String> {
    let len = r.unsigned().map_err(|e| e.to_string())?;
    if len > Quantity::ALL.len() as u64 {
        return Err(format!("{len} quantities"));
    }
    Ok(len as usize)
}

/// One field of a scope of `n` readings: its quantity and stats.
fn read_field(r: &mut Reader, relative: bool, n: u64) -> Result<(Quantity, FieldStats), String> {
    let e = |e: domain::block::BlockError| e.to_string();
    let q = *Quantity::ALL
        .get(r.byte().map_err(e)? as usize)
        .ok_or("an unknown quantity")?;
    let stored = r.unsigned().map_err(e)?;
    let count = match relative {
        true => n.wrapping_sub(stored),
        false => stored,
    };
    let min = read_number(r, 0)?;
    let (max_from, sum_from) = match relative {
        true => (base(min), sum_base(min, count)),
        false => (0, 0),
    };
    let max = read_number(r, max_from)?;
    let sum = read_number(r, sum_from)?;
    Ok((
        q,
        FieldStats {
            min,
            max,
            sum,
            count,
        },
    ))
}

/// The tally that `body` (version 3 or 4) holds of the readings that named
/// `room`, or of all its readings (`None`); `None` where no reading named
/// it. Read from its first fields, and its rooms' where a room is asked
/// for: what a stats answer folds (`query::stats`), with no counter, room
/// id or name to build. (A year of daily stats decoded whole rollups: a
/// third of its instructions, docs/BENCHMARKS.md.)
pub fn tally(body: &[u8], room: Option<&str>) -> Result<Option<Tally>, String> {
    let e = |e: domain::block::BlockError| e.to_string();
    let mut r = Reader::new(body);
    let (form, n) = read_head(&mut r)?;
    let relative = form.relative;
    let all = read_tally(&mut r, relative, n)?;
    let Some(room) = room else {
        return Ok(Some(all));
    };
    for _ in 0..r.unsigned().map_err(e)? {
        let name = r.bytes().map_err(e)?;
        let tally = match r.byte().map_err(e)? {
            0 => None,
            1 => {
                let count = r.unsigned().map_err(e)?;
                Some(read_tally(&mut r, relative, count)?)
            }
            other => return Err(format!("a room's tally flag {other}")),
        };
        if name == room.as_bytes() {
            return Ok(Some(tally.unwrap_or(all)));
        }
    }
    Ok(None)
}

/// The fields of a scope of `count` readings, as its tally.
fn read_tally(r: &mut Reader, relative: bool, count: u64) -> Result<Tally, String> {
    let mut fields = QuantityStats::new();
    for _ in 0..read_field_count(r)? {
        let (q, f) = read_field(r, relative, count)?;
        fields.insert(q, f);
    }
    Ok(Tally { count, fields })
}

fn read_counter(r: &mut Reader, start_ms: i64, from: i64) -> Result<StoredCounter, String> {
    let e = |e: domain::block::BlockError| e.to_string();
    let has = flags(r)?;
    let entering = (has & 1 != 0)
        .then(|| read_mark(r, start_ms, from))
        .transpose()?;
    let growth = match has & 2 != 0 {
        true => Some((read_number(r, 0)?, resets(r)?)),
        false => None,
    };
    let first = start_ms.wrapping_add(r.signed().map_err(e)?);
    let inside = (read_number(r, 0)?, resets(r)?);
    Ok(StoredCounter {
        e: entering,
        g: growth,
        first,
        i: inside,
        l: read_mark(r, start_ms, from)?,
    })
}

fn resets(r: &mut Reader) -> Result<u32, String> {
    let v = r.unsigned().map_err(|e| e.to_string())?;
    u32::try_from(v).map_err(|_| format!("{v} resets"))
}

fn read_mark(r: &mut Reader, start_ms: i64, from: i64) -> Result<StoredMark, String> {
    let at = start_ms.wrapping_add(r.signed().map_err(|e| e.to_string())?);
    Ok((at, read_number(r, from)?))
}

fn read_number(r: &mut Reader, from: i64) -> Result<f64, String> {
    let e = |e: domain::block::BlockError| e.to_string();
    let head = r.unsigned().map_err(e)?;
    let near = || unzigzag(head >> 2).wrapping_add(from) as f64 / 1000.0;
    match head & 3 {
        EXACT => Ok(near()),
        NEAR => {
            let units = r.signed().map_err(e)?;
            Ok(f64::from_bits(
                (near().to_bits() as i64).wrapping_add(units) as u64,
            ))
        }
        RAW if head == RAW => r.float().map_err(e),
        _ => Err(format!("a number's head {head}")),
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use domain::fixtures::VERSION_3_METER;
    use proptest::prelude::*;

    const START: i64 = 1_795_000_000_000 - 1_795_000_000_000 % 86_400_000;

    fn meter_day() -> Stored<&'static str> {
        // As a meter's day stores it: sums of a float's running total.
        let sum_w: f64 = (0..1440).map(|i| 350.0 + f64::from(i % 97) * 0.1).sum();
        let counter = StoredCounter {
            e: Some((START - 60_000, 5210.125)),
            g: Some((0.006, 0)),
            first: START,
            i: (8.431, 0),
            l: (START + 86_340_000, 5218.562),
        };
        Stored {
            v: STORED_VERSION,
            n: 1440,
            f: vec![
                (
                    "cumulative_kwh_p",
                    1440,
                    5210.131,
                    5218.562,
                    7_508_541.263_000_1,
                ),
                ("cumulative_kwh_n", 1440, 812.5, 812.5, 1_170_000.0),
                ("current_w", 1440, 150.0, 550.0, sum_w),
            ],
            r: vec![],
            b: Some(counter.clone()),
            s: Some(StoredCounter {
                e: None,
                g: None,
                ..counter
            }),
            k: (None, None),
            x: None,
            t: None,
        }
    }

    /// `meter_day()` as version 3 wrote it with two rooms (one with a
    /// tally of its own) and a kept mark.
    const VERSION_3_MIXED: &str = "03a00b0300a00b9881f0139090f413f9f4e7e2df01d60101a00ba0dd8c03a0dd8c03808899ef2202a00b809f4980c78c02a1dcde9c0f0502076b69746368656e01e8070105e807e0c20990ad0be8fb8d500468616c6c000303bfa907e880f013300000f88e0400c0c6ab529090f4130000f88e0400c0c6ab529090f4130109a08d06";

    fn mixed_day() -> Stored<&'static str> {
        let mut m = meter_day();
        m.r = vec![
            (
                "kitchen",
                Some((1000, vec![("temperature", 1000, 19.5, 23.25, 21_000.125)])),
            ),
            ("hall", None),
        ];
        m.k = (Some((START - 5, 12.5)), None);
        m
    }

    #[test]
    fn version_3_bodies_still_read_and_version_4_is_shorter() {
        let unhex = domain::fixtures::unhex;
        for (old, stored) in [
            (unhex(VERSION_3_METER), meter_day()),
            (unhex(VERSION_3_MIXED), mixed_day()),
        ] {
            assert_eq!(decode(&old, START).unwrap(), stored);
            let new = encode(&stored, START).unwrap();
            assert_eq!(new[0], VERSION);
            assert_eq!(decode(&new, START).unwrap(), stored);
            // The whole readings' tally, read alone from either version.
            let start = domain::model::Timestamp::from_millis(START).unwrap();
            let whole = stored
                .clone()
                .decode(domain::model::Span::Day, start)
                .unwrap();
            for body in [&old, &new] {
                assert_eq!(tally(body, None).unwrap(), Some(whole.all.clone()));
                for (room, kept) in &whole.rooms {
                    assert_eq!(
                        tally(body, Some(room.as_str())).unwrap().as_ref(),
                        Some(kept)
                    );
                }
                assert_eq!(tally(body, Some("attic")).unwrap(), None);
            }
            // Counts, greatest values, sums and marks near what they follow.
            assert!(
                new.len() + 12 <= old.len(),
                "{} against {}",
                new.len(),
                old.len()
            );
        }
    }

    #[test]
    fn a_meters_day_takes_under_half_the_bytes_of_postcard() {
        let stored = meter_day();
        let body = encode(&stored, START).unwrap();
        let postcard = postcard::to_allocvec(&stored).unwrap();
        assert!(
            body.len() * 2 < postcard.len(),
            "{} bytes against {}",
            body.len(),
            postcard.len()
        );
        assert_eq!(decode(&body, START).unwrap(), stored);
    }

    #[test]
    fn a_name_outside_the_catalogue_is_left_to_postcard() {
        let mut stored = meter_day();
        stored.f[0].0 = "not_a_quantity";
        assert_eq!(encode(&stored, START), None);
    }

    #[test]
    fn numbers_take_the_shortest_exact_form() {
        let len = |v: f64| {
            let mut out = Writer::default();
            number(&mut out, v, 0);
            let back = read_number(&mut Reader::new(&out.bytes), 0).unwrap();
            assert_eq!(back.to_bits(), v.to_bits(), "{v}");
            out.bytes.len()
        };
        assert_eq!(len(21.5), 3);
        assert_eq!(len(0.0), 1);
        assert_eq!(len(-0.0), 9);
        assert!(len(0.1 + 0.2) <= 3, "{}", len(0.1 + 0.2));
        assert_eq!(len(f64::NAN), 9);
        assert_eq!(len(1e300), 9);
        assert_eq!(len(std::f64::consts::PI), 9);
    }

    fn number_strategy() -> impl Strategy<Value = f64> {
        prop_oneof![
            (-9_000_000_000_000i64..9_000_000_000_000).prop_map(|t| t as f64 / 1000.0),
            proptest::collection::vec(-100_000i64..100_000, 1..50)
                .prop_map(|ts| ts.iter().map(|t| *t as f64 / 1000.0).sum()),
            any::<f64>(),
        ]
    }

    fn fields_strategy() -> impl Strategy<Value = Vec<StoredField<&'static str>>> {
        proptest::sample::subsequence(Quantity::ALL.to_vec(), 0..=4).prop_flat_map(|qs| {
            qs.into_iter()
                .map(|q| {
                    (
                        any::<u64>(),
                        number_strategy(),
                        number_strategy(),
                        number_strategy(),
                    )
                        .prop_map(move |(c, a, b, s)| (q.name(), c, a, b, s))
                })
                .collect::<Vec<_>>()
        })
    }

    fn mark_strategy() -> BoxedStrategy<StoredMark> {
        (any::<i64>(), number_strategy()).boxed()
    }

    fn counter_strategy() -> BoxedStrategy<StoredCounter> {
        (
            proptest::option::of(mark_strategy()),
            proptest::option::of((number_strategy(), any::<u32>())),
            any::<i64>(),
            (number_strategy(), any::<u32>()),
            mark_strategy(),
        )
            .prop_map(|(e, g, first, i, l)| StoredCounter { e, g, first, i, l })
            .boxed()
    }

    fn stored_strategy() -> impl Strategy<Value = Stored<String>> {
        (
            any::<u64>(),
            fields_strategy(),
            proptest::collection::vec(
                (
                    "[a-z0-9-]{1,12}",
                    proptest::option::of((any::<u64>(), fields_strategy())),
                ),
                0..3,
            ),
            proptest::option::of(counter_strategy()),
            proptest::option::of(counter_strategy()),
            (
                proptest::option::of(mark_strategy()),
                proptest::option::of(mark_strategy()),
            ),
            proptest::option::of((
                proptest::option::of(counter_strategy()),
                proptest::option::of(counter_strategy()),
                (
                    proptest::option::of(mark_strategy()),
                    proptest::option::of(mark_strategy()),
                ),
            )),
            proptest::option::of((
                proptest::array::uniform4(proptest::option::of(counter_strategy())),
                proptest::array::uniform4(proptest::option::of(mark_strategy())),
            )),
        )
            .prop_map(|(n, f, r, b, s, k, x, t)| {
                let own = |f: Vec<StoredField<&str>>| {
                    f.into_iter()
                        .map(|(q, c, a, b, s)| (q.to_owned(), c, a, b, s))
                        .collect()
                };
                Stored {
                    v: STORED_VERSION,
                    n,
                    f: own(f),
                    r: r.into_iter()
                        .map(|(room, t)| (room, t.map(|(c, f)| (c, own(f)))))
                        .collect(),
                    b,
                    s,
                    k,
                    x: x.map(|(g, w, k)| StoredVolumes { g, w, k }),
                    t: t.map(|(c, k)| StoredTariffs { c, k }),
                }
            })
    }

    /// `stored` with its names borrowed.
    fn borrowed(stored: &Stored<String>) -> Stored<&str> {
        fn fields(f: &[StoredField<String>]) -> Vec<StoredField<&str>> {
            f.iter()
                .map(|(q, c, a, b, s)| (q.as_str(), *c, *a, *b, *s))
                .collect()
        }
        Stored {
            v: stored.v,
            n: stored.n,
            f: fields(&stored.f),
            r: stored
                .r
                .iter()
                .map(|(room, t)| (room.as_str(), t.as_ref().map(|(c, f)| (*c, fields(f)))))
                .collect(),
            b: stored.b.clone(),
            s: stored.s.clone(),
            k: stored.k,
            x: stored.x.clone(),
            t: stored.t.clone(),
        }
    }

    type Bits = (u64, Vec<(&'static str, u64, u64, u64, u64)>);

    /// A tally's count and fields, their floats as bits (NaN included).
    fn tally_bits(t: &Tally) -> Bits {
        let fields = t.fields.iter().map(|(q, f)| {
            (
                q.name(),
                f.count,
                f.min.to_bits(),
                f.max.to_bits(),
                f.sum.to_bits(),
            )
        });
        (t.count, fields.collect())
    }

    /// Stored fields as `tally_bits` gives them (in catalogue order).
    fn field_bits<S: AsRef<str>>(n: u64, f: &[StoredField<S>]) -> Bits {
        let mut fields: Vec<_> = f
            .iter()
            .map(|(q, c, min, max, sum)| {
                let q = Quantity::parse(q.as_ref()).unwrap();
                (
                    q,
                    (q.name(), *c, min.to_bits(), max.to_bits(), sum.to_bits()),
                )
            })
            .collect();
        fields.sort_by_key(|(q, _)| *q);
        (n, fields.into_iter().map(|(_, f)| f).collect())
    }

    /// Floats compared by their bits (NaN included).
    fn bits(s: &Stored<&str>) -> String {
        format!("{:?}", postcard::to_allocvec(s).unwrap())
    }

    proptest! {
        #[test]
        fn every_rollup_round_trips_bit_for_bit(stored in stored_strategy(), start in any::<i64>()) {
            let body = encode(&stored, start).unwrap();
            let version = match (&stored.x, &stored.t) {
                (_, Some(_)) => VERSION_6,
                (Some(_), None) => VERSION_5,
                (None, None) => VERSION,
            };
            prop_assert_eq!(body[0], version);
            let back = decode(&body, start).unwrap();
            prop_assert_eq!(bits(&back), bits(&borrowed(&stored)));
        }

        #[test]
        fn a_body_s_tally_is_its_fields_read_alone(stored in stored_strategy(), start in any::<i64>()) {
            let body = encode(&stored, start).unwrap();
            let all = tally(&body, None).unwrap().unwrap();
            prop_assert_eq!(tally_bits(&all), field_bits(stored.n, &stored.f));
            // Each room's (a name given twice aside: the first is read).
            for (room, kept) in &stored.r {
                if stored.r.iter().filter(|(r, _)| r == room).count() > 1 {
                    continue;
                }
                let expected = match kept {
                    Some((count, f)) => field_bits(*count, f),
                    None => field_bits(stored.n, &stored.f),
                };
                let read = tally(&body, Some(room)).unwrap().unwrap();
                prop_assert_eq!(tally_bits(&read), expected);
            }
            prop_assert!(tally(&body, Some("no-such-room-at-all")).unwrap().is_none());
        }

        /// A body's counters read alone are the whole decode's, with how
        /// many readings carried each counter's quantity.
        #[test]
        fn a_body_s_counters_are_read_alone(stored in stored_strategy(), start in any::<i64>()) {
            let body = encode(&stored, start).unwrap();
            let whole = decode(&body, start).unwrap();
            let alone = counters(&body, start).unwrap();
            prop_assert_eq!(
                format!("{:?}", (&alone.b, &alone.s, &alone.k, &alone.x)),
                format!("{:?}", (&whole.b, &whole.s, &whole.k, &whole.x))
            );
            let read = |q: Quantity| {
                stored.f.iter().find(|(name, ..)| name == q.name()).map_or(0, |f| f.1)
            };
            prop_assert_eq!(alone.read, Counters::from_fn(|c| read(c.quantity())));
        }

        #[test]
        fn a_damaged_body_is_an_error_not_a_panic(stored in stored_strategy(), cut in any::<prop::sample::Index>(), flip in any::<(prop::sample::Index, u8)>()) {
            let body = encode(&stored, START).unwrap();
            let short = &body[..cut.index(body.len())];
            prop_assert!(decode(short, START).is_err());
            prop_assert!(counters(short, START).is_err());
            let _ = tally(short, Some("kitchen"));
            let mut flipped = body.clone();
            let at = flip.0.index(body.len());
            flipped[at] ^= flip.1 | 1;
            let _ = decode(&flipped, START);
            let _ = counters(&flipped, START);
            let _ = tally(&flipped, Some("kitchen"));
        }
    }
}
