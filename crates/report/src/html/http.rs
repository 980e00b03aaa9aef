//! The charts of an HTTP run (and of the HTTP line of a quick run, whose
//! metrics are of the part `http`): the latency spectrum, corrected and
//! uncorrected for open-model runs, the answers by status and error, and
//! req/s and p99 over time from the per-second timeline the run stores
//! (a replay's req/s against the log's own, from its record).

use dyno_model::Run;
use dyno_model::names::{common, http, label};
use dyno_model::record::HttpRecord;
use plotters::prelude::*;

use crate::figures::{HttpFigures, Tally};

use super::chart::{self, Chart, Key, LATENCY, Mark, NEUTRAL, RATE, WORSE, colour};
use super::latency::{self, Series};
use super::markup::{self, Table, esc};

/// An HTTP run's section below its heading: how it ran (its settings and
/// the client's CPU, which the text report leads with), what each watched
/// server cost, then `charts` (a capacity search's and the run's own),
/// then every metric, as a database run's page ends.
pub(super) fn section(run: &Run, figures: &HttpFigures, charts: Vec<String>) -> Vec<String> {
    let mut out = vec![how_it_ran(figures)];
    if let Some(h3) = &figures.h3 {
        out.push(markup::facts(
            "What QUIC did (HTTP/3)",
            &crate::http::quic_facts(h3),
        ));
    }
    out.extend(server_cost(run));
    out.extend(charts);
    out.extend(super::every_metric(run, None));
    out
}

/// The run's target, model and settings, read from its record as the text
/// report reads them, and the client's CPU.
fn how_it_ran(figures: &HttpFigures) -> String {
    let mut rows: Vec<(&str, String)> = crate::http::lead(&figures.record).into();
    rows.push(("Client CPU", crate::http::client_cpu_words(figures)));
    markup::facts("How it ran", &rows)
}

/// What each watched server (`--watch-pid`, `--watch-cgroup`) cost over the
/// measured time, as the text report's Server CPU lines say it: its CPU,
/// the kernel's share, CPU and context switches per request, and its peak
/// memory. `None` when nothing was watched.
fn server_cost(run: &Run) -> Option<String> {
    let costs = crate::text::server_costs(run);
    if costs.is_empty() {
        return None;
    }
    let throttled = costs.iter().any(|c| c.throttled.is_some());
    let mut header = vec![
        "watched",
        "CPU (% of a core)",
        "in the kernel",
        "CPU per request",
        "context switches per request",
    ];
    if throttled {
        header.push("held back by its CPU limit");
    }
    header.push("peak memory");
    let mut table = Table::new(header).caption("What the watched server cost");
    let cell = |v: &Option<String>| v.clone().unwrap_or_else(|| "–".to_owned());
    for c in &costs {
        let mut row = vec![
            c.name.clone(),
            c.cpu.clone(),
            cell(&c.kernel),
            cell(&c.per_op),
            cell(&c.switches),
        ];
        if throttled {
            row.push(cell(&c.throttled));
        }
        row.push(cell(&c.memory));
        table.row(row);
    }
    Some(table.html())
}

/// The HTTP charts of `run`, reading its metrics of quick's part `part`
/// (`None`: an HTTP run's own, of no part).
pub(super) fn charts(run: &Run, part: Option<&str>) -> Vec<String> {
    charts_of(run, &HttpFigures::of(run, part), part)
}

/// The HTTP charts of `run` from its `figures` (of quick's part `part`, as
/// in [`charts`]).
pub(super) fn charts_of(run: &Run, figures: &HttpFigures, part: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    let open = figures.open;
    let series = latency::corrected_and_not_of(
        figures.latency.as_ref(),
        figures.latency_uncorrected.as_ref(),
        open,
        "send",
    );
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
    } else if figures.latency_written {
        out.push(note(
            "No request was answered, so there is no latency to draw.",
        ));
    }
    out.extend(scenario(run));
    if let Some(c) = answers(figures) {
        out.push(c.html());
    }
    if out.is_empty() {
        out.push(note("No latency histogram or answer counts in this run."));
    }
    let log = LogPace::of(&figures.record);
    out.extend(timeline(run, part, &HTTP, open, log.as_ref()));
    out
}

/// A scenario run's latency by step and time by flow, each a spectrum
/// with its table.
fn scenario(run: &Run) -> Vec<String> {
    let labelled = |name: &str, m: &dyno_model::Metric| -> Option<Series> {
        let flow = m.label(label::FLOW)?;
        let place = match m.label(label::STEP) {
            Some(step) => format!("{flow}/{step}"),
            None => flow.to_owned(),
        };
        (m.name == name)
            .then(|| Series::of(place, Some(m)))
            .flatten()
    };
    let mut out = Vec::new();
    // Every flow, with how its flows ended: a flow that never completed
    // has no time to draw, and shows here.
    let mut table = Table::new(["flow", "completed", "failed", "unfinished", "flows/s"])
        .caption("Flows, by how they ended");
    let place = crate::http::ByPlace::new(run);
    for m in run
        .metrics
        .iter()
        .filter(|m| m.name == http::FLOWS_COMPLETED)
    {
        let Some(flow) = m.label(label::FLOW) else {
            continue;
        };
        let get = |name: &str| place.get(flow, None, name).map_or(0.0, |o| o.value);
        table.row([
            flow.to_owned(),
            chart::num(m.value),
            chart::num(get(http::FLOWS_FAILED)),
            chart::num(get(http::FLOWS_UNFINISHED)),
            chart::num(get(http::FLOWS_PER_SEC)),
        ]);
    }
    out.push(table.html());
    let (steps, more_steps) = busiest(run, |m| labelled(http::STEP_LATENCY, m));
    if let Some(c) = latency::spectrum("http-step-latency", "Latency by step", &steps) {
        out.push(c.html());
    }
    out.extend(more_steps);
    let (flows, more_flows) = busiest(run, |m| labelled(http::FLOW_DURATION, m));
    if let Some(c) = latency::spectrum(
        "http-flow-time",
        "Flow time, from its start to its last answer (think times included)",
        &flows,
    ) {
        out.push(c.html());
    }
    out.extend(more_flows);
    out
}

/// The most a spectrum draws: more lines are no longer told apart.
const MOST_SERIES: usize = 10;

/// The series `pick` finds, the [`MOST_SERIES`] with most entries, and a
/// note of how many more there are.
fn busiest(
    run: &Run,
    pick: impl Fn(&dyno_model::Metric) -> Option<Series>,
) -> (Vec<Series>, Option<String>) {
    let mut found: Vec<(u64, Series)> = run
        .metrics
        .iter()
        .filter_map(|m| {
            let count = m.histogram.as_ref().map_or(0, |h| h.count);
            pick(m).map(|s| (count, s))
        })
        .collect();
    let more = found.len().saturating_sub(MOST_SERIES);
    found.sort_by_key(|(count, _)| std::cmp::Reverse(*count));
    found.truncate(MOST_SERIES);
    let note = (more > 0).then(|| {
        note(&format!(
            "The {MOST_SERIES} with most answers are drawn; {more} more are in the run's figures (dyno show --json)."
        ))
    });
    (found.into_iter().map(|(_, s)| s).collect(), note)
}

/// A note paragraph.
pub(super) fn note(text: &str) -> String {
    format!("<p class=\"note\">{}</p>", esc(text))
}

/// What a kind of run's per-second timeline is called: its metrics, its
/// charts' ids and words.
pub(super) struct Flow {
    /// The start of the charts' ids: `http` → `http-timeline-rate`.
    pub id: &'static str,
    /// The start of the charts' titles: `HTTP`.
    pub what: &'static str,
    /// The per-second rate series (the p99 one is always
    /// `timeline_latency_p99_ns`).
    pub rate_metric: &'static str,
    /// `requests per second`: the rate chart's title and axis.
    pub rate_words: &'static str,
    /// `req/s`: the table's column.
    pub rate_short: &'static str,
    /// `answer`: what completes in a second (a p99 of 0 is a second
    /// without one).
    pub done: &'static str,
    /// `latency`, `corrected: from due time` …: the p99's latency under
    /// the open model, for the p99 chart's title.
    pub corrected: &'static str,
}

/// The timeline of an HTTP run.
pub(super) const HTTP: Flow = Flow {
    id: "http",
    what: "HTTP",
    rate_metric: http::TIMELINE_REQUESTS_PER_SEC,
    rate_words: "requests per second",
    rate_short: "req/s",
    done: "answer",
    corrected: "the corrected latency, from each request's due time, as the spectrum's first line",
};

/// A replay's log (`--replay`), drawn on the rate chart against the rate
/// replayed, so a reader sees whether the replay kept the log's shape.
pub(super) struct LogPace<'a> {
    /// The log's requests due in each second of the run at the replay's
    /// speed, from the run's start: the warm-up's start, not the
    /// timeline's (`ReplayRecord::log_per_second`).
    per_second: &'a [u64],
    /// The warm-up, in seconds: the timeline starts at its end.
    warmup_s: f64,
    /// `--speed`: the multiple of the log's pace, named in the legend.
    speed: f64,
    /// The run ended before the log did.
    cut: bool,
    /// Times the log was read (more than one with `--loop`).
    passes: u32,
}

impl<'a> LogPace<'a> {
    /// The log of an HTTP run's `record`; `None` unless the run is a replay
    /// whose record keeps the log's seconds.
    pub(super) fn of(record: &'a HttpRecord) -> Option<LogPace<'a>> {
        let r = record.replay.as_ref()?;
        if r.log_per_second.is_empty() || !(r.speed.is_finite() && r.speed > 0.0) {
            return None;
        }
        Some(LogPace {
            per_second: &r.log_per_second,
            warmup_s: record.warmup_ns as f64 / 1e9,
            speed: r.speed,
            cut: r.cut,
            passes: r.passes,
        })
    }

    /// The log's requests due in each of the timeline's `seconds`, which
    /// start at the warm-up's end: the log's seconds are moved back by the
    /// warm-up, and those before it or past the timeline's end are left
    /// out. The log keeps whole seconds, so a warm-up of a fraction of one
    /// shares each log second between the two timeline seconds it
    /// overlaps, in proportion (its requests taken as even within it);
    /// with a warm-up of whole seconds, or none, the counts are the log's.
    fn on_timeline(&self, seconds: usize) -> Vec<f64> {
        let mut out = vec![0.0; seconds];
        for (j, &n) in self.per_second.iter().enumerate() {
            // Log second j is [j, j + 1) of the run: this span of the
            // timeline.
            let from = j as f64 - self.warmup_s;
            let to = from + 1.0;
            if to <= 0.0 {
                continue;
            }
            let first = from.max(0.0).floor() as usize;
            if first >= seconds {
                break;
            }
            for (i, slot) in out.iter_mut().enumerate().skip(first) {
                let (start, end) = (i as f64, i as f64 + 1.0);
                if start >= to {
                    break;
                }
                *slot += n as f64 * (to.min(end) - from.max(start)).max(0.0);
            }
        }
        out
    }

    /// The log's line in the legend.
    fn name(&self) -> String {
        format!("the log at {}×: requests due", self.speed)
    }

    /// How to read the log's line, for the rate chart's note.
    fn note(&self) -> String {
        let speed = self.speed;
        let warmup = if self.warmup_s > 0.0 {
            " (its seconds counted from the warm-up's end, as the timeline's are)"
        } else {
            ""
        };
        let passes = if self.passes > 1 {
            format!(
                " The log was read {} times (--loop), so its shape repeats.",
                self.passes
            )
        } else {
            String::new()
        };
        let cut = if self.cut {
            " The run ended before the log did: the log's seconds after the run's end are not drawn."
        } else {
            ""
        };
        format!(
            " \"{}\" counts the log's requests in each second of the replay (the log's time ÷ {speed}){warmup}; \"{REPLAYED}\" those that ended, answered or failed, in each second of the run. Where the replayed line falls below the log's, the replay fell behind the log's pace: see the send lag.{passes}{cut}",
            self.name()
        )
    }
}

/// The rate's line in the legend when the log's is drawn against it.
const REPLAYED: &str = "replayed: requests completed";

/// Most points a timeline chart draws; longer runs are drawn in buckets of
/// whole seconds.
const TIMELINE_POINTS: usize = 600;
/// Most rows of a timeline's table.
const TIMELINE_ROWS: usize = 60;

/// Seconds `per` at a time: (first second, mean rate, worst p99) of each
/// bucket, skipping seconds without a p99 for the p99.
fn buckets(rates: &[f64], p99s: &[f64], per: usize) -> Vec<(usize, f64, Option<f64>)> {
    rates
        .chunks(per)
        .zip(p99s.chunks(per))
        .enumerate()
        .map(|(i, (r, p))| {
            let worst = p
                .iter()
                .copied()
                .filter(|&x| x > 0.0)
                .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
            (i * per, r.iter().sum::<f64>() / r.len() as f64, worst)
        })
        .collect()
}

/// Where the target went away during the run, what its timeline shows
/// at zero is said under the rate chart (the `target_lost` warning's
/// words).
fn lost_note(run: &Run) -> String {
    run.warnings
        .iter()
        .find(|w| w.code == "target_lost")
        .map_or_else(String::new, |w| {
            format!(" Marked by the run: {} (target_lost).", w.message)
        })
}

/// The rate and the p99 over time, from the per-second timeline the run
/// stores: two charts, a second per point up to [`TIMELINE_POINTS`]
/// seconds, then buckets (mean rate, worst p99 of the bucket). A note
/// instead when the run keeps no timeline, or when nothing completed in
/// any second (no empty charts). `open`: the run is open-model, so its p99
/// is the corrected latency, and the p99 chart says so. `part`: quick's
/// part whose timeline it is, as in [`charts`]; what was watched over time
/// is that part's too. `log`: a replay's log, drawn on the rate chart
/// against the rate and given a column of the table, bucketed as the rate
/// is.
pub(super) fn timeline(
    run: &Run,
    part: Option<&str>,
    flow: &Flow,
    open: bool,
    log: Option<&LogPace<'_>>,
) -> Vec<String> {
    let rates = run.metric_of(part, flow.rate_metric).map(|m| &m.samples);
    let p99s = run
        .metric_of(part, common::TIMELINE_LATENCY_P99)
        .map(|m| &m.samples);
    let (Some(rates), Some(p99s)) = (rates, p99s) else {
        return vec![note(&format!(
            "This run's record keeps no per-second timeline (runs saved before dyno kept one), so {} and p99 over time are not drawn.",
            flow.rate_short
        ))];
    };
    if rates.is_empty() || rates.len() != p99s.len() {
        return vec![note(&format!(
            "This run's per-second timeline is empty or its two series differ in length, so {} and p99 over time are not drawn.",
            flow.rate_short
        ))];
    }
    if rates.iter().all(|&r| r <= 0.0) && p99s.iter().all(|&p| p <= 0.0) {
        return vec![note(&format!(
            "No {} in any of the run's {} s: nothing to draw over time.",
            flow.done,
            rates.len()
        ))];
    }
    let per = rates.len().div_ceil(TIMELINE_POINTS);
    let points = buckets(rates, p99s, per);
    let seconds = rates.len() as f64;
    let how = if per == 1 {
        "one point per second".to_owned()
    } else {
        format!(
            "one point per {per} s: the mean {} and the worst p99 of those seconds",
            flow.rate_short
        )
    };
    let middle = |start: usize| start as f64 + per as f64 / 2.0;
    let rates_drawn: Vec<(f64, f64)> = points.iter().map(|p| (middle(p.0), p.1)).collect();
    // The log's seconds on the timeline's, bucketed as the rate is, so the
    // two lines' points fall on the same seconds.
    let log_rates = log.map(|l| l.on_timeline(rates.len()));
    let id = format!("{}-timeline-rate", flow.id);
    let title = format!("{} {} over time", flow.what, flow.rate_words);
    let rate_chart = match log.zip(log_rates.as_deref()) {
        Some((log, log_rates)) => {
            let name = log.name();
            let log_drawn = bucket_means(log_rates, per);
            // The log first, so the replayed line is drawn over it where
            // they meet.
            lines_over_time(
                (&id, &title),
                seconds,
                &[
                    (Some(name.as_str()), log_drawn.as_slice(), NEUTRAL),
                    (Some(REPLAYED), rates_drawn.as_slice(), RATE),
                ],
                flow.rate_words,
            )
            .note(format!(
                "From the run's per-second timeline and the log's, {how}.{}{}",
                log.note(),
                lost_note(run)
            ))
        }
        None => {
            over_time((&id, &title), seconds, &rates_drawn, flow.rate_words, RATE).note(format!(
                "From the run's per-second timeline, {how}.{}",
                lost_note(run)
            ))
        }
    };
    let p99 = points.iter().filter_map(|p| p.2).fold(0.0, f64::max);
    let unit = chart::TimeUnit::for_max_ns(p99);
    let p99s_drawn: Vec<(f64, f64)> = points
        .iter()
        .filter_map(|p| p.2.map(|v| (middle(p.0), v / unit.divisor)))
        .collect();
    let (title, which) = if open {
        (
            format!("{} p99 latency over time (corrected)", flow.what),
            format!(
                " This is {}: a stall shows here as it happened.",
                flow.corrected
            ),
        )
    } else {
        (
            format!("{} p99 latency over time", flow.what),
            String::new(),
        )
    };
    let p99_chart = over_time(
        (&format!("{}-timeline-p99", flow.id), &title),
        seconds,
        &p99s_drawn,
        &format!("p99 latency ({})", unit.name),
        LATENCY,
    )
    .note(format!(
        "The p99 of the {}s of each second, {how}; a second without an {} has no point.{which}",
        flow.done, flow.done
    ));
    // The table: at most TIMELINE_ROWS rows, in coarser buckets if need be.
    let per_row = rates.len().div_ceil(TIMELINE_ROWS);
    let mut header = vec!["seconds".to_owned(), format!("{} (mean)", flow.rate_short)];
    if let Some(log) = log {
        header.push(format!(
            "the log's {} at {}× (mean)",
            flow.rate_short, log.speed
        ));
    }
    header.push("p99 (worst)".to_owned());
    let mut table = Table::new(header);
    let log_rows = log_rates.as_deref().map(|r| bucket_means(r, per_row));
    for (k, (start, rate, worst)) in buckets(rates, p99s, per_row).into_iter().enumerate() {
        let end = (start + per_row).min(rates.len());
        let mut row = vec![format!("{start}–{end}"), chart::num(rate)];
        if let Some(log_rows) = &log_rows {
            row.push(
                log_rows
                    .get(k)
                    .map_or_else(String::new, |p| chart::num(p.1)),
            );
        }
        row.push(worst.map_or_else(|| format!("no {}", flow.done), dyno_model::units::duration));
        table.row(row);
    }
    let mut out = vec![rate_chart.html(), p99_chart.table(table).html()];
    out.extend(watched_over_time(run, part, seconds, per).map(|c| c.html()));
    out.extend(
        server_counted_over_time(run, part, &rates_drawn, seconds, per, flow).map(|c| c.html()),
    );
    out
}

/// Per-second `samples` averaged over buckets of `per` seconds, each
/// placed at its bucket's middle.
fn bucket_means(samples: &[f64], per: usize) -> Vec<(f64, f64)> {
    samples
        .chunks(per.max(1))
        .enumerate()
        .map(|(i, c)| {
            (
                (i * per) as f64 + per as f64 / 2.0,
                c.iter().sum::<f64>() / c.len() as f64,
            )
        })
        .collect()
}

/// The commits PostgreSQL counted each second (`--pg-stats`,
/// postgres_exporter) beside the rate dyno measured, on the same axis:
/// where they part, the server did work the load did not (or counted it
/// late: it publishes its counters about once a second). `None` without
/// such a series.
fn server_counted_over_time(
    run: &Run,
    part: Option<&str>,
    measured: &[(f64, f64)],
    seconds: f64,
    per: usize,
    flow: &Flow,
) -> Option<Chart> {
    use dyno_model::names::telemetry;
    let counted: Vec<(String, Vec<(f64, f64)>)> = run
        .metrics
        .iter()
        .filter(|m| m.name == telemetry::TIMELINE_TARGET_PG_COMMITS_PER_SEC && m.part() == part)
        .filter_map(|m| {
            let points = bucket_means(&m.samples, per);
            Some((
                format!("{}: commits/s it counted", m.label(label::WATCHED)?),
                points,
            ))
        })
        .collect();
    if counted.is_empty() {
        return None;
    }
    let mut drawn: Vec<Line<'_>> = vec![(Some("measured by dyno"), measured, RATE)];
    drawn.extend(
        counted
            .iter()
            .enumerate()
            .map(|(i, (name, points))| (Some(name.as_str()), points.as_slice(), colour(i + 2))),
    );
    Some(
        lines_over_time(
            ("server-counted-timeline", "What the server counted, over time"),
            seconds,
            &drawn,
            flow.rate_words,
        )
        .note("PostgreSQL's own count of commits each second (pg_stat_database, less dyno's probe) beside the rate dyno measured. The server publishes its counters about once a second, so its line may trail dyno's by a second."),
    )
}

/// What was watched (`--watch-*`, `--watch URL`), second by second on the
/// same axis as the rate and the p99: each watched server's CPU in percent
/// of one core, and each target machine's CPU busy share. `None` when the
/// run watched nothing.
fn watched_over_time(run: &Run, part: Option<&str>, seconds: f64, per: usize) -> Option<Chart> {
    use dyno_model::names::telemetry;
    let lines: Vec<(String, Vec<(f64, f64)>)> = run
        .metrics
        .iter()
        .filter(|m| m.part() == part)
        .filter_map(|m| {
            let what = match m.name.as_str() {
                telemetry::TIMELINE_SERVER_CPU_PERCENT => "CPU, % of one core",
                telemetry::TIMELINE_TARGET_CPU_BUSY_PERCENT => "machine busy, % of all cores",
                _ => return None,
            };
            let name = m.label(label::WATCHED)?;
            let points = bucket_means(&m.samples, per);
            Some((format!("{name}: {what}"), points))
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    let mut table = Table::new([
        "watched".to_owned(),
        "mean".to_owned(),
        "highest second".to_owned(),
    ]);
    for (name, points) in &lines {
        let mean = points.iter().map(|p| p.1).sum::<f64>() / points.len().max(1) as f64;
        let top = points.iter().map(|p| p.1).fold(0.0, f64::max);
        table.row([
            name.clone(),
            format!("{}%", chart::num(mean)),
            format!("{}%", chart::num(top)),
        ]);
    }
    let drawn: Vec<Line<'_>> = lines
        .iter()
        .enumerate()
        .map(|(i, (name, points))| (Some(name.as_str()), points.as_slice(), colour(i + 2)))
        .collect();
    Some(
        lines_over_time(
            ("watched-timeline", "What was watched, over time"),
            seconds,
            &drawn,
            "percent",
        )
        .note("Sampled each --watch-interval and read second by second on the run's own clock, so a server's CPU lines up with the req/s and the p99 above it.")
        .table(table),
    )
}

/// One series over the `seconds` of a run: a line through `points`, each
/// marked with a dot (a gap in the points is a gap in the line's dots).
fn over_time(
    (id, title): (&str, &str),
    seconds: f64,
    points: &[(f64, f64)],
    y_desc: &str,
    col: RGBColor,
) -> Chart {
    lines_over_time((id, title), seconds, &[(None, points, col)], y_desc)
}

/// A line of a chart over time: its name in the legend (none for a chart
/// of one line), its points, its colour.
type Line<'a> = (Option<&'a str>, &'a [(f64, f64)], RGBColor);

/// Series over the `seconds` of a run, each a line through its points
/// marked with dots, named in a legend above the chart where it has a
/// name.
fn lines_over_time(
    (id, title): (&str, &str),
    seconds: f64,
    lines: &[Line<'_>],
    y_desc: &str,
) -> Chart {
    let max = lines
        .iter()
        .flat_map(|l| l.1.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let points = lines.iter().map(|l| l.1.len()).sum();
    let keys: Vec<Key> = lines
        .iter()
        .filter_map(|&(name, _, col)| Some((name?.to_owned(), Mark::Line(col))))
        .collect();
    Chart::draw(
        id,
        title,
        (lines.len(), points),
        (chart::WIDTH, chart::HEIGHT),
        |root| {
            let area = chart::legend_above(root, &keys)?;
            let mut c = chart::builder(&area, 24, (40, 70))
                .build_cartesian_2d(0.0..seconds, chart::from_zero(max))?;
            chart::mesh(&mut c)
                .x_desc("seconds since the measured part began")
                .y_desc(y_desc)
                .x_label_formatter(&chart::tick)
                .y_label_formatter(&chart::tick)
                .draw()?;
            for &(_, points, col) in lines {
                c.draw_series(LineSeries::new(points.iter().copied(), col.stroke_width(2)))?;
                c.draw_series(
                    points
                        .iter()
                        .map(|&(x, y)| Circle::new((x, y), 2, col.filled())),
                )?;
            }
            Ok(())
        },
    )
}

/// Answers by status code and failures by error class, as bars. A request
/// answered with an unexpected status is an answer (its status bar) and a
/// failure of class `status` at once: it is drawn once, as its status bar,
/// and the note says the class `status` is those answers.
fn answers(figures: &HttpFigures) -> Option<Chart> {
    let has_statuses = figures.statuses().next().is_some();
    let mut bars: Vec<(String, f64, RGBColor)> = Vec::new();
    let mut unexpected = None;
    for tally in &figures.tallies {
        match tally {
            Tally::Status(code, n) => {
                let c = if code.starts_with(['2', '3']) {
                    colour(0)
                } else {
                    WORSE
                };
                bars.push((format!("HTTP {code}"), *n, c));
            }
            Tally::Error(class, n) => {
                if class == http::class::STATUS && has_statuses {
                    unexpected = Some(*n);
                    continue;
                }
                bars.push((format!("error: {}", class.replace('_', " ")), *n, WORSE));
            }
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
            let mut c = chart::builder(root, 34, (40, 150))
                .build_cartesian_2d(chart::from_zero(max), -0.5f64..(n as f64 - 0.5))?;
            chart::mesh(&mut c)
                .disable_y_mesh()
                .x_desc("count")
                .y_labels(n)
                .y_label_formatter(&|y| category(&labels, *y, 28))
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
    let chart = chart.table(table);
    Some(match unexpected {
        Some(n) => chart.note(format!(
            "Each request is counted once. The {} answered with a status outside --expect-status are failures of class \"status\"; they are drawn as their status bars above, not again as an error bar.",
            crate::counted(n.round() as u64, "request")
        )),
        None => chart,
    })
}

/// The label of the category at `y` (a whole index), cut to `width`
/// characters, or nothing between.
pub(super) fn category(labels: &[String], y: f64, width: usize) -> String {
    let i = y.round();
    if (y - i).abs() > 1e-6 || i < 0.0 {
        return String::new();
    }
    labels
        .get(i as usize)
        .map(|s| shorten(s, width))
        .unwrap_or_default()
}

/// `s` cut to `max` characters with an ellipsis.
pub(super) fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let cut: String = s.chars().take(max - 1).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pace(per_second: &[u64], warmup_s: f64) -> LogPace<'_> {
        LogPace {
            per_second,
            warmup_s,
            speed: 1.0,
            cut: false,
            passes: 1,
        }
    }

    #[test]
    fn the_logs_seconds_are_read_on_the_timelines_clock() {
        let log = [10, 20, 40, 40, 0, 7];
        // No warm-up: second for second; past the timeline, left out; a
        // timeline longer than the log, zeros (the log had nothing due).
        assert_eq!(pace(&log, 0.0).on_timeline(4), [10.0, 20.0, 40.0, 40.0]);
        assert_eq!(pace(&log[..2], 0.0).on_timeline(4), [10.0, 20.0, 0.0, 0.0]);
        // A warm-up of whole seconds: the log's first seconds were sent in
        // it, not measured.
        assert_eq!(pace(&log, 2.0).on_timeline(4), [40.0, 40.0, 0.0, 7.0]);
        // Half a second: each log second shared by the two it overlaps.
        assert_eq!(pace(&log, 1.5).on_timeline(4), [30.0, 40.0, 20.0, 3.5]);
        // A warm-up longer than the log: nothing of it is measured.
        assert_eq!(pace(&log, 9.0).on_timeline(3), [0.0; 3]);
    }
}
