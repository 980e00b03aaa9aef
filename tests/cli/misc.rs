//! Value parsers shared by subcommands, `serve --addr`, `man --dir`, and
//! `quick`'s warnings: what a newcomer types, through the real binary.

use super::*;

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
