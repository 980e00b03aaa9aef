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

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Result, bail};
use dyno_model::record::SegmentRecord;
use dyno_model::{Run, Segment};
use dyno_store::{Arrival, Decision, Store, StoreError};
use jiff::Timestamp;

use crate::cli::SegmentArgs;

/// How often a waiting segment looks at the barrier.
const POLL: Duration = Duration::from_millis(10);
/// How far ahead of the last arrival the start is set: long enough for
/// every segment to read the decision (a few polls), short enough that the
/// barrier costs the run little.
pub(crate) const LEAD: Duration = Duration::from_millis(50);
/// The furthest ahead `--start-at` may be: a time further out is a typo
/// (a year, a day) far more often than a plan.
pub(crate) const START_AT_HORIZON: Duration = Duration::from_secs(24 * 3600);

/// One segment's part, from the flags.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub segment: Segment,
    pub group: String,
    pub start_at: Option<Timestamp>,
    pub barrier_timeout: Duration,
    /// This machine's name, as the other segments see it.
    pub host: String,
    /// The settings every segment of the group must share, by name (see
    /// [`Settings`]); published on arrival, and the barrier refuses a
    /// segment whose settings differ from the first arrival's.
    pub settings: BTreeMap<String, String>,
}

/// The settings a segment publishes at the barrier: what makes the whole
/// run the run it is (the command, URL, model, rate, -n, -d, the whole
/// run's -c, …), never what differs per segment by design (its index,
/// host, source address, its shares).
#[derive(Debug, Clone, Default)]
pub(crate) struct Settings(pub BTreeMap<String, String>);

impl Settings {
    /// Settings of the command `command` (`http`, `db run`).
    pub(crate) fn new(command: &str) -> Settings {
        let mut s = Settings::default();
        s.put("command", command);
        s
    }

    /// Sets `name` to `value`.
    pub(crate) fn put(&mut self, name: &str, value: impl std::fmt::Display) -> &mut Settings {
        self.0.insert(name.to_owned(), value.to_string());
        self
    }

    /// Sets `name` to `value`, or "(not set)".
    pub(crate) fn opt(
        &mut self,
        name: &str,
        value: Option<impl std::fmt::Display>,
    ) -> &mut Settings {
        match value {
            Some(v) => self.put(name, v),
            None => self.put(name, "(not set)"),
        }
    }

    /// Sets `name` to a hash of `bytes` (for what is too long, or too
    /// private, to publish in the store: headers, bodies, files).
    pub(crate) fn hash(&mut self, name: &str, bytes: &[u8]) -> &mut Settings {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.put(name, format!("hash {h:016x}"))
    }
}

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
    /// The plan of `args`, if a segment was asked for; refuses a
    /// `--start-at` that has passed or is more than [`START_AT_HORIZON`]
    /// ahead.
    pub(crate) fn from_args(args: &SegmentArgs, host: Option<&str>) -> Result<Option<Plan>> {
        let (Some(segment), Some(group)) = (args.segment, args.group.clone()) else {
            return Ok(None);
        };
        if let Some(at) = args.start_at {
            check_start_at(at, Timestamp::now())?;
        }
        Ok(Some(Plan {
            segment,
            group,
            start_at: args.start_at,
            barrier_timeout: args.barrier_timeout,
            host: host.unwrap_or("unknown host").to_owned(),
            settings: BTreeMap::new(),
        }))
    }

    /// Publishes `settings` at the barrier (with `--start-at`, which every
    /// segment must share too).
    pub(crate) fn publish(&mut self, mut settings: Settings) {
        settings.opt("start_at", self.start_at);
        self.settings = settings.0;
    }

    /// This segment's share of `connections` and `threads` (at least one
    /// thread; no more threads than connections), and of `requests` (-n)
    /// when the run is so many requests: every segment needs at least one
    /// of each.
    pub(crate) fn share(
        &self,
        connections: u32,
        threads: usize,
        requests: Option<u64>,
    ) -> Result<(u32, usize)> {
        let s = self.segment;
        if connections < s.count {
            bail!(
                "-c {connections} cannot be shared out over {} segments: every segment needs a connection (-c {} or more)",
                s.count,
                s.count
            );
        }
        if let Some(n) = requests
            && n < u64::from(s.count)
        {
            bail!(
                "-n {n} cannot be shared out over {} segments: every segment needs a request (-n {} or more), or run fewer segments",
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

/// Refuses a `--start-at` that has passed by `now`, or is more than
/// [`START_AT_HORIZON`] ahead of it.
pub(crate) fn check_start_at(at: Timestamp, now: Timestamp) -> Result<()> {
    let now = now.round(jiff::Unit::Second).unwrap_or(now);
    let ahead = at.duration_since(now);
    if ahead.is_negative() {
        bail!(
            "--start-at {at} passed {} ago ({now} now): the segments would not start together (a late one would start at once); give a time far enough ahead for every segment to be ready, e.g. --start-at {}",
            span(ahead.unsigned_abs()),
            now.saturating_add(jiff::SignedDuration::from_secs(60))
                .unwrap_or(now)
        );
    }
    if ahead.unsigned_abs() > START_AT_HORIZON {
        bail!(
            "--start-at {at} is {} ahead ({now} now): a segment waits at most 24 hours, so this is likely a typo in the date; give a time within a day, or start the segments later",
            span(ahead.unsigned_abs())
        );
    }
    Ok(())
}

/// How far `at` is ahead of `now`, as "in 12 s".
fn ahead(at: Timestamp, now: Timestamp) -> String {
    let d = at.duration_since(now);
    if d.is_negative() {
        "now".to_owned()
    } else {
        format!("in {}", span(d.unsigned_abs()))
    }
}

/// `d` roughly, in its largest units: "3 years", "2 days", "1 h 5 min",
/// "4 min 2 s", "12 s", "250 ms".
fn span(d: Duration) -> String {
    let s = d.as_secs();
    let plural = |n: u64, unit: &str| format!("{n} {unit}{}", if n == 1 { "" } else { "s" });
    match s {
        0 => format!("{} ms", d.as_millis()),
        1..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        3600..86_400 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        86_400..31_536_000 => plural(s / 86_400, "day"),
        _ => plural(s / 31_536_000, "year"),
    }
}

/// The tag of a group's segment runs.
pub(crate) fn group_tag(group: &str) -> String {
    format!("group:{group}")
}

/// `d` as 60s or 250ms, for messages.
pub(crate) fn humantime(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}
