//! Capacity search: the highest rate a target sustains while it meets an
//! objective ([`Slo`]). A pure state machine, with no clock and no I/O: the
//! caller asks [`Search::next_step`] for a rate, runs a step of load at it, and
//! hands back what it measured with [`Search::observe`]; the search says
//! whether the step passed and why not, and picks the next rate.
//!
//! The rates climb by doubling from the start until one fails (or fall by
//! halving until one passes), then bisect the bracket until its width is
//! within the precision. The last pass and the first fail are each run once
//! more before the answer: a pass that fails again (or a fail that passes)
//! moves the bracket and the bisection goes on. A step in which the client
//! itself was saturated ends the search, since from then on it measures the
//! client rather than the server.
//!
//! The search knows when it cannot judge. A step that failed while the
//! machine was busy (other work took the client's CPU) or that ended no
//! request at all is run once more; one whose verdict contradicts an
//! earlier run at its rate is run again, up to [`MAX_RUNS_PER_RATE`]
//! times in all. The majority of a rate's runs is its verdict. When the runs of
//! [`MAX_MIXED_RATES`] rates still disagree, the search stops: the answer
//! is [`Answer::Unstable`], the bracket it can defend (rates whose every
//! run agreed) and the likely cause, never a figure a repeat would not
//! give.

use std::time::Duration;

use dyno_model::names::capacity as code;

use crate::slo::Slo;
use crate::trend::Rise;

pub use crate::judge::MIN_ACHIEVED;
use dyno_model::units;

/// The most late or dropped sends a passing step may have, as a share of
/// its sends: more means the client's schedule did not hold.
pub const MAX_LATE: f64 = 0.001;

/// However small a step, this many late sends never fail it alone: a
/// replay of a short log (a few hundred sends) failed on one scheduler
/// hiccup of a loaded machine, where a step of thousands takes a few in
/// its 0.1%.
pub const LATE_SENDS_FORGIVEN: u64 = 2;

/// How much latency must rise within a step, besides significantly, to
/// fail it: by a quarter of where it started and by 2% of the tightest
/// latency limit (a rise from 100 µs to 130 µs under a 20 ms target is
/// noise, not a queue; from 2 ms to 100 ms under 1 s is a queue).
pub const RISE_SHARE: f64 = 0.25;
pub const RISE_OF_LIMIT: f64 = 0.02;

/// The most runs of one rate: a failing step on a busy machine, or a
/// verdict that contradicts an earlier one, is run again up to this many
/// times in all, and the majority decides.
pub const MAX_RUNS_PER_RATE: usize = 3;

/// Rates whose runs disagree (after their repeats) before the search
/// calls itself unstable: one is a rate at the edge of the capacity; two
/// are a capacity that moved, or a machine that would not hold still.
pub const MAX_MIXED_RATES: usize = 2;

/// How the search runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The first rate tried, per second.
    pub start: f64,
    /// The bracket's relative width at which the search stops (0.05: 5%).
    pub precision: f64,
    /// The most steps the budget allows, confirmations included.
    pub max_steps: usize,
    /// Below this rate the search stops halving: no rate meets the target.
    pub floor: f64,
}

/// What one step measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// The rate asked for, per second.
    pub requested: f64,
    /// The rate of measured requests that ended (answered or failed).
    pub achieved: f64,
    /// Corrected latency percentiles: at least those the objective names.
    pub latency: Vec<(f64, Duration)>,
    /// Measured requests that ended, errors included.
    pub requests: u64,
    pub errors: u64,
    /// Sends that were due in the measured window.
    pub sends: u64,
    /// Of those, sent late or never sent.
    pub late: u64,
    /// A significant rise of latency within the step, if there was one.
    pub rise: Option<Rise>,
    /// The client used nearly all of its CPU, or wanted it: what it ran
    /// and what it waited to run, added.
    pub client_saturated: bool,
    /// The machine was busy with other work: the client waited for a CPU
    /// for a large share of what it wanted ([`crate::capacity::starved`]).
    pub busy: bool,
}

impl Observation {
    /// The measured value of percentile `p`, if it was measured.
    pub fn percentile(&self, p: f64) -> Option<Duration> {
        self.latency
            .iter()
            .find(|(q, _)| (q - p).abs() < 1e-9)
            .map(|(_, d)| *d)
    }

    pub fn error_share(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.errors as f64 / self.requests as f64
        }
    }

    /// The share of the requests due in the step that ended in it: against
    /// the sends really due, not the nominal rate, so that Poisson
    /// arrivals (whose count in a window varies by about its square root)
    /// are not taken for a server that fell behind. Without a count of
    /// sends, the achieved rate over the requested one.
    pub fn achieved_share(&self) -> f64 {
        if self.sends > 0 {
            self.requests as f64 / self.sends as f64
        } else if self.requested > 0.0 {
            self.achieved / self.requested
        } else {
            1.0
        }
    }

    pub fn late_share(&self) -> f64 {
        if self.sends == 0 {
            0.0
        } else {
            self.late as f64 / self.sends as f64
        }
    }
}

/// Why a step failed.
#[derive(Debug, Clone, PartialEq)]
pub enum Why {
    /// The percentile over its limit; `measured` is `None` when nothing
    /// was answered to measure it by (it cannot be called met).
    Latency {
        percentile: f64,
        measured: Option<Duration>,
        limit: Duration,
    },
    Errors {
        share: f64,
        limit: f64,
    },
    /// Less than [`MIN_ACHIEVED`] of the requests due in the step ended
    /// in it (`share` of them did).
    Rate {
        share: f64,
    },
    /// More than [`MAX_LATE`] of the sends were late or dropped; `alone`:
    /// nothing else failed the step, so the server kept up and the sends
    /// waited on the client (busy connections, most often).
    Late {
        share: f64,
        alone: bool,
    },
    /// Latency rose within the step: a queue was growing.
    Rising {
        from: Duration,
        to: Duration,
    },
    /// No measured request ended at all.
    NoRequests,
    /// The client was saturated: the step measured the client.
    ClientBound,
}

impl Why {
    /// A stable code for the reason, as the record keeps it
    /// (`CapacityStep::failed_on`).
    pub fn code(&self) -> &'static str {
        match self {
            Why::Latency { .. } => code::WHY_LATENCY,
            Why::Errors { .. } => code::WHY_ERRORS,
            Why::Rate { .. } => code::WHY_RATE,
            Why::Late { .. } => code::WHY_LATE,
            Why::Rising { .. } => code::WHY_RISING,
            Why::NoRequests => code::WHY_NO_REQUESTS,
            Why::ClientBound => code::WHY_CLIENT,
        }
    }

    /// A short phrase for the step table.
    pub fn describe(&self) -> String {
        use crate::slo::percentile_name;
        match self {
            Why::Latency {
                percentile,
                measured: Some(measured),
                limit,
            } => format!(
                "{} {} > {}",
                percentile_name(*percentile),
                units::duration_flag(*measured),
                units::duration_flag(*limit)
            ),
            Why::Latency {
                percentile,
                measured: None,
                ..
            } => format!(
                "{} not measured: nothing answered",
                percentile_name(*percentile)
            ),
            Why::Errors { share, limit } => {
                format!("errors {:.2}% > {:.2}%", share * 100.0, limit * 100.0)
            }
            Why::Rate { share } => format!("achieved {:.1}% of the rate", share * 100.0),
            Why::Late { share, alone: true } => format!(
                "{:.2}% of sends late (every connection busy? add -c)",
                share * 100.0
            ),
            Why::Late { share, .. } => format!("{:.2}% of sends late", share * 100.0),
            Why::Rising { from, to } => format!(
                "latency rising ({} → {})",
                units::duration_flag(*from),
                units::duration_flag(*to)
            ),
            Why::NoRequests => "no request ended".to_owned(),
            Why::ClientBound => "client saturated".to_owned(),
        }
    }
}

/// Judges one step against the objective and the search's own rules.
pub fn judge(slo: &Slo, obs: &Observation) -> Vec<Why> {
    let mut why = Vec::new();
    if obs.client_saturated {
        why.push(Why::ClientBound);
    }
    if obs.requests == 0 {
        why.push(Why::NoRequests);
        return why;
    }
    for target in &slo.latency {
        match obs.percentile(target.percentile) {
            Some(measured) if target.met_by(measured) => {}
            measured => why.push(Why::Latency {
                percentile: target.percentile,
                measured,
                limit: target.limit,
            }),
        }
    }
    if let Some((limit, strict)) = slo.errors {
        let share = obs.error_share();
        let over = if strict {
            share >= limit && obs.errors > 0
        } else {
            share > limit
        };
        if over {
            why.push(Why::Errors { share, limit });
        }
    }
    let share = obs.achieved_share();
    if share < MIN_ACHIEVED {
        why.push(Why::Rate { share });
    }
    if obs.late_share() > MAX_LATE && obs.late > LATE_SENDS_FORGIVEN {
        why.push(Why::Late {
            share: obs.late_share(),
            alone: false,
        });
    }
    if let Some(rise) = obs.rise {
        let grew = rise.to - rise.from;
        let floor = slo
            .tightest()
            .map_or(0.0, |limit| RISE_OF_LIMIT * limit.as_secs_f64());
        if grew > RISE_SHARE * rise.from.max(0.0) && grew > floor {
            why.push(Why::Rising {
                from: Duration::from_secs_f64(rise.from.max(0.0)),
                to: Duration::from_secs_f64(rise.to.max(0.0)),
            });
        }
    }
    if let [Why::Late { alone, .. }] = &mut why[..] {
        *alone = true;
    }
    why
}

/// Why a step was run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Doubling or halving to find a pass and a fail.
    Bracket,
    /// Halving the bracket.
    Bisect,
    /// The last pass, run again.
    ConfirmPass,
    /// The first fail, run again.
    ConfirmFail,
    /// A step run again: it failed on a busy machine, ended nothing, or
    /// contradicted an earlier run at its rate.
    Repeat,
    /// A closed-model level of a sweep of connections ([`crate::sweep`]).
    Sweep,
}

impl Purpose {
    pub fn name(self) -> &'static str {
        match self {
            Purpose::Bracket => "bracket",
            Purpose::Bisect => "bisect",
            Purpose::ConfirmPass => "confirm pass",
            Purpose::ConfirmFail => "confirm fail",
            Purpose::Repeat => "repeat",
            Purpose::Sweep => "sweep",
        }
    }
}

/// One step of the search: its rate, why it ran, what it measured and the
/// verdict (empty `why`: it passed).
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub rate: f64,
    pub purpose: Purpose,
    pub observation: Observation,
    pub why: Vec<Why>,
}

impl Step {
    pub fn passed(&self) -> bool {
        self.why.is_empty()
    }
}

/// What the search found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Answer {
    /// `max` passed (twice), `above` failed (twice), and they are within
    /// the precision of each other.
    Found { max: f64, above: f64 },
    /// The budget (or an interrupt) ended the search before it was done:
    /// the highest pass and the lowest fail so far, either possibly
    /// missing, neither confirmed unless the search got that far.
    Unfinished {
        max: Option<f64>,
        above: Option<f64>,
    },
    /// Every rate tried failed, down to the floor.
    NoneMeets { lowest: f64 },
    /// The client saturated at about `at` per second (the step's achieved
    /// rate); `max` is the highest pass before, if any. No claim is made
    /// about the server.
    ClientBound { at: f64, max: Option<f64> },
    /// Repeated steps kept disagreeing: the bracket the search can defend
    /// (the highest rate whose every run passed, the lowest whose every run
    /// failed), and why it could not judge. No capacity is claimed.
    Unstable {
        max: Option<f64>,
        above: Option<f64>,
        cause: Cause,
    },
}

/// Why a search could not judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// Other work took the client's CPU during the disagreeing steps.
    MachineBusy,
    /// Nothing on the client's side changed: the target's own capacity
    /// moved during the search (other load on it, a cache, a neighbour).
    CapacityMoved,
}

impl Cause {
    /// The stable code the record keeps.
    pub fn code(self) -> &'static str {
        match self {
            Cause::MachineBusy => code::CAUSE_MACHINE_BUSY,
            Cause::CapacityMoved => code::CAUSE_CAPACITY_MOVED,
        }
    }
}

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    Run { rate: f64, purpose: Purpose },
    Done(Answer),
}

/// The search's state.
#[derive(Debug, Clone)]
pub struct Search {
    settings: Settings,
    slo: Slo,
    steps: Vec<Step>,
    pending: Option<(f64, Purpose)>,
    /// Highest rate that passed (and was not contradicted since).
    pass: Option<f64>,
    /// Lowest rate that failed (and was not contradicted since).
    fail: Option<f64>,
    pass_confirmed: bool,
    fail_confirmed: bool,
    client_bound: Option<f64>,
    /// A rate to run again, and the purpose of the run it repeats.
    repeat: Option<(f64, Purpose)>,
    /// Rates whose runs disagreed, once decided by their majority.
    mixed: Vec<f64>,
    /// Set once [`MAX_MIXED_RATES`] rates disagreed.
    unstable: Option<Cause>,
}

impl Search {
    pub fn new(settings: Settings, slo: Slo) -> Search {
        Search {
            settings,
            slo,
            steps: Vec::new(),
            pending: None,
            pass: None,
            fail: None,
            pass_confirmed: false,
            fail_confirmed: false,
            client_bound: None,
            repeat: None,
            mixed: Vec::new(),
            unstable: None,
        }
    }

    pub fn slo(&self) -> &Slo {
        &self.slo
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The next step to run, or the answer. Asking again before
    /// [`Search::observe`] gives the same step.
    pub fn next_step(&mut self) -> Next {
        if let Some((rate, purpose)) = self.pending {
            return Next::Run { rate, purpose };
        }
        if let Some(at) = self.client_bound {
            return Next::Done(Answer::ClientBound { at, max: self.pass });
        }
        if self.unstable.is_some() {
            return Next::Done(self.answer());
        }
        if let Some((rate, _)) = self.repeat {
            if self.steps.len() >= self.settings.max_steps {
                return Next::Done(self.answer());
            }
            self.pending = Some((rate, Purpose::Repeat));
            return Next::Run {
                rate,
                purpose: Purpose::Repeat,
            };
        }
        let (rate, purpose) = match (self.pass, self.fail) {
            (None, None) => (self.settings.start, Purpose::Bracket),
            (Some(pass), None) => (pass * 2.0, Purpose::Bracket),
            (None, Some(fail)) => {
                if fail <= self.settings.floor {
                    return Next::Done(Answer::NoneMeets { lowest: fail });
                }
                ((fail / 2.0).max(self.settings.floor), Purpose::Bracket)
            }
            (Some(pass), Some(fail)) => {
                if fail / pass - 1.0 > self.settings.precision {
                    (midpoint(pass, fail), Purpose::Bisect)
                } else if !self.pass_confirmed {
                    (pass, Purpose::ConfirmPass)
                } else if !self.fail_confirmed {
                    (fail, Purpose::ConfirmFail)
                } else {
                    return Next::Done(Answer::Found {
                        max: pass,
                        above: fail,
                    });
                }
            }
        };
        if self.steps.len() >= self.settings.max_steps {
            return Next::Done(self.answer());
        }
        self.pending = Some((rate, purpose));
        Next::Run { rate, purpose }
    }

    /// What the step asked for by [`Search::next_step`] measured; returns the
    /// step as judged. Panics if no step was asked for.
    pub fn observe(&mut self, observation: Observation) -> &Step {
        let (rate, purpose) = self
            .pending
            .take()
            .expect("observe follows a step from next_step()");
        let why = judge(&self.slo, &observation);
        let passed = why.is_empty();
        if why.contains(&Why::ClientBound) {
            self.client_bound = Some(observation.achieved);
        }
        // A repeat stands in for the run it repeats.
        let asked = purpose;
        let purpose = match (purpose, self.repeat.take()) {
            (Purpose::Repeat, Some((_, repeated))) => repeated,
            (purpose, _) => purpose,
        };
        let measured_before = self.steps.iter().any(|s| s.observation.requests > 0);
        let suspect =
            !passed && (observation.busy || (observation.requests == 0 && measured_before));
        self.steps.push(Step {
            rate,
            purpose: asked,
            observation,
            why,
        });
        let (passes, fails) = self.tally(rate);
        let mixed = passes > 0 && fails > 0;
        let runs = passes + fails;
        // A contradiction gets up to three runs, for a majority; a failure
        // on a busy machine one more, whose agreement settles it.
        let more = (mixed && runs < MAX_RUNS_PER_RATE) || (suspect && runs < 2);
        if more && self.client_bound.is_none() {
            self.repeat = Some((rate, purpose));
            return self.steps.last().expect("just pushed");
        }
        // Decided: by the majority of the rate's runs (a tie fails it: a
        // rate that fails half the time is not sustainable).
        let passed = if mixed { passes > fails } else { passed };
        if mixed && !self.mixed.contains(&rate) {
            self.mixed.push(rate);
            if self.mixed.len() >= MAX_MIXED_RATES {
                self.unstable = Some(self.cause());
            }
        }
        self.apply(rate, purpose, passed);
        self.steps.last().expect("just pushed")
    }

    /// How many runs at `rate` passed and failed.
    fn tally(&self, rate: f64) -> (usize, usize) {
        let runs = self.steps.iter().filter(|s| s.rate == rate);
        runs.fold(
            (0, 0),
            |(p, f), s| {
                if s.passed() { (p + 1, f) } else { (p, f + 1) }
            },
        )
    }

    /// Why the search cannot judge: a busy machine if any run of the rates
    /// that disagreed ran on one, else the target's capacity moving.
    fn cause(&self) -> Cause {
        let busy = self
            .steps
            .iter()
            .any(|s| self.mixed.contains(&s.rate) && s.observation.busy);
        if busy {
            Cause::MachineBusy
        } else {
            Cause::CapacityMoved
        }
    }

    /// Moves the bracket by a decided verdict at `rate`.
    fn apply(&mut self, rate: f64, purpose: Purpose, passed: bool) {
        match (purpose, passed) {
            (Purpose::ConfirmPass, true) => self.pass_confirmed = true,
            (Purpose::ConfirmFail, false) => self.fail_confirmed = true,
            (Purpose::ConfirmPass, false) => {
                // The pass was luck: this rate fails; the highest pass below
                // it, if any, is the new lower end, to be confirmed too.
                self.fail = Some(rate);
                self.fail_confirmed = false;
                self.pass = self.highest_pass_below(rate);
                self.pass_confirmed = false;
            }
            (Purpose::ConfirmFail, true) => {
                self.pass = Some(rate);
                self.pass_confirmed = false;
                self.fail = self.lowest_fail_above(rate);
                self.fail_confirmed = false;
            }
            (_, true) => {
                if self.pass.is_none_or(|p| rate > p) {
                    self.pass = Some(rate);
                    self.pass_confirmed = false;
                }
            }
            (_, false) => {
                if self.fail.is_none_or(|f| rate < f) {
                    self.fail = Some(rate);
                    self.fail_confirmed = false;
                }
            }
        }
    }

    /// The answer as it stands: what [`Search::next_step`] would end with, or
    /// [`Answer::Unfinished`] when it has more to run (an interrupt or the
    /// budget ends it).
    pub fn answer(&self) -> Answer {
        if let Some(at) = self.client_bound {
            return Answer::ClientBound { at, max: self.pass };
        }
        if let Some(cause) = self.unstable {
            // What every run agreed on, and nothing above a rate that
            // failed every time.
            let above = self.consistent(|_| true, false).min_by(f64::total_cmp);
            let max = self
                .consistent(|r| above.is_none_or(|a| r < a), true)
                .max_by(f64::total_cmp);
            return Answer::Unstable { max, above, cause };
        }
        match (self.pass, self.fail) {
            (Some(max), Some(above))
                if self.pass_confirmed
                    && self.fail_confirmed
                    && above / max - 1.0 <= self.settings.precision =>
            {
                Answer::Found { max, above }
            }
            (None, Some(fail)) if fail <= self.settings.floor => Answer::NoneMeets { lowest: fail },
            (max, above) => Answer::Unfinished { max, above },
        }
    }

    /// The highest rate below `rate` whose every run passed.
    fn highest_pass_below(&self, rate: f64) -> Option<f64> {
        self.consistent(|r| r < rate, true).max_by(f64::total_cmp)
    }

    /// The lowest rate above `rate` whose every run failed.
    fn lowest_fail_above(&self, rate: f64) -> Option<f64> {
        self.consistent(|r| r > rate, false).min_by(f64::total_cmp)
    }

    /// Rates in range whose every run had the verdict `passed`.
    fn consistent<'a>(
        &'a self,
        in_range: impl Fn(f64) -> bool + 'a,
        passed: bool,
    ) -> impl Iterator<Item = f64> + 'a {
        self.steps
            .iter()
            .map(|s| s.rate)
            .filter(move |&r| in_range(r))
            .filter(move |&r| {
                self.steps
                    .iter()
                    .filter(|s| s.rate == r)
                    .all(|s| s.passed() == passed)
            })
    }
}

/// The middle of a bracket, rounded to four significant figures when that
/// keeps it strictly inside (so the table reads 42,150 rather than
/// 42,148.4375).
fn midpoint(low: f64, high: f64) -> f64 {
    let mid = (low + high) / 2.0;
    let scale = 10f64.powi(mid.abs().log10().floor() as i32 - 3);
    let rounded = (mid / scale).round() * scale;
    if rounded > low && rounded < high {
        rounded
    } else {
        mid
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            start: 100.0,
            precision: 0.05,
            max_steps: 60,
            floor: 1.0,
        }
    }

    fn slo(s: &str) -> Slo {
        s.parse().unwrap()
    }

    /// Runs the search to its end with `observe` standing in for the
    /// target.
    fn search(
        settings: Settings,
        slo: Slo,
        mut observe: impl FnMut(f64) -> Observation,
    ) -> (Answer, Vec<Step>) {
        let mut search = Search::new(settings, slo);
        loop {
            match search.next_step() {
                Next::Run { rate, .. } => {
                    let obs = observe(rate);
                    search.observe(obs);
                }
                Next::Done(answer) => return (answer, search.steps().to_vec()),
            }
        }
    }

    /// A clean step at `rate` with the given p99 (and p50 a tenth of it).
    fn clean(rate: f64, p99: Duration) -> Observation {
        Observation {
            requested: rate,
            achieved: rate,
            latency: vec![(50.0, p99 / 10), (99.0, p99)],
            requests: (rate * 10.0) as u64,
            errors: 0,
            sends: (rate * 10.0) as u64,
            late: 0,
            rise: None,
            client_saturated: false,
            busy: false,
        }
    }

    /// An M/M/1 queue's exact p99 of the time in system: ln(100)/(μ - λ).
    fn mm1_exact(mu: f64) -> impl FnMut(f64) -> Observation {
        move |rate| {
            if rate >= mu {
                let mut o = clean(rate, Duration::from_secs(60));
                o.achieved = mu;
                o
            } else {
                clean(rate, Duration::from_secs_f64(100f64.ln() / (mu - rate)))
            }
        }
    }

    /// [`mm1_exact`] at μ = 1000/s, except that the first step at `at` goes
    /// wrong as `spoil` makes it; the steps after it there do not.
    fn mm1_spoiled_once(
        at: f64,
        spoil: impl Fn(&mut Observation),
    ) -> impl FnMut(f64) -> Observation {
        let mut target = mm1_exact(1000.0);
        let mut once = true;
        move |rate| {
            let mut o = target(rate);
            if rate == at && once {
                once = false;
                spoil(&mut o);
            }
            o
        }
    }

    /// Whether some step failed for a reason `why` matches.
    fn failed_for(steps: &[Step], why: impl Fn(&Why) -> bool) -> bool {
        steps.iter().any(|s| s.why.iter().any(&why))
    }

    fn bracket(answer: Answer) -> (f64, f64) {
        match answer {
            Answer::Found { max, above } => (max, above),
            other => panic!("no bracket: {other:?}"),
        }
    }

    #[test]
    fn a_step_that_answered_nothing_fails_its_latency_as_not_measured() {
        // Every request failed: no latency to hold against the objective.
        let mut failed = clean(100.0, Duration::ZERO);
        failed.latency.clear();
        failed.errors = failed.requests;
        let why = judge(&slo("p99<=20ms,errors<=1%"), &failed);
        let said: Vec<String> = why.iter().map(Why::describe).collect();
        assert_eq!(
            said,
            [
                "p99 not measured: nothing answered",
                "errors 100.00% > 1.00%"
            ]
        );
    }

    #[test]
    fn finds_the_exact_m_m_1_capacity_within_the_precision() {
        let (mu, target) = (1000.0, 0.020);
        let expected = mu - 100f64.ln() / target;
        let (answer, steps) = search(settings(), slo("p99<=20ms"), mm1_exact(mu));
        let (max, above) = bracket(answer);
        assert!(
            max <= expected && expected < above,
            "{max} {expected} {above}"
        );
        assert!(above / max - 1.0 <= 0.05);
        // Bracketing doubled from the start, and both ends were confirmed.
        assert_eq!(steps[0].rate, 100.0);
        assert_eq!(steps[1].rate, 200.0);
        assert_eq!(steps[0].purpose, Purpose::Bracket);
        let purposes: Vec<Purpose> = steps.iter().map(|s| s.purpose).collect();
        assert!(purposes.ends_with(&[Purpose::ConfirmPass, Purpose::ConfirmFail]));
    }

    /// Simulates a seeded M/M/1 queue (Lindley's recursion) for `seconds`
    /// at `rate`, as dyno's open model sees it: arrivals on schedule,
    /// latency from each arrival, per-second medians for the trend.
    fn mm1_simulated(mu: f64, seconds: f64, seed: u64) -> impl FnMut(f64) -> Observation {
        let mut rng = fastrand::Rng::with_seed(seed);
        move |rate| {
            let exp = |rng: &mut fastrand::Rng, mean: f64| -mean * (1.0 - rng.f64()).ln();
            let n = (rate * seconds) as usize;
            let (mut t, mut wait) = (0.0, 0.0f64);
            let mut latency = Vec::with_capacity(n);
            let mut seconds_of: Vec<Vec<f64>> = vec![Vec::new(); seconds as usize + 1];
            let mut last_done = 0.0f64;
            for _ in 0..n {
                let service = exp(&mut rng, 1.0 / mu);
                let sojourn = wait + service;
                latency.push(sojourn);
                last_done = last_done.max(t + sojourn);
                seconds_of[(t as usize).min(seconds as usize)].push(sojourn);
                let gap = exp(&mut rng, 1.0 / rate);
                wait = (wait + service - gap).max(0.0);
                t += gap;
            }
            // Requests still queued past the step's end do not end in it.
            let ended = latency
                .iter()
                .enumerate()
                .filter(|(i, l)| (*i as f64 / rate) + **l <= seconds)
                .count();
            latency.sort_by(f64::total_cmp);
            let p =
                |q: f64| Duration::from_secs_f64(latency[((q / 100.0) * (n - 1) as f64) as usize]);
            let medians: Vec<f64> = seconds_of
                .iter_mut()
                .filter(|s| !s.is_empty())
                .map(|s| {
                    s.sort_by(f64::total_cmp);
                    s[s.len() / 2]
                })
                .collect();
            Observation {
                requested: rate,
                achieved: ended as f64 / seconds,
                latency: vec![(50.0, p(50.0)), (99.0, p(99.0))],
                requests: ended as u64,
                errors: 0,
                sends: n as u64,
                late: 0,
                rise: crate::trend::rising(&medians),
                client_saturated: false,
                busy: false,
            }
        }
    }

    #[test]
    fn finds_a_simulated_m_m_1_capacity() {
        let (mu, target) = (1000.0, 0.020);
        let expected = mu - 100f64.ln() / target;
        let (answer, _) = search(settings(), slo("p99<=20ms"), mm1_simulated(mu, 600.0, 42));
        let (max, above) = bracket(answer);
        assert!(
            max <= expected && expected < above,
            "{max} {expected} {above}"
        );
        assert!(above / max - 1.0 <= 0.05);
    }

    /// A D/D/1 queue with service time `s`: latency `s` up to 1/s, and a
    /// queue growing without end above it.
    fn dd1(service: f64, seconds: usize) -> impl FnMut(f64) -> Observation {
        move |rate| {
            let capacity = 1.0 / service;
            if rate <= capacity {
                let mut o = clean(rate, Duration::from_secs_f64(service));
                o.latency[0].1 = Duration::from_secs_f64(service);
                return o;
            }
            // Request i arrives at i/rate and leaves at (i+1)·s.
            let n = (rate * seconds as f64) as usize;
            let lat = |i: usize| (i + 1) as f64 * service - i as f64 / rate;
            let per_second: Vec<f64> = (0..seconds)
                .map(|sec| lat(((sec as f64 + 0.5) * rate) as usize))
                .collect();
            let ended = ((seconds as f64 / service) as usize).min(n);
            Observation {
                requested: rate,
                achieved: ended as f64 / seconds as f64,
                latency: vec![
                    (50.0, Duration::from_secs_f64(lat(ended / 2))),
                    (99.0, Duration::from_secs_f64(lat(ended * 99 / 100))),
                ],
                requests: ended as u64,
                errors: 0,
                sends: n as u64,
                late: 0,
                rise: crate::trend::rising(&per_second),
                client_saturated: false,
                busy: false,
            }
        }
    }

    #[test]
    fn a_d_d_1_queue_gives_one_over_its_service_time() {
        // 2 ms per request: 500 per second. A loose latency target, so only
        // the growing queue (and the rate) can fail a step.
        let (answer, steps) = search(settings(), slo("p99<=1s"), dd1(0.002, 10));
        let (max, above) = bracket(answer);
        assert!(max <= 500.0 && 500.0 < above, "{max} {above}");
        assert!(above / max - 1.0 <= 0.05);
        // Just above capacity the rate holds within 1% and p99 within the
        // target: only the rise fails the step.
        let just_above = dd1(0.002, 10)(505.0);
        assert!(just_above.achieved >= MIN_ACHIEVED * 505.0);
        assert!(matches!(
            judge(&slo("p99<=1s"), &just_above)[..],
            [Why::Rising { .. }]
        ));
        assert!(failed_for(&steps, |w| matches!(w, Why::Rising { .. })));
    }

    #[test]
    fn a_start_above_capacity_halves_down_to_a_pass() {
        let mut s = settings();
        s.start = 100_000.0;
        let (answer, steps) = search(s, slo("p99<=20ms"), mm1_exact(1000.0));
        let (max, above) = bracket(answer);
        assert!(max <= 769.75 && 769.75 < above);
        assert_eq!(steps[1].rate, 50_000.0);
        assert!(steps.iter().take_while(|s| !s.passed()).count() >= 7);
    }

    #[test]
    fn a_target_no_rate_meets_says_so_with_the_lowest_rate_tried() {
        let s = Settings {
            floor: 10.0,
            ..settings()
        };
        let (answer, steps) = search(s, slo("p99<=1ms"), |rate| {
            clean(rate, Duration::from_millis(5))
        });
        assert_eq!(answer, Answer::NoneMeets { lowest: 10.0 });
        let rates: Vec<f64> = steps.iter().map(|s| s.rate).collect();
        assert_eq!(rates, [100.0, 50.0, 25.0, 12.5, 10.0]);
    }

    #[test]
    fn errors_above_their_limit_fail_a_step() {
        // A server that answers 503 to a share of requests above 300/s.
        let (answer, steps) = search(settings(), slo("errors<=0.1%"), |rate| {
            let mut o = clean(rate, Duration::from_millis(1));
            if rate > 300.0 {
                o.errors = o.requests / 10;
            }
            o
        });
        let (max, above) = bracket(answer);
        assert!(max <= 300.0 && 300.0 < above);
        assert!(failed_for(&steps, |w| matches!(w, Why::Errors { .. })));
    }

    #[test]
    fn a_saturated_client_ends_the_search_without_a_server_claim() {
        let (answer, steps) = search(settings(), slo("p99<=20ms"), |rate| {
            let mut o = clean(rate, Duration::from_millis(1));
            if rate >= 800.0 {
                o.client_saturated = true;
                o.achieved = 750.0;
            }
            o
        });
        assert_eq!(
            answer,
            Answer::ClientBound {
                at: 750.0,
                max: Some(400.0)
            }
        );
        assert_eq!(steps.len(), 4);
    }

    #[test]
    fn the_budget_ends_the_search_with_what_it_has() {
        let mut s = settings();
        s.max_steps = 5;
        let (answer, steps) = search(s, slo("p99<=20ms"), mm1_exact(1000.0));
        assert_eq!(steps.len(), 5);
        assert_eq!(
            answer,
            Answer::Unfinished {
                max: Some(600.0),
                above: Some(800.0)
            }
        );
    }

    #[test]
    fn a_pass_that_fails_on_confirmation_moves_the_bracket_down() {
        // Above 740/s a rate passes on its first run only (luck); the search
        // must not answer with one of those rates.
        let mut runs: Vec<f64> = Vec::new();
        let mut target = mm1_exact(1000.0);
        let (answer, steps) = search(settings(), slo("p99<=20ms"), |rate| {
            let mut o = target(rate);
            if rate > 740.0 && runs.contains(&rate) {
                o.latency[1].1 = Duration::from_millis(25);
            }
            runs.push(rate);
            o
        });
        let (max, above) = bracket(answer);
        assert!(max <= 740.0, "{max} {above}");
        assert!(above / max - 1.0 <= 0.05);
        let again = steps
            .iter()
            .filter(|s| s.purpose == Purpose::ConfirmPass && !s.passed())
            .count();
        assert!(again >= 1, "{steps:?}");
    }

    #[test]
    fn late_sends_short_rates_and_rises_fail_a_step() {
        let slo = slo("p99<=20ms");
        let mut o = clean(1000.0, Duration::from_millis(1));
        assert!(judge(&slo, &o).is_empty());
        o.late = o.sends / 100;
        assert!(matches!(judge(&slo, &o)[..], [Why::Late { .. }]));
        o.late = 0;
        o.requests = o.sends * 98 / 100;
        assert!(matches!(judge(&slo, &o)[..], [Why::Rate { .. }]));
        o.requests = o.sends;
        o.rise = Some(Rise {
            from: 0.001,
            to: 0.005,
            z: 3.0,
        });
        assert!(matches!(judge(&slo, &o)[..], [Why::Rising { .. }]));
        // A rise that is small against the target does not fail it.
        o.rise = Some(Rise {
            from: 0.0001,
            to: 0.0002,
            z: 3.0,
        });
        assert!(judge(&slo, &o).is_empty());
        o.requests = 0;
        assert_eq!(judge(&slo, &o), [Why::NoRequests]);
    }

    #[test]
    fn a_step_that_failed_on_a_busy_machine_is_run_again_and_its_repeat_counts() {
        // An M/M/1 target; the first run at 400/s fails while other work
        // takes the client's CPU. The repeat passes, so the rate passes
        // (two of three), and the answer is the target's.
        let target = mm1_spoiled_once(400.0, |o| {
            o.busy = true;
            o.latency[1].1 = Duration::from_millis(40);
        });
        let (answer, steps) = search(settings(), slo("p99<=20ms"), target);
        let (max, above) = bracket(answer);
        assert!(max <= 769.75 && 769.75 < above, "{max} {above}");
        let at_400: Vec<Purpose> = steps
            .iter()
            .filter(|s| s.rate == 400.0)
            .map(|s| s.purpose)
            .collect();
        // The busy failure, its repeat (a pass: a contradiction), and the
        // third run that settles it.
        assert_eq!(at_400, [Purpose::Bracket, Purpose::Repeat, Purpose::Repeat]);
    }

    #[test]
    fn a_step_that_ended_nothing_between_steps_that_did_is_run_again() {
        let target = mm1_spoiled_once(200.0, |o| {
            o.requests = 0;
            o.achieved = 0.0;
        });
        let (answer, steps) = search(settings(), slo("p99<=20ms"), target);
        bracket(answer);
        assert_eq!(steps[1].why, [Why::NoRequests]);
        assert_eq!(steps[2].purpose, Purpose::Repeat);
        assert!(steps[2].passed());
    }

    #[test]
    fn verdicts_that_keep_disagreeing_end_the_search_unstable_with_the_cause() {
        // From 600/s to 900/s the target's capacity will not hold still:
        // each rate there passes on its first run only, so every
        // confirmation contradicts its step, and its repeat too.
        let flaky = |busy: bool| {
            let mut target = mm1_exact(1000.0);
            let mut runs: Vec<f64> = Vec::new();
            move |rate: f64| {
                let mut o = target(rate);
                if (600.0..900.0).contains(&rate) {
                    runs.push(rate);
                    let pass = runs.iter().filter(|&&r| r == rate).count() == 1;
                    o.latency[1].1 = Duration::from_millis(if pass { 10 } else { 40 });
                    o.busy = busy;
                }
                o
            }
        };
        let (answer, steps) = search(settings(), slo("p99<=20ms"), flaky(false));
        let Answer::Unstable { max, above, cause } = answer else {
            panic!("{answer:?}");
        };
        assert_eq!(cause, Cause::CapacityMoved);
        // The bracket it can defend: rates every run agreed on.
        assert_eq!(max, Some(800.0), "{steps:?}");
        assert!(above.is_none_or(|a| a >= 900.0), "{above:?}");
        assert!(steps.iter().any(|s| s.purpose == Purpose::Repeat));
        // The same disagreement on a busy machine names the machine.
        let (answer, _) = search(settings(), slo("p99<=20ms"), flaky(true));
        assert!(
            matches!(
                answer,
                Answer::Unstable {
                    cause: Cause::MachineBusy,
                    ..
                }
            ),
            "{answer:?}"
        );
    }

    #[test]
    fn bisection_midpoints_read_well() {
        assert_eq!(midpoint(40_000.0, 44_300.0), 42_150.0);
        assert_eq!(midpoint(750.0, 800.0), 775.0);
        // Too narrow to round: the exact middle.
        assert_eq!(midpoint(1000.0, 1000.5), 1000.25);
    }
}
