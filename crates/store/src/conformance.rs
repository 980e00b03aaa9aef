//! What every store backend must do, written once and run by each
//! backend's tests on its own store (as object_store's `integration.rs`).
//!
//! A backend's test module invokes [`suite!`] with an expression that makes
//! a new, empty [`Place`] of that backend; the macro writes one `#[test]`
//! per behaviour below, so a backend cannot skip one. What only one backend
//! has (SQLite's file locking and damaged files, PostgreSQL's connection
//! errors and clock) stays with that backend's tests.
//!
//! The functions take what they need: a store, two handles of one store, or
//! a [`Place`] to open (and reopen) a store at and to reach its database
//! around the store ([`Raw`]), to damage records as a hand edit or a newer
//! dyno would, and to count rows the store does not show.

use dyno_model::{Kind, Run, RunId, SCHEMA_VERSION, Segment};

use crate::sql::{self, Arg, POSTGRES, SQLITE};
use crate::testutil::run;
use crate::{Arrival, Decision, Filter, GroupState, SkipReason, Store, StoreError};

/// Where a backend keeps a store: a new, empty place at first.
pub(crate) trait Place: Sync {
    /// Opens the store here, creating it when the place is new.
    fn open(&self) -> Result<Box<dyn Store>, StoreError>;
    /// A plain connection to the place's database, around the store.
    fn raw(&self) -> Box<dyn Raw>;
    /// The schema version a store of this backend is created at.
    fn latest(&self) -> u32;
    /// Makes the new place an empty store at schema `version`, as this
    /// backend's migration steps made it: a store an older dyno left.
    fn make_old(&self, version: u32);
    /// Whether the store is on a database server (PostgreSQL), whose
    /// refusals are their own errors (`ForeignDatabase`,
    /// `NewerServerSchema`), not a file's (`Foreign`, `NewerSchema`).
    fn is_server(&self) -> bool;
}

/// A plain connection to a store's database. Statements are written as in
/// [`crate::sql`] (tables in braces, `?` parameters) and rendered in the
/// backend's dialect.
pub(crate) trait Raw {
    /// Runs statements without parameters, as they are.
    fn batch(&mut self, sql: &str);
    /// Runs one statement; the number of rows it changed.
    fn execute(&mut self, sql: &str, args: &[Arg]) -> u64;
    /// The integer in the first column of the one row `sql` returns.
    fn number(&mut self, sql: &str, args: &[Arg]) -> i64;
    /// The names of the database's tables, sorted.
    fn tables(&mut self) -> Vec<String>;
}

impl Raw for rusqlite::Connection {
    fn batch(&mut self, sql: &str) {
        self.execute_batch(sql).unwrap();
    }

    fn execute(&mut self, sql: &str, args: &[Arg]) -> u64 {
        let changed = rusqlite::Connection::execute(
            self,
            &SQLITE.render(sql),
            rusqlite::params_from_iter(args.iter().map(sqlite_value)),
        );
        changed.unwrap() as u64
    }

    fn number(&mut self, sql: &str, args: &[Arg]) -> i64 {
        self.query_row(
            &SQLITE.render(sql),
            rusqlite::params_from_iter(args.iter().map(sqlite_value)),
            |row| row.get(0),
        )
        .unwrap()
    }

    fn tables(&mut self) -> Vec<String> {
        let mut stmt = self
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap();
        let names = stmt.query_map([], |row| row.get(0)).unwrap();
        names.collect::<Result<_, _>>().unwrap()
    }
}

fn sqlite_value(arg: &Arg) -> rusqlite::types::Value {
    match arg {
        Arg::Text(text) => rusqlite::types::Value::Text(text.clone()),
        Arg::Int(n) => rusqlite::types::Value::Integer(*n),
    }
}

impl Raw for postgres::Client {
    fn batch(&mut self, sql: &str) {
        self.batch_execute(sql).unwrap();
    }

    fn execute(&mut self, sql: &str, args: &[Arg]) -> u64 {
        postgres::Client::execute(self, &POSTGRES.render(sql), &pg_params(args)).unwrap()
    }

    fn number(&mut self, sql: &str, args: &[Arg]) -> i64 {
        self.query_one(&POSTGRES.render(sql), &pg_params(args))
            .unwrap()
            .get(0)
    }

    fn tables(&mut self) -> Vec<String> {
        let rows = self
            .query(
                "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY 1",
                &[],
            )
            .unwrap();
        rows.iter().map(|r| r.get(0)).collect()
    }
}

fn pg_params(args: &[Arg]) -> Vec<&(dyn postgres::types::ToSql + Sync)> {
    args.iter()
        .map(|arg| match arg {
            Arg::Text(text) => text as &(dyn postgres::types::ToSql + Sync),
            Arg::Int(n) => n,
        })
        .collect()
}

/// One `#[test]` per behaviour of the suite, on places `$place` makes (a
/// new, empty one for each test).
/// Each behaviour is named once, under what its function takes; the test
/// is named after the function.
macro_rules! suite {
    ($place:expr) => {
        use $crate::conformance::{self, Place as _};

        $crate::conformance::suite!(@store $place;
            saved_runs_read_back_by_id_in_either_case,
            saving_an_id_twice_is_refused_and_keeps_the_first,
            a_run_that_would_not_read_back_is_not_saved,
            prefixes_resolve_uniquely,
            every_filter_narrows,
        );
        $crate::conformance::suite!(@place $place;
            reopening_keeps_the_runs,
            removing_takes_the_tags_and_nothing_else,
            remove_all_is_atomic,
            unreadable_and_newer_records_are_skipped,
            writers_opening_a_new_store_at_once_save_every_run_once,
            arrivals_from_before_settings_are_read,
        );
        $crate::conformance::suite!(@two_places $place;
            version_tables_without_rows_or_at_zero_are_migrated,
            foreign_or_newer_databases_are_refused,
        );
        $crate::conformance::suite!(@two_handles $place; group_barrier, group_reports);
    };
    // A behaviour of one store, opened at a new place.
    (@store $place:expr; $($behaviour:ident),* $(,)?) => {
        $(
            #[test]
            fn $behaviour() {
                let place = $place;
                conformance::$behaviour(&mut *place.open().unwrap());
            }
        )*
    };
    // A behaviour of a place, which it opens (and reopens) itself.
    (@place $place:expr; $($behaviour:ident),* $(,)?) => {
        $(
            #[test]
            fn $behaviour() {
                conformance::$behaviour(&$place);
            }
        )*
    };
    // A behaviour of two new places: one to open, one to reach around it.
    (@two_places $place:expr; $($behaviour:ident),* $(,)?) => {
        $(
            #[test]
            fn $behaviour() {
                conformance::$behaviour(&$place, &$place);
            }
        )*
    };
    // A behaviour of two handles of one store at a new place.
    (@two_handles $place:expr; $($behaviour:ident),* $(,)?) => {
        $(
            #[test]
            fn $behaviour() {
                let place = $place;
                conformance::$behaviour(&mut *place.open().unwrap(), &mut *place.open().unwrap());
            }
        )*
    };
}

pub(crate) use suite;

fn ids(runs: &[Run]) -> Vec<RunId> {
    runs.iter().map(|r| r.id).collect()
}

fn id(s: &str) -> RunId {
    s.parse().unwrap()
}

/// A saved run reads back equal, by its id in upper or lower case.
pub(crate) fn saved_runs_read_back_by_id_in_either_case(store: &mut dyn Store) {
    let r = run(Kind::Http, 5, &["prod", "v2"], Some("web-1"));
    store.save(&r).unwrap();
    assert_eq!(store.get(&r.id.to_string()).unwrap(), r);
    assert_eq!(store.get(&r.id.to_string().to_lowercase()).unwrap(), r);
}

/// Saving a stored id again fails with `Duplicate` and changes nothing:
/// the first record stays, and the second's tags are not added.
pub(crate) fn saving_an_id_twice_is_refused_and_keeps_the_first(store: &mut dyn Store) {
    let original = run(Kind::Http, 5, &["a"], None);
    store.save(&original).unwrap();
    let mut changed = original.clone();
    changed.description = "something else".into();
    changed.tags = vec!["b".into()];
    let err = store.save(&changed).unwrap_err();
    assert!(
        matches!(err, StoreError::Duplicate { id } if id == original.id),
        "{err:?}"
    );
    assert_eq!(store.get(&original.id.to_string()).unwrap(), original);
    let tagged_b = Filter {
        tags: vec!["b".into()],
        ..Filter::default()
    };
    assert!(
        store.list(&tagged_b).unwrap().runs.is_empty(),
        "no tags leaked"
    );
}

/// A run whose JSON would not read back (a NaN, which JSON writes as null)
/// is refused with `Unencodable`, and nothing is stored.
pub(crate) fn a_run_that_would_not_read_back_is_not_saved(store: &mut dyn Store) {
    let mut r = run(Kind::Cpu, 0, &["t"], None);
    r.metrics[0].value = f64::NAN;
    let err = store.save(&r).unwrap_err();
    assert!(
        matches!(err, StoreError::Unencodable { id, .. } if id == r.id),
        "{err:?}"
    );
    assert!(store.list(&Filter::default()).unwrap().runs.is_empty());
}

/// A run is found by its full id or by a prefix of at least four
/// characters that no other id shares, in either case; a shorter prefix,
/// a shared one, and anything that is not the start of an id (wildcards of
/// either dialect included) are refused.
pub(crate) fn prefixes_resolve_uniquely(store: &mut dyn Store) {
    let a = id("01J0AAAAAAAAAAAAAAAAAAAAAA");
    let b = id("01J0AAAAAAAAAAAAAAAAAAAAAB");
    let c = id("01J1BBBBBBBBBBBBBBBBBBBBBB");
    for (n, id) in [a, b, c].into_iter().enumerate() {
        let mut r = run(Kind::Exec, n as i64, &[], None);
        r.id = id;
        store.save(&r).unwrap();
    }
    assert_eq!(store.get("01j1").unwrap().id, c);
    assert_eq!(store.get("01J0AAAAAAAAAAAAAAAAAAAAAB").unwrap().id, b);
    assert_eq!(store.get("01j0aaaaaaaaaaaaaaaaaaaaaa").unwrap().id, a);
    for shared in ["01J0", "01J0AAAAAAAAAAAAAAAAAAAA"] {
        match store.get(shared).unwrap_err() {
            StoreError::Ambiguous { prefix, matches } => {
                assert_eq!(prefix, shared);
                assert_eq!(matches, vec![a, b]);
            }
            err => panic!("expected Ambiguous, got {err:?}"),
        }
    }
    assert_eq!(store.get("01J1BBBBBBBBBBBBBBBBBBBB").unwrap().id, c);
    assert!(matches!(
        store.get("01J").unwrap_err(),
        StoreError::PrefixTooShort { prefix } if prefix == "01J"
    ));
    assert!(matches!(
        store.get("01").unwrap_err(),
        StoreError::PrefixTooShort { prefix } if prefix == "01"
    ));
    for missing in [
        "01J2",
        "ZZZZZZZZ",
        "01J0AAAAAAAAAAAAAAAAAAAAAC",
        "01J0*",
        "01J0%",
        "01J%",
        "01J0_AAAAAAAAAAAAAAAAAAAAA",
        "01J0AAAAAAAAAAAAAAAAAAAAAAA",
    ] {
        assert!(
            matches!(store.get(missing).unwrap_err(), StoreError::NotFound { id } if id == missing),
            "{missing}"
        );
    }
}

/// Each condition of a [`Filter`] narrows the listing, all of them
/// together too, and the listing is oldest first whatever the order of
/// saving; a limit keeps the newest N, still oldest first.
pub(crate) fn every_filter_narrows(store: &mut dyn Store) {
    let r1 = run(Kind::Http, 10, &["prod", "v1"], Some("web-1"));
    let r2 = run(Kind::Disk, 20, &["prod"], Some("db-1"));
    let r3 = run(Kind::Http, 30, &["v1"], Some("web-2"));
    let r4 = run(Kind::Http, 40, &["prod", "v1", "big"], Some("web-1"));
    let r5 = run(Kind::Cpu, 50, &[], None);
    // Saved out of time order: listing sorts by start time, not by insertion.
    for r in [&r4, &r1, &r5, &r3, &r2] {
        store.save(r).unwrap();
    }
    let list = |filter: Filter| ids(&store.list(&filter).unwrap().runs);
    let all = || Filter::default();
    let tags = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();

    assert_eq!(list(all()), vec![r1.id, r2.id, r3.id, r4.id, r5.id]);
    let http = Filter {
        kind: Some(Kind::Http),
        ..all()
    };
    assert_eq!(list(http.clone()), vec![r1.id, r3.id, r4.id]);
    assert!(
        list(Filter {
            kind: Some(Kind::Db),
            ..all()
        })
        .is_empty()
    );
    assert_eq!(
        list(Filter {
            tags: tags(&["prod"]),
            ..all()
        }),
        vec![r1.id, r2.id, r4.id]
    );
    assert_eq!(
        list(Filter {
            tags: tags(&["prod", "v1"]),
            ..all()
        }),
        vec![r1.id, r4.id]
    );
    assert_eq!(
        list(Filter {
            tags: tags(&["prod", "v1", "big"]),
            ..all()
        }),
        vec![r4.id]
    );
    assert!(
        list(Filter {
            tags: tags(&["PROD"]),
            ..all()
        })
        .is_empty()
    );
    assert_eq!(
        list(Filter {
            host: Some("web-1".into()),
            ..all()
        }),
        vec![r1.id, r4.id]
    );
    assert!(
        list(Filter {
            host: Some("web".into()),
            ..all()
        })
        .is_empty()
    );
    assert_eq!(
        list(Filter {
            since: Some(r3.started_at),
            ..all()
        }),
        vec![r3.id, r4.id, r5.id],
        "since is inclusive"
    );
    assert_eq!(
        list(Filter {
            limit: Some(2),
            ..all()
        }),
        vec![r4.id, r5.id]
    );
    assert_eq!(
        list(Filter {
            limit: Some(2),
            ..http
        }),
        vec![r3.id, r4.id]
    );
    assert_eq!(
        list(Filter {
            limit: Some(99),
            ..all()
        })
        .len(),
        5
    );
    assert!(
        list(Filter {
            limit: Some(0),
            ..all()
        })
        .is_empty()
    );
    assert_eq!(
        list(Filter {
            kind: Some(Kind::Http),
            tags: tags(&["v1"]),
            host: Some("web-1".into()),
            since: Some(r1.started_at),
            limit: Some(1),
        }),
        vec![r4.id]
    );
    // Whole records come back, not just ids.
    assert_eq!(
        store
            .list(&Filter {
                limit: Some(1),
                ..all()
            })
            .unwrap()
            .runs,
        vec![r5]
    );
}

/// Runs saved, the store closed and opened again: the runs are there, and
/// the schema was not migrated again (one version row, the latest).
pub(crate) fn reopening_keeps_the_runs(place: &dyn Place) {
    let first = run(Kind::Http, 1, &["x"], Some("h"));
    let second = run(Kind::Disk, 2, &[], None);
    {
        let mut store = place.open().unwrap();
        store.save(&first).unwrap();
        store.save(&second).unwrap();
    }
    let store = place.open().unwrap();
    assert_eq!(
        store.list(&Filter::default()).unwrap().runs,
        vec![first, second]
    );
    drop(store);
    let mut raw = place.raw();
    assert_eq!(raw.number("SELECT count(*) FROM dyno_schema", &[]), 1);
    assert_eq!(raw.number(sql::VERSION, &[]), i64::from(place.latest()));
}

/// Removing a run by a unique prefix removes it and its tags, and nothing
/// else; it cannot be got or removed again.
pub(crate) fn removing_takes_the_tags_and_nothing_else(place: &dyn Place) {
    let mut store = place.open().unwrap();
    let gone = run(Kind::Http, 1, &["a", "b"], None);
    let kept = run(Kind::Http, 2, &["a"], None);
    store.save(&gone).unwrap();
    store.save(&kept).unwrap();
    let prefix = &gone.id.to_string()[..20];
    assert_eq!(store.remove(prefix).unwrap(), gone.id);
    assert!(matches!(
        store.get(&gone.id.to_string()).unwrap_err(),
        StoreError::NotFound { .. }
    ));
    assert!(matches!(
        store.remove(&gone.id.to_string()).unwrap_err(),
        StoreError::NotFound { .. }
    ));
    let tags_of = |raw: &mut dyn Raw, id: RunId| {
        raw.number(
            "SELECT count(*) FROM {run_tags} WHERE run_id = ?",
            &[Arg::Text(id.to_string())],
        )
    };
    let mut raw = place.raw();
    assert_eq!(tags_of(&mut *raw, gone.id), 0);
    assert_eq!(tags_of(&mut *raw, kept.id), 1);
    assert_eq!(store.list(&Filter::default()).unwrap().runs, vec![kept]);
}

/// `remove_all` removes every run named or none: an id that does not
/// resolve fails it, naming that id, with every run left in place. A run
/// named twice (in either case) is removed once, and the ids come back in
/// the order given; the tags go with the runs.
pub(crate) fn remove_all_is_atomic(place: &dyn Place) {
    let mut store = place.open().unwrap();
    let mut a = run(Kind::Http, 1, &["a", "t"], None);
    let mut b = run(Kind::Disk, 2, &["t"], None);
    a.id = id("01J0AAAAAAAAAAAAAAAAAAAAAA");
    b.id = id("01J0AAAAAAAAAAAAAAAAAAAAAB");
    let c = run(Kind::Exec, 3, &["c"], None);
    for r in [&a, &b, &c] {
        store.save(r).unwrap();
    }
    let (a_id, b_id) = (a.id.to_string(), b.id.to_string());
    // A valid id then an unknown one: nothing is removed.
    let err = store.remove_all(&[&a_id, "ZZZZZZ"]).unwrap_err();
    assert!(
        matches!(&err, StoreError::NotFound { id } if id == "ZZZZZZ"),
        "{err:?}"
    );
    // So does an ambiguous prefix after a valid id.
    let err = store.remove_all(&[&b_id, "01J0A"]).unwrap_err();
    assert!(
        matches!(&err, StoreError::Ambiguous { prefix, .. } if prefix == "01J0A"),
        "{err:?}"
    );
    assert_eq!(store.list(&Filter::default()).unwrap().runs.len(), 3);
    let mut raw = place.raw();
    assert_eq!(raw.number("SELECT count(*) FROM {run_tags}", &[]), 4);
    // The same run twice (in either case) is removed once.
    let removed = store
        .remove_all(&[&b_id, &a_id, &a_id.to_lowercase()])
        .unwrap();
    assert_eq!(removed, vec![b.id, a.id]);
    assert_eq!(
        store.list(&Filter::default()).unwrap().runs,
        vec![c.clone()]
    );
    assert_eq!(
        raw.number(
            "SELECT count(*) FROM {run_tags} WHERE run_id <> ?",
            &[Arg::Text(c.id.to_string())]
        ),
        0
    );
}

/// Records that do not read (not JSON, JSON of another shape) and records a
/// newer dyno wrote are skipped by `list`, named with why, in order,
/// without failing it; filters and the limit still count them; `get`
/// gives a clear error for each; `remove` removes them.
pub(crate) fn unreadable_and_newer_records_are_skipped(place: &dyn Place) {
    let mut store = place.open().unwrap();
    let first = run(Kind::Http, 0, &["t"], None);
    let not_json = run(Kind::Http, 1, &["t"], None);
    let wrong_shape = run(Kind::Http, 2, &["t"], None);
    let newer = run(Kind::Http, 3, &["t"], None);
    let last = run(Kind::Http, 4, &["t"], None);
    for r in [&first, &not_json, &wrong_shape, &newer, &last] {
        store.save(r).unwrap();
    }
    let mut raw = place.raw();
    let set_record = "UPDATE {runs} SET record = ? WHERE id = ?";
    let text = |s: &str| Arg::Text(s.to_owned());
    let changed = raw.execute(
        set_record,
        &[text("{not json"), text(&not_json.id.to_string())],
    );
    assert_eq!(changed, 1);
    raw.execute(
        set_record,
        &[
            text("{\"schema_version\": 1, \"id\": 3}"),
            text(&wrong_shape.id.to_string()),
        ],
    );
    raw.execute(
        "UPDATE {runs} SET schema_version = ?, record = ? WHERE id = ?",
        &[
            Arg::Int(i64::from(SCHEMA_VERSION + 1)),
            text("{\"new_shape\": true}"),
            text(&newer.id.to_string()),
        ],
    );

    // Listing reads the rest and names each record it skipped, in order.
    let listing = store.list(&Filter::default()).unwrap();
    assert_eq!(listing.runs, vec![first.clone(), last.clone()]);
    let skipped: Vec<RunId> = listing.skipped.iter().map(|s| s.id).collect();
    assert_eq!(skipped, vec![not_json.id, wrong_shape.id, newer.id]);
    assert!(
        matches!(listing.skipped[0].reason, SkipReason::Damaged { .. }),
        "{:?}",
        listing.skipped[0]
    );
    assert!(
        matches!(&listing.skipped[1].reason, SkipReason::Damaged { detail }
            if detail.contains("invalid type")),
        "{:?}",
        listing.skipped[1]
    );
    assert_eq!(
        listing.skipped[2].reason,
        SkipReason::Newer {
            found: SCHEMA_VERSION + 1,
            supported: SCHEMA_VERSION
        }
    );
    // Filters still apply to unreadable records (their columns are
    // intact), and the limit counts them: the newest two records.
    let tagged = |limit| Filter {
        tags: vec!["t".into()],
        limit,
        ..Filter::default()
    };
    let listing = store.list(&tagged(Some(2))).unwrap();
    assert_eq!(listing.runs, vec![last.clone()]);
    assert_eq!(listing.skipped.len(), 1);
    assert_eq!(listing.skipped[0].id, newer.id);
    let other_host = Filter {
        host: Some("elsewhere".into()),
        ..Filter::default()
    };
    let listing = store.list(&other_host).unwrap();
    assert!(listing.runs.is_empty() && listing.skipped.is_empty());

    for damaged in [&not_json, &wrong_shape] {
        let err = store.get(&damaged.id.to_string()).unwrap_err();
        assert!(
            matches!(err, StoreError::BadRecord { id, .. } if id == damaged.id),
            "{err:?}"
        );
    }
    let err = store.get(&newer.id.to_string()).unwrap_err();
    assert!(
        matches!(err, StoreError::NewerRecord { id, found, supported }
            if id == newer.id && found == SCHEMA_VERSION + 1 && supported == SCHEMA_VERSION),
        "{err:?}"
    );
    assert!(err.to_string().contains("Upgrade dyno"), "{err}");

    assert_eq!(store.remove(&not_json.id.to_string()).unwrap(), not_json.id);
    assert_eq!(store.list(&Filter::default()).unwrap().skipped.len(), 2);
    assert_eq!(
        store.remove(&wrong_shape.id.to_string()).unwrap(),
        wrong_shape.id
    );
    assert_eq!(store.remove(&newer.id.to_string()).unwrap(), newer.id);
    let listing = store.list(&Filter::default()).unwrap();
    assert_eq!(listing.runs, vec![first, last]);
    assert!(listing.skipped.is_empty());
}

/// A version table with no row, or at version 0 (a store whose first
/// migration never ran), is a dyno store to migrate: it opens, migrates to
/// the latest version (one row) and saves and reads runs.
///
/// Takes two new places, one for each.
pub(crate) fn version_tables_without_rows_or_at_zero_are_migrated(
    no_rows: &dyn Place,
    zero: &dyn Place,
) {
    let table = "CREATE TABLE dyno_schema (version BIGINT NOT NULL);";
    no_rows.raw().batch(table);
    zero.raw()
        .batch(&format!("{table} INSERT INTO dyno_schema VALUES (0);"));
    for place in [no_rows, zero] {
        let mut store = place.open().unwrap();
        let r = run(Kind::Cpu, 0, &["t"], None);
        store.save(&r).unwrap();
        assert_eq!(store.get(&r.id.to_string()).unwrap(), r);
        let mut raw = place.raw();
        assert_eq!(raw.number("SELECT count(*) FROM dyno_schema", &[]), 1);
        assert_eq!(raw.number(sql::VERSION, &[]), i64::from(place.latest()));
    }
}

/// A database that holds another program's tables, and a store whose
/// schema version is newer than this build's, are refused ("left
/// untouched"), and nothing is written to them: no table of ours is made.
///
/// Takes two new places, one for each.
pub(crate) fn foreign_or_newer_databases_are_refused(foreign: &dyn Place, newer: &dyn Place) {
    let mut raw = foreign.raw();
    raw.batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep');");
    let err = foreign.open().map(drop).unwrap_err();
    let refused = if foreign.is_server() {
        matches!(err, StoreError::ForeignDatabase { .. })
    } else {
        matches!(err, StoreError::Foreign { .. })
    };
    assert!(refused, "{err:?}");
    assert!(err.to_string().contains("left untouched"), "{err}");
    assert_eq!(raw.tables(), vec!["notes".to_owned()]);
    assert_eq!(
        raw.number("SELECT count(*) FROM notes WHERE body = 'keep'", &[]),
        1
    );

    let mut raw = newer.raw();
    raw.batch(
        "CREATE TABLE dyno_schema (version BIGINT NOT NULL); INSERT INTO dyno_schema VALUES (99);",
    );
    let err = newer.open().map(drop).unwrap_err();
    let latest = newer.latest();
    let refused = if newer.is_server() {
        matches!(err, StoreError::NewerServerSchema { found: 99, supported, .. } if supported == latest)
    } else {
        matches!(err, StoreError::NewerSchema { found: 99, supported, .. } if supported == latest)
    };
    assert!(refused, "{err:?}");
    assert!(err.to_string().contains("left untouched"), "{err}");
    assert!(err.to_string().contains("Upgrade dyno"), "{err}");
    assert_eq!(
        raw.tables(),
        vec!["dyno_schema".to_owned()],
        "nothing migrated"
    );
    assert_eq!(raw.number(sql::VERSION, &[]), 99);
}

/// Writers that open a new store at the same moment (as machines or
/// processes starting together would) all succeed, the store is migrated
/// once, and runs they then save at the same time are each stored once,
/// with their own tags.
pub(crate) fn writers_opening_a_new_store_at_once_save_every_run_once(place: &dyn Place) {
    const WRITERS: usize = 6;
    const RUNS: usize = 25;
    let start = std::sync::Barrier::new(WRITERS);
    let mut saved: Vec<RunId> = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let start = &start;
                scope.spawn(move || {
                    // Every writer migrates the new store at the same
                    // moment; one does it, the others find it done.
                    start.wait();
                    let mut store = place.open().unwrap();
                    let mut saved = Vec::new();
                    for i in 0..RUNS {
                        let r = run(
                            Kind::Http,
                            (w * RUNS + i) as i64,
                            &[&format!("writer-{w}")],
                            Some(&format!("m{w}")),
                        );
                        store.save(&r).unwrap();
                        saved.push(r.id);
                    }
                    saved
                })
            })
            .collect();
        writers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    saved.sort();
    let store = place.open().unwrap();
    let mut listed = ids(&store.list(&Filter::default()).unwrap().runs);
    listed.sort();
    assert_eq!(listed, saved);
    assert_eq!(listed.len(), WRITERS * RUNS);
    for w in 0..WRITERS {
        let mine = Filter {
            tags: vec![format!("writer-{w}")],
            ..Filter::default()
        };
        assert_eq!(store.list(&mine).unwrap().runs.len(), RUNS);
    }
    let rows = place.raw().number("SELECT count(*) FROM dyno_schema", &[]);
    assert_eq!(rows, 1, "migrated exactly once");
}

/// The start barrier, on two handles of one store (as two machines would
/// hold them): each index arrives once, with one count and one set of
/// settings for the group (the first arrival's stand, and a refused
/// arrival is not stored); the first decision stands, whoever writes next;
/// another group is another barrier.
pub(crate) fn group_barrier(a: &mut dyn Store, b: &mut dyn Store) {
    let arrival = |index, count, host: &str| Arrival {
        group: "g1".into(),
        segment: Segment::new(index, count).unwrap(),
        host: host.into(),
        at_ns: 1_000 + i64::from(index),
        settings: [("url", "http://x/"), ("rate_per_sec", "100")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
    };
    assert_eq!(a.group("g1").unwrap(), GroupState::default());
    a.arrive(&arrival(0, 3, "h0")).unwrap();
    b.arrive(&arrival(2, 3, "h2")).unwrap();
    // Each index once; one count for the group.
    let again = b.arrive(&arrival(0, 3, "elsewhere")).unwrap_err();
    assert!(
        matches!(&again, StoreError::Group(m) if m.contains("0/3") && m.contains("h0")),
        "{again}"
    );
    let other_count = a.arrive(&arrival(1, 4, "h1")).unwrap_err();
    assert!(
        matches!(&other_count, StoreError::Group(m) if m.contains("3 segments")),
        "{other_count}"
    );
    let state = b.group("g1").unwrap();
    assert_eq!(
        state.arrivals,
        vec![arrival(0, 3, "h0"), arrival(2, 3, "h2")]
    );
    assert_eq!(state.missing(3), vec![1]);
    assert_eq!(state.decision, None);
    // Another command: refused, naming each setting that differs with both
    // values; the first arrival's settings stand, and nothing is stored.
    let mut other = arrival(1, 3, "h1");
    other.settings.insert("url".into(), "http://y/".into());
    other.settings.remove("rate_per_sec");
    other.settings.insert("requests".into(), "10".into());
    let differs = b.arrive(&other).unwrap_err();
    let StoreError::GroupSettings(m) = &differs else {
        panic!("{differs:?}")
    };
    for needle in [
        "segment 1/3 (from h1)",
        "segment 0/3 (from h0)",
        "url http://y/ against http://x/",
        "rate_per_sec (not set) against 100",
        "requests 10 against (not set)",
    ] {
        assert!(m.contains(needle), "{needle}: {m}");
    }
    assert!(!m.contains("url http://x/"), "{m}");
    assert_eq!(a.group("g1").unwrap().arrivals.len(), 2);
    assert_eq!(
        a.group("g1").unwrap().arrivals[0].fingerprint(),
        arrival(0, 3, "h0").fingerprint()
    );
    assert_ne!(other.fingerprint(), arrival(0, 3, "h0").fingerprint());
    // The first decision stands, whoever writes next.
    let start = Decision::Start { at_ns: 42 };
    assert_eq!(a.decide("g1", &start).unwrap(), start);
    let off = Decision::CalledOff { why: "late".into() };
    assert_eq!(b.decide("g1", &off).unwrap(), start);
    assert_eq!(b.group("g1").unwrap().decision, Some(start));
    // Another group is another barrier.
    assert_eq!(b.decide("g2", &off).unwrap(), off);
    assert_eq!(a.group("g2").unwrap().decision, Some(off));
    assert!(a.group("g2").unwrap().arrivals.is_empty());
}

/// Reports, on two handles of one store: each segment reports once per
/// group (a second report is refused, and the first stands), read back by
/// index with their bodies as written; another group has its own.
pub(crate) fn group_reports(a: &mut dyn Store, b: &mut dyn Store) {
    assert!(a.reports("g1/3").unwrap().is_empty());
    let body = r#"{"measured":{"requests":5,"latency":"HISTFAAAAB54nJNpmSzMwMDAxQABzFCaEUwz2X+AsQE8DxOmZg=="}}"#;
    b.report("g1/3", 2, body).unwrap();
    a.report("g1/3", 0, "\"interrupted\"").unwrap();
    let again = a.report("g1/3", 2, "other").unwrap_err();
    assert!(
        matches!(&again, StoreError::Group(m) if m.contains("segment 2") && m.contains("g1/3")),
        "{again}"
    );
    assert_eq!(
        b.reports("g1/3").unwrap(),
        vec![(0, "\"interrupted\"".to_owned()), (2, body.to_owned())]
    );
    assert!(b.reports("g1/4").unwrap().is_empty());
    b.report("g1/4", 2, "x").unwrap();
    assert_eq!(a.reports("g1/4").unwrap(), vec![(2, "x".to_owned())]);
}

/// A store made before arrivals carried settings (schema version 2),
/// holding group "old" with segment 0/3 from "h-old" arrived, is migrated
/// to the latest version; it reads that arrival (with no settings, so it
/// is compared with nothing), and the group's later arrivals are compared
/// with the first that recorded settings.
pub(crate) fn arrivals_from_before_settings_are_read(place: &dyn Place) {
    place.make_old(2);
    place.raw().execute(
        "INSERT INTO {group_arrivals} (grp, idx, count, host, at_ns) VALUES ('old', 0, 3, 'h-old', 1)",
        &[],
    );
    let mut store = place.open().unwrap();
    let version = place.raw().number(sql::VERSION, &[]);
    assert_eq!(version, i64::from(place.latest()));
    let state = store.group("old").unwrap();
    assert_eq!(state.arrivals.len(), 1);
    assert_eq!(state.arrivals[0].host, "h-old");
    assert!(state.arrivals[0].settings.is_empty());
    let arrival = |index, url: &str| Arrival {
        group: "old".into(),
        segment: Segment::new(index, 3).unwrap(),
        host: format!("h{index}"),
        at_ns: 2_000 + i64::from(index),
        settings: [("url".to_owned(), url.to_owned())].into(),
    };
    store.arrive(&arrival(1, "http://x/")).unwrap();
    let e = store.arrive(&arrival(2, "http://y/")).unwrap_err();
    assert!(
        matches!(&e, StoreError::GroupSettings(m) if m.contains("url http://y/ against http://x/")),
        "{e}"
    );
}
