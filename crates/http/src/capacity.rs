//! `dyno http --find-max`: the highest request rate the server sustains
//! while it meets an objective. The search and its loop are
//! [`dyno_load::capacity`]'s; this module runs each step on the
//! open-model engine and turns its [`Outcome`] into the search's
//! [`Observation`], and makes the run.
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
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dyno_load::capacity::{self, Extra, Measured, Plan, Ran, Searched};
use dyno_load::search::Observation;
use dyno_load::{sweep, trend};
use dyno_model::record::HttpRecord;
use dyno_model::{Environment, Run, Unit};

use crate::engine::{EngineError, Outcome, Progress};
use crate::record::Asked;
use crate::settings::{Schedule, Settings, Stop};

/// How long the closed-model probe that picks the start runs, warm-up
/// included.
pub const PROBE: Duration = Duration::from_secs(2);
const PROBE_WARMUP: Duration = Duration::from_millis(500);

/// A step's engine outcome and the settings it ran with.
#[derive(Debug, Clone)]
pub struct StepOutcome {
    pub outcome: Outcome,
    pub settings: Settings,
}

/// What an HTTP search found.
pub type Capacity = Searched<StepOutcome>;

/// One HTTP step as run.
pub type StepRun = Ran<StepOutcome>;

/// Why there is no server to load, if there is none.
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

/// Runs the search: a probe for the start when none is given (half its
/// closed-model rate), then the steps the search asks for, until it
/// answers, the budget is spent or `stop` is raised. `progress` sees each
/// step's engine progress; `on_step` each step as judged.
pub fn find_max(
    settings: &Settings,
    plan: &Plan,
    stop: Arc<AtomicBool>,
    mut progress: impl FnMut(Progress),
    on_step: impl FnMut(&StepRun),
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
                plan: None,
            };
            let outcome = crate::engine::run(probe, Arc::clone(&stop), &mut progress)?;
            if let Some(why) = no_target(&outcome) {
                return Err(EngineError::Settings(format!(
                    "the probe for --start found no server to search: {why}"
                )));
            }
            ((outcome.requests_per_sec() / 2.0).max(1.0).round(), true)
        }
    };
    capacity::drive(
        plan,
        start,
        probed,
        &stop,
        |rate| {
            let mut step = settings.clone();
            step.schedule = step_schedule(plan.step, plan.warmup, Some(rate));
            let Some((outcome, cpu)) = run_step(&step, &stop, &mut progress)? else {
                return Ok(Measured::Interrupted);
            };
            let lag = &outcome.stats.send_lag;
            Ok(Measured::Step {
                observation: observe(&outcome, plan, rate, cpu),
                extra: Extra {
                    send_lag_p99_ns: if lag.is_empty() {
                        0
                    } else {
                        lag.value_at_quantile(0.99)
                    },
                    client_cpu_percent: cpu,
                },
                outcome: StepOutcome {
                    outcome,
                    settings: step,
                },
            })
        },
        |o| no_target(&o.outcome),
        on_step,
    )
}

/// A step's schedule: `step` measured after `warmup`, at `rate` (open
/// model) or closed.
fn step_schedule(step: Duration, warmup: Duration, rate: Option<f64>) -> Schedule {
    Schedule {
        stop: Stop::Duration(step),
        rate_per_sec: rate,
        warmup,
        plan: None,
    }
}

/// Runs one step; its outcome and the client's CPU share, or `None` when
/// it was interrupted (it measured less than asked).
fn run_step(
    step: &Settings,
    stop: &Arc<AtomicBool>,
    progress: &mut impl FnMut(Progress),
) -> Result<Option<(Outcome, f64)>, EngineError> {
    let outcome = crate::engine::run(step.clone(), Arc::clone(stop), progress)?;
    if outcome.interrupted || stop.load(Ordering::Relaxed) {
        return Ok(None);
    }
    let cpu = outcome.client_cpu_percent(step.threads);
    Ok(Some((outcome, cpu)))
}

/// What one step's outcome tells the search.
pub fn observe(outcome: &Outcome, plan: &Plan, rate: f64, cpu_percent: f64) -> Observation {
    let s = &outcome.stats;
    let secs = outcome.elapsed.as_secs_f64();
    let requests = s.requests();
    Observation {
        requested: rate,
        achieved: if secs > 0.0 {
            requests as f64 / secs
        } else {
            0.0
        },
        latency: capacity::percentiles(&s.latency, &plan.slo),
        requests,
        errors: s.total_errors(),
        sends: requests + s.unfinished + s.dropped,
        late: capacity::late(&s.send_lag, plan.late_after()) + s.dropped,
        rise: trend::rising(&capacity::medians(
            outcome.timeline.iter().map(|i| &i.latency),
        )),
        client_saturated: cpu_percent >= capacity::CLIENT_SATURATED_PERCENT,
    }
}

/// The run of a capacity search: the figures of [`Searched::figures`]'s
/// step, the search in the record, `capacity_rate` as the headline
/// ([`capacity::mark`]). `None` when no step finished.
pub fn record(
    capacity: &Capacity,
    plan: &Plan,
    environment: Environment,
    asked: &Asked,
) -> Option<Run> {
    let figures = &capacity.figures()?.outcome;
    let mut run = crate::record(&figures.settings, &figures.outcome, environment, asked);
    run.description = format!(
        "{} {} find-max {}",
        figures.settings.requests[0].method(),
        asked.url,
        plan.slo_text
    );
    let searched = capacity::record(capacity, plan);
    capacity::mark(&mut run, &searched.answer, Unit::RequestsPerSec);
    let mut record: HttpRecord = run.record().unwrap_or_default();
    record.capacity = Some(searched);
    run.set_record(&record);
    Some(run)
}

/// What a closed-model sweep of connections found.
pub type Sweep = sweep::Swept<StepOutcome>;

/// One step of a sweep as run.
pub type SweepStep = sweep::Ran<StepOutcome>;

/// The closed-model variant (`--find-max --connections FROM..TO`): a
/// closed-model run at each of the plan's numbers of connections (each
/// with its warm-up excluded, its threads no more than its connections),
/// until the sweep ends. `progress` sees each step's engine progress;
/// `on_step` each step as judged.
pub fn sweep_connections(
    settings: &Settings,
    plan: &sweep::Plan,
    stop: Arc<AtomicBool>,
    mut progress: impl FnMut(Progress),
    on_step: impl FnMut(&SweepStep),
) -> Result<Sweep, EngineError> {
    crate::engine::validate(settings)?;
    sweep::drive(
        plan,
        &stop,
        |connections| {
            let mut step = settings.clone();
            step.connections = connections as usize;
            step.threads = settings.threads.min(step.connections).max(1);
            step.schedule = step_schedule(plan.step, plan.warmup, None);
            let Some((outcome, cpu)) = run_step(&step, &stop, &mut progress)? else {
                return Ok(Measured::Interrupted);
            };
            Ok(Measured::Step {
                observation: observe_closed(&outcome, &plan.slo, cpu),
                extra: Extra {
                    send_lag_p99_ns: 0,
                    client_cpu_percent: cpu,
                },
                outcome: StepOutcome {
                    outcome,
                    settings: step,
                },
            })
        },
        |o| no_target(&o.outcome),
        on_step,
    )
}

/// What one closed-model step tells the sweep: its throughput and its
/// latency (from each send to its answer: a closed model has no due
/// times).
fn observe_closed(outcome: &Outcome, slo: &dyno_load::Slo, cpu_percent: f64) -> Observation {
    let s = &outcome.stats;
    let secs = outcome.elapsed.as_secs_f64();
    let requests = s.requests();
    let achieved = if secs > 0.0 {
        requests as f64 / secs
    } else {
        0.0
    };
    Observation {
        requested: achieved,
        achieved,
        latency: capacity::percentiles(&s.latency, slo),
        requests,
        errors: s.total_errors(),
        sends: requests,
        late: 0,
        rise: None,
        client_saturated: cpu_percent >= capacity::CLIENT_SATURATED_PERCENT,
    }
}

/// The run of a sweep: the figures of its best step (else its last), the
/// sweep in the record, `capacity_rate` as the headline. `None` when no
/// step finished.
pub fn sweep_record(
    swept: &Sweep,
    plan: &sweep::Plan,
    environment: Environment,
    asked: &Asked,
) -> Option<Run> {
    let figures = &swept.figures()?.outcome;
    let mut run = crate::record(&figures.settings, &figures.outcome, environment, asked);
    run.description = format!(
        "{} {} find-max {} over {}..{} connections",
        figures.settings.requests[0].method(),
        asked.url,
        plan.slo_text,
        plan.from,
        plan.to
    );
    let searched = sweep::record(swept, plan);
    capacity::mark(&mut run, &searched.answer, Unit::RequestsPerSec);
    let mut record: HttpRecord = run.record().unwrap_or_default();
    record.capacity = Some(searched);
    run.set_record(&record);
    Some(run)
}
