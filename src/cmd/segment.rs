//! The start barrier of a segment ([`crate::settings::segment::Plan`]):
//! it meets the other segments of its group in the shared store (the
//! barrier is the store's, [`dyno_store::barrier`]), and records in the
//! run what `dyno merge` needs.

use std::time::SystemTime;

use dyno_model::Run;
use dyno_model::record::SegmentRecord;
use dyno_store::Store;
use dyno_store::barrier::{Meeting, Met, Missing};
use jiff::Timestamp;

use crate::settings::segment::{Plan, ahead, check_start_at, group_tag};

impl Plan {
    /// Arrives at the barrier and waits for the start; `Err` when the run
    /// is called off (by this segment or another) or the store fails.
    pub(crate) fn meet(&self, store: &mut dyn Store) -> Result<(SystemTime, Met), String> {
        let start_at_ns = match self.start_at {
            Some(at) => {
                // Checked again: opening the connections took time.
                check_start_at(at, Timestamp::now()).map_err(|e| e.to_string())?;
                eprintln!(
                    "dyno: segment {} of group '{}' starts at {at} ({}), without waiting for the others",
                    self.segment,
                    self.group,
                    ahead(at, Timestamp::now())
                );
                Some(dyno_store::unix_ns(at))
            }
            None => None,
        };
        let meeting = Meeting {
            group: &self.group,
            segment: self.segment,
            host: &self.host,
            settings: &self.settings,
            timeout: self.barrier_timeout,
            start_at_ns,
        };
        dyno_store::barrier::meet(store, &meeting)
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
        let (plan, count) = (self.plan, self.plan.segment.count);
        let group = self.step_group(label);
        let timeout = plan.barrier_timeout;
        let reports =
            dyno_store::barrier::exchange(self.store, &group, plan.segment, &mine.to_json(), timeout)
                .map_err(|missing| match missing {
                    Missing::Store(e) => e,
                    Missing::Segments(missing) => format!(
                        "segment {missing} of group '{}' did not report step {label} within --barrier-timeout {} (stopped, or its machine failed)",
                        plan.group,
                        dyno_model::units::duration_flag(timeout)
                    ),
                })?;
        reports
            .iter()
            .map(|(index, body)| {
                dyno_load::shard::Part::from_json(body).map_err(|e| {
                    format!("the report of segment {index}/{count} on step {label} of group '{}' cannot be read ({e}): is it a dyno of another version?", plan.group)
                })
            })
            .collect()
    }
}
