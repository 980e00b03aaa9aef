//! Running a capacity search on an engine (`--find-max` of `dyno http` and
//! `dyno db run`): the plan, the loop that runs the steps the
//! [`Search`] asks for, what a step's latency tells it, and the record the
//! run keeps. The engines supply one closure that runs a step at a rate
//! and turns its outcome into an [`Observation`]; everything else is
//! shared, so both search alike.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use dyno_model::record::{CapacityAnswer, CapacityOutcome, CapacityRecord, CapacityStep};
use dyno_model::{Direction, Metric, Role, Run, Unit};
use hdrhistogram::Histogram;

use crate::search::{self, Answer, Next, Observation, Search, Step};
use crate::shard::{self, Part, Shard, Together};
use crate::slo::Slo;

/// The client CPU share, in percent of its threads, at which a step is
/// taken to have measured the client (as the runs' own warning says).
pub const CLIENT_SATURATED_PERCENT: f64 = 90.0;

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

/// What the search is asked.
#[derive(Debug, Clone)]
pub struct Plan {
    pub slo: Slo,
    /// The objective as the user wrote it, for the record.
    pub slo_text: String,
    /// The first rate; `None`: the engine picks one (a short probe).
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

    /// The search from `start`: it halves no lower than a step of
    /// [`MIN_REQUESTS_PER_STEP`], nor below 1 per second.
    pub fn search(&self, start: f64) -> Search {
        let floor = (start / 1024.0)
            .max(MIN_REQUESTS_PER_STEP / self.step.as_secs_f64().max(1e-3))
            .max(1.0);
        Search::new(
            search::Settings {
                start,
                precision: self.precision,
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
    /// counted at the wait's length ([`crate::shard::waited_out`]).
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
}

/// [`Plan::grace`] of an objective.
pub fn grace(slo: &Slo) -> Duration {
    slo.loosest()
        .unwrap_or(GRACE_WITHOUT_LATENCY)
        .min(MAX_GRACE)
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

/// One step as an engine ran it.
#[derive(Debug, Clone)]
pub struct Ran<O> {
    pub step: Step,
    pub outcome: O,
    pub extra: Extra,
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

/// Runs one step, alone or with the processes of a split search: `run`
/// runs this process's part (from the group's common start, if there is a
/// group), and the step's observation is every part's shard merged
/// ([`shard::observe`]; `requested`: the whole step's rate, `None` for a
/// closed-model step). With a group, a part that lost its target (as
/// `lost` tells from its outcome) or was interrupted ends the step for
/// every process, and a group that fails to meet loses the target: the
/// search ends with what it had, the same in every process.
pub fn step<O, E>(
    group: Option<&mut (dyn Together + '_)>,
    label: &str,
    slo: &Slo,
    requested: Option<f64>,
    lost: impl Fn(&O) -> Option<String>,
    run: impl FnOnce(Option<SystemTime>) -> Result<Ended<O>, E>,
) -> Result<Measured<O>, E> {
    let Some(group) = group else {
        return Ok(match run(None)? {
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
    let ended = run(Some(start))?;
    let (mine, own) = match ended {
        Ended::Measured { outcome, shard } => match lost(&outcome) {
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
/// probe achieved (at least 1 per second); 1 when it was interrupted (the
/// search then stops before its first step); why, when it measured
/// nothing or found no target (as `lost` tells from its outcome).
pub fn start_from_probe<O>(
    probe: Measured<O>,
    lost: impl Fn(&O) -> Option<String>,
) -> Result<f64, String> {
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
        Measured::Interrupted => 0.0,
        Measured::Lost(lost) => return Err(why(lost)),
    };
    Ok((rate / 2.0).max(1.0).round())
}

/// What a search found.
#[derive(Debug, Clone)]
pub struct Searched<O> {
    pub answer: Answer,
    pub steps: Vec<Ran<O>>,
    pub start: f64,
    /// The start was chosen by a probe.
    pub probed: bool,
    /// Stopped early (Ctrl-C): the answer is what it had.
    pub interrupted: bool,
    /// The search ended because the target stopped answering at all: why.
    pub lost_target: Option<String>,
}

impl<O> Searched<O> {
    /// The step whose figures stand for the run: the last one run at the
    /// answer's highest passing rate, else the last step.
    pub fn figures(&self) -> Option<&Ran<O>> {
        let max = match self.answer {
            Answer::Found { max, .. } => Some(max),
            Answer::Unfinished { max, .. }
            | Answer::ClientBound { max, .. }
            | Answer::Unstable { max, .. } => max,
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

/// Runs the search from `start`: each step `run_step(rate)` measures, until
/// the search answers, the budget is spent (`spent` of it already, by the
/// probe that chose the start), `stop` is raised or `lost` says the
/// target stopped answering. `on_step` sees each step as judged.
#[expect(
    clippy::too_many_arguments,
    reason = "the search's one loop, wired once per engine"
)]
pub fn drive<O, E>(
    plan: &Plan,
    start: f64,
    probed: bool,
    spent: Duration,
    stop: &AtomicBool,
    mut run_step: impl FnMut(f64) -> Result<Measured<O>, E>,
    lost: impl Fn(&O) -> Option<String>,
    mut on_step: impl FnMut(&Ran<O>),
) -> Result<Searched<O>, E> {
    let mut search = plan.search(start);
    let mut steps = Vec::new();
    let mut interrupted = stop.load(Ordering::Relaxed);
    let mut lost_target = None;
    let budget = Budget::new(plan.budget, spent);
    while !interrupted {
        let rate = match search.next_step() {
            Next::Run { rate, .. } => rate,
            Next::Done(_) => break,
        };
        if !steps.is_empty() && !budget.allows(plan.step + plan.warmup) {
            break;
        }
        match run_step(rate)? {
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
                // judged, and the search ends with what it had.
                if let Some(why) = lost(&outcome) {
                    lost_target = Some(why);
                    break;
                }
                let step = search.observe(observation).clone();
                let ran = Ran {
                    step,
                    outcome,
                    extra,
                };
                on_step(&ran);
                steps.push(ran);
            }
        }
    }
    Ok(Searched {
        answer: search.answer(),
        steps,
        start,
        probed,
        interrupted,
        lost_target,
    })
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

/// The run's record of the search.
pub fn record<O>(searched: &Searched<O>, plan: &Plan) -> CapacityRecord {
    CapacityRecord {
        slo: plan.slo_text.clone(),
        start: searched.start,
        start_probed: searched.probed,
        precision: plan.precision,
        step_ns: plan.step.as_nanos() as u64,
        step_warmup_ns: plan.warmup.as_nanos() as u64,
        budget_ns: plan.budget.as_nanos() as u64,
        answer: if searched.interrupted {
            interrupted(searched.answer)
        } else {
            answer_record(searched.answer)
        },
        steps: searched.steps.iter().map(step_record).collect(),
        sweep: None,
    }
}

/// Makes `run` (the figures of [`Searched::figures`]'s step) the run of a
/// search: its primary metrics become diagnostics, which explain the
/// answer, and only a search that found its answer claims a capacity:
/// `max_sustainable_rate` (the highest pass) is then the headline, in
/// `unit`, with `first_failing_rate` (the lowest fail) as context; both
/// are labelled with the objective (`slo`), so that `compare` matches
/// capacities only at the same target.
///
/// Every other ending claims none. A search the budget (or a lost target)
/// ended keeps its highest pass as `max_passing_rate`, a lower bound,
/// as context (not compared), with a `search_unfinished` warning; one an
/// interrupt ended does the same with the `interrupted` warning. A
/// client-bound search has neither figure: what passed before the client
/// ran out measured the client as much as the server.
pub fn mark(run: &mut Run, searched: &CapacityRecord, unit: Unit) {
    let answer = &searched.answer;
    let labelled = |mut m: Metric| {
        m.labels.insert("slo".into(), searched.slo.clone());
        m
    };
    for m in &mut run.metrics {
        if m.role == Some(Role::Primary) {
            m.role = Some(Role::Diagnostic);
        }
    }
    // The step's own headline explains; it does not answer.
    run.headline = None;
    let steps = searched.steps.len();
    match answer.outcome {
        CapacityOutcome::ClientBound | CapacityOutcome::NoneMeets => {}
        CapacityOutcome::Found => {
            if let Some(max) = answer.max_rate {
                run.metrics.insert(
                    0,
                    labelled(
                        Metric::new("max_sustainable_rate", unit, Direction::HigherIsBetter, max)
                            .primary(),
                    ),
                );
                run.headline = Some("max_sustainable_rate".into());
            }
        }
        CapacityOutcome::Unfinished | CapacityOutcome::Interrupted | CapacityOutcome::Unstable => {
            if let Some(max) = answer.max_rate {
                run.metrics.insert(
                    0,
                    labelled(
                        Metric::new("max_passing_rate", unit, Direction::HigherIsBetter, max)
                            .context(),
                    ),
                );
            }
            run.warnings.push(match answer.outcome {
                CapacityOutcome::Interrupted => CapacityWarning::Interrupted { steps }.into(),
                CapacityOutcome::Unstable => CapacityWarning::Unstable {
                    cause: answer.cause.clone().unwrap_or_default(),
                }
                .into(),
                _ => CapacityWarning::Unfinished { steps }.into(),
            });
        }
    }
    if let Some(above) = answer.above_rate
        && answer.outcome != CapacityOutcome::ClientBound
    {
        run.metrics.push(labelled(
            Metric::new("first_failing_rate", unit, Direction::HigherIsBetter, above).context(),
        ));
    }
}

/// What makes a search's run claim no capacity, as its warnings say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CapacityWarning {
    /// An interrupt ended the search after `steps` steps.
    Interrupted { steps: usize },
    /// The budget (or the target going away) ended it after `steps`.
    Unfinished { steps: usize },
    /// Repeated steps disagreed; `cause` is [`search::Cause::code`]'s.
    Unstable { cause: String },
}

impl dyno_model::Judgement for CapacityWarning {
    fn code(&self) -> &'static str {
        match self {
            CapacityWarning::Interrupted { .. } => "interrupted",
            CapacityWarning::Unfinished { .. } => "search_unfinished",
            CapacityWarning::Unstable { .. } => "search_unstable",
        }
    }
}

impl std::fmt::Display for CapacityWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let steps = |n: usize| format!("{n} step{}", if n == 1 { "" } else { "s" });
        match self {
            CapacityWarning::Interrupted { steps: n } => write!(
                f,
                "the search was stopped by an interrupt (Ctrl-C, SIGTERM or SIGHUP) after {}: no capacity is claimed, and its steps are kept as diagnostics; run it to its end for an answer",
                steps(*n)
            ),
            CapacityWarning::Unfinished { steps: n } => write!(
                f,
                "the search ended after {} before its bracket was confirmed: its highest pass is a lower bound (max_passing_rate), not a capacity; give a longer --budget or a --start nearer the answer",
                steps(*n)
            ),
            CapacityWarning::Unstable { cause } => write!(
                f,
                "repeated steps kept disagreeing, so no capacity is claimed: {}",
                match cause.as_str() {
                    "machine_busy" =>
                        "other work took the client's CPU during them (the machine was busy); stop it, or run the client on a machine of its own",
                    _ =>
                        "nothing changed on the client's side, so the target's capacity moved during the search (other load on it, caches, a neighbour); search again when it holds still",
                }
            ),
        }
    }
}

/// The reasons' codes ([`search::Why::code`]), for the record.
pub fn failed_on(why: &[search::Why]) -> Vec<String> {
    why.iter().map(|w| w.code().to_owned()).collect()
}

/// The answer of a search an interrupt ended: what it had seen, under
/// [`CapacityOutcome::Interrupted`], which claims no capacity.
pub fn interrupted(answer: Answer) -> CapacityAnswer {
    let seen = answer_record(answer);
    CapacityAnswer {
        outcome: CapacityOutcome::Interrupted,
        client_bound_at: None,
        ..seen
    }
}

/// The record of a search's answer.
pub fn answer_record(answer: Answer) -> CapacityAnswer {
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
        Answer::Unstable { max, above, cause } => CapacityAnswer {
            outcome: CapacityOutcome::Unstable,
            max_rate: max,
            above_rate: above,
            cause: Some(cause.code().to_owned()),
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

fn step_record<O>(ran: &Ran<O>) -> CapacityStep {
    let o = &ran.step.observation;
    let ns = |p: f64| o.percentile(p).map_or(0, |d| d.as_nanos() as u64);
    CapacityStep {
        purpose: ran.step.purpose.name().to_owned(),
        connections: None,
        requested: o.requested,
        achieved: o.achieved,
        p50_ns: ns(50.0),
        p99_ns: ns(99.0),
        p999_ns: ns(99.9),
        requests: o.requests,
        errors: o.errors,
        sends: o.sends,
        late: o.late,
        send_lag_p99_ns: ran.extra.send_lag_p99_ns,
        client_cpu_percent: ran.extra.client_cpu_percent,
        client_wait_percent: ran.extra.client_wait_percent,
        server_cpu_percent: None,
        target_cpu_percent: None,
        passed: ran.step.passed(),
        why: ran.step.why.iter().map(search::Why::describe).collect(),
        failed_on: failed_on(&ran.step.why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            slo: "p99<=100ms".parse().unwrap(),
            slo_text: "p99<=100ms".into(),
            start: None,
            precision: 0.05,
            step: Duration::from_secs(2),
            warmup: Duration::from_millis(500),
            budget: Duration::from_secs(60),
        }
    }

    #[test]
    fn the_budget_and_the_step_set_the_steps_and_the_floor() {
        let p = plan();
        assert_eq!(p.max_steps(), 24);
        // 10 requests in a 2 s step: no lower than 5/s.
        assert_eq!(p.search(100.0).settings().floor, 5.0);
        assert_eq!(p.search(100_000.0).settings().floor, 100_000.0 / 1024.0);
        assert_eq!(p.late_after(), Duration::from_millis(25));
        let mut tight = plan();
        tight.slo = "p99<=4ms".parse().unwrap();
        assert_eq!(tight.late_after(), LATE_AFTER);
    }

    #[test]
    fn a_client_that_waited_a_quarter_of_what_it_wanted_was_starved() {
        // Figures of a 2000 req/s client on this project's VM.
        assert!(!starved(15.0, 0.5), "quiet: scheduling noise");
        assert!(starved(15.0, 8.0), "beside a compile");
        assert!(starved(9.0, 14.0), "beside two CPU hogs");
        // A light client is starved by the share, not the time.
        assert!(starved(2.0, 1.5));
        assert!(!starved(60.0, 5.0));
    }

    #[test]
    fn lags_past_the_threshold_are_late() {
        let mut lag = Histogram::<u64>::new(3).unwrap();
        for ns in [100_000, 900_000, 2_000_000, 6_000_000, 50_000_000] {
            lag.record(ns).unwrap();
        }
        assert_eq!(late(&lag, Duration::from_millis(1)), 3);
        assert_eq!(late(&lag, Duration::from_millis(5)), 2);
    }

    fn observation(rate: f64, p99_ms: u64) -> Observation {
        Observation {
            requested: rate,
            achieved: rate,
            latency: vec![(99.0, Duration::from_millis(p99_ms))],
            requests: 1000,
            errors: 0,
            sends: 1000,
            late: 0,
            rise: None,
            client_saturated: false,
            busy: false,
        }
    }

    #[test]
    fn the_loop_runs_what_the_search_asks_and_stops_where_told() {
        // A target that meets p99 <= 100 ms up to 400/s.
        let stop = AtomicBool::new(false);
        let mut asked = Vec::new();
        let searched = drive(
            &plan(),
            100.0,
            false,
            Duration::ZERO,
            &stop,
            |rate| {
                asked.push(rate);
                Ok::<_, ()>(Measured::Step {
                    observation: observation(rate, if rate <= 400.0 { 10 } else { 500 }),
                    outcome: rate,
                    extra: Extra::default(),
                })
            },
            |_| None,
            |_| {},
        )
        .unwrap();
        assert_eq!(
            searched.answer,
            Answer::Found {
                max: 400.0,
                above: 412.5
            }
        );
        assert_eq!(asked.len(), searched.steps.len());
        assert_eq!(searched.figures().unwrap().outcome, 400.0);
        let found = record(&searched, &plan());
        assert_eq!(found.answer.outcome, CapacityOutcome::Found);
        assert_eq!(found.steps.len(), asked.len());
        assert!(found.steps[0].passed);
        assert!(
            found
                .steps
                .iter()
                .any(|s| s.why == ["p99 500ms > 100ms"] && s.failed_on == ["latency"])
        );

        // Interrupted inside the third step: two steps, no answer yet.
        let mut n = 0;
        let searched = drive(
            &plan(),
            100.0,
            false,
            Duration::ZERO,
            &stop,
            |rate| {
                n += 1;
                Ok::<_, ()>(if n == 3 {
                    Measured::Interrupted
                } else {
                    Measured::Step {
                        observation: observation(rate, 10),
                        outcome: rate,
                        extra: Extra::default(),
                    }
                })
            },
            |_| None,
            |_| {},
        )
        .unwrap();
        assert!(searched.interrupted);
        assert_eq!(searched.steps.len(), 2);
        assert_eq!(
            searched.answer,
            Answer::Unfinished {
                max: Some(200.0),
                above: None
            }
        );
        // Its record says so, and its run claims no capacity: the highest
        // pass is context, and the warning says why.
        let kept = record(&searched, &plan());
        assert_eq!(kept.answer.outcome, CapacityOutcome::Interrupted);
        assert_eq!(kept.answer.max_rate, Some(200.0));
        let mut run = Run::new(dyno_model::Kind::Http, "x");
        mark(&mut run, &kept, Unit::RequestsPerSec);
        assert_eq!(run.headline, None);
        assert!(run.metrics.iter().all(|m| m.name != "max_sustainable_rate"));
        let passing = run.metrics.iter().find(|m| m.name == "max_passing_rate");
        assert_eq!(
            passing.map(|m| (m.value, m.role)),
            Some((200.0, Some(Role::Context)))
        );
        assert_eq!(
            run.warnings
                .iter()
                .map(|w| w.code.as_str())
                .collect::<Vec<_>>(),
            ["interrupted"]
        );

        // The target went away in the second step: that step measured no
        // server, and is neither judged nor kept.
        let searched = drive(
            &plan(),
            100.0,
            false,
            Duration::ZERO,
            &stop,
            |rate| {
                Ok::<_, ()>(Measured::Step {
                    observation: observation(rate, 10),
                    outcome: rate,
                    extra: Extra::default(),
                })
            },
            |rate| (*rate > 100.0).then(|| "gone".to_owned()),
            |_| {},
        )
        .unwrap();
        assert_eq!(searched.steps.len(), 1);
        assert_eq!(searched.steps[0].step.rate, 100.0);
        assert_eq!(searched.lost_target.as_deref(), Some("gone"));
        assert_eq!(
            searched.answer,
            Answer::Unfinished {
                max: Some(100.0),
                above: None
            }
        );
    }

    #[test]
    fn a_search_run_is_headed_by_its_capacity() {
        let mut run = Run::new(dyno_model::Kind::Http, "x");
        run.metrics.push(
            Metric::new(
                "requests_per_sec",
                Unit::RequestsPerSec,
                Direction::HigherIsBetter,
                400.0,
            )
            .primary(),
        );
        let searched = |answer| CapacityRecord {
            slo: "p99<=20ms".into(),
            answer: answer_record(answer),
            ..CapacityRecord::default()
        };
        mark(
            &mut run,
            &searched(Answer::Found {
                max: 400.0,
                above: 420.0,
            }),
            Unit::RequestsPerSec,
        );
        assert_eq!(run.headline.as_deref(), Some("max_sustainable_rate"));
        assert_eq!(run.metrics[0].name, "max_sustainable_rate");
        // Labelled with the target: compare matches only equal targets.
        assert_eq!(run.metrics[0].labels["slo"], "p99<=20ms");
        assert_eq!(run.metrics[2].labels["slo"], "p99<=20ms");
        assert_eq!(run.metrics[0].role, Some(Role::Primary));
        assert_eq!(run.metrics[1].role, Some(Role::Diagnostic));
        assert_eq!(run.metrics[2].name, "first_failing_rate");
        // A search the budget ended has a lower bound, not a capacity.
        let mut run = Run::new(dyno_model::Kind::Http, "x");
        mark(
            &mut run,
            &searched(Answer::Unfinished {
                max: Some(300.0),
                above: Some(400.0),
            }),
            Unit::FlowsPerSec,
        );
        assert_eq!(run.headline, None);
        assert_eq!(run.metrics[0].name, "max_passing_rate");
        assert_eq!(run.metrics[0].unit, Unit::FlowsPerSec);
        assert_eq!(run.metrics[0].role, Some(Role::Context));
        assert_eq!(run.warnings[0].code, "search_unfinished");
        // No pass, no capacity figure.
        let mut run = Run::new(dyno_model::Kind::Http, "x");
        mark(
            &mut run,
            &searched(Answer::NoneMeets { lowest: 5.0 }),
            Unit::RequestsPerSec,
        );
        assert!(run.metrics.is_empty());
        assert_eq!(run.headline, None);
        // Client-bound: no capacity claimed, even with a pass before.
        let mut run = Run::new(dyno_model::Kind::Http, "x");
        mark(
            &mut run,
            &searched(Answer::ClientBound {
                at: 380.0,
                max: Some(200.0),
            }),
            Unit::RequestsPerSec,
        );
        assert!(run.metrics.is_empty());
        assert_eq!(run.headline, None);
    }
}

#[cfg(test)]
mod split_tests {
    use super::*;

    /// The other processes of a split step, as the store would give them:
    /// their parts, or a barrier that fails.
    struct Others {
        parts: Vec<Part>,
        barrier: Result<(), String>,
        reported: Vec<Part>,
    }

    impl Together for Others {
        fn count(&self) -> u32 {
            self.parts.len() as u32 + 1
        }
        fn start(&mut self, _label: &str) -> Result<SystemTime, String> {
            self.barrier.clone().map(|()| SystemTime::now())
        }
        fn exchange(&mut self, _label: &str, mine: &Part) -> Result<Vec<Part>, String> {
            self.reported.push(mine.clone());
            let mut all = vec![mine.clone()];
            all.extend(self.parts.iter().cloned());
            Ok(all)
        }
    }

    fn shard(requests: u64) -> Shard {
        let mut latency = dyno_stats::hdr::latency_histogram();
        for _ in 0..requests {
            latency.record(1_000_000).unwrap();
        }
        Shard {
            requests,
            errors: 0,
            sends: requests,
            late: 0,
            elapsed: Duration::from_secs(1),
            latency,
            lag: dyno_stats::hdr::latency_histogram(),
            seconds: Vec::new(),
            client_cpu_percent: 10.0,
            client_wait_percent: 0.0,
        }
    }

    fn split(others: &mut Others, mine: Ended<u64>) -> Measured<u64> {
        let slo: Slo = "p99<=10ms".parse().unwrap();
        step(
            Some(others),
            "1",
            &slo,
            Some(100.0),
            |o: &u64| (*o == 0).then(|| "refused".to_owned()),
            |gate| {
                assert!(gate.is_some(), "a split step starts at the group's time");
                Ok::<_, ()>(mine)
            },
        )
        .unwrap()
    }

    #[test]
    fn a_split_step_is_judged_on_every_part_or_ends_for_all() {
        let measured = |n| Ended::Measured {
            outcome: n,
            shard: shard(n),
        };
        let mut others = Others {
            parts: vec![Part::Measured(shard(60))],
            barrier: Ok(()),
            reported: Vec::new(),
        };
        let Measured::Step {
            observation,
            outcome,
            ..
        } = split(&mut others, measured(40))
        else {
            panic!("measured")
        };
        assert_eq!((observation.requests, outcome), (100, 40));
        assert!((observation.achieved - 100.0).abs() < 1e-9);
        // Another's interrupt ends the step everywhere.
        others.parts = vec![Part::Interrupted];
        assert!(matches!(
            split(&mut others, measured(40)),
            Measured::Interrupted
        ));
        // Another lost its target: the step is lost, naming it.
        others.parts = vec![Part::Lost("reset".into())];
        assert!(
            matches!(split(&mut others, measured(40)), Measured::Lost(w) if w == "segment 1/2: reset")
        );
        // This one's target refused it: the others hear it as a loss.
        others.parts = vec![Part::Measured(shard(60))];
        assert!(
            matches!(split(&mut others, measured(0)), Measured::Lost(w) if w == "segment 0/2: refused")
        );
        assert_eq!(others.reported.last(), Some(&Part::Lost("refused".into())));
        // A group that cannot meet runs nothing.
        others.barrier = Err("segment 1/2 did not arrive".into());
        let before = others.reported.len();
        assert!(
            matches!(split(&mut others, measured(40)), Measured::Lost(w) if w.contains("did not arrive"))
        );
        assert_eq!(others.reported.len(), before);
    }
}
