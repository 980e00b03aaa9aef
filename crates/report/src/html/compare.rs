//! The charts of a comparison (kind `compare`, made by `dyno compare`): per
//! candidate group, one bar per matched metric showing its improvement
//! factor with the interval as a whisker and the noise band shaded, grouped
//! by kind, the geometric mean on top; then what differs between the sides.
//!
//! Improvement factor: right is always better. For a higher-is-better
//! metric it is the stored ratio (candidate / baseline), for a
//! lower-is-better one baseline / candidate, its interval [1/high, 1/low].
//! The axis is logarithmic (ln of the factor), centred on 1.

use dyno_model::{Direction, Metric, Run};
use dyno_stats::compare::Verdict;
use plotters::prelude::*;

use super::chart::{self, BETTER, Chart, FG, GRID, NEUTRAL, WORSE, font};
use super::http::category;
use super::markup::{Table, esc};
use crate::{Comparison, format_value};

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
        .label("verdict")
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
    }
}

pub fn charts(run: &Run) -> Vec<String> {
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
    for (key, caption) in [
        ("environment_differences", "What differs in the environment"),
        ("setting_differences", "What differs in the settings"),
    ] {
        if let Some(t) = differences(run, key, &c.groups, caption) {
            out.push(t.html());
        }
    }
    if let Some(list) = run.settings["unmatched"]
        .as_array()
        .filter(|l| !l.is_empty())
    {
        let mut t = Table::new(["group", "metric without a partner"])
            .caption("Metrics only one side has (not compared)");
        for u in list {
            t.row([
                u["group"].as_str().unwrap_or_default(),
                u["metric"].as_str().unwrap_or_default(),
            ]);
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

/// The improvement chart of one candidate group.
fn factors(c: &Comparison, candidate: &str) -> Chart {
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
    if let Some(gm) = c.group_metric("geomean", candidate) {
        let interval = gm.uncertainty.as_ref().map(|u| (u.low, u.high));
        let colour = match interval {
            Some((lo, _)) if lo > 1.0 + c.noise => BETTER,
            Some((_, hi)) if hi < 1.0 / (1.0 + c.noise) => WORSE,
            _ => NEUTRAL,
        };
        bars.push(Bar {
            label: format!("geomean ({} metrics)", gm.label("metrics").unwrap_or("all")),
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
            label: format!("{} · {}", r.kind, crate::metric_title(r.metric)),
            factor,
            interval,
            colour: verdict_colour(v),
        });
        table.row([
            r.kind.to_owned(),
            r.metric.to_owned(),
            format_value(r.baseline.value, r.baseline.unit),
            format_value(r.candidate.value, r.candidate.unit),
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
            let mut ch = ChartBuilder::on(root)
                .margin(12)
                .margin_right(34)
                .x_label_area_size(42)
                .y_label_area_size(250)
                .build_cartesian_2d(-span..span, -0.6f64..(n as f64 - 0.4))?;
            ch.configure_mesh()
                .disable_y_mesh()
                .bold_line_style(GRID)
                .light_line_style(TRANSPARENT)
                .axis_style(FG)
                .label_style(font(12))
                .axis_desc_style(font(13))
                .x_desc("improvement factor (log scale; > 1 is better)")
                .y_labels(n.max(1))
                .y_label_formatter(&|y| category(&labels, top - *y))
                .x_label_formatter(&|x| format!("{}×", chart::num(x.exp())))
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

/// A table of `settings[key]`: `[{key, values: {group: value}}]`.
fn differences(run: &Run, key: &str, groups: &[String], caption: &str) -> Option<Table> {
    let list = run.settings[key].as_array().filter(|l| !l.is_empty())?;
    let mut t = Table::new(std::iter::once("what".to_owned()).chain(groups.iter().cloned()))
        .caption(caption);
    for d in list {
        let mut row = vec![d["key"].as_str().unwrap_or_default().to_owned()];
        for g in groups {
            row.push(match &d["values"][g] {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Null => "–".into(),
                v => v.to_string(),
            });
        }
        t.row(row);
    }
    Some(t)
}
