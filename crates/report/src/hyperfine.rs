//! The layouts hyperfine exports, written from an exec run so the tools
//! people already feed with hyperfine's files read dyno's:
//!
//! - JSON: `{"results": [{command, mean, stddev, median, user, system, min,
//!   max, times, memory_usage_byte, exit_codes, parameters}]}`, times in
//!   seconds, `exit_codes` null for a run ended by a signal, `parameters`
//!   only when there are some;
//! - CSV: `command,mean,stddev,median,user,system,min,max` and a
//!   `parameter_NAME` column per parameter;
//! - Markdown: a table of mean ± σ, min, max and the time relative to the
//!   reference, in the unit that suits the fastest command.

use std::io::{self, Write};

use dyno_model::Run;
use serde_json::{Value, json};

use dyno_model::names::label;
use dyno_model::record::{Bench, benches};

use crate::exec::BenchSummary;

const NS_PER_SEC: f64 = 1e9;

fn secs(ns: f64) -> f64 {
    ns / NS_PER_SEC
}

fn mean_of(bench_metric: Option<&dyno_model::Metric>) -> f64 {
    bench_metric.map_or(0.0, |m| secs(m.value))
}

/// hyperfine's JSON export of an exec run.
pub fn hyperfine_json(run: &Run) -> Value {
    let results: Vec<Value> = benches(run)
        .iter()
        .filter_map(|b| {
            let s = b.summary()?;
            let mut r = json!({
                "command": b.name,
                "mean": secs(s.mean),
                "stddev": (s.n > 1).then(|| secs(s.stddev)),
                "median": secs(s.median),
                "user": mean_of(b.user),
                "system": mean_of(b.system),
                "min": secs(s.min),
                "max": secs(s.max),
                "times": b.wall.samples.iter().map(|&t| secs(t)).collect::<Vec<_>>(),
                "memory_usage_byte": b.rss.map(|m| m.samples.iter().map(|&v| v as u64).collect::<Vec<_>>()),
                "exit_codes": b.exit_codes(),
            });
            if !b.parameters.is_empty() {
                r["parameters"] = json!(b.parameters);
            }
            Some(r)
        })
        .collect();
    json!({ "results": results })
}

/// hyperfine's CSV export of an exec run.
pub fn hyperfine_csv(run: &Run, out: &mut dyn Write) -> io::Result<()> {
    let benches = benches(run);
    let mut params: Vec<&str> = Vec::new();
    for b in &benches {
        for name in b.parameters.keys() {
            if !params.contains(name) {
                params.push(name);
            }
        }
    }
    let mut w = csv::Writer::from_writer(out);
    let mut header: Vec<String> = [
        "command", "mean", "stddev", "median", "user", "system", "min", "max",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    header.extend(params.iter().map(|p| format!("parameter_{p}")));
    w.write_record(&header)?;
    for b in &benches {
        let Some(s) = b.summary() else { continue };
        let mut row = vec![
            b.name.to_owned(),
            secs(s.mean).to_string(),
            if s.n > 1 {
                secs(s.stddev).to_string()
            } else {
                String::new()
            },
            secs(s.median).to_string(),
            mean_of(b.user).to_string(),
            mean_of(b.system).to_string(),
            secs(s.min).to_string(),
            secs(s.max).to_string(),
        ];
        row.extend(
            params
                .iter()
                .map(|p| b.parameters.get(p).copied().unwrap_or("").to_owned()),
        );
        w.write_record(&row)?;
    }
    w.flush()
}

/// A Markdown table of an exec run.
pub fn hyperfine_markdown(run: &Run) -> String {
    let benches = benches(run);
    let fastest = benches
        .iter()
        .filter_map(Bench::summary)
        .map(|s| s.mean)
        .fold(f64::INFINITY, f64::min);
    let (scale, unit) = if fastest >= NS_PER_SEC {
        (NS_PER_SEC, "s")
    } else if fastest >= 1e6 {
        (1e6, "ms")
    } else {
        (1e3, "µs")
    };
    let mut out = format!(
        "| Command | Mean [{unit}] | Min [{unit}] | Max [{unit}] | Relative |\n|:---|---:|---:|---:|---:|\n"
    );
    let reference = benches
        .iter()
        .find_map(|b| b.ratio.and_then(|r| r.label(label::REFERENCE)));
    for b in &benches {
        let Some(s) = b.summary() else { continue };
        let relative = match b.ratio {
            Some(r) => match &r.uncertainty {
                Some(u) => format!("{:.2} ({:.2}–{:.2})", r.value, u.low, u.high),
                None => format!("{:.2}", r.value),
            },
            None if reference.is_none_or(|r| r == b.name) => "1.00".to_owned(),
            None => "n/a".to_owned(),
        };
        // One run has no spread: the mean alone, as hyperfine writes it.
        let mean = if s.n > 1 {
            format!("{:.1} ± {:.1}", s.mean / scale, s.stddev / scale)
        } else {
            format!("{:.1}", s.mean / scale)
        };
        out.push_str(&format!(
            "| `{}` | {mean} | {:.1} | {:.1} | {relative} |\n",
            b.name.replace('|', "\\|"),
            s.min / scale,
            s.max / scale,
        ));
    }
    out
}
