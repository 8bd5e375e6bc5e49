//! A length of time as people write it in settings and rules: a whole
//! number and a unit (`90s`, `30m`, `24h`, `7d`), as `serve --backup-every`
//! and the alert rules' `for` and `keep_firing_for` take it.

use std::time::Duration;

/// `text` as a duration; `0s` only where `zero` is allowed.
pub fn parse_interval(text: &str, zero: bool) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("{text:?}: a number and a unit (s, m, h or d), such as 24h"))?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?}: a whole number before the unit"))?;
    let per_unit = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("{text:?}: the unit is s, m, h or d")),
    };
    let seconds = n
        .checked_mul(per_unit)
        .filter(|s| *s <= 100 * 365 * 86_400)
        .ok_or_else(|| format!("{text:?}: at most 100 years"))?;
    if seconds == 0 && !zero {
        return Err(format!("{text:?}: more than nothing"));
    }
    Ok(Duration::from_secs(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_and_a_unit() {
        assert_eq!(
            parse_interval("24h", false),
            Ok(Duration::from_secs(86_400))
        );
        assert_eq!(parse_interval(" 90s ", false), Ok(Duration::from_secs(90)));
        assert_eq!(
            parse_interval("7d", false),
            Ok(Duration::from_secs(604_800))
        );
        assert_eq!(parse_interval("0s", true), Ok(Duration::ZERO));
        for bad in ["0m", "h", "5", "5w", "-5m", "1.5h", "99999999999999d"] {
            assert!(parse_interval(bad, false).is_err(), "{bad}");
        }
    }
}
