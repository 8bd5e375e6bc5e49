//! The stored shape in postcard's bytes (the embedded store's bodies of
//! version 2), and version 2's shape, which postcard wrote without `x`.

use super::stored::{
    Stored, StoredCounter, StoredField, StoredMark, StoredRoom, StoredTariffs, StoredVolumes,
};

/// The stored shape of rollup version 2 as postcard wrote it (an embedded
/// store's bodies before version 3 of its own form): `Stored` without `x`,
/// which postcard, whose fields are positional, cannot leave out. Read,
/// never written.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StoredV2<S = String> {
    pub v: u8,
    pub n: u64,
    pub f: Vec<StoredField<S>>,
    pub r: Vec<StoredRoom<S>>,
    pub b: Option<StoredCounter>,
    pub s: Option<StoredCounter>,
    pub k: (Option<StoredMark>, Option<StoredMark>),
}

impl<S> From<StoredV2<S>> for Stored<S> {
    fn from(o: StoredV2<S>) -> Self {
        Stored {
            v: o.v,
            n: o.n,
            f: o.f,
            r: o.r,
            b: o.b,
            s: o.s,
            k: o.k,
            x: None,
            t: None,
        }
    }
}

/// `Stored` before the tariffs (`t`), with `x`. Read, never written.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StoredV5<S = String> {
    pub v: u8,
    pub n: u64,
    pub f: Vec<StoredField<S>>,
    pub r: Vec<StoredRoom<S>>,
    pub b: Option<StoredCounter>,
    pub s: Option<StoredCounter>,
    pub k: (Option<StoredMark>, Option<StoredMark>),
    pub x: Option<StoredVolumes>,
}

impl<S> From<StoredV5<S>> for Stored<S> {
    fn from(o: StoredV5<S>) -> Self {
        Stored {
            v: o.v,
            n: o.n,
            f: o.f,
            r: o.r,
            b: o.b,
            s: o.s,
            k: o.k,
            x: o.x,
            t: None,
        }
    }
}

/// The stored shape in postcard's bytes (the embedded store's bodies of
/// version 2, and one whose field is outside the catalogue): with `x` and
/// `t`, with `x` alone, or with neither, as version 2 wrote every rollup
/// and as a span without gas, water or tariffs is written (postcard's
/// fields are positional: a field left out is absent, where its reader
/// expects it, so `to_postcard` writes `x` wherever there is a `t`).
pub fn from_postcard(bytes: &[u8]) -> Result<Stored<&str>, String> {
    postcard::from_bytes::<Stored<&str>>(bytes)
        .or_else(|_| postcard::from_bytes::<StoredV5<&str>>(bytes).map(Stored::from))
        .or_else(|_| postcard::from_bytes::<StoredV2<&str>>(bytes).map(Stored::from))
        .map_err(|e| e.to_string())
}

/// `stored` in postcard's bytes, as `from_postcard` reads them back: an
/// empty `x` before a `t` (positional fields), which decodes as none.
pub fn to_postcard(stored: &Stored) -> Result<Vec<u8>, String> {
    let empty = StoredVolumes {
        g: None,
        w: None,
        k: (None, None),
    };
    let bytes = match (&stored.x, &stored.t) {
        (None, Some(t)) => postcard::to_allocvec(&Stored {
            x: Some(empty),
            t: Some(StoredTariffs::clone(t)),
            ..stored.clone()
        }),
        _ => postcard::to_allocvec(stored),
    };
    bytes.map_err(|e| e.to_string())
}

/// The version a stored rollup's postcard bytes are in: its first byte
/// (`v`, a `u8`, which postcard writes as itself).
pub fn postcard_version(bytes: &[u8]) -> Option<u8> {
    bytes.first().copied()
}
