use crate::common::*;
// A db run's figures are its unlabelled metrics; every one is there.
use crate::common::unlabelled_metric as metric;

pub(crate) use dyno_testutil::pg::Pg;

/// The throwaway cluster `scripts/test` starts.
pub(crate) fn pg() -> Pg {
    Pg::from_env()
}

/// dyno on a database of the cluster.
trait PgDyno {
    fn dyno(&self, home: &Path, db: &str) -> Command;

    /// `dyno db run FLAGS…` on a database of the cluster, the flags
    /// written as a command line.
    fn db_run(&self, home: &Path, db: &str, flags: &str) -> Command {
        let mut cmd = self.dyno(home, db);
        cmd.args(["db", "run"]).args(words(flags));
        cmd
    }

    /// The JSON record of `dyno db run FLAGS… --json`, which must succeed.
    fn db_json(&self, home: &Path, db: &str, flags: &str) -> Value {
        json_run(self.db_run(home, db, flags).arg("--json"), 0)
    }
}

impl PgDyno for Pg {
    fn dyno(&self, home: &Path, db: &str) -> Command {
        let mut cmd = dyno(home);
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("PGDATABASE", db)
            .env_remove("PGPASSWORD");
        cmd
    }
}

/// A new database of the cluster with pgbench's tables at scale 1, made
/// by `dyno db init`.
fn pgbench_db(pg: &Pg, home: &Path) -> String {
    let db = pg.database();
    init_pgbench(pg, home, &db);
    db
}

/// `dyno db init -s 1` on `db`, which must succeed.
fn init_pgbench(pg: &Pg, home: &Path, db: &str) {
    pg.dyno(home, db)
        .args(["db", "init", "-s", "1"])
        .assert()
        .success();
}

#[test]
fn init_makes_pgbench_tables_that_pgbench_runs_on() {
    let (pg, home) = (pg(), temp());
    let db = pg.database();
    pg.dyno(home.path(), &db)
        .args(["db", "init", "--scale", "2", "--foreign-keys"])
        .assert()
        .success()
        .stdout(predicate::str::contains("scale 2 (200,000 accounts)"))
        .stdout(predicate::str::contains("primary keys"));
    let counts = pg.psql(
        &db,
        "SELECT (SELECT count(*) FROM pgbench_accounts) || ' ' || (SELECT count(*) FROM pgbench_tellers) || ' ' || (SELECT count(*) FROM pgbench_branches) || ' ' || (SELECT count(*) FROM pgbench_history)",
    );
    assert_eq!(counts, "200000 20 2 0");
    // pgbench's layout: accounts 1..=100,000 in branch 1, the rest in 2;
    // balances 0; blank-padded account fillers, NULL others.
    assert_eq!(
        pg.psql(
            &db,
            "SELECT min(aid) || ' ' || max(aid) || ' ' || sum(abalance) || ' ' || count(*) FILTER (WHERE bid = 2) || ' ' || min(octet_length(filler)) FROM pgbench_accounts"
        ),
        "1 200000 0 100000 84"
    );
    assert_eq!(
        pg.psql(
            &db,
            "SELECT count(*) FROM pgbench_tellers WHERE filler IS NULL AND bid = (tid - 1) / 10 + 1"
        ),
        "20"
    );
    let keys = pg.psql(
        &db,
        "SELECT string_agg(conrelid::regclass || ':' || contype::text, ' ' ORDER BY conrelid::regclass::text, contype) FROM pg_constraint WHERE conrelid::regclass::text LIKE 'pgbench_%'",
    );
    assert_eq!(
        keys,
        "pgbench_accounts:f pgbench_accounts:p pgbench_branches:p pgbench_history:f pgbench_history:f pgbench_history:f pgbench_tellers:f pgbench_tellers:p"
    );
    let fillfactor = pg.psql(
        &db,
        "SELECT reloptions::text FROM pg_class WHERE relname = 'pgbench_accounts'",
    );
    assert_eq!(fillfactor, "{fillfactor=100}");
    // pgbench itself runs on them, and finds the scale.
    let out = StdCommand::new("pgbench")
        .envs(pg.env.iter().map(|(k, v)| (k, v)))
        .args(["-n", "-c", "2", "-t", "20", &db])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("scaling factor: 2"), "{text}");
    assert_eq!(pg.psql(&db, "SELECT count(*) FROM pgbench_history"), "40");
    // A second init starts over.
    pg.dyno(home.path(), &db)
        .args(["db", "init", "-s", "1", "-F", "90"])
        .assert()
        .success();
    assert_eq!(
        pg.psql(&db, "SELECT count(*) FROM pgbench_accounts"),
        "100000"
    );
    assert_eq!(pg.psql(&db, "SELECT count(*) FROM pgbench_history"), "0");
    assert_eq!(
        pg.psql(
            &db,
            "SELECT reloptions::text FROM pg_class WHERE relname = 'pgbench_accounts'"
        ),
        "{fillfactor=90}"
    );
}

#[test]
fn init_refuses_bad_values_and_servers_it_cannot_use_with_the_reason() {
    let (pg, home) = (pg(), temp());
    for (args, says) in [
        (vec!["--scale", "0"], "--scale must be at least 1"),
        (vec!["--fillfactor", "5"], "PostgreSQL takes 10 to 100"),
        (vec!["--scale", "x"], "invalid value 'x'"),
    ] {
        pg.dyno(home.path(), "postgres")
            .args(["db", "init"])
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
    }
    // A wrong password over TCP (the cluster asks for one there).
    let wrong = {
        let (head, tail) = pg.url.split_once('@').unwrap();
        let user = head.rsplit_once(':').unwrap().0;
        format!("{user}:not-the-password@{tail}")
    };
    pg.dyno(home.path(), "postgres")
        .args(["db", "init", &wrong])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("password authentication failed"))
        .stderr(predicate::str::contains("check the user and the password"));
    // Nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    pg.dyno(home.path(), "postgres")
        .args([
            "db",
            "init",
            &format!("postgres://postgres@127.0.0.1:{port}/postgres"),
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "could not connect to PostgreSQL at postgres@127.0.0.1",
        ))
        .stderr(predicate::str::contains("is the server running"));
    // A database that does not exist.
    pg.dyno(home.path(), "no_such_database")
        .args(["db", "init"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("does not exist"))
        .stderr(predicate::str::contains("create the database first"));
    // The right password works, and the message never shows it.
    let db = pg.database();
    let url = format!("{}/{db}", pg.url.rsplit_once('/').unwrap().0);
    pg.dyno(home.path(), "postgres")
        .args(["db", "init", &url])
        .assert()
        .success()
        .stdout(predicate::str::contains("postgres@127.0.0.1:"))
        .stdout(predicate::str::contains("not-the-password").not());
}

/// Runs `cmd` (a `--json` run), checks its exit code and returns the run's
/// JSON record.
fn json_run(cmd: &mut Command, code: i32) -> Value {
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// The metric `name` of a run, 0 when the run has none.
fn metric_or_zero(run: &Value, name: &str) -> f64 {
    metrics(run)
        .find(|m| m["name"] == name)
        .map_or(0.0, |m| m["value"].as_f64().unwrap())
}

/// The sums of `sums` (a query of numbers joined by spaces).
fn sums_of(pg: &Pg, db: &str, sums: &str) -> Vec<i64> {
    pg.psql(db, sums)
        .split(' ')
        .map(|v| v.parse().unwrap())
        .collect()
}

/// At -T's end a transaction under way is let finish, as pgbench lets
/// it: the history holds exactly the transactions reported, none cut
/// half-committed (pgbench_history had up to -c rows more).
#[test]
fn a_duration_run_lets_its_last_transactions_finish_so_the_tables_match_the_count() {
    let (pg, home) = (pg(), temp());
    let db = pgbench_db(&pg, home.path());
    for _ in 0..2 {
        pg.psql(&db, "TRUNCATE pgbench_history");
        let run = json_run(
            pg.dyno(home.path(), &db)
                .args(words("db run -n -c 8 -j 2 -T 1 --json --no-save")),
            0,
        );
        let committed = metric(&run, "transactions");
        assert!(committed > 0.0);
        assert_eq!(
            pg.psql(&db, "SELECT count(*) FROM pgbench_history"),
            committed.to_string(),
            "every transaction in the tables is reported, and only those"
        );
    }
}

#[test]
fn each_builtin_does_its_work_and_the_books_balance() {
    let (pg, home) = (pg(), temp());
    let db = pgbench_db(&pg, home.path());
    let sums = "SELECT (SELECT sum(abalance) FROM pgbench_accounts) || ' ' || (SELECT sum(tbalance) FROM pgbench_tellers) || ' ' || (SELECT sum(bbalance) FROM pgbench_branches) || ' ' || (SELECT coalesce(sum(delta), 0) FROM pgbench_history) || ' ' || (SELECT count(*) FROM pgbench_history)";
    let mut history = 0;
    for (flags, protocol) in [
        (vec!["-b", "tpcb"], "simple"),
        (vec!["-b", "tpcb-like", "-r"], "extended"),
        (vec![], "prepared"),
        // The same books with the statements pipelined, and with a new
        // connection for every transaction.
        (vec!["--pipeline"], "simple"),
        (vec!["--pipeline", "-C"], "extended"),
        (vec!["--pipeline"], "prepared"),
    ] {
        let run = json_run(
            pg.dyno(home.path(), &db)
                // -n: the history keeps every run's rows, so the books
                // balance across the runs.
                .args([
                    "db", "run", "-n", "-c", "4", "-j", "2", "-t", "50", "--json", "-M", protocol,
                ])
                .args(&flags),
            0,
        );
        assert_eq!(run["kind"], "db");
        assert_eq!(run["settings"]["scale"], 1);
        assert_eq!(run["settings"]["protocol"], protocol);
        assert_eq!(metric(&run, "transactions"), 200.0);
        assert_eq!(metric(&run, "failed_transactions"), 0.0);
        assert!(metric(&run, "transactions_per_sec") > 0.0);
        assert_eq!(run["settings"]["pipeline"], flags.contains(&"--pipeline"));
        // -r times each of tpcb-like's eleven commands, 200 times each;
        // -C connects 200 times.
        let count_of = |name: &str| {
            metrics(&run)
                .filter(|m| m["name"] == name)
                .map(|m| m["histogram"]["count"].as_u64().unwrap())
                .collect::<Vec<_>>()
        };
        let per_command = count_of("statement_latency_ns");
        if flags.contains(&"-r") {
            assert_eq!(per_command, vec![200; 11], "{flags:?}");
        } else {
            assert!(per_command.is_empty(), "{flags:?}");
        }
        let reconnects = count_of("reconnect_ns");
        if flags.contains(&"-C") {
            assert_eq!(reconnects, vec![200], "{flags:?}");
        } else {
            assert!(reconnects.is_empty(), "{flags:?}");
        }
        history += 200;
        // Every delta lands in one account, one teller, one branch and the
        // history: the four sums agree, and the history grew by exactly
        // the transactions.
        let s = sums_of(&pg, &db, sums);
        assert_eq!(
            (s[0], s[1], s[2], s[4]),
            (s[3], s[3], s[3], history),
            "{protocol}"
        );
    }
    // simple-update touches accounts and history only; select-only nothing.
    let before = sums_of(&pg, &db, sums);
    pg.dyno(home.path(), &db)
        .args(["db", "run", "-n", "-N", "-c", "2", "-t", "30", "--no-save"])
        .assert()
        .success();
    let after = sums_of(&pg, &db, sums);
    assert_eq!((after[1], after[2]), (before[1], before[2]));
    assert_eq!(after[0] - before[0], after[3] - before[3]);
    assert_eq!(after[4], before[4] + 60);
    pg.dyno(home.path(), &db)
        .args(words("db run -S -c 2 -T 1 -M prepared -n --no-save"))
        .assert()
        .success()
        .stdout(predicate::str::contains("select-only@1"))
        .stdout(predicate::str::contains("p99.99"));
    assert_eq!(
        pg.psql(&db, sums),
        after
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    );
    // The run is in the store, and shows again.
    pg.dyno(home.path(), &db)
        .args(["history", "--kind", "db"])
        .assert()
        .success()
        .stdout(predicate::str::contains("tpcb-like"));
}

#[test]
fn a_custom_script_mix_runs_by_weight_with_its_variables() {
    let (pg, home) = (pg(), temp());
    let db = pg.database();
    pg.psql(&db, "CREATE TABLE hits (id int PRIMARY KEY, n int NOT NULL DEFAULT 0); INSERT INTO hits SELECT g, 0 FROM generate_series(1, 10) g");
    let dir = temp();
    let hit = write_file(
        dir.path(),
        "hit.sql",
        "-- one hit on a skewed id\n\\set id random_zipfian(1, 10, 1.5)\n\\set twice :id * 2\nUPDATE hits\n   SET n = n + 1\n WHERE id = :id AND :twice = 2 * id;\n\\sleep 1 ms\n",
    );
    let read = write_file(dir.path(), "read.sql", "SELECT sum(n) FROM hits;\n");
    let run = json_run(
        pg.dyno(home.path(), &db)
            .args([
                "db", "run", "-c", "2", "-t", "100", "--json", "--seed", "7", "-M", "prepared",
            ])
            .arg("-f")
            .arg(format!("{}@3", hit.display()))
            .arg("-f")
            .arg(format!("{}@1", read.display())),
        0,
    );
    assert_eq!(metric(&run, "transactions"), 200.0);
    let hits: i64 = pg.psql(&db, "SELECT sum(n) FROM hits").parse().unwrap();
    // About three in four transactions were hits, and the run counted each
    // script's as the table did.
    assert!((110..=190).contains(&hits), "{hits} hits of 200");
    let by_script = |name: &str| {
        metrics(&run)
            .find(|m| {
                m["name"] == "transactions"
                    && m["labels"]["script"]
                        .as_str()
                        .is_some_and(|s| s.ends_with(name))
            })
            .unwrap_or_else(|| panic!("no count for {name}"))["value"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(by_script("hit.sql"), hits as f64);
    assert_eq!(by_script("read.sql"), 200.0 - hits as f64);
    // Zipf: id 1 got the most.
    let top = pg.psql(&db, "SELECT id FROM hits ORDER BY n DESC, id LIMIT 1");
    assert_eq!(top, "1");
    // A script error names the file and the line.
    let bad = write_file(dir.path(), "bad.sql", "\\set x 1\nSELECT :y;\n");
    pg.dyno(home.path(), &db)
        .args(["db", "run", "-t", "1", "-f"])
        .arg(&bad)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad.sql:2"))
        .stderr(predicate::str::contains("y"));
}

/// A table `counter` of one row and, in `dir`, a script with which every
/// client updates that row under REPEATABLE READ, pausing inside the
/// transaction: concurrent updates fail with 40001.
fn contended_counter(pg: &Pg, db: &str, dir: &Path) -> PathBuf {
    pg.psql(db, "CREATE TABLE counter (id int PRIMARY KEY, v int NOT NULL); INSERT INTO counter VALUES (1, 0)");
    write_file(
        dir,
        "contend.sql",
        "BEGIN ISOLATION LEVEL REPEATABLE READ;\nSELECT v FROM counter WHERE id = 1;\n\\sleep 2 ms\nUPDATE counter SET v = v + 1 WHERE id = 1;\nEND;\n",
    )
}

/// Four clients on two threads run the contended `script` 25 times each,
/// with `flags`; the run must exit `code`.
fn run_contended(pg: &Pg, home: &Path, db: &str, script: &Path, flags: &str, code: i32) -> Value {
    json_run(
        pg.dyno(home, db)
            .args(words(&format!("db run -c 4 -j 2 -t 25 {flags} --json -f")))
            .arg(script),
        code,
    )
}

#[test]
fn serialization_failures_are_retried_and_counted_by_sqlstate() {
    let (pg, home, dir) = (pg(), temp(), temp());
    let db = pg.database();
    let script = contended_counter(&pg, &db, dir.path());
    let run = run_contended(&pg, home.path(), &db, &script, "--max-tries 1000", 0);
    assert_eq!(metric(&run, "transactions"), 100.0);
    assert!(metric(&run, "retries") > 0.0, "no conflict was met");
    let by_code = metrics(&run)
        .find(|m| m["name"] == "retries" && m["labels"]["sqlstate"] == "40001")
        .expect("retries counted under 40001");
    assert_eq!(by_code["value"].as_f64().unwrap(), metric(&run, "retries"));
    // Each committed transaction added exactly one: none twice, none lost.
    assert_eq!(pg.psql(&db, "SELECT v FROM counter"), "100");
    // Without retries the same conflicts fail the transactions: counted by
    // SQLSTATE, the run ends, exit 1.
    let run = run_contended(&pg, home.path(), &db, &script, "", 1);
    let failed = metric(&run, "failed_transactions");
    assert!(failed > 0.0);
    assert_eq!(metric(&run, "transactions") + failed, 100.0);
    let v: f64 = pg.psql(&db, "SELECT v FROM counter").parse().unwrap();
    assert_eq!(v, 100.0 + metric(&run, "transactions"));
}

#[test]
fn missing_tables_and_a_server_that_goes_away_end_the_run_with_the_reason() {
    let (pg, home) = (pg(), temp());
    let db = pg.database();
    pg.dyno(home.path(), &db)
        .args(["db", "run", "-t", "1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("run `dyno db init`"));
    init_pgbench(&pg, home.path(), &db);
    // The server ends every connection of this run mid-way (as a shutdown
    // does): the clients stop, the run keeps what it measured, is saved,
    // and exits 1.
    let child = StdCommand::new(assert_cmd::cargo::cargo_bin("dyno"))
        .args(["db", "run", "-c", "3", "-T", "30", "--json"])
        .envs(pg.env.iter().map(|(k, v)| (k, v)))
        .env("PGDATABASE", &db)
        .env("DYNO_HOME", home.path())
        .env_remove("PGPASSWORD")
        .env_remove("XDG_DATA_HOME")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let killed = pg.psql(
        "postgres",
        &format!("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '{db}' AND backend_type = 'client backend'"),
    );
    assert_eq!(killed, "3");
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(metric(&run, "aborted_clients"), 3.0);
    assert!(metric(&run, "transactions") > 0.0);
    let aborted = run["settings"]["aborted"].as_array().unwrap();
    // Each says which client stopped and why: the server's words, or the
    // lost connection.
    assert!(
        aborted.iter().all(|a| {
            let a = a.as_str().unwrap();
            a.starts_with("client ")
                && (a.contains("terminating connection")
                    || a.contains("connection to the server was lost"))
        }),
        "{aborted:?}"
    );
    pg.dyno(home.path(), &db)
        .args(["history", "--kind", "db"])
        .assert()
        .success()
        .stdout(predicate::str::contains(run["id"].as_str().unwrap()));
    // `dyno show` rebuilds the report from the record, the reasons included.
    pg.dyno(home.path(), &db)
        .args(["show", run["id"].as_str().unwrap()])
        .assert()
        .success()
        .stdout(predicate::str::contains("Aborted     client"))
        .stdout(predicate::str::contains("p99.99"));
}

/// `name`'s histogram field `field` (count, max, …) in a run's JSON.
fn distribution(run: &Value, name: &str, field: &str) -> f64 {
    find_metric(run, name)["histogram"][field].as_f64().unwrap()
}

#[test]
fn a_transaction_under_way_at_the_deadline_finishes_and_one_past_the_grace_is_cut() {
    let (pg, home, dir) = (pg(), temp(), temp());
    let db = pg.database();
    let run = |script: &std::path::Path, code: i32| {
        json_run(
            pg.dyno(home.path(), &db)
                .args(["db", "run", "-n", "-f"])
                .arg(script)
                .args(words("-c 1 -T 1 --json")),
            code,
        )
    };
    // 0.7 s a transaction over a 1 s run: the first commits, the second
    // is under way at the deadline and is let finish, as pgbench lets it;
    // the rates still divide by the run's 1 s.
    let slow = write_file(dir.path(), "slow.sql", "SELECT pg_sleep(0.7);\n");
    let r = run(&slow, 0);
    assert_eq!(metric(&r, "transactions"), 2.0);
    let cut = metric_or_zero(&r, "unfinished_transactions");
    assert_eq!(cut, 0.0, "none cut");
    assert_eq!(metric(&r, "measured_ns"), 1e9);
    // One still under way when the grace is over is cut there, and is in
    // no figure but its own count; a run whose server ended nothing, its
    // client waiting to the end, fails as target_lost.
    let stuck = write_file(dir.path(), "stuck.sql", "SELECT pg_sleep(30);\n");
    let began = Instant::now();
    let r = run(&stuck, 1);
    let took = began.elapsed();
    assert_eq!(metric(&r, "transactions"), 0.0);
    assert_eq!(metric(&r, "unfinished_transactions"), 1.0);
    assert!(has_warning(&r, "target_lost"), "{}", r["warnings"]);
    assert!(
        took < Duration::from_secs(25),
        "cut at the grace's end: {took:?}"
    );
}

#[test]
fn rate_mode_keeps_the_schedule_and_counts_latency_from_it() {
    let (pg, home) = (pg(), temp());
    let db = pgbench_db(&pg, home.path());
    // Below capacity: exactly R × T due times, each run, latency counted
    // from them.
    let run = json_run(
        pg.dyno(home.path(), &db).args([
            "db", "run", "-S", "-c", "4", "-j", "2", "-T", "3", "-R", "200", "--json",
        ]),
        0,
    );
    assert_eq!(run["settings"]["model"], "open");
    assert_eq!(metric(&run, "requested_transactions_per_sec"), 200.0);
    let done = metric(&run, "transactions");
    // A client still busy when the time is up leaves its last due times
    // (more of them on a loaded machine), and none is ever added.
    assert!((570.0..=600.0).contains(&done), "{done} of 600 scheduled");
    // Every transaction started has its lag: those committed, and those
    // still under way at the deadline (cut there, counted apart).
    let cut = metric_or_zero(&run, "unfinished_transactions");
    assert_eq!(distribution(&run, "schedule_lag_ns", "count"), done + cut);
    assert!(
        distribution(&run, "latency_ns", "max")
            >= distribution(&run, "latency_uncorrected_ns", "max")
    );

    // Above capacity: one client, 200 ms a transaction, 20 due a second.
    // The backlog shows in the latency from the schedule, not in the
    // latency from the start; the rate is not reached, and says so.
    let dir = temp();
    let slow = write_file(dir.path(), "slow.sql", "SELECT pg_sleep(0.2);\n");
    let slow = slow.to_str().unwrap();
    let run = json_run(
        pg.dyno(home.path(), &db).args([
            "db", "run", "-f", slow, "-c", "1", "-T", "2", "-R", "20", "--json",
        ]),
        0,
    );
    let corrected = distribution(&run, "latency_ns", "max");
    let uncorrected = distribution(&run, "latency_uncorrected_ns", "max");
    assert!(uncorrected < 0.6e9, "{uncorrected}");
    assert!(corrected > 1.0e9, "{corrected}: the backlog of a 2 s run");
    assert!(metric(&run, "transactions") <= 11.0);
    let warnings = run["warnings"].to_string();
    assert!(warnings.contains("rate_not_reached"), "{warnings}");

    // With a latency limit, a due time already later than it is skipped;
    // what runs takes longer than 100 ms, so every one is late.
    let run = json_run(
        pg.dyno(home.path(), &db).args([
            "db", "run", "-f", slow, "-c", "1", "-T", "2", "-R", "20", "-L", "100", "--json",
        ]),
        0,
    );
    let (done, skipped) = (
        metric(&run, "transactions"),
        metric(&run, "skipped_transactions"),
    );
    assert!(skipped >= 20.0, "{skipped} skipped");
    assert!(done + skipped <= 40.0);
    assert_eq!(metric(&run, "late_transactions"), done);

    // -P prints a line per interval, also into a pipe.
    let out = pg
        .dyno(home.path(), &db)
        .args(words("db run -S -c 2 -T 2.2 -P 1 --no-save"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("progress: "))
        .collect();
    // One a second; the last may be cut by the run's end on a busy machine.
    assert!((1..=2).contains(&lines.len()), "{stderr}");
    assert!(lines[0].contains(" tps, latency "), "{stderr}");
}

#[test]
fn run_refuses_bad_values_of_its_new_flags_with_the_way_out() {
    let home = temp();
    for (args, says) in [
        (&["-R", "0"][..], "transactions per second above 0"),
        (&["-R", "fast"], "not a number"),
        (&["-L", "0"], "milliseconds above 0"),
        (&["-L", "soon"], "a bare number is milliseconds"),
        (&["-P", "0"], "at least 100ms"),
        (&["-r", "--pipeline"], "cannot be used with"),
        (&["-R", "0.1", "-T", "1"], "schedules no transaction"),
    ] {
        dyno(home.path())
            .args(["db", "run", "--no-save", "host=127.0.0.1 port=1"])
            .args(args)
            .assert()
            .failure()
            .stderr(predicate::str::contains(says));
    }
}

#[test]
fn quick_has_a_db_line_only_where_the_environment_names_a_server() {
    let (pg, home) = (pg(), temp());
    let db = pgbench_db(&pg, home.path());
    let quick_on = |db: &str| {
        json_run(
            pg.dyno(home.path(), db)
                .args(SMALL_QUICK)
                .args(["--db-duration", "1s", "--json"]),
            0,
        )
    };
    let books = "SELECT sum(abalance) || ' ' || count(*) || ' ' || (SELECT count(*) FROM pgbench_history) FROM pgbench_accounts";
    let before = pg.psql(&db, books);
    let run = quick_on(&db);
    assert!(
        find_part_metric(&run, "db", "transactions")["value"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(run["settings"]["db"]["scripts"][0]["name"], "select-only");
    assert_eq!(pg.psql(&db, books), before, "quick only reads");
    let id = run["id"].as_str().unwrap();
    let table = stdout_of(dyno(home.path()).args(["show", id]));
    assert!(table.contains("db select-only, c=8"), "{table}");

    // A database without the tables: the line is skipped with the way out,
    // and nothing is made there.
    let empty = pg.database();
    let run = quick_on(&empty);
    let warnings = run["warnings"].to_string();
    assert!(
        warnings.contains("db_line_skipped") && warnings.contains("dyno db init"),
        "{warnings}"
    );
    assert_eq!(
        pg.psql(
            &empty,
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ),
        "0"
    );

    // No server named: no line, and a note on how to add one.
    dyno(home.path())
        .args(SMALL_QUICK)
        .assert()
        .success()
        .stdout(predicate::str::contains("db select-only").not())
        .stderr(predicate::str::contains(
            "no PostgreSQL server is configured",
        ));
}

/// A metric of `run` with the label `key` = `value`.
fn labelled<'a>(run: &'a Value, name: &str, key: &str, value: &str) -> &'a Value {
    metrics(run)
        .find(|m| m["name"] == name && m["labels"][key] == value)
        .unwrap_or_else(|| panic!("no metric {name} with {key}={value}"))
}

fn has_metric(run: &Value, name: &str) -> bool {
    metrics(run).any(|m| m["name"] == name)
}

#[test]
fn scale_with_a_builtin_is_ignored_with_pgbenchs_warning_and_kept_for_custom_scripts() {
    let (pg, home) = (pg(), temp());
    let db = pgbench_db(&pg, home.path());
    let run = json_run(
        pg.dyno(home.path(), &db).args([
            "db", "run", "-b", "tpcb", "-s", "5", "-c", "2", "-t", "100", "--seed", "1", "--json",
        ]),
        0,
    );
    assert_eq!(run["settings"]["scale"], 1);
    let warnings = run["warnings"].to_string();
    assert!(
        warnings.contains("scale_ignored")
            && warnings
                .contains("scale option ignored, using count from pgbench_branches table (1)"),
        "{warnings}"
    );
    // Every transaction stayed within the tables: no branch 2 or beyond.
    assert_eq!(
        pg.psql(
            &db,
            "SELECT max(bid) || ' ' || (max(aid) <= 100000) FROM pgbench_history"
        ),
        "1 true"
    );
    // A custom script's :scale is -s.
    pg.psql(&db, "CREATE TABLE seen (s int)");
    let dir = temp();
    let script = write_file(dir.path(), "s.sql", "INSERT INTO seen VALUES (:scale);\n");
    let run = json_run(
        pg.dyno(home.path(), &db)
            .args(["db", "run", "-s", "7", "-t", "2", "--json", "-f"])
            .arg(&script),
        0,
    );
    assert_eq!(run["settings"]["scale"], 7);
    assert!(!run["warnings"].to_string().contains("scale_ignored"));
    assert_eq!(pg.psql(&db, "SELECT DISTINCT s FROM seen"), "7");
    pg.dyno(home.path(), &db)
        .args(["db", "run", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("ignored with a warning"));
}

#[test]
fn pgoptions_reaches_the_server_and_variables_dyno_cannot_honour_are_refused() {
    let (pg, home) = (pg(), temp());
    let db = pg.database();
    pg.psql(&db, "CREATE TABLE iso (level text)");
    let dir = temp();
    let script = write_file(
        dir.path(),
        "iso.sql",
        "INSERT INTO iso SELECT current_setting('transaction_isolation');\n",
    );
    let run = json_run(
        pg.dyno(home.path(), &db)
            .env("PGOPTIONS", "-c default_transaction_isolation=serializable")
            .args(["db", "run", "-c", "2", "-t", "3", "--json", "-f"])
            .arg(&script),
        0,
    );
    assert_eq!(
        run["settings"]["server_settings"]["default_transaction_isolation"],
        "serializable"
    );
    // The load's own connections got it too.
    assert_eq!(
        pg.psql(
            &db,
            "SELECT string_agg(DISTINCT level, ',') || count(*) FROM iso"
        ),
        "serializable6"
    );
    pg.dyno(home.path(), &db)
        .env("PGSERVICE", "bench")
        .args(["db", "run", "-t", "1", "-f"])
        .arg(&script)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("PGSERVICE is set ('bench')"))
        .stderr(predicate::str::contains("unset PGSERVICE"));
    assert_eq!(pg.psql(&db, "SELECT count(*) FROM iso"), "6", "nothing ran");
}

#[test]
fn each_run_starts_from_pgbenchs_clean_up_unless_no_vacuum() {
    let (pg, home) = (pg(), temp());
    let db = pgbench_db(&pg, home.path());
    for _ in 0..3 {
        let run = pg.db_json(home.path(), &db, "-c 1 -t 10");
        assert_eq!(pg.psql(&db, "SELECT count(*) FROM pgbench_history"), "10");
        assert_eq!(
            run["settings"]["clean_up"],
            serde_json::json!([
                "vacuum pgbench_branches",
                "vacuum pgbench_tellers",
                "truncate pgbench_history"
            ])
        );
    }
    // -n, as pgbench's: nothing cleaned, the history grows.
    let text = stdout_of(&mut pg.db_run(home.path(), &db, "-n -c 1 -t 10"));
    assert!(text.contains("Clean-up    none (-n)"), "{text}");
    assert_eq!(pg.psql(&db, "SELECT count(*) FROM pgbench_history"), "20");
    let text = stdout_of(&mut pg.db_run(home.path(), &db, "-c 1 -t 10"));
    assert!(
        text.contains("Clean-up    before the run, as pgbench's: vacuum pgbench_branches, vacuum pgbench_tellers, truncate pgbench_history (-n skips it)"),
        "{text}"
    );
    // A custom script on a database without the tables runs; the missing
    // tables are named, not an error.
    let empty = pg.database();
    let dir = temp();
    let script = write_file(dir.path(), "one.sql", "SELECT 1;\n");
    let run = json_run(
        pg.db_run(home.path(), &empty, "-t 2 --json -f")
            .arg(&script),
        0,
    );
    assert_eq!(
        run["settings"]["clean_up"],
        serde_json::json!(["pgbench_branches, pgbench_tellers, pgbench_history missing"])
    );
}

#[test]
fn max_tries_zero_means_no_limit_with_a_duration_and_bad_values_say_what_to_give() {
    let (pg, home) = (pg(), temp());
    let db = pg.database();
    let dir = temp();
    let script = write_file(dir.path(), "one.sql", "SELECT 1;\n");
    for (flags, says) in [
        ("--max-tries -10 -t 1 -f", "'-10' is negative"),
        (
            "--max-tries 0 -t 1 -f",
            "add a duration (-T) or a latency limit (-L)",
        ),
    ] {
        pg.db_run(home.path(), &db, flags)
            .arg(&script)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
    }
    let run = json_run(
        pg.db_run(home.path(), &db, "--max-tries 0 -T 1 --json -f")
            .arg(&script),
        0,
    );
    assert_eq!(run["settings"]["max_tries"], 0);
    assert_eq!(metric(&run, "retried_transactions"), 0.0);
}

#[test]
fn retried_transactions_and_retries_are_counted_apart_as_pgbench_does() {
    let (pg, home, dir) = (pg(), temp(), temp());
    let db = pg.database();
    let script = contended_counter(&pg, &db, dir.path());
    let run = run_contended(&pg, home.path(), &db, &script, "--max-tries 1000", 0);
    let text = shown(&pg, home.path(), &db, &run);
    let retried = metric(&run, "retried_transactions");
    let retries = metric(&run, "retries");
    assert!(retried > 0.0, "no conflict was met");
    assert!(
        retried <= retries && retried <= 100.0,
        "{retried} {retries}"
    );
    let retries_text = if retries == 1.0 {
        "1 retry".to_owned()
    } else {
        format!("{retries} retries")
    };
    assert!(
        text.contains(&format!(" retried ({retries_text} in all)")),
        "{text}"
    );
}

/// `dyno show`'s text of a run.
fn shown(pg: &Pg, home: &Path, db: &str, run: &Value) -> String {
    stdout_of(
        pg.dyno(home, db)
            .args(["show", run["id"].as_str().unwrap()]),
    )
}

#[test]
fn a_run_that_committed_nothing_has_no_cost_per_transaction() {
    let (pg, home) = (pg(), temp());
    let db = pg.database();
    let dir = temp();
    let script = write_file(dir.path(), "zero.sql", "\\set x 1 / 0\nSELECT :x;\n");
    let run = json_run(
        pg.db_run(home.path(), &db, "-t 3 --json -f").arg(&script),
        1,
    );
    assert_eq!(metric(&run, "transactions"), 0.0);
    assert!(!has_metric(&run, "client_cpu_per_transaction_ns"));
    let text = shown(&pg, home.path(), &db, &run);
    assert!(text.contains("Client CPU  "), "{text}");
    assert!(!text.contains("per transaction"), "{text}");
    assert!(!text.contains("client_saturated"), "{text}");
}

#[test]
fn labels_say_what_the_figures_include_and_hints_fit_the_table() {
    let (pg, home) = (pg(), temp());
    let db = pgbench_db(&pg, home.path());
    let run = pg.db_json(home.path(), &db, "-S -C -t 5");
    let text = shown(&pg, home.path(), &db, &run);
    assert!(text.contains("including reconnection times"), "{text}");
    assert!(!text.contains("without the connections' time"), "{text}");
    let run = pg.db_json(home.path(), &db, "-S --pipeline -t 5");
    let text = shown(&pg, home.path(), &db, &run);
    let settings = text
        .lines()
        .find(|l| l.starts_with("Settings    "))
        .unwrap();
    assert!(settings.ends_with(", pipeline"), "{settings}");
    let history = stdout_of(pg.dyno(home.path(), &db).args(["history", "--kind", "db"]));
    assert!(history.contains(" tps"), "{history}");
    assert!(!history.contains("ops/s"), "{history}");
    // A table that is not pgbench's gets no `dyno db init` hint.
    let dir = temp();
    let script = write_file(dir.path(), "missing.sql", "SELECT * FROM no_such_table;\n");
    pg.db_run(home.path(), &db, "-t 1 -f")
        .arg(&script)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("no_such_table"))
        .stdout(predicate::str::contains("dyno db init").not());
}

#[test]
fn several_scripts_get_their_own_tps_and_latency() {
    let (pg, home) = (pg(), temp());
    let db = pgbench_db(&pg, home.path());
    let flags = "-b select-only@3 -b simple-update@1 -c 2 -t 100 --seed 3";
    let run = pg.db_json(home.path(), &db, flags);
    let mut total = 0.0;
    for name in ["select-only", "simple-update"] {
        let n = labelled(&run, "transactions", "script", name)["value"]
            .as_f64()
            .unwrap();
        total += n;
        let tps = labelled(&run, "transactions_per_sec", "script", name)["value"]
            .as_f64()
            .unwrap();
        assert!(n > 0.0 && tps > 0.0, "{name}: {n} {tps}");
        let latency = labelled(&run, "latency_ns", "script", name);
        assert_eq!(latency["histogram"]["count"].as_f64().unwrap(), n, "{name}");
    }
    assert_eq!(total, 200.0);
    let text = shown(&pg, home.path(), &db, &run);
    assert!(
        text.contains("Script select-only, weight 3 (75.0%): "),
        "{text}"
    );
    assert!(
        text.contains("Script simple-update, weight 1 (25.0%): "),
        "{text}"
    );
    assert!(text.contains("\nselect-only "), "{text}");
}

#[test]
fn a_db_run_has_a_per_second_timeline_of_tps_and_p99() {
    let (pg, home) = (pg(), temp());
    let db = pgbench_db(&pg, home.path());
    let run = pg.db_json(home.path(), &db, "-S -T 2");
    let measured = metric(&run, "measured_ns") / 1e9;
    let find = |name: &str| {
        find_metric(&run, name)["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect::<Vec<f64>>()
    };
    let rates = find("timeline_transactions_per_sec");
    let p99s = find("timeline_latency_p99_ns");
    assert_eq!(rates.len(), measured.ceil() as usize, "{measured}");
    assert_eq!(p99s.len(), rates.len());
    // Each second's rate times its length gives back every commit.
    let mut sum = 0.0;
    for (i, r) in rates.iter().enumerate() {
        sum += r * (measured - i as f64).clamp(0.0, 1.0);
    }
    assert!(
        (sum - metric(&run, "transactions")).abs() < 0.5,
        "{sum} {}",
        metric(&run, "transactions")
    );
    for (r, p) in rates.iter().zip(&p99s) {
        assert_eq!(*r > 0.0, *p > 0.0, "{rates:?} {p99s:?}");
    }
    assert!(rates[0] > 0.0 && p99s[0] > 0.0);
}

/// `db run -f SERIAL FLAGS… --json` on `db`, where SERIAL takes one
/// advisory lock in every transaction and holds it 2 ms: the server runs
/// them one at a time, so no rate above ~500 tps (less the round trips)
/// can be sustained, whatever the clients. The run must succeed.
///
/// Its exit status is the answer's: 1 for a search that ended unstable or
/// found no rate meeting the objective, else 0.
fn serialised_find_max(pg: &Pg, home: &Path, db: &str, flags: &str) -> Value {
    let dir = temp();
    let script = write_file(
        dir.path(),
        "serial.sql",
        // One transaction: the lock is held until END (each statement
        // alone would be its own transaction, and release it at once).
        "BEGIN;\nSELECT pg_advisory_xact_lock(42);\nSELECT pg_sleep(0.002);\nEND;\n",
    );
    let out = pg
        .db_run(home, db, "-f")
        .arg(&script)
        .args(words(flags))
        .arg("--json")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let run: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let outcome = &run["settings"]["capacity"]["answer"]["outcome"];
    let failed = *outcome == "unstable" || *outcome == "none_meets";
    assert_eq!(
        out.status.code(),
        Some(i32::from(failed)),
        "{outcome}: {stderr}"
    );
    run
}

#[test]
fn find_max_stays_under_a_serialised_scripts_ceiling() {
    let (pg, home) = (pg(), temp());
    let db = pg.database();
    let search = "--find-max --slo p99<=200ms --start 100 --step 1s --warmup 200ms";
    let flags = format!("-c 8 -j 2 -n {search} --precision 20 --budget 12s");
    let run = serialised_find_max(&pg, home.path(), &db, &flags);
    let cap = &run["settings"]["capacity"];
    let steps = cap["steps"].as_array().unwrap();
    assert_eq!(steps[0]["requested"], 100.0, "{cap}");
    // No step above the ceiling passes, and the answer (a pass) is under it.
    for s in steps {
        if s["requested"].as_f64().unwrap() > 500.0 {
            assert_eq!(s["passed"], false, "{s}");
        }
    }
    // Every run at 100 a second passes: some rate is always claimed.
    let max = cap["answer"]["max_rate"].as_f64().unwrap();
    assert!(max < 500.0, "{cap}");
    // Found, it claims the capacity. Ended by the budget first (a busy
    // machine's disagreeing steps run again), only a lower bound. Two
    // rates whose runs kept disagreeing (the lock's ceiling moves with the
    // machine's load, ~350–450 a second): unstable, with its cause, and
    // still no claim.
    match cap["answer"]["outcome"].as_str().unwrap() {
        "found" => assert_eq!(run["headline"], "max_sustainable_rate"),
        "unfinished" => assert_eq!(run["headline"], Value::Null),
        "unstable" => {
            assert_eq!(run["headline"], Value::Null);
            let cause = cap["answer"]["cause"].as_str().unwrap();
            assert!(["capacity_moved", "machine_busy"].contains(&cause), "{cap}");
        }
        other => panic!("{other}: {cap}"),
    }
    assert_eq!(run["settings"]["warmup_ns"], 200_000_000);
}

#[test]
fn find_max_flags_of_db_run_are_checked_before_any_load() {
    let home = temp();
    assert_refused(
        home.path(),
        &[
            (
                &["db", "run", "--find-max", "--slo", "p99<=1ms", "-R", "100"],
                &["drop -R/--rate"],
            ),
            (
                &["db", "run", "--find-max", "--slo", "p99<=1ms", "-t", "10"],
                &["drop -t/--transactions"],
            ),
            (
                &["db", "run", "--find-max", "--slo", "p99<=1ms", "-T", "10s"],
                &["drop -T/--time"],
            ),
            (&["db", "run", "-t", "10", "--warmup", "1s"], &["--warmup"]),
        ],
    );
}

#[test]
fn rate_plan_flags_of_db_run_are_checked_before_any_load() {
    let home = temp();
    assert_refused(
        home.path(),
        &[
            (
                &["db", "run", "--rate-plan", "100/10s"],
                &["a ramp is FROM..TO/DURATION"],
            ),
            (
                &["db", "run", "--rate-plan", "100@10s", "-R", "100"],
                &["--rate-plan", "drop -R/--rate"],
            ),
            (
                &["db", "run", "--rate-plan", "100@10s", "-T", "10s"],
                &["drop -T/--time"],
            ),
            (
                &["db", "run", "--rate-plan", "100@10s", "-t", "10"],
                &["drop -t/--transactions"],
            ),
            (
                &["db", "run", "--rate-plan", "100@10s", "--warmup", "2s"],
                &["drop --warmup"],
            ),
        ],
    );
}

/// Every due time of the plan runs, on connections kept across stages;
/// each stage's transactions are the Poisson share of its expected count.
#[test]
fn a_db_rate_plan_runs_every_due_time_and_gives_each_stage_its_figures() {
    let (pg, home) = (pg(), temp());
    let db = pgbench_db(&pg, home.path());
    let run = pg.db_json(
        home.path(),
        &db,
        "-S -c 4 -j 2 --rate-plan 100@1s,0..200/1s,10@1s",
    );
    assert_eq!(metric(&run, "requested_transactions_per_sec"), 70.0);
    let plan = &run["settings"]["rate_plan"];
    assert_eq!(plan["plan"], "100@1s,0..200/1s,10@1s");
    let stages = plan["stages"].as_array().unwrap();
    let ended: Vec<u64> = stages
        .iter()
        .map(|s| s["ended"].as_u64().unwrap())
        .collect();
    // 210 due times in all: ended, or (on a client still busy at the end)
    // dropped or cut; counted, never added.
    let left: u64 = stages
        .iter()
        .map(|s| s["dropped"].as_u64().unwrap() + s["unfinished"].as_u64().unwrap())
        .sum();
    assert_eq!(ended.iter().sum::<u64>() + left, 210, "{ended:?}");
    assert_eq!(
        metric(&run, "transactions"),
        ended.iter().sum::<u64>() as f64
    );
    // Binomial shares of 210: 100, 100 and 10 expected, ±5 sd.
    assert!((64..=136).contains(&ended[0]), "{ended:?}");
    assert!((64..=136).contains(&ended[1]), "{ended:?}");
    assert!(ended[2] <= 32, "{ended:?}");
    for s in stages.iter().take(2) {
        assert!(s["p99_ns"].as_u64().unwrap() > 0, "{s}");
        assert_eq!(s["errors"], 0);
    }
    let shown = shown(&pg, home.path(), &db, &run);
    assert!(
        shown.contains("Rate plan   100@1s,0..200/1s,10@1s (3 stages"),
        "{shown}"
    );
}

/// The closed-model variant on the same serialised script: throughput
/// stays under ~500 tps whatever the clients, latency grows ~2 ms a
/// client, so under p99 ≤ 50 ms the sweep passes at few clients, fails
/// two steps in a row past the knee, and fits the USL.
#[test]
fn find_max_over_a_range_of_clients_sweeps_the_closed_model() {
    let (pg, home) = (pg(), temp());
    let db = pg.database();
    let flags = "-c 1..128 -j 2 -n --find-max --slo p99<=50ms --step 500ms --warmup 100ms";
    let run = serialised_find_max(&pg, home.path(), &db, flags);
    let cap = &run["settings"]["capacity"];
    let steps = cap["steps"].as_array().unwrap();
    let levels = sweep_levels(cap);
    assert_eq!(levels[..3], [1, 2, 4], "{cap}");
    // 64 clients queue 64 × 2 ms for the lock: past 50 ms.
    assert!(levels.len() < 8, "{levels:?}");
    assert_eq!(steps[steps.len() - 1]["passed"], false, "{cap}");
    assert_eq!(cap["answer"]["outcome"], "found", "{cap}");
    let max = cap["answer"]["max_rate"].as_f64().unwrap();
    assert!(max < 500.0, "{max}: the lock allows at most 500 a second");
    assert!(cap["sweep"]["usl"].is_object(), "{cap}");
    assert_eq!(run["headline"], "max_sustainable_rate");
    let shown = shown(&pg, home.path(), &db, &run);
    assert!(shown.contains("STEP  CONN"), "{shown}");
}

/// `db run --watch-pid` on the server's postmaster: its figures over the
/// run, labelled with it, and a verdict line; the report prints it. And
/// `--watch URL` on a real postgres_exporter reading the same server: the
/// run's commits and cache hits as PostgreSQL counted them.
#[test]
fn db_run_watches_the_server() {
    let (pg, home) = (pg(), temp());
    let db = pg.database();
    let dsn = format!("{}?sslmode=disable", pg.url_of(&db));
    let exporter = dyno_testutil::exporter::Exporter::postgres(&dsn);
    assert!(
        exporter.scrape().contains("pg_up 1"),
        "{}",
        exporter.scrape()
    );
    let postmaster = std::fs::read_to_string(
        std::path::Path::new(&std::env::var("DYNO_TEST_PG").unwrap()).join("data/postmaster.pid"),
    )
    .unwrap();
    let pid = postmaster.lines().next().unwrap().trim().to_owned();
    let dir = temp();
    let script = write_file(dir.path(), "one.sql", "SELECT 1;\n");
    // Sessions publish their counters about once a second, and the
    // exporter reads them as published: a run of one second could see
    // only its first commits.
    let run = json_run(
        pg.db_run(home.path(), &db, "-n -c 2 -T 3 -f")
            .arg(&script)
            .args(["--watch-pid", &pid, "--watch-interval", "100ms"])
            .args(["--watch", &exporter.url, "--json"]),
        0,
    );
    let target = |name: &str| {
        metrics(&run)
            .find(|m| {
                m["name"] == name
                    && m["labels"]["watched"]
                        .as_str()
                        .is_some_and(|w| exporter.url.contains(w))
            })
            .unwrap_or_else(|| panic!("no {name}: {}", run["metrics"]))
            .clone()
    };
    // PostgreSQL's own count of commits agrees with dyno's transactions
    // per second, within what a second's edges (the last second's commits
    // are published as the sessions end, after the last scrape) and the
    // exporter's own queries add.
    let tps = find_metric(&run, "transactions_per_sec")["value"]
        .as_f64()
        .unwrap();
    let commits = target("target_pg_commits_per_sec")["value"]
        .as_f64()
        .unwrap();
    assert!(
        commits > 0.3 * tps && commits < 2.0 * tps + 50.0,
        "{commits} commits/s against {tps} tps"
    );
    assert!(
        target("target_pg_cache_hit_percent")["value"]
            .as_f64()
            .unwrap()
            > 50.0
    );
    let cpu = find_metric(&run, "server_cpu_percent");
    assert_eq!(cpu["labels"]["watched"], "postgres");
    assert!(
        find_metric(&run, "server_cpu_per_op_ns")["value"]
            .as_f64()
            .unwrap()
            >= 0.0
    );
    let codes = warning_codes(&run);
    assert!(
        codes.contains(&"nothing_saturated") || codes.contains(&"server_cpu_bound"),
        "{codes:?}"
    );
    let shown = shown(&pg, home.path(), &db, &run);
    assert!(
        shown.contains("Server CPU  postgres: ") && shown.contains("per transaction"),
        "{shown}"
    );
}

/// A metric of `run` labelled `watched` by a `--pg-stats` source (and
/// `event`, when given).
fn pg_stat(run: &Value, name: &str, event: Option<&str>) -> Option<f64> {
    metrics(run)
        .find(|m| {
            m["name"] == name
                && m["labels"]["watched"].is_string()
                && m["labels"]["event"].as_str() == event
        })
        .and_then(|m| m["value"].as_f64())
}

/// `cmd` (a `dyno` on a database) runs `script` without clean-up under
/// `--pg-stats`, with `clients` for `seconds`; the run must succeed.
fn pg_stats_run(cmd: &mut Command, script: &Path, clients: u32, seconds: u32) -> Value {
    json_run(
        cmd.args(words(&format!("db run -n -c {clients} -T {seconds} -f")))
            .arg(script)
            .args(["--pg-stats", "--json"]),
        0,
    )
}

#[test]
fn pg_stats_counts_the_servers_commits_and_names_sessions_queued_on_one_row() {
    let (pg, home) = (pg(), temp());
    let db = pg.database();
    pg.psql(
        &db,
        "CREATE TABLE hot (id int PRIMARY KEY, v int); INSERT INTO hot VALUES (1, 0)",
    );
    let dir = temp();
    // Every transaction holds the one row for 2 ms: of four clients,
    // three wait for its lock at any time.
    let script = write_file(
        dir.path(),
        "hot.sql",
        "BEGIN;\nUPDATE hot SET v = v + 1 WHERE id = 1;\nSELECT pg_sleep(0.002);\nEND;\n",
    );
    let run = pg_stats_run(&mut pg.dyno(home.path(), &db), &script, 4, 3);
    // PostgreSQL's own count, less the probe's commits, is dyno's: the
    // last reading waits until the sessions have published theirs. The
    // run's set-up queries before the load (a handful of commits) may be
    // published inside the window.
    let tps = metric(&run, "transactions_per_sec");
    let commits = pg_stat(&run, "target_pg_commits_per_sec", None).unwrap();
    assert!(
        (commits - tps).abs() <= 0.05 * tps + 20.0 / 3.0,
        "{commits} commits/s against {tps} tps"
    );
    let rows = pg_stat(&run, "target_pg_rows_written_per_op", None).unwrap();
    assert!((0.9..=1.1).contains(&rows), "{rows} rows per transaction");
    assert!(pg_stat(&run, "target_pg_wal_bytes_per_op", None).unwrap() > 0.0);
    let locked: f64 = metrics(&run)
        .filter(|m| {
            m["name"] == "target_pg_wait_percent"
                && m["labels"]["event"]
                    .as_str()
                    .is_some_and(|e| e.starts_with("Lock:"))
        })
        .filter_map(|m| m["value"].as_f64())
        .sum();
    assert!(
        locked >= 40.0,
        "{locked}% waiting on locks: {}",
        run["metrics"]
    );
    let sessions = pg_stat(&run, "target_pg_sessions_mean", None).unwrap();
    assert!((3.0..=4.0).contains(&sessions), "{sessions} sessions");
    assert!(has_warning(&run, "lock_waits"), "{}", run["warnings"]);
    let timeline = find_metric(&run, "timeline_target_pg_commits_per_sec");
    assert_eq!(timeline["samples"].as_array().unwrap().len(), 3);
    let shown = shown(&pg, home.path(), &db, &run);
    assert!(
        shown.contains("PostgreSQL  ") && shown.contains("commits/s") && shown.contains("Lock:"),
        "{shown}"
    );
}

#[test]
fn pg_stats_without_the_right_to_a_view_warns_and_keeps_the_rest() {
    let (pg, home) = (pg(), temp());
    let db = pg.database();
    let role = format!("{db}_watcher");
    // The views are each database's own: revoking here touches no other
    // test's database.
    pg.psql(
        &db,
        &format!(
            "CREATE ROLE {role} LOGIN; REVOKE SELECT ON pg_stat_wal, pg_stat_bgwriter FROM PUBLIC"
        ),
    );
    let dir = temp();
    let script = write_file(dir.path(), "one.sql", "SELECT 1;\n");
    let run = pg_stats_run(
        pg.dyno(home.path(), &db).env("PGUSER", &role),
        &script,
        1,
        1,
    );
    let told = warning_messages(&run, "watch_source");
    assert!(
        told.iter()
            .any(|m| m.contains("pg_stat_wal could not be read")
                && m.contains("pg_stat_bgwriter could not be read")
                && m.contains(&format!("GRANT pg_read_all_stats TO {role}"))),
        "{told:?}"
    );
    assert!(pg_stat(&run, "target_pg_commits_per_sec", None).unwrap() > 0.0);
    assert!(pg_stat(&run, "target_pg_wal_bytes_per_sec", None).is_none());
    assert!(pg_stat(&run, "target_pg_checkpoints", None).is_none());
    assert!(run["id"].is_string());
}

#[test]
fn pg_stats_elsewhere_needs_a_reachable_server_named_before_the_run() {
    let (pg, home) = (pg(), temp());
    let db = pg.database();
    let (_server, base) = super::http::reference_server();
    let url = format!("{base}/hello");
    let refused = |args: &[&str], says: &str| {
        let out = pg
            .dyno(home.path(), &db)
            .args(["http", &url, "-n", "5"])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "{err}");
    };
    refused(&["--pg-stats"], "--pg-stats needs a connection string here");
    refused(&["--pg-stats=host=/nonexistent"], "nothing was run");
    refused(&["--pg-stats=nonsense://x"], "not valid");
    // Given the application's database, an HTTP run reads it too.
    let given = format!("--pg-stats={}", pg.url_of(&db));
    let run = json_run(
        pg.dyno(home.path(), &db)
            .args(["http", &url, "-d", "1s", "-c", "1", "--json", &given]),
        0,
    );
    let mean = find_metric(&run, "target_pg_sessions_mean");
    assert_eq!(
        mean["labels"]["watched"].as_str().unwrap(),
        format!(
            "127.0.0.1:{}/{db}",
            pg.url
                .rsplit_once(':')
                .unwrap()
                .1
                .split('/')
                .next()
                .unwrap()
        )
    );
}

#[test]
fn quick_watches_each_line_apart_and_reads_the_db_lines_server() {
    let (pg, home) = (pg(), temp());
    let db = pgbench_db(&pg, home.path());
    let run = json_run(
        pg.dyno(home.path(), &db).args(words(
            "quick --int64-iterations 100000 --repetitions 2 --http-duration 0 --disk-duration 0 \
             --db-duration 2s --pg-stats --watch-name postgres --watch-interval 200ms --json",
        )),
        0,
    );
    let of = |name: &str| find_part_metric(&run, "db", name);
    // The db line's figures, its own and the watched ones, are of its
    // part; the server's processes include the backends its connections
    // started.
    let tps = of("transactions_per_sec")["value"].as_f64().unwrap();
    let commits = of("target_pg_commits_per_sec")["value"].as_f64().unwrap();
    assert!(
        (commits - tps).abs() <= 0.1 * tps,
        "{commits} commits/s against {tps} tps"
    );
    let cpu = of("server_cpu_percent");
    assert_eq!(cpu["labels"]["watched"], "postgres");
    assert!(cpu["value"].as_f64().unwrap() > 10.0, "{cpu}");
    assert!(of("server_cpu_per_op_ns")["value"].as_f64().unwrap() > 0.0);
    assert!(
        metrics(&run).all(|m| !m["name"].as_str().unwrap().starts_with("db_")),
        "{}",
        run["metrics"]
    );
    let verdicts: Vec<&str> = warnings(&run)
        .filter(|w| {
            [
                "nothing_saturated",
                "server_cpu_bound",
                "lock_waits",
                "io_waits",
                "lwlock_waits",
            ]
            .contains(&w["code"].as_str().unwrap_or(""))
        })
        .filter_map(|w| w["message"].as_str())
        .collect();
    assert_eq!(verdicts.len(), 1, "{}", run["warnings"]);
    assert!(verdicts[0].starts_with("db line: "), "{verdicts:?}");
    // This machine's own state, once for the whole run: of no part.
    let load = find_metric(&run, "machine_load_max");
    assert!(load["value"].as_f64().is_some());
    assert!(load["labels"]["part"].is_null(), "{load}");
}

#[test]
fn show_script_prints_a_builtin_that_runs_as_a_file() {
    let (pg, home) = (pg(), temp());
    let db = pgbench_db(&pg, home.path());
    let shown = stdout_of(&mut pg.db_run(home.path(), &db, "--show-script simple"));
    assert!(
        shown.starts_with("-- simple-update:") && shown.contains("UPDATE pgbench_accounts"),
        "{shown}"
    );
    let dir = temp();
    let file = write_file(dir.path(), "shown.sql", &shown);
    let run = json_run(
        pg.db_run(home.path(), &db, "-t 5 -f")
            .arg(&file)
            .arg("--json"),
        0,
    );
    assert_eq!(metric(&run, "transactions"), 5.0);
    // A name that is none, or more than one: exit 2, naming the built-ins.
    for (name, says) in [("nope", "the built-ins are"), ("s", "ambiguous")] {
        let out = pg
            .db_run(home.path(), &db, "--show-script")
            .arg(name)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains(says));
    }
}

#[test]
fn exit_on_abort_stops_every_client_at_the_first_abort() {
    let (pg, home) = (pg(), temp());
    let db = pg.database();
    let dir = temp();
    // Client 0 fails at once; client 1 would run its 300 transactions.
    let script = write_file(
        dir.path(),
        "abort.sql",
        "\\if :client_id = 0\nSELECT 1/0;\n\\else\nSELECT pg_sleep(0.002);\n\\endif\n",
    );
    let committed = |extra: &[&str]| {
        let run = json_run(
            pg.db_run(home.path(), &db, "-n -c 2 -t 300 -f")
                .arg(&script)
                .args(extra)
                .arg("--json"),
            1,
        );
        assert_eq!(metric(&run, "aborted_clients"), 1.0);
        metric(&run, "transactions")
    };
    assert_eq!(committed(&[]), 300.0);
    assert!(committed(&["--exit-on-abort"]) < 300.0);
}

/// Clients whose server goes away mid-run (their sessions terminated, as
/// a crash or a failover ends them) fail the run as `target_lost`, with
/// when, and the tps marked; before, the run said only that clients
/// aborted, and its tps averaged over the seconds with no server.
#[test]
fn a_server_gone_mid_run_is_target_lost() {
    let (pg, home) = (pg(), temp());
    let db = pg.database();
    pg.dyno(home.path(), &db)
        .args(["db", "init", "--scale", "1"])
        .assert()
        .success();
    let killer = {
        let (pg, db) = (pg.clone(), db.clone());
        std::thread::spawn(move || {
            // Once transactions commit (by the rows they add), not after a
            // guess at how long dyno takes to start.
            let deadline = Instant::now() + Duration::from_secs(30);
            while pg.psql(&db, "SELECT count(*) > 20 FROM pgbench_history") != "t"
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            std::thread::sleep(Duration::from_millis(300));
            pg.psql(
                &db,
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
            )
        })
    };
    let out = pg
        .dyno(home.path(), &db)
        .args(["db", "run", "-c", "2", "-T", "4", "--no-save", "--json"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let terminated = killer.join().unwrap();
    assert_ne!(terminated, "0", "no session was ended");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = stdout_json(&out);
    let lost = warning_messages(&run, "target_lost");
    assert_eq!(lost.len(), 1, "{}", run["warnings"]);
    assert!(lost[0].contains("to 4.0 s (the end)"), "{}", lost[0]);
    assert!(lost[0].contains("aborted"), "{}", lost[0]);
    assert!(metric(&run, "target_lost_ns") >= 1e9);
}
