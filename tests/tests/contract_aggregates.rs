//! Aggregates and energy through the HTTP handlers, on every engine
//! (`on_every_store!`): hourly and local-day buckets, rooms pooling devices,
//! paging through long ranges, counter resets, gaps, a single reading, limits.

use integration_tests::handle;
use integration_tests::{
    answer, api_event, app, climate, on_every_store_and_batches, power, TestStore,
};
use serde_json::{json, Value};
use shared::api::{App, RouteSet};
use shared::store::Store;

async fn post<S: Store>(app: &App<S>, readings: &[Value]) {
    for chunk in readings.chunks(1000) {
        let body = serde_json::to_string(chunk).unwrap();
        let (status, answer) =
            answer(&handle(app, api_event("POST", "/readings", &[], Some(&body), &[])).await);
        assert_eq!(status, 200, "{answer}");
    }
}

async fn get<S: Store>(app: &App<S>, path: &str, query: &[(&str, &str)]) -> (u16, Value) {
    answer(&handle(app, api_event("GET", path, query, None, &[])).await)
}

fn at(minute: i64) -> String {
    let t = 1_795_219_200_000i64 + minute * 60_000; // 2026-11-21T00:00:00Z
    shared::model::Timestamp::from_millis(t)
        .unwrap()
        .to_string()
}

async fn hourly_stats_give_min_max_mean_count_and_omit_empty_buckets<S: TestStore>() {
    let app = app(S::fresh("stats").await, None, RouteSet::All).await;
    let readings: Vec<Value> = [(0, 20.0), (20, 22.0), (40, 24.0), (185, 18.0)]
        .iter()
        .map(|(m, t)| climate("s-bed", "bedroom", &at(*m), *t, 40.0 + *m as f64 / 10.0))
        .collect();
    post(&app, &readings).await;
    let (status, body) = get(
        &app,
        "/devices/s-bed/stats",
        &[
            ("from", "2026-11-21T00:00:00Z"),
            ("to", "2026-11-21T06:00:00Z"),
            ("bucket", "1h"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["empty_buckets"], "omitted");
    assert_eq!(
        (body["bucket"].clone(), body["tz"].clone()),
        (json!("1h"), json!("UTC"))
    );
    let buckets = body["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 2, "01:00 and 02:00 are empty: {body}");
    assert_eq!(buckets[0]["start"], "2026-11-21T00:00:00.000Z");
    assert_eq!(buckets[0]["end"], "2026-11-21T01:00:00.000Z");
    assert_eq!(
        buckets[0]["fields"]["temperature"],
        json!({"min": 20.0, "max": 24.0, "mean": 22.0, "count": 3})
    );
    assert_eq!(buckets[0]["fields"]["humidity"]["max"], json!(44.0));
    assert_eq!(buckets[1]["start"], "2026-11-21T03:00:00.000Z");
    assert_eq!(buckets[1]["count"], 1);
}

async fn room_stats_pool_every_device_of_the_room<S: TestStore>() {
    let app = app(S::fresh("roomstats").await, None, RouteSet::All).await;
    post(
        &app,
        &[
            climate("s-a", "living", &at(0), 20.0, 50.0),
            climate("s-b", "living", &at(5), 26.0, 40.0),
            climate("s-c", "kitchen", &at(5), 30.0, 40.0),
        ],
    )
    .await;
    let (status, body) = get(
        &app,
        "/rooms/living/stats",
        &[
            ("from", "2026-11-21T00:00:00Z"),
            ("to", "2026-11-22T00:00:00Z"),
            ("bucket", "1d"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["room_id"], "living");
    assert_eq!(
        body["buckets"][0]["fields"]["temperature"],
        json!({"min": 20.0, "max": 26.0, "mean": 23.0, "count": 2})
    );
}

/// `format=columns` says what the objects say, bucket by bucket, with a
/// null where a bucket has no value of a field; energy takes no format.
async fn stats_as_columns_match_the_objects<S: TestStore>() {
    let app = app(S::fresh("statscols").await, None, RouteSet::All).await;
    let mut readings: Vec<Value> = [(0, 20.0), (20, 22.5), (185, 18.25)]
        .iter()
        .map(|(m, t)| climate("s-col", "den", &at(*m), *t, 41.5))
        .collect();
    // A co2 value in the first hour only: null in the others.
    readings
        .push(json!({"device_id": "s-col", "timestamp": at(30), "room": "den", "co2_ppm": 612}));
    post(&app, &readings).await;
    let range = [
        ("from", "2026-11-21T00:00:00Z"),
        ("to", "2026-11-21T06:00:00Z"),
        ("bucket", "1h"),
    ];
    let (status, objects) = get(&app, "/devices/s-col/stats", &range).await;
    assert_eq!(status, 200, "{objects}");
    let with_format = [range.as_slice(), &[("format", "columns")]].concat();
    let (status, columns) = get(&app, "/devices/s-col/stats", &with_format).await;
    assert_eq!(status, 200, "{columns}");
    let names: Vec<&str> = columns["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(
        &names[..7],
        [
            "start",
            "end",
            "count",
            "co2_ppm_count",
            "co2_ppm_min",
            "co2_ppm_max",
            "co2_ppm_mean"
        ]
    );
    assert_eq!(names.len(), 3 + 3 * 4, "{names:?}");
    assert!(columns.get("buckets").is_none());
    for key in [
        "device_id",
        "from",
        "to",
        "bucket",
        "tz",
        "source",
        "items_read",
    ] {
        assert_eq!(columns[key], objects[key], "{key}");
    }
    let buckets = objects["buckets"].as_array().unwrap();
    let rows = columns["values"].as_array().unwrap();
    assert_eq!(rows.len(), buckets.len());
    for (row, bucket) in rows.iter().zip(buckets) {
        let time = |v: &Value| {
            shared::model::Timestamp::from_millis(v.as_i64().unwrap())
                .unwrap()
                .to_string()
        };
        assert_eq!(time(&row[0]), bucket["start"]);
        assert_eq!(time(&row[1]), bucket["end"]);
        assert_eq!(row[2], bucket["count"]);
        for (i, name) in names.iter().enumerate().skip(3) {
            let (field, stat) = name.rsplit_once('_').unwrap();
            assert_eq!(row[i], bucket["fields"][field][stat], "{name} of {bucket}");
        }
    }
    assert_eq!(
        rows[1][3],
        Value::Null,
        "no co2 in the 03:00 bucket: {columns}"
    );
    let (status, body) = get(&app, "/devices/s-col/energy", &[("format", "columns")]).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = get(&app, "/devices/s-col/stats", &[("format", "rows")]).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("format"), "{body}");
}

async fn day_buckets_follow_local_midnight_in_a_time_zone<S: TestStore>() {
    let app = app(S::fresh("tz").await, None, RouteSet::All).await;
    // 14:30 and 15:30 UTC are either side of midnight in Tokyo (UTC+9).
    post(
        &app,
        &[
            climate("s1", "r1", "2026-11-21T14:30:00Z", 10.0, 50.0),
            climate("s1", "r1", "2026-11-21T15:30:00Z", 30.0, 50.0),
        ],
    )
    .await;
    let q = [
        ("from", "2026-11-20T15:00:00Z"),
        ("to", "2026-11-22T15:00:00Z"),
        ("bucket", "1d"),
    ];
    let (_, utc) = get(&app, "/devices/s1/stats", &q).await;
    assert_eq!(
        utc["buckets"].as_array().unwrap().len(),
        1,
        "one UTC day: {utc}"
    );
    let (_, tokyo) = get(
        &app,
        "/devices/s1/stats",
        &[q[0], q[1], q[2], ("tz", "Asia/Tokyo")],
    )
    .await;
    let starts: Vec<&str> = tokyo["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["start"].as_str().unwrap())
        .collect();
    assert_eq!(
        starts,
        vec!["2026-11-20T15:00:00.000Z", "2026-11-21T15:00:00.000Z"]
    );
    assert_eq!(tokyo["tz"], "Asia/Tokyo");
}

async fn long_ranges_are_aggregated_page_by_page<S: TestStore>() {
    let app = app(S::fresh("long").await, None, RouteSet::All).await;
    let readings: Vec<Value> = (0..2500)
        .map(|m| {
            power(
                "meter-1",
                &at(m),
                100.0 + m as f64 * 0.01,
                0.0,
                (m % 100) as f64,
            )
        })
        .collect();
    post(&app, &readings).await;
    let (status, body) = get(
        &app,
        "/devices/meter-1/stats",
        &[
            ("from", "2026-11-21T00:00:00Z"),
            ("to", "2026-11-23T00:00:00Z"),
            ("bucket", "1d"),
        ],
    )
    .await;
    assert_eq!(status, 200);
    let counts: Vec<u64> = body["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .collect();
    assert_eq!(
        counts,
        vec![1440, 1060],
        "2500 readings over more than two pages of 1000"
    );
    assert_eq!(
        body["buckets"][0]["fields"]["current_w"]["max"],
        json!(99.0)
    );
}

/// An energy answer's buckets: start (hh:mm), kWh bought, kWh sold, resets.
fn energy_buckets(body: &Value) -> Vec<(String, f64, f64, u64)> {
    body["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["start"].as_str().unwrap()[11..16].to_owned(),
                b["kwh_bought"].as_f64().unwrap(),
                b["kwh_sold"].as_f64().unwrap(),
                b["resets"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// A counter that dips a little, or reads 0, is glitching, not a new meter:
/// no reset, and no energy spike when the old value comes back (the rule of
/// docs/rollups.md, as Home Assistant's 90 %).
async fn a_dip_or_a_zero_is_not_a_new_meter<S: TestStore>() {
    let app = app(S::fresh("dips").await, None, RouteSet::All).await;
    post(
        &app,
        &[
            power("meter-1", "2026-11-21T00:00:00Z", 5000.0, 10.0, 0.0),
            power("meter-1", "2026-11-21T00:20:00Z", 4990.0, 10.0, 0.0), // a dip
            power("meter-1", "2026-11-21T00:40:00Z", 5000.5, 10.0, 0.0),
            power("meter-1", "2026-11-21T01:00:00Z", 0.0, 0.0, 0.0), // a zero
            power("meter-1", "2026-11-21T01:30:00Z", 5001.0, 10.25, 0.0),
            power("meter-1", "2026-11-21T02:00:00Z", 4.0, 0.0, 0.0), // a new meter (sold reads 0)
            power("meter-1", "2026-11-21T02:30:00Z", 5.0, 0.5, 0.0), // sold: a new meter too
        ],
    )
    .await;
    let (status, body) = get(
        &app,
        "/devices/meter-1/energy",
        &[
            ("from", "2026-11-21T00:00:00Z"),
            ("to", "2026-11-21T03:00:00Z"),
            ("bucket", "1h"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        energy_buckets(&body),
        vec![
            ("00:00".into(), 0.5, 0.0, 0),
            ("01:00".into(), 0.5, 0.25, 0),
            ("02:00".into(), 1.0, 0.0, 2)
        ],
        "{body}"
    );
}

async fn energy_counts_growth_resets_gaps_and_the_reading_before_from<S: TestStore>() {
    let app = app(S::fresh("energy").await, None, RouteSet::All).await;
    post(
        &app,
        &[
            power("meter-1", "2026-11-20T23:30:00Z", 98.0, 10.0, 0.0), // before `from`
            power("meter-1", "2026-11-21T00:30:00Z", 100.0, 10.0, 0.0),
            power("meter-1", "2026-11-21T01:00:00Z", 101.5, 10.5, 0.0),
            power("meter-1", "2026-11-21T01:20:00Z", 2.0, 0.05, 0.0), // meter replaced
            power("meter-1", "2026-11-21T02:00:00Z", 3.0, 0.05, 0.0),
            // gap: nothing until 05:00
            power("meter-1", "2026-11-21T05:00:00Z", 6.0, 0.35, 0.0),
        ],
    )
    .await;
    let (status, body) = get(
        &app,
        "/devices/meter-1/energy",
        &[
            ("from", "2026-11-21T00:00:00Z"),
            ("to", "2026-11-21T06:00:00Z"),
            ("bucket", "1h"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let got = energy_buckets(&body);
    assert_eq!(
        got,
        vec![
            ("00:00".into(), 2.5, 0.5, 0), // half of 98->100 (1.0) + all of 100->101.5 (1.5); sold 10->10.5
            ("01:00".into(), 1.0, 0.0, 2), // reset of both counters, then 2->3 from 01:20
            // The 02:00->05:00 gap (three hours without a reading) grows
            // 3 kWh and 0.3 in its last hour, where the reading that shows
            // it arrived: 02:00 and 03:00 have no energy.
            ("04:00".into(), 3.0, 0.3, 0),
        ]
    );
    assert_eq!(
        (body["kwh_bought"].as_f64(), body["resets"].as_u64()),
        (Some(6.5), Some(2))
    );
    assert!(
        got.iter().all(|(_, p, n, _)| *p >= 0.0 && *n >= 0.0),
        "never negative"
    );

    // A single reading in the range (and none around it) has no energy to report.
    let (_, single) = get(
        &app,
        "/devices/other/energy",
        &[
            ("from", "2026-11-21T00:00:00Z"),
            ("to", "2026-11-21T06:00:00Z"),
        ],
    )
    .await;
    assert_eq!(single["buckets"], json!([]));
    post(
        &app,
        &[power("meter-2", "2026-11-21T03:00:00Z", 5.0, 0.0, 0.0)],
    )
    .await;
    let (_, single) = get(
        &app,
        "/devices/meter-2/energy",
        &[
            ("from", "2026-11-21T00:00:00Z"),
            ("to", "2026-11-21T06:00:00Z"),
        ],
    )
    .await;
    assert_eq!(
        (single["buckets"].clone(), single["kwh_bought"].clone()),
        (json!([]), json!(0.0))
    );
}

/// A meter's readings every 10 minutes for three days (2026-11-20 to 23,
/// UTC), of the counters it reports: `Some(minute)` for a counter it
/// reports from that minute on. Each counter's growth varies per reading.
fn meter_days(device: &str, bought_from: Option<i64>, sold_from: Option<i64>) -> Vec<Value> {
    let (mut bought, mut sold) = (1200.0f64, 35.0f64);
    (0..3 * 144)
        .map(|i| {
            let minute = -1440 + i * 10;
            bought += 0.05 * (1 + i % 5) as f64;
            sold += if (60..100).contains(&(i % 144)) {
                0.125
            } else {
                0.0
            };
            let mut r = json!({"device_id": device, "timestamp": at(minute), "type": "power",
                               "current_w": 300 + i % 7});
            if bought_from.is_some_and(|m| minute >= m) {
                r["cumulative_kwh_p"] = json!((bought * 1000.0).round() / 1000.0);
            }
            if sold_from.is_some_and(|m| minute >= m) {
                r["cumulative_kwh_n"] = json!((sold * 1000.0).round() / 1000.0);
            }
            r
        })
        .collect()
}

/// Energy by definition, from the readings alone (`growth_by_difference`
/// of each counter). Bucket start (RFC 3339) to (kWh bought, kWh sold).
fn energy_by_difference(
    readings: &[Value],
    bucket_of: impl Fn(&str) -> String,
) -> std::collections::BTreeMap<String, (f64, f64)> {
    let mut out = std::collections::BTreeMap::<String, (f64, f64)>::new();
    for (start, kwh) in growth_by_difference(readings, "cumulative_kwh_p", &bucket_of) {
        out.entry(start).or_default().0 += kwh;
    }
    for (start, kwh) in growth_by_difference(readings, "cumulative_kwh_n", &bucket_of) {
        out.entry(start).or_default().1 += kwh;
    }
    out
}

/// Energy from any counters a meter reports (issue 38): bought only (most
/// households, Tasmota's `ENERGY.Total`), sold only, both, and a meter that
/// gains its sold counter part way through a day. Per hour, day and month,
/// the answer equals the readings' own differences, on every engine.
async fn energy_from_every_subset_of_counters<S: TestStore>() {
    let app = app(S::fresh("subsets").await, None, RouteSet::All).await;
    let gains_at = 1440 + 13 * 60 + 10; // 2026-11-22T13:10Z
    let meters = [
        ("m-bought", Some(-1440), None),
        ("m-sold", None, Some(-1440)),
        ("m-both", Some(-1440), Some(-1440)),
        ("m-gains", Some(-1440), Some(gains_at)),
    ];
    for (device, bought_from, sold_from) in meters {
        let readings = meter_days(device, bought_from, sold_from);
        post(&app, &readings).await;
        // Whole hours, local days and a month, and a range from the middle of a day.
        for (bucket, from, to, cut) in [
            ("1h", at(-1440), at(2 * 1440), 13),
            ("1d", at(-1440), at(2 * 1440), 10),
            ("1mo", at(-1440), at(2 * 1440), 7),
            ("1h", at(600), at(1440 + 900), 13),
        ] {
            let (status, body) = get(
                &app,
                &format!("/devices/{device}/energy"),
                &[("from", &from), ("to", &to), ("bucket", bucket)],
            )
            .await;
            assert_eq!(status, 200, "{device} {bucket}: {body}");
            let inside: Vec<Value> = readings
                .iter()
                .filter(|r| {
                    let t = r["timestamp"].as_str().unwrap();
                    from.as_str() <= t && t <= to.as_str()
                })
                .cloned()
                .collect();
            let month = |t: &str| format!("{}-01T00:00:00.000Z", &t[..7]);
            let expected = energy_by_difference(&inside, |t| match bucket {
                "1mo" => month(t),
                _ => format!("{}{}", &t[..cut], &"0000-00-00T00:00:00.000Z"[cut..]),
            });
            let got: std::collections::BTreeMap<String, (f64, f64)> = body["buckets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| {
                    let start = b["start"].as_str().unwrap();
                    let start = if bucket == "1mo" {
                        month(start)
                    } else {
                        start.to_owned()
                    };
                    (
                        start,
                        (
                            b["kwh_bought"].as_f64().unwrap(),
                            b["kwh_sold"].as_f64().unwrap(),
                        ),
                    )
                })
                .collect();
            let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
            for (start, (bought, sold)) in &expected {
                let (b, s) = got.get(start).copied().unwrap_or_else(|| {
                    panic!("{device} {bucket} {from}: no bucket {start}: {body}")
                });
                assert!(
                    close(b, *bought) && close(s, *sold),
                    "{device} {bucket} {start}: {b} {s}, expected {bought} {sold}"
                );
            }
            for (start, (b, s)) in &got {
                assert!(
                    expected.contains_key(start) || (*b == 0.0 && *s == 0.0),
                    "{device} {bucket}: a bucket {start} the readings do not have: {body}"
                );
            }
            let total = |i: usize| expected.values().map(|v| [v.0, v.1][i]).sum::<f64>();
            assert!(
                close(body["kwh_bought"].as_f64().unwrap(), total(0)),
                "{body}"
            );
            assert!(
                close(body["kwh_sold"].as_f64().unwrap(), total(1)),
                "{body}"
            );
            // The meter's own counters, no other's: a counter it does not
            // report has no energy.
            if bought_from.is_none() {
                assert_eq!(body["kwh_bought"].as_f64(), Some(0.0), "{body}");
            } else {
                assert!(total(0) > 1.0, "{device}: {body}");
            }
            if sold_from.is_none() {
                assert_eq!(body["kwh_sold"].as_f64(), Some(0.0), "{body}");
            }
        }
    }
}

/// A counter's growth between its consecutive readings, in the bucket
/// where the first lies (readings on a 10-minute grid: no interval crosses
/// a bucket's edge). Bucket start to growth.
fn growth_by_difference(
    readings: &[Value],
    name: &str,
    bucket_of: impl Fn(&str) -> String,
) -> std::collections::BTreeMap<String, f64> {
    let series: Vec<(&str, f64)> = readings
        .iter()
        .filter_map(|r| Some((r["timestamp"].as_str()?, r[name].as_f64()?)))
        .collect();
    let mut out = std::collections::BTreeMap::new();
    for pair in series.windows(2) {
        *out.entry(bucket_of(pair[0].0)).or_default() += pair[1].1 - pair[0].1;
    }
    out
}

/// Gas and water meters are meters too: a P1 meter's telegram (electricity
/// both ways and gas, DSMR-reader's), a gas meter and a water meter alone.
/// Each answer's `m3_gas` and `m3_water` per hour, day and month are the
/// readings' own differences, beside the electricity, on every engine; a
/// meter without them has neither key.
async fn gas_and_water_give_their_volume_beside_the_electricity<S: TestStore>() {
    let app = app(S::fresh("volumes").await, None, RouteSet::All).await;
    let (mut gas, mut water) = (4021.117f64, 812.5f64);
    let mut readings: Vec<Value> = Vec::new();
    for (i, mut r) in meter_days("p1", Some(-1440), Some(-1440))
        .into_iter()
        .enumerate()
    {
        // Heating in the morning and evening: gas moves in some hours only.
        let hour = (i / 6) % 24;
        if (6..9).contains(&hour) || (17..22).contains(&hour) {
            gas += 0.017 * (1 + i % 3) as f64;
        }
        water += if i % 5 == 0 { 0.009 } else { 0.0 };
        let m3 = |v: f64| json!((v * 1000.0).round() / 1000.0);
        r["gas_m3"] = m3(gas);
        let t = r["timestamp"].clone();
        readings.push(r);
        readings.push(
            json!({"device_id": "gas-1", "type": "meter", "timestamp": t,
                             "gas_m3": m3(gas * 0.5)}),
        );
        readings.push(
            json!({"device_id": "water-1", "type": "meter", "timestamp": t,
                             "water_m3": m3(water)}),
        );
    }
    readings.extend(meter_days("m-plain", Some(-1440), None));
    post(&app, &readings).await;
    for (bucket, from, to, cut) in [
        ("1h", at(-1440), at(2 * 1440), 13),
        ("1d", at(-1440), at(2 * 1440), 10),
        ("1mo", at(-1440), at(2 * 1440), 7),
        ("1h", at(600), at(1440 + 900), 13),
    ] {
        let month = |t: &str| format!("{}-01T00:00:00.000Z", &t[..7]);
        let bucket_of = |t: &str| match bucket {
            "1mo" => month(t),
            _ => format!("{}{}", &t[..cut], &"0000-00-00T00:00:00.000Z"[cut..]),
        };
        for (device, counters) in [
            ("p1", &["kwh_bought", "kwh_sold", "m3_gas"][..]),
            ("gas-1", &["m3_gas"][..]),
            ("water-1", &["m3_water"][..]),
            ("m-plain", &["kwh_bought"][..]),
        ] {
            let (status, body) = get(
                &app,
                &format!("/devices/{device}/energy"),
                &[("from", &from), ("to", &to), ("bucket", bucket)],
            )
            .await;
            assert_eq!(status, 200, "{device} {bucket}: {body}");
            let inside: Vec<&Value> = readings
                .iter()
                .filter(|r| {
                    let t = r["timestamp"].as_str().unwrap();
                    r["device_id"] == device && from.as_str() <= t && t <= to.as_str()
                })
                .collect();
            let inside: Vec<Value> = inside.into_iter().cloned().collect();
            let buckets = body["buckets"].as_array().unwrap();
            for name in ["m3_gas", "m3_water"] {
                assert_eq!(
                    body.get(name).is_some(),
                    counters.contains(&name),
                    "{device} {name}: {body}"
                );
                assert!(
                    buckets
                        .iter()
                        .all(|b| b.get(name).is_some() == counters.contains(&name)),
                    "{device} {name}: {body}"
                );
            }
            for name in counters {
                let quantity = match *name {
                    "kwh_bought" => "cumulative_kwh_p",
                    "kwh_sold" => "cumulative_kwh_n",
                    "m3_gas" => "gas_m3",
                    _ => "water_m3",
                };
                let expected = growth_by_difference(&inside, quantity, bucket_of);
                let got: std::collections::BTreeMap<String, f64> = buckets
                    .iter()
                    .map(|b| {
                        let start = b["start"].as_str().unwrap();
                        let start = match bucket {
                            "1mo" => month(start),
                            _ => start.to_owned(),
                        };
                        (start, b[*name].as_f64().unwrap())
                    })
                    .collect();
                for (start, want) in &expected {
                    let v = got.get(start).copied().unwrap_or_else(|| {
                        panic!("{device} {bucket} {name}: no bucket {start}: {body}")
                    });
                    assert!(
                        (v - want).abs() < 1e-6,
                        "{device} {bucket} {name} {start}: {v}, expected {want}"
                    );
                }
                let total: f64 = expected.values().sum();
                assert!(
                    (body[*name].as_f64().unwrap() - total).abs() < 1e-6,
                    "{device} {name}: {total} {body}"
                );
                assert!(total > 0.05, "{device} {bucket} {name}: {total}");
            }
        }
    }
}

async fn too_many_buckets_and_bad_parameters_get_400<S: TestStore>() {
    let app = app(S::fresh("statslimits").await, None, RouteSet::All).await;
    for (path, q, param) in [
        (
            "/devices/m/stats",
            vec![
                ("from", "2025-01-01T00:00:00Z"),
                ("to", "2026-01-01T00:00:00Z"),
                ("bucket", "1m"),
            ],
            "bucket",
        ),
        ("/devices/m/energy", vec![("bucket", "7m")], "bucket"),
        ("/rooms/r/stats", vec![("tz", "Nowhere/Land")], "tz"),
        ("/rooms/r/stats", vec![("order", "desc")], "order"),
    ] {
        let (status, body) = get(&app, path, &q).await;
        assert_eq!(status, 400, "{path} {q:?}: {body}");
        assert_eq!(body["error"]["details"][0]["parameter"], param, "{body}");
    }
}

on_every_store_and_batches!(
    hourly_stats_give_min_max_mean_count_and_omit_empty_buckets,
    stats_as_columns_match_the_objects,
    day_buckets_follow_local_midnight_in_a_time_zone,
    long_ranges_are_aggregated_page_by_page,
    energy_counts_growth_resets_gaps_and_the_reading_before_from,
    a_dip_or_a_zero_is_not_a_new_meter,
    energy_from_every_subset_of_counters,
    gas_and_water_give_their_volume_beside_the_electricity,
    too_many_buckets_and_bad_parameters_get_400,
    ; items_only: room_stats_pool_every_device_of_the_room,
);
