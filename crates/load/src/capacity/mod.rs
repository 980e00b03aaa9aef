//! Running a capacity search on an engine (`--find-max` of `dyno http` and
//! `dyno db run`): one [`Plan`] whose [`Axis`] says what varies from step
//! to step (the open model's rate, or the closed model's concurrency), one
//! loop ([`drive`]) that runs the steps the axis's state machine asks for
//! ([`Search`] for rates, [`Sweep`] for concurrency) on any [`Engine`],
//! and one record of what it found ([`record`]). An engine offers one
//! thing: to run a step at a [`Level`] and say what it measured; the
//! probe, the budget, the segments' barrier, the judging and the answer
//! are all here, so every engine and every axis searches alike, and a new
//! axis is one more arm of [`Axis`] and [`Level`].
//!
//! Data flow: the binary's flags → [`Plan`] → [`drive`] (the engine runs
//! each [`Load`]) → [`Searched`] → [`record`] and [`conclude`] → the run,
//! its figures those of the step at the answer, its record every step.

mod lines;
mod record;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use dyno_model::record::{CapacityAnswer, CapacityOutcome};
use dyno_stats::scaling::UslFit;
use hdrhistogram::Histogram;

use crate::search::{self, Next, Observation, Purpose, Search, Why};
use crate::shard::{self, Part, Shard, Together};
use crate::slo::Slo;
use crate::sweep::{self, Sweep};

pub use lines::counted;
pub use record::{CapacityWarning, answer_record, conclude, failed_on, mark, objective, record};

pub use crate::judge::CLIENT_SATURATED_PERCENT;

/// The share of what the client's threads wanted of a CPU (what they ran
/// and what they waited, runnable, to run) that they may have waited
/// before a step counts as run on a busy machine: other work took the CPU
/// the client needed at its wake-ups, so its sends went late for its own
/// reasons, and a failing step may be the machine's doing and is run again
/// ([`crate::search`]). A light client is starved as surely as a busy one:
/// the share, not the time, tells. On this project's 2-core VM a 2000
/// req/s client waited 35% of what it wanted beside a compile on both
/// cores, 62% beside two CPU hogs; a quiet machine serves it at once.
pub const BUSY_WAIT_SHARE: f64 = 0.25;

/// Below this much waiting, in percent of the step, no client counts as
/// starved, whatever the share: scheduling noise.
pub const BUSY_WAIT_FLOOR_PERCENT: f64 = 1.0;

/// Whether a client that used `cpu_percent` of its threads and waited
/// `wait_percent` for a CPU was starved by other work ([`BUSY_WAIT_SHARE`]).
pub fn starved(cpu_percent: f64, wait_percent: f64) -> bool {
    wait_percent >= BUSY_WAIT_FLOOR_PERCENT
        && wait_percent >= BUSY_WAIT_SHARE * (cpu_percent + wait_percent)
}

/// The fewest requests (or transactions) a step is judged on: the search
/// halves no lower than the rate that gives a step this many.
pub const MIN_REQUESTS_PER_STEP: f64 = 10.0;

/// A send (or a transaction's start) is late for the search when it is
/// more than [`LATE_AFTER`] and more than this share of the tightest
/// latency target behind its due time: late enough to have spent a quarter
/// of the latency budget on the client's side. (With 1 ms alone, a 2-core
/// VM's scheduling hiccups made 0.1–0.4% of sends late at a tenth of a
/// server's capacity, and failed every step; a client that cannot keep the
/// schedule falls far further behind, and its corrected latency shows it.)
pub const LATE_SHARE_OF_TARGET: f64 = 0.25;
pub const LATE_AFTER: Duration = Duration::from_millis(1);

/// How long a step waits, past its end, for requests (or transactions)
/// due in it and still under way, when the objective names no latency;
/// with one, it waits up to its loosest limit ([`Plan::grace`]).
pub const GRACE_WITHOUT_LATENCY: Duration = Duration::from_secs(1);

/// The longest a step waits past its end, whatever the objective (k6's
/// `gracefulStop` default).
pub const MAX_GRACE: Duration = Duration::from_secs(30);

/// How long the closed-model probe that picks a rate search's start
/// runs, its warm-up included.
pub const PROBE: Duration = Duration::from_secs(2);
pub const PROBE_WARMUP: Duration = Duration::from_millis(500);

/// What the search varies from step to step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Axis {
    /// The open model's rate, per second: bracketed by doubling or
    /// halving, then bisected to within `precision` (0.05: 5%)
    /// ([`Search`]). `start`: the first rate; `None`: half what a short
    /// closed-model probe achieved.
    Rate { start: Option<f64>, precision: f64 },
    /// The closed model's concurrency (connections, clients): doubling
    /// from `from` up to `to` ([`Sweep`]).
    Concurrency { from: u32, to: u32 },
    /// A replay's speed, as a multiple of the recorded traffic's pace:
    /// searched as a rate is ([`Search`], bracketed from `start`, then
    /// bisected to within `precision`), each step replaying the log at
    /// its multiple. Its answer reads "sustains 2.7× the recorded
    /// traffic".
    Speed { start: f64, precision: f64 },
}

/// What the search is asked.
#[derive(Debug, Clone)]
pub struct Plan {
    pub slo: Slo,
    /// The objective as the user wrote it, for the record and the labels.
    pub slo_text: String,
    /// Each step's measured length, and its warm-up.
    pub step: Duration,
    pub warmup: Duration,
    pub budget: Duration,
    pub axis: Axis,
}

impl Plan {
    /// The steps the budget allows (at least one).
    pub fn max_steps(&self) -> usize {
        let per_step = (self.step + self.warmup).as_secs_f64().max(1e-3);
        ((self.budget.as_secs_f64() / per_step) as usize).max(1)
    }

    /// The rate search from `start`: it halves no lower than a step of
    /// [`MIN_REQUESTS_PER_STEP`], nor below 1 per second.
    pub fn search(&self, start: f64) -> Search {
        let (precision, floor) = match self.axis {
            Axis::Rate { precision, .. } => (
                precision,
                (start / 1024.0)
                    .max(MIN_REQUESTS_PER_STEP / self.step.as_secs_f64().max(1e-3))
                    .max(1.0),
            ),
            // A multiple has no least rate: a replay slowed 1024 times
            // that still fails tells enough.
            Axis::Speed { precision, .. } => (precision, start / 1024.0),
            Axis::Concurrency { .. } => (0.0, 1.0),
        };
        Search::new(
            search::Settings {
                start,
                precision,
                max_steps: self.max_steps(),
                floor,
            },
            self.slo.clone(),
        )
    }

    /// How long a step waits, after its end, for what was due in it and
    /// is still under way (k6's `gracefulStop`): up to the objective's
    /// loosest latency limit, since anything still unanswered then has
    /// failed every latency target already. What ends in that time is
    /// judged by its latency like the rest; what is still under way is
    /// counted at the wait's length ([`crate::shard::Shard::of`]).
    pub fn grace(&self) -> Duration {
        grace(&self.slo)
    }

    /// The lag past which a send counts as late (see
    /// [`LATE_SHARE_OF_TARGET`]).
    pub fn late_after(&self) -> Duration {
        self.slo
            .tightest()
            .map_or(LATE_AFTER, |t| t.mul_f64(LATE_SHARE_OF_TARGET))
            .max(LATE_AFTER)
    }

    /// What a step at `level` asks of the engine.
    pub fn load(&self, level: Level) -> Load {
        match level {
            Level::Probe => Load {
                level,
                length: PROBE - PROBE_WARMUP,
                warmup: PROBE_WARMUP,
                grace: Duration::ZERO,
                late_after: None,
            },
            Level::Rate(_) | Level::Speed(_) => Load {
                level,
                length: self.step,
                warmup: self.warmup,
                grace: self.grace(),
                late_after: Some(self.late_after()),
            },
            Level::Concurrency(_) => Load {
                level,
                length: self.step,
                warmup: self.warmup,
                grace: self.grace(),
                late_after: None,
            },
        }
    }

    /// How the search reads in a run's description: `find-max p99<=20ms`,
    /// and for a sweep `over 1..64 connections` (`what`: the engine's word
    /// for its concurrency).
    pub fn describe(&self, what: &str) -> String {
        match self.axis {
            Axis::Rate { .. } => format!("find-max {}", self.slo_text),
            Axis::Speed { .. } => format!("find-max {} over the replay's speed", self.slo_text),
            Axis::Concurrency { from, to } => {
                format!("find-max {} over {from}..{to} {what}", self.slo_text)
            }
        }
    }
}

/// [`Plan::grace`] of an objective.
pub fn grace(slo: &Slo) -> Duration {
    slo.loosest()
        .unwrap_or(GRACE_WITHOUT_LATENCY)
        .min(MAX_GRACE)
}

/// The load of one step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Level {
    /// The closed model at the engine's own concurrency: the probe that
    /// picks a rate search's start.
    Probe,
    /// The open model at this many requests (transactions, flows) per
    /// second.
    Rate(f64),
    /// The closed model at this many connections (clients), all segments'
    /// together.
    Concurrency(u32),
    /// A replay at this multiple of the log's pace (an open model whose
    /// rate is the log's).
    Speed(f64),
}

impl Level {
    /// The rate a step at this level asks for.
    pub fn asked(self) -> shard::Asked {
        match self {
            Level::Rate(rate) => shard::Asked::Rate(rate),
            Level::Speed(_) => shard::Asked::Log,
            Level::Probe | Level::Concurrency(_) => shard::Asked::Closed,
        }
    }

    /// The open model's rate, if this level has one.
    pub fn rate(self) -> Option<f64> {
        match self {
            Level::Rate(rate) => Some(rate),
            Level::Probe | Level::Concurrency(_) | Level::Speed(_) => None,
        }
    }
}

/// What one step asks of an engine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    pub level: Level,
    /// The measured length, the warm-up before it (excluded), and how long
    /// to wait after it for what is still under way ([`Plan::grace`]).
    pub length: Duration,
    pub warmup: Duration,
    pub grace: Duration,
    /// The open model's threshold for a late send; `None` in a
    /// closed-model step, which has no due times.
    pub late_after: Option<Duration>,
}

/// An engine the search runs on: it runs this process's part of one step
/// and says when a step found no target at all.
pub trait Engine {
    /// What one step's run gave, kept with its step.
    type Outcome;
    type Error;

    /// Runs this process's part of a step of `load`, from `gate` (a split
    /// search's common start) or at once: its outcome and shard, or how it
    /// ended without one.
    fn run(
        &mut self,
        load: &Load,
        gate: Option<SystemTime>,
    ) -> Result<Ended<Self::Outcome>, Self::Error>;

    /// Why `outcome` shows there is no target to load (every connection
    /// refused, every client aborted), if it does.
    fn lost(&self, outcome: &Self::Outcome) -> Option<String>;
}

/// What a step's engine run gives besides the observation.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Extra {
    /// The 99th percentile of the send (or schedule) lag, in nanoseconds.
    pub send_lag_p99_ns: u64,
    pub client_cpu_percent: f64,
    /// How long the client's threads waited for a CPU, in percent of
    /// their time.
    pub client_wait_percent: f64,
}

/// One step as an engine ran it and the search judged it.
#[derive(Debug, Clone)]
pub struct Ran<O> {
    pub level: Level,
    pub purpose: Purpose,
    pub observation: Observation,
    /// The verdict: empty when it passed.
    pub why: Vec<Why>,
    pub extra: Extra,
    pub outcome: O,
}

impl<O> Ran<O> {
    pub fn passed(&self) -> bool {
        self.why.is_empty()
    }
}

/// What running one step gave.
#[derive(Debug)]
pub enum Measured<O> {
    Step {
        observation: Observation,
        outcome: O,
        extra: Extra,
    },
    /// Stopped inside the step (Ctrl-C): it measured less than it was
    /// asked, and is left out.
    Interrupted,
    /// The step could not run at all (the target stopped accepting
    /// connections): why. The search ends with what it had.
    Lost(String),
}

/// How this process's part of a step ended, before the group's parts are
/// merged.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "one value per step, moved once: boxing would buy nothing"
)]
pub enum Ended<O> {
    Measured {
        outcome: O,
        shard: Shard,
    },
    /// Stopped inside the step (Ctrl-C).
    Interrupted,
    /// The step could not run at all: why.
    Lost(String),
}

/// Runs one step, alone or with the processes of a split search: the
/// engine runs this process's part of `load` (from the group's common
/// start, if there is a group), and the step's observation is every part's
/// shard merged ([`shard::observe`]). With a group, a part that lost its
/// target or was interrupted ends the step for every process, and a group
/// that fails to meet loses the target: the search ends with what it had,
/// the same in every process.
fn step<G: Engine>(
    group: Option<&mut (dyn Together + '_)>,
    label: &str,
    slo: &Slo,
    engine: &mut G,
    load: &Load,
) -> Result<Measured<G::Outcome>, G::Error> {
    let requested = load.level.asked();
    let Some(group) = group else {
        return Ok(match engine.run(load, None)? {
            Ended::Measured { outcome, shard } => {
                let (observation, extra) = shard::observe(&[shard], slo, requested);
                Measured::Step {
                    observation,
                    outcome,
                    extra,
                }
            }
            Ended::Interrupted => Measured::Interrupted,
            Ended::Lost(why) => Measured::Lost(why),
        });
    };
    let start = match group.start(label) {
        Ok(at) => at,
        Err(why) => return Ok(Measured::Lost(why)),
    };
    let ended = engine.run(load, Some(start))?;
    let (mine, own) = match ended {
        Ended::Measured { outcome, shard } => match engine.lost(&outcome) {
            Some(why) => (Part::Lost(why), None),
            None => (Part::Measured(shard), Some(outcome)),
        },
        Ended::Interrupted => (Part::Interrupted, None),
        Ended::Lost(why) => (Part::Lost(why), None),
    };
    let parts = match group.exchange(label, &mine) {
        Ok(parts) => parts,
        Err(why) => return Ok(Measured::Lost(why)),
    };
    let count = group.count();
    let mut shards = Vec::with_capacity(parts.len());
    for (index, part) in parts.into_iter().enumerate() {
        match part {
            Part::Measured(s) => shards.push(s),
            Part::Interrupted => return Ok(Measured::Interrupted),
            Part::Lost(why) => {
                return Ok(Measured::Lost(format!("segment {index}/{count}: {why}")));
            }
        }
    }
    let Some(outcome) = own else {
        // Every part measured, this one's too: unreachable, but a lost
        // step is the honest reading.
        return Ok(Measured::Lost("this segment measured nothing".into()));
    };
    let (observation, extra) = shard::observe(&shards, slo, requested);
    Ok(Measured::Step {
        observation,
        outcome,
        extra,
    })
}

/// The first rate of a search from its closed-model probe: half what the
/// probe achieved (at least 1 per second); `Ok(None)` when it was
/// interrupted; why not, when it measured nothing or found no target.
fn start_from_probe<O>(
    probe: Measured<O>,
    lost: impl Fn(&O) -> Option<String>,
) -> Result<Option<f64>, String> {
    let why = |why: String| {
        format!(
            "the probe that picks --start measured nothing (give --start RATE to skip it): {why}"
        )
    };
    let rate = match probe {
        Measured::Step { outcome, .. } if lost(&outcome).is_some() => {
            return Err(why(lost(&outcome).unwrap_or_default()));
        }
        Measured::Step { observation, .. } => observation.achieved,
        Measured::Interrupted => return Ok(None),
        Measured::Lost(lost) => return Err(why(lost)),
    };
    Ok(Some((rate / 2.0).max(1.0).round()))
}

/// What a search found.
#[derive(Debug, Clone)]
pub struct Searched<O> {
    pub steps: Vec<Ran<O>>,
    /// How it ended, as the record keeps it: an interrupted search's is
    /// [`CapacityOutcome::Interrupted`], whatever it had seen.
    pub answer: CapacityAnswer,
    /// A rate search's first rate, and whether a probe chose it.
    pub start: Option<(f64, bool)>,
    /// Stopped early (Ctrl-C): the answer is what it had.
    pub interrupted: bool,
    /// The search ended because the target stopped answering at all: why.
    pub lost_target: Option<String>,
    /// A sweep's USL fit of throughput over concurrency.
    pub usl: Option<UslFit>,
    /// The step whose figures stand for the run, and the first failing
    /// step above the answer (indexes into `steps`).
    answer_step: Option<usize>,
    knee_step: Option<usize>,
}

impl<O> Searched<O> {
    /// The step whose figures stand for the run: the last run of the
    /// answer's level (the highest passing rate, the best passing
    /// concurrency), else the last step.
    pub fn figures(&self) -> Option<&Ran<O>> {
        self.answer_step
            .and_then(|i| self.steps.get(i))
            .or(self.steps.last())
    }

    /// The first failing step above the answer, where it stops holding.
    pub fn knee(&self) -> Option<&Ran<O>> {
        self.knee_step.and_then(|i| self.steps.get(i))
    }

    /// Whether the search ended without a capacity it could claim for a
    /// reason the user must hear as a failure: no level met the objective,
    /// or repeated steps disagreed.
    pub fn failed(&self) -> bool {
        matches!(
            self.answer.outcome,
            CapacityOutcome::NoneMeets | CapacityOutcome::Unstable
        )
    }
}

/// The state machine of a plan's axis.
enum Walk {
    /// A rate search; `speed`: its rates are a replay's multiples.
    Rates {
        search: Search,
        speed: bool,
    },
    Concurrency(Sweep),
}

impl Walk {
    /// The level a rate search's value stands for.
    fn level(speed: bool, value: f64) -> Level {
        if speed {
            Level::Speed(value)
        } else {
            Level::Rate(value)
        }
    }
}

impl Walk {
    fn next(&mut self) -> Option<Level> {
        match self {
            Walk::Rates { search, speed } => match search.next_step() {
                Next::Run { rate, .. } => Some(Walk::level(*speed, rate)),
                Next::Done(_) => None,
            },
            Walk::Concurrency(sweep) => sweep.next_step().map(|(c, _)| Level::Concurrency(c)),
        }
    }

    /// Judges the step just run: why it ran, what it measured, why it
    /// failed.
    fn observe(&mut self, observation: Observation) -> (Purpose, Observation, Vec<Why>) {
        match self {
            Walk::Rates { search, .. } => {
                let step = search.observe(observation).clone();
                (step.purpose, step.observation, step.why)
            }
            Walk::Concurrency(sweep) => {
                let (purpose, why) = sweep.observe(&observation);
                (purpose, observation, why)
            }
        }
    }

    fn answer(&self) -> CapacityAnswer {
        match self {
            Walk::Rates { search, .. } => answer_record(search.answer()),
            Walk::Concurrency(sweep) => sweep.answer(),
        }
    }

    /// Where the answer's step and the knee are among `steps`.
    fn pick<O>(&self, steps: &[Ran<O>], answer: &CapacityAnswer) -> (Option<usize>, Option<usize>) {
        let last = |level: Level, passed: bool| {
            steps
                .iter()
                .rposition(|s| s.level == level && s.passed() == passed)
        };
        match self {
            Walk::Rates { speed, .. } => (
                answer
                    .max_rate
                    .and_then(|r| last(Walk::level(*speed, r), true)),
                answer
                    .above_rate
                    .and_then(|r| last(Walk::level(*speed, r), false)),
            ),
            Walk::Concurrency(sweep) => {
                let (best, knee) = sweep.best_and_knee();
                (
                    best.and_then(|c| last(Level::Concurrency(c), true)),
                    knee.and_then(|c| last(Level::Concurrency(c), false)),
                )
            }
        }
    }

    fn usl(&self) -> Option<UslFit> {
        match self {
            Walk::Rates { .. } => None,
            Walk::Concurrency(sweep) => sweep.usl(),
        }
    }
}

/// Runs the search the plan asks for on `engine`: for a rate search
/// without a start, a probe first (half its closed-model rate); then the
/// steps its axis asks for, until the search answers, the budget is spent
/// (the probe's time counts), `stop` is raised or the target stops
/// answering. `group`: the other processes of a split search, which run
/// their part of every step with this one. `on_step` sees each step as
/// judged.
pub fn drive<G: Engine>(
    plan: &Plan,
    engine: &mut G,
    mut group: Option<&mut (dyn Together + '_)>,
    stop: &AtomicBool,
    mut on_step: impl FnMut(&Ran<G::Outcome>),
) -> Result<Searched<G::Outcome>, G::Error> {
    let budget = Budget::new(plan.budget, Duration::ZERO);
    let mut searched = Searched {
        steps: Vec::new(),
        answer: CapacityAnswer::default(),
        start: None,
        interrupted: stop.load(Ordering::Relaxed),
        lost_target: None,
        usl: None,
        answer_step: None,
        knee_step: None,
    };
    let mut walk = match plan.axis {
        Axis::Rate {
            start: Some(start), ..
        } => {
            searched.start = Some((start, false));
            Walk::Rates {
                search: plan.search(start),
                speed: false,
            }
        }
        Axis::Speed { start, .. } => {
            searched.start = Some((start, false));
            Walk::Rates {
                search: plan.search(start),
                speed: true,
            }
        }
        Axis::Rate { start: None, .. } => {
            if searched.interrupted {
                return Ok(searched);
            }
            let probe = plan.load(Level::Probe);
            let probed = step(group.as_deref_mut(), "probe", &plan.slo, engine, &probe)?;
            match start_from_probe(probed, |o| engine.lost(o)) {
                Ok(Some(start)) => {
                    searched.start = Some((start, true));
                    Walk::Rates {
                        search: plan.search(start),
                        speed: false,
                    }
                }
                Ok(None) => {
                    searched.interrupted = true;
                    return Ok(searched);
                }
                Err(why) => {
                    searched.lost_target = Some(why);
                    return Ok(searched);
                }
            }
        }
        Axis::Concurrency { from, to } => Walk::Concurrency(Sweep::new(
            sweep::levels(from, to),
            plan.slo.clone(),
            plan.max_steps(),
        )),
    };
    while !searched.interrupted {
        let Some(level) = walk.next() else { break };
        if !searched.steps.is_empty() && !budget.allows(plan.step + plan.warmup) {
            break;
        }
        let label = (searched.steps.len() + 1).to_string();
        match step(
            group.as_deref_mut(),
            &label,
            &plan.slo,
            engine,
            &plan.load(level),
        )? {
            Measured::Interrupted => searched.interrupted = true,
            Measured::Lost(why) => {
                searched.lost_target = Some(why);
                break;
            }
            Measured::Step {
                observation,
                outcome,
                extra,
            } => {
                // A step that found no target measured nothing: it is not
                // judged, and the search ends with what it had.
                if let Some(why) = engine.lost(&outcome) {
                    searched.lost_target = Some(why);
                    break;
                }
                let (purpose, observation, why) = walk.observe(observation);
                let ran = Ran {
                    level,
                    purpose,
                    observation,
                    why,
                    extra,
                    outcome,
                };
                on_step(&ran);
                searched.steps.push(ran);
            }
        }
    }
    let answer = walk.answer();
    (searched.answer_step, searched.knee_step) = walk.pick(&searched.steps, &answer);
    searched.usl = walk.usl();
    searched.answer = if searched.interrupted {
        // Stopped by an interrupt: what it saw, claiming nothing.
        CapacityAnswer {
            outcome: CapacityOutcome::Interrupted,
            client_bound_at: None,
            ..answer
        }
    } else {
        answer
    };
    Ok(searched)
}

/// The search's budget as time on the clock: what the probe spent, and
/// each step's whole length (its warm-up and its wait for what was under
/// way included), count against it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    ends: std::time::Instant,
}

impl Budget {
    pub(crate) fn new(budget: Duration, spent: Duration) -> Budget {
        Budget {
            ends: std::time::Instant::now() + budget.saturating_sub(spent),
        }
    }

    /// Whether a step of `length` ends within the budget.
    pub(crate) fn allows(&self, length: Duration) -> bool {
        std::time::Instant::now() + length <= self.ends
    }
}

/// The percentiles every step records besides the objective's.
const SHOWN: [f64; 3] = [50.0, 99.0, 99.9];

/// A step's corrected latency (nanoseconds) at the objective's percentiles
/// and at p50, p99 and p99.9; empty when nothing was recorded.
pub fn percentiles(latency: &Histogram<u64>, slo: &Slo) -> Vec<(f64, Duration)> {
    if latency.is_empty() {
        return Vec::new();
    }
    let mut p = slo.percentiles();
    p.extend(SHOWN);
    p.sort_by(f64::total_cmp);
    p.dedup();
    p.into_iter()
        .map(|p| {
            (
                p,
                Duration::from_nanos(latency.value_at_quantile(p / 100.0)),
            )
        })
        .collect()
}

/// Each interval's median latency in seconds (nanosecond histograms),
/// empty intervals left out: the series the trend test reads.
pub fn medians<'a>(intervals: impl IntoIterator<Item = &'a Histogram<u64>>) -> Vec<f64> {
    intervals
        .into_iter()
        .filter(|h| !h.is_empty())
        .map(|h| h.value_at_quantile(0.5) as f64 / 1e9)
        .collect()
}

/// How many of the lags (nanoseconds) are past `after`.
pub fn late(lag: &Histogram<u64>, after: Duration) -> u64 {
    let after = u64::try_from(after.as_nanos()).unwrap_or(u64::MAX);
    lag.len() - lag.count_between(0, after)
}

#[cfg(test)]
mod tests;
