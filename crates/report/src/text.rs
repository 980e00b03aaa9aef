//! Human views: the history list, one run in full, and the machine.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use comfy_table::{Cell, CellAlignment, ContentArrangement, Table, presets};
use dyno_model::size::BinarySize;
use dyno_model::{Direction, Environment, Metric, Run, Unit};
use dyno_stats::compare::Verdict;
use jiff::Timestamp;
use jiff::tz::TimeZone;

use crate::format::{format_interval, format_parallel_fraction, format_value};
use dyno_model::units;

const UNKNOWN: &str = "unknown";

/// A borderless table with a header, laid out the same on any terminal.
pub(crate) fn table(header: &[&str]) -> Table {
    let mut table = Table::new();
    table
        .load_style(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.iter().map(Cell::new));
    table
}

/// Trims the one-space padding comfy-table leaves at both ends of a line.
pub(crate) fn render(table: &Table) -> String {
    let mut out = String::new();
    for line in table.lines() {
        let line = line.strip_prefix(' ').unwrap_or(&line);
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn when(ts: Timestamp, tz: &TimeZone) -> String {
    ts.to_zoned(tz.clone())
        .strftime("%Y-%m-%d %H:%M:%S")
        .to_string()
}

/// The headline figure of a run, as `dyno history` shows it: the metric in
/// words (`int64 1 thread 807.6 µs`, `wall time 'make' 10.89 ms`), not its
/// stored name; a run an interrupt cut short says so first, and a
/// capacity search that found no capacity says how it ended.
fn headline(run: &Run) -> String {
    let figure = figure(run);
    let interrupted = run.warnings.iter().any(|w| w.code == "interrupted");
    let search = run
        .capacity()
        .map(|c| c.answer.outcome)
        .and_then(|o| match o {
            dyno_model::record::CapacityOutcome::Found => None,
            dyno_model::record::CapacityOutcome::Interrupted => Some("no capacity claimed"),
            dyno_model::record::CapacityOutcome::Unfinished => Some("search unfinished"),
            dyno_model::record::CapacityOutcome::NoneMeets => Some("no rate meets the objective"),
            dyno_model::record::CapacityOutcome::ClientBound => Some("client-bound"),
            dyno_model::record::CapacityOutcome::Unstable => Some("search unstable"),
        });
    let mut parts: Vec<&str> = Vec::new();
    if interrupted {
        parts.push("interrupted");
    }
    parts.extend(search);
    if !figure.is_empty() {
        parts.push(&figure);
    }
    parts.join("; ")
}

/// [`headline`]'s figure alone.
fn figure(run: &Run) -> String {
    run.headline_metric()
        .map(|m| {
            let (value, _) = shown(m, None);
            // What the figure is of: the command, the disk test, or N.
            let subject = match (
                m.label(dyno_model::names::label::COMMAND),
                m.label(dyno_model::names::label::TEST),
                m.label(dyno_model::names::label::N),
            ) {
                (Some(command), _, _) => format!(" '{command}'"),
                (None, Some(test), _) => match m.label(dyno_model::names::label::OP) {
                    Some(op) => format!(" {test} {op}"),
                    None => format!(" {test}"),
                },
                _ => String::new(),
            };
            let at = m
                .label(dyno_model::names::label::N)
                .map(|n| format!(" at N={n}"))
                .unwrap_or_default();
            format!("{}{subject} {value}{at}", title(&m.name))
        })
        .unwrap_or_default()
}

/// A metric's stored name in words: unit suffixes dropped (the value shows
/// the unit), `_` as spaces, `1t`/`nt` as threads, `wall` as wall time.
pub(crate) fn title(name: &str) -> String {
    let mut base = name;
    for suffix in [
        "_bytes_per_sec",
        "_ops_per_sec",
        "_per_sec",
        "_percent",
        "_bytes",
        "_ns",
    ] {
        if let Some(stem) = base.strip_suffix(suffix) {
            base = stem;
            break;
        }
    }
    if name.ends_with("_ops_per_sec") {
        return format!("{} rate", title(base));
    }
    base.split('_')
        .map(|word| match word {
            "1t" => "1 thread".to_owned(),
            "nt" => "all threads".to_owned(),
            "wall" => "wall time".to_owned(),
            "requests" if name == dyno_model::names::http::REQUESTS_PER_SEC => {
                "throughput".to_owned()
            }
            w => match w.strip_suffix('t') {
                Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                    format!("{n} threads")
                }
                _ => w.to_owned(),
            },
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `value` with `digits` significant digits, in plain decimals down to
/// 1e-4 and in scientific notation below (σ = 0.002498, p = 3.1e-6).
fn significant(value: f64, digits: usize) -> String {
    if value == 0.0 || !value.is_finite() {
        return format!("{value}");
    }
    let magnitude = value.abs().log10().floor() as i32;
    if magnitude < -4 {
        return format!("{value:.prec$e}", prec = digits.saturating_sub(1));
    }
    let decimals = (digits as i32 - 1 - magnitude).max(0) as usize;
    format!("{value:.decimals$}")
}

/// Metrics that describe how much was done (requests sent, bytes read), not
/// how well: no direction is better.
fn is_volume(name: &str) -> bool {
    matches!(
        name,
        dyno_model::names::http::REQUESTS
            | dyno_model::names::http::RESPONSES
            | dyno_model::names::http::CONNECTIONS_OPENED
            | dyno_model::names::http::BYTES_READ
            | dyno_model::names::http::BYTES_WRITTEN
            | dyno_model::names::http::BODY_BYTES
            | dyno_model::names::common::MEASURED
            | dyno_model::names::db::TRANSACTIONS
    ) || name.starts_with(dyno_model::names::http::STATUS_PREFIX)
        // The machine's state during the run: what it was, not a score.
        || name.starts_with(dyno_model::names::telemetry::MACHINE_LOAD_PREFIX)
        || name.starts_with(dyno_model::names::telemetry::MACHINE_CPU_MHZ_PREFIX)
}

/// A metric's value and its BETTER word as the metric table shows them.
///
/// Engines store p-values, verdicts, fractions and fit parameters as plain
/// ratios and tallies as counts; saved runs keep those units, so the reading
/// is decided here, by name: fractions as % (a parallel fraction with three
/// figures of its serial part), p-values, σ and κ with significant digits, R² with four decimals, a verdict and a bound as
/// words, and no direction for tallies and test results. `ops` is the
/// decimal prefix every row of this metric shares, so a column does not
/// mix ops/s and kops/s.
fn shown(m: &Metric, ops: Option<(f64, &str)>) -> (String, &'static str) {
    let better = match m.direction {
        Direction::HigherIsBetter => "higher",
        Direction::LowerIsBetter => "lower",
    };
    let none = "–";
    let value = m.value;
    match m.name.as_str() {
        // The label tells a zero's meanings apart: no difference, too few
        // runs to test, inconclusive.
        dyno_model::names::exec::VERDICT => return (Verdict::of_metric(m).to_string(), none),
        dyno_model::names::exec::P_VALUE => return (significant(value, 2), none),
        dyno_model::names::scale::USL_BOUND => {
            let word = m
                .label(dyno_model::names::label::BOUND)
                .map_or_else(|| format_value(value, m.unit), str::to_owned);
            return (word, none);
        }
        dyno_model::names::scale::USL_SIGMA | dyno_model::names::scale::USL_KAPPA => {
            return (significant(value, 4), better);
        }
        name if name.ends_with(dyno_model::names::scale::R_SQUARED_SUFFIX) => {
            return (format!("{value:.4}"), better);
        }
        _ => {}
    }
    let better = if is_volume(&m.name) { none } else { better };
    if m.unit == Unit::Ratio
        && m.name
            .contains(dyno_model::names::scale::PARALLEL_FRACTION_SUFFIX)
    {
        return (format_parallel_fraction(value), better);
    }
    if m.unit == Unit::Ratio
        && (m.name.contains("fraction") || m.name == dyno_model::names::scale::EFFICIENCY)
    {
        return (format!("{:.1}%", 100.0 * value), better);
    }
    // A database's operations are transactions: pgbench's tps.
    let ops_unit = if m.name.contains(dyno_model::names::db::TRANSACTIONS_PER_SEC) {
        "tps"
    } else {
        "ops/s"
    };
    if let (Unit::OpsPerSec, Some((scale, prefix)), true) = (m.unit, ops, value.is_finite()) {
        return (
            format!("{} {prefix}{ops_unit}", units::four_figures(value / scale)),
            better,
        );
    }
    if m.unit == Unit::OpsPerSec && ops_unit == "tps" {
        return (format_value(value, m.unit).replace("ops/s", "tps"), better);
    }
    (format_value(value, m.unit), better)
}

/// For each metric name in ops/s, the one decimal prefix that fits its
/// largest value, so all its rows read in the same unit.
fn ops_prefixes(run: &Run) -> BTreeMap<&str, (f64, &'static str)> {
    let mut largest: BTreeMap<&str, f64> = BTreeMap::new();
    for m in run.metrics.iter().filter(|m| m.unit == Unit::OpsPerSec) {
        let top = largest.entry(m.name.as_str()).or_insert(0.0);
        if m.value.is_finite() {
            *top = top.max(m.value.abs());
        }
    }
    largest
        .into_iter()
        .map(|(name, top)| (name, units::thousands_step(top, units::DECIMAL_PREFIXES)))
        .collect()
}

/// One line per run: id, when, kind, host, description and headline figure.
pub fn history(runs: &[Run], tz: &TimeZone) -> String {
    let mut t = table(&["ID", "WHEN", "KIND", "HOST", "DESCRIPTION", "HEADLINE"]);
    for run in runs {
        t.add_row(vec![
            run.id.to_string(),
            when(run.started_at, tz),
            run.kind.to_string(),
            run.environment
                .hostname
                .clone()
                .unwrap_or_else(|| UNKNOWN.into()),
            run.description.clone(),
            headline(run),
        ]);
    }
    render(&t)
}

/// A run in full: header, metrics with their intervals, warnings, the
/// machine in brief, and the settings that repeat it.
pub fn run_details(run: &Run, tz: &TimeZone) -> String {
    details(run, tz, true)
}

/// [`run_details`] without its warnings, for a view that prints the run's
/// own report (which ends with them) after it.
pub fn run_details_before_report(run: &Run, tz: &TimeZone) -> String {
    details(run, tz, false)
}

/// The lines that open a run's details: id, kind, description, when, how
/// long, tags and machine. A comparison shows these and then its own
/// report, whose tables say everything its metrics and settings hold.
pub fn run_header(run: &Run, tz: &TimeZone) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Run {} ({}): {}", run.id, run.kind, run.description);
    // Figures imported from another tool say nothing of how long it took.
    let took = match run.duration_ns {
        0 => String::new(),
        ns => format!(", took {}", units::duration(ns as f64)),
    };
    let _ = writeln!(out, "Started {}{took}", when(run.started_at, tz));
    if !run.tags.is_empty() {
        let _ = writeln!(out, "Tags: {}", run.tags.join(", "));
    }
    let _ = writeln!(out, "Host: {}", machine_line(&run.environment));
    out
}

fn details(run: &Run, tz: &TimeZone, with_warnings: bool) -> String {
    let mut out = run_header(run, tz);
    out.push('\n');

    let mut t = table(&["METRIC", "VALUE", "UNCERTAINTY", "BETTER"]);
    let prefixes = ops_prefixes(run);
    // A segment's per-second histograms are kept for merging; the
    // per-second series above them say the same in one row each.
    for m in run
        .metrics
        .iter()
        .filter(|m| m.name != dyno_model::names::common::TIMELINE_LATENCY)
    {
        let (value, better) = shown(m, prefixes.get(m.name.as_str()).copied());
        t.add_row(vec![
            Cell::new(crate::format::metric_label(m)),
            Cell::new(value).set_alignment(CellAlignment::Right),
            Cell::new(format_interval(m).unwrap_or_default()),
            Cell::new(better),
        ]);
    }
    out.push_str(&render(&t));

    if with_warnings {
        warnings(run, &mut out);
    }
    if !run.settings.is_null() {
        out.push_str("\nSettings:\n");
        let settings = serde_json::to_string_pretty(&run.settings).unwrap_or_default();
        for line in settings.lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}

/// The machine in one line: host, CPU, cores, memory, OS.
fn machine_line(env: &Environment) -> String {
    let cores = match (env.cpu.physical_cores, env.cpu.logical_cores) {
        (Some(p), Some(l)) => format!("{p} cores / {l} threads"),
        (None, Some(l)) => format!("{l} logical cores"),
        _ => "cores unknown".to_owned(),
    };
    format!(
        "{}, {}, {}, {} RAM, {}",
        env.hostname.as_deref().unwrap_or(UNKNOWN),
        env.cpu.model.as_deref().unwrap_or("CPU unknown"),
        cores,
        env.memory
            .total_bytes
            .map_or_else(|| UNKNOWN.to_owned(), |b| BinarySize(b).to_string()),
        env.os.as_deref().unwrap_or("OS unknown"),
    )
}

fn opt<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(|| UNKNOWN.to_owned(), |v| v.to_string())
}

fn bytes(value: Option<u64>) -> String {
    opt(value.map(BinarySize))
}

fn limit(value: Option<u64>) -> String {
    match value {
        Some(u64::MAX) => "unlimited".to_owned(),
        other => opt(other),
    }
}

fn hz(value: Option<u64>) -> String {
    opt(value.map(|hz| format!("{:.0} MHz", hz as f64 / 1e6)))
}

/// The machine as `dyno sysinfo` shows it: one field per line, "unknown"
/// where it could not be read.
/// The storage lines of a disk run's environment.
fn storage_rows(st: &dyno_model::Storage) -> Vec<(&'static str, String)> {
    let kind = match st.rotational {
        Some(true) => " (rotational)",
        Some(false) => " (non-rotational)",
        None => "",
    };
    vec![
        ("storage path", opt(st.path.as_deref())),
        (
            "file system",
            format!(
                "{} on {} at {}",
                opt(st.filesystem.as_deref()),
                opt(st.source.as_deref()),
                opt(st.mount_point.as_deref())
            ),
        ),
        ("mount options", opt(st.mount_options.as_deref())),
        (
            "device",
            format!(
                "{}{kind}, model {}",
                opt(st.device.as_deref()),
                opt(st.model.as_deref())
            ),
        ),
        ("I/O scheduler", opt(st.scheduler.as_deref())),
        (
            "direct I/O",
            opt(st.direct_io.map(|d| if d { "yes" } else { "no" })),
        ),
    ]
}

pub fn environment(env: &Environment) -> String {
    let caches = if env.cpu.caches.is_empty() {
        UNKNOWN.to_owned()
    } else {
        env.cpu
            .caches
            .iter()
            .map(|c| {
                let kind = match c.kind.as_str() {
                    "Data" => "d",
                    "Instruction" => "i",
                    _ => "",
                };
                format!("L{}{kind} {}", c.level, BinarySize(c.size_bytes))
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut rows: Vec<(&str, String)> = vec![
        ("host", opt(env.hostname.as_deref())),
        ("os", opt(env.os.as_deref())),
        ("kernel", opt(env.kernel.as_deref())),
        ("arch", opt(env.arch.as_deref())),
        ("virtualization", opt(env.virtualization.as_deref())),
        ("cpu", opt(env.cpu.model.as_deref())),
        ("cpu vendor", opt(env.cpu.vendor.as_deref())),
        ("sockets", opt(env.cpu.sockets)),
        ("physical cores", opt(env.cpu.physical_cores)),
        ("logical cores", opt(env.cpu.logical_cores)),
        ("caches", caches),
        ("governor", opt(env.cpu.governor.as_deref())),
        ("frequency now", hz(env.cpu.frequency_current_hz)),
        ("frequency max", hz(env.cpu.frequency_max_hz)),
        ("memory total", bytes(env.memory.total_bytes)),
        ("memory available", bytes(env.memory.available_bytes)),
        ("swap total", bytes(env.memory.swap_total_bytes)),
        ("swap used", bytes(env.memory.swap_used_bytes)),
        (
            "open files (soft/hard)",
            format!(
                "{} / {}",
                limit(env.limits.open_files_soft),
                limit(env.limits.open_files_hard)
            ),
        ),
        ("somaxconn", opt(env.network.somaxconn)),
        (
            "ephemeral ports",
            opt(env.network.ephemeral_ports.map(|[a, b]| format!("{a}-{b}"))),
        ),
        ("tcp_tw_reuse", opt(env.network.tcp_tw_reuse)),
        (
            "load average",
            opt(env
                .load_average
                .map(|[a, b, c]| format!("{a:.2} {b:.2} {c:.2}"))),
        ),
        ("dyno", opt(env.dyno.version.as_deref())),
        ("git revision", opt(env.dyno.git_revision.as_deref())),
    ];
    if let Some(st) = &env.storage {
        rows.extend(storage_rows(st));
    }
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (key, value) in rows {
        let _ = writeln!(out, "{key:<width$}  {value}");
    }
    out
}

/// One line of a summary table such as `dyno quick` prints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SummaryRow {
    /// What was measured (`int64, 1 thread`).
    pub test: String,
    /// The headline value of the line, already formatted.
    pub result: String,
    /// Its interval, already formatted (may be empty).
    pub uncertainty: String,
    /// A rate that goes with it, already formatted (may be empty).
    pub rate: String,
    /// Anything else worth a glance (speedup, efficiency).
    pub note: String,
}

/// A one-table summary of a run: the machine on one line, one row per test,
/// then the run's warnings.
pub(crate) fn summary(run: &Run, rows: &[SummaryRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", machine_line(&run.environment));
    out.push('\n');
    let mut t = table(&["TEST", "TIME", "UNCERTAINTY", "RATE", "NOTE"]);
    for r in rows {
        t.add_row(vec![
            Cell::new(&r.test),
            Cell::new(&r.result).set_alignment(CellAlignment::Right),
            Cell::new(&r.uncertainty),
            Cell::new(&r.rate).set_alignment(CellAlignment::Right),
            Cell::new(&r.note),
        ]);
    }
    out.push_str(&render(&t));
    warnings(run, &mut out);
    out
}

/// One watched server's cost over the measured window (`--watch-pid`,
/// `--watch-cgroup`, metrics labelled `watched`), each figure in the words
/// the reports print it with; the text report writes a line of them, the
/// HTML page a table row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ServerCost {
    /// The watched name, or `all watched`.
    pub name: String,
    /// `12.3%`: its CPU in percent of one core.
    pub cpu: String,
    /// `40%`: the kernel's share of its CPU.
    pub kernel: Option<String>,
    /// `5.218µs`: its CPU per request (or transaction).
    pub per_op: Option<String>,
    /// `0.0213`: its context switches per request.
    pub switches: Option<String>,
    /// `12%`: the share of the time its CPU limit held it back, when any.
    pub throttled: Option<String>,
    /// `12.0 MiB`: its peak memory.
    pub memory: Option<String>,
}

/// Each watched server's cost, in the order its CPU was recorded.
pub(crate) fn server_costs(run: &Run) -> Vec<ServerCost> {
    use dyno_model::names::{label, telemetry};
    run.metrics
        .iter()
        .filter(|m| m.name == telemetry::SERVER_CPU_PERCENT)
        .map(|cpu| {
            let name = cpu.labels.get(label::WATCHED);
            // The same source's figures, over the same quick part if any.
            let of = |metric: &str| {
                run.metrics.iter().find(|m| {
                    m.name == metric
                        && m.labels.get(label::WATCHED) == name
                        && m.part() == cpu.part()
                })
            };
            ServerCost {
                name: name.map_or("all watched", String::as_str).to_owned(),
                cpu: format!("{:.1}%", cpu.value),
                kernel: of(telemetry::SERVER_CPU_SYSTEM_PERCENT)
                    .map(|m| format!("{:.0}%", m.value)),
                per_op: of(telemetry::SERVER_CPU_PER_OP).map(|m| units::duration_short(m.value)),
                switches: of(telemetry::SERVER_CONTEXT_SWITCHES_PER_OP)
                    .map(|m| significant(m.value, 3)),
                throttled: of(telemetry::SERVER_CPU_THROTTLED_PERCENT)
                    .filter(|m| m.value > 0.0)
                    .map(|m| format!("{:.0}%", m.value)),
                memory: of(telemetry::SERVER_MEMORY_PEAK)
                    .map(|m| BinarySize(m.value as u64).to_string()),
            }
        })
        .collect()
}

/// One line per watched source (`--watch-*`): its CPU in percent of a
/// core over the measured window, per `per` (request, transaction) and
/// its peak memory.
pub(crate) fn watched(run: &Run, per: &str, out: &mut String) {
    use dyno_model::names::{label, telemetry};
    for cost in server_costs(run) {
        let mut line = format!("Server CPU  {}: {} of a core", cost.name, cost.cpu);
        if let Some(kernel) = &cost.kernel {
            let _ = write!(line, " ({kernel} in the kernel)");
        }
        if let Some(t) = &cost.per_op {
            let _ = write!(line, ", {t} per {per}");
        }
        if let Some(n) = &cost.switches {
            let _ = write!(line, ", {n} context switches per {per}");
        }
        if let Some(share) = &cost.throttled {
            let _ = write!(line, ", held back by its CPU limit {share} of the time");
        }
        if let Some(peak) = &cost.memory {
            let _ = write!(line, ", peak memory {peak}");
        }
        let _ = writeln!(out, "{line}");
    }
    if let Some(cost) = run.metric(telemetry::WATCH_CLIENT_CPU) {
        let _ = writeln!(
            out,
            "Watching    cost this client {} of CPU",
            units::duration_short(cost.value)
        );
    }
    // Each watched machine (`--watch URL`): CPU, the busiest core, the
    // disks that worked, TCP's troubles.
    for (busy, name) in each_watched(run, telemetry::TARGET_CPU_BUSY_PERCENT) {
        let mine = |metric: &'static str| watched_as(run, metric, name);
        let mut line = format!("Target      {name}: CPU {:.0}% busy", busy.value);
        if let Some(core) = mine(telemetry::TARGET_CPU_BUSIEST_CORE_PERCENT).next() {
            let _ = write!(
                line,
                " (busiest core {}: {:.0}%)",
                core.label(label::CORE).unwrap_or("?"),
                core.value
            );
        }
        for disk in mine(telemetry::TARGET_DISK_UTIL_PERCENT) {
            let _ = write!(
                line,
                ", disk {} {:.0}% busy",
                disk.label(label::DEVICE).unwrap_or("?"),
                disk.value
            );
        }
        for (metric, what) in [
            (telemetry::TARGET_TCP_RETRANSMITS, "TCP retransmits"),
            (telemetry::TARGET_LISTEN_DROPS, "listen drops"),
        ] {
            if let Some(m) = mine(metric).next().filter(|m| m.value > 0.0) {
                let _ = write!(line, ", {:.0} {what}", m.value);
            }
        }
        let _ = writeln!(out, "{line}");
    }
    postgres(run, per, out);
}

/// The run's metrics `metric` that name a watched source, each with that
/// source's name.
fn each_watched<'a>(
    run: &'a Run,
    metric: &'static str,
) -> impl Iterator<Item = (&'a dyno_model::Metric, &'a String)> + 'a {
    run.metrics
        .iter()
        .filter(move |m| m.name == metric)
        .filter_map(|m| {
            m.labels
                .get(dyno_model::names::label::WATCHED)
                .map(|name| (m, name))
        })
}

/// The run's metrics `metric` of the watched source `name`.
fn watched_as<'a>(
    run: &'a Run,
    metric: &'static str,
    name: &'a str,
) -> impl Iterator<Item = &'a dyno_model::Metric> + 'a {
    run.metrics.iter().filter(move |m| {
        m.name == metric
            && m.labels
                .get(dyno_model::names::label::WATCHED)
                .map(String::as_str)
                == Some(name)
    })
}

/// One line per PostgreSQL server watched (`--pg-stats`,
/// postgres_exporter): its commits per second, WAL per `per`, cache hits,
/// checkpoints, and where its sessions spent their time.
fn postgres(run: &Run, per: &str, out: &mut String) {
    use dyno_model::names::{label, telemetry};
    for (commits, name) in each_watched(run, telemetry::TARGET_PG_COMMITS_PER_SEC) {
        let mine = |metric: &'static str| watched_as(run, metric, name);
        let mut line = format!("PostgreSQL  {name}: {:.1} commits/s", commits.value);
        if let Some(m) = mine(telemetry::TARGET_PG_WAL_BYTES_PER_OP).next() {
            let _ = write!(line, ", WAL {} per {per}", BinarySize(m.value as u64));
        }
        if let Some(m) = mine(telemetry::TARGET_PG_CACHE_HIT_PERCENT).next() {
            let _ = write!(line, ", cache hits {:.1}%", m.value);
        }
        if let Some(m) = mine(telemetry::TARGET_PG_CHECKPOINTS).next() {
            let _ = write!(line, ", {:.0} checkpoints", m.value);
        }
        for (metric, what) in [
            (telemetry::TARGET_PG_ROLLBACKS, "rollbacks"),
            (telemetry::TARGET_PG_DEADLOCKS, "deadlocks"),
        ] {
            if let Some(m) = mine(metric).next().filter(|m| m.value > 0.0) {
                let _ = write!(line, ", {:.0} {what}", m.value);
            }
        }
        let _ = writeln!(out, "{line}");
        let mut waits: Vec<&Metric> = mine(telemetry::TARGET_PG_WAIT_PERCENT).collect();
        waits.sort_by(|a, b| b.value.total_cmp(&a.value));
        if !waits.is_empty() {
            let shown: Vec<String> = waits
                .iter()
                .take(5)
                .map(|m| format!("{} {:.0}%", m.label(label::EVENT).unwrap_or("?"), m.value))
                .collect();
            let mean = mine(telemetry::TARGET_PG_SESSIONS_MEAN)
                .next()
                .map_or(String::new(), |m| format!(" ({:.1} on average)", m.value));
            let _ = writeln!(out, "            sessions{mean}: {}", shown.join(", "));
        }
    }
}

pub(crate) fn warnings(run: &Run, out: &mut String) {
    if !run.warnings.is_empty() {
        out.push_str("\nWarnings:\n");
        for w in &run.warnings {
            let _ = writeln!(out, "  ! {} [{}]", w.message, w.code);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn history_lists_one_line_per_run() {
        let mut second = fixture::run();
        second.id = "01JD5Z9999999999999999999A".parse().unwrap();
        second.headline = None;
        second.environment.hostname = None;
        insta::assert_snapshot!(history(&[fixture::run(), second], &TimeZone::UTC));
    }

    #[test]
    fn non_time_metrics_read_as_what_they_are() {
        let mut run = fixture::run();
        let m = |name: &str, unit, direction, value| Metric::new(name, unit, direction, value);
        use Direction::{HigherIsBetter as Higher, LowerIsBetter as Lower};
        run.metrics = vec![
            m("p_value", Unit::Ratio, Lower, 0.1034),
            m("p_value", Unit::Ratio, Lower, 3.1e-6),
            m("verdict", Unit::Ratio, Higher, 0.0),
            m("verdict", Unit::Ratio, Higher, -1.0),
            m("efficiency", Unit::Ratio, Higher, 0.9434).with_label("n", "2"),
            m("int64_amdahl_parallel_fraction", Unit::Ratio, Higher, 0.995),
            m("usl_sigma", Unit::Ratio, Lower, 0.04127),
            m("usl_kappa", Unit::Ratio, Lower, 0.002498),
            m("usl_r_squared", Unit::Ratio, Higher, 0.99871),
            m("usl_bound", Unit::Count, Lower, 2.0).with_label("bound", "coherency"),
            m("requests", Unit::Count, Lower, 33314.0),
            m("connections_opened", Unit::Count, Lower, 2.0),
            m("bytes_read", Unit::Bytes, Higher, 1024.0),
            m("errors", Unit::Count, Lower, 0.0),
            m("iops", Unit::OpsPerSec, Higher, 959.5).with_label("test", "a"),
            m("iops", Unit::OpsPerSec, Higher, 3020.0).with_label("test", "b"),
            m("speedup", Unit::Ratio, Higher, 1.89),
            m("verdict", Unit::Ratio, Higher, 0.0).with_label("verdict", "too_few_runs"),
        ];
        let text = run_details(&run, &TimeZone::UTC);
        let row = |needle: &str| -> Vec<String> {
            text.lines()
                .find(|l| l.starts_with(needle))
                .unwrap_or_else(|| panic!("no {needle} in {text}"))
                .split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned)
                .collect()
        };
        let lines: Vec<Vec<String>> = text
            .lines()
            .skip_while(|l| !l.starts_with("METRIC"))
            .skip(1)
            .take(run.metrics.len())
            .map(|l| {
                l.split("  ")
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .collect();
        let cells = |i: usize| lines[i][1..].join(" | ");
        assert_eq!(cells(0), "0.10 | –");
        assert_eq!(cells(1), "3.1e-6 | –");
        assert_eq!(cells(2), "no significant difference | –");
        assert_eq!(cells(3), "slower | –");
        // A zero the label names otherwise is not "no difference".
        assert_eq!(
            lines.last().unwrap()[1..].join(" | "),
            "too few runs to test | –"
        );
        assert_eq!(cells(4), "94.3% | higher");
        assert_eq!(cells(5), "99.500% | higher");
        assert_eq!(cells(6), "0.04127 | lower");
        assert_eq!(cells(7), "0.002498 | lower");
        assert_eq!(cells(8), "0.9987 | higher");
        assert_eq!(cells(9), "coherency | –");
        assert_eq!(cells(10), "33314 | –");
        assert_eq!(cells(11), "2 | –");
        assert_eq!(cells(12), "1 KiB | –");
        assert_eq!(cells(13), "0 | lower");
        assert_eq!(cells(14), "0.960 kops/s | higher");
        assert_eq!(cells(15), "3.020 kops/s | higher");
        assert_eq!(cells(16), "1.89× | higher");
        assert_eq!(row("speedup")[1], "1.89×");
    }

    #[test]
    fn headlines_name_the_metric_in_words() {
        assert_eq!(title("int64_1t_ns"), "int64 1 thread");
        assert_eq!(title("int64_nt_ops_per_sec"), "int64 all threads rate");
        assert_eq!(title("wall_ns"), "wall time");
        assert_eq!(title("requests_per_sec"), "throughput");
        assert_eq!(title("throughput_bytes_per_sec"), "throughput");
        assert_eq!(title("best_speedup"), "best speedup");
        assert_eq!(headline(&fixture::run()), "int64 1 thread 1.250 s");
        // The fixture run with `metric` as its only metric and headline.
        let headline_of = |metric: Metric| {
            let mut run = fixture::run();
            run.headline = Some(metric.name.clone());
            run.metrics = vec![metric];
            headline(&run)
        };
        let wall = Metric::new("wall_ns", Unit::Ns, Direction::LowerIsBetter, 1.089e7);
        assert_eq!(
            headline_of(wall.with_label("command", "sleep 0.01")),
            "wall time 'sleep 0.01' 10.89 ms"
        );
        let disk = Metric::new(
            "throughput_bytes_per_sec",
            Unit::BytesPerSec,
            Direction::HigherIsBetter,
            1.42e9,
        )
        .with_label("test", "SEQ1M Q8T1")
        .with_label("op", "read");
        assert_eq!(headline_of(disk), "throughput SEQ1M Q8T1 read 1420.00 MB/s");
        let speedup = Metric::new("best_speedup", Unit::Ratio, Direction::HigherIsBetter, 5.88);
        assert_eq!(
            headline_of(speedup.with_label("n", "8")),
            "best speedup 5.88× at N=8"
        );
    }

    #[test]
    fn run_details_show_everything() {
        insta::assert_snapshot!(run_details(&fixture::run(), &TimeZone::UTC));
    }

    /// real-clients item 15: an ab-style split time (a histogram's mean
    /// over every request, reused connections' 0 ns included) says it is a
    /// mean over requests; a db run's plain `connect_ns` (the time its
    /// connections took) does not.
    #[test]
    fn split_times_in_the_metric_table_say_they_are_means_over_requests() {
        let mut h = dyno_stats::hdr::latency_histogram();
        for v in [0, 0, 0, 21_780] {
            h.record(v).unwrap();
        }
        let mut run = fixture::run();
        run.metrics = vec![
            dyno_stats::hdr::latency_metric("connect_ns", &h),
            dyno_stats::hdr::latency_metric("waiting_ns", &h),
            dyno_stats::hdr::latency_metric("processing_ns", &h),
        ];
        let text = run_details(&run, &TimeZone::UTC);
        for name in ["connect_ns", "waiting_ns", "processing_ns"] {
            assert!(
                text.contains(&format!("{name} (mean over requests)")),
                "{name} in {text}"
            );
        }
        run.metrics = vec![Metric::new(
            "connect_ns",
            Unit::Ns,
            Direction::LowerIsBetter,
            2e7,
        )];
        let text = run_details(&run, &TimeZone::UTC);
        assert!(!text.contains("mean over requests"), "{text}");
    }

    #[test]
    fn summary_is_one_table() {
        let rows = [
            SummaryRow {
                test: "int64, 1 thread".into(),
                result: "1.250 s".into(),
                uncertainty: "±2.0% (95% CI, n=3)".into(),
                rate: "80.00 Mops/s".into(),
                note: String::new(),
            },
            SummaryRow {
                test: "int64, 32 threads".into(),
                result: "1.857 s".into(),
                uncertainty: String::new(),
                rate: "861.6 Mops/s".into(),
                note: "speedup 10.77×".into(),
            },
        ];
        insta::assert_snapshot!(summary(&fixture::run(), &rows));
    }

    #[test]
    fn environment_shows_unknown_for_what_was_not_read() {
        insta::assert_snapshot!("environment_full", environment(&fixture::environment()));
        insta::assert_snapshot!("environment_empty", environment(&Environment::default()));
    }
}
