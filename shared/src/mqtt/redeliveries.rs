//! A QoS 1 message delivered again keeps its first delivery's time (issue
//! 79). A broker delivers again what we did not acknowledge before the
//! connection dropped, with the DUP flag set; we may have stored it already
//! (the acknowledgement lost on the way). A payload that carries its own
//! time is the same key again, and stored once; one without takes its
//! receive time, so a second delivery would be a second reading, a second
//! or a minute later, counted twice in every mean.
//!
//! So each message's time is remembered by its topic and payload (a hash)
//! for [`REMEMBERED`], and a message with DUP set whose topic and payload
//! were given a time in that span takes that time: the same key, stored
//! once. A message without DUP is a new publish, whatever it holds (a
//! sensor may send the same value twice). The cost: a device that sends
//! the same payload twice within the span, the second one delivered again,
//! loses that second reading.

use super::ReceiveClock;
use domain::model::Timestamp;
use std::collections::{HashMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};

/// How long a message's time is remembered: a reconnection's backoff, and
/// the broker's redelivery after it, take well under this.
pub const REMEMBERED_MS: i64 = 15 * 60_000;

/// Messages remembered at most (a broker's backlog after an outage).
const MAX_REMEMBERED: usize = 100_000;

/// Receive times that survive a redelivery (module comment).
#[derive(Debug, Default)]
pub struct ReceiveTimes {
    clock: ReceiveClock,
    given: HashMap<u64, Timestamp>,
    order: VecDeque<(i64, u64)>,
}

fn key(topic: &str, payload: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    topic.hash(&mut h);
    payload.hash(&mut h);
    h.finish()
}

impl ReceiveTimes {
    /// The time of a message received at `now`; `redelivered`: its DUP flag.
    pub fn time_of(
        &mut self,
        topic: &str,
        payload: &[u8],
        redelivered: bool,
        now: Timestamp,
    ) -> Timestamp {
        while let Some(&(at, k)) = self.order.front() {
            if at >= now.millis() - REMEMBERED_MS && self.order.len() < MAX_REMEMBERED {
                break;
            }
            self.order.pop_front();
            if self.given.get(&k).is_some_and(|t| t.millis() == at) {
                self.given.remove(&k);
            }
        }
        let k = key(topic, payload);
        if redelivered {
            if let Some(t) = self.given.get(&k) {
                return *t;
            }
        }
        let t = self.clock.next(now);
        self.given.insert(k, t);
        self.order.push_back((t.millis(), k));
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_millis(ms).unwrap()
    }

    #[test]
    fn a_redelivery_keeps_the_first_time_and_a_new_publish_gets_its_own() {
        let mut times = ReceiveTimes::default();
        let t = 1_795_226_400_000;
        let first = times.time_of("readings/th-1", b"{\"temperature\":21.5}", false, at(t));
        // The same value published again: a new reading.
        let again = times.time_of(
            "readings/th-1",
            b"{\"temperature\":21.5}",
            false,
            at(t + 60_000),
        );
        assert_eq!((first.millis(), again.millis()), (t, t + 60_000));
        // Delivered again after a reconnection: the newest time of it.
        let dup = times.time_of(
            "readings/th-1",
            b"{\"temperature\":21.5}",
            true,
            at(t + 65_000),
        );
        assert_eq!(dup, again);
        // Another topic's, or another payload's, redelivery is news.
        let other = times.time_of(
            "readings/th-2",
            b"{\"temperature\":21.5}",
            true,
            at(t + 66_000),
        );
        assert_eq!(other.millis(), t + 66_000);
        // Past the span, forgotten.
        let late = times.time_of(
            "readings/th-1",
            b"{\"temperature\":21.5}",
            true,
            at(t + 60_000 + REMEMBERED_MS + 1),
        );
        assert_eq!(late.millis(), t + 60_000 + REMEMBERED_MS + 1);
    }
}
