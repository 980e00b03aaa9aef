//! What a segment of a split run, and the merged run of a group, record of
//! the split: under `segment` in the segment's settings, under `group` in
//! the merged run's. Any kind that runs in segments (http, db) carries them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One segment's place in its group and what its start barrier settled.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct SegmentRecord {
    /// The group's name (`--group`).
    pub group: String,
    pub index: u32,
    pub count: u32,
    /// The host this segment ran on.
    pub host: String,
    /// The agreed start, ns since the Unix epoch on the common clock.
    pub start_at_ns: i64,
    /// This segment's actual start, ns since the Unix epoch on its clock.
    pub started_at_ns: i64,
    /// How long it waited at the barrier.
    pub barrier_wait_ns: u64,
    /// Its clock's offset from the store server's, where measured.
    pub clock_offset_ns: Option<i64>,
    /// A hash of the whole run's settings, equal in every segment of a group.
    pub fingerprint: String,
}

/// The merged run of a group: which segments it holds and which are missing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct GroupRecord {
    pub name: String,
    pub count: u32,
    /// Whether a segment is missing or failed.
    pub incomplete: bool,
    /// The indices of the segments that are missing.
    pub missing: Vec<u32>,
    pub segments: Vec<GroupSegment>,
}

/// One segment of a merged group.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct GroupSegment {
    pub index: u32,
    pub host: String,
    pub run_id: String,
    pub start_at_ns: i64,
    pub started_at_ns: i64,
    pub clock_offset_ns: Option<i64>,
}
