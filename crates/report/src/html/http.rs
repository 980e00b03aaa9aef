//! The charts of an HTTP run (and of the HTTP line of a quick run, whose
//! metrics carry the prefix `http_`): the latency spectrum, corrected and
//! uncorrected for open-model runs, and the answers by status and error.

use dyno_model::Run;
use plotters::prelude::*;

use super::chart::{self, Chart, FG, GRID, WORSE, colour, font};
use super::latency::{self, Series};
use super::markup::{Table, esc};

/// The HTTP charts of `run`, reading metrics named `{prefix}latency_ns` …
pub fn charts(run: &Run, prefix: &str) -> Vec<String> {
    let name = |n: &str| format!("{prefix}{n}");
    let mut out = Vec::new();
    let mut series = Vec::new();
    let open = run.metric(&name("latency_uncorrected_ns")).is_some();
    let corrected = if open {
        "latency (corrected: from due time)"
    } else {
        "latency"
    };
    series.extend(Series::of(corrected, run.metric(&name("latency_ns"))));
    series.extend(Series::of(
        "uncorrected (from send)",
        run.metric(&name("latency_uncorrected_ns")),
    ));
    if let Some(c) = latency::spectrum(
        "http-latency-spectrum",
        "HTTP latency by percentile",
        &series,
    ) {
        let c = if open {
            let note = c.note.clone().unwrap_or_default();
            c.note(format!(
                "{note} Open model: the corrected latency counts from each request's due time, so a stall shows; the uncorrected one from its send."
            ))
        } else {
            c
        };
        out.push(c.html());
    }
    if let Some(c) = answers(run, prefix) {
        out.push(c.html());
    }
    if out.is_empty() {
        out.push("<p class=\"note\">No latency histogram or answer counts in this run.</p>".into());
    }
    out.push(format!(
        "<p class=\"note\">{}</p>",
        esc(
            "The run record keeps no per-second timeline, so req/s and p99 over time are not drawn; `dyno http --latency-log FILE` writes one per second (HdrHistogram log format)."
        )
    ));
    out
}

/// Answers by status code and failures by error class, as bars.
fn answers(run: &Run, prefix: &str) -> Option<Chart> {
    let status = format!("{prefix}status_");
    let errors = format!("{prefix}errors_");
    let mut bars: Vec<(String, f64, RGBColor)> = Vec::new();
    for m in &run.metrics {
        if let Some(code) = m.name.strip_prefix(&status) {
            let c = if code.starts_with(['2', '3']) {
                colour(0)
            } else {
                WORSE
            };
            bars.push((format!("HTTP {code}"), m.value, c));
        } else if let Some(class) = m.name.strip_prefix(&errors) {
            bars.push((
                format!("error: {}", class.replace('_', " ")),
                m.value,
                WORSE,
            ));
        }
    }
    if bars.is_empty() {
        return None;
    }
    let n = bars.len();
    let max = bars.iter().map(|b| b.1).fold(0.0, f64::max);
    let height = 90 + 34 * n as u32;
    let labels: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
    let chart = Chart::draw(
        "http-answers",
        "HTTP answers by status and errors by class",
        (1, n),
        (chart::WIDTH, height),
        |root| {
            let mut c = ChartBuilder::on(root)
                .margin(12)
                .margin_right(34)
                .x_label_area_size(40)
                .y_label_area_size(150)
                .build_cartesian_2d(chart::from_zero(max), -0.5f64..(n as f64 - 0.5))?;
            c.configure_mesh()
                .disable_y_mesh()
                .bold_line_style(GRID)
                .light_line_style(TRANSPARENT)
                .axis_style(FG)
                .label_style(font(12))
                .axis_desc_style(font(13))
                .x_desc("count")
                .y_labels(n)
                .y_label_formatter(&|y| category(&labels, *y))
                .x_label_formatter(&chart::tick)
                .draw()?;
            c.draw_series(bars.iter().enumerate().map(|(i, (_, v, col))| {
                let y = i as f64;
                Rectangle::new([(0.0, y - 0.35), (*v, y + 0.35)], col.filled())
            }))?;
            Ok(())
        },
    );
    let mut table = Table::new(["answer", "count"]);
    for (label, v, _) in &bars {
        table.row([label.clone(), format!("{}", v.round() as u64)]);
    }
    Some(chart.table(table))
}

/// The label of the category at `y` (a whole index), or nothing between.
pub fn category(labels: &[String], y: f64) -> String {
    let i = y.round();
    if (y - i).abs() > 1e-6 || i < 0.0 {
        return String::new();
    }
    labels
        .get(i as usize)
        .map(|s| shorten(s, 28))
        .unwrap_or_default()
}

/// `s` cut to `max` characters with an ellipsis.
pub fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let cut: String = s.chars().take(max - 1).collect();
        format!("{cut}…")
    }
}
