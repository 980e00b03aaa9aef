//! Latency distributions drawn from stored HDR histograms: the percentile
//! spectrum on a "nines" axis (x = 1/(1 − q), so 90%, 99%, 99.9% … are
//! equally spaced, as HdrHistogram's plotter draws it), shared by HTTP and
//! disk runs.

use dyno_model::Metric;
use dyno_stats::hdr;
use hdrhistogram::Histogram;
use plotters::prelude::*;

use super::chart::{self, Chart, TimeUnit, colour, is_decade, swatch};
use super::markup::Table;

/// Points per decade of the nines axis.
const PER_DECADE: u32 = 10;
/// The axis stops at 99.99999%: beyond it even a day-long run has few
/// samples per point.
const MAX_DECADES: u32 = 7;

/// One named distribution.
#[derive(Debug)]
pub struct Series {
    pub name: String,
    pub histogram: Histogram<u64>,
}

impl Series {
    /// The decoded histogram of `metric`, if it has one that decodes and
    /// holds a sample.
    pub fn of(name: impl Into<String>, metric: Option<&Metric>) -> Option<Series> {
        let h = hdr::from_model(metric?.histogram.as_ref()?).ok()?;
        (!h.is_empty()).then(|| Series {
            name: name.into(),
            histogram: h,
        })
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
                (x, h.value_at_quantile(q) as f64)
            })
            .collect();
        out.push((10f64.powi(decades as i32), h.max() as f64));
        out
    }
}

/// `99.9%` for x = 1000.
pub fn nines(x: f64) -> String {
    let q = 100.0 * (1.0 - 1.0 / x);
    let digits = (x.log10().round() as i32 - 2).max(0) as usize;
    format!("{q:.digits$}%")
}

/// The percentile spectrum of `series` on one nines axis.
pub fn spectrum(id: &str, title: &str, series: &[Series]) -> Option<Chart> {
    if series.is_empty() {
        return None;
    }
    let decades = series.iter().map(Series::decades).max().unwrap_or(2);
    let lines: Vec<Vec<(f64, f64)>> = series.iter().map(|s| s.points(decades)).collect();
    let max_ns = lines.iter().flatten().map(|p| p.1).fold(0.0f64, f64::max);
    let unit = TimeUnit::for_max_ns(max_ns);
    let x_max = 10f64.powi(decades as i32);
    let points = lines.iter().map(Vec::len).sum();
    let mut chart = Chart::draw(
        id,
        title,
        (series.len(), points),
        (chart::WIDTH, chart::HEIGHT),
        |root| {
            let mut c = ChartBuilder::on(root)
                .margin(12)
                .margin_right(34)
                .x_label_area_size(42)
                .y_label_area_size(64)
                .build_cartesian_2d(
                    (1f64..x_max).log_scale(),
                    chart::from_zero(max_ns / unit.divisor),
                )?;
            chart::mesh(&mut c)
                .x_desc("percentile (log scale of 1/(1 − q))")
                .y_desc(format!("latency ({})", unit.name))
                .x_label_formatter(&|x| {
                    if is_decade(*x) {
                        nines(*x)
                    } else {
                        String::new()
                    }
                })
                .y_label_formatter(&chart::tick)
                .draw()?;
            for (i, (s, line)) in series.iter().zip(&lines).enumerate() {
                let c2 = colour(i);
                c.draw_series(LineSeries::new(
                    line.iter().map(|&(x, v)| (x, v / unit.divisor)),
                    c2.stroke_width(2),
                ))?
                .label(s.name.clone())
                .legend(swatch(c2));
            }
            chart::legend(&mut c)
        },
    );
    let mut table = Table::new(
        std::iter::once("percentile".to_owned()).chain(series.iter().map(|s| s.name.clone())),
    );
    for q in [50.0, 75.0, 90.0, 99.0, 99.9, 99.99] {
        let mut row = vec![format!("{q}%")];
        row.extend(
            series
                .iter()
                .map(|s| crate::format_duration_ns(s.histogram.value_at_percentile(q) as f64)),
        );
        table.row(row);
    }
    let mut row = vec!["max".to_owned()];
    row.extend(
        series
            .iter()
            .map(|s| crate::format_duration_ns(s.histogram.max() as f64)),
    );
    table.row(row);
    let mut row = vec!["samples".to_owned()];
    row.extend(series.iter().map(|s| s.histogram.len().to_string()));
    table.row(row);
    chart = chart.table(table).note(format!(
        "Read from the stored HDR histograms, {PER_DECADE} points per decade of the axis up to the last one the sample count resolves, then the maximum."
    ));
    Some(chart)
}
