//! The result store: every [`Run`] an engine returns is saved here, and
//! listed, shown, exported and compared from here.
//!
//! In the data flow the store sits after the engines: the binary hands it a
//! finished [`Run`]; it never measures and never prints. [`Store`] is the
//! interface every backend offers; [`SqliteStore`] is the embedded default, a
//! single SQLite file at [`default_path`], and [`PgStore`] a database on a
//! PostgreSQL server that many machines share.
//!
//! The store holds other people's data, so it is careful with files it does
//! not recognise: it never deletes, truncates or rewrites a file that is not a
//! dyno store of a version it understands, and says so in its error instead
//! (see [`StoreError`]).

pub mod barrier;
#[cfg(test)]
mod conformance;
mod error;
mod group;
mod keep;
mod path;
mod postgres;
mod record;
mod schema;
mod sql;
mod sqlite;

use std::fmt;

use dyno_model::{Kind, Run, RunId};

pub use error::StoreError;
pub use group::{Arrival, Decision, GroupState, fingerprint};
pub use keep::{Kept, NotSaved, keep};
pub use path::{DYNO_HOME, FILE_NAME, NoDefaultPath, default_path, resolve_path};
pub use postgres::{PgStore, is_postgres_url};
pub use record::unix_ns;
pub use sqlite::{Options, SqliteStore};

/// Shortest run id prefix [`Store::get`] and [`Store::remove`] accept: a
/// shorter one would match too many runs to be useful.
pub const MIN_PREFIX_LEN: usize = 4;

/// What every result store backend offers.
///
/// Runs are addressed by their full id or by a unique prefix of at least
/// [`MIN_PREFIX_LEN`] characters, matched case-insensitively, as users type
/// them from `dyno history`.
pub trait Store {
    /// Saves a run in one transaction. `Err(StoreError::Duplicate)` if its id
    /// is already stored.
    fn save(&mut self, run: &Run) -> Result<(), StoreError>;

    /// A run by full id or by a unique prefix of at least
    /// [`MIN_PREFIX_LEN`] characters (case-insensitive).
    fn get(&self, id_or_prefix: &str) -> Result<Run, StoreError>;

    /// The runs matching the filter, oldest first, and the matching records
    /// that could not be read; [`Filter::limit`] keeps the most recent N
    /// records (still oldest first), readable or not.
    ///
    /// One unreadable record does not fail the listing: it is named in
    /// [`Listing::skipped`] and the rest are read. `Err` is left for a store
    /// that cannot be read at all (a locked or damaged file, a failing
    /// disk).
    fn list(&self, filter: &Filter) -> Result<Listing, StoreError>;

    /// Removes one run (full id or unique prefix), with its tags; returns its
    /// id.
    fn remove(&mut self, id_or_prefix: &str) -> Result<RunId, StoreError> {
        let removed = self.remove_all(&[id_or_prefix])?;
        Ok(removed[0])
    }

    /// Removes every run named (full ids or unique prefixes), with their
    /// tags, all or nothing: if any id does not resolve to exactly one run,
    /// nothing is removed and the error names that id. Returns the ids
    /// removed, in the order given, each once.
    fn remove_all(&mut self, ids_or_prefixes: &[&str]) -> Result<Vec<RunId>, StoreError>;

    /// Where the store is, for messages: a file's path, or a server's URL
    /// without its password.
    fn location(&self) -> String;

    /// Records a segment's arrival at its group's start barrier.
    /// [`StoreError::Group`] when the group's other segments were given
    /// another count, or this index has arrived before;
    /// [`StoreError::GroupSettings`] when its settings differ from the
    /// group's first arrival's (nothing is stored then).
    fn arrive(&mut self, arrival: &Arrival) -> Result<(), StoreError>;

    /// What the store knows of a group: who arrived, and the decision.
    fn group(&self, group: &str) -> Result<GroupState, StoreError>;

    /// Writes the group's decision unless one was written first; returns
    /// the one that stands.
    fn decide(&mut self, group: &str, decision: &Decision) -> Result<Decision, StoreError>;

    /// The store server's clock (Unix nanoseconds), and how long asking
    /// took, for segments on different machines to see how far their
    /// clocks are apart; `None` for a store without a clock of its own
    /// (a file on this machine).
    fn server_clock(&self) -> Result<Option<(i64, std::time::Duration)>, StoreError>;

    /// Keeps segment `index`'s report in `group` (a capacity search over
    /// segments reports each step's part here). A segment reports once
    /// per group: a second report is refused with [`StoreError::Group`]
    /// and the first stands.
    fn report(&mut self, group: &str, index: u32, body: &str) -> Result<(), StoreError>;

    /// A group's reports so far, by segment index.
    fn reports(&self, group: &str) -> Result<Vec<(u32, String)>, StoreError>;
}

/// A boxed store is a store: the binary picks its backend at run time.
impl<S: Store + ?Sized> Store for Box<S> {
    fn save(&mut self, run: &Run) -> Result<(), StoreError> {
        (**self).save(run)
    }

    fn get(&self, id_or_prefix: &str) -> Result<Run, StoreError> {
        (**self).get(id_or_prefix)
    }

    fn list(&self, filter: &Filter) -> Result<Listing, StoreError> {
        (**self).list(filter)
    }

    fn remove_all(&mut self, ids_or_prefixes: &[&str]) -> Result<Vec<RunId>, StoreError> {
        (**self).remove_all(ids_or_prefixes)
    }

    fn location(&self) -> String {
        (**self).location()
    }

    fn arrive(&mut self, arrival: &Arrival) -> Result<(), StoreError> {
        (**self).arrive(arrival)
    }

    fn group(&self, group: &str) -> Result<GroupState, StoreError> {
        (**self).group(group)
    }

    fn decide(&mut self, group: &str, decision: &Decision) -> Result<Decision, StoreError> {
        (**self).decide(group, decision)
    }

    fn server_clock(&self) -> Result<Option<(i64, std::time::Duration)>, StoreError> {
        (**self).server_clock()
    }

    fn report(&mut self, group: &str, index: u32, body: &str) -> Result<(), StoreError> {
        (**self).report(group, index, body)
    }

    fn reports(&self, group: &str) -> Result<Vec<(u32, String)>, StoreError> {
        (**self).reports(group)
    }
}

/// Which runs [`Store::list`] returns. Every condition that is set must hold;
/// the default matches every run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only runs of this kind.
    pub kind: Option<Kind>,
    /// Only runs that carry every one of these tags (exact, case-sensitive).
    pub tags: Vec<String>,
    /// Only runs whose environment's host name is exactly this.
    pub host: Option<String>,
    /// Only runs that started at or after this instant.
    pub since: Option<jiff::Timestamp>,
    /// Keep only the most recent N of the matching runs (returned oldest
    /// first all the same).
    pub limit: Option<usize>,
}

/// What [`Store::list`] found: the runs it read and the records it skipped.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// The runs read, oldest first.
    pub runs: Vec<Run>,
    /// The matching records that could not be read, oldest first.
    pub skipped: Vec<Skipped>,
}

/// A stored record that [`Store::list`] could not read, and why.
///
/// [`Store::get`] of its id fails with the matching [`StoreError`]
/// ([`StoreError::BadRecord`] or [`StoreError::NewerRecord`]), and
/// [`Store::remove`] removes it like any run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The run id the record is stored under.
    pub id: RunId,
    /// Why it could not be read.
    pub reason: SkipReason,
}

/// Why a stored record could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipReason {
    /// Its JSON does not decode as a run (damaged, or edited by hand); it
    /// will not read again, so removing it loses nothing.
    Damaged {
        /// What the JSON parser said, in one line.
        detail: String,
    },
    /// It was saved by a newer dyno; an upgraded dyno reads it, so it is
    /// data to keep, not damage.
    Newer {
        /// The record's schema version.
        found: u32,
        /// [`dyno_model::SCHEMA_VERSION`].
        supported: u32,
    },
}

impl fmt::Display for SkipReason {
    /// A short clause, to follow "its record …" or stand in parentheses.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::Damaged { detail } => f.write_str(detail),
            SkipReason::Newer { found, supported } => write!(
                f,
                "record schema version {found}; this build reads versions up to {supported}"
            ),
        }
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Runs to store in tests.

    use dyno_model::{Direction, Kind, Metric, Run, Unit};
    use jiff::Timestamp;

    /// A run with something in every part of the record, started
    /// `seconds` after 2024-01-01T00:00:00Z.
    pub(crate) fn run(kind: Kind, seconds: i64, tags: &[&str], host: Option<&str>) -> Run {
        let mut run = Run::new(kind, format!("{kind} run at +{seconds}s"));
        run.started_at = Timestamp::from_second(1_704_067_200 + seconds).unwrap();
        run.duration_ns = 1_500_000_000;
        run.tags = tags.iter().map(|t| t.to_string()).collect();
        run.environment.hostname = host.map(str::to_owned);
        run.settings = serde_json::json!({"threads": 4, "duration_ns": 1_000_000_000u64});
        let mut metric = Metric::new(
            "requests_per_sec",
            Unit::RequestsPerSec,
            Direction::HigherIsBetter,
            12_345.5,
        );
        metric.samples = vec![12_000.0, 12_691.0];
        run.metrics.push(metric);
        run.headline = Some("requests_per_sec".into());
        run.warn("few_runs", "only 2 samples");
        run
    }
}
