//! Scenarios: multi-step user flows, with values carried from one answer
//! into the next request (`dyno http --scenario FILE`).
//!
//! Data flow: [`Scenario::load`] reads a TOML file (`file`), checks every
//! name, pattern and template against what the flow defines before the
//! step that uses it, and compiles each step once: its request is encoded
//! whole when nothing in it varies, else into literal pieces and slots
//! (`template`). On the hot path a virtual user (one connection of the
//! engine) picks a flow by weight, fills each step's slots from its own
//! variables, sends it through the engine's exchange, and — only for the
//! steps that ask for it — keeps the answer's bytes to check and extract
//! from (`answer`). No scripting runtime: a step is data.
//!
//! What a run measures per step and per flow is in [`Figures`], merged
//! from the threads like the run's [`crate::Stats`].

mod answer;
mod figures;
mod file;
pub(crate) mod template;

use std::path::PathBuf;
use std::time::Duration;

pub use answer::{Answer, CookieJar};
pub use figures::{Figures, FlowFigures, StepStats};
pub use file::ScenarioError;
use template::Text;

use crate::request::Target;
use crate::status::StatusSet;

/// A scenario, compiled for its target.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The file it was read from.
    pub path: PathBuf,
    /// The server every step goes to: the file's `base`, or the URL given
    /// on the command line.
    pub target: Target,
    /// The URL as the run shows it: the server's origin.
    pub url: String,
    /// Steps made once, before the load, by the first virtual user; not
    /// measured. A failing one calls the run off.
    pub setup: Vec<Step>,
    pub flows: Vec<Flow>,
    /// Keep each virtual user's cookies (`Set-Cookie`) and send them back.
    pub cookies: bool,
    /// `data`: one row per virtual user, its columns as variables.
    pub data: Option<Data>,
    /// The variables' names; a step's slots index this list.
    pub variables: Vec<String>,
    /// The sum of the flows' weights.
    pub total_weight: u64,
}

/// A named flow: steps made in order by one virtual user.
#[derive(Debug, Clone)]
pub struct Flow {
    pub name: String,
    /// How often it is picked, against the other flows' weights.
    pub weight: u64,
    pub steps: Vec<Step>,
}

/// One request of a flow, compiled.
#[derive(Debug, Clone)]
pub struct Step {
    pub name: String,
    /// Its URL as written in the file.
    pub url: String,
    /// Its number among all the scenario's steps (flows in order), which
    /// indexes the per-step figures; `None` for a setup step, which has
    /// none.
    pub index: Option<usize>,
    pub method: String,
    pub(crate) request: Text,
    /// The statuses that pass; `None`: the run's `--expect-status`.
    pub statuses: Option<StatusSet>,
    /// The body must contain this text (which may hold variables).
    pub(crate) contains: Option<Vec<template::Piece>>,
    pub extract: Vec<Extract>,
    /// The pause after the step, before the next one.
    pub think: Think,
}

impl Step {
    /// Whether the answer's bytes must be kept: something looks into it.
    pub fn reads_answer(&self) -> bool {
        self.contains.is_some() || !self.extract.is_empty()
    }

    /// True for `HEAD`, whose answer has no body.
    pub fn is_head(&self) -> bool {
        self.method == "HEAD"
    }
}

/// A value taken from an answer into a variable.
#[derive(Debug, Clone)]
pub struct Extract {
    pub from: Source,
    /// The variable it goes into (an index of [`Scenario::variables`]).
    pub slot: usize,
}

/// Where in the answer a value is found.
#[derive(Debug, Clone)]
pub enum Source {
    /// A JSON pointer (RFC 6901) into the body: a string's text, or a
    /// number's or boolean's as written.
    Json(String),
    /// The first capture group of a regular expression on the body (the
    /// whole match when it has none).
    Regex(regex::bytes::Regex),
    /// A response header's value (the first, by name, any case).
    Header(String),
}

/// The pause after a step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Think {
    None,
    Fixed(Duration),
    /// Uniformly drawn from `[low, high]`.
    Uniform(Duration, Duration),
    /// Exponentially distributed with this mean (a Poisson user).
    Exponential(Duration),
}

impl Think {
    /// The pause to make now.
    pub fn draw(self, rng: &mut fastrand::Rng) -> Duration {
        match self {
            Think::None => Duration::ZERO,
            Think::Fixed(d) => d,
            Think::Uniform(low, high) => {
                let span = (high - low).as_nanos() as u64;
                low + Duration::from_nanos(rng.u64(0..=span))
            }
            Think::Exponential(mean) => {
                // 1 - f64() is in (0, 1]: its logarithm is finite.
                let u = 1.0 - rng.f64();
                mean.mul_f64(-u.ln())
            }
        }
    }
}

/// A CSV file's rows, one per virtual user.
#[derive(Debug, Clone)]
pub struct Data {
    pub path: PathBuf,
    /// The slots its columns fill, in the file's column order.
    pub slots: Vec<usize>,
    pub rows: Vec<Vec<Box<[u8]>>>,
    /// The line of the file each row starts on.
    pub lines: Vec<u64>,
}

/// The most one step's (or flow's) figures take on a thread: its
/// latency histogram (two significant figures, up to an hour) and counts.
pub const FIGURES_BYTES: u64 = 64 << 10;

impl Scenario {
    /// Every step of the flows, in index order.
    pub fn steps(&self) -> impl Iterator<Item = (&Flow, &Step)> {
        self.flows
            .iter()
            .flat_map(|f| f.steps.iter().map(move |s| (f, s)))
    }

    /// Number of steps over all flows.
    pub fn step_count(&self) -> usize {
        self.flows.iter().map(|f| f.steps.len()).sum()
    }

    /// The flow a draw in `0..total_weight` picks.
    pub fn pick(&self, mut draw: u64) -> usize {
        for (i, flow) in self.flows.iter().enumerate() {
            if draw < flow.weight {
                return i;
            }
            draw -= flow.weight;
        }
        self.flows.len() - 1
    }

    /// Checks that the figures of every step and flow, kept on each of
    /// `threads` threads and once merged, fit in half of `available`
    /// bytes of memory (the machine's free memory, if known).
    pub fn check_figures(&self, threads: usize, available: Option<u64>) -> Result<(), String> {
        let places = (self.steps().count() + self.flows.len()) as u64;
        let need = places * (threads as u64 + 1) * FIGURES_BYTES;
        match available {
            Some(free) if need > free / 2 => Err(format!(
                "the scenario's {} steps and flows keep their figures on each of {threads} threads, up to {} MiB, more than half of the {} MiB this machine has free: give fewer threads (-t), or split the scenario into several files",
                places,
                need >> 20,
                free >> 20
            )),
            _ => Ok(()),
        }
    }

    /// Checks that the data file has a row for each of `users` virtual users.
    pub fn check_users(&self, users: u64, segmented: bool) -> Result<(), String> {
        if let Some(data) = &self.data
            && (data.rows.len() as u64) < users
        {
            let rows = format!(
                "'{}' has {} data row{}",
                data.path.display(),
                data.rows.len(),
                if data.rows.len() == 1 { "" } else { "s" },
            );
            // A segment's users are numbered in the whole run, every
            // N-th one its own.
            return Err(if segmented {
                format!(
                    "{rows}, and this segment's last virtual user is number {users} of the whole run: give a row per virtual user of the whole run (-c), or fewer connections"
                )
            } else {
                format!(
                    "{rows} and the run has {users} virtual users (-c): give a row per virtual user, or fewer connections"
                )
            });
        }
        Ok(())
    }
}
