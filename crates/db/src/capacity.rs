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
use std::time::{Duration, SystemTime};

use dyno_load::capacity::{self, Ended, Plan, Ran, Searched};
use dyno_load::shard::{Shard, Together};
use dyno_load::sweep;
use dyno_model::record::DbRecord;
use dyno_model::{Environment, Run, Unit};

use crate::record::Whole;
use crate::run::{Outcome, Progress, RunError, RunSettings, Stop, run_gated};

/// How long the closed-model probe that picks the start runs.
pub const PROBE: Duration = Duration::from_secs(2);

/// What a db search found; each step keeps its outcome and settings.
pub type Capacity = Searched<(Outcome, RunSettings)>;

/// One db step as run.
pub type StepRun = Ran<(Outcome, RunSettings)>;

/// Runs the search: a probe for the start when none is given (half its
/// closed-model rate), then the steps, until the search answers, the
/// budget is spent or `stop` is raised. `group`: the other segments of a
/// split search; this segment runs its share of each step's rate
/// ([`RunSettings::share`]) and each step is judged on every segment's
/// part.
pub fn find_max(
    settings: &RunSettings,
    plan: &Plan,
    stop: Arc<AtomicBool>,
    mut group: Option<&mut (dyn Together + '_)>,
    mut progress: impl FnMut(Progress),
    on_step: impl FnMut(&StepRun),
) -> Result<Capacity, RunError> {
    let mut first = true;
    // The probe's time is the budget's too.
    let began = std::time::Instant::now();
    let (start, probed) = match plan.start {
        Some(start) => (start, false),
        None => {
            let mut probe = settings.clone();
            probe.rate = None;
            probe.stop = Stop::Duration(PROBE);
            probe.warmup = Duration::ZERO;
            let probed = capacity::step(
                group.as_deref_mut(),
                "probe",
                &plan.slo,
                None,
                every_client_aborted,
                |gate| run_step(probe, gate, None, &mut first, &stop, &mut progress),
            )?;
            (
                capacity::start_from_probe(probed, every_client_aborted)
                    .map_err(RunError::Setup)?,
                true,
            )
        }
    };
    let mut steps = 0;
    capacity::drive(
        plan,
        start,
        probed,
        began.elapsed(),
        &stop,
        |rate| {
            let mut step = settings.clone();
            step.rate = Some(rate * settings.share);
            step.stop = Stop::Duration(plan.step);
            step.warmup = plan.warmup;
            step.grace = plan.grace();
            steps += 1;
            capacity::step(
                group.as_deref_mut(),
                &steps.to_string(),
                &plan.slo,
                Some(rate),
                every_client_aborted,
                |gate| {
                    run_step(
                        step,
                        gate,
                        Some(plan.late_after()),
                        &mut first,
                        &stop,
                        &mut progress,
                    )
                },
            )
        },
        every_client_aborted,
        on_step,
    )
}

/// Runs this process's part of one step of a search or a sweep, from
/// `gate` (a split search's common start) or at once: the clean-up (when
/// the settings ask for it) only before the `first` run; a server gone
/// after the first run is the target lost (what was found is kept), and
/// an interrupted step is left out. `late_after`: the open model's
/// threshold for a late start, `None` for a closed-model step.
fn run_step(
    mut step: RunSettings,
    gate: Option<SystemTime>,
    late_after: Option<Duration>,
    first: &mut bool,
    stop: &Arc<AtomicBool>,
    progress: &mut impl FnMut(Progress),
) -> Result<Ended<(Outcome, RunSettings)>, RunError> {
    let asked = step.vacuum;
    step.vacuum = asked && *first;
    let outcome = match run_gated(&step, Arc::clone(stop), progress, || Ok(gate)) {
        Ok(o) => o,
        Err(e) if !*first => return Ok(Ended::Lost(e.to_string())),
        Err(e) => return Err(e),
    };
    *first = false;
    // The record says what was asked (the clean-up ran once, before the
    // first run, if it was asked for).
    step.vacuum = asked;
    if outcome.interrupted || stop.load(Ordering::Relaxed) {
        return Ok(Ended::Interrupted);
    }
    Ok(Ended::Measured {
        shard: shard(&outcome, late_after, step.grace, step.threads),
        outcome: (outcome, step),
    })
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

/// What this process measured of a step (`late_after`: see [`run_step`]).
/// As HTTP's: a transaction started on schedule and still under way when
/// the wait after the step's end (`step.grace`) ran out counts as ended,
/// at a latency past the wait ([`dyno_load::shard::waited_out`]); only
/// what was skipped, never started, or started late counts against the
/// schedule.
pub fn shard(
    outcome: &Outcome,
    late_after: Option<Duration>,
    grace: Duration,
    threads: usize,
) -> Shard {
    let failed = outcome.failed_total();
    let ended = outcome.transactions + failed + outcome.unfinished;
    let (sends, late) = match late_after {
        Some(after) => (
            ended + outcome.skipped + outcome.dropped,
            capacity::late(&outcome.lag, after) + outcome.skipped + outcome.dropped,
        ),
        // A closed model has no due times: every start is on time.
        None => (ended, 0),
    };
    let mut latency = outcome.latency.clone();
    let mut seconds: Vec<_> = outcome.timeline.iter().map(|s| s.latency.clone()).collect();
    dyno_load::shard::waited_out(&mut latency, &mut seconds, outcome.unfinished, grace);
    Shard {
        requests: ended,
        errors: failed,
        sends,
        late,
        elapsed: outcome.elapsed,
        latency,
        lag: outcome.lag.clone(),
        seconds,
        client_cpu_percent: outcome.client_cpu_percent(threads),
        client_wait_percent: dyno_load::pool::busy_percent(
            outcome.cpu_wait,
            outcome.elapsed,
            threads,
        ),
    }
}

/// The run of a capacity search: the figures of [`Searched::figures`]'s
/// step, the search in the record, `max_sustainable_rate` (transactions per
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
    capacity::mark(&mut run, &searched, Unit::OpsPerSec);
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
/// ends. The clean-up runs once, before the first step. `group`: the
/// other segments of a split sweep (each step's clients are shared out,
/// and its throughput is every segment's added up).
pub fn sweep_clients(
    settings: &RunSettings,
    plan: &sweep::Plan,
    stop: Arc<AtomicBool>,
    mut group: Option<&mut (dyn Together + '_)>,
    mut progress: impl FnMut(Progress),
    on_step: impl FnMut(&SweepStep),
) -> Result<Sweep, RunError> {
    let mut first = true;
    let segment = settings.segment;
    sweep::drive(
        plan,
        &stop,
        |clients| {
            let mut step = settings.clone();
            step.clients = segment.share(u64::from(clients)).max(1) as usize;
            step.threads = settings.threads.min(step.clients).max(1);
            step.rate = None;
            step.stop = Stop::Duration(plan.step);
            step.warmup = plan.warmup;
            step.grace = plan.grace();
            capacity::step(
                group.as_deref_mut(),
                &format!("c{clients}"),
                &plan.slo,
                None,
                every_client_aborted,
                |gate| run_step(step, gate, None, &mut first, &stop, &mut progress),
            )
        },
        every_client_aborted,
        on_step,
    )
}

/// The run of a sweep: the figures of its best step (else its last), the
/// sweep in the record, `max_sustainable_rate` as the headline. `None` when no
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
    capacity::mark(&mut run, &searched, Unit::OpsPerSec);
    let mut record: DbRecord = run.record().unwrap_or_default();
    record.capacity = Some(searched);
    run.set_record(&record);
    Some(run)
}
