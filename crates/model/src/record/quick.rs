//! The settings record of `dyno quick`: one part per family it measured.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{DbRecord, DiskObserved, LoadModel, Record};
use crate::{Kind, Metric, Warning};

/// One line of `dyno quick` as an engine's quick preset measured it: its
/// part of the record, its metrics (named with the line's prefix, `disk_…`)
/// and its warnings.
#[derive(Debug, Clone, PartialEq)]
pub struct QuickLine<P> {
    pub part: P,
    pub metrics: Vec<Metric>,
    pub warnings: Vec<Warning>,
}

/// What `dyno quick` ran: the int64 and HTTP lines always, the disk and
/// db lines where they were measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct QuickRecord {
    pub int64: QuickInt64,
    pub http: QuickHttp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk: Option<QuickDisk>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db: Option<DbRecord>,
}

impl Record for QuickRecord {
    const KIND: Kind = Kind::Quick;
}

/// The int64 line: the CPU workload on one thread and on every core.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct QuickInt64 {
    pub iterations: u64,
    pub repetitions: u64,
    pub warmup_repetitions: u64,
    /// The thread counts measured: 1 and the machine's.
    pub threads: Vec<u64>,
    pub interleaved: bool,
}

/// The HTTP line: dyno's built-in server on loopback.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct QuickHttp {
    pub target: String,
    pub duration_ns: u64,
    pub warmup_ns: u64,
    pub connections: u64,
    pub model: LoadModel,
    pub expect_status: String,
}

/// The disk line: a file in the current directory, SEQ1M Q8T1 and
/// RND4K Q1T1.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct QuickDisk {
    pub path: String,
    pub size_bytes: u64,
    pub tests: Vec<String>,
    pub duration_ns: u64,
    pub seed: u64,
    #[serde(flatten)]
    pub observed: DiskObserved,
}
