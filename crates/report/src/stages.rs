//! A load plan's part of a report (`--rate-plan`): one row per stage with
//! its own requested and achieved rate, latency percentiles, errors and
//! send lag. It reads only the run's record.

use std::fmt::Write as _;

use dyno_model::record::RatePlanRecord;

use crate::capacity::{short_rate, write_table};

/// The section: the plan, then the stage table. `unit` names the rate
/// (`req/s`, `tps`); `lag` names the send lag's column.
pub(crate) fn stages_section(out: &mut String, plan: &RatePlanRecord, unit: &str, lag: &str) {
    let _ = writeln!(
        out,
        "Rate plan   {} ({} stage{}; a {} belongs to the stage it was due in)",
        plan.plan,
        plan.stages.len(),
        if plan.stages.len() == 1 { "" } else { "s" },
        match unit {
            "flows/s" => "flow (its time, from its due time to its last answer)",
            "tps" => "transaction",
            _ => "request",
        }
    );
    out.push('\n');
    let header = [
        "STAGE",
        "PLAN",
        "FROM",
        "REQUESTED",
        "ACHIEVED",
        "P50",
        "P90",
        "P99",
        "P99.9",
        "MAX",
        "ERRORS",
        "DROPPED",
        lag,
    ];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| (*s).to_owned()).collect()];
    let lat = |ns: u64| {
        if ns == 0 {
            "–".to_owned()
        } else {
            dyno_model::units::duration(ns as f64).replace(' ', "")
        }
    };
    for (i, s) in plan.stages.iter().enumerate() {
        rows.push(vec![
            (i + 1).to_string(),
            s.stage.clone(),
            seconds(s.start_ns),
            format!("{} {unit}", short_rate(s.requested)),
            format!("{} {unit}", short_rate(s.achieved)),
            lat(s.p50_ns),
            lat(s.p90_ns),
            lat(s.p99_ns),
            lat(s.p999_ns),
            lat(s.max_ns),
            if s.ended == 0 {
                "–".to_owned()
            } else {
                format!(
                    "{} ({:.2}%)",
                    s.errors,
                    100.0 * s.errors as f64 / s.ended as f64
                )
            },
            s.dropped.to_string(),
            lat(s.send_lag_p99_ns),
        ]);
    }
    write_table(out, &rows, &[1]);
    out.push('\n');
}

/// A stage's start in seconds, as short as it is exact to the
/// millisecond: `0s`, `30s`, `1.5s`.
fn seconds(ns: u64) -> String {
    let text = format!("{:.3}", ns as f64 / 1e9);
    format!("{}s", text.trim_end_matches('0').trim_end_matches('.'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::record::StageRecord;

    #[test]
    fn each_stage_is_a_row_with_its_own_figures() {
        let plan = RatePlanRecord {
            plan: "100@2s,0..200/2s".into(),
            stages: vec![
                StageRecord {
                    stage: "100@2s".into(),
                    duration_ns: 2_000_000_000,
                    requested: 100.0,
                    achieved: 99.5,
                    ended: 199,
                    errors: 1,
                    p99_ns: 12_000_000,
                    ..StageRecord::default()
                },
                StageRecord {
                    stage: "0..200/2s".into(),
                    start_ns: 2_000_000_000,
                    duration_ns: 2_000_000_000,
                    requested: 100.0,
                    dropped: 3,
                    ..StageRecord::default()
                },
            ],
        };
        let mut out = String::new();
        stages_section(&mut out, &plan, "req/s", "LAG P99");
        assert!(
            out.starts_with("Rate plan   100@2s,0..200/2s (2 stages"),
            "{out}"
        );
        let rows: Vec<&str> = out
            .lines()
            .filter(|l| l.trim_start().starts_with(char::is_numeric))
            .collect();
        assert_eq!(rows.len(), 2, "{out}");
        assert!(
            rows[0].contains("100@2s") && rows[0].contains("99.5 req/s"),
            "{out}"
        );
        assert!(
            rows[0].contains("12.00ms") && rows[0].contains("1 (0.50%)"),
            "{out}"
        );
        assert!(
            rows[1].contains("0..200/2s") && rows[1].contains(" 2s "),
            "{out}"
        );
        assert!(rows[1].trim_end().ends_with('–'), "{out}");
    }
}
