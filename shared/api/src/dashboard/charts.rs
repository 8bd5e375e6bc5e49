//! Charts as SVG, drawn on the server with plotters' SVG backend (no font or
//! bitmap stack: the text is SVG text the browser draws), so pages need no
//! JavaScript toolchain and no CDN, and the same chart is an image URL.
//!
//! Three shapes: raw lines (short ranges), a min–max band with its mean
//! (long ranges, from the aggregates and so from rollups), and bars (energy).

use super::ticks;
use domain::aggregate::counter::Counter;
use domain::model::Zone;
use plotters::coord::combinators::BindKeyPoints;
use plotters::prelude::*;

/// A line of raw readings: (epoch ms, value).
pub struct Line {
    pub label: String,
    pub points: Vec<(i64, f64)>,
}

/// One bucket of a band: start and end (epoch ms), min, mean, max.
#[derive(Debug, Clone, Copy)]
pub struct BandPoint {
    pub start: i64,
    pub end: i64,
    pub min: f64,
    pub mean: f64,
    pub max: f64,
}

/// One energy bar: start and end (epoch ms), kWh bought and sold, and of
/// the bought kWh those of tariff 2 (a two-tariff meter's; 0 for others),
/// drawn on top of the rest in a colour of their own.
#[derive(Debug, Clone, Copy)]
pub struct Bar {
    pub start: i64,
    pub end: i64,
    pub bought: f64,
    pub sold: f64,
    pub tariff2: f64,
}

impl From<&domain::aggregate::EnergyBucket> for Bar {
    fn from(b: &domain::aggregate::EnergyBucket) -> Self {
        Bar::of(b, Flow::Electricity)
    }
}

impl Bar {
    /// A bucket's bar of `flow`: kWh bought and sold, or m³ (up only).
    pub fn of(b: &domain::aggregate::EnergyBucket, flow: Flow) -> Self {
        let (bought, sold) = match flow {
            Flow::Electricity => (b.kwh_bought, b.kwh_sold),
            Flow::Gas => (b.m3_gas.unwrap_or(0.0), 0.0),
            Flow::Water => (b.m3_water.unwrap_or(0.0), 0.0),
        };
        let tariff2 = match flow {
            Flow::Electricity => b.amount(Counter::BoughtT2).unwrap_or(0.0).min(bought),
            Flow::Gas | Flow::Water => 0.0,
        };
        Bar {
            start: b.start.millis(),
            end: b.end.millis(),
            bought,
            sold,
            tariff2,
        }
    }
}

/// What a meter's bars count (issue 79): electricity (kWh, bought up in
/// red, sold down in green), gas or water (m³, up, each its own colour, so
/// that a page of several meters tells them apart at a glance).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Electricity,
    Gas,
    Water,
}

impl Flow {
    pub fn unit(self) -> &'static str {
        match self {
            Flow::Electricity => "kWh",
            Flow::Gas | Flow::Water => "m³",
        }
    }

    /// Its name in pages' attributes and classes.
    pub fn name(self) -> &'static str {
        match self {
            Flow::Electricity => "electricity",
            Flow::Gas => "gas",
            Flow::Water => "water",
        }
    }

    fn up(self) -> RGBColor {
        match self {
            Flow::Electricity => BOUGHT,
            Flow::Gas => GAS,
            Flow::Water => WATER,
        }
    }
}

pub enum Data {
    Lines(Vec<Line>),
    Band(Vec<BandPoint>),
    Bars(Vec<Bar>, Flow),
}

impl Data {
    /// Points drawn: readings of every line, buckets of a band, bars.
    pub fn points(&self) -> usize {
        match self {
            Data::Lines(lines) => lines.iter().map(|l| l.points.len()).sum(),
            Data::Band(b) => b.len(),
            Data::Bars(b, _) => b.len(),
        }
    }
}

/// A chart over `[from, to)` (epoch ms).
pub struct Chart<'a> {
    pub title: &'a str,
    pub unit: &'a str,
    pub from: i64,
    pub to: i64,
    pub tz: Zone,
    pub width: u32,
    pub height: u32,
    pub data: &'a Data,
}

/// Colours with at least 4.5:1 contrast on white (WCAG AA for the text and lines).
const INK: RGBColor = RGBColor(0x1f, 0x29, 0x37);
const LINE: RGBColor = RGBColor(0x1d, 0x4e, 0xd8);
const BAND: RGBColor = RGBColor(0x93, 0xc5, 0xfd);
const BOUGHT: RGBColor = RGBColor(0xb9, 0x1c, 0x1c);
/// A two-tariff meter's tariff 2, on top of its bought bar.
pub const TARIFF2: RGBColor = RGBColor(0x6d, 0x28, 0xd9);
const SOLD: RGBColor = RGBColor(0x15, 0x80, 0x3d);
const GAS: RGBColor = RGBColor(0xb4, 0x53, 0x09);
const WATER: RGBColor = RGBColor(0x03, 0x69, 0xa1);
const PALETTE: [RGBColor; 4] = [
    LINE,
    RGBColor(0xb4, 0x53, 0x09),
    RGBColor(0x6d, 0x28, 0xd9),
    RGBColor(0x0f, 0x76, 0x6e),
];

/// The lowest and highest finite value; `None` when there is none.
fn y_bounds(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    lo.is_finite().then_some((lo, hi))
}

/// The chart as a standalone SVG document, with `role="img"` and a title.
pub fn svg(chart: &Chart) -> String {
    let mut out = String::new();
    {
        let root =
            SVGBackend::with_string(&mut out, (chart.width, chart.height)).into_drawing_area();
        // Errors from the SVG backend only come from formatting into the string.
        let _ = draw(&root, chart);
        let _ = root.present();
    }
    label(out, chart.title, chart.data.points())
}

/// Puts an accessible name and the point count on the `<svg>` element.
fn label(svg: String, title: &str, points: usize) -> String {
    let escaped = maud::html! { (title) }.into_string();
    match svg.split_once('>') {
        Some((open, rest)) => format!(
            "{open} role=\"img\" aria-label=\"{escaped}\" data-points=\"{points}\"><title>{escaped}</title>{rest}"
        ),
        None => svg,
    }
}

/// Pixels left of the plot for the value labels, and below it for the times.
const Y_LABELS_PX: u32 = 64;
const X_LABELS_PX: u32 = 22;
const MARGIN_PX: u32 = 8;
/// Where the plot area starts, from the SVG's left edge, and ends, from its
/// right edge (the page's pointer script maps a bar chart's x with them).
pub const PLOT_LEFT: u32 = MARGIN_PX + Y_LABELS_PX;
pub const PLOT_RIGHT: u32 = MARGIN_PX;

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    chart: &Chart,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let bounds = match chart.data {
        Data::Lines(lines) => y_bounds(lines.iter().flat_map(|l| l.points.iter().map(|p| p.1))),
        Data::Band(b) => y_bounds(b.iter().flat_map(|p| [p.min, p.max])),
        // Bars stand on zero: bought up, sold down.
        Data::Bars(b, _) => y_bounds(b.iter().flat_map(|p| [p.bought, -p.sold, 0.0])),
    };
    let (lo, hi) = bounds.unwrap_or((0.0, 1.0));
    let rows = (chart.height / 55).clamp(3, 8) as usize;
    let (y_lo, y_hi, y_ticks) = ticks::value_ticks(lo, hi, rows);
    let decimals = ticks::decimals(&y_ticks);
    let tz = chart.tz;
    let step = ticks::time_step(
        chart.from,
        chart.to,
        chart.width.saturating_sub(Y_LABELS_PX),
    );
    let x_ticks = ticks::time_ticks(chart.from, chart.to, step, tz);
    let mut c = ChartBuilder::on(root)
        .margin(MARGIN_PX)
        .x_label_area_size(X_LABELS_PX)
        .y_label_area_size(Y_LABELS_PX)
        .build_cartesian_2d(
            (chart.from..chart.to).with_key_points(x_ticks),
            // Bounds on round steps: plotters' own key points then fall on
            // them (it picks 1, 2 or 5 times a power of ten, as ours).
            y_lo..y_hi,
        )?;
    let text = ("sans-serif", 15).into_font().color(&INK);
    c.configure_mesh()
        .y_labels(y_ticks.len())
        .light_line_style(WHITE)
        .bold_line_style(INK.mix(0.12))
        .axis_style(INK.mix(0.6))
        .label_style(text)
        .x_label_formatter(&|ms| step.format(*ms, tz))
        .y_label_formatter(&|v| format!("{:.*}", decimals, crate::json::unsigned_zero(*v)))
        .y_desc(chart.unit)
        .draw()?;
    match chart.data {
        Data::Lines(lines) => {
            for (i, line) in lines.iter().enumerate() {
                let colour = PALETTE[i % PALETTE.len()];
                c.draw_series(LineSeries::new(
                    line.points.iter().copied(),
                    colour.stroke_width(2),
                ))?;
            }
        }
        Data::Band(band) => {
            let mid = |p: &BandPoint| p.start + (p.end - p.start) / 2;
            let mut outline: Vec<(i64, f64)> = band.iter().map(|p| (mid(p), p.max)).collect();
            outline.extend(band.iter().rev().map(|p| (mid(p), p.min)));
            c.draw_series(std::iter::once(Polygon::new(outline, BAND.mix(0.6))))?;
            c.draw_series(LineSeries::new(
                band.iter().map(|p| (mid(p), p.mean)),
                LINE.stroke_width(2),
            ))?;
        }
        Data::Bars(bars, flow) => {
            // A gap between neighbours: a tenth of a bar's width each side.
            let inset = |b: &Bar| {
                (
                    b.start + (b.end - b.start) / 10,
                    b.end - (b.end - b.start) / 10,
                )
            };
            c.draw_series(bars.iter().map(|b| {
                let (l, r) = inset(b);
                Rectangle::new([(l, 0.0), (r, b.bought - b.tariff2)], flow.up().filled())
            }))?;
            c.draw_series(bars.iter().filter(|b| b.tariff2 > 0.0).map(|b| {
                let (l, r) = inset(b);
                Rectangle::new([(l, b.bought - b.tariff2), (r, b.bought)], TARIFF2.filled())
            }))?;
            c.draw_series(bars.iter().filter(|b| b.sold > 0.0).map(|b| {
                let (l, r) = inset(b);
                Rectangle::new([(l, 0.0), (r, -b.sold)], SOLD.filled())
            }))?;
        }
    }
    Ok(())
}

/// A small line without axes (the overview's 24 hours), as inline SVG.
pub fn sparkline(points: &[(i64, f64)], from: i64, to: i64, title: &str) -> String {
    let (w, h) = (120.0, 32.0);
    let (lo, hi) = match y_bounds(points.iter().map(|p| p.1)) {
        Some((lo, hi)) if hi > lo => (lo, hi),
        Some((v, _)) => (v - 0.5, v + 0.5),
        None => (0.0, 1.0),
    };
    let x = |t: i64| (t - from) as f64 / (to - from).max(1) as f64 * w;
    let y = |v: f64| h - (v - lo) / (hi - lo) * h;
    let mut path = String::new();
    for (t, v) in points {
        if !path.is_empty() {
            path.push(' ');
        }
        path.push_str(&format!("{:.1},{:.1}", x(*t), y(*v)));
    }
    let escaped = maud::html! { (title) }.into_string();
    format!(
        "<svg class=\"spark\" width=\"120\" height=\"32\" viewBox=\"0 0 120 32\" role=\"img\" aria-label=\"{escaped}\" data-points=\"{}\"><title>{escaped}</title><polyline fill=\"none\" stroke=\"#1d4ed8\" stroke-width=\"1.5\" points=\"{path}\"/></svg>",
        points.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(data: &Data) -> String {
        svg(&Chart {
            title: "Bedroom <temperature> & more",
            unit: "°C",
            from: 0,
            to: 86_400_000,
            tz: Zone::UTC,
            width: 600,
            height: 240,
            data,
        })
    }

    #[test]
    fn a_line_chart_draws_every_point_and_escapes_its_title() {
        let points: Vec<(i64, f64)> = (0..48)
            .map(|i| (i * 1_800_000, 20.0 + i as f64 * 0.1))
            .collect();
        let svg = chart(&Data::Lines(vec![Line {
            label: "s".into(),
            points,
        }]));
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("data-points=\"48\""));
        assert!(svg.contains("aria-label=\"Bedroom &lt;temperature&gt; &amp; more\""));
        assert!(!svg.contains("<temperature>"));
        // The line itself: one polyline whose point count is the readings'.
        let line = svg
            .split("<polyline")
            .find(|p| p.contains("stroke-width=\"2\""))
            .unwrap();
        let pts = line
            .split("points=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        assert_eq!(pts.split_whitespace().count(), 48);
    }

    #[test]
    fn a_band_has_an_outline_of_twice_its_buckets_and_a_mean_line() {
        let band: Vec<BandPoint> = (0..24)
            .map(|i| BandPoint {
                start: i * 3_600_000,
                end: (i + 1) * 3_600_000,
                min: 18.0,
                mean: 19.0 + (i % 3) as f64,
                max: 23.0,
            })
            .collect();
        let svg = chart(&Data::Band(band));
        assert!(svg.contains("data-points=\"24\""));
        let polygon = svg.split("<polygon").nth(1).unwrap();
        let pts = polygon
            .split("points=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        assert_eq!(pts.split_whitespace().count(), 48);
    }

    #[test]
    fn bars_go_up_for_bought_and_down_for_sold() {
        let bars = vec![
            Bar {
                start: 0,
                end: 3_600_000,
                bought: 1.5,
                sold: 0.0,
                tariff2: 0.0,
            },
            Bar {
                start: 3_600_000,
                end: 7_200_000,
                bought: 0.5,
                sold: 2.0,
                tariff2: 0.0,
            },
        ];
        let svg = chart(&Data::Bars(bars.clone(), Flow::Electricity));
        assert_eq!(svg.matches("fill=\"#B91C1C\"").count(), 2, "{svg}");
        assert_eq!(svg.matches("fill=\"#15803D\"").count(), 1);
        assert_eq!(svg.matches("fill=\"#6D28D9\"").count(), 0, "no tariffs");
        // A two-tariff meter's tariff 2 on top of its bought bar.
        let tariffs: Vec<Bar> = bars
            .iter()
            .map(|b| Bar {
                tariff2: b.bought / 2.0,
                ..*b
            })
            .collect();
        let split = chart(&Data::Bars(tariffs, Flow::Electricity));
        assert_eq!(split.matches("fill=\"#B91C1C\"").count(), 2, "{split}");
        assert_eq!(split.matches("fill=\"#6D28D9\"").count(), 2, "{split}");
        // Gas and water in colours of their own; a gap between neighbours.
        let gas = chart(&Data::Bars(bars.clone(), Flow::Gas));
        assert_eq!(gas.matches("fill=\"#B45309\"").count(), 2, "{gas}");
        assert_eq!(gas.matches("fill=\"#B91C1C\"").count(), 0);
        let water = chart(&Data::Bars(bars, Flow::Water));
        assert_eq!(water.matches("fill=\"#0369A1\"").count(), 2, "{water}");
        let rects: Vec<(i64, i64)> = svg
            .split("<rect")
            .skip(2)
            .filter(|r| r.contains("#B91C1C"))
            .map(|r| {
                let num = |name: &str| -> i64 {
                    r.split(&format!("{name}=\""))
                        .nth(1)
                        .unwrap()
                        .split('"')
                        .next()
                        .unwrap()
                        .parse()
                        .unwrap()
                };
                (num("x"), num("x") + num("width"))
            })
            .collect();
        assert!(rects[0].1 < rects[1].0, "a gap between bars: {rects:?}");
    }

    /// The texts of an SVG's `<text>` elements.
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| t.split_once('>').map(|(_, rest)| rest))
            .map(|rest| rest.split('<').next().unwrap_or("").trim().to_owned())
            .collect()
    }

    /// The chart from 00:26 to 00:26: labels at round hours of the
    /// zone, not at 00:26, 06:00, 11:33, 17:06; values at round steps.
    #[test]
    fn axes_are_labelled_at_round_times_and_values() {
        let from = 1_795_998_360_000; // 2026-11-30T00:26:00Z
        let points: Vec<(i64, f64)> = (0..144)
            .map(|i| (from + i * 600_000, 17.3 + (i % 9) as f64 * 0.71))
            .collect();
        for (tz, hours) in [
            (Zone::UTC, ["03:00", "06:00", "09:00"]),
            (
                domain::model::Zone::named("Asia/Tokyo").unwrap(),
                ["12:00", "15:00", "18:00"],
            ),
        ] {
            let svg = svg(&Chart {
                title: "t",
                unit: "°C",
                from,
                to: from + 86_400_000,
                tz,
                width: 720,
                height: 260,
                data: &Data::Lines(vec![Line {
                    label: "s".into(),
                    points: points.clone(),
                }]),
            });
            let labels = texts(&svg);
            for h in hours {
                assert!(labels.iter().any(|l| l == h), "{h} in {labels:?}");
            }
            let times: Vec<&String> = labels.iter().filter(|l| l.contains(':')).collect();
            assert!(times.len() >= 4, "{labels:?}");
            assert!(times.iter().all(|l| l.ends_with(":00")), "{labels:?}");
            let values: Vec<f64> = labels.iter().filter_map(|l| l.parse().ok()).collect();
            assert!(values.len() >= 3, "{labels:?}");
            let step = values[1] - values[0];
            assert!([0.5, 1.0, 2.0].contains(&step.abs()), "{values:?}");
            assert!(
                values.iter().all(|v| (v / step).fract().abs() < 1e-9),
                "{values:?}"
            );
        }
    }

    #[test]
    fn a_sparkline_has_one_point_per_value() {
        let s = sparkline(&[(0, 1.0), (10, 2.0), (20, 1.5)], 0, 20, "x");
        assert!(s.contains("data-points=\"3\""));
        assert_eq!(
            s.split("<polyline")
                .nth(1)
                .unwrap()
                .split("points=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .split(' ')
                .count(),
            3
        );
    }
}
