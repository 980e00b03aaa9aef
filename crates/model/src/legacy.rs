//! The declarations of metrics in records written before metrics declared
//! themselves (role, merge rule, what the samples are), and the names of
//! `dyno quick`'s line metrics saved when a prefix told the lines apart
//! ([`quick_part`]).
//!
//! Since then every engine declares each metric where it makes it, and
//! nothing reads a metric's name to learn what it is. A run saved by an
//! earlier dyno has no declarations; this module gives its metrics the ones
//! today's engines give the same metrics, by kind and name, once, when the
//! run is read. It is the only place that knows metric names this way, and
//! it only ever applies to such old records: a metric that declares its
//! role is left as it is.

use crate::names::{exec, scale, telemetry};
use crate::{Kind, Merge, Metric, Role, Samples, Unit};

/// Fills in the declarations `m` lacks, as today's engine of `kind` would
/// have declared them.
pub(crate) fn declare(kind: Kind, m: &mut Metric) {
    // The machine's clock and load were once stored as ratios: read them
    // in the units they are now stored in.
    if m.unit == Unit::Ratio {
        if m.name.starts_with(telemetry::MACHINE_CPU_MHZ_PREFIX) {
            m.unit = Unit::Mhz;
        } else if m.name == telemetry::MACHINE_LOAD_MAX {
            m.unit = Unit::Count;
        }
    }
    if m.role.is_some() {
        return;
    }
    let (role, of, merge) = classify(kind, m);
    m.role = Some(role);
    m.of = of;
    m.merge = Some(merge);
    if merge == Merge::Rate {
        m.rate_of = rate_count(kind, &m.name).map(str::to_owned);
    }
    m.samples_are = if m.histogram.is_some() {
        Some(Samples::Requests)
    } else if m.name.starts_with("timeline_") {
        Some(Samples::Seconds)
    } else if !m.samples.is_empty() {
        // Every kind that kept samples without a histogram kept one per
        // repetition: a run of a command, a repetition of a workload.
        Some(Samples::Runs)
    } else {
        None
    };
}

/// Gives a metric of one of a `dyno quick` run's lines, saved when the
/// lines' metrics were told apart by a prefix (`http_requests_per_sec`,
/// the rate of `http_responses`), the identity today's quick gives it: its
/// engine's name and the line as its part (`requests_per_sec{part=http}`,
/// the rate of `responses`, which [`crate::Run::referenced`] finds with
/// the same labels). The metrics it names ([`Metric::of`],
/// [`Metric::rate_of`]) lose the same prefix. The int64 line's names and
/// the whole run's (`machine_load_max`) start with no line's name and are
/// left as they are, as is a metric that already names its part.
pub(crate) fn quick_part(kind: Kind, m: &mut Metric) {
    use crate::names::quick::{DB, DISK, HTTP};
    if kind != Kind::Quick || m.part().is_some() {
        return;
    }
    let unprefixed = |part: &str, name: &str| {
        name.strip_prefix(part)
            .and_then(|n| n.strip_prefix('_'))
            .map(str::to_owned)
    };
    for part in [HTTP, DB, DISK] {
        let Some(name) = unprefixed(part, &m.name) else {
            continue;
        };
        m.name = name;
        for named in [&mut m.of, &mut m.rate_of].into_iter().flatten() {
            if let Some(name) = unprefixed(part, named) {
                *named = name;
            }
        }
        m.labels
            .insert(crate::names::label::PART.to_owned(), part.to_owned());
        return;
    }
}

#[cfg(test)]
#[test]
fn the_machines_clock_and_load_read_in_their_units() {
    let mut m = Metric::new(
        "machine_cpu_mhz_min",
        Unit::Ratio,
        crate::Direction::LowerIsBetter,
        2445.4,
    )
    .context();
    declare(Kind::Http, &mut m);
    assert_eq!(m.unit, Unit::Mhz);
    let mut m = Metric::new(
        "machine_load_max",
        Unit::Ratio,
        crate::Direction::LowerIsBetter,
        0.7,
    );
    declare(Kind::Http, &mut m);
    assert_eq!(m.unit, Unit::Count);
}

fn rate_count(kind: Kind, name: &str) -> Option<&'static str> {
    match (kind, name) {
        (Kind::Http, "requests_per_sec") => Some("responses"),
        (Kind::Http, "transfer_bytes_per_sec") => Some("bytes_read"),
        (Kind::Db, "transactions_per_sec") => Some("transactions"),
        _ => None,
    }
}

/// Role, the metric it is a view of, and merge rule.
fn classify(kind: Kind, m: &Metric) -> (Role, Option<String>, Merge) {
    use Role::{Context, Derived, Diagnostic, Primary};
    let name = m.name.as_str();
    let histogram = m.histogram.is_some();
    let by_unit = Merge::by_unit(m.unit);
    // Names every kind shares.
    if name.starts_with("timeline_") {
        let merge = if name == "timeline_requests_per_sec" {
            Merge::Timeline
        } else if histogram {
            Merge::Histogram
        } else {
            Merge::Recompute
        };
        return (Context, None, merge);
    }
    if name == "measured_ns" {
        return (Context, None, Merge::Window);
    }
    if matches!(m.unit, Unit::Count) || (m.unit == Unit::Bytes && !name.contains("peak")) {
        let merge = if name == "h2_server_max_concurrent_streams" {
            Merge::Min
        } else {
            Merge::Sum
        };
        return (Context, None, merge);
    }
    let hist = if histogram { Merge::Histogram } else { by_unit };
    match kind {
        Kind::Http => match name {
            "requests_per_sec" => (Primary, None, Merge::Rate),
            "transfer_bytes_per_sec" => (Derived, Some("requests_per_sec".into()), Merge::Rate),
            "latency_ns" => (Primary, None, hist),
            "requested_rate_per_sec" => (Context, None, Merge::Sum),
            "connect_ns" | "waiting_ns" | "processing_ns" | "send_lag_ns" | "max_lateness_ns" => {
                (Context, None, hist)
            }
            "h2_header_savings_percent" => (Diagnostic, None, Merge::Recompute),
            _ => (Diagnostic, None, hist),
        },
        Kind::Db => match name {
            "transactions_per_sec" => (Primary, None, Merge::Rate),
            "transactions_per_sec_with_connections" => {
                (Derived, Some("transactions_per_sec".into()), Merge::None)
            }
            "latency_ns" => (Primary, None, hist),
            "requested_transactions_per_sec" => (Context, None, Merge::Sum),
            "schedule_lag_ns" | "connect_ns" => (Context, None, hist),
            _ => (Diagnostic, None, hist),
        },
        Kind::Exec => match name {
            exec::WALL => (Primary, None, Merge::None),
            exec::SHELL_STARTUP | exec::RATIO_TO_REFERENCE | exec::P_VALUE | exec::VERDICT => {
                (Context, None, Merge::None)
            }
            _ => (Diagnostic, None, Merge::None),
        },
        Kind::Disk => match name {
            "throughput_bytes_per_sec" | "files_per_sec" => (Primary, None, by_unit),
            "iops" => (Derived, Some("throughput_bytes_per_sec".into()), by_unit),
            _ => (Diagnostic, None, hist),
        },
        Kind::Cpu | Kind::Quick => quick(name, m.unit, hist),
        Kind::Scale => match name {
            scale::TIME | scale::THROUGHPUT | exec::WALL => (Primary, None, Merge::None),
            scale::USL_BOUND => (Context, None, Merge::None),
            scale::SPEEDUP | scale::EFFICIENCY => (Derived, Some(scale::TIME.into()), Merge::None),
            _ => (Diagnostic, None, Merge::None),
        },
        Kind::Compare => (Context, None, Merge::None),
        Kind::Figures => (Primary, None, Merge::None),
    }
}

/// `dyno quick` and the CPU workload: `int64_1t_ns` with its reciprocal
/// `int64_1t_ops_per_sec`, the scaling figures derived from them, and the
/// http and disk lines under the prefixes they were saved with (which
/// [`quick_part`] turns into their part afterwards).
fn quick(name: &str, unit: Unit, hist: Merge) -> (Role, Option<String>, Merge) {
    use crate::names::quick::{INT64_1T, INT64_PREFIX};
    use Role::{Context, Derived, Diagnostic, Primary, Reciprocal};
    if name.ends_with("_measured_ns") || name.ends_with("client_cpu_percent") {
        return (Context, None, Merge::None);
    }
    if name.starts_with(INT64_PREFIX) {
        if let Some(prefix) = name.strip_suffix("_ops_per_sec") {
            return (Reciprocal, Some(format!("{prefix}_ns")), Merge::None);
        }
        if name.ends_with("_ns") {
            return (Primary, None, Merge::None);
        }
        // The speedup, efficiency and parallel fraction of 1 against N
        // threads: views of the times they are computed from.
        return (Derived, Some(INT64_1T.into()), Merge::None);
    }
    match unit {
        Unit::RequestsPerSec | Unit::BytesPerSec => (Primary, None, hist),
        _ => (Diagnostic, None, hist),
    }
}

#[cfg(test)]
mod tests {
    use crate::{Merge, Role, Run, Samples};

    /// A run as dyno wrote it before metrics declared themselves.
    fn old_run(kind: &str, metrics: serde_json::Value) -> Run {
        serde_json::from_value(serde_json::json!({
            "schema_version": 1,
            "id": "01M8302SN3EDBRQ9G8M6AWXW4F",
            "kind": kind,
            "description": "old",
            "started_at": "2026-11-20T10:00:00Z",
            "duration_ns": 1,
            "tags": [],
            "environment": {},
            "settings": {},
            "metrics": metrics,
            "warnings": []
        }))
        .unwrap()
    }

    #[test]
    fn runs_saved_before_declarations_read_with_todays_declarations() {
        let run = old_run(
            "http",
            serde_json::json!([
                {"name": "requests_per_sec", "unit": "requests_per_sec", "direction": "higher_is_better", "value": 10.0},
                {"name": "transfer_bytes_per_sec", "unit": "bytes_per_sec", "direction": "higher_is_better", "value": 10.0},
                {"name": "responses", "unit": "count", "direction": "lower_is_better", "value": 10.0},
                {"name": "client_cpu_percent", "unit": "percent", "direction": "lower_is_better", "value": 10.0},
                {"name": "connect_ns", "unit": "ns", "direction": "lower_is_better", "value": 10.0},
                {"name": "measured_ns", "unit": "ns", "direction": "lower_is_better", "value": 10.0},
                {"name": "timeline_requests_per_sec", "unit": "requests_per_sec", "direction": "higher_is_better", "value": 10.0, "samples": [10.0]}
            ]),
        );
        let get = |name: &str| run.metric(name).unwrap();
        let rps = get("requests_per_sec");
        assert_eq!(
            (rps.role(), rps.merge(), rps.rate_of.as_deref()),
            (Role::Primary, Merge::Rate, Some("responses"))
        );
        let transfer = get("transfer_bytes_per_sec");
        assert_eq!(transfer.role(), Role::Derived);
        assert_eq!(transfer.of.as_deref(), Some("requests_per_sec"));
        assert_eq!(get("responses").role(), Role::Context);
        assert_eq!(get("client_cpu_percent").role(), Role::Diagnostic);
        assert_eq!(get("connect_ns").role(), Role::Context);
        assert_eq!(get("measured_ns").merge(), Merge::Window);
        let t = get("timeline_requests_per_sec");
        assert_eq!(
            (t.role(), t.merge(), t.samples_are),
            (Role::Context, Merge::Timeline, Some(Samples::Seconds))
        );

        let exec = old_run(
            "exec",
            serde_json::json!([
                {"name": "wall_ns", "unit": "ns", "direction": "lower_is_better", "value": 2.0, "samples": [1.0, 3.0]},
                {"name": "cpu_percent", "unit": "percent", "direction": "lower_is_better", "value": 5.0}
            ]),
        );
        let wall = exec.metric("wall_ns").unwrap();
        assert_eq!(
            (wall.role(), wall.samples_are),
            (Role::Primary, Some(Samples::Runs))
        );
        assert_eq!(exec.metric("cpu_percent").unwrap().role(), Role::Diagnostic);

        let quick = old_run(
            "quick",
            serde_json::json!([
                {"name": "int64_1t_ns", "unit": "ns", "direction": "lower_is_better", "value": 2.0, "samples": [1.0, 3.0]},
                {"name": "int64_1t_ops_per_sec", "unit": "ops_per_sec", "direction": "higher_is_better", "value": 2.0, "samples": [1.0, 3.0]},
                {"name": "int64_speedup", "unit": "ratio", "direction": "higher_is_better", "value": 2.0}
            ]),
        );
        let ops = quick.metric("int64_1t_ops_per_sec").unwrap();
        assert_eq!(
            (ops.role(), ops.of.as_deref()),
            (Role::Reciprocal, Some("int64_1t_ns"))
        );
        assert_eq!(quick.metric("int64_speedup").unwrap().role(), Role::Derived);
    }

    #[test]
    fn a_declared_metric_is_read_as_it_declared() {
        let run = old_run(
            "http",
            serde_json::json!([
                {"name": "requests_per_sec", "unit": "requests_per_sec", "direction": "higher_is_better", "value": 10.0, "role": "diagnostic", "merge": "max"}
            ]),
        );
        let m = run.metric("requests_per_sec").unwrap();
        assert_eq!((m.role(), m.merge()), (Role::Diagnostic, Merge::Max));
        assert_eq!(m.rate_of, None);
        // And it writes them back.
        let json = serde_json::to_value(&run).unwrap();
        assert_eq!(json["metrics"][0]["role"], "diagnostic");
    }

    #[test]
    fn a_quick_run_saved_with_prefixed_lines_reads_with_parts() {
        let run = old_run(
            "quick",
            serde_json::json!([
                {"name": "int64_1t_ns", "unit": "ns", "direction": "lower_is_better", "value": 2.0, "role": "primary"},
                {"name": "http_requests_per_sec", "unit": "requests_per_sec", "direction": "higher_is_better", "value": 900.0, "role": "primary", "merge": "rate", "rate_of": "http_responses"},
                {"name": "http_transfer_bytes_per_sec", "unit": "bytes_per_sec", "direction": "higher_is_better", "value": 9.0, "role": "derived", "of": "http_requests_per_sec", "merge": "rate", "rate_of": "http_bytes_read"},
                {"name": "http_responses", "unit": "count", "direction": "lower_is_better", "value": 900.0, "role": "context", "merge": "sum"},
                {"name": "http_latency_ns", "unit": "ns", "direction": "lower_is_better", "value": 1.0, "role": "primary"},
                {"name": "db_latency_ns", "unit": "ns", "direction": "lower_is_better", "value": 7.0, "role": "primary"},
                {"name": "db_transactions_per_sec", "unit": "ops_per_sec", "direction": "higher_is_better", "value": 50.0, "role": "primary", "merge": "rate", "rate_of": "db_transactions"},
                {"name": "db_transactions", "unit": "count", "direction": "lower_is_better", "value": 50.0, "role": "context", "merge": "sum"},
                {"name": "db_server_cpu_percent", "labels": {"watched": "postgres"}, "unit": "percent", "direction": "lower_is_better", "value": 30.0, "role": "diagnostic"},
                {"name": "disk_iops", "labels": {"op": "read", "test": "RND4K Q1T1"}, "unit": "ops_per_sec", "direction": "higher_is_better", "value": 3.0, "role": "derived", "of": "disk_throughput_bytes_per_sec"},
                {"name": "disk_throughput_bytes_per_sec", "labels": {"op": "read", "test": "RND4K Q1T1"}, "unit": "bytes_per_sec", "direction": "higher_is_better", "value": 12288.0, "role": "primary"},
                {"name": "machine_load_max", "unit": "count", "direction": "lower_is_better", "value": 1.0, "role": "context"}
            ]),
        );
        let names: Vec<String> = run.metrics.iter().map(|m| m.display_name()).collect();
        assert_eq!(
            names,
            [
                "int64_1t_ns",
                "requests_per_sec{part=http}",
                "transfer_bytes_per_sec{part=http}",
                "responses{part=http}",
                "latency_ns{part=http}",
                "latency_ns{part=db}",
                "transactions_per_sec{part=db}",
                "transactions{part=db}",
                "server_cpu_percent{part=db, watched=postgres}",
                "iops{op=read, part=disk, test=RND4K Q1T1}",
                "throughput_bytes_per_sec{op=read, part=disk, test=RND4K Q1T1}",
                "machine_load_max",
            ]
        );
        // The two latencies are told apart by their part.
        assert_eq!(
            run.metric_of(Some("http"), "latency_ns").unwrap().value,
            1.0
        );
        assert_eq!(run.metric_of(Some("db"), "latency_ns").unwrap().value, 7.0);
        assert_eq!(run.metric_of(None, "latency_ns"), None);
        assert_eq!(run.metric_of(None, "int64_1t_ns").unwrap().value, 2.0);
        // What a metric names is its own part's.
        let rps = run.metric_of(Some("http"), "requests_per_sec").unwrap();
        assert_eq!(rps.rate_of.as_deref(), Some("responses"));
        assert_eq!(run.referenced(rps, "responses").unwrap().value, 900.0);
        let tps = run.metric_of(Some("db"), "transactions_per_sec").unwrap();
        assert_eq!(tps.rate_of.as_deref(), Some("transactions"));
        assert_eq!(run.referenced(tps, "transactions").unwrap().value, 50.0);
        assert_eq!(run.referenced(tps, "responses"), None);
        let transfer = run
            .metric_of(Some("http"), "transfer_bytes_per_sec")
            .unwrap();
        assert_eq!(
            (transfer.of.as_deref(), transfer.rate_of.as_deref()),
            (Some("requests_per_sec"), Some("bytes_read"))
        );
        let iops = run.metric_of(Some("disk"), "iops").unwrap();
        assert_eq!(
            run.referenced(iops, iops.of.as_deref().unwrap())
                .unwrap()
                .value,
            12288.0
        );
        // Read again from what it writes, it stays as it is.
        let again: Run = serde_json::from_value(serde_json::to_value(&run).unwrap()).unwrap();
        assert_eq!(again, run);
    }

    #[test]
    fn a_quick_run_saved_before_declarations_and_parts_reads_as_todays() {
        let run = old_run(
            "quick",
            serde_json::json!([
                {"name": "http_requests_per_sec", "unit": "requests_per_sec", "direction": "higher_is_better", "value": 900.0},
                {"name": "http_measured_ns", "unit": "ns", "direction": "lower_is_better", "value": 1e9},
                {"name": "http_client_cpu_percent", "unit": "percent", "direction": "lower_is_better", "value": 40.0}
            ]),
        );
        let get = |name: &str| run.metric_of(Some("http"), name).unwrap();
        assert_eq!(get("requests_per_sec").role(), Role::Primary);
        // Declared as its old name said, before it lost its prefix.
        assert_eq!(get("measured_ns").role(), Role::Context);
        assert_eq!(get("client_cpu_percent").role(), Role::Context);
    }

    #[test]
    fn only_quick_runs_have_their_prefixes_read_as_parts() {
        let run = old_run(
            "http",
            serde_json::json!([
                {"name": "http_thing_ns", "unit": "ns", "direction": "lower_is_better", "value": 1.0, "role": "diagnostic"}
            ]),
        );
        assert_eq!(run.metrics[0].display_name(), "http_thing_ns");
        let new = old_run(
            "quick",
            serde_json::json!([
                {"name": "disk_latency_ns", "labels": {"part": "http"}, "unit": "ns", "direction": "lower_is_better", "value": 1.0, "role": "diagnostic"}
            ]),
        );
        assert_eq!(
            new.metrics[0].display_name(),
            "disk_latency_ns{part=http}",
            "a metric that names its part is today's, whatever its name"
        );
    }
}
