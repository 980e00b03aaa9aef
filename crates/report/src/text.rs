//! Human views: the history list, one run in full, and the machine.

use std::fmt::Write as _;

use comfy_table::{Cell, CellAlignment, ContentArrangement, Table, presets};
use dyno_model::size::BinarySize;
use dyno_model::{Direction, Environment, Run};
use jiff::Timestamp;
use jiff::tz::TimeZone;

use crate::format::{format_duration_ns, format_interval, format_value};

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

/// The headline figure of a run, as `dyno history` shows it.
fn headline(run: &Run) -> String {
    run.headline_metric()
        .map(|m| format!("{} {}", m.name, format_value(m.value, m.unit)))
        .unwrap_or_default()
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
    let mut out = String::new();
    let _ = writeln!(out, "Run {} ({}): {}", run.id, run.kind, run.description);
    let _ = writeln!(
        out,
        "Started {}, took {}",
        when(run.started_at, tz),
        format_duration_ns(run.duration_ns as f64)
    );
    if !run.tags.is_empty() {
        let _ = writeln!(out, "Tags: {}", run.tags.join(", "));
    }
    let _ = writeln!(out, "Host: {}", machine_line(&run.environment));
    out.push('\n');

    let mut t = table(&["METRIC", "VALUE", "UNCERTAINTY", "BETTER"]);
    for m in &run.metrics {
        t.add_row(vec![
            Cell::new(m.display_name()),
            Cell::new(format_value(m.value, m.unit)).set_alignment(CellAlignment::Right),
            Cell::new(format_interval(m).unwrap_or_default()),
            Cell::new(match m.direction {
                Direction::HigherIsBetter => "higher",
                Direction::LowerIsBetter => "lower",
            }),
        ]);
    }
    out.push_str(&render(&t));

    warnings(run, &mut out);
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
pub struct SummaryRow {
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
pub fn summary(run: &Run, rows: &[SummaryRow]) -> String {
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
    fn run_details_show_everything() {
        insta::assert_snapshot!(run_details(&fixture::run(), &TimeZone::UTC));
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
