//! The fault suite every load mode joins (methodology: "The servers every
//! load mode meets"): each mode below runs against each fault below, and
//! in every case the run ends in its time, its counts add up exactly, and
//! it says what happened. A new mode joins by adding one line to
//! [`MODES`]; a new fault, one line to [`FAULTS`].
//!
//! Each fault has an HTTP/1.1 server (`common`, plain threads) and an h2c
//! one (`common::h2c`, hyper's HTTP/2) that misbehave alike: the HTTP/2
//! "connection per request" is a GOAWAY after each answer (nginx's
//! `keepalive_requests 1`), its reset an RST_STREAM. A capacity search is
//! a mode too: against each fault it ends within its budget, judges every
//! step by what it measured, and claims no capacity for a target that
//! answers nothing. nginx itself (GOAWAY after `keepalive_requests`) is
//! met in the CLI's tests; the db engine meets its faults in
//! `crates/db/tests/suite.rs`.

#[allow(dead_code)]
mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use common::h2c::{self, H2Server, h2_server};
use common::{Conn, OK, Server, serve};
use dyno_http::capacity::Capacity;
use dyno_http::scenario::Scenario;
use dyno_http::{ErrorClass, HttpWarning, Outcome, Settings, Stop};
use dyno_load::capacity::Plan;
use dyno_load::plan::{RatePlan, Stage};
use dyno_load::search::Why;
use dyno_model::Judgement as _;
use dyno_testutil::suite::{LENGTH, SEARCH_BUDGET, SEARCH_STEP, SEARCH_WARMUP, SLACK, SLOW};

/// Requests of a count, flows of a scenario's count.
const COUNT: u64 = 60;
/// The open model's rate.
const RATE: f64 = 100.0;
/// When a dying server dies: after this many answers.
const DIES_AFTER: u64 = 20;
/// The requests' timeout: a stalled server is given up on after it.
const TIMEOUT: Duration = Duration::from_millis(500);
/// When the user's Ctrl-C comes.
const INTERRUPT: Duration = Duration::from_millis(700);
/// HTTP/2 streams per connection.
const STREAMS: usize = 4;

/// How a mode's counts must add up.
#[derive(Debug, Clone, Copy)]
enum Books {
    /// Exactly this many requests, each answered or failed.
    Requests(u64),
    /// Exactly this many flows, each completed or failed.
    Flows(u64),
    /// A duration in the closed model: whatever was sent is answered,
    /// failed or cut at the end.
    Sent,
    /// This many due times (requests), each answered, failed, cut or
    /// dropped.
    DueRequests(u64),
    /// This many due flows, each completed, failed, cut or dropped.
    DueFlows(u64),
}

/// What a mode is: a run whose books must add up, or a capacity search
/// whose every step's must.
#[derive(Debug, Clone, Copy)]
enum Shape {
    Run(Books),
    Search,
}

/// The protocol a mode speaks, so the fault's server speaks it too.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Wire {
    H1,
    H2,
}

/// One load mode: its name, its protocol, its settings against a server,
/// what it is.
struct Mode {
    name: &'static str,
    wire: Wire,
    settings: fn(SocketAddr, &tempfile::TempDir) -> Settings,
    shape: Shape,
}

#[rustfmt::skip]
const MODES: &[Mode] = &[
    Mode { name: "closed -n", wire: Wire::H1, settings: closed_count, shape: Shape::Run(Books::Requests(COUNT)) },
    Mode { name: "closed -d", wire: Wire::H1, settings: closed_duration, shape: Shape::Run(Books::Sent) },
    Mode { name: "open --rate", wire: Wire::H1, settings: open, shape: Shape::Run(Books::DueRequests(150)) },
    Mode { name: "stages --rate-plan", wire: Wire::H1, settings: stages, shape: Shape::Run(Books::DueRequests(150)) },
    Mode { name: "scenario -n", wire: Wire::H1, settings: scenario_count, shape: Shape::Run(Books::Flows(COUNT / 2)) },
    Mode { name: "scenario --rate", wire: Wire::H1, settings: scenario_open, shape: Shape::Run(Books::DueFlows(75)) },
    Mode { name: "--find-max", wire: Wire::H1, settings: search, shape: Shape::Search },
    Mode { name: "--h2 -n", wire: Wire::H2, settings: |a, d| h2(closed_count(a, d)), shape: Shape::Run(Books::Requests(COUNT)) },
    Mode { name: "--h2 -d", wire: Wire::H2, settings: |a, d| h2(closed_duration(a, d)), shape: Shape::Run(Books::Sent) },
    Mode { name: "--h2 --rate", wire: Wire::H2, settings: |a, d| h2(open(a, d)), shape: Shape::Run(Books::DueRequests(150)) },
    Mode { name: "--h2 scenario -n", wire: Wire::H2, settings: |a, d| h2(scenario_count(a, d)), shape: Shape::Run(Books::Flows(COUNT / 2)) },
    Mode { name: "--h2 --find-max", wire: Wire::H2, settings: |a, d| h2(search(a, d)), shape: Shape::Search },
];

/// One fault: its HTTP/1.1 server and its HTTP/2 one, what a run against
/// it must say, and what a search against it must find.
struct Fault {
    name: &'static str,
    h1: fn() -> Server,
    h2: h2c::Fault,
    says: fn(&Outcome, &Mode, &[HttpWarning]) -> Result<(), String>,
    searched: fn(&Capacity) -> Result<(), String>,
    /// The user's Ctrl-C, this long after the start.
    interrupt: Option<Duration>,
}

#[rustfmt::skip]
const FAULTS: &[Fault] = &[
    Fault { name: "closes the connection after every answer", h1: common::connection_close, h2: h2c::Fault::GracefulGoAwayAfter(1), says: closes_every_connection, searched: searched_without_errors, interrupt: None },
    Fault { name: "answers after 100 ms", h1: slow, h2: h2c::Fault::Slow(SLOW), says: answers_slowly, searched: searched_slowly, interrupt: None },
    Fault { name: "resets every request", h1: common::reset, h2: h2c::Fault::ResetEvery(1), says: resets, searched: claims_nothing, interrupt: None },
    Fault { name: "never answers", h1: common::stall, h2: h2c::Fault::StallAll, says: never_answers, searched: claims_nothing, interrupt: None },
    Fault { name: "dies after 20 answers", h1: dies, h2: h2c::Fault::DiesAfter(DIES_AFTER), says: died, searched: claims_nothing, interrupt: None },
    Fault { name: "answers in 100 ms, and the user presses Ctrl-C", h1: slow, h2: h2c::Fault::Slow(SLOW), says: interrupted, searched: search_interrupted, interrupt: Some(INTERRUPT) },
];

// ---------------------------------------------------------------------------
// The modes.

fn closed(addr: SocketAddr, stop: Stop) -> Settings {
    common::settings(&format!("http://{addr}/x"), stop, 2, TIMEOUT)
}

fn closed_count(addr: SocketAddr, _: &tempfile::TempDir) -> Settings {
    closed(addr, Stop::Requests(COUNT))
}

fn closed_duration(addr: SocketAddr, _: &tempfile::TempDir) -> Settings {
    closed(addr, Stop::Duration(LENGTH))
}

fn open(addr: SocketAddr, _: &tempfile::TempDir) -> Settings {
    let mut s = closed(addr, Stop::Duration(LENGTH));
    s.schedule.rate_per_sec = Some(RATE);
    s.connections = 20;
    s
}

fn stages(addr: SocketAddr, dir: &tempfile::TempDir) -> Settings {
    let mut s = open(addr, dir);
    let half = LENGTH / 2;
    let plan = RatePlan {
        stages: vec![
            Stage::Hold {
                rate: RATE / 2.0,
                duration: half,
            },
            Stage::Hold {
                rate: RATE * 1.5,
                duration: half,
            },
        ],
    };
    s.schedule.rate_per_sec = Some(plan.total() / LENGTH.as_secs_f64());
    s.schedule.plan = Some(plan);
    s
}

/// Two steps, the second with a value the first extracted from its
/// answer's body.
fn with_scenario(mut s: Settings, addr: SocketAddr, dir: &tempfile::TempDir) -> Settings {
    let file = dir.path().join("flow.toml");
    std::fs::write(
        &file,
        format!(
            "base = \"http://{addr}\"\n[[flow]]\nname = \"f\"\n[[flow.step]]\nname = \"first\"\nurl = \"/a\"\nextract = [{{ regex = 'h(e)llo', as = \"v\" }}]\n[[flow.step]]\nname = \"second\"\nurl = \"/b?v=${{v}}\"\n"
        ),
    )
    .unwrap();
    s.scenario = Some(Arc::new(Scenario::load(&file, None).unwrap()));
    s
}

fn scenario_count(addr: SocketAddr, dir: &tempfile::TempDir) -> Settings {
    with_scenario(closed(addr, Stop::Requests(COUNT / 2)), addr, dir)
}

fn scenario_open(addr: SocketAddr, dir: &tempfile::TempDir) -> Settings {
    let mut s = with_scenario(closed(addr, Stop::Duration(LENGTH)), addr, dir);
    s.schedule.rate_per_sec = Some(RATE / 2.0);
    s.connections = 20;
    s
}

/// A capacity search's settings; its steps are [`search_plan`]'s.
fn search(addr: SocketAddr, _: &tempfile::TempDir) -> Settings {
    let mut s = closed(addr, Stop::Duration(SEARCH_STEP));
    s.connections = 20;
    s
}

/// A short rate search from 40/s: four steps at most.
fn search_plan() -> Plan {
    dyno_testutil::suite::search_plan(40.0)
}

/// The same mode over HTTP/2, [`STREAMS`] streams per connection.
fn h2(mut s: Settings) -> Settings {
    s.http2 = true;
    s.streams = STREAMS;
    s
}

// ---------------------------------------------------------------------------
// The faults' servers.

fn slow() -> Server {
    serve(|mut c: Conn| {
        while c.next_request() {
            std::thread::sleep(SLOW);
            if !c.send(OK) {
                return;
            }
        }
    })
}

/// Answers [`DIES_AFTER`] requests, then resets every connection it has
/// or is given: a server process gone, its port answering nothing.
fn dies() -> Server {
    let answered = Arc::new(std::sync::atomic::AtomicU64::new(0));
    serve(move |mut c: Conn| {
        while c.next_request() {
            if answered.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= DIES_AFTER {
                c.reset();
                return;
            }
            if !c.send(OK) {
                return;
            }
        }
    })
}

// ---------------------------------------------------------------------------
// What each fault must make a run say, beyond its books.

fn errors(o: &Outcome) -> String {
    let named: Vec<String> = ErrorClass::ALL
        .into_iter()
        .filter(|&c| o.stats.errors.of(c) > 0)
        .map(|c| format!("{} {}", c.as_str(), o.stats.errors.of(c)))
        .collect();
    named.join(", ")
}

fn closes_every_connection(o: &Outcome, mode: &Mode, said: &[HttpWarning]) -> Result<(), String> {
    if o.stats.errors.total() > 0 {
        return Err(format!("errors: {}", errors(o)));
    }
    let (opened, answers) = (o.stats.connects, o.stats.responses);
    let streams = if mode.wire == Wire::H2 { STREAMS } else { 1 };
    if opened * streams as u64 + 2 < answers {
        return Err(format!("{opened} connections for {answers} answers"));
    }
    // A count of flows has fewer answers than the warning needs to judge.
    let named = said.iter().any(|w| w.code() == "server_closes_connections");
    if answers >= 50 && !named {
        return Err(format!("{}: not named as closing connections", mode.name));
    }
    Ok(())
}

fn answers_slowly(o: &Outcome, _: &Mode, _: &[HttpWarning]) -> Result<(), String> {
    if o.stats.errors.total() > 0 {
        return Err(format!("errors: {}", errors(o)));
    }
    let p50 = Duration::from_nanos(o.stats.latency.value_at_quantile(0.5));
    if p50 < SLOW {
        return Err(format!("p50 {p50:?} under the server's {SLOW:?}"));
    }
    Ok(())
}

fn resets(o: &Outcome, _: &Mode, said: &[HttpWarning]) -> Result<(), String> {
    let reset = o.stats.errors.of(ErrorClass::Reset) + o.stats.errors.of(ErrorClass::StreamReset);
    if o.stats.responses > 0 || reset == 0 {
        return Err(format!(
            "{} answers, errors: {}",
            o.stats.responses,
            errors(o)
        ));
    }
    if !said.iter().any(|w| w.code() == "no_responses") {
        return Err("not said that nothing was answered".into());
    }
    Ok(())
}

fn never_answers(o: &Outcome, _: &Mode, said: &[HttpWarning]) -> Result<(), String> {
    if o.stats.responses > 0 {
        return Err(format!(
            "{} answers from a server that gives none",
            o.stats.responses
        ));
    }
    let timed_out = o.stats.errors.of(ErrorClass::ReadTimeout) > 0 || o.stats.unfinished > 0;
    if !(o.silent || timed_out) {
        return Err(format!("neither silent nor timed out: {}", errors(o)));
    }
    if !said.iter().any(|w| w.code() == "no_responses") {
        return Err("not said that nothing was answered".into());
    }
    Ok(())
}

fn died(o: &Outcome, mode: &Mode, said: &[HttpWarning]) -> Result<(), String> {
    if o.stats.responses == 0 {
        return Err(format!("nothing answered before it died: {}", errors(o)));
    }
    if o.stats.errors.total() == 0 && o.stats.unfinished == 0 && o.stats.dropped == 0 {
        return Err("no request failed after it died".into());
    }
    // A run that goes on after the death by a second and more says the
    // target was lost; a count ends sooner, its failures counted.
    let timed = !matches!(mode.shape, Shape::Run(Books::Requests(_) | Books::Flows(_)));
    if timed && !said.iter().any(|w| w.code() == "target_lost") {
        return Err(format!("not said the target was lost: {}", errors(o)));
    }
    Ok(())
}

/// An interrupted run stops soon after the interrupt, says so, and
/// keeps what it measured.
fn interrupted(o: &Outcome, _: &Mode, said: &[HttpWarning]) -> Result<(), String> {
    if !o.interrupted || !said.iter().any(|w| w.code() == "interrupted") {
        return Err("not said it was interrupted".into());
    }
    if o.stats.errors.total() > 0 || o.stats.responses == 0 {
        return Err(format!(
            "{} answers, errors: {}",
            o.stats.responses,
            errors(o)
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// What each fault must make a search find, beyond each step's books.

/// An interrupted search says so and claims nothing it did not finish.
fn search_interrupted(c: &Capacity) -> Result<(), String> {
    if !c.interrupted || c.answer.outcome != dyno_model::record::CapacityOutcome::Interrupted {
        return Err(format!("not interrupted: {:?}", c.answer));
    }
    Ok(())
}

/// Every step of `c`, a line each.
fn steps(c: &Capacity) -> String {
    c.steps
        .iter()
        .map(|s| format!("\n    {:?}: {:?}", s.level, s.why))
        .collect()
}

fn searched_without_errors(c: &Capacity) -> Result<(), String> {
    let failed =
        |s: &&dyno_http::capacity::StepRun| s.why.iter().any(|w| matches!(w, Why::Errors { .. }));
    if c.steps.is_empty() || c.steps.iter().any(|s| failed(&s)) || !c.steps[0].passed() {
        return Err(format!(
            "a step failed on errors, or the first failed:{}",
            steps(c)
        ));
    }
    Ok(())
}

fn searched_slowly(c: &Capacity) -> Result<(), String> {
    searched_without_errors(c)?;
    for s in &c.steps {
        let p50 = Duration::from_nanos(s.outcome.outcome.stats.latency.value_at_quantile(0.5));
        if p50 < SLOW {
            return Err(format!(
                "{:?}: p50 {p50:?} under the server's {SLOW:?}",
                s.level
            ));
        }
    }
    Ok(())
}

/// A target that answers nothing (or stops answering) has no capacity: no
/// step passes, and the search ends without a rate.
fn claims_nothing(c: &Capacity) -> Result<(), String> {
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

fn books(o: &Outcome, books: Books) -> Result<(), String> {
    let s = &o.stats;
    // Every answer is in the latency histogram and under its status.
    let by_status: u64 = s.status.iter().map(|&(_, n)| n).sum();
    if s.latency.len() != s.responses || by_status != s.responses {
        return Err(format!(
            "{} answers, {} latencies, {by_status} statuses",
            s.responses,
            s.latency.len()
        ));
    }
    let flows = || {
        let f = o.scenario.as_ref().ok_or("no scenario figures")?;
        let (mut ended, mut cut) = (0, 0);
        for flow in &f.flows {
            ended += flow.completed + flow.failed;
            cut += flow.unfinished();
        }
        Ok::<_, String>((ended, cut))
    };
    // A run that gave up on its server (nothing listens, nothing answers)
    // or was interrupted stops before its count, and says so; nothing it
    // counted is lost. An interrupted run in time had fewer due.
    let gave_up = o.silent || o.refused || o.interrupted;
    let short = |counted: u64, due: u64| counted == due || (o.interrupted && counted < due);
    match books {
        Books::Requests(n) if gave_up && s.requests() + s.unfinished <= n => Ok(()),
        Books::Flows(n) if gave_up => match flows()? {
            (ended, cut) if ended + cut <= n => Ok(()),
            (ended, cut) => Err(format!("{ended} flows ended and {cut} cut for -n {n}")),
        },
        Books::Requests(n) if s.requests() != n || s.unfinished != 0 => Err(format!(
            "{} requests and {} unfinished for -n {n}",
            s.requests(),
            s.unfinished
        )),
        Books::Flows(n) => match flows()? {
            (ended, 0) if ended == n => Ok(()),
            (ended, cut) => Err(format!("{ended} flows ended and {cut} cut for -n {n}")),
        },
        Books::DueRequests(due) if !short(s.requests() + s.unfinished + s.dropped, due) => {
            Err(format!(
                "{} requests + {} unfinished + {} dropped for {due} due",
                s.requests(),
                s.unfinished,
                s.dropped
            ))
        }
        Books::DueFlows(due) => match flows()? {
            (ended, cut) if short(ended + cut + s.dropped, due) => Ok(()),
            (ended, cut) => Err(format!(
                "{ended} flows ended + {cut} cut + {} dropped for {due} due",
                s.dropped
            )),
        },
        _ => Ok(()),
    }
}

/// The longest a run may take: a count whose every request waits out a
/// timeout, or a duration and a timeout, and slack; a search, its budget
/// and a step over.
fn bound(s: &Settings, shape: Shape) -> Duration {
    if let Shape::Search = shape {
        return SEARCH_BUDGET + SEARCH_STEP + SEARCH_WARMUP + TIMEOUT + SLACK;
    }
    match s.schedule.stop {
        Stop::Requests(n) => {
            let per = TIMEOUT + SLOW + Duration::from_millis(100);
            per * u32::try_from(n).unwrap() + SLACK
        }
        Stop::Duration(d) => d + TIMEOUT + SLACK,
        Stop::LogEnds => unreachable!("the suite replays no log"),
    }
}

/// A fault's server, in the protocol of the mode that meets it.
enum Up {
    H1(Server),
    H2(H2Server),
}

impl Up {
    fn addr(&self) -> SocketAddr {
        match self {
            Up::H1(s) => s.addr(),
            Up::H2(s) => s.addr(),
        }
    }
}

/// Runs `mode` against `fault`'s server: what went wrong, if anything.
fn run_one(fault: &Fault, mode: &Mode) -> Result<(), String> {
    let server = match mode.wire {
        Wire::H1 => Up::H1((fault.h1)()),
        Wire::H2 => Up::H2(h2_server(fault.h2)),
    };
    let dir = tempfile::tempdir().unwrap();
    let settings = (mode.settings)(server.addr(), &dir);
    let limit = bound(&settings, mode.shape);
    let began = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let ctrl_c = fault.interrupt.map(|after| {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            std::thread::sleep(after);
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
        })
    });
    let verdict = match mode.shape {
        Shape::Run(expected) => {
            let outcome = dyno_http::run(settings.clone(), Arc::clone(&stop), |_| {})
                .expect("the run starts");
            let said = dyno_http::warnings::judge(&outcome, &settings);
            books(&outcome, expected).and_then(|()| (fault.says)(&outcome, mode, &said))
        }
        Shape::Search => {
            let mut engine = dyno_http::capacity::steps(&settings, Arc::clone(&stop), |_| {})
                .expect("the search starts");
            let capacity =
                dyno_load::capacity::drive(&search_plan(), &mut engine, None, &stop, |_| {})
                    .expect("the search runs");
            let step_books = capacity.steps.iter().try_for_each(|s| {
                books(&s.outcome.outcome, Books::Sent)
                    .map_err(|why| format!("{:?}: {why}", s.level))
            });
            step_books.and_then(|()| (fault.searched)(&capacity))
        }
    };
    let took = began.elapsed();
    let _ = ctrl_c.map(std::thread::JoinHandle::join);
    // Interrupted, a run ends within a timeout of the Ctrl-C.
    let limit = fault
        .interrupt
        .map_or(limit, |after| after + TIMEOUT + SLACK);
    if took > limit {
        return Err(format!("took {took:?}, more than {limit:?}"));
    }
    verdict
}

/// Runs every mode against `fault`; one line per mode that went wrong.
fn meet(fault: &Fault) {
    dyno_testutil::suite::meet(fault.name, MODES, |m| m.name, |mode| run_one(fault, mode));
}

dyno_testutil::fault_tests! {
    meet(FAULTS) {
        every_mode_meets_a_server_that_closes_every_connection => 0,
        every_mode_meets_a_slow_server => 1,
        every_mode_meets_a_server_that_resets => 2,
        every_mode_meets_a_server_that_never_answers => 3,
        every_mode_meets_a_server_that_dies_mid_run => 4,
        every_mode_meets_a_ctrl_c_mid_run => 5,
    }
}
