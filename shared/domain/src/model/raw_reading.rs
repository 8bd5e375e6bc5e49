//! A reading object as a client sent it, borrowed from the request body: its
//! keys and loosely typed values, before `Reading::from_raw` checks them. It
//! exists for speed: deserialising straight into this (no `serde_json::Value`
//! tree, strings borrowed where they have no escapes) is most of what keeps
//! ingest within its CPU goal (docs/BENCHMARKS.md). It keeps the semantics of
//! `Value` (with serde_json's `preserve_order`, which the AWS SDK turns on):
//! keys in the order sent, and a repeated key keeps its first place and its last value.

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// One JSON value of a reading, as much as validation needs of it.
#[derive(Debug, Clone, PartialEq)]
pub enum RawValue<'a> {
    Null,
    Bool,
    Number(f64),
    Str(Cow<'a, str>),
    Array,
    Object,
}

impl RawValue<'_> {
    /// "a string", "an array", ...: how error messages name what was sent.
    pub fn json_type(&self) -> &'static str {
        match self {
            RawValue::Null => "null",
            RawValue::Bool => "a boolean",
            RawValue::Number(_) => "a number",
            RawValue::Str(_) => "a string",
            RawValue::Array => "an array",
            RawValue::Object => "an object",
        }
    }

    fn of(value: &Value) -> RawValue<'_> {
        match value {
            Value::Null => RawValue::Null,
            Value::Bool(_) => RawValue::Bool,
            // Without serde_json's `arbitrary_precision`, every number has an f64.
            Value::Number(n) => RawValue::Number(n.as_f64().unwrap_or(f64::NAN)),
            Value::String(s) => RawValue::Str(Cow::Borrowed(s)),
            Value::Array(_) => RawValue::Array,
            Value::Object(_) => RawValue::Object,
        }
    }
}

/// One element of a body: an object's fields (in the order sent, each key once),
/// or what else was sent in its place.
#[derive(Debug, Clone, PartialEq)]
pub enum RawReading<'a> {
    Object(Vec<(Cow<'a, str>, RawValue<'a>)>),
    NotObject(&'static str),
}

impl<'a> RawReading<'a> {
    /// From a parsed `Value` (tests, tools): the same fields the body parser sees.
    pub fn of(value: &'a Value) -> Self {
        match value {
            Value::Object(map) => RawReading::Object(
                map.iter()
                    .map(|(k, v)| (Cow::Borrowed(k.as_str()), RawValue::of(v)))
                    .collect(),
            ),
            other => RawReading::NotObject(RawValue::of(other).json_type()),
        }
    }
}

/// The fields of a reading object.
pub type RawFields<'a> = [(Cow<'a, str>, RawValue<'a>)];

/// The value of `key`, if sent.
pub fn field<'f, 'a>(fields: &'f RawFields<'a>, key: &str) -> Option<&'f RawValue<'a>> {
    // A reading has a handful of fields: a scan beats any index.
    fields.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// A whole `POST /readings` body: one reading, an array of them, or neither.
#[derive(Debug, Clone, PartialEq)]
pub enum RawBody<'a> {
    One(RawReading<'a>),
    Many(Vec<RawReading<'a>>),
    Neither,
}

/// A string that borrows from the body when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Consumes (and so checks the syntax of) an array or object nobody looks
/// into. Its values go through `RawValue`, not `IgnoredAny`, so that serde_json
/// counts their depth: nesting deeper than 128 stays `invalid_json`, as documented.
fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<RawValue>()?.is_some() {}
    Ok(())
}

fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, RawValue>()?.is_some() {}
    Ok(())
}

impl<'de> Deserialize<'de> for RawValue<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawValue<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(RawValue::Null)
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(RawValue::Null)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(RawValue::Bool)
            }
            fn visit_i64<E>(self, n: i64) -> Result<Self::Value, E> {
                Ok(RawValue::Number(n as f64))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Self::Value, E> {
                Ok(RawValue::Number(n as f64))
            }
            fn visit_f64<E>(self, n: f64) -> Result<Self::Value, E> {
                Ok(RawValue::Number(n))
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(RawValue::Str(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(RawValue::Str(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
                Ok(RawValue::Str(Cow::Owned(s)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                skip_seq(seq).map(|()| RawValue::Array)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                skip_map(map).map(|()| RawValue::Object)
            }
        }
        d.deserialize_any(V)
    }
}

fn object<'de, A: MapAccess<'de>>(mut map: A) -> Result<RawReading<'de>, A::Error> {
    let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(8));
    while let Some((Key(k), v)) = map.next_entry::<Key<'de>, RawValue<'de>>()? {
        match fields.iter_mut().find(|(seen, _)| *seen == k) {
            Some((_, earlier)) => *earlier = v,
            None => fields.push((k, v)),
        }
    }
    Ok(RawReading::Object(fields))
}

impl<'de> Deserialize<'de> for RawReading<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawReading<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a reading object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                object(map)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                skip_seq(seq).map(|()| RawReading::NotObject("an array"))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(RawReading::NotObject("null"))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(RawReading::NotObject("a boolean"))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(RawReading::NotObject("a number"))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(RawReading::NotObject("a number"))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(RawReading::NotObject("a number"))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(RawReading::NotObject("a string"))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for RawBody<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawBody<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a reading object or an array of readings")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                object(map).map(RawBody::One)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(16));
                while let Some(item) = seq.next_element::<RawReading<'de>>()? {
                    items.push(item);
                }
                Ok(RawBody::Many(items))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(RawBody::Neither)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(RawBody::Neither)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(RawBody::Neither)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(RawBody::Neither)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(RawBody::Neither)
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(RawBody::Neither)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn body(text: &str) -> RawBody<'_> {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn keys_keep_their_order_the_last_duplicate_wins_and_strings_borrow_without_escapes() {
        let RawBody::One(RawReading::Object(fields)) =
            body(r#"{"b":1,"a":"x","b":2,"c":"\u0041","d":[1,{"e":2}],"f":{},"g":null,"h":true}"#)
        else {
            panic!("an object")
        };
        let keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_ref()).collect();
        assert_eq!(keys, ["b", "a", "c", "d", "f", "g", "h"]);
        assert_eq!(field(&fields, "b"), Some(&RawValue::Number(2.0)));
        assert!(matches!(
            field(&fields, "a"),
            Some(RawValue::Str(Cow::Borrowed("x")))
        ));
        assert!(matches!(field(&fields, "c"), Some(RawValue::Str(Cow::Owned(s))) if s == "A"));
        assert_eq!(field(&fields, "d"), Some(&RawValue::Array));
        assert_eq!(field(&fields, "f"), Some(&RawValue::Object));
        assert_eq!(field(&fields, "g"), Some(&RawValue::Null));
        assert_eq!(field(&fields, "h"), Some(&RawValue::Bool));
        assert_eq!(field(&fields, "z"), None);
    }

    #[test]
    fn a_body_is_one_reading_an_array_or_neither() {
        assert_eq!(body("[]"), RawBody::Many(vec![]));
        assert_eq!(body("3"), RawBody::Neither);
        assert_eq!(body(r#""x""#), RawBody::Neither);
        assert_eq!(
            body(r#"[1,[2],null,"s",{}]"#),
            RawBody::Many(vec![
                RawReading::NotObject("a number"),
                RawReading::NotObject("an array"),
                RawReading::NotObject("null"),
                RawReading::NotObject("a string"),
                RawReading::Object(vec![]),
            ])
        );
        assert!(serde_json::from_str::<RawBody>("[{]").is_err());
        let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert!(serde_json::from_str::<RawBody>(&nested(127)).is_ok());
        let deep = serde_json::from_str::<RawBody>(&nested(129)).unwrap_err();
        assert!(deep.to_string().contains("recursion limit"), "{deep}");
        let deep_in_a_reading = format!(r#"{{"device_id":{}}}"#, nested(200));
        assert!(serde_json::from_str::<RawBody>(&deep_in_a_reading).is_err());
    }

    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            (-1e12f64..1e12).prop_map(Value::from),
            "[a-z\\\\\"é]{0,4}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[a-d]{1,2}", inner), 0..5)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// A reading-like object: keys that repeat and values of every type.
    fn object() -> impl Strategy<Value = Value> {
        prop::collection::vec(("[a-d]{1,2}", json()), 0..6)
            .prop_map(|kv| Value::Object(kv.into_iter().collect()))
    }

    proptest! {
        /// The body parser sees exactly what `serde_json::Value` would, duplicates
        /// and escapes included. (Key order is compared sorted: it depends on
        /// serde_json's `preserve_order`, which other crates switch on.)
        #[test]
        fn the_body_parser_agrees_with_value(items in prop::collection::vec(prop_oneof![3 => object(), 1 => json()], 0..4), dup in any::<bool>()) {
            let mut text = serde_json::to_string(&items).unwrap();
            if dup && text.starts_with("[{\"") {
                // A duplicate key, first: the later occurrence must win.
                text = text.replacen("[{", "[{\"a\":\"first\",", 1);
            }
            let value: Value = serde_json::from_str(&text).unwrap();
            let Value::Array(values) = &value else { unreachable!() };
            let sorted = |r: RawReading<'_>| -> String {
                match r {
                    RawReading::Object(mut fields) => {
                        fields.sort_by(|a, b| a.0.cmp(&b.0));
                        format!("{fields:?}")
                    }
                    other => format!("{other:?}"),
                }
            };
            let expected: Vec<String> = values.iter().map(|v| sorted(RawReading::of(v))).collect();
            let RawBody::Many(got) = serde_json::from_str::<RawBody>(&text).unwrap() else {
                panic!("an array")
            };
            let got: Vec<String> = got.into_iter().map(sorted).collect();
            prop_assert_eq!(got, expected);
        }
    }
}
