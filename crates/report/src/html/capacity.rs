//! The chart of a capacity search (`--find-max`): each step's p99 against
//! the rate it asked for, passes and fails apart, with the objective's p99
//! target and the answer marked; the step table under it.

use dyno_model::record::{CapacityRecord, CapacityStep};
use plotters::prelude::*;

use super::chart::{self, BETTER, Chart, Key, Mark, NEUTRAL, WORSE};
use super::markup::Table;

/// `unit`: `req/s` or `tps`.
///
/// A closed-model sweep (`-c FROM..TO`) draws p99 against the throughput
/// each step's connections reached instead: the same hockey stick, read
/// along the steps' connections.
pub(super) fn chart(cap: &CapacityRecord, unit: &str) -> Option<String> {
    let points = points(cap);
    let answer = crate::capacity::capacity_answer(cap, unit);
    // The answer is said once, in the note over the chart (or the table).
    let table = step_table(cap);
    if points.is_empty() {
        return Some(super::http::note(&answer) + &table.html());
    }
    let axes = Axes::of(cap, unit);
    let line = axes.line;
    Some(
        draw(cap, &points, axes)
            .note(format!(
                "{answer}. Each point is one step; the green line is {line}. A step fails for more than its p99: see the table's reasons."
            ))
            .table(table)
            .html(),
    )
}

/// Each step with a p99 as a point: its requested rate (a sweep's
/// achieved throughput), its p99 in milliseconds, and whether it passed.
fn points(cap: &CapacityRecord) -> Vec<(f64, f64, bool)> {
    let sweep = cap.sweep.is_some();
    cap.steps
        .iter()
        .filter(|s| s.p99_ns > 0)
        .map(|s| {
            let x = if sweep { s.achieved } else { s.requested };
            (x, s.p99_ns as f64 / 1e6, s.passed)
        })
        .collect()
}

/// The words of the chart: its title, its x axis, and what the answer's
/// line marks; a search's by the rate asked for, a sweep's by the
/// throughput reached.
struct Axes {
    title: String,
    x_desc: String,
    line: &'static str,
}

impl Axes {
    fn of(cap: &CapacityRecord, unit: &str) -> Axes {
        if cap.sweep.is_some() {
            Axes {
                title: format!("Connection sweep: p99 by throughput ({unit})"),
                x_desc: format!("throughput ({unit})"),
                line: "the highest throughput that passed",
            }
        } else {
            Axes {
                title: format!("Capacity search: p99 by requested rate ({unit})"),
                x_desc: format!("requested rate ({unit})"),
                line: "the highest rate that passed",
            }
        }
    }
}

/// Every step of the search in the order run, with what was watched over
/// each where something was.
fn step_table(cap: &CapacityRecord) -> Table {
    let sweep = cap.sweep.is_some();
    let server = cap.steps.iter().any(|s| s.server_cpu_percent.is_some());
    let machine = cap.steps.iter().any(|s| s.target_cpu_percent.is_some());
    let mut header = vec![
        "step",
        if sweep { "connections" } else { "purpose" },
        "requested",
        "achieved",
        "p50",
        "p99",
        "p99.9",
        "errors",
        "late",
    ];
    if server {
        header.push("server CPU (% of a core)");
    }
    if machine {
        header.push("target machine busy");
    }
    header.push("verdict");
    let mut table =
        Table::new(header).caption("Every step of the search, in the order run".to_owned());
    let percent = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.0}%"));
    for (i, s) in cap.steps.iter().enumerate() {
        let mut row = step_row(i, s, sweep);
        if server {
            row.push(percent(s.server_cpu_percent));
        }
        if machine {
            row.push(percent(s.target_cpu_percent));
        }
        row.push(crate::capacity::step_verdict(s));
        table.row(row);
    }
    table
}

/// The cells of step `i` (0-based) up to its late sends: its number, its
/// connections (a sweep's) or purpose, its rates, percentiles and counts.
fn step_row(i: usize, s: &CapacityStep, sweep: bool) -> Vec<String> {
    let ms = |ns: u64| {
        if ns == 0 {
            "–".to_owned()
        } else {
            dyno_model::units::duration(ns as f64)
        }
    };
    vec![
        (i + 1).to_string(),
        match s.connections {
            Some(c) if sweep => c.to_string(),
            _ => s.purpose.clone(),
        },
        crate::capacity::short_rate(s.requested),
        crate::capacity::short_rate(s.achieved),
        ms(s.p50_ns),
        ms(s.p99_ns),
        ms(s.p999_ns),
        s.errors.to_string(),
        s.late.to_string(),
    ]
}

/// The chart itself: the steps' p99s on a log axis, passes as dots and
/// fails as crosses, with the objective's p99 target and the answer's
/// rate as lines.
fn draw(cap: &CapacityRecord, points: &[(f64, f64, bool)], axes: Axes) -> Chart {
    let target = p99_target_ms(cap);
    let (x_max, (y_lo, y_hi)) = bounds(points, target);
    let max_rate = cap.answer.max_rate;
    let data = labelled_span(points);
    let keys = keys(target.is_some(), max_rate.is_some(), axes.line);
    let Axes { title, x_desc, .. } = axes;
    Chart::draw(
        "capacity-steps",
        title,
        (2, points.len()),
        (chart::WIDTH, chart::HEIGHT),
        |root| {
            let area = chart::legend_above(root, &keys)?;
            let mut c = chart::builder(&area, 24, (40, 70)).build_cartesian_2d(
                0.0..x_max,
                (y_lo..y_hi)
                    .log_scale()
                    .with_key_points(chart::log_ticks((y_lo, y_hi), data)),
            )?;
            chart::mesh(&mut c)
                .x_desc(x_desc)
                .y_desc("p99 latency (ms, log scale)")
                .x_label_formatter(&chart::tick)
                .y_label_formatter(&chart::tick)
                .draw()?;
            if let Some(t) = target {
                c.draw_series(LineSeries::new(
                    [(0.0, t), (x_max, t)],
                    NEUTRAL.stroke_width(1),
                ))?;
            }
            if let Some(m) = max_rate {
                c.draw_series(LineSeries::new(
                    [(m, y_lo), (m, y_hi)],
                    BETTER.stroke_width(1),
                ))?;
            }
            c.draw_series(
                points
                    .iter()
                    .filter(|p| p.2)
                    .map(|&(x, y, _)| Circle::new((x, y), 4, BETTER.filled())),
            )?;
            c.draw_series(
                points
                    .iter()
                    .filter(|p| !p.2)
                    .map(|&(x, y, _)| Cross::new((x, y), 5, WORSE.stroke_width(2))),
            )?;
            Ok(())
        },
    )
}

/// The chart's extent: the x axis's end past the last point, and the log
/// p99 axis's ends around the points and the p99 `target` (ms).
fn bounds(points: &[(f64, f64, bool)], target: Option<f64>) -> (f64, (f64, f64)) {
    let x_max = points.iter().map(|p| p.0).fold(0.0, f64::max) * 1.08;
    let y_lo = points
        .iter()
        .map(|p| p.1)
        .chain(target)
        .fold(f64::INFINITY, f64::min)
        .max(1e-3)
        / 1.5;
    let y_hi = points.iter().map(|p| p.1).chain(target).fold(0.0, f64::max) * 1.5;
    (x_max, (y_lo, y_hi))
}

/// The legend: the p99 target's line and the answer's (`line` says what
/// it marks) where the chart draws them, then passes and fails.
fn keys(target: bool, answer: bool, line: &str) -> Vec<Key> {
    let mut keys: Vec<Key> = Vec::new();
    if target {
        keys.push(("p99 target".into(), Mark::Line(NEUTRAL)));
    }
    if answer {
        keys.push((line.into(), Mark::Line(BETTER)));
    }
    keys.push(("pass".into(), Mark::Dot(BETTER)));
    keys.push(("fail".into(), Mark::Cross(WORSE)));
    keys
}

/// Where the p99 axis must be labelled closely: the span of the passing
/// steps' p99s, whose margin below the target is what a reader reads off
/// the chart (a fail far above it needs no precise label); all the steps'
/// where none passed.
fn labelled_span(points: &[(f64, f64, bool)]) -> (f64, f64) {
    let span = |pass: Option<bool>| {
        points
            .iter()
            .filter(|p| pass.is_none_or(|want| p.2 == want))
            .fold((f64::INFINITY, 0.0f64), |(lo, hi), p| {
                (lo.min(p.1), hi.max(p.1))
            })
    };
    match span(Some(true)) {
        (lo, hi) if lo <= hi => (lo, hi),
        _ => span(None),
    }
}

/// The p99 target of a search's objective, in milliseconds, if it has
/// one (runs saved before the record kept the objective have none).
fn p99_target_ms(cap: &CapacityRecord) -> Option<f64> {
    let limit = cap.objective.as_ref()?.limit_at(99.0)?;
    Some(limit.limit_ns as f64 / 1e6)
}
