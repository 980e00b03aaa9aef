//! The settings record of a PostgreSQL run (`dyno db run`), also the db
//! part of a quick run.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{CapacityRecord, GroupRecord, LoadModel, RatePlanRecord, Record, SegmentRecord};
use crate::Kind;

/// What `dyno db run` was asked to do, and what it found on the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct DbRecord {
    /// The server, as `user@host:port/database` (no password).
    pub target: String,
    /// The scripts run, each with its weight.
    pub scripts: Vec<ScriptWeight>,
    pub clients: u64,
    pub threads: u64,
    /// `-t`: transactions per client, when the run was given by count.
    pub transactions: Option<u64>,
    /// `-T`: the duration, when the run was given by time.
    pub duration_ns: Option<u64>,
    /// `simple`, `extended` or `prepared`.
    pub protocol: String,
    pub model: LoadModel,
    /// `-R`: the open model's transactions per second.
    pub rate_per_sec: Option<f64>,
    /// `--warmup`: run, not measured, before the duration; absent when
    /// there was none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup_ns: Option<u64>,
    /// `-L`: transactions later than this are counted as late.
    pub latency_limit_ns: Option<u64>,
    /// `-C`: a new connection per transaction.
    pub reconnect: bool,
    pub pipeline: bool,
    pub max_tries: u64,
    /// Whether the tables were vacuumed before the run (not `-n`); a
    /// record without it did, as pgbench does by default.
    pub vacuum: bool,
    pub seed: u64,
    #[serde(flatten)]
    pub observed: DbObserved,
    /// This run's place in a split run, if it is a segment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment: Option<SegmentRecord>,
    /// The segments merged into this run, if it is a group's merged run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<GroupRecord>,
    /// `--find-max`: the capacity search; the run's figures are its step
    /// at the answer's rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityRecord>,
    /// `--rate-plan`: the plan and each stage's own figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_plan: Option<RatePlanRecord>,
}

impl Default for DbRecord {
    fn default() -> Self {
        DbRecord {
            target: String::new(),
            scripts: Vec::new(),
            clients: 0,
            threads: 0,
            transactions: None,
            duration_ns: None,
            protocol: String::new(),
            model: LoadModel::Closed,
            rate_per_sec: None,
            warmup_ns: None,
            latency_limit_ns: None,
            reconnect: false,
            pipeline: false,
            max_tries: 1,
            vacuum: true,
            seed: 0,
            observed: DbObserved::default(),
            segment: None,
            group: None,
            capacity: None,
            rate_plan: None,
        }
    }
}

impl Record for DbRecord {
    const KIND: Kind = Kind::Db;
}

/// One script of a run and its weight (`-b NAME@W`, `-f FILE@W`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ScriptWeight {
    pub name: String,
    pub weight: u64,
}

/// What a db run found on the server and did to it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct DbObserved {
    pub server_version: String,
    /// The server settings that change what is measured (fsync,
    /// shared_buffers, …), as `SHOW` gives them.
    pub server_settings: BTreeMap<String, String>,
    /// The scale counted in pgbench_branches, if the tables are pgbench's.
    pub scale: Option<i64>,
    /// What was run to clean up before the run (vacuum, truncate).
    pub clean_up: Vec<String>,
    /// Why clients stopped early, one line each.
    pub aborted: Vec<String>,
}
