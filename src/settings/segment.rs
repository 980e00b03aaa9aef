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
use serde::Serialize;
use serde_json::Value;

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
///
/// They are derived from typed values, the run's settings record first
/// ([`Settings::of`]): serialized, flattened to dotted names
/// (`rate_plan.plan`, `scripts.0.name`), each value as text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Settings(pub BTreeMap<String, String>);

impl Settings {
    /// The settings of `value` less the fields named in `drop` (a name
    /// drops the field and all under it: `segment`, `rate_plan.stages`).
    ///
    /// A field that is not set (`null`) is left out, as is an empty list;
    /// a list's items are named by index. A count of nanoseconds (a field
    /// named `X_ns`) is published as the duration `X`, e.g. `duration 2s`,
    /// as the flags give it and the barrier's refusal names it.
    pub(crate) fn of(value: &impl Serialize, drop: &[&str]) -> Settings {
        let value = serde_json::to_value(value).expect("settings serialize");
        let mut settings = Settings::default();
        settings.flatten("", &value, drop);
        settings
    }

    /// Adds the settings of `value` (see [`Settings::of`]); one of the
    /// same name is replaced.
    pub(crate) fn add(&mut self, value: &impl Serialize) -> &mut Settings {
        self.0.extend(Settings::of(value, &[]).0);
        self
    }

    fn flatten(&mut self, name: &str, value: &Value, drop: &[&str]) {
        let under = |key: &str| match name {
            "" => key.to_owned(),
            _ => format!("{name}.{key}"),
        };
        match value {
            Value::Null => {}
            Value::Object(fields) => {
                for (key, v) in fields {
                    let key = under(key);
                    if !drop.contains(&key.as_str()) {
                        self.flatten(&key, v, drop);
                    }
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    self.flatten(&under(&i.to_string()), v, drop);
                }
            }
            Value::Bool(b) => self.set(name, b.to_string()),
            Value::String(s) => self.set(name, s.clone()),
            Value::Number(n) => match (name.strip_suffix("_ns"), n.as_u64()) {
                (Some(duration), Some(ns)) => {
                    self.set(duration, format!("{:?}", Duration::from_nanos(ns)));
                }
                // 1000.0 as 1000, as the flag is written.
                _ => match n.as_f64() {
                    Some(x) if n.is_f64() => self.set(name, x.to_string()),
                    _ => self.set(name, n.to_string()),
                },
            },
        }
    }

    fn set(&mut self, name: &str, value: String) {
        self.0.insert(name.to_owned(), value);
    }
}

/// A hash of `bytes`, published in place of what is too long, or too
/// private, to publish in the store (headers, bodies, files).
pub(crate) fn hash(bytes: &[u8]) -> String {
    let mut h = fnv::FnvHasher::default();
    std::hash::Hasher::write(&mut h, bytes);
    format!("hash {:016x}", std::hash::Hasher::finish(&h))
}

/// `--start-at`, which every segment of a group must share too.
#[derive(Serialize)]
struct StartAt {
    start_at: Option<Timestamp>,
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
        settings.add(&StartAt {
            start_at: self.start_at,
        });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Asked {
        url: &'static str,
        rate_per_sec: Option<f64>,
        requests: Option<u64>,
        duration_ns: u64,
        alpn: Vec<&'static str>,
        empty: Vec<u32>,
        keep_alive: bool,
        segment: Share,
        plan: Stages,
    }

    #[derive(Serialize)]
    struct Share {
        index: u32,
    }

    #[derive(Serialize)]
    struct Stages {
        plan: &'static str,
        stages: Vec<u64>,
    }

    fn asked() -> Asked {
        Asked {
            url: "http://x/",
            rate_per_sec: Some(1000.0),
            requests: None,
            duration_ns: 2_500_000_000,
            alpn: vec!["h2", "http/1.1"],
            empty: Vec::new(),
            keep_alive: true,
            segment: Share { index: 1 },
            plan: Stages {
                plan: "10@1s",
                stages: vec![7],
            },
        }
    }

    #[test]
    fn settings_are_the_typed_values_flattened_less_what_is_dropped() {
        let s = Settings::of(&asked(), &["segment", "plan.stages"]);
        let want: BTreeMap<String, String> = [
            ("url", "http://x/"),
            // As the flag is written, not 1000.0.
            ("rate_per_sec", "1000"),
            // A count of nanoseconds is published as the duration.
            ("duration", "2.5s"),
            ("alpn.0", "h2"),
            ("alpn.1", "http/1.1"),
            ("keep_alive", "true"),
            ("plan.plan", "10@1s"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        // Not set (`requests`) and empty (`empty`) leave no name; a dropped
        // name drops all under it.
        assert_eq!(s.0, want);
    }

    #[test]
    fn added_settings_replace_those_of_the_same_name() {
        #[derive(Serialize)]
        struct Whole {
            url: &'static str,
            connections: u32,
        }
        let mut s = Settings::of(&asked(), &["segment", "plan"]);
        s.add(&Whole {
            url: "http://y/",
            connections: 8,
        });
        assert_eq!(s.0["url"], "http://y/");
        assert_eq!(s.0["connections"], "8");
        assert_eq!(s.0.len(), 7, "{s:?}");
    }

    #[test]
    fn start_at_is_published_when_given() {
        let at: Timestamp = "2030-01-02T03:04:05Z".parse().unwrap();
        let mut plan = Plan {
            segment: Segment { index: 0, count: 2 },
            group: "g".into(),
            start_at: Some(at),
            barrier_timeout: Duration::from_secs(1),
            host: "h".into(),
            settings: BTreeMap::new(),
        };
        plan.publish(Settings::of(&asked(), &[]));
        assert_eq!(plan.settings["start_at"], at.to_string());
        plan.start_at = None;
        plan.publish(Settings::of(&asked(), &[]));
        assert!(
            !plan.settings.contains_key("start_at"),
            "{:?}",
            plan.settings
        );
    }

    #[test]
    fn a_hash_hides_what_it_hashes_and_tells_contents_apart() {
        let a = hash(b"Authorization: Bearer s3cret");
        assert!(!a.contains("s3cret"), "{a}");
        assert_eq!(a, hash(b"Authorization: Bearer s3cret"));
        assert_ne!(a, hash(b"Authorization: Bearer other"));
    }
}
