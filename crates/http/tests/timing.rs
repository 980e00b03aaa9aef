//! When connections open and what the progress line and the open model's
//! send-lag figures say, against real loopback servers.

/// The fault tests' servers; this binary uses one of them.
#[allow(dead_code)]
mod common;

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use dyno_http::{Progress, Settings, Stop};

fn settings(addr: SocketAddr, stop: Stop) -> Settings {
    common::settings(
        &format!("http://{addr}/hello"),
        stop,
        4,
        Duration::from_secs(10),
    )
}

fn reference_server() -> dyno_serve::ServerHandle {
    dyno_serve::spawn(TcpListener::bind("127.0.0.1:0").expect("bind"), 1).expect("serve")
}

#[test]
fn the_open_model_connects_every_connection_before_its_schedule() {
    // 20 requests/s for 1 s over 50 connections: request k goes to
    // connection k, so each of the 20 used to open its connection when it
    // was due, and pay the connect inside its latency.
    let server = reference_server();
    let mut s = settings(server.local_addr(), Stop::Duration(Duration::from_secs(1)));
    s.schedule.rate_per_sec = Some(20.0);
    s.connections = 50;
    let o = dyno_http::run(s, Arc::new(AtomicBool::new(false)), |_| {}).expect("runs");
    let st = &o.stats;
    assert_eq!(st.errors.total(), 0, "{:?}", st.errors);
    assert_eq!(st.responses, 20);
    assert_eq!(st.connects, 50, "every connection opened up front");
    assert_eq!(
        st.connect.max(),
        0,
        "no measured request paid for a connect"
    );
    // Every measured send has its lag in the distribution.
    assert_eq!(st.send_lag.len(), 20);
}

#[test]
fn progress_counts_are_current_not_a_second_behind() {
    // A server answering each request after 5 ms: a steady rate. The warm-up
    // of 0.5 s puts each progress tick (whole seconds from the start) in the
    // middle of a measured second. Counts published only when a second
    // closed would miss that half second; live counts include it.
    let server = common::serve(|mut c| {
        while c.next_request() {
            std::thread::sleep(Duration::from_millis(5));
            if !c.send(common::OK) {
                return;
            }
        }
    });
    let mut s = settings(server.addr(), Stop::Duration(Duration::from_secs(3)));
    s.schedule.warmup = Duration::from_millis(500);
    let warmup = s.schedule.warmup;
    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let o = {
        let seen = Arc::clone(&seen);
        dyno_http::run(s, Arc::new(AtomicBool::new(false)), move |p| {
            seen.lock().expect("not poisoned").push(p);
        })
        .expect("runs")
    };
    let count_in = |index: u64| {
        o.timeline
            .get((index as usize).wrapping_sub(1))
            .map_or(0, |i| i.responses)
    };
    let mut checked = 0;
    for p in seen.lock().expect("not poisoned").iter() {
        if p.warmup {
            continue;
        }
        let into = p.elapsed.saturating_sub(warmup).as_secs_f64();
        let whole = into.floor() as u64;
        let part = into - into.floor();
        let done_seconds: u64 = (1..=whole).map(count_in).sum();
        let partial = count_in(whole + 1) as f64;
        // A quarter of the share of the partial second that had passed: a
        // floor that only live counts reach (counts published once a second
        // show `done_seconds` alone), with room for a stall on a busy machine.
        let floor = done_seconds as f64 + partial * part / 4.0;
        assert!(
            p.responses as f64 >= floor,
            "at {:?}: {} responses shown, at least {floor:.0} done ({done_seconds} in whole seconds, {partial} in second {})",
            p.elapsed,
            p.responses,
            whole + 1
        );
        checked += 1;
    }
    assert!(checked >= 2, "progress was reported: {checked}");
}
