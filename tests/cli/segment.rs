//! Segmented runs: `dyno http --segment I/N --group NAME` as separate
//! processes, each from its own loopback address, meeting in a real store
//! (PostgreSQL, as machines would share it, and one SQLite file), against a
//! server that counts what it got; then `dyno merge`, `show`, `compare`
//! and `report` on the group.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use super::db::pg;
use crate::common::*;
// A segment's figures are its unlabelled metrics; every one is there.
use crate::common::unlabelled_metric as metric;
use serde_json::json;

/// What a [`counting_server`] saw: requests per client address, and every
/// `s=` query value.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    by_peer: BTreeMap<IpAddr, u64>,
    seqs: Vec<u64>,
}

/// A loopback HTTP/1.1 server that answers every request `200 ok` (after
/// `delay`, to keep requests under way) and counts what it got.
fn counting_server(delay: Duration) -> (String, Arc<Mutex<Seen>>) {
    let (addr, seen) = ok_server(move |head, peer, seen| {
        let seq = head
            .split_once("s=")
            .and_then(|(_, rest)| rest.split(' ').next())
            .and_then(|v| v.parse::<u64>().ok());
        {
            let mut s = seen.lock().unwrap();
            *s.by_peer.entry(peer).or_default() += 1;
            s.seqs.extend(seq);
        }
        std::thread::sleep(delay);
    });
    (format!("http://{addr}/x?s={{seq}}"), seen)
}

/// A loopback HTTP/1.1 server (keep-alive, one thread a connection) that
/// hands each request head, with the client's address and the record
/// the server keeps, to `on_request`, then answers `200 ok`.
fn ok_server(
    on_request: impl Fn(&str, IpAddr, &Mutex<Seen>) + Send + Sync + 'static,
) -> (std::net::SocketAddr, Arc<Mutex<Seen>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (kept, on_request) = (seen.clone(), Arc::new(on_request));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let (seen, on_request) = (kept.clone(), on_request.clone());
            std::thread::spawn(move || {
                let peer = stream.peer_addr().unwrap().ip();
                let mut buf = [0u8; 8192];
                let mut pending = Vec::new();
                loop {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => pending.extend_from_slice(&buf[..n]),
                    }
                    while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head: Vec<u8> = pending.drain(..end + 4).collect();
                        on_request(&String::from_utf8_lossy(&head), peer, &seen);
                        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                        if stream.write_all(ok).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    (addr, seen)
}

/// Segment `i` of `n` of the run `args` describe, as a process of its
/// own, from 127.0.0.(2 + i), printing its run as JSON.
fn segment(
    home: &Path,
    store: &str,
    group: &str,
    i: u32,
    n: u32,
    args: &[&str],
) -> std::process::Child {
    let mut cmd = StdCommand::new(env!("CARGO_BIN_EXE_dyno"));
    cmd.env("DYNO_HOME", home)
        .env_remove("XDG_DATA_HOME")
        .args(["--store", store, "http"])
        .args(args)
        .args(["--segment", &format!("{i}/{n}"), "--group", group])
        .args(["-B", &format!("127.0.0.{}", 2 + i), "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.spawn().unwrap()
}

/// The `n` segments of the run `args` describe, started together; waits
/// for them, checks that each succeeded, and returns their runs.
fn run_segments(home: &Path, store: &str, group: &str, n: u32, args: &[&str]) -> Vec<Value> {
    let children: Vec<_> = (0..n)
        .map(|i| segment(home, store, group, i, n, args))
        .collect();
    all_succeeded(children)
}

/// `dyno merge GROUP --json` on `store`, which must succeed: the merged
/// run.
fn merge_json(home: &Path, store: &str, group: &str) -> Value {
    let out = dyno(home)
        .args(["--store", store, "merge", group, "--json"])
        .assert()
        .success();
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

/// The `{seq}` values a [`counting_server`] got, each once.
fn seqs(seen: &Mutex<Seen>) -> BTreeSet<u64> {
    seen.lock().unwrap().seqs.iter().copied().collect()
}

/// The table `seen` in `db`, made by `create`, and in `dir` the script
/// `seen.sql` that adds each transaction's `:client_id` to it.
fn client_id_script(pg: &dyno_testutil::pg::Pg, db: &str, create: &str, dir: &Path) -> PathBuf {
    pg.psql(db, create);
    write_file(
        dir,
        "seen.sql",
        "INSERT INTO seen (client_id) VALUES (:client_id);\n",
    )
}

/// A new database of the throwaway cluster, as `--store` takes it.
fn pg_store(pg: &dyno_testutil::pg::Pg) -> String {
    pg.url_of(&pg.database())
}

/// The SQLite store `shared.db` in `home`, as `--store` takes it.
fn shared_db(home: &Path) -> String {
    home.join("shared.db").to_str().unwrap().to_owned()
}

/// The `n` segments of `dyno http URL FLAGS…` against a new
/// [`counting_server`] that answers at once, meeting in `store` under
/// `group`: their runs, and what the server saw.
fn counted_segments(
    home: &Path,
    store: &str,
    group: &str,
    n: u32,
    flags: &str,
) -> (Vec<Value>, Arc<Mutex<Seen>>) {
    let (url, seen) = counting_server(Duration::ZERO);
    let line = format!("{url} {flags}");
    (run_segments(home, store, group, n, &words(&line)), seen)
}

/// Waits for every one of `children` (segments started together), checks
/// that each succeeded, and returns their runs.
fn all_succeeded(children: Vec<std::process::Child>) -> Vec<Value> {
    children
        .into_iter()
        .map(|c| {
            let (code, run, err) = finished(c);
            assert_eq!(code, 0, "{err}");
            run.unwrap()
        })
        .collect()
}

/// Waits for a segment; its exit code, its run (if it printed one) and
/// what it said on stderr.
fn finished(child: std::process::Child) -> (i32, Option<Value>, String) {
    let out = child.wait_with_output().unwrap();
    let run = serde_json::from_slice(&out.stdout).ok();
    (
        out.status.code().unwrap_or(-1),
        run,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The `n` segments of `dyno db run ARGS` on the throwaway server's
/// database `db`, as processes of their own meeting in `store` under
/// `group`, started together; waits for them, checks that each succeeded,
/// and returns their runs.
fn db_segments(
    pg: &dyno_testutil::pg::Pg,
    db: &str,
    home: &Path,
    store: &str,
    group: &str,
    n: u32,
    args: &[&str],
) -> Vec<Value> {
    let children: Vec<_> = (0..n)
        .map(|i| db_segment(pg, db, home, store, (group, i, n), args))
        .collect();
    all_succeeded(children)
}

/// Segment `i` of `n` of `dyno db run ARGS` in `group` on the throwaway
/// server's database `db`, as a process of its own meeting in `store`,
/// printing its run as JSON.
fn db_segment(
    pg: &dyno_testutil::pg::Pg,
    db: &str,
    home: &Path,
    store: &str,
    (group, i, n): (&str, u32, u32),
    args: &[&str],
) -> std::process::Child {
    StdCommand::new(env!("CARGO_BIN_EXE_dyno"))
        .env("DYNO_HOME", home)
        .env_remove("XDG_DATA_HOME")
        .envs(pg.env.iter().map(|(k, v)| (k, v)))
        .env("PGDATABASE", db)
        .args(["--store", store, "db", "run"])
        .args(args)
        .args(["--segment", &format!("{i}/{n}"), "--group", group, "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The highest pass a search reports, labelled with its objective: its
/// capacity (`max_sustainable_rate`, the headline) when it found one, or,
/// when the budget ended it first (a busy machine's steps disagree and are
/// run again), the lower bound it keeps as context (`max_passing_rate`).
fn capacity_metric(run: &Value) -> f64 {
    let outcome = &run["settings"]["capacity"]["answer"]["outcome"];
    let name = if outcome == "found" {
        "max_sustainable_rate"
    } else {
        assert_eq!(outcome, "unfinished", "{run}");
        "max_passing_rate"
    };
    let m = find_metric(run, name);
    assert!(m["labels"]["slo"].is_string(), "{m}");
    m["value"].as_f64().unwrap()
}

/// A search's steps: the rate each asked for, and whether it passed.
fn steps_taken(run: &Value) -> Vec<(f64, bool)> {
    run["settings"]["capacity"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["requested"].as_f64().unwrap(), s["passed"] == true))
        .collect()
}

fn histogram(run: &Value, name: &str) -> hdrhistogram::Histogram<u64> {
    let m = find_metric(run, name);
    let h: dyno_model::Histogram = serde_json::from_value(m["histogram"].clone()).unwrap();
    dyno_stats::hdr::from_model(&h).unwrap()
}

/// The three segments of one `-n` run, on the PostgreSQL store: the server
/// gets exactly n requests, from three addresses, every `{seq}` once; the
/// merged run counts them all and its histogram is the sum of the three.
#[test]
fn three_segments_make_exactly_the_run_and_merge_without_loss() {
    let store = pg_store(&pg());
    let home = temp();
    let (segments, seen) = counted_segments(home.path(), &store, "g1", 3, "-n 3001 -c 6 -t 3");
    let counts: Vec<f64> = segments.iter().map(|r| metric(r, "responses")).collect();
    assert_eq!(counts, [1001.0, 1000.0, 1000.0]);
    for (i, run) in segments.iter().enumerate() {
        assert_eq!(run["settings"]["segment"]["index"], i);
        assert_eq!(
            run["settings"]["connections"], 2,
            "each segment opens its share"
        );
        assert!(run["tags"].as_array().unwrap().contains(&json!("group:g1")));
        // Measured against the store server's clock.
        assert!(run["settings"]["segment"]["clock_offset_ns"].is_i64());
    }
    {
        let seen = seen.lock().unwrap();
        let peers: Vec<String> = seen.by_peer.keys().map(ToString::to_string).collect();
        assert_eq!(peers, ["127.0.0.2", "127.0.0.3", "127.0.0.4"]);
        assert_eq!(seen.by_peer.values().sum::<u64>(), 3001);
        let seqs: BTreeSet<u64> = seen.seqs.iter().copied().collect();
        assert_eq!(seen.seqs.len(), 3001, "no {{seq}} twice");
        assert_eq!(seqs, (0..3001).collect::<BTreeSet<u64>>());
    }

    let merged = merge_json(home.path(), &store, "g1");
    assert_eq!(metric(&merged, "responses"), 3001.0);
    assert_eq!(metric(&merged, "requests"), 3001.0);
    assert_eq!(metric(&merged, "status_200"), 3001.0);
    assert_eq!(merged["settings"]["connections"], 6);
    let described = merged["description"].as_str().unwrap();
    assert!(
        described.ends_with("c=6 [group g1: 3 of 3 segments]"),
        "{described}"
    );
    assert_eq!(merged["settings"]["group"]["incomplete"], false);
    // The merged rate is the merged count over the merged window (the
    // common start to the last segment's end), never the sum of the
    // segments' rates, which cover different windows when -n segments end
    // apart (issue 26, H2).
    let window_s = metric(&merged, "measured_ns") / 1e9;
    let longest = segments
        .iter()
        .map(|r| metric(r, "measured_ns") / 1e9)
        .fold(0.0, f64::max);
    assert!(window_s >= longest, "{window_s} < {longest}");
    let rate = metric(&merged, "requests_per_sec");
    assert!((rate - 3001.0 / window_s).abs() < 1e-6 * rate, "{rate}");
    let summed: f64 = segments.iter().map(|r| metric(r, "requests_per_sec")).sum();
    assert!(rate <= summed * (1.0 + 1e-9), "{rate} > {summed}");
    // Bit for bit the sum of the segments' histograms.
    let mut sum = dyno_stats::hdr::latency_histogram();
    for run in &segments {
        sum.add(histogram(run, "latency_ns")).unwrap();
    }
    let whole = histogram(&merged, "latency_ns");
    assert_eq!(whole, sum);
    assert_eq!(whole.len(), 3001);
    assert!(
        merged["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["code"] != "segments_incomplete" && w["code"] != "segment_start_spread"),
        "{}",
        merged["warnings"]
    );

    // show, compare and report take the group's name.
    let shown = dyno(home.path())
        .args(["--store", &store, "show", "g1", "--json"])
        .assert()
        .success();
    let shown: Value = serde_json::from_slice(&shown.get_output().stdout).unwrap();
    assert_eq!(
        shown["id"], merged["id"],
        "the same segments merge into the same run"
    );
    // A whole run compared with its own part tells nothing (L19).
    let first = segments[0]["id"].as_str().unwrap();
    dyno(home.path())
        .args(["--store", &store, "compare", first, "g1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is a segment of the merged run"));
    let page = home.path().join("g1.html");
    dyno(home.path())
        .args(["--store", &store, "report", "g1", "-o"])
        .arg(&page)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("group g1"), "the page names the merged run");
}

/// The open model split: every N-th due time of one timetable. Under -n
/// the segments send each request number once; the merged rate is the one
/// asked for.
/// Segments over HTTP/3: each from its own source address over QUIC, the
/// run's `{seq}` values shared out between them, and the merge exact.
/// Caddy's log is the judge.
#[test]
fn segments_over_http3_make_exactly_the_run() {
    let home = temp();
    let store = shared_db(home.path());
    let caddy = crate::h3::Caddy::start(&[("1k.bin", crate::h3::bytes(1024))], "h1 h2 h3");
    let url = caddy.url("/1k.bin?s={seq}");
    let args = [
        url.as_str(),
        "--h3",
        "--insecure",
        "-n",
        "301",
        "-c",
        "4",
        "-m",
        "2",
    ];
    let segments = run_segments(home.path(), &store, "g3", 2, &args);
    let counts: Vec<f64> = segments.iter().map(|r| metric(r, "responses")).collect();
    assert_eq!(counts, [151.0, 150.0]);
    let merged = merge_json(home.path(), &store, "g3");
    assert_eq!(metric(&merged, "responses"), 301.0);
    assert_eq!(metric(&merged, "h3_handshakes"), 4.0);
    std::thread::sleep(Duration::from_millis(300));
    let logged = caddy.logged();
    let mut seqs = BTreeSet::new();
    let mut peers = BTreeSet::new();
    for line in &logged {
        assert_eq!(line["request"]["proto"], "HTTP/3.0", "{line}");
        let uri = line["request"]["uri"].as_str().unwrap();
        let seq: u64 = uri.rsplit_once("s=").unwrap().1.parse().unwrap();
        assert!(seqs.insert(seq), "{{seq}} {seq} twice");
        peers.insert(line["request"]["remote_ip"].as_str().unwrap().to_owned());
    }
    assert_eq!(seqs, (0..301).collect::<BTreeSet<u64>>());
    assert_eq!(
        peers.into_iter().collect::<Vec<_>>(),
        ["127.0.0.2", "127.0.0.3"]
    );
}

#[test]
fn an_open_model_run_splits_its_timetable_and_keeps_the_rate() {
    let home = temp();
    let store = &shared_db(home.path());
    let flags = "--rate 600 -n 1200 -c 3";
    let (segments, seen) = counted_segments(home.path(), store, "open", 3, flags);
    for run in &segments {
        assert_eq!(metric(run, "requested_rate_per_sec"), 200.0);
        assert_eq!(metric(run, "responses"), 400.0);
    }
    assert_eq!(seqs(&seen), (0..1200).collect::<BTreeSet<u64>>());
    let merged = merge_json(home.path(), store, "open");
    assert_eq!(metric(&merged, "requested_rate_per_sec"), 600.0);
    let achieved = metric(&merged, "requests_per_sec");
    assert!(
        (achieved - 600.0).abs() <= 6.0,
        "the combined rate {achieved} is not within 1% of 600"
    );
}

/// A load plan split: every N-th due time of the plan's one timetable.
/// The server gets each request number once, and the merged run's stage
/// table adds the segments' stages up.
#[test]
fn a_rate_plan_splits_each_stage_by_stride_and_merges_its_stages() {
    let home = temp();
    let store = &shared_db(home.path());
    let flags = "--rate-plan 100@1s,0..200/1s,10@1s -c 2";
    let (segments, seen) = counted_segments(home.path(), store, "plan", 2, flags);
    let ended = |run: &Value| -> Vec<u64> {
        run["settings"]["rate_plan"]["stages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["ended"].as_u64().unwrap())
            .collect()
    };
    for run in &segments {
        assert_eq!(ended(run), [50, 50, 5]);
    }
    assert_eq!(seqs(&seen), (0..210).collect::<BTreeSet<u64>>());
    let merged = merge_json(home.path(), store, "plan");
    assert_eq!(ended(&merged), [100, 100, 10]);
    let stage = &merged["settings"]["rate_plan"]["stages"][1];
    assert_eq!(stage["achieved"], 100.0);
    assert!(stage["p99_ns"].as_u64().unwrap() > 0, "{stage}");
}

/// A segment killed mid-run saves nothing: the merged run names it and is
/// marked incomplete.
#[test]
fn a_killed_segment_leaves_an_incomplete_merged_run_that_names_it() {
    let home = temp();
    let store = &shared_db(home.path());
    let (url, _seen) = counting_server(Duration::from_millis(2));
    let mut children: Vec<_> = (0..3)
        .map(|i| {
            segment(
                home.path(),
                store,
                "k",
                i,
                3,
                &[&url, "-d", "3s", "-c", "3"],
            )
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    let mut killed = children.remove(1);
    killed.kill().unwrap();
    let _ = killed.wait();
    for c in children {
        let (code, _, err) = finished(c);
        assert_eq!(code, 0, "{err}");
    }
    let merged = merge_json(home.path(), store, "k");
    assert_eq!(merged["settings"]["group"]["incomplete"], true);
    assert_eq!(merged["settings"]["group"]["missing"], json!([1]));
    let why = warning(&merged, "segments_incomplete").unwrap();
    assert!(
        why.contains("segment 1/3 arrived from") && why.contains("saved no run"),
        "{why}"
    );
    // A launcher's follow-up waits for the segments, then merges what came.
    dyno(home.path())
        .args(["--store", store, "merge", "k", "--wait", "1s"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "2 segment runs saved; merging what there is",
        ));
    // The text report says it too.
    dyno(home.path())
        .args(["--store", store, "show", "k"])
        .assert()
        .success()
        .stdout(predicate::str::contains("incomplete"));
}

/// Two of three segments come: after the barrier timeout both give up,
/// say which one is missing, and save nothing; the group cannot be
/// started again by the late one.
#[test]
fn a_barrier_timeout_calls_the_run_off_for_every_segment() {
    let home = temp();
    let store = &shared_db(home.path());
    let (url, seen) = counting_server(Duration::ZERO);
    let line = format!("{url} -n 100 -c 3 --barrier-timeout 1s");
    let args = words(&line);
    let started = Instant::now();
    let children: Vec<_> = [0, 2]
        .into_iter()
        .map(|i| segment(home.path(), store, "late", i, 3, &args))
        .collect();
    for c in children {
        let (code, run, err) = finished(c);
        assert_eq!(code, 2, "{err}");
        assert!(run.is_none());
        assert!(
            err.contains("segment 1/3")
                && err.contains("did not arrive")
                && err.contains("nothing was run"),
            "{err}"
        );
        assert!(
            err.contains("same --store (this one meets in") && err.contains("shared.db"),
            "{err}"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "gave up in time"
    );
    assert_eq!(seen.lock().unwrap().by_peer.values().sum::<u64>(), 0);
    // The late segment finds the run called off, not a partial test.
    let (code, _, err) = finished(segment(home.path(), store, "late", 1, 3, &args));
    assert_eq!(code, 2);
    assert!(err.contains("did not arrive"), "{err}");
    assert_no_segment_saved(home.path(), store, "late");
    // The merge says the run was called off, and why, with or without
    // --wait: the segments will never save a run.
    for wait in [&[][..], &["--wait", "5s"][..]] {
        let err = merge_refused(home.path(), store, "late", wait);
        assert!(
            err.contains("group 'late' was called off")
                && err.contains("segment 1/3")
                && err.contains("did not arrive")
                && !err.contains("wait for them"),
            "{wait:?}: {err}"
        );
    }
}

/// `dyno merge GROUP EXTRA…` on `store`, which must exit 2: its stderr.
fn merge_refused(home: &Path, store: &str, group: &str, extra: &[&str]) -> String {
    let out = dyno(home)
        .args(["--store", store, "merge", group])
        .args(extra)
        .assert()
        .code(2);
    String::from_utf8_lossy(&out.get_output().stderr).into_owned()
}

/// The store's history of `group` holds no segment.
fn assert_no_segment_saved(home: &Path, store: &str, group: &str) {
    dyno(home)
        .args([
            "--store",
            store,
            "history",
            "--tag",
            &format!("group:{group}"),
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("segment").not());
}

/// Polls `dyno merge GROUP` (a bounded number of times) until it says
/// that `n` segments have arrived at the barrier.
fn wait_for_arrivals(home: &Path, store: &str, group: &str, n: usize) {
    let says = format!("{n} segment{} arrived", if n == 1 { "" } else { "s" });
    for _ in 0..600 {
        let out = dyno(home)
            .args(["--store", store, "merge", group])
            .output()
            .unwrap();
        if String::from_utf8_lossy(&out.stderr).contains(&says) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{says} never happened");
}

/// Segments running different commands (another URL, the open model
/// against the closed, another -d and -c) are not started: the one that
/// differs from the first arrival is refused naming each difference, the
/// group is called off, nothing is sent or saved, and the merge says so.
#[test]
fn segments_of_different_commands_are_refused_at_the_barrier() {
    let home = temp();
    let store = &shared_db(home.path());
    let (url, seen) = counting_server(Duration::ZERO);
    let other = url.replace("/x?", "/y?");
    let first = segment(
        home.path(),
        store,
        "mixed",
        0,
        2,
        &words(&format!("{url} -d 2s -c 2 -t 1")),
    );
    wait_for_arrivals(home.path(), store, "mixed", 1);
    let (code, run, err) = finished(segment(
        home.path(),
        store,
        "mixed",
        1,
        2,
        &words(&format!("{other} --rate 1000 -d 3s -c 4 -t 1")),
    ));
    assert_eq!(code, 2, "{err}");
    assert!(run.is_none());
    assert_contains_all(
        &err,
        &[
            "segment 1/2",
            "segment 0/2",
            &format!("url {other} against {url}"),
            "model open against closed",
            "rate_per_sec 1000 against (not set)",
            "duration 3s against 2s",
            "connections 4 against 2",
            "called off",
            "nothing was run",
        ],
    );
    // The first segment hears the same reason and does not start.
    let (code, run, err) = finished(first);
    assert_eq!(code, 2, "{err}");
    assert!(run.is_none());
    assert!(
        err.contains("model open against closed") && err.contains("nothing was run"),
        "{err}"
    );
    assert_eq!(seen.lock().unwrap().by_peer.values().sum::<u64>(), 0);
    let err = merge_refused(home.path(), store, "mixed", &[]);
    assert!(err.contains("called off") && err.contains("url"), "{err}");
    assert_no_segment_saved(home.path(), store, "mixed");
}

/// With --start-at a segment starts at that time, without waiting for the
/// others (a launcher that starts the machines itself).
#[test]
fn start_at_starts_at_the_given_time_without_the_others() {
    let home = temp();
    let store = &shared_db(home.path());
    let (url, seen) = counting_server(Duration::ZERO);
    let at = jiff::Timestamp::now() + jiff::SignedDuration::from_millis(1500);
    let (code, run, err) = finished(segment(
        home.path(),
        store,
        "timed",
        1,
        2,
        &[&url, "-n", "50", "-c", "2", "--start-at", &at.to_string()],
    ));
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!("segment 1/2 of group 'timed' starts at {at} (in ")),
        "{err}"
    );
    let run = run.unwrap();
    let s = &run["settings"]["segment"];
    assert_eq!(s["fingerprint"].as_str().unwrap().len(), 16);
    let agreed = i64::try_from(at.as_nanosecond()).unwrap();
    assert_eq!(s["start_at_ns"].as_i64().unwrap(), agreed);
    let started = s["started_at_ns"].as_i64().unwrap();
    assert!(
        started >= agreed && started < agreed + 1_000_000_000,
        "{started} against {agreed}"
    );
    // Its share: requests 1, 3, 5, … of 50.
    assert_eq!(metric(&run, "responses"), 25.0);
    let seqs: Vec<u64> = seen.lock().unwrap().seqs.clone();
    assert!(seqs.iter().all(|s| s % 2 == 1), "{seqs:?}");
}

#[test]
fn segment_flags_say_what_is_wrong() {
    let home = temp();
    let http = |flags: &'static str| [&["http", "http://127.0.0.1:9/"][..], &words(flags)].concat();
    assert_refused(
        home.path(),
        &[
            (&http("--segment 3/3 --group g"), &["counts from 0"]),
            (&http("--segment 0/3"), &["--group"]),
            (&http("--group g"), &["--segment"]),
            (
                &[&http("--segment 0/2 --group")[..], &["a b"]].concat(),
                &["letters, digits"],
            ),
            (
                &http("--segment 0/2 --group g --start-at tomorrow"),
                &["RFC 3339"],
            ),
        ],
    );
    let err = |args: &[&str]| {
        let out = dyno(home.path()).args(args).assert().failure();
        String::from_utf8_lossy(&out.get_output().stderr).into_owned()
    };
    let e = err(&words(
        "http http://127.0.0.1:9/ -c 2 --segment 0/3 --group g",
    ));
    assert!(
        e.contains("-c 2 cannot be shared out over 3 segments"),
        "{e}"
    );
    // Every segment needs a share of -n too.
    let e = err(&words(
        "http http://127.0.0.1:9/ -n 2 -c 3 --segment 2/3 --group g",
    ));
    assert!(
        e.contains("-n 2 cannot be shared out over 3 segments") && e.contains("-n 3 or more"),
        "{e}"
    );
    // --start-at: a time that passed, or one absurdly far ahead, is refused.
    for (at, says) in [
        (
            "2020-01-01T00:00:00Z",
            &["passed", "ago", "far enough ahead"][..],
        ),
        ("2099-01-01T00:00:00Z", &["years ahead", "within a day"][..]),
    ] {
        let e = err(&[
            "http",
            "http://127.0.0.1:9/",
            "--segment",
            "0/3",
            "--group",
            "g",
            "--start-at",
            at,
        ]);
        for needle in says {
            assert!(e.contains(needle), "{at}: {needle:?} missing in {e}");
        }
    }
    let e = err(&[
        "http",
        "http://127.0.0.1:9/",
        "--no-save",
        "--segment",
        "0/3",
        "--group",
        "g",
    ]);
    assert!(e.contains("drop --no-save"), "{e}");
    let e = err(&["http", "--segment", "0/3", "--group", "g"]);
    assert!(e.contains("needs the URL"), "{e}");
    let e = err(&["http", "http://127.0.0.1:9/", "-B", "192.0.2.1"]);
    assert!(
        e.contains("--source-addr 192.0.2.1") && e.contains("this machine's own addresses"),
        "{e}"
    );
    let e = err(&["merge", "nothing"]);
    assert!(e.contains("no run of group 'nothing'"), "{e}");
}

/// `dyno db run` split in three: each segment runs its share of the
/// clients, each client keeps -t, and `:client_id` numbers the whole run's
/// clients, so the segments write disjoint keys.
#[test]
fn db_run_segments_share_out_the_clients_with_disjoint_ids() {
    let pg = pg();
    let db = pg.database();
    let store = pg_store(&pg);
    let home = temp();
    let script = client_id_script(
        &pg,
        &db,
        "CREATE TABLE seen (client_id int, at timestamptz default now())",
        home.path(),
    );
    let line = format!("-c 7 -j 3 -t 10 -f {}", script.display());
    let runs = db_segments(&pg, &db, home.path(), &store, "dbg", 3, &words(&line));
    let clients: Vec<u64> = runs
        .iter()
        .map(|run| run["settings"]["clients"].as_u64().unwrap())
        .collect();
    assert_eq!(clients, [3, 2, 2]);
    assert_eq!(
        pg.psql(
            &db,
            "SELECT count(*), count(DISTINCT client_id), min(client_id), max(client_id) FROM seen"
        ),
        "70|7|0|6"
    );
    assert_eq!(
        pg.psql(&db, "SELECT string_agg(n::text, ',') FROM (SELECT count(*) AS n FROM seen GROUP BY client_id) c"),
        "10,10,10,10,10,10,10"
    );
    let merged = merge_json(home.path(), &store, "dbg");
    assert_eq!(merged["kind"], "db");
    assert_eq!(merged["settings"]["clients"], 7);
    let described = merged["description"].as_str().unwrap();
    assert!(
        described.ends_with("-c 7 -j 3 [group dbg: 3 of 3 segments]"),
        "{described}"
    );
    assert_eq!(histogram(&merged, "latency_ns").len(), 70);
    // Each segment drew its own seed: by design, not a difference to warn
    // of (M5).
    let codes = warning_codes(&merged);
    assert!(!codes.contains(&"settings_differ"), "{codes:?}");
    // No "0.0 tps with them": each segment connected on its own (M6).
    let out = dyno(home.path())
        .args(["--store", &store, "merge", "dbg"])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout);
    assert!(
        text.contains("without the connections' time (each segment connected on its own)"),
        "{text}"
    );
    assert!(!text.contains("0.0 with them"), "{text}");
}

/// `db run` segments of different commands (another -t, another script)
/// are refused at the barrier too, on the PostgreSQL store: nothing runs.
#[test]
fn db_run_segments_of_different_commands_are_refused() {
    let pg = pg();
    let db = pg.database();
    let store = pg_store(&pg);
    let home = temp();
    let script = client_id_script(&pg, &db, "CREATE TABLE seen (client_id int)", home.path());
    let segment = |i: u32, transactions: &str| {
        let line = format!("-c 2 -t {transactions} -f {}", script.display());
        let group = ("dbmixed", i, 2);
        db_segment(&pg, &db, home.path(), &store, group, &words(&line))
    };
    let first = segment(0, "10");
    wait_for_arrivals(home.path(), &store, "dbmixed", 1);
    let (code, run, err) = finished(segment(1, "20"));
    assert_eq!(code, 2, "{err}");
    assert!(run.is_none());
    assert!(
        err.contains("transactions 20 against 10") && err.contains("called off"),
        "{err}"
    );
    let (code, _, err) = finished(first);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("transactions 20 against 10"), "{err}");
    assert_eq!(pg.psql(&db, "SELECT count(*) FROM seen"), "0");
}

/// kubernetes-validate `flags` accepts `yaml`, written as `name` in `dir`;
/// `what` says what it refused if not.
fn assert_kubernetes_accepts(dir: &Path, name: &str, yaml: &str, flags: &[&str], what: &str) {
    let file = write_file(dir, name, yaml);
    let out = k8s_validate().args(flags).arg(&file).output().unwrap();
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// kubernetes-validate, as scripts/test installs it (DYNO_K8S_VALIDATE),
/// or from PATH. The test fails without it rather than pass unchecked.
fn k8s_validate() -> StdCommand {
    let tool = std::env::var("DYNO_K8S_VALIDATE").unwrap_or_else(|_| "kubernetes-validate".into());
    let probe = StdCommand::new(&tool).arg("--version").output();
    assert!(
        probe.is_ok_and(|o| o.status.success()),
        "validating the manifests needs kubernetes-validate: run scripts/test, or `pip install kubernetes-validate` and put it on PATH (or set DYNO_K8S_VALIDATE)"
    );
    StdCommand::new(tool)
}

/// `dyno k8s job` prints an Indexed Job (and the merge Job) that
/// Kubernetes' own schemas accept, strictly, for this release and an
/// older one; the same check refuses a manifest with a mistake in it.
#[test]
fn k8s_job_prints_manifests_that_kubernetes_schemas_accept() {
    let home = temp();
    let pods = "--segments 5 --image registry.example/dyno:0.1 --group Web_1 --namespace load";
    let out = dyno(home.path())
        .args(words(&format!(
            "k8s job {pods} --cpu 2 --memory 1Gi --merge -- \
             http http://web.default.svc/item?id={{seq}}&x=$(HOME) -n 1000000 -c 500"
        )))
        .assert()
        .success();
    let yaml = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert_contains_all(
        &yaml,
        &[
            "completionMode: \"Indexed\"",
            "completions: 5",
            "parallelism: 5",
            "name: \"dyno-web-1\"",
            "name: \"dyno-web-1-merge\"",
            "namespace: \"load\"",
            "\"$(DYNO_SEGMENT_INDEX)/5\"",
            "batch.kubernetes.io/job-completion-index",
            "topologyKey: \"kubernetes.io/hostname\"",
            "secretKeyRef:",
            "cpu: \"2\"",
            "\"http://web.default.svc/item?id={seq}&x=$$(HOME)\"",
            "- \"merge\"",
        ],
    );
    for version in ["1.37.0", "1.29.0"] {
        assert_kubernetes_accepts(
            home.path(),
            "job.yaml",
            &yaml,
            &["--strict", "-k", version],
            &format!("Kubernetes {version} refused the manifest"),
        );
    }
    // The check is a real one: a mistake is caught.
    let broken = home.path().join("broken.yaml");
    std::fs::write(
        &broken,
        yaml.replacen("  completions: 5", "  completions: \"five\"", 1),
    )
    .unwrap();
    let out = k8s_validate()
        .arg("--strict")
        .arg(&broken)
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // What Kubernetes would refuse (with an example of what it takes), and a
    // command a segment could not run, are refused before anything is
    // printed: `dyno k8s job OPTIONS -- COMMAND`.
    let job = |options: &[&'static str], command: &[&'static str]| {
        let mut args = vec!["k8s", "job"];
        args.extend_from_slice(options);
        args.push("--");
        args.extend_from_slice(command);
        args
    };
    let fine = ["--segments", "3", "--image", "x"];
    let url = ["http", "http://s/"];
    let with = |extra: &[&'static str]| [&fine[..], extra].concat();
    let cases: [(Vec<&str>, &[&str]); 13] = [
        (
            job(&with(&["--cpu", "two"]), &url),
            &["not a Kubernetes quantity", "500m"],
        ),
        (
            job(&with(&["--memory", "1GB"]), &url),
            &["not a Kubernetes quantity", "1Gi"],
        ),
        (
            job(&with(&["--namespace", "Load_Test"]), &url),
            &["not a Kubernetes name"],
        ),
        (
            job(&["--segments", "3", "--image", "a b"], &url),
            &["not an image reference"],
        ),
        (job(&["--segments", "0", "--image", "x"], &url), &["0"]),
        (
            job(&fine, &["http", "http://s/", "--segment", "0/3"]),
            &["Job's to set"],
        ),
        (
            job(&fine, &["http", "http://s/", "-c", "zero"]),
            &["not one dyno runs"],
        ),
        // What each segment would refuse, refused here (H9).
        (
            job(&fine, &["http", "http://x/", "-n", "10", "-c", "2"]),
            &["-c 2 cannot be shared out over 3 segments"],
        ),
        (
            job(
                &fine,
                &["http", "--url-file", "/nonexistent.txt", "-c", "4"],
            ),
            &["could not read the URL file '/nonexistent.txt'"],
        ),
        (
            job(&fine, &["db", "run", "-S", "-c", "4", "-T", "10"]),
            &["PG* variables", "--db-secret"],
        ),
        (
            job(
                &fine,
                &["db", "run", "postgres://u:secretpw@db/x", "-c", "4"],
            ),
            &["holds a password", "--db-secret"],
        ),
        (
            job(
                &fine,
                &[
                    "db",
                    "run",
                    "host=db",
                    "-c",
                    "4",
                    "-f",
                    "/nonexistent/s1.sql",
                ],
            ),
            &["could not read '/nonexistent/s1.sql'"],
        ),
        (
            job(
                &with(&["--db-secret", "Bad_Name"]),
                &["db", "run", "-c", "4"],
            ),
            &["not a Kubernetes name"],
        ),
    ];
    for (args, needles) in &cases {
        let out = dyno(home.path()).args(args).assert().code(2).stdout("");
        let stderr = String::from_utf8_lossy(&out.get_output().stderr);
        for needle in *needles {
            assert!(
                stderr.contains(needle),
                "{args:?}: no {needle:?} in {stderr}"
            );
        }
        assert!(!stderr.contains("secretpw"), "{stderr}");
    }
}

/// Local files the command names travel in a ConfigMap mounted in each
/// pod, and the command points at the copies; a `db run` database comes
/// from a Secret of libpq's variables. Kubernetes' schemas accept it all.
#[test]
fn k8s_job_carries_local_files_in_a_config_map_and_the_database_in_a_secret() {
    let home = temp();
    let urls = home.path().join("urls.txt");
    std::fs::write(
        &urls,
        "http://web.default.svc/a\nhttp://web.default.svc/b\n",
    )
    .unwrap();
    let body = home.path().join("body.bin");
    std::fs::write(&body, [0xff, 0xfe, 0]).unwrap();
    let script = home.path().join("s1.sql");
    std::fs::write(&script, "SELECT 1;\n").unwrap();
    let job = |extra: &[&str], command: &[&str]| {
        let out = dyno(home.path())
            .args(words("k8s job --segments 3 --image img --group f1"))
            .args(extra)
            .arg("--")
            .args(command)
            .assert()
            .success();
        String::from_utf8(out.get_output().stdout.clone()).unwrap()
    };
    let http = job(
        &[],
        &[
            "http",
            "--url-file",
            urls.to_str().unwrap(),
            "--body-file",
            body.to_str().unwrap(),
            "-m",
            "POST",
            "-c",
            "3",
        ],
    );
    let db = job(
        &["--db-secret", "dyno-db"],
        &[
            "db",
            "run",
            "-c",
            "3",
            "-T",
            "10",
            "-f",
            &format!("{}@2", script.display()),
        ],
    );
    assert_contains_all(
        &http,
        &[
            "kind: \"ConfigMap\"",
            "name: \"dyno-f1-files\"",
            "f0-urls.txt: \"http://web.default.svc/a\\nhttp://web.default.svc/b\\n\"",
            "f1-body.bin: \"//4A\"",
            "\"/etc/dyno/files/f0-urls.txt\"",
            "\"/etc/dyno/files/f1-body.bin\"",
            "mountPath: \"/etc/dyno/files\"",
        ],
    );
    assert!(!http.contains(urls.to_str().unwrap()), "{http}");
    assert_contains_all(
        &db,
        &[
            "\"/etc/dyno/files/f0-s1.sql@2\"",
            "f0-s1.sql: \"SELECT 1;\\n\"",
            "secretRef:",
            "name: \"dyno-db\"",
        ],
    );
    for (name, yaml) in [("http.yaml", &http), ("db.yaml", &db)] {
        let flags = ["--strict", "-k", "1.37.0"];
        assert_kubernetes_accepts(home.path(), name, yaml, &flags, name);
    }
}

/// A loopback HTTP/1.1 server of known capacity: one request at a time,
/// across every connection, each held for `service` (a D/D/1 queue: about
/// 1/`service` requests a second); counts requests per client address.
pub(crate) fn one_at_a_time_server(service: Duration) -> (String, Arc<Mutex<Seen>>) {
    let desk = Mutex::new(());
    let (addr, seen) = ok_server(move |_, peer, seen| {
        {
            let _one = desk.lock().unwrap();
            std::thread::sleep(service);
        }
        *seen.lock().unwrap().by_peer.entry(peer).or_default() += 1;
    });
    (format!("http://{addr}/"), seen)
}

/// A capacity search split over two segments: each step's rate is shared
/// out, both judge every step on both parts merged, so both take the same
/// steps and give the same answer, near the server's capacity (4 ms per
/// request, one at a time: at most 250/s); the merged run is the search's,
/// with its capacity counted once.
#[test]
fn a_capacity_search_splits_each_step_over_the_segments() {
    let home = temp();
    let store = &shared_db(home.path());
    let (url, seen) = one_at_a_time_server(Duration::from_millis(4));
    let search = "--find-max --slo p99<=100ms --start 60 --step 1s --warmup 300ms";
    let line = format!("{url} -c 8 {search} --precision 10 --budget 14s");
    let segments = run_segments(home.path(), store, "search", 2, &words(&line));
    let answer = |run: &Value| run["settings"]["capacity"]["answer"].clone();
    assert_eq!(steps_taken(&segments[0]), steps_taken(&segments[1]));
    assert_eq!(answer(&segments[0]), answer(&segments[1]));
    let taken = steps_taken(&segments[0]);
    assert!(taken.len() >= 3, "{taken:?}");
    assert_eq!(taken[0], (60.0, true), "{taken:?}");
    let max = answer(&segments[0])["max_rate"].as_f64().unwrap();
    assert!((150.0..=260.0).contains(&max), "{max}: {taken:?}");
    // Each segment ran its half of each step, from its own address, on its
    // half of the connections; a step's figures are the whole step's.
    let by_peer = seen.lock().unwrap().by_peer.clone();
    assert_eq!(by_peer.len(), 2, "{by_peer:?}");
    let counts: Vec<u64> = by_peer.values().copied().collect();
    let (lo, hi) = (counts[0].min(counts[1]), counts[0].max(counts[1]));
    assert!(lo as f64 >= hi as f64 * 0.8, "{by_peer:?}");
    for run in &segments {
        assert_eq!(run["settings"]["connections"], 4);
        assert_eq!(run["settings"]["segment"]["group"], "search");
        let first = &run["settings"]["capacity"]["steps"][0];
        let achieved = first["achieved"].as_f64().unwrap();
        assert!((50.0..=66.0).contains(&achieved), "{first}");
    }
    let merged = merge_json(home.path(), store, "search");
    assert_eq!(merged["settings"]["connections"], 8);
    assert_eq!(answer(&merged), answer(&segments[0]));
    assert_eq!(capacity_metric(&merged), max);
    assert!(
        merged["warnings"]
            .as_array()
            .is_none_or(|w| w.iter().all(|w| w["code"] != "segments_incomplete"))
    );
    // The figures are the answer's step, both halves merged.
    let rate = metric(&merged, "requests_per_sec");
    assert!(
        rate >= max * 0.8 && rate <= max * 1.1,
        "{rate} against {max}"
    );
}

/// A split search whose other segment never comes is called off at the
/// first barrier: nothing is run or saved, and the message says who is
/// missing.
#[test]
fn a_split_search_without_its_other_segment_runs_nothing() {
    let home = temp();
    let store = &shared_db(home.path());
    let (url, seen) = counting_server(Duration::ZERO);
    let search = "--find-max --slo p99<=100ms --start 50";
    let line = format!("{url} -c 2 {search} --barrier-timeout 1s");
    let (code, run, err) = finished(segment(home.path(), store, "alone", 0, 2, &words(&line)));
    assert_ne!(code, 0, "{err}");
    assert!(run.is_none());
    assert!(
        err.contains("segment 1/2")
            && err.contains("did not arrive")
            && err.contains("nothing was saved"),
        "{err}"
    );
    assert_eq!(seen.lock().unwrap().by_peer.values().sum::<u64>(), 0);
}

/// A `db run` capacity search split over two segments, meeting in the
/// PostgreSQL store, against a script serialised by an advisory lock with
/// a 2 ms sleep (a ceiling under 500 transactions a second): each segment
/// runs its share of each step's rate, both take the same steps to the
/// same answer, under the ceiling, and the merged run counts it once.
#[test]
fn a_db_capacity_search_splits_each_step_over_the_segments() {
    let pg = pg();
    let db = pg.database();
    let store = pg_store(&pg);
    let home = temp();
    let script = write_file(
        home.path(),
        "serial.sql",
        "BEGIN;\nSELECT pg_advisory_xact_lock(42);\nSELECT pg_sleep(0.002);\nEND;\n",
    );
    let search = "--find-max --slo p99<=200ms --start 100 --step 1s --warmup 200ms";
    let line = format!(
        "-n -c 8 -j 2 -f {} {search} --precision 20 --budget 10s",
        script.display()
    );
    let runs = db_segments(&pg, &db, home.path(), &store, "dbsearch", 2, &words(&line));
    let cap = |run: &Value| run["settings"]["capacity"].clone();
    assert_eq!(
        cap(&runs[0])["steps"].as_array().unwrap().len(),
        cap(&runs[1])["steps"].as_array().unwrap().len()
    );
    assert_eq!(cap(&runs[0])["answer"], cap(&runs[1])["answer"]);
    let steps = cap(&runs[0])["steps"].as_array().unwrap().clone();
    assert_eq!(steps[0]["requested"], 100.0, "{steps:?}");
    for s in &steps {
        if s["requested"].as_f64().unwrap() > 500.0 {
            assert_eq!(s["passed"], false, "{s}");
        }
    }
    let max = cap(&runs[0])["answer"]["max_rate"].as_f64().unwrap();
    assert!(max < 500.0, "{steps:?}");
    for run in &runs {
        assert_eq!(run["settings"]["clients"], 4);
        // The whole step's figures: both halves of 100/s.
        let first = &run["settings"]["capacity"]["steps"][0];
        let achieved = first["achieved"].as_f64().unwrap();
        assert!((70.0..=130.0).contains(&achieved), "{first}");
    }
    let merged = merge_json(home.path(), &store, "dbsearch");
    assert_eq!(merged["settings"]["clients"], 8);
    assert_eq!(capacity_metric(&merged), max);
}

/// What a split search cannot go with is refused before any load.
#[test]
fn split_search_flags_say_what_is_wrong() {
    let home = temp();
    let at = (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(600)).to_string();
    let search = [
        "--find-max",
        "--slo",
        "p99<=10ms",
        "--segment",
        "0/3",
        "--group",
        "g",
    ];
    let mut start_at = vec!["http", "http://127.0.0.1:9/", "-c", "3"];
    start_at.extend(search);
    start_at.extend(["--start-at", at.as_str()]);
    let mut sweep = vec!["http", "http://127.0.0.1:9/", "-c", "2..8"];
    sweep.extend(search);
    let mut db_sweep = vec!["db", "run", "-c", "1..8"];
    db_sweep.extend(search);
    assert_refused(
        home.path(),
        &[
            (start_at.as_slice(), &["drop --start-at"]),
            (
                &sweep,
                &["-c 2..8 cannot be shared out over 3 segments", "-c 3..8"],
            ),
            (
                &db_sweep,
                &["-c 1..8 cannot be shared out over 3 segments", "clients"],
            ),
        ],
    );
}

/// A `db run --rate-plan` split over two segments of unequal shares (3
/// clients: 2 and 1): each runs its share of every stage, their stages
/// are the whole plan's, and the merged run's stages add up to every due
/// time of the plan, each stage near its expected count.
#[test]
fn a_db_rate_plan_splits_over_segments_and_merges_its_stages() {
    let pg = pg();
    let db = pg.database();
    let store = pg_store(&pg);
    let home = temp();
    let script = write_file(home.path(), "one.sql", "SELECT 1;\n");
    let line = format!(
        "-n -c 3 -f {} --rate-plan 150@1s,0..300/1s",
        script.display()
    );
    let runs = db_segments(&pg, &db, home.path(), &store, "dbplan", 2, &words(&line));
    let done = |run: &Value| -> u64 {
        run["settings"]["rate_plan"]["stages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                ["ended", "dropped", "unfinished"]
                    .iter()
                    .map(|k| s[*k].as_u64().unwrap())
                    .sum::<u64>()
            })
            .sum()
    };
    // 300 due times: 200 for the segment of 2 clients, 100 for the other.
    assert_eq!(done(&runs[0]), 200);
    assert_eq!(done(&runs[1]), 100);
    for run in &runs {
        assert_eq!(run["settings"]["rate_plan"]["plan"], "150@1s,0..300/1s");
    }
    let merged = merge_json(home.path(), &store, "dbplan");
    let stages = merged["settings"]["rate_plan"]["stages"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(stages.len(), 2, "{stages:?}");
    assert_eq!(done(&merged), 300);
    // Binomial shares of 300: 150 each expected, ±5 sd.
    for s in &stages {
        let n = s["ended"].as_u64().unwrap();
        assert!((107..=193).contains(&n), "{stages:?}");
        assert_eq!(s["requested"], 150.0, "{s}");
    }
}

/// A scenario split over segments: each makes its share of the flows with
/// users numbered in the whole run, and the merged run's per-step and
/// per-flow figures add up to the whole run's.
#[test]
fn a_scenario_splits_its_flows_and_merges_its_steps() {
    let home = temp();
    let store = &shared_db(home.path());
    let board = super::scenario::Board::start();
    let example = super::scenario::example();
    let segments = run_segments(
        home.path(),
        store,
        "flows",
        2,
        &["--scenario", &example, &board.url, "-n", "300", "-c", "4"],
    );
    let flows = |run: &Value, name: &str| -> f64 {
        metrics(run)
            .filter(|m| m["name"] == name)
            .map(|m| m["value"].as_f64().unwrap())
            .sum()
    };
    for run in &segments {
        assert_eq!(flows(run, "flows_completed"), 150.0);
    }
    let merged = merge_json(home.path(), store, "flows");
    assert_eq!(flows(&merged, "flows_completed"), 300.0, "{merged:#}");
    assert_eq!(flows(&merged, "flows_failed"), 0.0);
    let step = |name: &str, s: &str| -> f64 {
        metrics(&merged)
            .find(|m| m["name"] == name && m["labels"]["step"] == s)
            .unwrap_or_else(|| panic!("no {name}{{step={s}}}"))["value"]
            .as_f64()
            .unwrap()
    };
    // Every post of either segment was edited.
    assert_eq!(
        step("step_responses", "post"),
        step("step_responses", "edit")
    );
    assert!(step("step_requests_per_sec", "messages") > 0.0);
}

/// `dyno k8s job -- http --scenario FILE` checks the scenario and its data
/// as the segments would, and ships both in the ConfigMap: the scenario
/// under its key, the data at the path the scenario names it by (H8). A
/// scenario whose `base` is in the file needs no URL; a missing file, an
/// unset variable, too few data rows for the users and a search that
/// cannot be shared out are refused before anything is printed.
#[test]
fn k8s_job_checks_and_ships_a_scenario_and_its_data() {
    let home = temp();
    let dir = home.path().join("sc");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let scenario = |name: &str, data: &str, var: &str| {
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!(
                "base = \"http://web.svc:8080\"\ndata = \"{data}\"\n[[flow]]\nname = \"login\"\n[[flow.step]]\nurl = \"/login?u=${{{var}}}\"\n"
            ),
        )
        .unwrap();
        path.display().to_string()
    };
    let rows = |n: usize| {
        std::iter::once("user".to_owned())
            .chain((1..=n).map(|i| format!("u{i}")))
            .collect::<Vec<_>>()
            .join("\n")
    };
    std::fs::write(dir.join("data/users.csv"), rows(40)).unwrap();
    std::fs::write(dir.join("few.csv"), rows(10)).unwrap();
    let login = scenario("login.toml", "data/users.csv", "user");
    let job = |file: &str, extra: &[&str]| {
        let mut args = vec![
            "k8s",
            "job",
            "--segments",
            "3",
            "--image",
            "img:1",
            "--group",
            "sc1",
            "--",
            "http",
            "--scenario",
            file,
        ];
        args.extend_from_slice(extra);
        dyno(home.path()).args(args).output().unwrap()
    };
    let out = job(&login, &["-c", "30", "-d", "10s"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let yaml = String::from_utf8(out.stdout).unwrap();
    assert_contains_all(
        &yaml,
        &[
            "- \"/etc/dyno/files/f0-login.toml\"",
            "f0-login.toml: \"base = ",
            "f1-data: \"user\\nu1\\n",
            "key: \"f0-login.toml\"",
            "path: \"f0-login.toml\"",
            "key: \"f1-data\"",
            "path: \"data/users.csv\"",
        ],
    );
    let refused = "Kubernetes refused the manifest";
    assert_kubernetes_accepts(home.path(), "job.yaml", &yaml, &["--strict"], refused);

    let undefined = scenario("undef.toml", "data/users.csv", "nope");
    let few = scenario("few.toml", "few.csv", "user");
    let outside = scenario("outside.toml", "../elsewhere.csv", "user");
    std::fs::write(home.path().join("elsewhere.csv"), rows(40)).unwrap();
    for (file, extra, says) in [
        (
            "/nonexistent.toml",
            &["-c", "30"][..],
            "could not read the scenario file",
        ),
        (undefined.as_str(), &["-c", "30"], "`${nope}` is not set"),
        (
            few.as_str(),
            &["-c", "30"],
            "has 10 data rows, and this segment's last virtual user is number 30 of the whole run",
        ),
        (
            outside.as_str(),
            &["-c", "30"],
            "is not below the scenario's folder",
        ),
        (
            login.as_str(),
            &["-c", "1..30", "--find-max", "--slo", "p99<=1s"],
            "cannot be shared out over 3 segments",
        ),
    ] {
        let out = job(file, extra);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        assert!(err.contains(says), "{file}: {err}");
        assert!(out.stdout.is_empty(), "{file}: printed a manifest");
    }
}

/// A combined-format log of two whole seconds (120 and 80 GETs) over 60
/// path templates, more than a run keeps apart, half of them logged 404;
/// with three bad lines and five POSTs among them.
fn sixty_template_log() -> String {
    let mut log = String::new();
    let mut line = |second: u32, method: &str, path: &str, status: u16| {
        log.push_str(&format!(
            "10.0.0.1 - - [30/Nov/2026:10:00:{second:02} +0000] \"{method} {path} HTTP/1.1\" {status} 3 \"-\" \"-\"\n"
        ));
    };
    for (second, n) in [(0, 120), (1, 80)] {
        for i in 0..n {
            let e = i % 60;
            line(
                second,
                "GET",
                &format!("/e{e}/x"),
                if e % 2 == 0 { 200 } else { 404 },
            );
            if i % 50 == 7 {
                line(second, "POST", "/form", 201);
            }
        }
    }
    let mut lines: Vec<&str> = log.lines().collect();
    for (at, bad) in [(3, "not a log line"), (70, "\"GET"), (150, "- - -")] {
        lines.insert(at, bad);
    }
    lines.join("\n") + "\n"
}

/// The labelled `name` of a run, by its `label`'s value.
fn by_label(run: &Value, name: &str, label: &str) -> BTreeMap<String, f64> {
    run["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"] == name)
        .filter_map(|m| {
            Some((
                m["labels"][label].as_str()?.to_owned(),
                m["value"].as_f64()?,
            ))
        })
        .collect()
}

/// A log replayed by two segments (a Poisson spread of the same seed as
/// the single run's: the group's, not each segment's) makes exactly the
/// run one machine makes: the same timetable, split; the target's
/// access log holds the same requests, and the merged record counts what
/// the single run counts: requests, bad lines (each once, the first few
/// quoted), methods left out, the log's statuses and seconds, the 60
/// templates (50 kept apart and `other`, the same ones), each template's
/// answers, and the log's busiest second.
#[test]
fn a_replayed_log_split_over_segments_merges_into_the_single_run() {
    let home = temp();
    let store = &shared_db(home.path());
    let log = write_file(home.path(), "access.log", &sixty_template_log());
    let args = |nginx: &Nginx| {
        format!(
            "http://127.0.0.1:{} --replay {} --spread poisson --seed 11 --expect-status any -c 2",
            nginx.port,
            log.display()
        )
    };
    let alone = Nginx::http1("", r#""$request""#);
    let single = http_json(home.path(), &words(&args(&alone)));
    let split = Nginx::http1("", r#""$request""#);
    let segments = run_segments(home.path(), store, "replay", 2, &words(&args(&split)));
    let requests = |run: &Value| run["settings"]["replay"]["requests"].as_u64().unwrap();
    assert_eq!(requests(&single), 200);
    assert_eq!(
        segments.iter().map(requests).collect::<Vec<_>>(),
        [100, 100]
    );
    let sorted = |text: String| {
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        lines.sort();
        lines
    };
    assert_eq!(sorted(split.access_log()), sorted(alone.access_log()));

    let merged = merge_json(home.path(), store, "replay");
    let whole = &single["settings"]["replay"];
    let record = &merged["settings"]["replay"];
    for field in [
        "lines",
        "requests",
        "bad_lines",
        "bad_quoted",
        "skipped_methods",
        "outside_window",
        "other_segments",
        "without_body",
        "log_statuses",
        "log_per_second",
        "endpoints",
        "passes",
    ] {
        assert_eq!(record[field], whole[field], "{field}");
    }
    assert_eq!(whole["bad_lines"], 3);
    assert_eq!(whole["skipped_methods"]["POST"], 5);
    // Near 120 and 80: the first request drawn is the clock's zero.
    let seconds: Vec<u64> = serde_json::from_value(whole["log_per_second"].clone()).unwrap();
    assert_eq!(seconds.iter().sum::<u64>(), 200, "{seconds:?}");
    let endpoints = whole["endpoints"].as_array().unwrap();
    assert_eq!(endpoints.len(), 51);
    assert_eq!(endpoints[50], "other");
    for name in [
        "replay_requests",
        "replay_bad_lines",
        "replay_log_peak_requests_per_sec",
        "log_status_200",
        "log_status_404",
        "responses",
    ] {
        assert_eq!(metric(&merged, name), metric(&single, name), "{name}");
    }
    assert_eq!(
        metric(&merged, "replay_log_peak_requests_per_sec"),
        seconds.iter().copied().max().unwrap() as f64
    );
    let answers = by_label(&single, "endpoint_responses", "endpoint");
    assert_eq!(answers.len(), 51);
    assert_eq!(answers["other"], 30.0, "e50 to e59, three times each");
    assert_eq!(by_label(&merged, "endpoint_responses", "endpoint"), answers);
}
