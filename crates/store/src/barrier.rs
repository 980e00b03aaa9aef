//! The segments' side of a group's barrier (see [`crate::group`]): a
//! segment arrives once it is ready, polls until all N have arrived, and
//! the first to see them writes a start instant [`LEAD`] ahead, which all
//! read; the first to wait past its timeout calls the run off instead, and
//! no segment starts. A split capacity search also [`exchange`]s each
//! step's parts through the store.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use dyno_model::Segment;
use dyno_model::units::duration_flag;
use jiff::Timestamp;

use crate::{Arrival, Decision, Store, StoreError, unix_ns};

/// How often a waiting segment looks at the barrier.
const POLL: Duration = Duration::from_millis(10);

/// How far ahead of the last arrival the start is set: long enough for
/// every segment to read the decision (a few polls), short enough that the
/// barrier costs the run little.
pub const LEAD: Duration = Duration::from_millis(50);

/// One segment at its group's barrier.
#[derive(Debug, Clone, Copy)]
pub struct Meeting<'a> {
    pub group: &'a str,
    pub segment: Segment,
    /// The machine it runs on.
    pub host: &'a str,
    /// What every segment of the group must share (see
    /// [`Arrival::settings`]).
    pub settings: &'a BTreeMap<String, String>,
    /// How long it waits for the others before it calls the run off.
    pub timeout: Duration,
    /// A start given beforehand (`--start-at`, Unix ns): the segment
    /// arrives, then starts then without waiting for the others.
    pub start_at_ns: Option<i64>,
}

/// What the barrier settled, for the run's record.
#[derive(Debug, Clone, Default)]
pub struct Met {
    /// The common start (Unix ns by this machine's clock).
    pub start_at_ns: i64,
    /// From this segment's arrival to the start.
    pub waited: Duration,
    /// The store server's clock minus this machine's, when the store has
    /// a clock of its own.
    pub clock_offset_ns: Option<i64>,
}

/// Arrives at the barrier and waits for the start; `Err` with the reason
/// when the run is called off (by this segment or another) or the store
/// fails.
pub fn meet(store: &mut dyn Store, meeting: &Meeting) -> Result<(SystemTime, Met), String> {
    let arrived = Instant::now();
    let now_ns = || unix_ns(Timestamp::now());
    let clock_offset_ns = store
        .server_clock()
        .map_err(|e| e.to_string())?
        .map(|(server_ns, took)| server_ns - (now_ns() - (took.as_nanos() / 2) as i64));
    arrive(store, meeting)?;
    let met = |start_at_ns: i64| {
        let at = SystemTime::UNIX_EPOCH + Duration::from_nanos(start_at_ns.max(0) as u64);
        let waited = arrived.elapsed() + at.duration_since(SystemTime::now()).unwrap_or_default();
        let met = Met {
            start_at_ns,
            waited,
            clock_offset_ns,
        };
        Ok((at, met))
    };
    if let Some(at_ns) = meeting.start_at_ns {
        return met(at_ns);
    }
    let (group, count) = (meeting.group, meeting.segment.count);
    let deadline = arrived + meeting.timeout;
    loop {
        let state = store.group(group).map_err(|e| e.to_string())?;
        let decision = match state.decision {
            Some(d) => d,
            None if state.arrivals.len() as u32 >= count => {
                let start = Decision::Start {
                    at_ns: now_ns() + LEAD.as_nanos() as i64,
                };
                store.decide(group, &start).map_err(|e| e.to_string())?
            }
            None if Instant::now() >= deadline => {
                let missing = state.missing(count);
                let why = format!(
                    "segment{} {} of group '{group}' did not arrive within the barrier timeout ({}), so no segment started; start all {count} with the same --store (this one meets in {}) under a new --group, or raise --barrier-timeout",
                    if missing.len() == 1 { "" } else { "s" },
                    listed(&missing, count),
                    duration_flag(meeting.timeout),
                    store.location(),
                );
                let off = Decision::CalledOff { why };
                store.decide(group, &off).map_err(|e| e.to_string())?
            }
            None => {
                std::thread::sleep(POLL);
                continue;
            }
        };
        return match decision {
            Decision::Start { at_ns } => met(at_ns),
            Decision::CalledOff { why } => Err(why),
        };
    }
}

/// Writes the segment's arrival. A segment that runs another command than
/// the group's is refused, and the group is called off, so the segments
/// that arrived (and any still to come) hear why and none starts.
fn arrive(store: &mut dyn Store, meeting: &Meeting) -> Result<(), String> {
    let arrival = Arrival {
        group: meeting.group.to_owned(),
        segment: meeting.segment,
        host: meeting.host.to_owned(),
        at_ns: unix_ns(Timestamp::now()),
        settings: meeting.settings.clone(),
    };
    match store.arrive(&arrival) {
        Ok(()) => Ok(()),
        Err(StoreError::GroupSettings(differs)) => {
            let why = format!(
                "{differs}; every segment must run the same command (only --segment and the source address may differ), so group '{}' is called off and no segment starts: start all {} again with one command under a new --group",
                meeting.group, meeting.segment.count
            );
            Err(
                match store.decide(meeting.group, &Decision::CalledOff { why }) {
                    Ok(Decision::CalledOff { why }) => why,
                    Ok(Decision::Start { .. }) => differs,
                    Err(e) => format!("{differs} (and calling the group off failed: {e})"),
                },
            )
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Reports this segment's part (`mine`) in `group` and waits, no longer
/// than `timeout`, for every segment's: the reports by segment index.
/// `Err` names the segments that did not report, as `I/N`.
pub fn exchange(
    store: &mut dyn Store,
    group: &str,
    segment: Segment,
    mine: &str,
    timeout: Duration,
) -> Result<Vec<(u32, String)>, Missing> {
    let count = segment.count;
    store
        .report(group, segment.index, mine)
        .map_err(|e| Missing::Store(e.to_string()))?;
    let deadline = Instant::now() + timeout;
    loop {
        let reports = store
            .reports(group)
            .map_err(|e| Missing::Store(e.to_string()))?;
        if reports.len() as u32 >= count {
            return Ok(reports);
        }
        if Instant::now() >= deadline {
            let missing: Vec<u32> = (0..count)
                .filter(|i| !reports.iter().any(|(r, _)| r == i))
                .collect();
            return Err(Missing::Segments(listed(&missing, count)));
        }
        std::thread::sleep(POLL);
    }
}

/// Why an [`exchange`] ended without every part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// The store failed.
    Store(String),
    /// These segments (`1/3, 2/3`) did not report in time.
    Segments(String),
}

/// Segment indexes as `1/3, 2/3`.
fn listed(indexes: &[u32], count: u32) -> String {
    indexes
        .iter()
        .map(|i| format!("{i}/{count}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How a wait for a group's saved runs ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Saved {
    /// Every segment that arrived has saved its run.
    All,
    /// The wait passed with this many of the segments' runs saved.
    Some(usize),
    /// The barrier called the run off: why.
    CalledOff(String),
}

/// Waits until every segment of `group` has saved its run (tagged
/// `tag`), the barrier called the run off, or `wait` has passed.
///
/// Each look reads the group's saved runs in full, histograms and all:
/// often at first, when the segments are finishing together, then less
/// and less while one that will never come (killed) is waited for.
pub fn wait_for_saved(
    store: &dyn Store,
    group: &str,
    tag: &str,
    wait: Duration,
) -> Result<Saved, StoreError> {
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_millis(250);
    let filter = crate::Filter {
        tags: vec![tag.to_owned()],
        ..crate::Filter::default()
    };
    loop {
        let state = store.group(group)?;
        if let Some(Decision::CalledOff { why }) = state.decision {
            return Ok(Saved::CalledOff(why));
        }
        let runs = store.list(&filter)?.runs;
        let count = state.arrivals.first().map(|a| a.segment.count);
        let saved: std::collections::BTreeSet<u32> = runs
            .iter()
            .filter_map(dyno_model::Run::segment)
            .map(|s| s.index)
            .collect();
        if count.is_some_and(|n| saved.len() as u32 >= n) {
            return Ok(Saved::All);
        }
        if Instant::now() >= deadline {
            return Ok(Saved::Some(saved.len()));
        }
        std::thread::sleep(pause.min(deadline.saturating_duration_since(Instant::now())));
        pause = (pause * 2).min(Duration::from_secs(15));
    }
}
