//! The dashboard's HTML, from maud templates (every interpolated value is
//! escaped). One self-contained page each: its styles and two small scripts
//! inline (the range picker, the value under the pointer, renaming), charts
//! as inline SVG; no JavaScript toolchain, no CDN.

use super::charts::{self, Chart, Data, Flow};
use super::energy::{Bars, MeterEnergy, Period, PeriodTotals, Reported};
use super::{Drawn, View, PAGE_SIZES, PICKS, QUIET_AFTER_MS};
use crate::json::unsigned_zero;
use chrono::TimeZone;
use domain::model::{DeviceId, Quantity, RoomId, Timestamp};
use domain::tariff::Tariff;
use maud::{html, Markup, PreEscaped, DOCTYPE};
use storage::{DeviceRecord, RoomRecord};
use usecases::query::LatestValues;

const STYLE: &str = r#"
:root{--ink:#1f2937;--muted:#4b5563;--line:#d1d5db;--accent:#1d4ed8;--warn:#b91c1c;--bg:#f9fafb}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,sans-serif;color:var(--ink);background:var(--bg)}
header{display:flex;flex-wrap:wrap;gap:.5rem 1.5rem;align-items:baseline;padding:.75rem 1rem;background:#fff;border-bottom:1px solid var(--line)}
header h1{font-size:1.25rem;margin:0}
main{padding:1rem;max-width:64rem;margin:0 auto}
a{color:var(--accent)}
a:focus,button:focus,input:focus,select:focus{outline:3px solid #f59e0b;outline-offset:2px}
section{background:#fff;border:1px solid var(--line);border-radius:.5rem;padding:1rem;margin:0 0 1rem}
h2{font-size:1.1rem;margin:0 0 .5rem}
table{border-collapse:collapse;width:100%}
caption{text-align:left;font-weight:600;padding:.5rem 0 .25rem}
th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid var(--line);vertical-align:middle}
.quiet{color:var(--warn);font-weight:600}
section.alerts{border-color:var(--warn);border-width:2px}
section.alerts h2{color:var(--warn)}
.muted{color:var(--muted)}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(14rem,1fr));gap:1rem}
.card{background:#fff;border:1px solid var(--line);border-radius:.5rem;padding:.75rem}
.big{font-size:1.5rem;font-weight:600}
figure{margin:0 0 1rem}
figure svg{width:100%;height:auto}
figure[data-flow=gas]{border-left:4px solid #b45309;padding-left:.5rem}
figure[data-flow=water]{border-left:4px solid #0369a1;padding-left:.5rem}
figure[data-flow=gas] figcaption .total,td.gas{color:#b45309}
figure[data-flow=water] figcaption .total,td.water{color:#0369a1}
figcaption{font-weight:600}
figcaption .tariff1,td.tariff[data-tariff="1"]{color:#b91c1c}
figcaption .tariff2,td.tariff[data-tariff="2"]{color:#6d28d9}
.tip{min-height:1.5em;color:var(--muted)}
nav.ranges a{margin-right:.75rem}
nav.ranges a[aria-current]{font-weight:700;color:var(--ink)}
form.inline{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center}
.field{display:inline-flex;gap:.5rem;align-items:center}
input,button,select{font:inherit;padding:.35rem .5rem}
button{background:var(--accent);color:#fff;border:0;border-radius:.25rem}
.narrow{display:none}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.short{display:none}
@media (max-width:480px){main{padding:.5rem}section{padding:.75rem .5rem}table.energy-totals{font-size:.9rem}th,td{padding:.25rem}.hide-narrow{display:none}.wide{display:none}.narrow{display:block}.long{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}.short{display:inline}}
"#;

/// The value under the pointer: the nearest drawn point of the chart's
/// line, or the bar under it (a bar chart's figure has `data-bars`: its
/// plot spans the SVG's width but for `data-left` and `data-right`).
const POINTER_SCRIPT: &str = r#"
function visibleSvg(fig) {
  return Array.prototype.slice.call(fig.querySelectorAll('svg')).filter(function (s) { return s.getBoundingClientRect().width > 0; })[0];
}
document.querySelectorAll('figure[data-bars]').forEach(function (fig) {
  var tip = fig.querySelector('.tip'); var bars = JSON.parse(fig.dataset.values || '[]');
  fig.addEventListener('mousemove', function (e) {
    var svg = visibleSvg(fig); if (!svg) { return; }
    var box = svg.getBoundingClientRect(); var vb = svg.viewBox.baseVal;
    var x = (e.clientX - box.left) * (vb.width / box.width);
    var left = +fig.dataset.left, right = vb.width - fig.dataset.right;
    var t = +fig.dataset.from + (x - left) / (right - left) * (fig.dataset.to - fig.dataset.from);
    var bar = bars.filter(function (b) { return b[0] <= t && t < b[1]; })[0];
    if (!bar) { tip.textContent = ''; return; }
    var when = new Date(bar[0]).toLocaleString(undefined, { timeZone: fig.dataset.tz, dateStyle: 'medium', timeStyle: fig.dataset.chart === 'energy-hours' ? 'short' : undefined });
    var parts = [];
    if (fig.dataset.unit === 'm³') { parts.push(bar[2].toFixed(3) + ' m³ ' + fig.dataset.flow); }
    if (fig.dataset.buys !== undefined) { parts.push(bar[2].toFixed(2) + ' kWh bought' + (fig.dataset.tariffs !== undefined ? ' (' + (bar[2] - bar[4]).toFixed(2) + ' in tariff 1, ' + bar[4].toFixed(2) + ' in tariff 2)' : '')); }
    if (fig.dataset.sells !== undefined) { parts.push(bar[3].toFixed(2) + ' kWh sold'); }
    tip.textContent = when + ': ' + parts.join(', ');
  });
});
document.querySelectorAll('figure[data-chart]:not([data-bars])').forEach(function (fig) {
  var svg = visibleSvg(fig); var tip = fig.querySelector('.tip');
  var line = svg && Array.prototype.slice.call(svg.querySelectorAll('polyline')).filter(function (p) { return p.getAttribute('stroke-width') === '2'; })[0];
  if (!line) { return; }
  var pts = line.getAttribute('points').trim().split(/\s+/).map(function (p) { var xy = p.split(','); return [+xy[0], +xy[1]]; });
  svg.addEventListener('mousemove', function (e) {
    var box = svg.getBoundingClientRect(); var vb = svg.viewBox.baseVal;
    var x = (e.clientX - box.left) * (vb.width / box.width);
    var best = pts[0];
    pts.forEach(function (p) { if (Math.abs(p[0] - x) < Math.abs(best[0] - x)) { best = p; } });
    var i = pts.indexOf(best); var v = JSON.parse(fig.dataset.values || '[]')[i];
    if (v) {
      var when = new Date(+fig.dataset.from + v[0] * 60000).toLocaleString(undefined,
        { timeZone: fig.dataset.tz, dateStyle: 'medium', timeStyle: 'short' });
      tip.textContent = when + ': ' + v[1] + ' ' + fig.dataset.unit;
    }
  });
});
"#;

/// The viewer's time zone: a page asked for without `tz` is asked for again
/// with the browser's zone, so days, months and times are the viewer's
/// (a link or bookmark with `tz` keeps the one it names).
const ZONE_SCRIPT: &str = r#"
(function () {
  var params = new URLSearchParams(location.search);
  var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (!params.has('tz') && zone && zone !== 'UTC' && zone !== 'Etc/UTC') {
    params.set('tz', zone);
    location.replace(location.pathname + '?' + params.toString() + location.hash);
  }
})();
"#;

/// Renaming (and placing a device in a room) through the API's PUT route,
/// with the session cookie; the `X-Dashboard` header is what a cross-site
/// form can never send. A room left empty, or as it was, is not sent: the
/// device stays where it is.
const RENAME_SCRIPT: &str = r#"
var form = document.getElementById('rename');
if (form) {
  form.addEventListener('submit', function (e) {
    e.preventDefault();
    var status = document.getElementById('rename-status');
    var name = form.elements.name.value.trim();
    var body = { name: name === '' ? null : name };
    if (form.elements.room) {
      var room = form.elements.room.value.trim();
      if (room !== '' && room !== form.dataset.room) { body.room = room; }
    }
    fetch(form.dataset.url, { method: 'PUT', credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', 'X-Dashboard': '1' },
      body: JSON.stringify(body) })
      .then(function (r) { return r.json().then(function (b) { return [r.ok, b]; }); })
      .then(function (rb) {
        if (rb[0]) { status.textContent = 'Saved.'; location.reload(); return; }
        var err = rb[1].error || {};
        var said = (err.details || []).map(function (d) { return d.field + ': ' + d.message; });
        status.textContent = said.length ? said.join('; ') : (err.message || 'Not saved.');
      })
      .catch(function () { status.textContent = 'Not saved: no answer.'; });
  });
}
"#;

pub fn device_name(d: &DeviceRecord) -> String {
    d.name.clone().unwrap_or_else(|| d.device_id.to_string())
}

pub fn room_name(r: &RoomRecord) -> String {
    r.name.clone().unwrap_or_else(|| r.room_id.to_string())
}

fn when(t: Timestamp, view: &View) -> String {
    view.tz
        .timestamp_millis_opt(t.millis())
        .single()
        .map(|t| t.format("%Y-%m-%d %H:%M %Z").to_string())
        .unwrap_or_default()
}

/// A time as people read it (issue 79): "3 min ago", "5 h ago", "2 days
/// ago", and the date past a week; the full time on hover and for
/// machines (`datetime`).
fn ago(t: Timestamp, view: &View) -> Markup {
    let seconds = (Timestamp::now().millis() - t.millis()).max(0) / 1000;
    let text = match seconds {
        0..60 => "just now".to_owned(),
        60..3600 => format!("{} min ago", seconds / 60),
        3600..86_400 => format!("{} h ago", seconds / 3600),
        86_400..172_800 => "a day ago".to_owned(),
        172_800..604_800 => format!("{} days ago", seconds / 86_400),
        _ => when(t, view),
    };
    html! { time datetime=(t.to_string()) title=(when(t, view)) { (text) } }
}

fn layout(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                // No favicon to fetch (and no 404 for it in the console).
                link rel="icon" href="data:,";
                script { (PreEscaped(ZONE_SCRIPT)) }
                title { (title) " · IoT readings" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                header {
                    h1 { a href="/" { "Home" } }
                    span.muted { (title) }
                }
                main { (body) }
                script { (PreEscaped(POINTER_SCRIPT)) }
                script { (PreEscaped(RENAME_SCRIPT)) }
            }
        }
    }
}

pub fn login(next: &str, failed: bool) -> Markup {
    layout(
        "Sign in",
        html! {
            section {
                h2 { "This dashboard needs the token" }
                p.muted { "The same bearer token the API takes. It is kept in a cookie this browser sends to this site only." }
                @if failed { p.quiet role="alert" { "That is not the token." } }
                form.inline method="post" action="/ui/login" {
                    input type="hidden" name="next" value=(next);
                    label for="token" { "Token" }
                    input #token type="password" name="token" autocomplete="current-password" required;
                    button type="submit" { "Sign in" }
                }
            }
        },
    )
}

pub fn not_found(message: &str) -> Markup {
    layout(
        "Not found",
        html! { section { p { (message) } p { a href="/" { "Back to the overview" } } } },
    )
}

/// An alert series that fires now (docs/alerts.md), as a page shows it.
pub struct Firing {
    pub rule: String,
    pub device: DeviceId,
    pub since: Timestamp,
    /// The value, as its rule says it (`14.5 °C`, `silent for 45 min`).
    pub what: String,
}

/// The firing alerts, first on a page: nothing when none fire.
fn alerts_section(alerts: &[Firing], devices: &[DeviceRecord], view: &View) -> Markup {
    let name = |id: &DeviceId| {
        devices
            .iter()
            .find(|d| &d.device_id == id)
            .map(device_name)
            .unwrap_or_else(|| id.to_string())
    };
    html! {
        @if !alerts.is_empty() {
            section.alerts role="alert" aria-labelledby="alerts-h" {
                h2 #alerts-h { "Alerts firing" }
                ul {
                    @for a in alerts {
                        li.alert data-rule=(a.rule) data-device=(a.device.as_str()) {
                            strong { (a.rule) } ": "
                            a href={ "/ui/devices/" (a.device.as_str()) } { (name(&a.device)) }
                            @if !a.what.is_empty() { ", " (a.what) }
                            span.muted { " since " (when(a.since, view)) }
                        }
                    }
                }
            }
        }
    }
}

/// A room's card on the overview.
pub struct RoomTile {
    pub room: RoomRecord,
    /// Its latest temperature and humidity, each from the newest reading
    /// that has it (a room's sensors may report one each, or in parts).
    pub latest: LatestValues,
    /// Its 24-hour sparkline (SVG).
    pub spark: String,
}

pub struct Overview<'a> {
    pub rooms: &'a [RoomTile],
    pub devices: &'a [DeviceRecord],
    /// Each meter's (period, totals): today, yesterday, this month, last month.
    /// Each meter (electricity, gas or water) and its periods.
    pub meters: &'a [(DeviceRecord, Vec<Period>)],
    pub tariff: Option<&'a Tariff>,
    pub now: Timestamp,
    pub view: &'a View,
    pub alerts: &'a [Firing],
    /// Over a fleet, or after a search: the page shown, and the next.
    pub paging: Option<&'a Paging>,
}

/// The overview a page at a time: what was searched, and the cursors of
/// the next page of devices and of rooms, where more follow.
pub struct Paging {
    pub search: Option<String>,
    pub next_devices: Option<String>,
    pub next_rooms: Option<String>,
}

/// The overview's address with `tz`, the search and one cursor.
fn overview_link(view: &View, paging: &Paging, cursor: (&str, &str)) -> String {
    let mut query = form_urlencoded_pairs(&[("tz", view.tz.name())]);
    if let Some(s) = &paging.search {
        query.push('&');
        query.push_str(&form_urlencoded_pairs(&[("search", s)]));
    }
    query.push('&');
    query.push_str(&form_urlencoded_pairs(&[cursor]));
    format!("/?{query}")
}

fn form_urlencoded_pairs(pairs: &[(&str, &str)]) -> String {
    serde_urlencoded::to_string(pairs).unwrap_or_default()
}

/// kWh as the pages write them: two decimals, never `-0.00`.
fn kwh(v: f64) -> String {
    format!("{:.2}", unsigned_zero((v * 100.0).round() / 100.0))
}

/// m³ as the pages write them: to the litre, as gas and water meters count.
fn m3(v: f64) -> String {
    format!("{:.3}", unsigned_zero((v * 1000.0).round() / 1000.0))
}

/// A period's row of the meters' tables: bought and sold, each where the
/// meter has that counter, the cost of what was bought where a price is
/// set, then gas and water where it has them. Full-precision values ride
/// along in `data-kwh` and `data-m3` for the tests. A period without
/// readings says so across the row, not 0.00.
fn totals_row(
    period: &str,
    t: &PeriodTotals,
    counters: Reported,
    tariff: Option<&Tariff>,
) -> Markup {
    let tariff = tariff.filter(|t| t.prices_any(counters));
    let Some(t) = t else {
        let columns = usize::from(counters.bought)
            + usize::from(counters.bought_t1)
            + usize::from(counters.bought_t2)
            + usize::from(counters.sold)
            + usize::from(tariff.is_some())
            + usize::from(counters.gas)
            + usize::from(counters.water);
        return html! {
            tr data-period=(period) {
                th scope="row" { (period) }
                td.num.muted.none colspan=(columns) { "No readings" }
            }
        };
    };
    html! {
        tr data-period=(period) {
            th scope="row" { (period) }
            @if counters.bought { td.num.bought data-kwh=(unsigned_zero(t.bought)) { (kwh(t.bought)) } }
            @if counters.bought_t1 { td.num.tariff data-tariff="1" data-kwh=(unsigned_zero(t.bought_t1)) { (kwh(t.bought_t1)) } }
            @if counters.bought_t2 { td.num.tariff data-tariff="2" data-kwh=(unsigned_zero(t.bought_t2)) { (kwh(t.bought_t2)) } }
            @if counters.sold { td.num.sold data-kwh=(unsigned_zero(t.sold)) { (kwh(t.sold)) } }
            @if let Some(tariff) = tariff {
                td.num.cost { (kwh(tariff.cost_of(t, counters))) }
            }
            @if counters.gas { td.num.gas data-m3=(unsigned_zero(t.gas)) { (m3(t.gas)) } }
            @if counters.water { td.num.water data-m3=(unsigned_zero(t.water)) { (m3(t.water)) } }
        }
    }
}

/// A column's heading, and a shorter one for a phone (a meter with two
/// tariffs and gas has six columns); the long one names it for a reader.
fn heading(long: &str, short: &str) -> Markup {
    html! {
        span.long { (long) }
        span.short aria-hidden="true" { (short) }
    }
}

fn totals_head(first: &str, counters: Reported, tariff: Option<&Tariff>) -> Markup {
    html! {
        thead { tr {
            th scope="col" { (first) }
            @if counters.bought { th.num scope="col" { (heading("Bought (kWh)", "Bought")) } }
            @if counters.bought_t1 { th.num scope="col" { (heading("Tariff 1 (kWh)", "T1")) } }
            @if counters.bought_t2 { th.num scope="col" { (heading("Tariff 2 (kWh)", "T2")) } }
            @if counters.sold { th.num scope="col" { (heading("Sold (kWh)", "Sold")) } }
            @if let Some(tariff) = tariff.filter(|t| t.prices_any(counters)) {
                th.num scope="col" { (heading(&format!("Cost ({})", tariff.currency()), "Cost")) }
            }
            @if counters.gas { th.num scope="col" { (heading("Gas (m³)", "Gas m³")) } }
            @if counters.water { th.num scope="col" { (heading("Water (m³)", "Water m³")) } }
        } }
    }
}

fn value_of(latest: &LatestValues, q: Quantity) -> Option<f64> {
    latest.iter().find(|(l, _, _)| *l == q).map(|(_, v, _)| *v)
}

fn newest_of(latest: &LatestValues) -> Option<Timestamp> {
    latest.iter().map(|(_, _, at)| *at).max()
}

pub fn overview(o: &Overview) -> Markup {
    use Quantity::{Humidity, Temperature};
    let tz = o.view.tz.name();
    layout(
        "Overview",
        html! {
            (alerts_section(o.alerts, o.devices, o.view))
            @if let Some(paging) = o.paging {
                form.search role="search" method="get" action="/" {
                    input type="hidden" name="tz" value=(tz);
                    label for="search" { "Find a device or room" }
                    " "
                    input #search type="search" name="search" maxlength="64" value=(paging.search.as_deref().unwrap_or("")) placeholder="id or name";
                    " "
                    button type="submit" { "Search" }
                }
            }
            section aria-labelledby="rooms-h" {
                h2 #rooms-h { "Rooms" }
                @if o.rooms.is_empty() { p.muted { "No rooms yet: readings that name a room make one." } }
                div.cards {
                    @for tile in o.rooms {
                        @let room = &tile.room;
                        div.card.room data-room=(room.room_id.as_str()) {
                            a href={ "/ui/rooms/" (room.room_id.as_str()) "?tz=" (tz) } { strong.name { (room_name(room)) } }
                            div {
                                @if let Some(t) = value_of(&tile.latest, Temperature) { span.big { (format!("{t:.1}")) " °C" } " " }
                                @if let Some(h) = value_of(&tile.latest, Humidity) { span { (format!("{h:.0}")) " %" } }
                            }
                            @if let Some(at) = newest_of(&tile.latest) { div.muted { (ago(at, o.view)) } }
                            (PreEscaped(&tile.spark))
                        }
                    }
                }
                @if let Some(next) = o.paging.and_then(|p| p.next_rooms.as_deref().map(|c| (p, c))) {
                    p { a.next-rooms href=(overview_link(o.view, next.0, ("rooms_cursor", next.1))) { "More rooms →" } }
                }
            }
            @if !o.meters.is_empty() {
                section aria-labelledby="energy-h" {
                    h2 #energy-h { "Meters" }
                    @for (meter, periods) in o.meters {
                        @let counters = Reported::among(meter.quantities.iter().copied());
                        table.energy-totals data-device=(meter.device_id.as_str()) {
                            caption { a href={ "/ui/devices/" (meter.device_id.as_str()) "?tz=" (tz) "#energy" } { (device_name(meter)) } }
                            (totals_head("Period", counters, o.tariff))
                            tbody {
                                @for (period, t) in periods { (totals_row(period, t, counters, o.tariff)) }
                            }
                        }
                    }
                    @if let Some(t) = o.tariff {
                        p.muted {
                            "Cost at "
                            @for (i, (price, per)) in t.named_prices().into_iter().enumerate() {
                                @if i > 0 { ", " }
                                (price) " " (t.currency()) " " (per)
                            }
                            "."
                        }
                    }
                }
            }
            section aria-labelledby="devices-h" {
                h2 #devices-h { "Devices" }
                table {
                    thead { tr { th scope="col" { "Device" } th scope="col" { "Room" } th scope="col" { "Last seen" } } }
                    tbody {
                        @for d in o.devices {
                            @let quiet = d.last_seen.is_none_or(|t| o.now.millis() - t.millis() > QUIET_AFTER_MS);
                            tr.device data-device=(d.device_id.as_str()) {
                                td { a.name href={ "/ui/devices/" (d.device_id.as_str()) "?tz=" (tz) } { (device_name(d)) } }
                                td { @if let Some(r) = &d.room { (r.as_str()) } }
                                td {
                                    @if let Some(t) = d.last_seen { (ago(t, o.view)) }
                                    @if quiet { " " span.quiet { "quiet" } }
                                }
                            }
                        }
                    }
                }
                @if let Some(next) = o.paging.and_then(|p| p.next_devices.as_deref().map(|c| (p, c))) {
                    p { a.next-devices href=(overview_link(o.view, next.0, ("cursor", next.1))) { "More devices →" } }
                }
            }
        },
    )
}

/// A time as a `datetime-local` value: wall time in the view's zone.
fn local_input(t: Timestamp, view: &View) -> String {
    view.tz
        .timestamp_millis_opt(t.millis())
        .single()
        .map(|t| t.format("%Y-%m-%dT%H:%M").to_string())
        .unwrap_or_default()
}

fn ranges(path: &str, view: &View) -> Markup {
    let tz = view.tz.name();
    html! {
        nav.ranges aria-label="Range" {
            @for (pick, _) in PICKS {
                @if Some(pick) == view.pick {
                    a href={ (path) "?range=" (pick) "&tz=" (tz) } aria-current="page" { (pick) }
                } @else {
                    a href={ (path) "?range=" (pick) "&tz=" (tz) } { (pick) }
                }
            }
        }
        form.inline method="get" action=(path) aria-label="Custom range" {
            label for="from" { "From" }
            input #from type="datetime-local" name="from" value=(local_input(view.range.from(), view));
            label for="to" { "to (" (tz) ")" }
            input #to type="datetime-local" name="to" value=(local_input(view.range.to(), view));
            input type="hidden" name="tz" value=(tz);
            button type="submit" { "Show" }
        }
    }
}

fn chart(d: &Drawn, unit: &str, view: &View) -> Markup {
    html! {
        figure data-chart=(d.plot.key()) data-unit=(unit) data-points=(d.points) data-values=(d.values) data-from=(view.range.from().millis()) data-tz=(view.tz.name()) {
            figcaption { (d.plot.label()) " (" (unit) ")" }
            @if d.points == 0 { p.muted { "No readings in this range." } }
            div.wide { (PreEscaped(&d.svg)) }
            @if let Some(narrow) = &d.narrow { div.narrow { (PreEscaped(narrow)) } }
            p.tip aria-live="polite" {}
        }
    }
}

/// Each quantity's latest value; a value older than the newest (a device
/// that reports in parts, a room's other sensor) says when it came.
fn latest_table(latest: &LatestValues, view: &View) -> Markup {
    html! {
        @match newest_of(latest) {
            None => p.muted { "No reading yet." },
            Some(newest) => {
                p.muted { (ago(newest, view)) }
                table.latest {
                    tbody {
                        @for (q, v, at) in latest {
                            tr {
                                th scope="row" data-quantity=(q.name()) { (q.spec().label) }
                                td { (v) " " (q.spec().unit) @if *at != newest { span.muted { " (" (when(*at, view)) ")" } } }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn rename(url: &str, current: &Option<String>) -> Markup {
    html! {
        form #rename.inline data-url=(url) aria-label="Rename" {
            (name_field(current))
            button type="submit" { "Rename" }
            span #rename-status role="status" {}
        }
    }
}

/// A device's name and room: a device whose readings cannot name a room
/// (line protocol, MQTT) is placed in one here, and its later climate
/// readings are that room's. `rooms`, the rooms there are, to pick from.
fn name_and_room(url: &str, d: &DeviceRecord, rooms: &[RoomId]) -> Markup {
    let room = d.room.as_ref().map(RoomId::as_str).unwrap_or_default();
    html! {
        form #rename.inline data-url=(url) data-room=(room) aria-label="Name and room" {
            (name_field(&d.name))
            span.field {
                label for="room" { "Room" }
                input #room type="text" name="room" list="rooms" maxlength="64" value=(room) placeholder="e.g. kitchen";
            }
            datalist #rooms { @for r in rooms { option value=(r.as_str()) {} } }
            button type="submit" { "Save" }
            span #rename-status role="status" {}
        }
    }
}

fn name_field(current: &Option<String>) -> Markup {
    html! {
        // A label and its field wrap together on a narrow screen.
        span.field {
            label for="name" { "Name" }
            input #name type="text" name="name" maxlength="64" value=(current.clone().unwrap_or_default());
        }
    }
}

/// What a device's page shows.
pub struct Device<'a> {
    pub device: &'a DeviceRecord,
    /// The device's firing alerts.
    pub alerts: &'a [Firing],
    pub charts: &'a [Drawn],
    /// A meter's energy (any counter), `None` for another device.
    pub energy: Option<&'a MeterEnergy>,
    pub tariff: Option<&'a Tariff>,
    pub view: &'a View,
    /// The rooms there are, to place the device in one.
    pub rooms: &'a [RoomId],
    /// Its latest value of each quantity it reports.
    pub latest: &'a LatestValues,
}

/// One of a meter's energy charts: bars at both sizes, with each bar's
/// `[start, end, bought, sold]` (m³ as bought, for gas and water) and the
/// totals in data attributes; gas and water styled apart (`data-flow`).
fn energy_chart(b: &Bars, counters: Reported, title: &str, view: &View) -> Markup {
    let data = Data::Bars(b.bars.clone(), b.flow);
    let unit = b.flow.unit();
    let draw = |(width, height): (u32, u32)| {
        charts::svg(&Chart {
            title,
            unit,
            from: b.range.from().millis(),
            to: b.range.to().millis(),
            tz: view.tz,
            width,
            height,
            data: &data,
        })
    };
    let values: Vec<(i64, i64, f64, f64, f64)> = b
        .bars
        .iter()
        .map(|bar| (bar.start, bar.end, bar.bought, bar.sold, bar.tariff2))
        .collect();
    let volume = match b.flow {
        Flow::Electricity => None,
        Flow::Gas => Some(b.totals.gas),
        Flow::Water => Some(b.totals.water),
    };
    let (buys, sells) = match volume {
        Some(_) => (false, false),
        None => (counters.bought, counters.sold),
    };
    let total_up = volume.unwrap_or(b.totals.bought);
    // A two-tariff meter's bars show tariff 2 on top of the rest.
    let tariffs = buys && counters.bought_t2;
    html! {
        figure data-chart=(b.key) data-bars="1" data-unit=(unit) data-flow=(b.flow.name()) data-points=(b.bars.len())
            data-values=(crate::json::to_string(&values))
            data-total-bought=(unsigned_zero(total_up)) data-total-sold=(unsigned_zero(b.totals.sold))
            data-from=(b.range.from().millis()) data-to=(b.range.to().millis()) data-tz=(view.tz.name())
            data-left=(charts::PLOT_LEFT) data-right=(charts::PLOT_RIGHT)
            data-buys[buys] data-sells[sells] data-tariffs[tariffs] {
            figcaption {
                (b.caption) ": "
                @if let Some(v) = volume { span.total { (m3(v)) " m³ " (b.flow.name()) } }
                @if buys { span.total { (kwh(b.totals.bought)) " kWh bought" } }
                @if tariffs {
                    " (" span.tariff1 { (kwh(b.totals.bought - b.totals.bought_t2)) " in tariff 1" } ", "
                    span.tariff2 { (kwh(b.totals.bought_t2)) " in tariff 2" } ")"
                }
                @if buys && sells { ", " }
                @if sells { span.total-sold { (kwh(b.totals.sold)) " kWh sold" } }
            }
            @if b.bars.is_empty() { p.muted { "No energy in this range." } }
            div.wide { (PreEscaped(draw(PAGE_SIZES[0]))) }
            div.narrow { (PreEscaped(draw(PAGE_SIZES[1]))) }
            p.tip aria-live="polite" {}
        }
    }
}

fn energy_section(
    d: &DeviceRecord,
    e: &MeterEnergy,
    tariff: Option<&Tariff>,
    view: &View,
) -> Markup {
    html! {
        section #energy aria-labelledby="energy-h" {
            h2 #energy-h { "Energy" }
            p.muted { "Days and months in " (view.tz.name()) "." }
            table.energy-totals {
                (totals_head("Period", e.counters, tariff))
                tbody { @for (period, t) in &e.periods { (totals_row(period, t, e.counters, tariff)) } }
            }
            // Bars of each counter it reports: kWh bought up and sold
            // down, m³ of gas, of water.
            @for b in &e.charts {
                (energy_chart(b, e.counters, &format!("{}: {}", device_name(d), b.caption), view))
            }
        }
    }
}

pub fn device(p: &Device) -> Markup {
    let (d, view) = (p.device, p.view);
    let id = d.device_id.as_str();
    let path = format!("/ui/devices/{id}");
    layout(
        &device_name(d),
        html! {
            (alerts_section(p.alerts, std::slice::from_ref(d), view))
            section {
                h2.name { (device_name(d)) }
                p.muted {
                    "Device " code { (id) }
                    @if let Some(r) = &d.room {
                        " in "
                        // A room a device was placed in has its page once
                        // a climate reading of it comes.
                        @if p.rooms.contains(r) { a href={ "/ui/rooms/" (r.as_str()) } { (r.as_str()) } }
                        @else { (r.as_str()) " (its page comes with the room's first climate reading)" }
                    }
                }
                (name_and_room(&format!("/devices/{id}"), d, p.rooms))
            }
            section aria-labelledby="latest-h" { h2 #latest-h { "Latest reading" } (latest_table(p.latest, view)) }
            @if let Some(e) = p.energy { (energy_section(d, e, p.tariff, view)) }
            section aria-labelledby="history-h" {
                h2 #history-h { "History" }
                (ranges(&path, view))
                @for c in p.charts { (chart(c, c.plot.unit(), view)) }
                p.muted.hide-narrow {
                    "Each chart is an image too: "
                    code { "/devices/" (id) "/chart.svg?quantity=…&" (view.query_string()) }
                }
            }
        },
    )
}

/// What a room's page shows.
pub struct Room<'a> {
    pub room: &'a RoomRecord,
    pub devices: &'a [DeviceRecord],
    pub charts: &'a [Drawn],
    pub alerts: &'a [Firing],
    /// Its newest reading's values and its latest temperature and
    /// humidity, each from the newest reading that has it.
    pub latest: &'a LatestValues,
    pub view: &'a View,
}

/// The firing alerts of the room's devices come first.
pub fn room(p: &Room) -> Markup {
    let (r, devices, charts, alerts, view) = (p.room, p.devices, p.charts, p.alerts, p.view);
    let id = r.room_id.as_str();
    let path = format!("/ui/rooms/{id}");
    layout(
        &room_name(r),
        html! {
            (alerts_section(alerts, devices, view))
            section {
                h2.name { (room_name(r)) }
                p.muted { "Room " code { (id) } }
                (rename(&format!("/rooms/{id}"), &r.name))
                h3 { "Devices" }
                ul {
                    @for d in devices {
                        li { a href={ "/ui/devices/" (d.device_id.as_str()) } { (device_name(d)) } }
                    }
                }
            }
            section aria-labelledby="latest-h" { h2 #latest-h { "Latest reading" } (latest_table(p.latest, view)) }
            section aria-labelledby="history-h" {
                h2 #history-h { "History" }
                (ranges(&path, view))
                @for c in charts { (chart(c, c.plot.unit(), view)) }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::model::{TimeRange, Zone};

    #[test]
    fn times_read_as_people_say_them_with_the_full_time_on_hover() {
        let view = View {
            pick: None,
            range: TimeRange::new(Timestamp::MIN, Timestamp::MAX).unwrap(),
            tz: Zone::named("Europe/Berlin").unwrap(),
        };
        let now = Timestamp::now().millis();
        let at =
            |back_ms: i64| ago(Timestamp::from_millis(now - back_ms).unwrap(), &view).into_string();
        assert!(at(10_000).contains(">just now</time>"));
        assert!(
            at(3 * 60_000 + 5_000).contains(">3 min ago</time>"),
            "{}",
            at(185_000)
        );
        assert!(at(5 * 3_600_000 + 60_000).contains(">5 h ago</time>"));
        assert!(at(26 * 3_600_000).contains(">a day ago</time>"));
        assert!(at(3 * 86_400_000 + 1000).contains(">3 days ago</time>"));
        // Past a week, the date; the full time in the zone on hover.
        let old = at(30 * 86_400_000);
        let then = Timestamp::from_millis(now - 30 * 86_400_000).unwrap();
        assert!(
            old.contains(&format!(">{}</time>", when(then, &view))),
            "{old}"
        );
        let t = Timestamp::from_millis(now - 185_000).unwrap();
        let html = ago(t, &view).into_string();
        assert!(html.contains(&format!("datetime=\"{t}\"")), "{html}");
        assert!(
            html.contains(&format!("title=\"{}\"", when(t, &view))),
            "{html}"
        );
    }
}
