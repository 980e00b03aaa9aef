//! `dyno changes` over a history made as a code change makes it: the same
//! `dyno run` of a script, whose sleep then grows by a fifth.
//!
//! The issue's step is 10 → 12 ms; these sleep 100 → 120 ms. Starting
//! `sh` and `sleep` waits for a CPU, and on a loaded two-core machine that
//! wait (a few milliseconds a sample) is as large as a 2 ms step: the
//! history is then honestly too noisy to call one slower run a change
//! (the guide's chapter shows 10 → 12 ms on a quiet machine).

use std::path::Path;

use serde_json::Value;

use crate::common::{dyno, temp};

/// Times `./work.sh` (which sleeps `ms`) in the directory `dir`, saved
/// with the tag `rev:REV`.
fn timed(home: &Path, dir: &Path, ms: u32, rev: &str) {
    let script = dir.join("work.sh");
    std::fs::write(&script, format!("#!/bin/sh\nsleep 0.{ms:03}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    dyno(home)
        .current_dir(dir)
        .args(["run", "--runs", "5", "./work.sh", "--tag"])
        .arg(format!("rev:{rev}"))
        .assert()
        .success();
}

/// `dyno changes --json` with `args`, and its exit code.
fn changes(home: &Path, args: &[&str]) -> (Value, i32) {
    let out = dyno(home)
        .args(["changes", "--json", "--min-change", "10"])
        .args(args)
        .output()
        .unwrap();
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    assert_schema_valid(&report);
    (report, out.status.code().unwrap())
}

/// `report` is what `schema/changes.schema.json` describes.
fn assert_schema_valid(report: &Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/changes.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    crate::common::assert_matches_schema(&schema, report);
}

/// The one line of the one series.
fn line(report: &Value) -> &Value {
    let series = report["series"].as_array().unwrap();
    assert_eq!(series.len(), 1, "{report:#}");
    let lines = series[0]["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 1, "{report:#}");
    assert_eq!(lines[0]["metric"], "wall_ns{command=./work.sh}");
    &lines[0]
}

#[test]
fn a_slower_script_is_one_regression_at_its_first_run_and_fails_the_gate() {
    let (home, dir) = (temp(), temp());
    // A/A: fifteen runs of the same script; the gate passes as they land.
    for i in 1..=15 {
        timed(home.path(), dir.path(), 100, &format!("a{i}"));
    }
    let (report, code) = changes(home.path(), &["--gate"]);
    assert_eq!(code, 0, "{report:#}");
    let l = line(&report);
    assert_eq!(l["runs"], 15);
    assert_eq!(l["gate"]["verdict"], "pass");
    assert!(
        l["changes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["kind"] != "regression")
    );
    // The first slower run starts a regression: the gate fails on it.
    timed(home.path(), dir.path(), 120, "b1");
    let (report, code) = changes(home.path(), &["--gate"]);
    assert_eq!(code, 1, "{report:#}");
    let gate = &line(&report)["gate"];
    assert_eq!(gate["verdict"], "regression", "{report:#}");
    assert_eq!(gate["starts"], true);
    assert_eq!(gate["regression"]["commit"], "b1");
    // Fourteen more: one change, at the first slower run, about +20%
    // of the sleep (the shell's start adds to both sides), and the gate
    // still fails: the newest run continues it.
    for i in 2..=15 {
        timed(home.path(), dir.path(), 120, &format!("b{i}"));
    }
    let (report, code) = changes(home.path(), &["--gate"]);
    assert_eq!(code, 1, "{report:#}");
    let l = line(&report);
    let found = l["changes"].as_array().unwrap();
    let regressions: Vec<&Value> = found.iter().filter(|c| c["kind"] == "regression").collect();
    assert_eq!(regressions.len(), 1, "{report:#}");
    let c = regressions[0];
    assert_eq!(c["commit"], "b1", "{report:#}");
    assert_eq!(c["runs_after"], 15);
    let percent = c["change_percent"].as_f64().unwrap();
    assert!((10.0..=25.0).contains(&percent), "{percent}");
    let (lo, hi) = (
        c["interval_percent"][0].as_f64().unwrap(),
        c["interval_percent"][1].as_f64().unwrap(),
    );
    assert!(lo <= percent && percent <= hi);
    assert!(c["p_value"].as_f64().unwrap() <= 0.01);
    assert_eq!(l["gate"]["starts"], false);
    // The text names the change and the gate's verdict.
    let out = dyno(home.path())
        .args(["changes", "--gate", "--min-change", "10"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("regression at run") && text.contains("rev b1"),
        "{text}"
    );
    assert!(
        text.contains("the newest run continues a regression"),
        "{text}"
    );
    assert!(text.contains("gate: FAIL"), "{text}");
    // For CI: JUnit XML with the failed case, GitHub's annotations and
    // the step's summary, Markdown for a pull request.
    let out = dyno(home.path())
        .args([
            "changes",
            "--gate",
            "--min-change",
            "10",
            "--format",
            "junit",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let junit = String::from_utf8(out.stdout).unwrap();
    assert!(junit.contains("tests=\"1\" failures=\"1\""), "{junit}");
    assert!(
        junit
            .contains("<failure message=\"the newest run continues a regression: regression at b1"),
        "{junit}"
    );
    well_formed_xml(&junit);
    let summary = dir.path().join("summary.md");
    std::fs::write(&summary, "earlier step\n").unwrap();
    let out = dyno(home.path())
        .args([
            "changes",
            "--gate",
            "--min-change",
            "10",
            "--format",
            "github",
        ])
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let annotations = String::from_utf8(out.stdout).unwrap();
    assert!(
        annotations.starts_with("::error title=dyno changes::wall_ns{command=./work.sh}"),
        "{annotations}"
    );
    let summary = std::fs::read_to_string(&summary).unwrap();
    assert!(
        summary.starts_with("earlier step\n## dyno changes"),
        "{summary}"
    );
    assert!(
        summary.contains("**Gate: FAIL.**") && summary.contains("regression continues"),
        "{summary}"
    );
    let out = dyno(home.path())
        .args(["changes", "--min-change", "10", "--format", "markdown"])
        .output()
        .unwrap();
    let markdown = String::from_utf8(out.stdout).unwrap();
    assert!(
        markdown.contains("| `wall_ns{command=./work.sh}` | 30 | changed |"),
        "{markdown}"
    );
    assert!(!markdown.contains("Gate"), "{markdown}");
    // With the history narrowed to the slower runs, they are the baseline.
    let (report, code) = changes(home.path(), &["--gate", "--limit", "15"]);
    assert_eq!(code, 0, "{report:#}");
}

#[test]
fn a_short_history_is_too_few_runs_and_bad_flags_are_refused() {
    let (home, dir) = (temp(), temp());
    for i in 1..=3 {
        timed(home.path(), dir.path(), 1, &format!("a{i}"));
    }
    let (report, code) = changes(home.path(), &["--gate"]);
    assert_eq!(code, 0);
    let l = line(&report);
    assert_eq!(l["verdict"], "too_few_runs");
    assert!(
        l["note"]
            .as_str()
            .unwrap()
            .contains("too few runs to judge"),
        "{l}"
    );
    assert_eq!(l["gate"]["verdict"], "pass");
    for (args, says) in [
        (&["changes", "--alpha", "0"][..], "not a significance level"),
        (&["changes", "--alpha", "x"], "not a significance level"),
        (&["changes", "--min-change", "120"], "percentage"),
        (&["changes", "--min-segment", "1"], "min-segment"),
    ] {
        let out = dyno(home.path()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    // No runs at all: said, not an error.
    let empty = temp();
    let out = dyno(empty.path()).arg("changes").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("no saved runs"));
}

/// Fails unless `text` parses as XML (Python's parser, which scripts/test
/// installs with python3-venv).
fn well_formed_xml(text: &str) {
    use std::io::Write as _;
    let mut child = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, xml.etree.ElementTree as E; E.parse(sys.stdin)",
        ])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    assert!(
        child.wait().unwrap().success(),
        "not well-formed XML: {text}"
    );
}

#[test]
fn by_commit_orders_runs_as_the_repository_does() {
    let (home, dir) = (temp(), temp());
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    git(&["init", "-q"]);
    let mut revs = Vec::new();
    for i in 1..=3 {
        git(&["commit", "-q", "--allow-empty", "-m", &format!("c{i}")]);
        revs.push(git(&["rev-parse", "--short=8", "HEAD"]));
    }
    // A first run to warm the caches, of no commit; then runs measured
    // out of commit order: the second commit's (slower) first, then the
    // first's, then the third's (slower too).
    timed(home.path(), dir.path(), 140, "warm-up");
    for (rev, ms) in [(&revs[1], 140), (&revs[0], 100), (&revs[2], 140)] {
        for _ in 0..6 {
            timed(home.path(), dir.path(), ms, rev);
        }
    }
    let run = |by_commit: bool| {
        let mut cmd = dyno(home.path());
        cmd.current_dir(dir.path())
            .args(["changes", "--json", "--min-change", "10"]);
        if by_commit {
            cmd.arg("--by-commit");
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let report = run(true);
    assert_eq!(report["order"], "commits");
    let l = line(&report);
    let found = l["changes"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{report:#}");
    assert_eq!(found[0]["kind"], "regression");
    assert_eq!(found[0]["commit"], revs[1].as_str());
    assert_eq!(found[0]["runs_before"], 6);
    assert_eq!(report["series"][0]["unordered"], 1, "the warm-up run");
    // By time, the second commit's runs come first: whatever else is
    // found, no regression at them.
    let report = run(false);
    assert_eq!(report["series"][0]["unordered"], 0);
    let by_time = line(&report)["changes"].as_array().unwrap();
    assert!(
        !by_time
            .iter()
            .any(|c| c["kind"] == "regression" && c["commit"] == revs[1].as_str()),
        "{report:#}"
    );
    // Outside a repository, --by-commit says what it needs.
    let elsewhere = temp();
    let out = dyno(home.path())
        .current_dir(elsewhere.path())
        .args(["changes", "--by-commit"])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--by-commit orders runs by the commits"),
        "{stderr}"
    );
}

/// The same history in a PostgreSQL store answers as in SQLite.
#[test]
fn a_postgres_store_gives_the_same_answer() {
    let (_pg, _db, url) = crate::store::shared_store();
    let (home, dir) = (temp(), temp());
    for i in 1..=8 {
        timed(home.path(), dir.path(), 20, &format!("a{i}"));
    }
    for i in 1..=8 {
        timed(home.path(), dir.path(), 60, &format!("b{i}"));
    }
    let exported = dir.path().join("runs.json");
    dyno(home.path())
        .args(["export", "-o"])
        .arg(&exported)
        .assert()
        .success();
    dyno(home.path())
        .args(["--store", &url, "import"])
        .arg(&exported)
        .assert()
        .success();
    let (local, _) = changes(home.path(), &[]);
    let (shared, _) = changes(home.path(), &["--store", &url]);
    assert_eq!(local, shared);
    let found = line(&shared)["changes"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{shared:#}");
    assert_eq!(found[0]["commit"], "b1");
}

/// A bench's ratios to its peer, imported with `import --figures` as
/// bench/lib.sh's save_figures does: their own series, whose drop is a
/// regression (higher is better) at the first lower run, and the gate
/// fails on it. A bad figures file saves nothing.
#[test]
fn imported_figures_are_followed_like_any_run() {
    let (home, dir) = (temp(), temp());
    let home = home.path();
    let import = |i: usize, ratio: f64, settings: &str| {
        // Three rounds each, spread ±1% around the run's ratio.
        let samples: Vec<f64> = [0.99, 1.0, 1.01].iter().map(|s| s * ratio).collect();
        let file = dir.path().join(format!("f{i}.json"));
        let figures = serde_json::json!({
            "name": "bench/h2-vs-h2load.sh",
            "settings": serde_json::from_str::<Value>(settings).unwrap(),
            "figures": [{"name": "rate_ratio", "labels": {"peer": "h2load", "path": "/hello.html"},
                         "unit": "ratio", "direction": "higher_is_better", "samples": samples}],
        });
        std::fs::write(&file, figures.to_string()).unwrap();
        dyno(home)
            .args(["import", "--figures"])
            .arg(&file)
            .args(["--tag", &format!("rev:r{i}"), "--tag", "bench"])
            .assert()
            .success();
    };
    // Ratios of about 1.0, then 0.85 from run 11: a regression of 15%.
    for i in 0..18 {
        let wobble = [1.0, 1.012, 0.991, 1.004, 0.996, 1.008][i % 6];
        import(
            i,
            if i < 10 { wobble } else { 0.85 * wobble },
            r#"{"rounds": 3}"#,
        );
    }
    // Other settings are another series, left out by --tag.
    import(99, 2.0, r#"{"rounds": 5}"#);
    let (report, code) = changes(home, &["--kind", "figures", "--gate"]);
    assert_eq!(code, 1, "the newest run continues a regression: {report:#}");
    let series = report["series"].as_array().unwrap();
    assert_eq!(series.len(), 2, "{report:#}");
    let line = series
        .iter()
        .flat_map(|s| s["lines"].as_array().unwrap())
        .find(|l| !l["changes"].as_array().unwrap().is_empty())
        .unwrap_or_else(|| panic!("no change found: {report:#}"));
    assert_eq!(line["metric"], "rate_ratio{path=/hello.html, peer=h2load}");
    let change = &line["changes"][0];
    assert_eq!(change["kind"], "regression", "{report:#}");
    assert_eq!(change["runs_before"], 10, "{report:#}");
    assert_eq!(change["commit"], "r10", "{report:#}");

    // A file that is not figures saves nothing, and says why.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"name": "b", "figures": [{"name": "r", "unit": "ratio", "direction": "higher_is_better"}]}"#).unwrap();
    let out = dyno(home)
        .args(["import", "--figures"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("figure r has neither samples nor a value"),
        "{out:?}"
    );
    // Figures given to a plain import are pointed at --figures.
    let out = dyno(home)
        .args(["import"])
        .arg(dir.path().join("f0.json"))
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("import them with --figures"),
        "{out:?}"
    );
    let out = dyno(home)
        .args(["export", "--kind", "figures", "--format", "jsonl"])
        .output()
        .unwrap();
    let saved = String::from_utf8(out.stdout).unwrap();
    assert_eq!(saved.lines().count(), 19, "nothing more was saved");
}

/// A capacity search kept over time (a nightly `--find-max`): its answer,
/// `max_sustainable_rate{slo=…}`, is the line followed, and the runs are
/// one series although each search took other steps. The first run is a
/// real search of a server that serves one request at a time in 4 ms; the
/// history is copies of it whose answer is moved (as `bench/synth_runs.py`
/// makes a store), the last ones 20% lower: a regression at the first.
#[test]
fn a_capacity_history_follows_the_search_answer() {
    let home = temp();
    let (url, _) = super::segment::one_at_a_time_server(std::time::Duration::from_millis(4));
    let search = |home: &Path| -> Value {
        let out = dyno(home)
            .args(["http", &url, "-c", "4", "--find-max", "--slo", "p99<=100ms"])
            .args(["--start", "100", "--step", "1s", "--warmup", "300ms"])
            .args(["--precision", "25", "--budget", "40s"])
            .args(["--json", "--no-save"])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // A search that a busy machine kept from settling has no capacity to
    // follow: one more try.
    let mut run = search(home.path());
    if run["settings"]["capacity"]["answer"]["outcome"] != "found" {
        run = search(home.path());
    }
    let answer = &run["settings"]["capacity"]["answer"];
    assert_eq!(
        answer["outcome"], "found",
        "{:#}",
        run["settings"]["capacity"]
    );
    let slo = "max_sustainable_rate{slo=p99<=100ms}";
    let max = run["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "max_sustainable_rate")
        .unwrap_or_else(|| panic!("{run:#}"))
        .clone();
    assert_eq!(max["role"], "primary");
    let value = max["value"].as_f64().unwrap();
    let mut history = Vec::new();
    for i in 0..16u64 {
        let mut copy = run.clone();
        let at = value * [1.0, 1.01, 0.99, 1.005][i as usize % 4] * if i < 10 { 1.0 } else { 0.8 };
        // A fresh id and start an hour apart, oldest first.
        let id = format!("01JA{:022}", i);
        copy["id"] = Value::from(id);
        copy["tags"] = serde_json::json!([format!("rev:c{i}")]);
        for m in copy["metrics"].as_array_mut().unwrap() {
            if m["name"] == "max_sustainable_rate" {
                m["value"] = Value::from(at);
            }
        }
        copy["settings"]["capacity"]["answer"]["max_rate"] = Value::from(at);
        copy["settings"]["capacity"]["steps"][0]["achieved"] = Value::from(at / 3.0);
        history.push(copy);
    }
    let file = home.path().join("history.json");
    std::fs::write(&file, Value::from(history).to_string()).unwrap();
    dyno(home.path())
        .arg("import")
        .arg(&file)
        .assert()
        .success();
    let (report, code) = changes(home.path(), &["--kind", "http", "--gate"]);
    assert_eq!(code, 1, "{report:#}");
    let series = report["series"].as_array().unwrap();
    assert_eq!(series.len(), 1, "one search, one series: {report:#}");
    let lines = series[0]["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 1, "{report:#}");
    assert_eq!(lines[0]["metric"], slo);
    let change = &lines[0]["changes"][0];
    assert_eq!(change["kind"], "regression", "{report:#}");
    assert_eq!(change["commit"], "c10", "{report:#}");
}
