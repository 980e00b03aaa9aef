//! The driver: the connections of a run as a job of the shared worker
//! pool (`dyno_load::pool`), which owns the threads, the start gate and
//! clock, the warm-up, the deadline cut-off, the per-second timeline and
//! the progress counters. Here: a thread's connections and their own
//! state, one loop per connection that takes [`Ticket`]s from the
//! schedule, sends, reads and records.
//!
//! No lock, channel message or read-modify-write per request: a thread's
//! connections share its counters through `Rc<RefCell<…>>`; the one
//! cross-thread write per response is a relaxed store of the thread's
//! running count into its own cache line, which the progress line reads.
//!
//! The run's clock starts once every thread is ready (the open model's
//! connections open first); a duration run ends at its deadline, cutting
//! requests still under way (counted as unfinished).
//!
//! - this file: the job, the threads' shared and own state, the merge;
//! - `schedule`: which request comes next (closed quota or open timetable);
//! - `exchange`: a connection's loop — connect, send, read, frame, record.

mod exchange;
mod h2;
mod h3;
mod replay;
mod scenario;
mod schedule;

use std::cell::RefCell;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use tokio::task::JoinSet;

use self::exchange::{READ_BUF, connection};
use self::schedule::{OpenSchedule, Ticket};
use crate::conn::{Endpoint, Stream};
use crate::request::Scheme;
use crate::settings::{Settings, Stop};
use crate::stats::{ErrorClass, Interval, Stats};
use crate::tls::{TlsClient, TlsSession, TlsSetupError};
use dyno_load::silence::Silence;
use dyno_load::stages::StageFigures;
use dyno_load::{Timer, pool};

/// Why a load test could not run at all (per-request failures are counted,
/// not raised).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot resolve '{host}' (check the host name and the DNS settings)")]
    Resolve {
        host: String,
        #[source]
        source: io::Error,
    },
    #[error("'{0}' resolves to no address")]
    NoAddress(String),
    #[error("could not start worker thread {0}: {1}")]
    Thread(usize, io::Error),
    #[error("invalid settings: {0}")]
    Settings(String),
    #[error("there is no Unix socket at '{0}': is the server running, and is the path right?")]
    NoSocket(std::path::PathBuf),
    #[error("'{0}' is not a Unix socket: give the path of the server's socket")]
    NotASocket(std::path::PathBuf),
    #[error(transparent)]
    Tls(#[from] TlsSetupError),
    /// The gate of [`run_gated`] called the run off.
    #[error("{0}")]
    Gate(String),
    /// A scenario's setup step failed: the load is not started.
    #[error("{0}")]
    Setup(String),
    /// `--replay`: the log cannot be read, or holds nothing to send.
    #[error("{0}")]
    Replay(String),
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// All threads merged.
    pub stats: Stats,
    /// Spells in which the target answered nothing while requests failed
    /// or waited (`target_lost`), from the end of the warm-up.
    pub lost: Vec<dyno_load::silence::Lost>,
    /// `--rate-plan`: each stage's own figures (empty without a plan).
    pub stages: Vec<StageFigures>,
    /// One merged entry per second of the measured part of the run (entry
    /// i holds seconds [i, i + 1) after the warm-up). Every
    /// measured response and error is in exactly one entry, so the entries
    /// add up to [`Stats`] (a latency log holds the report's count).
    pub timeline: Vec<Interval>,
    /// The measured window every rate divides by: from the end of the
    /// warm-up to the deadline of a duration run (or to the interrupt, if
    /// that came first), or to the last measured response of a run of `-n`
    /// requests.
    pub elapsed: Duration,
    /// Wall time of the whole run, warm-up included.
    pub wall: Duration,
    /// CPU time (user + system) the worker threads used.
    pub cpu: Duration,
    /// How long the worker threads waited, runnable, for a CPU: other
    /// work on the machine took it ([`dyno_load::pool::Pooled::cpu_wait`]).
    pub cpu_wait: Duration,
    /// The run was stopped early (Ctrl-C).
    pub interrupted: bool,
    /// The run was given up early because the first
    /// [`GIVE_UP_AFTER_REFUSALS`] connection attempts were all refused and
    /// none ever succeeded: nothing listens there. (A server that does not
    /// speak HTTP/2 under `--h2` also ends the run at once; that shows in
    /// [`Outcome::protocol_failure`].)
    pub refused: bool,
    /// A run of `-n` requests was given up because its first requests all
    /// timed out and none was ever answered (see
    /// [`GIVE_UP_AFTER_SILENT_TIMEOUTS_PER_SLOT`]): the server accepts
    /// connections and answers nothing.
    pub silent: bool,
    /// Where the connections went.
    pub endpoint: Endpoint,
    /// Why a TLS handshake failed: the first failure a worker thread saw
    /// (all of them are counted under [`ErrorClass::Tls`]); `None` when no
    /// handshake failed.
    pub tls_failure: Option<String>,
    /// What the first completed TLS handshake settled on (`https://` only).
    pub tls_session: Option<TlsSession>,
    /// The wall-clock time the run's clock started (the warm-up's
    /// start): what segments of one run compare to see that they started
    /// together.
    pub started_at: SystemTime,
    /// The `Server` field of the first answer that had one (ab's "Server
    /// Software").
    pub server: Option<String>,
    /// `--h2`: why the first HTTP/2 connection that failed its handshake
    /// failed (a server that does not speak HTTP/2 there); `None` when
    /// none did.
    pub protocol_failure: Option<String>,
    /// `--h3`: how the first answer that broke HTTP/3's or QPACK's rules
    /// broke them (all are counted as `h3_protocol_error`).
    pub malformed: Option<String>,
    /// `--scenario`: the figures of each step and each flow.
    pub scenario: Option<crate::scenario::Figures>,
    /// `--replay`: what the log held, and the figures of each path
    /// template (indexed like [`crate::replay::Summary::endpoints`]).
    pub replay: Option<Replayed>,
}

/// What a replay sent and measured beyond the run's own figures.
#[derive(Debug, Clone)]
pub struct Replayed {
    pub log: crate::replay::Summary,
    pub endpoints: Vec<crate::scenario::StepStats>,
}

/// Progress as it happens, once per second, for a progress line.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub elapsed: Duration,
    pub warmup: bool,
    pub responses: u64,
    pub errors: u64,
    /// Responses in the last second.
    pub last_second: u64,
}

/// What every thread shares (read-only).
#[derive(Debug)]
struct Shared {
    settings: Settings,
    endpoint: Endpoint,
    /// `https://`: the one TLS configuration all connections use.
    tls: Option<TlsClient>,
    /// `--h3`: the one QUIC configuration all connections use.
    quic: Option<h3::Quic>,
    /// The run's clock (set once every thread is ready: connected, in the
    /// open model) and its stop flags: the worker pool's.
    control: Arc<pool::Control>,
    /// Some connection attempt has succeeded.
    connected: AtomicBool,
    /// Refused connection attempts while none has succeeded.
    refusals: AtomicU64,
    /// Some request has been answered.
    answered: AtomicBool,
    /// Requests that timed out while none has been answered.
    silent_timeouts: AtomicU64,
    /// Given up: the server accepts connections and answers nothing.
    silent: AtomicBool,
    /// `--replay`: the log's reader.
    feed: Option<crate::replay::Feed>,
}

/// Refused connection attempts, with none ever accepted, after which a run
/// gives up (ab stops at the first): a closed port should fail in a moment,
/// not after n back-offs. Once one connection succeeded, refusals are the
/// server's flakiness and are counted, never given up on.
pub const GIVE_UP_AFTER_REFUSALS: u64 = 10;

/// A run of `-n` requests gives up when this many requests in a row per
/// request slot (connection × streams × pipeline depth) timed out and none
/// was ever answered: a server that accepts and never answers would
/// otherwise hold the run for n timeouts (ab stops at the first). Once one
/// answer came, timeouts are the server's slowness and are counted, never
/// given up on. A duration run ends at its deadline anyway.
pub const GIVE_UP_AFTER_SILENT_TIMEOUTS_PER_SLOT: u64 = 2;

impl Shared {
    fn clock(&self) -> &pool::Clock {
        self.control.clock()
    }

    fn start(&self) -> Instant {
        self.clock().start
    }

    fn measure_from(&self) -> Instant {
        self.clock().measure_from
    }

    /// Whether `t` is in the measured part: after the warm-up (never
    /// before the clock starts: a scenario's setup steps).
    fn measures(&self, t: Instant) -> bool {
        self.control
            .started_clock()
            .is_some_and(|clock| t >= clock.measure_from)
    }

    fn end(&self) -> Option<Instant> {
        self.clock().end
    }

    /// The run must stop: interrupted, or given up.
    fn stopped(&self) -> bool {
        self.control.stopped()
    }

    /// Notes a successful connect.
    fn connect_succeeded(&self) {
        if !self.connected.load(Ordering::Relaxed) {
            self.connected.store(true, Ordering::Relaxed);
        }
    }

    /// Notes a server that does not speak the protocol asked for (`--h2`):
    /// the run is given up at once if no connection ever succeeded, since
    /// every other attempt would fail the same way.
    fn protocol_refused(&self) {
        if !self.connected.load(Ordering::Relaxed) {
            self.control.halt();
        }
    }

    /// Notes an answer: from now on, timeouts never give the run up.
    fn answered(&self) {
        if !self.answered.load(Ordering::Relaxed) {
            self.answered.store(true, Ordering::Relaxed);
        }
    }

    /// Notes a request that timed out; gives a run of `-n` requests up
    /// when no request was ever answered and every request slot timed out
    /// [`GIVE_UP_AFTER_SILENT_TIMEOUTS_PER_SLOT`] times.
    fn timed_out(&self) {
        let s = &self.settings;
        if self.answered.load(Ordering::Relaxed) || matches!(s.schedule.stop, Stop::Duration(_)) {
            return;
        }
        let slots = (s.connections * s.streams.max(1) * s.pipeline.max(1)) as u64;
        let limit = GIVE_UP_AFTER_SILENT_TIMEOUTS_PER_SLOT * slots;
        if self.silent_timeouts.fetch_add(1, Ordering::Relaxed) + 1 >= limit
            && !self.answered.load(Ordering::Relaxed)
        {
            self.silent.store(true, Ordering::Relaxed);
            self.control.halt();
        }
    }

    /// Notes a refused connect; gives the run up when nothing ever listened.
    fn connect_refused(&self) {
        if !self.connected.load(Ordering::Relaxed)
            && self.refusals.fetch_add(1, Ordering::Relaxed) + 1 >= GIVE_UP_AFTER_REFUSALS
            && !self.connected.load(Ordering::Relaxed)
        {
            self.control.halt();
        }
    }
}

/// A thread's own state, shared by its connections.
#[derive(Debug)]
struct Local {
    stats: Stats,
    /// `--rate-plan`: each stage's own figures (empty without a plan).
    stages: Vec<StageFigures>,
    /// This thread's seconds of the run's timeline.
    seconds: pool::Seconds<Interval>,
    /// Closed model with `-n`: measured requests this thread may still start.
    quota: Option<u64>,
    /// Measured requests written and not yet answered or failed: what is
    /// left of them when the run is cut at its deadline is unfinished.
    in_flight: u64,
    /// Measured open-model requests taken from the schedule and not yet
    /// sent (waiting for their due time, a connection or a stream): what
    /// is left of them when the run ends was due and never sent (dropped).
    held: u64,
    /// The open model's schedules of this thread's connections.
    schedules: Vec<Rc<RefCell<OpenSchedule>>>,
    /// A scenario's open model: the one timetable of flows this thread's
    /// virtual users share (also in `schedules`).
    flow_schedule: Option<Rc<RefCell<OpenSchedule>>>,
    /// This thread's counts for the progress line.
    published: Arc<pool::Counters>,
    /// Sequence numbers for `{seq}`: thread index + k × threads.
    next_seq: u64,
    rng: fastrand::Rng,
    last_done: Option<Instant>,
    firsts: Firsts,
    /// `--scenario`: this thread's per-step and per-flow figures.
    scenario: crate::scenario::Figures,
    /// `--scenario`: each step's measured requests in flight, which the
    /// run's end leaves unfinished (`step_unfinished`).
    step_in_flight: Vec<u64>,
    /// Spells with no answer while requests failed (`target_lost`).
    silence: Silence,
    /// `--replay`: this thread's share of the log.
    replay: Option<Rc<replay::ReplaySchedule>>,
    /// `--replay`: the requests of the tickets handed out and not yet
    /// sent, by their `seq`.
    replayed: std::collections::HashMap<u64, Arc<crate::request::RequestTemplate>>,
    /// `--replay`: the requests of this thread's share that fell due in
    /// the run (taken, or dropped at its end), warm-up included.
    replay_due: u64,
}

/// What a thread hands back.
#[derive(Debug)]
struct Finished {
    /// This thread's spells with no answer.
    silent: Vec<(Instant, Instant)>,
    stats: Stats,
    stages: Vec<StageFigures>,
    last_done: Option<Instant>,
    firsts: Firsts,
    scenario: crate::scenario::Figures,
    replay_due: u64,
}

/// What a thread saw first that the report names: the first of each, and
/// once threads are merged, the first thread's that saw one.
#[derive(Debug, Default)]
struct Firsts {
    /// Why the first failed TLS handshake failed.
    tls_failure: Option<String>,
    /// What the first completed TLS handshake settled on.
    tls_session: Option<TlsSession>,
    /// The `Server` field of the first answer that had one.
    server: Option<Box<str>>,
    /// Why the first failed HTTP/2 handshake failed.
    protocol_failure: Option<String>,
    /// How the first malformed HTTP/3 answer broke the rules.
    malformed: Option<String>,
}

impl Firsts {
    /// Each of `self`'s, or else `other`'s.
    fn or(self, other: Firsts) -> Firsts {
        Firsts {
            tls_failure: self.tls_failure.or(other.tls_failure),
            tls_session: self.tls_session.or(other.tls_session),
            server: self.server.or(other.server),
            protocol_failure: self.protocol_failure.or(other.protocol_failure),
            malformed: self.malformed.or(other.malformed),
        }
    }
}

impl pool::Slice for Interval {
    fn add(&mut self, other: &Interval) {
        self.responses += other.responses;
        self.errors += other.errors;
        let _ = self.latency.add(&other.latency);
    }
}

/// Runs the load test. `stop` ends it early (Ctrl-C); `progress` is called
/// about once a second from the calling thread.
pub fn run(
    settings: Settings,
    stop: Arc<AtomicBool>,
    progress: impl FnMut(Progress),
) -> Result<Outcome, EngineError> {
    run_gated(settings, stop, progress, || Ok(None))
}

/// [`run`], with a gate between getting ready and starting: once every
/// thread is ready (the open model's connections open), `gate` is called
/// on the calling thread and says when the clock starts: `Ok(None)` at
/// once, `Ok(Some(t))` when the wall clock reads `t` (a segment's common
/// start), `Err(why)` never — the run is called off before any request is
/// measured, and [`EngineError::Gate`] says why.
pub fn run_gated(
    settings: Settings,
    stop: Arc<AtomicBool>,
    mut progress: impl FnMut(Progress),
    gate: impl FnOnce() -> Result<Option<SystemTime>, String>,
) -> Result<Outcome, EngineError> {
    validate(&settings)?;
    let endpoint = match &settings.unix_socket {
        Some(path) => Endpoint::Unix(path.clone()),
        None => {
            let addr = resolve(&settings)?;
            if let Some(ip) = settings.source_addr
                && ip.is_ipv4() != addr.is_ipv4()
            {
                return Err(EngineError::Settings(format!(
                    "--source-addr {ip} and the server's address {addr} are of different IP versions: give an address of the same version"
                )));
            }
            Endpoint::Tcp(addr, settings.source_addr)
        }
    };
    let quic = settings
        .http3
        .then(|| h3::Quic::new(&settings))
        .transpose()?;
    let tls = match settings.target.scheme {
        Scheme::Https if settings.http3 => None,
        Scheme::Https => Some(TlsClient::new(
            &settings.target.host,
            &settings.tls,
            &settings.offered_alpn(),
        )?),
        Scheme::Http => None,
    };
    let threads = settings.threads_used();
    let pool = pool::Settings {
        threads,
        name: "dyno-http",
        warmup: settings.schedule.warmup,
        duration: match settings.schedule.stop {
            Stop::Duration(d) => Some(d),
            Stop::Requests(_) | Stop::LogEnds => None,
        },
        grace: settings.schedule.grace,
        progress_every: Duration::from_secs(1),
    };
    // The log is opened and its first request read before any load, so
    // an unreadable or empty log (or window) costs nothing.
    let feed = settings
        .replay
        .as_ref()
        .map(|replay| {
            crate::replay::Feed::start(
                replay,
                &settings.target,
                settings.keep_alive,
                threads,
                settings.segment,
            )
        })
        .transpose()
        .map_err(EngineError::Replay)?;
    let control = pool::Control::new(stop);
    let shared = Arc::new(Shared {
        settings,
        endpoint,
        tls,
        quic,
        control: Arc::clone(&control),
        connected: AtomicBool::new(false),
        refusals: AtomicU64::new(0),
        answered: AtomicBool::new(false),
        silent_timeouts: AtomicU64::new(0),
        silent: AtomicBool::new(false),
        feed,
    });
    let mut reported = 0;
    let pooled = pool::run(
        &pool,
        &control,
        &Connections(Arc::clone(&shared)),
        |tick| {
            let responses = tick.totals[RESPONSES];
            progress(Progress {
                elapsed: tick.elapsed,
                warmup: tick.warmup,
                responses,
                errors: tick.totals[ERRORS],
                last_second: responses.saturating_sub(reported),
            });
            reported = responses;
        },
        gate,
    )
    .map_err(|failure| match failure {
        pool::Failure::Thread(t, e) => EngineError::Thread(t, e),
        pool::Failure::Gate(why) => EngineError::Gate(why),
        pool::Failure::Setup(why) => EngineError::Setup(why),
        pool::Failure::Panicked => panic!("a worker thread panicked"),
    })?;
    let mut log = shared.feed.as_ref().map(crate::replay::Feed::finish);
    let elapsed = pooled.window(pooled.threads.iter().filter_map(|l| l.last_done).max());
    let mut merged = Stats::default();
    let mut stages = StageFigures::for_plan(shared.settings.schedule.plan.as_ref());
    let mut firsts = Firsts::default();
    let mut scenario = crate::scenario::Figures::default();
    let mut silent = Vec::new();
    let mut replay_due = 0;
    for local in pooled.threads {
        replay_due += local.replay_due;
        silent.push(local.silent);
        scenario.add(&local.scenario);
        merged += &local.stats;
        dyno_load::stages::add_all(&mut stages, &local.stages);
        firsts = firsts.or(local.firsts);
    }
    // A run cut short (-d, -n, Ctrl-C) replayed what fell due in it, not
    // what the reader had read ahead (the whole of a short log, perhaps).
    if let Some(log) = &mut log
        && replay_due < log.requests
    {
        log.requests = replay_due;
        log.cut = true;
    }
    // A target that never answered is no target lost: the run says so
    // as it is (refused, silent, no responses).
    if merged.responses == 0 {
        silent.clear();
    }
    let lost = dyno_load::silence::lost(
        silent,
        pooled.clock.measure_from,
        pooled.clock.measure_from + elapsed,
    );
    let silent = shared.silent.load(Ordering::Relaxed);
    Ok(Outcome {
        lost,
        stats: merged,
        stages,
        timeline: pooled.timeline,
        elapsed,
        wall: pooled.clock.start.elapsed(),
        cpu: pooled.cpu,
        cpu_wait: pooled.cpu_wait,
        interrupted: pooled.interrupted,
        refused: pooled.halted && firsts.protocol_failure.is_none() && !silent,
        silent,
        endpoint: shared.endpoint.clone(),
        tls_failure: firsts.tls_failure,
        tls_session: firsts.tls_session,
        server: firsts.server.map(String::from),
        protocol_failure: firsts.protocol_failure,
        malformed: firsts.malformed,
        started_at: pooled.started_at,
        replay: log.map(|log| Replayed {
            endpoints: std::mem::take(&mut scenario.steps),
            log,
        }),
        scenario: shared.settings.scenario.as_ref().map(|_| scenario),
    })
}

/// Checks settings before a run; [`run`] calls it too. A caller that must
/// set things up first (a store, a log file) calls it earlier, so a mistake
/// costs nothing.
pub fn validate(s: &Settings) -> Result<(), EngineError> {
    let bad = |m: &str| Err(EngineError::Settings(m.to_owned()));
    if let Some(scenario) = &s.scenario {
        if s.pipeline > 1 {
            return bad("a scenario's steps wait for each other's answers: drop --pipeline");
        }
        // A segment's users are numbered in the whole run: its last one
        // needs the data's row of that number.
        let per_connection = if s.http2 || s.http3 || !s.alpn.is_empty() {
            s.streams
        } else {
            1
        };
        let users = s
            .segment
            .global((s.connections * per_connection).max(1) as u64 - 1)
            + 1;
        if let Err(why) = scenario.check_users(users, s.segment.count > 1) {
            return Err(EngineError::Settings(why));
        }
        let threads = s.threads_used();
        if let Err(why) = scenario.check_figures(threads, dyno_env::available_memory()) {
            return Err(EngineError::Settings(why));
        }
    } else if s.requests.is_empty() {
        return bad("no request to send");
    }
    if let Some(replay) = &s.replay {
        if s.scenario.is_some() || s.schedule.rate_per_sec.is_some() || s.pipeline > 1 {
            return bad(
                "--replay takes its requests and their times from the log: drop --scenario, --rate, --rate-plan and --pipeline",
            );
        }
        if !(replay.speed.is_finite() && replay.speed > 0.0) {
            return bad("--speed must be a multiple above 0, e.g. 2 or 0.5");
        }
        if replay.looped && matches!(s.schedule.stop, Stop::LogEnds) {
            return bad("--loop replays the log again and again: end the run with -d or -n");
        }
    }
    if s.connections == 0 || s.threads == 0 || s.pipeline == 0 || s.streams == 0 {
        return bad("connections, threads, pipeline depth and streams must be at least 1");
    }
    if !s.alpn.is_empty() {
        if s.target.scheme != Scheme::Https {
            return bad(
                "ALPN is chosen in the TLS handshake: --alpn needs an https:// URL (for h2c use --h2)",
            );
        }
        if let Some(other) = s
            .alpn
            .iter()
            .find(|p| !matches!(p.as_str(), "h2" | "http/1.1"))
        {
            return Err(EngineError::Settings(format!(
                "--alpn offers h2 and http/1.1, not '{other}': e.g. --alpn h2,http/1.1"
            )));
        }
        if s.http2 {
            return bad(
                "--alpn lets the server choose the protocol; --h2 insists on HTTP/2: give one of them",
            );
        }
    }
    if s.http2 {
        if s.unix_socket.is_some() {
            return bad(
                "HTTP/2 over a Unix socket is not supported: --h2 takes an http:// (h2c) or https:// URL over TCP",
            );
        }
        if s.pipeline > 1 {
            return bad(
                "--pipeline is HTTP/1.1's; over HTTP/2 requests share a connection as streams: use -m/--streams",
            );
        }
        if !s.keep_alive {
            return bad("HTTP/2 always reuses its connections: leave keep-alive on with --h2");
        }
    } else if s.http3 {
        if s.target.scheme != Scheme::Https {
            return bad(
                "HTTP/3 runs over QUIC, which is always TLS 1.3: give the URL as https:// with --h3 (--insecure for a self-signed server)",
            );
        }
        if s.unix_socket.is_some() {
            return bad("HTTP/3 runs over UDP: --h3 cannot take a Unix socket");
        }
        if s.pipeline > 1 {
            return bad(
                "--pipeline is HTTP/1.1's; over HTTP/3 requests share a connection as streams: use -m/--streams",
            );
        }
        if !s.keep_alive {
            return bad("HTTP/3 always reuses its connections: leave keep-alive on with --h3");
        }
    } else if s.streams > 1 && !s.alpn.iter().any(|p| p == "h2") {
        return bad("streams (-m) are HTTP/2's: add --h2, or use --pipeline for HTTP/1.1");
    }
    if let Some(rate) = s.schedule.rate_per_sec
        && !(rate.is_finite() && rate > 0.0)
    {
        return bad("the rate must be a positive number of requests per second");
    }
    if let Stop::Requests(n) = s.schedule.stop
        && n == 0
    {
        return bad("the number of requests must be at least 1");
    }
    if let Some(ip) = s.source_addr {
        if s.unix_socket.is_some() {
            return bad("--source-addr is for TCP: a Unix socket has no source address");
        }
        // An address this machine does not have would fail every connect.
        if let Err(e) = std::net::TcpListener::bind((ip, 0)) {
            return Err(EngineError::Settings(format!(
                "--source-addr {ip}: cannot connect from that address ({e}); give one of this machine's own addresses (`ip addr` lists them), e.g. 127.0.0.2 for a loopback target"
            )));
        }
    }
    if s.unix_socket.is_some() && s.target.scheme == Scheme::Https {
        return bad(
            "TLS over a Unix socket is not supported: give the URL as http:// with --unix-socket",
        );
    }
    if let Some(path) = &s.unix_socket {
        // A missing socket is a mistake in the command, not a failure of
        // every request for the whole run.
        use std::os::unix::fs::FileTypeExt;
        match std::fs::metadata(path) {
            Err(_) => return Err(EngineError::NoSocket(path.clone())),
            Ok(m) if !m.file_type().is_socket() => {
                return Err(EngineError::NotASocket(path.clone()));
            }
            Ok(_) => {}
        }
    }
    Ok(())
}

fn resolve(s: &Settings) -> Result<SocketAddr, EngineError> {
    let host = s.target.host.trim_start_matches('[').trim_end_matches(']');
    (host, s.target.port)
        .to_socket_addrs()
        .map_err(|source| EngineError::Resolve {
            host: s.target.host.clone(),
            source,
        })?
        .next()
        .ok_or_else(|| EngineError::NoAddress(s.target.host.clone()))
}

/// Progress counter slots: measured responses, and errors.
const RESPONSES: usize = 0;
const ERRORS: usize = 1;

/// The connections of a run, as the worker pool's job.
struct Connections(Arc<Shared>);

/// A thread's connections, before and while they run.
struct ThreadState {
    local: Rc<RefCell<Local>>,
    /// The open model's connections, opened before the clock starts, until
    /// the load takes them.
    streams: RefCell<Vec<Option<Opened>>>,
}

/// A connection the open model opened before the clock started.
enum Opened {
    Tcp(Stream),
    /// Boxed: a TCP connection's task stays the size of its own state.
    Quic(Box<h3::Opened>),
}

impl pool::Job for Connections {
    type Slice = Interval;
    type State = ThreadState;
    type Done = Finished;
    type Error = String;

    /// The thread's share of the connections and of a run's `-n`; in the
    /// open model, its connections opened (as wrk2 does, so no request
    /// pays for a connect or a TLS handshake inside its latency; one that
    /// fails is tried again when its first request is due, and counted
    /// then).
    async fn setup(&self, thread: &pool::Thread<Interval>) -> Result<ThreadState, Self::Error> {
        let shared = &self.0;
        let settings = &shared.settings;
        let index = thread.index;
        let connections = thread.share(settings.connections as u64) as usize;
        let quota = match settings.schedule.stop {
            // A segment's own share of the whole run's n, then this
            // thread's share of that.
            Stop::Requests(n) => Some(thread.share(settings.segment.share(n))),
            Stop::Duration(_) | Stop::LogEnds => None,
        };
        // A replay's path templates count as a scenario's steps do.
        let steps = match (&settings.scenario, &settings.replay) {
            (Some(s), _) => s.step_count(),
            (None, Some(_)) => crate::replay::MAX_ENDPOINTS + 1,
            (None, None) => 0,
        };
        let local = Rc::new(RefCell::new(Local {
            stats: Stats::default(),
            stages: StageFigures::for_plan(settings.schedule.plan.as_ref()),
            seconds: thread.seconds(),
            quota,
            in_flight: 0,
            held: 0,
            schedules: Vec::new(),
            flow_schedule: None,
            published: thread.counters(),
            next_seq: index as u64,
            // Each thread, and each segment's thread, draws its own numbers.
            rng: fastrand::Rng::with_seed(
                settings.seed
                    ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    ^ u64::from(settings.segment.index).wrapping_mul(0xC2B2_AE3D_27D4_EB4F),
            ),
            last_done: None,
            silence: Silence::default(),
            step_in_flight: vec![0; steps],
            firsts: Firsts::default(),
            scenario: crate::scenario::Figures::new(
                steps,
                settings.scenario.as_ref().map_or(0, |s| s.flows.len()),
            ),
            replay: shared
                .feed
                .as_ref()
                .and_then(|feed| feed.take(index))
                .map(|r| Rc::new(replay::ReplaySchedule::new(r))),
            replayed: std::collections::HashMap::new(),
            replay_due: 0,
        }));
        // --0rtt: tickets for this thread's connections, before the clock.
        if settings.zero_rtt {
            h3::collect_tickets(shared, connections).await?;
        }
        if index == 0 {
            scenario::setup(shared, &local).await?;
        }
        let mut streams: Vec<Option<Opened>> = Vec::with_capacity(connections);
        if settings.open_model() && settings.http3 {
            let mut connecting = Vec::with_capacity(connections);
            for _ in 0..connections {
                let (shared, local) = (Arc::clone(shared), Rc::clone(&local));
                connecting.push(tokio::task::spawn_local(async move {
                    h3::open_early(&shared, &local).await
                }));
            }
            for c in connecting {
                // A server without HTTP/3 stops the run before it starts.
                let opened = c.await.ok().transpose()?.flatten();
                streams.push(opened.map(Opened::Quic));
            }
        } else if settings.open_model() {
            let mut connecting = Vec::with_capacity(connections);
            for _ in 0..connections {
                let shared = Arc::clone(shared);
                connecting.push(tokio::task::spawn_local(async move {
                    exchange::connect(&shared).await.ok()
                }));
            }
            for c in connecting {
                let stream = c.await.ok().flatten();
                if let Some(s) = &stream {
                    shared.connect_succeeded();
                    let mut l = local.borrow_mut();
                    if settings.schedule.warmup.is_zero() {
                        l.stats.connects += 1;
                    }
                    if l.firsts.tls_session.is_none() {
                        l.firsts.tls_session = s.tls_session();
                    }
                }
                streams.push(stream.map(Opened::Tcp));
            }
        }
        streams.resize_with(connections, || None);
        Ok(ThreadState {
            local,
            streams: RefCell::new(streams),
        })
    }

    async fn load(&self, thread: &pool::Thread<Interval>, state: &ThreadState) {
        let shared = &self.0;
        let read_buf = Rc::new(RefCell::new(vec![0u8; READ_BUF]));
        // The open model's due times need a finer clock than tokio's; if
        // no timerfd can be had, tokio's millisecond timer stands in.
        let timer = shared
            .settings
            .open_model()
            .then(Timer::new)
            .and_then(Result::ok);
        let mut tasks = JoinSet::new();
        for (c, stream) in state.streams.take().into_iter().enumerate() {
            let global = thread.index + c * thread.threads;
            let task = Task {
                shared: Arc::clone(shared),
                local: Rc::clone(&state.local),
                timer: timer.clone(),
                read_buf: Rc::clone(&read_buf),
                global,
            };
            tasks.spawn_local(driver(task, stream));
        }
        drop(timer);
        // The connections end by themselves (quota or deadline reached, no
        // new request started); the pool cuts a request still under way at
        // the deadline or an interrupt, which then counts as unfinished.
        while tasks.join_next().await.is_some() {}
    }

    fn finish(&self, thread: &pool::Thread<Interval>, state: ThreadState) -> Finished {
        let Ok(local) = Rc::try_unwrap(state.local) else {
            unreachable!("every task of the thread has ended")
        };
        let mut local = local.into_inner();
        let stopped = thread.control.stopped();
        local.stats.unfinished += local.in_flight;
        for (step, n) in local.scenario.steps.iter_mut().zip(&local.step_in_flight) {
            step.unfinished += n;
        }
        if !stopped {
            local.stats.dropped += local.held;
            for schedule in std::mem::take(&mut local.schedules) {
                schedule.borrow_mut().drop_rest(&self.0, &mut local);
            }
            if let Some(replay) = local.replay.take() {
                replay.drop_rest(&self.0, &mut local);
            }
        }
        local.stages.iter_mut().for_each(|s| s.close(stopped));
        let now = Instant::now();
        let end = match self.0.end() {
            Some(end) if !stopped => end,
            Some(end) => end.min(now),
            None => now,
        };
        Finished {
            silent: local.silence.end(
                self.0.measure_from(),
                end,
                (local.in_flight > 0).then(|| Duration::from_nanos(local.stats.latency.max())),
            ),
            stats: local.stats,
            stages: local.stages,
            last_done: local.last_done,
            firsts: local.firsts,
            scenario: local.scenario,
            replay_due: local.replay_due,
        }
    }
}

/// One connection's driver: HTTP/2 with `--h2`, HTTP/1.1 by default, and
/// with `--alpn`, whichever the server chose on the first connection (its
/// successors stay with that protocol: a server's choice does not change
/// between connections).
async fn driver(task: Task, opened: Option<Opened>) {
    let settings = &task.shared.settings;
    let mut stream = match opened {
        Some(Opened::Tcp(stream)) => Some(stream),
        Some(Opened::Quic(opened)) => {
            Box::pin(h3::h3_connection(task, Some(opened))).await;
            return;
        }
        None => None,
    };
    if settings.http3 {
        // Boxed, as HTTP/2 is: a plain HTTP/1.1 connection's task stays
        // the size of its own state.
        Box::pin(h3::h3_connection(task, None)).await;
        return;
    }
    let mut http2 = settings.http2;
    if !settings.alpn.is_empty() {
        if stream.is_none() {
            // Boxed: once connected, the connection's task need not keep
            // the space of a handshake.
            stream = Box::pin(exchange::connect(&task.shared)).await.ok();
        }
        let session = stream.as_ref().and_then(Stream::tls_session);
        if let Some(session) = &session {
            // Recorded whatever ALPN chose: the HTTP/1.1 driver is handed
            // this connection and does not look at its handshake again.
            task.local
                .borrow_mut()
                .firsts
                .tls_session
                .get_or_insert_with(|| session.clone());
        }
        http2 = match session {
            Some(session) => session.alpn.as_deref() == Some("h2"),
            // Not connected: the first choice, whose driver counts the
            // failures as it tries again.
            None => settings.alpn[0] == "h2",
        };
    }
    // HTTP/2 and scenarios are boxed, so that a plain HTTP/1.1
    // connection's task is the size of its own state, not of the largest.
    if http2 {
        Box::pin(h2::h2_connection(task, stream)).await;
    } else if settings.scenario.is_some() {
        Box::pin(scenario::virtual_user(task, stream)).await;
    } else {
        connection(task, stream).await;
    }
}

/// What a connection's task is handed: the run's state, its thread's
/// (its state, the open model's timer, the read buffer), and its index
/// among the run's connections.
struct Task {
    shared: Arc<Shared>,
    local: Rc<RefCell<Local>>,
    timer: Option<Timer>,
    read_buf: Rc<RefCell<Vec<u8>>>,
    global: usize,
}

impl Local {
    /// Records how late the send of a measured `ticket` was against its
    /// due time.
    pub(super) fn lateness(&mut self, ticket: &Ticket, late: Duration) {
        self.stats.lateness(late);
        if let Some(stage) = self.stages.get_mut(ticket.stage) {
            stage.sent(u64::try_from(late.as_nanos()).unwrap_or(u64::MAX));
        }
    }

    /// The figures of a scenario ticket's step.
    /// A scenario step's measured request took off (`true`) or ended.
    /// A measured request that was sent has ended (answered or failed): it
    /// leaves the counts of what is in flight, its step's and its stage's.
    fn landed(&mut self, ticket: &Ticket) {
        self.in_flight -= 1;
        self.step_flight(ticket, false);
        if let Some(stage) = self.stages.get_mut(ticket.stage) {
            stage.landed();
        }
    }

    fn step_flight(&mut self, ticket: &Ticket, up: bool) {
        if let Some(n) = ticket
            .step
            .and_then(|s| self.step_in_flight.get_mut(s as usize))
        {
            if up {
                *n += 1;
            } else {
                *n = n.saturating_sub(1);
            }
        }
    }

    /// A measured request that ended past the deadline (and its grace):
    /// unfinished, in the run's figures, its stage's and its step's.
    fn ended_late(&mut self, ticket: &Ticket) {
        self.stats.unfinished += 1;
        if let Some(stage) = self.stages.get_mut(ticket.stage) {
            stage.cut();
        }
        if let Some(step) = self.step(ticket) {
            step.unfinished += 1;
        }
    }

    fn step(&mut self, ticket: &Ticket) -> Option<&mut crate::scenario::StepStats> {
        ticket
            .step
            .and_then(|s| self.scenario.steps.get_mut(s as usize))
    }

    /// Publishes this thread's measured counts for the progress line.
    pub(super) fn publish(&self) {
        self.published.set(RESPONSES, self.stats.responses);
        self.published.set(ERRORS, self.stats.errors.total());
    }

    /// Records the answer to `ticket`, done at `done`, if it is measured:
    /// one in flight fewer, and past the deadline it is unfinished instead.
    /// `error`: the answer is not the one wanted (its status, or a
    /// scenario step's check or extraction).
    #[allow(clippy::too_many_arguments)]
    fn record_response(
        &mut self,
        shared: &Shared,
        ticket: &Ticket,
        done: Instant,
        status: u16,
        body_bytes: u64,
        timing: crate::stats::Timing,
        error: Option<ErrorClass>,
    ) {
        shared.answered();
        self.forget(ticket);
        if !ticket.measured {
            return;
        }
        self.landed(ticket);
        if shared.clock().over(done) {
            // Answered after the deadline (and its grace): not part of
            // the run.
            self.ended_late(ticket);
            return;
        }
        self.stats.response(status, body_bytes, timing);
        self.silence.answered(done);
        if let Some(step) = self.step(ticket) {
            step.response(body_bytes, timing);
            if let Some(class) = error {
                step.errors.record(class);
            }
        }
        let class = error;
        let error = error.is_some();
        // The same figure the run's latency histogram records.
        let latency = u64::try_from(timing.latency().as_nanos()).unwrap_or(u64::MAX);
        {
            let mut interval = self.seconds.at(shared.clock(), done);
            interval.responses += 1;
            let _ = interval.latency.record(latency);
            interval.errors += u64::from(error);
        }
        if let Some(class) = class {
            self.stats.errors.record(class);
        }
        if let Some(stage) = self.stages.get_mut(ticket.stage) {
            stage.ended(Some(latency), error);
        }
        self.publish();
        self.last_done = Some(done);
    }

    /// Counts a measured request as failed with `class`. `sent`: it was
    /// written (it was in flight), as opposed to failing to connect.
    /// A measured open-model ticket is held: taken from the schedule, or
    /// given back unanswered to go again (a GOAWAY's retry), until it is
    /// sent ([`Local::release`]).
    fn hold(&mut self, ticket: &Ticket) {
        if ticket.measured && ticket.due.is_some() {
            self.held += 1;
            if let Some(stage) = self.stages.get_mut(ticket.stage) {
                stage.awaits();
            }
        }
    }

    /// A replayed request's ticket has ended: its request is let go (an
    /// HTTP/1.1 exchange took it already; an HTTP/2 one keeps it until
    /// now, to send it again after a GOAWAY).
    #[inline]
    fn forget(&mut self, ticket: &Ticket) {
        if !self.replayed.is_empty() {
            self.replayed.remove(&ticket.seq);
        }
    }

    /// A held ticket is sent, or failed before it could be.
    fn release(&mut self, ticket: &Ticket) {
        if ticket.measured && ticket.due.is_some() {
            self.held -= 1;
            if let Some(stage) = self.stages.get_mut(ticket.stage) {
                stage.came();
            }
        }
    }

    fn record_error(&mut self, shared: &Shared, ticket: &Ticket, class: ErrorClass, sent: bool) {
        self.forget(ticket);
        if class == ErrorClass::ReadTimeout {
            shared.timed_out();
        }
        if !sent {
            self.release(ticket);
        }
        if ticket.measured {
            if sent {
                self.landed(ticket);
            }
            let now = Instant::now();
            if shared.clock().over(now) {
                // It failed after the deadline (and its grace): it did not
                // end in the run.
                self.ended_late(ticket);
                return;
            }
            self.stats.errors.record(class);
            if class.unanswered() {
                self.silence.failed(now);
            }
            if let Some(step) = self.step(ticket) {
                step.errors.record(class);
            }
            self.seconds.at(shared.clock(), now).errors += 1;
            if let Some(stage) = self.stages.get_mut(ticket.stage) {
                stage.ended(None, true);
            }
            self.last_done = Some(now);
            self.publish();
        }
    }
}
