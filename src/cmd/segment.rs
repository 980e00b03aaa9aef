//! `--segment I/N --group NAME`: one segment of a run split over several
//! processes or machines. Shares out this process's connections and
//! threads, meets the other segments at the start barrier in the shared
//! store, and records in the run what `dyno merge` needs.
//!
//! The barrier is the store's (see `dyno_store::Decision`): each segment
//! arrives once it is ready (the open model's connections open), polls
//! until all N have arrived, and the first to see them writes a start
//! instant [`LEAD`] ahead, which all read; the first to wait past
//! `--barrier-timeout` calls the run off instead, and no segment starts.

use std::time::{Duration, Instant, SystemTime};

use anyhow::{Result, bail};
use dyno_model::{Run, Segment};
use dyno_store::{Arrival, Decision, Store};
use jiff::Timestamp;
use serde_json::json;

use crate::cli::SegmentArgs;

/// How often a waiting segment looks at the barrier.
const POLL: Duration = Duration::from_millis(10);
/// How far ahead of the last arrival the start is set: long enough for
/// every segment to read the decision (a few polls), short enough that the
/// barrier costs the run little.
pub const LEAD: Duration = Duration::from_millis(50);

/// One segment's part, from the flags.
#[derive(Debug, Clone)]
pub struct Plan {
    pub segment: Segment,
    pub group: String,
    pub start_at: Option<Timestamp>,
    pub barrier_timeout: Duration,
    /// This machine's name, as the other segments see it.
    pub host: String,
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

impl Plan {
    /// The plan of `args`, if a segment was asked for.
    pub fn from_args(args: &SegmentArgs, host: Option<&str>) -> Option<Plan> {
        Some(Plan {
            segment: args.segment?,
            group: args.group.clone()?,
            start_at: args.start_at,
            barrier_timeout: args.barrier_timeout,
            host: host.unwrap_or("unknown host").to_owned(),
        })
    }

    /// This segment's share of `connections` and `threads` (at least one
    /// thread; no more threads than connections).
    pub fn share(&self, connections: u32, threads: usize) -> Result<(u32, usize)> {
        let s = self.segment;
        if connections < s.count {
            bail!(
                "-c {connections} cannot be shared out over {} segments: every segment needs a connection (-c {} or more)",
                s.count,
                s.count
            );
        }
        let c = s.share(u64::from(connections)) as u32;
        let t = (s.share(threads as u64) as usize).clamp(1, c as usize);
        Ok((c, t))
    }

    /// Arrives at the barrier and waits for the start; `Err` when the run
    /// is called off (by this segment or another) or the store fails.
    pub fn meet(&self, store: &mut dyn Store) -> Result<(SystemTime, Met), String> {
        let arrived = Instant::now();
        let now_ns = || dyno_store::unix_ns(Timestamp::now());
        let clock_offset_ns = store
            .server_clock()
            .map_err(|e| e.to_string())?
            .map(|(server_ns, took)| server_ns - (now_ns() - (took.as_nanos() / 2) as i64));
        store
            .arrive(&Arrival {
                group: self.group.clone(),
                segment: self.segment,
                host: self.host.clone(),
                at_ns: now_ns(),
            })
            .map_err(|e| e.to_string())?;
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
                        humantime(self.barrier_timeout),
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
    pub fn record(&self, run: &mut Run, met: &Met, started_at: SystemTime) {
        run.description = format!(
            "{} [segment {} of {}]",
            run.description, self.segment, self.group
        );
        let started_ns = started_at
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        run.settings["segment"] = json!({
            "group": self.group,
            "index": self.segment.index,
            "count": self.segment.count,
            "host": self.host,
            "start_at_ns": met.start_at_ns,
            "started_at_ns": started_ns,
            "barrier_wait_ns": met.waited.as_nanos() as u64,
            "clock_offset_ns": met.clock_offset_ns,
        });
    }

    /// The tag every segment's run carries.
    pub fn tag(&self) -> String {
        group_tag(&self.group)
    }
}

/// An engine's gate for `plan`: the start barrier when this process is a
/// segment (what it settled goes to `met`), an immediate start otherwise.
pub fn gate(
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

/// The tag of a group's segment runs.
pub fn group_tag(group: &str) -> String {
    format!("group:{group}")
}

/// `d` as 60s or 250ms, for messages.
pub fn humantime(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}
