//! The dashboard (issue 15) through the handlers, on every engine: the pages
//! name the rooms and devices, charts carry one point per reading (short
//! ranges) or per bucket (long ones), the image routes, escaping, the quiet
//! flag, energy today and yesterday, and the token: a sign-in page, the
//! session cookie, and renames that a cross-site form cannot make; a
//! device's page offers the rooms there are to place it in.

use integration_tests::handle;
use integration_tests::{
    answer, api_event, app, climate, on_every_store, power, stream_event_for, TestStore,
};
use serde_json::{json, Value};
use shared::api::{App, RouteSet};
use shared::aws_lambda_events::apigw::ApiGatewayV2httpResponse;
use shared::model::{Reading, Timestamp};
use shared::store::Store;

const TOKEN: &str = "dash-token";

fn bearer() -> (&'static str, String) {
    ("authorization", format!("Bearer {TOKEN}"))
}

/// Minutes before now, on the minute.
fn ago(minutes: i64) -> String {
    let now = Timestamp::now().millis();
    Timestamp::from_millis(now - now % 60_000 - minutes * 60_000)
        .unwrap()
        .to_string()
}

async fn post<S: Store>(app: &App<S>, readings: &[Value]) {
    let (b, v) = bearer();
    for chunk in readings.chunks(1000) {
        let body = serde_json::to_string(chunk).unwrap();
        let (status, answer) = answer(
            &handle(
                app,
                api_event("POST", "/readings", &[], Some(&body), &[(b, &v)]),
            )
            .await,
        );
        assert_eq!(status, 200, "{answer}");
    }
    if !app.store.capabilities().registry_follows_writes {
        // DynamoDB: the registry function's part, from the table's stream.
        let readings: Vec<Reading> = readings
            .iter()
            .map(|v| Reading::from_json(v, Timestamp::now(), |_| None).unwrap())
            .collect();
        let r = shared::stream::handle(&app.store, stream_event_for(&readings)).await;
        assert!(r.batch_item_failures.is_empty());
    }
    app.registry.invalidate();
}

async fn get<S: Store>(
    app: &App<S>,
    path: &str,
    query: &[(&str, &str)],
    headers: &[(&str, &str)],
) -> ApiGatewayV2httpResponse {
    handle(app, api_event("GET", path, query, None, headers)).await
}

fn text(r: &ApiGatewayV2httpResponse) -> (u16, String) {
    let (status, body) = answer(r);
    let text = match body {
        Value::String(s) => s,
        other => other.to_string(),
    };
    (status, text)
}

fn header<'a>(r: &'a ApiGatewayV2httpResponse, name: &str) -> &'a str {
    r.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

fn set_cookie(r: &ApiGatewayV2httpResponse) -> String {
    r.cookies
        .first()
        .cloned()
        .unwrap_or_else(|| header(r, "set-cookie").to_owned())
}

/// `data-points` of the figure of `key` on a page.
fn points(page: &str, key: &str) -> usize {
    let at = page
        .find(&format!("data-chart=\"{key}\""))
        .unwrap_or_else(|| panic!("no chart {key}"));
    let rest = &page[at..];
    rest.split("data-points=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// A day and two hours of a bedroom sensor and a meter every 10 minutes, and
/// a hall sensor quiet for three hours.
fn history() -> Vec<Value> {
    let mut out = Vec::new();
    for i in 0..156 {
        let m = 10 + i * 10;
        out.push(climate(
            "s-bed",
            "bedroom",
            &ago(m),
            19.0 + (i % 7) as f64 * 0.5,
            45.0,
        ));
        out.push(power(
            "meter-1",
            &ago(m),
            1000.0 + (156 - i) as f64 * 0.1,
            50.0,
            300.0,
        ));
    }
    out.push(climate("s-hall", "hall", &ago(180), 17.5, 60.0));
    out
}

async fn pages_name_rooms_and_devices_and_draw_every_reading<S: TestStore>() {
    let app = app(S::fresh("dash-pages").await, Some(TOKEN), RouteSet::All).await;
    post(&app, &history()).await;
    let (b, v) = bearer();
    let auth = [(b, v.as_str())];

    let r = get(&app, "/", &[], &auth).await;
    let (status, page) = text(&r);
    assert_eq!(status, 200, "{page}");
    assert!(header(&r, "content-type").starts_with("text/html"));
    for name in ["bedroom", "hall", "s-bed", "meter-1", "s-hall"] {
        assert!(
            page.contains(&format!(">{name}<")),
            "{name} on the overview"
        );
    }
    // The hall sensor, three hours quiet, is flagged; the others are not.
    let row = |d: &str| {
        let at = page.find(&format!("data-device=\"{d}\"")).unwrap();
        page[at..].split("</tr>").next().unwrap().to_owned()
    };
    assert!(row("s-hall").contains("quiet"));
    assert!(!row("s-bed").contains("quiet"));
    // A 24-hour sparkline per room: the bedroom's hours with readings.
    let bedroom = &page[page.find("data-room=\"bedroom\"").unwrap()..];
    let spark: usize = bedroom
        .split("data-points=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((24..=25).contains(&spark), "{spark}");

    // The device page over 24 hours: one point per reading in the range.
    let r = get(&app, "/ui/devices/s-bed", &[("range", "24h")], &auth).await;
    let (status, page) = text(&r);
    assert_eq!(status, 200);
    // Readings 10, 20, ... minutes ago: those less than a day ago.
    let in_day = (1..=156).filter(|i| i * 10 < 24 * 60).count();
    assert_eq!(points(&page, "temperature"), in_day);
    assert_eq!(points(&page, "humidity"), in_day);
    assert!(page.contains("Latest reading"));
    // Its name and its room, to place it in another: the rooms there are to
    // pick from.
    assert_eq!(attr_after(&page, "id=\"rename\"", "data-room"), "bedroom");
    assert_eq!(attr_after(&page, "<input id=\"room\"", "value"), "bedroom");
    let picks: Vec<&str> = page
        .split("<datalist id=\"rooms\">")
        .nth(1)
        .unwrap()
        .split("</datalist>")
        .next()
        .unwrap()
        .split("<option value=\"")
        .skip(1)
        .map(|o| o.split('"').next().unwrap())
        .collect();
    assert_eq!(picks, ["bedroom", "hall"]);
    // Seven days: a band of hourly buckets (27 hours hold readings at most).
    let r = get(&app, "/ui/devices/s-bed", &[("range", "7d")], &auth).await;
    let (_, page) = text(&r);
    let hours = points(&page, "temperature");
    assert!((26..=28).contains(&hours), "{hours}");
    // The meter: its power line and energy bars, hourly over a day.
    let (_, page) = text(&get(&app, "/ui/devices/meter-1", &[("range", "24h")], &auth).await);
    assert_eq!(points(&page, "current_w"), in_day);
    let bars = points(&page, "energy");
    assert!((24..=25).contains(&bars), "{bars}");
    // The room page.
    let (status, page) = text(&get(&app, "/ui/rooms/bedroom", &[("range", "24h")], &auth).await);
    assert_eq!(status, 200);
    assert_eq!(points(&page, "temperature"), in_day);
    assert!(page.contains("/ui/devices/s-bed"));

    // The same chart as an image.
    let r = get(
        &app,
        "/devices/s-bed/chart.svg",
        &[("quantity", "temperature"), ("range", "24h")],
        &auth,
    )
    .await;
    let (status, svg) = text(&r);
    assert_eq!(status, 200);
    assert_eq!(header(&r, "content-type"), "image/svg+xml");
    assert!(svg.starts_with("<svg"));
    assert!(svg.contains(&format!("data-points=\"{in_day}\"")));
    let r = get(
        &app,
        "/rooms/bedroom/chart.svg",
        &[("quantity", "humidity"), ("range", "7d")],
        &auth,
    )
    .await;
    assert_eq!(text(&r).0, 200);
    // The custom range form: wall times in the page's zone, as the browser sends them.
    let hours_ago = |h: i64| {
        let ms = Timestamp::now().millis() - h * 3_600_000;
        let t = chrono::DateTime::from_timestamp_millis(ms).unwrap();
        t.with_timezone(&shared::model::Zone::named("Asia/Tokyo").unwrap())
            .format("%Y-%m-%dT%H:%M")
            .to_string()
    };
    let (from, to) = (hours_ago(6), hours_ago(0));
    let r = get(
        &app,
        "/ui/devices/s-bed",
        &[("from", &from), ("to", &to), ("tz", "Asia/Tokyo")],
        &auth,
    )
    .await;
    let (status, page) = text(&r);
    assert_eq!(status, 200, "{page}");
    let six_hours = (1..=156).filter(|i| i * 10 < 6 * 60).count();
    let drawn = points(&page, "temperature");
    assert!((six_hours - 1..=six_hours + 1).contains(&drawn), "{drawn}");
    assert!(
        page.contains(&format!("value=\"{from}\"")),
        "the form shows the range"
    );
    // A custom year: drawn in daily bands, not refused for holding more
    // hours than a stats request may ask for.
    let year = (hours_ago(365 * 24), hours_ago(0));
    for path in ["/ui/devices/s-bed", "/ui/rooms/bedroom"] {
        let r = get(
            &app,
            path,
            &[("from", &year.0), ("to", &year.1), ("tz", "Asia/Tokyo")],
            &auth,
        )
        .await;
        let (status, page) = text(&r);
        assert_eq!(status, 200, "{path}: {page}");
        let days = points(&page, "temperature");
        assert!((1..=3).contains(&days), "{path}: {days} daily bands");
    }
}

async fn bad_parameters_get_a_400_that_names_them<S: TestStore>() {
    let app = app(S::fresh("dash-bad").await, None, RouteSet::All).await;
    post(&app, &history()).await;
    for (path, query, field) in [
        (
            "/devices/s-bed/chart.svg",
            vec![("quantity", "cumulative_kwh_p")],
            "quantity",
        ),
        ("/devices/s-bed/chart.svg", vec![], "quantity"),
        (
            "/devices/s-bed/chart.svg",
            vec![("quantity", "temperature"), ("width", "9")],
            "width",
        ),
        (
            "/rooms/bedroom/chart.svg",
            vec![("quantity", "energy")],
            "quantity",
        ),
        ("/ui/devices/s-bed", vec![("range", "2w")], "range"),
        ("/ui/devices/s-bed", vec![("tz", "Mars/Base")], "tz"),
        ("/", vec![("rnage", "7d")], "rnage"),
    ] {
        let (status, body) = answer(&get(&app, path, &query, &[]).await);
        assert_eq!(status, 400, "{path} {query:?}: {body}");
        let named: Vec<&str> = body["error"]["details"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|d| d["field"].as_str().or(d["parameter"].as_str()))
            .collect();
        assert!(named.contains(&field), "{path} {query:?}: {body}");
    }
    let r = get(&app, "/ui/devices/nobody", &[], &[]).await;
    assert_eq!(r.status_code, 404);
    assert!(text(&r).1.contains("No device nobody"));
    let (status, _) = answer(
        &get(
            &app,
            "/devices/nobody/chart.svg",
            &[("quantity", "temperature")],
            &[],
        )
        .await,
    );
    assert_eq!(status, 404);
}

async fn names_are_escaped<S: TestStore>() {
    let app = app(S::fresh("dash-escape").await, None, RouteSet::All).await;
    post(&app, &history()).await;
    let body = json!({"name": "<script>alert(1)</script> & co"}).to_string();
    let (status, answer_body) = answer(
        &handle(
            &app,
            api_event("PUT", "/devices/s-bed", &[], Some(&body), &[]),
        )
        .await,
    );
    assert_eq!(status, 200, "{answer_body}");
    app.registry.invalidate();
    for path in ["/", "/ui/devices/s-bed", "/ui/rooms/bedroom"] {
        let (status, page) = text(&get(&app, path, &[], &[]).await);
        assert_eq!(status, 200);
        assert!(!page.contains("<script>alert"), "{path}");
        assert!(
            page.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; co"),
            "{path}"
        );
    }
}

/// The attribute `name` of the first element after `marker` on a page.
fn attr_after(page: &str, marker: &str, name: &str) -> String {
    let at = page.find(marker).unwrap_or_else(|| panic!("no {marker}"));
    page[at..]
        .split(&format!("{name}=\""))
        .nth(1)
        .unwrap_or_else(|| panic!("no {name} after {marker}"))
        .split('"')
        .next()
        .unwrap()
        .to_owned()
}

/// kWh bought and sold of `/devices/{device}/energy` over `[from, to)`.
async fn energy_route<S: Store>(
    app: &App<S>,
    device: &str,
    from: i64,
    to: i64,
    bucket: &str,
) -> Option<(f64, f64)> {
    let from = Timestamp::from_millis(from).unwrap().to_string();
    let to = Timestamp::from_millis(to).unwrap().to_string();
    let (status, e) = answer(
        &get(
            app,
            &format!("/devices/{device}/energy"),
            &[("from", &from), ("to", &to), ("bucket", bucket)],
            &[],
        )
        .await,
    );
    assert_eq!(status, 200, "{e}");
    let buckets = e["buckets"].as_array().unwrap();
    (!buckets.is_empty()).then(|| {
        (
            e["kwh_bought"].as_f64().unwrap(),
            e["kwh_sold"].as_f64().unwrap(),
        )
    })
}

/// The overview's day to check a meter's figures on, as (name, from, to):
/// today, or in the first half hour after midnight UTC, when the tests'
/// histories (a reading every ten minutes up to ten minutes ago) may not
/// reach into today yet and its row says "No readings", yesterday.
fn checked_day(now: i64) -> (&'static str, i64, i64) {
    let midnight = now - now.rem_euclid(86_400_000);
    match now - midnight >= 30 * 60_000 {
        true => ("Today", midnight, midnight + 86_400_000),
        false => ("Yesterday", midnight - 86_400_000, midnight),
    }
}

/// `/devices/{device}/energy` over `[from, to)`, a day.
async fn energy_day<S: Store>(app: &App<S>, device: &str, from: i64, to: i64) -> Value {
    let from = Timestamp::from_millis(from).unwrap().to_string();
    let to = Timestamp::from_millis(to).unwrap().to_string();
    let query = [
        ("from", from.as_str()),
        ("to", to.as_str()),
        ("bucket", "1d"),
    ];
    let (status, e) = answer(&get(app, &format!("/devices/{device}/energy"), &query, &[]).await);
    assert_eq!(status, 200, "{e}");
    e
}

/// m³ of gas of `/devices/{device}/energy` over `[from, to)`, a day.
async fn m3_gas_route<S: Store>(app: &App<S>, device: &str, from: i64, to: i64) -> f64 {
    let e = energy_day(app, device, from, to).await;
    e["m3_gas"]
        .as_f64()
        .unwrap_or_else(|| panic!("no m3_gas: {e}"))
}

/// A period's row of a table of energy totals: its cells.
fn period_row<'a>(table: &'a str, period: &str) -> &'a str {
    let at = table
        .find(&format!("data-period=\"{period}\""))
        .unwrap_or_else(|| panic!("{period}: {table}"));
    table[at..].split("</tr>").next().unwrap()
}

/// The cost a table's row shows.
fn cost_in(row: &str) -> f64 {
    row.split("class=\"num cost\">")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .unwrap_or_else(|| panic!("no cost: {row}"))
        .parse()
        .unwrap()
}

/// A meter that reports its bought counter alone, beside the two-counter one.
fn bought_only() -> Vec<Value> {
    (0..156)
        .map(|i| {
            json!({"device_id": "plug-1", "timestamp": ago(10 + i * 10), "type": "power",
                   "cumulative_kwh_p": 40.0 + (156 - i) as f64 * 0.05, "current_w": 120.0})
        })
        .collect()
}

/// The overview's electricity: today, yesterday, this month and last
/// month of each meter (a bought-only one too; not summed, as a plug is
/// often inside the house's meter), what the energy route answers for the
/// same periods; without a price there is no cost.
async fn the_overview_s_electricity_is_the_energy_routes<S: TestStore>() {
    let app = app(S::fresh("dash-energy").await, None, RouteSet::All).await;
    post(&app, &history()).await;
    post(&app, &bought_only()).await;
    let (_, page) = text(&get(&app, "/", &[], &[]).await);
    let now = Timestamp::now().millis();
    let midnight = now - now.rem_euclid(86_400_000);
    let month = |back: u32| {
        use chrono::{Datelike, TimeZone};
        let t = chrono::Utc
            .timestamp_millis_opt(now)
            .unwrap()
            .date_naive()
            .with_day(1)
            .unwrap();
        let t = t.checked_sub_months(chrono::Months::new(back)).unwrap();
        let next = t.checked_add_months(chrono::Months::new(1)).unwrap();
        let ms =
            |d: chrono::NaiveDate| d.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp_millis();
        (ms(t), ms(next))
    };
    for (device, sells) in [("meter-1", true), ("plug-1", false)] {
        let table = &page[page
            .find(&format!(
                "<table class=\"energy-totals\" data-device=\"{device}\""
            ))
            .unwrap()..];
        let table = table.split("</table>").next().unwrap();
        assert_eq!(
            table.contains("class=\"num sold\""),
            sells,
            "{device}: {table}"
        );
        for (period, (from, to), bucket) in [
            ("Today", (midnight, midnight + 86_400_000), "1d"),
            ("Yesterday", (midnight - 86_400_000, midnight), "1d"),
            ("This month", month(0), "1mo"),
            ("Last month", month(1), "1mo"),
        ] {
            let row = period_row(table, period);
            let Some(want) = energy_route(&app, device, from, to, bucket).await else {
                // Last month, unless today is its first: the meters began yesterday.
                assert!(
                    row.contains("No readings") && !row.contains("data-kwh"),
                    "{device} {period}: {row}"
                );
                continue;
            };
            let bought: f64 = attr_after(row, "data-period", "data-kwh").parse().unwrap();
            assert!(
                (bought - want.0).abs() < 1e-9,
                "{device} {period}: {bought} {want:?}"
            );
            if sells {
                let sold: f64 = attr_after(row, "class=\"num sold\"", "data-kwh")
                    .parse()
                    .unwrap();
                assert!(
                    (sold - want.1).abs() < 1e-9,
                    "{device} {period}: {sold} {want:?}"
                );
            }
        }
    }
    assert!(!page.contains("Cost"), "no price, no cost");
}

/// A meter's page: bars per hour of yesterday and today, per day of 30
/// days and per month of 12, whose bars add up to their totals and to the
/// energy route; a bought-only meter shows no sold column; with a price,
/// the cost of what was bought.
async fn a_meter_s_page_has_energy_bars_with_totals<S: TestStore>() {
    let tariff = shared::domain::tariff::Tariff::parse("0.25", "GBP").unwrap();
    let app = app(S::fresh("dash-meter").await, None, RouteSet::All)
        .await
        .with_tariff(tariff);
    post(&app, &history()).await;
    post(&app, &bought_only()).await;
    let now = Timestamp::now().millis();
    let midnight = now - now.rem_euclid(86_400_000);
    for (device, sells) in [("meter-1", true), ("plug-1", false)] {
        let (status, page) = text(&get(&app, &format!("/ui/devices/{device}"), &[], &[]).await);
        assert_eq!(status, 200, "{page}");
        assert!(
            page.contains("id=\"energy\""),
            "{device}: an energy section"
        );
        assert_eq!(page.contains("Sold (kWh)"), sells, "{device}");
        for (key, from, bucket) in [
            ("energy-hours", midnight - 86_400_000, "1h"),
            ("energy-days", midnight - 29 * 86_400_000, "1d"),
        ] {
            let marker = format!("data-chart=\"{key}\"");
            let values: Vec<(i64, i64, f64, f64, f64)> = serde_json::from_str(
                &attr_after(&page, &marker, "data-values").replace("&quot;", "\""),
            )
            .unwrap();
            let total: f64 = attr_after(&page, &marker, "data-total-bought")
                .parse()
                .unwrap();
            let summed: f64 = values.iter().map(|v| v.2).sum();
            assert!(
                (summed - total).abs() < 1e-9,
                "{device} {key}: {summed} {total}"
            );
            let (want, _) = energy_route(&app, device, from, midnight + 86_400_000, bucket)
                .await
                .unwrap();
            assert!(
                (total - want).abs() < 1e-9,
                "{device} {key}: {total} {want}"
            );
            assert!(total > 1.0, "{device} {key}: {total}");
            if key == "energy-hours" {
                assert!(values.iter().all(|v| v.1 - v.0 == 3_600_000), "hourly bars");
                // Yesterday's 24, and today's so far: none in the first
                // ten minutes after midnight, when the newest reading
                // (ten minutes ago) is still yesterday's.
                assert!((24..=48).contains(&values.len()), "{}", values.len());
            }
        }
        assert!(page.contains("data-chart=\"energy-months\""));
        // Today in India (5:30 ahead, where an hour bucket straddles local
        // midnight) is the energy route's local day.
        let (_, india) = text(
            &get(
                &app,
                &format!("/ui/devices/{device}"),
                &[("tz", "Asia/Kolkata")],
                &[],
            )
            .await,
        );
        let offset = 19_800_000; // 5:30
        let local_midnight = (now + offset) - (now + offset).rem_euclid(86_400_000) - offset;
        let from = Timestamp::from_millis(local_midnight).unwrap().to_string();
        let to = Timestamp::from_millis(local_midnight + 86_400_000)
            .unwrap()
            .to_string();
        let (_, e) = answer(
            &get(
                &app,
                &format!("/devices/{device}/energy"),
                &[
                    ("from", &from),
                    ("to", &to),
                    ("bucket", "1d"),
                    ("tz", "Asia/Kolkata"),
                ],
                &[],
            )
            .await,
        );
        let row = period_row(&india, "Today");
        if e["buckets"].as_array().unwrap().is_empty() {
            // The ten minutes after India's midnight, before a reading.
            assert!(row.contains("No readings"), "{device} in India: {row}");
        } else {
            let shown: f64 = attr_after(row, "data-period", "data-kwh").parse().unwrap();
            assert!(
                (shown - e["kwh_bought"].as_f64().unwrap()).abs() < 1e-9,
                "{device} in India: {shown} {e}"
            );
        }
        assert!(page.contains("Cost (GBP)"), "{device}: a cost column");
        let (day, ..) = checked_day(now);
        let row = period_row(&page, day);
        let kwh: f64 = attr_after(row, "data-period", "data-kwh").parse().unwrap();
        assert!(
            row.contains(&format!(">{:.2}<", (kwh * 0.25 * 100.0).round() / 100.0)),
            "{device}: {day}'s cost in {row}"
        );
    }
}

/// A meter that only sells (a solar inverter; Home Assistant's production
/// entity) shows what it sold and no bought column or cost; a gas meter
/// shows its m³ alone (no kWh column, no cost, no kWh bars), as the energy
/// route gives them.
async fn a_meter_shows_only_the_counters_it_has<S: TestStore>() {
    let tariff = shared::domain::tariff::Tariff::parse("0.25", "EUR").unwrap();
    let app = app(S::fresh("dash-sold-only").await, None, RouteSet::All)
        .await
        .with_tariff(tariff);
    let readings: Vec<Value> = (0..156)
        .flat_map(|i| {
            [
                json!({"device_id": "pv-1", "timestamp": ago(10 + i * 10), "type": "power",
                       "cumulative_kwh_n": 900.0 + (156 - i) as f64 * 0.07, "current_w": -420.0}),
                json!({"device_id": "gas-1", "timestamp": ago(10 + i * 10), "type": "meter",
                       "gas_m3": 3000.0 + (156 - i) as f64 * 0.01}),
            ]
        })
        .collect();
    post(&app, &readings).await;
    let now = Timestamp::now().millis();
    let midnight = now - now.rem_euclid(86_400_000);

    let (status, overview) = text(&get(&app, "/", &[], &[]).await);
    assert_eq!(status, 200, "{overview}");
    let at = overview
        .find("<table class=\"energy-totals\" data-device=\"gas-1\"")
        .expect("gas-1's table");
    let gas_table = overview[at..].split("</table>").next().unwrap();
    assert!(
        gas_table.contains("Gas (m³)")
            && !gas_table.contains("(kWh)")
            && !gas_table.contains("Cost"),
        "{gas_table}"
    );
    let (day, from, to) = checked_day(now);
    let shown: f64 = attr_after(period_row(gas_table, day), "class=\"num gas\"", "data-m3")
        .parse()
        .unwrap();
    let want = m3_gas_route(&app, "gas-1", from, to).await;
    assert!(
        (shown - want).abs() < 1e-9 && want > 0.0,
        "{day}: {shown} {want}"
    );
    let at = overview
        .find("<table class=\"energy-totals\" data-device=\"pv-1\"")
        .expect("pv-1's table");
    let table = overview[at..].split("</table>").next().unwrap();
    assert!(
        table.contains("Sold (kWh)") && table.contains("class=\"num sold\""),
        "{table}"
    );
    assert!(
        !table.contains("Bought") && !table.contains("num bought") && !table.contains("Cost"),
        "{table}"
    );
    let sold: f64 = attr_after(period_row(table, day), "data-period", "data-kwh")
        .parse()
        .unwrap();
    let want = energy_route(&app, "pv-1", from, to, "1d").await.unwrap();
    assert!(
        (sold - want.1).abs() < 1e-9 && want.1 > 0.0,
        "{day}: {sold} {want:?}"
    );

    let (status, page) = text(&get(&app, "/ui/devices/pv-1", &[], &[]).await);
    assert_eq!(status, 200, "{page}");
    let section = &page[page.find("id=\"energy\"").expect("an energy section")..];
    assert!(section.contains("Sold (kWh)"), "{section}");
    assert!(
        !section.contains("Bought (kWh)") && !section.contains("Cost ("),
        "nothing bought, nothing to pay"
    );
    let marker = "data-chart=\"energy-hours\"";
    let figure = &section[section.find(marker).unwrap()..];
    let figure = figure.split("</figure>").next().unwrap();
    assert!(
        figure.contains("data-sells") && !figure.contains("data-buys"),
        "{figure}"
    );
    let caption = figure.split("<figcaption>").nth(1).unwrap();
    assert!(
        caption.contains("kWh sold") && !caption.contains("kWh bought"),
        "{caption}"
    );
    let total: f64 = attr_after(figure, marker, "data-total-sold")
        .parse()
        .unwrap();
    let want = energy_route(
        &app,
        "pv-1",
        midnight - 86_400_000,
        midnight + 86_400_000,
        "1h",
    )
    .await
    .unwrap();
    assert!((total - want.1).abs() < 1e-9, "{total} {want:?}");

    let (status, gas) = text(&get(&app, "/ui/devices/gas-1", &[], &[]).await);
    assert_eq!(status, 200, "{gas}");
    let section = &gas[gas.find("id=\"energy\"").expect("a gas meter's energy")..];
    let section = section.split("</section>").next().unwrap();
    assert!(
        section.contains("Gas (m³)") && !section.contains("kWh"),
        "m³ in a table, no kWh: {section}"
    );
    // Its own bars (issue 79): m³ of gas per hour, day and month, in the
    // gas colour, whose hours add up to the gas route's.
    for key in ["gas-hours", "gas-days", "gas-months"] {
        let marker = format!("data-chart=\"{key}\"");
        assert!(section.contains(&marker), "{key}");
        assert_eq!(attr_after(section, &marker, "data-unit"), "m³");
        assert_eq!(attr_after(section, &marker, "data-flow"), "gas");
    }
    assert!(!section.contains("data-chart=\"energy-"), "no kWh bars");
    let marker = "data-chart=\"gas-hours\"";
    let values: Vec<(i64, i64, f64, f64, f64)> =
        serde_json::from_str(&attr_after(section, marker, "data-values").replace("&quot;", "\""))
            .unwrap();
    let summed: f64 = values.iter().map(|v| v.2).sum();
    let want = m3_gas_route(&app, "gas-1", midnight - 86_400_000, midnight + 86_400_000).await;
    assert!(
        (summed - want).abs() < 1e-6 && want > 0.0,
        "{summed} {want}"
    );
    let figure = section[section.find(marker).unwrap()..]
        .split("</figure>")
        .next()
        .unwrap();
    assert!(
        figure.contains("fill=\"#B45309\""),
        "gas bars in the gas colour"
    );
    assert!(
        !figure.contains("fill=\"#B91C1C\""),
        "not electricity's red"
    );
    let shown: f64 = attr_after(
        period_row(section, "Yesterday"),
        "class=\"num gas\"",
        "data-m3",
    )
    .parse()
    .unwrap();
    let want = m3_gas_route(&app, "gas-1", midnight - 86_400_000, midnight).await;
    assert!((shown - want).abs() < 1e-9 && want > 0.0, "{shown} {want}");
}

/// Prices per m³ (issue 79): a gas meter's table has a cost column at the
/// gas price, what its m³ of the day cost; the overview names each price
/// set; a price per kWh alone leaves a gas meter's table without one.
async fn a_gas_meter_costs_its_cubic_metres_at_the_gas_price<S: TestStore>() {
    let prices = shared::domain::tariff::PriceTexts {
        kwh: "0.30",
        m3_gas: "1.20",
        ..Default::default()
    };
    let tariff = shared::domain::tariff::Tariff::parse_prices(prices, "GBP").unwrap();
    let app = app(S::fresh("dash-gas-price").await, None, RouteSet::All)
        .await
        .with_tariff(tariff);
    let readings: Vec<Value> = (0..156)
        .map(|i| {
            json!({"device_id": "gas-1", "timestamp": ago(10 + i * 10), "type": "meter",
                   "gas_m3": 3000.0 + (156 - i) as f64 * 0.01})
        })
        .collect();
    post(&app, &readings).await;
    let now = Timestamp::now().millis();
    let (status, overview) = text(&get(&app, "/", &[], &[]).await);
    assert_eq!(status, 200, "{overview}");
    assert!(
        overview.contains("Cost at 0.3 GBP per kWh bought, 1.2 GBP per m³ of gas."),
        "the prices named"
    );
    let at = overview
        .find("<table class=\"energy-totals\" data-device=\"gas-1\"")
        .expect("gas-1's table");
    let gas_table = overview[at..].split("</table>").next().unwrap();
    assert!(gas_table.contains("Cost (GBP)"), "{gas_table}");
    let (day, from, to) = checked_day(now);
    let row = period_row(gas_table, day);
    let m3 = m3_gas_route(&app, "gas-1", from, to).await;
    let cost = cost_in(row);
    assert!(m3 > 0.1, "{m3}");
    assert!(
        (cost - m3 * 1.2).abs() <= 0.005 + 1e-9,
        "{day}: {cost} for {m3} m³"
    );
}

/// Tariffs belong to one meter (issue 79): a P1 meter's telegrams (its
/// total and both registers) and Home Assistant's tariff entities (a
/// tariff a reading, no total) are each one meter whose bought energy is
/// the whole, with each tariff's kWh in a column of its own at its own
/// price, and tariff 2 drawn on top of its bars.
async fn a_two_tariff_meter_keeps_its_tariffs_apart<S: TestStore>() {
    let prices = shared::domain::tariff::PriceTexts {
        kwh: "0.30",
        kwh_t1: "0.20",
        kwh_t2: "0.40",
        ..Default::default()
    };
    let tariff = shared::domain::tariff::Tariff::parse_prices(prices, "GBP").unwrap();
    let app = app(S::fresh("dash-tariffs").await, None, RouteSet::All)
        .await
        .with_tariff(tariff);
    // Two hours of tariff 1, then two of tariff 2, a reading every 10 minutes.
    let registers = |i: i64| {
        let steps = 156 - i;
        let (t1, t2) = (0..steps).fold((4000.0, 3000.0), |(t1, t2), k| match (k / 12) % 2 {
            0 => (t1 + 0.05, t2),
            _ => (t1, t2 + 0.07),
        });
        let round = |v: f64| (v * 1000.0f64).round() / 1000.0;
        (round(t1), round(t2))
    };
    let mut readings: Vec<Value> = (0..156)
        .map(|i| {
            let (t1, t2) = registers(i);
            json!({"device_id": "p1", "timestamp": ago(10 + i * 10), "type": "power",
                   "cumulative_kwh_p": ((t1 + t2) * 1000.0f64).round() / 1000.0,
                   "cumulative_kwh_p_t1": t1, "cumulative_kwh_p_t2": t2, "current_w": 400.0})
        })
        .collect();
    // Home Assistant's entities: each tariff on its own, at its own times.
    readings.extend((0..156).map(|i| {
        let (t1, t2) = registers(i);
        match i % 2 {
            0 => json!({"device_id": "energy", "timestamp": ago(10 + i * 10), "type": "power",
                        "cumulative_kwh_p_t1": t1}),
            _ => json!({"device_id": "energy", "timestamp": ago(10 + i * 10), "type": "power",
                        "cumulative_kwh_p_t2": t2}),
        }
    }));
    post(&app, &readings).await;
    let now = Timestamp::now().millis();
    let (day, from, to) = checked_day(now);
    let (status, overview) = text(&get(&app, "/", &[], &[]).await);
    assert_eq!(status, 200, "{overview}");
    assert!(
        overview.contains(
            "Cost at 0.3 GBP per kWh bought, 0.2 GBP per kWh in tariff 1, 0.4 GBP per kWh in tariff 2."
        ),
        "the prices named"
    );
    for meter in ["p1", "energy"] {
        let e = energy_day(&app, meter, from, to).await;
        let number = |key: &str| {
            e[key]
                .as_f64()
                .unwrap_or_else(|| panic!("{meter}: no {key}: {e}"))
        };
        let (bought, t1, t2) = (
            number("kwh_bought"),
            number("kwh_bought_t1"),
            number("kwh_bought_t2"),
        );
        assert!(
            t1 > 0.1 && t2 > 0.1,
            "{meter}: both tariffs in the day: {e}"
        );
        assert!(
            (bought - (t1 + t2)).abs() < 1e-3,
            "{meter}: the whole is its tariffs: {e}"
        );
        assert!(
            e.get("kwh_sold_t1").is_none(),
            "{meter}: no sold tariff: {e}"
        );
        let at = overview
            .find(&format!(
                "<table class=\"energy-totals\" data-device=\"{meter}\""
            ))
            .unwrap_or_else(|| panic!("{meter}'s table"));
        let table = overview[at..].split("</table>").next().unwrap();
        assert!(
            table.contains("Tariff 1 (kWh)") && table.contains("Tariff 2 (kWh)"),
            "{table}"
        );
        let row = period_row(table, day);
        let shown = |marker: &str| -> f64 { attr_after(row, marker, "data-kwh").parse().unwrap() };
        assert!(
            (shown("class=\"num bought\"") - bought).abs() < 1e-9,
            "{row}"
        );
        assert!((shown("data-tariff=\"1\"") - t1).abs() < 1e-9, "{row}");
        assert!((shown("data-tariff=\"2\"") - t2).abs() < 1e-9, "{row}");
        let cost = cost_in(row);
        let want = 0.2 * t1 + 0.4 * t2;
        assert!(
            (cost - want).abs() <= 0.005 + 1e-9,
            "{meter}: {cost}, {want}"
        );
        let (status, page) = text(&get(&app, &format!("/ui/devices/{meter}"), &[], &[]).await);
        assert_eq!(status, 200, "{page}");
        let hours = &page[page.find("data-chart=\"energy-hours\"").expect("hour bars")..];
        let hours = hours.split("</figure>").next().unwrap();
        assert!(hours.contains("data-tariffs"), "{meter}");
        assert!(hours.contains("in tariff 2"), "{meter}");
        assert!(
            hours.matches("fill=\"#6D28D9\"").count() >= 2,
            "{meter}: tariff 2 on its bars"
        );
    }
}

/// A meter installed today has no yesterday and no last month: its tables
/// say "No readings" there, where they said 0.00 kWh (it used nothing),
/// and give today's energy.
async fn a_period_without_readings_says_so<S: TestStore>() {
    let app = app(S::fresh("dash-new-meter").await, None, RouteSet::All).await;
    let now = Timestamp::now().millis();
    let midnight = now - now.rem_euclid(86_400_000);
    // Six readings after midnight UTC, whenever the test runs.
    let readings: Vec<Value> = (1..=6)
        .map(|k| {
            let at = midnight + (now - midnight) * k / 7;
            json!({"device_id": "new-meter", "type": "power",
                   "timestamp": Timestamp::from_millis(at).unwrap().to_string(),
                   "cumulative_kwh_p": 10.0 + k as f64 * 0.5})
        })
        .collect();
    post(&app, &readings).await;
    let (status, overview) = text(&get(&app, "/", &[], &[]).await);
    assert_eq!(status, 200, "{overview}");
    let at = overview
        .find("<table class=\"energy-totals\" data-device=\"new-meter\"")
        .expect("the new meter's table");
    let table = overview[at..].split("</table>").next().unwrap();
    let (status, page) = text(&get(&app, "/ui/devices/new-meter", &[], &[]).await);
    assert_eq!(status, 200, "{page}");
    let section = &page[page.find("id=\"energy\"").expect("an energy section")..];
    for (where_, table, empty) in [
        ("overview", table, &["Yesterday", "Last month"][..]),
        ("meter page", section, &["Yesterday"][..]),
    ] {
        for period in empty {
            let row = period_row(table, period);
            assert!(
                row.contains("No readings") && !row.contains("data-kwh"),
                "{where_} {period}: {row}"
            );
        }
        let today: f64 = attr_after(period_row(table, "Today"), "data-period", "data-kwh")
            .parse()
            .unwrap();
        assert!((today - 2.5).abs() < 1e-9, "{where_}: {today}");
    }
}

async fn the_token_is_asked_once_and_kept_in_a_strict_cookie<S: TestStore>() {
    let app = app(S::fresh("dash-token").await, Some(TOKEN), RouteSet::All).await;
    post(&app, &history()).await;
    // No token: the sign-in page (a 200, as a browser expects), and no data.
    let r = get(&app, "/", &[], &[]).await;
    let (status, page) = text(&r);
    assert_eq!(status, 200);
    assert!(page.contains("action=\"/ui/login\""));
    assert!(!page.contains("s-bed") && !page.contains("bedroom"));
    let (status, page) = text(&get(&app, "/ui/devices/s-bed", &[], &[]).await);
    assert_eq!(status, 200);
    assert!(page.contains("action=\"/ui/login\"") && !page.contains("temperature"));
    let (status, body) = answer(
        &get(
            &app,
            "/devices/s-bed/chart.svg",
            &[("quantity", "temperature")],
            &[],
        )
        .await,
    );
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (401, Some("unauthorized"))
    );

    let login = |token: &str, proto: &str| {
        let body = format!("token={token}&next=%2Fui%2Frooms%2Fbedroom");
        api_event(
            "POST",
            "/ui/login",
            &[],
            Some(&body),
            &[
                ("content-type", "application/x-www-form-urlencoded"),
                ("x-forwarded-proto", proto),
            ],
        )
    };
    let r = handle(&app, login("nope", "http")).await;
    assert_eq!(r.status_code, 401);
    assert!(text(&r).1.contains("That is not the token"));
    assert_eq!(set_cookie(&r), "");

    let r = handle(&app, login(TOKEN, "https")).await;
    assert_eq!(r.status_code, 303);
    assert_eq!(header(&r, "location"), "/ui/rooms/bedroom");
    // API Gateway (v2) carries `Set-Cookie` in the answer's `cookies`.
    let cookie = set_cookie(&r);
    for part in ["HttpOnly", "SameSite=Strict", "Secure", "Path=/"] {
        assert!(cookie.contains(part), "{cookie}");
    }
    assert!(!cookie.contains(TOKEN), "the cookie never holds the token");
    let session = cookie.split(';').next().unwrap().to_owned();
    // `next` stays on this site.
    for evil in [
        "//evil.example/x",
        "/%5Cevil.example",
        "https://evil.example/",
    ] {
        let body = format!("token={TOKEN}&next={evil}");
        let r = handle(
            &app,
            api_event(
                "POST",
                "/ui/login",
                &[],
                Some(&body),
                &[("content-type", "application/x-www-form-urlencoded")],
            ),
        )
        .await;
        assert_eq!(
            (r.status_code, header(&r, "location")),
            (303, "/"),
            "{evil}"
        );
    }
    // Plain HTTP (a home server): no `Secure`, or the browser would drop it.
    let r = handle(&app, login(TOKEN, "http")).await;
    assert!(!set_cookie(&r).contains("Secure"));
    assert!(set_cookie(&r).contains("HttpOnly"));

    // The cookie reads the pages and the API.
    let with = [("cookie", session.as_str())];
    assert_eq!(text(&get(&app, "/", &[], &with).await).0, 200);
    assert_eq!(answer(&get(&app, "/devices", &[], &with).await).0, 200);
    // And renames only with the dashboard's header, which a cross-site form cannot send.
    let rename = |headers: &[(&str, &str)]| {
        api_event(
            "PUT",
            "/devices/s-bed",
            &[],
            Some(r#"{"name":"Bed"}"#),
            headers,
        )
    };
    let r = handle(&app, rename(&with)).await;
    assert_eq!(r.status_code, 401, "a cookie alone does not write");
    let r = handle(
        &app,
        rename(&[("cookie", session.as_str()), ("x-dashboard", "1")]),
    )
    .await;
    assert_eq!(r.status_code, 200);
    app.registry.invalidate();
    assert!(text(&get(&app, "/ui/devices/s-bed", &[], &with).await)
        .1
        .contains(">Bed<"));
    // A forged cookie is no session.
    let forged = [("cookie", "ingester_session=00ff")];
    assert!(text(&get(&app, "/", &[], &forged).await)
        .1
        .contains("action=\"/ui/login\""));
}

/// A firing alert is shown first on the overview, on its device's page and
/// on its room's; not on another room's, and no section at all when none fires.
async fn firing_alerts_are_shown_first<S: TestStore>() {
    let store = S::fresh("dash-alerts").await;
    let app = app(store.clone(), Some(TOKEN), RouteSet::All).await;
    post(&app, &history()).await;
    let (b, v) = bearer();
    let headers = [(b, v.as_str())];
    let (_, page) = text(&get(&app, "/", &[], &headers).await);
    assert!(!page.contains("Alerts firing"), "none fire yet");
    let cold =
        r#"{"kind":"threshold","scope":{"room":"hall"},"quantity":"temperature","below":18}"#;
    store.put_alert_rule("hall-cold", cold).await.unwrap();
    let done = shared::alerts::evaluate(&store, Timestamp::now(), &Default::default())
        .await
        .unwrap();
    assert_eq!(done.events.len(), 1, "{:?}", done.events);
    for path in ["/", "/ui/devices/s-hall", "/ui/rooms/hall"] {
        let (status, page) = text(&get(&app, path, &[], &headers).await);
        assert_eq!(status, 200);
        assert!(page.contains("Alerts firing"), "{path}: no alerts");
        assert_eq!(
            page.find("<h2"),
            page.find(r#"<h2 id="alerts-h">"#),
            "{path}: the alerts come first"
        );
        assert!(
            page.contains(r#"data-rule="hall-cold" data-device="s-hall""#),
            "{path}"
        );
        assert!(page.contains(", 17.5 °C"), "{path}");
    }
    for path in ["/ui/rooms/bedroom", "/ui/devices/s-bed"] {
        let (_, page) = text(&get(&app, path, &[], &headers).await);
        assert!(!page.contains("Alerts firing"), "{path}");
    }
}

/// The latest value of each quantity comes from the newest reading that
/// has it, on a room's card, a room's page and a device's page: a
/// temperature probe beside a hygrometer (and a CO2 sensor, the newest) in
/// the study, a Shelly H&T's two
/// parts (two messages, two readings) in the attic, a probe alone in the
/// garage, and a Shelly Pro 3EM's watts and totals (a message each).
async fn latest_values_come_each_from_the_newest_reading_that_has_it<S: TestStore>() {
    let app = app(S::fresh("dash-tiles").await, None, RouteSet::All).await;
    let one = |device: &str, room: &str, minutes: i64, quantity: &str, value: f64| {
        json!({"device_id": device, "timestamp": ago(minutes), "type": "climate",
               "room": room, quantity: value})
    };
    post(
        &app,
        &[
            one("hygro-1", "study", 30, "humidity", 52.0),
            one("hygro-1", "study", 20, "humidity", 48.0),
            one("probe-1", "study", 25, "temperature", 19.0),
            one("probe-1", "study", 5, "temperature", 20.5),
            one("ht-1", "attic", 9, "temperature", 14.25),
            one("ht-1", "attic", 8, "humidity", 61.0),
            one("probe-2", "garage", 3, "temperature", 8.5),
            // The study's newest reading: a CO2 sensor's, neither of the two.
            json!({"device_id": "co2-1", "timestamp": ago(4), "room": "study", "co2_ppm": 640}),
            json!({"device_id": "pro3em", "timestamp": ago(2), "type": "power",
                   "cumulative_kwh_p": 6000.75, "cumulative_kwh_n": 60.5}),
            json!({"device_id": "pro3em", "timestamp": ago(1), "type": "power", "current_w": -120.5}),
        ],
    )
    .await;
    let (status, page) = text(&get(&app, "/", &[], &[]).await);
    assert_eq!(status, 200, "{page}");
    let card = |room: &str| {
        let at = page.find(&format!("data-room=\"{room}\"")).unwrap();
        page[at..].split("<svg").next().unwrap().to_owned()
    };
    for (room, temperature, humidity) in [
        ("study", "20.5 °C", Some("48 %")),
        ("attic", "14.2 °C", Some("61 %")),
        ("garage", "8.5 °C", None),
    ] {
        let card = card(room);
        assert!(card.contains(temperature), "{room}: {card}");
        match humidity {
            Some(h) => assert!(card.contains(h), "{room}: {card}"),
            None => assert!(!card.contains(" %"), "{room}: {card}"),
        }
    }
    // The pages' "Latest reading": each quantity's row, an older one with
    // its own time.
    let latest = |page: &str| {
        let at = page.find("id=\"latest-h\"").unwrap();
        page[at..].split("</table>").next().unwrap().to_owned()
    };
    // Each row named for people, the catalogue's name beside.
    for (path, wanted, older) in [
        (
            "/ui/rooms/study",
            &[
                ">20.5 °C<",
                ">48 %",
                ">640 ppm<",
                "data-quantity=\"co2_ppm\">CO₂<",
                "data-quantity=\"temperature\">Temperature<",
            ][..],
            None,
        ),
        (
            "/ui/devices/pro3em",
            &[
                ">-120.5 W<",
                ">6000.75 kWh",
                ">60.5 kWh",
                ">Energy sold, meter total<",
                ">Power<",
            ][..],
            Some(2),
        ),
    ] {
        let (_, page) = text(&get(&app, path, &[], &[]).await);
        let table = latest(&page);
        for w in wanted {
            assert!(table.contains(w), "{path}: {w} in {table}");
        }
        if let Some(n) = older {
            assert_eq!(table.matches("class=\"muted\"> (").count(), n, "{table}");
        }
    }
}

on_every_store!(
    latest_values_come_each_from_the_newest_reading_that_has_it,
    firing_alerts_are_shown_first,
    pages_name_rooms_and_devices_and_draw_every_reading,
    bad_parameters_get_a_400_that_names_them,
    names_are_escaped,
    the_overview_s_electricity_is_the_energy_routes,
    a_meter_s_page_has_energy_bars_with_totals,
    a_meter_shows_only_the_counters_it_has,
    a_gas_meter_costs_its_cubic_metres_at_the_gas_price,
    a_two_tariff_meter_keeps_its_tariffs_apart,
    a_period_without_readings_says_so,
    the_token_is_asked_once_and_kept_in_a_strict_cookie,
);
