//! The time a subscription gives each message it receives, for the
//! readings of a payload that carries none.
//!
//! A reading's key is its device and time, to the millisecond. Devices
//! that publish a reading in parts, a message per component (a Shelly Pro
//! 3EM's watts on `status/em:0`, its totals on `status/emdata:0`; a Shelly
//! H&T's temperature and humidity), send them back to back, often within
//! one millisecond: with the wall clock's time, the second part's reading
//! would replace the first's. So no two messages of a subscription get the
//! same time: a message received in the millisecond of the one before gets
//! the next millisecond. The clock runs ahead of the wall clock only while
//! more than a thousand messages a second arrive (a broker handing over
//! what it kept while we were away), and falls back to it after.

use domain::model::Timestamp;

/// Receive times, each later than the one before (module comment).
#[derive(Debug, Default)]
pub struct ReceiveClock {
    last: Option<Timestamp>,
}

impl ReceiveClock {
    /// The time of a message received at `now`.
    pub fn next(&mut self, now: Timestamp) -> Timestamp {
        let at = match self.last {
            Some(last) if now <= last => Timestamp::from_millis(last.millis() + 1).unwrap_or(last),
            _ => now,
        };
        self.last = Some(at);
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_millis(ms).unwrap()
    }

    #[test]
    fn messages_of_one_millisecond_get_the_next_ones() {
        let mut clock = ReceiveClock::default();
        let t = 1_795_226_400_000;
        let got: Vec<i64> = [t, t, t, t + 1, t + 10, t + 10, t + 5]
            .into_iter()
            .map(|ms| clock.next(at(ms)).millis())
            .collect();
        assert_eq!(got, [t, t + 1, t + 2, t + 3, t + 10, t + 11, t + 12]);
    }
}
