//! The view of a `dyno db run`: pgbench's figures (tps with and without the
//! connections' time, failures, retries) with the latency percentiles
//! pgbench leaves to a log file.

use std::fmt::Write as _;

use dyno_model::Run;
use dyno_model::record::{DbRecord, LoadModel};

use crate::format::counted;
use crate::http::{count, histogram, latency_table, lost_mark, under_way, value};
use dyno_model::units;

/// dyno's report of a database run.
pub fn db_report(run: &Run) -> String {
    let mut out = String::new();
    let rec: DbRecord = run.record().unwrap_or_default();
    let text = |text: &str| if text.is_empty() { "?" } else { text }.to_owned();
    let _ = writeln!(
        out,
        "Target      {} (PostgreSQL {})",
        text(&rec.target),
        text(&rec.observed.server_version)
    );
    let length = match (rec.transactions, rec.duration_ns) {
        (Some(n), _) => format!("{} per client", counted(n, "transaction")),
        (None, Some(ns)) => format!("{} s", ns as f64 / 1e9),
        _ => "?".into(),
    };
    let length = match rec.warmup_ns {
        Some(ns) => format!("{length} after a {} s warm-up", ns as f64 / 1e9),
        None => length,
    };
    let scripts: Vec<String> = rec
        .scripts
        .iter()
        .map(|w| format!("{}@{}", w.name, w.weight))
        .collect();
    let max_tries = match rec.max_tries {
        0 => "no limit".to_owned(),
        n => n.to_string(),
    };
    let mut flags = String::new();
    if rec.reconnect {
        flags.push_str(", a connection per transaction (-C)");
    }
    if rec.pipeline {
        flags.push_str(", pipeline");
    }
    let _ = writeln!(
        out,
        "Settings    {} at scale {}, {} on {}, {length}, protocol {}, max tries {max_tries}{flags}",
        scripts.join(" + "),
        rec.observed.scale.unwrap_or(0),
        counted(rec.clients, "client"),
        counted(rec.threads, "thread"),
        text(&rec.protocol),
    );
    let server = &rec.observed.server_settings;
    if !server.is_empty() {
        let pairs: Vec<String> = server.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(out, "Server      {}", pairs.join(", "));
    }
    let open = rec.model == LoadModel::Open;
    let limit = rec.latency_limit_ns.map(|ns| ns as f64);
    let mut model = if open {
        format!(
            "open: {} tps requested at random due times (a Poisson process); latency counts from each due time",
            rec.rate_per_sec.unwrap_or(0.0)
        )
    } else {
        "closed: each client starts its next transaction when its last one ends".to_owned()
    };
    if rec.reconnect {
        model.push_str("; a new connection for every transaction");
    }
    if rec.pipeline {
        model.push_str("; consecutive statements pipelined");
    }
    let _ = writeln!(out, "Model       {model}");
    match &rec.observed.clean_up {
        steps if !steps.is_empty() => {
            let _ = writeln!(
                out,
                "Clean-up    before the run, as pgbench's: {} (-n skips it)",
                steps.join(", ")
            );
        }
        _ if !rec.vacuum => {
            let _ = writeln!(out, "Clean-up    none (-n)");
        }
        _ => {}
    }
    out.push('\n');
    if let Some(plan) = &rec.rate_plan {
        crate::stages::stages_section(&mut out, plan, "tps", "LAG P99");
        out.push_str("The figures below are the whole run's.\n\n");
    }
    if let Some(cap) = &rec.capacity {
        crate::capacity::capacity_section(&mut out, cap, "tps");
        if cap.sweep.is_some() {
            let _ = writeln!(
                out,
                "The figures below are the step with {}.\n",
                crate::format::counted(rec.clients, "client")
            );
        } else {
            let _ = writeln!(
                out,
                "The figures below are the step at {} tps.\n",
                rec.rate_per_sec.unwrap_or(0.0)
            );
        }
    }
    let committed = count(run, "transactions");
    let failed = count(run, "failed_transactions");
    // pgbench's two lines: the transactions retried, and the retries.
    let retried = match run.metric("retried_transactions") {
        Some(m) => format!(
            "{} retried ({} in all)",
            counted(m.value.round() as u64, "transaction"),
            match count(run, "retries") {
                1 => "1 retry".to_owned(),
                n => format!("{n} retries"),
            },
        ),
        None => format!("{} retries", count(run, "retries")),
    };
    let _ = writeln!(
        out,
        "Transactions {committed} committed in {:.2} s, {failed} failed, {retried}{}",
        value(run, "measured_ns") / 1e9,
        under_way(count(run, "unfinished_transactions")),
    );
    if run
        .metric("transactions_per_sec_with_connections")
        .is_none()
    {
        // A merged run: each segment connected on its own, so no window
        // with the connections is the whole run's.
        let _ = writeln!(
            out,
            "tps          {:.1} without the connections' time (each segment connected on its own){}",
            value(run, "transactions_per_sec"),
            lost_mark(run),
        );
    } else if rec.reconnect {
        let _ = writeln!(
            out,
            "tps          {:.1} including reconnection times, {:.1} with the first connections' too ({:.0} ms to connect){}",
            value(run, "transactions_per_sec"),
            value(run, "transactions_per_sec_with_connections"),
            value(run, "connect_ns") / 1e6,
            lost_mark(run),
        );
    } else {
        let _ = writeln!(
            out,
            "tps          {:.1} without the connections' time, {:.1} with them ({:.0} ms to connect){}",
            value(run, "transactions_per_sec"),
            value(run, "transactions_per_sec_with_connections"),
            value(run, "connect_ns") / 1e6,
            lost_mark(run),
        );
    }
    if open {
        let mut line = format!(
            "Rate         requested {:.1} tps, achieved {:.1}",
            value(run, "requested_transactions_per_sec"),
            value(run, "transactions_per_sec"),
        );
        if limit.is_some() {
            // pgbench's share: of every transaction the schedule gave.
            let skipped = count(run, "skipped_transactions");
            let _ = write!(
                line,
                "; {skipped} skipped ({}, later than the limit before they began)",
                percent(skipped, committed + failed + skipped),
            );
        }
        let _ = writeln!(out, "{line}");
    }
    if let Some(limit) = limit {
        let late = count(run, "late_transactions");
        let _ = writeln!(
            out,
            "Late         {late} of the {committed} committed transactions ({}) took longer than {}",
            percent(late, committed),
            units::duration(limit),
        );
    }
    out.push('\n');
    let mut rows = Vec::new();
    if let Some(h) = histogram(run, "latency_ns") {
        rows.push((if open { "corrected" } else { "transaction" }, h));
    }
    for (label, name) in [
        ("uncorrected", "latency_uncorrected_ns"),
        ("schedule lag", "schedule_lag_ns"),
        ("connect", "reconnect_ns"),
    ] {
        if let Some(h) = histogram(run, name) {
            rows.push((label, h));
        }
    }
    latency_table(&mut out, &rows);
    per_command(run, &mut out);
    per_script(run, &rec, committed, &mut out);
    let failures: Vec<String> = run
        .metrics
        .iter()
        .filter(|m| m.name == "failed_transactions")
        .filter_map(|m| Some(format!("{}: {}", m.labels.get("sqlstate")?, m.value)))
        .collect();
    if !failures.is_empty() {
        let _ = writeln!(out, "Failures    by SQLSTATE: {}", failures.join(", "));
    }
    for line in &rec.observed.aborted {
        let _ = writeln!(out, "Aborted     {line}");
    }
    let mut cpu = format!(
        "Client CPU  {:.0}% of {}",
        value(run, "client_cpu_percent"),
        counted(rec.threads, "thread"),
    );
    // Nothing committed, no cost per transaction.
    if committed > 0
        && let Some(m) = run.metric("client_cpu_per_transaction_ns")
    {
        let _ = write!(cpu, ", {} per transaction", units::duration_short(m.value));
    }
    let _ = writeln!(out, "{cpu}");
    crate::text::watched(run, "transaction", &mut out);
    crate::text::warnings(run, &mut out);
    out
}

/// `part` of `whole` in percent, as pgbench prints it (three decimals).
fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "–".to_owned()
    } else {
        format!("{:.3}%", 100.0 * part as f64 / whole as f64)
    }
}

/// With several scripts, each one's section as pgbench prints them: its
/// weight, its committed transactions and their share, its tps and its
/// latency.
fn per_script(run: &Run, rec: &DbRecord, committed: u64, out: &mut String) {
    fn scripted<'a>(
        run: &'a Run,
        name: &'static str,
    ) -> impl Iterator<Item = (&'a str, &'a dyno_model::Metric)> + 'a {
        run.metrics
            .iter()
            .filter(move |m| m.name == name)
            .filter_map(|m| Some((m.labels.get("script")?.as_str(), m)))
    }
    let weights: Vec<(String, u64)> = rec
        .scripts
        .iter()
        .map(|w| (w.name.clone(), w.weight))
        .collect();
    let total_weight: u64 = weights.iter().map(|(_, w)| w).sum();
    let mut rows = Vec::new();
    for (name, m) in scripted(run, "transactions") {
        let n = m.value.round() as u64;
        let weight = weights
            .iter()
            .find(|(w, _)| w == name)
            .map_or(String::new(), |(_, w)| {
                format!(
                    ", weight {w} ({:.1}%)",
                    100.0 * *w as f64 / total_weight.max(1) as f64
                )
            });
        let tps = scripted(run, "transactions_per_sec")
            .find(|(s, _)| *s == name)
            .map_or(String::new(), |(_, m)| format!(", {:.1} tps", m.value));
        let _ = writeln!(
            out,
            "Script {name}{weight}: {n} committed ({}){tps}",
            percent(n, committed)
        );
        if let Some(h) = scripted(run, "latency_ns")
            .find(|(s, _)| *s == name)
            .and_then(|(_, m)| m.histogram.as_ref())
            .and_then(|h| dyno_stats::hdr::from_model(h).ok())
        {
            rows.push((name, h));
        }
    }
    if !rows.is_empty() {
        latency_table(out, &rows);
    }
}

/// `-r`'s table: each script's commands with their latency percentiles.
fn per_command(run: &Run, out: &mut String) {
    let mut script = None;
    for m in run
        .metrics
        .iter()
        .filter(|m| m.name == "statement_latency_ns")
    {
        let Some(h) = m
            .histogram
            .as_ref()
            .and_then(|h| dyno_stats::hdr::from_model(h).ok())
        else {
            continue;
        };
        let name = m.labels.get("script").map_or("?", String::as_str);
        if script != Some(name) {
            if script.is_some() {
                out.push('\n');
            }
            script = Some(name);
            let _ = writeln!(
                out,
                "Per command of {name}\n{:>6}{:>10}{:>10}{:>10}{:>10}  command",
                "line", "p50", "p99", "max", "mean"
            );
        }
        let cell = |ns: f64| {
            if h.is_empty() {
                "–".to_owned()
            } else {
                units::duration_short(ns)
            }
        };
        let _ = writeln!(
            out,
            "{:>6}{:>10}{:>10}{:>10}{:>10}  {}",
            m.labels.get("line").map_or("?", String::as_str),
            cell(dyno_stats::hdr::value_at_percentile(&h, 50.0) as f64),
            cell(dyno_stats::hdr::value_at_percentile(&h, 99.0) as f64),
            cell(h.max() as f64),
            cell(h.mean()),
            m.labels.get("command").map_or("?", String::as_str),
        );
    }
    if script.is_some() {
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::{Direction, Kind, Metric, Unit};
    use dyno_stats::hdr;

    fn distribution(name: &str, values_ns: &[u64]) -> Metric {
        let mut h = hdr::latency_histogram();
        for &v in values_ns {
            h.record(v).unwrap();
        }
        let mut m = Metric::new(name, Unit::Ns, Direction::LowerIsBetter, h.mean());
        m.histogram = Some(hdr::to_model(&h));
        m
    }

    fn figure(name: &str, unit: Unit, value: f64) -> Metric {
        Metric::new(name, unit, Direction::LowerIsBetter, value)
    }

    /// 1000 transactions of tpcb-like in 2 s on 4 clients, 3 of them failed
    /// by serialization (40001) after 5 retries.
    fn db_run(settings: serde_json::Value) -> Run {
        let mut run = Run::new(Kind::Db, "tpcb-like on bench@db1:5432/bench, -c 4 -j 2");
        run.environment = crate::fixture::environment();
        let mut base = serde_json::json!({
            "target": "bench@db1:5432/bench",
            "server_version": "15.18",
            "server_settings": {"fsync": "on", "shared_buffers": "128MB"},
            "scripts": [{"name": "tpcb-like", "weight": 1}],
            "scale": 10, "clients": 4, "threads": 2,
            "transactions": null, "duration_ns": 2_000_000_000u64,
            "protocol": "prepared", "model": "closed", "max_tries": 5, "seed": 7,
            "aborted": [],
        });
        for (k, v) in settings.as_object().unwrap() {
            base[k] = v.clone();
        }
        run.settings = base;
        let latency: Vec<u64> = (1..=1000).map(|i| i * 10_000).collect();
        let mut failed = figure("failed_transactions", Unit::Count, 3.0);
        failed.labels.insert("sqlstate".into(), "40001".into());
        run.metrics = vec![
            figure("transactions_per_sec", Unit::OpsPerSec, 500.0),
            figure(
                "transactions_per_sec_with_connections",
                Unit::OpsPerSec,
                495.0,
            ),
            distribution("latency_ns", &latency),
            figure("transactions", Unit::Count, 1000.0),
            figure("failed_transactions", Unit::Count, 3.0),
            failed,
            figure("retries", Unit::Count, 5.0),
            figure("connect_ns", Unit::Ns, 20e6),
            figure("measured_ns", Unit::Ns, 2e9),
            figure("client_cpu_percent", Unit::Percent, 12.0),
            figure("client_cpu_per_transaction_ns", Unit::Ns, 48_000.0),
        ];
        run
    }

    #[test]
    fn a_closed_run_says_so_and_shows_its_failures_by_sqlstate() {
        let text = db_report(&db_run(serde_json::json!({})));
        assert!(text.contains("Model       closed"), "{text}");
        assert!(!text.contains("Rate "), "{text}");
        insta::assert_snapshot!(text);
    }

    #[test]
    fn an_open_run_shows_the_rate_the_lag_the_late_and_each_command() {
        let mut run = db_run(serde_json::json!({
            "model": "open", "rate_per_sec": 500.0, "latency_limit_ns": 5_000_000u64,
        }));
        let lag: Vec<u64> = (1..=1000).map(|i| i * 100).collect();
        run.metrics.extend([
            figure("requested_transactions_per_sec", Unit::OpsPerSec, 500.0),
            distribution("latency_uncorrected_ns", &[9_000, 12_000]),
            distribution("schedule_lag_ns", &lag),
            figure("late_transactions", Unit::Count, 500.0),
            figure("skipped_transactions", Unit::Count, 2.0),
        ]);
        for (line, command, ns) in [
            ("1", "\\set aid", 500u64),
            (
                "5",
                "SELECT abalance FROM pgbench_accounts WHERE aid = :aid",
                80_000,
            ),
        ] {
            let mut m = distribution("statement_latency_ns", &[ns, ns * 2]);
            m.labels.insert("script".into(), "select-only".into());
            m.labels.insert("line".into(), line.into());
            m.labels.insert("command".into(), command.into());
            run.metrics.push(m);
        }
        let text = db_report(&run);
        assert!(text.contains("Model       open: 500 tps"), "{text}");
        // pgbench's percentages: skipped of all the schedule gave (1000
        // committed, 3 failed, 2 skipped), late of the committed.
        assert!(
            text.contains("requested 500.0 tps, achieved 500.0; 2 skipped (0.199%,"),
            "{text}"
        );
        assert!(
            text.contains("Late         500 of the 1000 committed transactions (50.000%)"),
            "{text}"
        );
        assert!(text.contains("schedule lag"), "{text}");
        assert!(text.contains("Per command of select-only"), "{text}");
        insta::assert_snapshot!(text);
    }
}
