//! A flat price per kWh bought, with its currency: what the dashboard
//! shows beside energy when the household sets one (`PRICE_PER_KWH` and
//! `CURRENCY`; template parameters `PricePerKwh` and `Currency`). Energy
//! sold is not valued: feed-in tariffs differ from the price paid, and a
//! wrong credit is worse than none (docs/dashboard.md).

/// A price per kWh and its currency (an ISO 4217 code such as EUR).
#[derive(Debug, Clone, PartialEq)]
pub struct Tariff {
    per_kwh: f64,
    currency: String,
}

/// The currency when only a price is given.
pub const DEFAULT_CURRENCY: &str = "EUR";

impl Tariff {
    /// `price` (a decimal from 0 to 100 per kWh; empty for none) in
    /// `currency` (three capital letters; empty for `DEFAULT_CURRENCY`).
    pub fn parse(price: &str, currency: &str) -> Result<Option<Self>, String> {
        let price = price.trim();
        if price.is_empty() {
            return Ok(None);
        }
        let per_kwh: f64 = price
            .parse()
            .ok()
            .filter(|p: &f64| p.is_finite() && (0.0..=100.0).contains(p))
            .ok_or_else(|| format!("a price per kWh from 0 to 100, got {price:?}"))?;
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
            currency: currency.to_owned(),
        }))
    }

    pub fn per_kwh(&self) -> f64 {
        self.per_kwh
    }

    pub fn currency(&self) -> &str {
        &self.currency
    }

    /// What `kwh` bought cost.
    pub fn cost(&self, kwh: f64) -> f64 {
        kwh * self.per_kwh
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
        assert_eq!((t.per_kwh(), t.currency()), (0.31, "EUR"));
        assert!((t.cost(10.0) - 3.1).abs() < 1e-12);
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
}
