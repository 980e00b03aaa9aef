//! The SQLite store's schema and its migrations.
//!
//! The schema version is the one row of `dyno_schema`. [`MIGRATIONS`] is the
//! ordered list of steps: step `i` takes a database from version `i` to
//! `i + 1`, so a new database and an old one follow the same path. Never edit
//! a released step; append a new one.

use std::path::Path;

use rusqlite::{Connection, Transaction, TransactionBehavior};

use crate::StoreError;
use crate::error::classify;
use crate::sql::{self, SQLITE};

/// The migration steps, oldest first.
pub(crate) const MIGRATIONS: &[&str] = &[
    // Version 1: runs and their tags.
    //
    // `record` is the whole Run as JSON, the one source of truth; the other
    // columns copy out what filters and sorts need. `started_at_ns` is Unix
    // nanoseconds so it sorts as a number (RFC 3339 text with a varying
    // number of fraction digits would not sort correctly).
    "CREATE TABLE runs (
         id             TEXT    NOT NULL PRIMARY KEY,
         kind           TEXT    NOT NULL,
         started_at_ns  INTEGER NOT NULL,
         host           TEXT,
         description    TEXT    NOT NULL,
         schema_version INTEGER NOT NULL,
         record         TEXT    NOT NULL
     ) STRICT;
     CREATE INDEX runs_by_start ON runs (started_at_ns, id);
     CREATE INDEX runs_by_kind ON runs (kind, started_at_ns);
     CREATE INDEX runs_by_host ON runs (host, started_at_ns);
     CREATE TABLE run_tags (
         run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
         tag    TEXT NOT NULL,
         PRIMARY KEY (run_id, tag)
     ) STRICT, WITHOUT ROWID;
     CREATE INDEX run_tags_by_tag ON run_tags (tag, run_id);",
    // Version 2: the start barrier of runs split into segments.
    "CREATE TABLE group_arrivals (
         grp       TEXT    NOT NULL,
         idx       INTEGER NOT NULL,
         count     INTEGER NOT NULL,
         host      TEXT    NOT NULL,
         at_ns     INTEGER NOT NULL,
         PRIMARY KEY (grp, idx)
     ) STRICT;
     CREATE TABLE group_decisions (
         grp         TEXT NOT NULL PRIMARY KEY,
         start_at_ns INTEGER,
         called_off  TEXT
     ) STRICT;",
    // Version 3: each arrival's settings (JSON), which the group's later
    // arrivals must match; NULL for arrivals stored before.
    "ALTER TABLE group_arrivals ADD COLUMN settings TEXT;",
    // Version 4: what each segment of a group reports (a capacity search
    // over segments: each step's part, from which every segment merges
    // the step's whole observation).
    "CREATE TABLE group_reports (
         grp  TEXT    NOT NULL,
         idx  INTEGER NOT NULL,
         body TEXT    NOT NULL,
         PRIMARY KEY (grp, idx)
     ) STRICT;",
];

/// The schema version this build creates and understands.
pub(crate) const LATEST: u32 = MIGRATIONS.len() as u32;

/// What an SQLite database holds, as far as the store is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Contents {
    /// No tables at all: a new file, ours to set up.
    Empty,
    /// A dyno store at this schema version (0 before the first migration).
    Dyno(u32),
    /// Some other program's database.
    Foreign,
}

/// Reads what the database holds, without writing anything.
pub(crate) fn inspect(conn: &Connection) -> rusqlite::Result<Contents> {
    // One statement, so both answers come from the same snapshot: another
    // process may create the store between two separate queries, and a file
    // that seemed to have no version table but some tables would then look
    // foreign.
    let (has_version_table, has_anything): (bool, bool) = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'dyno_schema'),
                EXISTS (SELECT 1 FROM sqlite_master)",
        [],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    if !has_version_table {
        return Ok(if has_anything {
            Contents::Foreign
        } else {
            Contents::Empty
        });
    }
    // Versions only grow, in one transaction each, so reading the version
    // afterwards is as good as reading it together.
    let version: Option<i64> = conn.query_row(sql::VERSION, [], |row| row.get(0))?;
    Ok(match version {
        None => Contents::Dyno(0),
        // dyno never writes a negative version.
        Some(v) if v < 0 => Contents::Foreign,
        Some(v) => Contents::Dyno(u32::try_from(v).unwrap_or(u32::MAX)),
    })
}

/// The error for contents this build must leave alone, if they are such.
pub(crate) fn refuse(path: &Path, contents: Contents) -> Result<(), StoreError> {
    match contents {
        Contents::Foreign => Err(StoreError::Foreign {
            path: path.to_path_buf(),
        }),
        Contents::Dyno(found) if found > LATEST => Err(StoreError::NewerSchema {
            path: path.to_path_buf(),
            found,
            supported: LATEST,
        }),
        Contents::Empty | Contents::Dyno(_) => Ok(()),
    }
}

/// Brings the database up to [`LATEST`] in one `BEGIN IMMEDIATE`
/// transaction.
///
/// The contents are read again inside the transaction: another process may
/// have created or upgraded the store since the caller last looked, and then
/// there is less (or nothing) left to do.
pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let sql = |err| classify(path, err);
    let mut tx = begin_write(conn, path)?;
    let contents = inspect(&tx).map_err(sql)?;
    refuse(path, contents)?;
    let from = match contents {
        Contents::Dyno(version) => version,
        // (Foreign contents were refused above.)
        Contents::Empty | Contents::Foreign => {
            tx.execute_batch("CREATE TABLE dyno_schema (version INTEGER NOT NULL);")
                .map_err(sql)?;
            0
        }
    };
    sql::upgrade(&mut tx, MIGRATIONS, from).map_err(sql)?;
    tx.commit().map_err(sql)
}

impl sql::Migrate for Transaction<'_> {
    type Error = rusqlite::Error;

    fn batch(&mut self, script: &str) -> Result<(), rusqlite::Error> {
        self.execute_batch(script)
    }

    fn set_version(&mut self, version: u32) -> Result<(), rusqlite::Error> {
        self.execute(&SQLITE.render(sql::SET_VERSION), [version])
            .map(drop)
    }
}

/// Begins a transaction on the store at `path` that takes the write lock
/// at once (`BEGIN IMMEDIATE`), so that what it reads stays true until it
/// commits.
pub(crate) fn begin_write<'c>(
    conn: &'c mut Connection,
    path: &Path,
) -> Result<Transaction<'c>, StoreError> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|err| classify(path, err))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_database_is_migrated_to_the_latest_version() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(inspect(&conn).unwrap(), Contents::Empty);
        migrate(&mut conn, Path::new(":memory:")).unwrap();
        assert_eq!(inspect(&conn).unwrap(), Contents::Dyno(LATEST));
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM dyno_schema", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 1, "the version table holds exactly one row");
        // Every table the store queries exists.
        conn.execute_batch("SELECT id, kind, started_at_ns, host, description, schema_version, record FROM runs; SELECT run_id, tag FROM run_tags;")
            .unwrap();
    }

    #[test]
    fn migrating_an_up_to_date_database_changes_nothing() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, Path::new(":memory:")).unwrap();
        conn.execute_batch("CREATE TABLE marker (x); INSERT INTO marker VALUES (1);")
            .unwrap();
        migrate(&mut conn, Path::new(":memory:")).unwrap();
        assert_eq!(inspect(&conn).unwrap(), Contents::Dyno(LATEST));
        let marker: i64 = conn
            .query_row("SELECT x FROM marker", [], |r| r.get(0))
            .unwrap();
        assert_eq!(marker, 1);
    }

    #[test]
    fn a_version_table_without_rows_or_at_zero_counts_as_version_zero() {
        for setup in [
            "CREATE TABLE dyno_schema (version INTEGER NOT NULL);",
            "CREATE TABLE dyno_schema (version INTEGER NOT NULL); INSERT INTO dyno_schema VALUES (0);",
        ] {
            let mut conn = Connection::open_in_memory().unwrap();
            conn.execute_batch(setup).unwrap();
            assert_eq!(inspect(&conn).unwrap(), Contents::Dyno(0), "{setup}");
            migrate(&mut conn, Path::new(":memory:")).unwrap();
            assert_eq!(inspect(&conn).unwrap(), Contents::Dyno(LATEST), "{setup}");
        }
    }

    #[test]
    fn foreign_and_newer_databases_are_refused_and_not_migrated() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE notes (body TEXT);")
            .unwrap();
        assert_eq!(inspect(&conn).unwrap(), Contents::Foreign);
        let err = migrate(&mut conn, Path::new("f.db")).unwrap_err();
        assert!(matches!(err, StoreError::Foreign { .. }), "{err:?}");
        assert!(conn.prepare("SELECT 1 FROM dyno_schema").is_err());

        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE dyno_schema (version INTEGER NOT NULL); INSERT INTO dyno_schema VALUES (99);",
        )
        .unwrap();
        let err = migrate(&mut conn, Path::new("n.db")).unwrap_err();
        assert!(
            matches!(
                err,
                StoreError::NewerSchema {
                    found: 99,
                    supported: LATEST,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(conn.prepare("SELECT 1 FROM runs").is_err());
    }
}
