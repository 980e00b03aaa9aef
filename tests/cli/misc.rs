//! Value parsers shared by subcommands, `serve --addr`, `man --dir`, and
//! `quick`'s warnings: what a newcomer types, through the real binary.

use crate::common::*;

/// Defect 22: negative sizes and durations reach dyno's own parsers (not
/// clap's "unexpected argument"), decimals are sizes, MB is 10^6 bytes.
#[test]
fn negative_sizes_and_durations_say_they_must_be_positive() {
    let home = temp();
    let cases: Vec<(&[&str], &[&str])> = vec![
        (&["disk", "--size", "-5"], &["must be positive", "--size"]),
        (&["disk", "-d", "-1s"], &["must be positive"]),
        (&["disk", "--warmup", "-1s"], &["must be positive"]),
        (&["disk", "--interval", "-2"], &["must be positive"]),
        (&["disk", "--runs", "-1"], &["from 1 to 100"]),
        (&["disk", "--size", "0.5m"], &["below 1m"]),
        (&["disk", "--size", "1.5.5m"], &["no number"]),
        (
            &["http", "-d", "-1s", "http://127.0.0.1:9/"],
            &["must be positive"],
        ),
        (
            &["http", "--warmup", "-1s", "http://127.0.0.1:9/"],
            &["must be positive"],
        ),
        (&["run", "--max-time", "-1s", "true"], &["must be positive"]),
        (&["quick", "--http-duration", "-1s"], &["must be positive"]),
    ];
    for (args, wanted) in &cases {
        let err = fails(home.path(), args);
        assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
        for w in *wanted {
            assert!(err.contains(w), "{args:?}: no {w:?} in {err}");
        }
    }
}

/// Defect 22: `--size 1.5m` is 1.5 MiB and `--size 10MB` is 10^7 bytes
/// (rounded down to whole 4 KiB), recorded as such.
#[test]
fn disk_sizes_take_decimals_and_si_units() {
    let home = temp();
    let dir = temp();
    let common = [
        "--runs",
        "1",
        "-d",
        "20ms",
        "--interval",
        "0",
        "--warmup",
        "0",
        "--test",
        "rnd:4k",
    ];
    for (size, bytes) in [("1.5m", 1_572_864u64), ("10MB", 9_998_336)] {
        let mut args = vec!["disk", dir.path().to_str().unwrap(), "--size", size];
        args.extend(common);
        let (run, _) = json_run(home.path(), &args, 0);
        assert_eq!(run["settings"]["size_bytes"], bytes, "{size}");
    }
}

/// Defect 25: `serve --addr localhost:0` resolves the host name and
/// serves; an address without a port says IP:PORT with an example.
#[test]
fn serve_resolves_host_names_and_names_a_missing_port() {
    let home = temp();
    for addr in ["127.0.0.1", "localhost", "::1", "[::1]"] {
        let err = fails(home.path(), &["serve", "--addr", addr]);
        assert!(
            err.contains("has no port") && err.contains("127.0.0.1:8080"),
            "{addr}: {err}"
        );
    }
    let err = fails(home.path(), &["serve", "--addr", "no-such-host.invalid:80"]);
    assert!(err.contains("cannot resolve"), "{err}");

    let (mut child, addr) = spawn_serve("localhost:0", 1);
    let ip: std::net::SocketAddr = addr.parse().unwrap();
    assert!(ip.ip().is_loopback(), "{addr}");
    if ip.is_ipv4() {
        assert_eq!(get(&addr, "/hello").0, 200);
    }
    stop_server(&mut child);
}

/// Defect 26: `man --dir` creates only the last folder; a missing parent
/// is refused and nothing is created.
#[test]
fn man_dir_creates_only_the_last_folder() {
    let home = temp();
    let root = temp();
    let deep = root.path().join("missing/man1");
    let err = fails(home.path(), &["man", "--dir", deep.to_str().unwrap()]);
    assert!(
        err.contains("does not exist") && err.contains("missing"),
        "{err}"
    );
    assert!(!root.path().join("missing").exists(), "nothing created");
    let one = root.path().join("man1");
    ok(home.path(), &["man", "--dir", one.to_str().unwrap()]);
    assert!(one.join("dyno.1").exists());
}

/// Defect 32: more threads than CPUs is warned and gets no Amdahl
/// fraction; one repetition is warned; a super-linear figure is named.
#[test]
fn quick_warns_oversubscription_and_a_single_repetition() {
    let home = temp();
    let out = dyno(home.path())
        .args([
            "quick",
            "--threads",
            "64",
            "--repetitions",
            "1",
            "--int64-iterations",
            "200000",
            "--http-duration",
            "0",
            "--disk-duration",
            "0",
            "--json",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let run = stdout_json(&out);
    let codes = warning_codes(&run);
    assert!(codes.contains(&"oversubscribed"), "{codes:?}");
    assert!(codes.contains(&"single_repetition"), "{codes:?}");
    let names: Vec<&str> = metrics(&run).map(|m| m["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"int64_speedup"), "{names:?}");
    assert!(
        !names.contains(&"int64_amdahl_parallel_fraction"),
        "{names:?}"
    );
    let efficiency = find_metric(&run, "int64_efficiency_percent")["value"]
        .as_f64()
        .unwrap();
    assert_eq!(codes.contains(&"superlinear"), efficiency > 100.0);
    // The lines given 0 s were skipped, and the description says so.
    assert_eq!(
        run["description"], "int64 on 1 and 64 threads",
        "{}",
        run["description"]
    );
}

/// L22: the top-level help lists every exit code the README's table does,
/// 130 (interrupted) included, with the same meanings.
#[test]
fn top_level_help_lists_the_readmes_exit_codes() {
    let home = temp();
    let help = ok(home.path(), &["--help"]);
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let table = &readme[readme
        .find("## Exit codes")
        .expect("the README has an exit-code table")..];
    let codes: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.starts_with("|---"))
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.split('|').nth(1).map(str::trim))
        .collect();
    assert_eq!(codes, ["0", "1", "2", "130"], "the README's table");
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for words in [
        "0 success",
        "1 the measurement ran but failed its checks",
        "2 usage or configuration error",
        "130 interrupted",
    ] {
        assert!(flat.contains(words), "'{words}' in {help}");
    }
}

/// `dyno --help` lists the subcommands by task, measuring first.
#[test]
fn top_level_help_groups_the_subcommands_by_task() {
    let home = temp();
    let help = ok(home.path(), &["--help"]);
    let at = |needle: &str| {
        help.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing from\n{help}"))
    };
    assert!(at("Measure:\n  quick ") < at("\n  http "));
    assert!(at("Analyse:\n  compare ") > at("\n  scale "));
    assert!(at("Store:\n  export ") < at("Set up:\n  sysinfo "));
    assert!(at("Shell:\n  completions ") < at("\n  man "));
    assert!(at("Options:") > at("\n  man "));
    // Each subcommand's own help keeps its examples.
    assert!(ok(home.path(), &["disk", "--help"]).contains("Examples:"));
}
