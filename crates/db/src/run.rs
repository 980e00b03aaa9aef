//! `dyno db run`: pgbench's closed-model load. `-c` clients, each on its
//! own connection, spread over `-j` threads; each thread drives its clients
//! on a single-threaded tokio runtime (the connections' I/O included), so
//! a thread's CPU time is everything its clients cost. Every client runs a
//! script chosen by weight, one transaction after another, until the
//! duration ends or it has run its count; each transaction's latency goes
//! into an HDR histogram, failures are counted by SQLSTATE, and a
//! serialization failure or deadlock is retried up to `max_tries` times
//! with the same random draws, as pgbench does.
//!
//! With a rate (`-R`), the model is open, as pgbench's: each thread draws
//! due times for its share of the rate, and a client that is free takes
//! the next one and waits for it; latency counts from the due time, so a
//! server that stalls cannot hide its stall behind clients that wait for
//! it, and the schedule lag (due time to real start) is the client's own
//! share. The due times are a Poisson process's arrivals, as pgbench's are,
//! but with their number fixed: R × T of them over `-T` (each thread's
//! share placed as sorted uniform draws, which is a Poisson process given
//! its count), so the requested rate is the scheduled one exactly rather
//! than within ±1/√(RT).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant, SystemTime};

use dyno_load::plan::{PoissonArrivals, RatePlan};
use dyno_load::silence::{Lost, Silence};
use dyno_load::stages::StageFigures;
use dyno_load::{Timer, pool};
use dyno_model::{Direction, Merge, Metric, Unit};
use dyno_stats::hdr::{self, latency_histogram};
use hdrhistogram::Histogram;

use crate::script::{At, CommandKind, Expr, Predefined, Script, Sql, Store, Value};
use crate::target::{Target, TargetError};
use crate::txlog::{Columns, Ended, Entry, LogSettings, TxLog};
use crate::wire::{Wire, WireError};

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

/// What the server is, as the run records it.
#[derive(Debug, Clone, Default)]
pub struct Server {
    pub version: String,
    /// The settings that decide what a run measures.
    pub settings: Vec<(String, String)>,
}

/// The settings a run records beside its figures.
const SETTINGS: [&str; 5] = [
    "shared_buffers",
    "synchronous_commit",
    "max_connections",
    "fsync",
    "default_transaction_isolation",
];

/// The figures so far, for a progress line.
#[derive(Debug, Clone, Copy, Default)]
pub struct Progress {
    pub elapsed: Duration,
    pub transactions: u64,
    pub failed: u64,
    /// The latencies of the committed transactions, added up.
    pub latency_sum: Duration,
    /// The schedule lags of the transactions started, added up (open
    /// model).
    pub lag_sum: Duration,
    /// Transactions started so far (open model: those whose lag is in
    /// `lag_sum`).
    pub started: u64,
    pub skipped: u64,
}

#[derive(Debug, Clone)]
pub struct Outcome {
    /// Latency of each transaction that committed, in nanoseconds; in the
    /// open model from its due time.
    pub latency: Histogram<u64>,
    /// Spells in which the server ended no transaction while clients
    /// failed or waited (`target_lost`), from the end of the warm-up.
    pub lost: Vec<Lost>,
    /// Open model: latency from the real start.
    pub uncorrected: Histogram<u64>,
    /// Open model: from each due time to the real start.
    pub lag: Histogram<u64>,
    /// Open model: transactions skipped for being later than the latency
    /// limit before they started.
    pub skipped: u64,
    /// Open model: transactions due in the measured window that never
    /// started (every client was busy until the end).
    pub dropped: u64,
    /// Transactions under way when the run was cut at its deadline (or
    /// stopped): in no figure but this.
    pub unfinished: u64,
    /// `--rate-plan`: each stage's own figures (empty without a plan).
    pub stages: Vec<StageFigures>,
    /// Transactions that committed slower than the latency limit.
    pub late: u64,
    /// With `per_statement`: each script's commands' latencies.
    pub statements: Vec<Vec<Histogram<u64>>>,
    /// With `reconnect`: the connection time of each transaction.
    pub reconnects: Histogram<u64>,
    pub transactions: u64,
    /// Transactions given up, by SQLSTATE (after their retries).
    pub failed: BTreeMap<String, u64>,
    /// Retries, by the SQLSTATE that caused them.
    pub retries: BTreeMap<String, u64>,
    /// Transactions retried at least once (committed or failed in the
    /// end): pgbench's "number of transactions retried".
    pub retried: u64,
    /// Clients stopped by an error that is not retried, with the reason.
    pub aborted: Vec<String>,
    /// `-l`: the transaction logs written, and why any is incomplete.
    pub logs: Vec<PathBuf>,
    pub log_failures: Vec<String>,
    /// Committed transactions of each script, in the settings' order.
    pub per_script: Vec<u64>,
    /// With several scripts: each one's latency, in the settings' order.
    pub script_latency: Vec<Histogram<u64>>,
    /// Each second of the measured window: its commits and their latency
    /// (index 0 is the first second).
    pub timeline: Vec<Second>,
    /// What the clean-up before the run did (pgbench's vacuum), in words;
    /// empty when it was not asked for.
    pub vacuum: Vec<String>,
    /// From the moment every client was connected to the last one's end.
    pub elapsed: Duration,
    /// The time it took to connect every client.
    pub connect: Duration,
    /// CPU time of the client threads.
    pub cpu: Duration,
    /// How long the client threads waited, runnable, for a CPU: other
    /// work on the machine took it ([`dyno_load::pool::Pooled::cpu_wait`]).
    pub cpu_wait: Duration,
    pub scale: i64,
    pub server: Server,
    pub interrupted: bool,
    /// The wall-clock time the clients started (after connecting and the
    /// gate): what segments of one run compare to see they started together.
    pub started_at: SystemTime,
}

/// One second of a run's timeline.
#[derive(Debug, Clone)]
pub struct Second {
    /// Transactions that committed in it.
    pub transactions: u64,
    /// Their latencies (two significant figures: enough for a p99 over
    /// time, at an eighth of a full histogram's memory).
    pub latency: Histogram<u64>,
}

impl Second {
    fn new() -> Second {
        let mut latency = Histogram::new_with_bounds(1, hdr::MAX_LATENCY_NS, 2)
            .expect("constant bounds are valid");
        latency.auto(true);
        Second {
            transactions: 0,
            latency,
        }
    }
}

impl Default for Second {
    fn default() -> Second {
        Second::new()
    }
}

impl pool::Slice for Second {
    fn add(&mut self, other: &Second) {
        self.transactions += other.transactions;
        let _ = self.latency.add(&other.latency);
    }
}

impl Outcome {
    /// Transactions per second, the connections' time left out (pgbench's
    /// "without initial connection time").
    pub fn tps(&self) -> f64 {
        per_sec(self.transactions, self.elapsed)
    }

    /// Transactions per second, the connections' time counted in.
    pub fn tps_with_connections(&self) -> f64 {
        per_sec(self.transactions, self.elapsed + self.connect)
    }

    pub fn failed_total(&self) -> u64 {
        self.failed.values().sum()
    }
}

fn per_sec(n: u64, d: Duration) -> f64 {
    if d.is_zero() {
        0.0
    } else {
        n as f64 / d.as_secs_f64()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(
        "the pgbench tables are missing in {0} (pgbench_branches does not exist): run `dyno db init` (or `pgbench -i`) first, or run a script of your own (-f) that does not need them"
    )]
    NoTables(String),
    #[error("{0}")]
    Setup(String),
}

/// Runs the load; `stop` ends it early (what was measured is kept);
/// `progress` is called about once a second.
pub fn run(
    settings: &RunSettings,
    stop: Arc<AtomicBool>,
    progress: impl FnMut(Progress),
) -> Result<Outcome, RunError> {
    run_gated(settings, stop, progress, || Ok(None))
}

/// [`run`], with a gate between connecting every client and starting:
/// `gate` says when (`Ok(None)` at once, `Ok(Some(t))` when the wall clock
/// reads `t`, a segment's common start) or calls the run off (`Err(why)`,
/// returned as [`RunError::Setup`]).
///
/// The clients run on the shared worker pool (`dyno_load::pool`): it
/// holds the threads, the start gate and clock, the warm-up, the deadline
/// cut-off (a transaction under way at the end is cut and counted as
/// unfinished, as HTTP's requests are), the per-second timeline and the
/// progress counters.
pub fn run_gated(
    settings: &RunSettings,
    stop: Arc<AtomicBool>,
    mut progress: impl FnMut(Progress),
    gate: impl FnOnce() -> Result<Option<SystemTime>, String>,
) -> Result<Outcome, RunError> {
    let (server, scale, vacuum) = probe(settings)?;
    let threads = settings.threads.clamp(1, settings.clients.max(1));
    let pool = pool::Settings {
        threads,
        name: "dyno-db",
        warmup: settings.warmup,
        duration: match settings.stop {
            Stop::Duration(d) => Some(d),
            Stop::Transactions(_) => None,
        },
        grace: settings.grace,
        progress_every: settings.progress_every,
    };
    let control = pool::Control::new(stop);
    let job = Clients { settings, scale };
    let mut pooled = pool::run(
        &pool,
        &control,
        &job,
        |tick| progress(Progress::from_totals(tick.elapsed, &tick.totals)),
        gate,
    )
    .map_err(|failure| match failure {
        pool::Failure::Setup(e) => e,
        pool::Failure::Gate(why) => RunError::Setup(why),
        pool::Failure::Thread(_, e) => {
            RunError::Setup(format!("could not start a client thread: {e}"))
        }
        pool::Failure::Panicked => RunError::Setup("a client thread panicked".into()),
    })?;
    let mut total = Local::new(settings);
    let mut last = None;
    for local in &pooled.threads {
        last = last.max(local.last_done);
    }
    let elapsed = pooled.window(last);
    // A server that never ended a transaction and stopped every client
    // it met (a refused login, a reset) is no target lost: the clients'
    // aborts say what happened. One that never answered at all, its
    // clients waiting to the end, is.
    let judged = pooled
        .threads
        .iter()
        .any(|l| l.transactions > 0 || l.failed_total > 0 || l.aborted.is_empty());
    let lost = dyno_load::silence::lost(
        pooled
            .threads
            .iter_mut()
            .map(|l| std::mem::take(&mut l.silent))
            .filter(|_| judged)
            .collect(),
        pooled.clock.measure_from,
        pooled.clock.measure_from + elapsed,
    );
    for local in pooled.threads {
        total.add(local);
    }
    Ok(Outcome {
        lost,
        elapsed,
        latency: total.latency,
        uncorrected: total.uncorrected,
        lag: total.lag,
        skipped: total.skipped,
        dropped: total.dropped,
        unfinished: total.unfinished,
        stages: std::mem::take(&mut total.stages),
        late: total.late,
        statements: total.statements,
        reconnects: total.reconnects,
        transactions: total.transactions,
        failed: total.failed,
        retries: total.retries,
        retried: total.retried,
        aborted: total.aborted,
        logs: total.logs,
        log_failures: total.log_failures,
        per_script: total.per_script,
        script_latency: total.script_latency,
        timeline: pooled.timeline,
        vacuum,
        connect: pooled.setup,
        cpu: pooled.cpu,
        cpu_wait: pooled.cpu_wait,
        scale,
        server,
        interrupted: pooled.interrupted,
        started_at: pooled.started_at,
    })
}

/// One thread's share of the open model's schedule: this many due times,
/// following this plan of rates (one stage at `-R`'s rate, or
/// `--rate-plan`'s).
#[derive(Debug, Clone)]
struct Plan {
    count: u64,
    rates: RatePlan,
}

/// The schedule of the thread whose clients are `first..last`: its share
/// of the due times, by clients. Over `-T` (or a plan), the rate's
/// expected count in all, dealt out as the clients are; with `-t`, each
/// client's count, over the time the whole run takes at the rate.
fn plan(settings: &RunSettings, rate: f64, first: usize, last: usize) -> Plan {
    let clients = settings.clients.max(1) as u128;
    let rates = match (&settings.plan, settings.stop) {
        (Some(plan), _) => plan.scaled(settings.share),
        (None, Stop::Duration(d)) => RatePlan::hold(rate, d + settings.warmup),
        (None, Stop::Transactions(n)) => RatePlan::hold(
            rate,
            Duration::from_secs_f64(n as f64 * clients as f64 / rate),
        ),
    };
    let count = match (&settings.plan, settings.stop) {
        (None, Stop::Transactions(n)) => (last - first) as u64 * n,
        _ => {
            let total = rates.total().round() as u128;
            (total * last as u128 / clients - total * first as u128 / clients) as u64
        }
    };
    Plan { count, rates }
}

/// What each slot of a thread's progress counters holds.
mod slot {
    pub(super) const TRANSACTIONS: usize = 0;
    pub(super) const FAILED: usize = 1;
    pub(super) const LATENCY_NS: usize = 2;
    pub(super) const LAG_NS: usize = 3;
    pub(super) const STARTED: usize = 4;
    pub(super) const SKIPPED: usize = 5;
}

impl Progress {
    fn from_totals(elapsed: Duration, totals: &[u64; pool::SLOTS]) -> Progress {
        Progress {
            elapsed,
            transactions: totals[slot::TRANSACTIONS],
            failed: totals[slot::FAILED],
            latency_sum: Duration::from_nanos(totals[slot::LATENCY_NS]),
            lag_sum: Duration::from_nanos(totals[slot::LAG_NS]),
            started: totals[slot::STARTED],
            skipped: totals[slot::SKIPPED],
        }
    }
}

/// One client's or thread's figures.
struct Local {
    latency: Histogram<u64>,
    uncorrected: Histogram<u64>,
    lag: Histogram<u64>,
    skipped: u64,
    dropped: u64,
    /// Measured due times taken and waited for (open model).
    waiting: u64,
    late: u64,
    statements: Vec<Vec<Histogram<u64>>>,
    reconnects: Histogram<u64>,
    transactions: u64,
    failed: BTreeMap<String, u64>,
    retries: BTreeMap<String, u64>,
    retried: u64,
    aborted: Vec<String>,
    /// `-l`: this thread's log while the run lasts.
    log: Option<TxLog>,
    logs: Vec<PathBuf>,
    log_failures: Vec<String>,
    per_script: Vec<u64>,
    script_latency: Vec<Histogram<u64>>,
    /// Running totals for the progress line: failed transactions, the
    /// committed ones' latencies and the started ones' lags added up,
    /// transactions started.
    failed_total: u64,
    latency_sum_ns: u64,
    lag_sum_ns: u64,
    started: u64,
    /// Transactions under way: what is left of them when the run is cut
    /// at its deadline (or stopped) is unfinished.
    in_flight: u64,
    /// Transactions that ended after the deadline, and (once the thread is
    /// done) those cut while under way.
    unfinished: u64,
    /// When the last measured transaction ended.
    last_done: Option<Instant>,
    /// `--rate-plan`: each stage's own figures (empty without a plan).
    stages: Vec<StageFigures>,
    /// Spells with no transaction ended while clients failed or waited,
    /// and, once the thread is done, what they were.
    silence: Silence,
    silent: Vec<(Instant, Instant)>,
}

impl Local {
    fn new(settings: &RunSettings) -> Local {
        let statements = if settings.per_statement {
            settings
                .scripts
                .iter()
                .map(|w| {
                    w.script
                        .commands()
                        .iter()
                        .map(|_| latency_histogram())
                        .collect()
                })
                .collect()
        } else {
            Vec::new()
        };
        Local {
            latency: latency_histogram(),
            uncorrected: latency_histogram(),
            lag: latency_histogram(),
            skipped: 0,
            dropped: 0,
            waiting: 0,
            late: 0,
            statements,
            reconnects: latency_histogram(),
            transactions: 0,
            failed: BTreeMap::new(),
            retries: BTreeMap::new(),
            retried: 0,
            aborted: Vec::new(),
            log: None,
            logs: Vec::new(),
            log_failures: Vec::new(),
            per_script: vec![0; settings.scripts.len()],
            script_latency: if settings.scripts.len() > 1 {
                settings
                    .scripts
                    .iter()
                    .map(|_| latency_histogram())
                    .collect()
            } else {
                Vec::new()
            },
            failed_total: 0,
            latency_sum_ns: 0,
            lag_sum_ns: 0,
            started: 0,
            in_flight: 0,
            unfinished: 0,
            last_done: None,
            stages: StageFigures::for_plan(settings.plan.as_ref()),
            silence: Silence::default(),
            silent: Vec::new(),
        }
    }

    /// Publishes this thread's running totals for the progress line.
    fn publish(&self, counters: &pool::Counters) {
        counters.set(slot::TRANSACTIONS, self.transactions);
        counters.set(slot::FAILED, self.failed_total);
        counters.set(slot::LATENCY_NS, self.latency_sum_ns);
        counters.set(slot::LAG_NS, self.lag_sum_ns);
        counters.set(slot::STARTED, self.started);
        counters.set(slot::SKIPPED, self.skipped);
    }

    /// Adds another client's or thread's figures to these.
    fn add(&mut self, other: Local) {
        // Same bounds on both sides: adding cannot fail.
        let _ = self.latency.add(&other.latency);
        let _ = self.uncorrected.add(&other.uncorrected);
        let _ = self.lag.add(&other.lag);
        let _ = self.reconnects.add(&other.reconnects);
        for (mine, theirs) in self.statements.iter_mut().zip(&other.statements) {
            for (m, t) in mine.iter_mut().zip(theirs) {
                let _ = m.add(t);
            }
        }
        self.skipped += other.skipped;
        self.dropped += other.dropped;
        self.late += other.late;
        self.transactions += other.transactions;
        for (code, n) in other.failed {
            *self.failed.entry(code).or_default() += n;
        }
        for (code, n) in other.retries {
            *self.retries.entry(code).or_default() += n;
        }
        self.retried += other.retried;
        self.aborted.extend(other.aborted);
        self.logs.extend(other.logs);
        self.log_failures.extend(other.log_failures);
        for (sum, n) in self.per_script.iter_mut().zip(other.per_script) {
            *sum += n;
        }
        for (mine, theirs) in self.script_latency.iter_mut().zip(&other.script_latency) {
            let _ = mine.add(theirs);
        }
        self.failed_total += other.failed_total;
        self.latency_sum_ns += other.latency_sum_ns;
        self.lag_sum_ns += other.lag_sum_ns;
        self.started += other.started;
        self.in_flight += other.in_flight;
        self.unfinished += other.unfinished;
        self.last_done = self.last_done.max(other.last_done);
        dyno_load::stages::add_all(&mut self.stages, &other.stages);
    }
}

/// The server's version and settings, the scale, and what the clean-up
/// before the run did.
fn probe(settings: &RunSettings) -> Result<(Server, i64, Vec<String>), RunError> {
    let runtime = runtime()?;
    runtime.block_on(async {
        let client = settings.target.connect().await?;
        let setup = |e: tokio_postgres::Error| RunError::Setup(message(&e));
        let version: String = client
            .query_one("SHOW server_version", &[])
            .await
            .map_err(setup)?
            .get(0);
        let rows = client
            .query(
                "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY($1) ORDER BY name",
                &[&SETTINGS.as_slice()],
            )
            .await
            .map_err(setup)?;
        let server = Server {
            version,
            settings: rows.iter().map(|r| (r.get(0), r.get(1))).collect(),
        };
        let scale = match settings.scale {
            Some(s) => s,
            None => match client
                .query_one("SELECT count(*) FROM pgbench_branches", &[])
                .await
            {
                Ok(row) => row.get::<_, i64>(0),
                Err(e) if e.code().is_some_and(|c| c.code() == "42P01") => {
                    return Err(RunError::NoTables(settings.target.to_string()));
                }
                Err(e) => return Err(setup(e)),
            },
        };
        if scale < 1 {
            return Err(RunError::Setup(format!(
                "pgbench_branches has {scale} rows, so the scale would be {scale}: run `dyno db init` again"
            )));
        }
        // The segments of a run share one database: the first cleans up.
        let vacuum = if settings.vacuum && settings.segment.index == 0 {
            clean_up(&client).await?
        } else {
            Vec::new()
        };
        Ok((server, scale, vacuum))
    })
}

/// pgbench's clean-up before a run: `vacuum pgbench_branches`, `vacuum
/// pgbench_tellers`, `truncate pgbench_history`, each on a table that
/// exists (pgbench tries each one and reports the error of a missing
/// table; dyno says which were missing). What was done, in words.
async fn clean_up(client: &tokio_postgres::Client) -> Result<Vec<String>, RunError> {
    let setup = |e: tokio_postgres::Error| {
        RunError::Setup(format!(
            "the clean-up before the run failed: {} (-n / --no-vacuum skips it)",
            message(&e)
        ))
    };
    let mut done = Vec::new();
    let mut missing = Vec::new();
    for (table, statement) in [
        ("pgbench_branches", "VACUUM pgbench_branches"),
        ("pgbench_tellers", "VACUUM pgbench_tellers"),
        ("pgbench_history", "TRUNCATE pgbench_history"),
    ] {
        let exists: bool = client
            .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])
            .await
            .map_err(setup)?
            .get(0);
        if exists {
            client.batch_execute(statement).await.map_err(setup)?;
            done.push(statement.to_ascii_lowercase());
        } else {
            missing.push(table);
        }
    }
    if !missing.is_empty() {
        done.push(format!("{} missing", missing.join(", ")));
    }
    Ok(done)
}

fn runtime() -> Result<tokio::runtime::Runtime, RunError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Setup(format!("could not start a runtime: {e}")))
}

/// What a failed statement says, in the server's words when it has them.
fn message(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => {
            let source = std::error::Error::source(e).map(|s| format!(": {s}"));
            format!("{e}{}", source.unwrap_or_default())
        }
    }
}

/// The clients of a run, as the pool's job: each thread connects its
/// clients (in contiguous blocks, as pgbench deals them out) and runs them
/// on its event loop.
struct Clients<'a> {
    settings: &'a RunSettings,
    scale: i64,
}

/// A client's id, its connection and its prepared statements' names.
type Connected = (usize, Wire, Vec<Vec<String>>);

/// A thread's clients and what they measured.
struct ThreadState {
    /// Each client's id, connection and prepared statements, until the
    /// load takes them.
    connections: RefCell<Vec<Connected>>,
    /// The open model's schedule: its plan and timer until the clock
    /// starts, then the thread's due times.
    plan: Option<(Plan, Timer)>,
    schedule: RefCell<Option<Rc<Schedule>>>,
    local: Rc<RefCell<Local>>,
}

impl Clients<'_> {
    /// The ids of thread `index`'s clients.
    fn clients(&self, index: usize, threads: usize) -> std::ops::Range<usize> {
        let clients = self.settings.clients;
        clients * index / threads..clients * (index + 1) / threads
    }
}

impl pool::Job for Clients<'_> {
    type Slice = Second;
    type State = ThreadState;
    type Done = Local;
    type Error = RunError;

    async fn setup(&self, thread: &pool::Thread<Second>) -> Result<ThreadState, RunError> {
        let settings = self.settings;
        let clients = self.clients(thread.index, thread.threads);
        let mut connections = Vec::new();
        for id in clients.clone() {
            let mut wire = settings.target.connect_wire().await?;
            let prepared = prepare(&mut wire, settings)
                .await
                .map_err(RunError::Setup)?;
            connections.push((id, wire, prepared));
        }
        let plan = match settings.rate {
            Some(rate) => Some((
                plan(settings, rate, clients.start, clients.end),
                // The precise timer spawns its driver on the thread's
                // event loop.
                Timer::new().map_err(|e| {
                    RunError::Setup(format!("could not make the schedule's timer: {e}"))
                })?,
            )),
            None => None,
        };
        let mut local = Local::new(settings);
        if let Some(log) = &settings.log {
            let columns = Columns {
                lag: settings.rate.is_some(),
                retries: settings.max_tries != 1,
            };
            local.log = Some(
                TxLog::create(
                    log,
                    columns,
                    thread.index,
                    Instant::now(),
                    settings.seed ^ (thread.index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                )
                .map_err(RunError::Setup)?,
            );
        }
        Ok(ThreadState {
            connections: RefCell::new(connections),
            plan,
            schedule: RefCell::new(None),
            local: Rc::new(RefCell::new(local)),
        })
    }

    async fn load(&self, thread: &pool::Thread<Second>, state: &ThreadState) {
        let settings = self.settings;
        let clock = *thread.control.clock();
        let schedule = state.plan.as_ref().map(|(plan, timer)| {
            let first = self.clients(thread.index, thread.threads).start;
            let rng = fastrand::Rng::with_seed(
                settings.seed
                    ^ settings.segment.global(first as u64)
                    ^ u64::from(settings.segment.index).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
                    ^ 0x5EED,
            );
            Rc::new(Schedule {
                arrivals: RefCell::new(PoissonArrivals::new(
                    clock.start,
                    &plan.rates,
                    plan.count,
                    rng,
                )),
                timer: timer.clone(),
            })
        });
        state.schedule.replace(schedule.clone());
        if let Some(log) = state.local.borrow_mut().log.as_mut() {
            log.begin(clock.start);
        }
        let connections = state.connections.take();
        let runners = connections.into_iter().map(|(id, wire, prepared)| {
            let mut runner = Runner {
                settings,
                control: &thread.control,
                counters: thread.counters(),
                wire,
                prepared,
                deadline: clock.end,
                schedule: schedule.clone(),
                rng: fastrand::Rng::with_seed(
                    settings.seed
                        ^ settings
                            .segment
                            .global(id as u64)
                            .wrapping_mul(0x9E37_79B9_7F4A_7C15),
                ),
                vars: settings
                    .scripts
                    .iter()
                    .map(|w| {
                        w.script.initial_values(&Predefined {
                            scale: self.scale,
                            client_id: settings.segment.global(id as u64) as i64,
                            random_seed: settings.seed as i64,
                            default_seed: settings.default_seed,
                        })
                    })
                    .collect(),
                unset: settings.scripts.iter().map(|w| w.script.unset()).collect(),
                tx: 0,
                local: Rc::clone(&state.local),
                text: String::new(),
                id,
                clock,
                seconds: thread.seconds(),
            };
            async move { runner.run().await }
        });
        futures_util::future::join_all(runners).await;
    }

    fn finish(&self, thread: &pool::Thread<Second>, state: ThreadState) -> Local {
        let clock = *thread.control.clock();
        let mut local = Rc::try_unwrap(state.local)
            .ok()
            .expect("every client of the thread has ended")
            .into_inner();
        let stopped = thread.control.stopped();
        if let Some(log) = local.log.take() {
            match log.finish() {
                Ok(path) => local.logs.push(path),
                Err(why) => local.log_failures.push(why),
            }
        }
        let now = Instant::now();
        let end = match clock.end {
            Some(end) if !stopped => end,
            Some(end) => end.min(now),
            None => now,
        };
        local.silent = std::mem::take(&mut local.silence).end(
            clock.measure_from,
            end,
            (local.in_flight > 0).then(|| Duration::from_nanos(local.latency.max())),
        );
        local.unfinished += std::mem::take(&mut local.in_flight);
        if !stopped {
            local.dropped += local.waiting;
        }
        local.stages.iter_mut().for_each(|s| s.close(stopped));
        // Due times in the measured window that no client took before the
        // end are dropped: counted, not forgotten (as HTTP's open model
        // does).
        if let (Some(schedule), Some(deadline)) = (state.schedule.take(), clock.end)
            && !stopped
        {
            let mut arrivals = schedule.arrivals.borrow_mut();
            while let Some(due) = arrivals.next_due() {
                if due >= deadline {
                    break;
                }
                if due >= clock.measure_from {
                    local.dropped += 1;
                    if let Some(plan) = &self.settings.plan {
                        let stage = plan.stage_at((due - clock.start).as_secs_f64());
                        local.stages[stage].dropped += 1;
                    }
                }
            }
        }
        local
    }
}

/// Each script's statements parsed on `wire` with `-M prepared`, by
/// command, and the names they were given; nothing otherwise.
async fn prepare(wire: &mut Wire, settings: &RunSettings) -> Result<Vec<Vec<String>>, String> {
    let mut all = Vec::new();
    for (which, w) in settings.scripts.iter().enumerate() {
        let mut names = Vec::new();
        for (i, command) in w.script.commands().iter().enumerate() {
            let name = match (&command.kind, settings.protocol) {
                (CommandKind::Sql(sql), Protocol::Prepared) => {
                    let name = format!("dyno_{which}_{i}");
                    let parsed = match wire.parse(&name, sql.parameterized()) {
                        Ok(()) => {
                            wire.sync();
                            wire.finish().await
                        }
                        Err(e) => Err(e),
                    };
                    parsed.map_err(|e| {
                        format!(
                            "{}:{}: the statement could not be prepared: {e}",
                            w.script.name(),
                            command.line,
                        )
                    })?;
                    name
                }
                _ => String::new(),
            };
            names.push(name);
        }
        all.push(names);
    }
    Ok(all)
}

/// A thread's open-model schedule, shared by its clients.
struct Schedule {
    arrivals: RefCell<PoissonArrivals>,
    timer: Timer,
}

/// One client: its connection, its random state and its variables.
struct Runner<'a> {
    settings: &'a RunSettings,
    control: &'a pool::Control,
    /// The thread's progress counters.
    counters: Arc<pool::Counters>,
    wire: Wire,
    /// Each script's prepared statements' names, by command (`-M
    /// prepared`).
    prepared: Vec<Vec<String>>,
    deadline: Option<Instant>,
    schedule: Option<Rc<Schedule>>,
    rng: fastrand::Rng,
    /// Each script's variables.
    vars: Vec<Vec<Value>>,
    /// This client's transactions so far (`-l`'s second column).
    tx: u64,
    /// Each script's variables that a `\gset` or `\aset` may set and
    /// nothing has set yet (see [`Script::checks`]).
    unset: Vec<Vec<bool>>,
    /// The thread's figures, shared by its clients.
    local: Rc<RefCell<Local>>,
    /// The simple protocol's statement text, reused.
    text: String,
    id: usize,
    clock: pool::Clock,
    /// The thread's seconds, shared by its clients.
    seconds: pool::Seconds<Second>,
}

/// Why a transaction did not commit.
enum Failure {
    /// A serialization failure or deadlock: rolled back, may be retried.
    Retry(String),
    /// Anything else: the client stops, as pgbench's does.
    Abort(String),
}

impl Runner<'_> {
    async fn run(&mut self) {
        let total: u64 = self
            .settings
            .scripts
            .iter()
            .map(|w| u64::from(w.weight))
            .sum();
        let mut done = 0u64;
        loop {
            if self.control.stopped() || self.deadline.is_some_and(|d| Instant::now() >= d) {
                return;
            }
            let due = match self.schedule.clone() {
                Some(schedule) => match self.next_due(&schedule).await {
                    Some(due) => Some(due),
                    None => return,
                },
                None => {
                    if let Stop::Transactions(n) = self.settings.stop
                        && done >= n
                    {
                        return;
                    }
                    None
                }
            };
            done += 1;
            let which = self.choose(total);
            let stage = due.map(|due| self.stage(due));
            self.in_flight(stage, true);
            let result = self.one(which, due).await;
            self.tx += 1;
            self.in_flight(stage, false);
            if let Err(why) = result {
                let mut local = self.local.borrow_mut();
                local
                    .aborted
                    .push(format!("client {} aborted: {why}", self.id));
                // The client asks no more: from here it has no answer.
                local.silence.failed(Instant::now());
                drop(local);
                if self.settings.exit_on_abort {
                    self.control.halt();
                }
                return;
            }
        }
    }

    /// The next due time of the thread's schedule, once it has come; those
    /// already later than the latency limit are skipped, as pgbench skips
    /// them. `None` when the schedule is spent or the run is stopping.
    async fn next_due(&mut self, schedule: &Schedule) -> Option<Instant> {
        loop {
            let due = schedule.arrivals.borrow_mut().next_due()?;
            if self.deadline.is_some_and(|d| due >= d) {
                return None;
            }
            if let Some(limit) = self.settings.latency_limit
                && Instant::now() > due + limit
            {
                if due >= self.clock.measure_from {
                    self.log(0, Ended::Skipped, Instant::now(), Duration::ZERO, None, 1);
                    self.tx += 1;
                    let stage = self.stage(due);
                    let mut local = self.local.borrow_mut();
                    local.skipped += 1;
                    if let Some(s) = local.stages.get_mut(stage) {
                        s.dropped += 1;
                    }
                    local.publish(&self.counters);
                }
                continue;
            }
            // Taken: if the run's end cuts the wait, it was due before the
            // end and never sent (dropped).
            self.waiting(due, true);
            loop {
                let now = Instant::now();
                if now >= due {
                    self.waiting(due, false);
                    return Some(due);
                }
                if self.control.stopped() {
                    self.waiting(due, false);
                    return None;
                }
                // A long wait looks at the stop flag now and then.
                let wake = due.min(now + Duration::from_millis(100));
                schedule.timer.sleep_until(wake).await;
            }
        }
    }

    /// A measured due time is waited for (`true`), or its wait is over.
    fn waiting(&self, due: Instant, waits: bool) {
        if due < self.clock.measure_from {
            return;
        }
        let stage = self.stage(due);
        let mut local = self.local.borrow_mut();
        if waits {
            local.waiting += 1;
        } else {
            local.waiting -= 1;
        }
        if let Some(s) = local.stages.get_mut(stage) {
            if waits {
                s.awaits();
            } else {
                s.came();
            }
        }
    }

    /// A transaction (of `stage`, under a plan) takes off (`true`) or lands:
    /// what is in flight when the run ends is unfinished.
    fn in_flight(&self, stage: Option<usize>, took_off: bool) {
        let mut local = self.local.borrow_mut();
        if took_off {
            local.in_flight += 1;
        } else {
            local.in_flight -= 1;
        }
        if let Some(s) = stage.and_then(|i| local.stages.get_mut(i)) {
            if took_off {
                s.took_off();
            } else {
                s.landed();
            }
        }
    }

    /// One transaction of script `which`, due at `due` in the open model,
    /// with its retries; `Err` stops the client.
    async fn one(&mut self, which: usize, due: Option<Instant>) -> Result<(), String> {
        let start = Instant::now();
        // Filed by when it ends, as HTTP's requests are: one that ends in
        // the warm-up is not measured.
        let measure_from = self.clock.measure_from;
        let stage = due.map_or(0, |due| self.stage(due));
        {
            let mut local = self.local.borrow_mut();
            if let Some(due) = due
                && start >= measure_from
            {
                let lag = start.duration_since(due).as_nanos() as u64;
                let _ = local.lag.record(lag);
                local.lag_sum_ns += lag;
                if let Some(s) = local.stages.get_mut(stage) {
                    s.sent(lag);
                }
            }
            local.started += 1;
        }
        if self.settings.reconnect {
            self.reconnect().await?;
        }
        // What a retry starts again from; nothing to keep without one.
        let again = (self.settings.max_tries != 1).then(|| {
            (
                self.rng.clone(),
                self.vars[which].clone(),
                self.unset[which].clone(),
            )
        });
        let mut tries = 0;
        loop {
            tries += 1;
            match self.transaction(which).await {
                Ok(()) => {
                    let end = Instant::now();
                    if end < measure_from {
                        return Ok(());
                    }
                    if self.clock.over(end) {
                        // Committed after the deadline: not part of the run.
                        self.cut(stage);
                        return Ok(());
                    }
                    let ns = end.duration_since(due.unwrap_or(start)).as_nanos() as u64;
                    let lag = due.map(|due| start.saturating_duration_since(due));
                    self.log(
                        which,
                        Ended::Committed,
                        end,
                        Duration::from_nanos(ns),
                        lag,
                        tries,
                    );
                    let mut local = self.local.borrow_mut();
                    let _ = local.latency.record(ns.max(1));
                    if due.is_some() {
                        let raw = end.duration_since(start).as_nanos() as u64;
                        let _ = local.uncorrected.record(raw.max(1));
                    }
                    if self
                        .settings
                        .latency_limit
                        .is_some_and(|limit| ns > limit.as_nanos() as u64)
                    {
                        local.late += 1;
                    }
                    local.transactions += 1;
                    local.per_script[which] += 1;
                    if tries > 1 {
                        local.retried += 1;
                    }
                    if let Some(h) = local.script_latency.get_mut(which) {
                        let _ = h.record(ns.max(1));
                    }
                    local.latency_sum_ns += ns;
                    local.last_done = Some(end);
                    if end >= measure_from {
                        local.silence.answered(end);
                    }
                    if let Some(s) = local.stages.get_mut(stage) {
                        s.ended(Some(ns), false);
                    }
                    local.publish(&self.counters);
                    let mut second = self.seconds.at(&self.clock, end);
                    second.transactions += 1;
                    let _ = second.latency.record(ns.max(1));
                    return Ok(());
                }
                Err(Failure::Retry(code)) => {
                    // pgbench's doRetry: tries left, the latency limit not
                    // passed yet, the duration not over.
                    let now = Instant::now();
                    let time_left = self.deadline.is_none_or(|d| now < d);
                    let tries_left =
                        self.settings.max_tries == 0 || tries < self.settings.max_tries;
                    let within_limit = self
                        .settings
                        .latency_limit
                        .is_none_or(|limit| now.duration_since(due.unwrap_or(start)) <= limit);
                    if let Some((rng, vars, unset)) = &again
                        && tries_left
                        && within_limit
                        && time_left
                    {
                        *self.local.borrow_mut().retries.entry(code).or_default() += 1;
                        // The same draws again, as pgbench retries.
                        self.rng = rng.clone();
                        self.vars[which].clone_from(vars);
                        self.unset[which].clone_from(unset);
                        continue;
                    }
                    if now < measure_from {
                        return Ok(());
                    }
                    if self.clock.over(now) {
                        self.cut(stage);
                        return Ok(());
                    }
                    let took = now.duration_since(due.unwrap_or(start));
                    let lag = due.map(|due| start.saturating_duration_since(due));
                    self.log(which, Ended::failure(&code), now, took, lag, tries);
                    let mut local = self.local.borrow_mut();
                    // The server answered, with a failure to retry.
                    local.silence.answered(now);
                    *local.failed.entry(code).or_default() += 1;
                    if tries > 1 {
                        local.retried += 1;
                    }
                    local.failed_total += 1;
                    local.last_done = Some(now);
                    if let Some(s) = local.stages.get_mut(stage) {
                        s.ended(None, true);
                    }
                    local.publish(&self.counters);
                    return Ok(());
                }
                Err(Failure::Abort(why)) => return Err(why),
            }
        }
    }

    /// A new connection in place of the last (`--connect`), its statements
    /// prepared again with `-M prepared`; its time goes into `reconnects`.
    async fn reconnect(&mut self) -> Result<(), String> {
        let start = Instant::now();
        let mut wire = self
            .settings
            .target
            .connect_wire()
            .await
            .map_err(|e| e.to_string())?;
        self.prepared = prepare(&mut wire, self.settings).await?;
        // The old connection closes as it is dropped here.
        self.wire = wire;
        let _ = self
            .local
            .borrow_mut()
            .reconnects
            .record((start.elapsed().as_nanos() as u64).max(1));
        Ok(())
    }

    /// Logs a transaction of script `which` that ended at `end` after
    /// `tries` (`-l`).
    fn log(
        &self,
        which: usize,
        ended: Ended,
        end: Instant,
        latency: Duration,
        lag: Option<Duration>,
        tries: u32,
    ) {
        if let Some(log) = self.local.borrow_mut().log.as_mut() {
            log.log(&Entry {
                client: self.settings.segment.global(self.id as u64),
                // pgbench numbers them from 1.
                tx: self.tx + 1,
                script: which,
                ended,
                at: end,
                latency,
                lag,
                retries: tries.saturating_sub(1),
            });
        }
    }

    /// A transaction (of `stage`) that ended after the deadline: not part
    /// of the run, unfinished.
    fn cut(&self, stage: usize) {
        let mut local = self.local.borrow_mut();
        local.unfinished += 1;
        if let Some(s) = local.stages.get_mut(stage) {
            s.cut();
        }
    }

    /// The stage of `--rate-plan` a transaction due at `due` belongs to
    /// (0 without a plan).
    fn stage(&self, due: Instant) -> usize {
        self.settings.plan.as_ref().map_or(0, |plan| {
            plan.stage_at(
                due.saturating_duration_since(self.clock.start)
                    .as_secs_f64(),
            )
        })
    }

    fn choose(&mut self, total: u64) -> usize {
        if self.settings.scripts.len() == 1 {
            return 0;
        }
        let mut draw = self.rng.u64(0..total.max(1));
        for (i, w) in self.settings.scripts.iter().enumerate() {
            if draw < u64::from(w.weight) {
                return i;
            }
            draw -= u64::from(w.weight);
        }
        0
    }

    /// Runs script `which` once.
    async fn transaction(&mut self, which: usize) -> Result<(), Failure> {
        let script = &self.settings.scripts[which].script;
        let commands = script.commands();
        let mut i = 0;
        while i < commands.len() {
            let command = &commands[i];
            let at = || format!("{}:{}", script.name(), command.line);
            // Each command's own time is kept only for `-r`.
            let start = self.settings.per_statement.then(Instant::now);
            let mut next = i + 1;
            self.check_set(which, i)?;
            match &command.kind {
                CommandKind::Set { slot, expr } => self.set(which, i, *slot, expr)?,
                CommandKind::Sleep(sleep) => {
                    let d = sleep
                        .duration(&self.vars[which])
                        .map_err(|e| Failure::Abort(format!("{}: {e}", at())))?;
                    // A sleep under way at the deadline ends there: the
                    // grace finishes a transaction's work, it does not
                    // wait out its pauses.
                    let d = match self.clock.end {
                        Some(end) => d.min(end.saturating_duration_since(Instant::now())),
                        None => d,
                    };
                    tokio::time::sleep(d).await;
                }
                CommandKind::Sql(sql) if self.settings.pipeline && sql.store().is_none() => {
                    // A statement whose result is stored runs alone.
                    next = i + commands[i..]
                        .iter()
                        .take_while(
                            |c| matches!(&c.kind, CommandKind::Sql(s) if s.store().is_none()),
                        )
                        .count();
                    if let Err(e) = self.execute_batch(which, i..next).await {
                        let last = commands[next - 1].line;
                        let at = format!("{}:{}-{last}", script.name(), command.line);
                        return Err(self.failure(e, &at).await);
                    }
                }
                CommandKind::Sql(sql) => {
                    if sql.store().is_some() {
                        self.wire.capture();
                    }
                    if let Err(e) = self.execute(which, i, sql).await {
                        return Err(self.failure(e, &at()).await);
                    }
                    if let Some(store) = sql.store() {
                        self.store(which, store)
                            .map_err(|e| Failure::Abort(format!("{}: {e}", at())))?;
                    }
                }
                CommandKind::Branch { cond, on_false } => {
                    let place = At {
                        script: which,
                        command: i + 1,
                    };
                    let taken = cond
                        .eval_at(&self.vars[which], &mut self.rng, place)
                        .and_then(|v| v.truth())
                        .map_err(|e| Failure::Abort(format!("{}: {e}", at())))?;
                    if !taken {
                        next = *on_false;
                    }
                }
                CommandKind::Jump(to) => {
                    i = *to;
                    continue;
                }
                CommandKind::Pipeline { end } => {
                    self.pipeline(which, i + 1..*end).await?;
                    next = *end;
                }
                CommandKind::SyncPipeline => unreachable!("\\syncpipeline is inside a pipeline"),
                CommandKind::Shell(shell) => {
                    let line = shell.command_line(&self.vars[which]);
                    let value = crate::shell::run(&line, shell.target.is_some())
                        .await
                        .map_err(|e| Failure::Abort(format!("{}: {e}", at())))?;
                    if let (Some(slot), Some(value)) = (shell.target, value) {
                        self.vars[which][slot] = Value::Int(value);
                        self.unset[which][slot] = false;
                    }
                }
            }
            if let Some(start) = start
                && let Some(h) = self
                    .local
                    .borrow_mut()
                    .statements
                    .get_mut(which)
                    .and_then(|s| s.get_mut(i))
            {
                let _ = h.record((start.elapsed().as_nanos() as u64).max(1));
            }
            i = next;
        }
        Ok(())
    }

    async fn execute(&mut self, which: usize, index: usize, sql: &Sql) -> Result<(), WireError> {
        let vars = &self.vars[which];
        match self.settings.protocol {
            Protocol::Simple => {
                self.text.clear();
                sql.write_simple(vars, &mut self.text);
                self.wire.query(&self.text)?;
            }
            Protocol::Extended => {
                self.wire.parse("", sql.parameterized())?;
                self.wire.execute("", sql.params(vars))?;
                self.wire.sync();
            }
            Protocol::Prepared => {
                self.wire
                    .execute(&self.prepared[which][index], sql.params(vars))?;
                self.wire.sync();
            }
        }
        self.wire.finish().await
    }

    /// Fails command `index` of script `which` if it reads a variable
    /// that only a `\\gset` or `\\aset` could have set and none has, as
    /// pgbench fails on an undefined variable. Most commands have nothing
    /// to check, and that case stays inline.
    #[inline(always)]
    fn check_set(&self, which: usize, index: usize) -> Result<(), Failure> {
        if self.settings.scripts[which].script.checks(index).is_empty() {
            return Ok(());
        }
        self.check_unset(which, index)
    }

    fn check_unset(&self, which: usize, index: usize) -> Result<(), Failure> {
        let script = &self.settings.scripts[which].script;
        match script
            .checks(index)
            .iter()
            .find(|&&slot| self.unset[which][slot])
        {
            None => Ok(()),
            Some(&slot) => Err(Failure::Abort(format!(
                "{}:{}: undefined variable \"{}\": no \\gset or \\aset before has set it",
                script.name(),
                script.commands()[index].line,
                script.variables()[slot]
            ))),
        }
    }

    /// Command `index` of script `which`, `\\set` of `slot` to `expr`.
    fn set(&mut self, which: usize, index: usize, slot: usize, expr: &Expr) -> Result<(), Failure> {
        let place = At {
            script: which,
            command: index + 1,
        };
        let value = expr
            .eval_at(&self.vars[which], &mut self.rng, place)
            .map_err(|e| {
                let script = &self.settings.scripts[which].script;
                Failure::Abort(format!(
                    "{}:{}: {e}",
                    script.name(),
                    script.commands()[index].line
                ))
            })?;
        self.vars[which][slot] = value;
        self.unset[which][slot] = false;
        Ok(())
    }

    /// Commands `range` of script `which`, every one of them SQL, sent
    /// together: one query string of them all with the simple protocol,
    /// their messages behind one Sync with the others, as pgbench's
    /// `\startpipeline` sends them; the answers are read after. The first
    /// error is the batch's, and the server skips the rest.
    async fn execute_batch(
        &mut self,
        which: usize,
        range: std::ops::Range<usize>,
    ) -> Result<(), WireError> {
        let script = &self.settings.scripts[which].script;
        let sqls = script.commands()[range.clone()]
            .iter()
            .map(|c| match &c.kind {
                CommandKind::Sql(sql) => sql,
                _ => unreachable!("a batch holds SQL commands only"),
            });
        let vars = &self.vars[which];
        if self.settings.protocol == Protocol::Simple {
            self.text.clear();
            for sql in sqls {
                sql.write_simple(vars, &mut self.text);
                self.text.push_str(";\n");
            }
            self.wire.query(&self.text)?;
        } else {
            for (sql, name) in sqls.zip(&self.prepared[which][range]) {
                if self.settings.protocol == Protocol::Extended {
                    self.wire.parse("", sql.parameterized())?;
                }
                self.wire.execute(name, sql.params(vars))?;
            }
            self.wire.sync();
        }
        self.wire.finish().await
    }

    /// A `\\startpipeline` … `\\endpipeline` of script `which` (commands
    /// `range`, SQL and `\\set`): each `\\set` evaluated and each
    /// statement queued with the values of that moment, in order, then
    /// one Sync and the answers, as pgbench's pipeline mode (extended and
    /// prepared protocols only, which the settings made sure of).
    async fn pipeline(
        &mut self,
        which: usize,
        range: std::ops::Range<usize>,
    ) -> Result<(), Failure> {
        let script = &self.settings.scripts[which].script;
        let commands = script.commands();
        if range.is_empty() {
            return Ok(());
        }
        let at = format!(
            "{}:{}-{}",
            script.name(),
            commands[range.start].line,
            commands[range.end - 1].line
        );
        let mut queued = Ok(());
        for i in range {
            self.check_set(which, i)?;
            match &commands[i].kind {
                CommandKind::Set { slot, expr } => self.set(which, i, *slot, expr)?,
                CommandKind::Sql(sql) => {
                    let vars = &self.vars[which];
                    let name = &self.prepared[which][i];
                    queued = match self.settings.protocol {
                        Protocol::Extended => self
                            .wire
                            .parse("", sql.parameterized())
                            .and_then(|()| self.wire.execute("", sql.params(vars))),
                        _ => self.wire.execute(name, sql.params(vars)),
                    };
                    if queued.is_err() {
                        break;
                    }
                }
                CommandKind::SyncPipeline => self.wire.sync(),
                _ => unreachable!("a pipeline holds SQL, \\set and \\syncpipeline only"),
            }
        }
        let result = match queued {
            Ok(()) => {
                self.wire.sync();
                self.wire.finish().await
            }
            Err(e) => Err(e),
        };
        match result {
            Ok(()) => Ok(()),
            Err(e) => Err(self.failure(e, &at).await),
        }
    }

    /// Puts the captured result's columns into script `which`'s variables,
    /// as pgbench's `\gset` and `\aset` do: each column's text (NULL as
    /// the empty text) in the variable named the prefix and the column's
    /// name. A column no command reads is passed over.
    fn store(&mut self, which: usize, store: &Store) -> Result<(), String> {
        let rows = self.wire.rows();
        let what = if store.all { "aset" } else { "gset" };
        if !store.all && rows.count != 1 {
            return Err(format!(
                "\\gset expected one row, got {}; use \\aset to store the last row of any number",
                rows.count
            ));
        }
        // `\aset` stores every statement's row of a compound query (`\;`),
        // in order; `\gset` the last statement's.
        let mut sets: Vec<(&[String], &[Option<String>])> = Vec::new();
        if store.all {
            sets.extend(
                rows.earlier
                    .iter()
                    .map(|(n, l)| (n.as_slice(), l.as_slice())),
            );
        }
        if rows.count > 0 {
            sets.push((&rows.names, &rows.last));
        }
        let script = &self.settings.scripts[which].script;
        for (column, value) in sets.into_iter().flat_map(|(n, l)| n.iter().zip(l)) {
            let name = format!("{}{column}", store.prefix);
            if !crate::script::is_variable_name(&name) {
                return Err(format!(
                    "\\{what}: the column \"{column}\" cannot name a variable (letters, digits and '_', not a digit first); name it with AS"
                ));
            }
            if let Some(slot) = script.slot(&name) {
                self.vars[which][slot] = Value::text(value.as_deref().unwrap_or(""));
                self.unset[which][slot] = false;
            }
        }
        Ok(())
    }

    /// Sorts an error out, rolling back what a retry must not find open.
    async fn failure(&mut self, e: WireError, at: &str) -> Failure {
        match e.code() {
            // serialization_failure, deadlock_detected
            Some(code @ ("40001" | "40P01")) => {
                let code = code.to_owned();
                if self.wire.status() != b'I' {
                    // Ends the failed transaction block.
                    let _ = match self.wire.query("ROLLBACK") {
                        Ok(()) => self.wire.finish().await,
                        Err(e) => Err(e),
                    };
                }
                Failure::Retry(code)
            }
            code => {
                let hint = if e.is_lost() {
                    "; the connection to the server was lost"
                } else if code == Some("42P01") && e.to_string().contains("\"pgbench_") {
                    "; run `dyno db init` first"
                } else {
                    ""
                };
                Failure::Abort(format!("{at}: {e}{hint}"))
            }
        }
    }
}

impl Outcome {
    /// Share of the client threads the run kept busy, in percent: near 100
    /// the client, not the server, set the pace.
    pub fn client_cpu_percent(&self, threads: usize) -> f64 {
        dyno_load::pool::busy_percent(self.cpu, self.elapsed, threads)
    }

    /// The run's metrics. A failure count per SQLSTATE is included only
    /// when non-zero; with several scripts, each one's committed
    /// transactions, labelled with its name; the open model's, the
    /// latency limit's, `--connect`'s and `-r`'s figures when they were
    /// asked for.
    pub fn metrics(&self, settings: &RunSettings) -> Vec<Metric> {
        let threads = settings.threads;
        let scripts: Vec<&str> = settings.scripts.iter().map(|w| w.script.name()).collect();
        // Counts grow with the run: context, summed across segments.
        let count = |name: &str, n: u64| {
            Metric::new(name, Unit::Count, Direction::LowerIsBetter, n as f64)
                .context()
                .merged(Merge::Sum)
        };
        // A count of work done: more is better over a duration, and with
        // -t it is fixed.
        let committed = |n: u64| {
            Metric::new(
                "transactions",
                Unit::Count,
                Direction::HigherIsBetter,
                n as f64,
            )
            .context()
            .merged(Merge::Sum)
        };
        // What pgbench's job exists for: tps and the latency of each
        // transaction. A merged run's tps is its commits over the merged
        // window.
        let latency = hdr::latency_metric("latency_ns", &self.latency).primary();
        let mut metrics = vec![
            Metric::new(
                "transactions_per_sec",
                Unit::OpsPerSec,
                Direction::HigherIsBetter,
                self.tps(),
            )
            .primary()
            .rate_of("transactions"),
            // pgbench's second tps line: the same commits over a window
            // that includes connecting; a view, and not merged (each
            // segment connects on its own).
            Metric::new(
                "transactions_per_sec_with_connections",
                Unit::OpsPerSec,
                Direction::HigherIsBetter,
                self.tps_with_connections(),
            )
            .derived_of("transactions_per_sec")
            .merged(Merge::None),
            latency,
            committed(self.transactions),
            count("failed_transactions", self.failed_total()),
            count("retries", self.retries.values().sum()),
            count("retried_transactions", self.retried),
            count("aborted_clients", self.aborted.len() as u64),
            Metric::new(
                "connect_ns",
                Unit::Ns,
                Direction::LowerIsBetter,
                self.connect.as_nanos() as f64,
            )
            .context()
            .merged(Merge::Max),
            Metric::new(
                "measured_ns",
                Unit::Ns,
                Direction::LowerIsBetter,
                self.elapsed.as_nanos() as f64,
            )
            .context()
            .merged(Merge::Window),
            // The client's own load: whether the figures are the server's
            // or a lower bound.
            Metric::new(
                "client_cpu_percent",
                Unit::Percent,
                Direction::LowerIsBetter,
                self.client_cpu_percent(threads),
            )
            .diagnostic()
            .merged(Merge::Max),
        ];
        metrics.extend(dyno_load::silence::lost_metric(&self.lost));
        // Nothing committed: no cost per transaction to speak of.
        if self.transactions > 0 {
            metrics.push(
                Metric::new(
                    "client_cpu_per_transaction_ns",
                    Unit::Ns,
                    Direction::LowerIsBetter,
                    self.cpu.as_nanos() as f64 / self.transactions as f64,
                )
                .diagnostic()
                .merged(Merge::None),
            );
        }
        for (code, n) in &self.failed {
            let mut m = count("failed_transactions", *n);
            m.labels.insert("sqlstate".into(), code.clone());
            metrics.push(m);
        }
        for (code, n) in &self.retries {
            let mut m = count("retries", *n);
            m.labels.insert("sqlstate".into(), code.clone());
            metrics.push(m);
        }
        if scripts.len() > 1 {
            for (i, (name, n)) in scripts.iter().zip(&self.per_script).enumerate() {
                // One script's share: explains the run's figures.
                let mut per_script = vec![
                    committed(*n),
                    Metric::new(
                        "transactions_per_sec",
                        Unit::OpsPerSec,
                        Direction::HigherIsBetter,
                        per_sec(*n, self.elapsed),
                    )
                    .diagnostic()
                    .rate_of("transactions"),
                ];
                if let Some(h) = self.script_latency.get(i) {
                    per_script.push(hdr::latency_metric("latency_ns", h).diagnostic());
                }
                for mut m in per_script {
                    m.labels.insert("script".into(), (*name).to_owned());
                    metrics.push(m);
                }
            }
        }
        if let Some(rate) = settings.rate {
            metrics.push(
                Metric::new(
                    "requested_transactions_per_sec",
                    Unit::OpsPerSec,
                    Direction::HigherIsBetter,
                    rate,
                )
                .context()
                .merged(Merge::Sum),
            );
            metrics.push(
                hdr::latency_metric("latency_uncorrected_ns", &self.uncorrected).diagnostic(),
            );
            metrics.push(hdr::latency_metric("schedule_lag_ns", &self.lag).context());
        }
        // Cut at the deadline (or the stop) while under way, and, in the
        // open model, due in the window but never started: in no other
        // figure, so counted when there are any.
        if self.unfinished > 0 {
            metrics.push(count("unfinished_transactions", self.unfinished));
        }
        if settings.rate.is_some() && self.dropped > 0 {
            metrics.push(count("dropped_sends", self.dropped));
        }
        if settings.latency_limit.is_some() {
            metrics.push(count("late_transactions", self.late));
            if settings.rate.is_some() {
                metrics.push(count("skipped_transactions", self.skipped));
            }
        }
        if settings.reconnect {
            metrics.push(hdr::latency_metric("reconnect_ns", &self.reconnects).diagnostic());
        }
        metrics.extend(dyno_load::timeline::metrics(
            self.elapsed,
            self.timeline.iter().map(|s| (s.transactions, &s.latency)),
            "timeline_transactions_per_sec",
            Unit::OpsPerSec,
        ));
        if !settings.segment.is_whole() {
            metrics.extend(dyno_load::timeline::histograms(
                self.timeline.iter().map(|s| &s.latency),
            ));
        }
        if let Some(plan) = &settings.plan {
            metrics.extend(dyno_load::stages::metrics(plan, &self.stages));
        }
        for (w, hs) in settings.scripts.iter().zip(&self.statements) {
            for (i, h) in hs.iter().enumerate() {
                if matches!(w.script.commands()[i].kind, CommandKind::Jump(_)) {
                    continue;
                }
                let mut m = hdr::latency_metric("statement_latency_ns", h).diagnostic();
                m.labels.insert("script".into(), w.script.name().to_owned());
                m.labels
                    .insert("line".into(), w.script.commands()[i].line.to_string());
                m.labels.insert("command".into(), w.script.command_text(i));
                metrics.push(m);
            }
        }
        metrics
    }
}

/// Recomputes, in a run merged from segments, the metrics this engine
/// declared [`Merge::Recompute`]: the per-second p99 from the merged
/// per-second histograms (a merge of one segment keeps its own); and each
/// stage of a `--rate-plan`, from the segments' stage metrics summed.
pub fn recompute_merged(run: &mut dyno_model::Run) {
    if let Ok(mut record) = run.record::<dyno_model::record::DbRecord>()
        && let Some(plan) = record
            .rate_plan
            .as_ref()
            .and_then(|r| r.plan.parse::<RatePlan>().ok())
    {
        record.rate_plan = Some(dyno_load::stages::rebuild(&plan, &run.metrics));
        run.set_record(&record);
    }
    if run
        .metrics
        .iter()
        .any(|m| m.name == "timeline_latency_p99_ns")
    {
        return;
    }
    run.metrics.extend(dyno_stats::merge::per_second_percentile(
        &run.metrics,
        "timeline_latency_p99_ns",
        "timeline_transactions_per_sec",
        "timeline_latency_ns",
        99.0,
    ));
}
