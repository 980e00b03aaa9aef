//! `--segment I/N --group NAME --start-at --barrier-timeout`: the flags of
//! one segment of a run split over several processes or machines, resolved
//! into its [`Plan`]: its share of the connections, threads and requests,
//! and the settings it publishes at the start barrier (what every segment
//! of a group must share). The barrier itself is `cmd::segment`'s.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Result, bail};
use dyno_model::Segment;
use jiff::Timestamp;

use crate::cli::SegmentArgs;

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
pub(crate) fn ahead(at: Timestamp, now: Timestamp) -> String {
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
