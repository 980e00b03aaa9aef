//! The HTML report: one self-contained, offline page of charts drawn from
//! [`Run`] values at report time, as inline SVG (plotters), with the
//! numbers behind each chart in a table. No script, no external font,
//! style or image; a Content-Security-Policy that forbids them says so.
//!
//! [`html_report`] draws every chart of every run for a few runs, and an
//! overview (headline over time, a table of runs) for more than
//! [`DETAILED_RUNS`], so the page stays small. [`html_trend`] draws one
//! metric across runs over time. Each chart is a
//! `<figure class="chart" data-chart="…" data-series="N" data-points="M">`.

mod capacity;
mod chart;
mod compare;
mod db;
mod disk;
mod exec;
mod http;
mod latency;
mod markup;
mod quick;
mod scale;
mod summary;

#[cfg(test)]
mod tests;

use std::fmt::Write as _;

use dyno_model::{Kind, Run};

pub use markup::{CSP, esc};

use markup::Table;

/// Up to this many runs, a report draws every chart of every run; above
/// it, the overview.
pub const DETAILED_RUNS: usize = 12;

/// The page of `runs`: each run's charts (or, above [`DETAILED_RUNS`]
/// runs, the overview). A run of kind `compare` is drawn as its
/// improvement factors with the noise band and its differences.
pub fn html_report(runs: &[Run]) -> String {
    let title = match runs {
        [one] => format!("dyno report: {} {}", one.kind, one.description),
        _ => format!("dyno report: {} runs", runs.len()),
    };
    page(&title, "", None, runs)
}

/// The page of a comparison made for the report (`dyno report --compare`):
/// the comparison's chart and tables first, then the runs it compared, as
/// [`html_report`] draws them (each in full, or the overview past
/// [`DETAILED_RUNS`]).
pub fn html_comparison(comparison: &Run, runs: &[Run]) -> String {
    let title = format!("dyno report: {}", comparison.description);
    let what = format!(": the comparison, then the {} runs it compared", runs.len());
    page(&title, &what, Some(comparison), runs)
}

/// A page titled `title`: the line saying what it is drawn from (`what`
/// added to it), `lead`'s section when there is one, then `runs`, each in
/// full or, past [`DETAILED_RUNS`], the overview.
fn page(title: &str, what: &str, lead: Option<&Run>, runs: &[Run]) -> String {
    let mut body = String::new();
    let _ = writeln!(body, "<h1>{}</h1>", esc(title));
    let _ = writeln!(
        body,
        "<p class=\"meta\">Drawn by dyno {} from the saved records{}. Charts are SVG; the numbers behind each are in the table below it.</p>",
        esc(env!("CARGO_PKG_VERSION")),
        esc(what)
    );
    if let Some(lead) = lead {
        body.push_str(&section_with(lead, &source_warnings(runs)));
    }
    if runs.len() > DETAILED_RUNS {
        body.push_str(&summary::overview(runs));
    } else {
        for run in runs {
            body.push_str(&section(run));
        }
    }
    markup::page(title, &body)
}

/// The page of one metric across `runs` over time, each point with its
/// interval. `metric` is a name as `dyno show` displays it, labels
/// included (`disk_iops{op=read, test=RND4K Q1T1}`). `None` when no run
/// has that metric.
pub fn html_trend(runs: &[Run], metric: &str) -> Option<String> {
    let chart = summary::trend(runs, metric)?;
    let title = format!("dyno trend: {metric}");
    let body = format!("<h1>{}</h1>\n{chart}", esc(&title));
    Some(markup::page(&title, &body))
}

/// One run's section: what it was, its warnings, its charts.
fn section(run: &Run) -> String {
    section_with(run, &[])
}

/// One of the compared runs' own warnings: its code, its words, and the
/// runs (id prefixes) that gave exactly these words.
#[derive(Debug)]
struct Source {
    code: String,
    message: String,
    runs: Vec<String>,
}

/// The compared runs' own warnings, one entry per distinct (code, message)
/// in the order they first appear, each with the runs it came from: runs
/// that said the same thing are grouped, different words under one code
/// stay apart (never the first run's words pinned on all of them).
fn source_warnings(runs: &[Run]) -> Vec<Source> {
    let mut out: Vec<Source> = Vec::new();
    for r in runs {
        let id = r.id.to_string()[..10].to_owned();
        for w in &r.warnings {
            match out
                .iter_mut()
                .find(|s| s.code == w.code && s.message == w.message)
            {
                Some(s) if s.runs.last() == Some(&id) => {}
                Some(s) => s.runs.push(id.clone()),
                None => out.push(Source {
                    code: w.code.clone(),
                    message: w.message.clone(),
                    runs: vec![id.clone()],
                }),
            }
        }
    }
    let total = runs.len();
    for s in &mut out {
        let which = if s.runs.len() == total && total > 1 {
            format!("all {total} runs")
        } else if s.runs.len() > 5 {
            format!(
                "{} ({}, …)",
                crate::counted(s.runs.len() as u64, "run"),
                s.runs[..5].join(", ")
            )
        } else {
            format!(
                "{} ({})",
                crate::counted(s.runs.len() as u64, "run"),
                s.runs.join(", ")
            )
        };
        s.message = format!("{which}: {}", s.message);
        s.code = format!("source_{}", s.code);
    }
    out
}

/// A run's section, its warnings from `sources` when given: a comparison's
/// record keeps its compared runs' warnings merged by code (`source_*`),
/// the page shows each run's own words instead.
fn section_with(run: &Run, sources: &[Source]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<section class=\"run\" data-kind=\"{}\" id=\"run-{}\">",
        run.kind, run.id
    );
    let _ = writeln!(
        out,
        "<h2>{}: {}</h2>",
        esc(run.kind.as_str()),
        esc(&run.description)
    );
    let host = run
        .environment
        .hostname
        .as_deref()
        .unwrap_or("unknown host");
    let cpu = run
        .environment
        .cpu
        .model
        .as_deref()
        .unwrap_or("unknown CPU");
    let tags = if run.tags.is_empty() {
        String::new()
    } else {
        format!(" · tags {}", run.tags.join(", "))
    };
    let _ = writeln!(
        out,
        "<p class=\"meta\"><span class=\"id\">{}</span> · {} UTC · {} · {}{}</p>",
        run.id,
        run.started_at.strftime("%Y-%m-%d %H:%M:%S"),
        esc(host),
        esc(cpu),
        esc(&tags)
    );
    if let Some(h) = run.headline_metric() {
        let _ = writeln!(
            out,
            "<p>Headline: <b>{} {}</b></p>",
            esc(&h.display_name()),
            esc(&crate::format_metric_value(&h.name, h.value, h.unit))
        );
    }
    let warnings: Vec<(&str, &str)> = if sources.is_empty() {
        run.warnings
            .iter()
            .map(|w| (w.message.as_str(), w.code.as_str()))
            .collect()
    } else {
        run.warnings
            .iter()
            .filter(|w| !w.code.starts_with("source_"))
            .map(|w| (w.message.as_str(), w.code.as_str()))
            .chain(
                sources
                    .iter()
                    .map(|s| (s.message.as_str(), s.code.as_str())),
            )
            .collect()
    };
    if !warnings.is_empty() {
        out.push_str("<ul class=\"warnings\">");
        for (message, code) in warnings {
            let _ = write!(
                out,
                "<li>{} <code>[{}]</code></li>",
                esc(message),
                esc(code)
            );
        }
        out.push_str("</ul>\n");
    }
    for c in charts(run) {
        out.push_str(&c);
    }
    out.push_str("</section>\n");
    out
}

/// A run's charts and tables, by kind: the one dispatch on kind of the
/// HTML page (the text one is [`crate::text_report`]).
pub(crate) fn charts(run: &Run) -> Vec<String> {
    match run.kind {
        Kind::Http => {
            let figures = crate::figures::HttpFigures::of(run, None);
            let charts = http::charts_of(run, &figures, None);
            http::section(run, &figures, with_capacity(run, "req/s", charts))
        }
        Kind::Disk => disk::charts(run, None),
        Kind::Exec => exec::charts(run),
        Kind::Scale => scale::charts(run),
        Kind::Compare => compare::charts(run),
        Kind::Quick => quick::charts(run),
        Kind::Db => with_capacity(run, "tps", db::charts(run, None)),
        Kind::Cpu | Kind::Figures => vec![metric_table(run, |_| true)],
    }
}

/// A capacity search's chart first, when the run is one (`--find-max`),
/// then the run's own, which are its step at the answer's rate. `unit`:
/// what its rates count (a scenario's are flows per second).
fn with_capacity(run: &Run, unit: &str, charts: Vec<String>) -> Vec<String> {
    let scenario = run
        .record::<dyno_model::record::HttpRecord>()
        .is_ok_and(|r| r.scenario.is_some());
    let unit = if scenario { "flows/s" } else { unit };
    match run.capacity().and_then(|cap| capacity::chart(&cap, unit)) {
        Some(chart) => std::iter::once(chart).chain(charts).collect(),
        None => charts,
    }
}

/// The "Every metric" heading and table that end an HTTP or a database
/// run's section: each of its metrics of quick's part `part` (`None`: a
/// run's own, of no part), less the per-second latency histograms a
/// segment keeps for merging (the p99 over time says what they hold).
pub(super) fn every_metric(run: &Run, part: Option<&str>) -> [String; 2] {
    let timeline = dyno_model::names::common::TIMELINE_LATENCY;
    [
        "<h3>Every metric</h3>".into(),
        metric_table(run, |m| m.part() == part && m.name != timeline),
    ]
}

/// The metrics `keep` selects, with their intervals, as a table.
pub(super) fn metric_table(run: &Run, keep: impl Fn(&dyno_model::Metric) -> bool) -> String {
    let mut t = Table::new(["metric", "value", "interval"]);
    for m in run.metrics.iter().filter(|m| keep(m)) {
        t.row([
            crate::metric_label(m),
            crate::format_metric_value(&m.name, m.value, m.unit),
            crate::format_interval(m).unwrap_or_default(),
        ]);
    }
    t.html()
}
