//! dyno's own PostgreSQL client (the load loop's connection) against the
//! real server `scripts/pg` starts: every login it offers, errors in and
//! out of a pipeline, answers larger than its buffer, and a connection the
//! server ends.

use std::future::Future;
use std::path::PathBuf;

use dyno_db::script::Value;
use dyno_db::wire::{Wire, WireError};
use dyno_db::{Target, TargetError};

/// The cluster scripts/pg started, named by DYNO_TEST_PG.
struct Server {
    dir: PathBuf,
    /// postgres://postgres:PASSWORD@127.0.0.1:PORT/postgres
    url: String,
}

fn server() -> Server {
    let dir = std::env::var("DYNO_TEST_PG").expect(
        "these tests need a PostgreSQL server: run scripts/test, or start one with `scripts/pg start` and set DYNO_TEST_PG to the folder it prints",
    );
    let dir = PathBuf::from(dir);
    let url = std::fs::read_to_string(dir.join("url"))
        .unwrap()
        .trim()
        .to_owned();
    Server { dir, url }
}

impl Server {
    /// The URL with another role, password or query string.
    fn url_as(&self, role: &str, password: Option<&str>, query: &str) -> String {
        let (head, tail) = self.url.split_once('@').unwrap();
        let password = password.unwrap_or_else(|| head.rsplit_once(':').unwrap().1);
        format!("postgres://{role}:{password}@{tail}{query}")
    }

    /// A tokio-postgres client over TCP, to look at what the tests did.
    async fn admin(&self) -> tokio_postgres::Client {
        Target::new(&self.url, |_| None)
            .unwrap()
            .connect()
            .await
            .unwrap()
    }

    /// The connection string over the server's Unix socket.
    fn socket(&self) -> String {
        format!(
            "host={} port={} user=postgres dbname=postgres",
            self.dir.display(),
            self.port()
        )
    }

    fn port(&self) -> String {
        self.url
            .rsplit_once(':')
            .unwrap()
            .1
            .split('/')
            .next()
            .unwrap()
            .to_owned()
    }
}

fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

async fn connect(conninfo: &str) -> Result<Wire, TargetError> {
    Target::new(conninfo, |_| None)
        .unwrap()
        .connect_wire()
        .await
}

async fn run(wire: &mut Wire, sql: &str) -> Result<(), WireError> {
    wire.query(sql)?;
    wire.finish().await
}

#[test]
fn every_login_the_server_asks_for_works_and_a_wrong_password_is_refused() {
    let s = server();
    let socket = s.socket();
    block_on(async {
        // SCRAM-SHA-256, md5 and cleartext over TCP; trust on the socket.
        for conninfo in [
            s.url.clone(),
            s.url_as("dyno_md5", None, ""),
            s.url_as("dyno_cleartext", None, ""),
            socket,
        ] {
            let mut wire = connect(&conninfo)
                .await
                .unwrap_or_else(|e| panic!("{conninfo}: {e}"));
            run(&mut wire, "SELECT 1").await.unwrap();
            assert_eq!(wire.status(), b'I');
        }
        for role in ["postgres", "dyno_md5", "dyno_cleartext"] {
            let e = connect(&s.url_as(role, Some("not-the-password"), ""))
                .await
                .unwrap_err()
                .to_string();
            assert!(e.contains("password authentication failed"), "{role}: {e}");
            assert!(e.contains("check the user and the password"), "{e}");
            assert!(!e.contains("not-the-password"), "{e}");
        }
        // Nothing listens there.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let e = connect(&format!("postgres://postgres@127.0.0.1:{port}/postgres"))
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("is the server running"), "{e}");
    });
}

#[test]
fn errors_leave_the_connection_usable_and_a_pipeline_stops_at_its_first() {
    let s = server();
    let table = format!("dyno_wire_{}", fastrand::u64(..));
    block_on(async {
        let check = s.admin().await;
        let mut wire = connect(&s.url).await.unwrap();
        let e = run(&mut wire, "SELECT 1/0").await.unwrap_err();
        assert_eq!(e.code(), Some("22012"), "{e}");
        assert!(!e.is_lost());
        assert!(e.to_string().contains("division by zero"), "{e}");
        run(&mut wire, "SELECT 1").await.unwrap();
        run(
            &mut wire,
            &format!("CREATE TABLE {table} (a bigint, b float8)"),
        )
        .await
        .unwrap();

        // Parameters go as text, their types the server's to infer.
        let insert = format!("INSERT INTO {table} VALUES ($1, $2)");
        wire.parse("ins", &insert).unwrap();
        wire.sync();
        wire.finish().await.unwrap();
        wire.execute("ins", [Value::Int(-5), Value::Double(0.25)].iter())
            .unwrap();
        wire.sync();
        wire.finish().await.unwrap();
        let row = check
            .query_one(&format!("SELECT a, b FROM {table}"), &[])
            .await
            .unwrap();
        assert_eq!((row.get::<_, i64>(0), row.get::<_, f64>(1)), (-5, 0.25));

        // A pipeline behind one Sync: the error skips the rest, and the
        // transaction block it opened is left failed until rolled back.
        wire.parse("", "BEGIN").unwrap();
        wire.execute("", std::iter::empty()).unwrap();
        wire.execute("ins", [Value::Int(1), Value::Int(1)].iter())
            .unwrap();
        wire.parse("", "SELECT 1/0").unwrap();
        wire.execute("", std::iter::empty()).unwrap();
        wire.execute("ins", [Value::Int(2), Value::Int(2)].iter())
            .unwrap();
        wire.parse("", "COMMIT").unwrap();
        wire.execute("", std::iter::empty()).unwrap();
        wire.sync();
        let e = wire.finish().await.unwrap_err();
        assert_eq!(e.code(), Some("22012"), "{e}");
        assert_eq!(wire.status(), b'E');
        run(&mut wire, "ROLLBACK").await.unwrap();
        assert_eq!(wire.status(), b'I');
        let rows: i64 = check
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(rows, 1, "nothing of the failed pipeline was kept");

        // A value the parameter's type does not take is the server's error.
        wire.execute("ins", [Value::Double(1.5), Value::Int(0)].iter())
            .unwrap();
        wire.sync();
        let e = wire.finish().await.unwrap_err();
        assert_eq!(e.code(), Some("22P02"), "{e}");
        // Several statements in one simple query: all of them run.
        run(
            &mut wire,
            &format!("INSERT INTO {table} VALUES (7, 7); INSERT INTO {table} VALUES (8, 8)"),
        )
        .await
        .unwrap();
        let rows: i64 = check
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(rows, 3);
        run(&mut wire, &format!("DROP TABLE {table}"))
            .await
            .unwrap();
    });
}

#[test]
fn large_answers_notices_and_copy_do_not_confuse_it() {
    let s = server();
    block_on(async {
        let mut wire = connect(&s.url).await.unwrap();
        // One row larger than the read buffer, then many rows over many reads.
        run(&mut wire, "SELECT repeat('x', 100000)").await.unwrap();
        run(&mut wire, "SELECT generate_series(1, 50000)")
            .await
            .unwrap();
        run(&mut wire, "DO $$BEGIN RAISE NOTICE 'hello'; END$$")
            .await
            .unwrap();
        // COPY FROM STDIN is refused, and the server goes on.
        run(&mut wire, "CREATE TEMP TABLE c (x int)").await.unwrap();
        let e = run(&mut wire, "COPY c FROM STDIN").await.unwrap_err();
        assert!(matches!(e, WireError::Unsupported(_)), "{e}");
        assert!(e.to_string().contains("COPY"), "{e}");
        run(&mut wire, "SELECT 1").await.unwrap();
        assert_eq!(wire.status(), b'I');
    });
}

#[test]
fn a_connection_the_server_ends_says_it_was_lost() {
    let s = server();
    let name = format!("dyno_wire_{}", fastrand::u64(..));
    block_on(async {
        let admin = s.admin().await;
        let mut wire = connect(&s.url_as("postgres", None, &format!("?application_name={name}")))
            .await
            .unwrap();
        run(&mut wire, "SELECT 1").await.unwrap();
        let ended: bool = admin
            .query_one(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
                &[&name],
            )
            .await
            .unwrap()
            .get(0);
        assert!(ended);
        let e = run(&mut wire, "SELECT 1").await.unwrap_err();
        assert!(e.is_lost(), "{e}");
    });
}

#[test]
fn a_query_larger_than_the_unix_socket_holds_waits_for_room_and_arrives_whole() {
    // Over the Unix socket the connection is watched for reading only; a
    // write that finds the socket full waits on a registration of its
    // own. A 4 MiB query cannot fit in the socket at once.
    let s = server();
    let socket = s.socket();
    let table = format!("dyno_wire_{}", fastrand::u64(..));
    block_on(async {
        let check = s.admin().await;
        let mut wire = connect(&socket).await.unwrap();
        run(&mut wire, &format!("CREATE TABLE {table} (n bigint)"))
            .await
            .unwrap();
        let big = "x".repeat(4 << 20);
        run(
            &mut wire,
            &format!("INSERT INTO {table} SELECT length('{big}')"),
        )
        .await
        .unwrap();
        // And the connection goes on as before.
        run(&mut wire, "SELECT 1").await.unwrap();
        let n: i64 = check
            .query_one(&format!("SELECT n FROM {table}"), &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 4 << 20);
        run(&mut wire, &format!("DROP TABLE {table}"))
            .await
            .unwrap();
    });
}
