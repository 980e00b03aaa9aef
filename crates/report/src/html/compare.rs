//! The charts of a comparison (kind `compare`, made by `dyno compare`): per
//! candidate group, one bar per matched metric showing its improvement
//! factor with the interval as a whisker and the noise band shaded, grouped
//! by kind, the geometric mean on top; then what differs between the sides.
//!
//! Improvement factor: right is always better. For a higher-is-better
//! metric it is the stored ratio (candidate / baseline), for a
//! lower-is-better one baseline / candidate, its interval [1/high, 1/low].
//! The axis is logarithmic (ln of the factor), centred on 1.

use dyno_model::record::Difference;
use dyno_model::{Direction, Metric, Run};
use dyno_stats::compare::Verdict;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::prelude::*;

use super::chart::{self, BETTER, Chart, FG, GRID, NEUTRAL, WORSE};
use super::http::category;
use super::markup::{Table, esc};
use crate::Comparison;

/// One bar: a metric's (or the geomean's) improvement factor.
struct Bar {
    label: String,
    factor: f64,
    interval: Option<(f64, f64)>,
    colour: RGBColor,
}

/// The verdict a ratio metric records (by its label only: a ratio's value
/// is not a sign).
fn verdict(ratio: &Metric) -> Verdict {
    ratio
        .label(dyno_model::names::label::VERDICT)
        .and_then(Verdict::from_code)
        .unwrap_or(Verdict::Untested)
}

fn verdict_colour(v: Verdict) -> RGBColor {
    match v {
        Verdict::Faster => BETTER,
        Verdict::Slower => WORSE,
        _ => NEUTRAL,
    }
}

/// The improvement factor of a ratio and its interval.
fn improvement(ratio: &Metric) -> (f64, Option<(f64, f64)>) {
    let interval = ratio.uncertainty.as_ref().map(|u| (u.low, u.high));
    match ratio.direction {
        Direction::HigherIsBetter => (ratio.value, interval),
        Direction::LowerIsBetter => (
            1.0 / ratio.value,
            interval.map(|(lo, hi)| (1.0 / hi, 1.0 / lo)),
        ),
    }
}

fn words(v: Verdict) -> &'static str {
    match v {
        Verdict::Faster => "better",
        Verdict::Slower => "worse",
        Verdict::NoSignificantDifference => "no significant difference",
        Verdict::TooFewRuns => "too few runs to test",
        Verdict::Inconclusive => "inconclusive",
        Verdict::Untested => "no test",
        Verdict::WithinRun => "untested: one run a side",
    }
}

pub(super) fn charts(run: &Run) -> Vec<String> {
    let c = Comparison::of(run);
    let mut out = Vec::new();
    out.push(format!(
        "<p class=\"meta\">Baseline <b>{}</b>; noise band ±{}% (shaded), α = {}; bars show how many times better the candidate is (right of 1 is better, whatever the metric's direction), whiskers the interval of the ratio.</p>",
        esc(&c.baseline),
        c.noise * 100.0,
        c.alpha
    ));
    out.push(legend());
    let candidates: Vec<String> = c.candidates().map(str::to_owned).collect();
    for candidate in &candidates {
        out.push(factors(&c, candidate).html());
    }
    for (list, caption) in [
        (
            &c.record.environment_differences,
            "What differs in the environment",
        ),
        (
            &c.record.setting_differences,
            "What differs in the settings",
        ),
    ] {
        if let Some(t) = differences(list, &c.groups, caption) {
            out.push(t.html());
        }
    }
    let list = &c.record.unmatched;
    if !list.is_empty() {
        let mut t = Table::new(["group", "metric without a partner"])
            .caption("Metrics only one side has (not compared)");
        for u in list {
            t.row([u.group.as_str(), u.metric.as_str()]);
        }
        out.push(t.html());
    }
    out
}

fn legend() -> String {
    format!(
        "<p class=\"legend\"><span><i style=\"background:{}\"></i>better</span><span><i style=\"background:{}\"></i>worse</span><span><i style=\"background:{}\"></i>no significant difference, too few runs, inconclusive or untested</span></p>",
        chart::hex(BETTER),
        chart::hex(WORSE),
        chart::hex(NEUTRAL)
    )
}

/// The bars of a candidate's improvement chart (its geomean first, then
/// each metric with a ratio, grouped by kind) and the table beside them.
fn factor_rows(c: &Comparison, candidate: &str) -> (Vec<Bar>, Table) {
    let mut rows = c.rows(candidate);
    // Grouped by kind, in the record's order within a kind.
    rows.sort_by_key(|r| r.kind);
    let mut bars: Vec<Bar> = Vec::new();
    let mut table = Table::new([
        "kind",
        "metric",
        c.baseline.as_str(),
        candidate,
        "ratio",
        "interval",
        "p",
        "verdict",
        "improvement",
    ]);
    if let Some(gm) = c.group_metric(dyno_model::names::compare::GEOMEAN, candidate) {
        let interval = gm.uncertainty.as_ref().map(|u| (u.low, u.high));
        let colour = match interval {
            Some((lo, _)) if lo > 1.0 + c.noise => BETTER,
            Some((_, hi)) if hi < 1.0 / (1.0 + c.noise) => WORSE,
            _ => NEUTRAL,
        };
        bars.push(Bar {
            label: format!(
                "geomean ({} metrics)",
                gm.label(dyno_model::names::compare::METRICS)
                    .unwrap_or("all")
            ),
            factor: gm.value,
            interval,
            colour,
        });
        table.row([
            String::new(),
            "geomean".into(),
            String::new(),
            String::new(),
            format!("{:.3}×", gm.value),
            interval.map_or_else(String::new, |(l, h)| format!("{l:.3}–{h:.3}")),
            String::new(),
            String::new(),
            format!("{:.3}×", gm.value),
        ]);
    }
    for r in &rows {
        let Some(ratio) = r.ratio else { continue };
        let v = verdict(ratio);
        let (factor, interval) = improvement(ratio);
        bars.push(Bar {
            label: format!("{} · {}", r.kind, crate::metric_short(r.metric)),
            factor,
            interval,
            colour: verdict_colour(v),
        });
        table.row([
            r.kind.to_owned(),
            r.metric.to_owned(),
            crate::format_metric_value(r.metric, r.baseline.value, r.baseline.unit),
            crate::format_metric_value(r.metric, r.candidate.value, r.candidate.unit),
            format!("{:.3}×", ratio.value),
            ratio
                .uncertainty
                .as_ref()
                .map_or_else(String::new, |u| format!("{:.3}–{:.3}", u.low, u.high)),
            r.p_value.map_or_else(String::new, |p| {
                if p.value < 0.001 {
                    "<0.001".into()
                } else {
                    format!("{:.3}", p.value)
                }
            }),
            words(v).to_owned(),
            format!("{factor:.3}×"),
        ]);
    }
    (bars, table)
}

/// The improvement chart of one candidate group.
fn factors(c: &Comparison, candidate: &str) -> Chart {
    let (bars, table) = factor_rows(c, candidate);
    let n = bars.len();
    let span = bars
        .iter()
        .flat_map(|b| {
            [
                Some(b.factor),
                b.interval.map(|i| i.0),
                b.interval.map(|i| i.1),
            ]
            .into_iter()
            .flatten()
        })
        .filter(|f| f.is_finite() && *f > 0.0)
        .map(|f| f.ln().abs())
        .fold((1.0 + c.noise).ln() * 2.0, f64::max)
        * 1.15;
    let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
    let noise = (1.0 + c.noise).ln();
    let top = n as f64 - 1.0;
    let chart = Chart::draw(
        "compare-factors",
        format!("Improvement of {candidate} over {} (× better)", c.baseline),
        (1, n),
        (chart::WIDTH, 90 + 30 * n.max(1) as u32),
        |root| {
            let mut ch = chart::builder(root, 34, (42, 330)).build_cartesian_2d(
                FactorAxis {
                    span,
                    ticks: factor_ticks(span),
                },
                -0.6f64..(n as f64 - 0.4),
            )?;
            chart::mesh(&mut ch)
                .disable_y_mesh()
                .x_desc("improvement factor (log scale; > 1 is better)")
                .y_labels(n.max(1))
                .y_label_formatter(&|y| category(&labels, top - *y, 48))
                .x_label_formatter(&|x| {
                    let v = chart::num(x.exp());
                    let v = if v.contains('.') && !v.contains('e') {
                        v.trim_end_matches('0').trim_end_matches('.').to_owned()
                    } else {
                        v
                    };
                    format!("{v}×")
                })
                .draw()?;
            ch.draw_series(std::iter::once(Rectangle::new(
                [(-noise, -0.6), (noise, n as f64 - 0.4)],
                GRID.mix(0.5).filled(),
            )))?;
            ch.draw_series(std::iter::once(PathElement::new(
                vec![(0.0, -0.6), (0.0, n as f64 - 0.4)],
                FG.stroke_width(1),
            )))?;
            ch.draw_series(bars.iter().enumerate().map(|(i, b)| {
                let y = top - i as f64;
                let x = if b.factor > 0.0 { b.factor.ln() } else { 0.0 };
                Rectangle::new([(0.0, y - 0.32), (x, y + 0.32)], b.colour.filled())
            }))?;
            ch.draw_series(bars.iter().enumerate().filter_map(|(i, b)| {
                let (lo, hi) = b.interval?;
                let y = top - i as f64;
                (lo > 0.0 && hi > 0.0).then(|| {
                    ErrorBar::new_horizontal(
                        y,
                        lo.ln(),
                        b.factor.ln(),
                        hi.ln(),
                        FG.stroke_width(1),
                        10,
                    )
                })
            }))?;
            Ok(())
        },
    );
    chart.table(table)
}

/// The factor axis: linear in the logarithm of the factor over ±`span`,
/// with its ticks at round factors rather than at round logarithms.
struct FactorAxis {
    span: f64,
    ticks: Vec<f64>,
}

impl Ranged for FactorAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    /// A value beyond the span (an unbounded interval's end is infinite)
    /// is drawn at the edge; one that is not a number, in the middle.
    fn map(&self, value: &f64, (from, to): (i32, i32)) -> i32 {
        let share = (value + self.span) / (2.0 * self.span);
        let share = if share.is_nan() {
            0.5
        } else {
            share.clamp(0.0, 1.0)
        };
        from + (share * f64::from(to - from)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        -self.span..self.span
    }
}

/// Tick marks of the factor axis, in its log coordinates: round factors
/// (0.9×, 1×, 1.1× …) spread over ±`span`, coarser as the span grows.
fn factor_ticks(span: f64) -> Vec<f64> {
    const SETS: [&[f64]; 5] = [
        &[0.9, 0.95, 0.98, 1.0, 1.02, 1.05, 1.1],
        &[0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5],
        &[0.33, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0],
        &[0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0],
        &[0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0],
    ];
    let set = SETS
        .iter()
        .find(|set| set[set.len() - 1].ln() >= span * 0.8)
        .unwrap_or(&SETS[SETS.len() - 1]);
    set.iter()
        .map(|f| f.ln())
        .filter(|x| x.abs() <= span)
        .collect()
}

/// A table of differences: one row per key, one column per group.
fn differences(list: &[Difference], groups: &[String], caption: &str) -> Option<Table> {
    if list.is_empty() {
        return None;
    }
    let mut t = Table::new(std::iter::once("what".to_owned()).chain(groups.iter().cloned()))
        .caption(caption);
    for d in list {
        let mut row = vec![d.key.clone()];
        for g in groups {
            row.push(d.values.get(g).cloned().unwrap_or_else(|| "–".into()));
        }
        t.row(row);
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::factor_ticks;

    fn factors(span: f64) -> Vec<String> {
        factor_ticks(span)
            .iter()
            .map(|x| format!("{:.2}", x.exp()))
            .collect()
    }

    #[test]
    fn the_factor_axis_is_marked_at_round_factors_for_any_span() {
        // ±6%: every mark inside, 1 among them.
        assert_eq!(factors(0.062), ["0.95", "0.98", "1.00", "1.02", "1.05"]);
        assert_eq!(factors(1.2f64.ln()), ["0.90", "1.00", "1.10"]);
        assert_eq!(
            factors(3.5f64.ln()),
            ["0.33", "0.50", "0.70", "1.00", "1.50", "2.00", "3.00"]
        );
        assert_eq!(
            factors(6.0f64.ln()),
            ["0.20", "0.50", "1.00", "2.00", "5.00"]
        );
        assert_eq!(
            factors(12.0f64.ln()),
            ["0.10", "0.20", "0.50", "1.00", "2.00", "5.00", "10.00"]
        );
        assert!(factors(1e5f64.ln()).contains(&"100.00".to_owned()));
    }
}
