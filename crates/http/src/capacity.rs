//! `dyno http --find-max`: the highest request rate the server sustains
//! while it meets an objective. The search itself is
//! [`dyno_load::search`]'s state machine; this module runs the steps it
//! asks for on the open-model engine, turns each step's [`Outcome`] into
//! the search's [`Observation`], and makes the run's record.
//!
//! Each step is a run of its own at a fixed rate: its connections open
//! before its schedule starts, its warm-up is excluded, and its latency
//! counts from each request's due time, so a queue shows as latency and a
//! slow client shows as send lag and late sends, which fail the step
//! rather than hide in it.
//!
//! Data flow: binary (flags → [`Plan`]) → [`find_max`] (steps) →
//! [`record`] → the run, its figures those of the step at the answer's
//! rate, its record holding every step.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use dyno_load::search::{self, Answer, Next, Observation, Search, Step};
use dyno_load::{Slo, trend};
use dyno_model::record::{
    CapacityAnswer, CapacityOutcome, CapacityRecord, CapacityStep, HttpRecord,
};
use dyno_model::{Direction, Environment, Metric, Role, Run, Unit};

use crate::engine::{EngineError, Outcome, Progress};
use crate::record::Asked;
use crate::settings::{Schedule, Settings, Stop};

/// The client CPU share, in percent of its threads, at which a step is
/// taken to have measured the client (as the run's own warning says).
pub const CLIENT_SATURATED_PERCENT: f64 = 90.0;

/// How long the closed-model probe that picks the start runs, warm-up
/// included.
pub const PROBE: Duration = Duration::from_secs(2);
const PROBE_WARMUP: Duration = Duration::from_millis(500);

/// The fewest requests a step is judged on: the search halves no lower
/// than the rate that gives a step this many.
pub const MIN_REQUESTS_PER_STEP: f64 = 10.0;

/// What the search is asked.
#[derive(Debug, Clone)]
pub struct Plan {
    pub slo: Slo,
    /// The objective as the user wrote it, for the record.
    pub slo_text: String,
    /// The first rate; `None`: half the rate of a short closed-model
    /// probe with the same connections.
    pub start: Option<f64>,
    pub precision: f64,
    /// Each step's measured length, and its warm-up.
    pub step: Duration,
    pub warmup: Duration,
    pub budget: Duration,
}

impl Plan {
    /// The steps the budget allows (at least one).
    pub fn max_steps(&self) -> usize {
        let per_step = (self.step + self.warmup).as_secs_f64().max(1e-3);
        ((self.budget.as_secs_f64() / per_step) as usize).max(1)
    }
}

/// One step as run: the search's judgement and the engine's outcome.
#[derive(Debug, Clone)]
pub struct StepRun {
    pub step: Step,
    pub outcome: Outcome,
    /// The step's engine settings (its rate and length).
    pub settings: Settings,
    pub client_cpu_percent: f64,
}

/// What a search found.
#[derive(Debug, Clone)]
pub struct Capacity {
    pub answer: Answer,
    pub steps: Vec<StepRun>,
    pub start: f64,
    /// The start was chosen by the probe.
    pub probed: bool,
    /// The search was stopped early (Ctrl-C): the answer is what it had.
    pub interrupted: bool,
    /// The search ended because the server stopped answering at all
    /// (refused every connection, or answered nothing): why.
    pub lost_target: Option<String>,
}

impl Capacity {
    /// The step whose figures stand for the run: the last one run at the
    /// answer's highest passing rate, else the last step.
    pub fn figures(&self) -> Option<&StepRun> {
        let max = match self.answer {
            Answer::Found { max, .. } => Some(max),
            Answer::Unfinished { max, .. } | Answer::ClientBound { max, .. } => max,
            Answer::NoneMeets { .. } => None,
        };
        max.and_then(|max| {
            self.steps
                .iter()
                .rev()
                .find(|s| s.step.rate == max && s.step.passed())
        })
        .or(self.steps.last())
    }
}

/// Why the search could not start.
fn no_target(outcome: &Outcome) -> Option<String> {
    if outcome.refused {
        Some(format!(
            "every connection to {} was refused: is the server up and listening there?",
            outcome.endpoint
        ))
    } else if outcome.silent {
        Some(format!(
            "{} accepted connections but answered no request",
            outcome.endpoint
        ))
    } else if let Some(why) = &outcome.protocol_failure
        && outcome.stats.responses == 0
    {
        Some(format!("--h2: {why}"))
    } else {
        None
    }
}

/// Runs the search: a probe for the start when none is given, then the
/// steps the search asks for, until it answers, the budget is spent or
/// `stop` is raised. `progress` sees each step's engine progress;
/// `on_step` each step as judged.
pub fn find_max(
    settings: &Settings,
    plan: &Plan,
    stop: Arc<AtomicBool>,
    mut progress: impl FnMut(Progress),
    mut on_step: impl FnMut(&StepRun),
) -> Result<Capacity, EngineError> {
    crate::engine::validate(settings)?;
    let (start, probed) = match plan.start {
        Some(start) => (start, false),
        None => {
            let mut probe = settings.clone();
            probe.schedule = Schedule {
                stop: Stop::Duration(PROBE - PROBE_WARMUP),
                rate_per_sec: None,
                warmup: PROBE_WARMUP,
            };
            let outcome = crate::engine::run(probe, Arc::clone(&stop), &mut progress)?;
            if let Some(why) = no_target(&outcome) {
                return Err(EngineError::Settings(format!(
                    "the probe for --start found no server to search: {why}"
                )));
            }
            let start = (outcome.requests_per_sec() / 2.0).max(1.0);
            (start.round(), true)
        }
    };
    let search_settings = search::Settings {
        start,
        precision: plan.precision,
        max_steps: plan.max_steps(),
        // A step must hold enough requests to judge: at least
        // MIN_REQUESTS_PER_STEP of them, and never below 1 per second.
        floor: (start / 1024.0)
            .max(MIN_REQUESTS_PER_STEP / plan.step.as_secs_f64().max(1e-3))
            .max(1.0),
    };
    let mut search = Search::new(search_settings, plan.slo.clone());
    let mut steps = Vec::new();
    let mut interrupted = stop.load(std::sync::atomic::Ordering::Relaxed);
    let mut lost_target = None;
    while !interrupted {
        let rate = match search.next_step() {
            Next::Run { rate, .. } => rate,
            Next::Done(_) => break,
        };
        let mut step_settings = settings.clone();
        step_settings.schedule = Schedule {
            stop: Stop::Duration(plan.step),
            rate_per_sec: Some(rate),
            warmup: plan.warmup,
        };
        let outcome = crate::engine::run(step_settings.clone(), Arc::clone(&stop), &mut progress)?;
        if outcome.interrupted {
            // A step cut short measured less than it was asked to: it is
            // left out of the search, which answers with what it had.
            interrupted = true;
            break;
        }
        let cpu = outcome.client_cpu_percent(step_settings.threads);
        let observation = observe(&outcome, &plan.slo, rate, cpu);
        let step = search.observe(observation).clone();
        let run = StepRun {
            step,
            outcome,
            settings: step_settings,
            client_cpu_percent: cpu,
        };
        on_step(&run);
        let gone = no_target(&run.outcome);
        steps.push(run);
        if let Some(why) = gone {
            lost_target = Some(why);
            break;
        }
    }
    Ok(Capacity {
        answer: search.answer(),
        steps,
        start,
        probed,
        interrupted,
        lost_target,
    })
}

/// The percentiles every step records besides the objective's.
const SHOWN: [f64; 3] = [50.0, 99.0, 99.9];

/// What one step's outcome tells the search.
pub fn observe(outcome: &Outcome, slo: &Slo, rate: f64, cpu_percent: f64) -> Observation {
    let s = &outcome.stats;
    let secs = outcome.elapsed.as_secs_f64();
    let requests = s.requests();
    let mut percentiles = slo.percentiles();
    percentiles.extend(SHOWN);
    percentiles.sort_by(f64::total_cmp);
    percentiles.dedup();
    let latency = if s.latency.is_empty() {
        Vec::new()
    } else {
        percentiles
            .iter()
            .map(|&p| {
                let ns = s.latency.value_at_quantile(p / 100.0);
                (p, Duration::from_nanos(ns))
            })
            .collect()
    };
    // The trend of each second's median latency: a queue that grows.
    let medians: Vec<f64> = outcome
        .timeline
        .iter()
        .filter(|i| !i.latency.is_empty())
        .map(|i| i.latency.value_at_quantile(0.5) as f64 / 1e9)
        .collect();
    Observation {
        requested: rate,
        achieved: if secs > 0.0 {
            requests as f64 / secs
        } else {
            0.0
        },
        latency,
        requests,
        errors: s.total_errors(),
        sends: requests + s.unfinished + s.dropped,
        late: late_sends(outcome, slo) + s.dropped,
        rise: trend::rising(&medians),
        client_saturated: cpu_percent >= CLIENT_SATURATED_PERCENT,
    }
}

/// Sends later than what matters to the objective: more than
/// [`crate::stats::LATE_AFTER`] and more than [`LATE_SHARE_OF_TARGET`] of
/// the tightest latency target after their due time. (A send 1.2 ms late
/// under a 100 ms target is noise, and would fail a step of 800 requests
/// on its own at the 0.1% limit.)
fn late_sends(outcome: &Outcome, slo: &Slo) -> u64 {
    let lag = &outcome.stats.send_lag;
    let threshold = slo
        .tightest()
        .map_or(crate::stats::LATE_AFTER, |t| {
            t.mul_f64(LATE_SHARE_OF_TARGET)
        })
        .max(crate::stats::LATE_AFTER);
    let threshold = u64::try_from(threshold.as_nanos()).unwrap_or(u64::MAX);
    lag.len() - lag.count_between(0, threshold)
}

/// See [`late_sends`].
pub const LATE_SHARE_OF_TARGET: f64 = 0.05;

/// The run of a capacity search: the figures of [`Capacity::figures`]'s
/// step (demoted to diagnostics: they explain the answer), the search's
/// record, and `capacity_rate`, the highest passing rate, as the headline.
/// `None` when no step finished.
pub fn record(
    capacity: &Capacity,
    plan: &Plan,
    environment: Environment,
    asked: &Asked,
) -> Option<Run> {
    let figures = capacity.figures()?;
    let mut run = crate::record(&figures.settings, &figures.outcome, environment, asked);
    run.description = format!(
        "{} {} find-max {}",
        figures.settings.requests[0].method(),
        asked.url,
        plan.slo_text
    );
    for m in &mut run.metrics {
        if m.role == Some(Role::Primary) {
            m.role = Some(Role::Diagnostic);
        }
    }
    let answer = answer_record(capacity.answer);
    if let Some(max) = answer.max_rate {
        run.metrics.insert(
            0,
            Metric::new(
                "capacity_rate",
                Unit::RequestsPerSec,
                Direction::HigherIsBetter,
                max,
            )
            .primary(),
        );
        run.headline = Some("capacity_rate".into());
    }
    if let Some(above) = answer.above_rate {
        run.metrics.push(
            Metric::new(
                "capacity_above_rate",
                Unit::RequestsPerSec,
                Direction::HigherIsBetter,
                above,
            )
            .context(),
        );
    }
    let mut record: HttpRecord = run.record().unwrap_or_default();
    record.capacity = Some(CapacityRecord {
        slo: plan.slo_text.clone(),
        start: capacity.start,
        start_probed: capacity.probed,
        precision: plan.precision,
        step_ns: plan.step.as_nanos() as u64,
        step_warmup_ns: plan.warmup.as_nanos() as u64,
        budget_ns: plan.budget.as_nanos() as u64,
        answer,
        steps: capacity.steps.iter().map(step_record).collect(),
    });
    run.set_record(&record);
    Some(run)
}

fn answer_record(answer: Answer) -> CapacityAnswer {
    match answer {
        Answer::Found { max, above } => CapacityAnswer {
            outcome: CapacityOutcome::Found,
            max_rate: Some(max),
            above_rate: Some(above),
            ..CapacityAnswer::default()
        },
        Answer::Unfinished { max, above } => CapacityAnswer {
            outcome: CapacityOutcome::Unfinished,
            max_rate: max,
            above_rate: above,
            ..CapacityAnswer::default()
        },
        Answer::NoneMeets { lowest } => CapacityAnswer {
            outcome: CapacityOutcome::NoneMeets,
            lowest_rate: Some(lowest),
            ..CapacityAnswer::default()
        },
        Answer::ClientBound { at, max } => CapacityAnswer {
            outcome: CapacityOutcome::ClientBound,
            max_rate: max,
            client_bound_at: Some(at),
            ..CapacityAnswer::default()
        },
    }
}

fn step_record(run: &StepRun) -> CapacityStep {
    let o = &run.step.observation;
    let ns = |p: f64| o.percentile(p).map_or(0, |d| d.as_nanos() as u64);
    let lag = &run.outcome.stats.send_lag;
    CapacityStep {
        purpose: run.step.purpose.name().to_owned(),
        requested: o.requested,
        achieved: o.achieved,
        p50_ns: ns(50.0),
        p99_ns: ns(99.0),
        p999_ns: ns(99.9),
        requests: o.requests,
        errors: o.errors,
        sends: o.sends,
        late: o.late,
        send_lag_p99_ns: if lag.is_empty() {
            0
        } else {
            lag.value_at_quantile(0.99)
        },
        client_cpu_percent: run.client_cpu_percent,
        passed: run.step.passed(),
        why: run.step.why.iter().map(search::Why::describe).collect(),
    }
}
