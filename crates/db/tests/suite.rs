//! The fault suite's db column (methodology: "The servers every load mode
//! meets"; the HTTP modes' is `crates/http/tests/suite.rs`): each load
//! mode of `dyno db run` below runs against the real PostgreSQL server
//! `scripts/pg` starts, through a proxy that gives it each fault below, and
//! in every case the run ends in its time, its transactions add up, and it
//! says what happened. A new mode joins by adding one line to [`MODES`]; a
//! new fault, one line to [`FAULTS`].
//!
//! The proxy reads the client's messages and acts on each simple-protocol
//! query (`Q`), which is how the suite's clients send their transactions;
//! the engine's own session before the load (the server's version and
//! settings) speaks the extended protocol and passes untouched, so a
//! fault meets the load, not the set-up. PostgreSQL does not close a
//! session after each answer, so HTTP's "closes every connection" has no
//! db fault; the rest do.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use dyno_db::DbWarning;
use dyno_db::run::{Outcome, Protocol, RunSettings, Stop, Weighted};
use dyno_db::script::{self, Script};
use dyno_model::Judgement as _;
use dyno_testutil::suite::{LENGTH, SEARCH_BUDGET, SEARCH_STEP, SLACK, SLOW};

/// Clients of every mode, and transactions of each in a count.
const CLIENTS: usize = 2;
const EACH: u64 = 10;
/// The open model's rate.
const RATE: f64 = 40.0;
/// When a dying server dies: after this many queries.
const DIES_AFTER: u64 = 12;
/// How long a duration run waits for the transactions under way at its
/// end (`db run`'s is ten seconds; a search step's is its objective's).
const GRACE: Duration = Duration::from_millis(500);
/// A count against a server that never answers waits as pgbench does;
/// the suite's Ctrl-C comes after this.
const INTERRUPT_AFTER: Duration = Duration::from_secs(3);

/// How a mode's transactions must add up.
#[derive(Debug, Clone, Copy)]
enum Books {
    /// Each client runs [`EACH`]: all committed or failed, unless a
    /// client aborted or the run was interrupted.
    Count,
    /// A duration in the closed model.
    Sent,
    /// This many due times, each committed, failed, cut, skipped or
    /// dropped.
    Due(u64),
}

#[derive(Debug, Clone, Copy)]
enum Shape {
    Run(Books),
    Search,
}

struct Mode {
    name: &'static str,
    settings: fn(&str) -> RunSettings,
    shape: Shape,
}

#[rustfmt::skip]
const MODES: &[Mode] = &[
    Mode { name: "db -t", settings: count, shape: Shape::Run(Books::Count) },
    Mode { name: "db -T", settings: duration, shape: Shape::Run(Books::Sent) },
    Mode { name: "db -R", settings: open, shape: Shape::Run(Books::Due(60)) },
    Mode { name: "db --find-max", settings: search, shape: Shape::Search },
];

/// What the proxy does to each query of the load.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// Holds each query this long before the server sees it.
    Slow(Duration),
    /// Resets the session (RST) on its first query.
    Reset,
    /// Passes no query on: the server never answers (a lock held
    /// forever, a frozen disk).
    Stall,
    /// Passes this many queries, then the server is gone: every session
    /// is reset at its next query, and every new one at once.
    DiesAfter(u64),
}

struct Case {
    name: &'static str,
    fault: Fault,
    says: fn(&Outcome, &Mode, &[DbWarning]) -> Result<(), String>,
    searched: fn(&dyno_db::capacity::Capacity) -> Result<(), String>,
    /// The user's Ctrl-C, this long after the start.
    interrupt: Option<Duration>,
}

#[rustfmt::skip]
const FAULTS: &[Case] = &[
    Case { name: "answers after 100 ms", fault: Fault::Slow(SLOW), says: answers_slowly, searched: searched_slowly, interrupt: None },
    Case { name: "resets every session", fault: Fault::Reset, says: resets, searched: claims_nothing, interrupt: None },
    Case { name: "never answers", fault: Fault::Stall, says: never_answers, searched: claims_nothing, interrupt: None },
    Case { name: "dies after 12 queries", fault: Fault::DiesAfter(DIES_AFTER), says: died, searched: claims_nothing, interrupt: None },
    Case { name: "answers in 100 ms, and the user presses Ctrl-C", fault: Fault::Slow(SLOW), says: interrupted, searched: search_interrupted, interrupt: Some(Duration::from_millis(700)) },
];

// ---------------------------------------------------------------------------
// The modes.

/// `SELECT 1` a transaction, by the simple protocol, [`CLIENTS`] clients
/// on one thread, against `url`.
fn settings(url: &str, stop: Stop) -> RunSettings {
    let target = dyno_db::Target::new(url, |_| None).expect("the proxy's URL is a target");
    let script = Script::parse("one", "SELECT 1;\n").expect("the script parses");
    RunSettings {
        scripts: vec![Weighted { script, weight: 1 }],
        clients: CLIENTS,
        threads: 1,
        stop,
        protocol: Protocol::Simple,
        scale: Some(1),
        seed: 1,
        default_seed: script::default_seed(1, CLIENTS as u64),
        grace: GRACE,
        ..dyno_db::quick::settings(target, LENGTH, 1, 1)
    }
}

fn count(url: &str) -> RunSettings {
    settings(url, Stop::Transactions(EACH))
}

fn duration(url: &str) -> RunSettings {
    settings(url, Stop::Duration(LENGTH))
}

fn open(url: &str) -> RunSettings {
    let mut s = settings(url, Stop::Duration(LENGTH));
    s.rate = Some(RATE);
    s.clients = 4;
    s.default_seed = script::default_seed(1, 4);
    s
}

/// A search's settings: eight clients, so a server that answers in
/// 100 ms carries 80 a second.
fn search(url: &str) -> RunSettings {
    let mut s = duration(url);
    s.clients = 8;
    s.default_seed = script::default_seed(1, 8);
    s
}

/// A short rate search from 20/s: four steps at most.
fn search_plan() -> dyno_load::capacity::Plan {
    dyno_testutil::suite::search_plan(20.0)
}

// ---------------------------------------------------------------------------
// What each fault must make a run say, beyond its books.

fn failures(o: &Outcome) -> String {
    format!(
        "{} committed, failed {:?}, {} unfinished, aborted {:?}, lost {:?} in {:?}",
        o.transactions, o.failed, o.unfinished, o.aborted, o.lost, o.elapsed
    )
}

fn lost(said: &[DbWarning]) -> bool {
    said.iter().any(|w| w.code() == "target_lost")
}

fn answers_slowly(o: &Outcome, _: &Mode, _: &[DbWarning]) -> Result<(), String> {
    if o.failed_total() > 0 || !o.aborted.is_empty() || o.transactions == 0 {
        return Err(failures(o));
    }
    let p50 = Duration::from_nanos(o.latency.value_at_quantile(0.5));
    if p50 < SLOW {
        return Err(format!("p50 {p50:?} under the server's {SLOW:?}"));
    }
    Ok(())
}

/// A server that ends every session at its first query has nothing
/// committed, and every client says why it stopped (what `db run` prints,
/// failing the run): the server ended nothing, so no spell of it is lost.
fn resets(o: &Outcome, mode: &Mode, _: &[DbWarning]) -> Result<(), String> {
    let said = o
        .aborted
        .iter()
        .all(|why| why.contains("the connection to the server was lost"));
    if o.transactions > 0 || o.aborted.len() != clients(mode) || !said {
        return Err(failures(o));
    }
    Ok(())
}

fn never_answers(o: &Outcome, mode: &Mode, said: &[DbWarning]) -> Result<(), String> {
    if o.transactions > 0 {
        return Err(failures(o));
    }
    if o.unfinished == 0 {
        return Err(format!("nothing cut: {}", failures(o)));
    }
    timed_lost(mode, said, o)
}

fn died(o: &Outcome, mode: &Mode, said: &[DbWarning]) -> Result<(), String> {
    if o.transactions == 0 || o.transactions > DIES_AFTER {
        return Err(format!(
            "not what it answered before it died: {}",
            failures(o)
        ));
    }
    if o.aborted.is_empty() {
        return Err(format!("no client stopped when it died: {}", failures(o)));
    }
    timed_lost(mode, said, o)
}

/// The clients a mode runs.
fn clients(mode: &Mode) -> usize {
    (mode.settings)("postgres://x@127.0.0.1:1/x").clients
}

/// A run in time (a duration, a rate) says the target was lost; a count
/// ends when its clients stop, and says so by them.
fn timed_lost(mode: &Mode, said: &[DbWarning], o: &Outcome) -> Result<(), String> {
    let timed = !matches!(mode.shape, Shape::Run(Books::Count));
    if timed && !lost(said) {
        return Err(format!(
            "not said the target was lost: {said:?}; {}",
            failures(o)
        ));
    }
    Ok(())
}

/// An interrupted run says so and keeps what it measured.
fn interrupted(o: &Outcome, _: &Mode, _: &[DbWarning]) -> Result<(), String> {
    if !o.interrupted || o.transactions == 0 || o.failed_total() > 0 || !o.aborted.is_empty() {
        return Err(format!("interrupted {}: {}", o.interrupted, failures(o)));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// What each fault must make a search find.

/// An interrupted search says so and claims nothing it did not finish.
fn search_interrupted(c: &dyno_db::capacity::Capacity) -> Result<(), String> {
    if !c.interrupted || c.answer.outcome != dyno_model::record::CapacityOutcome::Interrupted {
        return Err(format!("not interrupted: {:?}", c.answer));
    }
    Ok(())
}

fn steps(c: &dyno_db::capacity::Capacity) -> String {
    c.steps
        .iter()
        .map(|s| format!("\n    {:?}: {:?}", s.level, s.why))
        .collect()
}

fn searched_slowly(c: &dyno_db::capacity::Capacity) -> Result<(), String> {
    if c.steps.is_empty() || !c.steps[0].passed() {
        return Err(format!("the first step failed:{}", steps(c)));
    }
    for s in &c.steps {
        let (o, _) = &s.outcome;
        if o.failed_total() > 0 || !o.aborted.is_empty() {
            return Err(format!("{:?}: {}", s.level, failures(o)));
        }
        let p50 = Duration::from_nanos(o.latency.value_at_quantile(0.5));
        if p50 < SLOW {
            return Err(format!("{:?}: p50 {p50:?} under {SLOW:?}", s.level));
        }
    }
    Ok(())
}

/// A target that answers nothing, or stops answering, has no capacity.
fn claims_nothing(c: &dyno_db::capacity::Capacity) -> Result<(), String> {
    if c.answer.max_rate.is_some() || c.steps.iter().any(|s| s.passed()) {
        return Err(format!("claimed {:?}:{}", c.answer, steps(c)));
    }
    if c.steps.is_empty() && c.lost_target.is_none() {
        return Err("no step ran, and no lost target was named".into());
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The books.

fn books(o: &Outcome, books: Books, clients: usize) -> Result<(), String> {
    let in_seconds: u64 = o.timeline.iter().map(|s| s.transactions).sum();
    if o.latency.len() != o.transactions || in_seconds != o.transactions {
        return Err(format!(
            "{} committed, {} latencies, {in_seconds} in the timeline",
            o.transactions,
            o.latency.len()
        ));
    }
    // Each client that stopped on an error ended the transaction it was
    // in (the suite measures from the start: no warm-up).
    let ended = o.transactions + o.failed_total() + o.aborted.len() as u64;
    match books {
        Books::Count => {
            let asked = clients as u64 * EACH;
            let whole = o.aborted.is_empty() && !o.interrupted;
            if (whole && (ended != asked || o.unfinished != 0)) || ended + o.unfinished > asked {
                return Err(format!(
                    "{ended} ended and {} unfinished of {asked}: {}",
                    o.unfinished,
                    failures(o)
                ));
            }
        }
        Books::Sent => {}
        Books::Due(due) => {
            // Interrupted, fewer came due.
            let counted = ended + o.unfinished + o.skipped + o.dropped;
            if counted != due && !(o.interrupted && counted < due) {
                return Err(format!(
                    "{counted} counted ({} skipped, {} dropped) for {due} due: {}",
                    o.skipped,
                    o.dropped,
                    failures(o)
                ));
            }
        }
    }
    Ok(())
}

/// The longest a mode may take: interrupted, a grace after the Ctrl-C.
fn bound(mode: &Mode, interrupt: Option<Duration>) -> Duration {
    if let Some(after) = interrupt {
        return after + GRACE + SLACK;
    }
    match mode.shape {
        Shape::Search => SEARCH_BUDGET + 2 * SEARCH_STEP + GRACE + SLACK,
        Shape::Run(Books::Count) => INTERRUPT_AFTER + SLOW * EACH as u32 + SLACK,
        Shape::Run(_) => LENGTH + GRACE + SLACK,
    }
}

/// Runs `mode` through a proxy with `case`'s fault: what went wrong.
fn run_one(pg: &dyno_testutil::pg::Pg, case: &Case, mode: &Mode) -> Result<(), String> {
    let proxy = Proxy::start(upstream(pg), case.fault);
    let url = proxy_url(pg, proxy.addr);
    let settings = (mode.settings)(&url);
    let stop = Arc::new(AtomicBool::new(false));
    // A count waits for its transactions as pgbench does; the user's
    // Ctrl-C ends it, with what it measured.
    let count = matches!(mode.shape, Shape::Run(Books::Count));
    let after = case.interrupt.or(count.then_some(INTERRUPT_AFTER));
    let interrupt = after.map(|after| {
        let stop = Arc::clone(&stop);
        thread::spawn(move || {
            let began = Instant::now();
            while began.elapsed() < after && !stop.load(Ordering::Relaxed) {
                thread::sleep(Duration::from_millis(20));
            }
            stop.store(true, Ordering::Relaxed);
        })
    });
    let began = Instant::now();
    let verdict = match mode.shape {
        Shape::Run(expected) => match dyno_db::run::run(&settings, Arc::clone(&stop), |_| {}) {
            Ok(outcome) => {
                let said = dyno_db::warnings::judge(&outcome, &settings, None);
                books(&outcome, expected, settings.clients)
                    .and_then(|()| (case.says)(&outcome, mode, &said))
            }
            Err(e) => Err(format!("the run did not start: {e}")),
        },
        Shape::Search => {
            let mut engine = dyno_db::capacity::steps(&settings, Arc::clone(&stop), |_| {});
            match dyno_load::capacity::drive(&search_plan(), &mut engine, None, &stop, |_| {}) {
                Ok(capacity) => capacity
                    .steps
                    .iter()
                    .try_for_each(|s| {
                        books(&s.outcome.0, Books::Sent, s.outcome.1.clients)
                            .map_err(|why| format!("{:?}: {why}", s.level))
                    })
                    .and_then(|()| (case.searched)(&capacity)),
                Err(e) => Err(format!("the search did not start: {e}")),
            }
        }
    };
    let took = began.elapsed();
    stop.store(true, Ordering::Relaxed);
    if let Some(t) = interrupt {
        let _ = t.join();
    }
    let limit = bound(mode, case.interrupt);
    if took > limit {
        return Err(format!("took {took:?}, more than {limit:?}"));
    }
    verdict
}

/// Runs every mode against `case`'s fault; one line per mode that went
/// wrong.
fn meet(case: &Case) {
    let pg = dyno_testutil::pg::Pg::from_env();
    dyno_testutil::suite::meet(
        case.name,
        MODES,
        |m| m.name,
        |mode| run_one(&pg, case, mode),
    );
}

dyno_testutil::fault_tests! {
    meet(FAULTS) {
        every_db_mode_meets_a_slow_server => 0,
        every_db_mode_meets_a_server_that_resets => 1,
        every_db_mode_meets_a_server_that_never_answers => 2,
        every_db_mode_meets_a_server_that_dies_mid_run => 3,
        every_db_mode_meets_a_ctrl_c_mid_run => 4,
    }
}

// ---------------------------------------------------------------------------
// The proxy.

/// The cluster's TCP address.
fn upstream(pg: &dyno_testutil::pg::Pg) -> SocketAddr {
    let port = pg
        .url
        .rsplit_once(':')
        .and_then(|(_, tail)| tail.split('/').next())
        .and_then(|p| p.parse::<u16>().ok())
        .expect("the cluster's URL names its port");
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// The cluster's URL with the proxy's port.
fn proxy_url(pg: &dyno_testutil::pg::Pg, proxy: SocketAddr) -> String {
    let (head, tail) = pg.url.rsplit_once(':').expect("a URL with a port");
    let path = tail.split_once('/').map_or("", |(_, p)| p);
    format!("{head}:{}/{path}", proxy.port())
}

/// A TCP proxy in front of the cluster with a fault; dropping it stops
/// it and every session through it.
struct Proxy {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.acceptor.take().map(JoinHandle::join);
    }
}

/// How long a blocked read waits before it looks at the stop flag.
const POLL: Duration = Duration::from_millis(50);

impl Proxy {
    fn start(upstream: SocketAddr, fault: Fault) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let queries = Arc::new(AtomicU64::new(0));
        let acceptor = {
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                let mut sessions = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    let client = match listener.accept() {
                        Ok((c, _)) => c,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            thread::sleep(Duration::from_millis(5));
                            continue;
                        }
                        Err(_) => continue,
                    };
                    let _ = client.set_nonblocking(false);
                    if let Fault::DiesAfter(n) = fault
                        && queries.load(Ordering::SeqCst) >= n
                    {
                        reset(&client);
                        continue;
                    }
                    let (stop, queries) = (Arc::clone(&stop), Arc::clone(&queries));
                    sessions.push(thread::spawn(move || {
                        let _ = session(client, upstream, fault, &stop, &queries);
                    }));
                }
                for s in sessions {
                    let _ = s.join();
                }
            })
        };
        Proxy {
            addr,
            stop,
            acceptor: Some(acceptor),
        }
    }
}

/// Closes `stream` with RST (`SO_LINGER` 0) rather than FIN.
fn reset(stream: &TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket descriptor and a correctly sized `struct
    // linger` that outlives the call.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            std::ptr::from_ref(&linger).cast(),
            size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "setsockopt: {}", io::Error::last_os_error());
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

/// Reads exactly `buf.len()` bytes, looking at `stop` between waits;
/// `false` when the peer closed or the proxy stopped.
fn read_exact(stream: &mut TcpStream, buf: &mut [u8], stop: &AtomicBool) -> bool {
    let mut got = 0;
    while got < buf.len() {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        match stream.read(&mut buf[got..]) {
            Ok(0) => return false,
            Ok(n) => got += n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}

/// One session: the server's bytes copied back as they come; the
/// client's read message by message, each simple query given the fault.
fn session(
    mut client: TcpStream,
    upstream: SocketAddr,
    fault: Fault,
    stop: &Arc<AtomicBool>,
    queries: &AtomicU64,
) -> io::Result<()> {
    let mut server = TcpStream::connect(upstream)?;
    server.set_nodelay(true)?;
    client.set_nodelay(true)?;
    client.set_read_timeout(Some(POLL))?;
    let back = {
        let (mut from, mut to, stop) = (server.try_clone()?, client.try_clone()?, Arc::clone(stop));
        from.set_read_timeout(Some(POLL))?;
        thread::spawn(move || {
            let mut buf = [0u8; 16 * 1024];
            while !stop.load(Ordering::SeqCst) {
                match from.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                        ) => {}
                    Err(_) => break,
                }
            }
            let _ = to.shutdown(std::net::Shutdown::Write);
        })
    };
    // The startup message, after any SSL or GSS request the server
    // declines: a length, then the body, no type byte.
    let mut typed = false;
    let mut held = false;
    loop {
        let mut head = [0u8; 5];
        let at = if typed { 0 } else { 1 };
        if !read_exact(&mut client, &mut head[at..], stop) {
            break;
        }
        let length = u32::from_be_bytes(head[1..5].try_into().unwrap()) as usize;
        let mut body = vec![0u8; length.saturating_sub(4)];
        if !read_exact(&mut client, &mut body, stop) {
            break;
        }
        let request_code = body
            .get(..4)
            .map(|c| u32::from_be_bytes(c.try_into().unwrap()));
        if !typed && !matches!(request_code, Some(80_877_103 | 80_877_104)) {
            typed = true;
        } else if typed && head[0] == b'Q' && !held {
            match fault {
                Fault::Slow(by) => thread::sleep(by),
                Fault::Reset => {
                    reset(&client);
                    break;
                }
                // Read on, pass nothing: the client waits for an answer.
                Fault::Stall => held = true,
                Fault::DiesAfter(n) => {
                    if queries.fetch_add(1, Ordering::SeqCst) >= n {
                        reset(&client);
                        break;
                    }
                }
            }
        }
        if held {
            continue;
        }
        server.write_all(&head[at..])?;
        server.write_all(&body)?;
    }
    let _ = server.shutdown(std::net::Shutdown::Both);
    let _ = back.join();
    Ok(())
}
