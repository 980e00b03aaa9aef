//! The driver: worker threads, each with its own current-thread event loop,
//! its connections and its [`Stats`]; one loop per connection that takes
//! [`Ticket`]s from the schedule, sends, reads and records.
//!
//! No lock, channel message or atomic operation per request: a thread's
//! connections share its counters through `Rc<RefCell<…>>`, threads meet
//! once per second (the timeline) and once at the end.

use std::cell::{RefCell, RefMut};
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::task::Poll;
use std::time::{Duration, Instant};

use tokio::io::ReadBuf;
use tokio::task::LocalSet;

use crate::conn::{ConnectError, Endpoint, Stream};
use crate::parse::{ResponseParser, Step};
use crate::request::Scheme;
use crate::settings::{Settings, Stop};
use crate::stats::{ErrorClass, Interval, Stats, Timing};
use crate::timer::Timer;
use crate::tls::{TlsClient, TlsSetupError};

/// Why a load test could not run at all (per-request failures are counted,
/// not raised).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot resolve '{host}': {source}")]
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

/// One request to make.
#[derive(Debug, Clone, Copy)]
struct Ticket {
    seq: u64,
    /// Open model: when it is due.
    due: Option<Instant>,
    /// False for warm-up requests.
    measured: bool,
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

/// CPU time (user + system) of the calling thread so far. Counting each
/// worker's own thread keeps a server running in the same process (the
/// built-in target) out of the client's figure.
fn thread_cpu_time() -> Duration {
    // SAFETY: getrusage only writes the struct we hand it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
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
    }));
    let cpu_before = thread_cpu_time();
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
            local.cpu = thread_cpu_time().saturating_sub(cpu_before);
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
    /// The next request for a closed-model connection, or `None` when the
    /// run is over.
    fn closed_ticket(&mut self, shared: &Shared, threads: u64) -> Option<Ticket> {
        if shared.stopped() {
            return None;
        }
        let now = Instant::now();
        let measured = now >= shared.measure_from;
        if measured {
            if let Some(end) = shared.end
                && now >= end
            {
                return None;
            }
            if let Some(quota) = &mut self.quota {
                if *quota == 0 {
                    return None;
                }
                *quota -= 1;
            }
        }
        let seq = self.next_seq;
        self.next_seq += threads;
        Some(Ticket {
            seq,
            due: None,
            measured,
        })
    }

    fn record_error(&mut self, ticket: &Ticket, class: ErrorClass) {
        if ticket.measured {
            self.stats.error(class);
            self.interval.errors += 1;
            self.last_done = Some(Instant::now());
        }
    }
}

/// The open-model schedule of one connection: request k of the whole run
/// is due at start + k / rate and goes to connection k mod connections.
#[derive(Debug)]
struct OpenSchedule {
    connection: u64,
    connections: u64,
    interval_ns: f64,
    next: u64,
    /// Index of the first measured request (after the warm-up).
    first_measured: u64,
    /// One past the last request index, when the run is a request count.
    limit: Option<u64>,
}

impl OpenSchedule {
    fn new(shared: &Shared, connection: usize, rate: f64) -> Self {
        let interval_ns = 1e9 / rate;
        let warm = shared.settings.schedule.warmup.as_nanos() as f64;
        let first_measured = (warm / interval_ns).ceil() as u64;
        let limit = match shared.settings.schedule.stop {
            Stop::Requests(n) => Some(first_measured + n),
            Stop::Duration(_) => None,
        };
        OpenSchedule {
            connection: connection as u64,
            connections: shared.settings.connections as u64,
            interval_ns,
            next: connection as u64,
            first_measured,
            limit,
        }
    }

    fn due(&self, shared: &Shared, k: u64) -> Instant {
        shared.start + Duration::from_nanos((k as f64 * self.interval_ns) as u64)
    }

    /// The next request of this connection, counting the ones that fell due
    /// before the end but could not be sent as dropped.
    fn ticket(&mut self, shared: &Shared, local: &RefCell<Local>) -> Option<Ticket> {
        let k = self.next;
        if self.limit.is_some_and(|limit| k >= limit) {
            return None;
        }
        let due = self.due(shared, k);
        if let Some(end) = shared.end
            && due >= end
        {
            return None;
        }
        if shared.stopped() {
            return None;
        }
        if let Some(end) = shared.end {
            // Requests due while this connection was busy past the end are
            // never sent: count them instead of pretending they were not due.
            let now = Instant::now();
            if now >= end {
                let mut dropped = 0;
                let mut j = k;
                while self.due(shared, j) < end {
                    dropped += u64::from(j >= self.first_measured);
                    j += self.connections;
                }
                local.borrow_mut().stats.dropped += dropped;
                return None;
            }
        }
        self.next += self.connections;
        debug_assert_eq!(k % self.connections, self.connection);
        Some(Ticket {
            seq: k,
            due: Some(due),
            measured: k >= self.first_measured,
        })
    }
}

/// A connection's reusable state. It owns no read buffer: every connection
/// of a thread reads into the thread's one buffer ([`READ_BUF`]), and only
/// bytes left unconsumed (a partial head, or an answer that arrived early)
/// are kept here, so 10,000 idle connections cost next to nothing.
#[derive(Debug)]
struct Conn {
    stream: Option<Stream>,
    /// Received bytes not yet consumed by the parser.
    pending: Vec<u8>,
    /// Requests with placeholders, or several pipelined, are written here;
    /// a single static request is written straight from its template.
    write_buf: Vec<u8>,
    parser: ResponseParser,
}

/// The read buffer every connection of a thread shares. Bodies are counted
/// as they arrive and never kept, so one buffer per thread suffices.
const READ_BUF: usize = 64 * 1024;

/// The driver loop of one connection: take a ticket (or a batch of them
/// when pipelining), connect if needed, send, read, record, repeat.
async fn connection(
    shared: Arc<Shared>,
    local: Rc<RefCell<Local>>,
    timer: Option<Timer>,
    read_buf: Rc<RefCell<Vec<u8>>>,
    global_index: usize,
) {
    let settings = &shared.settings;
    let threads = settings.threads.min(settings.connections).max(1) as u64;
    let mut open = settings
        .schedule
        .rate_per_sec
        .map(|rate| OpenSchedule::new(&shared, global_index, rate));
    let depth = if open.is_some() { 1 } else { settings.pipeline };
    let mut conn = Conn {
        stream: None,
        pending: Vec::new(),
        write_buf: Vec::new(),
        parser: ResponseParser::default(),
    };
    let mut batch: Vec<Ticket> = Vec::with_capacity(depth);
    let mut backoff = Duration::ZERO;
    loop {
        batch.clear();
        {
            for _ in 0..depth {
                let ticket = match &mut open {
                    Some(schedule) => schedule.ticket(&shared, &local),
                    None => local.borrow_mut().closed_ticket(&shared, threads),
                };
                match ticket {
                    Some(t) => batch.push(t),
                    None => break,
                }
            }
        }
        if batch.is_empty() {
            break;
        }
        match (batch[0].due, &timer) {
            (Some(due), Some(timer)) => timer.sleep_until(due).await,
            (Some(due), None) => tokio::time::sleep_until(due.into()).await,
            (None, _) => {}
        }
        match exchange(&shared, &local, &read_buf, &mut conn, &batch).await {
            Ok(()) => backoff = Duration::ZERO,
            Err(Failure::Connect(class)) => {
                for t in &batch {
                    local.borrow_mut().record_error(t, class);
                }
                // Do not spin on a refusing server; the schedule goes on.
                backoff = (backoff * 2).clamp(Duration::from_millis(1), Duration::from_millis(100));
                if open.is_none() {
                    tokio::time::sleep(backoff).await;
                }
            }
            Err(Failure::Request { done, class }) => {
                let mut l = local.borrow_mut();
                for t in &batch[done..] {
                    l.record_error(t, class);
                }
                conn.stream = None;
            }
        }
    }
}

/// How an exchange failed.
#[derive(Debug)]
enum Failure {
    /// No connection could be made; no request was sent.
    Connect(ErrorClass),
    /// The first `done` requests of the batch were answered; the rest failed.
    Request { done: usize, class: ErrorClass },
}

/// Sends a batch of requests on the connection (connecting first if
/// needed) and reads their responses.
async fn exchange(
    shared: &Shared,
    local: &RefCell<Local>,
    read_buf: &RefCell<Vec<u8>>,
    conn: &mut Conn,
    batch: &[Ticket],
) -> Result<(), Failure> {
    let settings = &shared.settings;
    let measured = batch.iter().any(|t| t.measured);
    let mut connect_time = Duration::ZERO;
    if conn.stream.is_none() {
        let began = Instant::now();
        let connect = Stream::connect(&shared.endpoint, shared.tls.as_ref());
        let stream = match tokio::time::timeout(settings.connect_timeout, connect).await {
            Err(_) => return Err(Failure::Connect(ErrorClass::ConnectTimeout)),
            Ok(Err(ConnectError::Transport(e))) => return Err(Failure::Connect(connect_class(&e))),
            Ok(Err(ConnectError::Handshake(e))) => {
                local
                    .borrow_mut()
                    .tls_failure
                    .get_or_insert_with(|| e.to_string());
                return Err(Failure::Connect(ErrorClass::Tls));
            }
            Ok(Ok(s)) => s,
        };
        connect_time = began.elapsed();
        conn.stream = Some(stream);
        conn.pending.clear();
        if measured {
            local.borrow_mut().stats.connects += 1;
        }
    }

    let template_of =
        |t: &Ticket| &settings.requests[(t.seq % settings.requests.len() as u64) as usize];
    let request: &[u8] = match (batch, template_of(&batch[0]).static_bytes()) {
        ([_], Some(bytes)) => bytes,
        _ => {
            conn.write_buf.clear();
            let mut l = local.borrow_mut();
            let Local { rng, .. } = &mut *l;
            for t in batch {
                template_of(t).write(t.seq, rng, &mut conn.write_buf);
            }
            &conn.write_buf
        }
    };
    let stream = conn.stream.as_mut().expect("connected above");
    let sent = Instant::now();
    if let Some(due) = batch[0].due
        && batch[0].measured
    {
        local
            .borrow_mut()
            .stats
            .lateness(sent.saturating_duration_since(due));
    }
    let fail = |done: usize, class: ErrorClass| Failure::Request { done, class };
    match tokio::time::timeout(settings.timeout, stream.write_all(request)).await {
        Err(_) => return Err(fail(0, ErrorClass::ReadTimeout)),
        Ok(Err(e)) => return Err(fail(0, io_class(&e, ErrorClass::Write))),
        Ok(Ok(())) => {}
    }
    if measured {
        local.borrow_mut().stats.bytes_written += request.len() as u64;
    }

    // Read until every response of the batch is framed. Bytes are parsed
    // straight from the thread's buffer; what the parser leaves (a partial
    // head, the start of the next answer) moves to `conn.pending`.
    let mut reader = Reader {
        local,
        batch,
        settings,
        sent,
        connect_time,
        next: 0,
        first_byte: None,
        keep: settings.keep_alive,
    };
    conn.parser.start(template_of(&batch[0]).is_head());
    if !conn.pending.is_empty() {
        let pending = std::mem::take(&mut conn.pending);
        reader.first_byte = Some(Instant::now());
        let used = reader.consume(&mut conn.parser, &pending)?;
        conn.pending = pending;
        conn.pending.drain(..used);
    }
    while reader.next < batch.len() {
        let stream = conn.stream.as_mut().expect("connected");
        let (buf, n) = match tokio::time::timeout(settings.timeout, read(stream, read_buf)).await {
            Err(_) => return Err(fail(reader.next, ErrorClass::ReadTimeout)),
            Ok(Err(e)) => return Err(fail(reader.next, io_class(&e, ErrorClass::ClosedEarly))),
            Ok(Ok(read)) => read,
        };
        match n {
            0 => {
                // The peer closed: that ends a close-delimited body, or
                // cuts the answer short.
                let response = conn
                    .parser
                    .eof()
                    .map_err(|e| fail(reader.next, e.class()))?;
                reader.keep = false;
                reader.record(response);
                if reader.next < batch.len() {
                    return Err(fail(reader.next, ErrorClass::ClosedEarly));
                }
            }
            n => {
                reader.first_byte.get_or_insert_with(Instant::now);
                if batch[reader.next].measured {
                    local.borrow_mut().stats.bytes_read += n as u64;
                }
                if conn.pending.is_empty() {
                    let used = reader.consume(&mut conn.parser, &buf[..n])?;
                    conn.pending.extend_from_slice(&buf[used..n]);
                } else {
                    conn.pending.extend_from_slice(&buf[..n]);
                    let pending = std::mem::take(&mut conn.pending);
                    let used = reader.consume(&mut conn.parser, &pending);
                    conn.pending = pending;
                    conn.pending.drain(..*used.as_ref().unwrap_or(&0));
                    used?;
                }
            }
        }
    }
    if !reader.keep {
        conn.stream = None;
    }
    Ok(())
}

/// The read step: waits until the stream has bytes (or has ended), reads
/// them into the thread's shared buffer, and returns that buffer borrowed,
/// with how many bytes came (0: the peer closed).
///
/// The buffer is borrowed inside each poll only, never across an await: a
/// connection waiting here leaves it to the thread's other connections.
/// The borrow handed back is taken in the poll that read the bytes, so no
/// other connection can run between reading them and parsing them; the
/// caller drops it before its next await.
async fn read<'b>(
    stream: &mut Stream,
    shared: &'b RefCell<Vec<u8>>,
) -> io::Result<(RefMut<'b, Vec<u8>>, usize)> {
    std::future::poll_fn(|cx| {
        let mut buf = shared.borrow_mut();
        let mut read = ReadBuf::new(&mut buf);
        match stream.poll_read(cx, &mut read) {
            Poll::Ready(Ok(())) => {
                let n = read.filled().len();
                Poll::Ready(Ok((buf, n)))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// The read side of one exchange: which response of the batch comes next,
/// and the timings that go with it.
struct Reader<'a> {
    local: &'a RefCell<Local>,
    batch: &'a [Ticket],
    settings: &'a Settings,
    sent: Instant,
    connect_time: Duration,
    /// Index in the batch of the response being read.
    next: usize,
    first_byte: Option<Instant>,
    keep: bool,
}

impl Reader<'_> {
    /// Feeds `data` to the parser, recording every response it completes;
    /// returns how many bytes were consumed (the rest must be kept).
    fn consume(&mut self, parser: &mut ResponseParser, data: &[u8]) -> Result<usize, Failure> {
        let mut used = 0;
        while self.next < self.batch.len() && used < data.len() {
            match parser.feed(&data[used..]) {
                Ok(Step::NeedMore(n)) => {
                    used += n;
                    break;
                }
                Ok(Step::Done(n, response)) => {
                    used += n;
                    self.record(response);
                    if let Some(t) = self.batch.get(self.next) {
                        let template = &self.settings.requests
                            [(t.seq % self.settings.requests.len() as u64) as usize];
                        parser.start(template.is_head());
                        // Its bytes, if any, are already here.
                        self.first_byte = (used < data.len()).then(Instant::now);
                    }
                }
                Err(e) => {
                    return Err(Failure::Request {
                        done: self.next,
                        class: e.class(),
                    });
                }
            }
        }
        Ok(used)
    }

    /// Records the response to `batch[next]` and moves on.
    fn record(&mut self, response: crate::parse::Response) {
        let ticket = self.batch[self.next];
        let done = Instant::now();
        self.keep &= response.keep_alive;
        if ticket.measured {
            let mut l = self.local.borrow_mut();
            let timing = Timing {
                connect: if self.next == 0 {
                    self.connect_time
                } else {
                    Duration::ZERO
                },
                waiting: self
                    .first_byte
                    .unwrap_or(done)
                    .saturating_duration_since(self.sent),
                processing: done.saturating_duration_since(self.sent),
                corrected: ticket.due.map(|due| done.saturating_duration_since(due)),
            };
            l.stats
                .response(response.status, response.body_bytes, timing);
            l.interval.responses += 1;
            let total = timing
                .corrected
                .unwrap_or(timing.connect + timing.processing);
            let _ = l
                .interval
                .latency
                .record(u64::try_from(total.as_nanos()).unwrap_or(u64::MAX));
            if self.settings.fail_status && response.status >= 400 {
                l.stats.error(ErrorClass::Status);
                l.interval.errors += 1;
            }
            l.last_done = Some(done);
        }
        self.next += 1;
    }
}

fn connect_class(e: &io::Error) -> ErrorClass {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => ErrorClass::ConnectRefused,
        io::ErrorKind::TimedOut => ErrorClass::ConnectTimeout,
        _ => ErrorClass::ConnectOther,
    }
}

fn io_class(e: &io::Error, otherwise: ErrorClass) -> ErrorClass {
    match e.kind() {
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::ConnectionAborted => ErrorClass::Reset,
        io::ErrorKind::TimedOut => ErrorClass::ReadTimeout,
        _ => otherwise,
    }
}
