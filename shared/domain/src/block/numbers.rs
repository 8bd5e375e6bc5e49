//! The number streams of a block (`super`): LEB128 varints, zigzag
//! integers, and a stream's tail in the smaller of two modes, bit-packed
//! frames of 32 or groups in one radix with exceptions (the module comment of `super`
//! tells when each wins). General coding, apart from the block's layout,
//! as VictoriaMetrics keeps `lib/encoding` apart from its blocks.

use super::{corrupt, BlockError};

/// Largest radix of a stream in radix mode (`Writer::radix`).
pub(super) const MAX_RADIX: u64 = 1 << 16;

pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Values per bit-packed frame.
pub(super) const FRAME: usize = 32;

pub(super) fn bit_width(frame: &[u64]) -> u32 {
    64 - frame.iter().fold(0, |m, v| m | v).leading_zeros()
}

pub(super) fn varint_len(v: u64) -> usize {
    (64 - v.leading_zeros()).max(1).div_ceil(7) as usize
}

/// Bytes `Writer::stream` takes for `values` with a head of `head`.
#[cfg(test)]
pub(super) fn stream_len(values: &[u64], head: usize) -> usize {
    stream_plan(values, head).0
}

/// Bytes `Writer::stream` takes for `values` with a head of `head`, and
/// the radix of its tail (for `Writer::planned`).
pub(super) fn stream_plan(values: &[u64], head: usize) -> (usize, u64) {
    let head = head.min(values.len());
    let (len, radix) = tail(&values[head..]);
    let head_len = values[..head].iter().map(|v| varint_len(*v)).sum::<usize>();
    (head_len + len, radix)
}

/// A stream's tail as version 4 writes it: its bytes, mode varint included,
/// and the radix (0: frames). In radix mode, values at or above the radix
/// are exceptions (`Writer::patched`): a noisy column whose rare spikes
/// would set the radix of every value keeps the radix of the rest.
pub(super) fn tail(values: &[u64]) -> (usize, u64) {
    tail_among(values, true)
}

/// [`tail`], with exceptions or without (the streams of exceptions
/// themselves: one level, so that trying a radix stays one pass or two).
fn tail_among(values: &[u64], with_exceptions: bool) -> (usize, u64) {
    let widths = Widths::of(values);
    let mut best = (1 + widths.frames, 0);
    // The radix without exceptions first: it bounds what one with them may
    // cost before its exceptions are looked at.
    let mut candidates = widths.radix_candidates(values);
    candidates.sort_by_key(|(_, exceptions)| *exceptions);
    for (r, exceptions) in candidates {
        let digits = radix_len(r, values.len());
        let len = if exceptions == 0 {
            varint_len(mode(r, false)) + digits
        } else if with_exceptions
            // At least their count and a byte for each of their two streams.
            && varint_len(mode(r, true)) + digits + varint_len(exceptions as u64) + 2 < best.0
        {
            varint_len(mode(r, true)) + patched_len(values, r)
        } else {
            continue;
        };
        if len < best.0 {
            best = (len, r);
        }
    }
    best
}

/// The radixes worth trying for `values`, each with how many values would
/// be exceptions: one above the largest (none), and one above the largest
/// of the narrowest bit width that holds at least seven eighths of the
/// values (more exceptions than that rarely pay, and each radix tried
/// costs passes over the values on every write).
#[cfg(test)]
pub(super) fn radix_candidates(values: &[u64]) -> Vec<(u64, usize)> {
    Widths::of(values).radix_candidates(values)
}

/// One pass over a stream: the bytes its frames take, and per bit width
/// how many values have it and the largest.
struct Widths {
    frames: usize,
    counts: [usize; 65],
    largest: [u64; 65],
}

impl Widths {
    fn of(values: &[u64]) -> Widths {
        let mut w = Widths {
            frames: 0,
            counts: [0; 65],
            largest: [0; 65],
        };
        for frame in values.chunks(FRAME) {
            let mut any = 0u64;
            for v in frame {
                any |= v;
                let width = (64 - v.leading_zeros()) as usize;
                w.counts[width] += 1;
                w.largest[width] = w.largest[width].max(*v);
            }
            w.frames += 1 + (frame.len() * (64 - any.leading_zeros()) as usize).div_ceil(8);
        }
        w
    }

    /// [`radix_candidates`] of the values these widths are of.
    fn radix_candidates(&self, values: &[u64]) -> Vec<(u64, usize)> {
        let (counts, largest) = (&self.counts, &self.largest);
        let mut out = Vec::new();
        let (mut below, mut max) = (0usize, 0u64);
        for width in 0..=64 {
            if counts[width] == 0 {
                continue;
            }
            below += counts[width];
            max = max.max(largest[width]);
            let Some(r) = max.checked_add(1).filter(|r| *r <= MAX_RADIX) else {
                break;
            };
            if below == values.len() || (below * 8 >= values.len() * 7 && out.is_empty()) {
                out.push((r, values.len() - below));
            }
        }
        // A radix with exceptions is worth a look only where its digits save
        // more than its exceptions are likely to cost (three bits each at the
        // least, in practice): most streams of smooth readings stop here.
        if let [(r, exceptions), (largest, 0)] = out[..] {
            let saved = radix_len(largest, values.len()).saturating_sub(radix_len(r, values.len()));
            if saved <= 3 + exceptions * 3 / 8 {
                out.remove(0);
            }
        }
        if values.is_empty() {
            out.push((1, 0));
        }
        out
    }
}

/// A stream's mode in version 4: 0 for frames, `2r - 1` for radix `r`,
/// `2r` for radix `r` with exceptions (their count follows).
fn mode(r: u64, with_exceptions: bool) -> u64 {
    if with_exceptions {
        2 * r
    } else {
        2 * r - 1
    }
}

/// Bytes `Writer::patched` takes for `values` in radix `r`, the exception
/// count included.
pub(super) fn patched_len(values: &[u64], r: u64) -> usize {
    let (gaps, highs) = exceptions(values, r);
    let nested = if gaps.is_empty() {
        0
    } else {
        tail_among(&gaps, false).0 + tail_among(&highs, false).0
    };
    radix_len(r, values.len()) + varint_len(gaps.len() as u64) + nested
}

/// The exceptions of `values` in radix `r`: each one's distance past the
/// one before, and `v / r - 1`.
fn exceptions(values: &[u64], r: u64) -> (Vec<u64>, Vec<u64>) {
    let (mut gaps, mut highs, mut last) = (Vec::new(), Vec::new(), None);
    for (i, v) in values.iter().enumerate() {
        if *v >= r {
            gaps.push(gap(last, i));
            highs.push(v / r - 1);
            last = Some(i);
        }
    }
    (gaps, highs)
}

/// How far an exception at `i` is past the one before (`None`: the first).
fn gap(last: Option<usize>, i: usize) -> u64 {
    (i - last.map_or(0, |l| l + 1)) as u64
}

/// Values of radix `r` (at least 2) in one group: as many as fit in 64 bits.
pub(super) fn group_size(r: u64) -> usize {
    let (mut g, mut power) = (0usize, 1u128);
    while power * u128::from(r) <= 1u128 << 64 {
        power *= u128::from(r);
        g += 1;
    }
    g
}

/// Values of radix `r` in one group as version 5 writes them: of the
/// group sizes up to [`group_size`], the one that takes the fewest bytes a
/// value (the larger of equals). A group is whole bytes, so the largest
/// group wastes up to 7 bits: 9 values of radix 101 (a ±5 W walk in
/// tenths) take 8 bytes, 7.1 bits each, where 6 take 5 bytes, 6.67 bits
/// each, next to their entropy (6.66).
pub(super) fn tight_group(r: u64) -> usize {
    // Planning a stream asks for several radices, and reading one for its
    // own: the small radices (a sensor's steps), whose groups are long,
    // come from a table made once.
    static SMALL: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    const TABLE: u64 = 1024;
    if r < TABLE {
        let table =
            SMALL.get_or_init(|| (0..TABLE).map(|r| tight_group_of(r.max(2)) as u8).collect());
        return usize::from(table[r as usize]);
    }
    tight_group_of(r)
}

fn tight_group_of(r: u64) -> usize {
    let (mut best, mut best_bytes) = (1usize, usize::MAX);
    let (mut k, mut power) = (0usize, 1u128);
    // Groups up to `group_size(r)`: `r^k` at most 2^64.
    while power * u128::from(r) <= 1u128 << 64 {
        power *= u128::from(r);
        k += 1;
        let bytes = (128 - (power - 1).leading_zeros()).div_ceil(8) as usize;
        // bytes / k <= best_bytes / best
        if best_bytes == usize::MAX || bytes * best <= best_bytes * k {
            (best, best_bytes) = (k, bytes);
        }
    }
    best
}

/// Bytes of a group of `k` values of radix `r`: those of `r^k - 1`.
pub(super) fn group_bytes(r: u64, k: usize) -> usize {
    let largest = u128::from(r).pow(k as u32) - 1;
    (128 - largest.leading_zeros()).div_ceil(8) as usize
}

/// Bytes of `n` values of radix `r` (none for `r = 1`).
pub(super) fn radix_len(r: u64, n: usize) -> usize {
    if r <= 1 || n == 0 {
        return 0;
    }
    let g = tight_group(r);
    let rest = n % g;
    (n / g) * group_bytes(r, g) + if rest > 0 { group_bytes(r, rest) } else { 0 }
}

/// Bytes `Writer::packed` takes for `values`.
#[cfg(test)]
pub(super) fn packed_len(values: &[u64]) -> usize {
    values
        .chunks(FRAME)
        .map(|f| 1 + (f.len() * bit_width(f) as usize).div_ceil(8))
        .sum()
}

#[derive(Default)]
pub struct Writer {
    pub bytes: Vec<u8>,
    /// Every stream in frames (see `encode`).
    pub(super) frames_only: bool,
}

impl Writer {
    pub fn byte(&mut self, b: u8) {
        self.bytes.push(b);
    }

    pub fn unsigned(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.bytes.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.bytes.push(v as u8);
    }

    pub fn signed(&mut self, v: i64) {
        self.unsigned(zigzag(v));
    }

    pub fn float(&mut self, v: f64) {
        self.bytes.extend_from_slice(&v.to_bits().to_le_bytes());
    }

    pub fn bytes(&mut self, b: &[u8]) {
        self.unsigned(b.len() as u64);
        self.bytes.extend_from_slice(b);
    }

    /// The first `head` values as varints, the rest in the smaller mode.
    pub(super) fn stream(&mut self, values: &[u64], head: usize) {
        let head = head.min(values.len());
        for v in &values[..head] {
            self.unsigned(*v);
        }
        let rest = &values[head..];
        let radix = if self.frames_only { 0 } else { tail(rest).1 };
        self.tail_in(rest, radix);
    }

    /// `values` as `stream` writes them, its radix already chosen by
    /// [`stream_plan`].
    pub(super) fn planned(&mut self, values: &[u64], head: usize, radix: u64) {
        if self.frames_only {
            return self.stream(values, head);
        }
        let head = head.min(values.len());
        for v in &values[..head] {
            self.unsigned(*v);
        }
        self.tail_in(&values[head..], radix);
    }

    /// A stream's tail in the mode of `radix` (0: frames): the mode varint,
    /// then the values.
    pub(super) fn tail_in(&mut self, values: &[u64], radix: u64) {
        if radix == 0 {
            self.unsigned(0);
            self.packed(values);
        } else if values.iter().all(|v| *v < radix) {
            self.unsigned(mode(radix, false));
            self.radix(values, radix);
        } else {
            self.unsigned(mode(radix, true));
            self.patched(values, radix);
        }
    }

    /// `values` in radix `r` with exceptions (version 4): the count of
    /// values at or above `r`, every value's digit (`v % r`), then, as two
    /// streams of their own, each exception's distance past the one before
    /// and its `v / r - 1` (a spike one minute in twenty: 9 bits each,
    /// where varints took 16).
    pub(super) fn patched(&mut self, values: &[u64], r: u64) {
        let (gaps, highs) = exceptions(values, r);
        self.unsigned(gaps.len() as u64);
        let digits: Vec<u64> = values.iter().map(|v| v % r).collect();
        self.radix(&digits, r);
        for nested in [gaps, highs] {
            self.tail_in(&nested, tail_among(&nested, false).1);
        }
    }

    /// Groups of `tight_group(r)` values, each one number in base `r` (the
    /// group's first value least significant), in `group_bytes` bytes,
    /// least significant first. Radix 1: nothing.
    pub(super) fn radix(&mut self, values: &[u64], r: u64) {
        if r <= 1 {
            return;
        }
        for group in values.chunks(tight_group(r)) {
            let number = group
                .iter()
                .rev()
                .fold(0u128, |n, v| n * u128::from(r) + u128::from(*v));
            let len = group_bytes(r, group.len());
            self.bytes.extend_from_slice(&number.to_le_bytes()[..len]);
        }
    }

    /// Frames of `FRAME` values: a width byte, then each value in that many
    /// bits, least significant first, the frame padded to a byte.
    pub(super) fn packed(&mut self, values: &[u64]) {
        for frame in values.chunks(FRAME) {
            let width = bit_width(frame);
            self.byte(width as u8);
            let (mut acc, mut filled) = (0u128, 0u32);
            for v in frame {
                acc |= u128::from(*v) << filled;
                filled += width;
                while filled >= 8 {
                    self.bytes.push(acc as u8);
                    acc >>= 8;
                    filled -= 8;
                }
            }
            if filled > 0 {
                self.bytes.push(acc as u8);
            }
        }
    }

    /// Runs of equal values: (length, value) pairs.
    pub(super) fn runs(&mut self, values: &[u64]) {
        let mut i = 0;
        while i < values.len() {
            let run = values[i..].iter().take_while(|v| **v == values[i]).count();
            self.unsigned(run as u64);
            self.unsigned(values[i]);
            i += run;
        }
    }
}

pub struct Reader<'a> {
    pub(super) bytes: &'a [u8],
    at: usize,
    /// Version 1's streams: heads inside the first frame.
    pub(super) headless: bool,
    /// Version 3's and 4's streams: a mode after the head.
    pub(super) radix: bool,
    /// Version 4's: radix streams carry exceptions (`Writer::patched`).
    pub(super) patched: bool,
    /// Version 5's: radix groups of `tight_group` values (before, of
    /// `group_size`).
    pub(super) tight: bool,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            at: 0,
            headless: false,
            radix: false,
            patched: false,
            tight: false,
        }
    }

    /// `n` values written by `Writer::stream` with a head of `head`.
    pub(super) fn stream(&mut self, n: usize, head: usize) -> Result<Vec<u64>, BlockError> {
        if self.headless {
            return self.packed(n);
        }
        let head = head.min(n);
        let mut out = Vec::with_capacity(n);
        for _ in 0..head {
            out.push(self.unsigned()?);
        }
        let mode = if self.radix { self.unsigned()? } else { 0 };
        // Version 4's mode says whether exceptions follow (`mode`).
        let (radix, patched) = match mode {
            m if self.patched && m > 0 => (m.div_ceil(2), m % 2 == 0),
            m => (m, false),
        };
        match radix {
            0 => out.extend(self.packed(n - head)?),
            r if r <= MAX_RADIX && patched => self.patched_values(n - head, r, &mut out)?,
            r if r <= MAX_RADIX => self.radix_values(n - head, r, &mut out)?,
            r => return Err(corrupt(format!("a radix of {r}"))),
        }
        Ok(out)
    }

    /// `n` values of radix `r` written by `Writer::radix`, onto `out`.
    pub(super) fn radix_values(
        &mut self,
        n: usize,
        r: u64,
        out: &mut Vec<u64>,
    ) -> Result<(), BlockError> {
        if r == 1 {
            out.resize(out.len() + n, 0);
            return Ok(());
        }
        let g = if self.tight {
            tight_group(r)
        } else {
            group_size(r)
        };
        let mut left = n;
        while left > 0 {
            let k = left.min(g);
            let len = group_bytes(r, k);
            let end = self.at + len;
            let raw = self
                .bytes
                .get(self.at..end)
                .ok_or_else(|| corrupt("it ends early"))?;
            self.at = end;
            let mut le = [0u8; 8];
            le[..len].copy_from_slice(raw);
            let mut number = u64::from_le_bytes(le);
            for _ in 0..k {
                out.push(number % r);
                number /= r;
            }
            if number != 0 {
                return Err(corrupt("a group of values past its radix"));
            }
            left -= k;
        }
        Ok(())
    }

    /// `n` values written by `Writer::patched`, appended to `out`.
    pub(super) fn patched_values(
        &mut self,
        n: usize,
        r: u64,
        out: &mut Vec<u64>,
    ) -> Result<(), BlockError> {
        let exceptions = self.unsigned()?;
        // The encoder's exceptions are at most an eighth of the values
        // (`radix_candidates`); a quarter is the bound read.
        if exceptions == 0 || exceptions.saturating_mul(4) > n as u64 {
            return Err(corrupt("a count of exceptions"));
        }
        let start = out.len();
        self.radix_values(n, r, out)?;
        let gaps = self.stream(exceptions as usize, 0)?;
        let highs = self.stream(exceptions as usize, 0)?;
        let mut at = None::<usize>;
        for (gap, high) in gaps.into_iter().zip(highs) {
            let i = usize::try_from(gap)
                .ok()
                .and_then(|gap| {
                    at.map_or(Some(0), |a: usize| a.checked_add(1))?
                        .checked_add(gap)
                })
                .filter(|i| *i < n)
                .ok_or_else(|| corrupt("an exception past the values"))?;
            out[start + i] = high
                .checked_add(1)
                .and_then(|h| h.checked_mul(r))
                .and_then(|h| h.checked_add(out[start + i]))
                .ok_or_else(|| corrupt("an exception too large"))?;
            at = Some(i);
        }
        Ok(())
    }

    pub fn done(&self) -> bool {
        self.at == self.bytes.len()
    }

    pub fn byte(&mut self) -> Result<u8, BlockError> {
        let b = *self
            .bytes
            .get(self.at)
            .ok_or_else(|| corrupt("it ends early"))?;
        self.at += 1;
        Ok(b)
    }

    /// A varint of at most ten bytes (the tenth's bits past 64 dropped).
    pub fn unsigned(&mut self) -> Result<u64, BlockError> {
        let mut at = self.at;
        let mut v = 0u64;
        let mut shift = 0;
        while let Some(&b) = self.bytes.get(at) {
            at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                self.at = at;
                return Ok(v);
            }
            shift += 7;
            if shift > 63 {
                return Err(corrupt("a varint is too long"));
            }
        }
        Err(corrupt("it ends early"))
    }

    pub fn signed(&mut self) -> Result<i64, BlockError> {
        self.unsigned().map(unzigzag)
    }

    pub fn float(&mut self) -> Result<f64, BlockError> {
        let end = self.at + 8;
        let raw = self
            .bytes
            .get(self.at..end)
            .ok_or_else(|| corrupt("it ends early"))?;
        self.at = end;
        Ok(f64::from_bits(u64::from_le_bytes(
            raw.try_into().expect("eight bytes"),
        )))
    }

    pub fn bytes(&mut self) -> Result<&'a [u8], BlockError> {
        let len = self.unsigned()? as usize;
        let end = self
            .at
            .checked_add(len)
            .ok_or_else(|| corrupt("a length overflows"))?;
        let b = self
            .bytes
            .get(self.at..end)
            .ok_or_else(|| corrupt("it ends early"))?;
        self.at = end;
        Ok(b)
    }

    /// `n` values written by `Writer::packed`.
    pub(super) fn packed(&mut self, n: usize) -> Result<Vec<u64>, BlockError> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let count = (n - out.len()).min(FRAME);
            let width = u32::from(self.byte()?);
            if width > 64 {
                return Err(corrupt("a frame wider than 64 bits"));
            }
            let (mut acc, mut filled) = (0u128, 0u32);
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            for _ in 0..count {
                while filled < width {
                    acc |= u128::from(self.byte()?) << filled;
                    filled += 8;
                }
                out.push(acc as u64 & mask);
                acc >>= width;
                filled -= width;
            }
        }
        Ok(out)
    }

    /// `n` values from runs of (length, value).
    pub(super) fn runs(&mut self, n: usize) -> Result<Vec<u64>, BlockError> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let run = self.unsigned()? as usize;
            let value = self.unsigned()?;
            if run == 0 || out.len() + run > n {
                return Err(corrupt("runs do not add up to the count"));
            }
            out.extend(std::iter::repeat_n(value, run));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_small_radices_table_is_the_rule() {
        for r in 2..1100 {
            assert_eq!(tight_group(r), tight_group_of(r), "radix {r}");
            assert!(tight_group(r) <= group_size(r));
        }
    }
}
