//! What a segment of a split run, and the merged run of a group, record of
//! the split: under `segment` in the segment's settings, under `group` in
//! the merged run's. Any kind that runs in segments (http, db) carries them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One segment's place in its group and what its start barrier settled.
/// Every field a segment has always recorded is required, so settings
/// whose `segment` lacks one are not taken for a segment's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
    #[serde(default)]
    pub barrier_wait_ns: u64,
    /// The store server's clock minus this segment's, where measured.
    #[serde(default)]
    pub clock_offset_ns: Option<i64>,
    /// A hash of the whole run's settings, equal in every segment of a group.
    #[serde(default)]
    pub fingerprint: String,
}

impl SegmentRecord {
    /// Its actual start on the common clock: the store server's where the
    /// offset was measured, else its own.
    pub fn started_common_ns(&self) -> i64 {
        self.started_at_ns + self.clock_offset_ns.unwrap_or(0)
    }
}

impl crate::Run {
    /// This run's place in a split run, if it is a segment's run (its
    /// settings hold a whole `segment`), whatever its kind.
    pub fn segment(&self) -> Option<SegmentRecord> {
        SegmentRecord::deserialize(self.settings.get("segment")?).ok()
    }
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

/// The settings each segment has its share of, which a merged run's
/// settings give as their sum: [`super::HttpRecord`]'s `connections`,
/// [`super::DbRecord`]'s `clients`, and both records' `threads`.
pub const SUMMED_SETTINGS: [&str; 3] = ["connections", "clients", "threads"];

/// The settings that differ between the segments of one run by design:
/// each segment's place in the run ([`SegmentRecord`]), its share of the
/// [`SUMMED_SETTINGS`] and the seed each draws when `--seed` is not given;
/// and two that runs of older dynos kept in their settings: where a segment
/// connected from (`source_addr`) and `clean_up` (one segment cleans up
/// before a db run, the others wait for it).
pub const PER_SEGMENT_SETTINGS: [&str; 7] = [
    "segment",
    "connections",
    "clients",
    "threads",
    "source_addr",
    "seed",
    "clean_up",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn fields<T: JsonSchema>() -> Vec<String> {
        let schema = serde_json::to_value(schemars::schema_for!(T)).unwrap();
        schema["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// A renamed field would leave a merged run with one segment's share.
    #[test]
    fn the_summed_and_per_segment_settings_are_fields_of_the_records() {
        let (http, db) = (
            fields::<super::super::HttpRecord>(),
            fields::<super::super::DbRecord>(),
        );
        let both: Vec<&String> = http.iter().chain(&db).collect();
        for key in SUMMED_SETTINGS {
            assert!(both.iter().any(|f| *f == key), "{key} is no record's field");
        }
        for key in ["segment", "seed"] {
            assert!(both.iter().any(|f| *f == key), "{key} is no record's field");
        }
        assert!(http.contains(&"threads".to_string()) && db.contains(&"threads".to_string()));
    }
}
