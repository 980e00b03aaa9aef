//! The charts of a scaling analysis (kind `scale`): measured speedup
//! against N with the ideal line and the stored Amdahl and USL fits drawn
//! as curves, the USL peak N* marked; then efficiency against N.
//!
//! The curves come from the fitted parameters the run stores: Amdahl
//! S(N) = 1/((1 − p) + p/N); USL X(N) = λN/(1 + σ(N − 1) + κN(N − 1)),
//! turned into a speedup by the rate of one unit that the measured points
//! imply (throughput / speedup).

use dyno_model::names::{label, scale};
use dyno_model::{Metric, Run, Unit};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::chart::{self, Chart, GRID, Key, Mark, colour};
use super::markup::Table;

struct Point {
    n: f64,
    speedup: f64,
    efficiency: Option<f64>,
    /// The measured value (time or throughput), for the table.
    measured: Option<String>,
    /// Rate of one unit implied by this point (throughput / speedup).
    unit_rate: Option<f64>,
}

fn fit(run: &Run, name: &str) -> Option<f64> {
    run.metrics
        .iter()
        .find(|m| m.name == name)
        .map(|m| m.value)
        .filter(|v| v.is_finite())
}

fn points(run: &Run) -> Vec<Point> {
    let mut out: Vec<Point> = Vec::new();
    for m in run.metrics.iter().filter(|m| m.name == scale::SPEEDUP) {
        let Some(n) = m.label(label::N).and_then(|n| n.parse::<f64>().ok()) else {
            continue;
        };
        let at = |name: &str| {
            run.metrics
                .iter()
                .find(|x| x.name == name && x.label(label::N) == m.label(label::N))
        };
        // The measured metric is the one labelled n that is not a derived
        // figure.
        let measured: Option<&Metric> = run.metrics.iter().find(|x| {
            x.label(label::N) == m.label(label::N)
                && x.labels.len() == 1
                && !matches!(
                    x.name.as_str(),
                    scale::SPEEDUP
                        | scale::EFFICIENCY
                        | scale::AMDAHL_PARALLEL_FRACTION
                        | scale::KARP_FLATT_SERIAL_FRACTION
                        | scale::BEST_SPEEDUP
                )
        });
        let rate = measured.map(|x| match x.unit {
            Unit::Ns => 1e9 / x.value,
            _ => x.value,
        });
        out.push(Point {
            n,
            speedup: m.value,
            efficiency: at(scale::EFFICIENCY).map(|e| e.value),
            measured: measured.map(|x| crate::format_value(x.value, x.unit)),
            unit_rate: rate
                .map(|r| r / m.value)
                .filter(|r| r.is_finite() && *r > 0.0),
        });
    }
    out.sort_by(|a, b| a.n.total_cmp(&b.n));
    out
}

/// The speedup chart's legend: the ideal line, the fits that were made
/// (Amdahl's p, USL's σ and κ), the measured points and the USL peak
/// where it is drawn.
fn speedup_keys(amdahl: Option<f64>, usl: Option<(f64, f64)>, peak: Option<f64>) -> Vec<Key> {
    let mut keys: Vec<Key> = vec![("ideal (S = N)".into(), Mark::Line(GRID))];
    if let Some(p) = amdahl {
        let p = crate::format_parallel_fraction(p);
        keys.push((format!("Amdahl fit, p = {p}"), Mark::Line(colour(1))));
    }
    if let Some((s, k)) = usl {
        let (s, k) = (chart::num(s), chart::num(k));
        keys.push((format!("USL fit, σ = {s}, κ = {k}"), Mark::Line(colour(2))));
    }
    keys.push(("measured".into(), Mark::Dot(colour(0))));
    if let Some(p) = peak {
        let p = chart::tick(&p);
        keys.push((format!("USL peak N* = {p}"), Mark::Triangle(colour(2))));
    }
    keys
}

pub(super) fn charts(run: &Run) -> Vec<String> {
    let pts = points(run);
    if pts.is_empty() {
        return vec!["<p class=\"note\">No scaling points in this run.</p>".into()];
    }
    let fits = Fits::of(run, &pts);
    let mut out = vec![speedup_chart(run, &pts, &fits).html()];
    if let Some(chart) = efficiency_chart(&pts, fits.x_lo, fits.x_hi) {
        out.push(chart.html());
    }
    out
}

/// The fits the run stores, the span of N the charts show and the fitted
/// curves over it, as speedups.
struct Fits {
    /// Amdahl's parallel fraction p.
    amdahl: Option<f64>,
    /// The USL's σ, κ and λ, with the rate of one unit at the first point.
    usl: Option<(f64, f64, f64, f64)>,
    /// The USL's peak N*, and the speedup there.
    peak: Option<f64>,
    peak_speedup: Option<f64>,
    x_lo: f64,
    x_hi: f64,
    amdahl_curve: Option<Vec<(f64, f64)>>,
    usl_curve: Option<Vec<(f64, f64)>>,
    /// The top of the speedup chart.
    y_max: f64,
}

impl Fits {
    fn of(run: &Run, pts: &[Point]) -> Fits {
        let n_lo = pts[0].n;
        let n_hi = pts[pts.len() - 1].n;
        let amdahl = fit(run, scale::AMDAHL_FIT_PARALLEL_FRACTION);
        let usl = match (
            fit(run, scale::USL_SIGMA),
            fit(run, scale::USL_KAPPA),
            fit(run, scale::USL_LAMBDA),
            pts[0].unit_rate,
        ) {
            (Some(s), Some(k), Some(l), Some(unit)) => Some((s, k, l, unit)),
            _ => None,
        };
        let peak = fit(run, scale::USL_PEAK_N);
        let peak_speedup = fit(run, scale::USL_PEAK_SPEEDUP);
        // Draw the curves a little past the last N, and to the peak if near.
        let mut x_hi = n_hi * 1.1;
        if let Some(p) = peak
            && p > n_hi
            && p < n_hi * 2.0
        {
            x_hi = p * 1.1;
        }
        let x_lo = (n_lo * 0.9).clamp(0.0, 1.0);
        let grid: Vec<f64> = (0..=120)
            .map(|i| x_lo.max(1.0) + (x_hi - x_lo.max(1.0)) * f64::from(i) / 120.0)
            .collect();
        let amdahl_curve: Option<Vec<(f64, f64)>> = amdahl.map(|p| {
            grid.iter()
                .map(|&n| (n, 1.0 / ((1.0 - p) + p / n)))
                .collect()
        });
        let usl_curve: Option<Vec<(f64, f64)>> = usl.map(|(s, k, l, unit)| {
            grid.iter()
                .map(|&n| (n, l * n / (1.0 + s * (n - 1.0) + k * n * (n - 1.0)) / unit))
                .collect()
        });
        // The measured points and the fits set the height; the ideal line is
        // cut where it leaves the chart.
        let y_max = pts
            .iter()
            .map(|p| p.speedup)
            .chain(amdahl_curve.iter().flatten().map(|p| p.1))
            .chain(usl_curve.iter().flatten().map(|p| p.1))
            .filter(|v| v.is_finite())
            .fold(1.0f64, f64::max)
            * 1.25;
        Fits {
            amdahl,
            usl,
            peak,
            peak_speedup,
            x_lo,
            x_hi,
            amdahl_curve,
            usl_curve,
            y_max,
        }
    }
}

/// Measured speedup against N with the ideal line, the fitted curves and
/// the USL peak; its table lists the points and its note the fits.
fn speedup_chart(run: &Run, pts: &[Point], fits: &Fits) -> Chart {
    let mut series = 2; // measured, ideal
    series += usize::from(fits.amdahl_curve.is_some()) + usize::from(fits.usl_curve.is_some());
    let keys = speedup_keys(
        fits.amdahl,
        fits.usl.map(|u| (u.0, u.1)),
        fits.peak
            .filter(|&p| p <= fits.x_hi && fits.peak_speedup.is_some()),
    );
    let speedup = Chart::draw(
        "scale-speedup",
        "Speedup against N, with the ideal line and the fitted models",
        (series, pts.len()),
        (chart::WIDTH, chart::HEIGHT + 40),
        |root| draw_speedup(root, &keys, pts, fits),
    );
    let mut table = Table::new(["N", "measured", "speedup", "efficiency"]);
    for p in pts {
        table.row([
            chart::tick(&p.n),
            p.measured.clone().unwrap_or_default(),
            format!("{:.3}×", p.speedup),
            p.efficiency
                .map_or_else(String::new, |e| format!("{:.1}%", e * 100.0)),
        ]);
    }
    speedup.table(table).note(fits_note(run, fits))
}

/// The speedup chart's drawing: legend, axes, the ideal line, the fitted
/// curves, the measured points and the USL peak where it falls in view.
fn draw_speedup(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    keys: &[Key],
    pts: &[Point],
    fits: &Fits,
) -> chart::DrawResult {
    let (x_lo, x_hi, y_max) = (fits.x_lo, fits.x_hi, fits.y_max);
    let area = chart::legend_above(root, keys)?;
    let mut c = against_n(
        &area,
        x_lo..x_hi,
        y_max,
        ("N (threads, jobs or processors)", "speedup (×)"),
    )?;
    let ideal_top = x_hi.min(y_max);
    c.draw_series(DashedLineSeries::new(
        [(1.0f64.max(x_lo), 1.0f64.max(x_lo)), (ideal_top, ideal_top)],
        6,
        4,
        GRID.stroke_width(2),
    ))?;
    if let Some(curve) = &fits.amdahl_curve {
        let col = colour(1);
        c.draw_series(LineSeries::new(curve.iter().copied(), col.stroke_width(2)))?;
    }
    if let Some(curve) = &fits.usl_curve {
        let col = colour(2);
        c.draw_series(LineSeries::new(curve.iter().copied(), col.stroke_width(2)))?;
    }
    let col = colour(0);
    c.draw_series(LineSeries::new(
        pts.iter().map(|p| (p.n, p.speedup)),
        col.stroke_width(1),
    ))?;
    c.draw_series(
        pts.iter()
            .map(|p| Circle::new((p.n, p.speedup), 4, col.filled())),
    )?;
    if let (Some(p), Some(sp)) = (fits.peak, fits.peak_speedup)
        && p <= x_hi
    {
        let top = y_max;
        c.draw_series(std::iter::once(PathElement::new(
            vec![(p, 0.0), (p, top)],
            colour(2).stroke_width(1),
        )))?;
        c.draw_series(std::iter::once(TriangleMarker::new(
            (p, sp),
            7,
            colour(2).filled(),
        )))?;
    }
    Ok(())
}

/// The speedup chart's note: the fits as stored.
fn fits_note(run: &Run, fits: &Fits) -> String {
    let mut shown = Vec::new();
    if let Some(p) = fits.amdahl {
        shown.push(format!("Amdahl p = {}", crate::format_parallel_fraction(p)));
    }
    if let Some((s, k, l, _)) = fits.usl {
        shown.push(format!(
            "USL σ = {}, κ = {}, λ = {}",
            chart::num(s),
            chart::num(k),
            chart::num(l)
        ));
    }
    if let Some(p) = fits.peak {
        let predicted = run
            .metric(scale::USL_PEAK_N)
            .and_then(|m| m.label(label::PREDICTED))
            == Some("true");
        shown.push(format!(
            "peak N* = {}{}",
            chart::tick(&p),
            if predicted {
                " (predicted, outside the measured range)"
            } else {
                ""
            }
        ));
    }
    if shown.is_empty() {
        "No fit is stored for this run.".to_owned()
    } else {
        format!("Fits as stored in the run: {}.", shown.join("; "))
    }
}

/// Efficiency against N, when any point has one.
fn efficiency_chart(pts: &[Point], x_lo: f64, x_hi: f64) -> Option<Chart> {
    let eff: Vec<(f64, f64)> = pts
        .iter()
        .filter_map(|p| Some((p.n, p.efficiency? * 100.0)))
        .collect();
    if eff.is_empty() {
        return None;
    }
    let top = eff.iter().map(|p| p.1).fold(100.0, f64::max) * 1.08;
    Some(Chart::draw(
        "scale-efficiency",
        "Efficiency (speedup / N) against N",
        (1, eff.len()),
        (chart::WIDTH, 240),
        |root| {
            let mut c = against_n(root, x_lo..x_hi, top, ("N", "efficiency (%)"))?;
            let col = colour(0);
            c.draw_series(LineSeries::new(eff.iter().copied(), col.stroke_width(2)))?;
            c.draw_series(eff.iter().map(|&p| Circle::new(p, 4, col.filled())))?;
            Ok(())
        },
    ))
}

/// A chart of a figure against N on `area`: linear axes, `x` across and 0
/// to `y_top` up, its mesh drawn with the titles `x_desc` and `y_desc`.
fn against_n<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, Shift>,
    x: std::ops::Range<f64>,
    y_top: f64,
    (x_desc, y_desc): (&str, &str),
) -> Result<
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    Box<dyn std::error::Error>,
> {
    let mut c = chart::builder(area, 34, (42, 56)).build_cartesian_2d(x, 0f64..y_top)?;
    chart::mesh(&mut c)
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&chart::tick)
        .y_label_formatter(&chart::tick)
        .draw()?;
    Ok(c)
}
