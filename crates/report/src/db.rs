//! The view of a `dyno db run`: pgbench's figures (tps with and without the
//! connections' time, failures, retries) with the latency percentiles
//! pgbench leaves to a log file.

use std::fmt::Write as _;

use dyno_model::Run;
use dyno_model::names::{common, db, label};
use dyno_model::record::{DbRecord, LoadModel};

use crate::format::counted;
use crate::http::{count, histogram, latency_table, lost_mark, under_way, value};
use dyno_model::units;

/// dyno's report of a database run.
pub fn db_report(run: &Run) -> String {
    let mut out = String::new();
    let rec: DbRecord = run.record().unwrap_or_default();
    settings_section(&mut out, &rec);
    model_section(&mut out, &rec);
    out.push('\n');
    plan_and_search_section(&mut out, &rec);
    let (committed, failed) = transactions_section(&mut out, run, &rec);
    rate_and_late_section(&mut out, run, &rec, committed, failed);
    out.push('\n');
    latency_section(&mut out, run, &rec);
    per_command(run, &mut out);
    per_script(run, &rec, committed, &mut out);
    failures_and_cpu_section(&mut out, run, &rec, committed);
    crate::text::watched(run, "transaction", &mut out);
    crate::text::warnings(run, &mut out);
    out
}

/// What was run where: the target, the scripts and their settings, and
/// the server's settings that decide what a run measures.
fn settings_section(out: &mut String, rec: &DbRecord) {
    let _ = writeln!(
        out,
        "Target      {} (PostgreSQL {})",
        or_unknown(&rec.target),
        or_unknown(&rec.observed.server_version)
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
        or_unknown(&rec.protocol),
    );
    let server = &rec.observed.server_settings;
    if !server.is_empty() {
        let pairs: Vec<String> = server.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(out, "Server      {}", pairs.join(", "));
    }
}

/// A text setting, `?` where the record has none.
fn or_unknown(text: &str) -> &str {
    if text.is_empty() { "?" } else { text }
}

/// How the load was made (open or closed, reconnecting, pipelined) and
/// the clean-up before it.
fn model_section(out: &mut String, rec: &DbRecord) {
    let mut model = if rec.model == LoadModel::Open {
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
}

/// A rate plan's stages and a capacity search's steps, each saying which
/// part of the run the figures below are.
fn plan_and_search_section(out: &mut String, rec: &DbRecord) {
    if let Some(plan) = &rec.rate_plan {
        crate::stages::stages_section(out, plan, "tps", "LAG P99");
        out.push_str("The figures below are the whole run's.\n\n");
    }
    if let Some(cap) = &rec.capacity {
        crate::capacity::capacity_section(out, cap, "tps");
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
}

/// pgbench's counts and its tps lines; the committed and the failed
/// transactions, which the sections after it share out.
fn transactions_section(out: &mut String, run: &Run, rec: &DbRecord) -> (u64, u64) {
    let committed = count(run, db::TRANSACTIONS);
    let failed = count(run, db::FAILED_TRANSACTIONS);
    // pgbench's two lines: the transactions retried, and the retries.
    let retried = match run.metric(db::RETRIED_TRANSACTIONS) {
        Some(m) => format!(
            "{} retried ({} in all)",
            counted(m.value.round() as u64, "transaction"),
            match count(run, db::RETRIES) {
                1 => "1 retry".to_owned(),
                n => format!("{n} retries"),
            },
        ),
        None => format!("{} retries", count(run, db::RETRIES)),
    };
    let _ = writeln!(
        out,
        "Transactions {committed} committed in {:.2} s, {failed} failed, {retried}{}",
        value(run, common::MEASURED) / 1e9,
        under_way(count(run, db::UNFINISHED_TRANSACTIONS)),
    );
    if run
        .metric(db::TRANSACTIONS_PER_SEC_WITH_CONNECTIONS)
        .is_none()
    {
        // A merged run: each segment connected on its own, so no window
        // with the connections is the whole run's.
        let _ = writeln!(
            out,
            "tps          {:.1} without the connections' time (each segment connected on its own){}",
            value(run, db::TRANSACTIONS_PER_SEC),
            lost_mark(run),
        );
    } else {
        let (without, with) = if rec.reconnect {
            (
                "including reconnection times",
                "with the first connections' too",
            )
        } else {
            ("without the connections' time", "with them")
        };
        let _ = writeln!(
            out,
            "tps          {:.1} {without}, {:.1} {with} ({:.0} ms to connect){}",
            value(run, db::TRANSACTIONS_PER_SEC),
            value(run, db::TRANSACTIONS_PER_SEC_WITH_CONNECTIONS),
            value(run, db::CONNECT) / 1e6,
            lost_mark(run),
        );
    }
    (committed, failed)
}

/// The open model's rate, asked and achieved, with what was skipped; and
/// the transactions slower than the latency limit.
fn rate_and_late_section(out: &mut String, run: &Run, rec: &DbRecord, committed: u64, failed: u64) {
    let limit = rec.latency_limit_ns.map(|ns| ns as f64);
    if rec.model == LoadModel::Open {
        let mut line = format!(
            "Rate         requested {:.1} tps, achieved {:.1}",
            value(run, db::REQUESTED_TRANSACTIONS_PER_SEC),
            value(run, db::TRANSACTIONS_PER_SEC),
        );
        if limit.is_some() {
            // pgbench's share: of every transaction the schedule gave.
            let skipped = count(run, db::SKIPPED_TRANSACTIONS);
            let _ = write!(
                line,
                "; {skipped} skipped ({}, later than the limit before they began)",
                percent(skipped, committed + failed + skipped),
            );
        }
        let _ = writeln!(out, "{line}");
    }
    if let Some(limit) = limit {
        let late = count(run, db::LATE_TRANSACTIONS);
        let _ = writeln!(
            out,
            "Late         {late} of the {committed} committed transactions ({}) took longer than {}",
            percent(late, committed),
            units::duration(limit),
        );
    }
}

/// The latency table: each transaction's (from its due time in the open
/// model), and the uncorrected, the schedule lag and `-C`'s connections
/// where the run has them.
fn latency_section(out: &mut String, run: &Run, rec: &DbRecord) {
    let mut rows = Vec::new();
    if let Some(h) = histogram(run, common::LATENCY) {
        let open = rec.model == LoadModel::Open;
        rows.push((if open { "corrected" } else { "transaction" }, h));
    }
    for (label, name) in [
        ("uncorrected", common::LATENCY_UNCORRECTED),
        ("schedule lag", db::SCHEDULE_LAG),
        ("connect", db::RECONNECT),
    ] {
        if let Some(h) = histogram(run, name) {
            rows.push((label, h));
        }
    }
    latency_table(out, &rows);
}

/// The failures by SQLSTATE, the clients aborted, and the client's CPU
/// (per transaction when one committed).
fn failures_and_cpu_section(out: &mut String, run: &Run, rec: &DbRecord, committed: u64) {
    let failures: Vec<String> = run
        .metrics
        .iter()
        .filter(|m| m.name == db::FAILED_TRANSACTIONS)
        .filter_map(|m| Some(format!("{}: {}", m.label(label::SQLSTATE)?, m.value)))
        .collect();
    if !failures.is_empty() {
        let _ = writeln!(out, "Failures    by SQLSTATE: {}", failures.join(", "));
    }
    for line in &rec.observed.aborted {
        let _ = writeln!(out, "Aborted     {line}");
    }
    let mut cpu = format!(
        "Client CPU  {:.0}% of {}",
        value(run, common::CLIENT_CPU_PERCENT),
        counted(rec.threads, "thread"),
    );
    // Nothing committed, no cost per transaction.
    if committed > 0
        && let Some(m) = run.metric(db::CLIENT_CPU_PER_TRANSACTION)
    {
        let _ = write!(cpu, ", {} per transaction", units::duration_short(m.value));
    }
    let _ = writeln!(out, "{cpu}");
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
            .filter_map(|m| Some((m.label(label::SCRIPT)?, m)))
    }
    let weights: Vec<(String, u64)> = rec
        .scripts
        .iter()
        .map(|w| (w.name.clone(), w.weight))
        .collect();
    let total_weight: u64 = weights.iter().map(|(_, w)| w).sum();
    let mut rows = Vec::new();
    for (name, m) in scripted(run, db::TRANSACTIONS) {
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
        let tps = scripted(run, db::TRANSACTIONS_PER_SEC)
            .find(|(s, _)| *s == name)
            .map_or(String::new(), |(_, m)| format!(", {:.1} tps", m.value));
        let _ = writeln!(
            out,
            "Script {name}{weight}: {n} committed ({}){tps}",
            percent(n, committed)
        );
        if let Some(h) = scripted(run, common::LATENCY)
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
        .filter(|m| m.name == db::STATEMENT_LATENCY)
    {
        let Some(h) = m
            .histogram
            .as_ref()
            .and_then(|h| dyno_stats::hdr::from_model(h).ok())
        else {
            continue;
        };
        let name = m.label(label::SCRIPT).unwrap_or("?");
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
            m.label(label::LINE).unwrap_or("?"),
            cell(dyno_stats::hdr::value_at_percentile(&h, 50.0) as f64),
            cell(dyno_stats::hdr::value_at_percentile(&h, 99.0) as f64),
            cell(h.max() as f64),
            cell(h.mean()),
            m.label(label::COMMAND).unwrap_or("?"),
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
