//! The engine of `dyno db run`: the clients as the pool's job, each
//! thread's share of the open model's schedule, a client's transactions
//! with their retries, and what a thread measured ([`Local`]).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant, SystemTime};

use dyno_load::plan::{PoissonArrivals, RatePlan};
use dyno_load::silence::Silence;
use dyno_load::stages::StageFigures;
use dyno_load::{Timer, pool};
use dyno_stats::hdr::latency_histogram;
use hdrhistogram::Histogram;

use crate::script::{At, CommandKind, Expr, Predefined, Sql, Store, Value};
use crate::txlog::{Columns, Ended, Entry, TxLog};
use crate::wire::{Wire, WireError};

use super::*;

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
