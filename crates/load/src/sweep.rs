//! The closed-model walk of a capacity search (`--find-max
//! --connections 1..256`): instead of rates, concurrency. A pure state
//! machine beside [`crate::search`]'s, with no clock and no I/O: the caller
//! asks [`Sweep::next_step`] for a number of connections, runs a
//! closed-model step at it, and hands back what it measured with
//! [`Sweep::observe`].
//!
//! The levels double from the lowest up to the highest; a step passes when
//! its latency (a closed model's own: from send to answer) and errors meet
//! the objective and the client was not saturated. The answer is the
//! highest throughput of a passing step and the concurrency that gave it;
//! the concurrency–throughput points go to the Universal Scalability Law's
//! fit that `dyno scale` uses, which says where throughput peaks and what
//! limits it (contention σ, coherency κ).
//!
//! A closed model cannot queue past its connections, so a rate's tests
//! (achieved share, late sends, a rising latency) do not apply: its
//! overload shows as latency growing with concurrency while throughput
//! stays flat or falls. As the rate search does, a step that failed while
//! the machine was busy (or ended nothing after steps that did) is run once
//! more, and the repeat's verdict stands for the level.

use dyno_model::record::{CapacityAnswer, CapacityOutcome};
use dyno_stats::scaling::{self, Measure, Point, USL_MIN_POINTS, UslFit};

use crate::search::{Observation, Purpose, Why, judge};
use crate::slo::Slo;

/// Consecutive failing levels after which the sweep stops: past the knee,
/// more connections only add latency.
pub const FAILS_TO_STOP: usize = 2;

/// The connections of each step: `from`, doubling, then `to`.
pub fn levels(from: u32, to: u32) -> Vec<u32> {
    let mut levels = Vec::new();
    let mut c = from.max(1);
    while c < to {
        levels.push(c);
        c = c.saturating_mul(2);
    }
    levels.push(to.max(from));
    levels
}

/// Why a closed-model step failed: the objective's latency and error
/// targets, no answer at all, or a saturated client (which ends the sweep).
pub fn judge_closed(slo: &Slo, obs: &Observation) -> Vec<Why> {
    judge(slo, obs)
        .into_iter()
        .filter(|why| {
            matches!(
                why,
                Why::Latency { .. } | Why::Errors { .. } | Why::NoRequests | Why::ClientBound
            )
        })
        .collect()
}

/// One level's verdict, as it stands (a repeat's replaces its first run's).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Level {
    connections: u32,
    achieved: f64,
    passed: bool,
    client_bound: bool,
}

/// The sweep's state.
#[derive(Debug, Clone)]
pub struct Sweep {
    levels: Vec<u32>,
    slo: Slo,
    max_steps: usize,
    /// Steps run, repeats included.
    runs: usize,
    /// The next level to run (an index into `levels`).
    next: usize,
    /// The level of the step asked for and not yet observed, and why.
    pending: Option<(u32, Purpose)>,
    /// A level to run again.
    repeat: Option<u32>,
    seen: Vec<Level>,
}

impl Sweep {
    /// A sweep of `levels`, at most `max_steps` steps.
    pub fn new(levels: Vec<u32>, slo: Slo, max_steps: usize) -> Sweep {
        Sweep {
            levels,
            slo,
            max_steps,
            runs: 0,
            next: 0,
            pending: None,
            repeat: None,
            seen: Vec::new(),
        }
    }

    /// The connections of the next step and why it runs, or `None` when
    /// the sweep is done. Asking again before [`Sweep::observe`] gives the
    /// same step.
    pub fn next_step(&mut self) -> Option<(u32, Purpose)> {
        if let Some(pending) = self.pending {
            return Some(pending);
        }
        if self.runs >= self.max_steps || self.seen.iter().any(|l| l.client_bound) {
            return None;
        }
        let failing = self.seen.iter().rev().take_while(|l| !l.passed).count();
        let step = match self.repeat.take() {
            Some(level) => (level, Purpose::Repeat),
            None if failing >= FAILS_TO_STOP => return None,
            None => (*self.levels.get(self.next)?, Purpose::Sweep),
        };
        self.pending = Some(step);
        Some(step)
    }

    /// What the step asked for by [`Sweep::next_step`] measured; returns
    /// why it ran and its verdict (empty: it passed). Panics if no step was
    /// asked for.
    pub fn observe(&mut self, observation: &Observation) -> (Purpose, Vec<Why>) {
        let (connections, purpose) = self
            .pending
            .take()
            .expect("observe follows a step from next_step()");
        self.runs += 1;
        let why = judge_closed(&self.slo, observation);
        let level = Level {
            connections,
            achieved: observation.achieved,
            passed: why.is_empty(),
            client_bound: why.contains(&Why::ClientBound),
        };
        if purpose == Purpose::Repeat {
            // The repeat stands for the level.
            if let Some(last) = self.seen.last_mut() {
                *last = level;
            }
            return (purpose, why);
        }
        self.next += 1;
        let measured_before = self.seen.iter().any(|l| l.achieved > 0.0);
        let suspect = !level.passed
            && !level.client_bound
            && (observation.busy || (observation.requests == 0 && measured_before));
        if suspect {
            self.repeat = Some(connections);
        }
        self.seen.push(level);
        (purpose, why)
    }

    /// The passing level with the highest throughput.
    fn best(&self) -> Option<&Level> {
        self.seen
            .iter()
            .filter(|l| l.passed)
            .max_by(|a, b| a.achieved.total_cmp(&b.achieved))
    }

    /// The connections of the best passing level, and of the first level
    /// past it that failed, as the steps' figures and knee.
    pub fn best_and_knee(&self) -> (Option<u32>, Option<u32>) {
        let best = self.best().map(|b| b.connections);
        let knee = self
            .seen
            .iter()
            .find(|l| !l.passed && best.is_none_or(|b| l.connections > b))
            .map(|l| l.connections);
        (best, knee)
    }

    /// How the sweep ended, in the capacity search's terms: `max_rate` is
    /// the best passing throughput, `above_rate` the throughput of the
    /// first failing level beyond it. Found once a level failed past the
    /// best or every level ran; a sweep the budget or a lost target ended
    /// before that is unfinished.
    pub fn answer(&self) -> CapacityAnswer {
        let best = self.best();
        let (_, knee) = self.best_and_knee();
        let fail = knee.and_then(|k| self.seen.iter().find(|l| l.connections == k));
        if let Some(bound) = self.seen.iter().find(|l| l.client_bound) {
            return CapacityAnswer {
                outcome: CapacityOutcome::ClientBound,
                max_rate: best.map(|b| b.achieved),
                client_bound_at: Some(bound.achieved),
                ..CapacityAnswer::default()
            };
        }
        match (best, fail) {
            (None, Some(fail)) => CapacityAnswer {
                outcome: CapacityOutcome::NoneMeets,
                lowest_rate: Some(fail.achieved),
                ..CapacityAnswer::default()
            },
            (best, fail) => CapacityAnswer {
                outcome: if fail.is_some() || self.next >= self.levels.len() {
                    CapacityOutcome::Found
                } else {
                    CapacityOutcome::Unfinished
                },
                max_rate: best.map(|b| b.achieved),
                above_rate: fail.map(|f| f.achieved),
                ..CapacityAnswer::default()
            },
        }
    }

    /// The USL fit of the levels' throughput over their connections, when
    /// enough distinct levels had answers.
    pub fn usl(&self) -> Option<UslFit> {
        let points: Vec<Point> = self
            .seen
            .iter()
            .filter(|l| l.achieved > 0.0)
            .map(|l| Point {
                n: f64::from(l.connections),
                value: l.achieved,
            })
            .collect();
        if points.len() < USL_MIN_POINTS {
            return None;
        }
        scaling::usl_fit(&points, Measure::Throughput).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A closed system of N connections in front of a server that follows
    /// the USL with σ = 0.05, κ = 0.001 and 1,000/s at N = 1: by Little's
    /// law each request takes N / X(N).
    pub(crate) fn usl_server(connections: u32) -> Observation {
        let n = f64::from(connections);
        let x = 1000.0 * n / (1.0 + 0.05 * (n - 1.0) + 0.001 * n * (n - 1.0));
        let latency = Duration::from_secs_f64(n / x);
        let requests = x as u64;
        Observation {
            requested: x,
            achieved: x,
            latency: vec![(50.0, latency), (99.0, latency.mul_f64(1.5))],
            requests,
            errors: 0,
            sends: requests,
            late: 0,
            rise: None,
            client_saturated: false,
            busy: false,
        }
    }

    /// Runs a sweep of `from..to` under `slo` on `server`; the levels run.
    fn sweep(
        from: u32,
        to: u32,
        slo: &str,
        max_steps: usize,
        mut server: impl FnMut(u32, usize) -> Observation,
    ) -> (Sweep, Vec<(u32, Purpose)>) {
        let mut s = Sweep::new(levels(from, to), slo.parse().unwrap(), max_steps);
        let mut ran = Vec::new();
        while let Some((c, purpose)) = s.next_step() {
            ran.push((c, purpose));
            s.observe(&server(c, ran.len()));
        }
        (s, ran)
    }

    fn connections(ran: &[(u32, Purpose)]) -> Vec<u32> {
        ran.iter().map(|r| r.0).collect()
    }

    #[test]
    fn the_levels_double_from_the_lowest_and_end_at_the_highest() {
        assert_eq!(levels(1, 256), [1, 2, 4, 8, 16, 32, 64, 128, 256]);
        assert_eq!(levels(3, 20), [3, 6, 12, 20]);
        assert_eq!(levels(8, 8), [8]);
    }

    #[test]
    fn a_sweep_finds_the_best_passing_throughput_and_the_usl_peak() {
        // Without a binding target every level passes; the fit finds the
        // model's own parameters and its peak at ⌊√((1 − σ)/κ)⌋ = 30.
        let (s, ran) = sweep(1, 256, "p99<=10s", 60, |c, _| usl_server(c));
        assert_eq!(ran.len(), 9);
        let fit = s.usl().expect("nine points fit");
        assert!((fit.sigma - 0.05).abs() < 1e-3, "{fit:?}");
        assert!((fit.kappa - 0.001).abs() < 1e-4, "{fit:?}");
        assert_eq!(fit.peak_n, Some(30.0));
        assert_eq!(s.best_and_knee(), (Some(32), None));
        let answer = s.answer();
        assert_eq!(answer.outcome, CapacityOutcome::Found);
        assert_eq!(answer.max_rate, Some(usl_server(32).achieved));
        assert_eq!(answer.above_rate, None);
    }

    #[test]
    fn a_latency_target_stops_the_sweep_two_failures_past_the_knee() {
        // p99 = 1.5 N / X(N): 3.0 ms at 16, 5.3 ms at 32, 12.3 ms at 64.
        let (s, ran) = sweep(1, 256, "p99<=5ms", 60, |c, _| usl_server(c));
        assert_eq!(connections(&ran), [1, 2, 4, 8, 16, 32, 64]);
        assert_eq!(s.best_and_knee(), (Some(16), Some(32)));
        let answer = s.answer();
        assert_eq!(answer.outcome, CapacityOutcome::Found);
        assert_eq!(answer.above_rate, Some(usl_server(32).achieved));
    }

    #[test]
    fn a_target_no_level_meets_and_a_saturated_client_say_so() {
        let (s, ran) = sweep(64, 256, "p99<=1ms", 60, |c, _| usl_server(c));
        assert_eq!(s.answer().outcome, CapacityOutcome::NoneMeets);
        assert_eq!(ran.len(), 2);

        let (s, ran) = sweep(1, 64, "p99<=10s", 60, |c, _| Observation {
            client_saturated: c >= 4,
            ..usl_server(c)
        });
        assert_eq!(ran.len(), 3);
        let answer = s.answer();
        assert_eq!(answer.outcome, CapacityOutcome::ClientBound);
        assert_eq!(answer.max_rate, Some(usl_server(2).achieved));
    }

    #[test]
    fn the_budget_limits_the_levels_and_leaves_the_sweep_unfinished() {
        let (s, ran) = sweep(1, 256, "p99<=10s", 3, |c, _| usl_server(c));
        assert_eq!(ran.len(), 3);
        assert_eq!(s.answer().outcome, CapacityOutcome::Unfinished);
    }

    #[test]
    fn a_level_that_failed_on_a_busy_machine_runs_again_and_the_repeat_stands() {
        // The fourth run (8 connections) fails while other work took the
        // client's CPU; its repeat on a quiet machine passes.
        let (s, ran) = sweep(1, 16, "p99<=5ms", 60, |c, n| {
            if n == 4 {
                Observation {
                    busy: true,
                    latency: vec![(99.0, Duration::from_millis(50))],
                    ..usl_server(c)
                }
            } else {
                usl_server(c)
            }
        });
        assert_eq!(connections(&ran), [1, 2, 4, 8, 8, 16]);
        assert_eq!(ran[4].1, Purpose::Repeat);
        assert_eq!(s.best_and_knee(), (Some(16), None));
        assert_eq!(s.answer().outcome, CapacityOutcome::Found);
    }
}
