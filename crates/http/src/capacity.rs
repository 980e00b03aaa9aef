//! `dyno http --find-max`: the highest request (or flow) rate the server
//! sustains while it meets an objective, or with `-c FROM..TO` the
//! concurrency that gives the highest throughput. The search, its probe
//! and its loop are [`dyno_load::capacity`]'s; this module runs each step
//! on the engine (its `Steps`, the search's [`capacity::Engine`]) and turns
//! its [`Outcome`] into the search's [`Shard`], and makes the run.
//!
//! Each step is a run of its own: its connections open before its
//! schedule starts, its warm-up is excluded, and in the open model its
//! latency counts from each request's due time, so a queue shows as
//! latency and a slow client shows as send lag and late sends, which fail
//! the step rather than hide in it.
//!
//! Data flow: binary (flags → [`Plan`]) → [`capacity::drive`] on
//! [`steps`] → [`record`] → the run, its figures those of the step at the answer,
//! its record holding every step.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use dyno_load::capacity::{self, Ended, Level, Load, Plan, Ran, Searched};
use dyno_load::shard::{Counted, Shard};
use dyno_model::{Environment, Run, Unit};

use crate::engine::{EngineError, Outcome, Progress};
use crate::record::Asked;
use crate::settings::{Schedule, Settings, Stop};

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
        Some(why.clone())
    } else {
        None
    }
}

/// The engine as the search runs it: each step is the run of `settings`
/// at the step's level.
struct Steps<'a, P> {
    settings: &'a Settings,
    stop: Arc<AtomicBool>,
    progress: P,
}

impl<P: FnMut(Progress)> capacity::Engine for Steps<'_, P> {
    type Outcome = StepOutcome;
    type Error = EngineError;

    /// A step's settings: `settings` for the load's length, warm-up and
    /// wait, at its rate (open model) or closed, at its connections (this
    /// segment's share; threads no more than connections) or the
    /// configured ones.
    fn run(
        &mut self,
        load: &Load,
        gate: Option<SystemTime>,
    ) -> Result<Ended<StepOutcome>, EngineError> {
        let mut step = self.settings.clone();
        if let Level::Concurrency(connections) = load.level {
            step.connections = step.segment.share(u64::from(connections)).max(1) as usize;
            step.threads = self.settings.threads.min(step.connections).max(1);
        }
        let mut stop = Stop::Duration(load.length);
        if let (Level::Speed(speed), Some(replay)) = (load.level, &mut step.replay) {
            // Each step replays the log's window from its start at the
            // step's multiple: once (a step of no set length), or with
            // --loop again and again for the step's length.
            replay.speed = speed;
            if load.length.is_zero() {
                stop = Stop::LogEnds;
            }
        }
        step.schedule = Schedule {
            stop,
            rate_per_sec: load.level.rate(),
            warmup: load.warmup,
            plan: None,
            grace: load.grace,
        };
        let outcome = crate::engine::run_gated(
            step.clone(),
            Arc::clone(&self.stop),
            &mut self.progress,
            || Ok(gate),
        )?;
        if outcome.interrupted || self.stop.load(Ordering::Relaxed) {
            return Ok(Ended::Interrupted);
        }
        Ok(Ended::Measured {
            shard: Shard::of(
                counted(
                    &outcome,
                    step.threads,
                    step.replay.as_ref().map_or(1.0, |r| r.speed),
                ),
                load.late_after,
                load.grace,
            ),
            outcome: StepOutcome {
                outcome,
                settings: step,
            },
        })
    }

    fn lost(&self, outcome: &StepOutcome) -> Option<String> {
        no_target(&outcome.outcome)
    }
}

/// The engine as a search runs it ([`capacity::drive`]), once `settings`
/// are checked: each step is the run of `settings` at the step's level;
/// with segments, each step's rate is shared out by stride and its
/// connections by share. `progress` sees each step's engine progress.
pub fn steps<'a>(
    settings: &'a Settings,
    stop: Arc<AtomicBool>,
    progress: impl FnMut(Progress) + 'a,
) -> Result<impl capacity::Engine<Outcome = StepOutcome, Error = EngineError> + 'a, EngineError> {
    crate::engine::validate(settings)?;
    Ok(Steps {
        settings,
        stop,
        progress,
    })
}

/// What this process counted of a step, for [`Shard::of`]. A scenario's search is of flows: its rate
/// is flows per second, a flow that failed is its error, and a flow that
/// started late (its first step's send lag) or never is its late send. A
/// flow that started on schedule and did not fail is the schedule kept,
/// finished or not: the rest of it (think times, later steps) was not due
/// yet, and its requests' latency is the objective's.
fn counted(outcome: &Outcome, threads: usize, speed: f64) -> Counted<'_> {
    let s = &outcome.stats;
    let (ended, failed) = match &outcome.scenario {
        Some(figures) => {
            let sum = |f: fn(&crate::scenario::FlowFigures) -> u64| {
                figures.flows.iter().map(f).sum::<u64>()
            };
            (sum(|f| f.started), sum(|f| f.failed))
        }
        None => (s.requests() + s.unfinished, s.errors.total()),
    };
    Counted {
        ended,
        failed,
        missed: s.dropped,
        unfinished: s.unfinished,
        latency: &s.latency,
        lag: &s.send_lag,
        seconds: outcome.timeline.iter().map(|i| i.latency.clone()).collect(),
        elapsed: outcome.elapsed,
        client_cpu_percent: outcome.client_cpu_percent(threads),
        client_wait_percent: dyno_load::pool::busy_percent(outcome.cpu_wait, outcome.wall, threads),
        // A replay of the whole log: its requests over their due times'
        // span, however long the target took.
        asked_per_sec: outcome
            .replay
            .as_ref()
            .filter(|r| !r.log.cut && r.log.span_s > 0.0)
            .map(|r| r.log.requests as f64 / (r.log.span_s / speed)),
    }
}

/// The run of a capacity search: the figures of [`Searched::figures`]'s
/// step, the search in the record, its capacity as the headline
/// ([`capacity::conclude`]). `None` when no step finished.
pub fn record(
    capacity: &Capacity,
    plan: &Plan,
    environment: Environment,
    asked: &Asked,
) -> Option<Run> {
    let figures = &capacity.figures()?.outcome;
    let mut run = crate::record(&figures.settings, &figures.outcome, environment, asked);
    let subject = crate::record::subject(&figures.settings, asked);
    let unit = rate_unit(&figures.settings);
    capacity::conclude(&mut run, capacity, plan, &subject, (unit, "connections"));
    Some(run)
}

/// What a search's rates count: a scenario's are flows per second, each
/// flow several requests, never set beside a URL's requests per second; a
/// replay's are multiples of the log's pace.
fn rate_unit(settings: &Settings) -> Unit {
    if settings.replay.is_some() {
        Unit::Ratio
    } else if settings.scenario.is_some() {
        Unit::FlowsPerSec
    } else {
        Unit::RequestsPerSec
    }
}
