//! A start barrier for the segments of one run (`--segment I/N --group
//! NAME`): each segment says it has arrived, and the first to see all N
//! there (or the first to give up waiting) writes the group's one
//! decision, which every segment then reads. Because the decision is
//! written once, first writer wins, a segment that gives up and one that
//! sees the last arrival at the same moment can never disagree: either all
//! start at the decided instant, or none starts.

use std::collections::BTreeMap;

use dyno_model::Segment;

/// One segment's arrival at its group's barrier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrival {
    pub group: String,
    pub segment: Segment,
    /// The machine it runs on, for messages and the merged run.
    pub host: String,
    /// When it arrived, by its own clock (Unix nanoseconds).
    pub at_ns: i64,
    /// The settings every segment of the group must share (the URL, the
    /// model, the rate, -n, -d, the whole run's -c, …), by name, as text;
    /// not what legitimately differs per segment (its index, host, source
    /// address, shares). Empty for an arrival stored by a dyno that did not
    /// record them: it is compared with nothing.
    pub settings: BTreeMap<String, String>,
}

impl Arrival {
    /// A short hash of [`Arrival::settings`] (16 hex digits, FNV-1a), the
    /// same on every machine for the same settings.
    pub fn fingerprint(&self) -> String {
        fingerprint(&self.settings)
    }
}

pub use dyno_model::fingerprint;

/// The settings as the store's column holds them (JSON), `None` when
/// unknown.
pub(crate) fn settings_column(settings: &BTreeMap<String, String>) -> Option<String> {
    (!settings.is_empty()).then(|| serde_json::to_string(settings).unwrap_or_default())
}

/// The settings that column holds; unknown (empty) when NULL or unreadable.
pub(crate) fn settings_from_column(text: Option<String>) -> BTreeMap<String, String> {
    text.and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// What a group's barrier decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Every segment starts when its clock reads this (Unix nanoseconds).
    Start { at_ns: i64 },
    /// No segment starts; why.
    CalledOff { why: String },
}

/// A group as the store has it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupState {
    /// The segments that have arrived, by index.
    pub arrivals: Vec<Arrival>,
    /// The decision, once one was written.
    pub decision: Option<Decision>,
}

impl GroupState {
    /// The indexes of `count` that have not arrived.
    pub fn missing(&self, count: u32) -> Vec<u32> {
        (0..count)
            .filter(|i| !self.arrivals.iter().any(|a| a.segment.index == *i))
            .collect()
    }
}

/// A report's fate by the rows its insert counted: kept (one), or refused
/// because this segment reported in the group before (none).
pub(crate) fn reported(group: &str, index: u32, kept: usize) -> Result<(), crate::StoreError> {
    if kept == 1 {
        Ok(())
    } else {
        Err(crate::StoreError::Group(format!(
            "segment {index} has reported in group '{group}' before: a second process runs as that segment"
        )))
    }
}

/// A decision as two columns: the start instant, or why it was called off.
pub(crate) fn columns(decision: &Decision) -> (Option<i64>, Option<&str>) {
    match decision {
        Decision::Start { at_ns } => (Some(*at_ns), None),
        Decision::CalledOff { why } => (None, Some(why)),
    }
}

/// The decision those two columns hold.
pub(crate) fn from_columns(start: Option<i64>, why: Option<String>) -> Decision {
    match (start, why) {
        (Some(at_ns), _) => Decision::Start { at_ns },
        (None, why) => Decision::CalledOff {
            why: why.unwrap_or_default(),
        },
    }
}

/// Checks an arrival against the group's earlier ones: the same count
/// everywhere, each index once, and the same settings as the first arrival
/// that recorded them (the first arrival's settings win:
/// [`StoreError::GroupSettings`](crate::StoreError::GroupSettings) names
/// what differs).
pub(crate) fn check(arrival: &Arrival, earlier: &[Arrival]) -> Result<(), crate::StoreError> {
    use crate::StoreError;
    check_shape(arrival, earlier).map_err(StoreError::Group)?;
    let first = earlier
        .iter()
        .filter(|a| !a.settings.is_empty())
        .min_by_key(|a| (a.at_ns, a.segment.index));
    if let Some(first) = first
        && !arrival.settings.is_empty()
        && first.settings != arrival.settings
    {
        return Err(StoreError::GroupSettings(differ(arrival, first)));
    }
    Ok(())
}

/// Why `arrival` is refused for settings that differ from `first`'s: each
/// setting that differs, with both values.
fn differ(arrival: &Arrival, first: &Arrival) -> String {
    let none = "(not set)".to_owned();
    let names: std::collections::BTreeSet<&String> = arrival
        .settings
        .keys()
        .chain(first.settings.keys())
        .collect();
    let diffs: Vec<String> = names
        .into_iter()
        .filter_map(|name| {
            let here = arrival.settings.get(name).unwrap_or(&none);
            let there = first.settings.get(name).unwrap_or(&none);
            (here != there).then(|| format!("{name} {here} against {there}"))
        })
        .collect();
    format!(
        "segment {} (from {}) runs another command than group '{}', whose settings segment {} (from {}) set first (this segment's against the group's): {}",
        arrival.segment,
        arrival.host,
        arrival.group,
        first.segment,
        first.host,
        diffs.join("; "),
    )
}

/// The same count everywhere, and each index once.
fn check_shape(arrival: &Arrival, earlier: &[Arrival]) -> Result<(), String> {
    let Arrival { group, segment, .. } = arrival;
    if let Some(other) = earlier.iter().find(|a| a.segment.count != segment.count) {
        return Err(format!(
            "group '{group}' is a run split into {} segments (segment {} came from {}), and this is segment {segment}: give every segment the same count, or use a new --group",
            other.segment.count, other.segment, other.host
        ));
    }
    if let Some(other) = earlier.iter().find(|a| a.segment.index == segment.index) {
        return Err(format!(
            "segment {segment} of group '{group}' has already run or is running (from {}): each segment runs once; start a new run under a new --group",
            other.host
        ));
    }
    Ok(())
}
