//! `dyno disk`: real runs on real files through the binary, read back from
//! the store; every refusal; the tmpfs fallback; Ctrl-C; a full disk.

use crate::common::tmpfs::Tmpfs;
use crate::common::*;

/// Short passes on a small file: the flags every test here shares.
const SMALL: [&str; 12] = [
    "--size",
    "8m",
    "--runs",
    "2",
    "-d",
    "100ms",
    "--interval",
    "0",
    "--warmup",
    "20ms",
    "--seed",
    "9",
];

/// `dyno disk DIR SMALL… extra… --json`, expecting success.
fn disk_json(home: &Path, dir: &Path, extra: &[&str]) -> (Value, String) {
    let mut args = vec!["disk", dir.to_str().unwrap()];
    args.extend(SMALL);
    args.extend(extra);
    let (run, stderr) = json_run(home, &args, 0);
    assert_eq!(run["kind"], "disk");
    (run, stderr)
}

/// The metric `name` of test `test` and operation `op`.
fn labelled<'a>(run: &'a Value, name: &str, test: &str, op: &str) -> &'a Value {
    metrics(run)
        .find(|m| m["name"] == name && m["labels"]["test"] == test && m["labels"]["op"] == op)
        .unwrap_or_else(|| panic!("no {name} for {test} {op}; warnings: {}", run["warnings"]))
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn disk_runs_the_real_profile_saves_every_pass_and_removes_its_file() {
    let home = temp();
    let dir = temp();
    let (run, _) = disk_json(home.path(), dir.path(), &["--profile", "real"]);
    assert_eq!(
        entries(dir.path()),
        Vec::<String>::new(),
        "the test file is gone"
    );
    assert_eq!(
        run["settings"]["tests"],
        serde_json::json!(["SEQ1M Q1T1", "RND4K Q1T1"])
    );
    assert_eq!(run["settings"]["seed"], 9);
    assert_eq!(run["settings"]["size_bytes"], 8 << 20);
    for test in ["SEQ1M Q1T1", "RND4K Q1T1"] {
        let block = if test.starts_with("SEQ") {
            1 << 20
        } else {
            4096
        };
        for op in ["read", "write"] {
            let t = labelled(&run, "throughput_bytes_per_sec", test, op);
            let samples: Vec<f64> = t["samples"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            assert_eq!(samples.len(), 2, "every timed pass, not the warm-up");
            let best = samples.iter().copied().fold(0.0, f64::max);
            assert_eq!(t["value"].as_f64().unwrap(), best, "the best pass");
            let iops = labelled(&run, "iops", test, op)["value"].as_f64().unwrap();
            // One block size: bytes/s = IOPS × block, for the same pass.
            assert!((best / iops - f64::from(block)).abs() < 1e-6 * best);
            let latency = labelled(&run, "latency_ns", test, op);
            assert!(latency["histogram"]["count"].as_u64().unwrap() > 0);
        }
    }
    let storage = &run["environment"]["storage"];
    assert!(storage["filesystem"].is_string(), "{storage}");
    assert_eq!(storage["path"], dir.path().to_str().unwrap());

    // Saved: the store gives the same record back.
    let id = run["id"].as_str().unwrap();
    let out = dyno(home.path())
        .args(["show", id, "--json"])
        .assert()
        .success();
    let stored: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(stored, run);
    let shown = ok(home.path(), &["show", id]);
    assert!(shown.contains("RND4K Q1T1"), "{shown}");
}

#[test]
fn disk_table_shows_reads_and_writes_side_by_side() {
    let home = temp();
    let dir = temp();
    let mut args = vec!["disk", dir.path().to_str().unwrap()];
    args.extend(SMALL);
    args.extend(["--test", "rnd:4k:q4:t2", "--mix", "70", "--no-save"]);
    let text = ok(home.path(), &args);
    assert_contains_all(
        &text,
        &[
            "Test ",
            "Read MB/s",
            "Write MB/s",
            "Mix70 MB/s",
            "RND4K Q4T2",
            "best pass shown",
            "Every pass (MB/s, * best):",
            "RND4K Q4T2 mix70:",
            "seed 9",
        ],
    );
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn disk_warns_when_its_io_threads_outnumber_the_cpus() {
    let home = temp();
    let dir = temp();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let over = format!("rnd:4k:q1:t{}", cpus + 1);
    let fits = "seq:1m:q1:t1";
    let (run, _) = disk_json(
        home.path(),
        dir.path(),
        &["--test", &over, "--test", fits, "--no-save"],
    );
    let message = warning(&run, "oversubscribed").expect("more threads than CPUs is said");
    let name = format!("RND4K Q1T{}", cpus + 1);
    assert!(message.contains(&name), "{message}");
    assert!(!message.contains("SEQ1M"), "{message}");
    assert!(message.contains(&format!("{cpus} CPU")), "{message}");

    // The thread pool issues from a thread per I/O in flight: one worker
    // at a queue depth above the CPUs oversubscribes them too.
    let deep = format!("rnd:4k:q{}:t1", cpus + 1);
    let (run, _) = disk_json(
        home.path(),
        dir.path(),
        &["--test", &deep, "--engine", "threads", "--no-save"],
    );
    assert!(has_warning(&run, "oversubscribed"), "{}", run["warnings"]);
    let (run, _) = disk_json(home.path(), dir.path(), &["--test", fits, "--no-save"]);
    assert!(!has_warning(&run, "oversubscribed"), "{}", run["warnings"]);
}

#[test]
fn disk_sync_and_meta_presets() {
    let home = temp();
    let dir = temp();
    let (run, _) = disk_json(home.path(), dir.path(), &["--preset", "sync"]);
    for test in ["fdatasync 8K", "fsync 8K", "O_DSYNC 8K"] {
        let ops = labelled(&run, "iops", test, "write")["value"]
            .as_f64()
            .unwrap();
        assert!(ops > 0.0, "{test}");
        let latency = labelled(&run, "latency_ns", test, "write");
        assert!(latency["value"].as_f64().unwrap() > 0.0);
    }
    assert_eq!(
        run["settings"]["size_bytes"],
        8 << 20,
        "--size still applies"
    );

    let (run, _) = disk_json(
        home.path(),
        dir.path(),
        &["--preset", "meta", "--files", "300"],
    );
    for op in ["create", "stat", "unlink"] {
        let rate = labelled(&run, "files_per_sec", "files", op);
        assert_eq!(rate["samples"].as_array().unwrap().len(), 2);
    }
    assert_eq!(run["settings"]["files"], 300);
    assert!(entries(dir.path()).is_empty(), "no file or directory left");
}

#[test]
fn disk_refuses_what_it_must_not_overwrite_and_bad_flags() {
    let home = temp();
    let h = home.path();
    let dir = temp();
    let precious = dir.path().join("precious");
    std::fs::write(&precious, b"keep me").unwrap();
    let precious_s = precious.to_str().unwrap();
    let blockdev = dir.path().join("blockdev");
    // A block device node with no driver behind it: safe to name.
    let made = StdCommand::new("mknod")
        .arg(&blockdev)
        .args(["b", "7", "250"])
        .status()
        .is_ok_and(|s| s.success());
    let existing = ["disk", precious_s];
    let meta_on_file = ["disk", precious_s, "--preset", "meta"];
    let cases: Vec<(&[&str], &str)> = vec![
        (&existing, "did not create"),
        (&["disk", "--test", "zig:4k"], "unknown pattern"),
        (&["disk", "--test", "seq:1000"], "multiple of 512"),
        (&["disk", "--mix", "0"], "from 1 to 99"),
        (&["disk", "--mix", "100"], "from 1 to 99"),
        (&["disk", "--size", "10k"], "below 1m"),
        (&["disk", "--size", "lots"], "no number"),
        (&["disk", "--runs", "0"], "from 1 to 100"),
        (&["disk", "-d", "1ms"], "too short"),
        (&["disk", "--preset", "cdm9"], "cdm8, nvme"),
        (
            &["disk", "--preset", "sync", "--test", "seq:1m"],
            "--test applies to block tests",
        ),
        (
            &["disk", "--preset", "meta", "--mix", "70"],
            "--mix applies to block tests",
        ),
        (
            &["disk", "--test", "rnd:4k:q32", "--profile", "real"],
            "leaves none",
        ),
        (
            &["disk", "--test", "seq:1m:t16", "--size", "8m"],
            "raise --size",
        ),
        // Defect 21: 8 I/Os of 1 MiB in flight need 8 MiB, not 1.
        (&["disk", "--size", "1m"], "raise --size to 8m"),
        (
            &["disk", "--test", "rnd:64k:q16:t2", "--size", "1m"],
            "at least 2.00 MiB",
        ),
        (&["disk", "--device"], "needs --force"),
        (
            &["disk", "/nonexistent-dir/x", "--size", "8m"],
            "does not exist",
        ),
        (&meta_on_file, "not one"),
    ];
    let cases: Vec<(&[&str], &[&str])> = cases
        .iter()
        .map(|(args, needle)| (*args, std::slice::from_ref(needle)))
        .collect();
    assert_refused(h, &cases);
    assert_eq!(std::fs::read(&precious).unwrap(), b"keep me", "untouched");
    if made {
        let err = fails(h, &["disk", blockdev.to_str().unwrap()]);
        assert!(
            err.contains("block device") && err.contains("--device --force"),
            "{err}"
        );
        let err = fails(h, &["disk", blockdev.to_str().unwrap(), "--force"]);
        assert!(
            err.contains("--device --force"),
            "--force alone is not enough: {err}"
        );
    } else {
        eprintln!("SKIPPED the block-device refusal: mknod is not permitted here");
    }
}

#[test]
fn disk_on_tmpfs_falls_back_to_buffered_io_and_says_so() {
    let Some(fs) = Tmpfs::mount("200m", false) else {
        return;
    };
    let home = temp();
    let (run, _) = disk_json(home.path(), fs.path(), &["--profile", "real"]);
    assert_eq!(run["settings"]["direct_io"], false);
    assert!(
        run["settings"]["buffered_reason"]
            .as_str()
            .unwrap()
            .contains("tmpfs"),
        "{}",
        run["settings"]
    );
    assert_eq!(run["environment"]["storage"]["filesystem"], "tmpfs");
    assert_eq!(run["environment"]["storage"]["direct_io"], false);
    assert!(has_warning(&run, "buffered_io"));
    assert!(fs.entries().is_empty());
}

#[test]
fn disk_refuses_a_file_system_too_small_and_leaves_nothing() {
    let Some(fs) = Tmpfs::mount("32m", false) else {
        return;
    };
    let home = temp();
    let err = fails(
        home.path(),
        &[
            "disk",
            fs.path().to_str().unwrap(),
            "--size",
            "4m",
            "--test",
            "rnd:4k",
        ],
    );
    assert!(
        err.contains("not enough free space") && err.contains("68.00 MiB"),
        "{err}"
    );
    assert!(fs.entries().is_empty());
}

#[test]
fn disk_sigterm_removes_the_file_and_keeps_the_passes_done() {
    let home = temp();
    let dir = temp();
    // Two passes with a minute between them: SIGTERM (what `timeout` and
    // CI send) lands in the pause.
    let run = interrupted_run(
        home.path(),
        &[
            "disk",
            dir.path().to_str().unwrap(),
            "--test",
            "rnd:4k:q2",
            "--size",
            "8m",
            "--runs",
            "2",
            "-d",
            "200ms",
            "--interval",
            "60s",
            "--warmup",
            "0",
            "--json",
        ],
        Duration::from_secs(3),
        libc::SIGTERM,
    );
    assert!(entries(dir.path()).is_empty(), "the test file is removed");
    let t = labelled(&run, "throughput_bytes_per_sec", "RND4K Q2T1", "read");
    assert_eq!(t["samples"].as_array().unwrap().len(), 1, "the pass done");
    let id = run["id"].as_str().unwrap();
    ok(home.path(), &["show", id]);
}

#[test]
fn quick_gains_a_disk_line_and_skips_it_where_the_file_cannot_go() {
    let home = temp();
    let dir = temp();
    let mut args: Vec<&str> = SMALL_QUICK[..SMALL_QUICK.len() - 2].to_vec();
    args.extend(["--disk-duration", "100ms"]);
    let out = dyno(home.path())
        .current_dir(dir.path())
        .args(&args)
        .arg("--json")
        .assert()
        .success()
        .get_output()
        .clone();
    let run = stdout_json(&out);
    assert_valid(&run, None);
    for test in ["SEQ1M Q8T1", "RND4K Q1T1"] {
        for op in ["read", "write"] {
            // The engine's name, of the part `disk`.
            let t = labelled(&run, "throughput_bytes_per_sec", test, op);
            assert_eq!(t["labels"]["part"], "disk", "{t}");
            assert!(t["value"].as_f64().unwrap() > 0.0, "{test} {op}");
        }
    }
    assert_eq!(run["settings"]["disk"]["size_bytes"], 64 << 20);
    assert!(entries(dir.path()).is_empty(), "the quick file is removed");
    let id = run["id"].as_str().unwrap();
    let table = ok(home.path(), &["show", id]);
    assert!(table.contains("RND4K Q1T1"), "{table}");

    // Where 64 MiB do not fit, the rest of quick still runs.
    let Some(fs) = Tmpfs::mount("16m", false) else {
        return;
    };
    let out = dyno(home.path())
        .current_dir(fs.path())
        .args(&args)
        .args(["--json", "--no-save"])
        .assert()
        .success()
        .get_output()
        .clone();
    let run = stdout_json(&out);
    assert!(has_warning(&run, "disk_line_skipped"));
    assert!(metrics(&run).any(|m| m["name"] == "int64_1t_ns"));
    assert!(fs.entries().is_empty());
}

/// Defect 10: `--engine auto` chooses from what the file system does well:
/// the thread pool for buffered I/O on tmpfs (io_uring was ~50× slower
/// there), io_uring with direct I/O; the run records and prints why.
#[test]
fn disk_auto_engine_is_threads_on_tmpfs_and_says_why() {
    let Some(fs) = Tmpfs::mount("200m", false) else {
        return;
    };
    let home = temp();
    let (run, _) = disk_json(home.path(), fs.path(), &["--test", "rnd:4k:q1:t1"]);
    assert_eq!(run["settings"]["direct_io"], false);
    assert_eq!(run["settings"]["engine"], "threads", "{}", run["settings"]);
    let why = run["settings"]["engine_reason"].as_str().unwrap();
    assert!(why.contains("auto") && why.contains("buffered"), "{why}");
    assert!(
        !has_warning(&run, "thread_engine"),
        "the pool is the right engine here, not a fallback"
    );
    let shown = ok(home.path(), &["show", run["id"].as_str().unwrap()]);
    assert!(
        shown.contains("threads engine (auto: buffered I/O"),
        "{shown}"
    );
    let dir = temp();
    let (run, _) = disk_json(home.path(), dir.path(), &["--test", "rnd:4k:q1:t1"]);
    if run["settings"]["direct_io"] == true {
        let why = run["settings"]["engine_reason"].as_str().unwrap();
        assert!(why.contains("auto"), "{why}");
        if run["settings"]["engine"] == "io_uring" {
            assert!(why.contains("direct I/O"), "{why}");
            // Asking for io_uring on buffered I/O is allowed, and warned.
            let (run, _) = disk_json(
                home.path(),
                fs.path(),
                &["--test", "rnd:4k:q1:t1", "--engine", "io_uring"],
            );
            assert_eq!(run["settings"]["engine"], "io_uring");
            assert!(has_warning(&run, "uring_buffered"));
        }
    }
}

/// Defect 20: with --test the header, description and history name the
/// tests run, not the preset they replaced.
#[test]
fn disk_custom_tests_are_named_instead_of_the_preset() {
    let home = temp();
    let dir = temp();
    let (run, _) = disk_json(
        home.path(),
        dir.path(),
        &["--test", "rnd:4k:q1:t1", "--test", "seq:64k:q2:t1"],
    );
    let description = run["description"].as_str().unwrap();
    assert!(
        description.starts_with("disk RND4K Q1T1, SEQ64K Q2T1: 8.00 MiB"),
        "{description}"
    );
    assert_eq!(run["settings"]["preset"], "custom");
    let id = run["id"].as_str().unwrap();
    let shown = ok(home.path(), &["show", id]);
    assert!(
        shown.contains("dyno disk — disk RND4K Q1T1, SEQ64K Q2T1"),
        "{shown}"
    );
    let history = ok(home.path(), &["history"]);
    assert!(
        history.contains("RND4K Q1T1") && !history.contains("cdm8"),
        "{history}"
    );
}

/// Defect 21: a file under 1 GiB is within reach of device and host
/// caches, and the run says so.
#[test]
fn disk_warns_that_a_small_file_fits_in_caches() {
    let home = temp();
    let dir = temp();
    let (run, _) = disk_json(home.path(), dir.path(), &["--test", "rnd:4k:q1:t1"]);
    assert!(has_warning(&run, "small_file"));
    let text = run["warnings"].to_string();
    assert!(text.contains("8.00 MiB test file is under 1 GiB"), "{text}");
}

/// Defect 23: the cause of a failed create is printed once, and /proc
/// (which exists, but takes no files) is not called missing.
#[test]
fn disk_create_errors_name_the_cause_once() {
    let home = temp();
    let err = fails(home.path(), &["disk", "/proc", "--size", "8m"]);
    assert!(
        err.contains("does not allow new files") && !err.contains("does not exist"),
        "{err}"
    );
    assert_eq!(err.matches("os error").count(), 1, "{err}");
    let Some(fs) = Tmpfs::mount("100m", true) else {
        return;
    };
    let err = fails(
        home.path(),
        &["disk", fs.path().to_str().unwrap(), "--size", "8m"],
    );
    assert!(err.contains("read-only"), "{err}");
    assert_eq!(err.matches("os error 30").count(), 1, "{err}");
}

/// `--watch-pid` around a disk run: the watched process over the whole
/// table, what watching cost, and a verdict; no figure per operation, since
/// a table's tests differ too much for one.
#[test]
fn disk_watches_a_process_over_the_table() {
    let (home, dir) = (temp(), temp());
    let pid = std::process::id().to_string();
    let (run, _) = disk_json(
        home.path(),
        dir.path(),
        &[
            "--test",
            "seq:1m:q1:t1",
            "--watch-pid",
            &pid,
            "--watch-interval",
            "50ms",
        ],
    );
    let names: Vec<&str> = metrics(&run).filter_map(|m| m["name"].as_str()).collect();
    for name in [
        "server_cpu_percent",
        "server_memory_peak",
        "watch_client_cpu_ns",
    ] {
        assert!(names.contains(&name), "no {name}: {names:?}");
    }
    assert!(!names.contains(&"server_cpu_per_op_ns"), "{names:?}");
    assert!(
        has_warning(&run, "server_cpu_bound") || has_warning(&run, "nothing_saturated"),
        "{}",
        run["warnings"]
    );
}
