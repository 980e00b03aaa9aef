//! The fault suite every load mode joins (methodology: "The servers every
//! load mode meets"): each mode below runs against each fault below, and
//! in every case the run ends in its time, its counts add up exactly, and
//! it says what happened. A new mode joins by adding one line to
//! [`MODES`]; a new fault, one line to [`FAULTS`].
//!
//! HTTP/2 meets its faults against nginx (GOAWAY, `keepalive_requests`)
//! and hyper's server in `tests/h2.rs` and the CLI's tests; the db engine
//! meets a server terminated mid-run and an unreachable one in the CLI's
//! db tests. The servers here speak HTTP/1.1.

#[allow(dead_code)]
mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use common::{Conn, OK, Server, serve};
use dyno_http::scenario::Scenario;
use dyno_http::{ErrorClass, HttpWarning, Outcome, Settings, Stop};
use dyno_load::plan::{RatePlan, Stage};
use dyno_model::Judgement as _;

/// Requests of a count, flows of a scenario's count.
const COUNT: u64 = 60;
/// A duration run's length.
const LENGTH: Duration = Duration::from_millis(1500);
/// The open model's rate.
const RATE: f64 = 100.0;
/// What a slow server takes to answer.
const SLOW: Duration = Duration::from_millis(100);
/// When a dying server dies: after this many answers.
const DIES_AFTER: u64 = 20;
/// The requests' timeout: a stalled server is given up on after it.
const TIMEOUT: Duration = Duration::from_millis(500);
/// Added to every bound on a run's wall time (a busy machine).
const SLACK: Duration = Duration::from_secs(10);

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

/// One load mode: its name, its settings against a server, its books.
struct Mode {
    name: &'static str,
    settings: fn(SocketAddr, &tempfile::TempDir) -> Settings,
    books: Books,
}

const MODES: &[Mode] = &[
    Mode {
        name: "closed -n",
        settings: closed_count,
        books: Books::Requests(COUNT),
    },
    Mode {
        name: "closed -d",
        settings: closed_duration,
        books: Books::Sent,
    },
    Mode {
        name: "open --rate",
        settings: open,
        books: Books::DueRequests(150),
    },
    Mode {
        name: "stages --rate-plan",
        settings: stages,
        books: Books::DueRequests(150),
    },
    Mode {
        name: "scenario -n",
        settings: scenario_count,
        books: Books::Flows(COUNT / 2),
    },
    Mode {
        name: "scenario --rate",
        settings: scenario_open,
        books: Books::DueFlows(75),
    },
];

/// One fault: a server that has it, and what a run against it must say.
struct Fault {
    name: &'static str,
    server: fn() -> Server,
    says: fn(&Outcome, &Mode, &[HttpWarning]) -> Result<(), String>,
}

const FAULTS: &[Fault] = &[
    Fault {
        name: "Connection: close on every answer",
        server: common::connection_close,
        says: closes_every_connection,
    },
    Fault {
        name: "answers after 100 ms",
        server: slow,
        says: answers_slowly,
    },
    Fault {
        name: "resets every request",
        server: common::reset,
        says: resets,
    },
    Fault {
        name: "never answers",
        server: common::stall,
        says: never_answers,
    },
    Fault {
        name: "dies after 20 answers",
        server: dies,
        says: died,
    },
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
        .filter(|&c| o.stats.errors_of(c) > 0)
        .map(|c| format!("{} {}", c.as_str(), o.stats.errors_of(c)))
        .collect();
    named.join(", ")
}

fn closes_every_connection(o: &Outcome, mode: &Mode, said: &[HttpWarning]) -> Result<(), String> {
    if o.stats.total_errors() > 0 {
        return Err(format!("errors: {}", errors(o)));
    }
    let (opened, answers) = (o.stats.connects, o.stats.responses);
    if opened + 2 < answers {
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
    if o.stats.total_errors() > 0 {
        return Err(format!("errors: {}", errors(o)));
    }
    let p50 = Duration::from_nanos(o.stats.latency.value_at_quantile(0.5));
    if p50 < SLOW {
        return Err(format!("p50 {p50:?} under the server's {SLOW:?}"));
    }
    Ok(())
}

fn resets(o: &Outcome, _: &Mode, said: &[HttpWarning]) -> Result<(), String> {
    if o.stats.responses > 0 || o.stats.errors_of(ErrorClass::Reset) == 0 {
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
    let timed_out = o.stats.errors_of(ErrorClass::ReadTimeout) > 0 || o.stats.unfinished > 0;
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
    if o.stats.total_errors() == 0 && o.stats.unfinished == 0 && o.stats.dropped == 0 {
        return Err("no request failed after it died".into());
    }
    // A run that goes on after the death by a second and more says the
    // target was lost; a count ends sooner, its failures counted.
    let timed = !matches!(mode.books, Books::Requests(_) | Books::Flows(_));
    if timed && !said.iter().any(|w| w.code() == "target_lost") {
        return Err(format!("not said the target was lost: {}", errors(o)));
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
    // stops before its count, and says so; nothing it counted is lost.
    let gave_up = o.silent || o.refused;
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
        Books::DueRequests(due) if s.requests() + s.unfinished + s.dropped != due => Err(format!(
            "{} requests + {} unfinished + {} dropped for {due} due",
            s.requests(),
            s.unfinished,
            s.dropped
        )),
        Books::DueFlows(due) => match flows()? {
            (ended, cut) if ended + cut + s.dropped == due => Ok(()),
            (ended, cut) => Err(format!(
                "{ended} flows ended + {cut} cut + {} dropped for {due} due",
                s.dropped
            )),
        },
        _ => Ok(()),
    }
}

/// The longest a run may take: a count whose every request waits out a
/// timeout, or a duration and a timeout, and slack.
fn bound(s: &Settings) -> Duration {
    match s.schedule.stop {
        Stop::Requests(n) => {
            let per = TIMEOUT + SLOW + Duration::from_millis(100);
            per * u32::try_from(n).unwrap() + SLACK
        }
        Stop::Duration(d) => d + TIMEOUT + SLACK,
    }
}

/// Runs every mode against `fault`; one line per mode that went wrong.
fn meet(fault: &Fault) {
    let mut wrong = Vec::new();
    for mode in MODES {
        let server = (fault.server)();
        let dir = tempfile::tempdir().unwrap();
        let settings = (mode.settings)(server.addr(), &dir);
        let limit = bound(&settings);
        let began = Instant::now();
        let outcome = dyno_http::run(settings.clone(), Arc::new(AtomicBool::new(false)), |_| {})
            .expect("the run starts");
        let took = began.elapsed();
        let said = dyno_http::warnings::judge(&outcome, &settings);
        let verdict = if took > limit {
            Err(format!("took {took:?}, more than {limit:?}"))
        } else {
            books(&outcome, mode.books).and_then(|()| (fault.says)(&outcome, mode, &said))
        };
        if let Err(why) = verdict {
            wrong.push(format!(
                "{} against a server that {}: {why}",
                mode.name, fault.name
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

#[test]
fn every_mode_meets_a_server_that_closes_every_connection() {
    meet(&FAULTS[0]);
}

#[test]
fn every_mode_meets_a_slow_server() {
    meet(&FAULTS[1]);
}

#[test]
fn every_mode_meets_a_server_that_resets() {
    meet(&FAULTS[2]);
}

#[test]
fn every_mode_meets_a_server_that_never_answers() {
    meet(&FAULTS[3]);
}

#[test]
fn every_mode_meets_a_server_that_dies_mid_run() {
    meet(&FAULTS[4]);
}
