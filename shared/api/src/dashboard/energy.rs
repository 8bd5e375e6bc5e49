//! A household's meters on the dashboard (issue 38): what a meter bought
//! and sold per hour of today and yesterday, per day of the last 30 days
//! and per month of the last 12, and the overview's today, yesterday, this
//! month and last month of each meter (not a sum: a plug's meter is often
//! part of the house's); a gas or water meter's m³ in the same tables. All
//! from `query::energy` (so from the rollups), in the viewer's time zone.

use super::charts::{Bar, Flow};
use domain::aggregate::counter::{Counter, Counters};
use domain::aggregate::{Bucketing, EnergyBucket, Width};
use domain::model::Zone;
use domain::model::{DeviceId, TimeRange, Timestamp};
use storage::{DeviceRecord, Store, StoreError};
use usecases::query::{self, StatsQuery};

/// Calendar periods ending now, in a zone.
#[derive(Debug, Clone, Copy)]
pub struct Calendar {
    pub tz: Zone,
    pub now: Timestamp,
}

impl Calendar {
    fn bucketing(&self, width: Width) -> Bucketing {
        Bucketing::new(width, Some(self.tz))
    }

    /// The start of the `width` bucket `back` buckets before the current one.
    fn start(&self, width: Width, back: u32) -> Timestamp {
        let b = self.bucketing(width);
        let mut start = b.start_of(self.now);
        for _ in 0..back {
            start = b.start_of(start.saturating_add_millis(-1));
        }
        start
    }

    fn end(&self, width: Width) -> Timestamp {
        let b = self.bucketing(width);
        b.end_of(b.start_of(self.now))
    }

    /// `width` buckets from `back` before the current one to the current one, whole.
    pub fn last(&self, width: Width, back: u32) -> TimeRange {
        TimeRange::new(self.start(width, back), self.end(width)).expect("a bucket is not empty")
    }

    /// The one `width` bucket `back` before the current one.
    pub fn one(&self, width: Width, back: u32) -> TimeRange {
        let start = self.start(width, back);
        TimeRange::new(start, self.bucketing(width).end_of(start)).expect("a bucket is not empty")
    }
}

/// What each counter added: kWh bought and sold, m³ of gas and of water.
pub type Totals = Counters<f64>;

/// A period's totals, `None` where no interval between the meter's readings
/// overlaps it (the energy answer has no bucket there): a meter installed
/// this month has no last month, and a table that said 0.00 kWh would say
/// it used nothing.
pub type PeriodTotals = Option<Totals>;

/// A period named for people, and its totals.
pub type Period = (&'static str, PeriodTotals);

/// `b` added to a period's totals.
fn add(period: &mut PeriodTotals, b: &EnergyBucket) {
    period.get_or_insert_with(Totals::default).add_bucket(b);
}

/// One chart of a meter's energy: its range and bars.
#[derive(Debug, Clone)]
pub struct Bars {
    /// `energy-hours`, `energy-days` or `energy-months`; `gas-…`, `water-…`.
    pub key: &'static str,
    /// What its bars count.
    pub flow: Flow,
    pub caption: &'static str,
    pub range: TimeRange,
    pub bars: Vec<Bar>,
    pub totals: Totals,
}

/// A meter's energy page: three charts and the totals of each period.
#[derive(Debug, Clone)]
pub struct MeterEnergy {
    pub charts: Vec<Bars>,
    /// Today, yesterday, the last 30 days, the last 12 months.
    pub periods: Vec<Period>,
    /// The counters the meter has sent (the page shows a column for each).
    pub counters: Reported,
}

async fn buckets<S: Store>(
    store: &S,
    device: &DeviceId,
    range: TimeRange,
    width: Width,
    tz: Zone,
) -> Result<Vec<EnergyBucket>, StoreError> {
    let q = StatsQuery {
        range,
        bucketing: Bucketing::new(width, Some(tz)),
    };
    Ok(query::energy(store, device, &q).await?.buckets)
}

/// Which counters a meter has sent: its tables show a column and a total
/// for each (a solar inverter's, or Home Assistant's production entity,
/// only sold; a gas meter only gas), its charts the electricity ones.
pub type Reported = Counters<bool>;

/// Whether a device has reported a counter (electricity, gas or water): it
/// is a meter.
pub fn is_meter(d: &DeviceRecord) -> bool {
    Reported::among(d.quantities.iter().copied()).any_of(&Counter::ALL)
}

/// A meter's energy: hours of yesterday and today, 30 days, 12 months.
pub async fn meter<S: Store>(
    store: &S,
    device: &DeviceRecord,
    cal: Calendar,
) -> Result<MeterEnergy, StoreError> {
    let id = &device.device_id;
    let counters = Reported::among(device.quantities.iter().copied());
    // Each counter the meter reports has its bars (issue 79: gas and water
    // as electricity); the charts of one width share their buckets.
    let flows: Vec<(Flow, [&'static str; 3])> = [
        (
            counters.electricity(),
            Flow::Electricity,
            ["energy-hours", "energy-days", "energy-months"],
        ),
        (
            counters.gas,
            Flow::Gas,
            ["gas-hours", "gas-days", "gas-months"],
        ),
        (
            counters.water,
            Flow::Water,
            ["water-hours", "water-days", "water-months"],
        ),
    ]
    .into_iter()
    .filter(|(on, ..)| *on)
    .map(|(_, flow, keys)| (flow, keys))
    .collect();
    let specs = [
        (
            "Per hour, yesterday and today",
            cal.last(Width::Day, 1),
            Width::Hour,
        ),
        (
            "Per day, the last 30 days",
            cal.last(Width::Day, 29),
            Width::Day,
        ),
        (
            "Per month, the last 12 months",
            cal.last(Width::Month, 11),
            Width::Month,
        ),
    ];
    let mut charts = Vec::with_capacity(specs.len() * flows.len());
    let mut widths = Vec::with_capacity(specs.len());
    for (caption, range, width) in specs {
        let b = buckets(store, id, range, width, cal.tz).await?;
        widths.push((caption, range, Totals::of_buckets(&b), b));
    }
    for (flow, keys) in &flows {
        for (key, (caption, range, totals, b)) in keys.iter().zip(&widths) {
            charts.push(Bars {
                key,
                flow: *flow,
                caption,
                range: *range,
                totals: *totals,
                bars: b.iter().map(|b| Bar::of(b, *flow)).collect(),
            });
        }
    }
    // Today and yesterday as local days, not from the hourly bars: hours
    // are UTC hours, and in a zone a half hour off (India) one straddles
    // midnight.
    let today = cal.one(Width::Day, 0).from();
    let (mut today_totals, mut yesterday_totals) = (None, None);
    for b in buckets(store, id, cal.last(Width::Day, 1), Width::Day, cal.tz).await? {
        let t = if b.start >= today {
            &mut today_totals
        } else {
            &mut yesterday_totals
        };
        add(t, &b);
    }
    let period = |i: usize| (!widths[i].3.is_empty()).then_some(widths[i].2);
    let periods = vec![
        ("Today", today_totals),
        ("Yesterday", yesterday_totals),
        ("Last 30 days", period(1)),
        ("Last 12 months", period(2)),
    ];
    Ok(MeterEnergy {
        charts,
        periods,
        counters,
    })
}

/// A meter's today, yesterday, this month and last month.
pub async fn periods<S: Store>(
    store: &S,
    meter: &DeviceRecord,
    cal: Calendar,
) -> Result<Vec<Period>, StoreError> {
    let mut out = vec![
        ("Today", None),
        ("Yesterday", None),
        ("This month", None),
        ("Last month", None),
    ];
    let today = cal.one(Width::Day, 0).from();
    let this_month = cal.one(Width::Month, 0).from();
    let id = &meter.device_id;
    for b in buckets(store, id, cal.last(Width::Day, 1), Width::Day, cal.tz).await? {
        let i = if b.start >= today { 0 } else { 1 };
        add(&mut out[i].1, &b);
    }
    for b in buckets(store, id, cal.last(Width::Month, 1), Width::Month, cal.tz).await? {
        let i = if b.start >= this_month { 2 } else { 3 };
        add(&mut out[i].1, &b);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_are_whole_local_days_and_months() {
        // 2026-03-29T10:00Z: Berlin moved to summer time that night.
        let cal = Calendar {
            tz: domain::model::Zone::named("Europe/Berlin").unwrap(),
            now: Timestamp::parse("2026-03-29T10:00:00Z").unwrap(),
        };
        let today = cal.one(Width::Day, 0);
        assert_eq!(today.from().to_string(), "2026-03-28T23:00:00.000Z");
        assert_eq!(
            today.to().to_string(),
            "2026-03-29T22:00:00.000Z",
            "a 23-hour day"
        );
        let two = cal.last(Width::Day, 1);
        assert_eq!(two.from().to_string(), "2026-03-27T23:00:00.000Z");
        let year = cal.last(Width::Month, 11);
        assert_eq!(
            year.from().to_string(),
            "2025-03-31T22:00:00.000Z",
            "1 April 2025, CEST"
        );
        assert_eq!(year.to().to_string(), "2026-03-31T22:00:00.000Z");
        let last_month = cal.one(Width::Month, 1);
        assert_eq!(last_month.from().to_string(), "2026-01-31T23:00:00.000Z");
        assert_eq!(last_month.to().to_string(), "2026-02-28T23:00:00.000Z");
    }
}
