//! A start barrier for the segments of one run (`--segment I/N --group
//! NAME`): each segment says it has arrived, and the first to see all N
//! there (or the first to give up waiting) writes the group's one
//! decision, which every segment then reads. Because the decision is
//! written once, first writer wins, a segment that gives up and one that
//! sees the last arrival at the same moment can never disagree: either all
//! start at the decided instant, or none starts.

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
/// everywhere, and each index once.
pub(crate) fn check(arrival: &Arrival, earlier: &[Arrival]) -> Result<(), String> {
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
