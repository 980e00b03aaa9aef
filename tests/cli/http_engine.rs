//! `dyno http`'s engine behaviour seen from the command line: when a run
//! ends, what its rates divide by, what the latency log holds, and how
//! connecting fails.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::Command as StdCommand;
use std::time::{Duration, Instant};

use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

use crate::common::{dyno, find_metric, has_warning, http_json_exit, metric, ok, signalled, temp};

/// A server that accepts connections and reads requests but never
/// answers. The listener thread lives as long as the test process.
fn silent_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held: Vec<std::thread::JoinHandle<()>> = Vec::new();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            held.push(std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while matches!(stream.read(&mut buf), Ok(n) if n > 0) {}
            }));
        }
    });
    addr
}

/// dyno's reference server on a free loopback port, for the test's life.
fn reference_server() -> dyno_serve::ServerHandle {
    dyno_serve::spawn(TcpListener::bind("127.0.0.1:0").unwrap(), 1).unwrap()
}

#[test]
fn http_a_duration_run_ends_at_its_deadline_and_counts_requests_under_way() {
    let home = temp();
    let addr = silent_server();
    let url = format!("http://{addr}/");
    let began = Instant::now();
    // A 30 s timeout: before the fix the run waited for it past -d.
    let (run, _) = http_json_exit(
        home.path(),
        &[&url, "-d", "1s", "-c", "4", "-t", "1", "--timeout", "30s"],
        0,
    );
    let took = began.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "-d 1s must end at about 1 s, took {took:?}"
    );
    assert_eq!(metric(&run, "responses"), Some(0.0));
    assert_eq!(metric(&run, "errors"), Some(0.0));
    assert_eq!(
        metric(&run, "unfinished_requests"),
        Some(4.0),
        "each connection's request was under way at the end"
    );
    assert_eq!(
        metric(&run, "measured_ns"),
        Some(1e9),
        "the measured window is the duration asked for"
    );

    // The human report says so.
    let out = dyno(home.path())
        .args(["http", &url, "-d", "1s", "-c", "2", "-t", "1", "--no-save"])
        .timeout(Duration::from_secs(60))
        .assert()
        .get_output()
        .clone();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("2 still under way at the end"),
        "the report names the unfinished requests: {text}"
    );
}

#[test]
fn http_rates_divide_by_the_scheduled_duration() {
    let home = temp();
    let server = reference_server();
    let url = format!("http://{}/hello", server.local_addr());
    // 4 req/s for 2 s: 8 requests fall due at 0, 0.25 … 1.75 s. Before the
    // fix req/s divided by the time to the last answer (≈1.75 s): above
    // the rate asked for.
    let (run, _) = http_json_exit(home.path(), &[&url, "--rate", "4", "-d", "2s"], 0);
    assert_eq!(metric(&run, "measured_ns"), Some(2e9));
    let responses = metric(&run, "responses").unwrap();
    assert_eq!(responses, 8.0);
    assert_eq!(metric(&run, "requests_per_sec"), Some(responses / 2.0));
    // The send lag (client delay from due time to send) is a distribution
    // with every measured send in it.
    let lag = find_metric(&run, "send_lag_ns");
    assert_eq!(lag["histogram"]["count"].as_f64(), Some(responses));

    // Rates under 10 keep their decimals in the report.
    let text = ok(
        home.path(),
        &["http", &url, "--rate", "0.5", "-d", "2s", "--no-save"],
    );
    assert!(text.contains("requested 0.50 req/s"), "{text}");
    assert!(text.contains("achieved 0.50 req/s"), "{text}");
    assert!(text.contains("Send lag    p50 "), "{text}");
}

/// The total count of every interval in an HdrHistogram log.
fn log_count(path: &Path) -> u64 {
    let text = std::fs::read(path).unwrap();
    let mut total = 0;
    let mut intervals = 0;
    for entry in IntervalLogIterator::new(&text) {
        if let Ok(LogEntry::Interval(h)) = entry {
            total += dyno_stats::hdr::decode(h.encoded_histogram())
                .unwrap()
                .len();
            intervals += 1;
        }
    }
    assert!(intervals > 0, "no interval in the log");
    total
}

#[test]
fn http_latency_log_holds_every_request_the_report_counts() {
    let home = temp();
    let server = reference_server();
    let url = format!("http://{}/hello", server.local_addr());
    let modes: &[&[&str]] = &[
        &["-d", "1s", "-c", "4"],
        &["-d", "1s", "-c", "4", "--warmup", "500ms"],
        &["--rate", "2000", "-d", "1s", "-c", "4"],
        &["--rate", "2000", "-d", "1s", "-c", "4", "--warmup", "500ms"],
        &["-n", "3000", "-c", "4"],
        &["-n", "3000", "-c", "4", "--warmup", "500ms"],
        &[
            "-n", "500", "--rate", "1000", "-c", "4", "--warmup", "300ms",
        ],
    ];
    for (i, mode) in modes.iter().enumerate() {
        let log = home.path().join(format!("{i}.hlog"));
        let args = [
            &[url.as_str()],
            *mode,
            &["--latency-log", log.to_str().unwrap()],
        ]
        .concat();
        let (run, _) = http_json_exit(home.path(), &args, 0);
        let responses = metric(&run, "responses").unwrap() as u64;
        assert!(responses > 0, "{mode:?}");
        assert_eq!(metric(&run, "errors"), Some(0.0), "{mode:?}");
        assert_eq!(
            log_count(&log),
            responses,
            "{mode:?}: the log must hold every measured response"
        );
        if let Some(n) = mode.iter().position(|a| *a == "-n") {
            let n: f64 = mode[n + 1].parse().unwrap();
            assert_eq!(metric(&run, "requests"), Some(n), "{mode:?}: -n is exact");
        }
    }
}

/// A segment's latency log starts (`#[StartTime]`) at the segment's real
/// common start, after the barrier, as its record's `started_at_ns` says,
/// not when the process started: logs of segments that started together
/// line up.
#[test]
fn a_segments_latency_log_starts_at_its_common_start() {
    let home = temp();
    let server = reference_server();
    let url = format!("http://{}/hello", server.local_addr());
    let store = home.path().join("shared.db");
    let log = home.path().join("seg.hlog");
    // Alone at a start 1.5 s away (the barrier's own wait).
    let at = jiff::Timestamp::now() + jiff::SignedDuration::from_millis(1500);
    let out = dyno(home.path())
        .args(["--store", store.to_str().unwrap(), "http", &url])
        .args(["-n", "200", "-c", "2", "--segment", "1/2", "--group", "g"])
        .args(["--start-at", &at.to_string(), "--json"])
        .args(["--latency-log", log.to_str().unwrap()])
        .timeout(Duration::from_secs(60))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let run: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let started_ns = run["settings"]["segment"]["started_at_ns"]
        .as_i64()
        .unwrap();
    let agreed_ns = i64::try_from(at.as_nanosecond()).unwrap();
    assert!(started_ns >= agreed_ns, "{started_ns} against {agreed_ns}");
    let text = std::fs::read_to_string(&log).unwrap();
    let start_time: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("#[StartTime: "))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("a StartTime line")
        .parse()
        .unwrap();
    // The log's StartTime is written to the millisecond.
    let start_ns = (start_time * 1e9) as i64;
    assert!(
        (start_ns - started_ns).abs() <= 2_000_000,
        "StartTime {start_time} against the segment's start {started_ns} ns"
    );
    assert_eq!(log_count(&log), metric(&run, "responses").unwrap() as u64);
}

#[test]
fn http_interrupted_in_the_warmup_saves_nothing_and_exits_130() {
    let home = temp();
    let server = reference_server();
    let url = format!("http://{}/hello", server.local_addr());
    let log = home.path().join("warm.hlog");
    let log_arg = log.display().to_string();
    let out = signalled(
        home.path(),
        &[
            "http",
            &url,
            "--warmup",
            "5s",
            "-d",
            "5s",
            "-c",
            "2",
            "--json",
            "--latency-log",
            &log_arg,
        ],
        Duration::from_millis(1500),
        libc::SIGINT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("nothing was saved"), "{stderr}");
    assert!(out.stdout.is_empty(), "no empty run is printed");
    assert!(!log.exists(), "no empty latency log is left behind");
    let saved = ok(home.path(), &["export", "--format", "jsonl"]);
    assert!(saved.trim().is_empty(), "nothing saved: {saved}");
}

#[test]
fn http_against_a_closed_port_stops_after_a_few_refusals() {
    let home = temp();
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let url = format!("http://{addr}/");
    // -n 100 used to try all 100, backing off after each refusal (4.4 s).
    let (run, stderr) = http_json_exit(home.path(), &[&url, "-n", "100", "-c", "2"], 1);
    let refused = metric(&run, "errors_connect_refused").unwrap();
    assert!((10.0..=12.0).contains(&refused), "{refused} refusals");
    assert!(stderr.contains("was refused"), "{stderr}");
    assert!(stderr.contains("Nothing was saved"), "{stderr}");
    assert!(
        has_warning(&run, "connection_refused"),
        "{:?}",
        run["warnings"]
    );
}

/// A server that answers the first request of each connection and then
/// goes silent on it: the connection's one timer, moved on past an answer,
/// must still fire on the wait after it.
fn answers_once_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut head = Vec::new();
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(n) if n > 0 => head.extend_from_slice(&buf[..n]),
                        _ => return,
                    }
                }
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                while matches!(stream.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    addr
}

/// A connection's timeout holds after an answer on it: each connection's
/// second request waits out `--timeout` and is counted, the next goes on
/// a new connection.
#[test]
fn http_times_out_a_wait_that_follows_an_answer_on_the_same_connection() {
    let home = temp();
    let url = format!("http://{}/", answers_once_server());
    let (run, stderr) = http_json_exit(
        home.path(),
        &[&url, "-n", "5", "-c", "1", "--timeout", "300ms"],
        1,
    );
    assert_eq!(metric(&run, "responses"), Some(3.0), "{stderr}");
    assert_eq!(metric(&run, "errors_read_timeout"), Some(2.0), "{stderr}");
}

/// A server that accepts connections and never answers: `-n 100` used to wait out all 100 timeouts;
/// it stops once every connection timed out twice with no answer ever.
#[test]
fn http_against_a_server_that_never_answers_stops_after_a_few_timeouts() {
    let home = temp();
    let url = format!("http://{}/", silent_server());
    let (run, stderr) = http_json_exit(
        home.path(),
        &[&url, "-n", "100", "-c", "2", "--timeout", "200ms"],
        1,
    );
    let timeouts = metric(&run, "errors_read_timeout").unwrap();
    assert!((4.0..=6.0).contains(&timeouts), "{timeouts} timeouts");
    assert_eq!(metric(&run, "responses"), Some(0.0));
    assert!(
        stderr.contains("accepted connections but answered none of the first"),
        "{stderr}"
    );
    assert!(stderr.contains("--timeout 200ms"), "{stderr}");
    assert!(stderr.contains("Nothing was saved"), "{stderr}");
    assert!(!stderr.contains("refused"), "{stderr}");
    assert!(has_warning(&run, "no_answer"), "{:?}", run["warnings"]);
}

#[test]
fn http_refuses_more_connections_than_the_open_file_limit_allows() {
    let home = temp();
    let server = reference_server();
    let url = format!("http://{}/hello", server.local_addr());
    let bin = assert_cmd::cargo::cargo_bin("dyno");
    let out = StdCommand::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 256 && exec '{}' http {url} -c 400 -d 1s --no-save",
            bin.display()
        ))
        .env("DYNO_HOME", home.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("ulimit -n 464"), "{stderr}");
    assert!(stderr.contains("open-file limit is 256"), "{stderr}");
    assert!(out.stdout.is_empty(), "no run was made");
}

#[test]
fn http_a_missing_unix_socket_is_a_configuration_error() {
    let home = temp();
    let missing = home.path().join("nothing.sock");
    let out = dyno(home.path())
        .args(["http", "http://localhost/", "-n", "1", "--no-save"])
        .arg("--unix-socket")
        .arg(&missing)
        .timeout(Duration::from_secs(60))
        .assert()
        .code(2)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no Unix socket at"), "{stderr}");
    assert!(stderr.contains("nothing.sock"), "{stderr}");
}
