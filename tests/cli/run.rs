//! `dyno run`: real child processes timed through the binary.

use crate::common::*;

/// `dyno run args… --json --no-save`, expecting `code`; the schema-checked
/// Run and stderr.
fn run_json(home: &Path, args: &[&str], code: i32) -> (Value, String) {
    json_run(home, &[&["run"], args, &["--no-save"]].concat(), code)
}

/// The Run of `dyno run FLAGS… COMMANDS… --json --no-save`, the flags
/// written as a command line and each command whole; it must succeed.
fn timed(home: &Path, flags: &str, commands: &[&str]) -> Value {
    run_json(home, &[&words(flags)[..], commands].concat(), 0).0
}

/// Every metric named `name`, as (command label, metric).
fn labelled<'a>(run: &'a Value, name: &str) -> Vec<(&'a str, &'a Value)> {
    metrics(run)
        .filter(|m| m["name"] == name)
        .map(|m| (m["labels"]["command"].as_str().unwrap_or(""), m))
        .collect()
}

#[test]
fn run_times_commands_and_compares_them() {
    let home = temp();
    let (run, _) = run_json(
        home.path(),
        &["-N", "--runs", "5", "sleep 0.02", "sleep 0.06"],
        0,
    );
    assert_eq!(run["kind"], "exec");
    let walls = labelled(&run, "wall_ns");
    assert_eq!(walls.len(), 2);
    let (name, fast) = walls[0];
    assert_eq!(name, "sleep 0.02");
    assert_eq!(fast["samples"].as_array().unwrap().len(), 5);
    let mean = fast["value"].as_f64().unwrap();
    assert!((20e6..200e6).contains(&mean), "{mean}");
    // Student t below 10 runs (a bootstrap of 5 is too narrow).
    assert_eq!(fast["uncertainty"]["method"], "student_t");
    let ratio = labelled(&run, "ratio_to_reference");
    assert_eq!(ratio.len(), 1);
    assert_eq!(ratio[0].0, "sleep 0.06");
    assert_eq!(ratio[0].1["labels"]["reference"], "sleep 0.02");
    assert!(ratio[0].1["value"].as_f64().unwrap() > 1.5);
    assert_eq!(labelled(&run, "verdict")[0].1["value"], -1.0);
    let plan = run["settings"]["benchmarks"].as_array().unwrap();
    assert_eq!(plan[0]["stopped_by"], "runs");
    assert!(
        labelled(&run, "peak_rss_bytes")[0].1["value"]
            .as_f64()
            .unwrap()
            > 0.0
    );

    // The human report, saved and shown again by id.
    let out = ok(
        home.path(),
        &["run", "-N", "--runs", "3", "sleep 0.01", "true"],
    );
    assert_contains_all(
        &out,
        &[
            "Benchmark 1: sleep 0.01",
            "Benchmark 2: true",
            "Time (mean ± σ)",
            "Compared with 'true'",
            "peak RSS",
        ],
    );
    let history = ok(home.path(), &["history", "--kind", "exec"]);
    assert!(history.contains("time 2 commands"), "{history}");
}

#[test]
fn a_shell_is_calibrated_and_adaptive_runs_say_why_they_stopped() {
    let home = temp();
    let run = timed(
        home.path(),
        "--min-runs 3 --max-runs 4 --target-rse 0.001",
        &["sleep 0.01"],
    );
    let shell = metric(&run, "shell_startup_ns").unwrap();
    assert!(shell > 0.0 && shell < 50e6, "{shell}");
    let plan = &run["settings"]["benchmarks"][0];
    assert_eq!(plan["runs"], 4);
    assert_eq!(plan["stopped_by"], "max_runs");
    assert!(
        warning_codes(&run).contains(&"high_variance"),
        "{:?}",
        run["warnings"]
    );
    let run = timed(
        home.path(),
        "-N --min-runs 3 --max-time 1ms --target-rse 0.0001",
        &["sleep 0.01"],
    );
    assert_eq!(run["settings"]["benchmarks"][0]["stopped_by"], "max_time");
    assert_eq!(
        run["settings"]["benchmarks"][0]["runs"], 3,
        "min runs come first"
    );
}

#[test]
fn parameters_make_one_benchmark_per_value() {
    let home = temp();
    let run = timed(
        home.path(),
        "-N --runs 2 -P n 1 3 -L w x,y --name echo-{n}-{w}",
        &["echo {n} {w}"],
    );
    let walls = labelled(&run, "wall_ns");
    let names: Vec<&str> = walls.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [
            "echo-1-x", "echo-1-y", "echo-2-x", "echo-2-y", "echo-3-x", "echo-3-y"
        ]
    );
    assert_eq!(walls[3].1["labels"]["param.n"], "2");
    assert_eq!(walls[3].1["labels"]["param.w"], "y");
    let run = timed(
        home.path(),
        "-N --runs 1 -P d 0 0.02 --step 0.01",
        &["sleep {d}"],
    );
    let names: Vec<&str> = labelled(&run, "wall_ns").iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["sleep 0.00", "sleep 0.01", "sleep 0.02"]);
}

#[test]
fn bad_run_flags_are_refused_before_anything_runs() {
    let home = temp();
    assert_refused(
        home.path(),
        &[
            (&["run", "make -j {jobs}"], &["{jobs}", "not a parameter"]),
            (
                &["run", "-P", "j", "1", "4", "make -j {job}"],
                &["{job}", "the parameters are j"],
            ),
            (
                &["run", "-P", "j", "4", "1", "make -j {j}"],
                &["greater than MAX"],
            ),
            (
                &["run", "-P", "j", "1", "4", "--step", "0", "make -j {j}"],
                &["greater than zero"],
            ),
            (
                &["run", "-P", "j", "1", "x", "make -j {j}"],
                &["'x' is not a number"],
            ),
            (&["run", "-L", "cc", "", "{cc}"], &["empty list"]),
            (&["run", "-L", "cc", "gcc,,clang", "{cc}"], &["empty value"]),
            (
                &["run", "-N", "dyno-no-such-program --flag"],
                &["'dyno-no-such-program' was not found"],
            ),
            (&["run", "-N", "echo 'unterminated"], &["cannot split"]),
            (
                &["run", "--cwd", "/nonexistent-dir", "true"],
                &["not a directory"],
            ),
            (
                &["run", "--input", "/nonexistent-file", "true"],
                &["--input", "/nonexistent-file"],
            ),
            (&["run", "--env", "NOEQUALS", "true"], &["NAME=VALUE"]),
            (&["run", "--runs", "0", "true"], &["from 1"]),
            (&["run", "--min-runs", "1", "true"], &["from 2"]),
            (
                &["run", "--min-runs", "20", "--max-runs", "10", "true"],
                &["--max-runs"],
            ),
            (
                &["run", "--output", "/nonexistent-dir/out.txt", "true"],
                &["does not exist"],
            ),
            (
                &["run", "--check-output", "--output", "inherit", "true"],
                &["--check-output"],
            ),
            (
                &["run", "--reference", "3", "true", "false"],
                &["numbered from 1"],
            ),
            (
                &["run", "--reference", "nope", "true"],
                &["names no benchmark"],
            ),
            (&["run", "--step", "2", "true"], &["there are none"]),
            (&["run", "--timeout", "soon", "true"], &["10s"]),
            // Defect 11: a zero timeout killed the shell before it started.
            (
                &["run", "--timeout", "0", "true"],
                &["'0' is zero", "above zero"],
            ),
            (&["run", "--timeout", "0ms", "true"], &["above zero"]),
            (&["run", "--max-time", "0s", "true"], &["above zero"]),
            (&["run", "--timeout=-1s", "true"], &["negative"]),
            // Defect 30: mistakes that would time one thing twice.
            (
                &["run", "-P", "n", "1", "2", "echo hi"],
                &["parameter 'n' is not used", "{n}"],
            ),
            (&["run", "-L", "w", "a,a", "echo {w}"], &["'a' twice"]),
            (&["run", "true", ""], &["command 2 is empty"]),
            (&["run", "-N", "  "], &["command 1 is empty"]),
            // Defect 5: the same --name twice.
            (
                &["run", "-n", "same", "-n", "same", "true", "sleep 0"],
                &["two commands are named \"same\""],
            ),
            (
                &["run", "-N", "--shell", "bash", "true"],
                &["cannot be used with"],
            ),
        ],
    );
}

#[test]
fn a_failing_command_exits_1_unless_failures_are_ignored() {
    let home = temp();
    let out = dyno(home.path())
        .args(["run", "--runs", "2", "--no-save", "exit 3"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("exited with code 3") && stderr.contains("--ignore-failure"),
        "{stderr}"
    );
    let stderr = String::from_utf8_lossy(
        &dyno(home.path())
            .args(["run", "--runs", "2", "--no-save", "dyno-no-such-program"])
            .assert()
            .code(1)
            .get_output()
            .stderr,
    )
    .into_owned();
    assert!(stderr.contains("could not find the command"), "{stderr}");

    let (run, _) = run_json(home.path(), &["--runs", "3", "-i", "exit 3"], 0);
    let failed = labelled(&run, "failed_runs")[0].1;
    assert_eq!(failed["value"], 3.0);
    assert_eq!(failed["samples"], serde_json::json!([3.0, 3.0, 3.0]));
    assert!(warning_codes(&run).contains(&"failed_runs"));
}

#[test]
fn a_hanging_command_is_killed_with_its_children_at_the_timeout() {
    let home = temp();
    let marker = home.path().join("grandchild-survived");
    let script = format!("(sleep 1; touch '{}') & sleep 30", marker.display());
    let started = Instant::now();
    let out = dyno(home.path())
        .args([
            "run",
            "--runs",
            "1",
            "--no-save",
            "--timeout",
            "300ms",
            &script,
        ])
        .assert()
        .code(1)
        .get_output()
        .clone();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("timeout"), "{stderr}");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        !marker.exists(),
        "a child of the timed-out command kept running"
    );
}

#[test]
fn check_output_names_the_commands_that_differ() {
    let home = temp();
    let same = [
        "-N",
        "--runs",
        "2",
        "--check-output",
        "echo same",
        "printf 'same\\n'",
    ];
    let (run, stderr) = run_json(home.path(), &[&same[..], &["echo other"]].concat(), 1);
    assert!(stderr.contains("outputs differ"), "{stderr}");
    assert!(
        stderr.contains("'echo other'") && stderr.contains("\"other\""),
        "{stderr}"
    );
    assert!(warning_codes(&run).contains(&"output_mismatch"));
    run_json(home.path(), &same, 0);
}

#[test]
fn exports_use_hyperfines_layouts() {
    let home = temp();
    let dir = home.path();
    let json = dir.join("hf.json");
    let csv = dir.join("hf.csv");
    let md = dir.join("hf.md");
    ok(
        dir,
        &[
            &words("run -N --runs 3 --no-save -L t 0.01,0.02")[..],
            &["sleep {t}"],
            &words(&format!(
                "--export-hyperfine-json {} --export-csv {} --export-markdown {}",
                json.display(),
                csv.display(),
                md.display()
            )),
        ]
        .concat(),
    );
    let exported: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let schema: Value =
        serde_json::from_str(include_str!("../hyperfine-export.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&exported)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}\n{exported:#}");
    let results = exported["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["command"], "sleep 0.01");
    assert_eq!(results[0]["parameters"]["t"], "0.01");
    assert_eq!(results[0]["times"].as_array().unwrap().len(), 3);
    assert_eq!(results[0]["exit_codes"], serde_json::json!([0, 0, 0]));
    let mean = results[1]["mean"].as_f64().unwrap();
    assert!((0.02..0.5).contains(&mean), "seconds, not ns: {mean}");

    let csv = std::fs::read_to_string(&csv).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("command,mean,stddev,median,user,system,min,max,parameter_t")
    );
    assert!(lines.next().unwrap().starts_with("sleep 0.01,0.0"));
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.starts_with("| Command | Mean [ms] |"), "{md}");
    assert!(md.contains("| `sleep 0.02` |"), "{md}");
}

#[test]
fn ctrl_c_kills_the_command_and_keeps_the_partial_run() {
    let home = temp();
    let run = interrupted_run(
        home.path(),
        &["run", "-N", "--runs", "1000", "--json", "sleep 0.2"],
        Duration::from_millis(1500),
        libc::SIGINT,
    );
    let runs = run["settings"]["benchmarks"][0]["runs"].as_u64().unwrap();
    assert!((1..1000).contains(&runs), "{runs}");
    assert_eq!(
        run["settings"]["benchmarks"][0]["stopped_by"],
        "interrupted"
    );
    let history = ok(home.path(), &["history", "--kind", "exec"]);
    assert!(
        history.contains("sleep 0.2"),
        "the partial run was saved: {history}"
    );
}

#[test]
fn sigterm_kills_the_command_with_its_children_and_keeps_the_partial_run() {
    let home = temp();
    let marker = home.path().join("grandchild-survived");
    // The first run ends at once; the second hangs with a child that would
    // leave a mark two seconds after dyno is gone, if it were orphaned.
    let script = format!(
        "if [ -e '{done}' ]; then (sleep 2; touch '{marker}') & sleep 30; else touch '{done}'; fi",
        done = home.path().join("first-run-done").display(),
        marker = marker.display()
    );
    let run = interrupted_run(
        home.path(),
        &["run", "--runs", "5", "--json", &script],
        Duration::from_millis(1500),
        libc::SIGTERM,
    );
    assert_eq!(run["settings"]["benchmarks"][0]["runs"].as_u64(), Some(1));
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        !marker.exists(),
        "a child of the interrupted command kept running"
    );
}

#[test]
fn three_runs_each_are_too_few_to_test_not_no_difference() {
    // Defect 3: 'sleep 0.3' is 20× 'sleep 0.01', but Mann–Whitney with 3
    // against 3 cannot go below p = 0.1; the verdict used to be "no
    // significant difference".
    let home = temp();
    let args = ["-N", "--runs", "3", "sleep 0.01", "sleep 0.3"];
    let (run, _) = run_json(home.path(), &args, 0);
    let verdict = labelled(&run, "verdict");
    assert_eq!(verdict.len(), 1);
    assert_eq!(verdict[0].0, "sleep 0.3");
    assert_eq!(verdict[0].1["value"], 0.0);
    assert_eq!(verdict[0].1["labels"]["verdict"], "too_few_runs");
    assert!(warning_codes(&run).contains(&"too_few_runs"));
    // Defect 13: the interval of three runs is Student t, and says so.
    let wall = labelled(&run, "wall_ns")[0].1;
    assert_eq!(wall["uncertainty"]["method"], "student_t");
    let samples: Vec<f64> = wall["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let min = samples.iter().copied().fold(f64::INFINITY, f64::min);
    let max = samples.iter().copied().fold(0.0, f64::max);
    let (low, high) = (
        wall["uncertainty"]["low"].as_f64().unwrap(),
        wall["uncertainty"]["high"].as_f64().unwrap(),
    );
    assert!(low < min && high > max, "[{low}, {high}] vs [{min}, {max}]");

    let out = ok(home.path(), &[&["run", "--no-save"], &args[..]].concat());
    assert!(
        out.contains("too few runs to test (need ≥ 4 per command)"),
        "{out}"
    );
    assert!(!out.contains("no significant difference"), "{out}");
    assert!(out.contains("(Student t)"), "{out}");
    // Four runs each can be called.
    let (run, _) = run_json(
        home.path(),
        &["-N", "--runs", "4", "sleep 0.01", "sleep 0.3"],
        0,
    );
    let verdict = labelled(&run, "verdict");
    assert_eq!(verdict[0].1["value"], -1.0);
    assert_eq!(verdict[0].1["labels"]["verdict"], "slower");
}

#[test]
fn the_same_command_twice_gives_two_benchmarks_told_apart() {
    // Defect 5: an A/A test, and a busy loop named apart from a sleep.
    let home = temp();
    let busy = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done";
    let (run, _) = run_json(
        home.path(),
        &["--runs", "4", "sleep 0.02", busy, "sleep 0.02"],
        0,
    );
    let walls: Vec<&str> = labelled(&run, "wall_ns").iter().map(|w| w.0).collect();
    assert_eq!(walls, ["sleep 0.02", busy, "sleep 0.02 (2)"]);
    let users = labelled(&run, "user_ns");
    assert_eq!(users.len(), 3);
    let user = |name: &str| {
        users.iter().find(|u| u.0 == name).unwrap().1["value"]
            .as_f64()
            .unwrap()
    };
    assert!(user(busy) > user("sleep 0.02") && user(busy) > user("sleep 0.02 (2)"));
    // One comparison line per other benchmark, each with its own name.
    let ratios: Vec<&str> = labelled(&run, "ratio_to_reference")
        .iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(ratios.len(), 2);
    assert_ne!(ratios[0], ratios[1]);
    let plan: Vec<&str> = run["settings"]["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(plan, walls);
    // Defect 37: one peak_rss_floor warning for all the commands.
    let codes = warning_codes(&run);
    assert!(
        codes.iter().filter(|c| **c == "peak_rss_floor").count() <= 1,
        "{codes:?}"
    );
}

#[test]
fn cpu_percent_is_not_inflated_by_the_shell_subtraction() {
    // Defect 8: `echo hi` under sh printed 1338% CPU: its wall time, after
    // the shell's start-up is subtracted, is near zero.
    let home = temp();
    let (run, _) = run_json(home.path(), &["--runs", "5", "echo hi", "sleep 0.05"], 0);
    let cpu = labelled(&run, "cpu_percent");
    for (name, m) in &cpu {
        let v = m["value"].as_f64().unwrap();
        assert!(
            v <= 200.0,
            "'{name}': {v}% CPU for a single-threaded command"
        );
    }
    let sleep = cpu
        .iter()
        .find(|c| c.0 == "sleep 0.05")
        .expect("sleep has a CPU%");
    assert!(sleep.1["value"].as_f64().unwrap() < 100.0);
}

#[test]
fn the_cleanup_runs_after_an_interrupt_and_unrun_commands_are_named() {
    // Defect 12: --cleanup after Ctrl-C. Defect 37: the second command,
    // never reached with --no-interleave, is named, not dropped.
    let home = temp();
    let marker = home.path().join("cleaned");
    let cleanup = format!("touch '{}'", marker.display());
    let run = interrupted_run(
        home.path(),
        &[
            "run",
            "--no-save",
            "--no-interleave",
            "--runs",
            "1000",
            "--json",
            "--cleanup",
            &cleanup,
            "sleep 0.2",
            "sleep 0.01",
        ],
        Duration::from_millis(1500),
        libc::SIGINT,
    );
    assert!(marker.exists(), "--cleanup did not run after the interrupt");
    let codes = warning_codes(&run);
    assert!(codes.contains(&"not_run"), "{codes:?}");
    assert!(!codes.contains(&"cleanup_failed"), "{codes:?}");
    let text = run["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "not_run")
        .unwrap()["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text.starts_with("'sleep 0.01' finished no timed run"),
        "{text}"
    );
}

#[test]
fn exports_replace_an_existing_file_and_say_so() {
    // Defect 24: the --export-* flags replace an existing file as
    // hyperfine's do (the documented rule), but not silently.
    let home = temp();
    let csv = home.path().join("out.csv");
    std::fs::write(
        &csv,
        "old contents that are much longer than the new export\n".repeat(100),
    )
    .unwrap();
    let out = dyno(home.path())
        .args(["run", "-N", "--runs", "2", "--no-save", "true"])
        .arg("--export-csv")
        .arg(&csv)
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("replaced the existing"), "{stderr}");
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text.starts_with("command,mean"), "{text}");
    assert!(!text.contains("old contents"), "{text}");
    // A new file is written without a note.
    let fresh = home.path().join("new.csv");
    let out = dyno(home.path())
        .args(["run", "-N", "--runs", "2", "--no-save", "true"])
        .arg("--export-csv")
        .arg(&fresh)
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("replaced"));
}

#[test]
fn interleaving_very_different_lengths_is_warned() {
    let home = temp();
    // `true` takes about a millisecond (a few on a loaded machine): far
    // more than 10× below 0.4 s either way.
    let (run, _) = run_json(home.path(), &["-N", "--runs", "4", "true", "sleep 0.4"], 0);
    assert!(warning_codes(&run).contains(&"interleaved_lengths"));
    let (run, _) = run_json(
        home.path(),
        &["-N", "--runs", "4", "--no-interleave", "true", "sleep 0.4"],
        0,
    );
    assert!(!warning_codes(&run).contains(&"interleaved_lengths"));
}

/// `dyno run --watch-pid` of a process that spins beside the timed
/// command: its CPU per timed run and its share of a core; the verdict
/// names it CPU-bound (it wants a whole core, running or waiting for one,
/// whatever else the machine runs); the report prints its line.
#[test]
fn run_watches_a_spinning_process() {
    let home = temp();
    let mut spin = StdCommand::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    let pid = spin.id().to_string();
    // Its CPU time as /proc counts it, in ns: what the watcher may
    // attribute at most.
    let cpu_ns = || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .collect();
        let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
        // SAFETY: sysconf has no preconditions.
        ticks * 1e9 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
    };
    let before = cpu_ns();
    let (run, _) = json_run(
        home.path(),
        &[
            "run",
            "--runs",
            "3",
            "sleep 0.2",
            "--watch-pid",
            &pid,
            "--watch-interval",
            "50ms",
        ],
        0,
    );
    let used = cpu_ns() - before;
    let _ = spin.kill();
    let _ = spin.wait();
    let watched = |name: &str| {
        metrics(&run)
            .find(|m| m["name"] == name && m["labels"]["watched"] == "sh")
            .unwrap_or_else(|| panic!("no {name}: {}", run["metrics"]))["value"]
            .as_f64()
            .unwrap()
    };
    // About a timed run's length of CPU per run when it has a core to
    // itself (a run of `sleep 0.2` took 0.26 s on a busy machine), less
    // beside other work (beside a CPU hog it got 0.02 s): some, at most a
    // core over a run and a watch interval, and never more than /proc
    // says it used over the whole command (a tick of slack a run).
    let per_run = watched("server_cpu_per_op_ns");
    let wall = metric(&run, "wall_ns").expect("the runs' wall time");
    assert!(
        per_run > 0.0 && per_run <= wall + 50e6,
        "{per_run} ns per run of {wall} ns"
    );
    assert!(
        per_run * 3.0 <= used + 3.0 * 10e6,
        "{per_run} ns per run, {used} ns used in all"
    );
    assert!(watched("server_cpu_percent") > 0.0);
    let bound = run["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "server_cpu_bound")
        .unwrap_or_else(|| panic!("no verdict: {}", run["warnings"]));
    assert!(
        bound["message"]
            .as_str()
            .unwrap()
            .contains(&format!("sh (pid {pid})")),
        "{bound}"
    );
    let shown = ok(home.path(), &["show", run["id"].as_str().unwrap()]);
    assert!(
        shown.contains("Server CPU  sh: ") && shown.contains("per run"),
        "{shown}"
    );
}
