//! `dyno changes`: the change points of each series of saved runs, and
//! the gate's verdict on its newest run, as JSON (this module's records)
//! and as text.

use std::fmt::Write as _;

use dyno_model::{Direction, Run, Unit};
use dyno_stats::changes::{self, Analysis, Change, Settings, Verdict};
use dyno_stats::series::{Line, Order, Series};
use schemars::JsonSchema;
use serde::Serialize;

use crate::format::format_value;

/// The JSON Schema of `dyno changes --json` (`schema/changes.schema.json`,
/// checked against these types by a test).
pub fn changes_schema() -> serde_json::Value {
    let mut schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<ChangesReport>()
        .to_value();
    schema["title"] = "dyno changes --json".into();
    schema["description"] = "The change points of each series of saved runs, and with --gate the verdict on each line's newest run.".into();
    schema
}

/// The analysis of every series, as `--json` prints it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ChangesReport {
    pub alpha: f64,
    pub min_change_percent: f64,
    pub min_segment: usize,
    pub seed: u64,
    /// Whether the newest run of each line was judged for a gate.
    pub gate: bool,
    /// How each series is ordered: `time`, or `commits` (`--by-commit`).
    pub order: &'static str,
    pub series: Vec<SeriesReport>,
}

impl ChangesReport {
    /// Analyses every series of `runs` (each line named in `metrics`, or
    /// all primary figures when it is empty); with `gate`, judges the
    /// newest run of each line too.
    pub fn of(
        runs: &[Run],
        metrics: &[String],
        settings: &Settings,
        gate: bool,
        order: &Order,
    ) -> ChangesReport {
        let series = Series::group(runs, order)
            .iter()
            .map(|s| SeriesReport::of(s, metrics, settings, gate))
            .filter(|s| !s.lines.is_empty())
            .collect();
        ChangesReport {
            alpha: settings.alpha,
            min_change_percent: settings.min_change * 100.0,
            min_segment: settings.min_segment,
            seed: settings.seed,
            gate,
            order: match order {
                Order::Time => "time",
                Order::Commits(_) => "commits",
            },
            series,
        }
    }

    /// The lines whose newest run starts or continues a regression.
    pub fn regressions(&self) -> impl Iterator<Item = (&SeriesReport, &LineReport)> {
        self.series.iter().flat_map(|s| {
            s.lines
                .iter()
                .filter(|l| l.gate.as_ref().is_some_and(|g| g.regression.is_some()))
                .map(move |l| (s, l))
        })
    }
}

/// One series: the runs of one benchmark on one class of machine.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SeriesReport {
    /// The kind and the settings' fingerprint (`exec-1a2b3c4d`).
    pub series: String,
    pub kind: String,
    pub fingerprint: String,
    pub machine: String,
    /// The newest run's description.
    pub description: String,
    pub runs: usize,
    /// Runs of the series left out by `--by-commit`: no `rev:` tag, or a
    /// commit the repository's history does not hold.
    pub unordered: usize,
    pub lines: Vec<LineReport>,
}

impl SeriesReport {
    fn of(series: &Series, metrics: &[String], settings: &Settings, gate: bool) -> SeriesReport {
        let lines = series
            .lines()
            .iter()
            .filter(|l| metrics.is_empty() || metrics.iter().any(|m| m == &l.name))
            .map(|l| LineReport::of(series, l, settings, gate))
            .collect();
        SeriesReport {
            series: series.identity.short(),
            kind: series.identity.kind.clone(),
            fingerprint: series.identity.settings.clone(),
            machine: series.identity.machine.clone(),
            description: series.description().to_owned(),
            runs: series.runs.len(),
            unordered: series.unordered,
            lines,
        }
    }
}

/// One figure's history.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LineReport {
    /// The metric as `dyno compare` names it, with its labels.
    pub metric: String,
    #[schemars(with = "String")]
    pub unit: Unit,
    #[schemars(with = "String")]
    pub direction: Direction,
    /// Runs that hold the figure.
    pub runs: usize,
    /// `changed`, `no_change` or `too_few_runs`.
    pub verdict: &'static str,
    /// Why the line could not be judged, or could not rule out a change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// One run's noise, robustly, in percent of the median.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_percent: Option<f64>,
    /// The smallest step this history shows (80% power), in percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detectable_percent: Option<f64>,
    pub changes: Vec<ChangeReport>,
    /// Each segment's mean, oldest first.
    pub segment_means: Vec<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateReport>,
}

impl LineReport {
    fn of(series: &Series, line: &Line, settings: &Settings, gate: bool) -> LineReport {
        let values = line.values();
        let mut report = LineReport {
            metric: line.display_name(),
            unit: line.unit,
            direction: line.direction,
            runs: values.len(),
            verdict: "too_few_runs",
            note: None,
            noise_percent: None,
            detectable_percent: None,
            changes: Vec::new(),
            segment_means: Vec::new(),
            gate: None,
        };
        let judged = if gate {
            changes::gate(&values, line.direction, settings).map(|(a, v)| (a, Some(v)))
        } else {
            changes::analyse(&values, settings).map(|a| (a, None))
        };
        let (analysis, verdict) = match judged {
            Ok(judged) => judged,
            Err(e) => {
                report.note = Some(e.to_string());
                if gate {
                    report.gate = Some(GateReport::pass());
                }
                return report;
            }
        };
        report.fill(series, line, &analysis, settings);
        if let Some(verdict) = verdict {
            report.gate = Some(match verdict {
                Verdict::Pass => GateReport::pass(),
                Verdict::Regression { change, starts } => GateReport {
                    verdict: "regression",
                    regression: Some(ChangeReport::of(series, line, &change)),
                    starts,
                },
            });
        }
        report
    }

    fn fill(&mut self, series: &Series, line: &Line, a: &Analysis, settings: &Settings) {
        self.noise_percent = Some(a.noise * 100.0);
        self.detectable_percent = Some(a.detectable * 100.0);
        self.segment_means = a.segments.iter().map(|s| s.mean).collect();
        self.changes = a
            .changes
            .iter()
            .map(|c| ChangeReport::of(series, line, c))
            .collect();
        self.verdict = if !a.changes.is_empty() {
            "changed"
        } else if !a.can_detect {
            self.note = Some(format!(
                "too few runs to judge: at α = {} the test cannot tell {} runs' order from chance, even for a step without noise; it needs more runs",
                settings.alpha, self.runs
            ));
            "too_few_runs"
        } else if a.too_few_runs(settings.min_change) {
            self.note = Some(format!(
                "too few runs to judge: at this noise ({:.1}%) {} runs show steps of {:.1}% and more, not the {:.1}% asked for",
                a.noise * 100.0,
                self.runs,
                a.detectable * 100.0,
                settings.min_change * 100.0
            ));
            "too_few_runs"
        } else {
            "no_change"
        };
    }
}

/// A change point, named by the first run after it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ChangeReport {
    /// The first run after the change.
    pub run_id: String,
    pub started_at: String,
    pub tags: Vec<String>,
    /// The commit, from the run's `rev:` tag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// `regression` or `improvement`, by the metric's direction.
    pub kind: &'static str,
    /// mean(after) / mean(before) − 1, in percent.
    pub change_percent: f64,
    /// Its 95% interval, in percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_percent: Option<(f64, f64)>,
    pub p_value: f64,
    pub mean_before: f64,
    pub mean_after: f64,
    pub runs_before: usize,
    pub runs_after: usize,
}

impl ChangeReport {
    fn of(series: &Series, line: &Line, c: &Change) -> ChangeReport {
        let run = series.runs[line.points[c.index].run];
        let percent = |r: f64| (r - 1.0) * 100.0;
        ChangeReport {
            run_id: run.id.to_string(),
            started_at: run.started_at.to_string(),
            tags: run.tags.clone(),
            commit: run
                .tags
                .iter()
                .find_map(|t| t.strip_prefix("rev:"))
                .map(str::to_owned),
            kind: if c.is_regression(line.direction) {
                "regression"
            } else {
                "improvement"
            },
            change_percent: percent(c.ratio),
            interval_percent: c.interval.map(|(lo, hi)| (percent(lo), percent(hi))),
            p_value: c.p_value,
            mean_before: c.before.mean,
            mean_after: c.after.mean,
            runs_before: c.before.len(),
            runs_after: c.after.len(),
        }
    }
}

/// The gate's verdict on a line's newest run.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GateReport {
    /// `pass` or `regression`.
    pub verdict: &'static str,
    /// The regression the newest run is in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regression: Option<ChangeReport>,
    /// Whether the newest runs start it (fewer than a segment since it),
    /// rather than continue it.
    pub starts: bool,
}

impl GateReport {
    /// A newest run in no regression, or a line too short to judge.
    fn pass() -> GateReport {
        GateReport {
            verdict: "pass",
            regression: None,
            starts: false,
        }
    }
}

/// The report as text: each series, each line's changes, the gate.
pub fn changes_text(report: &ChangesReport) -> String {
    let mut out = String::new();
    if report.series.is_empty() {
        out.push_str("no saved runs with a primary figure match: `dyno history` lists the runs\n");
        return out;
    }
    for s in &report.series {
        let _ = writeln!(
            out,
            "{}  {}  ({}, {})",
            s.series,
            s.description,
            crate::counted(s.runs as u64, "run"),
            s.machine
        );
        if s.unordered > 0 {
            let _ = writeln!(
                out,
                "  {} left out: no rev: tag of a commit in this repository's history",
                crate::counted(s.unordered as u64, "run")
            );
        }
        for l in &s.lines {
            line_text(&mut out, l);
        }
        out.push('\n');
    }
    if report.gate {
        let failed: Vec<_> = report.regressions().collect();
        if failed.is_empty() {
            out.push_str("gate: pass: no newest run starts or continues a regression\n");
        } else {
            let _ = writeln!(
                out,
                "gate: FAIL: {} in a regression",
                crate::counted(failed.len() as u64, "line")
            );
        }
    }
    out
}

fn line_text(out: &mut String, l: &LineReport) {
    let value = |v: f64| format_value(v, l.unit);
    let head = match l.verdict {
        "changed" => crate::counted(l.changes.len() as u64, "change"),
        "no_change" => format!(
            "no change (noise {:.1}%; steps of {:.1}% and more would show)",
            l.noise_percent.unwrap_or(0.0),
            l.detectable_percent.unwrap_or(0.0)
        ),
        _ => "too few runs to judge".to_owned(),
    };
    let _ = writeln!(
        out,
        "  {} over {}: {head}",
        l.metric,
        crate::counted(l.runs as u64, "run")
    );
    for c in &l.changes {
        let _ = writeln!(out, "    {}", change_text(c, &value));
    }
    if let Some(note) = &l.note {
        let _ = writeln!(out, "    {note}");
    }
    if let Some(g) = &l.gate {
        match &g.regression {
            None => out.push_str("    gate: pass\n"),
            Some(c) => {
                let how = if g.starts { "starts" } else { "continues" };
                let _ = writeln!(
                    out,
                    "    gate: FAIL: the newest run {how} a regression: {}",
                    change_text(c, &value)
                );
            }
        }
    }
}

fn change_text(c: &ChangeReport, value: &dyn Fn(f64) -> String) -> String {
    let interval = c
        .interval_percent
        .map(|(lo, hi)| format!(" [{lo:+.1}%, {hi:+.1}%]"))
        .unwrap_or_default();
    let commit = c
        .commit
        .as_ref()
        .map(|r| format!(" rev {r}"))
        .unwrap_or_default();
    let started = c
        .started_at
        .get(..16)
        .unwrap_or(&c.started_at)
        .replace('T', " ");
    format!(
        "{} at run {} ({started}{commit}): {:+.1}%{interval}, p = {:.3}; {} runs at {} → {} runs at {}",
        c.kind,
        &c.run_id[..c.run_id.len().min(10)],
        c.change_percent,
        c.p_value,
        c.runs_before,
        value(c.mean_before),
        c.runs_after,
        value(c.mean_after),
    )
}

/// The report as Markdown, for a pull request's comment or a CI step's
/// summary: the gate's verdict, then one table of the lines.
pub fn changes_markdown(report: &ChangesReport) -> String {
    let mut out = String::from("## dyno changes\n\n");
    if report.gate {
        let failed = report.regressions().count();
        if failed == 0 {
            out.push_str("**Gate: pass.** No newest run starts or continues a regression.\n\n");
        } else {
            let _ = writeln!(
                out,
                "**Gate: FAIL.** {} in a regression.\n",
                crate::counted(failed as u64, "line")
            );
        }
    }
    if report.series.is_empty() {
        out.push_str("No saved runs with a primary figure match.\n");
        return out;
    }
    out.push_str("| series | figure | runs | verdict | changes |\n|---|---|---|---|---|\n");
    for s in &report.series {
        for l in &s.lines {
            let changes: Vec<String> = l.changes.iter().map(change_markdown).collect();
            let verdict = match (&l.gate, l.verdict) {
                (
                    Some(GateReport {
                        regression: Some(_),
                        starts,
                        ..
                    }),
                    _,
                ) => {
                    if *starts {
                        "**regression starts**".to_owned()
                    } else {
                        "**regression continues**".to_owned()
                    }
                }
                (_, "changed") => "changed".to_owned(),
                (_, "no_change") => "no change".to_owned(),
                _ => "too few runs".to_owned(),
            };
            let _ = writeln!(
                out,
                "| {} {} | `{}` | {} | {verdict} | {} |",
                s.series,
                escape_cell(&s.description),
                l.metric,
                l.runs,
                if changes.is_empty() {
                    "".to_owned()
                } else {
                    changes.join("<br>")
                }
            );
        }
    }
    let _ = writeln!(
        out,
        "\nE-divisive means, permutation test at α = {}, changes of {}% and more, {} runs a side at least.",
        report.alpha, report.min_change_percent, report.min_segment
    );
    out
}

fn change_markdown(c: &ChangeReport) -> String {
    let at = c
        .commit
        .as_deref()
        .unwrap_or(&c.run_id[..c.run_id.len().min(10)]);
    let interval = c
        .interval_percent
        .map(|(lo, hi)| format!(" [{lo:+.1}%, {hi:+.1}%]"))
        .unwrap_or_default();
    format!(
        "{} at `{at}`: {:+.1}%{interval}, p = {:.3}",
        c.kind, c.change_percent, c.p_value
    )
}

/// A table cell's text: no pipes or line breaks.
fn escape_cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// The report as JUnit XML: a test case per line, failed when its newest
/// run starts or continues a regression (with `--gate`), its changes in
/// the case's output.
pub fn changes_junit(report: &ChangesReport) -> String {
    let cases: Vec<(&SeriesReport, &LineReport)> = report
        .series
        .iter()
        .flat_map(|s| s.lines.iter().map(move |l| (s, l)))
        .collect();
    let failures = report.regressions().count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"dyno changes\" tests=\"{}\" failures=\"{failures}\">",
        cases.len()
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"dyno changes\" tests=\"{}\" failures=\"{failures}\">",
        cases.len()
    );
    for (s, l) in cases {
        let _ = write!(
            out,
            "    <testcase classname=\"{}\" name=\"{}\">",
            xml(&format!("{} {}", s.series, s.description)),
            xml(&l.metric)
        );
        if let Some(GateReport {
            regression: Some(c),
            starts,
            ..
        }) = &l.gate
        {
            let how = if *starts { "starts" } else { "continues" };
            let message = format!("the newest run {how} a regression: {}", plain(c));
            let _ = write!(out, "\n      <failure message=\"{}\"/>", xml(&message));
        }
        let mut text = String::new();
        line_text(&mut text, l);
        let _ = write!(
            out,
            "\n      <system-out>{}</system-out>\n    </testcase>\n",
            xml(&text)
        );
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// `s` escaped for XML text and attributes.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            c if (c as u32) < 0x20 && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

/// GitHub Actions' workflow commands: an `::error` for each line in a
/// regression (with `--gate`), a `::notice` for each other change, so
/// that they show on the run's page.
pub fn changes_github(report: &ChangesReport) -> String {
    let mut out = String::new();
    for s in &report.series {
        for l in &s.lines {
            let in_regression = l
                .gate
                .as_ref()
                .and_then(|g| g.regression.as_ref().map(|c| (c, g.starts)));
            let annotate = |out: &mut String, level: &str, what: String| {
                let message = format!("{} ({}): {what}", l.metric, s.description);
                let _ = writeln!(
                    out,
                    "::{level} title=dyno changes::{}",
                    workflow_escape(&message)
                );
            };
            if let Some((c, starts)) = in_regression {
                let how = if starts { "starts" } else { "continues" };
                let what = format!("the newest run {how} a regression: {}", plain(c));
                annotate(&mut out, "error", what);
            }
            for c in &l.changes {
                if in_regression.is_none_or(|(r, _)| r.run_id != c.run_id) {
                    annotate(&mut out, "notice", plain(c));
                }
            }
        }
    }
    out
}

/// A change in words, without Markdown.
fn plain(c: &ChangeReport) -> String {
    change_markdown(c).replace('`', "")
}

/// A workflow command's message, escaped as GitHub's toolkit does.
fn workflow_escape(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}
