//! The driver: worker threads, each with its own current-thread event loop,
//! its connections and its [`Stats`]; one loop per connection that takes
//! [`Ticket`]s from the schedule, sends, reads and records.
//!
//! No lock, channel message or atomic operation per request: a thread's
//! connections share its counters through `Rc<RefCell<…>>`, threads meet
//! once per second (the timeline) and once at the end.
//!
//! - this file: the threads, their shared and own state, the merge;
//! - `schedule`: which request comes next (closed quota or open timetable);
//! - `exchange`: a connection's loop — connect, send, read, frame, record.

mod exchange;
mod schedule;

use std::cell::RefCell;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio::task::LocalSet;

use self::exchange::{READ_BUF, connection};
use self::schedule::Ticket;
use crate::conn::Endpoint;
use crate::request::Scheme;
use crate::settings::{Settings, Stop};
use crate::stats::{ErrorClass, Interval, Stats};
use crate::timer::Timer;
use crate::tls::{TlsClient, TlsSession, TlsSetupError};

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
    #[error(transparent)]
    Tls(#[from] TlsSetupError),
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// All threads merged.
    pub stats: Stats,
    /// One merged entry per second of the measured part of the run.
    pub timeline: Vec<Interval>,
    /// From the end of warm-up to the last measured response.
    pub elapsed: Duration,
    /// Wall time of the whole run, warm-up included.
    pub wall: Duration,
    /// CPU time (user + system) the worker threads used.
    pub cpu: Duration,
    /// The run was stopped early (Ctrl-C).
    pub interrupted: bool,
    /// Where the connections went.
    pub endpoint: Endpoint,
    /// Why a TLS handshake failed: the first failure a worker thread saw
    /// (all of them are counted under [`ErrorClass::Tls`]); `None` when no
    /// handshake failed.
    pub tls_failure: Option<String>,
    /// What the first completed TLS handshake settled on (`https://` only).
    pub tls_session: Option<TlsSession>,
    /// The `Server` field of the first answer that had one (ab's "Server
    /// Software").
    pub server: Option<String>,
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
    /// Start of the run; measuring starts after the warm-up.
    start: Instant,
    measure_from: Instant,
    /// Closed model with a duration, and the open model: no request starts
    /// after this.
    end: Option<Instant>,
    stop: Arc<AtomicBool>,
}

impl Shared {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// A thread's own state, shared by its connections.
#[derive(Debug)]
struct Local {
    stats: Stats,
    interval: Interval,
    /// Closed model with `-n`: measured requests this thread may still start.
    quota: Option<u64>,
    /// Sequence numbers for `{seq}`: thread index + k × threads.
    next_seq: u64,
    rng: fastrand::Rng,
    last_done: Option<Instant>,
    /// CPU time this thread used.
    cpu: Duration,
    /// Why this thread's first failed TLS handshake failed.
    tls_failure: Option<String>,
    /// What this thread's first completed TLS handshake settled on.
    tls_session: Option<TlsSession>,
    /// The `Server` field of this thread's first answer that had one.
    server: Option<Box<str>>,
}

/// Adds one thread's interval to the timeline entry of the same second.
fn merge_interval(timeline: &mut Vec<Interval>, interval: &Interval) {
    let slot = match timeline.iter().position(|i| i.index == interval.index) {
        Some(at) => &mut timeline[at],
        None => {
            timeline.push(Interval::new(interval.index));
            timeline.last_mut().expect("just pushed")
        }
    };
    slot.responses += interval.responses;
    slot.errors += interval.errors;
    let _ = slot.latency.add(&interval.latency);
}

/// Runs the load test. `stop` ends it early (Ctrl-C); `progress` is called
/// about once a second from the calling thread.
pub fn run(
    settings: Settings,
    stop: Arc<AtomicBool>,
    mut progress: impl FnMut(Progress),
) -> Result<Outcome, EngineError> {
    validate(&settings)?;
    let endpoint = match &settings.unix_socket {
        Some(path) => Endpoint::Unix(path.clone()),
        None => Endpoint::Tcp(resolve(&settings)?),
    };
    let tls = match settings.target.scheme {
        Scheme::Https => Some(TlsClient::new(&settings.target.host, &settings.tls)?),
        Scheme::Http => None,
    };
    let threads = settings.threads.min(settings.connections).max(1);
    let start = Instant::now();
    let measure_from = start + settings.schedule.warmup;
    let end = match settings.schedule.stop {
        Stop::Duration(d) => Some(measure_from + d),
        Stop::Requests(_) => None,
    };
    let shared = Arc::new(Shared {
        settings,
        endpoint,
        tls,
        start,
        measure_from,
        end,
        stop,
    });
    let (tx, rx) = mpsc::channel::<Interval>();

    let mut merged = Stats::default();
    let mut timeline: Vec<Interval> = Vec::new();
    let mut last_done: Option<Instant> = None;
    let mut cpu = Duration::ZERO;
    let mut tls_failure = None;
    let mut tls_session = None;
    let mut server = None;
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for t in 0..threads {
            let for_thread = Arc::clone(&shared);
            let tx = tx.clone();
            let handle = std::thread::Builder::new()
                .name(format!("dyno-http-{t}"))
                .spawn_scoped(scope, move || worker(t, threads, &for_thread, tx))
                .map_err(|e| EngineError::Thread(t, e));
            match handle {
                Ok(h) => handles.push(h),
                Err(e) => {
                    shared.stop.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
        drop(tx);
        // The timeline: merge each second's intervals as threads send them,
        // and report progress once a second.
        let (mut responses, mut errors, mut reported) = (0, 0, 0);
        let mut next_tick = Instant::now() + Duration::from_secs(1);
        loop {
            match rx.recv_timeout(next_tick.saturating_duration_since(Instant::now())) {
                Ok(interval) => {
                    responses += interval.responses;
                    errors += interval.errors;
                    merge_interval(&mut timeline, &interval);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if Instant::now() >= next_tick {
                progress(Progress {
                    elapsed: shared.start.elapsed(),
                    warmup: Instant::now() < shared.measure_from,
                    responses,
                    errors,
                    last_second: responses - reported,
                });
                reported = responses;
                next_tick += Duration::from_secs(1);
            }
        }
        for h in handles {
            let local = h.join().expect("a worker thread panicked");
            merged += &local.stats;
            last_done = last_done.max(local.last_done);
            cpu += local.cpu;
            tls_failure = tls_failure.take().or(local.tls_failure);
            tls_session = tls_session.take().or(local.tls_session);
            server = server.take().or(local.server.map(String::from));
        }
        Ok(())
    })?;
    timeline.sort_by_key(|i| i.index);
    // Interval 0 is the warm-up; the timeline shows measured seconds.
    timeline.retain(|i| i.index > 0);
    let wall = start.elapsed();
    let elapsed = last_done.map_or(Duration::ZERO, |t| {
        t.saturating_duration_since(measure_from)
    });
    Ok(Outcome {
        stats: merged,
        timeline,
        elapsed,
        wall,
        cpu,
        interrupted: shared.stopped(),
        endpoint: shared.endpoint.clone(),
        tls_failure,
        tls_session,
        server,
    })
}

fn validate(s: &Settings) -> Result<(), EngineError> {
    let bad = |m: &str| Err(EngineError::Settings(m.to_owned()));
    if s.requests.is_empty() {
        return bad("no request to send");
    }
    if s.connections == 0 || s.threads == 0 || s.pipeline == 0 {
        return bad("connections, threads and pipeline depth must be at least 1");
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
    if s.unix_socket.is_some() && s.target.scheme == Scheme::Https {
        return bad("TLS over a Unix socket is not supported: use an http:// URL with the socket");
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

/// One worker thread: its event loop, its connections, its ticker.
fn worker(index: usize, threads: usize, shared: &Arc<Shared>, tx: mpsc::Sender<Interval>) -> Local {
    let settings = &shared.settings;
    // Connections of this thread: an even share, the first threads taking
    // the remainder.
    let share = |total: usize| total / threads + usize::from(index < total % threads);
    let connections = share(settings.connections);
    let quota = match settings.schedule.stop {
        Stop::Requests(n) => {
            let n = n as usize;
            Some(share(n) as u64)
        }
        Stop::Duration(_) => None,
    };
    let local = Rc::new(RefCell::new(Local {
        stats: Stats::default(),
        interval: Interval::new(0),
        quota,
        next_seq: index as u64,
        rng: fastrand::Rng::with_seed(
            settings.seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        ),
        last_done: None,
        cpu: Duration::ZERO,
        tls_failure: None,
        tls_session: None,
        server: None,
    }));
    let cpu_before = dyno_env::thread_cpu_time();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime builds");
    let set = LocalSet::new();
    set.block_on(&runtime, async {
        // Interval 0 is the warm-up; interval i ≥ 1 is the i-th second
        // after it. The ticker closes each one on time.
        let ticker = {
            let local = Rc::clone(&local);
            let shared = Arc::clone(shared);
            let tx = tx.clone();
            tokio::task::spawn_local(async move {
                for k in 0.. {
                    tokio::time::sleep_until((shared.measure_from + Duration::from_secs(k)).into())
                        .await;
                    flush_interval(&local, &tx, k + 1);
                }
            })
        };
        let read_buf = Rc::new(RefCell::new(vec![0u8; READ_BUF]));
        // The open model's due times need a finer clock than tokio's; if
        // no timerfd can be had, tokio's millisecond timer stands in.
        let timer = settings
            .schedule
            .rate_per_sec
            .and_then(|_| Timer::new().ok());
        let mut tasks = Vec::with_capacity(connections);
        for c in 0..connections {
            let global = index + c * threads;
            tasks.push(tokio::task::spawn_local(connection(
                Arc::clone(shared),
                Rc::clone(&local),
                timer.clone(),
                Rc::clone(&read_buf),
                global,
            )));
        }
        drop(timer);
        for t in tasks {
            let _ = t.await;
        }
        ticker.abort();
    });
    // Tasks hold clones of `local` until the event loop is gone.
    drop(set);
    drop(runtime);
    // The last, partial second.
    let last = local.borrow().interval.index;
    flush_interval(&local, &tx, last + 1);
    match Rc::try_unwrap(local) {
        Ok(local) => {
            let mut local = local.into_inner();
            local.cpu = dyno_env::thread_cpu_time().saturating_sub(cpu_before);
            local
        }
        Err(_) => unreachable!("every task of the thread has ended"),
    }
}

/// Sends this thread's current interval to the coordinator and starts the
/// next one.
fn flush_interval(local: &Rc<RefCell<Local>>, tx: &mpsc::Sender<Interval>, next_index: u64) {
    let mut l = local.borrow_mut();
    let finished = std::mem::replace(&mut l.interval, Interval::new(next_index));
    let _ = tx.send(finished);
}

impl Local {
    fn record_error(&mut self, ticket: &Ticket, class: ErrorClass) {
        if ticket.measured {
            self.stats.error(class);
            self.interval.errors += 1;
            self.last_done = Some(Instant::now());
        }
    }
}
