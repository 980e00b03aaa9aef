//! The charts of a `dyno run` (kind `exec`): each command's wall times as a
//! box (quartiles, whiskers to the furthest run inside Tukey's inner
//! fences) with every run as a dot and outliers marked; for a parameter
//! sweep, the mean time against the parameter with its interval.

use std::collections::BTreeMap;

use dyno_model::Run;
use dyno_model::record::ExecRecord;
use dyno_stats::outliers::{quantile_sorted, tukey_fences};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::chart::{self, Chart, Key, Mark, TimeUnit, WORSE, colour};
use super::http::category;
use super::markup::Table;
use dyno_model::record::{Bench, benches};
use dyno_model::units;

pub(super) fn charts(run: &Run) -> Vec<String> {
    let benches = benches(run);
    let mut out = Vec::new();
    if let Some(c) = distribution(&benches) {
        out.push(c.html());
    }
    if let Some(c) = sweep(run, &benches) {
        out.push(c.html());
    }
    if out.is_empty() {
        out.push("<p class=\"note\">No timed runs in this record.</p>".into());
    }
    out
}

/// Wall times per command: box, whiskers, every run a dot.
fn distribution(benches: &[Bench]) -> Option<Chart> {
    let with: Vec<&Bench> = benches
        .iter()
        .filter(|b| !b.wall.samples.is_empty())
        .collect();
    if with.is_empty() {
        return None;
    }
    let n = with.len();
    let max = with
        .iter()
        .flat_map(|b| b.wall.samples.iter().copied())
        .fold(0.0f64, f64::max);
    let unit = TimeUnit::for_max_ns(max);
    let labels: Vec<String> = with.iter().map(|b| b.name.to_owned()).collect();
    let dots: usize = with.iter().map(|b| b.wall.samples.len()).sum();
    let mut table = Table::new([
        "command", "runs", "min", "Q1", "median", "Q3", "max", "outliers",
    ]);
    let chart = Chart::draw(
        "exec-distribution",
        "Wall time of each run, per command",
        (n, dots),
        (chart::WIDTH, 110 + 46 * n as u32),
        |root| {
            let mut c = chart::builder(root, 34, (42, 190)).build_cartesian_2d(
                chart::from_zero(max / unit.divisor),
                -0.5f64..(n as f64 - 0.5),
            )?;
            chart::mesh(&mut c)
                .disable_y_mesh()
                .x_desc(format!("wall time ({})", unit.name))
                .y_labels(n)
                .y_label_formatter(&|y| category(&labels, *y, 28))
                .x_label_formatter(&chart::tick)
                .draw()?;
            for (i, b) in with.iter().enumerate() {
                let y = i as f64;
                let col = colour(i);
                let s: Vec<f64> = b.wall.samples.iter().map(|v| v / unit.divisor).collect();
                let mut sorted = s.clone();
                sorted.sort_by(f64::total_cmp);
                let fences = tukey_fences(&s);
                let q = |p| quantile_sorted(&sorted, p).unwrap_or(f64::NAN);
                let (q1, med, q3) = (q(0.25), q(0.5), q(0.75));
                let inside =
                    |v: f64| fences.is_none_or(|f| v >= f.lower_inner && v <= f.upper_inner);
                let lo = sorted.iter().copied().find(|&v| inside(v)).unwrap_or(q1);
                let hi = sorted
                    .iter()
                    .rev()
                    .copied()
                    .find(|&v| inside(v))
                    .unwrap_or(q3);
                c.draw_series(std::iter::once(Rectangle::new(
                    [(q1, y - 0.3), (q3, y + 0.3)],
                    col.mix(0.25).filled(),
                )))?;
                c.draw_series(std::iter::once(Rectangle::new(
                    [(q1, y - 0.3), (q3, y + 0.3)],
                    col.stroke_width(1),
                )))?;
                c.draw_series(
                    [
                        vec![(med, y - 0.3), (med, y + 0.3)],
                        vec![(lo, y), (q1, y)],
                        vec![(q3, y), (hi, y)],
                    ]
                    .into_iter()
                    .map(|p| PathElement::new(p, col.stroke_width(2))),
                )?;
                let outliers = s.iter().filter(|&&v| !inside(v)).count();
                // Dots spread vertically by their run index, so equal
                // times stay visible.
                let k = s.len().max(1) as f64;
                c.draw_series(s.iter().enumerate().map(|(j, &v)| {
                    let dy = -0.22 + 0.44 * (j as f64 + 0.5) / k;
                    if inside(v) {
                        Circle::new((v, y + dy), 3, col.filled())
                    } else {
                        Circle::new((v, y + dy), 5, WORSE.stroke_width(2))
                    }
                }))?;
                let t = |v: f64| units::duration(v * unit.divisor);
                table.row([
                    b.name.to_owned(),
                    s.len().to_string(),
                    t(sorted[0]),
                    t(q1),
                    t(med),
                    t(q3),
                    t(sorted[sorted.len() - 1]),
                    outliers.to_string(),
                ]);
            }
            Ok(())
        },
    );
    Some(chart.table(table).note(
        "Box: first to third quartile with the median; whiskers reach the furthest run inside Tukey's inner fences (1.5 IQR); runs outside them are outliers, drawn as red rings (kept, not removed).",
    ))
}

/// For a sweep: mean wall time against the first parameter, one line per
/// value of the other parameters, each point with its interval.
fn sweep(run: &Run, benches: &[Bench]) -> Option<Chart> {
    let first = benches
        .iter()
        .find_map(|b| b.parameters.keys().next().copied())?;
    let groups = sweep_groups(run, benches, first);
    let axis = SweepAxis::of(benches, first);
    let mut xs: Vec<f64> = axis.categories.iter().map(|v| axis.x(v)).collect();
    xs.sort_by(f64::total_cmp);
    let (x_lo, x_hi) = (xs[0], xs[xs.len() - 1]);
    let max = benches
        .iter()
        .map(|b| b.wall.uncertainty.as_ref().map_or(b.wall.value, |u| u.high))
        .fold(0.0f64, f64::max);
    let unit = TimeUnit::for_max_ns(max);
    let points: usize = groups.values().map(Vec::len).sum();
    let mut table = Table::new(["series", first, "mean", "interval", "runs"]);
    let cats: Vec<String> = axis.categories.iter().map(|c| (*c).to_owned()).collect();
    // One series needs no legend.
    let keys: Vec<Key> = if groups.len() > 1 {
        groups
            .keys()
            .enumerate()
            .map(|(i, key)| (series_name(key), Mark::Line(colour(i))))
            .collect()
    } else {
        Vec::new()
    };
    let chart = Chart::draw(
        "exec-sweep",
        format!("Mean wall time against {first}"),
        (groups.len(), points),
        (chart::WIDTH, chart::HEIGHT),
        |root| {
            let area = chart::legend_above(root, &keys)?;
            let mut c = chart::builder(&area, 34, (42, 64)).build_cartesian_2d(
                chart::padded(x_lo, x_hi),
                chart::from_zero(max / unit.divisor),
            )?;
            let mut mesh = chart::mesh(&mut c);
            mesh.x_desc(first.to_owned())
                .y_desc(format!("mean wall time ({})", unit.name))
                .y_label_formatter(&chart::tick);
            let cat_label = |x: &f64| category(&cats, *x, 28);
            if axis.numeric {
                mesh.x_label_formatter(&chart::tick);
            } else {
                mesh.x_labels(cats.len()).x_label_formatter(&cat_label);
            }
            mesh.draw()?;
            for (i, (key, bs)) in groups.iter().enumerate() {
                let mut pts: Vec<(f64, &Bench)> = bs
                    .iter()
                    .map(|b| (axis.x(b.parameters[first]), *b))
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                draw_sweep_series(&mut c, &pts, colour(i), unit)?;
                for (_, b) in &pts {
                    table.row(sweep_row(&series_name(key), first, b));
                }
            }
            Ok(())
        },
    );
    Some(chart.table(table).note(
        "Each point is the mean of the runs at that value; bars are its confidence interval as stored (Student t below 10 runs, bootstrap from 10).",
    ))
}

/// The sweep's series, by key: the other parameters, and the command
/// template when the sweep timed several.
fn sweep_groups<'r, 'b>(
    run: &Run,
    benches: &'r [Bench<'b>],
    first: &str,
) -> BTreeMap<String, Vec<&'r Bench<'b>>> {
    let templates = ExecRecord::templates(run);
    let mut groups: BTreeMap<String, Vec<&Bench>> = BTreeMap::new();
    for b in benches {
        let Some(_) = b.parameters.get(first) else {
            continue;
        };
        let mut key: Vec<String> = b
            .parameters
            .iter()
            .filter(|(k, _)| **k != first)
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if templates.len() > 1 {
            let t = templates.iter().find(|t| {
                let mut s = (**t).to_owned();
                for (k, v) in &b.parameters {
                    s = s.replace(&format!("{{{k}}}"), v);
                }
                s == b.name
            });
            key.insert(0, t.map_or_else(|| b.name.to_owned(), |t| (*t).to_owned()));
        }
        groups.entry(key.join(", ")).or_default().push(b);
    }
    groups
}

/// A series' name in the legend and the table: its key, or `mean` for the
/// only one.
fn series_name(key: &str) -> String {
    if key.is_empty() {
        "mean".to_owned()
    } else {
        key.to_owned()
    }
}

/// The sweep's x axis: the first parameter's values as numbers when they
/// all are, else as categories in the order first seen.
struct SweepAxis<'a> {
    numeric: bool,
    categories: Vec<&'a str>,
}

impl<'a> SweepAxis<'a> {
    fn of(benches: &[Bench<'a>], first: &str) -> Self {
        let numeric = benches
            .iter()
            .filter_map(|b| b.parameters.get(first))
            .all(|v| v.parse::<f64>().is_ok());
        let mut categories: Vec<&'a str> = Vec::new();
        for b in benches {
            if let Some(v) = b.parameters.get(first)
                && !categories.contains(v)
            {
                categories.push(v);
            }
        }
        SweepAxis {
            numeric,
            categories,
        }
    }

    /// Where the value `v` lies on the axis.
    fn x(&self, v: &str) -> f64 {
        if self.numeric {
            v.parse().unwrap_or(0.0)
        } else {
            self.categories.iter().position(|c| *c == v).unwrap_or(0) as f64
        }
    }
}

/// One series of the sweep: its line, each point's interval and the
/// points.
fn draw_sweep_series(
    c: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    pts: &[(f64, &Bench)],
    col: RGBColor,
    unit: TimeUnit,
) -> chart::DrawResult {
    c.draw_series(LineSeries::new(
        pts.iter().map(|(x, b)| (*x, b.wall.value / unit.divisor)),
        col.stroke_width(2),
    ))?;
    c.draw_series(pts.iter().filter_map(|(x, b)| {
        let u = b.wall.uncertainty.as_ref()?;
        Some(ErrorBar::new_vertical(
            *x,
            u.low / unit.divisor,
            b.wall.value / unit.divisor,
            u.high / unit.divisor,
            col.stroke_width(1),
            8,
        ))
    }))?;
    c.draw_series(
        pts.iter()
            .map(|(x, b)| Circle::new((*x, b.wall.value / unit.divisor), 3, col.filled())),
    )?;
    Ok(())
}

/// A point's row of the sweep's table.
fn sweep_row(series: &str, first: &str, b: &Bench) -> [String; 5] {
    [
        series.to_owned(),
        b.parameters[first].to_owned(),
        units::duration(b.wall.value),
        b.wall.uncertainty.as_ref().map_or_else(String::new, |u| {
            format!("{} – {}", units::duration(u.low), units::duration(u.high))
        }),
        b.wall.samples.len().to_string(),
    ]
}
