//! The closed-model variant of the capacity search (`--find-max
//! --connections 1..256`): instead of rates, concurrency. Each step runs
//! the closed model at a number of connections, from the lowest doubling
//! up to the highest; a step passes when its latency (a closed model's
//! own: from send to answer) and errors meet the objective and the client
//! was not saturated. The answer is the highest throughput of a passing
//! step and the concurrency that gave it; the concurrency–throughput
//! points go to the Universal Scalability Law's fit that `dyno scale`
//! uses, which says where throughput peaks and what limits it
//! (contention σ, coherency κ).
//!
//! A closed model cannot queue past its connections, so a rate's tests
//! (achieved share, late sends, a rising latency) do not apply: its
//! overload shows as latency growing with concurrency while throughput
//! stays flat or falls.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dyno_model::record::{
    CapacityAnswer, CapacityOutcome, CapacityRecord, CapacityStep, ConnectionSweep, UslSummary,
};
use dyno_stats::scaling::{self, Measure, Point, USL_MIN_POINTS, UslFit};

use crate::capacity::{Extra, Measured};
use crate::search::{Observation, Why, judge};
use crate::slo::Slo;

/// What the sweep is asked.
#[derive(Debug, Clone)]
pub struct Plan {
    pub slo: Slo,
    pub slo_text: String,
    /// The lowest and highest number of connections.
    pub from: u32,
    pub to: u32,
    /// Each step's measured length, and its warm-up.
    pub step: Duration,
    pub warmup: Duration,
    pub budget: Duration,
}

impl Plan {
    /// The connections of each step: `from`, doubling, then `to`.
    pub fn levels(&self) -> Vec<u32> {
        let mut levels = Vec::new();
        let mut c = self.from.max(1);
        while c < self.to {
            levels.push(c);
            c = c.saturating_mul(2);
        }
        levels.push(self.to.max(self.from));
        levels
    }

    /// How long a step waits for what is under way at its end
    /// ([`crate::capacity::Plan::grace`]).
    pub fn grace(&self) -> Duration {
        crate::capacity::grace(&self.slo)
    }

    /// The steps the budget allows (at least one).
    pub fn max_steps(&self) -> usize {
        let per_step = (self.step + self.warmup).as_secs_f64().max(1e-3);
        ((self.budget.as_secs_f64() / per_step) as usize).max(1)
    }
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

/// One step as run.
#[derive(Debug, Clone)]
pub struct Ran<O> {
    pub connections: u32,
    pub observation: Observation,
    pub why: Vec<Why>,
    pub extra: Extra,
    pub outcome: O,
}

impl<O> Ran<O> {
    pub fn passed(&self) -> bool {
        self.why.is_empty()
    }
}

/// What a sweep found.
#[derive(Debug, Clone)]
pub struct Swept<O> {
    pub steps: Vec<Ran<O>>,
    pub usl: Option<UslFit>,
    pub interrupted: bool,
    /// The target stopped answering at all: why.
    pub lost_target: Option<String>,
}

/// Consecutive failing steps after which the sweep stops: past the knee,
/// more connections only add latency.
const FAILS_TO_STOP: usize = 2;

impl<O> Swept<O> {
    /// The passing step with the highest throughput.
    pub fn best(&self) -> Option<&Ran<O>> {
        self.steps
            .iter()
            .filter(|s| s.passed())
            .max_by(|a, b| a.observation.achieved.total_cmp(&b.observation.achieved))
    }

    /// The step whose figures stand for the run: the best, else the last.
    pub fn figures(&self) -> Option<&Ran<O>> {
        self.best().or(self.steps.last())
    }

    /// How the sweep ended, in the capacity search's terms: `max_rate` is
    /// the best passing throughput, `above_rate` the throughput of the
    /// first failing step beyond it.
    pub fn answer(&self) -> CapacityAnswer {
        let answer = self.answer_as_run();
        if self.interrupted {
            // Stopped by an interrupt: what it saw, claiming nothing.
            return CapacityAnswer {
                outcome: CapacityOutcome::Interrupted,
                client_bound_at: None,
                ..answer
            };
        }
        answer
    }

    /// [`Swept::answer`] of the steps that ran, as if nothing stopped it.
    fn answer_as_run(&self) -> CapacityAnswer {
        let best = self.best();
        let client_bound = self
            .steps
            .iter()
            .find(|s| s.why.contains(&Why::ClientBound));
        let first_fail = self.steps.iter().find(|s| !s.passed());
        match (best, client_bound, first_fail) {
            (best, Some(bound), _) => CapacityAnswer {
                outcome: CapacityOutcome::ClientBound,
                max_rate: best.map(|b| b.observation.achieved),
                client_bound_at: Some(bound.observation.achieved),
                ..CapacityAnswer::default()
            },
            (None, None, Some(fail)) => CapacityAnswer {
                outcome: CapacityOutcome::NoneMeets,
                lowest_rate: Some(fail.observation.achieved),
                ..CapacityAnswer::default()
            },
            (best, None, fail) => CapacityAnswer {
                // Every level run, or a failure past the best: the sweep
                // has seen where the objective stops holding.
                outcome: if fail.is_some() || self.lost_target.is_none() {
                    CapacityOutcome::Found
                } else {
                    CapacityOutcome::Unfinished
                },
                max_rate: best.map(|b| b.observation.achieved),
                above_rate: fail.map(|f| f.observation.achieved),
                ..CapacityAnswer::default()
            },
        }
    }
}

/// Runs the sweep: each level `run_step(connections)` measures, until the
/// levels are done, the budget is spent, [`FAILS_TO_STOP`] steps in a row
/// fail, the client saturates, `stop` is raised or `lost` says the target
/// stopped answering. `on_step` sees each step as judged.
pub fn drive<O, E>(
    plan: &Plan,
    stop: &AtomicBool,
    mut run_step: impl FnMut(u32) -> Result<Measured<O>, E>,
    lost: impl Fn(&O) -> Option<String>,
    mut on_step: impl FnMut(&Ran<O>),
) -> Result<Swept<O>, E> {
    let mut steps: Vec<Ran<O>> = Vec::new();
    let mut interrupted = stop.load(Ordering::Relaxed);
    let mut lost_target = None;
    let budget = crate::capacity::Budget::new(plan.budget, Duration::ZERO);
    for connections in plan.levels().into_iter().take(plan.max_steps()) {
        if interrupted || (!steps.is_empty() && !budget.allows(plan.step + plan.warmup)) {
            break;
        }
        match run_step(connections)? {
            Measured::Interrupted => interrupted = true,
            Measured::Lost(why) => {
                lost_target = Some(why);
                break;
            }
            Measured::Step {
                observation,
                outcome,
                extra,
            } => {
                // A step that found no target measured nothing: it is not
                // judged, and the sweep ends with what it had.
                if let Some(why) = lost(&outcome) {
                    lost_target = Some(why);
                    break;
                }
                let ran = Ran {
                    connections,
                    why: judge_closed(&plan.slo, &observation),
                    observation,
                    extra,
                    outcome,
                };
                on_step(&ran);
                let client_bound = ran.why.contains(&Why::ClientBound);
                steps.push(ran);
                let failing = steps.iter().rev().take_while(|s| !s.passed()).count();
                if client_bound || failing >= FAILS_TO_STOP {
                    break;
                }
            }
        }
    }
    let usl = usl(&steps);
    Ok(Swept {
        steps,
        usl,
        interrupted,
        lost_target,
    })
}

/// The USL fit of the steps' throughput over their connections, when
/// there are enough distinct levels with answers.
fn usl<O>(steps: &[Ran<O>]) -> Option<UslFit> {
    let points: Vec<Point> = steps
        .iter()
        .filter(|s| s.observation.achieved > 0.0)
        .map(|s| Point {
            n: f64::from(s.connections),
            value: s.observation.achieved,
        })
        .collect();
    if points.len() < USL_MIN_POINTS {
        return None;
    }
    scaling::usl_fit(&points, Measure::Throughput).ok()
}

/// The run's record of the sweep, in the capacity search's part.
pub fn record<O>(swept: &Swept<O>, plan: &Plan) -> CapacityRecord {
    CapacityRecord {
        slo: plan.slo_text.clone(),
        start: f64::from(plan.from),
        start_probed: false,
        precision: 0.0,
        step_ns: plan.step.as_nanos() as u64,
        step_warmup_ns: plan.warmup.as_nanos() as u64,
        budget_ns: plan.budget.as_nanos() as u64,
        answer: swept.answer(),
        steps: swept
            .steps
            .iter()
            .map(|s| {
                let o = &s.observation;
                let ns = |p: f64| o.percentile(p).map_or(0, |d| d.as_nanos() as u64);
                CapacityStep {
                    purpose: "sweep".into(),
                    connections: Some(u64::from(s.connections)),
                    requested: o.requested,
                    achieved: o.achieved,
                    p50_ns: ns(50.0),
                    p99_ns: ns(99.0),
                    p999_ns: ns(99.9),
                    requests: o.requests,
                    errors: o.errors,
                    sends: o.sends,
                    late: o.late,
                    send_lag_p99_ns: s.extra.send_lag_p99_ns,
                    client_cpu_percent: s.extra.client_cpu_percent,
                    client_wait_percent: s.extra.client_wait_percent,
                    server_cpu_percent: None,
                    target_cpu_percent: None,
                    passed: s.passed(),
                    why: s.why.iter().map(Why::describe).collect(),
                    failed_on: crate::capacity::failed_on(&s.why),
                }
            })
            .collect(),
        sweep: Some(ConnectionSweep {
            from: u64::from(plan.from),
            to: u64::from(plan.to),
            usl: swept.usl.as_ref().map(|fit| UslSummary {
                sigma: fit.sigma,
                kappa: fit.kappa,
                lambda: fit.lambda,
                r_squared: fit.r_squared,
                peak_connections: fit.peak_n,
                peak_rate: fit.peak_throughput,
            }),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    fn plan(from: u32, to: u32, slo: &str) -> Plan {
        Plan {
            slo: slo.parse().unwrap(),
            slo_text: slo.into(),
            from,
            to,
            step: Duration::from_secs(1),
            warmup: Duration::ZERO,
            budget: Duration::from_secs(60),
        }
    }

    /// A closed system of N connections in front of a server that follows
    /// the USL with σ = 0.05, κ = 0.001 and 1,000/s at N = 1: by Little's
    /// law each request takes N / X(N).
    fn usl_server(connections: u32) -> Observation {
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

    fn run(plan: &Plan) -> Swept<()> {
        drive(
            plan,
            &AtomicBool::new(false),
            |c| {
                Ok::<_, Infallible>(Measured::Step {
                    observation: usl_server(c),
                    outcome: (),
                    extra: Extra::default(),
                })
            },
            |()| None,
            |_| {},
        )
        .unwrap()
    }

    #[test]
    fn the_levels_double_from_the_lowest_and_end_at_the_highest() {
        assert_eq!(
            plan(1, 256, "p99<=1s").levels(),
            [1, 2, 4, 8, 16, 32, 64, 128, 256]
        );
        assert_eq!(plan(3, 20, "p99<=1s").levels(), [3, 6, 12, 20]);
        assert_eq!(plan(8, 8, "p99<=1s").levels(), [8]);
    }

    #[test]
    fn a_sweep_finds_the_best_passing_throughput_and_the_usl_peak() {
        // Without a binding target every level passes; the fit finds the
        // model's own parameters and its peak at ⌊√((1 − σ)/κ)⌋ = 30.
        let swept = run(&plan(1, 256, "p99<=10s"));
        assert_eq!(swept.steps.len(), 9);
        let fit = swept.usl.as_ref().expect("nine points fit");
        assert!((fit.sigma - 0.05).abs() < 1e-3, "{fit:?}");
        assert!((fit.kappa - 0.001).abs() < 1e-4, "{fit:?}");
        assert_eq!(fit.peak_n, Some(30.0));
        let best = swept.best().unwrap();
        assert_eq!(best.connections, 32);
        let answer = swept.answer();
        assert_eq!(answer.outcome, CapacityOutcome::Found);
        assert_eq!(answer.max_rate, Some(best.observation.achieved));
        assert_eq!(answer.above_rate, None);
    }

    #[test]
    fn a_latency_target_stops_the_sweep_two_failures_past_the_knee() {
        // p99 = 1.5 N / X(N): 3.0 ms at 16, 5.3 ms at 32, 12.3 ms at 64.
        let slo = "p99<=5ms";
        let swept = run(&plan(1, 256, slo));
        let levels: Vec<u32> = swept.steps.iter().map(|s| s.connections).collect();
        assert_eq!(levels, [1, 2, 4, 8, 16, 32, 64]);
        assert_eq!(swept.best().unwrap().connections, 16);
        let answer = swept.answer();
        assert_eq!(answer.outcome, CapacityOutcome::Found);
        assert_eq!(answer.above_rate, Some(swept.steps[5].observation.achieved));
        let record = record(&swept, &plan(1, 256, slo));
        assert_eq!(record.steps[5].connections, Some(32));
        assert!(!record.steps[5].passed);
        assert!(
            record.steps[5].why[0].contains("p99"),
            "{:?}",
            record.steps[5].why
        );
        assert!(record.sweep.unwrap().usl.is_some());
    }

    #[test]
    fn a_target_no_level_meets_and_a_saturated_client_say_so() {
        let swept = run(&plan(64, 256, "p99<=1ms"));
        assert_eq!(swept.answer().outcome, CapacityOutcome::NoneMeets);
        assert_eq!(swept.steps.len(), 2);

        let swept = drive(
            &plan(1, 64, "p99<=10s"),
            &AtomicBool::new(false),
            |c| {
                let mut observation = usl_server(c);
                observation.client_saturated = c >= 4;
                Ok::<_, Infallible>(Measured::Step {
                    observation,
                    outcome: (),
                    extra: Extra::default(),
                })
            },
            |()| None,
            |_| {},
        )
        .unwrap();
        assert_eq!(swept.steps.len(), 3);
        let answer = swept.answer();
        assert_eq!(answer.outcome, CapacityOutcome::ClientBound);
        assert_eq!(answer.max_rate, Some(swept.steps[1].observation.achieved));
    }

    #[test]
    fn the_budget_limits_the_levels() {
        let mut p = plan(1, 256, "p99<=10s");
        p.budget = Duration::from_secs(3);
        assert_eq!(run(&p).steps.len(), 3);
    }
}
