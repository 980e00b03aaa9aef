//! `dyno http --h3` against real HTTP/3 servers on loopback: Caddy
//! (Debian's `caddy`, which scripts/test installs) and `dyno serve --h3`.
//! The servers' own logs judge what was sent.

use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{
    Served, assert_valid, dyno, fails, find_metric, http_json, http_json_exit, metric, metric_sum,
    metrics, spawn_serve_with, stdout_json, temp,
};

/// Caddy serving a directory over HTTPS (its own internal CA) and HTTP/3 on
/// a free loopback port, logging each request as a JSON line; killed when
/// dropped.
pub(crate) struct Caddy {
    child: std::process::Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Caddy {
    /// Starts Caddy serving `files` (name, content) with `protocols` (`h1
    /// h2 h3`, or without h3).
    pub(crate) fn start(files: &[(&str, Vec<u8>)], protocols: &str) -> Caddy {
        let dir = temp();
        let d = dir.path();
        std::fs::create_dir_all(d.join("www")).unwrap();
        for (name, content) in files {
            std::fs::write(d.join("www").join(name), content).unwrap();
        }
        // A port free in TCP and UDP alike.
        let port = loop {
            let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = tcp.local_addr().unwrap().port();
            if std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
                break port;
            }
        };
        let p = d.display();
        // default_sni: a client that connects to an IP address sends no
        // SNI, and Caddy then finds no certificate (CRYPTO_ERROR 0x150).
        let conf = format!(
            "{{
  admin off
  auto_https disable_redirects
  skip_install_trust
  storage file_system {p}/data
  default_sni 127.0.0.1
  servers {{
    protocols {protocols}
  }}
}}
https://127.0.0.1:{port} {{
  tls internal
  root * {p}/www
  file_server
  log {{
    output file {p}/access.log
    format json
  }}
}}
"
        );
        std::fs::write(d.join("Caddyfile"), conf).unwrap();
        // Caddy's own log goes to a file: Go ends a program that writes to
        // a closed pipe on its stderr (SIGPIPE), and Caddy logs for a while
        // after it listens (its certificates, its HTTP/3 listener).
        let log = std::fs::File::create(d.join("caddy.log")).unwrap();
        let mut child = StdCommand::new("caddy")
            .args(["run", "--adapter", "caddyfile", "--config"])
            .arg(d.join("Caddyfile"))
            .env("HOME", d)
            .env("XDG_DATA_HOME", d.join("data"))
            .env("XDG_CONFIG_HOME", d.join("config"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("this test needs Caddy (Debian's `caddy`; scripts/test installs it)");
        // Up when it accepts over TCP and has its certificate (made at
        // start-up by its internal CA); a bounded wait.
        for _ in 0..200 {
            if let Some(status) = child.try_wait().unwrap() {
                let err = std::fs::read_to_string(d.join("caddy.log")).unwrap_or_default();
                panic!("caddy exited ({status}): {err}");
            }
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                std::thread::sleep(Duration::from_millis(300));
                return Caddy { child, port, dir };
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        panic!("caddy did not listen on 127.0.0.1:{port} within 10 s");
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// Every request Caddy logged, as JSON.
    pub(crate) fn logged(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.path().join("access.log"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .collect()
    }

    /// The requests Caddy logged over HTTP/3, and their response sizes.
    fn h3_requests(&self) -> Vec<u64> {
        std::fs::read_to_string(self.dir.path().join("access.log"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["request"]["proto"] == "HTTP/3.0")
            .map(|v| v["size"].as_u64().unwrap_or(0))
            .collect()
    }
}

impl Drop for Caddy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn bytes(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

#[test]
fn h3_against_caddy_sends_exactly_n_and_reads_every_body_byte() {
    let home = temp();
    let caddy = Caddy::start(
        &[("1k.bin", bytes(1024)), ("1m.bin", bytes(1 << 20))],
        "h1 h2 h3",
    );
    for (path, size, n) in [("/1k.bin", 1024u64, 300u64), ("/1m.bin", 1 << 20, 40)] {
        let before = caddy.h3_requests().len() as u64;
        let run = http_json(
            home.path(),
            &[
                &caddy.url(path),
                "--h3",
                "--insecure",
                "-c",
                "2",
                "-m",
                "4",
                "-n",
                &n.to_string(),
            ],
        );
        assert_eq!(metric(&run, "responses"), Some(n as f64), "{path}");
        assert_eq!(metric(&run, "errors"), Some(0.0), "{path}");
        assert_eq!(
            metric(&run, "body_bytes"),
            Some((n * size) as f64),
            "{path}"
        );
        assert_eq!(run["settings"]["http3"], true, "{}", run["settings"]);
        // QUIC's figures: a handshake per connection, datagrams both ways.
        assert_eq!(metric(&run, "h3_handshakes"), Some(2.0), "{path}");
        assert!(metric(&run, "h3_datagrams_received").unwrap() > 0.0);
        assert!(metric(&run, "h3_rtt_max_ns").unwrap() > 0.0);
        // QPACK's figures, as h2load counts HPACK's: quic-go's answers
        // index the static table, so fewer bytes go on the wire than
        // their fields hold.
        let wire = metric(&run, "h3_header_bytes_wire").unwrap();
        let plain = metric(&run, "h3_header_bytes_plain").unwrap();
        assert!(0.0 < wire && wire < plain, "{wire} {plain}");
        let saved = metric(&run, "h3_qpack_savings_percent").unwrap();
        assert!(
            (saved - 100.0 * (1.0 - wire / plain)).abs() < 1e-6,
            "{saved}"
        );
        assert!(metric(&run, "h3_request_header_bytes_wire").unwrap() > 0.0);
        // Caddy's log is the judge: exactly n requests over HTTP/3, each
        // answered whole.
        std::thread::sleep(Duration::from_millis(300));
        let logged = caddy.h3_requests();
        assert_eq!(logged.len() as u64 - before, n, "{path}");
        assert!(
            logged[before as usize..].iter().all(|&s| s == size),
            "{path}"
        );
    }
}

/// A scenario over HTTP/3: its setup step and every flow's steps go over
/// QUIC (Caddy's log says HTTP/3.0 for each, and nothing came over TCP),
/// a value one step extracts fills the next step's URL, and -n counts
/// flows exactly.
#[test]
fn h3_runs_a_scenario_with_its_setup_and_extractions_against_caddy() {
    let home = temp();
    let caddy = Caddy::start(
        &[
            ("board.json", br#"{"id": 7, "name": "lobby"}"#.to_vec()),
            ("item-7.txt", b"item seven".to_vec()),
        ],
        "h1 h2 h3",
    );
    let scenario = home.path().join("flows.toml");
    std::fs::write(
        &scenario,
        r#"
base = "https://127.0.0.1:1"

[[setup]]
name = "board"
url = "/board.json"
check = { status = 200, contains = '"lobby"' }

[[flow]]
name = "read"

[[flow.step]]
name = "board"
url = "/board.json"
extract = [{ json = "/id", as = "id" }]

[[flow.step]]
name = "item"
url = "/item-${id}.txt"
check = { status = 200, contains = "seven" }
"#,
    )
    .unwrap();
    let run = http_json(
        home.path(),
        &[
            &caddy.url(""),
            "--scenario",
            scenario.to_str().unwrap(),
            "--h3",
            "--insecure",
            "-c",
            "2",
            "-m",
            "3",
            "-n",
            "50",
        ],
    );
    assert_eq!(metric(&run, "errors"), Some(0.0));
    assert_eq!(metric(&run, "responses"), Some(100.0));
    let completed: f64 = metrics(&run)
        .filter(|m| m["name"] == "flows_completed")
        .map(|m| m["value"].as_f64().unwrap())
        .sum();
    assert_eq!(completed, 50.0);
    // Six virtual users: 2 connections × 3 streams, over 2 handshakes.
    assert_eq!(metric(&run, "h3_handshakes"), Some(2.0));
    std::thread::sleep(Duration::from_millis(300));
    let log = std::fs::read_to_string(caddy.dir.path().join("access.log")).unwrap();
    assert_eq!(log.lines().count(), 101, "the setup step and 100 steps");
    assert_eq!(caddy.h3_requests().len(), 101, "every one over HTTP/3");
}

/// A capacity search over HTTP/3: its steps are open-model runs over
/// QUIC (every request Caddy logged is HTTP/3.0), recorded with the run.
#[test]
fn h3_find_max_searches_over_quic() {
    let home = temp();
    let caddy = Caddy::start(&[("1k.bin", bytes(1024))], "h1 h2 h3");
    let url = caddy.url("/1k.bin");
    let run = http_json(
        home.path(),
        &[
            &url,
            "--h3",
            "--insecure",
            "-c",
            "4",
            "--find-max",
            "--slo",
            "p99<=1s,errors<=1%",
            "--start",
            "50",
            "--step",
            "300ms",
            "--warmup",
            "100ms",
            "--budget",
            "1600ms",
        ],
    );
    assert_eq!(run["settings"]["http3"], true, "{}", run["settings"]);
    let cap = &run["settings"]["capacity"];
    let steps = cap["steps"].as_array().expect("the search's steps");
    assert!(!steps.is_empty(), "{cap}");
    assert_eq!(steps[0]["requested"], 50.0, "{cap}");
    std::thread::sleep(Duration::from_millis(300));
    let logged = caddy.logged();
    assert!(logged.len() >= 15, "the first step's requests at least");
    assert!(
        logged.iter().all(|l| l["request"]["proto"] == "HTTP/3.0"),
        "every request over HTTP/3"
    );
}

#[test]
fn h3_open_model_keeps_its_rate_against_caddy() {
    let home = temp();
    let caddy = Caddy::start(&[("1k.bin", bytes(1024))], "h1 h2 h3");
    let run = http_json(
        home.path(),
        &[
            &caddy.url("/1k.bin"),
            "--h3",
            "--insecure",
            "-c",
            "4",
            "--rate",
            "400",
            "-d",
            "3s",
        ],
    );
    let achieved = metric(&run, "requests_per_sec").expect("a run has its rate");
    assert!(
        (achieved - 400.0).abs() <= 4.0,
        "achieved {achieved} req/s of 400"
    );
    assert_eq!(metric(&run, "errors"), Some(0.0));
    assert_eq!(metric(&run, "dropped_sends"), Some(0.0));
    // Its connections were opened before the clock, as TCP's are: four
    // handshakes, none of them inside a request's time.
    assert_eq!(metric(&run, "h3_handshakes"), Some(4.0));
    assert_eq!(metric(&run, "connections_opened"), Some(4.0));
    let connect = find_metric(&run, "connect_ns");
    assert_eq!(connect["histogram"]["max"].as_f64(), Some(0.0), "{connect}");
}

#[test]
fn h3_against_a_server_without_http3_is_refused_at_once() {
    let home = temp();
    // Caddy over TCP only: nothing answers QUIC on its port.
    let caddy = Caddy::start(&[("1k.bin", bytes(1024))], "h1 h2");
    // Closed and open model alike (the open model's connections are
    // opened before its clock starts).
    for load in [["-n", "100"], ["--rate", "100"]] {
        let started = Instant::now();
        let err = fails(
            home.path(),
            &[
                "http",
                &caddy.url("/1k.bin"),
                "--h3",
                "--insecure",
                load[0],
                load[1],
                "--connect-timeout",
                "1s",
                "--no-save",
            ],
        );
        assert!(
            err.contains("--h3: no QUIC answer from 127.0.0.1") && err.contains("HTTP/3"),
            "{load:?}: {err}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{load:?}: refused promptly"
        );
    }
    // An http:// URL cannot be HTTP/3.
    let err = fails(
        home.path(),
        &[
            "http",
            "http://127.0.0.1:1/",
            "--h3",
            "-n",
            "1",
            "--no-save",
        ],
    );
    assert!(
        err.contains("always TLS 1.3") && err.contains("https://"),
        "{err}"
    );
    // Nor can it be pipelined or offered by ALPN.
    for flags in [["--pipeline", "4"], ["--alpn", "h2"]] {
        let err = fails(
            home.path(),
            &[
                "http",
                &caddy.url("/"),
                "--h3",
                flags[0],
                flags[1],
                "-n",
                "1",
                "--no-save",
            ],
        );
        assert!(err.contains("--h3") && err.contains(flags[0]), "{err}");
    }
}

/// A stalled server (stopped with SIGSTOP for half a second) shows in the
/// open model's corrected latency: the requests due during the stall are
/// counted from when they were due.
#[test]
fn h3_a_server_stall_shows_in_the_corrected_p99() {
    let home = temp();
    let (server, addr, stall) =
        serve_h3_stopped(Duration::from_millis(1200), Duration::from_millis(500));
    let url = format!("https://{addr}/hello");
    let run = http_json(
        home.path(),
        &[
            &url,
            "--h3",
            "--insecure",
            "-c",
            "2",
            "--rate",
            "200",
            "-d",
            "3s",
        ],
    );
    stall.join().unwrap();
    drop(server);
    let p99 = |name: &str| {
        find_metric(&run, name)["histogram"]["percentiles"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["percentile"] == 99.0))
            .and_then(|p| p["value"].as_f64())
            .unwrap_or_else(|| panic!("{name} has a p99"))
    };
    assert!(
        p99("latency_ns") >= 300e6,
        "corrected p99 {} ns: the 500 ms stall is in it",
        p99("latency_ns")
    );
    assert_eq!(metric(&run, "errors"), Some(0.0));
}

/// A server that falls silent (stopped with SIGSTOP for longer than the
/// run's timeout, which is also QUIC's idle timeout) sends nothing, not
/// even a CONNECTION_CLOSE: the requests under way time out, the idle
/// timeout ends their connections, and once the server answers again the
/// run opens new ones and goes on.
#[test]
fn h3_a_silent_server_ends_connections_by_idle_timeout_and_the_run_goes_on() {
    let home = temp();
    let (server, addr, silence) =
        serve_h3_stopped(Duration::from_millis(1000), Duration::from_millis(2500));
    let url = format!("https://{addr}/hello");
    let (run, _) = http_json_exit(
        home.path(),
        &[
            &url,
            "--h3",
            "--insecure",
            "-c",
            "2",
            "-m",
            "2",
            "-d",
            "6s",
            "--timeout",
            "1s",
            "--connect-timeout",
            "1s",
        ],
        1,
    );
    silence.join().unwrap();
    drop(server);
    let timeouts = metric(&run, "errors_read_timeout").unwrap_or(0.0);
    assert!(timeouts >= 1.0, "{:?}", run["metrics"]);
    // Every failure is the silence's: a timeout, or a connection the idle
    // timeout ended under a request.
    let errors = metric(&run, "errors").unwrap();
    let by_class = metric_sum(
        &run,
        &[
            "errors_read_timeout",
            "errors_connect_timeout",
            "errors_closed_early",
        ],
    );
    assert_eq!(by_class, errors, "{:?}", run["metrics"]);
    // New connections after the silence, and answers on them to the end.
    let handshakes = metric(&run, "h3_handshakes").unwrap();
    assert!(handshakes >= 3.0, "{handshakes} handshakes");
    let timeline = find_metric(&run, "timeline_requests_per_sec")["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect::<Vec<_>>();
    assert!(timeline.len() >= 5, "{timeline:?}");
    assert!(
        timeline[timeline.len() - 2..]
            .iter()
            .all(|&rate| rate > 0.0),
        "answers in the last seconds: {timeline:?}"
    );
}

/// A server that goes away mid-run (Ctrl-C: GOAWAY, then
/// CONNECTION_CLOSE, then nothing answers) is counted, not a hang: the
/// run ends at its deadline with the answers before and the failed
/// attempts after.
#[test]
fn h3_a_server_that_closes_mid_run_is_counted_and_the_run_ends_on_time() {
    let home = temp();
    // Plain requests, and a scenario's users (whose connection link makes
    // the next connection when a step finds the last one gone).
    let flows = home.path().join("flows.toml");
    std::fs::write(
        &flows,
        "[[flow]]\nname = \"hello\"\n\n[[flow.step]]\nname = \"hello\"\nurl = \"/hello\"\n",
    )
    .unwrap();
    let scenario = ["--scenario", flows.to_str().unwrap()];
    for extra in [&[][..], &scenario[..]] {
        server_leaves_mid_run(home.path(), extra);
    }
}

fn server_leaves_mid_run(home: &std::path::Path, extra: &[&str]) {
    let (mut server, addr) = spawn_serve_with("127.0.0.1:0", 1, &["--h3"], "https://");
    let pid = server.id() as libc::pid_t;
    let stopper = signals(pid, &[(Duration::from_millis(1000), libc::SIGINT)]);
    // A scenario's URL is the server alone; its steps name the path.
    let url = match extra {
        [] => format!("https://{addr}/hello"),
        _ => format!("https://{addr}"),
    };
    let started = Instant::now();
    let mut args = vec![
        url.as_str(),
        "--h3",
        "--insecure",
        "-c",
        "2",
        "-m",
        "2",
        "-d",
        "3s",
        "--connect-timeout",
        "500ms",
        "--timeout",
        "1s",
    ];
    args.extend_from_slice(extra);
    let (run, _) = http_json_exit(home, &args, 1);
    stopper.join().unwrap();
    let _ = server.wait();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{extra:?}: it ended on time"
    );
    assert!(metric(&run, "responses").unwrap() > 0.0, "{extra:?}");
    let errors = metric(&run, "errors").unwrap();
    assert!(
        errors > 0.0,
        "{extra:?}: the attempts after the server left are counted"
    );
    let by_class = metric_sum(
        &run,
        &[
            "errors_connect_timeout",
            "errors_h3_goaway",
            "errors_closed_early",
            "errors_read_timeout",
            "errors_h3_protocol_error",
        ],
    );
    assert_eq!(
        by_class, errors,
        "{extra:?}: every failure has its class: {:?}",
        run["metrics"]
    );
}

/// `dyno serve --h3`, stopped (SIGSTOP) `after` its start for `pause`,
/// from a thread of its own: its address, and that thread.
fn serve_h3_stopped(
    after: Duration,
    pause: Duration,
) -> (Served, String, std::thread::JoinHandle<()>) {
    let (server, addr) = spawn_serve_with("127.0.0.1:0", 1, &["--h3"], "https://");
    let pid = server.id() as libc::pid_t;
    let stops = signals(pid, &[(after, libc::SIGSTOP), (pause, libc::SIGCONT)]);
    (server, addr, stops)
}

/// Sends the server `pid` each signal after its pause, in order, from a
/// thread of its own.
fn signals(pid: libc::pid_t, plan: &[(Duration, libc::c_int)]) -> std::thread::JoinHandle<()> {
    let plan = plan.to_vec();
    std::thread::spawn(move || {
        for (pause, signal) in plan {
            std::thread::sleep(pause);
            // SAFETY: kill(2) with the pid of our own child.
            unsafe { libc::kill(pid, signal) };
        }
    })
}

/// `--0rtt` against Caddy and `dyno serve --h3`, which both take early
/// data: each connection resumes with a ticket collected before the
/// clock, and its first requests go before its handshake ends, so none
/// waits for the handshake; -n stays exact by the server's own log.
#[test]
fn h3_0rtt_sends_the_first_requests_before_the_handshake_ends() {
    let home = temp();
    let caddy = Caddy::start(&[("1k.bin", bytes(1024))], "h1 h2 h3");
    let (mut serve, addr) = spawn_serve_with("127.0.0.1:0", 1, &["--h3"], "https://");
    let served = format!("https://{addr}/blob/1024");
    for url in [caddy.url("/1k.bin"), served] {
        let before = caddy.h3_requests().len();
        let run = http_json(
            home.path(),
            &[
                &url,
                "--h3",
                "--0rtt",
                "--insecure",
                "-c",
                "2",
                "-m",
                "2",
                "-n",
                "200",
            ],
        );
        assert_eq!(metric(&run, "responses"), Some(200.0), "{url}");
        assert_eq!(metric(&run, "errors"), Some(0.0), "{url}");
        assert_eq!(metric(&run, "body_bytes"), Some(200.0 * 1024.0), "{url}");
        assert_eq!(run["settings"]["zero_rtt"], true, "{}", run["settings"]);
        // The collecting connections are not the run's: two handshakes,
        // both 0-RTT.
        assert_eq!(metric(&run, "h3_handshakes"), Some(2.0), "{url}");
        assert_eq!(metric(&run, "h3_handshakes_0rtt"), Some(2.0), "{url}");
        assert_eq!(metric(&run, "h3_early_data_rejected"), Some(0.0), "{url}");
        // The first request on each connection was charged only the
        // moment it took to open it, not the handshake's round trip.
        let connect = find_metric(&run, "connect_ns")["histogram"]["max"]
            .as_f64()
            .unwrap();
        let handshake = metric(&run, "h3_handshake_ns_max").unwrap();
        assert!(
            connect < handshake,
            "{url}: connect {connect} ns, handshake {handshake} ns"
        );
        if url.contains("1k.bin") {
            std::thread::sleep(Duration::from_millis(300));
            assert_eq!(caddy.h3_requests().len() - before, 200, "Caddy's log");
        }
    }
    // Without --0rtt there is no such figure.
    let run = http_json(
        home.path(),
        &[&caddy.url("/1k.bin"), "--h3", "--insecure", "-n", "10"],
    );
    assert_eq!(metric(&run, "h3_handshakes_0rtt"), None);
    let _ = serve.kill();
    let _ = serve.wait();
}

/// A server restarted mid-run cannot read the tickets its predecessor
/// gave, so it rejects the early data of the connections that come back
/// with them: the requests that went early go again once the handshake
/// ends (not errors, nothing lost), and the run's later connections stop
/// offering early data.
#[test]
fn h3_0rtt_rejected_by_a_restarted_server_sends_the_requests_again() {
    let home = temp();
    let (first, addr) = spawn_serve_with("127.0.0.1:0", 1, &["--h3"], "https://");
    let restart = {
        let addr = addr.clone();
        std::thread::spawn(move || {
            let mut first = first;
            std::thread::sleep(Duration::from_millis(1000));
            // SAFETY: kill(2) with the pid of our own child.
            unsafe { libc::kill(first.id() as libc::pid_t, libc::SIGINT) };
            let _ = first.wait();
            spawn_serve_with(&addr, 1, &["--h3"], "https://").0
        })
    };
    // It exits 1 when requests failed while no server listened, 0 when
    // the restart was quick enough that none did.
    let out = dyno(home.path())
        .args([
            "http",
            &format!("https://{addr}/hello"),
            "--h3",
            "--0rtt",
            "--insecure",
            "-c",
            "2",
            "-m",
            "2",
            "-d",
            "3s",
            "--connect-timeout",
            "500ms",
            "--timeout",
            "1s",
            "--json",
            "--no-save",
        ])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
    let run = stdout_json(&out);
    assert_valid(&run, None);
    let mut second = restart.join().unwrap();
    let _ = second.kill();
    let _ = second.wait();
    assert_eq!(
        metric(&run, "h3_handshakes_0rtt"),
        Some(2.0),
        "{:?}",
        run["metrics"]
    );
    let rejected = metric(&run, "h3_early_data_rejected").unwrap();
    assert!(rejected >= 1.0, "{:?}", run["metrics"]);
    // Once rejected, no connection offered early data again: at most the
    // connections that were already offering it were rejected.
    assert!(rejected <= 2.0, "{rejected}");
    // Answers came from the second server too (the run went on past the
    // restart), and no request failed for the rejection itself: every
    // failure is the restart's (the first server leaving, the port
    // silent until the second listened).
    let handshakes = metric(&run, "h3_handshakes").unwrap();
    assert!(handshakes >= 3.0, "{handshakes}");
    assert_eq!(
        metric(&run, "errors_h3_protocol_error"),
        None,
        "{:?}",
        run["metrics"]
    );
    let errors = metric(&run, "errors").unwrap();
    let by_class = metric_sum(
        &run,
        &[
            "errors_connect_timeout",
            "errors_connect_refused",
            "errors_h3_goaway",
            "errors_closed_early",
            "errors_read_timeout",
        ],
    );
    assert_eq!(by_class, errors, "{:?}", run["metrics"]);
}

/// `--0rtt` is QUIC's: without --h3 it is refused, naming the flag it needs.
#[test]
fn zero_rtt_needs_h3() {
    let home = temp();
    let out = fails(
        home.path(),
        &["http", "https://127.0.0.1:1/", "--0rtt", "-n", "1"],
    );
    assert!(out.contains("--h3"), "{out}");
}
