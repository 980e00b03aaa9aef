//! [`SqliteStore`]: the embedded default store, one SQLite file.
//!
//! Opening is ordered so that nothing is written to a file before it is known
//! to be a dyno store this build understands: the file is first only read
//! (SQLite rejects a file that is not a database on the first read, and a
//! read of a database in rollback-journal mode creates no `-wal`/`-shm`
//! files); only then is WAL mode switched on and the schema migrated.
//!
//! The file is never opened with plain `std::fs` calls while SQLite may hold
//! it: closing any descriptor of a file drops every POSIX lock this process
//! holds on it, which would let another process write under a connection's
//! feet. All access goes through SQLite.

use std::io;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use dyno_model::{Run, RunId, Segment};

use rusqlite::types::{Type, Value};
use rusqlite::{Connection, MAIN_DB, OpenFlags, OptionalExtension, Row, params, params_from_iter};

use crate::error::classify;
use crate::group;
use crate::record::{self, decode, encode, list_into, unix_ns};
use crate::schema::{self, Contents};
use crate::sql::{self, Arg, SQLITE};
use crate::{Arrival, Decision, Filter, GroupState, Listing, Store, StoreError};

/// How to open a [`SqliteStore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// How long to wait for another connection to release the database
    /// before giving up with [`StoreError::Locked`]. Each statement waits
    /// this long at most; opening, which may retry, at most about twice this.
    pub busy_timeout: Duration,
}

impl Default for Options {
    /// A five-second busy timeout: long enough to wait out another dyno
    /// saving a run, short enough not to look hung.
    fn default() -> Self {
        Options {
            busy_timeout: Duration::from_secs(5),
        }
    }
}

/// The result store in one SQLite file. Each `SqliteStore` owns one
/// connection; several stores, in one process or many, may share a file.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
}

impl SqliteStore {
    /// Opens the store at `path` with the default [`Options`], creating the
    /// directory and the file if missing.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(path, Options::default())
    }

    /// Opens the store at `path`, creating the directory and the file if
    /// missing, and brings its schema up to date.
    ///
    /// A file that is not an SQLite database ([`StoreError::NotADatabase`]),
    /// another program's database ([`StoreError::Foreign`]) or a store from
    /// a newer dyno ([`StoreError::NewerSchema`]) is refused and left as it
    /// was.
    pub fn open_with(path: &Path, options: Options) -> Result<SqliteStore, StoreError> {
        let path = path.to_path_buf();
        create_parent(&path)?;
        if path.is_dir() {
            return Err(StoreError::CannotOpen {
                path,
                source: io::Error::new(io::ErrorKind::IsADirectory, "it is a directory"),
            });
        }
        // Not SQLITE_OPEN_URI: a relative path that starts with `file:` is a
        // file name here, not a URI with options.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(&path, flags).map_err(|e| classify(&path, e))?;
        conn.busy_timeout(options.busy_timeout)
            .map_err(|e| classify(&path, e))?;

        // SQLite does not call the busy handler everywhere: switching a new
        // file to WAL upgrades a read lock to a write lock and fails at once
        // if another process is doing the same. Every step of `prepare` can
        // be repeated, so retry until the busy timeout has passed.
        let deadline = Instant::now() + options.busy_timeout;
        loop {
            match prepare(&mut conn, &path) {
                Err(StoreError::Locked { .. }) if Instant::now() < deadline => {
                    thread::sleep(Duration::from_millis(5));
                }
                result => return result.map(|()| SqliteStore { conn, path }),
            }
        }
    }

    /// Opens the store at `path` to read it: a store this user may not
    /// write (a read-only file or folder, a colleague's copy) is still
    /// read, never changed. A store that is writable, or does not exist
    /// yet, is opened as [`SqliteStore::open`] opens it; a read-only one
    /// that needs a schema upgrade is refused, saying so. Saving into a
    /// store opened read-only fails with its path.
    pub fn open_to_read(path: &Path) -> Result<SqliteStore, StoreError> {
        match SqliteStore::open(path) {
            // Not writable (or its folder is not): read it as it is, or
            // say why not in the first error's words.
            Err(e @ StoreError::CannotOpen { .. }) if path.is_file() => {
                SqliteStore::read_only(path).map_err(|ro| match ro {
                    StoreError::CannotOpen { .. } | StoreError::Sqlite(_) => e,
                    // Not a store, another's, a newer one: that says more.
                    other => other,
                })
            }
            other => other,
        }
    }

    fn read_only(path: &Path) -> Result<SqliteStore, StoreError> {
        // Not through WAL's shared memory, which a reader would have to
        // create beside the file: the file as it is.
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let uri = format!("file:{}?immutable=1", uri_path(path));
        let conn = Connection::open_with_flags(&uri, flags).map_err(|e| classify(path, e))?;
        let contents = schema::inspect(&conn).map_err(|e| classify(path, e))?;
        schema::refuse(path, contents)?;
        if contents != Contents::Dyno(schema::LATEST) {
            return Err(StoreError::CannotOpen {
                path: path.to_path_buf(),
                source: io::Error::other(
                    "the file is read-only, and this dyno must upgrade its schema before reading it",
                ),
            });
        }
        check_integrity(&conn, path)?;
        Ok(SqliteStore {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// The file this store lives in, as given to [`SqliteStore::open`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        |err| classify(&self.path, err)
    }
}

/// `path` as the path of a `file:` URI: absolute, with `%`, `?` and `#`
/// escaped so that they stay part of the name.
fn uri_path(path: &Path) -> String {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = String::new();
    for c in absolute.to_string_lossy().chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}

/// Creates the directory that will hold the store file.
fn create_parent(path: &Path) -> Result<(), StoreError> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CannotOpen {
                path: dir.to_path_buf(),
                source,
            })
        }
        _ => Ok(()),
    }
}

/// Checks the file is a store this build may use, then switches on WAL and
/// brings the schema up to date.
fn prepare(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let sql = |err| classify(path, err);
    // Only reads until the contents are known to be ours.
    let contents = schema::inspect(conn).map_err(sql)?;
    schema::refuse(path, contents)?;
    check_integrity(conn, path)?;
    // SQLite quietly falls back to read-only when the file is not writable;
    // better to say so now than at the first save.
    if conn.is_readonly(MAIN_DB).map_err(sql)? {
        return Err(StoreError::CannotOpen {
            path: path.to_path_buf(),
            source: io::Error::new(io::ErrorKind::PermissionDenied, "the file is read-only"),
        });
    }
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(sql)?;
    // WAL lets readers (`dyno history`) work while another process saves. A
    // file system without shared memory keeps the old mode, which only
    // costs concurrency, so the mode returned is not checked.
    let _mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "wal", |row| row.get(0))
        .map_err(sql)?;
    // An up-to-date store needs no write lock to open, so opening does not
    // wait behind another process's save.
    if contents != Contents::Dyno(schema::LATEST) {
        schema::migrate(conn, path)?;
    }
    Ok(())
}

/// Refuses a store whose pages are damaged, before anything is written to it.
///
/// Reading the schema touches only the first pages, so a file with garbage in
/// its middle pages would otherwise be opened, and a save would write around
/// the damage (and sometimes into it). `PRAGMA quick_check` reads every page
/// once; it is O(size of the file): 15 ms per open of a store of 5,000 runs
/// (11 MB) in a debug build (`open_cost_of_a_store_with_thousands_of_runs`),
/// a small price next to any measurement. It runs once per open, and takes
/// only a read lock.
fn check_integrity(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let not_a_store = || StoreError::NotADatabase {
        path: path.to_path_buf(),
    };
    // A damaged page may surface as a row of the check's report or as an
    // SQLITE_CORRUPT error from the statement itself; both mean the same.
    let verdict = conn
        .prepare("PRAGMA quick_check(1)")
        .and_then(|mut stmt| stmt.query_row([], |row| row.get::<_, String>(0)));
    match verdict {
        Ok(verdict) if verdict == "ok" => Ok(()),
        Ok(_) => Err(not_a_store()),
        Err(err) => Err(classify(path, err)),
    }
}

impl Store for SqliteStore {
    fn save(&mut self, run: &Run) -> Result<(), StoreError> {
        let record = encode(run)?;
        let id = run.id.to_string();
        let path = &self.path;
        let sql = |err| classify(path, err);
        let tx = schema::begin_write(&mut self.conn, path)?;
        let inserted = tx
            .execute(
                &SQLITE.render(sql::SAVE_RUN),
                params![
                    id,
                    run.kind.as_str(),
                    unix_ns(run.started_at),
                    run.environment.hostname,
                    run.description,
                    run.schema_version,
                    record,
                ],
            )
            .map_err(sql)?;
        if inserted == 0 {
            // Dropping the transaction rolls it back.
            return Err(StoreError::Duplicate { id: run.id });
        }
        {
            let mut insert_tag = tx
                .prepare_cached(&SQLITE.render(sql::SAVE_TAG))
                .map_err(sql)?;
            for tag in &run.tags {
                insert_tag.execute(params![id, tag]).map_err(sql)?;
            }
        }
        tx.commit().map_err(sql)
    }

    fn get(&self, id_or_prefix: &str) -> Result<Run, StoreError> {
        let id = resolve(&self.conn, &self.path, id_or_prefix)?;
        let row = self
            .conn
            .query_row(&SQLITE.render(sql::GET), [id.to_string()], |row| {
                Ok((row.get(0)?, record_column(row, 1)?.to_vec()))
            })
            .optional()
            .map_err(self.sql())?;
        // The run may have been removed since its id was resolved.
        let (version, record) = row.ok_or_else(|| StoreError::NotFound {
            id: id_or_prefix.to_owned(),
        })?;
        decode(version, &record).map_err(|e| e.for_run(id))
    }

    fn list(&self, filter: &Filter) -> Result<Listing, StoreError> {
        let (sql, args) = SQLITE.list(filter);
        let args = args.into_iter().map(|arg| match arg {
            Arg::Text(text) => Value::Text(text),
            Arg::Int(n) => Value::Integer(n),
        });
        let mut stmt = self.conn.prepare(&sql).map_err(self.sql())?;
        let mut rows = stmt.query(params_from_iter(args)).map_err(self.sql())?;
        let mut listing = Listing::default();
        while let Some(row) = rows.next().map_err(self.sql())? {
            // The id and version columns are dyno's own and typed (STRICT);
            // only the record is copied in from outside the store's checks.
            let id = id_column(row, 0).map_err(self.sql())?;
            let version = row.get(2).map_err(self.sql())?;
            let record = record_column(row, 3).map_err(self.sql())?;
            list_into(&mut listing, id, version, record);
        }
        Ok(listing)
    }

    fn remove_all(&mut self, ids_or_prefixes: &[&str]) -> Result<Vec<RunId>, StoreError> {
        let path = &self.path;
        let sql = |err| classify(path, err);
        let tx = schema::begin_write(&mut self.conn, path)?;
        // Every id is resolved before anything is deleted, inside the one
        // transaction, so the runs removed are the ones the prefixes named at
        // that moment, and a bad id leaves every run in place (dropping the
        // transaction rolls it back).
        let mut ids = Vec::with_capacity(ids_or_prefixes.len());
        for id_or_prefix in ids_or_prefixes {
            let id = resolve(&tx, path, id_or_prefix)?;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        let remove = SQLITE.render(sql::REMOVE);
        for id in &ids {
            // Its tags go with it (ON DELETE CASCADE).
            tx.execute(&remove, [id.to_string()]).map_err(sql)?;
        }
        tx.commit().map_err(sql)?;
        Ok(ids)
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn arrive(&mut self, arrival: &Arrival) -> Result<(), StoreError> {
        let path = &self.path;
        let sql = |err| classify(path, err);
        let tx = schema::begin_write(&mut self.conn, path)?;
        let earlier = arrivals(&tx, &arrival.group).map_err(sql)?;
        group::check(arrival, &earlier)?;
        tx.execute(
            &SQLITE.render(sql::ARRIVE),
            params![
                arrival.group,
                arrival.segment.index,
                arrival.segment.count,
                arrival.host,
                arrival.at_ns,
                group::settings_column(&arrival.settings),
            ],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)
    }

    fn group(&self, name: &str) -> Result<GroupState, StoreError> {
        let sql = |err| classify(&self.path, err);
        let arrivals = arrivals(&self.conn, name).map_err(sql)?;
        let decision = self
            .conn
            .query_row(&SQLITE.render(sql::DECISION), [name], |r| {
                Ok(group::from_columns(r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(sql)?;
        Ok(GroupState { arrivals, decision })
    }

    fn decide(&mut self, name: &str, decision: &Decision) -> Result<Decision, StoreError> {
        let (start, why) = group::columns(decision);
        self.conn
            .execute(&SQLITE.render(sql::DECIDE), params![name, start, why])
            .map_err(|err| classify(&self.path, err))?;
        self.group(name)?.decision.ok_or_else(|| {
            StoreError::Group(format!("the decision of group '{name}' was not kept"))
        })
    }

    fn server_clock(&self) -> Result<Option<(i64, Duration)>, StoreError> {
        // A file on this machine: its clock is ours.
        Ok(None)
    }

    fn report(&mut self, group: &str, index: u32, body: &str) -> Result<(), StoreError> {
        let kept = self
            .conn
            .execute(&SQLITE.render(sql::REPORT), params![group, index, body])
            .map_err(|err| classify(&self.path, err))?;
        group::reported(group, index, kept)
    }

    fn reports(&self, group: &str) -> Result<Vec<(u32, String)>, StoreError> {
        let sql = |err| classify(&self.path, err);
        let mut stmt = self
            .conn
            .prepare_cached(&SQLITE.render(sql::REPORTS))
            .map_err(sql)?;
        let rows = stmt
            .query_map([group], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(sql)?;
        rows.collect::<Result<_, _>>().map_err(sql)
    }
}

/// A group's arrivals, by index.
fn arrivals(conn: &Connection, name: &str) -> rusqlite::Result<Vec<Arrival>> {
    let mut stmt = conn.prepare_cached(&SQLITE.render(sql::ARRIVALS))?;
    let rows = stmt.query_map([name], |r| {
        Ok(Arrival {
            group: name.to_owned(),
            segment: Segment {
                index: r.get(0)?,
                count: r.get(1)?,
            },
            host: r.get(2)?,
            at_ns: r.get(3)?,
            settings: group::settings_from_column(r.get(4)?),
        })
    })?;
    rows.collect()
}

/// The one stored id that is `id_or_prefix` or starts with it.
fn resolve(conn: &Connection, path: &Path, id_or_prefix: &str) -> Result<RunId, StoreError> {
    let pattern = SQLITE.prefix_pattern(&record::prefix(id_or_prefix)?);
    let mut stmt = conn
        .prepare_cached(&SQLITE.render(sql::RESOLVE))
        .map_err(|e| classify(path, e))?;
    let matches = stmt
        .query_map([pattern], |row| id_column(row, 0))
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .map_err(|e| classify(path, e))?;
    record::one_match(id_or_prefix, matches)
}

/// The record in column `idx`, as bytes.
fn record_column<'r>(row: &'r Row<'_>, idx: usize) -> rusqlite::Result<&'r [u8]> {
    row.get_ref(idx)?
        .as_bytes()
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, Type::Text, Box::new(e)))
}

/// The run id in column `idx`.
fn id_column(row: &Row<'_>, idx: usize) -> rusqlite::Result<RunId> {
    let text: String = row.get(idx)?;
    text.parse()
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, Type::Text, Box::new(e)))
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::sync::{Arc, Barrier};

    use dyno_model::Kind;

    use super::*;
    use crate::SkipReason;
    use crate::conformance::{self, Raw};
    use crate::testutil::run;

    /// A new store file, `dyno.db` in a directory of its own.
    struct Place {
        dir: tempfile::TempDir,
    }

    impl Place {
        fn new() -> Place {
            Place {
                dir: tempfile::tempdir().unwrap(),
            }
        }

        fn path(&self) -> PathBuf {
            self.dir.path().join("dyno.db")
        }
    }

    impl conformance::Place for Place {
        fn open(&self) -> Result<Box<dyn Store>, StoreError> {
            Ok(Box::new(SqliteStore::open(&self.path())?))
        }

        fn raw(&self) -> Box<dyn Raw> {
            Box::new(raw(&self.path()))
        }

        fn latest(&self) -> u32 {
            schema::LATEST
        }

        fn is_server(&self) -> bool {
            false
        }

        fn make_old(&self, version: u32) {
            let mut steps = schema::MIGRATIONS[..version as usize].to_vec();
            let set = format!(
                "CREATE TABLE dyno_schema (version INTEGER NOT NULL);
                 INSERT INTO dyno_schema VALUES ({version});"
            );
            steps.push(&set);
            raw(&self.path()).execute_batch(&steps.join(";\n")).unwrap();
        }
    }

    /// What every backend does, on SQLite.
    mod suite {
        crate::conformance::suite!(super::Place::new());
    }

    /// The names in `dir`, sorted.
    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn raw(path: &Path) -> Connection {
        Connection::open(path).unwrap()
    }

    /// Opening `path` fails with an error `expected` accepts, and leaves the
    /// file byte for byte as it was, with nothing new beside it.
    fn assert_refused_untouched(path: &Path, expected: impl Fn(&StoreError) -> bool) {
        let before = fs::read(path).unwrap();
        let dir_before = entries(path.parent().unwrap());
        let err = SqliteStore::open(path).unwrap_err();
        assert!(expected(&err), "unexpected error: {err:?}");
        let msg = err.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(msg.contains("left untouched"), "{msg}");
        assert!(fs::read(path).unwrap() == before, "the file changed");
        assert_eq!(entries(path.parent().unwrap()), dir_before);
    }

    #[test]
    fn a_file_store_has_no_clock_of_its_own() {
        let place = Place::new();
        let store = SqliteStore::open(&place.path()).unwrap();
        assert_eq!(store.server_clock().unwrap(), None);
    }

    #[test]
    fn the_last_connection_to_close_folds_the_wal_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dyno.db");
        let mut store = SqliteStore::open(&path).unwrap();
        store.save(&run(Kind::Http, 1, &["x"], Some("h"))).unwrap();
        let second = SqliteStore::open(&path).unwrap();
        assert_eq!(second.list(&Filter::default()).unwrap().runs.len(), 1);
        drop(store);
        drop(second);
        assert_eq!(entries(dir.path()), vec!["dyno.db"]);
    }

    #[test]
    fn a_record_that_is_not_utf8_reads_as_damaged_and_can_be_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dyno.db");
        let mut store = SqliteStore::open(&path).unwrap();
        let first = run(Kind::Http, 0, &["t"], None);
        let not_utf8 = run(Kind::Http, 1, &["t"], None);
        let last = run(Kind::Http, 2, &["t"], None);
        for r in [&first, &not_utf8, &last] {
            store.save(r).unwrap();
        }
        // A STRICT TEXT column still takes bytes that are not UTF-8 this way.
        raw(&path)
            .execute(
                "UPDATE runs SET record = CAST(X'7B22FF7D' AS TEXT) WHERE id = ?1",
                [not_utf8.id.to_string()],
            )
            .unwrap();
        let listing = store.list(&Filter::default()).unwrap();
        assert_eq!(listing.runs, vec![first.clone(), last.clone()]);
        assert_eq!(listing.skipped.len(), 1);
        assert_eq!(listing.skipped[0].id, not_utf8.id);
        assert!(
            matches!(listing.skipped[0].reason, SkipReason::Damaged { .. }),
            "{:?}",
            listing.skipped[0]
        );
        let err = store.get(&not_utf8.id.to_string()).unwrap_err();
        assert!(
            matches!(err, StoreError::BadRecord { id, .. } if id == not_utf8.id),
            "{err:?}"
        );
        assert_eq!(store.remove(&not_utf8.id.to_string()).unwrap(), not_utf8.id);
        let listing = store.list(&Filter::default()).unwrap();
        assert_eq!(listing.runs, vec![first, last]);
        assert!(listing.skipped.is_empty());
    }

    #[test]
    fn a_new_store_is_created_with_its_directory_at_the_current_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/dyno.db");
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.path(), path);
        assert!(path.is_file());
        let conn = raw(&path);
        let version: u32 = conn
            .query_row("SELECT version FROM dyno_schema", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, schema::LATEST);
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        assert!(store.list(&Filter::default()).unwrap().runs.is_empty());
    }

    #[test]
    fn an_empty_file_is_an_empty_database_and_is_migrated() {
        // (A version table without rows or at 0 is in the suite.)
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.db");
        fs::write(&empty, b"").unwrap();
        let mut store = SqliteStore::open(&empty).unwrap();
        let r = run(Kind::Cpu, 0, &["t"], None);
        store.save(&r).unwrap();
        assert_eq!(store.get(&r.id.to_string()).unwrap(), r);
        let version: u32 = raw(&empty)
            .query_row("SELECT version FROM dyno_schema", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, schema::LATEST);
    }

    #[test]
    fn stores_opening_a_new_file_at_the_same_moment_all_succeed() {
        let dir = tempfile::tempdir().unwrap();
        for round in 0..10 {
            let path = dir.path().join(format!("new-{round}/dyno.db"));
            let barrier = Arc::new(Barrier::new(4));
            let openers: Vec<_> = (0..4)
                .map(|_| {
                    let (path, barrier) = (path.clone(), barrier.clone());
                    thread::spawn(move || {
                        barrier.wait();
                        let mut store = SqliteStore::open(&path)?;
                        store.save(&run(Kind::Cpu, 0, &[], None))
                    })
                })
                .collect();
            for opener in openers {
                opener.join().unwrap().unwrap();
            }
            let store = SqliteStore::open(&path).unwrap();
            assert_eq!(store.list(&Filter::default()).unwrap().runs.len(), 4);
            let rows: i64 = raw(&path)
                .query_row("SELECT count(*) FROM dyno_schema", [], |r| r.get(0))
                .unwrap();
            assert_eq!(rows, 1, "migrated exactly once");
        }
    }

    const CHILD_DB: &str = "DYNO_STORE_TEST_CHILD_DB";
    const CHILD_GO: &str = "DYNO_STORE_TEST_CHILD_GO";

    /// What each child process of the next test does: wait for the go file,
    /// open the (new) store and save 50 runs.
    #[test]
    #[ignore = "run as a child process by separate_processes_create_and_fill_one_store"]
    fn child_process_saves_runs() {
        let (Some(db), Some(go)) = (std::env::var_os(CHILD_DB), std::env::var_os(CHILD_GO)) else {
            panic!("only meant to run as a child of separate_processes_create_and_fill_one_store");
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !Path::new(&go).exists() {
            assert!(Instant::now() < deadline, "no go file");
            thread::sleep(Duration::from_millis(1));
        }
        let mut store = SqliteStore::open(Path::new(&db)).unwrap();
        let tag = format!("pid-{}", std::process::id());
        for i in 0..50 {
            store.save(&run(Kind::Exec, i, &[&tag], None)).unwrap();
        }
    }

    #[test]
    fn separate_processes_create_and_fill_one_store() {
        // Threads share one process's lock table; real dyno runs are separate
        // processes, so test those too.
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("store/dyno.db");
        let go = dir.path().join("go");
        let children: Vec<_> = (0..3)
            .map(|_| {
                std::process::Command::new(std::env::current_exe().unwrap())
                    .args([
                        "sqlite::tests::child_process_saves_runs",
                        "--exact",
                        "--ignored",
                    ])
                    .args(["--test-threads=1", "--quiet"])
                    .env(CHILD_DB, &db)
                    .env(CHILD_GO, &go)
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        fs::write(&go, "").unwrap();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "child failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("1 passed"),
                "the child ran its test"
            );
        }
        let store = SqliteStore::open(&db).unwrap();
        let runs = store.list(&Filter::default()).unwrap().runs;
        assert_eq!(runs.len(), 150);
        let mut pids: Vec<&String> = runs.iter().map(|r| &r.tags[0]).collect();
        pids.sort();
        pids.dedup();
        assert_eq!(pids.len(), 3);
    }

    #[test]
    fn a_file_that_is_not_a_database_is_refused_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        // Each case in a folder of its own, named after it.
        let refused = |case: &str, bytes: &[u8]| {
            let path = dir.path().join(case).join("dyno.db");
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, bytes).unwrap();
            assert_refused_untouched(&path, |e| matches!(e, StoreError::NotADatabase { .. }));
        };

        // xorshift64: arbitrary bytes without a dependency.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let bytes: Vec<u8> = (0..10_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        refused("random", &bytes);

        refused("text", b"my notes, not a database\n");

        // Right magic, nonsense after it.
        let mut bytes = b"SQLite format 3\0".to_vec();
        bytes.resize(8192, 0xFF);
        refused("corrupt", &bytes);

        // Right magic and a header that asks for WAL mode, garbage after it.
        let mut bytes = b"SQLite format 3\0\x10\x00\x02\x02\x00\x40\x20\x20".to_vec();
        bytes.resize(8192, 0xA5);
        refused("wal", &bytes);
    }

    #[test]
    fn a_truncated_store_is_reported_as_corrupt_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dyno.db");
        {
            let mut store = SqliteStore::open(&path).unwrap();
            for i in 0..20 {
                store.save(&run(Kind::Http, i, &["t"], Some("h"))).unwrap();
            }
        }
        let mut bytes = fs::read(&path).unwrap();
        bytes.truncate(4096);
        fs::write(&path, &bytes).unwrap();
        let err = SqliteStore::open(&path)
            .and_then(|store| store.list(&Filter::default()).map(drop))
            .unwrap_err();
        assert!(matches!(err, StoreError::NotADatabase { .. }), "{err:?}");
        assert!(fs::read(&path).unwrap() == bytes, "the file changed");
        assert_eq!(entries(dir.path()), vec!["dyno.db"]);
    }

    /// A store of `runs` runs at `path`, closed again.
    fn store_with_runs(path: &Path, runs: i64) {
        let mut store = SqliteStore::open(path).unwrap();
        for i in 0..runs {
            let mut r = run(Kind::Http, i, &["t"], Some("h"));
            r.description = format!("{} {}", r.description, "x".repeat(300));
            store.save(&r).unwrap();
        }
    }

    #[test]
    fn a_store_with_garbage_middle_pages_is_refused_untouched_even_by_writers() {
        // The newcomer audit's repro: two 4 KiB pages in the middle of a
        // store overwritten (dd bs=4096 seek=25 count=2 conv=notrunc). The
        // schema pages are intact, so only a check of every page finds it.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dyno.db");
        store_with_runs(&path, 200);
        let mut bytes = fs::read(&path).unwrap();
        assert!(bytes.len() > 27 * 4096, "{} bytes", bytes.len());
        for (i, b) in bytes[25 * 4096..27 * 4096].iter_mut().enumerate() {
            *b = ((i as u32).wrapping_mul(2_654_435_761) >> 13) as u8;
        }
        fs::write(&path, &bytes).unwrap();
        assert_refused_untouched(&path, |e| matches!(e, StoreError::NotADatabase { .. }));
    }

    /// How long the integrity check at open takes on a big store: run with
    /// `cargo test -p dyno-store -- --ignored --nocapture open_cost`.
    #[test]
    #[ignore = "a measurement, not a check"]
    fn open_cost_of_a_store_with_thousands_of_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dyno.db");
        store_with_runs(&path, 5000);
        let size = fs::metadata(&path).unwrap().len();
        let start = Instant::now();
        for _ in 0..10 {
            drop(SqliteStore::open(&path).unwrap());
        }
        eprintln!(
            "{size} bytes: open (with quick_check) {:?} each",
            start.elapsed() / 10
        );
    }

    #[test]
    fn another_programs_database_is_refused_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dyno.db");
        raw(&path)
            .execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me');")
            .unwrap();
        assert_refused_untouched(&path, |e| matches!(e, StoreError::Foreign { .. }));
    }

    #[test]
    fn a_store_from_a_newer_dyno_is_refused_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dyno.db");
        SqliteStore::open(&path).unwrap();
        raw(&path)
            .execute("UPDATE dyno_schema SET version = ?1", [schema::LATEST + 1])
            .unwrap();
        assert_refused_untouched(&path, |e| {
            matches!(e, StoreError::NewerSchema { found, supported, .. }
                if *found == schema::LATEST + 1 && *supported == schema::LATEST)
        });
    }

    #[test]
    fn a_place_that_cannot_be_created_or_written_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        // Tests may run as root, which ignores file modes: a regular file
        // where a directory should be stops everyone.
        let blocker = dir.path().join("not-a-dir");
        fs::write(&blocker, "x").unwrap();
        let err = SqliteStore::open(&blocker.join("sub/dyno.db")).unwrap_err();
        assert!(matches!(err, StoreError::CannotOpen { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(
            msg.contains("not-a-dir") && msg.contains("DYNO_HOME"),
            "{msg}"
        );

        let err = SqliteStore::open(&blocker.join("dyno.db")).unwrap_err();
        assert!(matches!(err, StoreError::CannotOpen { .. }), "{err:?}");

        let err = SqliteStore::open(dir.path()).unwrap_err();
        assert!(matches!(err, StoreError::CannotOpen { .. }), "{err:?}");
        assert_eq!(fs::read(&blocker).unwrap(), b"x");
    }

    #[test]
    fn a_write_lock_held_past_the_busy_timeout_is_reported_as_locked() {
        let dir = tempfile::tempdir().unwrap();
        let quick = Options {
            busy_timeout: Duration::from_millis(100),
        };

        // An up-to-date store opens under another writer (WAL readers do not
        // wait), and saving then gives up.
        let path = dir.path().join("dyno.db");
        SqliteStore::open(&path).unwrap();
        let holder = raw(&path);
        holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
        let mut store = SqliteStore::open_with(&path, quick.clone()).unwrap();
        let started = Instant::now();
        let err = store.save(&run(Kind::Http, 0, &[], None)).unwrap_err();
        assert!(matches!(err, StoreError::Locked { .. }), "{err:?}");
        assert!(err.to_string().contains("another dyno process"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(2));
        holder.execute_batch("COMMIT").unwrap();
        store.save(&run(Kind::Http, 0, &[], None)).unwrap();

        // A new database held in rollback mode cannot even be read.
        let path = dir.path().join("held.db");
        let holder = raw(&path);
        holder
            .execute_batch("BEGIN EXCLUSIVE; CREATE TABLE pending (x);")
            .unwrap();
        let started = Instant::now();
        let err = SqliteStore::open_with(&path, quick).unwrap_err();
        assert!(matches!(err, StoreError::Locked { .. }), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
