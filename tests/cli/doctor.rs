//! `dyno doctor`: the checklist on this machine, and on fake /proc and
//! /sys trees (DYNO_SYSROOT) with good, bad and unreadable values, where
//! `--fix` may write.

use crate::common::*;

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
    assert_contains_all(
        &text,
        &[
            "BLOCKS   listen queue (net.core.somaxconn)",
            "sysctl -w net.core.somaxconn=65535",
            "echo 'net.core.somaxconn = 65535' >> /etc/sysctl.d/90-dyno.conf",
            "sysctl -w net.ipv4.tcp_tw_reuse=1",
            "2 blocking, 6 unknown; fix the blocking ones before measuring",
        ],
    );
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

/// `dyno doctor db` on the test server, with `args`, under `ulimit -n
/// 512`; its JSON report and exit code.
fn doctor_db(home: &Path, db: &str, args: &[&str]) -> (Value, Option<i32>) {
    let pg = crate::db::pg();
    let out = StdCommand::new("sh")
        .arg("-c")
        .arg("ulimit -n 512 && exec \"$0\" \"$@\"")
        .arg(assert_cmd::cargo::cargo_bin("dyno"))
        .args(["doctor", "db", "--json"])
        .args(args)
        .envs(pg.env.iter().map(|(k, v)| (k, v)))
        .env("PGDATABASE", db)
        .env("DYNO_HOME", home)
        .env_remove("PGPASSWORD")
        .output()
        .unwrap();
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (report, out.status.code())
}

fn check<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id} in {report}"))
}

#[test]
fn doctor_db_checks_the_server_against_the_clients_it_is_given() {
    let home = temp();
    let pg = crate::db::pg();
    let db = pg.database();
    let (report, _) = doctor_db(home.path(), &db, &["-c", "10"]);
    assert_eq!(check(&report, "db_reachable")["verdict"], "ok", "{report}");
    assert_eq!(
        check(&report, "db_max_connections")["verdict"],
        "ok",
        "{report}"
    );
    // 512 open files are plenty for 10 clients.
    assert_eq!(check(&report, "open_files")["verdict"], "ok", "{report}");
    for id in ["db_fsync", "db_synchronous_commit"] {
        let c = check(&report, id);
        let want = if c["found"] == "on" { "ok" } else { "advice" };
        assert_eq!(c["verdict"], want, "{c}");
    }
    let tables = check(&report, "db_pgbench_tables");
    assert_eq!(tables["verdict"], "advice", "{tables}");
    assert!(
        tables["found"]
            .as_str()
            .unwrap()
            .starts_with("missing pgbench_accounts")
    );
    // More clients than the server takes, or than the files allow: blocks.
    let (report, code) = doctor_db(home.path(), &db, &["-c", "5000"]);
    let max = check(&report, "db_max_connections");
    assert_eq!(max["verdict"], "blocks");
    // What is wanted and what the fix sets agree (newcomer L22).
    let want = max["recommended"].as_str().unwrap();
    let needed: u64 = want
        .strip_prefix("at least ")
        .and_then(|w| w.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{max}"));
    let fix = max["fix_now"][0].as_str().unwrap();
    assert!(
        fix.contains(&format!("max_connections = {}", needed + 10))
            && fix.contains(&format!("the {needed} wanted")),
        "{max}"
    );
    assert_eq!(check(&report, "open_files")["verdict"], "blocks");
    assert_eq!(code, Some(1));
    // A server that is not there blocks, with the reason.
    let (report, code) = doctor_db(home.path(), &db, &["postgres://nobody@127.0.0.1:1/x"]);
    let reach = check(&report, "db_reachable");
    assert_eq!(reach["verdict"], "blocks", "{reach}");
    assert!(
        reach["found"].as_str().unwrap().contains("127.0.0.1"),
        "{reach}"
    );
    assert_eq!(code, Some(1));
    dyno(home.path())
        .args(["doctor", "http", "postgres://x@127.0.0.1/x"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("dyno doctor db CONNINFO"));
}

#[test]
fn fix_counts_its_changes_in_words_and_says_how_to_undo_each() {
    let home = temp();
    let root = sysroot(&[("proc/sys/net/core/somaxconn", "128\n")]);
    let out = doctor_at(home.path(), root.path())
        .args(["http", "--fix", "--yes"])
        .assert()
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("dyno doctor: 1 setting changed until the next reboot"),
        "{err}"
    );
    assert!(!err.contains("setting(s)"), "{err}");
    let somaxconn = root.path().join("proc/sys/net/core/somaxconn");
    let undo = format!("printf '%s\\n' '128' > {}", somaxconn.display());
    assert!(err.contains(&undo), "{err}");
    assert_eq!(std::fs::read_to_string(&somaxconn).unwrap(), "65535\n");
    // The printed command puts the old value back.
    let status = StdCommand::new("sh").arg("-c").arg(&undo).status().unwrap();
    assert!(status.success());
    assert_eq!(std::fs::read_to_string(&somaxconn).unwrap(), "128\n");
}
