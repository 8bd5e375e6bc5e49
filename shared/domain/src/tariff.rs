//! Flat prices, per kWh bought and per m³ of gas and of water, with their
//! currency: what the dashboard shows beside a meter's periods when the
//! household sets one (`PRICE_PER_KWH`, `PRICE_PER_M3_GAS`,
//! `PRICE_PER_M3_WATER` and `CURRENCY`; template parameters `PricePerKwh`,
//! `PricePerM3Gas`, `PricePerM3Water` and `Currency`; issue 79). Energy
//! sold is not valued: feed-in tariffs differ from the price paid, and a
//! wrong credit is worse than none (docs/dashboard.md).

use crate::aggregate::counter::{Counter, Counters};

/// The prices set, and their currency (an ISO 4217 code such as EUR).
#[derive(Debug, Clone, PartialEq)]
pub struct Tariff {
    per_kwh: Option<f64>,
    per_m3_gas: Option<f64>,
    per_m3_water: Option<f64>,
    currency: String,
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
        Self::parse_prices(price, "", "", currency)
    }

    /// Prices per kWh bought, per m³ of gas and of water (each a decimal
    /// from 0 to 100; empty for none) in `currency` (three capital letters;
    /// empty for `DEFAULT_CURRENCY`); `None` where no price is set.
    pub fn parse_prices(
        kwh: &str,
        gas: &str,
        water: &str,
        currency: &str,
    ) -> Result<Option<Self>, String> {
        let (per_kwh, per_m3_gas, per_m3_water) = (
            price(kwh, "kWh")?,
            price(gas, "m³ of gas")?,
            price(water, "m³ of water")?,
        );
        if per_kwh.is_none() && per_m3_gas.is_none() && per_m3_water.is_none() {
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
            per_kwh,
            per_m3_gas,
            per_m3_water,
            currency: currency.to_owned(),
        }))
    }

    pub fn per_kwh(&self) -> Option<f64> {
        self.per_kwh
    }

    /// The price of what `counter` counts, where one is set (sold energy
    /// has none).
    pub fn price_of(&self, counter: Counter) -> Option<f64> {
        match counter {
            Counter::Bought => self.per_kwh,
            Counter::Sold => None,
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

    /// What a meter's `totals` cost, over its priced counters.
    pub fn cost_of(&self, totals: &Counters<f64>, counters: Counters<bool>) -> f64 {
        Counter::ALL
            .iter()
            .filter(|c| *counters.get(**c))
            .filter_map(|c| self.price_of(*c).map(|p| p * *totals.get(*c)))
            .sum()
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
        assert_eq!(Tariff::parse_prices("", "", "", "EUR"), Ok(None));
        let t = Tariff::parse_prices("", "1.20", "", "").unwrap().unwrap();
        assert_eq!(t.per_kwh(), None);
        assert_eq!(t.price_of(Counter::Gas), Some(1.2));
        let reports = |bought, gas| Counters {
            bought,
            sold: false,
            gas,
            water: false,
        };
        assert!(t.prices_any(reports(false, true)));
        assert!(!t.prices_any(reports(true, false)), "no kWh price");
        let t = Tariff::parse_prices("0.30", "1.20", "4.5", "GBP")
            .unwrap()
            .unwrap();
        let totals = Counters {
            bought: 10.0,
            sold: 3.0,
            gas: 2.5,
            water: 1.0,
        };
        let all = Counters {
            bought: true,
            sold: true,
            gas: true,
            water: true,
        };
        // 10 kWh at 0.30, 2.5 m³ of gas at 1.20, 1 m³ of water at 4.5; sold unvalued.
        assert!((t.cost_of(&totals, all) - (3.0 + 3.0 + 4.5)).abs() < 1e-9);
        assert!((t.cost_of(&totals, reports(false, true)) - 3.0).abs() < 1e-9);
        assert!(Tariff::parse_prices("", "cheap", "", "")
            .unwrap_err()
            .contains("m³ of gas"));
    }
}
