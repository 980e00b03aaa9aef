//! A non-destructive tree database, after the thesis's Jungle: named trees
//! whose every commit is a new immutable version.
//!
//! An edit copies the path from the edited node to the root and shares
//! every other node with the previous version ([`Edit`]), so a version is
//! never changed once made. A reader takes a version ([`Tree::snapshot`])
//! and reads it without a lock for as long as it likes: it never sees a
//! partial commit and never slows a writer. Writers gather edits in a
//! [`Transaction`] and commit optimistically, by compare-and-swap of the
//! tree's root; one that loses the race replays its edits on the newer
//! version and tries again, and [`TreeStats::retries`] counts how often
//! (the contention that capped Jungle's write scaling).
//!
//! [`Database::new`] keeps the trees in memory. [`Database::open`] keeps
//! them in a directory: every commit is appended to a log of checksummed
//! records and acknowledged only once the log is fsynced, concurrent
//! committers sharing one fsync (group commit); snapshots bound what
//! reopening replays ([`Database::checkpoint`]).

mod codec;
#[cfg(test)]
mod crashfs;
mod db;
mod durable;
mod edit;
pub mod fs;
mod log;
mod node;
pub mod workload;

pub use db::{
    Commit, DEFAULT_HISTORY, Database, MAX_RETRIES, Options, Transaction, Tree, TreeError,
    TreeStats, Version,
};
pub use durable::{Dropped, OpenError, Recovery};
pub use edit::{Edit, EditError, Path};
pub use log::{LogError, LogStats};
pub use node::{Attribute, Node};

#[cfg(test)]
mod durability_tests;
#[cfg(test)]
mod tests;
