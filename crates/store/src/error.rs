//! Everything that can go wrong in the store, each with the path or run it
//! concerns and a hint at how to fix it.

use std::io;
use std::path::{Path, PathBuf};

use dyno_model::RunId;

/// An error from the result store.
///
/// The causes that wrap another error ([`StoreError::CannotOpen`],
/// [`StoreError::BadRecord`], [`StoreError::Unencodable`]) expose it as
/// [`std::error::Error::source`] rather than repeating it in their message,
/// so print the whole chain (`{:#}` with anyhow).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The file is not an SQLite database, or is a corrupt one.
    #[error(
        "'{}' is not a dyno result store (not an SQLite database, or corrupt); it was left untouched. Move it aside, or set DYNO_HOME to another directory.",
        path.display()
    )]
    NotADatabase {
        /// The file.
        path: PathBuf,
    },

    /// The file is an SQLite database that some other program made.
    #[error(
        "'{}' is an SQLite database but not a dyno result store; it was left untouched. Move it aside, or set DYNO_HOME to another directory.",
        path.display()
    )]
    Foreign {
        /// The file.
        path: PathBuf,
    },

    /// The store was written by a newer dyno whose schema this build does not
    /// know.
    #[error(
        "'{}' was written by a newer dyno (store schema version {found}; this build knows versions up to {supported}); it was left untouched. Upgrade dyno to use it.",
        path.display()
    )]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// The schema version the file records.
        found: u32,
        /// The newest schema version this build knows.
        supported: u32,
    },

    /// Another connection kept the store locked for longer than the busy
    /// timeout.
    #[error(
        "the result store '{}' is locked: another dyno process holds it. Wait for it to finish, or retry.",
        path.display()
    )]
    Locked {
        /// The file.
        path: PathBuf,
    },

    /// The store's directory or file cannot be created, or opened for
    /// writing.
    #[error(
        "cannot create or write the result store at '{}' (set DYNO_HOME to a writable directory, or use --no-save)",
        path.display()
    )]
    CannotOpen {
        /// The file, or the directory that could not be created.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },

    /// No stored run has this id, or an id starting with this prefix.
    #[error("no stored run has the id or id prefix '{id}'; `dyno history` lists the stored runs")]
    NotFound {
        /// The id or prefix as given.
        id: String,
    },

    /// The prefix is too short to pick a run.
    #[error(
        "run id prefix '{prefix}' is too short: give at least {min} characters of the id",
        min = crate::MIN_PREFIX_LEN
    )]
    PrefixTooShort {
        /// The prefix as given.
        prefix: String,
    },

    /// More than one stored run has an id starting with this prefix.
    #[error(
        "run id prefix '{prefix}' matches {} runs ({}); give more characters of the id",
        matches.len(),
        list_ids(matches)
    )]
    Ambiguous {
        /// The prefix as given.
        prefix: String,
        /// Every matching id, in ascending order.
        matches: Vec<RunId>,
    },

    /// A run with this id is already stored.
    #[error("run {id} is already in the store; it was not saved again")]
    Duplicate {
        /// The id of the run.
        id: RunId,
    },

    /// The stored record of a run no longer parses.
    #[error(
        "stored run {id} cannot be read: its record is damaged or was written by an incompatible dyno (`dyno rm {id}` removes it)"
    )]
    BadRecord {
        /// The id of the run.
        id: RunId,
        /// What the JSON parser said.
        #[source]
        source: serde_json::Error,
    },

    /// The stored record of a run has a newer `schema_version` than
    /// [`dyno_model::SCHEMA_VERSION`].
    #[error(
        "stored run {id} was saved by a newer dyno (record schema version {found}; this build reads versions up to {supported}). Upgrade dyno to read it."
    )]
    NewerRecord {
        /// The id of the run.
        id: RunId,
        /// The record's schema version.
        found: u32,
        /// [`dyno_model::SCHEMA_VERSION`].
        supported: u32,
    },

    /// A run cannot be saved because its JSON form would not read back (a
    /// non-finite number, for one); nothing was written.
    #[error("run {id} was not saved: its JSON form does not read back (this is a bug in dyno)")]
    Unencodable {
        /// The id of the run.
        id: RunId,
        /// What the JSON serializer or parser said.
        #[source]
        source: serde_json::Error,
    },

    /// Any other SQLite failure.
    #[error(transparent)]
    Sqlite(rusqlite::Error),

    /// The PostgreSQL server of a shared store cannot be reached, or
    /// refused the connection (a wrong password, a missing database).
    #[error(
        "cannot reach the result store at {location}: {reason}; check that the server runs and the URL, or leave out --store (and DYNO_STORE) to use the local store"
    )]
    Unreachable {
        /// The store's URL, without its password.
        location: String,
        /// Why, in the server's or the network's words.
        reason: String,
    },

    /// A PostgreSQL database that holds tables of some other program.
    #[error(
        "the database at {location} holds tables that are not a dyno result store; it was left untouched. Name an empty database (createdb dyno_results) or one that dyno made."
    )]
    ForeignDatabase {
        /// The store's URL, without its password.
        location: String,
    },

    /// A PostgreSQL store whose schema a newer dyno made.
    #[error(
        "the result store at {location} was made by a newer dyno (store schema version {found}; this build knows versions up to {supported}); it was left untouched. Upgrade dyno to use it."
    )]
    NewerServerSchema {
        /// The store's URL, without its password.
        location: String,
        /// The schema version the database records.
        found: u32,
        /// The newest schema version this build knows.
        supported: u32,
    },

    /// A segment's arrival does not fit its group (another count, or an
    /// index that already arrived).
    #[error("{0}")]
    Group(String),

    /// A segment's settings differ from those the group's first arrival
    /// recorded: it runs another command. Names each setting that differs.
    #[error("{0}")]
    GroupSettings(String),

    /// Any other failure of a PostgreSQL store.
    #[error("the result store at {location} failed: {reason}")]
    Server {
        /// The store's URL, without its password.
        location: String,
        /// What the server or the client said.
        reason: String,
    },
}

impl StoreError {
    /// Whether the store could not be reached or went away, so that a run
    /// that could not be saved there may be saved elsewhere. A store that
    /// refused what it holds is not such a case.
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            StoreError::Unreachable { .. } | StoreError::Server { .. }
        )
    }
}

/// At most a few ids, for a message; the error value keeps them all.
fn list_ids(ids: &[RunId]) -> String {
    const SHOWN: usize = 5;
    let mut list = ids
        .iter()
        .take(SHOWN)
        .map(RunId::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > SHOWN {
        list.push_str(", …");
    }
    list
}

/// Sorts an SQLite error on the store at `path` into the variant a user can
/// act on; what has no better variant stays [`StoreError::Sqlite`].
pub(crate) fn classify(path: &Path, err: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode;

    let path = path.to_path_buf();
    match err.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
            StoreError::NotADatabase { path }
        }
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Locked { path },
        Some(ErrorCode::CannotOpen | ErrorCode::PermissionDenied | ErrorCode::ReadOnly) => {
            // Only SQLite's one-line reason: its error value would add the
            // same words again as its own source, and the path once more.
            let reason = match &err {
                rusqlite::Error::SqliteFailure(e, _) => rusqlite::ffi::code_to_str(e.extended_code),
                _ => "SQLite cannot open or write it",
            };
            StoreError::CannotOpen {
                path,
                source: io::Error::other(reason),
            }
        }
        _ => StoreError::Sqlite(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_path_and_the_fix() {
        let path = PathBuf::from("/data/dyno.db");
        let msg = StoreError::NotADatabase { path: path.clone() }.to_string();
        assert_eq!(
            msg,
            "'/data/dyno.db' is not a dyno result store (not an SQLite database, or corrupt); \
             it was left untouched. Move it aside, or set DYNO_HOME to another directory."
        );
        let msg = StoreError::NewerSchema {
            path: path.clone(),
            found: 7,
            supported: 1,
        }
        .to_string();
        assert!(
            msg.contains("/data/dyno.db") && msg.contains("version 7"),
            "{msg}"
        );
        assert!(msg.contains("Upgrade dyno"), "{msg}");
        let msg = StoreError::Locked { path: path.clone() }.to_string();
        assert!(
            msg.contains("another dyno process") && msg.contains("retry"),
            "{msg}"
        );
        let err = StoreError::CannotOpen {
            path,
            source: io::Error::from(io::ErrorKind::PermissionDenied),
        };
        let msg = err.to_string();
        assert!(
            msg.contains("DYNO_HOME") && msg.contains("--no-save"),
            "{msg}"
        );
        assert!(std::error::Error::source(&err).is_some());
    }

    #[test]
    fn an_ambiguous_prefix_lists_a_few_matches_and_counts_them_all() {
        let matches: Vec<RunId> = (0..7)
            .map(|i| format!("01J0AAAAAAAAAAAAAAAAAAAAA{i}").parse().unwrap())
            .collect();
        let msg = StoreError::Ambiguous {
            prefix: "01j0".into(),
            matches,
        }
        .to_string();
        assert!(
            msg.starts_with("run id prefix '01j0' matches 7 runs ("),
            "{msg}"
        );
        assert!(msg.contains("01J0AAAAAAAAAAAAAAAAAAAAA4, …)"), "{msg}");
        assert!(!msg.contains("AAAAA5"), "{msg}");
    }

    #[test]
    fn sqlite_errors_are_sorted_by_what_the_user_can_do() {
        let failure = |code| rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None);
        let path = Path::new("x.db");
        assert!(matches!(
            classify(path, failure(rusqlite::ffi::SQLITE_NOTADB)),
            StoreError::NotADatabase { .. }
        ));
        assert!(matches!(
            classify(path, failure(rusqlite::ffi::SQLITE_CORRUPT)),
            StoreError::NotADatabase { .. }
        ));
        assert!(matches!(
            classify(path, failure(rusqlite::ffi::SQLITE_BUSY)),
            StoreError::Locked { .. }
        ));
        assert!(matches!(
            classify(path, failure(rusqlite::ffi::SQLITE_READONLY)),
            StoreError::CannotOpen { .. }
        ));
        // The reason is said once, not once per link of SQLite's chain.
        let cannot_open = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
            Some("unable to open database file: x.db".into()),
        );
        let err = classify(path, cannot_open);
        let mut msg = err.to_string();
        let mut cause = std::error::Error::source(&err);
        while let Some(c) = cause {
            msg = format!("{msg}: {c}");
            cause = c.source();
        }
        assert_eq!(
            msg.matches("unable to open database file").count(),
            1,
            "{msg}"
        );
        assert!(matches!(
            classify(path, failure(rusqlite::ffi::SQLITE_FULL)),
            StoreError::Sqlite(_)
        ));
    }
}
