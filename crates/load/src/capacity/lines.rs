//! A search's progress on stderr: the line that opens it and one line per
//! step as it ends.

use dyno_model::units::{duration_flag, short_rate};

use super::{Axis, Level, Plan, Ran};
use crate::search::Purpose;

impl Plan {
    /// The line that opens the search: `searching for the highest rate
    /// that meets p99<=20ms (5s steps, budget 2m)`; `what` is the
    /// engine's word for its concurrency (`connections`, `clients`).
    pub fn announcement(&self, what: &str) -> String {
        let searching = match self.axis {
            Axis::Rate { .. } => "searching for the highest rate".to_owned(),
            Axis::Speed { start, .. } => format!(
                "searching for the highest multiple of the recorded traffic (from {}×)",
                short_rate(start)
            ),
            Axis::Concurrency { from, to } => format!(
                "sweeping {from}..{to} {what} (closed model, doubling) for the highest throughput"
            ),
        };
        let steps = if self.step.is_zero() {
            "each step the log's window once".to_owned()
        } else {
            format!("{} steps", duration_flag(self.step))
        };
        format!(
            "{searching} that meets {} ({steps}, budget {})",
            self.slo,
            duration_flag(self.budget)
        )
    }
}

impl<O> Ran<O> {
    /// The line of the `n`th finished step: `step 3 (bisect) 41200 req/s:
    /// achieved 41198, p99 18ms: pass`, or in a sweep `step 3: 4
    /// connections, 41.2k req/s, p99 18ms: pass`.
    pub fn line(&self, n: usize, unit: &str, what: &str) -> String {
        let o = &self.observation;
        let p99 = o
            .percentile(99.0)
            .map_or_else(|| "–".to_owned(), duration_flag);
        let verdict = if self.passed() {
            "pass".to_owned()
        } else {
            let why: Vec<String> = self.why.iter().map(|w| w.describe()).collect();
            format!("fail ({})", why.join("; "))
        };
        let achieved = short_rate(o.achieved);
        let level = match self.level {
            Level::Concurrency(c) => {
                let again = if self.purpose == Purpose::Repeat {
                    " (repeat)"
                } else {
                    ""
                };
                format!("{again}: {c} {}, {achieved} {unit}", counted(c, what))
            }
            Level::Rate(rate) => format!(
                " ({}) {} {unit}: achieved {achieved}",
                self.purpose.name(),
                short_rate(rate),
            ),
            Level::Speed(speed) => format!(
                " ({}) {}× the log: achieved {achieved} {unit}",
                self.purpose.name(),
                short_rate(speed),
            ),
            Level::Probe => format!(" (probe): {achieved} {unit}"),
        };
        format!("step {n}{level}, p99 {p99}: {verdict}")
    }
}

/// `what` (a plural) for `n` of them: `1 connection`, `4 connections`.
pub fn counted(n: u32, what: &str) -> &str {
    if n == 1 {
        what.strip_suffix('s').unwrap_or(what)
    } else {
        what
    }
}
