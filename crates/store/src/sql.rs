//! The SQL both stores run, written once.
//!
//! Each operation is one text. In it, tables are named in braces
//! (`{runs}`, `{run_tags}`, `{group_arrivals}`, `{group_decisions}`,
//! `{group_reports}`),
//! parameters are `?` in the order they are bound, and `{glob}` is the
//! operator that matches an id against a prefix pattern. A [`Dialect`]
//! renders the text for one backend:
//!
//! - SQLite's file holds nothing but the store, so its tables go by their
//!   plain names; parameters are numbered `?1`, `?2`, …; ids match with
//!   `GLOB` (case-sensitive, so the primary key's index serves it).
//! - A PostgreSQL database is shared with other programs, so the store's
//!   tables are prefixed `dyno_`; parameters are `$1`, `$2`, …; ids match
//!   with `LIKE`.
//!
//! Everything else (`ON CONFLICT … DO NOTHING`, `true`, subquery aliases) is
//! written the way both accept. The schemas themselves stay with each
//! backend (`schema.rs`, `postgres.rs`): their column types differ (STRICT
//! `INTEGER` against `BIGINT`), and a released migration step is never
//! edited. The version table is `dyno_schema` in both.

use crate::Filter;
use crate::record::unix_ns;

/// How one backend writes the store's SQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dialect {
    /// What goes before a parameter's number: `?1` or `$1`.
    placeholder: char,
    /// What goes before each table's name.
    table_prefix: &'static str,
    /// The operator that matches an id against a pattern, and the pattern's
    /// wildcard for "any rest".
    glob: (&'static str, char),
}

/// The SQLite store's dialect.
pub(crate) const SQLITE: Dialect = Dialect {
    placeholder: '?',
    table_prefix: "",
    glob: ("GLOB", '*'),
};

/// The PostgreSQL store's dialect.
pub(crate) const POSTGRES: Dialect = Dialect {
    placeholder: '$',
    table_prefix: "dyno_",
    glob: ("LIKE", '%'),
};

/// The tables whose names a dialect prefixes.
const TABLES: [&str; 5] = [
    "runs",
    "run_tags",
    "group_arrivals",
    "group_decisions",
    "group_reports",
];

/// Saves a run's row (`Store::save`); changes nothing, and so counts no
/// row, when the id is taken.
pub(crate) const SAVE_RUN: &str =
    "INSERT INTO {runs} (id, kind, started_at_ns, host, description, schema_version, record)
     VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (id) DO NOTHING";

/// Saves one of a run's tags.
pub(crate) const SAVE_TAG: &str =
    "INSERT INTO {run_tags} (run_id, tag) VALUES (?, ?) ON CONFLICT DO NOTHING";

/// A run's record by full id (`Store::get`).
pub(crate) const GET: &str = "SELECT schema_version, record FROM {runs} WHERE id = ?";

/// The ids that match a pattern made by [`Dialect::prefix_pattern`], in
/// ascending order.
pub(crate) const RESOLVE: &str = "SELECT id FROM {runs} WHERE id {glob} ? ORDER BY id";

/// Removes a run by full id; its tags go with it (`ON DELETE CASCADE`).
pub(crate) const REMOVE: &str = "DELETE FROM {runs} WHERE id = ?";

/// Records a segment's arrival (`Store::arrive`).
pub(crate) const ARRIVE: &str = "INSERT INTO {group_arrivals} (grp, idx, count, host, at_ns, settings) VALUES (?, ?, ?, ?, ?, ?)";

/// A group's arrivals, by index.
pub(crate) const ARRIVALS: &str =
    "SELECT idx, count, host, at_ns, settings FROM {group_arrivals} WHERE grp = ? ORDER BY idx";

/// A group's decision, if one was written.
pub(crate) const DECISION: &str =
    "SELECT start_at_ns, called_off FROM {group_decisions} WHERE grp = ?";

/// Writes a group's decision unless one was written first
/// (`Store::decide`).
pub(crate) const DECIDE: &str =
    "INSERT INTO {group_decisions} (grp, start_at_ns, called_off) VALUES (?, ?, ?)
     ON CONFLICT (grp) DO NOTHING";

/// Keeps a segment's report in a group unless it reported there before
/// (`Store::report`); counts no row then.
pub(crate) const REPORT: &str = "INSERT INTO {group_reports} (grp, idx, body) VALUES (?, ?, ?)
     ON CONFLICT (grp, idx) DO NOTHING";

/// A group's reports, by index.
pub(crate) const REPORTS: &str = "SELECT idx, body FROM {group_reports} WHERE grp = ? ORDER BY idx";

/// The store's schema version; NULL when the version table has no row.
pub(crate) const VERSION: &str = "SELECT max(version) FROM dyno_schema";

/// Empties the version table, before [`SET_VERSION`].
pub(crate) const CLEAR_VERSION: &str = "DELETE FROM dyno_schema";

/// Writes the schema version.
pub(crate) const SET_VERSION: &str = "INSERT INTO dyno_schema (version) VALUES (?)";

/// A backend's open transaction, as [`upgrade`] drives it.
pub(crate) trait Migrate {
    type Error;
    /// Runs `script`: one statement or more, without parameters.
    fn batch(&mut self, script: &str) -> Result<(), Self::Error>;
    /// Runs [`SET_VERSION`], rendered for the backend, with `version` bound.
    fn set_version(&mut self, version: u32) -> Result<(), Self::Error>;
}

/// Brings a schema at version `from` to the last of `migrations` (step `i`
/// takes version `i` to `i + 1`) inside the caller's transaction: runs each
/// step it lacks, then records the new version. Does nothing when none is
/// missing; the caller commits.
pub(crate) fn upgrade<M: Migrate>(
    tx: &mut M,
    migrations: &[&str],
    from: u32,
) -> Result<(), M::Error> {
    let missing = migrations.get(from as usize..).unwrap_or_default();
    if missing.is_empty() {
        return Ok(());
    }
    for step in missing {
        tx.batch(step)?;
    }
    tx.batch(CLEAR_VERSION)?;
    tx.set_version(migrations.len() as u32)
}

/// A parameter of a statement built at run time ([`Dialect::list`]), for
/// each backend to bind as its own type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Arg {
    Text(String),
    Int(i64),
}

impl Dialect {
    /// `text` in this dialect: its tables named, its `?`s numbered and its
    /// `{glob}` spelled.
    ///
    /// # Panics
    ///
    /// On a name in braces that is not a table of the store or `glob`: the
    /// texts are this module's constants, so that is a bug (the tests
    /// render every one).
    pub(crate) fn render(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + 32);
        let mut params = 0;
        let mut rest = text;
        while let Some(at) = rest.find(['?', '{']) {
            out.push_str(&rest[..at]);
            if rest[at..].starts_with('?') {
                params += 1;
                out.push(self.placeholder);
                out.push_str(&params.to_string());
                rest = &rest[at + 1..];
            } else {
                let end = at + rest[at..].find('}').expect("a name in braces is closed");
                match &rest[at + 1..end] {
                    "glob" => out.push_str(self.glob.0),
                    table if TABLES.contains(&table) => {
                        out.push_str(self.table_prefix);
                        out.push_str(table);
                    }
                    other => panic!("no table {{{other}}} in the store's SQL"),
                }
                rest = &rest[end + 1..];
            }
        }
        out.push_str(rest);
        out
    }

    /// The pattern [`RESOLVE`] takes for the ids that start with `prefix`
    /// (upper-case base32 from [`crate::record::prefix`], so it holds no
    /// wildcard of either dialect).
    pub(crate) fn prefix_pattern(&self, prefix: &str) -> String {
        format!("{prefix}{}", self.glob.1)
    }

    /// The query `Store::list` runs for `filter`, and its parameters: the
    /// columns id, started_at_ns, schema_version and record of the matching
    /// runs, oldest first (by start, then id); with a limit, the newest N of
    /// them, still oldest first.
    pub(crate) fn list(&self, filter: &Filter) -> (String, Vec<Arg>) {
        let Filter {
            kind,
            tags,
            host,
            since,
            limit,
        } = filter;
        let mut sql = String::from(
            "SELECT id, started_at_ns, schema_version, record FROM {runs} AS r WHERE true",
        );
        let mut args = Vec::new();
        if let Some(kind) = kind {
            sql.push_str(" AND r.kind = ?");
            args.push(Arg::Text(kind.as_str().to_owned()));
        }
        if let Some(host) = host {
            sql.push_str(" AND r.host = ?");
            args.push(Arg::Text(host.clone()));
        }
        if let Some(since) = since {
            sql.push_str(" AND r.started_at_ns >= ?");
            args.push(Arg::Int(unix_ns(*since)));
        }
        for tag in tags {
            sql.push_str(
                " AND EXISTS (SELECT 1 FROM {run_tags} AS t WHERE t.run_id = r.id AND t.tag = ?)",
            );
            args.push(Arg::Text(tag.clone()));
        }
        match limit {
            Some(n) => {
                // The newest N, then turned back to oldest first.
                sql = format!(
                    "SELECT * FROM ({sql} ORDER BY started_at_ns DESC, id DESC LIMIT ?) AS newest
                     ORDER BY started_at_ns, id"
                );
                args.push(Arg::Int(i64::try_from(*n).unwrap_or(i64::MAX)));
            }
            None => sql.push_str(" ORDER BY started_at_ns, id"),
        }
        (self.render(&sql), args)
    }
}

#[cfg(test)]
mod tests {
    use dyno_model::Kind;

    use super::*;

    const TEXTS: [&str; 14] = [
        SAVE_RUN,
        SAVE_TAG,
        GET,
        RESOLVE,
        REMOVE,
        ARRIVE,
        ARRIVALS,
        DECISION,
        DECIDE,
        REPORT,
        REPORTS,
        VERSION,
        CLEAR_VERSION,
        SET_VERSION,
    ];

    #[test]
    fn each_dialect_names_its_tables_and_numbers_its_parameters() {
        assert_eq!(
            SQLITE.render(SAVE_TAG),
            "INSERT INTO run_tags (run_id, tag) VALUES (?1, ?2) ON CONFLICT DO NOTHING"
        );
        assert_eq!(
            POSTGRES.render(SAVE_TAG),
            "INSERT INTO dyno_run_tags (run_id, tag) VALUES ($1, $2) ON CONFLICT DO NOTHING"
        );
        assert_eq!(
            SQLITE.render(RESOLVE),
            "SELECT id FROM runs WHERE id GLOB ?1 ORDER BY id"
        );
        assert_eq!(
            POSTGRES.render(RESOLVE),
            "SELECT id FROM dyno_runs WHERE id LIKE $1 ORDER BY id"
        );
        assert_eq!(SQLITE.prefix_pattern("01J0"), "01J0*");
        assert_eq!(POSTGRES.prefix_pattern("01J0"), "01J0%");
        // The version table is the same in both.
        assert_eq!(
            POSTGRES.render(SET_VERSION),
            "INSERT INTO dyno_schema (version) VALUES ($1)"
        );
    }

    #[test]
    fn every_text_renders_completely_in_both_dialects() {
        for text in TEXTS {
            for (dialect, other) in [(SQLITE, '$'), (POSTGRES, '?')] {
                let sql = dialect.render(text);
                assert!(!sql.contains(['{', '}', other]), "{sql}");
                let params = text.matches('?').count();
                for n in 1..=params {
                    assert!(
                        sql.contains(&format!("{}{n}", dialect.placeholder)),
                        "{sql}"
                    );
                }
                assert!(!sql.contains(&format!("{}{}", dialect.placeholder, params + 1)));
            }
        }
    }

    #[test]
    fn a_listing_binds_one_argument_per_condition_in_order() {
        let (sql, args) = POSTGRES.list(&Filter::default());
        assert_eq!(
            sql,
            "SELECT id, started_at_ns, schema_version, record FROM dyno_runs AS r WHERE true ORDER BY started_at_ns, id"
        );
        assert!(args.is_empty());
        let filter = Filter {
            kind: Some(Kind::Http),
            tags: vec!["a".into(), "b".into()],
            host: Some("h".into()),
            since: Some(jiff::Timestamp::from_second(1).unwrap()),
            limit: Some(3),
        };
        let (sql, args) = SQLITE.list(&filter);
        assert_eq!(
            args,
            vec![
                Arg::Text("http".into()),
                Arg::Text("h".into()),
                Arg::Int(1_000_000_000),
                Arg::Text("a".into()),
                Arg::Text("b".into()),
                Arg::Int(3),
            ]
        );
        for (n, needle) in [
            "r.kind = ?1",
            "r.host = ?2",
            "r.started_at_ns >= ?3",
            "t.tag = ?4",
            "t.tag = ?5",
            "LIMIT ?6",
        ]
        .into_iter()
        .enumerate()
        {
            assert!(sql.contains(needle), "{n}: {sql}");
        }
        assert!(sql.contains("FROM run_tags AS t"), "{sql}");
    }

    /// What [`upgrade`] asked of a transaction, in order.
    #[derive(Default)]
    struct Calls(Vec<String>);

    impl Migrate for Calls {
        type Error = std::convert::Infallible;

        fn batch(&mut self, script: &str) -> Result<(), Self::Error> {
            self.0.push(script.to_owned());
            Ok(())
        }

        fn set_version(&mut self, version: u32) -> Result<(), Self::Error> {
            self.0.push(format!("version {version}"));
            Ok(())
        }
    }

    #[test]
    fn an_upgrade_runs_only_the_missing_steps_then_records_the_version() {
        let steps = ["step 1", "step 2", "step 3"];
        let mut calls = Calls::default();
        upgrade(&mut calls, &steps, 1).unwrap();
        assert_eq!(calls.0, ["step 2", "step 3", CLEAR_VERSION, "version 3"]);
        let mut calls = Calls::default();
        upgrade(&mut calls, &steps, 3).unwrap();
        assert!(calls.0.is_empty(), "an up-to-date schema is left alone");
    }
}
