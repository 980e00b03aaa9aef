//! `dyno db run --find-max`: the highest transaction rate the server
//! sustains while it meets an objective. The search and its loop are
//! [`dyno_load::capacity`]'s; this module runs each step as an open-model
//! run (`-R` at the step's rate, Poisson arrivals as pgbench's) and turns
//! its [`Outcome`] into the search's [`Observation`], and makes the run.
//!
//! The clean-up before a run (pgbench's vacuum) runs once, before the
//! first step or the probe, never between steps.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dyno_load::capacity::{self, Extra, Measured, Plan, Ran, Searched};
use dyno_load::search::Observation;
use dyno_load::{sweep, trend};
use dyno_model::record::DbRecord;
use dyno_model::{Environment, Run, Unit};

use crate::record::Whole;
use crate::run::{Outcome, Progress, RunError, RunSettings, Stop, run};

/// How long the closed-model probe that picks the start runs.
pub const PROBE: Duration = Duration::from_secs(2);

/// What a db search found; each step keeps its outcome and settings.
pub type Capacity = Searched<(Outcome, RunSettings)>;

/// One db step as run.
pub type StepRun = Ran<(Outcome, RunSettings)>;

/// Runs the search: a probe for the start when none is given (half its
/// closed-model rate), then the steps, until the search answers, the
/// budget is spent or `stop` is raised.
pub fn find_max(
    settings: &RunSettings,
    plan: &Plan,
    stop: Arc<AtomicBool>,
    mut progress: impl FnMut(Progress),
    on_step: impl FnMut(&StepRun),
) -> Result<Capacity, RunError> {
    let mut vacuum = settings.vacuum;
    let (start, probed) = match plan.start {
        Some(start) => (start, false),
        None => {
            let mut probe = settings.clone();
            probe.rate = None;
            probe.stop = Stop::Duration(PROBE);
            probe.warmup = Duration::ZERO;
            let outcome = run(&probe, Arc::clone(&stop), &mut progress)?;
            vacuum = false;
            ((outcome.tps() / 2.0).max(1.0).round(), true)
        }
    };
    let mut first = true;
    capacity::drive(
        plan,
        start,
        probed,
        &stop,
        |rate| {
            let mut step = settings.clone();
            step.rate = Some(rate);
            step.stop = Stop::Duration(plan.step);
            step.warmup = plan.warmup;
            let (outcome, step, cpu) =
                match run_step(step, vacuum, &mut first, &stop, &mut progress)? {
                    Ok(ran) => ran,
                    Err(ended) => return Ok(ended),
                };
            Ok(Measured::Step {
                observation: observe(&outcome, plan, rate, cpu),
                extra: Extra {
                    send_lag_p99_ns: if outcome.lag.is_empty() {
                        0
                    } else {
                        outcome.lag.value_at_quantile(0.99)
                    },
                    client_cpu_percent: cpu,
                },
                outcome: (outcome, step),
            })
        },
        every_client_aborted,
        on_step,
    )
}

/// A step measured: its outcome, its settings as asked, the client's CPU
/// share; or how it ended without a measurement.
type StepResult = Result<(Outcome, RunSettings, f64), Measured<(Outcome, RunSettings)>>;

/// Runs one step of a search or a sweep: the clean-up (when `vacuum`) only
/// before the `first` step; a server gone after the first step is the
/// target lost (what was found is kept), and an interrupted step is left
/// out.
fn run_step(
    mut step: RunSettings,
    vacuum: bool,
    first: &mut bool,
    stop: &Arc<AtomicBool>,
    progress: &mut impl FnMut(Progress),
) -> Result<StepResult, RunError> {
    let asked = step.vacuum;
    step.vacuum = vacuum && *first;
    let outcome = match run(&step, Arc::clone(stop), progress) {
        Ok(o) => o,
        Err(e) if !*first => return Ok(Err(Measured::Lost(e.to_string()))),
        Err(e) => return Err(e),
    };
    *first = false;
    // The record says what was asked (the clean-up ran once, before the
    // first run, if it was asked for).
    step.vacuum = asked;
    if outcome.interrupted || stop.load(Ordering::Relaxed) {
        return Ok(Err(Measured::Interrupted));
    }
    let cpu = outcome.client_cpu_percent(step.threads);
    Ok(Ok((outcome, step, cpu)))
}

/// Why a step lost its target: every client aborted.
fn every_client_aborted((outcome, step): &(Outcome, RunSettings)) -> Option<String> {
    (!outcome.aborted.is_empty() && outcome.aborted.len() >= step.clients).then(|| {
        format!(
            "every client aborted ({})",
            outcome.aborted.first().map_or("", String::as_str)
        )
    })
}

/// What one step's outcome tells the search.
pub fn observe(outcome: &Outcome, plan: &Plan, rate: f64, cpu_percent: f64) -> Observation {
    let failed = outcome.failed_total();
    let ended = outcome.transactions + failed;
    let secs = outcome.elapsed.as_secs_f64();
    Observation {
        requested: rate,
        achieved: if secs > 0.0 { ended as f64 / secs } else { 0.0 },
        latency: capacity::percentiles(&outcome.latency, &plan.slo),
        requests: ended,
        errors: failed,
        sends: ended + outcome.unfinished + outcome.skipped + outcome.dropped,
        late: capacity::late(&outcome.lag, plan.late_after()) + outcome.skipped + outcome.dropped,
        rise: trend::rising(&capacity::medians(
            outcome.timeline.iter().map(|s| &s.latency),
        )),
        client_saturated: cpu_percent >= capacity::CLIENT_SATURATED_PERCENT,
    }
}

/// The run of a capacity search: the figures of [`Searched::figures`]'s
/// step, the search in the record, `capacity_rate` (transactions per
/// second) as the headline. `None` when no step finished.
pub fn record(
    capacity: &Capacity,
    plan: &Plan,
    whole: &Whole,
    duration: Duration,
    environment: Environment,
) -> Option<Run> {
    let (outcome, settings) = &capacity.figures()?.outcome;
    let mut run = crate::record::record(settings, whole, outcome, duration, environment);
    run.description = format!("{} find-max {}", run.description, plan.slo_text);
    let searched = capacity::record(capacity, plan);
    capacity::mark(&mut run, &searched.answer, Unit::OpsPerSec);
    let mut record: DbRecord = run.record().unwrap_or_default();
    record.capacity = Some(searched);
    run.set_record(&record);
    Some(run)
}

/// What a closed-model sweep of clients found.
pub type Sweep = sweep::Swept<(Outcome, RunSettings)>;

/// One step of a sweep as run.
pub type SweepStep = sweep::Ran<(Outcome, RunSettings)>;

/// The closed-model variant (`--find-max -c FROM..TO`): a closed-model run
/// (no `-R`) at each of the plan's numbers of clients, each with its
/// warm-up excluded and no more threads than clients, until the sweep
/// ends. The clean-up runs once, before the first step.
pub fn sweep_clients(
    settings: &RunSettings,
    plan: &sweep::Plan,
    stop: Arc<AtomicBool>,
    mut progress: impl FnMut(Progress),
    on_step: impl FnMut(&SweepStep),
) -> Result<Sweep, RunError> {
    let mut first = true;
    sweep::drive(
        plan,
        &stop,
        |clients| {
            let mut step = settings.clone();
            step.clients = clients as usize;
            step.threads = settings.threads.min(step.clients).max(1);
            step.rate = None;
            step.stop = Stop::Duration(plan.step);
            step.warmup = plan.warmup;
            let (outcome, step, cpu) =
                match run_step(step, settings.vacuum, &mut first, &stop, &mut progress)? {
                    Ok(ran) => ran,
                    Err(ended) => return Ok(ended),
                };
            let failed = outcome.failed_total();
            let ended = outcome.transactions + failed;
            let achieved = outcome.tps();
            Ok(Measured::Step {
                observation: Observation {
                    requested: achieved,
                    achieved,
                    latency: capacity::percentiles(&outcome.latency, &plan.slo),
                    requests: ended,
                    errors: failed,
                    sends: ended,
                    late: 0,
                    rise: None,
                    client_saturated: cpu >= capacity::CLIENT_SATURATED_PERCENT,
                },
                extra: Extra {
                    send_lag_p99_ns: 0,
                    client_cpu_percent: cpu,
                },
                outcome: (outcome, step),
            })
        },
        every_client_aborted,
        on_step,
    )
}

/// The run of a sweep: the figures of its best step (else its last), the
/// sweep in the record, `capacity_rate` as the headline. `None` when no
/// step finished.
pub fn sweep_record(
    swept: &Sweep,
    plan: &sweep::Plan,
    whole: &Whole,
    duration: Duration,
    environment: Environment,
) -> Option<Run> {
    let (outcome, settings) = &swept.figures()?.outcome;
    let whole = Whole {
        clients: settings.clients as u32,
        jobs: settings.threads as u32,
        ..*whole
    };
    let mut run = crate::record::record(settings, &whole, outcome, duration, environment);
    run.description = format!(
        "{} find-max {} over {}..{} clients",
        run.description, plan.slo_text, plan.from, plan.to
    );
    let searched = sweep::record(swept, plan);
    capacity::mark(&mut run, &searched.answer, Unit::OpsPerSec);
    let mut record: DbRecord = run.record().unwrap_or_default();
    record.capacity = Some(searched);
    run.set_record(&record);
    Some(run)
}
