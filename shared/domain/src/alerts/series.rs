//! One alert series (a rule and one device) through its states, as
//! Prometheus and vmalert move theirs, so that a replay can be compared
//! with vmalert's (docs/alerts.md):
//!
//! - inactive → pending when the condition first holds (or straight to
//!   firing when the rule's `for` is zero);
//! - pending → firing once it has held for `for`; pending → inactive when it
//!   stops before;
//! - firing → resolved when it has not held for `keep_firing_for` (at once
//!   when that is zero). A resolved series is inactive for the next step.
//!
//! Evaluation is a pure step: the state before, what was observed, the time.
//! Kept in the store between steps, so a restart neither forgets a firing
//! alert nor sends it twice.

use crate::model::Timestamp;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Phase {
    Inactive,
    Pending {
        since: Timestamp,
    },
    Firing {
        since: Timestamp,
        /// When the condition last stopped holding, while `keep_firing_for` runs.
        quiet_since: Option<Timestamp>,
    },
}

/// What a step changed, to be told to receivers (pending is shown, not sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    Pending,
    Firing,
    Resolved,
}

/// A series' state between evaluations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeriesState {
    pub phase: Phase,
    /// The value last observed (none for a quiet device).
    pub value: Option<f64>,
    /// When receivers were last told it fires (for `repeat_interval`).
    pub notified: Option<Timestamp>,
}

impl Default for SeriesState {
    fn default() -> Self {
        Self {
            phase: Phase::Inactive,
            value: None,
            notified: None,
        }
    }
}

fn at_least(since: Timestamp, now: Timestamp, d: Duration) -> bool {
    now.millis() - since.millis() >= d.as_millis() as i64
}

impl SeriesState {
    pub fn firing(&self) -> bool {
        matches!(self.phase, Phase::Firing { .. })
    }

    /// The state after an evaluation at `now` that found the condition
    /// holding or not (`holds`, with the value seen), for a rule with
    /// `hold` (`for`) and `keep_firing_for`.
    pub fn step(
        self,
        holds: bool,
        value: Option<f64>,
        now: Timestamp,
        hold: Duration,
        keep_firing_for: Duration,
    ) -> (SeriesState, Option<Transition>) {
        let next = |phase| SeriesState {
            phase,
            value,
            notified: self.notified,
        };
        match (self.phase, holds) {
            (Phase::Inactive, false) => (next(Phase::Inactive), None),
            (Phase::Inactive, true) if hold.is_zero() => (
                next(Phase::Firing {
                    since: now,
                    quiet_since: None,
                }),
                Some(Transition::Firing),
            ),
            (Phase::Inactive, true) => (
                next(Phase::Pending { since: now }),
                Some(Transition::Pending),
            ),
            (Phase::Pending { since }, true) if at_least(since, now, hold) => (
                next(Phase::Firing {
                    since: now,
                    quiet_since: None,
                }),
                Some(Transition::Firing),
            ),
            (Phase::Pending { since }, true) => (next(Phase::Pending { since }), None),
            (Phase::Pending { .. }, false) => (next(Phase::Inactive), None),
            (Phase::Firing { since, .. }, true) => (
                next(Phase::Firing {
                    since,
                    quiet_since: None,
                }),
                None,
            ),
            (Phase::Firing { since, quiet_since }, false) => {
                let quiet = quiet_since.unwrap_or(now);
                if at_least(quiet, now, keep_firing_for) {
                    let mut resolved = next(Phase::Inactive);
                    resolved.notified = None;
                    (resolved, Some(Transition::Resolved))
                } else {
                    (
                        next(Phase::Firing {
                            since,
                            quiet_since: Some(quiet),
                        }),
                        None,
                    )
                }
            }
        }
    }

    /// Whether receivers are due a (repeated) firing notification at `now`.
    pub fn due(&self, now: Timestamp, repeat_interval: Duration) -> bool {
        self.firing()
            && self
                .notified
                .is_none_or(|last| at_least(last, now, repeat_interval))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    fn at(minute: i64) -> Timestamp {
        Timestamp::from_millis(1_795_219_200_000 + minute * MIN).unwrap()
    }

    /// Steps through `holds` once a minute; the transitions with their minute.
    fn run(holds: &[bool], hold: u64, keep: u64) -> Vec<(i64, Transition)> {
        let mut state = SeriesState::default();
        let mut out = Vec::new();
        for (m, h) in holds.iter().enumerate() {
            let (next, t) = state.step(
                *h,
                Some(1.0),
                at(m as i64),
                Duration::from_secs(hold * 60),
                Duration::from_secs(keep * 60),
            );
            if let Some(t) = t {
                out.push((m as i64, t));
            }
            state = next;
        }
        out
    }

    #[test]
    fn pending_then_firing_after_for_then_resolved() {
        use Transition::*;
        let holds = [false, true, true, true, true, false, false];
        assert_eq!(
            run(&holds, 3, 0),
            vec![(1, Pending), (4, Firing), (5, Resolved)]
        );
        // Without `for`, it fires at once.
        assert_eq!(run(&holds, 0, 0), vec![(1, Firing), (5, Resolved)]);
        // A blip shorter than `for` never fires.
        assert_eq!(
            run(&[true, true, false, true], 3, 0),
            vec![(0, Pending), (3, Pending)]
        );
    }

    #[test]
    fn keep_firing_for_rides_out_flapping() {
        use Transition::*;
        let holds = [true, false, true, false, false, false, false];
        assert_eq!(
            run(&holds, 0, 0),
            vec![(0, Firing), (1, Resolved), (2, Firing), (3, Resolved)]
        );
        assert_eq!(run(&holds, 0, 2), vec![(0, Firing), (5, Resolved)]);
    }

    #[test]
    fn repeats_are_due_every_interval_while_firing() {
        let (firing, _) =
            SeriesState::default().step(true, Some(9500.0), at(0), Duration::ZERO, Duration::ZERO);
        assert!(firing.due(at(0), Duration::from_secs(4 * 3600)));
        let told = SeriesState {
            notified: Some(at(0)),
            ..firing
        };
        assert!(!told.due(at(239), Duration::from_secs(4 * 3600)));
        assert!(told.due(at(240), Duration::from_secs(4 * 3600)));
        let (resolved, t) = told.step(false, Some(100.0), at(241), Duration::ZERO, Duration::ZERO);
        assert_eq!(t, Some(Transition::Resolved));
        assert!(!resolved.due(at(500), Duration::from_secs(60)));
        assert_eq!(resolved.notified, None);
    }
}
