//! The capacity search's part of a report (`--find-max`): the answer in one
//! sentence, then the step table (requested, achieved, percentiles, errors,
//! send lag, verdict and why). It reads only the run's record.

use std::fmt::Write as _;

use dyno_model::names::capacity as name;
use dyno_model::record::{CapacityOutcome, CapacityRecord, CapacityStep};
use dyno_model::units;

pub use dyno_model::units::short_rate;

/// The answer, in one sentence. A closed-model sweep's levels are its
/// connections: its figures are throughputs, each named with the
/// connections that gave it.
pub fn capacity_answer(cap: &CapacityRecord, unit: &str) -> String {
    let a = &cap.answer;
    let r = |x: Option<f64>| x.map_or_else(|| "?".to_owned(), short_rate);
    let sweep = cap.sweep.is_some();
    // A sweep's figure, with the connections that gave it.
    let with = |rate: Option<f64>| {
        let step = rate.and_then(|r| cap.steps.iter().find(|s| s.passed && s.achieved == r));
        step.and_then(|s| s.connections)
            .map(|c| format!(" with {c} connection{}", if c == 1 { "" } else { "s" }))
            .unwrap_or_default()
    };
    let passes = |max: f64| format!("{} {unit}{}", short_rate(max), with(Some(max)));
    if cap.over_speed {
        match a.outcome {
            CapacityOutcome::Found => {
                return format!(
                    "sustains {}× the recorded traffic (bracket {}–{}×) at {}",
                    r(a.max_rate),
                    r(a.max_rate),
                    r(a.above_rate),
                    cap.slo
                );
            }
            CapacityOutcome::NoneMeets => {
                return format!(
                    "no multiple of the recorded traffic meets {}: the lowest tried, {}×, failed{}",
                    cap.slo,
                    r(a.lowest_rate),
                    failed_on(cap)
                );
            }
            CapacityOutcome::Unfinished if a.above_rate.is_none() && a.max_rate.is_some() => {
                return format!(
                    "at least {}× the recorded traffic at {}: every step passed before the search ended",
                    r(a.max_rate),
                    cap.slo
                );
            }
            CapacityOutcome::Unfinished if a.max_rate.is_some() && a.above_rate.is_some() => {
                return format!(
                    "not settled: passes at {}× the recorded traffic, fails at {}× ({}; the search ended first)",
                    r(a.max_rate),
                    r(a.above_rate),
                    cap.slo
                );
            }
            CapacityOutcome::Unfinished if a.max_rate.is_none() && a.above_rate.is_some() => {
                return format!(
                    "below {}× the recorded traffic: every step failed before the search ended{}",
                    r(a.above_rate),
                    failed_on(cap)
                );
            }
            _ => {}
        }
    }
    match a.outcome {
        CapacityOutcome::Found if sweep => format!(
            "max throughput {} at {}",
            passes(a.max_rate.unwrap_or_default()),
            cap.slo
        ),
        CapacityOutcome::Found => format!(
            "max sustainable {} {unit} (bracket {}–{}) at {}",
            r(a.max_rate),
            r(a.max_rate),
            r(a.above_rate),
            cap.slo
        ),
        CapacityOutcome::NoneMeets => format!(
            "no {} meets {}: the lowest tried, {} {unit}, failed{}",
            if sweep {
                "number of connections"
            } else {
                "rate"
            },
            cap.slo,
            r(a.lowest_rate),
            failed_on(cap)
        ),
        CapacityOutcome::ClientBound => {
            let before = a
                .max_rate
                .map(|m| format!(" (the highest pass before: {})", passes(m)))
                .unwrap_or_default();
            match a.client_bound_at {
                // Far behind from the start: the measured time saw only
                // the warm-up's backlog end.
                Some(at) if at < 1.0 && !sweep => format!(
                    "client-bound: the client ran out of CPU at {} {unit} and ended no request due in the measured time: add threads or segments, or a lower --start; no server capacity is claimed{before}",
                    r(cap.steps.last().map(|s| s.requested))
                ),
                at => format!(
                    "client-bound at ≈ {} {unit}: add threads or segments; no server capacity is claimed{before}",
                    r(at)
                ),
            }
        }
        CapacityOutcome::Unfinished => match (a.max_rate, a.above_rate) {
            (Some(max), Some(above)) => format!(
                "not settled: passes at {} {unit}, fails at {} {unit} ({}; the search ended first)",
                short_rate(max),
                short_rate(above),
                cap.slo
            ),
            (Some(max), None) => format!(
                "at least {} at {}: every step passed before the search ended",
                passes(max),
                cap.slo
            ),
            (None, Some(above)) => format!(
                "below {} {unit}: every step failed before the search ended{}",
                short_rate(above),
                failed_on(cap)
            ),
            (None, None) => "no step finished".to_owned(),
        },
        CapacityOutcome::Unstable => {
            let defend = bracket(
                (a.max_rate, |max| {
                    format!("passed at {} {unit}", short_rate(max))
                }),
                (a.above_rate, |above| {
                    format!("failed at {} {unit}", short_rate(above))
                }),
                " and ",
            )
            .map_or_else(
                || "no rate gave the same verdict twice".to_owned(),
                |both| format!("every run {both}"),
            );
            format!(
                "unstable: repeated steps disagreed ({}), so no capacity is claimed at {}; {defend}",
                match a.cause.as_deref() {
                    Some(name::CAUSE_MACHINE_BUSY) =>
                        "the machine was busy: other work took the client's CPU",
                    _ => "the target's capacity moved during the search",
                },
                cap.slo
            )
        }
        CapacityOutcome::Interrupted => {
            let seen = bracket(
                (a.max_rate, |max| format!("passes at {}", passes(max))),
                (a.above_rate, |above| {
                    format!("fails at {} {unit}", short_rate(above))
                }),
                ", ",
            )
            .map(|both| format!(" (so far: {both})"))
            .unwrap_or_default();
            format!(
                "interrupted after {}: no capacity is claimed at {}{seen}",
                counted_steps(cap.steps.len()),
                cap.slo
            )
        }
    }
}

/// The two ends of a bracket that a search has, each in its words,
/// joined by `and`; `None` when it has neither.
fn bracket(
    (max, pass): (Option<f64>, impl Fn(f64) -> String),
    (above, fail): (Option<f64>, impl Fn(f64) -> String),
    and: &str,
) -> Option<String> {
    let ends: Vec<String> = max.map(pass).into_iter().chain(above.map(fail)).collect();
    (!ends.is_empty()).then(|| ends.join(and))
}

fn counted_steps(n: usize) -> String {
    format!("{n} step{}", if n == 1 { "" } else { "s" })
}

/// Why the failing steps failed, tallied over them, for an answer with no
/// pass: `: late sends in 9 steps, latency over the objective in 2`. The
/// objective is not blamed for a step that failed on something else.
/// Empty for runs saved before the reasons were recorded as codes.
fn failed_on(cap: &CapacityRecord) -> String {
    let mut tally: Vec<(&str, usize)> = Vec::new();
    for code in cap
        .steps
        .iter()
        .filter(|s| !s.passed)
        .flat_map(|s| s.failed_on.iter())
    {
        match tally.iter_mut().find(|(c, _)| c == code) {
            Some((_, n)) => *n += 1,
            None => tally.push((code, 1)),
        }
    }
    if tally.is_empty() {
        return String::new();
    }
    tally.sort_by_key(|t| std::cmp::Reverse(t.1));
    let parts: Vec<String> = tally
        .iter()
        .map(|(code, n)| {
            let what = match *code {
                name::WHY_LATENCY => format!("latency over {}", cap.slo),
                name::WHY_ERRORS => "errors over the objective".to_owned(),
                name::WHY_RATE => "due requests never sent".to_owned(),
                name::WHY_LATE => "late sends".to_owned(),
                name::WHY_RISING => "latency rising within the step".to_owned(),
                name::WHY_NO_REQUESTS => "no request ended".to_owned(),
                name::WHY_CLIENT => "the client saturated".to_owned(),
                other => other.replace('_', " "),
            };
            format!("{what} in {}", counted_steps(*n))
        })
        .collect();
    format!(" ({})", parts.join(", "))
}

/// The section: the answer, how the search ran, and its steps (a
/// sweep's by their connections and throughput, with its USL fit).
pub(crate) fn capacity_section(out: &mut String, cap: &CapacityRecord, unit: &str) {
    let _ = writeln!(out, "Capacity    {}", capacity_answer(cap, unit));
    let steps = if cap.over_speed && cap.step_ns == 0 {
        format!(
            "each step the log's window once (+{} warm-up)",
            units::duration(cap.step_warmup_ns as f64),
        )
    } else {
        format!(
            "{} steps (+{} warm-up each)",
            units::duration(cap.step_ns as f64),
            units::duration(cap.step_warmup_ns as f64),
        )
    };
    let budget = units::duration(cap.budget_ns as f64);
    match &cap.sweep {
        Some(sweep) => {
            let _ = writeln!(
                out,
                "Sweep       closed model, {}..{} connections doubling, {steps}, budget {budget}",
                sweep.from, sweep.to,
            );
            usl_line(out, sweep.usl.as_ref(), unit);
        }
        None => {
            let start = if cap.over_speed {
                format!("{}× the log's pace", short_rate(cap.start))
            } else if cap.start_probed {
                format!(
                    "{} {unit} (half a closed-model probe's rate)",
                    short_rate(cap.start)
                )
            } else {
                format!("{} {unit}", short_rate(cap.start))
            };
            let _ = writeln!(
                out,
                "Search      from {start}, {steps}, precision {:.1}%, budget {budget}",
                cap.precision * 100.0,
            );
        }
    }
    out.push('\n');
    let mut rows = step_rows(cap, unit);
    watched_columns(cap, &mut rows);
    let last = rows[0].len() - 1;
    // Text to the left: a search's purposes, and the verdicts.
    let left: &[usize] = if cap.sweep.is_some() {
        &[last]
    } else {
        &[1, last]
    };
    write_table(out, &rows, left);
    out.push('\n');
}

/// The USL fit of a sweep, in one line.
fn usl_line(out: &mut String, usl: Option<&dyno_model::record::UslSummary>, unit: &str) {
    let Some(u) = usl else {
        let _ = writeln!(out, "USL fit     none: it needs 3 steps with answers");
        return;
    };
    let peak = match (u.peak_connections, u.peak_rate) {
        (Some(n), Some(x)) => format!(
            "throughput peaks at {n:.0} connection{}, {} {unit}",
            if n.round() == 1.0 { "" } else { "s" },
            short_rate(x)
        ),
        _ => "no peak: throughput still rises (no coherency cost)".to_owned(),
    };
    let _ = writeln!(
        out,
        "USL fit     σ {:.4} (contention), κ {:.6} (coherency), λ {} {unit} a connection, R² {:.3}: {peak}",
        u.sigma,
        u.kappa,
        short_rate(u.lambda),
        u.r_squared,
    );
}

/// The step table's header and rows: a search's steps by their purpose
/// and requested rate, with its schedule's late sends and lag; a sweep's
/// by their connections and throughput (a closed model has no schedule).
fn step_rows(cap: &CapacityRecord, unit: &str) -> Vec<Vec<String>> {
    type Cell<'a> = Box<dyn Fn(&CapacityStep) -> String + 'a>;
    let lat = |ns: u64| {
        if ns == 0 {
            "–".to_owned()
        } else {
            units::duration(ns as f64).replace(' ', "")
        }
    };
    let share = |n: u64, of: u64| {
        if of == 0 {
            "–".to_owned()
        } else {
            format!("{:.2}%", 100.0 * n as f64 / of as f64)
        }
    };
    let mut columns: Vec<(&str, Cell<'_>)> = if cap.sweep.is_some() {
        vec![
            (
                "CONN",
                Box::new(|s| {
                    s.connections
                        .map_or_else(|| "–".to_owned(), |c| c.to_string())
                }),
            ),
            (
                "THROUGHPUT",
                Box::new(move |s| format!("{} {unit}", short_rate(s.achieved))),
            ),
        ]
    } else {
        let mut columns: Vec<(&str, Cell<'_>)> = vec![("PURPOSE", Box::new(|s| s.purpose.clone()))];
        if cap.over_speed {
            columns.push((
                "SPEED",
                Box::new(|s| {
                    s.speed
                        .map_or_else(|| "–".to_owned(), |x| format!("{}×", short_rate(x)))
                }),
            ));
        }
        columns.push(("REQUESTED", Box::new(|s| short_rate(s.requested))));
        columns.push(("ACHIEVED", Box::new(|s| short_rate(s.achieved))));
        columns
    };
    columns.push(("P50", Box::new(move |s| lat(s.p50_ns))));
    columns.push(("P99", Box::new(move |s| lat(s.p99_ns))));
    columns.push(("P99.9", Box::new(move |s| lat(s.p999_ns))));
    columns.push(("ERRORS", Box::new(move |s| share(s.errors, s.requests))));
    if cap.sweep.is_none() {
        columns.push(("LATE", Box::new(move |s| share(s.late, s.sends))));
        columns.push(("LAG P99", Box::new(move |s| lat(s.send_lag_p99_ns))));
    }
    columns.push(("CPU", Box::new(|s| format!("{:.0}%", s.client_cpu_percent))));
    let mut header = vec!["STEP".to_owned()];
    header.extend(columns.iter().map(|(name, _)| (*name).to_owned()));
    header.push("VERDICT".to_owned());
    let mut rows = vec![header];
    for (i, s) in cap.steps.iter().enumerate() {
        let mut row = vec![(i + 1).to_string()];
        row.extend(columns.iter().map(|(_, cell)| cell(s)));
        row.push(step_verdict(s));
        rows.push(row);
    }
    rows
}

/// A step's verdict cell: `pass`, or `fail:` and why.
pub(crate) fn step_verdict(s: &CapacityStep) -> String {
    if s.passed {
        "pass".to_owned()
    } else {
        format!("fail: {}", s.why.join("; "))
    }
}

/// Puts what was watched over each step before the verdict column of
/// `rows` (the header, then one row per step): the watched server's CPU
/// in percent of one core, the watched machine's busy share; a column
/// only when some step has its figure.
fn watched_columns(cap: &CapacityRecord, rows: &mut [Vec<String>]) {
    type Figure = fn(&dyno_model::record::CapacityStep) -> Option<f64>;
    let columns: [(&str, Figure); 2] = [
        ("SERVER CPU", |s| s.server_cpu_percent),
        ("TARGET CPU", |s| s.target_cpu_percent),
    ];
    for (name, of) in columns {
        if !cap.steps.iter().any(|s| of(s).is_some()) {
            continue;
        }
        if let Some(client) = rows[0].iter_mut().find(|h| *h == "CPU") {
            *client = "CLIENT CPU".into();
        }
        let at = rows[0].len() - 1;
        rows[0].insert(at, name.to_owned());
        for (row, step) in rows[1..].iter_mut().zip(&cap.steps) {
            row.insert(
                at,
                of(step).map_or_else(|| "–".to_owned(), |v| format!("{v:.0}%")),
            );
        }
    }
}

/// Writes `rows` (the first is the header) as aligned columns: the
/// columns in `left` (text) to the left, the others (figures) to the
/// right.
pub(crate) fn write_table(out: &mut String, rows: &[Vec<String>], left: &[usize]) {
    let columns = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let pad = widths[c] - cell.chars().count();
            if left.contains(&c) {
                line.push_str(cell);
                if c + 1 < row.len() {
                    line.push_str(&" ".repeat(pad));
                }
            } else {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
            if c + 1 < row.len() {
                line.push_str("  ");
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::record::CapacityAnswer;

    fn record(outcome: CapacityOutcome) -> CapacityRecord {
        CapacityRecord {
            slo: "p99<=20ms".into(),
            objective: None,
            start: 20_000.0,
            start_probed: true,
            precision: 0.05,
            step_ns: 10_000_000_000,
            step_warmup_ns: 1_000_000_000,
            budget_ns: 180_000_000_000,
            answer: CapacityAnswer {
                outcome,
                max_rate: Some(41_200.0),
                above_rate: Some(43_000.0),
                lowest_rate: Some(20.0),
                client_bound_at: Some(39_000.0),
                cause: None,
            },
            sweep: None,
            over_speed: false,
            steps: vec![
                CapacityStep {
                    purpose: "bracket".into(),
                    connections: None,
                    speed: None,
                    requested: 20_000.0,
                    achieved: 19_990.0,
                    p50_ns: 150_000,
                    p99_ns: 900_000,
                    p999_ns: 2_000_000,
                    requests: 199_900,
                    errors: 0,
                    sends: 199_900,
                    late: 3,
                    send_lag_p99_ns: 40_000,
                    client_cpu_percent: 35.0,
                    client_wait_percent: 0.0,
                    server_cpu_percent: Some(48.0),
                    target_cpu_percent: None,
                    passed: true,
                    why: vec![],
                    failed_on: vec![],
                },
                CapacityStep {
                    purpose: "bracket".into(),
                    connections: None,
                    speed: None,
                    requested: 40_000.0,
                    achieved: 31_000.0,
                    p50_ns: 900_000_000,
                    p99_ns: 2_100_000_000,
                    p999_ns: 2_300_000_000,
                    requests: 310_000,
                    errors: 0,
                    sends: 400_000,
                    late: 90_000,
                    send_lag_p99_ns: 1_000_000_000,
                    client_cpu_percent: 60.0,
                    client_wait_percent: 0.0,
                    server_cpu_percent: Some(99.6),
                    target_cpu_percent: None,
                    passed: false,
                    why: vec![
                        "p99 2.1s > 20ms".into(),
                        "achieved 77.5% of the rate".into(),
                    ],
                    failed_on: vec!["latency".into(), "rate".into()],
                },
            ],
        }
    }

    #[test]
    fn the_answer_says_what_was_found_and_what_was_not() {
        let found = capacity_answer(&record(CapacityOutcome::Found), "req/s");
        assert_eq!(
            found,
            "max sustainable 41.2k req/s (bracket 41.2k–43.0k) at p99<=20ms"
        );
        let none = capacity_answer(&record(CapacityOutcome::NoneMeets), "req/s");
        assert_eq!(
            none,
            "no rate meets p99<=20ms: the lowest tried, 20.0 req/s, failed (latency over p99<=20ms in 1 step, due requests never sent in 1 step)"
        );
        // Steps that failed on something else than the objective say so:
        // the objective is not blamed.
        let mut late = record(CapacityOutcome::Unfinished);
        late.answer.max_rate = None;
        late.steps[0].passed = false;
        late.steps[0].failed_on = vec!["late".into()];
        late.steps[1].failed_on = vec!["late".into(), "rising".into()];
        assert_eq!(
            capacity_answer(&late, "req/s"),
            "below 43.0k req/s: every step failed before the search ended (late sends in 2 steps, latency rising within the step in 1 step)"
        );
        // An interrupted search claims nothing, and says what it saw.
        let interrupted = capacity_answer(&record(CapacityOutcome::Interrupted), "req/s");
        assert_eq!(
            interrupted,
            "interrupted after 2 steps: no capacity is claimed at p99<=20ms (so far: passes at 41.2k req/s, fails at 43.0k req/s)"
        );
        let client = capacity_answer(&record(CapacityOutcome::ClientBound), "req/s");
        assert!(client.starts_with("client-bound at ≈ 39.0k req/s: add threads or segments"));
        assert!(client.contains("no server capacity is claimed"));
        // So far behind that nothing due in the measured time ended.
        let mut behind = record(CapacityOutcome::ClientBound);
        behind.answer.client_bound_at = Some(0.0);
        let behind = capacity_answer(&behind, "req/s");
        assert!(
            behind.starts_with("client-bound: the client ran out of CPU at ")
                && behind.contains("or a lower --start"),
            "{behind}"
        );
        let unfinished = capacity_answer(&record(CapacityOutcome::Unfinished), "req/s");
        assert!(unfinished.starts_with("not settled: passes at 41.2k req/s, fails at 43.0k"));
    }

    #[test]
    fn the_step_table_gives_every_step_its_verdict_and_why() {
        let mut out = String::new();
        capacity_section(&mut out, &record(CapacityOutcome::Found), "req/s");
        insta::assert_snapshot!(out);
    }
}
