//! Series: the stored runs of one benchmark, in order, and the figures
//! whose history [`crate::changes`] reads.
//!
//! Runs belong to one series when they are the same benchmark on the same
//! class of machine: the same kind, the same settings (the run's settings
//! record less what differs between two identical invocations: seeds,
//! what was observed of the target, the results a record also keeps) and
//! the same CPU model, logical CPU count and architecture. The host name
//! is not part of it, so identical CI machines share a series; `--host`
//! narrows one when they should not.

use std::collections::BTreeMap;

use dyno_model::{Direction, Metric, Role, Run, Unit};

/// Keys of a settings record (dotted paths, `*` for any one key; a path
/// drops what is under it too) that differ between identical
/// invocations, so that they would split one benchmark into many series:
/// seeds drawn per run (a quick run's parts' too), a segment's place,
/// what was observed (TLS session, server software and settings, the
/// disk's test file and engine reasons, exec's stopping rule) and the
/// results kept in the record (a capacity search's steps and answer, a
/// rate plan's stages, a scenario's counts).
const NOT_IDENTITY: [&str; 23] = [
    "seed",
    "*.seed",
    "default_seed",
    "*.default_seed",
    "segment",
    "group",
    "benchmarks",
    "capacity.answer",
    "capacity.steps",
    "capacity.sweep",
    "capacity.start_probed",
    "rate_plan.stages",
    "scenario.flows",
    "tls_session",
    "server_software",
    "server_version",
    "server_settings",
    "clean_up",
    "aborted",
    "file",
    "disk.file",
    "engine_reason",
    "buffered_reason",
];

/// What makes runs one series.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Identity {
    pub kind: String,
    /// 16 hex digits (FNV-1a) of the settings that name the benchmark.
    pub settings: String,
    /// CPU model, logical CPUs and architecture.
    pub machine: String,
}

impl Identity {
    pub fn of(run: &Run) -> Identity {
        let mut flat = BTreeMap::new();
        crate::versus::flatten("", &run.settings, &mut flat);
        flat.retain(|key, _| !NOT_IDENTITY.iter().any(|drop| under(key, drop)));
        let env = &run.environment;
        let machine = format!(
            "{} ×{} {}",
            env.cpu.model.as_deref().unwrap_or("unknown CPU"),
            env.cpu
                .logical_cores
                .map_or_else(|| "?".to_owned(), |n| n.to_string()),
            env.arch.as_deref().unwrap_or("unknown arch"),
        );
        Identity {
            kind: run.kind.to_string(),
            settings: dyno_model::fingerprint(&flat),
            machine,
        }
    }

    /// A short name of the series: its kind and settings' fingerprint.
    pub fn short(&self) -> String {
        format!("{}-{}", self.kind, &self.settings[..8])
    }
}

/// Whether the dotted `key` is the path `pattern` (`*` matching any one
/// key) or under it.
fn under(key: &str, pattern: &str) -> bool {
    let mut keys = key.split('.');
    pattern
        .split('.')
        .all(|p| keys.next().is_some_and(|k| p == "*" || p == k))
}

/// How the runs of a series are ordered.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Order {
    /// By the time each run started.
    #[default]
    Time,
    /// By the commit of each run's `rev:` tag (a full hash or a prefix of
    /// one), in the order of this list (oldest first, as `git rev-list
    /// --reverse` gives it); the runs of one commit by time. A run
    /// without a `rev:` tag, or whose commit is not in the list, is left
    /// out of its series (and counted).
    Commits(Vec<String>),
}

impl Order {
    /// Where `run`'s commit falls in the list (0 by time; `None` when it
    /// has none there).
    fn place(&self, run: &Run) -> Option<usize> {
        let place = match self {
            Order::Time => 0,
            Order::Commits(commits) => {
                let rev = run.tags.iter().find_map(|t| t.strip_prefix("rev:"))?;
                if rev.len() < 4 {
                    return None;
                }
                commits
                    .iter()
                    .position(|c| c.starts_with(rev) || rev.starts_with(c.as_str()))?
            }
        };
        Some(place)
    }
}

/// The runs of one benchmark, oldest first.
#[derive(Debug, Clone)]
pub struct Series<'a> {
    pub identity: Identity,
    pub runs: Vec<&'a Run>,
    /// Runs of the series that [`Order::Commits`] left out: no `rev:`
    /// tag, or a commit not in the list.
    pub unordered: usize,
}

impl<'a> Series<'a> {
    /// The series of `runs`, each in `order`; the series in the order of
    /// their newest run's start.
    pub fn group(runs: &'a [Run], order: &Order) -> Vec<Series<'a>> {
        let mut by: BTreeMap<Identity, Vec<&Run>> = BTreeMap::new();
        for run in runs {
            by.entry(Identity::of(run)).or_default().push(run);
        }
        let mut series: Vec<Series> = by
            .into_iter()
            .map(|(identity, runs)| {
                let all = runs.len();
                let mut keyed: Vec<(usize, &Run)> = runs
                    .into_iter()
                    .filter_map(|r| order.place(r).map(|p| (p, r)))
                    .collect();
                keyed.sort_by_key(|(p, r)| (*p, r.started_at, r.id));
                let runs: Vec<&Run> = keyed.into_iter().map(|(_, r)| r).collect();
                Series {
                    identity,
                    unordered: all - runs.len(),
                    runs,
                }
            })
            .collect();
        let newest = |s: &Series| s.runs.iter().map(|r| (r.started_at, r.id)).max();
        series.sort_by_key(newest);
        series
    }

    /// The newest run's description, which names the benchmark.
    pub fn description(&self) -> &str {
        self.runs.last().map_or("", |r| r.description.as_str())
    }

    /// The figures followed over the series: every primary metric (each
    /// label set its own), and the 99th percentile of those with a
    /// histogram, in the order the newest run holds them. A run without a
    /// figure is left out of its line.
    pub fn lines(&self) -> Vec<Line> {
        let mut lines: Vec<Line> = Vec::new();
        for (i, run) in self.runs.iter().enumerate() {
            for m in run.metrics.iter().filter(|m| m.role() == Role::Primary) {
                for (name, value) in figures(m) {
                    if !value.is_finite() {
                        continue;
                    }
                    let found = lines
                        .iter_mut()
                        .find(|l| l.name == name && l.labels == m.labels);
                    let line = match found {
                        Some(line) => line,
                        None => {
                            lines.push(Line {
                                name: name.clone(),
                                labels: m.labels.clone(),
                                unit: m.unit,
                                direction: m.direction,
                                points: Vec::new(),
                            });
                            lines.last_mut().expect("just pushed")
                        }
                    };
                    line.points.push(Point {
                        run: i,
                        value,
                        interval: m.uncertainty.as_ref().map(|u| (u.low, u.high)),
                    });
                }
            }
        }
        lines
    }
}

/// The figures of one metric a line follows: its value, and for a
/// histogram its 99th percentile too (`NAME p99`).
fn figures(m: &Metric) -> Vec<(String, f64)> {
    let mut out = vec![(m.name.clone(), m.value)];
    if let Some(h) = m
        .histogram
        .as_ref()
        .and_then(|h| crate::hdr::from_model(h).ok())
    {
        let p99 = crate::hdr::value_at_percentile(&h, 99.0) as f64;
        out.push((format!("{} p99", m.name), p99));
    }
    out
}

/// One figure over a series.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub unit: Unit,
    pub direction: Direction,
    pub points: Vec<Point>,
}

impl Line {
    /// The name with its labels, as `dyno compare` writes a metric:
    /// `wall_ns{command=./work.sh}`.
    pub fn display_name(&self) -> String {
        dyno_model::labelled(&self.name, &self.labels)
    }

    pub fn values(&self) -> Vec<f64> {
        self.points.iter().map(|p| p.value).collect()
    }
}

/// One run's figure: the run's place in its series, the value and the
/// interval the run stored for it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub run: usize,
    pub value: f64,
    pub interval: Option<(f64, f64)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::Kind;
    use serde_json::Value;

    fn run(settings: Value, cpu: &str, wall: f64) -> Run {
        let mut run = Run::new(Kind::Exec, "time './work.sh'");
        run.settings = settings;
        run.environment.cpu.model = Some(cpu.to_owned());
        run.metrics = vec![
            Metric::new("wall_ns", Unit::Ns, Direction::LowerIsBetter, wall)
                .with_label("command", "./work.sh")
                .primary(),
            Metric::new("user_ns", Unit::Ns, Direction::LowerIsBetter, 1.0).diagnostic(),
        ];
        run
    }

    #[test]
    fn runs_of_one_benchmark_on_one_machine_class_are_one_series() {
        let asked = |runs: u64, seed: u64| {
            serde_json::json!({
                "policy": {"fixed": {"runs": runs}},
                "seed": seed,
                "benchmarks": [{"runs": runs, "stopped_by": "runs"}],
            })
        };
        let runs = vec![
            run(asked(5, 1), "Xeon", 10.0),
            run(asked(5, 2), "Xeon", 11.0),
            run(asked(5, 3), "Opteron", 12.0),
            run(asked(9, 4), "Xeon", 13.0),
        ];
        let series = Series::group(&runs, &Order::Time);
        assert_eq!(series.len(), 3);
        let two = series.iter().find(|s| s.runs.len() == 2).unwrap();
        assert_eq!(two.identity, Identity::of(&runs[0]));
        let lines = two.lines();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0].display_name(), "wall_ns{command=./work.sh}");
        assert_eq!(lines[0].values(), [10.0, 11.0]);
        assert_eq!(two.description(), "time './work.sh'");
        assert!(Identity::of(&runs[0]).short().starts_with("exec-"));
    }

    #[test]
    fn commits_order_a_series_and_leave_out_runs_without_one() {
        let tagged = |wall: f64, rev: Option<&str>| {
            let mut r = run(serde_json::json!({}), "Xeon", wall);
            r.tags.extend(rev.map(|rev| format!("rev:{rev}")));
            r
        };
        // Made in the order c2, c1, none, c3, unknown; committed c1, c2, c3.
        let runs = vec![
            tagged(2.0, Some("bbbb1")),
            tagged(1.0, Some("aaaa")),
            tagged(9.0, None),
            tagged(3.0, Some("cccc")),
            tagged(9.0, Some("dddd")),
        ];
        let commits = ["aaaa0000", "bbbb1111", "cccc2222"]
            .map(str::to_owned)
            .to_vec();
        let series = Series::group(&runs, &Order::Commits(commits));
        assert_eq!(series.len(), 1);
        assert_eq!(series[0].unordered, 2);
        assert_eq!(series[0].lines()[0].values(), [1.0, 2.0, 3.0]);
        let by_time = Series::group(&runs, &Order::Time);
        assert_eq!(by_time[0].lines()[0].values(), [2.0, 1.0, 9.0, 3.0, 9.0]);
    }

    #[test]
    fn dropped_keys_are_whole_path_segments() {
        assert!(under("capacity.steps.0.rate", "capacity.steps"));
        assert!(under("seed", "seed"));
        assert!(!under("seeds", "seed"));
        assert!(!under("file_count", "file"));
        assert!(under("disk.seed", "*.seed") && !under("disk.seeds", "*.seed"));
        assert!(!under("seed", "*.seed") && !under("scenario.file", "file"));
    }
}
