//! The result store's subcommands (`history`, `show`, `export`, `import`,
//! `rm`) and how every subcommand treats the store.

use crate::common::*;

/// A `dyno run` result (kind exec) as JSON, not saved.
fn exec_run(home: &Path) -> Value {
    let (run, _) = json_run(home, &["run", "--runs", "2", "-N", "true", "--no-save"], 0);
    run
}

/// Imports `n` copies of `run` into the store in `home`, each with its own
/// id, so the store grows to many pages.
fn import_copies(home: &Path, run: &Value, n: usize) {
    let file = home.join("copies.jsonl");
    let mut text = String::new();
    for i in 0..n {
        let mut copy = run.clone();
        copy["id"] = Value::String(format!("01J0{i:022}"));
        copy["description"] = Value::String(format!("copy {i} {}", "x".repeat(300)));
        text.push_str(&copy.to_string());
        text.push('\n');
    }
    std::fs::write(&file, text).unwrap();
    dyno(home).arg("import").arg(&file).assert().success();
    std::fs::remove_file(&file).unwrap();
}

#[test]
fn every_writer_refuses_a_store_with_garbage_middle_pages_and_leaves_it_untouched() {
    let home = temp();
    let run = exec_run(home.path());
    import_copies(home.path(), &run, 200);
    let db = home.path().join("dyno.db");
    // The audit's repro: dd bs=4096 seek=25 count=2 conv=notrunc.
    let mut bytes = std::fs::read(&db).unwrap();
    assert!(bytes.len() > 27 * 4096, "{} bytes", bytes.len());
    for (i, b) in bytes[25 * 4096..27 * 4096].iter_mut().enumerate() {
        *b = ((i as u32).wrapping_mul(2_654_435_761) >> 13) as u8;
    }
    std::fs::write(&db, &bytes).unwrap();
    let import = home.path().join("one.json");
    std::fs::write(&import, exec_run(home.path()).to_string()).unwrap();
    let import = import.to_str().unwrap();
    let sweep = home.path().join("sweep.csv");
    std::fs::write(&sweep, "threads,seconds\n1,10\n2,5.5\n4,3\n").unwrap();
    let sweep = sweep.to_str().unwrap();
    for args in [
        &["http", "-n", "10"][..],
        &["scale", "--file", sweep][..],
        &["history"][..],
        &["run", "--runs", "2", "-N", "true"][..],
        &SMALL_QUICK[..],
        &["import", import][..],
        &["rm", "01J00000000000000000000001"][..],
        &["show", "01J00000000000000000000001"][..],
        &["export"][..],
    ] {
        let stderr = fails(home.path(), args);
        assert!(
            stderr.contains("is not a dyno result store") && stderr.contains("left untouched"),
            "{args:?}: {stderr}"
        );
        assert!(
            std::fs::read(&db).unwrap() == bytes,
            "{args:?} changed the file"
        );
    }
}

/// Overwrites the stored record of run `id` in the store in `home` (and its
/// schema version, when given), as a bad disk block inside a text value or a
/// hand edit would: the database stays valid SQLite, only the JSON is wrong.
pub(crate) fn damage_record(home: &Path, id: &str, record: &str, schema_version: Option<u32>) {
    let conn = rusqlite::Connection::open(home.join("dyno.db")).unwrap();
    let changed = conn
        .execute(
            "UPDATE runs SET record = ?1, schema_version = coalesce(?2, schema_version) WHERE id = ?3",
            rusqlite::params![record, schema_version, id],
        )
        .unwrap();
    assert_eq!(changed, 1, "no run {id} to damage");
}

/// Runs `dyno args…`, expects success, returns stdout and stderr.
pub(crate) fn ok_both(home: &Path, args: &[&str]) -> (String, String) {
    let out = dyno(home)
        .args(args)
        .assert()
        .success()
        .get_output()
        .clone();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// The ids of `import_copies`, in order.
fn copy_id(i: usize) -> String {
    format!("01J0{i:022}")
}

#[test]
fn history_and_export_skip_a_damaged_record_and_name_it_with_the_way_to_remove_it() {
    let home = temp();
    let h = home.path();
    let run = exec_run(h);
    import_copies(h, &run, 4);
    let damaged = copy_id(1);
    // Cut off halfway, as a torn write would leave it.
    let mut record = run.to_string();
    record.truncate(record.len() / 2);
    damage_record(h, &damaged, &record, None);
    let good = [copy_id(0), copy_id(2), copy_id(3)];
    let hint = format!("skipped run {damaged}: its record is damaged (EOF while parsing");
    let remove = format!("`dyno rm {damaged}` removes it");

    let (listed, stderr) = ok_both(h, &["history"]);
    for id in &good {
        assert!(listed.contains(id.as_str()), "{id} missing: {listed}");
    }
    assert!(!listed.contains(&damaged), "{listed}");
    assert!(
        stderr.contains(&hint) && stderr.contains(&remove),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // Filters still apply to it, and a filter that leaves it out is quiet.
    let (_, stderr) = ok_both(h, &["history", "--kind", "disk"]);
    assert!(!stderr.contains("skipped"), "{stderr}");

    let (exported, stderr) = ok_both(h, &["export", "--format", "jsonl"]);
    let ids: Vec<String> = exported
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(ids, good, "{exported}");
    assert!(
        stderr.contains(&hint) && stderr.contains(&remove),
        "{stderr}"
    );
    let file = h.join("out.json");
    let (_, stderr) = ok_both(h, &["export", "-o", file.to_str().unwrap()]);
    assert!(
        stderr.contains(&remove) && stderr.contains("exported 3 runs to"),
        "{stderr}"
    );
    let (csv, _) = ok_both(h, &["export", "--format", "csv"]);
    assert!(csv.contains(&good[0]) && !csv.contains(&damaged), "{csv}");

    // show names the run and refuses it; rm removes it, and the listing is
    // whole again.
    let stderr = fails(h, &["show", &damaged]);
    assert!(
        stderr.contains("damaged") && stderr.contains(&format!("`dyno rm {damaged}`")),
        "{stderr}"
    );
    ok_both(h, &["rm", &damaged]);
    let (listed, stderr) = ok_both(h, &["history"]);
    assert!(stderr.is_empty(), "{stderr}");
    assert_eq!(listed.matches("01J0").count(), 3, "{listed}");
}

#[test]
fn a_record_from_a_newer_dyno_is_skipped_with_upgrade_advice_not_removal() {
    let home = temp();
    let h = home.path();
    let run = exec_run(h);
    import_copies(h, &run, 2);
    let newer = copy_id(0);
    damage_record(
        h,
        &newer,
        r#"{"schema_version": 99, "shape": "new"}"#,
        Some(99),
    );
    let (listed, stderr) = ok_both(h, &["history"]);
    assert!(
        listed.contains(&copy_id(1)) && !listed.contains(&newer),
        "{listed}"
    );
    assert!(
        stderr.contains(&format!(
            "skipped run {newer}: it was saved by a newer dyno"
        )) && stderr.contains("version 99")
            && stderr.contains("upgrade dyno"),
        "{stderr}"
    );
    assert!(!stderr.contains("dyno rm"), "{stderr}");
    let stderr = fails(h, &["show", &newer]);
    assert!(stderr.contains("Upgrade dyno"), "{stderr}");
}

#[test]
fn scale_last_refuses_an_unreadable_newest_sweep_instead_of_taking_an_older_one() {
    let home = temp();
    let h = home.path();
    let run = exec_run(h);
    import_copies(h, &run, 2);
    let newest = copy_id(1);
    damage_record(h, &newest, "not json", None);
    let stderr = fails(h, &["scale", "--last", "--no-save"]);
    assert!(
        stderr.contains("most recent `dyno run`")
            && stderr.contains(&format!("`dyno rm {newest}` removes it"))
            && stderr.contains("give its id"),
        "{stderr}"
    );
}

#[test]
fn rm_with_one_unknown_id_removes_nothing() {
    let home = temp();
    let run = exec_run(home.path());
    import_copies(home.path(), &run, 2);
    let (a, b) = ("01J00000000000000000000000", "01J00000000000000000000001");
    let stderr = fails(home.path(), &["rm", a, "ZZZZZZ"]);
    assert!(
        stderr.contains("no run was removed") && stderr.contains("'ZZZZZZ'"),
        "{stderr}"
    );
    let listed = ok(home.path(), &["history"]);
    assert!(listed.contains(a) && listed.contains(b), "{listed}");
    dyno(home.path())
        .args(["rm", a, b])
        .assert()
        .success()
        .stderr(predicate::str::contains(format!("removed {a}")));
    assert!(ok(home.path(), &["history"]).is_empty());
}

#[test]
fn history_kind_run_lists_run_results_and_kinds_no_command_makes_are_not_offered() {
    let home = temp();
    let run = exec_run(home.path());
    import_copies(home.path(), &run, 1);
    let id = "01J00000000000000000000000";
    assert!(ok(home.path(), &["history", "--kind", "run"]).contains(id));
    assert!(ok(home.path(), &["history", "--kind", "exec"]).contains(id));
    let stderr = fails(home.path(), &["history", "--kind", "bogus"]);
    assert!(
        stderr.contains("unknown run kind 'bogus'") && stderr.contains("run (`dyno run`"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("cpu") && stderr.contains(" db"),
        "{stderr}"
    );
}

#[test]
fn history_with_filters_that_match_nothing_names_the_filters() {
    let home = temp();
    let out = dyno(home.path()).arg("history").assert().success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains("no runs saved yet; `dyno quick`"),
        "{stderr}"
    );
    let out = dyno(home.path())
        .args(["history", "--tag", "nope", "--kind", "disk"])
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains("no run matches the filters --kind disk --tag nope")
            && !stderr.contains("dyno quick"),
        "{stderr}"
    );
}

#[test]
fn csv_labels_with_semicolons_and_equals_signs_split_back() {
    let home = temp();
    let command = "x=1; y=100%; true";
    ok(home.path(), &["run", "--runs", "2", command]);
    let text = ok(home.path(), &["export", "--format", "csv"]);
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let column = reader
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "labels")
        .unwrap();
    let mut commands = Vec::new();
    for record in reader.records() {
        let cell = record.unwrap()[column].to_owned();
        if cell.is_empty() {
            continue;
        }
        for pair in cell.split(';') {
            let (key, value) = pair.split_once('=').unwrap();
            let unescape = |s: &str| {
                s.replace("%3B", ";")
                    .replace("%3D", "=")
                    .replace("%25", "%")
            };
            if unescape(key) == "command" {
                commands.push(unescape(value));
            }
        }
    }
    assert!(!commands.is_empty(), "{text}");
    assert!(
        commands.iter().all(|c| c == command),
        "{commands:?}\n{text}"
    );
}

#[test]
fn export_to_a_missing_directory_says_so_and_counts_read_well() {
    let home = temp();
    let run = exec_run(home.path());
    import_copies(home.path(), &run, 1);
    let missing = home.path().join("newdir/x.json");
    let stderr = fails(home.path(), &["export", "-o", missing.to_str().unwrap()]);
    assert!(
        stderr.contains("newdir' does not exist") && !stderr.contains("never overwrites"),
        "{stderr}"
    );
    let file = home.path().join("x.json");
    dyno(home.path())
        .args(["export", "-o", file.to_str().unwrap()])
        .assert()
        .success()
        .stderr(predicate::str::contains("exported 1 run to"));
    let stderr = fails(home.path(), &["export", "-o", file.to_str().unwrap()]);
    assert!(
        stderr.contains("already exists") && stderr.contains("never overwrites"),
        "{stderr}"
    );
    let other = temp();
    dyno(other.path())
        .args(["import", file.to_str().unwrap()])
        .assert()
        .success()
        .stderr(predicate::str::contains("imported 1 run from"));
}

#[test]
fn an_unopenable_store_says_why_once() {
    // /proc refuses new files whoever we are, even root.
    let stderr = fails(Path::new("/proc/self"), &["history"]);
    assert_eq!(
        stderr.matches("unable to open database file").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("DYNO_HOME"), "{stderr}");
}

/// A store this user may not write (a colleague's copy, a read-only
/// share) is read by `history`, `show`, `export` and `report`, and left
/// as it was; a subcommand that would save into it says why it cannot
/// (newcomer L22). Root writes any file, so the reader is `nobody` then.
#[test]
fn a_store_this_user_may_not_write_is_still_read() {
    use std::os::unix::fs::PermissionsExt;
    let home = temp();
    let run = exec_run(home.path());
    import_copies(home.path(), &run, 2);
    let store = home.path().join("dyno.db");
    let before = std::fs::read(&store).unwrap();
    let root = unsafe { libc::geteuid() } == 0;
    let mode = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    // Readable by all, writable by no one but root.
    mode(&store, 0o444);
    mode(home.path(), 0o555);
    let nobody = ["--reuid=65534", "--regid=65534", "--clear-groups"];
    let mut bin = assert_cmd::cargo::cargo_bin("dyno");
    let copy = temp();
    if root
        && !StdCommand::new("setpriv")
            .args(nobody)
            .args(["test", "-x"])
            .arg(&bin)
            .status()
            .unwrap()
            .success()
    {
        // The build's folder is closed to others: the reader runs a copy.
        mode(copy.path(), 0o755);
        let to = copy.path().join("dyno");
        std::fs::copy(&bin, &to).unwrap();
        bin = to;
    }
    let as_reader = |args: &[&str]| {
        let mut cmd = if root {
            let mut c = StdCommand::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(&bin);
            c
        } else {
            StdCommand::new(&bin)
        };
        cmd.args(args)
            .arg("--store")
            .arg(&store)
            .env("DYNO_HOME", home.path())
            .output()
            .unwrap()
    };
    let out = as_reader(&["history"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("01J0"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = "01J00000000000000000000001";
    for args in [&["show", id][..], &["export", "--format", "jsonl"]] {
        let out = as_reader(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = as_reader(&["run", "-N", "--runs", "2", "true"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a save into a read-only store fails");
    assert!(
        stderr.contains("read-only") || stderr.contains("readonly"),
        "{stderr}"
    );
    mode(home.path(), 0o755);
    mode(&store, 0o644);
    assert_eq!(
        std::fs::read(&store).unwrap(),
        before,
        "the store was left as it was"
    );
}

/// The row of `name` in `show`'s metric table, split into its cells.
fn metric_row(text: &str, name: &str) -> Vec<String> {
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(name) || l.starts_with(&format!("{name}{{")))
        .unwrap_or_else(|| panic!("no {name} row in {text}"))
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn show_reprints_each_kinds_report_and_reads_non_time_metrics() {
    let home = temp();
    let (http, _) = json_run(home.path(), &["http", "-n", "200", "-c", "2"], 0);
    let id = http["id"].as_str().unwrap();
    let text = ok(home.path(), &["show", id]);
    assert!(text.contains("As `dyno http` reported it"), "{text}");
    assert!(text.contains("p99.9") && text.contains("p50"), "{text}");
    for tally in ["requests", "responses", "connections_opened", "bytes_read"] {
        assert_eq!(metric_row(&text, tally).last().unwrap(), "–", "{tally}");
    }
    assert_eq!(text.matches("Warnings:").count(), 1, "{text}");
    let ab = ok(home.path(), &["show", id, "--format", "ab"]);
    assert!(
        ab.contains("Requests per second:") && ab.contains("Percentage of the requests served"),
        "{ab}"
    );

    let (exec, _) = json_run(
        home.path(),
        &["run", "--runs", "3", "sleep 0.01", "sleep 0.02"],
        0,
    );
    let id = exec["id"].as_str().unwrap();
    let text = ok(home.path(), &["show", id]);
    assert!(text.contains("As `dyno run` reported it"), "{text}");
    assert!(text.contains("Compared with"), "{text}");
    let p = metric_row(&text, "p_value");
    assert!(!p[1].contains('×') && p[1].parse::<f64>().is_ok(), "{p:?}");
    // Three runs each cannot reach significance: the table says so, not
    // "no significant difference".
    let verdict = metric_row(&text, "verdict");
    assert_eq!(verdict[1], "too few runs to test", "{verdict:?}");
    assert!(!text.contains("NaN"), "{text}");
    let stderr = fails(home.path(), &["show", id, "--format", "ab"]);
    assert!(
        stderr.contains("for http runs") && stderr.contains("kind exec"),
        "{stderr}"
    );
}

/// The URL of a fresh database on the test server, and the database.
pub(crate) fn shared_store() -> (super::db::Pg, String, String) {
    let pg = super::db::pg();
    let db = pg.database();
    let url = format!("{}/{db}", pg.url.rsplit_once('/').unwrap().0);
    (pg, db, url)
}

/// The ids `dyno history` lists in `home`, on `store` or the local one.
fn history_ids(home: &Path, store: Option<&str>) -> Vec<String> {
    let mut cmd = dyno(home);
    if let Some(store) = store {
        cmd.args(["--store", store]);
    }
    listed(&cmd.arg("history").assert().success().get_output().stdout)
}

/// The ids `dyno history` printed (its first column).
fn listed(out: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(out)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.len() == 26 && w.starts_with("01"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn two_machines_save_into_one_postgres_store_at_once() {
    let (_pg, _db, url) = shared_store();
    let (home_a, home_b) = (temp(), temp());
    // Two processes, as two machines would, saving at the same moment.
    let spawn = |home: &Path, tag: &str| {
        std::process::Command::new(assert_cmd::cargo::cargo_bin("dyno"))
            .env("DYNO_HOME", home)
            .args([
                "--store", &url, "run", "--runs", "3", "-N", "--tag", tag, "true",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(home_a.path(), "a"), spawn(home_b.path(), "b"));
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = dyno(home_a.path())
        .args(["history", "--store", &url])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let ids = listed(&out);
    assert_eq!(ids.len(), 2, "{}", String::from_utf8_lossy(&out));
    // DYNO_STORE names it as well; each machine's local store stays empty.
    let tagged = dyno(home_b.path())
        .env("DYNO_STORE", &url)
        .args(["history", "--tag", "a"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_eq!(listed(&tagged).len(), 1);
    assert!(history_ids(home_a.path(), None).is_empty());
    // show, export, import and rm work on it.
    dyno(home_a.path())
        .args(["--store", &url, "show", &ids[0]])
        .assert()
        .success()
        .stdout(predicate::str::contains(&ids[0]));
    let exported = dyno(home_a.path())
        .args(["--store", &url, "export", "--format", "jsonl"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let file = home_a.path().join("runs.jsonl");
    std::fs::write(&file, exported).unwrap();
    dyno(home_a.path())
        .arg("import")
        .arg(&file)
        .assert()
        .success();
    assert_eq!(history_ids(home_a.path(), None).len(), 2);
    dyno(home_a.path())
        .args(["--store", &url, "rm", &ids[0]])
        .assert()
        .success();
    assert_eq!(history_ids(home_a.path(), Some(&url)), vec![ids[1].clone()]);
}

#[test]
fn an_unreachable_shared_store_keeps_the_run_locally_and_says_so() {
    let home = temp();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("postgres://dyno:sekrit@127.0.0.1:{port}/results");
    // A measuring subcommand prints its run, saves it locally, warns.
    let out = dyno(home.path())
        .args(["--store", &url, "run", "--runs", "2", "-N", "true"])
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot reach the result store") && stderr.contains("local store"),
        "{stderr}"
    );
    assert!(!stderr.contains("sekrit"), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("true"));
    assert_eq!(history_ids(home.path(), None).len(), 1);
    // A reading subcommand cannot fall back: a clear error (exit 2, as
    // every error).
    dyno(home.path())
        .env("DYNO_STORE", &url)
        .arg("history")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot reach the result store"))
        .stderr(predicate::str::contains("sekrit").not());
    // Not a store URL at all.
    dyno(home.path())
        .args(["--store", "http://db1/results", "history"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "neither a PostgreSQL URL nor a file path",
        ));
}

#[test]
fn a_database_of_another_program_is_refused_before_measuring_and_left_untouched() {
    let (pg, db, url) = shared_store();
    pg.psql(
        &db,
        "CREATE TABLE orders (id int); INSERT INTO orders VALUES (7)",
    );
    let home = temp();
    dyno(home.path())
        .args(["--store", &url, "run", "--runs", "2", "-N", "true"])
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("not a dyno result store"));
    assert_eq!(
        pg.psql(
            &db,
            "SELECT string_agg(tablename::text, ',') FROM pg_tables WHERE schemaname = 'public'"
        ),
        "orders"
    );
    assert!(history_ids(home.path(), None).is_empty());
}

#[test]
fn a_shared_store_that_goes_away_during_a_run_loses_nothing() {
    let (pg, db, url) = shared_store();
    let home = temp();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("dyno"))
        .env("DYNO_HOME", home.path())
        .args(["--store", &url, "run", "--runs", "6", "-N", "sleep 0.25"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The store is opened before measuring; its connection is cut while
    // the command runs, as a server restart or a network failure would.
    std::thread::sleep(Duration::from_millis(800));
    pg.psql(
        "postgres",
        &format!("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '{db}' AND backend_type = 'client backend'"),
    );
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("sleep"),
        "the run is printed"
    );
    assert!(
        stderr.contains("was saved in the local store") && stderr.contains("import -"),
        "{stderr}"
    );
    assert_eq!(history_ids(home.path(), None).len(), 1);
    assert!(history_ids(home.path(), Some(&url)).is_empty());
}

/// A store that fills up (a small disk) loses no measured record: the run
/// is printed, and its record is written as JSON beside, in the current
/// folder, with the path and the fix in the error (exit 2); `dyno import`
/// of that file brings it back (M11). Before, the record was gone.
#[test]
fn a_full_store_keeps_the_measured_record_in_a_file_beside() {
    let Some(small) = tmpfs::Tmpfs::mount("256k", false) else {
        return;
    };
    let (work, other) = (temp(), temp());
    let home = small.path().join("home");
    let (_server, base) = crate::http::reference_server();
    let url = format!("{base}/hello");
    let mut failed = None;
    for _ in 0..200 {
        let out = dyno(&home)
            .current_dir(work.path())
            .args(["http", &url, "-n", "200", "-c", "2", "-t", "1"])
            .output()
            .unwrap();
        if !out.status.success() {
            failed = Some(out);
            break;
        }
    }
    let out = failed.expect("256 KiB should fill up within 200 runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Requests    200 answered"),
        "the run is printed"
    );
    let kept: Vec<_> = std::fs::read_dir(work.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(kept.len(), 1, "{err}");
    let path = kept[0].display().to_string();
    assert!(err.contains(&format!("written to {path}")), "{err}");
    assert!(err.contains(&format!("dyno import {path}")), "{err}");
    let run: Value = serde_json::from_str(&std::fs::read_to_string(&kept[0]).unwrap()).unwrap();
    assert_eq!(metric(&run, "responses"), Some(200.0));
    dyno(other.path())
        .arg("import")
        .arg(&kept[0])
        .assert()
        .success();
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
    // The measured record goes to a file in the current folder.
    let work = temp();
    dyno(home.path())
        .current_dir(work.path())
        .args(SMALL_QUICK)
        .timeout(Duration::from_secs(60))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("locked").or(predicate::str::contains("another dyno")));
    assert!(start.elapsed() < Duration::from_secs(60));
    let kept = std::fs::read_dir(work.path()).unwrap().count();
    assert_eq!(kept, 1, "the measured record is kept beside");
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
