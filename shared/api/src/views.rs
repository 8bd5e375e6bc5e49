//! What answers look like: a file per answer (`stats`, `energy`, a page of
//! readings in `columns`, the registry's records in `registry`).

mod columns;
mod energy;
mod registry;
mod stats;
pub use columns::ColumnsPage;
pub use energy::energy;
pub use registry::{DeviceView, RoomView};
pub use stats::stats;

#[cfg(test)]
mod tests {
    use super::columns::number;
    use super::stats::{rounded_mean, StatsAnswer};
    use super::*;
    use crate::params::Labels;
    use domain::aggregate::field_name::FieldName;
    use domain::aggregate::BucketStats;
    use domain::model::{DeviceId, Measurement, Quantity, Reading, RoomId, Timestamp};
    use proptest::prelude::*;
    use serde::Serialize;
    use serde_json::{json, Value};
    use usecases::query::ReadingsPage;
    use usecases::query::{Aggregate, StatsQuery};

    #[derive(Serialize)]
    struct Metered<'a> {
        #[serde(flatten)]
        page: &'a ColumnsPage<'a>,
        read_units: f64,
    }

    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![
            (-1_000_000_000_000i64..1_000_000_000_000).prop_map(|m| m as f64 / 1000.0),
            (-100_000i64..100_000).prop_map(|m| m as f64 / 1000.0),
            any::<f64>().prop_filter("finite", |v| v.is_finite()),
            Just(-0.0),
            Just(1e-7),
            Just(123_456_789_012.5),
            // Repeated values, as a sensor's page has them: written from
            // the texts remembered (`NumberTexts`).
            (0i64..4).prop_map(|m| 21.0 + m as f64 / 100.0),
            Just(0.1 + 0.2),
        ]
    }

    /// A page's readings: time, temperature, humidity, power, room and
    /// device of each.
    type Rows = Vec<(
        i64,
        Option<f64>,
        Option<f64>,
        Option<f64>,
        Option<usize>,
        usize,
    )>;

    fn rows() -> impl Strategy<Value = Rows> {
        // Devices, rooms and types that change from reading to reading or
        // stay (the writer reuses a reading's labels): some pages of one
        // device in one room, whose labels `labels=once` gives once.
        (
            prop::collection::vec(
                (
                    0i64..4_000_000_000_000,
                    prop::option::of(value()),
                    prop::option::of(value()),
                    prop::option::of(value()),
                    prop::option::of(0..2usize),
                    0..3usize,
                ),
                0..24,
            ),
            any::<bool>(),
        )
            .prop_map(|(rows, one_device_one_room)| {
                rows.into_iter()
                    .map(|(ms, t, h, w, room, device)| match one_device_one_room {
                        true => (ms, t, h, w, Some(0), 0),
                        false => (ms, t, h, w, room, device),
                    })
                    .collect()
            })
    }

    fn readings(rows: Rows) -> Vec<Reading> {
        rows.into_iter()
            .filter_map(|(ms, t, h, w, room, device)| {
                let mut values: Vec<(Quantity, f64)> =
                    w.map(|w| (Quantity::Power, w)).into_iter().collect();
                values.extend(t.map(|t| (Quantity::Temperature, t)));
                values.extend(h.map(|h| (Quantity::Humidity, h)));
                let room = room.map(|r| RoomId::parse(&format!("room-{r}")).unwrap());
                Some(Reading {
                    device_id: DeviceId::parse(&format!("dev-{device}")).unwrap(),
                    timestamp: Timestamp::from_millis(ms).ok()?,
                    measurement: Measurement::new(room, values).ok()?,
                })
            })
            .collect()
    }

    /// An answer and its read units, as the stats route wrote it through
    /// `serde` (`routes::Metered`).
    #[derive(Serialize)]
    struct MeteredStats<'a> {
        #[serde(flatten)]
        answer: &'a StatsAnswer<'a>,
        read_units: f64,
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// The hand-written stats answer is the bytes `serde_json` writes,
        /// as columns and as buckets: counts, whole thousandths, other
        /// floats, means, fields some buckets lack, days in a row (a
        /// start written as a copy of the end before it) or not.
        #[test]
        fn a_stats_answer_is_written_as_serde_json_writes_it(
            buckets in prop::collection::vec(
                (
                    0i64..4_000_000_000_000,
                    1u64..100_000,
                    prop::collection::vec(
                        (prop::sample::select(vec![Quantity::Temperature, Quantity::Humidity, Quantity::Power]), value(), value(), value(), 1u64..5000),
                        0..3,
                    ),
                ),
                0..12,
            ),
            columns in any::<bool>(),
            read_units in value(),
            days_in_a_row in any::<bool>(),
        ) {
            use domain::aggregate::{Bucketing, FieldStats, Width};
            // Days one after another (each start the end before it, as a
            // range's days are), or anywhere.
            let first = buckets.first().map_or(0, |b| b.0);
            let buckets: Vec<BucketStats> = buckets
                .into_iter()
                .enumerate()
                .map(|(i, (ms, count, fields))| (if days_in_a_row { first + i as i64 * 86_400_000 } else { ms }, count, fields))
                .map(|(ms, count, fields)| BucketStats {
                    start: Timestamp::from_millis(ms).unwrap(),
                    end: Timestamp::from_millis(ms + 86_400_000).unwrap(),
                    count,
                    fields: fields
                        .into_iter()
                        .map(|(q, min, max, sum, count)| (FieldName(q), FieldStats { min, max, sum, count }))
                        .collect(),
                })
                .collect();
            let a = Aggregate { buckets, source: usecases::query::Source::Rollups, items_read: 365 };
            let q = StatsQuery {
                range: domain::model::TimeRange::new(
                    Timestamp::from_millis(0).unwrap(),
                    Timestamp::from_millis(4_000_000_000_000).unwrap(),
                )
                .unwrap(),
                bucketing: Bucketing::new(Width::Day, None),
            };
            let answer = stats(("device_id", "dev-1"), &q, &a, columns);
            let mut expected = Vec::new(); super::super::json::to_writer(&mut expected, &MeteredStats { answer: &answer, read_units }).unwrap();
            prop_assert_eq!(
                String::from_utf8(answer.to_json_with_read_units(read_units)).unwrap(),
                String::from_utf8(expected).unwrap()
            );
        }

        /// A mean is written from its millionths as `number` writes the
        /// rounded mean: about 0.001 and 10^9 (where the shortcut starts
        /// and stops), halves of a millionth, negatives and any float.
        #[test]
        fn a_mean_is_written_as_number_writes_it_rounded(
            mean in prop_oneof![
                (-2_000_000i64..2_000_000).prop_map(|m| m as f64 / 1e6),
                (-1_000_000_000_000_000i64..1_000_000_000_000_000).prop_map(|m| m as f64 / 1e6),
                (-10_000_000i64..10_000_000).prop_map(|m| (m as f64 + 0.5) / 1e6),
                (900_000_000.0..1_100_000_000.0f64),
                any::<f64>().prop_filter("finite", |v| v.is_finite()),
                value(),
            ],
            count in 1u64..5000,
        ) {
            use domain::aggregate::FieldStats;
            let f = FieldStats { min: mean, max: mean, sum: mean * count as f64, count };
            let (mut ours, mut reference) = (Vec::new(), Vec::new());
            super::stats::mean(&mut ours, &f);
            number(&mut reference, rounded_mean(&f));
            prop_assert_eq!(String::from_utf8(ours).unwrap(), String::from_utf8(reference).unwrap());
        }

        /// `labels=once` says what `labels=each` says: its labels put back
        /// into every row as the columns `each` names give the same rows;
        /// and a label is given once exactly when every reading shares it.
        #[test]
        fn labels_given_once_are_the_columns_every_reading_shares(
            rows in rows(),
            devices in any::<bool>(),
        ) {
            let page = ReadingsPage { readings: readings(rows), next_cursor: None };
            let json = |labels| -> Value {
                serde_json::from_slice(
                    &ColumnsPage::new(&page, devices, labels).to_json_with_read_units(0.0),
                )
                .unwrap()
            };
            let (each, once) = (json(Labels::Each), json(Labels::Once));
            prop_assert!(each.get("labels").is_none());
            let given = once["labels"].as_object().unwrap();
            for (name, text) in given {
                let column = each["columns"].as_array().unwrap().iter().position(|c| c == name);
                let column = column.expect("a label given once is a column of `each`");
                prop_assert!(each["values"].as_array().unwrap().iter().all(|r| &r[column] == text));
                prop_assert!(!once["columns"].as_array().unwrap().contains(&json!(name)));
            }
            // Rebuilt: each row of `once` with the labels put back where
            // `each` has them.
            let once_columns = once["columns"].as_array().unwrap();
            let rebuilt: Vec<Value> = once["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|row| {
                    each["columns"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|c| match once_columns.iter().position(|o| o == c) {
                            Some(i) => row[i].clone(),
                            None => given[c.as_str().unwrap()].clone(),
                        })
                        .collect()
                })
                .collect();
            prop_assert_eq!(&Value::Array(rebuilt), &each["values"]);
            // A label that is a column of `once` differs between readings
            // (an empty page has no labels to give).
            let rows = once["values"].as_array().unwrap();
            prop_assert!(!rows.is_empty() || given.is_empty());
            for (i, c) in once_columns.iter().enumerate().filter(|_| !rows.is_empty()) {
                if ["device_id", "type", "room"].contains(&c.as_str().unwrap()) {
                    prop_assert!(rows.iter().any(|r| r[i] != rows[0][i]), "{} is the same in every row", c);
                }
            }
        }

        /// An arrays page is its columns page turned on its side: the same
        /// columns, labels, cursor and read units, and `arrays[c][r]` where
        /// the columns page has `values[r][c]`, every value as it wrote it.
        #[test]
        fn an_arrays_page_is_its_columns_page_transposed(
            rows in rows(),
            devices in any::<bool>(),
            once in any::<bool>(),
            cursor in prop::option::of("[a-zA-Z0-9]{1,8}"),
            read_units in 0.0..1000.0f64,
        ) {
            let page = ReadingsPage { readings: readings(rows), next_cursor: cursor };
            let labels = if once { Labels::Once } else { Labels::Each };
            let columns = ColumnsPage::new(&page, devices, labels);
            let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
            let rows_text = text(columns.to_json_with_read_units(read_units));
            let arrays_text = text(columns.to_arrays_json_with_read_units(read_units));
            let (mut by_rows, mut by_arrays): (Value, Value) = (
                serde_json::from_str(&rows_text).unwrap(),
                serde_json::from_str(&arrays_text).unwrap(),
            );
            let values = by_rows.as_object_mut().unwrap().remove("values").unwrap();
            let arrays = by_arrays.as_object_mut().unwrap().remove("arrays").unwrap();
            prop_assert_eq!(&by_rows, &by_arrays);
            let (values, arrays) = (values.as_array().unwrap(), arrays.as_array().unwrap());
            let width = by_rows["columns"].as_array().unwrap().len();
            prop_assert_eq!(arrays.len(), width);
            for (c, column) in arrays.iter().enumerate() {
                let column = column.as_array().unwrap();
                prop_assert_eq!(column.len(), values.len());
                for (r, row) in values.iter().enumerate() {
                    prop_assert_eq!(&column[r], &row[c]);
                }
            }
            // The same texts, not only the same values: the numbers are
            // written once by the same writer.
            let numbers = |t: &str| {
                let mut n: Vec<String> = t
                    .split(|c: char| !(c.is_ascii_digit() || "-.eE+".contains(c)))
                    .filter(|w| w.starts_with(|c: char| c.is_ascii_digit() || c == '-'))
                    .map(str::to_owned)
                    .collect();
                n.sort();
                n
            };
            prop_assert_eq!(numbers(&rows_text), numbers(&arrays_text));
        }

        /// The hand-written columns page is the bytes `serde_json` writes for
        /// the same page, whatever the values: whole thousandths (the fast
        /// path), other floats, negative zero, large and tiny magnitudes.
        #[test]
        fn a_columns_page_is_written_as_serde_json_writes_it(
            rows in rows(),
            devices in any::<bool>(),
            once in any::<bool>(),
            cursor in prop::option::of("[a-zA-Z0-9]{1,8}"),
            read_units in value(),
        ) {
            let readings = readings(rows);
            let page = ReadingsPage {
                readings,
                next_cursor: cursor,
            };
            let labels = if once { Labels::Once } else { Labels::Each };
            let columns = ColumnsPage::new(&page, devices, labels);
            let mut expected = Vec::new();
            super::super::json::to_writer(&mut expected, &Metered {
                page: &columns,
                read_units,
            })
            .unwrap();
            let written = columns.to_json_with_read_units(read_units);
            prop_assert_eq!(
                String::from_utf8(written).unwrap(),
                String::from_utf8(expected).unwrap()
            );
        }
    }
}
