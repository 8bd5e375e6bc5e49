//! A page's charts: which plots its quantities make, their data read
//! through the query use case, and each drawn as SVG.

use super::super::error::ApiError;
use super::charts::{BandPoint, Bar, Chart, Data, Flow, Line};
use super::view::View;
use super::MAX_RAW_POINTS;
use super::{charts, energy};
use domain::aggregate::Width;
use domain::model::{DeviceId, Quantity, QuantityKind};
use storage::{Order, Store};
use usecases::query::{self, Partition};

/// Points of one gauge quantity: raw lines, or a band of buckets.
pub(super) async fn gauge_data<S: Store>(
    store: &S,
    partition: Partition<'_>,
    quantity: Quantity,
    view: &View,
) -> Result<Data, ApiError> {
    let name = quantity.name();
    if view.band_width().is_none() {
        let request = query::ReadingsQuery {
            range: view.range,
            order: Order::Asc,
            limit: MAX_RAW_POINTS + 1,
            cursor: None,
        };
        let page = query::readings(store, partition, &request).await?;
        if page.readings.len() <= MAX_RAW_POINTS {
            // One line per device (a room has several).
            let mut lines: Vec<Line> = Vec::new();
            for r in &page.readings {
                let Some(v) = r.get(quantity) else { continue };
                let label = r.device_id.as_str();
                match lines.iter_mut().find(|l| l.label == label) {
                    Some(line) => line.points.push((r.timestamp.millis(), v)),
                    None => lines.push(Line {
                        label: label.to_owned(),
                        points: vec![(r.timestamp.millis(), v)],
                    }),
                }
            }
            return Ok(Data::Lines(lines));
        }
    }
    let width = view.band_width().unwrap_or(Width::FiveMinutes);
    let stats = query::stats(store, partition, &view.query(width)).await?;
    Ok(Data::Band(
        stats
            .buckets
            .iter()
            .filter_map(|b| {
                let f = b.fields.get(name)?;
                Some(BandPoint {
                    start: b.start.millis(),
                    end: b.end.millis(),
                    min: f.min,
                    mean: f.sum / f.count as f64,
                    max: f.max,
                })
            })
            .collect(),
    ))
}

pub(super) async fn energy_data<S: Store>(
    store: &S,
    device: &DeviceId,
    view: &View,
) -> Result<Data, ApiError> {
    let energy = query::energy(store, device, &view.query(view.energy_width())).await?;
    Ok(Data::Bars(
        energy.buckets.iter().map(Bar::from).collect(),
        Flow::Electricity,
    ))
}

/// What a chart is of: a gauge quantity, or a meter's energy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Plot {
    Gauge(Quantity),
    Energy,
}

impl Plot {
    pub(super) fn parse(s: &str) -> Option<Self> {
        if s == "energy" {
            return Some(Plot::Energy);
        }
        Quantity::parse(s)
            .filter(|q| q.kind() == QuantityKind::Gauge)
            .map(Plot::Gauge)
    }

    pub fn key(self) -> &'static str {
        match self {
            Plot::Gauge(q) => q.name(),
            Plot::Energy => "energy",
        }
    }

    /// What the chart's caption calls it, for people.
    pub fn label(self) -> &'static str {
        match self {
            Plot::Gauge(q) => q.spec().label,
            Plot::Energy => "Energy",
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Plot::Gauge(q) => q.spec().unit,
            Plot::Energy => "kWh",
        }
    }
}

/// The plots of a device: its gauges, and energy when it has an
/// electricity counter (bought, sold or both).
pub(super) fn plots(quantities: impl Iterator<Item = Quantity> + Clone) -> Vec<Plot> {
    let mut out: Vec<Plot> = quantities
        .clone()
        .filter(|q| q.kind() == QuantityKind::Gauge)
        .map(Plot::Gauge)
        .collect();
    if energy::Reported::among(quantities).electricity() {
        out.push(Plot::Energy);
    }
    out
}

/// A page's charts are drawn twice: for a wide screen, and narrower with
/// fewer labels for a phone (CSS shows one), so that text stays readable at
/// 390 px instead of shrinking with the picture.
pub const PAGE_SIZES: [(u32, u32); 2] = [(720, 260), (360, 240)];

/// One chart, drawn.
pub struct Drawn {
    pub plot: Plot,
    /// The chart at the first size asked for.
    pub svg: String,
    /// At the second size, if one was asked for.
    pub narrow: Option<String>,
    pub points: usize,
    /// `[[minutes from the range's start, value], ...]` of the chart's line
    /// (the first line, or the band's mean), for the value under the pointer.
    pub values: String,
}

pub(super) async fn draw<S: Store>(
    store: &S,
    partition: Partition<'_>,
    plot: Plot,
    view: &View,
    title: &str,
    sizes: &[(u32, u32)],
) -> Result<Drawn, ApiError> {
    let data = match (plot, &partition) {
        (Plot::Energy, Partition::Device(d)) => energy_data(store, d, view).await?,
        (Plot::Energy, Partition::Room(_)) => Data::Bars(Vec::new(), Flow::Electricity),
        (Plot::Gauge(q), _) => gauge_data(store, partition, q, view).await?,
    };
    let mut svgs = sizes.iter().map(|(width, height)| {
        charts::svg(&Chart {
            title,
            unit: plot.unit(),
            from: view.range.from().millis(),
            to: view.range.to().millis(),
            tz: view.tz,
            width: *width,
            height: *height,
            data: &data,
        })
    });
    let (svg, narrow) = (svgs.next().unwrap_or_default(), svgs.next());
    // Minutes from the range's start and values, compact: a day of 1-minute
    // readings is 1440 of them per chart.
    let from = view.range.from().millis();
    let at = |ms: i64| (ms - from) / 60_000;
    let line: Vec<(i64, f64)> = match &data {
        Data::Lines(lines) => lines
            .first()
            .map(|l| l.points.iter().map(|(t, v)| (at(*t), *v)).collect())
            .unwrap_or_default(),
        Data::Band(band) => band
            .iter()
            .map(|p| (at(p.start), (p.mean * 100.0).round() / 100.0))
            .collect(),
        Data::Bars(..) => Vec::new(),
    };
    Ok(Drawn {
        plot,
        points: data.points(),
        svg,
        narrow,
        values: crate::json::to_string(&line),
    })
}
