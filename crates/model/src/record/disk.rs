//! The settings record of a disk run (`dyno disk`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Record;
use crate::Kind;

/// What `dyno disk` was asked to do, and what the file turned out to be.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct DiskRecord {
    /// The path given: a file, a directory to make one in, or a device.
    pub path: String,
    /// The preset run (`cdm8`, `nvme`, `cdm3`, `sync`, `meta`), or `custom`
    /// when `--test` replaced it.
    pub preset: String,
    /// `all`, `peak` or `real`.
    pub profile: String,
    /// The tests, as their table names (`SEQ1M Q8T1`, `RND4K Q1T1`, …).
    pub tests: Vec<String>,
    /// The operations each test ran (`read`, `write`, `mix70`, …).
    pub ops: Vec<String>,
    pub size_bytes: u64,
    /// What the file was filled with: `random` or `zero`.
    pub fill: String,
    /// Passes of each test.
    pub runs: u64,
    pub duration_ns: u64,
    pub interval_ns: u64,
    pub warmup_ns: u64,
    pub seed: u64,
    /// `--preset meta`: the files made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<u64>,
    #[serde(flatten)]
    pub observed: DiskObserved,
}

impl Record for DiskRecord {
    const KIND: Kind = Kind::Disk;
}

/// What the test file turned out to be and how it was driven. `file` is
/// the file (or, for `meta`, the directory) the run wrote to; the rest is
/// absent for `meta`, which moves no blocks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct DiskObserved {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// `created`, `existing` or `device`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The I/O engine: `io_uring` or `threads`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// Why that engine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_reason: Option<String>,
    /// Whether the page cache was bypassed (O_DIRECT).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direct_io: Option<bool>,
    /// With direct I/O, the alignment offsets and sizes kept to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alignment_bytes: Option<u64>,
    /// Without direct I/O, why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffered_reason: Option<String>,
}
