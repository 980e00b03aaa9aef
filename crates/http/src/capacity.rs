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
use std::time::{Duration, SystemTime};

use dyno_load::capacity::{self, Ended, Plan, Ran, Searched};
use dyno_load::shard::{Shard, Together};
use dyno_load::sweep;
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
/// answers, the budget is spent or `stop` is raised. `group`: the other
/// segments of a split search (each step's rate is shared out by stride,
/// and judged on every segment's part). `progress` sees each step's engine
/// progress; `on_step` each step as judged.
pub fn find_max(
    settings: &Settings,
    plan: &Plan,
    stop: Arc<AtomicBool>,
    mut group: Option<&mut (dyn Together + '_)>,
    mut progress: impl FnMut(Progress),
    on_step: impl FnMut(&StepRun),
) -> Result<Capacity, EngineError> {
    crate::engine::validate(settings)?;
    // The probe's time is the budget's too.
    let began = std::time::Instant::now();
    let (start, probed) = match plan.start {
        Some(start) => (start, false),
        None => {
            let mut probe = settings.clone();
            probe.schedule = Schedule {
                stop: Stop::Duration(PROBE - PROBE_WARMUP),
                rate_per_sec: None,
                warmup: PROBE_WARMUP,
                plan: None,
                grace: Duration::ZERO,
            };
            let probed = capacity::step(
                group.as_deref_mut(),
                "probe",
                &plan.slo,
                None,
                |o: &StepOutcome| no_target(&o.outcome),
                |gate| run_step(probe, gate, None, &stop, &mut progress),
            )?;
            (
                capacity::start_from_probe(probed, |o: &StepOutcome| no_target(&o.outcome))
                    .map_err(EngineError::Settings)?,
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
            step.schedule = step_schedule(plan.step, plan.warmup, plan.grace(), Some(rate));
            steps += 1;
            capacity::step(
                group.as_deref_mut(),
                &steps.to_string(),
                &plan.slo,
                Some(rate),
                |o: &StepOutcome| no_target(&o.outcome),
                |gate| run_step(step, gate, Some(plan.late_after()), &stop, &mut progress),
            )
        },
        |o| no_target(&o.outcome),
        on_step,
    )
}

/// A step's schedule: `step` measured after `warmup`, at `rate` (open
/// model) or closed, waiting up to `grace` after its end for the requests
/// still under way.
fn step_schedule(step: Duration, warmup: Duration, grace: Duration, rate: Option<f64>) -> Schedule {
    Schedule {
        stop: Stop::Duration(step),
        rate_per_sec: rate,
        warmup,
        plan: None,
        grace,
    }
}

/// Runs this process's part of one step, from `gate` (a split search's
/// common start) or at once; its outcome and shard (`late_after`: the
/// open model's threshold for a late send, `None` for a closed-model
/// step), or how it ended without one.
fn run_step(
    step: Settings,
    gate: Option<SystemTime>,
    late_after: Option<Duration>,
    stop: &Arc<AtomicBool>,
    progress: &mut impl FnMut(Progress),
) -> Result<Ended<StepOutcome>, EngineError> {
    let outcome = crate::engine::run_gated(step.clone(), Arc::clone(stop), progress, || Ok(gate))?;
    if outcome.interrupted || stop.load(Ordering::Relaxed) {
        return Ok(Ended::Interrupted);
    }
    Ok(Ended::Measured {
        shard: shard(&outcome, late_after, step.schedule.grace, step.threads),
        outcome: StepOutcome {
            outcome,
            settings: step,
        },
    })
}

/// What this process measured of a step (`late_after`: see [`run_step`];
/// `grace`: how long the step waited for what was under way at its end).
///
/// A step is judged by what was due in it: a request sent on schedule
/// and still unanswered when the wait ran out counts as ended, at a
/// latency past the wait ([`dyno_load::shard::waited_out`]); only what
/// was never sent, or sent late, counts against the schedule.
pub fn shard(
    outcome: &Outcome,
    late_after: Option<Duration>,
    grace: Duration,
    threads: usize,
) -> Shard {
    let s = &outcome.stats;
    // What the search counts: (ended, failed), requests or flows.
    let (ended, errors) = match &outcome.scenario {
        // A scenario's search is of flows: its rate is flows per second,
        // a flow that failed is its error, and a flow that started late
        // (its first step's send lag) or never is its late send. A flow
        // that started on schedule and did not fail is the schedule kept,
        // finished or not: the rest of it (think times, later steps) was
        // not due yet, and its requests' latency is the objective's.
        Some(figures) => {
            let sum = |f: fn(&crate::scenario::FlowFigures) -> u64| {
                figures.flows.iter().map(f).sum::<u64>()
            };
            (sum(|f| f.started), sum(|f| f.failed))
        }
        None => (s.requests() + s.unfinished, s.total_errors()),
    };
    let (sends, late) = match late_after {
        Some(after) => (
            ended + s.dropped,
            capacity::late(&s.send_lag, after) + s.dropped,
        ),
        // A closed model has no due times: every send is on time.
        None => (ended, 0),
    };
    let mut latency = s.latency.clone();
    let mut seconds: Vec<_> = outcome.timeline.iter().map(|i| i.latency.clone()).collect();
    dyno_load::shard::waited_out(&mut latency, &mut seconds, s.unfinished, grace);
    Shard {
        requests: ended,
        errors,
        sends,
        late,
        elapsed: outcome.elapsed,
        latency,
        lag: s.send_lag.clone(),
        seconds,
        client_cpu_percent: outcome.client_cpu_percent(threads),
        client_wait_percent: dyno_load::pool::busy_percent(outcome.cpu_wait, outcome.wall, threads),
    }
}

/// The run of a capacity search: the figures of [`Searched::figures`]'s
/// step, the search in the record, `max_sustainable_rate` as the headline
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
        "{} find-max {}",
        crate::record::subject(&figures.settings, asked),
        plan.slo_text
    );
    let searched = capacity::record(capacity, plan);
    capacity::mark(&mut run, &searched, rate_unit(&figures.settings));
    let mut record: HttpRecord = run.record().unwrap_or_default();
    record.capacity = Some(searched);
    run.set_record(&record);
    Some(run)
}

/// What a search's rates count: a scenario's are flows per second, each
/// flow several requests, never set beside a URL's requests per second.
fn rate_unit(settings: &Settings) -> Unit {
    if settings.scenario.is_some() {
        Unit::FlowsPerSec
    } else {
        Unit::RequestsPerSec
    }
}

/// What a closed-model sweep of connections found.
pub type Sweep = sweep::Swept<StepOutcome>;

/// One step of a sweep as run.
pub type SweepStep = sweep::Ran<StepOutcome>;

/// The closed-model variant (`--find-max --connections FROM..TO`): a
/// closed-model run at each of the plan's numbers of connections (each
/// with its warm-up excluded, its threads no more than its connections),
/// until the sweep ends. `group`: the other segments of a split sweep
/// (each step's connections are shared out, and its throughput is every
/// segment's added up). `progress` sees each step's engine progress;
/// `on_step` each step as judged.
pub fn sweep_connections(
    settings: &Settings,
    plan: &sweep::Plan,
    stop: Arc<AtomicBool>,
    mut group: Option<&mut (dyn Together + '_)>,
    mut progress: impl FnMut(Progress),
    on_step: impl FnMut(&SweepStep),
) -> Result<Sweep, EngineError> {
    crate::engine::validate(settings)?;
    let segment = settings.segment;
    sweep::drive(
        plan,
        &stop,
        |connections| {
            let mut step = settings.clone();
            step.connections = segment.share(u64::from(connections)).max(1) as usize;
            step.threads = settings.threads.min(step.connections).max(1);
            step.schedule = step_schedule(plan.step, plan.warmup, plan.grace(), None);
            capacity::step(
                group.as_deref_mut(),
                &format!("c{connections}"),
                &plan.slo,
                None,
                |o: &StepOutcome| no_target(&o.outcome),
                |gate| run_step(step, gate, None, &stop, &mut progress),
            )
        },
        |o| no_target(&o.outcome),
        on_step,
    )
}

/// The run of a sweep: the figures of its best step (else its last), the
/// sweep in the record, `max_sustainable_rate` as the headline. `None` when no
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
        "{} find-max {} over {}..{} connections",
        crate::record::subject(&figures.settings, asked),
        plan.slo_text,
        plan.from,
        plan.to
    );
    let searched = sweep::record(swept, plan);
    capacity::mark(&mut run, &searched, rate_unit(&figures.settings));
    let mut record: HttpRecord = run.record().unwrap_or_default();
    record.capacity = Some(searched);
    run.set_record(&record);
    Some(run)
}
