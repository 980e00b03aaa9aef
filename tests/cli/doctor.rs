//! `dyno doctor`: the checklist on this machine, and on fake /proc and
//! /sys trees (DYNO_SYSROOT) with good, bad and unreadable values, where
//! `--fix` may write.

use super::*;

/// A fake machine root with these files.
fn sysroot(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = temp();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn doctor_at(home: &Path, root: &Path) -> Command {
    let mut cmd = dyno(home);
    cmd.env("DYNO_SYSROOT", root).arg("doctor");
    cmd
}

const BAD: &[(&str, &str)] = &[
    ("proc/sys/net/core/somaxconn", "128\n"),
    ("proc/sys/net/ipv4/tcp_max_syn_backlog", "256\n"),
    ("proc/sys/net/ipv4/ip_local_port_range", "32768\t60999\n"),
    ("proc/sys/net/ipv4/tcp_tw_reuse", "0\n"),
    (
        "sys/kernel/mm/transparent_hugepage/enabled",
        "[always] madvise never\n",
    ),
];

#[test]
fn this_machine_gets_every_check_with_a_verdict_and_the_exit_code_follows() {
    let home = temp();
    for (kind, has, lacks) in [
        ("http", "somaxconn", "transparent_hugepages"),
        ("disk", "cpu_governor", "somaxconn"),
        ("db", "transparent_hugepages", "tcp_tw_reuse"),
    ] {
        let out = dyno(home.path())
            .args(["doctor", kind, "--json"])
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let checks = report["checks"].as_array().unwrap();
        let ids: Vec<&str> = checks.iter().map(|c| c["id"].as_str().unwrap()).collect();
        assert!(
            ids.contains(&has) && !ids.contains(&lacks),
            "{kind}: {ids:?}"
        );
        let blocking = report["blocking"].as_u64().unwrap();
        assert_eq!(out.status.code(), Some(i32::from(blocking > 0)), "{kind}");
        for c in checks {
            let verdict = c["verdict"].as_str().unwrap();
            assert!(
                ["ok", "advice", "blocks", "unknown"].contains(&verdict),
                "{c}"
            );
            if matches!(verdict, "advice" | "blocks") && c["id"] != "virtualized" {
                assert!(!c["fix_now"].as_array().unwrap().is_empty(), "{c}");
            }
        }
    }
    dyno(home.path())
        .args(["doctor", "gpu"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("http"));
    dyno(home.path())
        .args(["doctor", "--yes"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--fix"));
}

#[test]
fn bad_values_block_with_the_commands_that_fix_them_and_unreadable_ones_are_unknown() {
    let home = temp();
    let root = sysroot(BAD);
    let out = doctor_at(home.path(), root.path())
        .arg("http")
        .assert()
        .code(1)
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "BLOCKS   listen queue (net.core.somaxconn)",
        "sysctl -w net.core.somaxconn=65535",
        "echo 'net.core.somaxconn = 65535' >> /etc/sysctl.d/90-dyno.conf",
        "sysctl -w net.ipv4.tcp_tw_reuse=1",
        "2 blocking, 6 unknown; fix the blocking ones before measuring",
    ] {
        assert!(text.contains(needle), "no {needle:?} in\n{text}");
    }
    // Nothing readable: every check unknown, nothing blocks, no crash.
    let empty = sysroot(&[("proc/sys/net/core/somaxconn", "not a number\n")]);
    let out = doctor_at(home.path(), empty.path())
        .args(["all", "--json"])
        .assert()
        .success()
        .get_output()
        .clone();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    for c in report["checks"].as_array().unwrap() {
        assert_eq!(c["verdict"], "unknown", "{c}");
    }
}

#[test]
fn fix_asks_changes_only_what_it_may_and_records_the_old_values() {
    let home = temp();
    let root = sysroot(BAD);
    let somaxconn = root.path().join("proc/sys/net/core/somaxconn");
    // Told no, it changes nothing.
    doctor_at(home.path(), root.path())
        .args(["http", "--fix"])
        .write_stdin("n\nn\nn\nn\n")
        .assert()
        .stderr(predicate::str::contains(
            "apply `sysctl -w net.core.somaxconn=65535`?",
        ));
    assert_eq!(std::fs::read_to_string(&somaxconn).unwrap(), "128\n");
    assert!(!home.path().join("doctor-changes.log").exists());
    // With --yes it applies every runtime fix, and logs what was there.
    doctor_at(home.path(), root.path())
        .args(["http", "--fix", "--yes"])
        .assert()
        .success();
    assert_eq!(std::fs::read_to_string(&somaxconn).unwrap(), "65535\n");
    let range = root.path().join("proc/sys/net/ipv4/ip_local_port_range");
    assert_eq!(
        std::fs::read_to_string(range).unwrap(),
        "32768\t60999\n",
        "it was fine"
    );
    let log = std::fs::read_to_string(home.path().join("doctor-changes.log")).unwrap();
    assert!(log.contains("somaxconn \"128\" -> \"65535\""), "{log}");
    assert!(log.contains("tcp_tw_reuse \"0\" -> \"1\""), "{log}");
    // Now nothing blocks.
    doctor_at(home.path(), root.path())
        .arg("http")
        .assert()
        .success();
}
