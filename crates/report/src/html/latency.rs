//! Latency distributions drawn from stored HDR histograms: the percentile
//! spectrum on a "nines" axis (x = 1/(1 − q), so 90%, 99%, 99.9% … are
//! equally spaced, as HdrHistogram's plotter draws it), shared by HTTP and
//! disk runs.

use dyno_model::names::common;
use dyno_model::{Metric, Run};
use dyno_stats::hdr;
use hdrhistogram::Histogram;
use plotters::coord::combinators::LogCoord;
use plotters::coord::ranged1d::Ranged;
use plotters::prelude::*;

use super::chart::{self, Chart, Key, LATENCY, Mark, TimeUnit, UNCORRECTED, colour, is_decade};
use super::markup::Table;

/// Points per decade of the nines axis.
const PER_DECADE: u32 = 10;
/// The axis stops at 99.99999%: beyond it even a day-long run has few
/// samples per point.
const MAX_DECADES: u32 = 7;

/// One named distribution.
#[derive(Debug)]
pub(super) struct Series {
    pub name: String,
    pub histogram: Histogram<u64>,
    /// Its colour where it has its own on every chart (the latency and
    /// the uncorrected latency); else the palette's, in order.
    pub colour: Option<RGBColor>,
}

impl Series {
    /// The decoded histogram of `metric`, if it has one that decodes and
    /// holds a sample.
    pub(super) fn of(name: impl Into<String>, metric: Option<&Metric>) -> Option<Series> {
        let h = hdr::from_model(metric?.histogram.as_ref()?).ok()?;
        (!h.is_empty()).then(|| Series {
            name: name.into(),
            histogram: h,
            colour: None,
        })
    }

    /// `histogram` as a series, if there is one and it holds a sample.
    pub(super) fn of_histogram(
        name: impl Into<String>,
        histogram: Option<&Histogram<u64>>,
    ) -> Option<Series> {
        let h = histogram?;
        (!h.is_empty()).then(|| Series {
            name: name.into(),
            histogram: h.clone(),
            colour: None,
        })
    }

    /// The series drawn in `colour` on every chart.
    fn coloured(self, colour: RGBColor) -> Series {
        Series {
            colour: Some(colour),
            ..self
        }
    }

    /// The decades the axis covers: as many as the sample count resolves
    /// (10^d ≤ count), at least two.
    fn decades(&self) -> u32 {
        let count = self.histogram.len().max(1) as f64;
        (count.log10().floor() as u32).clamp(2, MAX_DECADES)
    }

    /// (x = 1/(1 − q), value in ns) every tenth of a decade, then the max.
    fn points(&self, decades: u32) -> Vec<(f64, f64)> {
        let h = &self.histogram;
        let mut out: Vec<(f64, f64)> = (0..=decades * PER_DECADE)
            .map(|k| {
                let x = 10f64.powf(f64::from(k) / f64::from(PER_DECADE));
                let q = 1.0 - 1.0 / x;
                (x, dyno_stats::hdr::value_at_percentile(h, q * 100.0) as f64)
            })
            .collect();
        out.push((10f64.powi(decades as i32), h.max() as f64));
        out
    }
}

/// A run's latency (`latency_ns` of quick's part `part`, `None` for a run's
/// own) and, for an open-model run, its
/// uncorrected latency, counted from the request's `since` (`send`,
/// `start`): the spectrum's series, each in its own colour on every chart
/// of the page, and whether the run is open-model.
pub(super) fn corrected_and_not(run: &Run, part: Option<&str>, since: &str) -> (Vec<Series>, bool) {
    let uncorrected = run.metric_of(part, common::LATENCY_UNCORRECTED);
    let open = uncorrected.is_some();
    let series = latency_series(
        Series::of(latency_name(open), run.metric_of(part, common::LATENCY)),
        Series::of(uncorrected_name(since), uncorrected),
    );
    (series, open)
}

/// The spectrum's series of a run's `latency` (corrected, where `open`)
/// and `uncorrected` latency, counted from the request's `since`, as
/// [`corrected_and_not`] reads them from its metrics.
pub(super) fn corrected_and_not_of(
    latency: Option<&Histogram<u64>>,
    uncorrected: Option<&Histogram<u64>>,
    open: bool,
    since: &str,
) -> Vec<Series> {
    latency_series(
        Series::of_histogram(latency_name(open), latency),
        Series::of_histogram(uncorrected_name(since), uncorrected),
    )
}

/// What the spectrum calls the latency: corrected in the open model.
fn latency_name(open: bool) -> &'static str {
    if open {
        "latency (corrected: from due time)"
    } else {
        "latency"
    }
}

/// What the spectrum calls the uncorrected latency.
fn uncorrected_name(since: &str) -> String {
    format!("uncorrected (from {since})")
}

/// The latency and the uncorrected latency, each in its own colour.
fn latency_series(latency: Option<Series>, uncorrected: Option<Series>) -> Vec<Series> {
    latency
        .map(|s| s.coloured(LATENCY))
        .into_iter()
        .chain(uncorrected.map(|s| s.coloured(UNCORRECTED)))
        .collect()
}

/// `99.9%` for x = 1000.
pub(super) fn nines(x: f64) -> String {
    let q = 100.0 * (1.0 - 1.0 / x);
    let digits = (x.log10().round() as i32 - 2).max(0) as usize;
    format!("{q:.digits$}%")
}

/// How far apart two series' medians may be before the latency axis turns
/// logarithmic: past it, a linear axis scaled to the slower one flattens
/// the faster one to its floor (disk: SEQ1M in ms beside RND4K in µs).
const LOG_AXIS_SPREAD: f64 = 10.0;

/// The percentile spectrum of `series` on one nines axis. The latency axis
/// is linear from zero, or logarithmic when the series' medians are more
/// than [`LOG_AXIS_SPREAD`] times apart, so every line keeps its shape.
pub(super) fn spectrum(id: &str, title: &str, series: &[Series]) -> Option<Chart> {
    if series.is_empty() {
        return None;
    }
    let decades = series.iter().map(Series::decades).max().unwrap_or(2);
    let lines: Vec<Vec<(f64, f64)>> = series.iter().map(|s| s.points(decades)).collect();
    let max_ns = lines.iter().flatten().map(|p| p.1).fold(0.0f64, f64::max);
    let medians: Vec<f64> = series
        .iter()
        .map(|s| dyno_stats::hdr::value_at_percentile(&s.histogram, 50.0).max(1) as f64)
        .collect();
    let spread = medians.iter().copied().fold(0.0f64, f64::max)
        / medians.iter().copied().fold(f64::INFINITY, f64::min);
    let log = spread >= LOG_AXIS_SPREAD;
    let unit = TimeUnit::for_max_ns(max_ns);
    let x_max = 10f64.powi(decades as i32);
    let points = lines.iter().map(Vec::len).sum();
    let colours: Vec<RGBColor> = series
        .iter()
        .enumerate()
        .map(|(i, s)| s.colour.unwrap_or_else(|| colour(i)))
        .collect();
    let scaled: Vec<Vec<(f64, f64)>> = lines
        .iter()
        .map(|l| l.iter().map(|&(x, v)| (x, v / unit.divisor)).collect())
        .collect();
    let mut chart = Chart::draw(
        id,
        title,
        (series.len(), points),
        (chart::WIDTH, chart::HEIGHT),
        |root| {
            let keys: Vec<Key> = series
                .iter()
                .zip(&colours)
                .map(|(s, &c)| (s.name.clone(), Mark::Line(c)))
                .collect();
            let area = chart::legend_above(root, &keys)?;
            let builder = || chart::builder(&area, 34, (42, 64));
            let x = (1f64..x_max).log_scale();
            if log {
                let floor = scaled
                    .iter()
                    .flatten()
                    .map(|p| p.1)
                    .filter(|v| *v > 0.0)
                    .fold(f64::INFINITY, f64::min);
                let floor = if floor.is_finite() { floor / 1.5 } else { 1e-3 };
                let top = (max_ns / unit.divisor * 1.5).max(floor * 10.0);
                let clamped: Vec<Vec<(f64, f64)>> = scaled
                    .iter()
                    .map(|l| l.iter().map(|&(x, v)| (x, v.max(floor))).collect())
                    .collect();
                let data = (floor * 1.5, max_ns / unit.divisor);
                let mut c = builder().build_cartesian_2d(
                    x,
                    (floor..top)
                        .log_scale()
                        .with_key_points(chart::log_ticks((floor, top), data)),
                )?;
                chart::mesh(&mut c)
                    .y_desc(format!("latency ({}, log scale)", unit.name))
                    .y_label_formatter(&chart::tick)
                    .x_desc("percentile (log scale of 1/(1 − q))")
                    .x_label_formatter(&nines_tick)
                    .draw()?;
                draw_lines(&mut c, &clamped, &colours)
            } else {
                let mut c =
                    builder().build_cartesian_2d(x, chart::from_zero(max_ns / unit.divisor))?;
                chart::mesh(&mut c)
                    .y_desc(format!("latency ({})", unit.name))
                    .y_label_formatter(&chart::tick)
                    .x_desc("percentile (log scale of 1/(1 − q))")
                    .x_label_formatter(&nines_tick)
                    .draw()?;
                draw_lines(&mut c, &scaled, &colours)
            }
        },
    );
    let mut table = Table::new(
        std::iter::once("percentile".to_owned()).chain(series.iter().map(|s| s.name.clone())),
    );
    for q in [50.0, 75.0, 90.0, 99.0, 99.9, 99.99] {
        let mut row = vec![format!("{q}%")];
        row.extend(
            series.iter().map(|s| {
                dyno_model::units::duration(
                    dyno_stats::hdr::value_at_percentile(&s.histogram, q) as f64
                )
            }),
        );
        table.row(row);
    }
    let mut row = vec!["max".to_owned()];
    row.extend(
        series
            .iter()
            .map(|s| dyno_model::units::duration(s.histogram.max() as f64)),
    );
    table.row(row);
    let mut row = vec!["samples".to_owned()];
    row.extend(series.iter().map(|s| s.histogram.len().to_string()));
    table.row(row);
    let axis = if log {
        " The latency axis is logarithmic: the medians are more than ten times apart, and a linear axis would flatten the faster lines to zero."
    } else {
        ""
    };
    chart = chart.table(table).note(format!(
        "Read from the stored HDR histograms, {PER_DECADE} points per decade of the axis up to the last one the sample count resolves, then the maximum.{axis}"
    ));
    Some(chart)
}

/// A tick of the nines axis: labelled at each decade only.
fn nines_tick(x: &f64) -> String {
    if is_decade(*x) {
        nines(*x)
    } else {
        String::new()
    }
}

/// Each series' line, in its colour (its legend is above the chart).
fn draw_lines<Y>(
    c: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<LogCoord<f64>, Y>>,
    lines: &[Vec<(f64, f64)>],
    colours: &[RGBColor],
) -> chart::DrawResult
where
    Y: Ranged<ValueType = f64>,
{
    for (line, c2) in lines.iter().zip(colours) {
        c.draw_series(LineSeries::new(line.iter().copied(), c2.stroke_width(2)))?;
    }
    Ok(())
}
