//! Views across runs: a metric over time with each point's interval (the
//! trend), and the overview drawn instead of every chart of every run when
//! a report holds many runs (each kind and description's headline over
//! time, and a table of the runs).

use std::collections::BTreeMap;

use dyno_model::{Metric, Run, Unit};
use dyno_stats::changes::{self, Analysis, Settings, Unjudged};
use dyno_stats::series::Identity;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::chart::{self, BETTER, Chart, Key, Mark, NEUTRAL, TimeUnit, WORSE, colour};
use super::markup::Table;
use crate::format_value;

/// How many (kind, description) groups of a large report get a chart; the
/// rest are in the table.
const SUMMARY_CHARTS: usize = 8;

/// A divisor and the axis name of `unit` for values up to `max`.
pub(super) fn axis_unit(unit: Unit, max: f64) -> (f64, String) {
    match unit {
        Unit::Ns => {
            let t = TimeUnit::for_max_ns(max);
            (t.divisor, t.name.to_owned())
        }
        Unit::BytesPerSec => (1e6, "MB/s".into()),
        Unit::Bytes if max >= f64::from(1u32 << 30) => (f64::from(1u32 << 30), "GiB".into()),
        Unit::Bytes if max >= f64::from(1u32 << 20) => (f64::from(1u32 << 20), "MiB".into()),
        Unit::Bytes => (1.0, "bytes".into()),
        Unit::OpsPerSec => (1.0, "ops/s".into()),
        Unit::RequestsPerSec => (1.0, "req/s".into()),
        Unit::FlowsPerSec => (1.0, "flows/s".into()),
        Unit::Count => (1.0, "count".into()),
        Unit::Ratio => (1.0, "×".into()),
        Unit::Percent => (1.0, "%".into()),
        Unit::Mhz => (1.0, "MHz".into()),
    }
}

fn when(run: &Run) -> f64 {
    run.started_at.as_second() as f64
}

/// Tick steps of a time axis, in seconds: whole seconds, minutes, hours and
/// days, so ticks fall on round times.
const TIME_STEPS: [i64; 22] = [
    1,
    2,
    5,
    10,
    15,
    30,
    60,
    120,
    300,
    600,
    900,
    1_800,
    3_600,
    7_200,
    10_800,
    21_600,
    43_200,
    86_400,
    2 * 86_400,
    7 * 86_400,
    28 * 86_400,
    364 * 86_400,
];

/// Most ticks a time axis labels.
const TIME_TICKS: i64 = 6;

/// A time axis (seconds since the epoch, UTC) with its ticks at round
/// times and one label format that never repeats a label.
#[derive(Debug, Clone)]
pub(super) struct TimeAxis {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
    /// The strftime format of every tick.
    format: &'static str,
    /// The date all ticks share when only their times are shown.
    date: Option<String>,
}

impl TimeAxis {
    /// The axis over the runs' start times `lo..=hi`, a little wider.
    pub(super) fn new(lo: f64, hi: f64) -> TimeAxis {
        let (lo, hi) = if hi > lo {
            let pad = ((hi - lo) * 0.06).max(1.0);
            (lo - pad, hi + pad)
        } else {
            // One moment: a minute either side.
            (lo - 60.0, hi + 60.0)
        };
        let span = hi - lo;
        let step = TIME_STEPS
            .iter()
            .copied()
            .find(|&s| span / s as f64 <= TIME_TICKS as f64)
            .unwrap_or(TIME_STEPS[TIME_STEPS.len() - 1]);
        let first = (lo / step as f64).ceil() as i64 * step;
        let ticks: Vec<f64> = (0..=TIME_TICKS * 2)
            .map(|i| (first + i * step) as f64)
            .take_while(|&t| t <= hi)
            .collect();
        let day = |t: f64| stamp(t).map(|t| t.strftime("%Y-%m-%d").to_string());
        let one_date = ticks.windows(2).all(|w| day(w[0]) == day(w[1]));
        let (format, date) = if step >= 86_400 {
            ("%Y-%m-%d", None)
        } else if one_date {
            let f = if step < 60 { "%H:%M:%S" } else { "%H:%M" };
            (f, ticks.first().and_then(|&t| day(t)))
        } else if step < 60 {
            ("%m-%d %H:%M:%S", None)
        } else {
            ("%m-%d %H:%M", None)
        };
        TimeAxis {
            lo,
            hi,
            ticks,
            format,
            date,
        }
    }

    /// The label of the tick at `x`.
    pub(super) fn label(&self, x: f64) -> String {
        stamp(x).map_or_else(String::new, |t| t.strftime(self.format).to_string())
    }

    /// The axis title: when the ticks show only times, the date they share.
    pub(super) fn title(&self) -> String {
        match &self.date {
            Some(d) => format!("run started on {d} (UTC)"),
            None => "run started (UTC)".into(),
        }
    }
}

fn stamp(x: f64) -> Option<jiff::Timestamp> {
    jiff::Timestamp::from_second(x.round() as i64).ok()
}

impl Ranged for TimeAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let at = (value - self.lo) / (self.hi - self.lo);
        let length = f64::from(limit.1 - limit.0);
        if !at.is_finite() {
            return limit.0;
        }
        limit.0 + (length * at).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// One point of a metric over time.
struct Point<'a> {
    run: &'a Run,
    metric: &'a Metric,
}

/// What a trend of one series draws over its points: each segment's mean
/// and each change point.
#[derive(Debug, Clone, Default)]
struct Overlay {
    segments: Vec<Segment>,
    changes: Vec<Marker>,
}

/// A segment's mean over its runs' time range (seconds since the epoch).
#[derive(Debug, Clone)]
struct Segment {
    from: f64,
    to: f64,
    mean: f64,
    label: String,
}

/// A change point: a vertical marker at the first run after it.
#[derive(Debug, Clone)]
struct Marker {
    at: f64,
    label: String,
    regression: bool,
}

/// Rows of change labels at the top of the plot, so neighbours do not
/// overlap.
const LABEL_ROWS: usize = 3;

/// A metric of several runs over time: one series per host, each point
/// with its interval where the run stores one; with an overlay, the
/// segments' means and the change points over them.
fn over_time(id: &str, title: &str, points: &[Point], overlay: Option<&Overlay>) -> Option<Chart> {
    let first = points.first()?.metric;
    let max = points
        .iter()
        .map(|p| {
            p.metric
                .uncertainty
                .as_ref()
                .map_or(p.metric.value, |u| u.high.max(p.metric.value))
        })
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let (div, unit) = axis_unit(first.unit, max);
    let mut hosts: BTreeMap<&str, Vec<&Point>> = BTreeMap::new();
    for p in points {
        let host = p
            .run
            .environment
            .hostname
            .as_deref()
            .unwrap_or("unknown host");
        hosts.entry(host).or_default().push(p);
    }
    let lo = points
        .iter()
        .map(|p| when(p.run))
        .fold(f64::INFINITY, f64::min);
    let hi = points
        .iter()
        .map(|p| when(p.run))
        .fold(f64::NEG_INFINITY, f64::max);
    let axis = TimeAxis::new(lo, hi);
    let x_title = axis.title();
    let y_title = format!("{} ({unit})", crate::text::title(&first.name));
    let min = points
        .iter()
        .map(|p| {
            p.metric
                .uncertainty
                .as_ref()
                .map_or(p.metric.value, |u| u.low)
        })
        .filter(|v| v.is_finite())
        .fold(f64::INFINITY, f64::min);
    let mut y = if min >= 0.0 {
        chart::from_zero(max / div)
    } else {
        chart::padded(min / div, max / div)
    };
    let label_rows = overlay.map_or(0, |o| o.changes.len().min(LABEL_ROWS));
    // Room above the points for the change labels.
    y.end += (y.end - y.start) * 0.08 * label_rows as f64;
    // One host needs no legend.
    let mut keys: Vec<Key> = if hosts.len() > 1 {
        hosts
            .keys()
            .enumerate()
            .map(|(i, host)| ((*host).to_owned(), Mark::Line(colour(i))))
            .collect()
    } else {
        Vec::new()
    };
    if let Some(o) = overlay {
        keys.push(("segment mean".into(), Mark::Line(NEUTRAL)));
        if o.changes.iter().any(|c| c.regression) {
            keys.push(("change: regression".into(), Mark::Line(WORSE)));
        }
        if o.changes.iter().any(|c| !c.regression) {
            keys.push(("change: improvement".into(), Mark::Line(BETTER)));
        }
    }
    let chart = Chart::draw(
        id,
        title,
        (hosts.len(), points.len()),
        (chart::WIDTH, chart::HEIGHT - 40),
        |root| {
            let area = chart::legend_above(root, &keys)?;
            let mut c =
                chart::builder(&area, 34, (42, 64)).build_cartesian_2d(axis.clone(), y.clone())?;
            chart::mesh(&mut c)
                .x_desc(x_title.as_str())
                .y_desc(y_title.as_str())
                .x_label_formatter(&|x| axis.label(*x))
                .y_label_formatter(&chart::tick)
                .draw()?;
            for (i, pts) in hosts.values().enumerate() {
                let col = colour(i);
                let mut pts = pts.clone();
                pts.sort_by(|a, b| when(a.run).total_cmp(&when(b.run)));
                c.draw_series(LineSeries::new(
                    pts.iter().map(|p| (when(p.run), p.metric.value / div)),
                    col.mix(0.6).stroke_width(1),
                ))?;
                c.draw_series(pts.iter().filter_map(|p| {
                    let u = p.metric.uncertainty.as_ref()?;
                    Some(ErrorBar::new_vertical(
                        when(p.run),
                        u.low / div,
                        p.metric.value / div,
                        u.high / div,
                        col.stroke_width(1),
                        6,
                    ))
                }))?;
                c.draw_series(
                    pts.iter()
                        .map(|p| Circle::new((when(p.run), p.metric.value / div), 3, col.filled())),
                )?;
            }
            if let Some(o) = overlay {
                draw_overlay(&mut c, o, div, &y)?;
            }
            Ok(())
        },
    );
    Some(chart)
}

/// The segments' means (a grey line over each segment's runs, its mean
/// written above its start) and the change points (a dashed vertical line
/// at the first run after each, red for a regression and green for an
/// improvement, its label saying which in words).
fn draw_overlay<DB: DrawingBackend>(
    c: &mut ChartContext<'_, DB, Cartesian2d<TimeAxis, plotters::coord::types::RangedCoordf64>>,
    o: &Overlay,
    div: f64,
    y: &std::ops::Range<f64>,
) -> chart::DrawResult
where
    DB::ErrorType: 'static,
{
    let (lo, hi) = {
        let r = c.x_range();
        (r.start, r.end)
    };
    for s in &o.segments {
        let m = s.mean / div;
        // A one-run segment gets a short tick of its own.
        let path = if s.to > s.from {
            vec![(s.from, m), (s.to, m)]
        } else {
            let pad = (hi - lo) * 0.01;
            vec![(s.from - pad, m), (s.to + pad, m)]
        };
        c.draw_series(std::iter::once(PathElement::new(
            path,
            NEUTRAL.stroke_width(2),
        )))?;
        c.draw_series(std::iter::once(
            EmptyElement::at((s.from, m)) + Text::new(s.label.clone(), (2, -16), chart::font(11)),
        ))?;
    }
    for (i, ch) in o.changes.iter().enumerate() {
        let col = if ch.regression { WORSE } else { BETTER };
        c.draw_series(DashedLineSeries::new(
            [(ch.at, y.start), (ch.at, y.end)],
            6,
            4,
            col.stroke_width(2),
        ))?;
        // Labels right of the marker, or left of it in the right part.
        let right = (ch.at - lo) / (hi - lo) > 0.6;
        let (dx, h) = if right {
            (-5, HPos::Right)
        } else {
            (5, HPos::Left)
        };
        let dy = 4 + 15 * (i % LABEL_ROWS) as i32;
        let style = chart::font(12).pos(Pos::new(h, VPos::Top));
        c.draw_series(std::iter::once(
            EmptyElement::at((ch.at, y.end)) + Text::new(ch.label.clone(), (dx, dy), style),
        ))?;
    }
    Ok(())
}

fn interval_text(m: &Metric) -> String {
    m.uncertainty.as_ref().map_or_else(String::new, |u| {
        format!(
            "{} – {} ({:.0}%, n={})",
            format_value(u.low, m.unit),
            format_value(u.high, m.unit),
            u.confidence * 100.0,
            u.n
        )
    })
}

/// Whether `m` is the metric `wanted` names, as `dyno show` displays it
/// (spaces after commas optional).
pub(super) fn matches(m: &Metric, wanted: &str) -> bool {
    let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    squash(&m.display_name()) == squash(wanted)
}

/// The trend of `metric` across `runs`: `None` when no run has it.
pub(super) fn trend(runs: &[Run], metric: &str) -> Option<String> {
    let mut points: Vec<Point> = runs
        .iter()
        .filter_map(|run| {
            let m = run.metrics.iter().find(|m| matches(m, metric))?;
            m.value.is_finite().then_some(Point { run, metric: m })
        })
        .collect();
    points.sort_by(|a, b| when(a.run).total_cmp(&when(b.run)));
    let found = find_changes(&points);
    let overlay = found.as_ref().ok().map(|a| overlay(&points, a));
    let chart = over_time(
        "trend",
        &format!("{metric} over time"),
        &points,
        overlay.as_ref(),
    )?;
    let mut table = Table::new([
        "run",
        "started (UTC)",
        "host",
        "value",
        "interval",
        "description",
    ]);
    for p in &points {
        table.row([
            p.run.id.to_string(),
            p.run.started_at.strftime("%Y-%m-%d %H:%M:%S").to_string(),
            p.run.environment.hostname.clone().unwrap_or_default(),
            format_value(p.metric.value, p.metric.unit),
            interval_text(p.metric),
            p.run.description.clone(),
        ]);
    }
    let missing = runs.len() - points.len();
    let mut note = format!(
        "{} of the {} selected runs have this metric; bars are each run's stored interval.",
        points.len(),
        runs.len()
    );
    if missing > 0 {
        note.push_str(" Runs without it are listed nowhere on this chart.");
    }
    note.push(' ');
    note.push_str(&changes_note(&points, &found));
    let mut chart = chart.table(table).note(note);
    if let Ok(a) = &found
        && !a.changes.is_empty()
    {
        chart = chart.table(changes_table(&points, a));
    }
    Some(chart.html())
}

/// Why a trend's points get no change points.
#[derive(Debug)]
enum Unanalysed {
    /// The points are this many series.
    Series(usize),
    /// The analysis could not judge the one series.
    Unjudged(Unjudged),
}

/// The change points of a trend's points when they are one series.
fn find_changes(points: &[Point]) -> Result<Analysis, Unanalysed> {
    let mut ids: Vec<Identity> = points.iter().map(|p| Identity::of(p.run)).collect();
    ids.sort();
    ids.dedup();
    if ids.len() > 1 {
        return Err(Unanalysed::Series(ids.len()));
    }
    let values: Vec<f64> = points.iter().map(|p| p.metric.value).collect();
    changes::analyse(&values, &Settings::default()).map_err(Unanalysed::Unjudged)
}

/// A run's commit (its `rev:` tag), or else its id's first 10 characters.
fn commit_or_id(run: &Run) -> String {
    run.tags
        .iter()
        .find_map(|t| t.strip_prefix("rev:"))
        .map_or_else(|| run.id.to_string()[..10].to_owned(), str::to_owned)
}

/// A ratio as a signed change in percent: `+20.6%`.
fn percent(ratio: f64) -> String {
    format!("{:+.1}%", (ratio - 1.0) * 100.0)
}

fn verdict(regression: bool) -> &'static str {
    if regression {
        "regression"
    } else {
        "improvement"
    }
}

/// What the chart draws of `a` over `points`.
fn overlay(points: &[Point], a: &Analysis) -> Overlay {
    let unit = points.first().map_or(Unit::Count, |p| p.metric.unit);
    let direction = points.first().map(|p| p.metric.direction);
    Overlay {
        segments: a
            .segments
            .iter()
            .map(|s| Segment {
                from: when(points[s.start].run),
                to: when(points[s.end - 1].run),
                mean: s.mean,
                label: format!("mean {}", format_value(s.mean, unit)),
            })
            .collect(),
        changes: a
            .changes
            .iter()
            .map(|c| {
                let run = points[c.index].run;
                let regression = direction.is_some_and(|d| c.is_regression(d));
                Marker {
                    at: when(run),
                    label: format!(
                        "{}: {} ({})",
                        commit_or_id(run),
                        percent(c.ratio),
                        verdict(regression)
                    ),
                    regression,
                }
            })
            .collect(),
    }
}

/// The change points of `a`, one row each.
fn changes_table(points: &[Point], a: &Analysis) -> Table {
    let unit = points[0].metric.unit;
    let direction = points[0].metric.direction;
    let mut table = Table::new([
        "first run after the change",
        "commit",
        "change",
        "95% interval",
        "p-value",
        "verdict",
        "mean before",
        "mean after",
    ])
    .caption("Change points");
    for c in &a.changes {
        let run = points[c.index].run;
        table.row([
            run.id.to_string(),
            commit_or_id(run),
            percent(c.ratio),
            c.interval.map_or_else(String::new, |(lo, hi)| {
                format!("{} – {}", percent(lo), percent(hi))
            }),
            format!("{:.3}", c.p_value),
            verdict(c.is_regression(direction)).to_owned(),
            format_value(c.before.mean, unit),
            format_value(c.after.mean, unit),
        ]);
    }
    table
}

/// What the change-point analysis found, or why there is none.
fn changes_note(points: &[Point], found: &Result<Analysis, Unanalysed>) -> String {
    let settings = Settings::default();
    match found {
        Err(Unanalysed::Series(n)) => format!(
            "These runs are {n} series (different kinds, settings or machine classes), so no change points are drawn: narrow the selection with --tag, --host or --kind to one series for them."
        ),
        Err(Unanalysed::Unjudged(Unjudged::TooFewRuns { runs, need })) => {
            format!("Too few runs for change points: {runs}, where they need at least {need}.")
        }
        Err(Unanalysed::Unjudged(e)) => format!("No change points: {e}."),
        Ok(a) => {
            let how = format!(
                "E-divisive means, α = {}, changes of {:.0}% and more with {} runs a side or more",
                settings.alpha,
                settings.min_change * 100.0,
                settings.min_segment
            );
            if a.changes.is_empty() {
                let mean = a
                    .segments
                    .first()
                    .map_or_else(String::new, |s| format_value(s.mean, points[0].metric.unit));
                let mut out = format!(
                    "No change point ({how}): the grey line is the mean of all {} runs, {mean}.",
                    points.len()
                );
                if a.too_few_runs(settings.min_change) {
                    out.push_str(&format!(
                        " Too few runs to rule one out: at this noise ({:.1}%) only steps of {:.1}% and more would show.",
                        a.noise * 100.0,
                        a.detectable * 100.0
                    ));
                }
                out
            } else {
                format!(
                    "{} ({how}): grey lines are each segment's mean; dashed lines mark the first run after each change, labelled with its commit (or run id), the change and whether it is a regression or an improvement; the table below lists them.",
                    crate::counted(a.changes.len() as u64, "change point")
                )
            }
        }
    }
}

/// The overview of many runs: headline over time per (kind, description),
/// the largest groups charted, and every run in a table.
pub(super) fn overview(runs: &[Run]) -> String {
    let mut groups: BTreeMap<(String, String), Vec<Point>> = BTreeMap::new();
    for run in runs {
        if let Some(m) = run.headline_metric() {
            groups
                .entry((run.kind.to_string(), run.description.clone()))
                .or_default()
                .push(Point { run, metric: m });
        }
    }
    let mut ordered: Vec<(&(String, String), &Vec<Point>)> = groups.iter().collect();
    ordered.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(b.0)));
    let mut out = String::new();
    out.push_str(&format!(
        "<p class=\"meta\">{} runs: too many to draw each one's charts, so this page shows each kind and description's headline metric over time ({} largest groups of {}), then every run in a table. Narrow the selection (--last, --tag, --kind, --since or run ids) for every chart of every run.</p>\n",
        runs.len(),
        ordered.len().min(SUMMARY_CHARTS),
        ordered.len()
    ));
    for ((kind, description), points) in ordered.iter().take(SUMMARY_CHARTS) {
        let name = &points[0].metric;
        let title = format!(
            "{kind}: {description} — {} over time ({} runs)",
            name.display_name(),
            points.len()
        );
        if let Some(c) = over_time("summary-headline", &title, points, None) {
            out.push_str(&c.html());
        }
    }
    let mut table = Table::new([
        "run",
        "started (UTC)",
        "kind",
        "host",
        "description",
        "headline",
    ])
    .caption("Every selected run");
    for run in runs {
        table.row([
            run.id.to_string(),
            run.started_at.strftime("%Y-%m-%d %H:%M:%S").to_string(),
            run.kind.to_string(),
            run.environment.hostname.clone().unwrap_or_default(),
            run.description.clone(),
            run.headline_metric().map_or_else(String::new, |m| {
                format!("{} {}", m.display_name(), format_value(m.value, m.unit))
            }),
        ]);
    }
    out.push_str(&table.html());
    out
}
