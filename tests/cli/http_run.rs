//! `dyno http`'s plain runs: exact counts, the report's layout, refused
//! connections, bad input, TLS, the open model, URL files.

use crate::common::*;

#[test]
fn http_sends_exactly_n_requests_with_and_without_keepalive() {
    let home = temp();
    let run = http_json(home.path(), &["-n", "700", "-c", "3", "-t", "1"]);
    assert_eq!(run["kind"], "http");
    assert_eq!(metric(&run, "requests"), Some(700.0));
    assert_eq!(metric(&run, "responses"), Some(700.0));
    assert_eq!(metric(&run, "status_200"), Some(700.0));
    assert_eq!(metric(&run, "errors"), Some(0.0));
    // This machine's own state, watched in every run.
    assert!(metric(&run, "machine_load_max").is_some_and(|l| l >= 0.0));
    assert_eq!(metric(&run, "connections_opened"), Some(3.0));
    assert_eq!(metric(&run, "body_bytes"), Some(700.0 * 92.0));
    assert!(metric(&run, "requests_per_sec").unwrap() > 0.0);
    let latency = find_metric(&run, "latency_ns");
    assert_eq!(latency["histogram"]["count"], 700);

    let run = http_json(home.path(), &["-n", "300", "-c", "2", "--no-keepalive"]);
    assert_eq!(metric(&run, "responses"), Some(300.0));
    assert_eq!(metric(&run, "connections_opened"), Some(300.0));
    assert_eq!(run["settings"]["keep_alive"], false);

    let run = http_json(home.path(), &["-n", "400", "-c", "2", "--pipeline", "8"]);
    assert_eq!(metric(&run, "responses"), Some(400.0));
}

#[test]
fn http_prints_ab_layout_and_saves_the_run() {
    let home = temp();
    let out = dyno(home.path())
        .args([
            "http", "-n", "200", "-c", "2", "--format", "ab", "--tag", "ab",
        ])
        .timeout(Duration::from_secs(120))
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    // Timings and ports vary; the layout and the counts must not.
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"(?m)^(Server Port:\s+)\d+", "$1[port]");
    settings.add_filter(r"dyno \d+\.\d+\.\d+", "dyno [version]");
    settings.add_filter(
        r"(?m)^(Time taken for tests:|Requests per second:|Time per request:|Transfer rate:)(\s+)[\d.]+",
        "$1$2[n]",
    );
    settings.add_filter(
        r"(?m)^(Connect:|Processing:|Waiting:|Total:)\s.*$",
        "$1 [timings]",
    );
    settings.add_filter(r"(?m)^(\s+\d+%)\s+\d+", "$1 [ms]");
    settings.bind(|| insta::assert_snapshot!("http_ab_format", text));
    let history = ok(home.path(), &["history", "--kind", "http"]);
    assert!(
        history.contains("throughput") && history.contains("req/s"),
        "{history}"
    );
    let id = history
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    // A saved run can be shown again in either layout.
    let again = ok(home.path(), &["show", &id]);
    assert!(again.contains("latency_ns"), "{again}");
}

#[test]
fn http_counts_refused_connections_and_exits_1_over_the_error_rate() {
    let home = temp();
    let addr = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let url = format!("http://{addr}/");
    // Fewer than the 10 refusals after which a run against a closed port
    // gives up (tests/cli/http_engine.rs).
    let (run, stderr) = http_json_exit(home.path(), &[&url, "-n", "8", "-c", "2"], 1);
    assert_eq!(metric(&run, "errors_connect_refused"), Some(8.0));
    assert_eq!(metric(&run, "requests"), Some(8.0));
    assert!(stderr.contains("--max-error-rate"), "{stderr}");
    assert!(has_warning(&run, "no_responses"));
    // A generous threshold lets the same run pass.
    dyno(home.path())
        .args([
            "http",
            &url,
            "-n",
            "5",
            "--max-error-rate",
            "100",
            "--no-save",
        ])
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
}

#[test]
fn http_rejects_bad_input_with_exit_2() {
    let home = temp();
    let h = home.path();
    let cases: [(&[&str], &str); 11] = [
        (&["http", "-n", "0"], "at least 1"),
        (&["http", "--rate", "0"], "above 0"),
        (&["http", "-d", "soon"], "10s"),
        (&["http", "-n", "5", "-d", "1s"], "cannot be used with"),
        (&["http", "ftp://example.com/"], "ftp"),
        (&["http", "localhost:8080/x"], "http://localhost:8080/x"),
        (&["http", "-H", "NoColon", "-n", "1"], "Name: value"),
        (&["http", "http://127.0.0.1:1/{nope}", "-n", "1"], "{nope}"),
        (
            &["http", "--body-file", "/nonexistent/body", "-n", "1"],
            "/nonexistent/body",
        ),
        (
            &["http", "https://localhost/", "--unix-socket", "/x.sock"],
            "TLS over a Unix socket",
        ),
        (
            &["http", "http://127.0.0.1:1/", "--insecure", "-n", "1"],
            "only skips the certificate check of https:// URLs",
        ),
    ];
    let cases: Vec<(&[&str], &[&str])> = cases
        .iter()
        .map(|(args, needle)| (*args, std::slice::from_ref(needle)))
        .collect();
    assert_refused(h, &cases);
}

#[test]
fn https_with_insecure() {
    let home = temp();
    let server = tls_server::TlsServer::start(
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
        tls_server::After::KeepAlive,
    );
    let url = format!("https://{}/", server.addr());
    let run = http_json(home.path(), &[&url, "-n", "50", "-c", "2", "--insecure"]);
    assert_eq!(metric(&run, "status_200"), Some(50.0));
    assert_eq!(metric(&run, "errors"), Some(0.0));
    assert_eq!(metric(&run, "body_bytes"), Some(250.0));
    assert_eq!(metric(&run, "connections_opened"), Some(2.0));
    assert_eq!(run["settings"]["tls"], true);
    assert_eq!(run["settings"]["insecure"], true);
    // What the handshake settled on is kept, and shown as ab shows it.
    let session = &run["settings"]["tls_session"];
    assert_eq!(session["protocol"], "TLSv1.3");
    assert_eq!(session["cipher"], "TLS13_AES_256_GCM_SHA384");
    assert_eq!(session["key_exchange"], "X25519");
    let report = |flags: &str| {
        let line = format!("http {url} -n 10 -c 1 --insecure {flags} --no-save");
        ok(home.path(), &words(&line))
    };
    let ab = report("--format ab");
    assert!(
        ab.contains("SSL/TLS Protocol:       TLSv1.3,TLS13_AES_256_GCM_SHA384\n")
            && ab.contains("Server Temp Key:        X25519\n"),
        "{ab}"
    );
    let human = report("");
    assert!(
        human.contains("TLS TLSv1.3 TLS13_AES_256_GCM_SHA384, X25519 (certificate not verified)"),
        "{human}"
    );
    let codes = warning_codes(&run);
    assert!(codes.contains(&"tls_insecure"), "{codes:?}");

    // Without --insecure the self-signed certificate is refused: every
    // request fails its handshake, and the run fails its error check.
    let (run, _) = http_json_exit(home.path(), &[&url, "-n", "50", "-c", "2"], 1);
    assert_eq!(metric(&run, "errors_tls_handshake"), Some(50.0));
    assert_eq!(metric(&run, "errors"), Some(50.0));
    assert_eq!(metric(&run, "responses"), Some(0.0));
    assert_eq!(run["settings"]["tls"], true);
    assert_eq!(run["settings"]["insecure"], false);
    assert!(
        run["settings"].get("tls_session").is_none(),
        "no handshake completed"
    );
    let message = warning(&run, "tls_handshake_failed").expect("a warning says why and what to do");
    assert!(
        message.contains("--insecure") && message.contains("certificate"),
        "{message}"
    );
    assert_eq!(
        server.accepted(),
        2 + 1 + 1 + 50,
        "one connection per kept-alive client, one handshake per failed request"
    );
}

#[test]
fn http_open_model_reports_requested_and_achieved_rate() {
    let home = temp();
    let run = http_json(
        home.path(),
        &["--rate", "200", "-d", "1s", "-c", "4", "--warmup", "200ms"],
    );
    assert_eq!(run["settings"]["model"], "open");
    assert_eq!(metric(&run, "requested_rate_per_sec"), Some(200.0));
    let responses = metric(&run, "responses").unwrap();
    // 200 req/s for 1 s on a fixed schedule: 200 requests are due.
    assert!((190.0..=201.0).contains(&responses), "{responses}");
    assert!(metric(&run, "latency_uncorrected_ns").is_some());
    assert!(metric(&run, "late_sends").is_some());
}

#[test]
fn http_url_files_latency_logs_and_templates() {
    let home = temp();
    let server = dyno_serve::spawn(std::net::TcpListener::bind("127.0.0.1:0").unwrap(), 1).unwrap();
    let addr = server.local_addr();
    let urls = home.path().join("urls.txt");
    std::fs::write(
        &urls,
        format!("# two pages, round-robin\nhttp://{addr}/hello\n\nhttp://{addr}/blob/1k\n"),
    )
    .unwrap();
    let log = home.path().join("latency.hlog");
    let out = dyno(home.path())
        .args([
            "http",
            "-n",
            "10",
            "-c",
            "1",
            "--json",
            "--no-save",
            "--url-file",
        ])
        .arg(&urls)
        .arg("--latency-log")
        .arg(&log)
        .timeout(Duration::from_secs(60))
        .assert()
        .success()
        .get_output()
        .clone();
    let run = stdout_json(&out);
    assert_eq!(metric(&run, "body_bytes"), Some(5.0 * 92.0 + 5.0 * 1024.0));
    assert_eq!(run["settings"]["urls"], 2);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("#[StartTime:"), "{text}");
    assert!(
        text.lines()
            .any(|l| !l.starts_with('#') && l.contains(",HIST")),
        "{text}"
    );
    // The log is never overwritten.
    let again = fails(
        home.path(),
        &[
            "http",
            &format!("http://{addr}/hello"),
            "-n",
            "1",
            "--no-save",
            "--latency-log",
            log.to_str().unwrap(),
        ],
    );
    assert!(again.contains("latency.hlog"), "{again}");

    // {seq} and {rand:…} are filled per request: /blob/{seq} asks for 0, 1,
    // 2 … 9 bytes, 45 in all; /status/{rand:200-200} always answers 200.
    let run = http_json(
        home.path(),
        &[
            &format!("http://{addr}/blob/{{seq}}"),
            "-n",
            "10",
            "-c",
            "1",
        ],
    );
    assert_eq!(metric(&run, "body_bytes"), Some(45.0));
    let run = http_json(
        home.path(),
        &[
            &format!("http://{addr}/status/{{rand:200-200}}"),
            "-n",
            "10",
            "-c",
            "2",
            "--fail-status",
        ],
    );
    assert_eq!(metric(&run, "status_200"), Some(10.0));
}
