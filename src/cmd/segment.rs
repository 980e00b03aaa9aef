//! The start barrier of a segment ([`crate::settings::segment::Plan`]):
//! it meets the other segments of its group in the shared store, and
//! records in the run what `dyno merge` needs.
//!
//! The barrier is the store's (see `dyno_store::Decision`): each segment
//! arrives once it is ready (the open model's connections open), polls
//! until all N have arrived, and the first to see them writes a start
//! instant [`LEAD`] ahead, which all read; the first to wait past
//! `--barrier-timeout` calls the run off instead, and no segment starts.

use std::time::{Duration, Instant, SystemTime};

use dyno_model::Run;
use dyno_model::record::SegmentRecord;
use dyno_store::{Arrival, Decision, Store, StoreError};
use jiff::Timestamp;

use crate::settings::segment::{Plan, ahead, check_start_at, group_tag};

/// How often a waiting segment looks at the barrier.
const POLL: Duration = Duration::from_millis(10);
/// How far ahead of the last arrival the start is set: long enough for
/// every segment to read the decision (a few polls), short enough that the
/// barrier costs the run little.
pub(crate) const LEAD: Duration = Duration::from_millis(50);

/// What the barrier settled, for the run's record.
#[derive(Debug, Clone, Default)]
pub(crate) struct Met {
    /// The common start (Unix ns by this machine's clock).
    pub start_at_ns: i64,
    /// From this segment's arrival to the start.
    pub waited: Duration,
    /// The store server's clock minus this machine's, when the store has
    /// a clock of its own.
    pub clock_offset_ns: Option<i64>,
}

impl Plan {
    /// Arrives at the barrier and waits for the start; `Err` when the run
    /// is called off (by this segment or another) or the store fails.
    pub(crate) fn meet(&self, store: &mut dyn Store) -> Result<(SystemTime, Met), String> {
        let arrived = Instant::now();
        let now_ns = || dyno_store::unix_ns(Timestamp::now());
        let clock_offset_ns = store
            .server_clock()
            .map_err(|e| e.to_string())?
            .map(|(server_ns, took)| server_ns - (now_ns() - (took.as_nanos() / 2) as i64));
        let arrival = Arrival {
            group: self.group.clone(),
            segment: self.segment,
            host: self.host.clone(),
            at_ns: now_ns(),
            settings: self.settings.clone(),
        };
        match store.arrive(&arrival) {
            Ok(()) => {}
            // Another command than the group's: this segment is refused,
            // and the group is called off, so the segments that arrived
            // (and any still to come) hear why and none starts.
            Err(StoreError::GroupSettings(differs)) => {
                let why = format!(
                    "{differs}; every segment must run the same command (only --segment and the source address may differ), so group '{}' is called off and no segment starts: start all {} again with one command under a new --group",
                    self.group, self.segment.count
                );
                return Err(
                    match store.decide(&self.group, &Decision::CalledOff { why }) {
                        Ok(Decision::CalledOff { why }) => why,
                        Ok(Decision::Start { .. }) => differs,
                        Err(e) => format!("{differs} (and calling the group off failed: {e})"),
                    },
                );
            }
            Err(e) => return Err(e.to_string()),
        }
        let met = |start_at_ns: i64| {
            let at = SystemTime::UNIX_EPOCH + Duration::from_nanos(start_at_ns.max(0) as u64);
            let waited =
                arrived.elapsed() + at.duration_since(SystemTime::now()).unwrap_or_default();
            Ok((
                at,
                Met {
                    start_at_ns,
                    waited,
                    clock_offset_ns,
                },
            ))
        };
        if let Some(at) = self.start_at {
            // Checked again: opening the connections took time.
            check_start_at(at, Timestamp::now()).map_err(|e| e.to_string())?;
            eprintln!(
                "dyno: segment {} of group '{}' starts at {at} ({}), without waiting for the others",
                self.segment,
                self.group,
                ahead(at, Timestamp::now())
            );
            return met(dyno_store::unix_ns(at));
        }
        let count = self.segment.count;
        let deadline = arrived + self.barrier_timeout;
        loop {
            let state = store.group(&self.group).map_err(|e| e.to_string())?;
            let decision = match state.decision {
                Some(d) => d,
                None if state.arrivals.len() as u32 >= count => store
                    .decide(
                        &self.group,
                        &Decision::Start {
                            at_ns: now_ns() + LEAD.as_nanos() as i64,
                        },
                    )
                    .map_err(|e| e.to_string())?,
                None if Instant::now() >= deadline => {
                    let missing: Vec<String> = state
                        .missing(count)
                        .iter()
                        .map(|i| format!("{i}/{count}"))
                        .collect();
                    let why = format!(
                        "segment{} {} of group '{}' did not arrive within the barrier timeout ({}), so no segment started; start all {count} with the same --store (this one meets in {}) under a new --group, or raise --barrier-timeout",
                        if missing.len() == 1 { "" } else { "s" },
                        missing.join(", "),
                        self.group,
                        dyno_model::units::duration_flag(self.barrier_timeout),
                        store.location(),
                    );
                    store
                        .decide(&self.group, &Decision::CalledOff { why })
                        .map_err(|e| e.to_string())?
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

    /// Marks `run` as this segment's: its description, the tag that finds
    /// the group, and what the barrier settled.
    pub(crate) fn record(&self, run: &mut Run, met: &Met, started_at: SystemTime) {
        run.description = format!(
            "{} [segment {} of {}]",
            run.description, self.segment, self.group
        );
        let started_ns = started_at
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        let record = SegmentRecord {
            group: self.group.clone(),
            index: self.segment.index,
            count: self.segment.count,
            host: self.host.clone(),
            start_at_ns: met.start_at_ns,
            started_at_ns: started_ns,
            barrier_wait_ns: met.waited.as_nanos() as u64,
            clock_offset_ns: met.clock_offset_ns,
            fingerprint: dyno_store::fingerprint(&self.settings),
        };
        run.settings["segment"] =
            serde_json::to_value(record).expect("a segment record serializes");
    }

    /// The tag every segment's run carries.
    pub(crate) fn tag(&self) -> String {
        group_tag(&self.group)
    }
}

/// An engine's gate for `plan`: the start barrier when this process is a
/// segment (what it settled goes to `met`), an immediate start otherwise.
pub(crate) fn gate(
    plan: Option<&Plan>,
    store: Option<&mut (dyn Store + 'static)>,
    met: &mut Option<Met>,
) -> Result<Option<SystemTime>, String> {
    match (plan, store) {
        (Some(plan), Some(store)) => {
            let (at, m) = plan.meet(store)?;
            *met = Some(m);
            Ok(Some(at))
        }
        _ => Ok(None),
    }
}

/// The steps of a capacity search split over segments
/// ([`dyno_load::shard::Together`]): before each step the segments meet at
/// a barrier (the group's own before the first step, so that `dyno merge`
/// sees who arrived and whether the run was called off; the step's own
/// group, `GROUP/LABEL`, before each later one), and after it each reports
/// its part in the step's group and reads everyone's, waiting no longer
/// than `--barrier-timeout` for a segment that stopped.
pub(crate) struct Steps<'a> {
    plan: &'a Plan,
    store: &'a mut dyn Store,
    /// What each step's barrier settled, in order.
    met: Vec<Met>,
}

impl<'a> Steps<'a> {
    pub(crate) fn new(plan: &'a Plan, store: &'a mut dyn Store) -> Steps<'a> {
        Steps {
            plan,
            store,
            met: Vec::new(),
        }
    }

    /// What the barrier of the step that started at `started_at` settled
    /// (the one whose common start is nearest it).
    pub(crate) fn met_at(&self, started_at: SystemTime) -> Option<&Met> {
        let at = started_at
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        self.met
            .iter()
            .min_by_key(|m| (m.start_at_ns - at).unsigned_abs())
    }

    /// The steps of a search when this process is a segment (`plan`, with
    /// the store where the segments meet), `None` otherwise.
    pub(crate) fn of(
        plan: Option<&'a Plan>,
        store: Option<&'a mut (dyn Store + 'static)>,
    ) -> Option<Steps<'a>> {
        match (plan, store) {
            (Some(plan), Some(store)) => Some(Steps::new(plan, store)),
            _ => None,
        }
    }

    /// Marks the run of a split search as this segment's (see
    /// [`Plan::record`]), with what the barrier of its figures' step (the
    /// one that started at `figures_at`) settled, and tags it for `dyno
    /// merge`.
    pub(crate) fn mark(
        steps: Option<Steps<'_>>,
        run: &mut Run,
        figures_at: Option<SystemTime>,
        save: &mut crate::cli::SaveArgs,
    ) {
        let (Some(steps), Some(at)) = (steps, figures_at) else {
            return;
        };
        if let Some(met) = steps.met_at(at) {
            steps.plan.record(run, met, at);
            save.tags.push(steps.plan.tag());
        }
    }

    fn step_group(&self, label: &str) -> String {
        format!("{}/{label}", self.plan.group)
    }
}

impl dyno_load::shard::Together for Steps<'_> {
    fn count(&self) -> u32 {
        self.plan.segment.count
    }

    fn start(&mut self, label: &str) -> Result<SystemTime, String> {
        let mut step = self.plan.clone();
        if !self.met.is_empty() {
            step.group = self.step_group(label);
        }
        let (at, met) = step.meet(self.store)?;
        self.met.push(met);
        Ok(at)
    }

    fn exchange(
        &mut self,
        label: &str,
        mine: &dyno_load::shard::Part,
    ) -> Result<Vec<dyno_load::shard::Part>, String> {
        let group = self.step_group(label);
        let count = self.plan.segment.count;
        self.store
            .report(&group, self.plan.segment.index, &mine.to_json())
            .map_err(|e| e.to_string())?;
        let deadline = Instant::now() + self.plan.barrier_timeout;
        loop {
            let reports = self.store.reports(&group).map_err(|e| e.to_string())?;
            if reports.len() as u32 >= count {
                return reports
                    .iter()
                    .map(|(index, body)| {
                        dyno_load::shard::Part::from_json(body).map_err(|e| {
                            format!("the report of segment {index}/{count} on step {label} of group '{}' cannot be read ({e}): is it a dyno of another version?", self.plan.group)
                        })
                    })
                    .collect();
            }
            if Instant::now() >= deadline {
                let missing: Vec<String> = (0..count)
                    .filter(|i| !reports.iter().any(|(r, _)| r == i))
                    .map(|i| format!("{i}/{count}"))
                    .collect();
                return Err(format!(
                    "segment {} of group '{}' did not report step {label} within --barrier-timeout {} (stopped, or its machine failed)",
                    missing.join(", "),
                    self.plan.group,
                    dyno_model::units::duration_flag(self.plan.barrier_timeout)
                ));
            }
            std::thread::sleep(POLL);
        }
    }
}
