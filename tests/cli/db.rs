use super::*;

/// The throwaway cluster `scripts/test` starts (`scripts/pg start`): its
/// folder, from DYNO_TEST_PG. The tests fail without one rather than pass
/// without a server.
struct Pg {
    /// PGHOST, PGPORT, PGUSER as the folder's env file has them.
    env: Vec<(String, String)>,
    /// postgres://postgres:PASSWORD@127.0.0.1:PORT/postgres
    url: String,
}

fn pg() -> Pg {
    let dir = std::env::var("DYNO_TEST_PG").expect(
        "dyno db's tests need a PostgreSQL server: run scripts/test, or start one with `scripts/pg start` and set DYNO_TEST_PG to the folder it prints",
    );
    let dir = Path::new(&dir);
    let text = std::fs::read_to_string(dir.join("env")).unwrap();
    let env = text
        .lines()
        .filter_map(|l| l.strip_prefix("export ")?.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .filter(|(k, _)| k != "PGDATABASE")
        .collect();
    let url = std::fs::read_to_string(dir.join("url"))
        .unwrap()
        .trim()
        .to_owned();
    Pg { env, url }
}

impl Pg {
    /// A new, empty database of its own for one test.
    fn database(&self) -> String {
        let name = format!("dyno_test_{}", fastrand::u64(..));
        self.psql("postgres", &format!("CREATE DATABASE {name}"));
        name
    }

    /// psql's answer to `sql` in `db`, unaligned.
    fn psql(&self, db: &str, sql: &str) -> String {
        let out = StdCommand::new("psql")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .args(["-X", "-tA", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", sql])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    fn dyno(&self, home: &Path, db: &str) -> Command {
        let mut cmd = dyno(home);
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("PGDATABASE", db)
            .env_remove("PGPASSWORD");
        cmd
    }
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
