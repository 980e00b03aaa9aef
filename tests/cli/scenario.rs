//! `dyno http --scenario`: the BBS flow against the real board, values
//! carried from one answer into the next request, per-user data and
//! cookies against a server that checks them, failures counted per step,
//! the open model's books, and bad scenarios refused before any load.

use crate::common::*;

/// The metric `name` whose labels include `labels`.
fn labelled(run: &Value, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    metrics(run)
        .find(|m| {
            m["name"] == name
                && labels
                    .iter()
                    .all(|(k, v)| m["labels"][*k].as_str() == Some(*v))
        })
        .and_then(|m| m["value"].as_f64())
}

fn step(run: &Value, name: &str, flow: &str, step: &str) -> f64 {
    labelled(run, name, &[("flow", flow), ("step", step)])
        .unwrap_or_else(|| panic!("no {name}{{flow={flow},step={step}}}"))
}

fn flow(run: &Value, name: &str, flow: &str) -> f64 {
    labelled(run, name, &[("flow", flow)]).unwrap_or_else(|| panic!("no {name}{{flow={flow}}}"))
}

/// `dyno serve --app bbs` on a data folder of its own, stopped when
/// dropped.
pub(super) struct Board {
    child: std::process::Child,
    pub(super) addr: String,
    pub(super) url: String,
    _data: tempfile::TempDir,
}

impl Board {
    pub(super) fn start() -> Board {
        let data = temp();
        let (child, addr, _) = super::bbs::spawn_bbs(data.path());
        Board {
            child,
            url: format!("http://{addr}"),
            addr,
            _data: data,
        }
    }
}

impl Drop for Board {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `dyno http --scenario examples/bbs.toml URL ARGS… --no-save --json`,
/// expecting exit `code`.
fn bbs_run(home: &Path, board: &Board, flags: &str, code: i32) -> Value {
    let flags = format!("{} {flags}", board.url);
    scenario_run(home, &example(), &flags, code).0
}

/// Writes `text` as the scenario file `name` in `dir`; its path.
fn scenario_file(dir: &Path, name: &str, text: &str) -> String {
    write_file(dir, name, text).display().to_string()
}

/// `dyno http --scenario FILE FLAGS… --no-save --json`, the flags written
/// as a command line, expecting exit `code`: the Run and stderr.
fn scenario_run(home: &Path, file: &str, flags: &str, code: i32) -> (Value, String) {
    let line = format!("http --scenario {file} {flags} --no-save");
    json_run(home, &words(&line), code)
}

pub(super) fn example() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/bbs.toml")
        .display()
        .to_string()
}

#[test]
fn the_bbs_flow_edits_every_post_with_the_id_it_returned() {
    let home = temp();
    let board = Board::start();
    let addr = &board.addr;
    let run = bbs_run(home.path(), &board, "-n 600 -c 4 --seed 7", 0);
    // -n counts flows: 600 of them, every one completed.
    let (reads, writes) = (
        flow(&run, "flows_completed", "read"),
        flow(&run, "flows_completed", "write"),
    );
    assert_eq!(reads + writes, 600.0, "{run:#}");
    assert_eq!(
        flow(&run, "flows_failed", "read") + flow(&run, "flows_failed", "write"),
        0.0
    );
    // A 90/10 mix: 60 writes expected, 3 sd is 22.
    assert!(
        (38.0..=82.0).contains(&writes),
        "{writes} write flows of 600"
    );
    // Every post was followed by the edit of the id it returned, answered
    // 200 (the edit's check: its answer names that id).
    let posts = step(&run, "step_responses", "write", "post");
    assert_eq!(posts, writes);
    assert_eq!(step(&run, "step_responses", "write", "edit"), posts);
    for (f, s) in [("read", "messages"), ("write", "post"), ("write", "edit")] {
        assert_eq!(step(&run, "step_errors", f, s), 0.0, "{f}/{s}");
    }
    assert_eq!(metric(&run, "status_201"), Some(posts));
    assert_eq!(metric(&run, "status_200"), Some(reads + posts));
    assert_eq!(metric(&run, "requests"), Some(reads + 2.0 * posts));
    assert_eq!(
        run["settings"]["scenario"]["flows"][1]["steps"][1]["url"],
        "/api/boards/lobby/messages/${id}"
    );
    // The board agrees: the welcome message and one message per post,
    // each edited by the user who posted it.
    let (status, body) = get(addr, "/api/boards/lobby/messages?limit=100");
    assert_eq!(status, 200);
    let listed: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(listed["total"].as_f64(), Some(posts + 1.0), "{listed:#}");
    for m in listed["messages"].as_array().unwrap() {
        if m["author"] != "dyno" {
            assert!(m["msg"].as_str().unwrap().ends_with(", edited"), "{m}");
        }
    }
    // Over HTTP/2: each of a connection's streams is a user of its own.
    let run = bbs_run(home.path(), &board, "--h2 -c 2 -m 3 -n 300", 0);
    let writes = flow(&run, "flows_completed", "write");
    assert_eq!(
        flow(&run, "flows_completed", "read") + writes,
        300.0,
        "{run:#}"
    );
    assert_eq!(step(&run, "step_responses", "write", "edit"), writes);
    assert_eq!(step(&run, "step_errors", "write", "edit"), 0.0);
    assert!(metric(&run, "h2_header_bytes_wire").is_some());
}

#[test]
fn the_open_model_accounts_for_every_flow_that_fell_due() {
    let home = temp();
    let board = Board::start();
    let url = &board.url;
    let run = bbs_run(home.path(), &board, "--rate 200 -d 2s -c 4", 0);
    let mut accounted = metric(&run, "dropped_sends").unwrap();
    for f in ["read", "write"] {
        accounted += flow(&run, "flows_completed", f)
            + flow(&run, "flows_failed", f)
            + flow(&run, "flows_unfinished", f);
    }
    assert_eq!(accounted, 400.0, "{run:#}");
    assert!(
        labelled(
            &run,
            "step_latency_ns",
            &[("flow", "write"), ("step", "edit")]
        )
        .is_some()
    );
    // By stages: each stage counts its flows, from their due times.
    let run = bbs_run(home.path(), &board, "--rate-plan 100@1s,200@1s -c 4", 0);
    let stages = run["settings"]["rate_plan"]["stages"].as_array().unwrap();
    let due = |i: usize| {
        let s = &stages[i];
        ["ended", "dropped", "unfinished"]
            .iter()
            .map(|k| s[*k].as_f64().unwrap())
            .sum::<f64>()
    };
    assert_eq!((due(0), due(1)), (100.0, 200.0), "{stages:#?}");
    assert_eq!(stages[1]["errors"], 0);
    assert!(stages[1]["p50_ns"].as_f64().unwrap() > 0.0);
    // The report shows the flows and the steps.
    let text = ok(
        home.path(),
        &words(&format!(
            "http --scenario {} {url} -n 50 -c 2 --no-save",
            example()
        )),
    );
    assert_contains_all(
        &text,
        &[
            "Scenario    ",
            "bbs.toml: 2 flows, 3 steps; 1 setup step made first",
            "write/edit",
            "read/messages",
        ],
    );
}

/// `--find-max` searches a rate of flows: its steps are flows per second,
/// judged on the requests' latency and the flows that failed.
#[test]
fn a_capacity_search_finds_a_rate_of_flows() {
    let board = Board::start();
    let (stderr, run) = search(
        &board,
        "-c 16 --find-max --slo p99<=50ms --start 100 --step 300ms --budget 3s",
    );
    assert!(stderr.contains(" flows/s: achieved "), "{stderr}");
    let steps = run["settings"]["capacity"]["steps"].as_array().unwrap();
    assert!(!steps.is_empty(), "{run:#}");
    // Described by its file (not a method), and its rates are flows.
    assert!(
        run["description"]
            .as_str()
            .unwrap()
            .starts_with("scenario bbs.toml at "),
        "{}",
        run["description"]
    );
    let unit = metrics(&run)
        .find(|m| m["name"] == "max_sustainable_rate" || m["name"] == "max_passing_rate")
        .map(|m| m["unit"].clone());
    assert!(
        unit.as_ref().is_none_or(|u| u == "flows_per_sec"),
        "{unit:?}"
    );
    // The first step was asked for 100 flows/s and made about that many.
    let first = &steps[0];
    assert!(
        (first["requested"].as_f64().unwrap() - 100.0).abs() < 1.0,
        "{first}"
    );
    assert!(
        (first["achieved"].as_f64().unwrap() - 100.0).abs() < 15.0,
        "{first}"
    );
}

/// A capacity search of the BBS flow with `flags`: it ends (found, or not
/// within its bounds: exit 0 or 1), and its stderr and run.
fn search(board: &Board, flags: &str) -> (String, Value) {
    let home = temp();
    let out = dyno(home.path())
        .args(["http", "--scenario", &example(), &board.url])
        .args(words(flags))
        .args(["--json", "--no-save"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{stderr}");
    (stderr, serde_json::from_slice(&out.stdout).unwrap())
}

/// `--find-max -c FROM..TO` sweeps the users: each step's throughput is
/// flows per second.
#[test]
fn a_sweep_of_users_counts_flows() {
    let board = Board::start();
    let (stderr, run) = search(&board, "-c 1..4 --find-max --slo p99<=1s --step 300ms");
    // Steps at 1, 2 and 4 users, each saying flows/s.
    for users in ["1 connection,", "2 connections,", "4 connections,"] {
        assert!(stderr.contains(users), "no {users:?} in {stderr}");
    }
    assert!(stderr.contains(" flows/s, p99 "), "{stderr}");
    assert!(
        metrics(&run).any(|m| m["name"] == "flows_completed"),
        "{run:#}"
    );
}

/// A keep-alive HTTP/1.1 server on loopback, one thread per connection,
/// whose answer to each request `answer` makes from its path and its
/// `sid` cookie (the cookie's value without `-token`): (status line,
/// extra header lines, body).
fn line_server(answer: fn(&str, Option<String>) -> (&'static str, String, String)) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut conn = conn;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
                    let mut cookie = None;
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) == 0 {
                            return;
                        }
                        if h == "\r\n" {
                            break;
                        }
                        if let Some(v) = h.strip_prefix("Cookie: ") {
                            cookie = v
                                .trim()
                                .strip_prefix("sid=")
                                .map(|s| s.trim_end_matches("-token").to_owned());
                        }
                    }
                    let (status, extra, body) = answer(&path, cookie);
                    let answer = format!(
                        "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if conn.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// A server that logs users in: `/login?user=U` sets the cookie
/// `sid=U-token`, `/me` answers `you are U` for that cookie and 401
/// without it.
fn login_server() -> String {
    line_server(|path, cookie| {
        if let Some(user) = path.strip_prefix("/login?user=") {
            (
                "200 OK",
                format!("Set-Cookie: sid={user}-token; Path=/\r\n"),
                "in".to_owned(),
            )
        } else if let Some(user) = cookie {
            ("200 OK", String::new(), format!("you are {user}"))
        } else {
            ("401 Unauthorized", String::new(), "who?".to_owned())
        }
    })
}

#[test]
fn each_user_has_its_own_data_row_and_cookies() {
    let (home, dir) = (temp(), temp());
    let addr = login_server();
    write_file(dir.path(), "users.csv", "user\nann\nbob\ncat\ndan\n");
    let file = scenario_file(
        dir.path(),
        "login.toml",
        &format!(
            r#"base = "http://{addr}"
cookies = true
data = "users.csv"

[[flow]]
name = "session"

[[flow.step]]
name = "login"
url = "/login?user=${{user}}"

[[flow.step]]
name = "me"
url = "/me"
check = {{ status = 200, contains = "you are ${{user}}" }}
"#
        ),
    );
    let (run, _) = scenario_run(home.path(), &file, "-n 200 -c 4", 0);
    assert_eq!(flow(&run, "flows_completed", "session"), 200.0, "{run:#}");
    assert_eq!(step(&run, "step_errors", "session", "me"), 0.0);
    // Without cookies, /me is 401 for everyone: the step's check fails,
    // counted as that step's errors, and the run says so (exit 1).
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("cookies = true", "cookies = false");
    std::fs::write(&file, text).unwrap();
    let (run, _) = scenario_run(home.path(), &file, "-n 40 -c 4", 1);
    assert_eq!(flow(&run, "flows_failed", "session"), 40.0);
    assert_eq!(step(&run, "step_errors", "session", "me"), 40.0);
    assert_eq!(
        labelled(
            &run,
            "step_errors_by_class",
            &[("step", "me"), ("class", "status")]
        ),
        Some(40.0)
    );
    // Fewer rows than users: refused before any load.
    let err = fails(
        home.path(),
        &words(&format!("http --scenario {file} -n 40 -c 5 --no-save")),
    );
    assert!(
        err.contains("has 4 data rows and the run has 5 virtual users"),
        "{err}"
    );
}

#[test]
fn a_failed_extraction_ends_the_flow_and_the_user_goes_on() {
    let (home, dir) = (temp(), temp());
    let (mut child, addr) = spawn_serve("127.0.0.1:0", 1);
    let file = scenario_file(
        dir.path(),
        "s.toml",
        r#"[[flow]]
name = "f"
[[flow.step]]
name = "find"
url = "/hello"
extract = [{ regex = 'id=(\d+)', as = "id" }]
[[flow.step]]
name = "use"
url = "/status/${id}"
"#,
    );
    let (run, stderr) = scenario_run(home.path(), &file, &format!("http://{addr} -n 30 -c 2"), 1);
    assert_eq!(flow(&run, "flows_failed", "f"), 30.0, "{stderr}");
    assert_eq!(step(&run, "step_errors", "f", "find"), 30.0);
    assert_eq!(
        labelled(
            &run,
            "step_errors_by_class",
            &[("step", "find"), ("class", "extract_failed")]
        ),
        Some(30.0)
    );
    // The step after it was never made.
    assert_eq!(step(&run, "step_responses", "f", "use"), 0.0);
    assert_eq!(metric(&run, "errors_extract_failed"), Some(30.0));
    let _ = child.kill();
    let _ = child.wait();
}

/// A server whose `/v?u=U` answers `v=ok` for every user but `bad`, for
/// whom it answers a value with a line break; anything else is 200.
fn value_server() -> String {
    line_server(|path, _| {
        let body = match path.strip_prefix("/v?u=") {
            Some("bad") => "v=one\ntwo",
            Some(_) => "v=ok",
            None => "fine",
        };
        ("200 OK", String::new(), body.to_owned())
    })
}

/// An extracted value that cannot go into the header the next step puts
/// it in fails that user's step without sending it, counted as a failed
/// request (the error rate stays a share), and the user pauses rather
/// than spin: the other user on its thread goes on at its own pace.
#[test]
fn a_value_that_cannot_go_into_a_header_fails_one_user_not_its_thread() {
    let (home, dir) = (temp(), temp());
    let addr = value_server();
    write_file(dir.path(), "users.csv", "user\nbad\ngood\n");
    let file = scenario_file(
        dir.path(),
        "s.toml",
        &format!(
            r#"base = "http://{addr}"
data = "users.csv"
[[flow]]
name = "f"
[[flow.step]]
name = "get"
url = "/v?u=${{user}}"
extract = [{{ regex = '(?s)v=(.*)', as = "v" }}]
[[flow.step]]
name = "use"
url = "/use"
headers = ["X-V: ${{v}}"]
"#
        ),
    );
    let flags = "-d 2s -c 2 -t 1 --max-error-rate 0";
    let (run, stderr) = scenario_run(home.path(), &file, flags, 1);
    let unsendable = metric(&run, "errors_value_unsendable").unwrap_or(0.0);
    // The bad user pauses up to 100 ms after each: tens in 2 s, not
    // millions, while the good user's flows run at the server's pace.
    assert!(
        (1.0..=100.0).contains(&unsendable),
        "{unsendable}: {stderr}"
    );
    let completed = flow(&run, "flows_completed", "f");
    assert!(completed >= 100.0, "{completed} flows completed: {stderr}");
    assert_eq!(
        labelled(
            &run,
            "step_errors_by_class",
            &[("step", "use"), ("class", "value_unsendable")]
        ),
        Some(unsendable)
    );
    // A request not sent is a failed request: the share stays a share.
    let rate = stderr
        .split("dyno: ")
        .find_map(|l| l.split_once("% of requests failed"))
        .map(|(share, _)| share.trim().parse::<f64>().unwrap());
    assert!(rate.is_some_and(|r| r > 0.0 && r < 100.0), "{stderr}");
}

/// A server that answers each request with its request target, and
/// `/go/here` and `/go/away` with a Location on itself (relative) and on
/// another server.
fn echo_server() -> String {
    line_server(|path, _| match path {
        "/go/here" => (
            "302 Found",
            "Location: /landed?x=1\r\n".into(),
            String::new(),
        ),
        "/go/away" => (
            "302 Found",
            "Location: http://elsewhere.example/x\r\n".into(),
            String::new(),
        ),
        _ => ("200 OK", String::new(), format!("target={path}")),
    })
}

/// M3 and the guide's `url = "${loc}"`: a value with `&`, `=` and `+`
/// goes into a query as one component and into a path as one segment, a
/// `${raw:…}` value as it is (the server, which echoes what it got, is the
/// judge); an extracted Location is followed on the same server, and one
/// on another server is not sent (`value_unsendable`).
#[test]
fn values_are_percent_encoded_where_they_go_and_a_location_is_followed() {
    let (home, dir) = (temp(), temp());
    let addr = echo_server();
    write_file(dir.path(), "terms.csv", "q\n\"a+b&c=d\"\n");
    let scenario = scenario_file(
        dir.path(),
        "s.toml",
        &format!(
            r#"base = "http://{addr}"
data = "terms.csv"
[[flow]]
name = "search"
[[flow.step]]
url = "/search?q=${{q}}&raw=${{raw:q}}"
check = {{ contains = "target=/search?q=a%2Bb%26c%3Dd&raw=a+b&c=d" }}
[[flow.step]]
url = "/items/${{q}}"
check = {{ contains = "target=/items/a+b&c=d" }}
[[flow.step]]
url = "/go/here"
check = {{ status = 302 }}
extract = [{{ header = "Location", as = "loc" }}]
[[flow.step]]
url = "${{loc}}"
check = {{ contains = "target=/landed?x=1" }}
"#
        ),
    );
    let (run, stderr) = scenario_run(home.path(), &scenario, "-n 5 -c 1 -t 1", 0);
    assert_eq!(metric(&run, "errors"), Some(0.0), "{stderr}");
    assert_eq!(flow(&run, "flows_completed", "search"), 5.0, "{stderr}");
    // A Location on another server: the step is not sent.
    scenario_file(
        dir.path(),
        "s.toml",
        &format!(
            r#"base = "http://{addr}"
[[flow]]
name = "away"
[[flow.step]]
url = "/go/away"
check = {{ status = 302 }}
extract = [{{ header = "Location", as = "loc" }}]
[[flow.step]]
url = "${{loc}}"
"#
        ),
    );
    let (run, stderr) = scenario_run(home.path(), &scenario, "-n 3 -c 1 -t 1", 1);
    assert_eq!(
        metric(&run, "errors_value_unsendable"),
        Some(3.0),
        "{stderr}"
    );
    // The breach of --max-error-rate is in the record, not only the exit.
    assert!(
        has_warning(&run, "error_rate_exceeded"),
        "{}",
        run["warnings"]
    );
}

/// Failed checks and extractions leave their mark on the saved run: a
/// `checks_failed` warning naming the steps and the variables that were
/// not found, and the HTML page's table of flows shows the flows that
/// failed (real-clients 2).
#[test]
fn failed_checks_and_extractions_are_marked_in_the_run() {
    let (home, dir) = (temp(), temp());
    let (_server, base) = crate::http::reference_server();
    let file = scenario_file(
        dir.path(),
        "mustfail.toml",
        &format!(
            r#"base = "{base}"
[[flow]]
name = "bad"
[[flow.step]]
name = "check"
url = "/hello"
check = {{ contains = "nope" }}
[[flow]]
name = "ex"
[[flow.step]]
name = "take"
url = "/hello"
extract = [{{ json = "/token", as = "token" }}]
[[flow.step]]
url = "/x/${{token}}"
[[flow]]
name = "st"
[[flow.step]]
url = "/hello"
check = {{ status = 201 }}
"#
        ),
    );
    let out = dyno(home.path())
        .args(words(&format!("http --scenario {file} -n 20 -c 2 -t 1")))
        .assert()
        .code(1);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let warning = stdout
        .lines()
        .find(|l| l.ends_with("[checks_failed]"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(warning.contains("bad/check:"), "{warning}");
    assert!(
        warning.contains("ex/take: `token` found nothing"),
        "{warning}"
    );
    // A step's own status check: the step table and the Errors line say
    // it in the same words, and the Status line does not claim the run's
    // --expect-status alone (newcomer L6).
    let row = stdout
        .lines()
        .find(|l| l.starts_with("st/1 "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(row.contains("unexpected status: "), "{row}");
    let status = stdout.lines().find(|l| l.starts_with("Status ")).unwrap();
    assert!(
        status.contains("(expected: each step's check, else 200-399)"),
        "{status}"
    );
    let page = home.path().join("page.html");
    dyno(home.path())
        .args(["report", "--last", "1", "-o", &page.display().to_string()])
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Flows, by how they ended"), "no flows table");
    assert!(
        html.contains("<td>bad</td>"),
        "the failed flow is in the table"
    );
}

/// A think between steps is the user's: `-n` waits for it (here 1,000,000
/// s), and Ctrl-C ends such a run at once with an honest partial record:
/// its rates are over the time it ran, not up to its last answer, and
/// `--no-save` is not told it was kept (newcomer L4, L21).
#[test]
fn an_interrupted_count_of_flows_reports_the_time_it_ran() {
    let (home, dir) = (temp(), temp());
    let (_server, base) = crate::http::reference_server();
    let file = scenario_file(
        dir.path(),
        "long.toml",
        &format!(
            "base = \"{base}\"\n[[flow]]\nname = \"f\"\n[[flow.step]]\nurl = \"/hello\"\nthink = \"1000000s\"\n[[flow.step]]\nurl = \"/hello\"\n"
        ),
    );
    let out = signalled(
        home.path(),
        &words(&format!(
            "http --scenario {file} -n 5 -c 2 --json --no-save"
        )),
        Duration::from_millis(1500),
        libc::SIGINT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("not saved (--no-save)"), "{stderr}");
    assert!(!stderr.contains("was kept"), "{stderr}");
    let run = stdout_json(&out);
    assert_eq!(metric(&run, "responses"), Some(2.0), "{stderr}");
    let measured = metric(&run, "measured_ns").unwrap();
    assert!(
        measured >= 1.0e9,
        "the window ran to the interrupt: {measured} ns"
    );
    let rate = metric(&run, "requests_per_sec").unwrap();
    assert!(
        rate <= 2.0,
        "2 answers over the {measured} ns it ran: {rate}/s"
    );
}

/// The think after a flow's last step is the user's pause before its
/// next flow: `-n` does not wait it out when no flow follows (here 300 s,
/// beyond the command's timeout), and requests in flight at a duration's
/// end count as their step's `step_unfinished`, as they count in the
/// run's `unfinished_requests` (real-clients 6 and 7).
#[test]
fn a_trailing_think_is_not_waited_out_and_cut_steps_count_as_unfinished() {
    let (home, dir) = (temp(), temp());
    let (_server, base) = crate::http::reference_server();
    let scenario = scenario_file(
        dir.path(),
        "think.toml",
        &format!(
            "base = \"{base}\"\n[[flow]]\nname = \"f\"\n[[flow.step]]\nname = \"hello\"\nurl = \"/hello\"\nthink = \"300s\"\n"
        ),
    );
    let (run, stderr) = scenario_run(home.path(), &scenario, "-n 1 -c 1 -t 1", 0);
    assert_eq!(flow(&run, "flows_completed", "f"), 1.0, "{stderr}");
    scenario_file(
        dir.path(),
        "think.toml",
        &format!(
            "base = \"{base}\"\n[[flow]]\nname = \"f\"\n[[flow.step]]\nname = \"slow\"\nurl = \"/delay/400\"\n"
        ),
    );
    let (run, stderr) = scenario_run(home.path(), &scenario, "-d 1s -c 4 -t 1", 0);
    let cut = metric(&run, "unfinished_requests").unwrap();
    assert!(cut >= 1.0, "requests under way at the end: {stderr}");
    assert_eq!(step(&run, "step_unfinished", "f", "slow"), cut, "{stderr}");
}

#[test]
fn bad_scenarios_are_refused_before_any_load() {
    let (home, dir) = (temp(), temp());
    // Nothing listens here: a scenario that got as far as loading would
    // fail its requests, not exit 2.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let write = |name: &str, text: &str| scenario_file(dir.path(), name, text);
    let head = "[[flow]]\nname = \"f\"\n[[flow.step]]\n";
    let syntax = write("syntax.toml", &format!("{head}url = \"/\"\nmethod = \n"));
    let undefined = write("undefined.toml", &format!("{head}url = \"/m/${{id}}\"\n"));
    let think = write(
        "think.toml",
        &format!("{head}url = \"/\"\nthink = \"later\"\n"),
    );
    let no_data = write(
        "data.toml",
        &format!("data = \"none.csv\"\n{head}url = \"/\"\n"),
    );
    let fine = write("fine.toml", &format!("{head}url = \"/\"\n"));
    // The audit's row: a value whose line break would end a header.
    write("users.csv", "user\n\"a\r\nX-Evil: 1\"\nbob\n");
    let header = write(
        "header.toml",
        &format!(
            "data = \"users.csv\"\n{head}url = \"/?u=${{user}}\"\nheaders = [\"X-User: ${{user}}\"]\n"
        ),
    );
    let setup = write(
        "setup.toml",
        &format!("[[setup]]\nurl = \"/status/500\"\n{head}url = \"/\"\n"),
    );
    let cases: [(&[&str], &[&str]); 9] = [
        (
            &["http", "--scenario", &syntax, &url],
            &["syntax.toml:5:10", "string"],
        ),
        (
            &["http", "--scenario", &undefined, &url],
            &["undefined.toml:4:11", "`${id}` is not set before this step"],
        ),
        (
            &["http", "--scenario", &think, &url],
            &["think.toml:5:9", "write a time"],
        ),
        (
            &["http", "--scenario", &no_data, &url],
            &["data.toml:1:8", "none.csv"],
        ),
        (
            &["http", "--scenario", "/nonexistent.toml", &url],
            &["could not read the scenario file"],
        ),
        (
            &["http", "--scenario", &header, &url, "-c", "2"],
            &[
                "users.csv', line 2: row 1 (column `user`) holds a line break",
                "step \"1\" of flow \"f\" puts `${user}` into a header",
            ],
        ),
        (
            &["http", "--scenario", &fine, &url, "--format", "ab"],
            &["--format ab does not work with --scenario"],
        ),
        (
            &["http", "--scenario", &fine, &url, "--method", "POST"],
            &["--method does not work"],
        ),
        (
            &["http", "--scenario", &fine, &url, "-H", "X-A: 1"],
            &[
                "-H does not work with --scenario",
                "`headers = [\"Name: value\"]` at the top",
            ],
        ),
    ];
    assert_refused(home.path(), &cases);
    // A setup step that fails calls the run off, naming the step and the
    // answer.
    let (mut child, addr) = spawn_serve("127.0.0.1:0", 1);
    let err = fails(
        home.path(),
        &words(&format!("http --scenario {setup} http://{addr} --no-save")),
    );
    assert!(
        err.contains("setup step \"setup 1\" (GET /status/500) was answered 500"),
        "{err}"
    );
    let _ = child.kill();
    let _ = child.wait();
}
