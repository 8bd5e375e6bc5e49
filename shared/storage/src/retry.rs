//! The one backoff of the program, from backon: how DynamoDB's requests are
//! retried (`store::dynamodb::calls`) and how `ingester-local`'s MQTT
//! subscription reconnects. Exponential: from `first`, doubling, up to `max`.

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};
use std::time::Duration;

/// How DynamoDB's requests are retried, how long one store operation may
/// take, and how many write chunks are in flight at once (`Config::dynamodb`;
/// used by `store::dynamodb::calls`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallPolicy {
    pub chunk_concurrency: usize,
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// Total time one store operation (every request and retry it makes)
    /// may take before what is left is reported unwritten or unavailable.
    pub budget: Duration,
}

impl Default for CallPolicy {
    fn default() -> Self {
        Self {
            chunk_concurrency: 8,
            base_delay: Duration::from_millis(25),
            max_delay: Duration::from_secs(1),
            budget: Duration::from_secs(5),
        }
    }
}

/// The delays of an exponential backoff that never gives up by itself (its
/// caller stops: a deadline, or a task that ends).
pub fn exponential(first: Duration, max: Duration) -> ExponentialBuilder {
    ExponentialBuilder::new()
        .with_min_delay(first)
        .with_max_delay(max)
        .without_max_times()
}

/// "Full jitter": a uniform delay in `[0, delay]`, so that clients throttled
/// together do not retry together.
pub fn full_jitter(delay: Duration) -> Duration {
    delay.mul_f64(fastrand::f64())
}

/// A reconnect's waits: each longer than the last, until a connection
/// succeeds and `reset` starts them again.
#[derive(Debug)]
pub struct Reconnect {
    builder: ExponentialBuilder,
    delays: ExponentialBackoff,
}

impl Reconnect {
    pub fn new(first: Duration, max: Duration) -> Self {
        let builder = exponential(first, max);
        Self {
            delays: builder.build(),
            builder,
        }
    }

    /// How long to wait before the next attempt.
    pub fn next_delay(&mut self) -> Duration {
        self.delays
            .next()
            .expect("an exponential backoff without max times never ends")
    }

    /// A connection succeeded: the next wait is the first again.
    pub fn reset(&mut self) {
        self.delays = self.builder.build();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap_and_start_again_after_a_reset() {
        let mut r = Reconnect::new(Duration::from_millis(250), Duration::from_secs(2));
        let seen: Vec<u128> = (0..6).map(|_| r.next_delay().as_millis()).collect();
        assert_eq!(seen, [250, 500, 1000, 2000, 2000, 2000]);
        r.reset();
        assert_eq!(r.next_delay(), Duration::from_millis(250));
        for _ in 0..100 {
            let d = full_jitter(Duration::from_millis(40));
            assert!(d <= Duration::from_millis(40));
        }
    }
}
