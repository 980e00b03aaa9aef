//! [`PgStore`]: the result store in a PostgreSQL database, shared by every
//! machine that names it (`--store postgres://…` or `DYNO_STORE`).
//!
//! The tables are SQLite's, prefixed `dyno_` so that they are easy to tell
//! apart in a database: `dyno_runs` (the whole run as JSON in `record`, the
//! one source of truth, beside the columns that filters and sorts need),
//! `dyno_run_tags`, and `dyno_schema` with the schema version. Opening is
//! ordered as SQLite's: the database is first only read, and migrated in
//! one transaction under an advisory lock only once it is known to be empty
//! or a dyno store this build understands, so that machines opening a new
//! store at the same moment all succeed and migrate it once, and a database
//! of some other program is never written to. The statements are the
//! SQLite store's, written once in `sql.rs` and rendered for PostgreSQL.
//!
//! Every save is one transaction; two machines saving at once each insert
//! their own rows. Connections are plain TCP or a Unix socket, without TLS
//! (as `dyno db`'s).

use std::sync::Mutex;
use std::time::Duration;

use dyno_model::{Run, RunId, Segment};
use postgres::error::SqlState;
use postgres::types::ToSql;
use postgres::{Client, Config, GenericClient, NoTls};

use crate::group;
use crate::record::{self, decode, encode, list_into, unix_ns};
use crate::sql::{self, Arg, POSTGRES};
use crate::{Arrival, Decision, Filter, GroupState, Listing, Store, StoreError};

/// The migration steps, oldest first; step `i` takes a store from version
/// `i` to `i + 1`. Never edit a released step; append a new one.
pub(crate) const MIGRATIONS: &[&str] = &[
    // Version 1: runs and their tags, as SQLite's version 1.
    "CREATE TABLE dyno_runs (
         id             TEXT    NOT NULL PRIMARY KEY,
         kind           TEXT    NOT NULL,
         started_at_ns  BIGINT  NOT NULL,
         host           TEXT,
         description    TEXT    NOT NULL,
         schema_version BIGINT  NOT NULL,
         record         TEXT    NOT NULL
     );
     CREATE INDEX dyno_runs_by_start ON dyno_runs (started_at_ns, id);
     CREATE INDEX dyno_runs_by_kind ON dyno_runs (kind, started_at_ns);
     CREATE INDEX dyno_runs_by_host ON dyno_runs (host, started_at_ns);
     CREATE TABLE dyno_run_tags (
         run_id TEXT NOT NULL REFERENCES dyno_runs (id) ON DELETE CASCADE,
         tag    TEXT NOT NULL,
         PRIMARY KEY (run_id, tag)
     );
     CREATE INDEX dyno_run_tags_by_tag ON dyno_run_tags (tag, run_id);",
    // Version 2: the start barrier of runs split into segments.
    "CREATE TABLE dyno_group_arrivals (
         grp   TEXT   NOT NULL,
         idx   BIGINT NOT NULL,
         count BIGINT NOT NULL,
         host  TEXT   NOT NULL,
         at_ns BIGINT NOT NULL,
         PRIMARY KEY (grp, idx)
     );
     CREATE TABLE dyno_group_decisions (
         grp         TEXT NOT NULL PRIMARY KEY,
         start_at_ns BIGINT,
         called_off  TEXT
     );",
    // Version 3: each arrival's settings (JSON), which the group's later
    // arrivals must match; NULL for arrivals stored before.
    "ALTER TABLE dyno_group_arrivals ADD COLUMN settings TEXT;",
    // Version 4: what each segment of a group reports, as SQLite's
    // version 4.
    "CREATE TABLE dyno_group_reports (
         grp  TEXT   NOT NULL,
         idx  BIGINT NOT NULL,
         body TEXT   NOT NULL,
         PRIMARY KEY (grp, idx)
     );",
];

/// The schema version this build creates and understands.
const LATEST: u32 = MIGRATIONS.len() as u32;

/// The advisory lock that serialises migrations ("dyno" in ASCII).
const MIGRATION_LOCK: i64 = 0x6479_6e6f;

/// How long a connection attempt may take before the server counts as
/// unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The result store in a PostgreSQL database.
pub struct PgStore {
    client: Mutex<Client>,
    location: String,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

/// Whether `spec` names a PostgreSQL store (a `postgres://` or
/// `postgresql://` URL).
pub fn is_postgres_url(spec: &str) -> bool {
    let lower = spec.trim_start().to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

impl PgStore {
    /// Connects to the database `url` names, checks that it is empty or a
    /// dyno store this build understands, and brings it to the latest
    /// schema.
    pub fn open(url: &str) -> Result<PgStore, StoreError> {
        let location = masked(url);
        let mut config: Config = url.parse().map_err(|e| StoreError::Unreachable {
            location: location.clone(),
            reason: format!("the URL does not parse ({e}); write it as postgres://USER:PASSWORD@HOST:PORT/DATABASE"),
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        let mut client = config.connect(NoTls).map_err(|e| StoreError::Unreachable {
            location: location.clone(),
            reason: reason(&e),
        })?;
        migrate(&mut client, &location)?;
        Ok(PgStore {
            client: Mutex::new(client),
            location,
        })
    }

    /// The store's URL without its password.
    pub fn location(&self) -> &str {
        &self.location
    }

    fn client(&self) -> std::sync::MutexGuard<'_, Client> {
        self.client.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn failed(&self) -> impl Fn(postgres::Error) -> StoreError + '_ {
        |e| classify(&self.location, &e)
    }
}

/// What the database holds, as far as the store is concerned: `None` for
/// nothing of its own, `Some(version)` for a dyno store, `Err` for some
/// other program's tables.
fn inspect(client: &mut impl GenericClient, location: &str) -> Result<Option<u32>, StoreError> {
    let failed = |e: postgres::Error| classify(location, &e);
    // Tables on the search path, outside the system's schemas.
    let row = client
        .query_one(
            "SELECT count(*) FILTER (WHERE c.relname = 'dyno_schema'),
                    count(*)
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
                AND n.nspname = ANY (current_schemas(false))
                AND n.nspname NOT IN ('pg_catalog', 'information_schema')",
            &[],
        )
        .map_err(failed)?;
    let (ours, all): (i64, i64) = (row.get(0), row.get(1));
    if ours == 0 {
        return if all == 0 {
            Ok(None)
        } else {
            Err(StoreError::ForeignDatabase {
                location: location.to_owned(),
            })
        };
    }
    let version: Option<i64> = client.query_one(sql::VERSION, &[]).map_err(failed)?.get(0);
    match version {
        None => Ok(Some(0)),
        Some(v) if v < 0 => Err(StoreError::ForeignDatabase {
            location: location.to_owned(),
        }),
        Some(v) => Ok(Some(u32::try_from(v).unwrap_or(u32::MAX))),
    }
}

/// Brings the database to [`LATEST`] in one transaction, under an advisory
/// lock; reads what is there again under the lock, so that of several
/// machines opening a new store at once one migrates and the others find
/// it done.
fn migrate(client: &mut Client, location: &str) -> Result<(), StoreError> {
    let failed = |e: postgres::Error| classify(location, &e);
    // Refused before anything is written, lock included.
    let refuse = |version: Option<u32>| match version {
        Some(found) if found > LATEST => Err(StoreError::NewerServerSchema {
            location: location.to_owned(),
            found,
            supported: LATEST,
        }),
        _ => Ok(()),
    };
    let version = inspect(client, location)?;
    refuse(version)?;
    if version == Some(LATEST) {
        return Ok(());
    }
    let mut tx = client.transaction().map_err(failed)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(failed)?;
    let version = inspect(&mut tx, location)?;
    refuse(version)?;
    let from = match version {
        Some(v) => v,
        None => {
            tx.batch_execute("CREATE TABLE dyno_schema (version BIGINT NOT NULL)")
                .map_err(failed)?;
            0
        }
    };
    sql::upgrade(&mut tx, MIGRATIONS, from).map_err(failed)?;
    tx.commit().map_err(failed)
}

impl sql::Migrate for postgres::Transaction<'_> {
    type Error = postgres::Error;

    fn batch(&mut self, script: &str) -> Result<(), postgres::Error> {
        self.batch_execute(script)
    }

    fn set_version(&mut self, version: u32) -> Result<(), postgres::Error> {
        self.execute(&POSTGRES.render(sql::SET_VERSION), &[&i64::from(version)])
            .map(drop)
    }
}

impl Store for PgStore {
    fn save(&mut self, run: &Run) -> Result<(), StoreError> {
        let record = encode(run)?;
        let id = run.id.to_string();
        let location = self.location.clone();
        let failed = |e: postgres::Error| classify(&location, &e);
        let mut client = self.client();
        let mut tx = client.transaction().map_err(failed)?;
        let inserted = tx
            .execute(
                &POSTGRES.render(sql::SAVE_RUN),
                &[
                    &id,
                    &run.kind.as_str(),
                    &unix_ns(run.started_at),
                    &run.environment.hostname,
                    &run.description,
                    &i64::from(run.schema_version),
                    &record,
                ],
            )
            .map_err(failed)?;
        if inserted == 0 {
            // Dropping the transaction rolls it back.
            return Err(StoreError::Duplicate { id: run.id });
        }
        let save_tag = POSTGRES.render(sql::SAVE_TAG);
        for tag in &run.tags {
            tx.execute(&save_tag, &[&id, tag]).map_err(failed)?;
        }
        tx.commit().map_err(failed)
    }

    fn get(&self, id_or_prefix: &str) -> Result<Run, StoreError> {
        let mut client = self.client();
        let id = resolve(&mut *client, &self.location, id_or_prefix)?;
        let row = client
            .query_opt(&POSTGRES.render(sql::GET), &[&id.to_string()])
            .map_err(self.failed())?;
        // The run may have been removed since its id was resolved.
        let row = row.ok_or_else(|| StoreError::NotFound {
            id: id_or_prefix.to_owned(),
        })?;
        let (version, record): (i64, String) = (row.get(0), row.get(1));
        decode(version, record.as_bytes()).map_err(|e| e.for_run(id))
    }

    fn list(&self, filter: &Filter) -> Result<Listing, StoreError> {
        let (sql, args) = POSTGRES.list(filter);
        let args: Vec<&(dyn ToSql + Sync)> = args
            .iter()
            .map(|arg| match arg {
                Arg::Text(text) => text as &(dyn ToSql + Sync),
                Arg::Int(n) => n,
            })
            .collect();
        let rows = self.client().query(&sql, &args).map_err(self.failed())?;
        let mut listing = Listing::default();
        for row in rows {
            let id: String = row.get(0);
            let id: RunId = id.parse().map_err(|_| StoreError::Server {
                location: self.location.clone(),
                reason: format!("a stored run has the id '{id}', which is not a run id"),
            })?;
            let (version, record): (i64, String) = (row.get(2), row.get(3));
            list_into(&mut listing, id, version, record.as_bytes());
        }
        Ok(listing)
    }

    fn remove_all(&mut self, ids_or_prefixes: &[&str]) -> Result<Vec<RunId>, StoreError> {
        let location = self.location.clone();
        let failed = |e: postgres::Error| classify(&location, &e);
        let mut client = self.client();
        let mut tx = client.transaction().map_err(failed)?;
        // Every id is resolved before anything is deleted, in the one
        // transaction: a bad id leaves every run in place.
        let mut ids = Vec::with_capacity(ids_or_prefixes.len());
        for id_or_prefix in ids_or_prefixes {
            let id = resolve(&mut tx, &location, id_or_prefix)?;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        let remove = POSTGRES.render(sql::REMOVE);
        for id in &ids {
            // Its tags go with it (ON DELETE CASCADE).
            tx.execute(&remove, &[&id.to_string()]).map_err(failed)?;
        }
        tx.commit().map_err(failed)?;
        Ok(ids)
    }

    fn location(&self) -> String {
        self.location.clone()
    }

    fn arrive(&mut self, arrival: &Arrival) -> Result<(), StoreError> {
        let location = self.location.clone();
        let failed = |e: postgres::Error| classify(&location, &e);
        let mut client = self.client();
        let mut tx = client.transaction().map_err(failed)?;
        // One arrival at a time per group, across machines.
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtext($1))",
            &[&arrival.group],
        )
        .map_err(failed)?;
        let earlier = arrivals(&mut tx, &arrival.group).map_err(failed)?;
        group::check(arrival, &earlier)?;
        tx.execute(
            &POSTGRES.render(sql::ARRIVE),
            &[
                &arrival.group,
                &i64::from(arrival.segment.index),
                &i64::from(arrival.segment.count),
                &arrival.host,
                &arrival.at_ns,
                &group::settings_column(&arrival.settings),
            ],
        )
        .map_err(failed)?;
        tx.commit().map_err(failed)
    }

    fn group(&self, name: &str) -> Result<GroupState, StoreError> {
        let failed = self.failed();
        let mut client = self.client();
        let arrivals = arrivals(&mut *client, name).map_err(&failed)?;
        let decision = client
            .query_opt(&POSTGRES.render(sql::DECISION), &[&name])
            .map_err(&failed)?
            .map(|r| group::from_columns(r.get(0), r.get(1)));
        Ok(GroupState { arrivals, decision })
    }

    fn decide(&mut self, name: &str, decision: &Decision) -> Result<Decision, StoreError> {
        let (start, why) = group::columns(decision);
        self.client()
            .execute(&POSTGRES.render(sql::DECIDE), &[&name, &start, &why])
            .map_err(self.failed())?;
        self.group(name)?.decision.ok_or_else(|| {
            StoreError::Group(format!("the decision of group '{name}' was not kept"))
        })
    }

    fn server_clock(&self) -> Result<Option<(i64, Duration)>, StoreError> {
        let asked = std::time::Instant::now();
        let row = self
            .client()
            .query_one(
                "SELECT (extract(epoch from clock_timestamp()) * 1000000)::bigint",
                &[],
            )
            .map_err(self.failed())?;
        let micros: i64 = row.get(0);
        Ok(Some((micros.saturating_mul(1000), asked.elapsed())))
    }

    fn report(&mut self, group: &str, index: u32, body: &str) -> Result<(), StoreError> {
        let kept = self
            .client()
            .execute(
                &POSTGRES.render(sql::REPORT),
                &[&group, &i64::from(index), &body],
            )
            .map_err(self.failed())?;
        group::reported(group, index, kept as usize)
    }

    fn reports(&self, group: &str) -> Result<Vec<(u32, String)>, StoreError> {
        let rows = self
            .client()
            .query(&POSTGRES.render(sql::REPORTS), &[&group])
            .map_err(self.failed())?;
        Ok(rows
            .iter()
            .map(|r| (r.get::<_, i64>(0) as u32, r.get(1)))
            .collect())
    }
}

/// A group's arrivals, by index.
fn arrivals(client: &mut impl GenericClient, name: &str) -> Result<Vec<Arrival>, postgres::Error> {
    let rows = client.query(&POSTGRES.render(sql::ARRIVALS), &[&name])?;
    Ok(rows
        .iter()
        .map(|r| Arrival {
            group: name.to_owned(),
            segment: Segment {
                index: r.get::<_, i64>(0) as u32,
                count: r.get::<_, i64>(1) as u32,
            },
            host: r.get(2),
            at_ns: r.get(3),
            settings: group::settings_from_column(r.get(4)),
        })
        .collect())
}

/// The one stored id that is `id_or_prefix` or starts with it.
fn resolve(
    client: &mut impl GenericClient,
    location: &str,
    id_or_prefix: &str,
) -> Result<RunId, StoreError> {
    // Upper-case base32 only, so no LIKE wildcard can be in it.
    let pattern = POSTGRES.prefix_pattern(&record::prefix(id_or_prefix)?);
    let rows = client
        .query(&POSTGRES.render(sql::RESOLVE), &[&pattern])
        .map_err(|e| classify(location, &e))?;
    let matches = rows
        .iter()
        .filter_map(|row| row.get::<_, String>(0).parse().ok())
        .collect();
    record::one_match(id_or_prefix, matches)
}

/// Sorts a client error into what the user can act on: a server that
/// cannot be reached (or went away), or one that answered with an error.
fn classify(location: &str, e: &postgres::Error) -> StoreError {
    let location = location.to_owned();
    match e.as_db_error() {
        // Refused at the door: a wrong password, a missing database or
        // role, too many connections.
        Some(db)
            if db.code() == &SqlState::INVALID_PASSWORD
                || db.code() == &SqlState::INVALID_AUTHORIZATION_SPECIFICATION
                || db.code() == &SqlState::INVALID_CATALOG_NAME
                || db.code() == &SqlState::TOO_MANY_CONNECTIONS
                || db.code() == &SqlState::ADMIN_SHUTDOWN
                || db.code() == &SqlState::CANNOT_CONNECT_NOW =>
        {
            StoreError::Unreachable {
                location,
                reason: reason(e),
            }
        }
        Some(_) => StoreError::Server {
            location,
            reason: reason(e),
        },
        None => StoreError::Unreachable {
            location,
            reason: reason(e),
        },
    }
}

/// An error in one line: the server's message and SQLSTATE, or the client's
/// words and their cause.
fn reason(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => match std::error::Error::source(e) {
            Some(source) => format!("{e}: {source}"),
            None => e.to_string(),
        },
    }
}

/// `url` with its password, if any, replaced by `***`: the one after the
/// user name, and a `password=` parameter.
pub(crate) fn masked(url: &str) -> String {
    let url = match url.split_once('?') {
        Some((base, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => p.to_owned(),
                })
                .collect();
            format!("{base}?{}", params.join("&"))
        }
        None => url.to_owned(),
    };
    let url = url.as_str();
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    // The user information ends at the last '@' before the host.
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_owned();
    };
    let user_info = &rest[..at];
    match user_info.split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:***{}", &rest[at..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_password() {
        assert_eq!(
            masked("postgres://bench:s3cr%40t@db1:5432/results"),
            "postgres://bench:***@db1:5432/results"
        );
        assert_eq!(
            masked("postgresql://bench@db1/results"),
            "postgresql://bench@db1/results"
        );
        assert_eq!(
            masked("postgres://u@h/db?sslmode=disable&password=x@y"),
            "postgres://u@h/db?sslmode=disable&password=***"
        );
        assert_eq!(masked("postgres://db1/results"), "postgres://db1/results");
    }

    #[test]
    fn postgres_urls_are_told_from_paths() {
        assert!(is_postgres_url("postgres://h/db"));
        assert!(is_postgres_url("PostgreSQL://h/db"));
        assert!(!is_postgres_url("/var/lib/dyno/dyno.db"));
        assert!(!is_postgres_url("sqlite:dyno.db"));
    }
}

/// The store on a real server: the throwaway cluster `scripts/pg start`
/// makes, named by DYNO_TEST_PG, a fresh database for each test.
#[cfg(test)]
mod server_tests {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Instant;

    use super::*;
    use crate::conformance::{self, Raw};

    /// A database of its own on the test server, dropped at the end.
    struct Database {
        admin: String,
        name: String,
        url: String,
    }

    impl Database {
        fn new() -> Database {
            let dir = std::env::var("DYNO_TEST_PG").expect(
                "the PostgreSQL store's tests need a server: run scripts/test, or start one with `scripts/pg start` and set DYNO_TEST_PG to the folder it prints",
            );
            let admin = std::fs::read_to_string(std::path::Path::new(&dir).join("url"))
                .unwrap()
                .trim()
                .to_owned();
            static NEXT: AtomicU32 = AtomicU32::new(0);
            let name = format!(
                "dyno_store_{}_{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            );
            let mut client = Database::admin(&admin);
            client
                .batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))
                .unwrap();
            client
                .batch_execute(&format!("CREATE DATABASE {name}"))
                .unwrap();
            let url = format!("{}/{name}", admin.rsplit_once('/').unwrap().0);
            Database { admin, name, url }
        }

        fn admin(url: &str) -> Client {
            Client::connect(url, NoTls).unwrap()
        }

        /// A plain connection to this database, to look and to meddle.
        fn raw(&self) -> Client {
            Client::connect(&self.url, NoTls).unwrap()
        }
    }

    impl Drop for Database {
        fn drop(&mut self) {
            if let Ok(mut c) = Client::connect(&self.admin, NoTls) {
                let _ = c.batch_execute(&format!(
                    "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                    self.name
                ));
            }
        }
    }

    impl conformance::Place for Database {
        fn open(&self) -> Result<Box<dyn Store>, StoreError> {
            Ok(Box::new(PgStore::open(&self.url)?))
        }

        fn raw(&self) -> Box<dyn Raw> {
            Box::new(Database::raw(self))
        }

        fn latest(&self) -> u32 {
            LATEST
        }

        fn is_server(&self) -> bool {
            true
        }

        fn make_old(&self, version: u32) {
            let mut steps = MIGRATIONS[..version as usize].to_vec();
            let set = format!(
                "CREATE TABLE dyno_schema (version BIGINT NOT NULL);
                 INSERT INTO dyno_schema VALUES ({version});"
            );
            steps.push(&set);
            self.raw().batch_execute(&steps.join(";\n")).unwrap();
        }
    }

    /// What every backend does, on PostgreSQL.
    mod suite {
        crate::conformance::suite!(super::Database::new());
    }

    #[test]
    fn the_server_tells_its_clock_in_about_a_round_trip() {
        let db = Database::new();
        let store = PgStore::open(&db.url).unwrap();
        let (server_ns, took) = store.server_clock().unwrap().unwrap();
        let ours = unix_ns(jiff::Timestamp::now());
        assert!(
            (server_ns - ours).abs() < 5_000_000_000,
            "{server_ns} against {ours}"
        );
        assert!(took < Duration::from_secs(5));
    }

    #[test]
    fn the_location_is_the_url_without_its_password() {
        let db = Database::new();
        let store = PgStore::open(&db.url).unwrap();
        let password = db
            .admin
            .split(':')
            .nth(2)
            .unwrap()
            .split('@')
            .next()
            .unwrap();
        assert!(!store.location().contains(password), "{}", store.location());
        assert!(store.location().contains(":***@"), "{}", store.location());
    }

    #[test]
    fn an_unreachable_server_and_a_wrong_password_are_reported_at_once() {
        // A port nothing listens on: refused, not waited for.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let started = Instant::now();
        let err =
            PgStore::open(&format!("postgres://dyno:secret@127.0.0.1:{port}/results")).unwrap_err();
        assert!(matches!(err, StoreError::Unreachable { .. }), "{err:?}");
        assert!(err.is_unreachable());
        let msg = err.to_string();
        assert!(
            msg.contains("127.0.0.1") && !msg.contains("secret"),
            "{msg}"
        );
        assert!(
            started.elapsed() < CONNECT_TIMEOUT,
            "refused, not timed out"
        );

        let db = Database::new();
        let wrong = db.url.replacen("postgres:", "postgres:x", 2).replacen(
            "postgres:x//",
            "postgres://",
            1,
        );
        let err = PgStore::open(&wrong).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, StoreError::Unreachable { .. }), "{err:?}");
        assert!(msg.contains("password") && msg.contains(":***@"), "{msg}");
    }
}
