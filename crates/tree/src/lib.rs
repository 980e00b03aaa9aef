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
//! This is the in-memory core; durability (an append-only, checksummed
//! log with group commit) is built on it.

mod db;
mod edit;
mod node;
pub mod workload;

pub use db::{Commit, Database, MAX_RETRIES, Transaction, Tree, TreeError, TreeStats, Version};
pub use edit::{Edit, EditError, Path};
pub use node::{Attribute, Node};

#[cfg(test)]
mod tests;
