//! The view of a `dyno db run`: pgbench's figures (tps with and without the
//! connections' time, failures, retries) with the latency percentiles
//! pgbench leaves to a log file.

use std::fmt::Write as _;

use dyno_model::Run;

use crate::format::counted;
use crate::http::{count, histogram, latency_table, value};

/// dyno's report of a database run.
pub fn db_report(run: &Run) -> String {
    let mut out = String::new();
    let s = &run.settings;
    let text = |key: &str| s[key].as_str().unwrap_or("?").to_owned();
    let _ = writeln!(
        out,
        "Target      {} (PostgreSQL {})",
        text("target"),
        text("server_version")
    );
    let length = match (s["transactions"].as_u64(), s["duration_ns"].as_u64()) {
        (Some(n), _) => format!("{} per client", counted(n, "transaction")),
        (None, Some(ns)) => format!("{} s", ns as f64 / 1e9),
        _ => "?".into(),
    };
    let scripts: Vec<String> = s["scripts"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|w| {
                    format!(
                        "{}@{}",
                        w["name"].as_str().unwrap_or("?"),
                        w["weight"].as_u64().unwrap_or(1)
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "Settings    {} at scale {}, {} on {}, {length}, protocol {}, max tries {}",
        scripts.join(" + "),
        s["scale"].as_i64().unwrap_or(0),
        counted(s["clients"].as_u64().unwrap_or(0), "client"),
        counted(s["threads"].as_u64().unwrap_or(0), "thread"),
        text("protocol"),
        s["max_tries"].as_u64().unwrap_or(1),
    );
    if let Some(server) = s["server_settings"].as_object() {
        let pairs: Vec<String> = server
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("?")))
            .collect();
        let _ = writeln!(out, "Server      {}", pairs.join(", "));
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "Transactions {} committed in {:.2} s, {} failed, {} retried",
        count(run, "transactions"),
        value(run, "measured_ns") / 1e9,
        count(run, "failed_transactions"),
        count(run, "retries"),
    );
    let _ = writeln!(
        out,
        "tps          {:.1} without the connections' time, {:.1} with them ({:.0} ms to connect)",
        value(run, "transactions_per_sec"),
        value(run, "transactions_per_sec_with_connections"),
        value(run, "connect_ns") / 1e6,
    );
    out.push('\n');
    if let Some(h) = histogram(run, "latency_ns") {
        latency_table(&mut out, &[("transaction", h)]);
    }
    let per_script: Vec<String> = run
        .metrics
        .iter()
        .filter(|m| m.name == "transactions")
        .filter_map(|m| Some(format!("{}: {}", m.labels.get("script")?, m.value)))
        .collect();
    if !per_script.is_empty() {
        let _ = writeln!(out, "Scripts     {}", per_script.join(", "));
    }
    let failures: Vec<String> = run
        .metrics
        .iter()
        .filter(|m| m.name == "failed_transactions")
        .filter_map(|m| Some(format!("{}: {}", m.labels.get("sqlstate")?, m.value)))
        .collect();
    if !failures.is_empty() {
        let _ = writeln!(out, "Failures    by SQLSTATE: {}", failures.join(", "));
    }
    if let Some(aborted) = s["aborted"].as_array().filter(|a| !a.is_empty()) {
        for line in aborted {
            let _ = writeln!(out, "Aborted     {}", line.as_str().unwrap_or("?"));
        }
    }
    let _ = writeln!(
        out,
        "Client CPU  {:.0}% of {}, {} per transaction",
        value(run, "client_cpu_percent"),
        counted(s["threads"].as_u64().unwrap_or(0), "thread"),
        crate::http::short_ns(value(run, "client_cpu_per_transaction_ns")),
    );
    crate::text::warnings(run, &mut out);
    out
}
