//! The views of a comparison (a run of kind `compare`, made by `dyno
//! compare`): a benchstat-like table for the terminal, the same table in
//! Markdown, and one CSV row per metric and group. Each reads only the
//! record, so `dyno show` of a saved comparison prints what `dyno compare`
//! printed.

use dyno_model::names::compare as names;
use std::fmt::Write as _;
use std::io::{self, Write};

use comfy_table::{Cell, CellAlignment};
use dyno_model::record::CompareRecord;
use dyno_model::{Direction, Metric, Run};
use dyno_stats::compare::{Verdict, runs_needed_to_test};

use crate::text::{render, table, warnings};

/// One matched metric of one candidate group against the baseline.
#[derive(Debug, Clone)]
pub struct Row<'a> {
    pub kind: &'a str,
    /// The metric as `dyno show` names it (`latency_ns{percentile=99}`).
    pub metric: &'a str,
    pub baseline: &'a Metric,
    pub candidate: &'a Metric,
    /// candidate / baseline; `None` when the baseline is zero.
    pub ratio: Option<&'a Metric>,
    pub p_value: Option<&'a Metric>,
}

impl Row<'_> {
    /// The verdict recorded for this row.
    pub fn verdict(&self) -> Verdict {
        self.ratio.map_or(Verdict::Untested, Verdict::of_metric)
    }
}

/// A comparison record read back: its groups and rows.
#[derive(Debug, Clone)]
pub struct Comparison<'a> {
    pub run: &'a Run,
    pub baseline: String,
    /// Every group's name, the baseline first.
    pub groups: Vec<String>,
    pub noise: f64,
    pub alpha: f64,
    /// The whole record: sides, differences, unmatched metrics.
    pub record: CompareRecord,
}

impl<'a> Comparison<'a> {
    /// Reads the record of a comparison.
    pub fn of(run: &'a Run) -> Comparison<'a> {
        // A record that does not read, or lacks the options, compares
        // with dyno compare's defaults (CompareRecord::default).
        let record: CompareRecord = run.record().unwrap_or_default();
        Comparison {
            run,
            baseline: record.baseline.clone(),
            groups: record.groups.iter().map(|g| g.name.clone()).collect(),
            noise: record.noise,
            alpha: record.alpha,
            record,
        }
    }

    /// The groups compared with the baseline.
    pub fn candidates(&self) -> impl Iterator<Item = &str> {
        self.groups.iter().skip(1).map(String::as_str)
    }

    fn find(&self, name: &str, metric: &str, group: &str) -> Option<&'a Metric> {
        self.run.metrics.iter().find(|m| {
            m.name == name
                && m.label(names::METRIC) == Some(metric)
                && m.label(names::GROUP) == Some(group)
        })
    }

    /// The group's own metric of `name` (`geomean`, `better` …).
    pub fn group_metric(&self, name: &str, group: &str) -> Option<&'a Metric> {
        self.run
            .metrics
            .iter()
            .find(|m| m.name == name && m.label(names::GROUP) == Some(group))
    }

    /// The rows of `candidate` against the baseline, in the record's order.
    pub fn rows(&self, candidate: &str) -> Vec<Row<'a>> {
        self.run
            .metrics
            .iter()
            .filter(|m| {
                m.name == names::VALUE && m.label(names::GROUP) == Some(self.baseline.as_str())
            })
            .filter_map(|base| {
                let metric = base.label(names::METRIC)?;
                Some(Row {
                    kind: base.label(names::KIND).unwrap_or_default(),
                    metric,
                    baseline: base,
                    candidate: self.find(names::VALUE, metric, candidate)?,
                    ratio: self.find(names::RATIO, metric, candidate),
                    p_value: self.find(names::P_VALUE, metric, candidate),
                })
            })
            .collect()
    }

    fn runs_of(&self, group: &str) -> (usize, String) {
        let g = self.record.groups.iter().find(|g| g.name == group);
        let n = g.map_or(0, |g| g.runs.len());
        let selector = g.map(|g| g.selector.clone()).unwrap_or_default();
        (n, selector)
    }

    /// `xeon (5 runs: @tag:xeon)`.
    fn describe(&self, group: &str) -> String {
        let (n, selector) = self.runs_of(group);
        let runs = crate::counted(n as u64, "run");
        if selector.is_empty() || selector == group {
            format!("{group} ({runs})")
        } else {
            format!("{group} ({runs}: {selector})")
        }
    }

    /// The words for a row's verdict: its [`verdict_word`], with what an
    /// untested one lacks.
    fn verdict_words(&self, row: &Row) -> String {
        let word = verdict_word(row);
        match row.verdict() {
            Verdict::TooFewRuns => format!(
                "{word}: need ≥ {} runs a side",
                runs_needed_to_test(self.alpha)
            ),
            Verdict::Untested if row.ratio.is_none() => format!("{word}: the baseline is 0"),
            Verdict::Untested => format!("{word}: one value a side"),
            Verdict::WithinRun => format!("{word}: one run a side"),
            _ => word.to_owned(),
        }
    }
}

/// The one word for a row's verdict, the same in the table, Markdown and
/// CSV: `better`, `worse`, `~` (no significant difference),
/// `inconclusive`, `too-few-runs`, `untested` (one value, or one run's
/// within-run interval, a side) or `no-ratio` (a baseline of zero).
pub(crate) fn verdict_word(row: &Row) -> &'static str {
    match row.verdict() {
        Verdict::Faster => "better",
        Verdict::Slower => "worse",
        Verdict::NoSignificantDifference => "~",
        Verdict::Inconclusive => "inconclusive",
        Verdict::TooFewRuns => "too-few-runs",
        Verdict::Untested if row.ratio.is_none() => "no-ratio",
        Verdict::Untested | Verdict::WithinRun => "untested",
    }
}

/// `latency_ns{percentile=99}` → `latency_ns p99`; other labels stay.
pub fn metric_title(metric: &str) -> String {
    let Some((name, rest)) = metric.split_once('{') else {
        return metric.to_owned();
    };
    let labels = rest.strip_suffix('}').unwrap_or(rest);
    let mut percentile = None;
    let kept: Vec<&str> = labels
        .split(", ")
        .filter(|l| match l.strip_prefix("percentile=") {
            Some(p) => {
                percentile = Some(p);
                false
            }
            None => true,
        })
        .collect();
    let mut out = name.to_owned();
    if !kept.is_empty() {
        let _ = write!(out, "{{{}}}", kept.join(", "));
    }
    if let Some(p) = percentile {
        let _ = write!(out, " p{p}");
    }
    out
}

/// `disk_latency_ns{op=read, percentile=99, test=RND4K Q1T1}` →
/// `disk_latency_ns read RND4K Q1T1 p99`: the label values without their
/// keys, for places too narrow for [`metric_title`].
pub fn metric_short(metric: &str) -> String {
    let Some((name, rest)) = metric.split_once('{') else {
        return metric.to_owned();
    };
    let labels = rest.strip_suffix('}').unwrap_or(rest);
    let mut words = vec![name.to_owned()];
    let mut percentile = None;
    for label in labels.split(", ") {
        match label.split_once('=') {
            Some(("percentile", p)) => percentile = Some(format!("p{p}")),
            Some((_, value)) => words.push(value.to_owned()),
            None => words.push(label.to_owned()),
        }
    }
    words.extend(percentile);
    words.join(" ")
}

/// A side's value of `metric` with its interval as `±x%` (or nothing),
/// formatted as `dyno show` formats that metric (a parallel fraction as a
/// percentage).
fn value_cell(metric: &str, m: &Metric) -> String {
    let value = crate::format::format_metric_value(metric, m.value, m.unit);
    match &m.uncertainty {
        Some(u) if m.value != 0.0 && m.value.is_finite() => {
            let half = 100.0 * (u.high - u.low) / 2.0 / m.value.abs();
            format!("{value} ±{half:.1}%")
        }
        _ => value,
    }
}

fn ratio_cells(row: &Row) -> [String; 3] {
    let Some(r) = row.ratio else {
        return [String::new(), String::new(), String::new()];
    };
    let ci = r
        .uncertainty
        .as_ref()
        .map_or_else(String::new, |u| format!("{:.3}–{:.3}", u.low, u.high));
    let p = row.p_value.map_or_else(String::new, |p| p_text(p.value));
    [format!("{:.3}×", r.value), ci, p]
}

fn p_text(p: f64) -> String {
    if p < 0.001 {
        "<0.001".into()
    } else {
        format!("{p:.3}")
    }
}

/// `+21.6%`: how much the candidate's value differs, in its own direction.
fn delta(row: &Row) -> String {
    row.ratio
        .map_or_else(String::new, |r| format!("{:+.1}%", (r.value - 1.0) * 100.0))
}

fn arrow(direction: Direction) -> &'static str {
    match direction {
        Direction::HigherIsBetter => "↑",
        Direction::LowerIsBetter => "↓",
    }
}

/// The geomean line's ratio, interval and counts.
fn geomean_cells(c: &Comparison, group: &str) -> Option<[String; 4]> {
    let gm = c.group_metric(names::GEOMEAN, group)?;
    let ci = gm.uncertainty.as_ref().map_or_else(
        || "no interval".to_owned(),
        |u| format!("{:.3}–{:.3}", u.low, u.high),
    );
    let count = |name| c.group_metric(name, group).map_or(0, |m| m.value as u64);
    let mut verdicts = format!(
        "{} better, {} worse, {} ~, {} untested",
        count(names::BETTER),
        count(names::WORSE),
        count(names::SAME),
        count(names::UNTESTED)
    );
    if gm.uncertainty.is_none() {
        verdicts.push_str(" (the score has no interval while a metric has none)");
    }
    let n = gm.label(names::METRICS).unwrap_or("?");
    Some([
        format!("geomean ({n} tested primary)"),
        format!("{:.3}×", gm.value),
        ci,
        verdicts,
    ])
}

/// The comparison as `dyno compare` prints it.
pub fn compare_report(run: &Run) -> String {
    let c = Comparison::of(run);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Baseline {}; noise band ±{}%, α = {}, intervals at {:.0}%.",
        c.describe(&c.baseline),
        c.noise * 100.0,
        c.alpha,
        (1.0 - c.alpha) * 100.0
    );
    let _ = writeln!(
        out,
        "Ratio = candidate / baseline; ↑ higher is better, ↓ lower is better; ~ no significant difference."
    );
    for candidate in c.candidates() {
        let _ = writeln!(out, "\n{} against {}:\n", c.describe(candidate), c.baseline);
        let mut t = table(&[
            "KIND",
            "METRIC",
            &c.baseline,
            candidate,
            "DELTA",
            "RATIO",
            "95% CI",
            "P",
            "VERDICT",
        ]);
        for row in c.rows(candidate) {
            let [ratio, ci, p] = ratio_cells(&row);
            t.add_row(vec![
                Cell::new(row.kind),
                Cell::new(format!(
                    "{} {}",
                    metric_title(row.metric),
                    arrow(row.baseline.direction)
                )),
                Cell::new(value_cell(row.metric, row.baseline)).set_alignment(CellAlignment::Right),
                Cell::new(value_cell(row.metric, row.candidate))
                    .set_alignment(CellAlignment::Right),
                Cell::new(delta(&row)).set_alignment(CellAlignment::Right),
                Cell::new(ratio).set_alignment(CellAlignment::Right),
                Cell::new(ci),
                Cell::new(p).set_alignment(CellAlignment::Right),
                Cell::new(c.verdict_words(&row)),
            ]);
        }
        if let Some([label, ratio, ci, verdicts]) = geomean_cells(&c, candidate) {
            t.add_row(vec![
                Cell::new(""),
                Cell::new(format!("{label} ↑")),
                Cell::new(""),
                Cell::new(""),
                Cell::new(""),
                Cell::new(ratio).set_alignment(CellAlignment::Right),
                Cell::new(ci),
                Cell::new(""),
                Cell::new(verdicts),
            ]);
        }
        out.push_str(&render(&t));
    }
    differences(&c, &mut out);
    warnings(run, &mut out);
    out
}

/// Settings and machines that differ, and metrics without a partner.
fn differences(c: &Comparison, out: &mut String) {
    for (diffs, title) in [
        (
            &c.record.setting_differences,
            "Settings that differ (like is not compared with like):",
        ),
        (
            &c.record.environment_differences,
            "What differs between the setups:",
        ),
    ] {
        if diffs.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{title}");
        let mut t = table(
            &std::iter::once("FIELD")
                .chain(c.groups.iter().map(String::as_str))
                .collect::<Vec<_>>(),
        );
        for d in diffs {
            let mut row = vec![Cell::new(&d.key)];
            for g in &c.groups {
                row.push(Cell::new(d.values.get(g).map_or("", String::as_str)));
            }
            t.add_row(row);
        }
        out.push_str(&indent(&render(&t)));
    }
    let unmatched = &c.record.unmatched;
    if !unmatched.is_empty() {
        let _ = writeln!(out, "\nNot compared (no partner on the other side):");
        for u in unmatched {
            let _ = writeln!(
                out,
                "  {}: {} (absent from {})",
                u.group,
                metric_title(&u.metric),
                u.partner
            );
        }
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

/// The comparison as a Markdown table per candidate, for a pull request
/// or a wiki page.
pub fn compare_markdown(run: &Run) -> String {
    let c = Comparison::of(run);
    let mut out = String::new();
    let esc = |s: &str| s.replace('|', "\\|");
    for candidate in c.candidates() {
        let _ = writeln!(
            out,
            "### {} against {}\n",
            esc(&c.describe(candidate)),
            esc(&c.describe(&c.baseline))
        );
        let _ = writeln!(
            out,
            "| Kind | Metric | {} | {} | Delta | Ratio | 95% CI | p | Verdict |",
            esc(&c.baseline),
            esc(candidate)
        );
        out.push_str("|:--|:--|--:|--:|--:|--:|:--|--:|:--|\n");
        for row in c.rows(candidate) {
            let [ratio, ci, p] = ratio_cells(&row);
            let _ = writeln!(
                out,
                "| {} | {} {} | {} | {} | {} | {} | {} | {} | {} |",
                esc(row.kind),
                esc(&metric_title(row.metric)),
                arrow(row.baseline.direction),
                esc(&value_cell(row.metric, row.baseline)),
                esc(&value_cell(row.metric, row.candidate)),
                delta(&row),
                ratio,
                ci,
                p,
                esc(&c.verdict_words(&row))
            );
        }
        if let Some([label, ratio, ci, verdicts]) = geomean_cells(&c, candidate) {
            let _ = writeln!(
                out,
                "| | **{label}** ↑ | | | | **{ratio}** | {ci} | | {verdicts} |"
            );
        }
        let _ = writeln!(
            out,
            "\nNoise band ±{}%, α = {}; ↑ higher is better, ↓ lower is better; ~ no significant difference.\n",
            c.noise * 100.0,
            c.alpha
        );
    }
    if !run.warnings.is_empty() {
        out.push_str("Warnings:\n\n");
        for w in &run.warnings {
            let _ = writeln!(out, "- {}", esc(&w.message));
        }
    }
    out
}

/// One CSV row per matched metric and candidate group, with both sides'
/// values and intervals in the metric's base unit, the ratio with its
/// interval, the p-value and the verdict's word, as the table prints it
/// ([`verdict_word`]).
pub fn compare_csv(run: &Run, out: &mut dyn Write) -> io::Result<()> {
    let c = Comparison::of(run);
    let mut w = csv::Writer::from_writer(out);
    w.write_record([
        "kind",
        "metric",
        "unit",
        "direction",
        "baseline",
        "baseline_value",
        "baseline_low",
        "baseline_high",
        "group",
        "value",
        "low",
        "high",
        "ratio",
        "ratio_low",
        "ratio_high",
        "p_value",
        "verdict",
    ])?;
    let num = |v: Option<f64>| v.map_or_else(String::new, |v| v.to_string());
    let low = |m: &Metric| num(m.uncertainty.as_ref().map(|u| u.low));
    let high = |m: &Metric| num(m.uncertainty.as_ref().map(|u| u.high));
    for candidate in c.candidates() {
        for row in c.rows(candidate) {
            let direction = match row.baseline.direction {
                Direction::HigherIsBetter => "higher_is_better",
                Direction::LowerIsBetter => "lower_is_better",
            };
            w.write_record([
                row.kind.to_owned(),
                row.metric.to_owned(),
                row.baseline.unit.as_str().to_owned(),
                direction.to_owned(),
                c.baseline.clone(),
                row.baseline.value.to_string(),
                low(row.baseline),
                high(row.baseline),
                candidate.to_owned(),
                row.candidate.value.to_string(),
                low(row.candidate),
                high(row.candidate),
                num(row.ratio.map(|r| r.value)),
                row.ratio.map_or_else(String::new, low),
                row.ratio.map_or_else(String::new, high),
                num(row.p_value.map(|p| p.value)),
                verdict_word(&row).to_owned(),
            ])?;
        }
    }
    w.flush()
}

/// What `dyno compare --fail-if-worse PCT` finds in a comparison: the
/// regressions beyond PCT, and the primary figures it could not judge.
///
/// Only primary figures are judged (a diagnostic such as CPU time explains
/// a result; it is not the result), and only those a test could judge:
/// repeated runs a side (at least 4 for Mann–Whitney at α = 0.05, or one
/// run whose samples are repeated runs, as `dyno run --runs N` keeps). A
/// percentile of one run a side, or a single value a side, was not tested
/// and is named, never silently passed. With `score`, each candidate's
/// geometric-mean score is judged instead of each figure.
#[derive(Debug, Default)]
pub struct GateFindings {
    /// Each regression, in words: what, by how much, how sure.
    pub regressions: Vec<String>,
    /// Each figure that could not be tested, and why.
    pub untested: Vec<String>,
    /// How many figures (or scores) were judged.
    pub judged: usize,
    /// The runs a side a test needs at the comparison's α.
    pub runs_needed: usize,
}

/// Judges a comparison for `--fail-if-worse pct`: see [`GateFindings`].
pub fn gate(run: &Run, pct: f64, score: bool) -> GateFindings {
    let c = Comparison::of(run);
    let limit = 1.0 - pct / 100.0;
    let mut found = GateFindings {
        runs_needed: runs_needed_to_test(c.alpha),
        ..GateFindings::default()
    };
    for candidate in c.candidates() {
        if score {
            score_gate(&c, candidate, pct, limit, &mut found);
        } else {
            figures_gate(&c, candidate, pct, limit, &mut found);
        }
    }
    found
}

/// The candidate's geomean score, judged by its whole interval beyond the
/// limit, not its middle.
fn score_gate(c: &Comparison, candidate: &str, pct: f64, limit: f64, found: &mut GateFindings) {
    match c.group_metric(names::GEOMEAN, candidate) {
        Some(gm) if gm.uncertainty.is_some() => {
            found.judged += 1;
            if let Some(u) = gm.uncertainty.as_ref().filter(|u| u.high < limit) {
                found.regressions.push(format!(
                    "{candidate}'s geomean score is {:.3}× the baseline's ({:.3}–{:.3}), worse by more than {pct}% with {:.0}% confidence",
                    gm.value,
                    u.low,
                    u.high,
                    u.confidence * 100.0
                ));
            }
        }
        _ => found
            .untested
            .push(format!("{candidate}'s score (no tested primary figure)")),
    }
}

/// Each primary figure of the candidate, judged by its test and its
/// interval.
fn figures_gate(c: &Comparison, candidate: &str, pct: f64, limit: f64, found: &mut GateFindings) {
    for row in c.rows(candidate) {
        let Some(ratio) = row.ratio else {
            continue;
        };
        // Comparisons saved before metrics declared roles carry none:
        // every row of theirs is judged, as it was then.
        if ratio.label(names::ROLE).is_some_and(|r| r != "primary") {
            continue;
        }
        let verdict = row.verdict();
        if !verdict.is_tested() {
            let why = match verdict {
                Verdict::WithinRun => "one run a side",
                Verdict::TooFewRuns => "too few runs a side",
                _ => "one value a side",
            };
            found.untested.push(format!(
                "{candidate}'s {} ({why})",
                metric_title(row.metric)
            ));
            continue;
        }
        found.judged += 1;
        if verdict == Verdict::Slower && surely_worse(ratio, limit) {
            let interval = ratio
                .uncertainty
                .as_ref()
                .map(|u| format!(" (interval {:.3}–{:.3})", u.low, u.high))
                .unwrap_or_default();
            found.regressions.push(format!(
                "{candidate}'s {} is {:.3}× the baseline's{interval}, significantly worse by more than {pct}%",
                metric_title(row.metric),
                ratio.value
            ));
        }
    }
}

/// Whether a ratio (candidate ÷ baseline) is worse than `limit` (an
/// improvement factor: 0.95 for 5% worse) with confidence: the end of its
/// interval nearest no change is itself beyond the limit. A point
/// estimate beyond it is not enough: on identical code, noise puts one
/// there, and significant, now and then.
pub fn surely_worse(ratio: &Metric, limit: f64) -> bool {
    let factor = |r: f64| dyno_stats::versus::improvement(r, ratio.direction);
    let nearest = ratio
        .uncertainty
        .as_ref()
        .map_or(factor(ratio.value), |u| factor(u.low).max(factor(u.high)));
    nearest < limit
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::{Kind, Uncertainty, UncertaintyMethod, Unit};
    use dyno_stats::versus::{Group, Options, compare_runs};

    fn side(name: &str, rates: &[f64], latency: &[f64]) -> Group {
        let runs = rates
            .iter()
            .zip(latency)
            .map(|(&r, &l)| {
                let mut run = Run::new(Kind::Http, "x");
                run.settings =
                    serde_json::json!({"connections": if name == "a" { 16 } else { 64 }});
                run.metrics = vec![
                    Metric::new(
                        "requests_per_sec",
                        Unit::RequestsPerSec,
                        Direction::HigherIsBetter,
                        r,
                    )
                    .primary(),
                    Metric::new("mean_ns", Unit::Ns, Direction::LowerIsBetter, l).primary(),
                ];
                run
            })
            .collect();
        Group {
            name: name.into(),
            selector: format!("@tag:{name}"),
            runs,
        }
    }

    fn comparison() -> Run {
        compare_runs(
            &[
                side(
                    "a",
                    &[100.0, 101.0, 99.0, 100.5, 100.2],
                    &[10.0, 10.1, 9.9, 10.0, 10.05],
                ),
                side(
                    "b",
                    &[120.0, 121.0, 119.0, 120.5, 120.2],
                    &[10.0, 10.2, 9.8, 10.1, 9.95],
                ),
            ],
            &Options::default(),
        )
        .unwrap()
    }

    #[test]
    fn the_table_has_both_values_the_ratio_and_a_verdict_per_metric_and_a_geomean() {
        let text = compare_report(&comparison());
        let line = |needle: &str| {
            text.lines()
                .find(|l| l.contains(needle))
                .unwrap_or_else(|| panic!("no {needle} in\n{text}"))
        };
        let rps = line("requests_per_sec ↑");
        assert!(rps.contains("100.1") && rps.contains("120.1"), "{rps}");
        assert!(rps.contains("1.200×") && rps.contains("+20.0%"), "{rps}");
        assert!(rps.trim_end().ends_with("better"), "{rps}");
        let lat = line("mean_ns ↓");
        assert!(lat.trim_end().ends_with('~'), "{lat}");
        let gm = line("geomean (2 tested primary) ↑");
        assert!(gm.contains("1 better, 0 worse, 1 ~, 0 untested"), "{gm}");
        assert!(text.contains("Baseline a (5 runs: @tag:a)"), "{text}");
        assert!(text.contains("b (5 runs: @tag:b) against a"), "{text}");
        let settings = line("http.connections");
        assert!(
            settings.contains("16") && settings.contains("64"),
            "{settings}"
        );
    }

    /// L15: the parallel fraction reads as a percentage, as `dyno show`
    /// prints it, not as `0.90×`.
    #[test]
    fn the_parallel_fraction_reads_as_a_percentage() {
        let group = |name: &str, p: &[f64]| Group {
            name: name.into(),
            selector: name.into(),
            runs: p
                .iter()
                .map(|&p| {
                    let mut run = Run::new(Kind::Scale, "x");
                    run.metrics = vec![Metric::new(
                        "amdahl_fit_parallel_fraction",
                        Unit::Ratio,
                        Direction::HigherIsBetter,
                        p,
                    )];
                    run
                })
                .collect(),
        };
        let run = compare_runs(
            &[
                group("a", &[0.90, 0.91, 0.89]),
                group("b", &[0.22, 0.23, 0.21]),
            ],
            &Options::default(),
        )
        .unwrap();
        let text = compare_report(&run);
        let line = text
            .lines()
            .find(|l| l.contains("amdahl_fit_parallel_fraction"))
            .unwrap_or_else(|| panic!("no row in\n{text}"));
        assert!(line.contains("90.0%") && line.contains("22.0%"), "{line}");
        assert!(!line.contains("0.90×") && !line.contains("0.22×"), "{line}");
        let md = compare_markdown(&run);
        assert!(md.contains("22.0%"), "{md}");
    }

    #[test]
    fn markdown_and_csv_carry_the_same_rows() {
        let run = comparison();
        let md = compare_markdown(&run);
        assert!(md.contains("| http | requests_per_sec ↑ |"), "{md}");
        assert!(md.contains("**geomean (2 tested primary)**"), "{md}");
        let mut csv = Vec::new();
        compare_csv(&run, &mut csv).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        let rows: Vec<&str> = csv.lines().collect();
        assert_eq!(rows.len(), 3, "{csv}");
        assert!(rows[1].starts_with("http,requests_per_sec,requests_per_sec,higher_is_better,a,"));
        // The same verdict word as the table's (L20).
        assert!(rows[1].ends_with(",better"), "{}", rows[1]);
        assert!(rows[2].ends_with(",~"), "{}", rows[2]);
    }

    #[test]
    fn percentiles_read_as_people_write_them() {
        assert_eq!(
            metric_title("latency_ns{percentile=99.9}"),
            "latency_ns p99.9"
        );
        assert_eq!(
            metric_title("disk_latency_ns{op=read, percentile=50, test=RND4K Q1T1}"),
            "disk_latency_ns{op=read, test=RND4K Q1T1} p50"
        );
        assert_eq!(metric_title("wall_ns"), "wall_ns");
        assert_eq!(
            metric_short("disk_latency_ns{op=read, percentile=99.9, test=RND4K Q1T1}"),
            "disk_latency_ns read RND4K Q1T1 p99.9"
        );
        assert_eq!(
            metric_short("wall_ns{command=make -j 2}"),
            "wall_ns make -j 2"
        );
    }

    fn gated_ratio(direction: Direction, value: f64, low: f64, high: f64) -> Metric {
        let mut m = Metric::new(names::RATIO, Unit::Ratio, direction, value);
        m.uncertainty = Some(Uncertainty {
            method: UncertaintyMethod::Bootstrap,
            confidence: 0.95,
            low,
            high,
            n: 8,
            stddev: None,
        });
        m
    }

    #[test]
    fn a_regression_fails_the_gate_only_when_its_whole_interval_is_beyond_the_limit() {
        let limit = 0.95;
        // A time 8% longer, its interval 1–16% longer: not surely 5% worse.
        assert!(!surely_worse(
            &gated_ratio(Direction::LowerIsBetter, 1.08, 1.01, 1.16),
            limit
        ));
        // 8% longer, 6–10%: surely.
        assert!(surely_worse(
            &gated_ratio(Direction::LowerIsBetter, 1.08, 1.06, 1.10),
            limit
        ));
        // A rate 8% lower, its interval 1–15% lower: not surely; 7–9%: surely.
        assert!(!surely_worse(
            &gated_ratio(Direction::HigherIsBetter, 0.92, 0.85, 0.99),
            limit
        ));
        assert!(surely_worse(
            &gated_ratio(Direction::HigherIsBetter, 0.92, 0.91, 0.93),
            limit
        ));
        // Without an interval, the estimate is all there is.
        let mut bare = gated_ratio(Direction::LowerIsBetter, 1.08, 0.0, 0.0);
        bare.uncertainty = None;
        assert!(surely_worse(&bare, limit));
    }
}
