//! The CLI integration tests: the real `dyno` binary, real engines, a real
//! store in a temporary DYNO_HOME, and the real reference server on loopback.

// Tests may say on stderr what they skipped and why.
#![allow(clippy::print_stderr)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

/// The engine tests' HTTPS server (rustls, self-signed certificate).
use dyno_testutil::tls as tls_server;

/// `dyno serve --app bbs`: the bulletin board through the real binary.
#[path = "cli/bbs.rs"]
mod bbs;
/// `dyno compare`'s tests.
#[path = "cli/compare.rs"]
mod compare;
/// `dyno db`'s tests, on the throwaway PostgreSQL of `scripts/pg`.
#[path = "cli/db.rs"]
mod db;
/// `dyno db run`'s script language against pgbench itself.
#[path = "cli/db_script.rs"]
mod db_script;
/// `dyno disk`'s tests.
#[path = "cli/disk.rs"]
mod disk;
/// `dyno http --scenario`: multi-step flows.
#[path = "cli/scenario.rs"]
mod scenario;

#[path = "cli/doctor.rs"]
mod doctor;
/// `dyno http`'s flags, checks and reports.
#[path = "cli/http.rs"]
mod http;
/// `dyno http`'s engine: deadlines, rates, latency logs, connecting.
#[path = "cli/http_engine.rs"]
mod http_engine;
/// `dyno http` against httpbin under gunicorn, a real web app.
#[path = "cli/httpbin.rs"]
mod httpbin;
/// `dyno run`'s tests.
#[path = "cli/misc.rs"]
mod misc;

/// `dyno report`'s pages, files and the page in a browser.
#[path = "cli/report.rs"]
mod report;
#[path = "cli/run.rs"]
mod run;
/// `dyno scale`'s tests.
#[path = "cli/scale.rs"]
mod scale;
/// Segments of one run from several processes, and their merged run.
#[path = "cli/segment.rs"]
mod segment;
/// The store's subcommands, and the store under every subcommand.
#[path = "cli/store.rs"]
mod store;
/// Size-limited tmpfs mounts, shared with the disk engine's tests.
use dyno_testutil::tmpfs;

/// A `dyno` command with its store in `home`.
fn dyno(home: &Path) -> Command {
    let mut cmd = Command::cargo_bin("dyno").unwrap();
    cmd.env("DYNO_HOME", home).env_remove("XDG_DATA_HOME");
    // A server named in the tester's own environment must not reach the
    // tests (dyno quick would load it); the db tests name theirs.
    for v in [
        "PGHOST",
        "PGPORT",
        "PGDATABASE",
        "PGSERVICE",
        "PGUSER",
        "PGPASSWORD",
    ] {
        cmd.env_remove(v);
    }
    cmd
}

/// A quick run small enough for a test but still checked.
const SMALL_QUICK: [&str; 9] = [
    "quick",
    "--int64-iterations",
    "200000",
    "--repetitions",
    "2",
    "--http-duration",
    "0",
    "--disk-duration",
    "0",
];

fn schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/run.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Validates `instance` against the Run schema, or against one of its
/// `$defs` when `def` is given.
fn assert_valid(instance: &Value, def: Option<&str>) {
    let mut schema = schema();
    if let Some(def) = def {
        schema["$ref"] = Value::String(format!("#/$defs/{def}"));
        let obj = schema.as_object_mut().unwrap();
        for key in [
            "properties",
            "required",
            "additionalProperties",
            "type",
            "title",
            "allOf",
        ] {
            obj.remove(key);
        }
    }
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "schema violations: {errors:#?}\n{instance:#}"
    );
    if def.is_none() {
        assert_record_round_trips(instance);
    }
}

/// A Run's settings read as its kind's typed record and write back the
/// very same JSON: no key the engine writes is unknown to the record.
fn assert_record_round_trips(instance: &Value) {
    use dyno_model::record::*;
    fn back<R: Record>(run: &dyno_model::Run) -> Value {
        serde_json::to_value(
            run.record::<R>()
                .expect("the settings read as the kind's record"),
        )
        .unwrap()
    }
    let run: dyno_model::Run = serde_json::from_value(instance.clone()).expect("a Run");
    let back = match run.kind {
        dyno_model::Kind::Http => back::<HttpRecord>(&run),
        dyno_model::Kind::Disk => back::<DiskRecord>(&run),
        dyno_model::Kind::Db => back::<DbRecord>(&run),
        dyno_model::Kind::Exec => back::<ExecRecord>(&run),
        dyno_model::Kind::Scale => back::<ScaleRecord>(&run),
        dyno_model::Kind::Quick => back::<QuickRecord>(&run),
        dyno_model::Kind::Compare => back::<CompareRecord>(&run),
        dyno_model::Kind::Cpu => return,
    };
    assert_eq!(
        back, run.settings,
        "the {} record does not write back the settings it read",
        run.kind
    );
}

fn stdout_json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Runs `dyno args…` with its store in `home`, expects success, returns stdout.
fn ok(home: &Path, args: &[&str]) -> String {
    let out = dyno(home)
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

/// Runs `dyno args…`, expects exit code 2 and returns stderr.
fn fails(home: &Path, args: &[&str]) -> String {
    let out = dyno(home)
        .args(args)
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    String::from_utf8(out).unwrap()
}

/// Each command must exit 2 with every needle in its message, and none may
/// create a store.
fn assert_refused(home: &Path, cases: &[(&[&str], &[&str])]) {
    for (args, needles) in cases {
        let stderr = fails(home, args);
        for needle in *needles {
            assert!(
                stderr.contains(needle),
                "{args:?}: no {needle:?} in {stderr}"
            );
        }
    }
    assert!(
        !home.join("dyno.db").exists(),
        "bad input must not create a store"
    );
}

fn quick_json(home: &Path, extra: &[&str]) -> Value {
    let out = dyno(home)
        .args(SMALL_QUICK)
        .arg("--json")
        .args(extra)
        .assert()
        .success()
        .get_output()
        .clone();
    stdout_json(&out)
}

fn temp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn version_names_the_git_revision() {
    let out = Command::cargo_bin("dyno")
        .unwrap()
        .arg("--version")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("dyno 0."), "{text}");
    assert!(text.contains("(git "), "{text}");
}

#[test]
fn every_subcommand_has_help_with_an_example() {
    for sub in [
        "quick",
        "http",
        "run",
        "scale",
        "disk",
        "sysinfo",
        "serve",
        "history",
        "show",
        "export",
        "import",
        "rm",
        "completions",
        "man",
        "compare",
        "merge",
    ] {
        Command::cargo_bin("dyno")
            .unwrap()
            .args([sub, "--help"])
            .assert()
            .success()
            .stdout(predicate::str::contains("Examples:"))
            .stdout(predicate::str::contains(format!("dyno {sub}")));
    }
}

#[test]
fn usage_errors_exit_2_with_a_clear_message() {
    let home = temp();
    let h = home.path();
    let cases: [(&[&str], &[&str]); 7] = [
        (&["quick", "--frobnicate"], &["--frobnicate"]),
        (
            &["quick", "--repetitions", "-5"],
            &["--repetitions", "negative"],
        ),
        (&["quick", "--repetitions", "0"], &["from 1 to 1000"]),
        (
            &["quick", "--threads", "many"],
            &["--threads", "not a whole number"],
        ),
        (
            &["history", "--kind", "htttp"],
            &["unknown run kind 'htttp'"],
        ),
        (&["history", "--since", "someday"], &["7d"]),
        (&["serve", "--addr", "localhost:99999"], &["--addr"]),
    ];
    assert_refused(h, &cases);
}

#[test]
fn quick_prints_its_table_saves_and_history_lists_it() {
    let home = temp();
    let out = dyno(home.path())
        .args([
            "quick",
            "--int64-iterations",
            "200000",
            "--repetitions",
            "2",
        ])
        .args(["--threads", "2", "--tag", "ci", "--http-duration", "1s"])
        .assert()
        .success()
        .get_output()
        .clone();
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("int64, 1 thread"), "{table}");
    assert!(table.contains("int64, 2 threads"), "{table}");
    assert!(table.contains("speedup"), "{table}");
    assert!(table.contains("ops/s"), "{table}");
    assert!(
        table.contains("http /hello") && table.contains("req/s"),
        "{table}"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    let id = stderr
        .split_whitespace()
        .skip_while(|w| *w != "as")
        .nth(1)
        .unwrap_or_else(|| panic!("no id in {stderr}"))
        .to_owned();
    assert_eq!(id.len(), 26, "{stderr}");

    let history = ok(home.path(), &["history"]);
    assert!(history.contains(&id), "{history}");
    assert!(history.contains("quick"), "{history}");
    assert!(history.contains("int64 1 thread"), "{history}");

    let shown = ok(home.path(), &["show", &id[..10]]);
    assert!(
        shown.contains(&id) && shown.contains("int64_nt_ops_per_sec"),
        "{shown}"
    );
    assert!(shown.contains("Tags: ci"), "{shown}");

    let json = dyno(home.path())
        .args(["show", &id, "--json"])
        .assert()
        .success()
        .get_output()
        .clone();
    let run = stdout_json(&json);
    assert_valid(&run, None);
    assert_eq!(run["id"], id.as_str());
    assert_eq!(run["tags"], serde_json::json!(["ci"]));
}

#[test]
fn quick_json_is_a_valid_run_with_checked_figures() {
    let home = temp();
    let run = quick_json(home.path(), &["--no-save", "--threads", "2"]);
    assert_valid(&run, None);
    assert_eq!(run["kind"], "quick");
    let metric = |name: &str| {
        run["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no metric {name}"))
            .clone()
    };
    let one = metric("int64_1t_ns");
    assert_eq!(one["unit"], "ns");
    assert_eq!(one["direction"], "lower_is_better");
    assert_eq!(one["samples"].as_array().unwrap().len(), 2);
    assert_eq!(one["uncertainty"]["n"], 2);
    assert!(one["value"].as_f64().unwrap() > 0.0);
    // Each throughput sample is the iterations over its own wall time, and
    // the figure is their mean: exact relations, whatever the machine's noise.
    let rate = metric("int64_1t_ops_per_sec");
    let floats = |m: &Value| -> Vec<f64> {
        m["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    let (walls, rates) = (floats(&one), floats(&rate));
    assert_eq!(walls.len(), rates.len());
    for (wall, r) in walls.iter().zip(&rates) {
        let implied = 200_000.0 / (wall / 1e9);
        assert!((r / implied - 1.0).abs() < 1e-9, "{r} vs {implied}");
    }
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    assert!((rate["value"].as_f64().unwrap() / mean - 1.0).abs() < 1e-9);
    assert!(metric("int64_speedup")["value"].as_f64().unwrap() > 0.0);
    assert_eq!(run["settings"]["int64"]["iterations"], 200_000);
    assert!(
        run["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["code"] == "nonstandard_iterations"),
        "a short run must say it is not comparable"
    );
    assert!(run["environment"]["dyno"]["git_revision"].is_string());
    assert!(
        !home.path().join("dyno.db").exists(),
        "--no-save must not create a store"
    );
}

#[test]
fn sysinfo_prints_the_machine_and_valid_json() {
    let home = temp();
    let text = ok(home.path(), &["sysinfo"]);
    for field in [
        "host",
        "kernel",
        "logical cores",
        "memory total",
        "open files",
        "somaxconn",
        "dyno",
    ] {
        assert!(text.contains(field), "no {field} in\n{text}");
    }
    let out = dyno(home.path())
        .args(["sysinfo", "--json"])
        .assert()
        .success()
        .get_output()
        .clone();
    let env = stdout_json(&out);
    assert_valid(&env, Some("environment"));
    assert!(env["cpu"]["logical_cores"].as_u64().unwrap() >= 1);
    assert!(env["memory"]["total_bytes"].as_u64().unwrap() > 0);
}

#[test]
fn export_and_import_move_runs_between_stores() {
    let a = temp();
    let b = temp();
    let first = quick_json(a.path(), &["--tag", "one"]);
    let second = quick_json(a.path(), &["--tag", "two"]);

    for (format, check) in [
        ("json", "["),
        ("jsonl", "{"),
        ("csv", "run_id,kind,started_at"),
    ] {
        let text = ok(a.path(), &["export", "--format", format]);
        assert!(text.starts_with(check), "{format}: {text}");
        assert!(text.contains(first["id"].as_str().unwrap()), "{format}");
    }
    let out = dyno(a.path())
        .args(["export", "--format", "json"])
        .assert()
        .success()
        .get_output()
        .clone();
    let exported = stdout_json(&out);
    for run in exported.as_array().unwrap() {
        assert_valid(run, None);
    }

    // CSV has one row per metric plus a header.
    let rows = ok(a.path(), &["export", "--format", "csv", "--tag", "one"])
        .lines()
        .count();
    assert_eq!(rows, 1 + first["metrics"].as_array().unwrap().len());

    let file = a.path().join("runs.jsonl");
    dyno(a.path())
        .args(["export", "--format", "jsonl", "-o"])
        .arg(&file)
        .assert()
        .success();
    // An export never overwrites.
    dyno(a.path())
        .args(["export", "-o"])
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("never overwrites"));

    dyno(b.path())
        .arg("import")
        .arg(&file)
        .assert()
        .success()
        .stderr(predicate::str::contains("imported 2 runs"));
    dyno(b.path())
        .arg("import")
        .arg(&file)
        .assert()
        .success()
        .stderr(
            predicate::str::contains("imported 0 runs").and(predicate::str::contains("2 already")),
        );
    let out = dyno(b.path())
        .args(["show", second["id"].as_str().unwrap(), "--json"])
        .assert()
        .success()
        .get_output()
        .clone();
    assert_eq!(
        stdout_json(&out),
        second,
        "an imported run is the exported run"
    );

    // From stdin, and filters apply to what was imported.
    let c = temp();
    dyno(c.path())
        .args(["import", "-"])
        .pipe_stdin(&file)
        .unwrap()
        .assert()
        .success();
    let text = ok(c.path(), &["history", "--tag", "two"]);
    assert!(
        text.contains(second["id"].as_str().unwrap())
            && !text.contains(first["id"].as_str().unwrap()),
        "{text}"
    );
}

#[test]
fn history_filters_by_kind_host_since_and_limit() {
    let home = temp();
    let runs: Vec<Value> = (0..3).map(|_| quick_json(home.path(), &[])).collect();
    let ids: Vec<&str> = runs.iter().map(|r| r["id"].as_str().unwrap()).collect();
    let list = |args: &[&str]| ok(home.path(), &[&["history"], args].concat());
    let last_two = list(&["--limit", "2"]);
    assert!(
        !last_two.contains(ids[0]) && last_two.contains(ids[1]) && last_two.contains(ids[2]),
        "{last_two}"
    );
    assert!(list(&["--kind", "quick"]).contains(ids[0]));
    let none = dyno(home.path())
        .args(["history", "--kind", "disk"])
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(none.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("no run matches the filters --kind disk")
    );
    let host = runs[0]["environment"]["hostname"].as_str().unwrap();
    assert!(list(&["--host", host]).contains(ids[2]));
    assert!(list(&["--since", "1h"]).contains(ids[0]));
    dyno(home.path())
        .args(["history", "--since", "2999-01-01"])
        .assert()
        .success()
        .stdout(predicate::str::is_empty());
}

#[test]
fn rm_removes_a_run_and_unknown_ids_exit_2() {
    let home = temp();
    let run = quick_json(home.path(), &[]);
    let id = run["id"].as_str().unwrap();
    dyno(home.path())
        .args(["rm", id])
        .assert()
        .success()
        .stderr(predicate::str::contains(id));
    dyno(home.path())
        .args(["show", id])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(id).and(predicate::str::contains("dyno history")));
    dyno(home.path()).args(["rm", id]).assert().code(2);
}

#[test]
fn two_processes_saving_at_once_both_succeed() {
    let home = temp();
    let bin = assert_cmd::cargo::cargo_bin("dyno");
    let spawn = || {
        StdCommand::new(&bin)
            .args(SMALL_QUICK)
            .arg("--json")
            .env("DYNO_HOME", home.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let children: Vec<_> = (0..4).map(|_| spawn()).collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(
        ok(home.path(), &["export", "--format", "jsonl"])
            .lines()
            .count(),
        4
    );
}

#[test]
fn a_corrupt_database_is_refused_and_left_untouched() {
    let home = temp();
    let db = home.path().join("dyno.db");
    let garbage: Vec<u8> = (0..8192u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&db, &garbage).unwrap();
    for args in [
        &["history"][..],
        &SMALL_QUICK[..],
        &["show", "01ABCDEF"][..],
    ] {
        dyno(home.path())
            .args(args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("dyno.db").and(predicate::str::contains("untouched")));
    }
    assert_eq!(
        std::fs::read(&db).unwrap(),
        garbage,
        "the file must not change"
    );
    let entries: Vec<_> = std::fs::read_dir(home.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        entries.len(),
        1,
        "nothing may be created beside it: {entries:?}"
    );
}

#[test]
fn an_unwritable_home_says_how_to_fix_it() {
    let home = temp();
    let file = home.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let bad = file.join("dyno");
    dyno(&bad)
        .args(SMALL_QUICK)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("DYNO_HOME").and(predicate::str::contains("not-a-dir")));
    dyno(&bad)
        .args(SMALL_QUICK)
        .arg("--no-save")
        .assert()
        .success();
}

#[test]
fn a_locked_database_is_reported_not_waited_on_forever() {
    let home = temp();
    quick_json(home.path(), &[]);
    let db = home.path().join("dyno.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let start = Instant::now();
    dyno(home.path())
        .args(SMALL_QUICK)
        .timeout(Duration::from_secs(60))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("locked").or(predicate::str::contains("another dyno")));
    assert!(start.elapsed() < Duration::from_secs(60));
    conn.execute_batch("ROLLBACK").unwrap();
    dyno(home.path()).arg("history").assert().success();
}

#[test]
fn import_of_a_bad_file_saves_nothing() {
    let home = temp();
    let file = home.path().join("bad.jsonl");
    let good = quick_json(home.path(), &["--no-save"]);
    std::fs::write(
        &file,
        format!("{good}\n{{\"schema_version\": 1, \"id\": \"x\"}}\n"),
    )
    .unwrap();
    dyno(home.path())
        .arg("import")
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("line 2"));
    dyno(home.path())
        .args(["export", "--format", "jsonl"])
        .assert()
        .success()
        .stdout(predicate::str::is_empty());
    dyno(home.path())
        .args(["import", "/nonexistent/runs.json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("/nonexistent/runs.json"));
}

#[test]
fn completions_and_man_pages_are_generated() {
    for (shell, marker) in [
        ("bash", "_dyno()"),
        ("zsh", "#compdef dyno"),
        ("fish", "complete -c dyno"),
    ] {
        Command::cargo_bin("dyno")
            .unwrap()
            .args(["completions", shell])
            .assert()
            .success()
            .stdout(predicate::str::contains(marker).and(predicate::str::contains("history")));
    }
    Command::cargo_bin("dyno")
        .unwrap()
        .arg("man")
        .assert()
        .success()
        .stdout(predicate::str::contains(".TH dyno").and(predicate::str::contains("quick")));
    let dir = temp();
    Command::cargo_bin("dyno")
        .unwrap()
        .args(["man", "--dir"])
        .arg(dir.path())
        .assert()
        .success();
    for page in ["dyno.1", "dyno-quick.1", "dyno-serve.1"] {
        assert!(dir.path().join(page).exists(), "{page}");
    }
}

/// Sends `dyno serve` (a child of this test) Ctrl-C and waits, at most 20 s,
/// for it to stop.
fn stop_server(child: &mut std::process::Child) {
    // SAFETY: kill(2) with a valid pid of our own child.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) },
        0
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "dyno serve did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Reads one HTTP/1.1 response with a Content-Length body.
fn get(addr: &str, path: &str) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a header end");
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, raw[split + 4..].to_vec())
}

/// Starts `dyno serve --addr ADDR --threads N` and reads the address it
/// printed on its first line.
fn spawn_serve(addr: &str, threads: u32) -> (std::process::Child, String) {
    spawn_serve_with(addr, threads, &[], "http://")
}

/// [`spawn_serve`] with more flags, its URL starting with `scheme`.
fn spawn_serve_with(
    addr: &str,
    threads: u32,
    extra: &[&str],
    scheme: &str,
) -> (std::process::Child, String) {
    spawn_serve_from(
        &assert_cmd::cargo::cargo_bin("dyno"),
        addr,
        threads,
        extra,
        scheme,
    )
}

/// [`spawn_serve_with`] of the dyno binary at `bin` (a copy under another
/// name, as `--watch-name` tests need).
fn spawn_serve_from(
    bin: &Path,
    addr: &str,
    threads: u32,
    extra: &[&str],
    scheme: &str,
) -> (std::process::Child, String) {
    let mut child = StdCommand::new(bin)
        .args(["serve", "--addr", addr, "--threads", &threads.to_string()])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .split(scheme)
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {first:?}"))
        .to_owned();
    (child, addr)
}

#[test]
fn serve_answers_on_the_printed_address_and_stops_on_ctrl_c() {
    let (mut child, addr) = spawn_serve("127.0.0.1:0", 2);

    let (status, body) = get(&addr, "/hello");
    assert_eq!((status, body.len()), (200, 92));
    let (status, body) = get(&addr, "/blob/64k");
    assert_eq!((status, body.len()), (200, 65_536));
    assert_eq!(get(&addr, "/status/503").0, 503);
    assert_eq!(get(&addr, "/blob/1x").0, 400);

    // SAFETY: kill(2) with a valid pid of our own child.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(rc, 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "dyno serve did not stop on SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    assert!(
        TcpStream::connect(&addr).is_err(),
        "the port must be closed"
    );
}

#[test]
fn serve_tls_speaks_h2_and_http1_by_alpn() {
    let home = temp();
    let (mut child, addr) = spawn_serve_with("127.0.0.1:0", 1, &["--tls"], "https://");
    let url = format!("https://{addr}/hello");
    for (extra, alpn) in [(&["--h2", "-m", "4"][..], "h2"), (&[][..], "http/1.1")] {
        let mut args = vec![url.as_str(), "--insecure", "-c", "2", "-n", "400"];
        args.extend_from_slice(extra);
        let run = http_json(home.path(), &args);
        assert_eq!(metric(&run, "responses"), Some(400.0), "{alpn}");
        assert_eq!(metric(&run, "errors"), Some(0.0), "{alpn}");
        assert_eq!(run["settings"]["tls_session"]["alpn"], alpn);
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A metric's value from a Run in JSON.
fn metric(run: &Value, name: &str) -> Option<f64> {
    run["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .and_then(|m| m["value"].as_f64())
}

fn http_json(home: &Path, args: &[&str]) -> Value {
    http_json_exit(home, args, 0).0
}

/// Runs `dyno http args… --json --no-save`, expects exit `code`, and
/// returns the schema-checked Run with stderr.
fn http_json_exit(home: &Path, args: &[&str], code: i32) -> (Value, String) {
    json_run(home, &[&["http"], args, &["--no-save"]].concat(), code)
}

/// Runs `dyno args… --json`, expects exit `code`, and returns the
/// schema-checked Run with stderr.
fn json_run(home: &Path, args: &[&str], code: i32) -> (Value, String) {
    let out = dyno(home)
        .args(args)
        .arg("--json")
        .timeout(Duration::from_secs(120))
        .assert()
        .code(code)
        .get_output()
        .clone();
    let run = stdout_json(&out);
    assert_valid(&run, None);
    (run, String::from_utf8_lossy(&out.stderr).into_owned())
}

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
    let latency = run["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "latency_ns")
        .unwrap();
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
    assert!(
        run["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["code"] == "no_responses")
    );
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
    let ab = ok(
        home.path(),
        &[
            "http",
            &url,
            "-n",
            "10",
            "-c",
            "1",
            "--insecure",
            "--format",
            "ab",
            "--no-save",
        ],
    );
    assert!(
        ab.contains("SSL/TLS Protocol:       TLSv1.3,TLS13_AES_256_GCM_SHA384\n")
            && ab.contains("Server Temp Key:        X25519\n"),
        "{ab}"
    );
    let human = ok(
        home.path(),
        &[
            "http",
            &url,
            "-n",
            "10",
            "-c",
            "1",
            "--insecure",
            "--no-save",
        ],
    );
    assert!(
        human.contains("TLS TLSv1.3 TLS13_AES_256_GCM_SHA384, X25519 (certificate not verified)"),
        "{human}"
    );
    let codes: Vec<&str> = run["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["code"].as_str())
        .collect();
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
    let warning = run["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "tls_handshake_failed")
        .expect("a warning says why and what to do");
    let message = warning["message"].as_str().unwrap();
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

/// Starts `dyno args…` with its store in `home`, sends `signal` after
/// `after`, and gives back what it printed once it stopped, which it must
/// do promptly.
fn signalled(home: &Path, args: &[&str], after: Duration, signal: i32) -> std::process::Output {
    let bin = assert_cmd::cargo::cargo_bin("dyno");
    let child = StdCommand::new(bin)
        .args(args)
        .env("DYNO_HOME", home)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    // SAFETY: kill(2) with a valid pid of our own child.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "it must stop promptly"
    );
    out
}

/// [`signalled`] with SIGINT, SIGTERM or SIGHUP (all three interrupt
/// alike): a prompt exit with code 130 and a schema-valid Run on stdout
/// marked as interrupted.
fn interrupted_run(home: &Path, args: &[&str], after: Duration, signal: i32) -> Value {
    let out = signalled(home, args, after, signal);
    assert_eq!(
        out.status.code(),
        Some(130),
        "an interrupted run exits 130: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = stdout_json(&out);
    assert_valid(&run, None);
    assert!(
        run["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["code"] == "interrupted"),
        "{:?}",
        run["warnings"]
    );
    run
}

/// Ctrl-C in the middle of a capacity search: exit 130, the `interrupted`
/// warning, no capacity claimed (its steps kept as diagnostics), `history`
/// marks it, and `compare` refuses it as a capacity, saying why.
#[test]
fn an_interrupted_search_claims_no_capacity() {
    let home = temp();
    let server = dyno_serve::spawn(std::net::TcpListener::bind("127.0.0.1:0").unwrap(), 1).unwrap();
    let url = format!("http://{}/hello", server.local_addr());
    let run = interrupted_run(
        home.path(),
        &[
            "http",
            &url,
            "-c",
            "4",
            "-t",
            "1",
            "--find-max",
            "--slo",
            "p99<=1s",
            "--start",
            "50",
            "--step",
            "400ms",
            "--warmup",
            "100ms",
            "--json",
        ],
        Duration::from_millis(2500),
        libc::SIGINT,
    );
    let cap = &run["settings"]["capacity"];
    assert_eq!(cap["answer"]["outcome"], "interrupted", "{cap}");
    assert!(!cap["steps"].as_array().unwrap().is_empty(), "{cap}");
    assert_eq!(metric(&run, "max_sustainable_rate"), None);
    assert_eq!(run["headline"], Value::Null);
    let id = run["id"].as_str().unwrap().to_owned();
    let history = ok(home.path(), &["history"]);
    let line = history
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_else(|| panic!("{history}"));
    assert!(line.contains("interrupted; no capacity claimed"), "{line}");
    // Another run to compare it with: refused, naming the search.
    let (other, _) = json_run(home.path(), &["http", &url, "-n", "50", "-c", "1"], 0);
    let refused = fails(
        home.path(),
        &["compare", &id, other["id"].as_str().unwrap()],
    );
    assert!(
        refused.contains("an interrupt stopped") && refused.contains("claims no capacity"),
        "{refused}"
    );
}

#[test]
fn http_sighup_prints_and_saves_the_partial_run() {
    let home = temp();
    let run = interrupted_run(
        home.path(),
        &["http", "-d", "60s", "-c", "2", "--json"],
        Duration::from_millis(1500),
        libc::SIGHUP,
    );
    assert!(metric(&run, "responses").unwrap() > 0.0);
    let saved = ok(home.path(), &["export", "--format", "jsonl"]);
    assert!(
        saved.contains(run["id"].as_str().unwrap()),
        "the partial run is saved"
    );
}
