//! `dyno db run --find-max`: the highest transaction rate the server
//! sustains while it meets an objective, or with `-c FROM..TO` the number
//! of clients that gives the highest throughput. The search, its probe and
//! its loop are [`dyno_load::capacity`]'s; this module runs each step on
//! the engine (its `Steps`, the search's [`capacity::Engine`]: `-R` at the
//! step's rate with Poisson arrivals as pgbench's, or closed at its
//! clients) and turns its [`Outcome`] into the search's [`Shard`], and
//! makes the run.
//!
//! The clean-up before a run (pgbench's vacuum) runs once, before the
//! first step or the probe, never between steps.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use dyno_load::capacity::{self, Ended, Level, Load, Plan, Ran, Searched};
use dyno_load::shard::{Counted, Shard};
use dyno_model::{Environment, Run, Unit};

use crate::record::Whole;
use crate::run::{Outcome, Progress, RunError, RunSettings, Stop, run_gated};

/// What a db search found; each step keeps its outcome and settings.
pub type Capacity = Searched<(Outcome, RunSettings)>;

/// One db step as run.
pub type StepRun = Ran<(Outcome, RunSettings)>;

/// The engine as the search runs it: each step is the run of `settings`
/// at the step's level.
struct Steps<'a, P> {
    settings: &'a RunSettings,
    stop: Arc<AtomicBool>,
    progress: P,
    /// No run yet: the clean-up, if asked for, runs before this one, and
    /// a server gone is a setup error rather than a lost target.
    first: bool,
}

impl<P: FnMut(Progress)> capacity::Engine for Steps<'_, P> {
    type Outcome = (Outcome, RunSettings);
    type Error = RunError;

    /// A step's settings: `settings` for the load's length, warm-up and
    /// wait, at this segment's share of its rate (open model) or closed,
    /// at its share of the step's clients (threads no more than clients)
    /// or the configured ones. A server gone after the first run is the
    /// target lost (what was found is kept); an interrupted step is left
    /// out.
    fn run(
        &mut self,
        load: &Load,
        gate: Option<SystemTime>,
    ) -> Result<Ended<(Outcome, RunSettings)>, RunError> {
        let mut step = self.settings.clone();
        if let Level::Concurrency(clients) = load.level {
            step.clients = step.segment.share(u64::from(clients)).max(1) as usize;
            step.threads = self.settings.threads.min(step.clients).max(1);
        }
        step.rate = load.level.rate().map(|rate| rate * self.settings.share);
        step.stop = Stop::Duration(load.length);
        step.warmup = load.warmup;
        step.grace = load.grace;
        let asked = step.vacuum;
        step.vacuum = asked && self.first;
        let outcome = match run_gated(&step, Arc::clone(&self.stop), &mut self.progress, || {
            Ok(gate)
        }) {
            Ok(o) => o,
            Err(e) if !self.first => return Ok(Ended::Lost(e.to_string())),
            Err(e) => return Err(e),
        };
        self.first = false;
        // The record says what was asked (the clean-up ran once, before
        // the first run, if it was asked for).
        step.vacuum = asked;
        if outcome.interrupted || self.stop.load(Ordering::Relaxed) {
            return Ok(Ended::Interrupted);
        }
        Ok(Ended::Measured {
            shard: Shard::of(counted(&outcome, step.threads), load.late_after, step.grace),
            outcome: (outcome, step),
        })
    }

    fn lost(&self, outcome: &(Outcome, RunSettings)) -> Option<String> {
        every_client_aborted(outcome)
    }
}

/// The engine as a search runs it ([`capacity::drive`]): each step is
/// the run of `settings` at the step's level; with segments, this segment
/// runs its share of each step's rate ([`RunSettings::share`]) or clients.
/// `progress` sees each step's engine progress.
pub fn steps<'a>(
    settings: &'a RunSettings,
    stop: Arc<AtomicBool>,
    progress: impl FnMut(Progress) + 'a,
) -> impl capacity::Engine<Outcome = (Outcome, RunSettings), Error = RunError> + 'a {
    Steps {
        settings,
        stop,
        progress,
        first: true,
    }
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

/// What this process counted of a step, for [`Shard::of`] to judge:
/// transactions, as HTTP's requests; what was skipped or never started
/// counts against the schedule.
fn counted(outcome: &Outcome, threads: usize) -> Counted<'_> {
    let failed = outcome.failed_total();
    Counted {
        ended: outcome.transactions + failed + outcome.unfinished,
        failed,
        missed: outcome.skipped + outcome.dropped,
        unfinished: outcome.unfinished,
        latency: &outcome.latency,
        lag: &outcome.lag,
        seconds: outcome.timeline.iter().map(|s| s.latency.clone()).collect(),
        elapsed: outcome.elapsed,
        client_cpu_percent: outcome.client_cpu_percent(threads),
        client_wait_percent: dyno_load::pool::busy_percent(
            outcome.cpu_wait,
            outcome.elapsed,
            threads,
        ),
        asked_per_sec: None,
    }
}

/// The run of a capacity search: the figures of [`Searched::figures`]'s
/// step, the search in the record, its capacity in transactions per
/// second as the headline ([`capacity::conclude`]). A sweep's run counts
/// the clients and threads of its step. `None` when no step finished.
pub fn record(
    capacity: &Capacity,
    plan: &Plan,
    whole: &Whole,
    duration: Duration,
    environment: Environment,
) -> Option<Run> {
    let ran = capacity.figures()?;
    let (outcome, settings) = &ran.outcome;
    let whole = match ran.level {
        Level::Concurrency(_) => Whole {
            clients: settings.clients as u32,
            jobs: settings.threads as u32,
            ..*whole
        },
        Level::Rate(rate) => Whole {
            rate: Some(rate),
            ..*whole
        },
        Level::Probe | Level::Speed(_) => *whole,
    };
    let mut run = crate::record::record(settings, &whole, outcome, duration, environment);
    let subject = run.description.clone();
    capacity::conclude(
        &mut run,
        capacity,
        plan,
        &subject,
        (Unit::OpsPerSec, "clients"),
    );
    Some(run)
}
