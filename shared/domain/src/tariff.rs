//! Flat prices, per kWh bought (with a price of its own for each tariff of
//! a two-tariff meter, where set) and per m³ of gas and of water, with
//! their currency: what the dashboard shows beside a meter's periods when
//! the household sets one (`PRICE_PER_KWH`, `PRICE_PER_KWH_T1`,
//! `PRICE_PER_KWH_T2`, `PRICE_PER_M3_GAS`, `PRICE_PER_M3_WATER` and
//! `CURRENCY`; template parameters `PricePerKwh`, `PricePerKwhT1`, ... and
//! `Currency`; issue 79). Energy sold is not valued: feed-in tariffs differ
//! from the price paid, and a wrong credit is worse than none
//! (docs/dashboard.md).

use crate::aggregate::counter::{Counter, Counters};

/// The prices set, and their currency (an ISO 4217 code such as EUR).
#[derive(Debug, Clone, PartialEq)]
pub struct Tariff {
    per_kwh: Option<f64>,
    /// Tariff 1's and tariff 2's, where they differ from `per_kwh`.
    per_kwh_tariff: [Option<f64>; 2],
    per_m3_gas: Option<f64>,
    per_m3_water: Option<f64>,
    currency: String,
}

/// The prices as a household writes them (each a decimal; empty for none).
#[derive(Debug, Clone, Copy, Default)]
pub struct PriceTexts<'a> {
    pub kwh: &'a str,
    pub kwh_t1: &'a str,
    pub kwh_t2: &'a str,
    pub m3_gas: &'a str,
    pub m3_water: &'a str,
}

/// The currency when only a price is given.
pub const DEFAULT_CURRENCY: &str = "EUR";

/// A price (a decimal from 0 to 100; empty for none).
fn price(text: &str, per: &str) -> Result<Option<f64>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse()
        .ok()
        .filter(|p: &f64| p.is_finite() && (0.0..=100.0).contains(p))
        .map(Some)
        .ok_or_else(|| format!("a price per {per} from 0 to 100, got {text:?}"))
}

impl Tariff {
    /// `price` per kWh bought (see [`Tariff::parse_prices`]).
    pub fn parse(price: &str, currency: &str) -> Result<Option<Self>, String> {
        Self::parse_prices(
            PriceTexts {
                kwh: price,
                ..Default::default()
            },
            currency,
        )
    }

    /// The prices (each a decimal from 0 to 100; empty for none) in
    /// `currency` (three capital letters; empty for `DEFAULT_CURRENCY`);
    /// `None` where no price is set.
    pub fn parse_prices(texts: PriceTexts, currency: &str) -> Result<Option<Self>, String> {
        let tariff = Self {
            per_kwh: price(texts.kwh, "kWh")?,
            per_kwh_tariff: [
                price(texts.kwh_t1, "kWh in tariff 1")?,
                price(texts.kwh_t2, "kWh in tariff 2")?,
            ],
            per_m3_gas: price(texts.m3_gas, "m³ of gas")?,
            per_m3_water: price(texts.m3_water, "m³ of water")?,
            currency: String::new(),
        };
        let any = tariff.per_kwh.is_some()
            || tariff.per_kwh_tariff.iter().any(Option::is_some)
            || tariff.per_m3_gas.is_some()
            || tariff.per_m3_water.is_some();
        if !any {
            return Ok(None);
        }
        let currency = match currency.trim() {
            "" => DEFAULT_CURRENCY,
            c if c.len() == 3 && c.bytes().all(|b| b.is_ascii_uppercase()) => c,
            c => {
                return Err(format!(
                    "a currency code of three capital letters (EUR, GBP, USD, ...), got {c:?}"
                ))
            }
        };
        Ok(Some(Self {
            currency: currency.to_owned(),
            ..tariff
        }))
    }

    pub fn per_kwh(&self) -> Option<f64> {
        self.per_kwh
    }

    /// The price of what `counter` counts, where one is set (sold energy
    /// has none; a tariff without a price of its own has the kWh one).
    pub fn price_of(&self, counter: Counter) -> Option<f64> {
        match counter {
            Counter::Bought => self.per_kwh,
            Counter::BoughtT1 => self.per_kwh_tariff[0].or(self.per_kwh),
            Counter::BoughtT2 => self.per_kwh_tariff[1].or(self.per_kwh),
            Counter::Sold | Counter::SoldT1 | Counter::SoldT2 => None,
            Counter::Gas => self.per_m3_gas,
            Counter::Water => self.per_m3_water,
        }
    }

    /// Whether a meter reporting `counters` has anything priced.
    pub fn prices_any(&self, counters: Counters<bool>) -> bool {
        Counter::ALL
            .iter()
            .any(|c| *counters.get(*c) && self.price_of(*c).is_some())
    }

    /// What a meter's `totals` cost, over its priced counters. Bought
    /// energy is priced by tariff where the meter has tariffs, and what its
    /// total holds beyond them (before it reported them) at the kWh price.
    pub fn cost_of(&self, totals: &Counters<f64>, counters: Counters<bool>) -> f64 {
        let mut cost = 0.0;
        for c in [Counter::Gas, Counter::Water] {
            if let (true, Some(p)) = (*counters.get(c), self.price_of(c)) {
                cost += p * totals.get(c);
            }
        }
        let mut in_tariffs = 0.0;
        for &t in Counter::Bought.tariffs() {
            if *counters.get(t) {
                in_tariffs += totals.get(t);
                cost += self.price_of(t).unwrap_or(0.0) * totals.get(t);
            }
        }
        let bought = counters.bought || in_tariffs > 0.0;
        if let (true, Some(p)) = (bought, self.per_kwh) {
            cost += p * (totals.bought - in_tariffs).max(0.0);
        }
        cost
    }

    /// Each price set, with what it is per, for people ("per kWh bought").
    pub fn named_prices(&self) -> Vec<(f64, &'static str)> {
        [
            (self.per_kwh, "per kWh bought"),
            (self.per_kwh_tariff[0], "per kWh in tariff 1"),
            (self.per_kwh_tariff[1], "per kWh in tariff 2"),
            (self.per_m3_gas, "per m³ of gas"),
            (self.per_m3_water, "per m³ of water"),
        ]
        .into_iter()
        .filter_map(|(price, per)| price.map(|p| (p, per)))
        .collect()
    }

    pub fn currency(&self) -> &str {
        &self.currency
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_price_is_a_decimal_and_a_currency_code() {
        assert_eq!(Tariff::parse("", "EUR"), Ok(None));
        assert_eq!(Tariff::parse("  ", ""), Ok(None));
        let t = Tariff::parse("0.31", "").unwrap().unwrap();
        assert_eq!((t.per_kwh(), t.currency()), (Some(0.31), "EUR"));
        let bought = Counters {
            bought: 10.0,
            ..Default::default()
        };
        let reports = Counters {
            bought: true,
            ..Default::default()
        };
        assert!((t.cost_of(&bought, reports) - 3.1).abs() < 1e-12);
        let t = Tariff::parse("0.245", "GBP").unwrap().unwrap();
        assert_eq!(t.currency(), "GBP");
        for (price, currency) in [
            ("cheap", "EUR"),
            ("-1", "EUR"),
            ("NaN", "EUR"),
            ("101", "EUR"),
            ("0.3", "euro"),
            ("0.3", "eur"),
        ] {
            assert!(
                Tariff::parse(price, currency).is_err(),
                "{price} {currency}"
            );
        }
    }

    /// A gas and a water price beside (or without) the kWh one (issue 79):
    /// a meter's cost is over the counters it reports that have a price.
    #[test]
    fn gas_and_water_have_prices_of_their_own() {
        let texts = |kwh, m3_gas, m3_water| PriceTexts {
            kwh,
            m3_gas,
            m3_water,
            ..Default::default()
        };
        assert_eq!(Tariff::parse_prices(texts("", "", ""), "EUR"), Ok(None));
        let t = Tariff::parse_prices(texts("", "1.20", ""), "")
            .unwrap()
            .unwrap();
        assert_eq!(t.per_kwh(), None);
        assert_eq!(t.price_of(Counter::Gas), Some(1.2));
        let reports = |bought, gas| Counters {
            bought,
            gas,
            ..Default::default()
        };
        assert!(t.prices_any(reports(false, true)));
        assert!(!t.prices_any(reports(true, false)), "no kWh price");
        let t = Tariff::parse_prices(texts("0.30", "1.20", "4.5"), "GBP")
            .unwrap()
            .unwrap();
        let totals = Counters {
            bought: 10.0,
            sold: 3.0,
            gas: 2.5,
            water: 1.0,
            ..Default::default()
        };
        let all = Counters {
            bought: true,
            sold: true,
            gas: true,
            water: true,
            ..Default::default()
        };
        // 10 kWh at 0.30, 2.5 m³ of gas at 1.20, 1 m³ of water at 4.5; sold unvalued.
        assert!((t.cost_of(&totals, all) - (3.0 + 3.0 + 4.5)).abs() < 1e-9);
        assert!((t.cost_of(&totals, reports(false, true)) - 3.0).abs() < 1e-9);
        assert!(Tariff::parse_prices(texts("", "cheap", ""), "")
            .unwrap_err()
            .contains("m³ of gas"));
    }

    /// A two-tariff meter's bought energy at each tariff's price (issue
    /// 79): a tariff without a price of its own at the kWh price, and what
    /// the total holds beyond its tariffs at the kWh price too.
    #[test]
    fn each_tariff_has_its_price() {
        let t = Tariff::parse_prices(
            PriceTexts {
                kwh: "0.30",
                kwh_t1: "0.20",
                kwh_t2: "0.40",
                ..Default::default()
            },
            "",
        )
        .unwrap()
        .unwrap();
        let meter = Counters {
            bought: true,
            bought_t1: true,
            bought_t2: true,
            ..Default::default()
        };
        let totals = Counters {
            bought: 10.0,
            bought_t1: 6.0,
            bought_t2: 4.0,
            ..Default::default()
        };
        // 6 kWh at 0.20 and 4 at 0.40, not 10 at 0.30.
        assert!((t.cost_of(&totals, meter) - 2.8).abs() < 1e-9);
        // 2 kWh of the total before the meter reported its tariffs.
        let earlier = Counters {
            bought: 12.0,
            ..totals
        };
        assert!((t.cost_of(&earlier, meter) - 3.4).abs() < 1e-9);
        // Home Assistant's tariffs alone: the total is their sum.
        let tariffs_only = Counters {
            bought: false,
            ..meter
        };
        assert!((t.cost_of(&totals, tariffs_only) - 2.8).abs() < 1e-9);
        let t2_unpriced = Tariff::parse_prices(
            PriceTexts {
                kwh: "0.30",
                kwh_t1: "0.20",
                ..Default::default()
            },
            "",
        )
        .unwrap()
        .unwrap();
        assert_eq!(t2_unpriced.price_of(Counter::BoughtT2), Some(0.30));
        assert!((t2_unpriced.cost_of(&totals, meter) - 2.4).abs() < 1e-9);
        assert!(Tariff::parse_prices(
            PriceTexts {
                kwh_t2: "-1",
                ..Default::default()
            },
            ""
        )
        .unwrap_err()
        .contains("tariff 2"));
    }
}
