//! The settings record of a scaling analysis (`dyno scale`): where its
//! points came from.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Record;
use crate::Kind;

/// Where a scaling analysis got its points, told by `source`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "source", rename_all = "lowercase")]
pub enum ScaleRecord {
    /// A built-in workload measured now (`--workload`).
    Workload(WorkloadSource),
    /// Points read from a CSV or JSON file (`--file`).
    File(FileSource),
    /// Points taken from a saved `dyno run` parameter scan (`RUN_ID`,
    /// `--last`).
    Run(RunSource),
}

impl Record for ScaleRecord {
    const KIND: Kind = Kind::Scale;
}

/// A built-in workload measured at each thread count.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct WorkloadSource {
    /// `int64`, `tree-read` or `tree-write`.
    pub workload: String,
    /// `strong`: the same total work at every N.
    pub scaling: String,
    pub threads: Vec<u64>,
    pub repetitions: u64,
    pub warmup_repetitions: u64,
    /// Whether the repetitions took the thread counts in turns.
    pub interleaved: bool,
    /// `time` or `throughput`.
    pub measure: String,
    /// int64: the iterations in total at every N.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u64>,
    /// The tasks the work is cut into.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<u64>,
    /// tree-read, tree-write: levels below a tree's root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<u64>,
    /// tree-read, tree-write: the nodes asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes_asked: Option<u64>,
    /// tree-read, tree-write: the nodes the tree (or all trees) came to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// tree-write: whether every commit was fsynced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub durable: Option<bool>,
    /// tree-write: where the database was kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    /// tree-write: that directory's file system, where known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filesystem: Option<String>,
}

/// Points read from a file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct FileSource {
    pub path: String,
    /// `csv` or `json`.
    pub format: String,
    pub n_column: String,
    pub value_column: String,
    /// `time` or `throughput`.
    pub measure: String,
    /// Why the machine is not recorded.
    pub environment: String,
}

/// Points taken from a saved run's parameter scan.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct RunSource {
    pub run_id: String,
    /// The parameter that is N.
    pub parameter: String,
    /// The command template.
    pub command: String,
    /// The other parameters' values, held fixed.
    #[serde(rename = "where")]
    pub fixed: BTreeMap<String, String>,
    /// `time`.
    pub measure: String,
    /// Which figure of each benchmark is the value: `mean wall time`.
    pub value: String,
}
