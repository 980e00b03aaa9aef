//! What a run of `dyno db run` is asked to do: the protocol, when it
//! stops, the scripts by weight, and every setting of the load.

use std::time::Duration;

use dyno_load::plan::RatePlan;

use crate::script::Script;
use crate::target::Target;
use crate::txlog::LogSettings;

/// How statements go to the server (pgbench's `-M`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Text with the values in it, one round trip, parsed every time.
    Simple,
    /// Parse, bind and execute an unnamed statement in one round trip.
    Extended,
    /// Each statement parsed once per connection, then bound and executed.
    Prepared,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Simple => "simple",
            Protocol::Extended => "extended",
            Protocol::Prepared => "prepared",
        }
    }
}

/// When a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// No transaction starts after this long.
    Duration(Duration),
    /// Each client runs this many.
    Transactions(u64),
}

/// A script and its share of the transactions.
#[derive(Debug, Clone)]
pub struct Weighted {
    pub script: Script,
    pub weight: u32,
}

/// How long `db run` lets the transactions under way at its deadline
/// finish, as pgbench lets them (without a bound): they count as the run's
/// own, in its last second, and the tables hold exactly the transactions
/// reported. One still under way after this is cut, counted unfinished.
pub const FINISH_GRACE: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
pub struct RunSettings {
    pub target: Target,
    pub scripts: Vec<Weighted>,
    pub clients: usize,
    pub threads: usize,
    pub stop: Stop,
    pub protocol: Protocol,
    /// The scale the scripts see; `None`: counted from pgbench_branches.
    pub scale: Option<i64>,
    /// Before the run, pgbench's clean-up: vacuum pgbench_branches and
    /// pgbench_tellers, truncate pgbench_history (those that exist);
    /// pgbench's `-n` turns it off.
    pub vacuum: bool,
    /// Tries of a transaction that meets a serialization failure or a
    /// deadlock (1: none retried; 0: no limit but the duration's or the
    /// latency limit's, as pgbench's `--max-tries 0`).
    pub max_tries: u32,
    pub seed: u64,
    /// `:default_seed`, the seed of `hash()` and `permute()` when a call
    /// leaves it out ([`crate::script::default_seed`] of the seed and the
    /// whole run's clients).
    pub default_seed: i64,
    /// Open model: transactions per second in total (pgbench's `-R`).
    pub rate: Option<f64>,
    /// `--rate-plan`: the open model's rate changes by stages and ramps;
    /// `rate` is then the plan's mean rate, `stop` its length, and each
    /// stage gets its own figures. The whole run's plan: a segment runs
    /// [`RunSettings::share`] of its rates, and its stages are the whole
    /// plan's, so that the segments' stages merge.
    pub plan: Option<RatePlan>,
    /// This process's share of the whole run's rates (`--segment`): its
    /// clients over the whole run's, as pgbench shares a rate out over its
    /// threads; 1 for a whole run. `rate` is already shared out.
    pub share: f64,
    /// Time at the start whose transactions run but are not measured
    /// (with a duration only: the run is then the warm-up plus `stop`'s
    /// duration; the open model's schedule covers both).
    pub warmup: Duration,
    /// A duration run: how long transactions under way at the deadline
    /// are waited for before they are cut
    /// (`dyno_load::pool::Settings::grace`): [`FINISH_GRACE`] for `db
    /// run`, a capacity step's latency limit in a search.
    pub grace: Duration,
    /// Transactions slower than this are counted as late; in the open
    /// model, one already this late when its turn comes is skipped.
    pub latency_limit: Option<Duration>,
    /// Time every command of the scripts (pgbench's `-r`).
    pub per_statement: bool,
    /// A new connection for every transaction (pgbench's `--connect`).
    pub reconnect: bool,
    /// Send each run of consecutive SQL commands at once and read the
    /// answers after: one round trip for the run instead of one each.
    pub pipeline: bool,
    /// pgbench's `--exit-on-abort`: the first client that stops on an
    /// error stops the run (the others end where they are; what was
    /// measured is kept).
    pub exit_on_abort: bool,
    /// pgbench's `-l`: each thread logs its transactions (or intervals)
    /// in pgbench's format.
    pub log: Option<LogSettings>,
    /// How often the progress callback is called.
    pub progress_every: Duration,
    /// The part of a run split over several processes that this one runs
    /// (`--segment I/N`): `clients`, `threads` and `rate` are already this
    /// segment's share; its client k is the whole run's client I + N·k
    /// (`:client_id`), so the segments' clients never share an id.
    pub segment: dyno_model::Segment,
}
