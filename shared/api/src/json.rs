//! JSON as every answer writes it: `serde_json`, with one rule for numbers.
//! A zero is written `0.0`, never `-0.0` (a sum of no energy, `-0.0 * x`,
//! a rounded `-0.0004`): no client expects a negative zero, and some show
//! it as "-0". Every JSON body the API sends goes through this module, and
//! the hand-written writers in `views` apply `unsigned_zero` themselves.

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};
use std::io;

/// The number a JSON answer writes for `v`: `v`, or `0.0` for either zero.
pub fn unsigned_zero(v: f64) -> f64 {
    if v == 0.0 {
        0.0
    } else {
        v
    }
}

/// `serde_json`'s formatter `F`, with zeros unsigned.
struct Unsigned<F>(F);

impl<F: Formatter> Formatter for Unsigned<F> {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        self.0.write_f64(writer, unsigned_zero(value))
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        let value = if value == 0.0 { 0.0 } else { value };
        self.0.write_f32(writer, value)
    }

    // The pretty formatter's layout goes through these; the compact one's
    // are the defaults either way.
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn end_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_key(w)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// `v` as compact JSON, appended to `out`.
pub fn to_writer<W: io::Write, T: ?Sized + Serialize>(out: W, v: &T) -> serde_json::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(out, Unsigned(CompactFormatter));
    v.serialize(&mut ser)
}

/// `v` as compact JSON text.
pub fn to_string<T: ?Sized + Serialize>(v: &T) -> String {
    let mut out = Vec::with_capacity(128);
    to_writer(&mut out, v).expect("a JSON value serialises");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// `v` as indented JSON text (`pretty=true` of `/query`).
pub fn to_string_pretty<T: ?Sized + Serialize>(v: &T) -> String {
    let mut out = Vec::with_capacity(128);
    let mut ser =
        serde_json::Serializer::with_formatter(&mut out, Unsigned(PrettyFormatter::new()));
    v.serialize(&mut ser).expect("a JSON value serialises");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    proptest! {
        /// Any number, alone, in an array or an object, compact or pretty:
        /// the text is serde_json's for the same number with its zero
        /// unsigned, so it reads back as the number, and no zero has a sign.
        #[test]
        fn numbers_are_serde_json_s_with_zeros_unsigned(
            v in prop_oneof![Just(-0.0f64), Just(0.0), any::<f64>().prop_filter("finite", |v| v.is_finite()), -1e-3f64..1e-3],
            f in any::<f32>().prop_filter("finite", |v| v.is_finite()),
        ) {
            let doc = json!({"a": v, "b": [v, {"c": v}], "d": v * -0.0});
            let expected = serde_json::to_string(&json!({"a": unsigned_zero(v), "b": [unsigned_zero(v), {"c": unsigned_zero(v)}], "d": 0.0})).unwrap();
            prop_assert_eq!(to_string(&doc), expected);
            let back: serde_json::Value = serde_json::from_str(&to_string_pretty(&doc)).unwrap();
            prop_assert_eq!(back["a"].as_f64().unwrap(), v);
            prop_assert!(!back["d"].as_f64().unwrap().is_sign_negative());
            for text in [to_string(&doc), to_string_pretty(&doc), to_string(&f), to_string(&(f * -0.0))] {
                prop_assert!(!text.contains("-0.0,") && !text.contains("-0.0]") && !text.contains("-0.0}") && text != "-0.0", "{}", text);
            }
        }
    }

    #[test]
    fn the_pretty_layout_is_serde_json_s() {
        let doc = json!({"results": [{"statement_id": 0, "series": [{"values": [[1, 2.5]]}]}]});
        assert_eq!(
            to_string_pretty(&doc),
            serde_json::to_string_pretty(&doc).unwrap()
        );
    }
}
