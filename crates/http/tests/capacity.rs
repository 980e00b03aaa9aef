//! `--find-max` end to end: the capacity search against servers of known
//! capacity on loopback.
//!
//! The fixture serves one request at a time, whatever the connections:
//! every request takes a lock and burns a fixed CPU time under it, so the
//! server's capacity is one over that time. The truth the search is held
//! to is measured, not assumed: the fixture records how long the lock was
//! held per request, so a slower machine (or a busier one) moves the truth
//! with the answer.

#[allow(dead_code)]
mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{OK, serve, settings};
use dyno_http::Stop;
use dyno_http::capacity::find_max;
use dyno_load::capacity::Plan;
use dyno_load::search::{Answer, Why};

/// A server that serves one request at a time, burning `work` of CPU on
/// each; returns it with the total busy time and count, for its capacity.
fn serial_server(
    work: Duration,
    overload: Option<(f64, u16)>,
) -> (common::Server, Arc<(AtomicU64, AtomicU64)>) {
    let lock = Arc::new(Mutex::new(()));
    let busy = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let counted = Arc::clone(&busy);
    // `overload`: above this many requests per second (over the last
    // 100 answers), answer with this status instead.
    let recent = Arc::new(Mutex::new(std::collections::VecDeque::<Instant>::new()));
    let server = serve(move |mut conn| {
        while conn.next_request() {
            let start = {
                let _held = lock.lock().unwrap();
                let start = Instant::now();
                while start.elapsed() < work {
                    std::hint::spin_loop();
                }
                let took = start.elapsed();
                counted
                    .0
                    .fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
                counted.1.fetch_add(1, Ordering::Relaxed);
                start
            };
            let answer: Vec<u8> = match overload {
                Some((limit, status)) => {
                    let mut r = recent.lock().unwrap();
                    r.push_back(start);
                    if r.len() > 100 {
                        r.pop_front();
                    }
                    let span = r.back().unwrap().duration_since(*r.front().unwrap());
                    let rate = (r.len() - 1) as f64 / span.as_secs_f64().max(1e-9);
                    if r.len() == 100 && rate > limit {
                        format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n").into_bytes()
                    } else {
                        OK.to_vec()
                    }
                }
                None => OK.to_vec(),
            };
            if !conn.send(&answer) {
                return;
            }
        }
    });
    (server, busy)
}

/// The tests of this file measure capacity: one at a time, so that they
/// do not share the CPUs with each other.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// The steps in a line each, for a failure's message.
fn steps(c: &dyno_http::capacity::Capacity) -> String {
    c.steps
        .iter()
        .map(|s| {
            format!(
                "\n  {} {:.0}: {:?}",
                s.step.purpose.name(),
                s.step.rate,
                s.step.why
            )
        })
        .collect()
}

fn plan(slo: &str, start: f64) -> Plan {
    Plan {
        slo: slo.parse().unwrap(),
        slo_text: slo.into(),
        start: Some(start),
        precision: 0.10,
        step: Duration::from_secs(2),
        warmup: Duration::from_millis(300),
        budget: Duration::from_secs(60),
    }
}

#[test]
fn finds_the_capacity_of_a_serial_server_within_ten_percent() {
    let _one = one_at_a_time();
    let (server, busy) = serial_server(Duration::from_millis(2), None);
    let url = format!("http://{}/", server.addr());
    let mut s = settings(
        &url,
        Stop::Duration(Duration::from_secs(1)),
        16,
        Duration::from_secs(5),
    );
    s.expect_status = dyno_http::StatusSet::parse("2xx").unwrap();
    let mut seen = 0;
    let capacity = find_max(
        &s,
        &plan("p99<=100ms,errors<=0.1%", 100.0),
        Arc::default(),
        None,
        |_| {},
        |_| seen += 1,
    )
    .unwrap();
    let (held, count) = (
        busy.0.load(Ordering::Relaxed),
        busy.1.load(Ordering::Relaxed),
    );
    let truth = 1e9 / (held as f64 / count as f64);
    let Answer::Found { max, above } = capacity.answer else {
        panic!("no answer: {:?}{}", capacity.answer, steps(&capacity));
    };
    assert!(
        (max - truth).abs() <= 0.10 * truth || (max <= truth && truth < above),
        "found {max}–{above}, the server's capacity is {truth:.0}{}",
        steps(&capacity)
    );
    assert!(above / max - 1.0 <= 0.10 + 1e-9);
    assert_eq!(seen, capacity.steps.len());
    // Every step ran at its own rate, the first at the start.
    assert_eq!(capacity.steps[0].step.rate, 100.0);
    assert!(capacity.steps[0].step.passed());
    assert!(!capacity.interrupted);
    // The figures are the step at the answer's rate.
    let figures = capacity.figures().unwrap();
    assert_eq!(figures.step.rate, max);
    assert!(figures.step.passed());
}

#[test]
fn an_error_target_fails_the_steps_where_the_server_sheds_load() {
    let _one = one_at_a_time();
    // Capacity ~1000/s, but above 300/s it answers 503.
    let (server, _) = serial_server(Duration::from_micros(200), Some((300.0, 503)));
    let url = format!("http://{}/", server.addr());
    let s = settings(
        &url,
        Stop::Duration(Duration::from_secs(1)),
        8,
        Duration::from_secs(5),
    );
    let mut s = s;
    s.expect_status = dyno_http::StatusSet::parse("2xx").unwrap();
    let capacity = find_max(
        &s,
        &plan("p99<=1s,errors<=1%", 100.0),
        Arc::default(),
        None,
        |_| {},
        |_| {},
    )
    .unwrap();
    let Answer::Found { max, above } = capacity.answer else {
        panic!("no answer: {:?}{}", capacity.answer, steps(&capacity));
    };
    assert!(
        max <= 330.0 && above > 270.0,
        "{max}–{above}{}",
        steps(&capacity)
    );
    assert!(
        capacity
            .steps
            .iter()
            .any(|s| s.step.why.iter().any(|w| matches!(w, Why::Errors { .. })))
    );
}

#[test]
fn a_target_no_rate_meets_ends_with_the_lowest_rate_tried() {
    let _one = one_at_a_time();
    // Every answer is a 500: no rate meets an error target.
    let server = serve(|mut conn| {
        while conn.next_request() {
            if !conn.send(b"HTTP/1.1 500 X\r\nContent-Length: 0\r\n\r\n") {
                return;
            }
        }
    });
    let url = format!("http://{}/", server.addr());
    let mut s = settings(
        &url,
        Stop::Duration(Duration::from_secs(1)),
        2,
        Duration::from_secs(5),
    );
    s.expect_status = dyno_http::StatusSet::parse("2xx").unwrap();
    let mut p = plan("errors<=1%", 64.0);
    p.step = Duration::from_millis(500);
    p.warmup = Duration::from_millis(100);
    let capacity = find_max(&s, &p, Arc::default(), None, |_| {}, |_| {}).unwrap();
    // The floor: a 0.5 s step must hold at least 10 requests, so 20/s.
    assert_eq!(
        capacity.answer,
        Answer::NoneMeets { lowest: 20.0 },
        "{}",
        steps(&capacity)
    );
    let rates: Vec<f64> = capacity.steps.iter().map(|s| s.step.rate).collect();
    assert_eq!(rates, [64.0, 32.0, 20.0], "{}", steps(&capacity));
}

#[test]
fn a_stop_before_the_first_step_ends_with_nothing_measured() {
    let _one = one_at_a_time();
    let (server, _) = serial_server(Duration::from_micros(100), None);
    let url = format!("http://{}/", server.addr());
    let s = settings(
        &url,
        Stop::Duration(Duration::from_secs(1)),
        2,
        Duration::from_secs(5),
    );
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let capacity = find_max(&s, &plan("p99<=10ms", 100.0), stop, None, |_| {}, |_| {}).unwrap();
    assert!(capacity.interrupted);
    assert!(capacity.steps.is_empty());
    assert!(capacity.figures().is_none());
}

#[test]
fn a_closed_port_is_an_error_before_any_step() {
    let _one = one_at_a_time();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/");
    let s = settings(
        &url,
        Stop::Duration(Duration::from_secs(1)),
        2,
        Duration::from_secs(1),
    );
    let mut p = plan("p99<=10ms", 100.0);
    p.start = None;
    let e = find_max(&s, &p, Arc::default(), None, |_| {}, |_| {}).unwrap_err();
    assert!(e.to_string().contains("refused"), "{e}");
}

/// The client-bound guard: a server whose answers cost the client far more
/// CPU than they cost the server (100,000 one-byte chunks, written from one
/// prepared buffer, each of which the client must parse) runs the client's
/// one thread out of CPU long before the server: the search says so and
/// claims no capacity of the server's.
#[test]
fn a_search_the_client_cannot_keep_up_with_claims_no_server_capacity() {
    let _one = one_at_a_time();
    let answer = {
        let mut a = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        for _ in 0..100_000 {
            a.extend_from_slice(b"1\r\nx\r\n");
        }
        a.extend_from_slice(b"0\r\n\r\n");
        Arc::new(a)
    };
    let server = serve(move |mut conn| {
        while conn.next_request() {
            if !conn.send(&answer) {
                return;
            }
        }
    });
    let url = format!("http://{}/", server.addr());
    let s = settings(
        &url,
        Stop::Duration(Duration::from_secs(1)),
        4,
        Duration::from_secs(10),
    );
    let mut p = plan("p99<=2s", 100.0);
    p.step = Duration::from_secs(1);
    p.warmup = Duration::from_millis(200);
    p.budget = Duration::from_secs(12);
    let capacity = find_max(&s, &p, Arc::default(), None, |_| {}, |_| {}).unwrap();
    let Answer::ClientBound { at, max } = capacity.answer else {
        panic!("{:?}{}", capacity.answer, steps(&capacity));
    };
    // It stopped at the first saturated step, and says what the client
    // managed there; a pass before it is not claimed as the server's.
    let last = &capacity.steps.last().unwrap().step;
    assert!(last.why.contains(&Why::ClientBound), "{}", steps(&capacity));
    assert_eq!(at, last.observation.achieved);
    assert!(at > 0.0);
    assert!(max.is_none_or(|m| m < last.rate), "{}", steps(&capacity));
    let run = dyno_http::capacity::record(
        &capacity,
        &p,
        dyno_model::Environment::default(),
        &dyno_http::Asked::default(),
    )
    .unwrap();
    assert!(run.metrics.iter().all(|m| m.name != "max_sustainable_rate"));
    assert_eq!(run.headline, None);
}
