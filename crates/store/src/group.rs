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

/// A short hash of `settings` (16 hex digits, FNV-1a over the names and
/// values in order), the same on every machine for the same settings.
pub fn fingerprint(settings: &BTreeMap<String, String>) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (k, v) in settings {
        for b in k.bytes().chain([0]).chain(v.bytes()).chain([0]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

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

/// What every backend's barrier must do, run on two handles of one store
/// (as two machines would hold them).
#[cfg(test)]
pub(crate) fn check_barrier(a: &mut dyn crate::Store, b: &mut dyn crate::Store) {
    use crate::StoreError;
    let arrival = |index, count, host: &str| Arrival {
        group: "g1".into(),
        segment: Segment::new(index, count).unwrap(),
        host: host.into(),
        at_ns: 1_000 + i64::from(index),
        settings: [("url", "http://x/"), ("rate_per_sec", "100")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
    };
    assert_eq!(a.group("g1").unwrap(), GroupState::default());
    a.arrive(&arrival(0, 3, "h0")).unwrap();
    b.arrive(&arrival(2, 3, "h2")).unwrap();
    // Each index once; one count for the group.
    let again = b.arrive(&arrival(0, 3, "elsewhere")).unwrap_err();
    assert!(
        matches!(&again, StoreError::Group(m) if m.contains("0/3") && m.contains("h0")),
        "{again}"
    );
    let other_count = a.arrive(&arrival(1, 4, "h1")).unwrap_err();
    assert!(
        matches!(&other_count, StoreError::Group(m) if m.contains("3 segments")),
        "{other_count}"
    );
    let state = b.group("g1").unwrap();
    assert_eq!(
        state.arrivals,
        vec![arrival(0, 3, "h0"), arrival(2, 3, "h2")]
    );
    assert_eq!(state.missing(3), vec![1]);
    assert_eq!(state.decision, None);
    // Another command: refused, naming each setting that differs with both
    // values; the first arrival's settings stand, and nothing is stored.
    let mut other = arrival(1, 3, "h1");
    other.settings.insert("url".into(), "http://y/".into());
    other.settings.remove("rate_per_sec");
    other.settings.insert("requests".into(), "10".into());
    let differs = b.arrive(&other).unwrap_err();
    let StoreError::GroupSettings(m) = &differs else {
        panic!("{differs:?}")
    };
    for needle in [
        "segment 1/3 (from h1)",
        "segment 0/3 (from h0)",
        "url http://y/ against http://x/",
        "rate_per_sec (not set) against 100",
        "requests 10 against (not set)",
    ] {
        assert!(m.contains(needle), "{needle}: {m}");
    }
    assert!(!m.contains("url http://x/"), "{m}");
    assert_eq!(a.group("g1").unwrap().arrivals.len(), 2);
    assert_eq!(
        a.group("g1").unwrap().arrivals[0].fingerprint(),
        arrival(0, 3, "h0").fingerprint()
    );
    assert_ne!(other.fingerprint(), arrival(0, 3, "h0").fingerprint());
    // The first decision stands, whoever writes next.
    let start = Decision::Start { at_ns: 42 };
    assert_eq!(a.decide("g1", &start).unwrap(), start);
    let off = Decision::CalledOff { why: "late".into() };
    assert_eq!(b.decide("g1", &off).unwrap(), start);
    assert_eq!(b.group("g1").unwrap().decision, Some(start));
    // Another group is another barrier.
    assert_eq!(b.decide("g2", &off).unwrap(), off);
    assert_eq!(a.group("g2").unwrap().decision, Some(off));
    assert!(a.group("g2").unwrap().arrivals.is_empty());
}

/// What every backend must do with a store made before arrivals carried
/// settings (schema version 2), holding group "old" with segment 0/3 from
/// "h-old" arrived: the migrated store reads that arrival (with no
/// settings, so it is compared with nothing), and the group's later
/// arrivals are compared with the first that recorded settings.
#[cfg(test)]
pub(crate) fn check_old_arrivals(store: &mut dyn crate::Store) {
    use crate::StoreError;
    let state = store.group("old").unwrap();
    assert_eq!(state.arrivals.len(), 1);
    assert_eq!(state.arrivals[0].host, "h-old");
    assert!(state.arrivals[0].settings.is_empty());
    let arrival = |index, url: &str| Arrival {
        group: "old".into(),
        segment: Segment::new(index, 3).unwrap(),
        host: format!("h{index}"),
        at_ns: 2_000 + i64::from(index),
        settings: [("url".to_owned(), url.to_owned())].into(),
    };
    store.arrive(&arrival(1, "http://x/")).unwrap();
    let e = store.arrive(&arrival(2, "http://y/")).unwrap_err();
    assert!(
        matches!(&e, StoreError::GroupSettings(m) if m.contains("url http://y/ against http://x/")),
        "{e}"
    );
}
