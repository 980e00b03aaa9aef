//! `dyno report`: pages of real runs, the file rules (no overwrite without
//! --force, nothing written on failure), and the page opened in a real
//! headless browser with the network cut off.

use crate::common::*;

/// The `<figure>` heads of `html` whose data-chart is `id`.
fn charts<'a>(html: &'a str, id: &str) -> Vec<&'a str> {
    let needle = format!("data-chart=\"{id}\"");
    html.match_indices("<figure")
        .map(|(at, _)| &html[at..at + html[at..].find('>').unwrap()])
        .filter(|head| head.contains(&needle))
        .collect()
}

fn attr<'a>(head: &'a str, name: &str) -> &'a str {
    let key = format!("{name}=\"");
    let at = head.find(&key).unwrap() + key.len();
    &head[at..at + head[at..].find('"').unwrap()]
}

/// A comparison record as `dyno compare` saves it, built by hand around
/// the envelope of `like` (a real run, for its environment).
fn compare_fixture(like: &Value) -> Value {
    let mut run = like.clone();
    let id = like["id"].as_str().unwrap();
    // Another id with the same prefix: its last character changed.
    let last = if id.ends_with('Z') { 'Y' } else { 'Z' };
    run["id"] = Value::String(format!("{}{last}", &id[..25]));
    run["kind"] = "compare".into();
    run["description"] = "xeon vs opteron".into();
    run["headline"] = "geomean".into();
    run["warnings"] = serde_json::json!([]);
    run["settings"] = serde_json::json!({
        "baseline": "xeon",
        "groups": [
            {"name": "xeon", "selector": "@tag:xeon", "runs": [id]},
            {"name": "opteron", "selector": "@tag:opteron", "runs": [id]}
        ],
        "noise": 0.02, "alpha": 0.05,
        "setting_differences": [{"key": "http.connections", "values": {"xeon": "16", "opteron": "64"}}],
        "environment_differences": [{"key": "cpu.model", "values": {"xeon": "Xeon", "opteron": "Opteron"}}],
        "unmatched": []
    });
    let ci = |low: f64, high: f64| serde_json::json!({"method": "bootstrap", "confidence": 0.95, "low": low, "high": high, "n": 5});
    let mut metrics = Vec::new();
    for (metric, unit, dir, base, cand, verdict, lo, hi) in [
        (
            "requests_per_sec",
            "requests_per_sec",
            "higher_is_better",
            1e5,
            8e4,
            "slower",
            0.78,
            0.82,
        ),
        (
            "latency_ns{percentile=99}",
            "ns",
            "lower_is_better",
            2e5,
            1.5e5,
            "faster",
            0.7,
            0.8,
        ),
    ] {
        for (group, v) in [("xeon", base), ("opteron", cand)] {
            metrics.push(serde_json::json!({"name": "value", "labels": {"metric": metric, "kind": "http", "group": group}, "unit": unit, "direction": dir, "value": v}));
        }
        metrics.push(serde_json::json!({"name": "ratio", "labels": {"metric": metric, "kind": "http", "group": "opteron", "verdict": verdict}, "unit": "ratio", "direction": dir, "value": cand / base, "uncertainty": ci(lo, hi)}));
        metrics.push(serde_json::json!({"name": "p_value", "labels": {"metric": metric, "kind": "http", "group": "opteron"}, "unit": "ratio", "direction": "lower_is_better", "value": 0.008}));
    }
    metrics.push(serde_json::json!({"name": "geomean", "labels": {"group": "opteron"}, "unit": "ratio", "direction": "higher_is_better", "value": 1.03, "uncertainty": ci(0.95, 1.1)}));
    run["metrics"] = Value::Array(metrics);
    run
}

/// Saved runs of every kind the page draws; returns their ids.
fn saved_runs(home: &Path, dir: &Path) -> Vec<String> {
    let id = |v: &Value| v["id"].as_str().unwrap().to_owned();
    let (http, _) = json_run(home, &["http", "-d", "300ms", "-c", "2", "-t", "1"], 0);
    let (disk, _) = json_run(
        home,
        &[
            "disk",
            dir.to_str().unwrap(),
            "--size",
            "8m",
            "--runs",
            "1",
            "-d",
            "60ms",
            "--interval",
            "0",
            "--warmup",
            "10ms",
            "--test",
            "seq:1m:q2",
            "--test",
            "rnd:4k:q1",
        ],
        0,
    );
    let (sweep, _) = json_run(
        home,
        &["run", "--runs", "3", "-P", "N", "1", "3", "sleep 0.00{N}"],
        0,
    );
    let (scale, _) = json_run(home, &["scale", &id(&sweep)], 0);
    let fixture = compare_fixture(&http);
    let file = dir.join("compare.json");
    std::fs::write(&file, fixture.to_string()).unwrap();
    ok(home, &["import", file.to_str().unwrap()]);
    let replay = replay_run(home, dir);
    vec![
        id(&http),
        id(&disk),
        id(&sweep),
        id(&scale),
        id(&fixture),
        id(&replay),
    ]
}

/// A replay of a log of 8 s with a burst and a gap at 4× against nginx
/// (2 s): its rate chart draws the log's rate against the replayed one.
fn replay_run(home: &Path, dir: &Path) -> Value {
    let mut log = String::new();
    for (second, n) in [5, 20, 40, 10, 0, 30, 30, 5].into_iter().enumerate() {
        for i in 0..n {
            log.push_str(&format!(
                "10.0.0.1 - - [30/Nov/2026:10:00:{second:02} +0000] \"GET /p{} HTTP/1.1\" 200 3 \"-\" \"-\"\n",
                i % 3
            ));
        }
    }
    let path = write_file(dir, "access.log", &log);
    let nginx = Nginx::http1("", "");
    // The log's pages, so that the target answers as the log says.
    for page in ["p0", "p1", "p2"] {
        write_file(&nginx.dir.path().join("www"), page, "a page\n");
    }
    let (run, _) = json_run(
        home,
        &[
            "http",
            &format!("http://127.0.0.1:{}", nginx.port),
            "--replay",
            path.to_str().unwrap(),
            "--speed",
            "4",
            "-c",
            "2",
            "-t",
            "1",
            "--expect-status",
            "any",
        ],
        0,
    );
    run
}

/// Every chart the six runs give, with the series of each of its figures,
/// sorted (the closed-model http run's and the open-model replay's).
const EXPECTED: [(&str, &[&str]); 10] = [
    ("http-latency-spectrum", &["1", "2"]),
    ("http-answers", &["1", "1"]),
    // The replay's: the log's rate and the replayed one.
    ("http-timeline-rate", &["1", "2"]),
    ("http-timeline-p99", &["1", "1"]),
    ("disk-panel", &["2"]),
    ("disk-latency-read", &["2"]),
    ("exec-distribution", &["3"]),
    ("exec-sweep", &["1"]),
    ("scale-speedup", &["4"]),
    ("compare-factors", &["1"]),
];

/// The series of each figure of `html` whose data-chart is `id`, sorted.
fn series_of<'a>(html: &'a str, id: &str) -> Vec<&'a str> {
    let mut series: Vec<&str> = charts(html, id)
        .into_iter()
        .map(|head| attr(head, "data-series"))
        .collect();
    series.sort_unstable();
    series
}

#[test]
fn report_of_real_runs_draws_every_chart_and_opens_offline_in_chromium() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ids = saved_runs(home.path(), dir.path());
    let out = dir.path().join("report.html");
    let mut args = vec!["report"];
    // Full ids, and one unique prefix as `dyno show` takes them (the
    // fixture shares the http run's first 25 characters).
    args.extend(
        ids.iter()
            .enumerate()
            .map(|(k, i)| if k == 1 { &i[..12] } else { i.as_str() }),
    );
    args.extend(["-o", out.to_str().unwrap()]);
    dyno(home.path())
        .args(&args)
        .assert()
        .success()
        .stderr(predicate::str::contains("wrote"));
    let html = std::fs::read_to_string(&out).unwrap();
    for (id, series) in EXPECTED {
        assert_eq!(series_of(&html, id), series, "charts {id} and their series");
    }
    assert!(
        html.contains("the log at 4×: requests due"),
        "the replay's rate chart draws the log's"
    );
    // The sweep of N = 1..3 and its three runs each.
    assert_eq!(attr(charts(&html, "exec-sweep")[0], "data-points"), "3");
    assert_eq!(
        attr(charts(&html, "exec-distribution")[0], "data-points"),
        "9"
    );
    assert!(html.contains("Content-Security-Policy"));
    // No temporary file is left beside the page.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");

    chromium_renders(&out, dir.path());
}

/// Opens the page in headless Chromium with no network: no console message
/// or CSP report from the page, every chart in the DOM, a screenshot.
fn chromium_renders(page: &Path, dir: &Path) {
    let chromium = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|c| {
            StdCommand::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("this test needs Chromium (Debian's `chromium`; scripts/test installs it)");
    let unshare = StdCommand::new("unshare").args(["-n", "true"]).status();
    assert!(
        unshare.is_ok_and(|s| s.success()),
        "this test runs Chromium without a network through `unshare -n`, which is not permitted here (it needs root or user namespaces; CI runs as root)"
    );
    let url = format!("file://{}", page.display());
    let browse = |extra: &[&str]| {
        let profile = tempfile::tempdir().unwrap();
        let out = StdCommand::new("unshare")
            .args([
                "-n",
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
            ])
            .args(["--enable-logging=stderr", "--v=0"])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(extra)
            .arg(&url)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "chromium failed: {out:?}");
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (dom, log) = browse(&["--dump-dom"]);
    // Chromium logs its own noise (dbus, GPU); only the page's console
    // messages and policy violations count.
    let from_page: Vec<&str> = log
        .lines()
        .filter(|l| {
            l.contains("CONSOLE")
                || l.contains("Content Security Policy")
                || l.contains("Refused to")
                || l.contains(page.file_name().unwrap().to_str().unwrap())
        })
        .collect();
    assert!(from_page.is_empty(), "the page logged: {from_page:#?}");
    for (id, series) in EXPECTED {
        assert_eq!(
            series_of(&dom, id),
            series,
            "charts {id} in the rendered DOM"
        );
    }
    assert!(dom.matches("<svg").count() >= 7, "inline SVG parsed");

    let png = dir.join("report.png");
    browse(&[
        &format!("--screenshot={}", png.display()),
        "--window-size=1280,2400",
        "--hide-scrollbars",
    ]);
    let bytes = std::fs::read(&png).expect("a screenshot");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert!(
        bytes.len() > 30_000,
        "a screenshot of charts is more than {} bytes",
        bytes.len()
    );
}

#[test]
fn report_refuses_to_overwrite_without_force_and_names_bad_paths() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (run, _) = json_run(home.path(), &SMALL_QUICK, 0);
    let id = run["id"].as_str().unwrap();
    let out = dir.path().join("r.html");
    std::fs::write(&out, "old page").unwrap();
    let err = fails(home.path(), &["report", id, "-o", out.to_str().unwrap()]);
    assert!(
        err.contains("already exists") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old page");

    ok(
        home.path(),
        &["report", id, "-o", out.to_str().unwrap(), "--force"],
    );
    let page = std::fs::read_to_string(&out).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains(id));

    let missing = dir.path().join("no/such/dir/r.html");
    let err = fails(
        home.path(),
        &["report", id, "-o", missing.to_str().unwrap()],
    );
    assert!(err.contains("does not exist"), "{err}");
    let err = fails(
        home.path(),
        &["report", id, "-o", dir.path().to_str().unwrap()],
    );
    assert!(err.contains("is a directory"), "{err}");

    let err = fails(home.path(), &["report", "01ZZZZZZ", "-o", "x.html"]);
    assert!(err.contains("01ZZZZZZ"), "{err}");
    let entries = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(entries, 1, "nothing but the one page was written");
}

#[test]
fn report_writes_to_stdout_and_draws_a_trend_of_filtered_runs() {
    let home = tempfile::tempdir().unwrap();
    for _ in 0..3 {
        let mut args = SMALL_QUICK.to_vec();
        args.extend(["--tag", "nightly"]);
        json_run(home.path(), &args, 0);
    }
    let page = ok(
        home.path(),
        &[
            "report",
            "--trend",
            "int64_1t_ns",
            "--tag",
            "nightly",
            "-o",
            "-",
        ],
    );
    let trend = charts(&page, "trend");
    assert_eq!(trend.len(), 1);
    assert_eq!(attr(trend[0], "data-points"), "3");
    let err = fails(
        home.path(),
        &["report", "--trend", "nope", "--tag", "nightly", "-o", "-"],
    );
    assert!(
        err.contains("none of the 3 selected runs has a metric 'nope'"),
        "{err}"
    );
    let err = fails(home.path(), &["report", "--tag", "nothing", "-o", "-"]);
    assert!(err.contains("no saved run matches"), "{err}");
}

#[test]
fn report_is_listed_and_its_help_has_examples() {
    let home = tempfile::tempdir().unwrap();
    let help = ok(home.path(), &["--help"]);
    assert!(help.contains("  report"), "{help}");
    let help = ok(home.path(), &["report", "--help"]);
    assert_contains_all(
        &help,
        &[
            "--trend",
            "--force",
            "-o, --output",
            "Examples:",
            "dyno report --trend",
        ],
    );
    // -o is required: a usage error, exit 2.
    let err = fails(home.path(), &["report", "a", "b"]);
    assert!(err.contains("--output"), "{err}");
}

#[test]
fn report_compare_draws_the_comparison_above_the_runs_it_compared() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    ok(h, &SMALL_QUICK);
    ok(h, &[&SMALL_QUICK[..], &["--tag", "after"]].concat());
    let out = h.join("ab.html");
    let out_arg = out.to_str().unwrap();
    dyno(h)
        .args(["report", "--compare", "--last", "2", "-o", out_arg])
        .assert()
        .success()
        .stderr(predicate::str::contains("2 runs"));
    let html = std::fs::read_to_string(&out).unwrap();
    let factors = charts(&html, "compare-factors");
    assert_eq!(factors.len(), 1, "one candidate side, one chart");
    let compare_at = html.find("data-kind=\"compare\"").unwrap();
    let quick_at = html.find("data-kind=\"quick\"").unwrap();
    assert!(compare_at < quick_at, "the comparison comes first");
    assert_eq!(html.matches("data-kind=\"quick\"").count(), 2);
    // Nothing is saved by a report.
    let history = ok(h, &["history", "--kind", "compare"]);
    assert!(history.trim().is_empty(), "{history}");
    // One side is not a comparison; the file is not written.
    let lone = h.join("lone.html");
    let stderr = fails(
        h,
        &[
            "report",
            "--compare",
            "--last",
            "1",
            "-o",
            lone.to_str().unwrap(),
        ],
    );
    assert!(stderr.contains("at least two sides"), "{stderr}");
    assert!(!lone.exists());
}

/// M8: a db run, saved and read back through the store, is drawn as an
/// http run is: its latency spectrum, tps and p99 over time. The record is
/// built from a real http run's envelope and histogram (a db run needs a
/// PostgreSQL server; what the page draws is the record).
#[test]
fn report_draws_a_db_run_with_its_spectrum_and_tps_over_time() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (http, _) = json_run(
        home.path(),
        &["http", "-d", "300ms", "-c", "2", "-t", "1"],
        0,
    );
    let mut db = http.clone();
    let id = http["id"].as_str().unwrap();
    let last = if id.ends_with('Z') { 'Y' } else { 'Z' };
    db["id"] = Value::String(format!("{}{last}", &id[..25]));
    db["kind"] = "db".into();
    db["description"] = "select-only@1 at scale 1, 2 clients".into();
    db["headline"] = "transactions_per_sec".into();
    db["settings"] = serde_json::json!({"model": "closed", "clients": 2});
    let metric = |name: &str| find_metric(&http, name).clone();
    let mut tps = metric("timeline_requests_per_sec");
    tps["name"] = "timeline_transactions_per_sec".into();
    tps["unit"] = "ops_per_sec".into();
    let mut rate = metric("requests_per_sec");
    rate["name"] = "transactions_per_sec".into();
    rate["unit"] = "ops_per_sec".into();
    db["metrics"] = serde_json::json!([
        rate,
        metric("latency_ns"),
        tps,
        metric("timeline_latency_p99_ns")
    ]);
    let file = dir.path().join("db.json");
    std::fs::write(&file, db.to_string()).unwrap();
    ok(home.path(), &["import", file.to_str().unwrap()]);
    let page = ok(
        home.path(),
        &["report", db["id"].as_str().unwrap(), "-o", "-"],
    );
    for id in ["db-latency-spectrum", "db-timeline-rate", "db-timeline-p99"] {
        assert_eq!(charts(&page, id).len(), 1, "chart {id}");
    }
    assert!(page.contains("Database transactions per second over time"));
}
